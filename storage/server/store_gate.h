// StoreGate: keeps a member's MVCC store alive and open while it is used,
// although installing a snapshot from the leader replaces it.
//
// The apply thread installs a snapshot by closing the store, swapping the
// database directory and opening the new one. Every other thread (client
// reads, status, HashKV, the housekeeper) reaches the store through a
// StoreRef, which pins the current store for its lifetime:
//
//   StoreRef s = gate.Use();          // waits while a swap is under way
//   auto resp = s->Range(req);        // the store cannot be closed here
//   // ~StoreRef: the swap may proceed once no reference is left
//
//   gate.Replace([&](std::unique_ptr<mvcc::Store>& store) {  // apply thread
//     store->Close(); ...; store = std::move(new_store);     // no user left
//   });
//
// Replace announces the swap, waits until every StoreRef taken before is
// gone, runs the swap with no user, then lets the waiting users in. New
// users wait while a swap is announced (so a stream of overlapping reads
// cannot starve an install), except a thread that already holds a
// StoreRef of any gate: it enters at once (it would otherwise wait for a
// swap that waits for it). A StoreRef must not be held across a wait for
// the apply thread (that thread may be the one waiting for the ref).
//
// The owner (the apply thread) may use owned() without a ref: nothing else
// replaces the store.
//
// Ownership: the gate owns the store. A StoreRef borrows the gate and must
// not outlive it.
// Thread-safety: Use() from any thread; Replace() and owned() from the
// owning thread only. Lock: mu_ is a leaf, held only inside these calls.
#ifndef KPLANE_STORAGE_SERVER_STORE_GATE_H_
#define KPLANE_STORAGE_SERVER_STORE_GATE_H_

#include <condition_variable>
#include <functional>
#include <memory>

#include "base/mutex.h"
#include "storage/mvcc/store.h"

namespace kplane::storage {

class StoreGate;

// A pinned use of the store (above). Movable, not copyable; released on
// the thread that took it (the gate counts each thread's refs).
class StoreRef {
 public:
  StoreRef() = default;
  StoreRef(StoreRef&& other) noexcept;
  StoreRef& operator=(StoreRef&& other) noexcept;
  StoreRef(const StoreRef&) = delete;
  StoreRef& operator=(const StoreRef&) = delete;
  ~StoreRef();

  mvcc::Store* get() const { return store_; }
  mvcc::Store* operator->() const { return store_; }
  mvcc::Store& operator*() const { return *store_; }
  explicit operator bool() const { return store_ != nullptr; }

 private:
  friend class StoreGate;
  StoreRef(StoreGate* gate, mvcc::Store* store) : gate_(gate), store_(store) {}
  void Release();

  StoreGate* gate_ = nullptr;
  mvcc::Store* store_ = nullptr;
};

class StoreGate {
 public:
  explicit StoreGate(std::unique_ptr<mvcc::Store> store)
      : store_(std::move(store)) {}
  StoreGate(const StoreGate&) = delete;
  StoreGate& operator=(const StoreGate&) = delete;

  // Pins the current store (waits while a swap is announced or running).
  StoreRef Use() EXCLUDES(mu_);
  // The store, for its owner (the apply thread) only.
  mvcc::Store* owned() const { return store_.get(); }
  // Runs `swap` on the store once no StoreRef is left; users wait.
  void Replace(const std::function<void(std::unique_ptr<mvcc::Store>&)>& swap)
      EXCLUDES(mu_);
  // How many StoreRefs are live, and whether a swap is announced (tests).
  int users() const EXCLUDES(mu_);
  bool swap_pending() const EXCLUDES(mu_);

 private:
  friend class StoreRef;
  void Leave() EXCLUDES(mu_);

  // Written only inside Replace, while users_ == 0 and swapping_ keeps new
  // users out; read by users under the protection of their ref.
  std::unique_ptr<mvcc::Store> store_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  int users_ GUARDED_BY(mu_) = 0;
  // A swap is announced: new users wait (unless they hold a ref already).
  bool pending_ GUARDED_BY(mu_) = false;
  // The swap runs: everybody waits.
  bool swapping_ GUARDED_BY(mu_) = false;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_STORE_GATE_H_
