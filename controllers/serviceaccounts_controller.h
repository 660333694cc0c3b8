// ServiceAccountsController: a `default` ServiceAccount in every active
// namespace (Kubernetes' ServiceAccountsController,
// pkg/controller/serviceaccount/serviceaccounts_controller.go).
//
// Keys are namespace names. A namespace added or updated, or a managed
// ServiceAccount deleted, enqueues its namespace; Sync(ns):
//   1. the namespace is not in the cache, or its status.phase is not
//      Active (a Terminating namespace is being emptied): nothing to do;
//   2. for every managed name (`service_accounts`, by default "default")
//      missing from the ServiceAccounts cache: create it. AlreadyExists
//      (the cache lags) and a 403 for a namespace that is (live) being
//      deleted or gone are not errors; any other failure fails the sync
//      (retried with backoff).
// So a deleted `default` ServiceAccount is recreated at once (with a new
// uid: the tokens of the old one stay refused).
//
//   ServiceAccountsController c({.api = writer, .namespaces = &ns_cache,
//                                .service_accounts_cache = &sa_cache});
//   c.RegisterHandlers(namespaces_informer, serviceaccounts_informer);
//
// Ownership: borrows the writer and the caches. Thread-safety: as
// Controller.
#ifndef KPLANE_CONTROLLERS_SERVICEACCOUNTS_CONTROLLER_H_
#define KPLANE_CONTROLLERS_SERVICEACCOUNTS_CONTROLLER_H_

#include <string>
#include <vector>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/serviceaccount_types.h"

namespace kplane::controllers {

// The ServiceAccount every namespace gets.
inline constexpr char kDefaultServiceAccountName[] = "default";

struct ServiceAccountsControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* namespaces = nullptr;
  const informer::Indexer* service_accounts_cache = nullptr;
  // The names kept in every active namespace.
  std::vector<std::string> service_accounts = {kDefaultServiceAccountName};
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class ServiceAccountsController : public Controller {
 public:
  explicit ServiceAccountsController(ServiceAccountsControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* namespaces,
                        informer::SharedIndexInformer* service_accounts);
  Status Sync(const std::string& key) override;

 private:
  bool Managed(const std::string& name) const;

  ServiceAccountsControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_SERVICEACCOUNTS_CONTROLLER_H_
