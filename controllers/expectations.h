// ControllerExpectations: what a controller is waiting to see in its
// informer cache after its own writes, so it never acts twice on a stale
// cache (Kubernetes' UIDTrackingControllerExpectations).
//
// Worked example, ReplicaSet default/web wants 3 pods and has 0:
//   ExpectCreations("default/web", 3)     adds=3        Satisfied: no
//   (3 POSTs go out; the cache still shows 0 pods; a resync arrives)
//   Sync -> not Satisfied: only status is recomputed, no 3 more pods
//   CreationObserved x3 (informer OnAdd)  adds=0        Satisfied: yes
// Deletions are tracked by pod key, so seeing a pod both go terminating
// and then disappear counts once:
//   ExpectDeletions("default/web", {"default/web-a"})
//   DeletionObserved("default/web", "default/web-a")   Satisfied: yes
//   DeletionObserved("default/web", "default/web-a")   (no effect)
// An expectation older than `timeout` counts as satisfied, so a lost
// watch event cannot wedge a controller forever; the next Expect* (or
// SetExpectations, for both at once) replaces it rather than adding to
// it, so what it never saw is not owed by the next round. Callers set
// expectations only when Satisfied, once per sync, with what they are
// about to create and delete.
//
// Thread-safety: all methods may be called concurrently.
#ifndef KPLANE_CONTROLLERS_EXPECTATIONS_H_
#define KPLANE_CONTROLLERS_EXPECTATIONS_H_

#include <map>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"

namespace kplane::controllers {

class ControllerExpectations {
 public:
  explicit ControllerExpectations(Clock* clock, Duration timeout = minutes(5))
      : clock_(clock), timeout_(timeout) {}

  // Each replaces what `key` expected before (creations and deletions).
  void SetExpectations(const std::string& key, int creations,
                       const std::set<std::string>& dependent_keys);
  void ExpectCreations(const std::string& key, int count) {
    SetExpectations(key, count, {});
  }
  void ExpectDeletions(const std::string& key,
                       const std::set<std::string>& dependent_keys) {
    SetExpectations(key, 0, dependent_keys);
  }
  void CreationObserved(const std::string& key);
  // A create that failed will never be observed.
  void CreationFailed(const std::string& key) { CreationObserved(key); }
  void DeletionObserved(const std::string& key,
                        const std::string& dependent_key);
  bool Satisfied(const std::string& key) const;
  void Forget(const std::string& key);

 private:
  struct Entry {
    int adds = 0;
    std::set<std::string> deletes;
    TimePoint set_at;
  };
  Clock* const clock_;
  const Duration timeout_;
  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_EXPECTATIONS_H_
