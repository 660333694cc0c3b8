#include "storage/server/store_gate.h"

namespace kplane::storage {

namespace {
// How many StoreRefs (of any gate) this thread holds. A thread that holds
// one enters a gate even while a swap is announced: the swap waits for its
// ref, so making it wait for the swap would deadlock.
thread_local int tls_refs = 0;
}  // namespace

StoreRef::StoreRef(StoreRef&& other) noexcept
    : gate_(other.gate_), store_(other.store_) {
  other.gate_ = nullptr;
  other.store_ = nullptr;
}

StoreRef& StoreRef::operator=(StoreRef&& other) noexcept {
  if (this != &other) {
    Release();
    gate_ = other.gate_;
    store_ = other.store_;
    other.gate_ = nullptr;
    other.store_ = nullptr;
  }
  return *this;
}

StoreRef::~StoreRef() { Release(); }

void StoreRef::Release() {
  if (gate_ != nullptr) {
    gate_->Leave();
    gate_ = nullptr;
    store_ = nullptr;
  }
}

StoreRef StoreGate::Use() {
  MutexLock l(&mu_);
  cv_.wait(l.native(), [&]() REQUIRES(mu_) {
    return !swapping_ && (!pending_ || tls_refs > 0);
  });
  ++users_;
  ++tls_refs;
  return StoreRef(this, store_.get());
}

void StoreGate::Leave() {
  bool wake;
  {
    MutexLock l(&mu_);
    --users_;
    --tls_refs;
    wake = users_ == 0 && pending_;
  }
  if (wake) cv_.notify_all();
}

void StoreGate::Replace(
    const std::function<void(std::unique_ptr<mvcc::Store>&)>& swap) {
  {
    MutexLock l(&mu_);
    pending_ = true;
    cv_.wait(l.native(), [&]() REQUIRES(mu_) { return users_ == 0; });
    swapping_ = true;
  }
  swap(store_);
  {
    MutexLock l(&mu_);
    swapping_ = false;
    pending_ = false;
  }
  cv_.notify_all();
}

int StoreGate::users() const {
  MutexLock l(&mu_);
  return users_;
}

bool StoreGate::swap_pending() const {
  MutexLock l(&mu_);
  return pending_;
}

}  // namespace kplane::storage
