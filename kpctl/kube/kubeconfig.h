// Kubeconfig files and the client settings kpctl derives from them: the
// current context's server, namespace and bearer token, as kubectl
// (client-go clientcmd) resolves them.
//
// Where the kubeconfig comes from, first match wins:
//   --kubeconfig FILE          exactly that file (it must exist)
//   $KUBECONFIG=a:b:c          those files merged (missing ones skipped)
//   ~/.kube/config             if it exists
//   ~/.kplane/kubeconfig       else, if it exists (what `kplane up` writes)
// Merging (clientcmd's rules): for clusters, contexts and users the first
// file defining a name wins; current-context is the first non-empty one.
//
// What is read (everything else is ignored):
//   current-context: dev
//   contexts:  - name: dev
//                context: {cluster: c, user: u, namespace: team-a}
//   clusters:  - name: c
//                cluster: {server: http://127.0.0.1:6443}
//   users:     - name: u
//                user: {token: abc}         # or tokenFile: /path
// Overrides: --context picks another context; --server, --token and
// --namespace replace what the context says. The namespace defaults to
// "default". A server without a scheme gets http://; https:// is refused
// (kplane's API server speaks plain HTTP).
//
// Thread-safety: pure functions. Errors: InvalidArgument naming the file
// for unreadable YAML, an unknown --context, or no server at all;
// NotFound for a missing --kubeconfig file.
#ifndef KPLANE_KPCTL_KUBE_KUBECONFIG_H_
#define KPLANE_KPCTL_KUBE_KUBECONFIG_H_

#include <rapidjson/document.h>

#include <functional>
#include <string>
#include <vector>

#include "base/statusor.h"

namespace kplane::kpctl::kube {

// Reads an environment variable; nullptr when unset.
using GetEnvFn = std::function<const char*(const char*)>;

// The merged kubeconfig as a JSON DOM (same layout as the YAML), with the
// files it came from.
struct Kubeconfig {
  rapidjson::Document doc;  // always an object
  std::vector<std::string> files;
};

// Loads and merges per the rules above. `explicit_path` is --kubeconfig.
StatusOr<Kubeconfig> LoadKubeconfig(const std::string& explicit_path,
                                    const GetEnvFn& getenv);
// Merges one parsed file into `into` (exposed for tests).
void MergeKubeconfig(const rapidjson::Value& file, Kubeconfig* into);

struct ConfigOverrides {
  std::string context;
  std::string server;
  std::string token;
  std::string ns;
};

struct ClientConfig {
  std::string server;        // "http://host:port"
  std::string token;         // "" = no Authorization header
  std::string ns;            // never empty
  bool ns_explicit = false;  // -n given (apply checks manifests against it)
  std::string context;       // the context used ("" if none)
};

StatusOr<ClientConfig> ResolveClientConfig(const Kubeconfig& config,
                                           const ConfigOverrides& overrides);

// "127.0.0.1:6443" -> "http://127.0.0.1:6443"; https is an error.
StatusOr<std::string> NormalizeServer(const std::string& server);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_KUBECONFIG_H_
