// ClusterRoleAggregationController: kube's clusterrole-aggregation
// controller (pkg/controller/clusterroleaggregation). A ClusterRole with an
// aggregationRule gets as rules the union of the rules of every other
// ClusterRole that one of its clusterRoleSelectors matches:
//
//   kind: ClusterRole                    kind: ClusterRole
//   metadata: {name: view}               metadata:
//   aggregationRule:                       name: widget-viewer
//     clusterRoleSelectors:                labels:
//     - matchLabels:                         rbac.authorization.k8s.io/
//         rbac.authorization.k8s.io/           aggregate-to-view: "true"
//           aggregate-to-view: "true"    rules: [{verbs: [get], ...}]
//
// makes `view` grant what widget-viewer grants (and, through the bootstrap
// labels, edit and admin too: apiserver/auth/bootstrap_policy.h).
//
// Keys are names of aggregated ClusterRoles. Any ClusterRole added,
// changed or deleted enqueues every aggregated one (as kube: a label change
// can move a role in or out of any selector). Sync(name): the cached role;
// nothing to do without an aggregationRule; else the matching roles
// (itself excluded) in name order, for each selector in order, their rules
// appended unless an equal rule is already there; when that differs from
// the role's rules, an update with the new rules (409 on a stale
// resourceVersion: retried by the queue). A selector that does not parse
// fails the sync with its error.
//
//   ClusterRoleAggregationController c({.api = writer,
//                                       .cluster_roles = &cache});
//   c.RegisterHandlers(cluster_roles_informer);
//
// Ownership: borrows the writer and the cache. Thread-safety: as
// Controller. Errors: the writer's, and InvalidArgument for a bad selector.
#ifndef KPLANE_CONTROLLERS_CLUSTERROLE_AGGREGATION_CONTROLLER_H_
#define KPLANE_CONTROLLERS_CLUSTERROLE_AGGREGATION_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

struct ClusterRoleAggregationControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* cluster_roles = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class ClusterRoleAggregationController : public Controller {
 public:
  explicit ClusterRoleAggregationController(
      ClusterRoleAggregationControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* cluster_roles);
  Status Sync(const std::string& key) override;

 private:
  // Every cached ClusterRole with an aggregationRule.
  void EnqueueAggregated();

  ClusterRoleAggregationControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_CLUSTERROLE_AGGREGATION_CONTROLLER_H_
