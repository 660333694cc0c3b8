// Helpers for informer/ tests (not part of the library): object builders
// and a wait-for-condition helper that blocks on a condition variable.
//
// Thread-safety: Recorder may be used from any thread.
#ifndef KPLANE_INFORMER_TEST_UTIL_H_
#define KPLANE_INFORMER_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/meta.h"
#include "api/scheme.h"
#include "api/types.h"
#include "informer/watch.h"

namespace kplane::informer::testing {

// A failure deadline for awaiting events in tests; never slept on.
inline constexpr std::chrono::seconds kTestDeadline{20};

inline api::corev1::Pod MakePod(
    const std::string& ns, const std::string& name,
    const std::map<std::string, std::string>& labels = {},
    const std::string& node = "") {
  api::corev1::Pod pod;
  pod.mutable_metadata()->set_namespace_(ns);
  pod.mutable_metadata()->set_name(name);
  for (const auto& [k, v] : labels) {
    (*pod.mutable_metadata()->mutable_labels())[k] = v;
  }
  if (!node.empty()) pod.mutable_spec()->set_nodename(node);
  return pod;
}

inline ObjectPtr PodPtr(const std::string& ns, const std::string& name,
                        const std::string& rv = "1",
                        const std::map<std::string, std::string>& labels = {},
                        const std::string& node = "") {
  auto pod =
      std::make_shared<api::corev1::Pod>(MakePod(ns, name, labels, node));
  pod->mutable_metadata()->set_resourceversion(rv);
  return pod;
}

inline const api::KindInfo* PodKind() {
  return api::Scheme::Default().FindKind("v1", "Pod");
}
inline const api::ResourceInfo* PodsResource() {
  return api::Scheme::Default().FindResource("", "v1", "pods");
}

// Collects strings from any thread; tests await a count or a predicate.
class Recorder {
 public:
  void Record(std::string s) {
    std::lock_guard<std::mutex> l(mu_);
    items_.push_back(std::move(s));
    cv_.notify_all();
  }
  std::vector<std::string> Items() const {
    std::lock_guard<std::mutex> l(mu_);
    return items_;
  }
  // Waits until at least `n` items were recorded; false after
  // kTestDeadline (a hang turned into a failure).
  bool WaitForCount(size_t n) const {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, kTestDeadline, [&] { return items_.size() >= n; });
  }
  bool WaitFor(
      const std::function<bool(const std::vector<std::string>&)>& pred) const {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, kTestDeadline, [&] { return pred(items_); });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> items_;
};

}  // namespace kplane::informer::testing

#endif  // KPLANE_INFORMER_TEST_UTIL_H_
