// Cluster membership of the replicated store: member and cluster ids, the
// `--initial-cluster` flag, and the ClusterRecord each member keeps in
// `<data-dir>/member/cluster.pb`.
//
// Ids: a member id is a 64-bit hash of its sorted peer URLs and the cluster
// token (as etcd derives it), plus a time salt for members added at runtime
// so that re-adding the same URLs yields a new id. The cluster id hashes the
// sorted initial member ids. Ids are printed in hex, as etcd prints them.
//
// Thread-safety: Membership is guarded by its own mutex; all methods are
// safe from any thread.
#ifndef KPLANE_STORAGE_SERVER_CLUSTER_H_
#define KPLANE_STORAGE_SERVER_CLUSTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "schemas/rpc.pb.h"
#include "schemas/storage.pb.h"

namespace kplane::storage {

struct InitialMember {
  std::string name;
  std::vector<std::string> peer_urls;
};

// Parses "n1=http://127.0.0.1:2380,n2=http://127.0.0.1:12380" (a name may
// repeat to give a member several URLs).
StatusOr<std::vector<InitialMember>> ParseInitialCluster(std::string_view s);

// etcd 3.4's IDs (membership.NewMember, RaftCluster.genID): the same
// --initial-cluster and --initial-cluster-token give etcd's member and
// cluster IDs; `salt` (nonzero) is a member added later's time.
uint64_t ComputeMemberId(std::vector<std::string> peer_urls,
                         const std::string& token, int64_t salt = 0);
uint64_t ComputeClusterId(std::vector<uint64_t> member_ids);
std::string IdToHex(uint64_t id);
StatusOr<uint64_t> ParseHexId(std::string_view s);

// etcd 3.4's types.NewURLs for member URLs (measured on etcd): a scheme of
// http, https, unix or unixs (any case; lowered), "//" and host:port (an
// IPv6 host in brackets; the port may be empty but must be digits), no
// path (not even "/"); user info, query and fragment pass. Returns the URL
// with its scheme in lower case (how etcd stores and compares it), or
// kInvalidArgument "etcdserver: given member URLs are invalid".
StatusOr<std::string> NormalizeMemberUrl(std::string_view url);
// All of them, in the order given; an empty list is invalid too. etcd's
// member add sorts them (types.NewURLs); its member update stores the
// list as the client gave it (v3rpc's MemberUpdate does not parse it).
StatusOr<std::vector<std::string>> NormalizeMemberUrls(
    const google::protobuf::RepeatedPtrField<std::string>& urls);

// The bootstrap record of a new cluster.
storagepb::ClusterRecord NewClusterRecord(
    const std::vector<InitialMember>& members, const std::string& token);

class Membership {
 public:
  // Loads `path` if it exists (an empty path: never loaded nor saved);
  // otherwise starts from `initial` (not yet saved). The file is replaced
  // atomically through `fs` (write, fsync, rename, fsync the directory:
  // WriteFileAtomically); null = FileSystem::Default(). `fs` is not owned
  // and must outlive the Membership.
  static StatusOr<std::unique_ptr<Membership>> Open(
      std::string path, const storagepb::ClusterRecord& initial,
      FileSystem* fs = nullptr);

  storagepb::ClusterRecord Record() const;
  uint64_t cluster_id() const;
  std::vector<storagepb::MemberRecord> Members() const;
  // The member with this id, if present.
  std::optional<storagepb::MemberRecord> Find(uint64_t id) const;
  bool IsRemoved(uint64_t id) const;

  // etcd 3.4's RaftCluster.ValidateConfigurationChange: whether the
  // committed conf change `cc` may apply to this record (run on every
  // member when it applies the change; an invalid change is a no-op).
  // Errors as etcd's client sees them: a removed or unknown id kNotFound
  // "etcdserver: member not found"; an id present kFailedPrecondition
  // "etcdserver: member ID already exist"; a peer URL of another member
  // "etcdserver: Peer URLs already exists"; a promote of a voter
  // "etcdserver: can only promote a learner member"; a second learner
  // "etcdserver: too many learner members in cluster". A ConfChangeAddNode
  // whose context is a learner's record (or empty) is a promote.
  Status ValidateConfChange(const raftpb::ConfChange& cc) const;

  // Applies a committed membership change made at raft index `index`; a
  // change at or below the record's applied index is skipped (replay).
  // Returns false if skipped.
  StatusOr<bool> ApplyAdd(uint64_t index, const storagepb::MemberRecord& m);
  StatusOr<bool> ApplyRemove(uint64_t index, uint64_t id);
  StatusOr<bool> ApplyPromote(uint64_t index, uint64_t id);
  // etcd's UpdateRaftAttributes: member `id` now has these peer URLs (its
  // name, client URLs and learner flag stay).
  StatusOr<bool> ApplyPeerUrls(uint64_t index, uint64_t id,
                               const std::vector<std::string>& peer_urls);
  StatusOr<bool> ApplyAttributes(uint64_t index,
                                 const storagepb::MemberAttributes& attrs);
  // Applies a committed alarm request: ACTIVATE CORRUPT or NOSPACE records
  // the alarm, DEACTIVATE clears the matching ones (alarm NONE: every type;
  // member 0: every member). (The quota's NOSPACE is also the MVCC store's;
  // a NOSPACE kept here was raised by a member whose disk filled up.)
  // Skipped (false) at or below the record's applied index.
  StatusOr<bool> ApplyAlarm(uint64_t index,
                            const etcdserverpb::AlarmRequest& alarm);
  // Stores the auth state after a committed auth change at `index`;
  // skipped (false) at or below the record's applied index.
  StatusOr<bool> ApplyAuth(uint64_t index, const storagepb::AuthRecord& auth);
  // The raft index of the last entry applied to the record.
  uint64_t applied_index() const;
  // The record a joining or cut-off member may learn from this one (GET
  // /raft/members): everything but the users and roles, whose password
  // hashes stay on the members. A joiner takes them with its first
  // snapshot: every member added gets one whose configuration includes it
  // (StoreApplier takes it when the addition applies), and the record
  // inside replaces this one whole.
  storagepb::ClusterRecord RecordForJoiners() const;
  // The alarms raised through the log and not disarmed.
  std::vector<etcdserverpb::AlarmMember> Alarms() const;
  // Replaces the whole record (a snapshot was installed).
  Status Replace(const storagepb::ClusterRecord& record);
  Status Save();

  // etcd's member list shape.
  void FillMembers(
      google::protobuf::RepeatedPtrField<etcdserverpb::Member>* out) const;

 private:
  Membership(std::string path, FileSystem* fs)
      : path_(std::move(path)), fs_(fs) {}
  Status SaveLocked() REQUIRES(mu_);

  const std::string path_;
  FileSystem* const fs_;
  // A leaf: held only inside these methods (the file is written under it).
  mutable Mutex mu_;
  storagepb::ClusterRecord record_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_CLUSTER_H_
