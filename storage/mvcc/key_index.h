// KeyIndex: the store's in-memory index of every key's uncompacted versions
// (etcd's treeIndex/keyIndex), internal to kplane_mvcc.
//
// For each user key it keeps, oldest first, one small record per stored
// version: (main, sub) revision, tombstone or put, and for a put its
// create_revision, version and lease -- never the value. With it the store
//  - takes a put's previous create_revision/version/lease without reading
//    RocksDB (only the value, when a caller asks for prev_kv, is read),
//  - lists the live keys a delete removes without reading RocksDB,
//  - answers Range's `count` (and count_only) at any uncompacted revision
//    by walking the index instead of seeking through every key's versions,
//    so a paged LIST (limit + count) reads only `limit` rows from RocksDB.
//
//   index.Put("a", /*main=*/5, /*sub=*/0, /*create=*/5, /*version=*/1, 0);
//   index.Tombstone("a", 7, 0);
//   index.Count("a", "", /*rev=*/6) == 1;  index.Count("a", "", 7) == 0;
//   index.Compact(8);   // "a" is gone: its newest version <= 8 is a
//                       // tombstone below 8
//
// Revisions above the store's current revision may be in the index: a
// write stages its versions here when it stages them in RocksDB's batch,
// before it is published. Readers ask at a revision <= the published one,
// so they never see them; RemoveAbove() takes them out again when a staged
// write is rolled back or its group fails to reach RocksDB.
//
// Compaction mirrors the physical one (store_compact.cc): Compact(C) drops
// every version of a key older than its newest version <= C, and that one
// too if it is a tombstone below C. A read at any revision >= C still finds
// the newest version <= its revision.
//
// Memory: one std::map node per key (the key string, ~80 bytes of node and
// vector overhead) plus 40 bytes per uncompacted version; docs/store.md has
// the measured figure.
//
// Thread-safety: all methods are thread-safe (one reader-writer lock).
// The store calls the mutators only under its write lock, so the "latest"
// lookups the writer makes see a stable state; readers (Count) run
// concurrently with it.
#ifndef KPLANE_STORAGE_MVCC_KEY_INDEX_H_
#define KPLANE_STORAGE_MVCC_KEY_INDEX_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "schemas/kv.pb.h"

namespace kplane::mvcc {

class KeyIndex {
 public:
  struct Version {
    int64_t main = 0;
    uint32_t sub = 0;
    bool tombstone = false;
    // Of a put (0 for a tombstone).
    int64_t create_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
  };

  // Adds a put / a tombstone of `key` at (main, sub), which must be newer
  // than every version the index holds for it.
  void Put(std::string_view key, int64_t main, uint32_t sub,
           int64_t create_revision, int64_t version, int64_t lease)
      EXCLUDES(mu_);
  void Tombstone(std::string_view key, int64_t main, uint32_t sub)
      EXCLUDES(mu_);

  // The newest version of `key` (staged ones included) when it is a put.
  std::optional<Version> Latest(std::string_view key) const EXCLUDES(mu_);
  // The same as a KeyValue: key, create/mod revision, version, lease; no
  // value.
  std::optional<mvccpb::KeyValue> LatestKeyValue(std::string_view key) const
      EXCLUDES(mu_);

  // The live keys in [key, range_end) (etcd conventions: empty range_end =
  // the key alone, "\0" = every key >= key) as of their newest versions,
  // with those versions, in key order.
  std::vector<std::pair<std::string, Version>> LatestLive(
      std::string_view key, std::string_view range_end) const EXCLUDES(mu_);

  // How many keys in [key, range_end) are live at revision `rev`.
  int64_t Count(std::string_view key, std::string_view range_end,
                int64_t rev) const EXCLUDES(mu_);
  // Count, when `still_valid()` -- called under the index's lock, so that
  // a concurrent Compact() cannot run between the check and the count --
  // returns true; nullopt otherwise.
  std::optional<int64_t> CountIf(std::string_view key,
                                 std::string_view range_end, int64_t rev,
                                 const std::function<bool()>& still_valid) const
      EXCLUDES(mu_);

  // Drops the versions of `keys` newer than `rev` (a rolled-back write).
  void RemoveAbove(const std::vector<std::string>& keys, int64_t rev)
      EXCLUDES(mu_);

  // Drops what compaction to `target` deletes (above).
  void Compact(int64_t target) EXCLUDES(mu_);

  // Replaces the whole index (Open's rebuild). `versions` of each key
  // oldest first.
  void Reset(std::map<std::string, std::vector<Version>, std::less<>> keys)
      EXCLUDES(mu_);

  // Number of keys and of versions held (tests, memory figures).
  size_t KeyCount() const EXCLUDES(mu_);
  size_t VersionCount() const EXCLUDES(mu_);

 private:
  using Map = std::map<std::string, std::vector<Version>, std::less<>>;

  void AppendLocked(std::string_view key, const Version& v) REQUIRES(mu_);
  template <typename Visit>
  void ForRangeLocked(std::string_view key, std::string_view range_end,
                      Visit visit) const REQUIRES_SHARED(mu_);

  mutable SharedMutex mu_;
  Map keys_ GUARDED_BY(mu_);
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_KEY_INDEX_H_
