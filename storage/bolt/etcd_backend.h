// etcd 3.4's backend layout in a bbolt file: what `etcdctl snapshot save`
// receives from etcd, built from kplane's data so that etcd's tools
// (`snapshot status`, `snapshot restore`) and etcd itself read it.
//
// Buckets and records, as etcd 3.4 writes them (docs/store.md, "etcd
// snapshot files"; be64 = 8-byte big-endian):
//
//   key              revision bytes -> mvccpb.KeyValue. Revision bytes:
//                    be64(main) '_' be64(sub), plus 't' for a tombstone,
//                    whose value holds only the key. Every version the
//                    store keeps (history not yet compacted included).
//   meta             "consistent_index" -> be64; once compacted,
//                    "scheduledCompactRev" and "finishedCompactRev" ->
//                    revision bytes (main, 0)
//   lease            be64(id) -> leasepb.Lease{ID, TTL}
//   members          hex id -> Go JSON {"id","peerURLs","isLearner"
//                    (when set),"name","clientURLs"} (omitempty as Go)
//   members_removed  hex id -> "removed"
//   cluster          "clusterVersion" -> "3.4.0"
//   alarm            marshalled etcdserverpb.AlarmMember -> ""
//   auth             "authRevision" -> be64(revision, at least 1); once
//                    auth was enabled, "authEnabled" -> 0x01 or 0x00
//   authUsers        name -> authpb.User (its password kplane's PBKDF2
//                    hash, which etcd's bcrypt check rejects)
//   authRoles        name -> authpb.Role
//
// Worked example: put foo=v1 at revision 2 (etcd's first) is key
// 00..02 5f 00..00 -> 0a 03 'foo' 10 02 18 02 20 01 2a 02 'v1'; deleting
// foo at 3 adds 00..03 5f 00..00 74 -> 0a 03 'foo'.
//
// Thread-safety: pure functions. Errors: those of WriteBoltDb.
#ifndef KPLANE_STORAGE_BOLT_ETCD_BACKEND_H_
#define KPLANE_STORAGE_BOLT_ETCD_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"
#include "schemas/auth.pb.h"
#include "schemas/kv.pb.h"
#include "schemas/rpc.pb.h"

namespace kplane::bolt {

struct EtcdBackend {
  uint64_t consistent_index = 0;
  int64_t scheduled_compact_revision = 0;  // 0: never compacted
  int64_t finished_compact_revision = 0;
  struct Version {
    int64_t main = 0;
    int64_t sub = 0;
    bool tombstone = false;
    mvccpb::KeyValue kv;  // a tombstone's carries only the key
  };
  std::vector<Version> versions;  // any order
  struct Lease {
    int64_t id = 0;
    int64_t ttl = 0;
  };
  std::vector<Lease> leases;
  std::vector<etcdserverpb::Member> members;
  std::vector<uint64_t> removed_members;
  std::vector<etcdserverpb::AlarmMember> alarms;
  std::string cluster_version = "3.4.0";
  // etcd's auth buckets.
  uint64_t auth_revision = 1;
  bool auth_enabled_key = false;  // write "authEnabled" at all
  bool auth_enabled = false;
  std::vector<authpb::User> auth_users;
  std::vector<authpb::Role> auth_roles;
};

// The bbolt database (without etcd's trailing sha256). Consumes
// `contents` to save memory.
StatusOr<std::string> WriteEtcdBackend(EtcdBackend contents);

// Reads an etcd 3.4 backend (a bbolt database, e.g. an etcd snapshot
// without its trailing sha256, or member/snap/db) into the layout above:
// the inverse of WriteEtcdBackend for every bucket it writes. Buckets etcd
// has and kplane does not use are ignored; missing buckets read as empty.
// cluster_version is "clusterVersion" of bucket "cluster" ("" when absent).
// Errors: kInvalidArgument "invalid database" when `db` is no bbolt file
// (BoltReader::Open), kCorruption naming the bucket and key for a page or
// record that does not parse (a revision key that is not 17 or 18 bytes, a
// value that is no KeyValue/Lease/User/Role, a member that is not etcd's
// JSON).
StatusOr<EtcdBackend> ReadEtcdBackend(std::string_view db);

// etcd's revision bytes: be64(main) '_' be64(sub) [+ 't'].
std::string EtcdRevisionKey(int64_t main, int64_t sub, bool tombstone);

// A member's record in bucket "members", as Go's encoding/json writes
// etcd's membership.Member.
std::string EtcdMemberJson(const etcdserverpb::Member& m);

// Parses etcd's member JSON (bucket "members", and the context of a raft
// ConfChange that adds a member): "id" a JSON number, "peerURLs",
// "clientURLs", "name", "isLearner", each optional but "id". False when it
// is not that shape.
bool ParseEtcdMemberJson(std::string_view json, etcdserverpb::Member* m);

// The SHA-256 of `data` (32 bytes): what etcd appends to a snapshot.
std::string Sha256(std::string_view data);

}  // namespace kplane::bolt

#endif  // KPLANE_STORAGE_BOLT_ETCD_BACKEND_H_
