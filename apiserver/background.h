// Two background workers that make kplane's apiserver finish what deletes
// start, where Kubernetes relies on other components (kplane's
// simplifications; docs/api.md):
//
// PodReaper: a pod bound to a node is deleted gracefully: DELETE sets
//   deletionTimestamp = now + grace and deletionGracePeriodSeconds, and the
//   kubelet removes it with a second DELETE (grace 0) once its containers
//   stopped. If nothing does that by deletionTimestamp (no kubelet, a
//   stopped simulated node), the reaper deletes the pod itself. It follows
//   the pods watch cache (pods with a deletionTimestamp and a positive
//   grace period) and sleeps until the earliest deadline on the injected
//   Clock.
//
// NamespaceFinalizer: deleting a namespace makes it Terminating (spec
//   finalizer "kubernetes" kept). Kubernetes' namespace controller then
//   deletes everything in it and removes the finalizer; here this worker
//   does both: it deletes the namespace's objects of every namespaced
//   resource with the default options (so bound pods terminate gracefully),
//   retries every `retry_interval` while objects remain, then drops the
//   "kubernetes" finalizer and deletes the namespace.
//
// Both re-establish their watch if the cache closes it.
//
// Thread-safety: Start/Stop from one thread; internal state is locked.
#ifndef KPLANE_APISERVER_BACKGROUND_H_
#define KPLANE_APISERVER_BACKGROUND_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/resource_store.h"
#include "base/clock.h"

namespace kplane::apiserver {

class PodReaper {
 public:
  PodReaper(ResourceStore* pods, Clock* clock);
  ~PodReaper();

  void Start();
  void Stop();
  // Pods waiting for their grace period to run out (tests).
  size_t pending() const;

 private:
  class Sink;
  struct Entry {
    std::string ns, name, uid;
    TimePoint deadline;
  };
  void Run();
  void OnEvent(const WatchEvent& e);
  void OnClosed();

  ResourceStore* pods_;
  Clock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool watching_ = false;
  uint64_t generation_ = 0;  // bumped whenever entries_ changes
  std::map<std::string, Entry> entries_;
  std::unique_ptr<WatchHandle> handle_;
  std::thread thread_;
};

class NamespaceFinalizer {
 public:
  NamespaceFinalizer(ResourceStore* namespaces,
                     std::vector<ResourceStore*> contents, Clock* clock,
                     Duration retry_interval);
  ~NamespaceFinalizer();

  void Start();
  void Stop();

  // One pass over namespace `name`: true when it is gone (or not
  // terminating), false while objects remain (exposed for tests).
  bool Finalize(const std::string& name);

 private:
  class Sink;
  void Run();
  void OnEvent(const WatchEvent& e);
  void OnClosed();

  ResourceStore* namespaces_;
  std::vector<ResourceStore*> contents_;
  Clock* clock_;
  Duration retry_interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool watching_ = false;
  bool changed_ = false;
  std::map<std::string, TimePoint> due_;  // namespace -> next attempt
  std::unique_ptr<WatchHandle> handle_;
  std::thread thread_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_BACKGROUND_H_
