// The write side of a gRPC server stream (Watch, LeaseKeepAlive, Observe in
// grpc_front.cc): responses queue from any thread, one write is in flight
// at a time (gRPC allows one), and the call finishes once that write is
// done. The queue decides; its owner (a reactor) calls StartWrite and
// Finish with what the calls return, outside the lock.
//
//   WriteQueue<Resp> q(64 << 20);
//   Step s = q.Push(resp);          // s.write: StartWrite(s.write)
//   ... OnWriteDone(ok): s = q.WriteDone(ok);  // next write, or finish
//   if (q.End(status, /*after_queued=*/true)) Finish(q.status());
//
// Thread-safe. Resp is a protobuf message (ByteSizeLong counts the bound).
#ifndef KPLANE_STORAGE_GRPC_WRITE_QUEUE_H_
#define KPLANE_STORAGE_GRPC_WRITE_QUEUE_H_

#include <grpcpp/support/status.h>

#include <algorithm>
#include <deque>
#include <utility>

#include "base/mutex.h"

namespace kplane::storage {

template <typename Resp>
class WriteQueue {
 public:
  // Past `max_bytes` queued the client is too slow: Push says so.
  explicit WriteQueue(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The queue's answer: the response to start writing now (it stays put
  // until its WriteDone: a deque's elements do not move when others are
  // appended), whether to finish the call now, and whether the push went
  // past the bound (the caller ends the call, RESOURCE_EXHAUSTED).
  struct Step {
    const Resp* write = nullptr;
    bool finish = false;
    bool over = false;
  };

  // Queues `resp` unless the call is ending (then a no-op).
  Step Push(Resp resp) EXCLUDES(mu_) {
    Step step;
    MutexLock l(&mu_);
    if (ending_) return step;
    queued_bytes_ += resp.ByteSizeLong();
    queue_.push_back(std::move(resp));
    if (queued_bytes_ > max_bytes_) {
      step.over = true;
    } else if (!writing_) {
      writing_ = true;
      step.write = &queue_.front();
    }
    return step;
  }

  // The call ends with `st` (the first End wins): what is queued is
  // dropped, or with `after_queued` written first. True: finish now (no
  // write in flight, so nothing queued; otherwise WriteDone says finish).
  bool End(grpc::Status st, bool after_queued = false) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (ending_) return false;
    ending_ = true;
    drain_ = after_queued;
    status_ = std::move(st);
    if (writing_) return false;
    finished_ = true;
    return true;
  }

  // The write in flight is done (`ok`: it went out; otherwise the call is
  // broken and ends CANCELLED).
  Step WriteDone(bool ok) EXCLUDES(mu_) {
    Step step;
    MutexLock l(&mu_);
    queued_bytes_ -= std::min(queued_bytes_, queue_.front().ByteSizeLong());
    queue_.pop_front();
    if (!ok) {
      if (!ending_) {
        ending_ = true;
        status_ = grpc::Status::CANCELLED;
      }
      drain_ = false;  // nothing more can be written
    }
    if (ending_ && (!drain_ || queue_.empty())) {
      writing_ = false;
      queue_.clear();
      step.finish = !finished_;
      finished_ = true;
    } else if (!queue_.empty()) {
      step.write = &queue_.front();
    } else {
      writing_ = false;
    }
    return step;
  }

  bool ending() const EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return ending_;
  }

  // Bytes queued and not yet written (the write in flight included).
  size_t queued_bytes() const EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return queued_bytes_;
  }

  // The status to finish with; read only once a Step or End said finish
  // (it is written before ending_ is published, and never again).
  const grpc::Status& status() const { return status_; }

 private:
  const size_t max_bytes_;
  mutable Mutex mu_;
  std::deque<Resp> queue_ GUARDED_BY(mu_);  // front: the write in flight
  size_t queued_bytes_ GUARDED_BY(mu_) = 0;
  bool writing_ GUARDED_BY(mu_) = false;
  bool ending_ GUARDED_BY(mu_) = false;
  bool drain_ GUARDED_BY(mu_) = false;  // ending after the queued writes
  bool finished_ GUARDED_BY(mu_) = false;
  grpc::Status status_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_WRITE_QUEUE_H_
