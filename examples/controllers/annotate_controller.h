// AnnotateController: an example controller on the dynamic informer, for
// controller authors to copy. For every object of one resource (by
// group/version/resource, so a custom resource works as well as a
// ConfigMap) it records what the object's `data` holds in an annotation,
// the way a controller reports what it observed in status:
//
//   data: {b: "22", a: "1"}   ->   annotations:
//                                    example.kplane.io/observed-data: a,b (3
//                                    bytes)
//
// The loop is client-go's: a DynamicSharedInformerFactory's informer feeds
// keys into a rate-limited work queue; a Runner calls Reconcile(key), which
// reads the object from the informer's cache (never the API server), and
// writes only when the annotation differs, with a merge patch carrying the
// cached resourceVersion (a stale cache gets 409 Conflict and the key is
// retried with backoff, instead of overwriting a newer object).
//
//   DynamicSharedInformerFactory factory(&dyn);
//   AnnotateController c(&dyn, &factory, {.resource = {"", "v1",
//   "configmaps"}}); factory.Start(); factory.WaitForCacheSync(seconds(30));
//   c.Start();
//   ...
//   c.Stop();
//
// informer/CMakeLists.txt builds it into informer_dynamic_test, whose
// AnnotateControllerTest runs it against an envtest environment.
//
// Thread-safety: Start/Stop from the owner; Reconcile runs on the Runner's
// workers (never concurrently for one key). Errors: Reconcile returns the
// API's errors (the Runner retries them).
#ifndef KPLANE_EXAMPLES_CONTROLLERS_ANNOTATE_CONTROLLER_H_
#define KPLANE_EXAMPLES_CONTROLLERS_ANNOTATE_CONTROLLER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "informer/dynamic_client.h"
#include "informer/dynamic_informer.h"
#include "informer/runner.h"
#include "informer/workqueue.h"

namespace kplane::examples {

struct AnnotateControllerOptions {
  informer::GroupVersionResource resource{"", "v1", "configmaps"};
  std::string annotation = "example.kplane.io/observed-data";
  int workers = 2;
  // Called after each successful Reconcile with the key and whether it
  // wrote the annotation (tests await it).
  std::function<void(const std::string& key, bool wrote)> on_reconciled;
};

class AnnotateController {
 public:
  // Registers its event handler on factory->ForResource(resource): create
  // the controller before factory->Start().
  AnnotateController(informer::DynamicClient* client,
                     informer::DynamicSharedInformerFactory* factory,
                     AnnotateControllerOptions options = {});
  ~AnnotateController();  // Stop()s

  // Starts the workers (after the factory's caches synced).
  void Start();
  void Stop();

  // One reconcile of "namespace/name" (or "name").
  Status Reconcile(const std::string& key);

  // The annotation's value for a `data` map: sorted keys, total bytes.
  static std::string Summary(const std::map<std::string, std::string>& data);

 private:
  informer::DynamicClient* const client_;
  const AnnotateControllerOptions options_;
  informer::Lister lister_;
  informer::RateLimitingQueue queue_;
  std::unique_ptr<informer::Runner> runner_;
};

}  // namespace kplane::examples

#endif  // KPLANE_EXAMPLES_CONTROLLERS_ANNOTATE_CONTROLLER_H_
