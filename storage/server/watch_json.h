// WatchJsonEncoder: writes queued watch responses (mvcc::WatchItem) as lines
// of etcd's /v3/watch JSON stream, `{"result":<WatchResponse>}\n`, byte for
// byte what etcdjson::AppendStreamResult prints for the response the item
// stands for, stamped with the server's header.
//
// Why not just AppendStreamResult: one put under a prefix watched by 1,000
// streams reaches all of them as the same shared event list. Materializing
// and printing it through protobuf's reflection-driven JSON printer once per
// stream costs a deep copy and a full encode each time; here the events'
// JSON is printed once per (event list, keep_prev_kv) and kept in a small
// cache, and the short envelope around it is printed by hand.
//
// Worked example (cluster 7, member 9, term 2, item {watch_id 3, revision
// 12, events E}): the line is
//   {"result":{"header":{"cluster_id":"7","member_id":"9","revision":"12",
//   "raft_term":"2"},"watch_id":"3","events":[<E[0]>,<E[1]>]}}\n
// (one line, no spaces). A piece of a fragmented response prints
// `,"fragment":true` before "events" (field 7). Zero fields are omitted as
// protobuf's JSON mapping omits them: watch_id 0 prints no "watch_id", a
// compacted item (revision 0) no header "revision". The next stream receiving E
// (same list, same keep_prev_kv) reuses `[<E[0]>,<E[1]>]` from the cache.
//
// The cache holds the last kCacheEntries event lists (a weak reference
// keeps a list's address from being reused while its entry lives).
//
// Thread-safety: Append may be called concurrently (the cache has a mutex;
// encoding happens outside it). Errors: none.
#ifndef KPLANE_STORAGE_SERVER_WATCH_JSON_H_
#define KPLANE_STORAGE_SERVER_WATCH_JSON_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/watch.h"

namespace kplane::storage {

class WatchJsonEncoder {
 public:
  static constexpr size_t kCacheEntries = 64;

  // Appends the line for `item`. `header` supplies cluster_id, member_id
  // and raft_term; its revision is ignored (the item's is used).
  // `fragment`: the item is a piece of a cut response, not its last
  // (watch_fragment.h); prints `"fragment":true` as etcd's gateway does.
  void Append(const etcdserverpb::ResponseHeader& header,
              const mvcc::WatchItem& item, std::string* out,
              bool fragment = false);

  // Lookups answered from the cache / encoded afresh (for tests).
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  using EventList = std::vector<mvccpb::Event>;
  struct Entry {
    const EventList* list = nullptr;
    bool keep_prev_kv = false;
    std::weak_ptr<const EventList> alive;  // pins the address
    std::shared_ptr<const std::string> json;
  };

  // `[<event>,...]` for the item's events.
  std::shared_ptr<const std::string> EventsJson(const mvcc::WatchItem& item)
      EXCLUDES(mu_);

  // A leaf; held only to look up or fill the cache, never while encoding.
  mutable Mutex mu_;
  std::vector<Entry> cache_ GUARDED_BY(mu_);  // a ring of kCacheEntries
  size_t next_slot_ GUARDED_BY(mu_) = 0;
  uint64_t hits_ GUARDED_BY(mu_) = 0;
  uint64_t misses_ GUARDED_BY(mu_) = 0;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_WATCH_JSON_H_
