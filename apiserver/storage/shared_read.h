// SharedRead: concurrent callers of one read share it, without ever getting
// an answer older than their call. The caller's side of etcd's
// linearizableReadLoop: at most one read is in flight; callers that arrive
// meanwhile wait for the next one, which starts when the current one ends
// and answers all of them. A read that began before a caller arrived never
// answers that caller, so a read of the store's revision this way reflects
// every write acknowledged before the call, as a read of its own would.
//
// Used for ObjectStore::CurrentRevision, which every consistent LIST served
// from the watch cache calls first (kube-apiserver's
// GetCurrentResourceVersionFromStorage): 64 concurrent LISTs cost about two
// store reads per round trip instead of 64.
//
//   SharedRead<int64_t> rev([&] { return ReadRevisionFromStore(); });
//   StatusOr<int64_t> r = rev.Read();  // from any thread
//
// Example, reads A (in flight) then B: callers 1, 2 arrive while A is in
// flight and wait; when A ends, caller 1 sends B (the one read for both)
// and caller 3, arriving during B, waits for C. A's answer goes only to
// the callers that were waiting when A was sent.
//
// The read runs on the thread of one of the callers it answers (no thread
// of its own); its result, value or error, is every such caller's.
//
// Thread-safety: Read may be called from any thread. `read` must not call
// Read of the same SharedRead.
#ifndef KPLANE_APISERVER_STORAGE_SHARED_READ_H_
#define KPLANE_APISERVER_STORAGE_SHARED_READ_H_

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <utility>

#include "base/mutex.h"
#include "base/statusor.h"

namespace kplane::apiserver {

template <typename T>
class SharedRead {
 public:
  explicit SharedRead(std::function<StatusOr<T>()> read)
      : read_(std::move(read)) {}
  SharedRead(const SharedRead&) = delete;
  SharedRead& operator=(const SharedRead&) = delete;

  // The result of a read that started after this call did.
  StatusOr<T> Read() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (next_ == nullptr) next_ = std::make_shared<Round>();
    std::shared_ptr<Round> round = next_;
    while (!round->done) {
      if (!in_flight_ && next_ == round) {
        // Nothing in flight and this round not yet sent: send it.
        in_flight_ = true;
        next_ = nullptr;
        ++reads_;
        l.Unlock();
        StatusOr<T> result = Status(StatusCode::kInternal, "the read failed");
        // A read that throws still ends its round, so the next can be sent:
        // its callers get an error instead of waiting forever.
        std::exception_ptr thrown;
        try {
          result = read_();
        } catch (...) {
          thrown = std::current_exception();
        }
        l.Lock();
        round->result = std::move(result);
        round->done = true;
        in_flight_ = false;
        // The round's callers, and the next round's (one of them sends it).
        cv_.notify_all();
        if (thrown) std::rethrow_exception(thrown);
        break;
      }
      if (on_wait_for_testing_) on_wait_for_testing_();
      cv_.wait(l.native());
    }
    return round->result;
  }

  // Reads sent so far.
  int64_t reads() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return reads_;
  }

  // Tests: called (under the lock, so it must not call back) each time a
  // caller is about to wait for a round. Set before any Read.
  void set_on_wait_for_testing(std::function<void()> fn) {
    on_wait_for_testing_ = std::move(fn);
  }

 private:
  struct Round {
    bool done = false;
    StatusOr<T> result = Status(StatusCode::kInternal, "no read yet");
  };

  const std::function<StatusOr<T>()> read_;
  std::function<void()> on_wait_for_testing_;
  Mutex mu_;  // a leaf
  std::condition_variable cv_;
  // A read is running; callers that arrive meanwhile join next_.
  bool in_flight_ GUARDED_BY(mu_) = false;
  // The round the next read will answer (null: no caller waits for one).
  std::shared_ptr<Round> next_ GUARDED_BY(mu_);
  int64_t reads_ GUARDED_BY(mu_) = 0;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_STORAGE_SHARED_READ_H_
