// Starting `kplane store` on an etcd 3.4 data directory (issue 17, etcd's
// TestIssue6361): what `etcdctl snapshot restore` writes, or a stopped etcd
// member's directory, is imported on first start into kplane's own files.
//
// Detection: <data-dir>/member is etcd's when it holds member/snap/db (a
// bbolt file; kplane's snap/ holds only db-<index> directories) and has
// neither kplane's member/db nor member/cluster.pb.
//
// What is read (docs/store.md, "etcd data directories"):
//   member/snap/db   the keys with their revisions and history, leases,
//                    compaction revisions, users and roles, and the
//                    consistent index (bolt::ReadEtcdBackend). Its members
//                    bucket is not the membership: etcd 3.4's restore leaves
//                    the OLD cluster's members there.
//   member/wal/      node and cluster ID (the metadata record) and the
//                    membership, replayed from the log's conf changes
//                    (bolt::ReadEtcdWal, MembershipFromEtcdWal): restore
//                    writes one ConfChangeAddNode per new member whose
//                    context is the member's JSON. Every record's CRC is
//                    checked. The .snap files are not read: they hold the
//                    same membership (as v2 store JSON) and no IDs.
// Member and cluster IDs stay etcd's. The MVCC store keeps etcd's revisions;
// kplane's raft log starts anew (applied index 0, a bootstrap snapshot at
// index 1 with the members as voters), as `kpctl store snapshot restore`
// does: one restore path (mvcc::Store::CreateFromExport).
//
// Refused, with nothing written (kFailedPrecondition): a WAL with entries
// past the db's consistent index (a live or crashed member: its last writes
// are only in the WAL), a WAL whose first files were purged, users with
// etcd's bcrypt passwords while auth is on, a member/snap/db without
// member/wal (etcd's --wal-dir elsewhere). kCorruption: a CRC mismatch, a
// truncated or unparsable WAL or db. kInvalidArgument: not etcd 3.4 (the
// db's cluster version, a WAL record type etcd 3.4 does not write).
//
// Crash safety: kplane's files are built in <data-dir>/member.import
// (removed first if a crash left one), then etcd's member/ is renamed to
// <data-dir>/member.etcd (kept, unchanged, for going back to etcd) and
// member.import to member/, each rename made durable. A crash before the
// second rename leaves member.etcd and no member/: the next start imports
// from member.etcd again.
//
// Thread-safety: a function; call it with the data directory's LOCK held.
#ifndef KPLANE_STORAGE_SERVER_ETCD_IMPORT_H_
#define KPLANE_STORAGE_SERVER_ETCD_IMPORT_H_

#include <string>

#include "base/file_system.h"
#include "base/statusor.h"
#include "schemas/storage.pb.h"
#include "storage/bolt/etcd_backend.h"
#include "storage/mvcc/store.h"
#include "storage/server/raft_log.h"

namespace kplane::storage {

// etcd's backend as kplane's store and auth state: the conversion shared by
// `kpctl store snapshot restore` of an etcd file and ImportEtcdDataDir.
// Revision = the newest record's, or the compaction's when it removed every
// newer one. kCorruption for a record whose mod_revision is not its
// revision; kFailedPrecondition for a user with an etcd (bcrypt) password
// while auth is enabled (kplane cannot check those: nobody could sign in).
struct EtcdBackendData {
  mvcc::Store::Export history;
  storagepb::AuthRecord auth;
};
StatusOr<EtcdBackendData> FromEtcdBackend(bolt::EtcdBackend b);

// Where etcd's member directory is kept after an import.
inline constexpr char kEtcdMemberAside[] = "member.etcd";

// Imports <data_dir>/member (or, after an interrupted import,
// <data_dir>/member.etcd) when it is etcd's; does nothing otherwise.
// `log_options` open kplane's new WAL; `name` names this member when the
// etcd log does not (a member added with `member add` that never started).
// Sets *imported when it did import.
Status ImportEtcdDataDir(FileSystem* fs, const std::string& data_dir,
                         const RaftLogOptions& log_options,
                         const std::string& name, bool* imported);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_ETCD_IMPORT_H_
