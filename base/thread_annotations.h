// Clang thread-safety annotations (leveldb's port/thread_annotations.h,
// abseil's base/thread_annotations.h): they let the compiler check which
// mutex guards which data and which functions need it held.
//
//   class Queue {
//    public:
//     void Push(int v) EXCLUDES(mu_);
//    private:
//     void PushLocked(int v) REQUIRES(mu_);
//     Mutex mu_;
//     std::deque<int> items_ GUARDED_BY(mu_);
//   };
//
// The checks run in the clang build with -Wthread-safety -Werror
// (scripts/thread-safety.sh, part of scripts/test.sh); with GCC the macros
// expand to nothing. See base/mutex.h for the annotated Mutex and MutexLock.
//
// A lambda that reads guarded data while its caller holds the lock (a
// condition variable predicate) says so with REQUIRES on the lambda:
//   cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return !items_.empty(); });
#ifndef KPLANE_BASE_THREAD_ANNOTATIONS_H_
#define KPLANE_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define KPLANE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KPLANE_THREAD_ANNOTATION(x)
#endif

// On a class: instances are capabilities (a mutex).
#define CAPABILITY(x) KPLANE_THREAD_ANNOTATION(capability(x))
// On a class: an RAII holder of a capability.
#define SCOPED_CAPABILITY KPLANE_THREAD_ANNOTATION(scoped_lockable)

// On data: reads and writes need the capability held.
#define GUARDED_BY(x) KPLANE_THREAD_ANNOTATION(guarded_by(x))
// On a pointer: the pointee is guarded.
#define PT_GUARDED_BY(x) KPLANE_THREAD_ANNOTATION(pt_guarded_by(x))

// Lock order: this mutex is taken after / before the named ones.
#define ACQUIRED_AFTER(...) \
  KPLANE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) \
  KPLANE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))

// On functions: the caller must hold (exclusively / shared) the capability.
#define REQUIRES(...) KPLANE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) \
  KPLANE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On functions: the caller must not hold it (the function takes it).
#define EXCLUDES(...) KPLANE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On functions that take or release a capability.
#define ACQUIRE(...) KPLANE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) \
  KPLANE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) KPLANE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) \
  KPLANE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) \
  KPLANE_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) \
  KPLANE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) KPLANE_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) KPLANE_THREAD_ANNOTATION(lock_returned(x))

// Escape hatch for code the analysis cannot follow; say why beside it.
#define NO_THREAD_SAFETY_ANALYSIS \
  KPLANE_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // KPLANE_BASE_THREAD_ANNOTATIONS_H_
