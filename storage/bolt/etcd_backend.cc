#include "storage/bolt/etcd_backend.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/json_escape.h"
#include "storage/bolt/bolt_writer.h"

namespace kplane::bolt {
namespace {

void PutBe64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

std::string Be64(uint64_t v) {
  std::string s;
  PutBe64(&s, v);
  return s;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// leasepb.Lease{ID: 1, TTL: 2} (RemainingTTL, 3, only with checkpoints).
std::string LeaseRecord(int64_t id, int64_t ttl) {
  std::string s;
  if (id != 0) {
    s.push_back(0x08);
    PutVarint(&s, static_cast<uint64_t>(id));
  }
  if (ttl != 0) {
    s.push_back(0x10);
    PutVarint(&s, static_cast<uint64_t>(ttl));
  }
  return s;
}

// A JSON string as etcd's encoding/json (before Go 1.22) writes it: '\b'
// and '\f' as \u00XX, HTML-safe, bytes that are not UTF-8 as they are.
void AppendGoJsonString(std::string* out, std::string_view s) {
  *out += JsonQuote(s, {.html_safe = true, .escape_line_separators = true});
}

template <typename List>
void AppendGoJsonStrings(std::string* out, const List& list) {
  out->push_back('[');
  bool first = true;
  for (const auto& s : list) {
    if (!first) out->push_back(',');
    first = false;
    AppendGoJsonString(out, s);
  }
  out->push_back(']');
}

std::string HexId(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(id));
  return buf;
}

}  // namespace

std::string EtcdRevisionKey(int64_t main, int64_t sub, bool tombstone) {
  std::string k;
  k.reserve(18);
  PutBe64(&k, static_cast<uint64_t>(main));
  k.push_back('_');
  PutBe64(&k, static_cast<uint64_t>(sub));
  if (tombstone) k.push_back('t');
  return k;
}

std::string EtcdMemberJson(const etcdserverpb::Member& m) {
  std::string j = "{\"id\":" + std::to_string(m.id()) + ",\"peerURLs\":";
  if (m.peerurls().empty()) {
    j += "null";  // a nil slice, as Go encodes it
  } else {
    AppendGoJsonStrings(&j, m.peerurls());
  }
  if (m.islearner()) j += ",\"isLearner\":true";
  if (!m.name().empty()) {
    j += ",\"name\":";
    AppendGoJsonString(&j, m.name());
  }
  if (!m.clienturls().empty()) {
    j += ",\"clientURLs\":";
    AppendGoJsonStrings(&j, m.clienturls());
  }
  return j + "}";
}

std::string Sha256(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md), n);
}

StatusOr<std::string> WriteEtcdBackend(EtcdBackend c) {
  std::vector<BoltBucket> b;
  auto bucket = [&](std::string name) -> BoltBucket& {
    b.push_back({std::move(name), {}});
    return b.back();
  };
  {
    BoltBucket& key = bucket("key");
    key.items.reserve(c.versions.size());
    std::string value;
    for (EtcdBackend::Version& v : c.versions) {
      value.clear();
      v.kv.AppendToString(&value);
      key.items.emplace_back(EtcdRevisionKey(v.main, v.sub, v.tombstone),
                             value);
      v.kv.Clear();
    }
    c.versions.clear();
    c.versions.shrink_to_fit();
  }
  {
    BoltBucket& meta = bucket("meta");
    // etcd writes it with its first applied entry.
    if (c.consistent_index > 0) {
      meta.items.emplace_back("consistent_index", Be64(c.consistent_index));
    }
    if (c.scheduled_compact_revision > 0) {
      meta.items.emplace_back(
          "scheduledCompactRev",
          EtcdRevisionKey(c.scheduled_compact_revision, 0, false));
    }
    if (c.finished_compact_revision > 0) {
      meta.items.emplace_back(
          "finishedCompactRev",
          EtcdRevisionKey(c.finished_compact_revision, 0, false));
    }
  }
  {
    BoltBucket& lease = bucket("lease");
    for (const auto& l : c.leases) {
      lease.items.emplace_back(Be64(static_cast<uint64_t>(l.id)),
                               LeaseRecord(l.id, l.ttl));
    }
  }
  {
    BoltBucket& members = bucket("members");
    for (const auto& m : c.members) {
      members.items.emplace_back(HexId(m.id()), EtcdMemberJson(m));
    }
    BoltBucket& removed = bucket("members_removed");
    for (uint64_t id : c.removed_members) {
      removed.items.emplace_back(HexId(id), "removed");
    }
  }
  bucket("cluster").items.emplace_back("clusterVersion", c.cluster_version);
  {
    BoltBucket& alarm = bucket("alarm");
    for (const auto& a : c.alarms) {
      alarm.items.emplace_back(a.SerializeAsString(), "");
    }
  }
  {
    BoltBucket& auth = bucket("auth");
    auth.items.emplace_back("authRevision",
                            Be64(std::max<uint64_t>(c.auth_revision, 1)));
    if (c.auth_enabled_key) {
      auth.items.emplace_back("authEnabled",
                              std::string(1, c.auth_enabled ? '\1' : '\0'));
    }
    BoltBucket& roles = bucket("authRoles");
    for (const auto& r : c.auth_roles) {
      roles.items.emplace_back(r.name(), r.SerializeAsString());
    }
    BoltBucket& users = bucket("authUsers");
    for (const auto& u : c.auth_users) {
      users.items.emplace_back(u.name(), u.SerializeAsString());
    }
  }
  return WriteBoltDb(std::move(b));
}

}  // namespace kplane::bolt
