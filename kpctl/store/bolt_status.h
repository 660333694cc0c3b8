// Reading an etcd snapshot file (a bbolt database, as `snapshot save`
// writes it against a real etcd) far enough for `snapshot status`: the
// hash, revision, key count and size etcdctl 3.4 reports.
//
// The file is read with storage/bolt's BoltReader (format in
// docs/store.md, "etcd snapshot files").
//
// The valid meta with the highest txid wins. The hash is etcd's: CRC-32C
// over, for each top-level bucket in key order, its name then each key and
// value; the revision is the main revision of the last key in bucket
// "key" (8-byte big-endian prefix); the size is pgid * page_size.
//
// Worked example: a fresh etcd db has buckets alarm, auth, authRoles,
// authUsers, cluster, key, lease, members, members_removed, meta; after
// three puts "key" holds revisions 2, 3, 4 -> revision 4.
//
// Unlike etcdctl this does not run bbolt's full consistency check; a
// structurally broken file is reported as "invalid database".
//
// Thread-safety: pure function. Errors: kInvalidArgument ("invalid
// database") for a file that is not a bolt db.
#ifndef KPLANE_KPCTL_STORE_BOLT_STATUS_H_
#define KPLANE_KPCTL_STORE_BOLT_STATUS_H_

#include <string_view>

#include "base/statusor.h"
#include "kpctl/store/printer.h"

namespace kplane::kpctl {

// `data` is the whole file (a trailing sha256, as etcd appends it, is
// ignored like bbolt ignores it).
StatusOr<SnapshotStatus> BoltSnapshotStatus(std::string_view data);

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_STORE_BOLT_STATUS_H_
