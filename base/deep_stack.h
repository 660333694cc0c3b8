// Recursion over untrusted nesting, on a stack that can hold it.
//
// The parsers bound JSON nesting to 10,000 levels (base/json.h), but some
// algorithms walk a parsed DOM recursively (strategic merge, server-side
// apply, merge-patch diffs, Go-style equality and printing, YAML output).
// Measured at -O1 they take up to ~1.3 KB of stack per level, several times
// that under sanitizers: 13 MB and more at 10,000 levels, past the 8 MiB of
// an HTTP worker thread (net/worker_pool.h). Their callers check the input's
// depth (json::Measure) and run deep inputs through RunForDepth.
//
// A deep run gets a fresh thread with a kDeepStackBytes stack. Only the pages
// the recursion touches become memory, and the whole stack is unmapped when
// the thread ends, so a hostile request leaves no resident memory behind (a
// bigger worker stack would keep what it touched for good). At most
// kMaxDeepRuns run at once; further callers wait, which bounds what a burst
// of deep requests can take (kMaxDeepRuns x ~13 MB) and leaves the other
// workers free.
//
// Ordinary objects are a few dozen levels deep and never pay for a thread.
// Thread-safety: callable from any thread. Errors: ResourceExhausted when no
// thread can be created (the work is then not run).
#ifndef KPLANE_BASE_DEEP_STACK_H_
#define KPLANE_BASE_DEEP_STACK_H_

#include <cstddef>
#include <functional>

#include "base/status.h"

namespace kplane {

// Deeper inputs than this run on a deep stack: 1,000 levels take at most
// ~1.3 MB (-O1) of the caller's stack.
inline constexpr int kInlineDepth = 1000;
inline constexpr size_t kDeepStackBytes = size_t{256} << 20;
inline constexpr int kMaxDeepRuns = 4;

// Runs `fn` on a fresh thread with a kDeepStackBytes stack and waits for it.
Status RunWithDeepStack(const std::function<void()>& fn);

// Runs `fn` on the caller's stack when `depth` <= kInlineDepth, else through
// RunWithDeepStack.
Status RunForDepth(int depth, const std::function<void()>& fn);

}  // namespace kplane

#endif  // KPLANE_BASE_DEEP_STACK_H_
