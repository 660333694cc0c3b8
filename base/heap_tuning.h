// How a kplane server asks glibc's malloc to keep the memory it frees.
//
// glibc starts a process handing the top of its heap back to the kernel as
// soon as more than 128 KiB lie free there (M_TRIM_THRESHOLD), and serving
// every block of 128 KiB or more with an mmap of its own
// (M_MMAP_THRESHOLD). It raises both when it sees such a large block freed,
// up to 32 and 64 MiB. A server whose answers are built from many small
// blocks never shows it one, so each burst of requests ends with its memory
// given back and the next burst faults it in again, page by page: a
// 1,000-key range over the JSON API once cost 5x its CPU and ~540 minor
// faults that way (docs/performance.md, "The allocator keeps its heap").
#ifndef KPLANE_BASE_HEAP_TUNING_H_
#define KPLANE_BASE_HEAP_TUNING_H_

#include <cstddef>

namespace kplane {

// The end point of glibc's own rule, set from the start.
inline constexpr size_t kHeapMmapThreshold = size_t{32} << 20;
inline constexpr size_t kHeapTrimThreshold = 2 * kHeapMmapThreshold;

// Sets glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD to the values above,
// unless the environment already chooses either (GLIBC_TUNABLES naming
// glibc.malloc.mmap_threshold or glibc.malloc.trim_threshold,
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_): an operator's setting
// wins. KPLANE_MALLOC_DEFAULTS (any value) leaves glibc as it starts, its
// adaptive rule included (setting either threshold, by mallopt or in the
// environment, turns that rule off). Call once, early in main, before threads
// start. Returns whether this call set them (false when the environment chose,
// or when malloc is not glibc's and refuses, as under AddressSanitizer).
bool KeepFreedHeapMemory();

}  // namespace kplane

#endif  // KPLANE_BASE_HEAP_TUNING_H_
