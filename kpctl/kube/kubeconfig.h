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
//                cluster:
//                  server: https://127.0.0.1:6443
//                  certificate-authority-data: <base64 PEM>  # or
//                  certificate-authority: /path/ca.crt
//                  insecure-skip-tls-verify: false
//                  tls-server-name: kubernetes
//   users:     - name: u
//                user:
//                  client-certificate-data: <base64 PEM>  # or
//                  client-certificate: /path/admin.crt
//                  client-key-data: <base64 PEM>          # or client-key
//                  token: abc                             # or tokenFile
// Relative paths are relative to the file that names them (clientcmd's
// ResolveLocalPaths). Overrides: --context picks another context; --server,
// --token, --namespace, --client-certificate, --client-key and
// --tls-server-name replace what the context says. As clientcmd's
// getClusterConfig, --insecure-skip-tls-verify and --certificate-authority
// replace the cluster's trust settings as a whole: the first drops the
// kubeconfig's CA (data or file), the second its CA data and its
// insecure-skip-tls-verify. The namespace defaults to "default". A server
// without a scheme gets https:// when any TLS setting is present, else
// http:// (client-go's DefaultServerURL). A tokenFile is read up to
// kMaxTokenFileBytes and trimmed of surrounding whitespace (client-go).
//
// Errors as kubectl's validation words them, checked after the flags:
// "certificate-authority-data and certificate-authority are both specified
// for <cluster>...", a client certificate without its key, "specifying a
// root certificates file with the insecure flag is not allowed" (both
// flags, or a kubeconfig cluster with a CA and insecure-skip-tls-verify),
// and an https server with nothing to trust is fine (the system's trust
// store, as Go).
//
// Thread-safety: pure functions. Errors: InvalidArgument naming the file
// for unreadable YAML, an unknown --context, no server at all, the
// validation errors above, bad base64; NotFound for a missing --kubeconfig
// file or a missing tokenFile / certificate file; TooLarge for a tokenFile
// over kMaxTokenFileBytes ("tokenFile <path> of user <u> is larger than
// 1048576 bytes").
#ifndef KPLANE_KPCTL_KUBE_KUBECONFIG_H_
#define KPLANE_KPCTL_KUBE_KUBECONFIG_H_

#include <rapidjson/document.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/statusor.h"
#include "net/tls.h"

namespace kplane::kpctl::kube {

// The most of a user's tokenFile that is read: 1 MiB, Go's
// http.DefaultMaxHeaderBytes, the largest request head kube-apiserver
// takes, so a longer token could not be sent anyway.
inline constexpr size_t kMaxTokenFileBytes = 1 << 20;

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
  std::string certificate_authority;  // file
  std::string client_certificate;     // file
  std::string client_key;             // file
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
};

struct ClientConfig {
  std::string server;  // "https://host:port" or "http://host:port"
  // For an https server: what to trust and present (PEM text or files,
  // as the kubeconfig gave them). Unused for http.
  net::TlsClientConfig tls;
  std::string token;         // "" = no Authorization header
  std::string ns;            // never empty
  bool ns_explicit = false;  // -n given (apply checks manifests against it)
  std::string context;       // the context used ("" if none)
};

StatusOr<ClientConfig> ResolveClientConfig(const Kubeconfig& config,
                                           const ConfigOverrides& overrides);

// "127.0.0.1:6443" -> "http://127.0.0.1:6443" (or https:// when
// `default_https`); trailing slashes dropped; other schemes refused.
StatusOr<std::string> NormalizeServer(const std::string& server,
                                      bool default_https = false);

// The client TLS context for `config`: nullptr for an http:// server.
// TlsContext::NewClient's errors (a missing file, bad PEM, a key that does
// not match its certificate), annotated with what was being loaded.
StatusOr<std::shared_ptr<const net::TlsContext>> ClientTlsContext(
    const ClientConfig& config);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_KUBECONFIG_H_
