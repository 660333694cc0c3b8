// KeptJsonBudget: a bound on the memory the watch caches' kept JSON holds
// (CacherOptions::keep_json), shared by every cache of an apiserver.
//
//   auto budget = std::make_shared<KeptJsonBudget>(512 << 20);
//   std::shared_ptr<const std::string> j = budget->Keep(EncodeJson(obj));
//   // j is null when keeping it would pass the bound: the cache then keeps
//   // no JSON for that version and encodes it on each read, as with
//   // --watch-cache-json=false. Otherwise its bytes count until the last
//   // copy of j (the cache's object, watch events in the window) is gone.
//
// Why a byte count on the strings and not the cache's size: the JSON lives
// as long as anything holds it (a LIST being streamed, a slow watcher's
// queue), so only its own deleter knows when the memory is back.
//
// Thread-safety: Keep and used_bytes from any thread. Each kept string
// holds the budget alive.
#ifndef KPLANE_APISERVER_CACHER_KEPT_JSON_BUDGET_H_
#define KPLANE_APISERVER_CACHER_KEPT_JSON_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace kplane::apiserver {

class KeptJsonBudget : public std::enable_shared_from_this<KeptJsonBudget> {
 public:
  // `max_bytes` > 0.
  explicit KeptJsonBudget(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // `json` held against the budget, or null if it does not fit.
  std::shared_ptr<const std::string> Keep(std::string json) {
    const auto size = static_cast<int64_t>(json.size());
    int64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used + size > max_bytes_) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }
    } while (!used_.compare_exchange_weak(used, used + size,
                                          std::memory_order_relaxed));
    std::shared_ptr<KeptJsonBudget> self = shared_from_this();
    return std::shared_ptr<const std::string>(
        new std::string(std::move(json)),
        [self = std::move(self), size](const std::string* s) {
          delete s;
          self->used_.fetch_sub(size, std::memory_order_relaxed);
        });
  }

  int64_t max_bytes() const { return max_bytes_; }
  // Bytes of kept JSON alive now.
  int64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  // Encodings not kept because the budget was full, since the start.
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const int64_t max_bytes_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> refused_{0};
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_CACHER_KEPT_JSON_BUDGET_H_
