// Reflector: keeps a store equal to a collection on the API server by
// LIST then WATCH (client-go's cache.Reflector).
//
//   list:  LIST in pages of `page_size` (continue tokens; every page reads
//          the snapshot of the first), then store->Replace(all, list RV).
//          The first LIST asks for resourceVersion "0" (served from the
//          watch cache); later ones for the last RV seen; after a 410 on a
//          LIST (or a 504 "too large resource version") it lists again at
//          once with "" (a consistent read), as client-go does.
//   watch: WATCH from the last RV with allowWatchBookmarks and a random
//          timeoutSeconds in [min_watch_timeout, 2*min_watch_timeout).
//          Every event and every BOOKMARK advances the last RV.
//          ADDED/MODIFIED/DELETED go to store->Add/Update/Delete.
//   the stream ended normally (the server's timeout)  -> WATCH again from
//          the last RV, at once;
//   the connection broke, was refused, or 429        -> back off, WATCH
//          again from the last RV (the server's watch window usually still
//          covers it; no relist);
//   410 Expired/Gone (on WATCH or as an ERROR event)  -> back off, LIST
//          again: the store's Replace turns the difference into adds,
//          updates and deletes (tombstones for objects deleted while we
//          were away);
//   any other error                                  -> back off, LIST.
// A watch that ends within `min_healthy_watch` without a single event
// counts as an error (back off), so a misbehaving server cannot make the
// reflector spin. Backoff is jittered exponential (backoff.h; client-go's
// 800ms..30s, reset after 2 minutes without trouble) on the injected Clock.
//
// Ownership: borrows the ListerWatcher and the store, which must outlive
// it. Start() runs the loop on a thread of its own; Stop() ends it and
// joins (a LIST in flight is waited for: it is bounded by the client's
// timeout). The store is called from that thread only, never after Stop()
// returns.
// Thread-safety: Start/Stop from the owner; the accessors from any thread.
// Errors: reported to `on_error` and logged; the reflector never gives up.
#ifndef KPLANE_INFORMER_REFLECTOR_H_
#define KPLANE_INFORMER_REFLECTOR_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "informer/backoff.h"
#include "informer/list_watch.h"

namespace kplane::informer {

// Where a reflector puts what it learns.
class ReflectorStore {
 public:
  virtual ~ReflectorStore() = default;
  virtual void Add(ObjectPtr obj) = 0;
  virtual void Update(ObjectPtr obj) = 0;
  // `obj` is the object's last state (resourceVersion of the deletion).
  virtual void Delete(ObjectPtr obj) = 0;
  // The complete collection as of `resource_version` (after a LIST).
  virtual void Replace(std::vector<ObjectPtr> objects,
                       const std::string& resource_version) = 0;
};

struct ReflectorOptions {
  std::string name = "reflector";  // for logs
  int64_t page_size = 500;
  Duration min_watch_timeout = minutes(5);
  Duration min_healthy_watch = seconds(1);
  BackoffOptions backoff;
  Clock* clock = nullptr;  // nullptr: Clock::Real()
  uint64_t seed = 0;       // watch timeouts; 0: random
  // Called (on the reflector's thread) with every error the loop meets,
  // and with every backoff delay just before waiting it out.
  std::function<void(const Status&)> on_error;
  std::function<void(Duration)> on_backoff;
};

class Reflector {
 public:
  struct Stats {
    int64_t lists = 0;  // completed LISTs (all pages)
    int64_t list_pages = 0;
    int64_t watches = 0;  // watches opened
    int64_t events = 0;   // ADDED/MODIFIED/DELETED applied
    int64_t bookmarks = 0;
    int64_t expired = 0;  // 410s that forced a relist
    int64_t errors = 0;
    int64_t backoffs = 0;
    Duration last_backoff{0};
  };

  Reflector(ListerWatcher* lw, ReflectorStore* store,
            ReflectorOptions options = {});
  ~Reflector();  // Stop()s
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

  // The resourceVersion of the last LIST, event or bookmark applied.
  std::string LastSyncResourceVersion() const EXCLUDES(mu_);
  Stats stats() const EXCLUDES(mu_);

 private:
  void Run();
  Status ListAndWatch();
  Status List();
  Status WatchLoop();
  // Consumes one stream; see the table above for what its result means.
  Status HandleWatch(WatchStream* stream);
  // Waits out the next backoff delay; false if stopped meanwhile.
  bool WaitBackoff() EXCLUDES(mu_);
  bool Stopping() const EXCLUDES(mu_);
  void SetLastSync(const std::string& rv) EXCLUDES(mu_);
  std::string RelistResourceVersion() const EXCLUDES(mu_);

  ListerWatcher* const lw_;
  ReflectorStore* const store_;
  const ReflectorOptions options_;
  Clock* const clock_;
  Backoff backoff_;  // reflector thread only
  std::mt19937_64 rng_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  WatchStream* current_watch_ GUARDED_BY(mu_) = nullptr;
  std::string last_sync_rv_ GUARDED_BY(mu_);
  bool last_sync_rv_unavailable_ GUARDED_BY(mu_) = false;
  Stats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_REFLECTOR_H_
