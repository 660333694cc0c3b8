#include "storage/server/cluster.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "base/strings.h"

namespace kplane::storage {
StatusOr<std::vector<InitialMember>> ParseInitialCluster(std::string_view s) {
  std::vector<InitialMember> out;
  std::map<std::string, size_t> by_name;
  for (const std::string& part : StrSplit(s, ',')) {
    std::string_view p = StripWhitespace(part);
    if (p.empty()) continue;
    size_t eq = p.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == p.size()) {
      return InvalidArgumentError("--initial-cluster: expected name=url in \"" +
                                  std::string(p) + "\"");
    }
    std::string name(p.substr(0, eq));
    std::string url(p.substr(eq + 1));
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0 &&
        url.rfind("unix://", 0) != 0 && url.rfind("unixs://", 0) != 0) {
      return InvalidArgumentError(
          "--initial-cluster: URL must start with "
          "http://, https://, unix:// or unixs:// in \"" +
          std::string(p) + "\"");
    }
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      by_name[name] = out.size();
      out.push_back({name, {url}});
    } else {
      out[it->second].peer_urls.push_back(url);
    }
  }
  if (out.empty()) return InvalidArgumentError("--initial-cluster is empty");
  return out;
}

namespace {

// The first 8 bytes of data's SHA-1, big-endian (etcd's ID derivations).
uint64_t Sha1Prefix64(const std::string& data) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
       digest);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | digest[i];
  return v;
}

}  // namespace

// etcd 3.4's membership.NewMember: SHA-1 of the sorted peer URLs, the
// cluster token and (a member added later) a time, so a cluster started
// with the same flags has etcd's member and cluster IDs (etcd's e2e
// TestCtlV3GetFormat matches them in `get -w protobuf`).
uint64_t ComputeMemberId(std::vector<std::string> peer_urls,
                         const std::string& token, int64_t salt) {
  std::sort(peer_urls.begin(), peer_urls.end());
  std::string key = StrJoin(peer_urls, "") + token;
  if (salt != 0) key += std::to_string(salt);
  uint64_t id = Sha1Prefix64(key);
  return id == 0 ? 1 : id;
}

// etcd 3.4's RaftCluster.genID: SHA-1 of the sorted member IDs, 8 bytes
// big-endian each.
uint64_t ComputeClusterId(std::vector<uint64_t> member_ids) {
  std::sort(member_ids.begin(), member_ids.end());
  std::string key;
  for (uint64_t id : member_ids) {
    for (int shift = 56; shift >= 0; shift -= 8) {
      key.push_back(static_cast<char>((id >> shift) & 0xff));
    }
  }
  uint64_t id = Sha1Prefix64(key);
  return id == 0 ? 1 : id;
}

std::string IdToHex(uint64_t id) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%" PRIx64, id);
  return buf;
}

StatusOr<uint64_t> ParseHexId(std::string_view s) {
  if (s.empty() || s.size() > 16) {
    return InvalidArgumentError("bad member id \"" + std::string(s) + "\"");
  }
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return InvalidArgumentError("bad member id \"" + std::string(s) + "\"");
    }
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

StatusOr<std::string> NormalizeMemberUrl(std::string_view url) {
  const Status bad =
      InvalidArgumentError("etcdserver: given member URLs are invalid");
  for (char ch : url) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) return bad;
  }
  const size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) return bad;
  std::string scheme(url.substr(0, colon));
  for (char& ch : scheme) {
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (scheme != "http" && scheme != "https" && scheme != "unix" &&
      scheme != "unixs") {
    return bad;
  }
  std::string_view rest = url.substr(colon + 1);
  if (rest.substr(0, 2) != "//") return bad;  // no host at all
  rest.remove_prefix(2);
  const size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  if (end != std::string_view::npos && rest[end] == '/') return bad;  // path
  std::string_view host = authority;
  if (size_t at = host.rfind('@'); at != std::string_view::npos) {
    host.remove_prefix(at + 1);
  }
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return bad;
    std::string_view after = host.substr(close + 1);
    if (after.empty() || after.front() != ':') return bad;
    port = after.substr(1);
  } else {
    const size_t c = host.rfind(':');
    if (c == std::string_view::npos ||
        host.substr(0, c).find_first_of(":[]") != std::string_view::npos) {
      return bad;
    }
    port = host.substr(c + 1);
  }
  for (char ch : port) {
    if (ch < '0' || ch > '9') return bad;
  }
  return scheme + std::string(url.substr(colon));
}

StatusOr<std::vector<std::string>> NormalizeMemberUrls(
    const google::protobuf::RepeatedPtrField<std::string>& urls) {
  if (urls.empty()) {
    return InvalidArgumentError("etcdserver: given member URLs are invalid");
  }
  std::vector<std::string> out;
  for (const std::string& u : urls) {
    ASSIGN_OR_RETURN(std::string n, NormalizeMemberUrl(u));
    out.push_back(std::move(n));
  }
  return out;
}

storagepb::ClusterRecord NewClusterRecord(
    const std::vector<InitialMember>& members, const std::string& token) {
  storagepb::ClusterRecord rec;
  std::vector<uint64_t> ids;
  for (const auto& m : members) {
    auto* r = rec.add_members();
    r->set_id(ComputeMemberId(m.peer_urls, token));
    r->set_name(m.name);
    for (const auto& u : m.peer_urls) r->add_peer_urls(u);
    ids.push_back(r->id());
  }
  rec.set_cluster_id(ComputeClusterId(ids));
  return rec;
}

StatusOr<std::unique_ptr<Membership>> Membership::Open(
    std::string path, const storagepb::ClusterRecord& initial, FileSystem* fs) {
  if (fs == nullptr) fs = FileSystem::Default();
  std::unique_ptr<Membership> m(new Membership(path, fs));
  MutexLock l(&m->mu_);  // not shared yet; for the analysis
  m->record_ = initial;
  if (path.empty()) return m;
  StatusOr<std::string> data = ReadFile(fs, path);
  if (!data.ok()) {
    if (data.status().Is(StatusCode::kNotFound)) return m;
    return data.status().Annotate("reading the membership file");
  }
  if (!m->record_.ParseFromString(*data)) {
    return CorruptionError("undecodable membership file " + path);
  }
  return m;
}

storagepb::ClusterRecord Membership::Record() const {
  MutexLock l(&mu_);
  return record_;
}

uint64_t Membership::cluster_id() const {
  MutexLock l(&mu_);
  return record_.cluster_id();
}

std::vector<storagepb::MemberRecord> Membership::Members() const {
  MutexLock l(&mu_);
  return {record_.members().begin(), record_.members().end()};
}

std::optional<storagepb::MemberRecord> Membership::Find(uint64_t id) const {
  MutexLock l(&mu_);
  for (const auto& m : record_.members()) {
    if (m.id() == id) return m;
  }
  return std::nullopt;
}

bool Membership::IsRemoved(uint64_t id) const {
  MutexLock l(&mu_);
  return std::find(record_.removed().begin(), record_.removed().end(), id) !=
         record_.removed().end();
}

namespace {
// etcd 3.4's maxLearners.
constexpr int kMaxLearners = 1;
}  // namespace

Status Membership::ValidateConfChange(const raftpb::ConfChange& cc) const {
  MutexLock l(&mu_);
  const uint64_t id = cc.node_id();
  const Status not_found(StatusCode::kNotFound, "etcdserver: member not found");
  if (std::find(record_.removed().begin(), record_.removed().end(), id) !=
      record_.removed().end()) {
    return not_found;
  }
  const storagepb::MemberRecord* member = nullptr;
  for (const auto& m : record_.members()) {
    if (m.id() == id) member = &m;
  }
  storagepb::MemberRecord context;
  const bool has_context =
      !cc.context().empty() && context.ParseFromString(cc.context());
  // No other member may have one of these peer URLs (compared normalised,
  // as etcd stores them).
  auto normal = [](const std::string& u) {
    StatusOr<std::string> n = NormalizeMemberUrl(u);
    return n.ok() ? *n : u;
  };
  auto urls_taken = [&]() REQUIRES(mu_) {
    for (const auto& m : record_.members()) {
      if (m.id() == id) continue;
      for (const auto& u : m.peer_urls()) {
        for (const auto& nu : context.peer_urls()) {
          if (normal(u) == normal(nu)) return true;
        }
      }
    }
    return false;
  };
  switch (cc.type()) {
    case raftpb::ConfChangeAddNode:
    case raftpb::ConfChangeAddLearnerNode: {
      const bool promote = cc.type() == raftpb::ConfChangeAddNode &&
                           (!has_context || context.is_learner());
      if (promote) {
        if (member == nullptr) return not_found;
        if (!member->is_learner()) {
          return FailedPreconditionError(
              "etcdserver: can only promote a learner member");
        }
        return Status::Ok();
      }
      if (member != nullptr) {
        return FailedPreconditionError("etcdserver: member ID already exist");
      }
      if (urls_taken()) {
        return FailedPreconditionError("etcdserver: Peer URLs already exists");
      }
      if (cc.type() == raftpb::ConfChangeAddLearnerNode) {
        int learners = 0;
        for (const auto& m : record_.members()) learners += m.is_learner();
        if (learners + 1 > kMaxLearners) {
          return FailedPreconditionError(
              "etcdserver: too many learner members in cluster");
        }
      }
      return Status::Ok();
    }
    case raftpb::ConfChangeRemoveNode:
      if (member == nullptr) return not_found;
      return Status::Ok();
    case raftpb::ConfChangeUpdateNode:
      if (member == nullptr) return not_found;
      if (urls_taken()) {
        return FailedPreconditionError("etcdserver: Peer URLs already exists");
      }
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

StatusOr<bool> Membership::ApplyAdd(uint64_t index,
                                    const storagepb::MemberRecord& m) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  bool found = false;
  for (auto& existing : *record_.mutable_members()) {
    if (existing.id() == m.id()) {
      existing.mutable_peer_urls()->CopyFrom(m.peer_urls());
      existing.set_is_learner(m.is_learner());
      found = true;
    }
  }
  if (!found) *record_.add_members() = m;
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

StatusOr<bool> Membership::ApplyRemove(uint64_t index, uint64_t id) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  auto* ms = record_.mutable_members();
  ms->erase(std::remove_if(ms->begin(), ms->end(),
                           [&](const auto& m) { return m.id() == id; }),
            ms->end());
  record_.add_removed(id);
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

StatusOr<bool> Membership::ApplyPromote(uint64_t index, uint64_t id) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  for (auto& m : *record_.mutable_members()) {
    if (m.id() == id) m.set_is_learner(false);
  }
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

StatusOr<bool> Membership::ApplyPeerUrls(
    uint64_t index, uint64_t id, const std::vector<std::string>& peer_urls) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  for (auto& m : *record_.mutable_members()) {
    if (m.id() != id) continue;
    m.clear_peer_urls();
    for (const auto& u : peer_urls) m.add_peer_urls(u);
  }
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

StatusOr<bool> Membership::ApplyAttributes(
    uint64_t index, const storagepb::MemberAttributes& attrs) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  for (auto& m : *record_.mutable_members()) {
    if (m.id() == attrs.member_id()) {
      m.set_name(attrs.name());
      m.mutable_client_urls()->CopyFrom(attrs.client_urls());
    }
  }
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

StatusOr<bool> Membership::ApplyAlarm(uint64_t index,
                                      const etcdserverpb::AlarmRequest& a) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  auto* alarms = record_.mutable_alarms();
  if (a.action() == etcdserverpb::AlarmRequest::ACTIVATE &&
      (a.alarm() == etcdserverpb::CORRUPT ||
       a.alarm() == etcdserverpb::NOSPACE)) {
    bool present = false;
    for (const auto& am : *alarms) {
      present |= am.memberid() == a.memberid() && am.alarm() == a.alarm();
    }
    if (!present) {
      etcdserverpb::AlarmMember* am = alarms->Add();
      am->set_memberid(a.memberid());
      am->set_alarm(a.alarm());
    }
  } else if (a.action() == etcdserverpb::AlarmRequest::DEACTIVATE) {
    // etcdctl's `alarm disarm` sends NONE for every alarm, member 0.
    for (int i = alarms->size() - 1; i >= 0; --i) {
      const auto& am = alarms->Get(i);
      bool type = a.alarm() == etcdserverpb::NONE || a.alarm() == am.alarm();
      bool member = a.memberid() == 0 || a.memberid() == am.memberid();
      if (type && member) alarms->DeleteSubrange(i, 1);
    }
  }
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

StatusOr<bool> Membership::ApplyAuth(uint64_t index,
                                     const storagepb::AuthRecord& auth) {
  MutexLock l(&mu_);
  if (index <= record_.applied_index()) return false;
  *record_.mutable_auth() = auth;
  record_.set_applied_index(index);
  RETURN_IF_ERROR(SaveLocked());
  return true;
}

uint64_t Membership::applied_index() const {
  MutexLock l(&mu_);
  return record_.applied_index();
}

storagepb::ClusterRecord Membership::RecordForJoiners() const {
  MutexLock l(&mu_);
  storagepb::ClusterRecord r = record_;
  r.clear_auth();
  return r;
}

std::vector<etcdserverpb::AlarmMember> Membership::Alarms() const {
  MutexLock l(&mu_);
  return {record_.alarms().begin(), record_.alarms().end()};
}

Status Membership::Replace(const storagepb::ClusterRecord& record) {
  MutexLock l(&mu_);
  record_ = record;
  return SaveLocked();
}

Status Membership::Save() {
  MutexLock l(&mu_);
  return SaveLocked();
}

Status Membership::SaveLocked() {
  if (path_.empty()) return Status::Ok();
  return WriteFileAtomically(fs_, path_, record_.SerializeAsString())
      .Annotate("saving the membership");
}

void Membership::FillMembers(
    google::protobuf::RepeatedPtrField<etcdserverpb::Member>* out) const {
  MutexLock l(&mu_);
  for (const auto& m : record_.members()) {
    auto* e = out->Add();
    e->set_id(m.id());
    e->set_name(m.name());
    for (const auto& u : m.peer_urls()) e->add_peerurls(u);
    for (const auto& u : m.client_urls()) e->add_clienturls(u);
    e->set_islearner(m.is_learner());
  }
}

}  // namespace kplane::storage
