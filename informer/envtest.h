// envtest: a real kplane control plane inside a test process, for
// controller authors (controller-runtime's pkg/envtest is the model: it
// starts kube-apiserver + etcd binaries; this starts our store and API
// server as objects, in a few hundred milliseconds).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<envtest::Environment> env,
//                    envtest::Environment::Start({
//                        .crd_paths = {"config/crd"},         // installed
//                        first .manifest_paths = {"testdata/objects.yaml"}}));
//   DynamicSharedInformerFactory factory(env->dynamic());   // or typed:
//   SharedInformerFactory typed(env->client());
//   ... run the controller, assert on what it wrote through env->dynamic() ...
//   env->Stop();                                           // or let it go
//
// What runs: a single-member store (storage::StoreServer) in a fresh
// temporary directory and an ApiServer on 127.0.0.1 with an ephemeral
// port, plain HTTP, authentication and authorization off (the
// --authorization-mode=AlwaysAllow of the test suites): every client is
// allowed everything, so a test exercises the controller, not RBAC. No
// controllers run (no namespace finalization, no garbage collection, no
// pods scheduled): the test's own controller is the only one, as with
// envtest. Stop() (and the destructor) stops both and removes the
// directory.
//
// Clients: client() is a RestClient (typed verbs, SharedInformerFactory),
// dynamic() a DynamicClient over it, rest_options() what to build more
// clients from, Kubeconfig() a kubeconfig for kubectl / kpctl.
//
// Manifests: YAML or JSON files (a directory means its *.yaml, *.yml and
// *.json files in name order), each a stream of documents; "kind: List"
// documents are expanded. Apply creates each object, or updates it (with
// its current resourceVersion) when it exists already. Resources are found
// through discovery (DynamicClient::MapKind), so built-in and custom kinds
// alike work; a namespaced object without metadata.namespace goes to
// "default". CustomResourceDefinitions in a stream are created first, and
// each is waited for (WaitForCRD) before anything else is applied.
//
// WaitForCRD(name): watches the CRD (no polling) until its Established
// condition is True, then checks that discovery serves the resource of
// each served version. If the API server does not serve
// customresourcedefinitions.apiextensions.k8s.io at all, it (and applying
// a stream with a CRD in it) fails at once with kFailedPrecondition:
//   "the API server does not serve CustomResourceDefinitions
//    (apiextensions.k8s.io/v1): no matches for kind ..."
// and after `timeout` with kDeadlineExceeded naming the CRD and its
// conditions.
//
// Thread-safety: Start/Stop from one thread; the clients are thread-safe;
// Apply* and WaitForCRD may be called from any thread. Errors: Start
// returns the store's and API server's start-up errors, NotFound for a
// missing manifest path, InvalidArgument (with the file name) for YAML
// that does not parse or a document without apiVersion/kind, and the
// API's errors for objects it refuses.
#ifndef KPLANE_INFORMER_ENVTEST_H_
#define KPLANE_INFORMER_ENVTEST_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/statusor.h"
#include "informer/dynamic_client.h"
#include "informer/rest_client.h"
#include "informer/unstructured.h"

namespace kplane::storage {
class StoreServer;
}
namespace kplane::apiserver {
class ApiServer;
struct ApiServerOptions;
}  // namespace kplane::apiserver

namespace kplane::informer::envtest {

struct EnvironmentOptions {
  // CRD manifests (files or directories), installed and waited for first.
  std::vector<std::string> crd_paths;
  // Other manifests, applied once the CRDs are served.
  std::vector<std::string> manifest_paths;
  // How long each CRD may take to become Established.
  Duration crd_install_timeout = seconds(10);
  // Where the store's temporary directory is made ("": $TMPDIR or /tmp).
  std::string temp_dir;
  // Changes to the API server's options before it starts (limits, cacher
  // windows, ...); its kv, port and metrics are the environment's.
  std::function<void(apiserver::ApiServerOptions*)> configure_api_server;
};

class Environment {
 public:
  static StatusOr<std::unique_ptr<Environment>> Start(
      EnvironmentOptions options = {});
  ~Environment();  // Stop()s
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // Stops the API server and the store and removes the data directory.
  // Idempotent; clients fail with kUnavailable afterwards.
  void Stop();

  // "http://127.0.0.1:<port>".
  std::string server() const;
  uint16_t port() const;
  // Options for more RestClients (server set; no TLS, no token).
  RestClientOptions rest_options() const;
  RestClient* client() const { return client_.get(); }
  DynamicClient* dynamic() const { return dynamic_.get(); }
  // A kubeconfig (YAML) whose current context "envtest" points at server().
  std::string Kubeconfig() const;
  Status WriteKubeconfig(const std::string& path) const;

  // Applies every object of a YAML/JSON stream (CRDs first, waited for);
  // returns the objects as the server stored them, in order applied.
  StatusOr<std::vector<Unstructured>> ApplyYaml(std::string_view yaml);
  // The same for files and directories (all of them as one stream).
  StatusOr<std::vector<Unstructured>> ApplyFiles(
      const std::vector<std::string>& paths);
  // The same for objects already read (CRDs first, waited for).
  StatusOr<std::vector<Unstructured>> ApplyObjects(
      const std::vector<Unstructured>& objs);
  // Creates or updates one object.
  StatusOr<Unstructured> Apply(const Unstructured& obj);

  Status WaitForCRD(std::string_view name, Duration timeout);

 private:
  Environment() = default;
  Status StartServers(const EnvironmentOptions& options);
  Status WaitForCRDs(const std::vector<Unstructured>& crds);
  // FailedPrecondition unless discovery lists CustomResourceDefinitions.
  Status CheckCrdsServed();

  EnvironmentOptions options_;
  std::string dir_;
  metrics::Registry store_metrics_;
  metrics::Registry api_metrics_;
  metrics::Registry client_metrics_;
  std::unique_ptr<storage::StoreServer> store_;
  std::unique_ptr<apiserver::ApiServer> api_;
  std::unique_ptr<RestClient> client_;
  std::unique_ptr<DynamicClient> dynamic_;
};

// The manifests of `paths` as one document stream (directories expanded as
// above, "kind: List" expanded), without applying anything.
StatusOr<std::vector<Unstructured>> ReadManifests(
    const std::vector<std::string>& paths);
// The documents of one YAML/JSON stream ("kind: List" expanded).
StatusOr<std::vector<Unstructured>> ParseManifests(std::string_view yaml);

}  // namespace kplane::informer::envtest

#endif  // KPLANE_INFORMER_ENVTEST_H_
