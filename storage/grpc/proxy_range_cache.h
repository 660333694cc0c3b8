// ProxyRangeCache: the grpc-proxy's cache of serializable Range answers,
// as etcd 3.4's proxy/grpcproxy/cache (an LRU keyed by the request, with a
// reverse index of key ranges for invalidation).
//
//   ProxyRangeCache c(2048, 64 << 20);
//   const uint64_t gen = c.generation();       // before forwarding
//   ... the member answers `bytes` ...
//   c.Add(key, req_key, req_end, revision, bytes, gen);
//   ... later, a serializable Range with the same key ...
//   auto hit = c.Get(key, revision);           // kHit: answer with it
//   c.Invalidate("k", "");                     // a write through the proxy
//   c.Clear();                                 // e.g. a lease revoke
//
// Semantics (etcd's, with the differences named):
//  - An entry is the serialized answer to one request. `key` is opaque to
//    the cache (the proxy uses the request with serializable set plus the
//    caller's auth token; etcd uses the request alone).
//  - Entries for revision 0 (the latest) are indexed by their interval
//    [range_key, range_end) (range_end "": the single key range_key;
//    "\0": to the end of the keyspace) and dropped by Invalidate of any
//    overlapping interval. Entries for a given revision are never
//    invalidated by writes (that revision cannot change); they leave by
//    LRU, by Compact or by Clear.
//  - Compact(r): a Get for 0 < revision < r answers kCompacted (etcd's
//    ErrCompacted, without asking a member) and such entries are dropped;
//    Add for such a revision is ignored. etcd 3.4 also stops caching
//    revision-0 answers after its first Compact (its check is
//    `revision > compactedRev`, false for 0); this cache keeps caching
//    them: compaction does not change the latest values.
//  - Clear() drops every entry (kplane's; etcd's proxy has no such
//    call): for a lease revoke, an auth change, Lock or Election through
//    the proxy. The compacted revision is kept.
//  - Add(..., generation) is ignored when any Invalidate or Clear ran since
//    `generation` was read: a read that raced with a write through the
//    proxy may hold the old value, and must not outlive the write's
//    invalidation in the cache. (etcd adds it regardless.)
//  - Bounds: at most max_entries entries and about max_bytes bytes (the
//    answers, their keys and a fixed overhead per entry); the least
//    recently used go first. An answer larger than max_bytes is not
//    cached. etcd bounds entries only (2048, fixed).
//
// Thread-safety: every method may be called from any thread.
#ifndef KPLANE_STORAGE_GRPC_PROXY_RANGE_CACHE_H_
#define KPLANE_STORAGE_GRPC_PROXY_RANGE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "base/thread_annotations.h"

namespace kplane::storage {

class ProxyRangeCache {
 public:
  enum class Result { kMiss, kHit, kCompacted };

  ProxyRangeCache(size_t max_entries, size_t max_bytes);
  ProxyRangeCache(const ProxyRangeCache&) = delete;
  ProxyRangeCache& operator=(const ProxyRangeCache&) = delete;

  // kHit sets *answer (shared; never modified by the cache).
  Result Get(const std::string& key, int64_t revision,
             std::shared_ptr<const std::string>* answer) EXCLUDES(mu_);
  // Read before forwarding the request whose answer is Add()ed.
  uint64_t generation() const EXCLUDES(mu_);
  void Add(const std::string& key, const std::string& range_key,
           const std::string& range_end, int64_t revision,
           std::shared_ptr<const std::string> answer, uint64_t generation)
      EXCLUDES(mu_);
  // Drops the revision-0 entries overlapping [key, end) (end as in Add).
  void Invalidate(const std::string& key, const std::string& end) EXCLUDES(mu_);
  // Drops every entry, of any revision, and keeps the answers of reads in
  // flight out, as Invalidate: for a change whose keys the proxy cannot
  // name (a lease revoke deletes keys only the member knows) or that
  // changes who may read (an auth change).
  void Clear() EXCLUDES(mu_);
  void Compact(int64_t revision) EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

 private:
  struct Entry {
    std::string key;
    std::string begin;
    std::string end;  // as given: "" a point, "\0" unbounded
    int64_t revision = 0;
    size_t bytes = 0;
    std::shared_ptr<const std::string> answer;
  };
  using Lru = std::list<Entry>;  // most recently used first

  void RemoveLocked(Lru::iterator it) REQUIRES(mu_);
  void UnindexLocked(Lru::iterator it) REQUIRES(mu_);

  const size_t max_entries_;
  const size_t max_bytes_;
  mutable Mutex mu_;
  Lru lru_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Lru::iterator> by_key_ GUARDED_BY(mu_);
  // The reverse index of revision-0 entries: single keys by key, ranges
  // by their start (few in practice; scanned).
  std::multimap<std::string, Lru::iterator> points_ GUARDED_BY(mu_);
  std::multimap<std::string, Lru::iterator> ranges_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  int64_t compacted_ GUARDED_BY(mu_) = 0;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_PROXY_RANGE_CACHE_H_
