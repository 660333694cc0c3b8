// RootCAPublisher: the `kube-root-ca.crt` ConfigMap (key `ca.crt`: the
// cluster's CA bundle) in every active namespace, kept as it should be
// (Kubernetes' root-ca-cert-publisher,
// pkg/controller/certificates/rootcacertpublisher/publisher.go). Pods read
// it to verify the API server at kubernetes.default.svc.
//
// Keys are namespace names. A namespace added or updated, or a
// `kube-root-ca.crt` ConfigMap updated or deleted, enqueues its namespace;
// Sync(ns):
//   1. the namespace is not in the cache or not Active: nothing;
//   2. no ConfigMap: create it (data {ca.crt: the CA}, annotation
//      kubernetes.io/description); AlreadyExists (the cache lags), NotFound
//      and a 403 for a namespace being deleted (read live) are not errors,
//      any other 403 is (retried);
//   3. its data is not exactly {ca.crt: the CA} or the annotation is
//      missing: update it (PUT with its resourceVersion; 409 is retried).
//
//   RootCAPublisher c({.api = writer, .namespaces = &ns_cache,
//                      .config_maps = &cm_cache, .root_ca_pem = pem});
//   c.RegisterHandlers(namespaces_informer, configmaps_informer);
//
// The controller manager runs it when it has a CA (--root-ca-file); the
// ConfigMap informer only follows metadata.name=kube-root-ca.crt.
// Ownership: borrows the writer and the caches. Thread-safety: as
// Controller.
#ifndef KPLANE_CONTROLLERS_ROOT_CA_PUBLISHER_H_
#define KPLANE_CONTROLLERS_ROOT_CA_PUBLISHER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

inline constexpr char kRootCAConfigMapName[] = "kube-root-ca.crt";

struct RootCAPublisherOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* namespaces = nullptr;
  const informer::Indexer* config_maps = nullptr;
  std::string root_ca_pem;  // required
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class RootCAPublisher : public Controller {
 public:
  explicit RootCAPublisher(RootCAPublisherOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* namespaces,
                        informer::SharedIndexInformer* config_maps);
  Status Sync(const std::string& key) override;

 private:
  RootCAPublisherOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_ROOT_CA_PUBLISHER_H_
