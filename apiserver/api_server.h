// ApiServer: kplane's kube-apiserver as a library class. `kplane apiserver`
// runs one; `kplane up` embeds one next to an in-process store.
//
//   StoreServer store ...;                      // or a RemoteKV
//   ApiServer api({.kv = store.get(), .port = 0});
//   CHECK_OK(api.Start());
//   api.WaitReady(seconds(10));                 // every watch cache loaded
//   ... http://127.0.0.1:<api.port()>/api/v1/pods ...
//   api.Stop();
//
// What it serves (docs/api.md has the full list and the differences from
// Kubernetes): every resource of objects::Scheme::Default() under the
// Kubernetes paths with GET, LIST, WATCH, POST, PUT, PATCH (JSON, merge,
// strategic, server-side apply), DELETE and DELETECOLLECTION, the status,
// scale and binding subresources, JSON/YAML/protobuf bodies and answers,
// Tables, discovery (legacy and aggregated), /version, /openapi/v3,
// /healthz, /livez, /readyz (the store's health and the watch caches) and
// Prometheus /metrics.
//
// Per resource: one ObjectStore (apiserver/storage) over the KV, one watch
// cache (apiserver/cacher) serving LIST and WATCH, one ResourceStore with
// the generic REST rules and the resource's Strategy (apiserver/registry).
// At start the namespaces default, kube-system, kube-public and
// kube-node-lease are created if missing. It runs no controllers: deleted
// namespaces are emptied and ended by the controller manager's namespace
// controller, and pods whose graceful deletion nobody finishes are removed
// by its pod GC, as in Kubernetes.
//
// Limits: at most max_requests_inflight read-only and
// max_mutating_requests_inflight mutating requests at once (429 with
// Retry-After beyond; watches do not count; a request takes its slot only
// once its whole body has arrived), at most max_watches open watches (429
// beyond), request bodies up to max_request_body_bytes (413) that arrive
// within request_body_timeout (408, plain text, from the HTTP layer), at
// most max_connections open connections (503 and closed beyond); a watch
// buffers at most max_watch_buffer_bytes (plus one event) and is closed
// past max_watch_pending_events or max_watch_pending_bytes of queued
// events, and all watches together buffer at most
// max_watch_buffer_total_bytes.
// Handlers run on `worker_threads` threads (they block on storage); a
// watch holds no thread.
//
// Authentication and authorization (ApiServerOptions::auth, off by default
// so library users and tests keep an open server; the commands turn it
// on): every request, /healthz and discovery included, is authenticated
// (a verified client certificate's CN/O, a bearer token, or anonymous) and
// authorized (system:masters, then the Node authorizer, then RBAC over the
// served rbac.authorization.k8s.io objects) as kube-apiserver does; 401
// and 403 Status answers with kube's messages. docs/security.md.
//
// Ownership: the KV is not owned and must outlive the server.
// Thread-safety: Start/Stop from one thread; everything else is internal.
// Errors: Start() returns bind failures and storage errors met while
// creating the system namespaces.
#ifndef KPLANE_APISERVER_API_SERVER_H_
#define KPLANE_APISERVER_API_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apiserver/cacher/cacher.h"
#include "apiserver/encryption/transformer.h"
#include "apiserver/ui_endpoints.h"
#include "base/clock.h"
#include "base/file_system.h"
#include "base/metrics.h"
#include "base/status.h"
#include "net/tls.h"
#include "storage/kv.h"

namespace kplane::apiserver {

// kube-apiserver's authentication and authorization flags.
struct ApiServerAuthOptions {
  // Off: no request is authenticated or authorized (everything is allowed),
  // as before issue 18. `kplane apiserver` turns it on.
  bool enabled = false;
  // --anonymous-auth: a request without credentials is system:anonymous
  // (group system:unauthenticated); off: it is answered 401.
  bool anonymous = true;
  // --token-auth-file: static bearer tokens (apiserver/auth/token_file.h).
  std::string token_auth_file;
  // --authorization-mode, in order: "Node", "RBAC", "AlwaysAllow",
  // "AlwaysDeny". system:masters is allowed everything before these.
  std::vector<std::string> authorization_modes = {"Node", "RBAC"};
  FileSystem* fs = nullptr;  // for the token file; null: the real one
};

struct ApiServerOptions {
  storage::KV* kv = nullptr;  // required
  std::string bind_address = "127.0.0.1";
  uint16_t port = 0;  // 0: ephemeral (see port())
  // "host:port" published in /api's serverAddressByClientCIDRs; default:
  // bind address and port.
  std::string advertise_address;
  std::string storage_prefix = "/registry";
  // Where Services' ClusterIPs and NodePorts come from
  // (--service-cluster-ip-range, --service-node-port-range;
  // apiserver/service_allocation.h). The first IP of the range is the
  // `kubernetes` Service's, reconciled at start with its Endpoints.
  std::string service_cluster_ip_range = "10.96.0.0/12";
  std::string service_node_port_range = "30000-32767";
  // Encryption at rest (--encryption-provider-config): each resource's
  // values pass through its transformer (apiserver/encryption/
  // transformer.h). Null: everything is stored plain.
  std::shared_ptr<const encryption::TransformerSet> encryption;
  // Serve HTTPS with this server context (net/tls.h; kube-apiserver's
  // --tls-cert-file/--tls-private-key-file/--client-ca-file). A verified
  // client certificate reaches handlers as HttpRequest::tls. Null: HTTP.
  // A verified client certificate is also an identity for
  // authentication (`auth`).
  std::shared_ptr<const net::TlsContext> tls;
  ApiServerAuthOptions auth;

  int max_requests_inflight = 400;
  int max_mutating_requests_inflight = 200;
  int max_watches = 10000;
  size_t max_request_body_bytes = 3 * 1024 * 1024;
  // A request body must arrive within this time of the request's head
  // (kube-apiserver's --request-timeout is 60 s). 0: none.
  Duration request_body_timeout = seconds(60);
  // A streamed LIST (list_stream.h) whose response is not all sent within
  // this time of its start has its connection closed, unfinished: a client
  // that stops reading holds the list's snapshot only this long
  // (kube-apiserver's --request-timeout, 60 s). 0: none.
  Duration request_timeout = seconds(60);
  // Open connections; more are answered 503 and closed. Room for
  // max_watches watches (one connection each for HTTP/1.1 clients) and as
  // many again for requests. 0: none.
  size_t max_connections = 20000;
  // Watch memory (apiserver/watch_sink.h, watch_budget.h, docs/limits.md).
  // Each watch writes events while fewer than this many bytes wait unsent
  // in its connection's buffer; further events wait in its queue in the
  // watch cache (shared, not copied).
  size_t max_watch_buffer_bytes = 256 * 1024;
  // A watch whose queue passes this many events is closed as too slow (the
  // client re-watches or relists). 0: no bound. The cache's window by
  // default: a client further behind could not resume from it anyway.
  size_t max_watch_pending_events = 10000;
  // The same in bytes of the queued events' objects (CacherOptions::
  // max_pending_bytes: ten of the largest objects). 0: no bound.
  size_t max_watch_pending_bytes = 16 * 1024 * 1024;
  // All watches' unsent bytes together; past it the watches holding the
  // most are closed. 0: no ceiling.
  size_t max_watch_buffer_total_bytes = 256 * 1024 * 1024;
  // ServiceAccount tokens (docs/security.md "ServiceAccounts",
  // apiserver/service_account_tokens.h). The PEM text of the RSA private
  // key that signs the tokens of serviceaccounts/<name>/token (kube's
  // --service-account-signing-key-file); empty: that subresource answers
  // 404 and only the keys below verify.
  std::string service_account_signing_key_pem;
  // PEM texts of more keys that verify tokens (--service-account-key-file:
  // public keys, private keys or certificates; e.g. a previous signing key).
  std::vector<std::string> service_account_key_pems;
  // --service-account-issuer: the first is written into new tokens, all
  // are accepted.
  std::vector<std::string> service_account_issuers = {
      "https://kubernetes.default.svc.cluster.local"};
  // --api-audiences: a token must name one of these (TokenRequest's
  // default). Empty: the issuers.
  std::vector<std::string> api_audiences;

  // The web view's start/stop of a simulated node (POST
  // /ui/api/nodes/<name>/stop|resume). Null: the fleet's control request
  // is sent to the Node's kubelet endpoint (the port a kplane kubeletsim
  // fleet advertises and serves it on), with kubelet_tls as pods/log; a
  // kubelet that does not serve it answers 404 ("no simulated node").
  NodeControl node_control;

  // The web view's store panel (/ui/api/store, apiserver/ui_endpoints.h):
  // asks every store member for its status. Null: the one member `kv`
  // talks to (KV::MemberStatus).
  StoreStatusProvider store_status;

  // Tests only: pods/eviction calls this with a budget's name between
  // reading it and writing its decremented status (apiserver/eviction.h).
  std::function<void(std::string_view pdb)> eviction_budget_write_hook;
  // Tests only: pods/eviction calls this with the pod's name between
  // reading a pod it may delete without a budget and deleting it.
  std::function<void(std::string_view pod)> eviction_pod_delete_hook;
  // pods/log (apiserver/pod_logs.h): the client context the apiserver
  // shows the kubelets (kube's --kubelet-client-certificate/-key, trusting
  // --kubelet-certificate-authority); null: plain HTTP to the kubelets.
  std::shared_ptr<const net::TlsContext> kubelet_tls;
  // --kubelet-preferred-address-types: which node address reaches a
  // kubelet. kube's default starts with Hostname; kplane's with the
  // ExternalIP the kubeletsim advertises (simulated Hostnames and
  // InternalIPs are not routable).
  std::vector<std::string> kubelet_preferred_address_types = {
      "ExternalIP", "InternalIP", "Hostname", "InternalDNS", "ExternalDNS"};
  // pods/exec (apiserver/pod_exec.h): sessions at once (429 beyond) and
  // how long one may stay silent both ways.
  int max_exec_streams = 256;
  Duration exec_idle_timeout = std::chrono::minutes(30);
  // pods/log streams at once (429 beyond).
  int max_log_streams = 256;
  // pods/exec sessions, and pods/log streams, of one authenticated user at
  // once (429 beyond), so that one user cannot take every slot.
  int max_kubelet_streams_per_user = 64;

  // Events are stored with a lease of this TTL.
  Duration event_ttl = hours(1);
  // Watches without timeoutSeconds end after a random time in
  // [min_request_timeout, 2 * min_request_timeout), as kube-apiserver does.
  Duration min_request_timeout = seconds(1800);

  // How often /readyz's etcd check reads `<storage_prefix>/health` and the
  // store's alarms (apiserver/storage_health.h).
  Duration storage_health_interval = seconds(1);

  int io_threads = 1;
  int worker_threads = 64;
  CacherOptions cacher;  // clock and metrics are replaced by ours

  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
};

namespace auth {
class TokenAuthenticator;
}  // namespace auth

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options);
  ~ApiServer();  // Stop()s
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  Status Start();
  void Stop();
  uint16_t port() const;
  // Waits until every watch cache has loaded (/readyz's informer-sync
  // check; /readyz also needs the store healthy: its etcd check).
  bool WaitReady(Duration timeout);
  bool ready() const;
  // The ServiceAccount token authenticator (apiserver/auth), backed by this
  // server's watch caches: for the authenticator chain. Null before Start()
  // and without any service account key.
  const auth::TokenAuthenticator* service_account_authenticator() const;

  struct Impl;  // internal

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_API_SERVER_H_
