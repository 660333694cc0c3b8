// `kpctl store snapshot save|status|restore`: snapshot files of both kinds
// of store.
//
//   etcd 3.4     a bbolt database followed by its 32-byte sha256, exactly
//                the bytes /v3/maintenance/snapshot streams (etcdctl's file)
//   kplane store "KPSNAP1\n", then for each file of a RocksDB checkpoint:
//                [4-byte big-endian length][storagepb.SnapshotFile header:
//                name, size, crc32c][size bytes] (docs/store.md). Names are
//                relative: "db/CURRENT", "db/000012.sst", "cluster.pb".
//
// save writes <file>.part, fsyncs and renames it, as etcdctl does, and
// checks etcd's trailing checksum is present (size % 512 == 32).
//
// status: etcd files as etcdctl reports them (bolt_status.h); kplane files
// are unpacked into a temporary directory and opened: hash = HashKV at the
// current revision (what /v3/maintenance/hash of a member at that revision
// reports), revision = the store's revision, total keys = keys live at
// that revision, total size = bytes of the checkpoint files. Every file's
// CRC-32C is checked first.
//
// restore: either kind of file, told apart by content (bbolt's meta page
// magic, or KPSNAP1). A kplane file: the checkpoint's db/ files (each
// CRC-32C checked) with the applied raft index reset (the new cluster's log
// starts again at 1), and its users and roles. An etcd file (migrating from
// etcd): its trailing SHA-256 checked as etcdctl does ("snapshot missing
// hash but --skip-hash-check=false", "expected sha256 X, got Y"), then the
// key, meta, lease and auth buckets read (bolt::ReadEtcdBackend) and the
// store built with the same history (mvcc::Store::CreateFromExport: every
// version at its revision, the compaction revision, leases and their keys,
// no applied index); users and roles kept, except that a file with auth on
// and etcd's bcrypt passwords is refused (kFailedPrecondition: kplane
// cannot check them and nobody could sign in). Both then write
// <data-dir>/member/cluster.pb for the cluster named by --initial-cluster.
// Everything is built in <data-dir>.part and renamed at the end: a failed
// restore leaves no data dir. Start each member with the same
// --name/--initial-cluster/token flags.
//
// Thread-safety: functions are independent. Errors: kInvalidArgument for
// malformed or foreign files and a missing etcd hash, kAlreadyExists when
// the restore target exists, kCorruption for a CRC or SHA-256 mismatch or
// an etcd record that does not parse, kIOError for file system failures.
#ifndef KPLANE_KPCTL_STORE_SNAPSHOT_FILE_H_
#define KPLANE_KPCTL_STORE_SNAPSHOT_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"
#include "kpctl/store/printer.h"
#include "storage/client/maintenance.h"

namespace kplane::kpctl {

inline constexpr std::string_view kPackedSnapshotMagic = "KPSNAP1\n";

struct RestoreOptions {
  std::string data_dir;  // empty: "<name>.etcd"
  std::string name = "default";
  std::string initial_cluster;  // empty: "<name>=<advertise peer URL>"
  // kplane store's default (etcdctl's is "etcd-cluster"): member ids are
  // derived from it, and the restored member's must match its flags.
  std::string initial_cluster_token = "kplane-cluster";
  std::string initial_advertise_peer_urls = "http://localhost:2380";
  bool skip_hash_check = false;
};

// One file of a packed (KPSNAP1) snapshot.
struct PackedFile {
  std::string name;
  std::string_view data;
};

// Splits a KPSNAP1 snapshot into its files, checking each CRC-32C (unless
// skip_crc).
StatusOr<std::vector<PackedFile>> ParsePackedSnapshot(std::string_view data,
                                                      bool skip_crc = false);

Status SaveSnapshot(storage::Maintenance* member, const std::string& path);
StatusOr<SnapshotStatus> SnapshotFileStatus(const std::string& path);
Status RestoreSnapshot(const std::string& path, const RestoreOptions& options);

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_STORE_SNAPSHOT_FILE_H_
