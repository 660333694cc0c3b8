// RangeAllocator: a range of integers (offsets 0 .. size-1 of a Service IP
// range or a NodePort range) allocated through a bitmap kept in the store,
// as kube-apiserver's storage-backed allocators (pkg/registry/core/service/
// allocator/storage) keep theirs at /registry/ranges/serviceips and
// /registry/ranges/servicenodeports.
//
// Every change is a read of the key and a compare-and-swap on its
// mod_revision (create_revision 0 when absent); a lost race re-reads and
// tries again. So several apiservers on one store, and one apiserver
// across restarts, never hand out an offset twice: the store is the only
// state, nothing is cached in the process.
//
// Example:
//   RangeAllocator ips(kv, "/registry/ranges/serviceips", "10.96.0.0/12",
//                      (1 << 20) - 2);
//   ASSIGN_OR_RETURN(int64_t off, ips.AllocateNext());
//   RETURN_IF_ERROR(ips.Allocate(0));  // kAlreadyExists when taken
//   RETURN_IF_ERROR(ips.Release(off));
//
// The stored value is a core/v1 RangeAllocation in the "k8s\0" envelope
// (range = the description given here; a stored value for another range is
// kFailedPrecondition, as kube refuses to start on a changed range).
//
// Dynamic allocation (AllocateNext) prefers the upper band and leaves the
// lower `StaticBand(kind, size)` offsets to explicit requests first, as
// kube's ServiceIPStaticSubrange / ServiceNodePortStaticSubrange do, each
// with its own formula: Service IPs min(max(16, size/16), 256) (0 below 16,
// ipallocator), node ports min(max(16, size/32), 128) (0 up to 16,
// portallocator); scanning from a random start.
//
// Errors: kOutOfRange for an offset outside [0, size), kAlreadyExists for
// a taken offset, kResourceExhausted "range is full", the KV's errors.
// Thread-safety: all methods may be called concurrently.
#ifndef KPLANE_APISERVER_RANGE_ALLOCATOR_H_
#define KPLANE_APISERVER_RANGE_ALLOCATOR_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "base/mutex.h"
#include "base/status.h"
#include "base/statusor.h"
#include "storage/kv.h"

namespace kplane::apiserver {

class RangeAllocator {
 public:
  // Which of kube's allocators this one is (only the static band differs).
  enum class Kind { kServiceIPs, kNodePorts };

  RangeAllocator(storage::KV* kv, std::string key, std::string range,
                 int64_t size, Kind kind = Kind::kServiceIPs);

  int64_t size() const { return size_; }
  const std::string& range() const { return range_; }

  // Takes `offset`.
  Status Allocate(int64_t offset);
  // Takes a free offset.
  StatusOr<int64_t> AllocateNext();
  // Gives `offset` back (not an error when it was free).
  Status Release(int64_t offset);
  // Whether `offset` is taken now (dry runs).
  StatusOr<bool> Has(int64_t offset);
  // A free offset, without taking it (dry runs).
  StatusOr<int64_t> PeekNext();

  static int64_t StaticBand(Kind kind, int64_t size);

 private:
  // The bitmap, one bit per offset (byte i / 8, bit i % 8).
  using Bitmap = std::string;
  // Reads the bitmap, applies `change` (which returns false for "nothing
  // to write" or an error) and writes it back with a compare-and-swap,
  // retrying on a lost race.
  Status Mutate(const std::function<StatusOr<bool>(Bitmap*)>& change);
  StatusOr<Bitmap> Read(int64_t* mod_revision);
  StatusOr<int64_t> FindFree(const Bitmap& bits);

  storage::KV* const kv_;
  const std::string key_;
  const std::string range_;
  const int64_t size_;
  const int64_t band_;  // StaticBand(kind, size)
  Mutex rand_mu_;
  std::mt19937_64 rand_ GUARDED_BY(rand_mu_);
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_RANGE_ALLOCATOR_H_
