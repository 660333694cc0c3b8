// Abseil's mutex deadlock detection, off for a kplane process.
//
// gRPC locks absl::Mutex on every call (its channels, streams, completion
// queues). Abseil tracks the order in which a thread takes such mutexes in a
// process-wide graph, under one global lock, recording stack traces, unless
// it is built with NDEBUG, and Debian's libabsl is built without it: there the
// detection is on, in its abort mode. A member serving etcd's gRPC API spent
// ~3 % of its CPU in that graph (GraphCycles::GetId, UpdateStackTrace,
// RemoveNode as each call's mutexes die; docs/performance.md, "Abseil's
// deadlock detection"), and any lock-order slip inside gRPC would abort the
// process instead of being one more bug report. A release build of Abseil
// leaves it off; this call does the same.
#ifndef KPLANE_BASE_ABSEIL_MUTEX_MODE_H_
#define KPLANE_BASE_ABSEIL_MUTEX_MODE_H_

namespace kplane {

// Turns Abseil's mutex deadlock detection off for the whole process
// (absl::OnDeadlockCycle::kIgnore). Call early in main, before threads that
// lock absl mutexes start; calling it again is harmless (GrpcKV::Create does,
// for processes whose main did not). KPLANE_ABSL_DEADLOCK_DETECTION (any
// value, 0 included) leaves Abseil's default, for chasing a suspected
// lock-order bug in gRPC. Returns whether this call turned it off.
bool StopAbseilDeadlockDetection();

}  // namespace kplane

#endif  // KPLANE_BASE_ABSEIL_MUTEX_MODE_H_
