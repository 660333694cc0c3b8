// Reading an etcd snapshot file (a bbolt database, as `snapshot save`
// writes it against a real etcd) far enough for `snapshot status`: the
// hash, revision, key count and size etcdctl 3.4 reports.
//
// bbolt's format, as far as it is read here (all integers little-endian):
//
//   page header (16 B): id u64 | flags u16 | count u16 | overflow u32
//     flags: 0x01 branch, 0x02 leaf, 0x04 meta, 0x10 freelist
//   meta (pages 0 and 1, after the header): magic u32 = 0xED0CDAED |
//     version u32 = 2 | page_size u32 | flags u32 | root bucket {root u64,
//     sequence u64} | freelist u64 | pgid u64 (high-water mark) | txid u64 |
//     checksum u64 (FNV-1a 64 of the preceding meta bytes)
//   branch element (16 B): pos u32 | ksize u32 | pgid u64
//   leaf element (16 B):   flags u32 | pos u32 | ksize u32 | vsize u32
//     (pos is relative to the element; value follows the key; flag 0x01
//     marks a nested bucket, whose value is a bucket header {root u64,
//     sequence u64}, followed by an inline leaf page when root is 0)
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
