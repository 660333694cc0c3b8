#include "storage/bolt/etcd_backend.h"

#include <openssl/evp.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/json_escape.h"
#include "storage/bolt/bolt_reader.h"
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

uint64_t GetBe64(std::string_view s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

bool GetVarint(std::string_view* s, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !s->empty(); shift += 7) {
    const auto b = static_cast<unsigned char>(s->front());
    s->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// leasepb.Lease: every field is a varint (ID 1, TTL 2, RemainingTTL 3).
bool ParseLeaseRecord(std::string_view s, EtcdBackend::Lease* out) {
  while (!s.empty()) {
    uint64_t tag = 0, v = 0;
    if (!GetVarint(&s, &tag) || (tag & 7) != 0 || !GetVarint(&s, &v)) {
      return false;
    }
    if (tag >> 3 == 1) out->id = static_cast<int64_t>(v);
    if (tag >> 3 == 2) out->ttl = static_cast<int64_t>(v);
  }
  return true;
}

bool ParseHexId(std::string_view s, uint64_t* id) {
  if (s.empty() || s.size() > 16) return false;
  *id = 0;
  for (char ch : s) {
    int d = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                     : -1;
    if (d < 0) return false;
    *id = (*id << 4) | static_cast<uint64_t>(d);
  }
  return true;
}

}  // namespace

bool ParseEtcdMemberJson(std::string_view s, etcdserverpb::Member* m) {
  rapidjson::Document d;
  d.Parse(s.data(), s.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("id") ||
      !d["id"].IsUint64()) {
    return false;
  }
  m->set_id(d["id"].GetUint64());
  auto strings = [&](const char* field, auto* out) {
    if (!d.HasMember(field) || d[field].IsNull()) return true;
    if (!d[field].IsArray()) return false;
    for (const auto& u : d[field].GetArray()) {
      if (!u.IsString()) return false;
      out->Add(std::string(u.GetString(), u.GetStringLength()));
    }
    return true;
  };
  if (!strings("peerURLs", m->mutable_peerurls()) ||
      !strings("clientURLs", m->mutable_clienturls())) {
    return false;
  }
  if (d.HasMember("name")) {
    if (!d["name"].IsString()) return false;
    m->set_name(
        std::string(d["name"].GetString(), d["name"].GetStringLength()));
  }
  if (d.HasMember("isLearner")) {
    if (!d["isLearner"].IsBool()) return false;
    m->set_islearner(d["isLearner"].GetBool());
  }
  return true;
}

StatusOr<EtcdBackend> ReadEtcdBackend(std::string_view data) {
  ASSIGN_OR_RETURN(BoltReader db, BoltReader::Open(data));
  EtcdBackend out;
  out.cluster_version.clear();
  out.auth_revision = 0;
  auto bad = [](std::string_view bucket, std::string_view key,
                const std::string& what) {
    return CorruptionError("etcd backend: bucket " + std::string(bucket) +
                           ", key " + JsonQuote(key, kGoJsonEscape) + ": " +
                           what);
  };
  // One set for the root walk and every bucket walk: a page reached twice
  // anywhere in the file (bucket headers sharing a root page) is refused,
  // so a hostile file costs time linear in its size.
  BoltReader::Visited seen;
  Status walk = db.ForEachBucket(
      [&](std::string_view name, std::string_view header) -> Status {
        return db.ForEachInBucket(
            header,
            [&](std::string_view k, std::string_view v,
                bool is_bucket) -> Status {
              if (is_bucket) return Status::Ok();  // etcd nests none
              if (name == "key") {
                if ((k.size() != 17 && k.size() != 18) || k[8] != '_' ||
                    (k.size() == 18 && k[17] != 't')) {
                  return bad(name, k, "not a revision");
                }
                EtcdBackend::Version& ver = out.versions.emplace_back();
                ver.main = static_cast<int64_t>(GetBe64(k));
                ver.sub = static_cast<int64_t>(GetBe64(k.substr(9)));
                ver.tombstone = k.size() == 18;
                if (!ver.kv.ParseFromArray(v.data(),
                                           static_cast<int>(v.size()))) {
                  return bad(name, k, "value is no mvccpb.KeyValue");
                }
              } else if (name == "meta") {
                if (k == "consistent_index") {
                  if (v.size() != 8) return bad(name, k, "not 8 bytes");
                  out.consistent_index = GetBe64(v);
                } else if (k == "scheduledCompactRev" ||
                           k == "finishedCompactRev") {
                  if (v.size() != 17) return bad(name, k, "not a revision");
                  (k == "scheduledCompactRev" ? out.scheduled_compact_revision
                                              : out.finished_compact_revision) =
                      static_cast<int64_t>(GetBe64(v));
                }
              } else if (name == "lease") {
                EtcdBackend::Lease l;
                if (!ParseLeaseRecord(v, &l)) {
                  return bad(name, k, "value is no leasepb.Lease");
                }
                out.leases.push_back(l);
              } else if (name == "members") {
                etcdserverpb::Member m;
                if (!ParseEtcdMemberJson(v, &m))
                  return bad(name, k, "not etcd's JSON");
                out.members.push_back(std::move(m));
              } else if (name == "members_removed") {
                uint64_t id = 0;
                if (!ParseHexId(k, &id))
                  return bad(name, k, "not a hex member id");
                out.removed_members.push_back(id);
              } else if (name == "cluster") {
                if (k == "clusterVersion") out.cluster_version = std::string(v);
              } else if (name == "alarm") {
                etcdserverpb::AlarmMember a;
                if (!a.ParseFromArray(k.data(), static_cast<int>(k.size()))) {
                  return bad(name, k, "key is no AlarmMember");
                }
                out.alarms.push_back(a);
              } else if (name == "auth") {
                if (k == "authRevision") {
                  if (v.size() != 8) return bad(name, k, "not 8 bytes");
                  out.auth_revision = GetBe64(v);
                } else if (k == "authEnabled") {
                  if (v.size() != 1) return bad(name, k, "not 1 byte");
                  out.auth_enabled_key = true;
                  out.auth_enabled = v[0] == 1;
                }
              } else if (name == "authUsers") {
                authpb::User u;
                if (!u.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
                  return bad(name, k, "value is no authpb.User");
                }
                out.auth_users.push_back(std::move(u));
              } else if (name == "authRoles") {
                authpb::Role r;
                if (!r.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
                  return bad(name, k, "value is no authpb.Role");
                }
                out.auth_roles.push_back(std::move(r));
              }
              return Status::Ok();
            },
            &seen);
      },
      &seen);
  if (!walk.ok()) return walk;
  return out;
}

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
