// WriteBoltDb: a complete bbolt database file (the format etcd keeps its
// backend in, and streams as a snapshot) built in memory from top-level
// buckets of sorted key/values, for `Maintenance.Snapshot`. Readers: bbolt
// itself (etcdctl `snapshot status|restore`, etcd), BoltReader.
//
//   std::vector<BoltBucket> b(2);
//   b[0].name = "key";  b[0].items = {{rev_bytes, kv_bytes}, ...};
//   b[1].name = "meta"; b[1].items = {{"consistent_index", be64(7)}};
//   ASSIGN_OR_RETURN(std::string db, WriteBoltDb(std::move(b)));
//
// The file is what one bbolt write transaction would leave after a bulk
// load, page ids in allocation order:
//
//   page 0, 1   meta (identical, as bbolt's Tx.WriteTo writes them), txid
//   page 2      freelist (empty: every page is in use)
//   3 ...       each bucket's tree bottom-up (leaves in key order, then
//               each branch level), bucket after bucket; a bucket that
//               bbolt would keep inline (no more than page_size/4 bytes as
//               a page) is stored inline in its parent's value instead
//   last        the root bucket's tree (bucket name -> bucket header)
//
// Leaves and branches are filled up to a page; an element that does not
// fit an empty page gets overflow pages (bbolt's own rule). Size: pgid *
// page_size bytes, exactly what bbolt reports as Tx.Size().
//
// Memory: the file is built in one string (plus the caller's buckets).
// Thread-safety: a pure function. Errors: kInvalidArgument for duplicate
// keys or bucket names, an empty key, a key over bbolt's 32 KiB limit, or a
// page size that is not a power of two in [1 KiB, 64 KiB].
#ifndef KPLANE_STORAGE_BOLT_BOLT_WRITER_H_
#define KPLANE_STORAGE_BOLT_BOLT_WRITER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/statusor.h"

namespace kplane::bolt {

struct BoltBucket {
  std::string name;
  // Sorted by key (bytewise) or not: they are sorted if needed.
  std::vector<std::pair<std::string, std::string>> items;
};

struct BoltWriteOptions {
  uint32_t page_size = 4096;
  uint64_t txid = 1;
};

StatusOr<std::string> WriteBoltDb(std::vector<BoltBucket> buckets,
                                  const BoltWriteOptions& options = {});

}  // namespace kplane::bolt

#endif  // KPLANE_STORAGE_BOLT_BOLT_WRITER_H_
