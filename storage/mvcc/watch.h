// WatchStream: a client's stream of watchers on the MVCC store (etcd's
// mvcc.WatchStream). Each watcher sees every event on its key or range from
// its start revision on, in revision order, never lost; responses of all the
// stream's watchers share one bounded queue (etcd's 128 responses).
//
//   auto stream = store->NewWatchStream();
//   WatchCreateRequest req;
//   req.set_key("/registry/");  req.set_range_end("/registry0");
//   req.set_start_revision(42);
//   ASSIGN_OR_RETURN(int64_t id, stream->Watch(req));
//   while (auto resp = stream->Next(clock->Now() + seconds(1))) Use(*resp);
//
// Delivery never blocks a writer. A watcher whose stream queue is full is
// parked (a "victim") and caught up from the store's event log once the
// consumer drains the queue, like a watcher that started in the past.
//
// Responses (etcdserverpb.WatchResponse; only header.revision is filled, the
// server adds cluster/member/term and the created/cancel-request answers):
//  - events: watch_id, header.revision = the revision of the events (live)
//    or the revision the watcher was caught up to (history);
//  - progress: no events, header.revision R: the watcher has seen every
//    event up to R. Per watcher every progress interval when it asked for
//    progress_notify and got nothing else; for the whole stream (watch_id -1)
//    after RequestProgress(), once every watcher of the stream is synced;
//  - compacted: the watcher fell behind a compaction: canceled = true,
//    compact_revision set, no header revision. The watcher is gone.
//
// Ownership: created by Store::NewWatchStream(); the store must outlive the
// stream's use (after Store::Close(), calls fail with Unavailable).
// Destroying the stream cancels its watchers.
//
// Thread-safety: all methods may be called concurrently. The notify hook
// runs on a writer or the store's watch thread, outside every lock; it must
// be quick and must not block (wake a thread, post to a loop).
#ifndef KPLANE_STORAGE_MVCC_WATCH_H_
#define KPLANE_STORAGE_MVCC_WATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/statusor.h"
#include "schemas/kv.pb.h"
#include "schemas/rpc.pb.h"

namespace kplane::mvcc {

class WatchHub;
struct StreamState;

// etcd's clientv3.InvalidWatchID, used for stream-wide progress responses.
inline constexpr int64_t kStreamProgressWatchId = -1;

// One queued response as the hub holds it. `events` is shared, not copied,
// by every watcher the same write (or catch-up read) delivered it to, so a
// server fanning it out to many streams can encode it once; it may carry
// prev_kv that this watcher did not ask for (keep_prev_kv false: drop it).
struct WatchItem {
  int64_t watch_id = 0;
  int64_t revision = 0;  // header revision; 0 for compacted responses
  std::shared_ptr<const std::vector<mvccpb::Event>> events;  // null: none
  int64_t compact_revision = 0;
  bool canceled = false;
  bool keep_prev_kv = false;
};

// The response an item stands for (header.revision only; the server adds
// cluster/member/term).
etcdserverpb::WatchResponse ToWatchResponse(const WatchItem& item);

class WatchStream {
 public:
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  // Creates a watcher; returns its id. watch_id 0 picks the next free id
  // (0, 1, 2, ...). Errors: Compacted (detail = compact revision) when
  // 0 < start_revision < the compacted revision (as etcd: the compaction
  // revision itself can still be watched); AlreadyExists "mvcc:
  // duplicate watch ID provided on the WatchStream"; InvalidArgument "mvcc:
  // watcher range is empty" when range_end <= key (range_end "\0" = every
  // key >= key). start_revision 0 means "after the current revision"; a
  // future start revision is allowed.
  StatusOr<int64_t> Watch(const etcdserverpb::WatchCreateRequest& req);

  // Removes the watcher and every response of it still queued.
  // NotFound for an unknown id.
  Status Cancel(int64_t watch_id);

  // Asks for one stream-wide progress response (watch_id -1).
  void RequestProgress();

  // The next queued response, if any.
  std::optional<etcdserverpb::WatchResponse> TryPop();
  // Moves every queued response to the end of `out`, in order, without
  // copying events (one lock, for servers that batch a stream's output).
  // Returns how many were moved.
  size_t PopAll(std::vector<WatchItem>* out);
  // Waits on the store's clock until a response is queued or `deadline`.
  std::optional<etcdserverpb::WatchResponse> Next(TimePoint deadline);

  // Called after responses were queued on an empty or non-empty queue,
  // and once when the store under the stream closes (Stopped()).
  void SetNotify(std::function<void()> fn);
  // The store under the stream closed (a snapshot replaced it, or the
  // member stops): nothing more will be queued. A server ends its client's
  // stream once it has sent what is queued (the client watches again, from
  // its last revision, on the new store).
  bool Stopped() const;

  size_t QueueSize() const;
  // Watchers open on the stream: created, and not yet canceled by Cancel()
  // or by a compaction.
  size_t WatcherCount() const;

 private:
  friend class WatchHub;
  WatchStream(std::shared_ptr<WatchHub> hub, std::shared_ptr<StreamState> s);

  std::shared_ptr<WatchHub> hub_;
  std::shared_ptr<StreamState> state_;
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_WATCH_H_
