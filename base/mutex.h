// Mutex, SharedMutex and their scoped locks, annotated for clang's
// thread-safety analysis (base/thread_annotations.h). They are thin wrappers
// over std::mutex / std::shared_mutex: the standard types carry no
// annotations in libstdc++, so the compiler could not check them.
//
//   Mutex mu_;
//   std::condition_variable cv_;
//   bool stopped_ GUARDED_BY(mu_) = false;
//
//   void Stop() EXCLUDES(mu_) {
//     MutexLock lock(&mu_);
//     stopped_ = true;
//     cv_.notify_all();
//   }
//   void Run() EXCLUDES(mu_) {
//     MutexLock lock(&mu_);
//     while (!stopped_) {
//       // Timed waits go through the injected Clock (base/clock.h).
//       clock_->WaitUntil(lock.native(), cv_, clock_->Now() + seconds(1),
//                         [&]() REQUIRES(mu_) { return stopped_; });
//       lock.Unlock();   // call out without the lock...
//       DoWork();
//       lock.Lock();     // ...and take it back
//     }
//   }
//
// Condition variables stay std::condition_variable; they wait on
// MutexLock::native(). The analysis cannot see that a wait releases and
// retakes the lock, which is right: it is held before and after.
//
// Lock order is part of a class's contract: a header that holds several
// mutexes says in which order they may be taken (ACQUIRED_AFTER where the
// compiler can check it, a comment where it cannot).
//
// Thread-safety: these are the synchronization primitives.
#ifndef KPLANE_BASE_MUTEX_H_
#define KPLANE_BASE_MUTEX_H_

#include <mutex>
#include <shared_mutex>

#include "base/thread_annotations.h"

namespace kplane {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (where it cannot see it,
  // e.g. in a callback the lock holder runs). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

  // The wrapped mutex, for std::unique_lock and condition variables.
  std::mutex& native() RETURN_CAPABILITY(this) { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope. Unlock()/Lock() release and retake it inside
// the scope; the destructor releases it only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : lock_(mu->native()) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }

  // For std::condition_variable::wait and Clock::WaitUntil.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A reader-writer mutex.
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() RELEASE_SHARED() { mu_.unlock_shared(); }
  void AssertReaderHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ~ReaderLock() RELEASE() { mu_->ReaderUnlock(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

}  // namespace kplane

#endif  // KPLANE_BASE_MUTEX_H_
