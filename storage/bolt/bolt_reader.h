// BoltReader: reads a bbolt database held in memory (an etcd backend or
// snapshot file, or what WriteBoltDb wrote), for `snapshot status`,
// restore and tests. Format: page.h and docs/store.md.
//
//   ASSIGN_OR_RETURN(BoltReader db, BoltReader::Open(file_bytes));
//   BoltReader::Visited seen;  // one for the whole read
//   RETURN_IF_ERROR(db.ForEachBucket(
//       [&](std::string_view name, std::string_view header) {
//         return db.ForEachInBucket(
//             header,
//             [&](std::string_view k, std::string_view v, bool) {
//               ...;  return Status::Ok();
//             },
//             &seen);
//       },
//       &seen));
//
// Open picks the valid meta page (magic, version 2, FNV-1a checksum) with
// the highest txid, as bbolt does; bytes past pgid * page_size (etcd's
// trailing sha256) are ignored. Walks check every page they visit: its id
// below the meta's pgid and inside the data, its header id equal to its
// page number, its type, each element inside the page (with its overflow
// pages). Open does not hold pgid against the data's size: a truncated
// file opens and walks refuse its missing pages. Page ids are compared
// with the data's page count before they become offsets, and a walk
// refuses a page it reaches twice (see Visited): a read of a hostile file
// whose walks share one Visited costs time and memory linear in the
// file's size. Check() is bbolt's Tx.Check and more: see below.
//
// Ownership: borrows `data`, which must outlive the reader. Thread-safety:
// const methods may run concurrently (each with its own Visited). Errors: Open
// fails with kInvalidArgument "invalid database" (etcdctl's text) when no meta
// page is valid; walks and Check fail with kCorruption naming the page.
#ifndef KPLANE_STORAGE_BOLT_BOLT_READER_H_
#define KPLANE_STORAGE_BOLT_BOLT_READER_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::bolt {

class BoltReader {
 public:
  // Called for each element in key order; is_bucket marks a nested bucket
  // (its value is a bucket header). A non-OK return stops the walk.
  using Visitor = std::function<Status(std::string_view key,
                                       std::string_view value, bool is_bucket)>;

  // The pages the walks of one read have reached. Pass one set to the root
  // walk and to every bucket walk of a read: a page reached twice anywhere
  // in it (two bucket headers naming one root page, a bucket rooted in the
  // root's tree, branch elements sharing a child) then fails the read with
  // kCorruption, so the read visits each page at most once and costs time
  // linear in the file's size (the set: one bit per page). A walk given
  // none uses its own: linear itself, but N bucket headers naming one root
  // page of M elements cost N x M visits (a 2 MiB file, 4e9). For one
  // reader's walks, one at a time.
  class Visited {
   private:
    friend class BoltReader;
    std::vector<bool> pages_;  // by page id; sized at the first page marked
  };

  static StatusOr<BoltReader> Open(std::string_view data);

  uint32_t page_size() const { return page_size_; }
  // The high-water mark: the database is page_count() * page_size() bytes
  // (bbolt's Tx.Size()).
  uint64_t page_count() const { return pgid_; }
  uint64_t txid() const { return txid_; }

  // The root bucket's elements as stored (a well-formed db holds buckets
  // only).
  Status ForEachRoot(const Visitor& fn, Visited* visited = nullptr) const;
  // The root bucket's elements: top-level bucket names and their headers;
  // fails with kCorruption on a top-level key that is no bucket.
  Status ForEachBucket(const std::function<Status(std::string_view name,
                                                  std::string_view header)>& fn,
                       Visited* visited = nullptr) const;
  // The elements of the bucket whose header is `header` (an inline
  // bucket's page is its header's bytes: no page is marked for it).
  Status ForEachInBucket(std::string_view header, const Visitor& fn,
                         Visited* visited = nullptr) const;

  // The whole structure: the data holds all pgid pages (a truncated file
  // fails first, naming its size); every page below pgid is a meta page
  // (0, 1), the freelist or on it, or reachable from the root exactly once
  // (with its overflow pages; without a freelist page, unreachable pages
  // count as free); keys ascend strictly within each bucket; each branch
  // key is the first key below it; top-level elements are buckets.
  Status Check() const;

 private:
  struct CheckState;
  BoltReader(std::string_view data, uint32_t page_size, uint64_t root,
             uint64_t freelist, uint64_t pgid, uint64_t txid)
      : d_(data),
        page_size_(page_size),
        root_(root),
        freelist_(freelist),
        pgid_(pgid),
        txid_(txid),
        pages_(std::min<uint64_t>(pgid, data.size() / page_size)) {}

  // The page `id` (with its overflow pages), checked.
  StatusOr<std::string_view> Page(uint64_t id) const;
  // Marks pages [id, id + n) in `seen` (sizing it first); fails if one
  // was marked.
  Status MarkSeen(uint64_t id, uint64_t n, Visited* seen) const;
  // `seen` is the read's; Check's walks (check set) use its marks instead.
  Status WalkTree(uint64_t id, const Visitor& fn, int depth, CheckState* check,
                  Visited* seen) const;
  Status WalkPage(std::string_view page, uint64_t id, const Visitor& fn,
                  int depth, CheckState* check, Visited* seen) const;
  Status WalkBucket(std::string_view header, const Visitor& fn,
                    CheckState* check, Visited* seen) const;

  std::string_view d_;
  uint32_t page_size_;
  uint64_t root_, freelist_, pgid_, txid_;
  // The pages that can be read: below pgid and wholly inside the data.
  uint64_t pages_;
};

}  // namespace kplane::bolt

#endif  // KPLANE_STORAGE_BOLT_BOLT_READER_H_
