#include "apiserver/api_server.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <map>
#include <random>
#include <thread>
#include <unordered_set>
#include <vector>

#include "apiserver/access_review.h"
#include "apiserver/auth/authenticator.h"
#include "apiserver/auth/bootstrap_policy.h"
#include "apiserver/auth/node_authorizer.h"
#include "apiserver/auth/rbac.h"
#include "apiserver/auth/token_file.h"
#include "apiserver/browser_guard.h"
#include "apiserver/custom_resources.h"
#include "apiserver/discovery.h"
#include "apiserver/encoding.h"
#include "apiserver/errors.h"
#include "apiserver/eviction.h"
#include "apiserver/impersonation.h"
#include "apiserver/list_stream.h"
#include "apiserver/negotiation.h"
#include "apiserver/object_history.h"
#include "apiserver/openapi_handler.h"
#include "apiserver/pod_exec.h"
#include "apiserver/pod_logs.h"
#include "apiserver/query_params.h"
#include "apiserver/rbac_policy.h"
#include "apiserver/registry/strategy.h"
#include "apiserver/request_info.h"
#include "apiserver/resource_metrics.h"
#include "apiserver/resource_store.h"
#include "apiserver/service_account_tokens.h"
#include "apiserver/service_allocation.h"
#include "apiserver/storage_health.h"
#include "apiserver/storage_versions.h"
#include "apiserver/watch_budget.h"
#include "apiserver/watch_sink.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/prometheus_text.h"
#include "base/strings.h"
#include "base/utf8.h"
#include "kubeletsim/control/control_client.h"
#include "net/http_server.h"
#include "net/url.h"
#include "objects/discovery_types.h"
#include "objects/endpoints_types.h"
#include "objects/machinery/fields.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/serializer.h"
#include "objects/time.h"
#include "objects/unstructured.h"

namespace kplane::apiserver {

namespace {

using MutableObject = std::unique_ptr<google::protobuf::Message>;

constexpr std::string_view kJson = "application/json";

template <typename T>
bool IsError(const ApiResult<T>& r) {
  return std::holds_alternative<ApiError>(r);
}

// The warnings a response carries, as kube-apiserver's warning recorder
// bounds them: each text once; when all of them come to more than 4,096
// characters, each is cut to 256 and they are sent until the 4,096 are
// used up (a custom resource with 280,000 unknown fields sent as many
// headers).
std::vector<std::string> BoundedWarnings(const std::vector<std::string>& all) {
  constexpr size_t kTotalRunes = 4 * 1024;
  constexpr size_t kItemRunes = 256;
  std::vector<std::string> out;
  std::unordered_set<std::string_view> seen;
  size_t total = 0;
  for (const std::string& w : all) {
    if (w.empty() || !seen.insert(w).second) continue;
    out.push_back(w);
    total += Utf8RuneCount(w);
  }
  if (total <= kTotalRunes) return out;
  std::vector<std::string> cut;
  total = 0;
  for (std::string& w : out) {
    w.resize(Utf8PrefixBytes(w, kItemRunes));
    const size_t n = Utf8RuneCount(w);
    if (total + n > kTotalRunes) break;
    total += n;
    cut.push_back(std::move(w));
  }
  return cut;
}

// `299 - "unknown field \"spec.foo\""`, as kube-apiserver writes warnings
// (k8s.io/apimachinery/pkg/util/net NewWarningHeader): the text quoted, '"'
// and '\\' escaped. A header value must never carry CR or LF (that would
// end the header and start another), and Kubernetes refuses control
// characters in warning text; the codec already writes field names quoted
// Go-style, so none should reach here, but whatever does is written as an
// escape (\r, \n, \t, \xHH for other controls and DEL) rather than
// dropped, so the warning still says which field it means.
std::string WarningHeader(std::string_view text) {
  std::string out = "299 - \"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\r') {
      out += "\\\\r";
    } else if (c == '\n') {
      out += "\\\\n";
    } else if (c == '\t') {
      out += "\\\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

// The verbs apiserver_request_total may carry (kube-apiserver's
// endpoints/metrics validRequestMethods); any other method a client sends
// is counted as "other", so the label's values are a fixed set.
std::string_view MetricVerb(std::string_view verb) {
  static constexpr std::string_view kVerbs[] = {
      "APPLY", "CONNECT", "CREATE", "DELETE",   "DELETECOLLECTION",
      "GET",   "LIST",    "PATCH",  "POST",     "PROXY",
      "PUT",   "UPDATE",  "WATCH",  "WATCHLIST"};
  for (std::string_view v : kVerbs) {
    if (v == verb) return v;
  }
  return "other";
}

bool HasVerb(const std::vector<std::string>& verbs, std::string_view v) {
  for (const std::string& s : verbs) {
    if (s == v) return true;
  }
  return false;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) {
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return out;
}

bool IsMutating(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" ||
         method == "DELETE";
}

struct Backend;

// One request in flight.
struct Call {
  std::shared_ptr<net::Responder> resp;
  RequestInfo info;
  std::string body;
  std::string verb_label = "GET";  // for metrics
  std::string scope_label;
  const objects::ResourceInfo* resource = nullptr;
  const objects::SubresourceInfo* sub = nullptr;
  Backend* backend = nullptr;
  // Keeps a custom resource's backend alive while the call runs (the CRD
  // may go meanwhile).
  std::shared_ptr<const void> keep;
  // The CustomResourceDefinition serving a custom resource; empty otherwise.
  std::string crd_name;
  Negotiated neg;
  bool negotiated = false;
  bool responded = false;
  bool rejected = false;         // body over the limit
  bool review = false;           // a SelfSubjectAccessReview, ... (POST)
  bool discovery_found = false;  // a discovery document was served
  std::string discovery_group;   // what it describes, for the metrics
  std::string discovery_version;
  TimePoint start;
  std::shared_ptr<void> inflight;  // released when the call is done
  auth::UserInfo user;  // who sent it (empty with authentication off)

  const net::HttpRequest& req() const { return resp->request(); }
};

struct Backend {
  const objects::ResourceInfo* info = nullptr;
  const Strategy* strategy = nullptr;
  std::unique_ptr<ObjectStore> store;
  std::unique_ptr<Cacher> cacher;
  std::unique_ptr<ResourceStore> rest;
  metrics::Counter* watch_events = nullptr;
};

// What one CustomResourceDefinition serves: a backend per served version,
// each with its own watch cache over the objects stored as the storage
// version. Destroyed when no snapshot and no call holds it any more.
struct CustomSet {
  std::unique_ptr<CustomResourceType> type;
  std::vector<std::unique_ptr<Backend>> backends;

  // Ends the caches (and with them their watches); idempotent.
  void Stop() {
    for (const auto& b : backends) b->cacher->Stop();
  }
};

// The custom resources served at one moment, replaced whole (copy on
// write) when CRDs change.
struct CustomSnapshot {
  std::map<std::string, std::shared_ptr<CustomSet>> by_crd;  // CRD name
  // "group/version/plural" of each served version.
  std::map<std::string, std::pair<Backend*, std::shared_ptr<CustomSet>>,
           std::less<>>
      by_key;
  std::vector<const objects::ResourceInfo*> resources;  // for discovery
};

// How a custom resource's store reads what it holds (NewBackend).
struct CustomStorage {
  // Pruning and defaulting on read (ObjectStoreOptions::on_decode).
  std::function<void(google::protobuf::Message*)> on_decode;
  // The CRD's other versions (ObjectStoreOptions::also_stored_as).
  std::vector<std::string> also_stored_as;
};

// An error as a JSON Status: for routes that negotiate no media type.
void RespondJsonError(const std::shared_ptr<net::Responder>& resp,
                      const ApiError& e) {
  resp->Respond(e.code, {{"Content-Type", std::string(kJson)}},
                RenderError(objects::MediaType::kJson, e));
}

}  // namespace

struct ApiServer::Impl {
  explicit Impl(ApiServerOptions o)
      : opts(std::move(o)), rand(std::random_device{}()) {}

  ApiServerOptions opts;
  std::unique_ptr<net::HttpServer> http;
  std::shared_ptr<const Discovery> discovery;  // atomic access
  std::vector<std::unique_ptr<Backend>> backends;
  std::map<std::string, Backend*, std::less<>> by_key;  // "g/v/resource"
  Backend* namespaces = nullptr;
  Backend* pods = nullptr;
  Backend* nodes = nullptr;
  // pods/log: streams from the kubelets (apiserver/pod_logs.h).
  std::unique_ptr<KubeletLogProxy> kubelet_logs;
  // pods/exec: WebSocket sessions to the kubelets (apiserver/pod_exec.h).
  std::unique_ptr<PodExecProxy> pod_exec;
  bool started = false;
  // How backends are made (BuildBackends; also for custom resources).
  CacherOptions cacher_options;
  ResourceStoreOptions rest_options;
  std::string server_address;  // for discovery documents

  // CustomResourceDefinitions (custom_resources.h, docs/api.md): the CRD
  // resource's backend, what the CRDs serve, and the controller that keeps
  // the two in step (one thread, woken by a watch of the CRD cache).
  Backend* crds = nullptr;
  mutable Mutex custom_mu;
  std::shared_ptr<const CustomSnapshot> custom GUARDED_BY(custom_mu);
  Mutex crd_mu;
  std::condition_variable crd_cv;
  bool crd_dirty GUARDED_BY(crd_mu) = true;
  bool crd_rewatch GUARDED_BY(crd_mu) = false;
  bool crd_stop GUARDED_BY(crd_mu) = false;
  std::unique_ptr<WatchHandle> crd_watch;  // the controller thread's
  std::thread crd_thread;
  // ParseCrd's result per CRD name, reused while the CRD's uid and
  // generation stay (the strategy counts every spec change in generation):
  // compiling the schemas was most of a reconcile, and every status write
  // starts one. The controller thread's.
  struct ParsedCrd {
    std::string uid;
    int64_t generation = 0;
    std::shared_ptr<const CrdDefinition> definition;
  };
  std::map<std::string, ParsedCrd> parsed_crds;
  // `crd` parsed, from parsed_crds when it has not changed; recorded in
  // `next` (the next parsed_crds).
  std::shared_ptr<const CrdDefinition> ParseCrdCached(
      const objects::Unstructured& crd, std::map<std::string, ParsedCrd>* next);
  // The store's health as /readyz reports it (kube's etcd check).
  std::unique_ptr<StorageHealth> storage_health;
  // Start's writes after the port listens, as kube's post-start hooks
  // that /readyz reports: the "kubernetes" Service and its endpoints
  // (bootstrap-controller), the bootstrap RBAC policy loaded
  // (rbac/bootstrap-roles; true at once without RBAC).
  std::atomic<bool> bootstrap_controller_done{false};
  std::atomic<bool> rbac_bootstrap_done{false};
  // serviceaccounts/<name>/token and the ServiceAccount authenticator.
  std::unique_ptr<ServiceAccountTokens> service_account_tokens;
  std::unique_ptr<Evictions> evictions;
  // metrics.k8s.io, computed from the pod and node caches.
  std::unique_ptr<MetricsApi> metrics_api;
  // Services' ClusterIPs and NodePorts (the services ResourceStore's
  // allocator).
  std::unique_ptr<ServiceAllocator> service_allocator;

  std::atomic<int> inflight_readonly{0};
  std::atomic<int> inflight_mutating{0};
  std::atomic<int> watches{0};
  Mutex rand_mu;
  std::mt19937_64 rand GUARDED_BY(rand_mu);

  metrics::Family<metrics::Counter>* m_requests = nullptr;
  metrics::Gauge* m_list_streams = nullptr;  // streamed LISTs alive
  metrics::Family<metrics::Histogram>* m_latency = nullptr;
  metrics::Family<metrics::Gauge>* m_inflight = nullptr;
  metrics::Family<metrics::Counter>* m_dropped = nullptr;
  metrics::Family<metrics::Gauge>* m_longrunning = nullptr;
  metrics::Family<metrics::Counter>* m_watch_events = nullptr;
  // All watches' unsent bytes (watch_budget.h); made in SetupMetrics.
  std::unique_ptr<WatchBufferBudget> watch_budget;

  // Authentication and authorization (opts.auth; all null when off).
  std::unique_ptr<auth::TokenFileAuthenticator> token_file;
  // The bearer-token authenticators in kube's order (the token file, then
  // ServiceAccount tokens): a token authenticator is added by appending it
  // here before SetupAuth() builds the chain, which borrows them.
  std::vector<const auth::TokenAuthenticator*> token_authenticators;
  std::unique_ptr<auth::AuthenticatorChain> authenticator;
  std::unique_ptr<auth::NodeAuthorizer> node_authorizer;
  std::unique_ptr<RbacPolicyCache> rbac_policy;   // with mode RBAC
  std::map<std::string, Backend*> rbac_backends;  // by resource

  Status SetupAuth();
  Status ReconcileBootstrapPolicy();
  // Who sent `req`: a verified certificate, a token or anonymous. An error
  // is a 401 to answer.
  StatusOr<auth::UserInfo> Authenticate(const net::HttpRequest& req) const;
  auth::Decision Authorize(const auth::Attributes& a,
                           std::string* reason) const;
  // Authenticates `req` into a->user and authorizes `*a`: the 401 or 403 to
  // answer, or nullopt. Admit, Guard and AdmitUi answer it each their way.
  // Kube's impersonation (impersonation.h): with Impersonate-* headers,
  // each part the requester must be allowed to `impersonate` (403
  // otherwise), then *user is the impersonated one.
  std::optional<ApiError> Impersonate(const net::HttpRequest& req,
                                      auth::UserInfo* user) const;
  std::optional<ApiError> AuthenticateAndAuthorize(const net::HttpRequest& req,
                                                   auth::Attributes* a) const;
  // Authenticates and authorizes `c` (HandleApi); false after answering 401
  // or 403.
  bool Admit(Call& c);
  // The same for the routes outside /api and /apis (/healthz, /version,
  // /metrics, ...), as non-resource requests.
  net::HttpHandler Guard(net::HttpHandler handler);
  // Without authentication, refuses what a browser may have been made to
  // send (browser_guard.h) before `handler`; with it, `handler` itself.
  net::HttpHandler BrowserGuarded(net::HttpHandler handler) const;
  // The web view's requests that stand for a resource request (the history
  // of one object, start/stop of a simulated node): authenticates `req`
  // and authorizes `a` (user filled in here); false after answering 401 or
  // 403.
  bool AdmitUi(const net::HttpRequest& req, auth::Attributes a,
               const std::shared_ptr<net::Responder>& resp);
  void ServeUiHistory(const net::HttpRequest& req,
                      std::shared_ptr<net::Responder> resp);
  void ServeUiNodeControl(const net::HttpRequest& req,
                          std::shared_ptr<net::Responder> resp);
  // The default NodeControl: the fleet's POST /nodes/<name>/stop|resume on
  // the node's kubelet endpoint (a simulated fleet serves it on the port
  // its nodes advertise), with the kubelet client context as pods/log.
  Status ControlNodeThroughKubelet(const std::string& name, bool stop);
  // Admission with the caller's identity, on the object about to be
  // stored: RBAC's escalation check for roles and bindings, and kube's
  // NodeRestriction for a node writing Node objects.
  std::optional<ApiError> AdmitWrite(
      const Call& c, const google::protobuf::Message& obj,
      const google::protobuf::Message* old = nullptr) const;

  void SetupMetrics();
  void BuildBackends();
  // A backend serving `served` over objects stored as `storage` under
  // <storage_prefix>/<key_group>/<plural>/ ("" = kube's built-in layout).
  std::unique_ptr<Backend> NewBackend(const objects::ResourceInfo& served,
                                      const objects::ResourceInfo& storage,
                                      const Strategy& strategy,
                                      const std::string& key_group,
                                      const CacherOptions& co,
                                      const ResourceStoreOptions& ro,
                                      CustomStorage custom = {});

  // CustomResourceDefinitions.
  std::shared_ptr<const CustomSnapshot> CurrentCustom() const {
    MutexLock l(&custom_mu);
    return custom;
  }
  // Sets c's resource and backend for a resource outside the Scheme (the
  // CRD resource, custom resources); false when nothing serves it.
  bool FindExtraResource(Call& c);
  // kube's 405 for a create of a custom resource whose CRD is being
  // deleted (its objects are being removed); nullopt otherwise.
  std::optional<ApiError> RefuseCreateWhileTerminating(const Call& c) const;
  void PublishDiscovery(std::shared_ptr<const CustomSnapshot> snapshot);
  void StartCrdController();
  void StopCrdController();
  void CrdControllerLoop();
  Status WatchCrds();
  void MarkCrdsDirty(bool rewatch);
  // One pass: serve what the CRDs say, write their status, empty and
  // release deleted ones. Returns whether something is left to retry.
  bool ReconcileCrds();
  StatusOr<std::shared_ptr<CustomSet>> BuildCustomSet(const CrdDefinition& d);
  // The backend of version `i` of `t` (its cache not started).
  std::unique_ptr<Backend> NewCustomBackend(const CustomResourceType& t,
                                            size_t i);
  // Deletes the custom resources of a CRD being deleted; true when none is
  // left.
  bool DeleteCustomResources(const CustomSet& set);
  Status CreateSystemNamespaces();
  // The `kubernetes` Service in default (the first IP of the range, 443 ->
  // our port) and its Endpoints (our address), as kube's
  // controlplane/reconcilers do at start.
  Status ReconcileKubernetesService(const std::string& host, int port);
  Status ReconcileKubernetesEndpointSlice(const std::string& host, int port);
  std::optional<ApiError> CheckNamespace(const objects::ResourceInfo& r,
                                         std::string_view name,
                                         std::string_view ns);
  std::shared_ptr<const Discovery> GetDiscovery() const {
    return std::atomic_load(&discovery);
  }

  // HTTP
  void RegisterRoutes();
  void HandleApi(const net::HttpRequest& req,
                 std::shared_ptr<net::Responder> resp);
  void HandleDiscovery(const std::shared_ptr<Call>& c);
  void ServeResourceMetrics(Call& c);
  void Process(const std::shared_ptr<Call>& c);
  // Reads the request body (up to the limit), then Process()es.
  void ReadBodyThenProcess(const std::shared_ptr<Call>& c);
  void Review(Call& c);
  // Takes a read-only or mutating in-flight slot for `c` (none for a
  // watch); answers 429 and returns false if none is free.
  bool TakeInflightSlot(Call& c);
  // One of max-(mutating-)requests-inflight's slots, held until the last
  // copy goes; null (counted as dropped) when none is free.
  std::shared_ptr<void> TakeSlot(bool mutating);
  static ApiError TooManyRequestsError();
  void Reply(Call& c, int code, std::string_view content_type, std::string body,
             const std::vector<std::string>& warnings = {});
  void ReplyError(Call& c, const ApiError& e);
  void Record(Call& c, int code);

  // Resource handlers.
  void Get(Call& c);
  void PodLog(const std::shared_ptr<Call>& c);
  void PodExec(const std::shared_ptr<Call>& c);
  // The kubelet of the pod's node, at the first address of
  // --kubelet-preferred-address-types the node reports (pods/log, pods/exec).
  ApiResult<KubeletEndpoint> KubeletEndpointOfPod(
      const objects::corev1::Pod& pod);
  void List(Call& c);
  void Watch(const std::shared_ptr<Call>& c);
  void Create(Call& c);
  void Update(Call& c);
  void Patch(Call& c);
  void Delete(Call& c);
  void DeleteCollection(Call& c);
  void Bind(Call& c);
  void CreateToken(Call& c);
  void Evict(Call& c);
  Status SetUpServiceAccountTokens();

  ApiResult<MutableObject> DecodeObject(Call& c, const objects::KindInfo& kind,
                                        FieldValidation validation,
                                        std::vector<std::string>* warnings);
  RenderOptions Render(const Call& c) const;
  WriteContext Context(Call& c, const WriteParams& p,
                       std::vector<std::string>* warnings) const;
  std::string Namespace(const Call& c) const {
    return c.resource != nullptr && c.resource->namespaced ? c.info.ns : "";
  }
};

// ---------------------------------------------------------------------------
// Setup

void ApiServer::Impl::SetupMetrics() {
  metrics::Registry* m = opts.metrics;
  m_requests = m->NewCounter(
      "apiserver_request_total",
      "Counter of apiserver requests broken out for each verb, group, "
      "version, resource, subresource, scope and HTTP response code.",
      {"verb", "group", "version", "resource", "subresource", "scope", "code"});
  m_latency = m->NewHistogram(
      "apiserver_request_duration_seconds",
      "Response latency distribution in seconds for each verb, group, "
      "version, resource, subresource and scope.",
      {"verb", "group", "version", "resource", "subresource", "scope"},
      metrics::DefaultLatencyBuckets());
  m_inflight = m->NewGauge("apiserver_current_inflight_requests",
                           "Requests in flight, by kind (readOnly, mutating).",
                           {"request_kind"});
  if (std::shared_ptr<KeptJsonBudget> b = opts.cacher.json_budget) {
    m->NewCallbackGauge(
        "apiserver_watch_cache_json_bytes",
        "Bytes of object JSON the watch caches keep (bounded by "
        "--watch-cache-json-max-bytes).",
        [b] { return static_cast<double>(b->used_bytes()); });
    m->NewCallbackCounter(
        "apiserver_watch_cache_json_refused_total",
        "Object versions that kept no JSON because the bound was reached "
        "(encoded on each read instead).",
        [b] { return static_cast<double>(b->refused()); });
  }
  m_dropped = m->NewCounter(
      "apiserver_dropped_requests_total",
      "Requests refused with 429 because of the in-flight limits.",
      {"request_kind"});
  m_list_streams =
      m->NewGauge("apiserver_list_streams_open",
                  "LIST responses being streamed: started and not yet "
                  "freed (finished, or the client went away).")
          ->With({});
  m_longrunning = m->NewGauge(
      "apiserver_longrunning_requests", "Open long-running requests (watches).",
      {"verb", "group", "version", "resource", "scope"});
  m_watch_events = m->NewCounter("apiserver_watch_events_total",
                                 "Watch events sent to clients, by kind.",
                                 {"group", "version", "kind"});
  watch_budget = std::make_unique<WatchBufferBudget>(
      opts.max_watch_buffer_total_bytes,
      m->NewCounter("apiserver_watch_buffer_budget_closed_watchers_total",
                    "Watches closed because all watches together held more "
                    "unsent bytes than --max-watch-buffer-total-bytes (the "
                    "ones holding the most).")
          ->With({}));
}

void ApiServer::Impl::BuildBackends() {
  const objects::Scheme& scheme = objects::Scheme::Default();
  CacherOptions& co = cacher_options;
  co = opts.cacher;
  co.clock = opts.clock;
  co.metrics = opts.metrics;
  co.max_pending_events = opts.max_watch_pending_events;
  co.max_pending_bytes = opts.max_watch_pending_bytes;
  // A quarter of the workers at most wait for a revision the caches have
  // not reached (CacherOptions::revision_waits).
  if (co.revision_waits == nullptr) {
    co.revision_waits = std::make_shared<RevisionWaitBudget>(
        std::max(1, opts.worker_threads / 4));
  }
  ResourceStoreOptions& ro = rest_options;
  ro.clock = opts.clock;
  ro.event_ttl_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(opts.event_ttl).count();
  ro.max_patched_bytes = opts.max_request_body_bytes;
  ro.namespace_check = [this](const objects::ResourceInfo& r,
                              std::string_view name, std::string_view ns) {
    return CheckNamespace(r, name, ns);
  };
  for (const auto& r : scheme.resources()) {
    if (r->list_kind == nullptr) continue;  // bindings: create-only
    const Strategy* strategy = &StrategyFor(*r);
    CacherOptions rco = co;
    if (r->gv.group.empty() && r->resource == "pods") {
      // Kubelets watch their own pods (fieldSelector=spec.nodeName=<node>):
      // index watchers by node so an event only visits its node's watches.
      rco.index_func = [strategy](const google::protobuf::Message& obj) {
        return strategy->FieldValue(obj, "spec.nodeName").value_or("");
      };
    }
    ResourceStoreOptions rro = ro;
    if (r->gv.group.empty() && r->resource == "services") {
      rro.allocator = service_allocator.get();
    }
    std::unique_ptr<Backend> b = NewBackend(*r, *r, *strategy, "", rco, rro);
    by_key[r->gv.group + "/" + r->gv.version + "/" + r->resource] = b.get();
    if (r->gv.group.empty() && r->resource == "namespaces") {
      namespaces = b.get();
    }
    if (r->gv.group.empty() && r->resource == "pods") pods = b.get();
    if (r->gv.group.empty() && r->resource == "nodes") nodes = b.get();
    if (r->gv.group == kRbacGroup) rbac_backends[r->resource] = b.get();
    backends.push_back(std::move(b));
  }
  CHECK(namespaces != nullptr && pods != nullptr);
  // CRDs are served from the start; stored where kube stores them
  // (/registry/apiextensions.k8s.io/customresourcedefinitions/).
  const objects::ResourceInfo& crd = CrdResource();
  // Members apiextensions.k8s.io/v1 does not define are dropped (and
  // reported for fieldValidation), as kube's typed decoding of CRDs does.
  ResourceStoreOptions crd_ro = ro;
  crd_ro.prune_unknown_fields = [](google::protobuf::Message* m) {
    return PruneUnknownCrdFields(static_cast<objects::Unstructured*>(m));
  };
  std::unique_ptr<Backend> b =
      NewBackend(crd, crd, CrdStrategy(), crd.gv.group, co, crd_ro);
  crds = b.get();
  by_key[crd.gv.group + "/" + crd.gv.version + "/" + crd.resource] = b.get();
  backends.push_back(std::move(b));
}

std::unique_ptr<Backend> ApiServer::Impl::NewBackend(
    const objects::ResourceInfo& served, const objects::ResourceInfo& storage,
    const Strategy& strategy, const std::string& key_group,
    const CacherOptions& co, const ResourceStoreOptions& ro,
    CustomStorage custom) {
  auto b = std::make_unique<Backend>();
  b->info = &served;
  b->strategy = &strategy;
  ObjectStoreOptions so;
  so.prefix = opts.storage_prefix;
  if (!key_group.empty()) so.prefix += "/" + key_group;
  so.clock = opts.clock;
  so.metrics = opts.metrics;
  // events.k8s.io/v1 events are core/v1 Events in the store
  // (storage_versions.h), encrypted as those.
  so.conversion = StorageConversionFor(served);
  const objects::ResourceInfo& stored_as =
      so.conversion != nullptr ? StoredResource(served) : storage;
  if (opts.encryption) {
    so.transformer =
        opts.encryption->For(stored_as.gv.group, stored_as.resource);
  }
  so.on_decode = std::move(custom.on_decode);
  so.also_stored_as = std::move(custom.also_stored_as);
  b->store = std::make_unique<ObjectStore>(opts.kv, &storage, so);
  b->cacher = std::make_unique<Cacher>(b->store.get(), co);
  b->rest = std::make_unique<ResourceStore>(
      &served, b->strategy, b->store.get(), b->cacher.get(), ro);
  b->watch_events = m_watch_events->With(
      {served.gv.group, served.gv.version, served.kind->kind});
  return b;
}

std::optional<ApiError> ApiServer::Impl::CheckNamespace(
    const objects::ResourceInfo& r, std::string_view name,
    std::string_view ns) {
  StatusOr<ObjectPtr> got = NotFoundError("");
  if (namespaces->cacher->ready()) got = namespaces->cacher->Get("", ns);
  if (!got.ok()) got = namespaces->store->Get("", ns, 0);
  if (!got.ok()) {
    if (got.status().Is(StatusCode::kNotFound)) {
      return ApiError::NotFound(*namespaces->info, ns);
    }
    return ApiError::FromStatus(got.status(), namespaces->info, ns);
  }
  const auto* nsobj =
      dynamic_cast<const objects::corev1::Namespace*>(got->get());
  const bool terminating =
      objects::IsBeingDeleted(*objects::GetObjectMeta(**got)) ||
      (nsobj != nullptr && nsobj->status().phase() == "Terminating");
  if (terminating) {
    ApiError e = ApiError::Forbidden(
        r, name,
        "unable to create new content in namespace " + std::string(ns) +
            " because it is being terminated");
    e.causes.push_back({"NamespaceTerminating",
                        "namespace " + std::string(ns) + " is terminating",
                        "metadata.namespace"});
    return e;
  }
  return std::nullopt;
}

Status ApiServer::Impl::CreateSystemNamespaces() {
  for (const char* name :
       {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    StatusOr<ObjectPtr> existing = namespaces->store->Get("", name, 0);
    if (existing.ok()) continue;
    if (!existing.status().Is(StatusCode::kNotFound)) return existing.status();
    auto ns = std::make_unique<objects::corev1::Namespace>();
    ns->mutable_metadata()->set_name(name);
    (*ns->mutable_metadata()->mutable_labels())["kubernetes.io/metadata.name"] =
        name;
    WriteContext ctx;
    ctx.field_manager = "kube-apiserver";
    ApiResult<WriteResult> r = namespaces->rest->Create("", std::move(ns), ctx);
    if (IsError(r) && std::get<ApiError>(r).code != 409) {
      return InternalError("creating namespace " + std::string(name) + ": " +
                           std::get<ApiError>(r).message);
    }
  }
  return Status::Ok();
}

Status ApiServer::Impl::ReconcileKubernetesService(const std::string& host,
                                                   int port) {
  Backend* services = by_key.at("/v1/services");
  Backend* endpoints = by_key.at("/v1/endpoints");
  WriteContext ctx;
  ctx.field_manager = "kube-apiserver";
  // The Service: created once; its port follows ours on every start.
  StatusOr<ObjectPtr> existing = services->store->Get("default", "kubernetes");
  if (!existing.ok() && !existing.status().Is(StatusCode::kNotFound)) {
    return existing.status();
  }
  auto svc = std::make_unique<objects::corev1::Service>();
  if (existing.ok()) {
    svc->CopyFrom(**existing);
  } else {
    svc->mutable_metadata()->set_name("kubernetes");
    svc->mutable_metadata()->set_namespace_("default");
    auto& labels = *svc->mutable_metadata()->mutable_labels();
    labels["component"] = "apiserver";
    labels["provider"] = "kubernetes";
    svc->mutable_spec()->set_type("ClusterIP");
    svc->mutable_spec()->set_sessionaffinity("None");
    svc->mutable_spec()->set_clusterip(service_allocator->FirstIP());
  }
  objects::corev1::ServicePort want;
  want.set_name("https");
  want.set_protocol("TCP");
  want.set_port(443);
  want.mutable_targetport()->set_intval(port);
  const bool port_ok =
      svc->spec().ports_size() == 1 &&
      svc->spec().ports(0).SerializeAsString() == want.SerializeAsString();
  if (!existing.ok() || !port_ok) {
    svc->mutable_spec()->clear_ports();
    *svc->mutable_spec()->add_ports() = want;
    ApiResult<WriteResult> r =
        existing.ok() ? services->rest->Update("default", "kubernetes", "",
                                               std::move(svc), ctx)
                      : services->rest->Create("default", std::move(svc), ctx);
    if (IsError(r) && std::get<ApiError>(r).code != 409) {
      return InternalError("reconciling the kubernetes Service: " +
                           std::get<ApiError>(r).message);
    }
  }
  // The Endpoints: our address, written to the store directly because it
  // is usually 127.0.0.1, which Endpoints validation refuses to clients
  // (kube-apiserver refuses a loopback --advertise-address instead).
  objects::corev1::Endpoints ep;
  ep.mutable_metadata()->set_name("kubernetes");
  ep.mutable_metadata()->set_namespace_("default");
  (*ep.mutable_metadata()
        ->mutable_labels())["endpointslice.kubernetes.io/skip-mirror"] = "true";
  auto* subset = ep.add_subsets();
  subset->add_addresses()->set_ip(host);
  auto* ep_port = subset->add_ports();
  ep_port->set_name("https");
  ep_port->set_port(port);
  ep_port->set_protocol("TCP");
  StatusOr<ObjectPtr> r = endpoints->store->GuaranteedUpdate(
      "default", "kubernetes", Preconditions{},
      [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
        auto next = std::make_unique<objects::corev1::Endpoints>(ep);
        auto* meta = next->mutable_metadata();
        if (cur != nullptr) {
          const auto& old =
              dynamic_cast<const objects::corev1::Endpoints&>(*cur);
          *meta = old.metadata();
          meta->clear_resourceversion();
          (*meta->mutable_labels())["endpointslice.kubernetes.io/skip-mirror"] =
              "true";
        } else {
          meta->set_uid(endpoints->rest->NewUid());
          objects::SetTime(meta->mutable_creationtimestamp(),
                           opts.clock->WallNow());
        }
        return next;
      },
      /*create_if_missing=*/true);
  RETURN_IF_ERROR(r.status());
  return ReconcileKubernetesEndpointSlice(host, port);
}

// kube's EndpointsAdapter (pkg/controlplane/reconcilers): the slice
// "kubernetes" mirrors the Endpoints, labelled with the Service's name only
// (no managed-by: the EndpointSlice controller leaves it alone). Written to
// the store directly for the same loopback reason.
Status ApiServer::Impl::ReconcileKubernetesEndpointSlice(
    const std::string& host, int port) {
  Backend* slices = by_key.at("discovery.k8s.io/v1/endpointslices");
  objects::discoveryv1::EndpointSlice want;
  want.set_addresstype(host.find(':') != std::string::npos ? "IPv6" : "IPv4");
  auto* endpoint = want.add_endpoints();
  endpoint->add_addresses(host);
  endpoint->mutable_conditions()->set_ready(true);
  auto* slice_port = want.add_ports();
  slice_port->set_name("https");
  slice_port->set_protocol("TCP");
  slice_port->set_port(port);
  StatusOr<ObjectPtr> r = slices->store->GuaranteedUpdate(
      "default", "kubernetes", Preconditions{},
      [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
        auto next = std::make_unique<objects::discoveryv1::EndpointSlice>(want);
        auto* meta = next->mutable_metadata();
        if (cur != nullptr) {
          *meta = dynamic_cast<const objects::discoveryv1::EndpointSlice&>(*cur)
                      .metadata();
          meta->clear_resourceversion();
        } else {
          meta->set_name("kubernetes");
          meta->set_namespace_("default");
          meta->set_generation(1);
          meta->set_uid(slices->rest->NewUid());
          objects::SetTime(meta->mutable_creationtimestamp(),
                           opts.clock->WallNow());
        }
        (*meta->mutable_labels())["kubernetes.io/service-name"] = "kubernetes";
        return next;
      },
      /*create_if_missing=*/true);
  return r.ok() ? Status::Ok() : r.status();
}

// ---------------------------------------------------------------------------
// Authentication and authorization

namespace {

constexpr std::string_view kAuthModes[] = {"Node", "RBAC", "AlwaysAllow",
                                           "AlwaysDeny"};

bool HasMode(const std::vector<std::string>& modes, std::string_view m) {
  return std::find(modes.begin(), modes.end(), m) != modes.end();
}

bool IsSystemMaster(const auth::UserInfo& u) {
  return std::find(u.groups.begin(), u.groups.end(), auth::kSystemMasters) !=
         u.groups.end();
}

// kube's 401 (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters
// .Unauthorized): only "Unauthorized", never why.
ApiError UnauthorizedError() {
  ApiError e;
  e.code = 401;
  e.reason = "Unauthorized";
  e.message = "Unauthorized";
  return e;
}

// responsewriters.ForbiddenStatusError: apierrors.NewForbidden of the
// request's group and resource, its name, and the authorizer's message.
ApiError ForbiddenError(const auth::Attributes& a, const std::string& reason) {
  ApiError e;
  e.code = 403;
  e.reason = "Forbidden";
  const std::string why = auth::ForbiddenMessage(a, reason);
  std::string qualified;
  if (a.resource_request && !a.resource.empty()) {
    qualified =
        a.api_group.empty() ? a.resource : a.resource + "." + a.api_group;
  }
  if (qualified.empty()) {
    e.message = "forbidden: " + why;
  } else if (a.name.empty()) {
    e.message = qualified + " is forbidden: " + why;
  } else {
    e.message = qualified + " " + GoQuote(a.name) + " is forbidden: " + why;
  }
  e.name = a.name;
  e.group = a.resource_request ? a.api_group : "";
  e.kind = a.resource_request ? a.resource : "";
  return e;
}

std::string LowerMethod(std::string_view method) { return ToLower(method); }

}  // namespace

Status ApiServer::Impl::SetupAuth() {
  const ApiServerAuthOptions& ao = opts.auth;
  if (!ao.enabled) return Status::Ok();
  for (const std::string& m : ao.authorization_modes) {
    if (std::find(std::begin(kAuthModes), std::end(kAuthModes), m) ==
        std::end(kAuthModes)) {
      return InvalidArgumentError("authorization-mode " + GoQuote(m) +
                                  " is not a valid mode");
    }
  }
  if (ao.authorization_modes.empty()) {
    return InvalidArgumentError(
        "at least one authorization-mode must be passed");
  }
  if (!ao.token_auth_file.empty()) {
    std::vector<std::string> warnings;
    FileSystem* fs = ao.fs != nullptr ? ao.fs : FileSystem::Default();
    ASSIGN_OR_RETURN(token_file, auth::TokenFileAuthenticator::Load(
                                     fs, ao.token_auth_file, &warnings));
    for (const std::string& w : warnings) LOG(WARNING) << w;
    token_authenticators.insert(token_authenticators.begin(), token_file.get());
  }
  authenticator = std::make_unique<auth::AuthenticatorChain>(
      auth::AuthenticatorChainOptions{
          .client_certs = true,
          .tokens = token_authenticators,
          .anonymous = ao.anonymous,
          // kube's --api-audiences default: the service account issuers.
          .api_audiences = opts.api_audiences.empty()
                               ? opts.service_account_issuers
                               : opts.api_audiences});
  if (HasMode(ao.authorization_modes, "RBAC")) {
    // Until its watches have their initial objects (Start, once the
    // bootstrap objects are written), RBAC answers from the compiled-in
    // bootstrap policy: the same roles and bindings the reconcile writes.
    auto bootstrap = std::make_shared<auth::StaticPolicy>();
    auth::AddBootstrapPolicy(bootstrap.get());
    rbac_policy = std::make_unique<RbacPolicyCache>(
        RbacPolicyCache::Caches{
            .roles = rbac_backends.at("roles")->cacher.get(),
            .cluster_roles = rbac_backends.at("clusterroles")->cacher.get(),
            .role_bindings = rbac_backends.at("rolebindings")->cacher.get(),
            .cluster_role_bindings =
                rbac_backends.at("clusterrolebindings")->cacher.get()},
        std::move(bootstrap));
  }
  if (HasMode(ao.authorization_modes, "Node")) {
    node_authorizer = std::make_unique<auth::NodeAuthorizer>(
        [this](std::string_view ns,
               std::string_view name) -> std::optional<std::string> {
          auto node_of = [this](const ObjectPtr& pod) {
            return pods->strategy->FieldValue(*pod, "spec.nodeName")
                .value_or("");
          };
          if (pods->cacher->ready()) {
            StatusOr<ObjectPtr> cached = pods->cacher->Get(ns, name);
            if (cached.ok()) return node_of(*cached);
          }
          StatusOr<ObjectPtr> stored = pods->store->Get(ns, name, 0);
          if (!stored.ok()) return std::nullopt;
          return node_of(*stored);
        });
  }
  return Status::Ok();
}

// As kube's RBAC post-start hook (ensure-initial-rbac): every bootstrap
// ClusterRole and ClusterRoleBinding that is missing is created; one that
// exists with autoupdate "true" gets the bootstrap rules (subjects) it
// lacks added (and the aggregationRule and aggregation labels it lacks);
// one with autoupdate "false" is left alone.
Status ApiServer::Impl::ReconcileBootstrapPolicy() {
  WriteContext ctx;
  ctx.field_manager = "kube-apiserver";
  auto reconcile =
      [&](Backend* b,
          std::unique_ptr<google::protobuf::Message> want) -> Status {
    const std::string name = objects::GetObjectMeta(*want)->name();
    StatusOr<ObjectPtr> existing = b->store->Get("", name, 0);
    if (!existing.ok() && !existing.status().Is(StatusCode::kNotFound)) {
      return existing.status();
    }
    if (!existing.ok()) {
      ApiResult<WriteResult> r = b->rest->Create("", std::move(want), ctx);
      if (IsError(r) && std::get<ApiError>(r).code != 409) {
        return InternalError("creating " + b->info->GroupResource() + " " +
                             name + ": " + std::get<ApiError>(r).message);
      }
      return Status::Ok();
    }
    const objects::metav1::ObjectMeta* meta =
        objects::GetObjectMeta(**existing);
    auto a = meta->annotations().find(kAutoupdateAnnotation);
    if (a != meta->annotations().end() && a->second == "false") {
      return Status::Ok();
    }
    std::unique_ptr<google::protobuf::Message> merged((*existing)->New());
    merged->CopyFrom(**existing);
    bool changed = false;
    if (auto* role = dynamic_cast<rbacv1::ClusterRole*>(merged.get())) {
      // Aggregation (admin, edit, view and the labelled roles they select)
      // is added to roles stored before it existed.
      const auto& want_role = static_cast<const rbacv1::ClusterRole&>(*want);
      if (want_role.has_aggregationrule() && !role->has_aggregationrule()) {
        *role->mutable_aggregationrule() = want_role.aggregationrule();
        changed = true;
      }
      for (const auto& [label, value] : want_role.metadata().labels()) {
        if (role->metadata().labels().count(label) == 0) {
          (*role->mutable_metadata()->mutable_labels())[label] = value;
          changed = true;
        }
      }
      for (const auto& rule :
           static_cast<const rbacv1::ClusterRole&>(*want).rules()) {
        bool present = false;
        for (const auto& have : role->rules()) {
          present =
              present || have.SerializeAsString() == rule.SerializeAsString();
        }
        if (!present) {
          *role->add_rules() = rule;
          changed = true;
        }
      }
    } else if (auto* binding =
                   dynamic_cast<rbacv1::ClusterRoleBinding*>(merged.get())) {
      for (const auto& subject :
           static_cast<const rbacv1::ClusterRoleBinding&>(*want).subjects()) {
        bool present = false;
        for (const auto& have : binding->subjects()) {
          present = present ||
                    have.SerializeAsString() == subject.SerializeAsString();
        }
        if (!present) {
          *binding->add_subjects() = subject;
          changed = true;
        }
      }
    }
    if (!changed) return Status::Ok();
    ApiResult<WriteResult> r =
        b->rest->Update("", name, "", std::move(merged), ctx);
    if (IsError(r)) {
      return InternalError("reconciling " + b->info->GroupResource() + " " +
                           name + ": " + std::get<ApiError>(r).message);
    }
    return Status::Ok();
  };
  for (const auth::Role& r : auth::BootstrapClusterRoles()) {
    RETURN_IF_ERROR(reconcile(
        rbac_backends.at("clusterroles"),
        std::make_unique<rbacv1::ClusterRole>(BootstrapClusterRoleToApi(r))));
  }
  for (const auth::RoleBinding& b : auth::BootstrapClusterRoleBindings()) {
    RETURN_IF_ERROR(reconcile(rbac_backends.at("clusterrolebindings"),
                              std::make_unique<rbacv1::ClusterRoleBinding>(
                                  BootstrapClusterRoleBindingToApi(b))));
  }
  return Status::Ok();
}

StatusOr<auth::UserInfo> ApiServer::Impl::Authenticate(
    const net::HttpRequest& req) const {
  auth::AuthnRequest ar;
  ar.authorization = req.headers.Get("Authorization");
  if (req.tls != nullptr && req.tls->peer_certificate) {
    if (!req.tls->peer_verified) {
      // kube's x509 authenticator: a certificate the CA did not sign is a
      // failed authentication, not anonymous; its union of authenticators
      // goes on to a bearer token, which then decides.
      if (!auth::BearerToken(ar.authorization).has_value()) {
        return Status(StatusCode::kUnauthenticated,
                      "x509: " + req.tls->peer_verify_error);
      }
      return authenticator->Authenticate(ar);
    }
    ar.client_cert =
        auth::ClientCertIdentity{.common_name = req.tls->peer.common_name,
                                 .organizations = req.tls->peer.organizations};
  }
  return authenticator->Authenticate(ar);
}

auth::Decision ApiServer::Impl::Authorize(const auth::Attributes& a,
                                          std::string* reason) const {
  // kube's privileged-group authorizer, before the configured modes. As
  // kube's union authorizer: the first allow (or deny) decides; when none
  // does, no opinion with every reason, which a request answers with 403
  // and a review with allowed false, not denied. None of the modes here
  // ever denies: Node and RBAC allow or have no opinion, and AlwaysDeny is
  // kube's, no opinion with "Everything is forbidden." (authorizerfactory).
  if (IsSystemMaster(a.user)) return auth::Decision::kAllow;
  std::string reasons;
  for (const std::string& mode : opts.auth.authorization_modes) {
    auth::Decision d = auth::Decision::kNoOpinion;
    std::string why;
    if (mode == "AlwaysAllow") {
      d = auth::Decision::kAllow;
    } else if (mode == "AlwaysDeny") {
      why = "Everything is forbidden.";
    } else if (mode == "Node" && node_authorizer != nullptr) {
      d = node_authorizer->Authorize(a, &why);
    } else if (mode == "RBAC" && rbac_policy != nullptr) {
      std::shared_ptr<const auth::StaticPolicy> policy = rbac_policy->Current();
      d = auth::RbacAuthorizer(policy.get()).Authorize(a, &why);
    }
    if (d != auth::Decision::kNoOpinion) {
      *reason = std::move(why);
      return d;
    }
    if (!why.empty()) {
      if (!reasons.empty()) reasons += ", ";
      reasons += why;
    }
  }
  *reason = std::move(reasons);
  return auth::Decision::kNoOpinion;
}

std::optional<ApiError> ApiServer::Impl::Impersonate(
    const net::HttpRequest& req, auth::UserInfo* user) const {
  StatusOr<std::optional<Impersonation>> imp = ParseImpersonation(req.headers);
  if (!imp.ok()) {
    // kube answers a malformed impersonation with an internal error.
    return ApiError::Internal(imp.status().message());
  }
  if (!imp->has_value()) return std::nullopt;
  for (const auth::Attributes& check : ImpersonationChecks(*user, **imp)) {
    std::string reason;
    if (Authorize(check, &reason) != auth::Decision::kAllow) {
      return ForbiddenError(check, reason);
    }
  }
  *user = ImpersonatedUser(**imp);
  return std::nullopt;
}

std::optional<ApiError> ApiServer::Impl::AuthenticateAndAuthorize(
    const net::HttpRequest& req, auth::Attributes* a) const {
  StatusOr<auth::UserInfo> who = Authenticate(req);
  if (!who.ok()) {
    LOG(INFO) << "Unable to authenticate the request: " << who.status();
    return UnauthorizedError();
  }
  a->user = std::move(*who);
  if (std::optional<ApiError> e = Impersonate(req, &a->user)) return e;
  std::string reason;
  if (Authorize(*a, &reason) != auth::Decision::kAllow) {
    return ForbiddenError(*a, reason);
  }
  return std::nullopt;
}

bool ApiServer::Impl::Admit(Call& c) {
  if (!opts.auth.enabled) return true;
  const RequestInfo& i = c.info;
  auth::Attributes a{
      .verb = i.is_resource_request ? i.verb : LowerMethod(c.req().method),
      .resource_request = i.is_resource_request,
      .api_group = i.group,
      .resource = i.resource,
      .subresource = i.subresource,
      .ns = i.ns,
      .name = i.name,
      .path = c.req().path};
  // kube's RequestInfo names the object of a list or watch whose field
  // selector requires metadata.name=<name> (a valid path segment), so a
  // role limited by resourceNames may list and watch that object (what
  // kube's documentation tells such users to do). Authorization only: the
  // request stays a list or watch.
  if (i.is_resource_request && a.name.empty() &&
      (i.verb == "list" || i.verb == "watch")) {
    if (StatusOr<machinery::FieldSelector> fs = machinery::FieldSelector::Parse(
            c.req().QueryParam("fieldSelector"));
        fs.ok()) {
      std::optional<std::string> name = fs->RequiresExactMatch("metadata.name");
      if (name && !name->empty() && *name != "." && *name != ".." &&
          name->find_first_of("/%") == std::string::npos) {
        a.name = *std::move(name);
      }
    }
  }
  // kube's RequestInfo scopes /api/v1/namespaces/<name> to the namespace
  // <name>: a RoleBinding there may grant reading its own Namespace.
  if (i.is_resource_request && i.group.empty() && i.resource == "namespaces" &&
      !i.name.empty()) {
    a.ns = i.name;
  }
  if (std::optional<ApiError> e = AuthenticateAndAuthorize(c.req(), &a)) {
    ReplyError(c, *e);
    return false;
  }
  // kube's AuthorizePodWebsocketUpgradeCreatePermission (on from 1.35;
  // 1.32 checked only `get`): the WebSocket GET of pods/exec also needs
  // `create`, as the SPDY POST always did, so `get` on everything does not
  // let a user run commands in pods.
  if (i.is_resource_request && i.group.empty() && i.resource == "pods" &&
      i.subresource == "exec" && a.verb == "get") {
    auth::Attributes create = a;
    create.verb = "create";
    std::string reason;
    if (Authorize(create, &reason) != auth::Decision::kAllow) {
      ReplyError(c, ForbiddenError(create, reason));
      return false;
    }
  }
  c.user = std::move(a.user);
  return true;
}

std::optional<ApiError> ApiServer::Impl::AdmitWrite(
    const Call& c, const google::protobuf::Message& obj,
    const google::protobuf::Message* old) const {
  const objects::ResourceInfo* r = c.resource;
  if (r == nullptr || IsSystemMaster(c.user)) return std::nullopt;
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  const std::string name = meta != nullptr ? meta->name() : "";
  const std::string ns = meta != nullptr ? meta->namespace_() : "";
  // An update or an apply that finds no object creates it: that needs
  // `create` too, as kube's update and patch handlers authorize it
  // (createAuthorizerAttributes). Without, `patch` on pods let a user make
  // any pod by applying it, and `update` on services any Service.
  if (old == nullptr && (c.info.verb == "update" || c.info.verb == "patch")) {
    auth::Attributes create{.user = c.user,
                            .verb = "create",
                            .resource_request = true,
                            .api_group = c.info.group,
                            .resource = c.info.resource,
                            .subresource = c.info.subresource,
                            .ns = c.info.ns,
                            .name = c.info.name,
                            .path = c.req().path};
    std::string reason;
    if (Authorize(create, &reason) != auth::Decision::kAllow) {
      return ForbiddenError(create, reason);
    }
  }
  // NodeRestriction: a node writes only its own Lease (a create names no
  // object when it is authorized, so the node authorizer lets any through).
  if (r->gv.group == "coordination.k8s.io" && r->resource == "leases") {
    std::optional<std::string> node = auth::NodeIdentity(c.user);
    if (node.has_value() && *node != name) {
      return ApiError::Forbidden(
          *r, name,
          "can only access node lease with the same name as the requesting "
          "node");
    }
    return std::nullopt;
  }
  if (r->gv.group.empty() && r->resource == "nodes") {
    std::optional<std::string> node = auth::NodeIdentity(c.user);
    if (node.has_value() && *node != name) {
      return ApiError::Forbidden(*r, name,
                                 "node " + GoQuote(*node) +
                                     " is not allowed to modify node " +
                                     GoQuote(name));
    }
    return std::nullopt;
  }
  if (r->gv.group != kRbacGroup || rbac_policy == nullptr) return std::nullopt;
  std::shared_ptr<const auth::StaticPolicy> policy = rbac_policy->Current();
  auto allowed = [&](const std::string& verb, const std::string& resource,
                     const std::string& scope_ns, const std::string& target) {
    std::string reason;
    return Authorize({.user = c.user,
                      .verb = verb,
                      .resource_request = true,
                      .api_group = kRbacGroup,
                      .resource = resource,
                      .ns = scope_ns,
                      .name = target},
                     &reason) == auth::Decision::kAllow;
  };
  std::vector<auth::PolicyRule> granted;
  if (const auto* role = dynamic_cast<const rbacv1::Role*>(&obj)) {
    if (allowed("escalate", r->resource, ns, name)) return std::nullopt;
    granted = RoleFromApi(*role).rules;
  } else if (const auto* crole =
                 dynamic_cast<const rbacv1::ClusterRole*>(&obj)) {
    if (allowed("escalate", r->resource, ns, name)) return std::nullopt;
    granted = RoleFromApi(*crole).rules;
    // An aggregation rule gathers the rules of whatever roles its selector
    // matches (cluster-admin's included), filled in by a controller that
    // may: setting one, or changing a role that has one, needs every
    // permission (kube's clusterrole policybased storage).
    const auto* old_role = dynamic_cast<const rbacv1::ClusterRole*>(old);
    if (crole->has_aggregationrule() ||
        (old_role != nullptr && old_role->has_aggregationrule())) {
      std::vector<std::string> errors;
      const std::vector<auth::PolicyRule> held =
          auth::RbacAuthorizer(policy.get()).RulesFor(c.user, "", &errors);
      const std::vector<auth::PolicyRule> everything = {
          {.verbs = {"*"}, .api_groups = {"*"}, .resources = {"*"}},
          {.verbs = {"*"}, .non_resource_urls = {"*"}}};
      if (EscalationError(c.user, held, everything, errors).has_value()) {
        return ApiError::Forbidden(
            *r, name,
            "must have cluster-admin privileges to use the "
            "aggregationRule");
      }
    }
  } else {
    auth::RoleBinding b;
    if (const auto* rb = dynamic_cast<const rbacv1::RoleBinding*>(&obj)) {
      b = BindingFromApi(*rb);
    } else if (const auto* crb =
                   dynamic_cast<const rbacv1::ClusterRoleBinding*>(&obj)) {
      b = BindingFromApi(*crb);
    } else {
      return std::nullopt;
    }
    const std::string role_resource =
        b.role_ref.cluster_role ? "clusterroles" : "roles";
    if (allowed("bind", role_resource, ns, b.role_ref.name)) {
      return std::nullopt;
    }
    const auth::Role* bound = b.role_ref.cluster_role
                                  ? policy->GetClusterRole(b.role_ref.name)
                                  : policy->GetRole(ns, b.role_ref.name);
    if (bound == nullptr) {
      return ApiError::Forbidden(*r, name,
                                 role_resource + "." + kRbacGroup + " " +
                                     GoQuote(b.role_ref.name) + " not found");
    }
    granted = bound->rules;
  }
  std::vector<std::string> errors;
  std::vector<auth::PolicyRule> held =
      auth::RbacAuthorizer(policy.get()).RulesFor(c.user, ns, &errors);
  if (std::optional<std::string> msg =
          EscalationError(c.user, held, granted, errors)) {
    return ApiError::Forbidden(*r, name, *msg);
  }
  return std::nullopt;
}

net::HttpHandler ApiServer::Impl::BrowserGuarded(
    net::HttpHandler handler) const {
  if (opts.auth.enabled) return handler;
  return [handler = std::move(handler)](const net::HttpRequest& req,
                                        std::shared_ptr<net::Responder> resp) {
    if (std::optional<std::string> why = UnauthenticatedBrowserRefusal(req)) {
      ApiError e;
      e.code = 403;
      e.reason = "Forbidden";
      e.message = *std::move(why);
      RespondJsonError(resp, e);
      return;
    }
    handler(req, std::move(resp));
  };
}

net::HttpHandler ApiServer::Impl::Guard(net::HttpHandler handler) {
  if (!opts.auth.enabled) return BrowserGuarded(std::move(handler));
  return
      [this, handler = std::move(handler)](
          const net::HttpRequest& req, std::shared_ptr<net::Responder> resp) {
        auth::Attributes a{.verb = LowerMethod(req.method), .path = req.path};
        if (std::optional<ApiError> e = AuthenticateAndAuthorize(req, &a)) {
          RespondJsonError(resp, *e);
          return;
        }
        handler(req, std::move(resp));
      };
}

// ---------------------------------------------------------------------------
// Replies and metrics

void ApiServer::Impl::Record(Call& c, int code) {
  // Labels name only what the server resolved: a resource it serves (and a
  // subresource of it), or a discovery document it has. A request for
  // anything else is counted with empty group, version and resource, so
  // 20,000 requests to /apis/<random>/v1 make one series, not 20,000
  // (kube-apiserver counts only requests that reached a route it installed).
  std::string group, version, resource, subresource;
  if (c.resource != nullptr) {
    group = c.resource->gv.group;
    version = c.resource->gv.version;
    resource = c.resource->resource;
    if (c.sub != nullptr) subresource = c.sub->name;
  } else if (c.discovery_found) {
    group = c.discovery_group;
    version = c.discovery_version;
  }
  const std::vector<std::string> labels = {
      std::string(MetricVerb(c.verb_label)),
      group,
      version,
      resource,
      subresource,
      c.scope_label};
  std::vector<std::string> with_code = labels;
  with_code.push_back(std::to_string(code));
  m_requests->With(with_code)->Inc();
  const double secs =
      std::chrono::duration<double>(opts.clock->Now() - c.start).count();
  m_latency->With(labels)->Observe(secs);
}

void ApiServer::Impl::Reply(Call& c, int code, std::string_view content_type,
                            std::string body,
                            const std::vector<std::string>& warnings) {
  if (c.responded) return;
  c.responded = true;
  net::HttpHeaders h;
  h.Add("Content-Type", std::string(content_type));
  for (const std::string& w : BoundedWarnings(warnings)) {
    h.Add("Warning", WarningHeader(w));
  }
  // Counted before the response can reach the client, so a client that has
  // its answer finds it in /metrics.
  Record(c, code);
  // The in-flight slot too is freed before the client can have its answer:
  // a client that sends its next write on receiving this one must find the
  // slot free (ApiRestTest.TooManyRequestsWhenOverTheInflightLimit).
  c.inflight.reset();
  c.resp->Respond(code, std::move(h), std::move(body));
}

void ApiServer::Impl::ReplyError(Call& c, const ApiError& e) {
  if (c.responded) return;
  c.responded = true;
  objects::MediaType media = objects::MediaType::kJson;
  if (c.negotiated && c.neg.shape == ResponseShape::kObject &&
      c.neg.media == objects::MediaType::kProtobuf) {
    media = objects::MediaType::kProtobuf;
  }
  net::HttpHeaders h;
  h.Add("Content-Type", std::string(objects::MediaTypeName(media)));
  if (e.retry_after_seconds > 0) {
    h.Add("Retry-After", std::to_string(e.retry_after_seconds));
  }
  for (const auto& [k, v] : e.headers) h.Add(k, v);
  Record(c, e.code);   // before the response, as in Reply
  c.inflight.reset();  // likewise
  c.resp->Respond(e.code, std::move(h), RenderError(media, e));
}

RenderOptions ApiServer::Impl::Render(const Call& c) const {
  RenderOptions o;
  o.negotiated = c.neg;
  o.resource = c.resource;
  o.strategy = c.backend != nullptr ? c.backend->strategy : nullptr;
  o.include_object = std::string(c.req().QueryParam("includeObject"));
  o.now = opts.clock->WallNow();
  return o;
}

WriteContext ApiServer::Impl::Context(
    Call& c, const WriteParams& p, std::vector<std::string>* warnings) const {
  WriteContext ctx;
  ctx.dry_run = p.dry_run;
  ctx.field_manager =
      p.field_manager.empty() ? DefaultFieldManager(c.req()) : p.field_manager;
  ctx.field_validation = p.field_validation;
  ctx.force = p.force;
  ctx.warnings = warnings;
  if (opts.auth.enabled) {
    ctx.admit = [this, &c](const google::protobuf::Message& obj,
                           const google::protobuf::Message* old) {
      return AdmitWrite(c, obj, old);
    };
  }
  return ctx;
}

// ---------------------------------------------------------------------------
// Dispatch

void ApiServer::Impl::RegisterRoutes() {
  net::RouteOptions body_streamed;
  body_streamed.stream_request_body = true;
  net::HttpHandler api =
      BrowserGuarded([this](const net::HttpRequest& req,
                            std::shared_ptr<net::Responder> resp) {
        HandleApi(req, std::move(resp));
      });
  http->Handle("", "/api", api, body_streamed);
  http->HandlePrefix("", "/api/", api, body_streamed);
  http->Handle("", "/apis", api, body_streamed);
  http->HandlePrefix("", "/apis/", api, body_streamed);

  auto json = [](std::shared_ptr<net::Responder> resp, int code,
                 std::string body) {
    resp->Respond(code, {{"Content-Type", std::string(kJson)}},
                  std::move(body));
  };
  auto not_found = [](const net::HttpRequest&,
                      std::shared_ptr<net::Responder> resp) {
    RespondJsonError(resp, ApiError::NotFoundPath());
  };
  // Every route outside /api and /apis is a non-resource request to
  // authenticate and authorize (Guard) before its handler runs.
  auto handle = [this](std::string method, std::string path, net::HttpHandler h,
                       net::RouteOptions o = {}) {
    http->Handle(std::move(method), std::move(path), Guard(std::move(h)), o);
  };
  auto handle_prefix = [this](std::string method, std::string path,
                              net::HttpHandler h) {
    http->HandlePrefix(std::move(method), std::move(path), Guard(std::move(h)));
  };
  handle_prefix("", "/", not_found);
  handle("GET", "/",
         [this, json](const net::HttpRequest&,
                      std::shared_ptr<net::Responder> resp) {
           auto d = GetDiscovery();
           json(resp, 200, d ? d->RootPaths() : "{}");
         });
  handle("GET", "/version",
         [this, json](const net::HttpRequest&,
                      std::shared_ptr<net::Responder> resp) {
           auto d = GetDiscovery();
           if (d == nullptr) {
             json(resp, 503, "{}");
             return;
           }
           json(resp, 200, d->Version());
         });
  // /openapi/v2, /openapi/v3 and its group-version documents: ETags, 304s,
  // immutable ?hash= URLs (apiserver/openapi_handler.h).
  auto openapi = [this](const net::HttpRequest& req,
                        std::shared_ptr<net::Responder> resp) {
    auto d = GetDiscovery();
    if (d == nullptr) {
      resp->Respond(503, {{"Content-Type", std::string(kJson)}}, "{}");
      return;
    }
    net::HttpResponse r =
        ServeOpenApi(d->OpenApi(), req, opts.clock->WallNow());
    resp->Respond(r.status, std::move(r.headers), std::move(r.body));
  };
  handle("GET", "/openapi/v2", openapi);
  handle("GET", "/openapi/v3", openapi);
  handle_prefix("GET", "/openapi/v3/", openapi);
  auto plain_ok = [](const net::HttpRequest&,
                     std::shared_ptr<net::Responder> resp) {
    resp->Respond(200, {{"Content-Type", "text/plain; charset=utf-8"}}, "ok");
  };
  net::RouteOptions io;
  io.run_on_io_thread = true;
  handle("GET", "/healthz", plain_ok, io);
  handle("GET", "/livez", plain_ok, io);
  handle(
      "GET", "/readyz",
      [this](const net::HttpRequest& req,
             std::shared_ptr<net::Responder> resp) {
        std::string failed;
        for (const auto& b : backends) {
          if (!b->cacher->ready()) {
            failed += failed.empty() ? "" : ",";
            failed += b->info->GroupResource();
          }
        }
        Status etcd = storage_health ? storage_health->Check()
                                     : UnavailableError("not started");
        std::string etcd_line =
            etcd.ok() ? "[+]etcd ok\n"
                      : "[-]etcd failed: " + etcd.message() + "\n";
        std::string sync_line =
            failed.empty()
                ? "[+]informer-sync ok\n"
                : "[-]informer-sync failed: waiting for " + failed + "\n";
        // The post-start hooks, named as kube-apiserver's.
        const std::pair<const char*, bool> hooks[] = {
            {"poststarthook/rbac/bootstrap-roles", rbac_bootstrap_done.load()},
            {"poststarthook/bootstrap-controller",
             bootstrap_controller_done.load()},
        };
        std::string hook_lines, failed_hook_lines;
        bool hooks_done = true;
        for (const auto& [name, done] : hooks) {
          std::string line = std::string(done ? "[+]" : "[-]") + name +
                             (done ? " ok\n" : " failed: not finished\n");
          hook_lines += line;
          if (!done) failed_hook_lines += line;
          hooks_done = hooks_done && done;
        }
        const bool ready = failed.empty() && etcd.ok() && hooks_done;
        std::string body;
        if (req.HasQueryParam("verbose")) {
          body = "[+]ping ok\n" + etcd_line + sync_line + hook_lines;
          body += ready ? "readyz check passed\n" : "readyz check failed\n";
        } else if (ready) {
          body = "ok";
        } else {
          // As kube-apiserver: the failed checks, then the verdict.
          if (!etcd.ok()) body += etcd_line;
          if (!failed.empty()) body += sync_line;
          body += failed_hook_lines;
          body += "readyz check failed";
        }
        resp->Respond(ready ? 200 : 500,
                      {{"Content-Type", "text/plain; charset=utf-8"}},
                      std::move(body));
      },
      io);
  // The web view (issue 21, docs/ui.md): its static files are public
  // (system:public-info-viewer names them), its data comes from the API
  // with the user's token; the store panel needs `get` on its path.
  handle("GET", "/ui", ServeUiAsset, io);
  handle_prefix("GET", "/ui/", ServeUiAsset);
  handle("GET", "/ui/api/store",
         [this](const net::HttpRequest&, std::shared_ptr<net::Responder> resp) {
           std::vector<StoreMemberReport> members;
           if (opts.store_status) {
             members = opts.store_status();
           } else {
             members.push_back(
                 {.endpoint = "", .status = opts.kv->MemberStatus()});
           }
           net::HttpHeaders h = UiSecurityHeaders();
           h.Add("Content-Type", std::string(kJson));
           h.Add("Cache-Control", "no-store");
           resp->Respond(200, std::move(h), StoreStatusJson(members));
         });
  // The history of one object and start/stop of a simulated node are
  // authorized as the resource requests they stand for (AdmitUi), not as
  // non-resource URLs.
  http->Handle("GET", "/ui/api/history",
               BrowserGuarded([this](const net::HttpRequest& req,
                                     std::shared_ptr<net::Responder> resp) {
                 ServeUiHistory(req, std::move(resp));
               }));
  http->HandlePrefix(
      "POST", "/ui/api/nodes/",
      BrowserGuarded([this](const net::HttpRequest& req,
                            std::shared_ptr<net::Responder> resp) {
        ServeUiNodeControl(req, std::move(resp));
      }));
  handle("GET", "/metrics",
         [this](const net::HttpRequest&, std::shared_ptr<net::Responder> resp) {
           resp->Respond(
               200, {{"Content-Type", metrics::kTextFormatContentTypeUtf8}},
               opts.metrics->Render());
         });
}

namespace {

void RespondUiJson(const std::shared_ptr<net::Responder>& resp, int code,
                   std::string body) {
  net::HttpHeaders h = UiSecurityHeaders();
  h.Add("Content-Type", std::string(kJson));
  h.Add("Cache-Control", "no-store");
  resp->Respond(code, std::move(h), std::move(body));
}

void RespondUiError(const std::shared_ptr<net::Responder>& resp,
                    const ApiError& e) {
  RespondUiJson(resp, e.code, RenderError(objects::MediaType::kJson, e));
}

}  // namespace

bool ApiServer::Impl::AdmitUi(const net::HttpRequest& req, auth::Attributes a,
                              const std::shared_ptr<net::Responder>& resp) {
  if (!opts.auth.enabled) return true;
  a.resource_request = true;
  a.path = req.path;
  if (std::optional<ApiError> e = AuthenticateAndAuthorize(req, &a)) {
    RespondUiError(resp, *e);
    return false;
  }
  return true;
}

void ApiServer::Impl::ServeUiHistory(const net::HttpRequest& req,
                                     std::shared_ptr<net::Responder> resp) {
  const std::string group(req.QueryParam("group"));
  const std::string version(req.QueryParam("version"));
  const std::string resource(req.QueryParam("resource"));
  const std::string name(req.QueryParam("name"));
  std::string ns(req.QueryParam("namespace"));
  if (version.empty() || resource.empty() || name.empty()) {
    RespondUiError(
        resp, ApiError::BadRequest("version, resource and name are required"));
    return;
  }
  const objects::ResourceInfo* r =
      objects::Scheme::Default().FindResource(group, version, resource);
  if (r != nullptr && !r->namespaced) ns.clear();
  // Authorized exactly as GET of the object would be, before anything
  // about it (even whether its resource exists) is answered.
  if (!AdmitUi(req,
               {.verb = "get",
                .api_group = group,
                .resource = resource,
                .ns = ns,
                .name = name},
               resp)) {
    return;
  }
  auto bit =
      r != nullptr
          ? by_key.find(r->gv.group + "/" + r->gv.version + "/" + r->resource)
          : by_key.end();
  if (bit == by_key.end()) {
    RespondUiError(resp, ApiError::NotFoundPath());
    return;
  }
  if (r->namespaced && ns.empty()) {
    RespondUiError(
        resp, ApiError::BadRequest("namespace is required for " + r->resource));
    return;
  }
  int limit = kMaxHistoryVersions;
  if (req.HasQueryParam("limit")) {
    std::optional<int64_t> l = ParseInt64(req.QueryParam("limit"));
    if (!l.has_value() || *l < 1) {
      RespondUiError(resp,
                     ApiError::BadRequest("limit must be a positive integer"));
      return;
    }
    limit = static_cast<int>(std::min<int64_t>(*l, kMaxHistoryVersions));
  }
  // A replay of the store's retained history (up to seconds) on a worker:
  // it counts against max-requests-inflight as any read.
  std::shared_ptr<void> slot = TakeSlot(/*mutating=*/false);
  if (slot == nullptr) {
    RespondUiError(resp, TooManyRequestsError());
    return;
  }
  StatusOr<ObjectHistory> h =
      ReadObjectHistory(*bit->second->store, ns, name, limit);
  if (!h.ok()) {
    RespondUiError(resp, ApiError::FromStatus(h.status(), r, name));
    return;
  }
  RespondUiJson(resp, 200, ObjectHistoryJson(*h));
}

void ApiServer::Impl::ServeUiNodeControl(const net::HttpRequest& req,
                                         std::shared_ptr<net::Responder> resp) {
  // /ui/api/nodes/<name>/stop or /resume
  std::string_view rest = req.path;
  rest.remove_prefix(std::string_view("/ui/api/nodes/").size());
  const size_t slash = rest.find('/');
  const std::string name(rest.substr(0, slash));
  const std::string_view action =
      slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (name.empty() || (action != "stop" && action != "resume")) {
    RespondUiError(resp, ApiError::NotFoundPath());
    return;
  }
  // Stopping a node's kubelet is an operation on the kubelet: kube
  // authorizes the kubelet's API as the `proxy` subresource of its Node,
  // which only cluster-admin holds among the default roles (not `edit`,
  // not `admin`, and not a node itself).
  if (!AdmitUi(req,
               {.verb = "create",
                .resource = "nodes",
                .subresource = "proxy",
                .name = name},
               resp)) {
    return;
  }
  std::shared_ptr<void> slot = TakeSlot(/*mutating=*/true);
  if (slot == nullptr) {
    RespondUiError(resp, TooManyRequestsError());
    return;
  }
  Status s = opts.node_control
                 ? opts.node_control(name, action == "stop")
                 : ControlNodeThroughKubelet(name, action == "stop");
  if (s.Is(StatusCode::kNotFound)) {
    ApiError e = ApiError::NotFoundPath();
    e.message = "no simulated node " + GoQuote(name);
    RespondUiError(resp, e);
    return;
  }
  if (!s.ok()) {
    ApiError e = ApiError::ServiceUnavailable(
        "the simulated nodes' control endpoint: " + s.ToString());
    RespondUiError(resp, e);
    return;
  }
  rapidjson::StringBuffer body;
  rapidjson::Writer<rapidjson::StringBuffer> w(body);
  w.StartObject();
  w.Key("node");
  w.String(name.data(), name.size());
  w.Key("stopped");
  w.Bool(action == "stop");
  w.EndObject();
  RespondUiJson(resp, 200, body.GetString());
}

Status ApiServer::Impl::ControlNodeThroughKubelet(const std::string& name,
                                                  bool stop) {
  ApiResult<ObjectPtr> node = nodes->rest->Get("", name, "");
  if (IsError(node)) {
    const ApiError& e = std::get<ApiError>(node);
    return e.code == 404 ? NotFoundError(e.message)
                         : UnavailableError(e.message);
  }
  ApiResult<KubeletEndpoint> ep = KubeletEndpointFor(
      static_cast<const objects::corev1::Node&>(*std::get<ObjectPtr>(node)),
      opts.kubelet_preferred_address_types);
  if (IsError(ep)) {
    return FailedPreconditionError(std::get<ApiError>(ep).message);
  }
  const KubeletEndpoint& at = std::get<KubeletEndpoint>(ep);
  const net::Url kubelet{.host = at.host, .port = at.port};
  ASSIGN_OR_RETURN(kubeletsim::ControlClient client,
                   kubeletsim::ControlClient::New(
                       std::string(opts.kubelet_tls ? "https://" : "http://") +
                           kubelet.HostPort(),
                       opts.kubelet_tls));
  return stop ? client.StopNode(name) : client.ResumeNode(name);
}

void ApiServer::Impl::HandleApi(const net::HttpRequest& req,
                                std::shared_ptr<net::Responder> resp) {
  auto c = std::make_shared<Call>();
  c->resp = resp;
  c->start = opts.clock->Now();
  c->verb_label = req.method;
  StatusOr<RequestInfo> info = ParseRequestInfo(req);
  if (!info.ok()) {
    ReplyError(*c, ApiError::BadRequest(info.status().message()));
    return;
  }
  c->info = std::move(*info);
  if (!Admit(*c)) return;
  if (!c->info.is_resource_request) {
    HandleDiscovery(c);
    return;
  }
  const RequestInfo& i = c->info;
  c->scope_label = !i.name.empty() ? "resource"
                   : !i.ns.empty() ? "namespace"
                                   : "cluster";
  static const std::map<std::string, std::string, std::less<>> kVerbLabels = {
      {"get", "GET"},       {"list", "LIST"},
      {"watch", "WATCH"},   {"create", "POST"},
      {"update", "PUT"},    {"patch", "PATCH"},
      {"delete", "DELETE"}, {"deletecollection", "DELETECOLLECTION"}};
  auto vl = kVerbLabels.find(i.verb);
  c->verb_label = vl != kVerbLabels.end() ? vl->second : Upper(i.verb);
  if (i.verb == "patch" &&
      ParsePatchType(req.headers.Get("Content-Type")) == PatchType::kApply) {
    c->verb_label = "APPLY";
  }
  if (i.group == kMetricsGroup) {
    ServeResourceMetrics(*c);
    return;
  }

  if (ReviewKind(i.group, i.version, i.resource) != nullptr &&
      i.verb == "create" && i.name.empty() && i.subresource.empty() &&
      (i.ns.empty() == (i.resource != "localsubjectaccessreviews"))) {
    c->review = true;
    ReadBodyThenProcess(c);
    return;
  }
  const objects::ResourceInfo* r =
      objects::Scheme::Default().FindResource(i.group, i.version, i.resource);
  if (r != nullptr) {
    c->resource = r;
    auto bit =
        by_key.find(r->gv.group + "/" + r->gv.version + "/" + r->resource);
    c->backend = bit != by_key.end() ? bit->second : pods;  // bindings -> pods
  } else if (FindExtraResource(*c)) {
    r = c->resource;
  } else {
    ReplyError(*c, ApiError::NotFoundPath());
    return;
  }
  // Scope: namespaced resources need a namespace except for list/watch
  // across namespaces; cluster-scoped ones have none.
  if (r->namespaced && i.ns.empty()) {
    if (!i.name.empty()) {
      ReplyError(*c, ApiError::NotFoundPath());
      return;
    }
    if (i.verb != "list" && i.verb != "watch") {
      ApiError e = ApiError::MethodNotAllowed(req.method, r->resource);
      e.message =
          "the server does not allow this method on the requested "
          "resource";
      ReplyError(*c, e);
      return;
    }
  }
  if (!r->namespaced && !i.ns.empty()) {
    ReplyError(*c, ApiError::NotFoundPath());
    return;
  }
  std::vector<std::string> verbs = r->verbs;
  if (!i.subresource.empty()) {
    c->sub = r->FindSubresource(i.subresource);
    if (c->sub == nullptr || i.name.empty()) {
      ReplyError(*c, ApiError::NotFoundPath());
      return;
    }
    verbs = c->sub->verbs;
  }
  const std::string& verb = i.verb;
  const bool allowed =
      HasVerb(verbs, verb) &&
      // POST to a named object is only for subresources (binding).
      !(verb == "create" && !i.name.empty() && i.subresource.empty()) &&
      !((verb == "update" || verb == "patch") && i.name.empty());
  if (!allowed) {
    ApiError e = ApiError::MethodNotAllowed(req.method, r->resource);
    e.message =
        "the server does not allow this method on the requested resource";
    ReplyError(*c, e);
    return;
  }
  if (std::optional<ApiError> e = RefuseCreateWhileTerminating(*c)) {
    ReplyError(*c, *e);
    return;
  }

  ReadBodyThenProcess(c);
}

void ApiServer::Impl::ReadBodyThenProcess(const std::shared_ptr<Call>& c) {
  const net::HttpRequest& req = c->req();
  const std::string_view cl = req.headers.Get("Content-Length");
  const bool has_body =
      req.headers.Has("Transfer-Encoding") || (!cl.empty() && cl != "0");
  if (!has_body) {
    if (TakeInflightSlot(*c)) Process(c);
    return;
  }
  const size_t limit = opts.max_request_body_bytes;
  std::optional<int64_t> declared = ParseInt64(cl);
  if (declared && *declared > static_cast<int64_t>(limit)) {
    ReplyError(*c, ApiError::RequestEntityTooLarge(limit));
    return;
  }
  c->resp->OnBodyData([this, c, limit](std::string_view data, bool eof) {
    if (c->rejected || c->responded) return;
    c->body.append(data);
    if (c->body.size() > limit) {
      c->rejected = true;
      c->body.clear();
      ReplyError(*c, ApiError::RequestEntityTooLarge(limit));
      return;
    }
    if (eof && TakeInflightSlot(*c)) Process(c);
  });
}

// The slot is taken once the whole body is here, so a client trickling a
// body in holds none (the net layer's body timeout ends it, with 408).
std::shared_ptr<void> ApiServer::Impl::TakeSlot(bool mutating) {
  std::atomic<int>& counter = mutating ? inflight_mutating : inflight_readonly;
  const int limit = mutating ? opts.max_mutating_requests_inflight
                             : opts.max_requests_inflight;
  const char* kind = mutating ? "mutating" : "readOnly";
  if (counter.fetch_add(1) >= limit) {
    counter.fetch_sub(1);
    m_dropped->With({kind})->Inc();
    return nullptr;
  }
  metrics::Gauge* g = m_inflight->With({kind});
  g->Inc();
  // Non-null (its deleter releases the slot): a dummy address.
  return std::shared_ptr<void>(&counter, [&counter, g](void*) {
    counter.fetch_sub(1);
    g->Dec();
  });
}

ApiError ApiServer::Impl::TooManyRequestsError() {
  return ApiError::TooManyRequests("Too many requests, please try again later.",
                                   1);
}

bool ApiServer::Impl::TakeInflightSlot(Call& c) {
  if (c.info.verb == "watch") return true;
  c.inflight = TakeSlot(IsMutating(c.req().method));
  if (c.inflight == nullptr) {
    ReplyError(c, TooManyRequestsError());
    return false;
  }
  return true;
}

void ApiServer::Impl::HandleDiscovery(const std::shared_ptr<Call>& c) {
  const net::HttpRequest& req = c->req();
  auto d = GetDiscovery();
  if (d == nullptr) {
    ReplyError(*c, ApiError::ServiceUnavailable("the server is starting"));
    return;
  }
  if (req.method != "GET" && req.method != "HEAD") {
    ApiError e = ApiError::MethodNotAllowed(req.method, "");
    e.kind.clear();
    e.message =
        "the server does not allow this method on the requested resource";
    ReplyError(*c, e);
    return;
  }
  const std::vector<std::string>& p = c->info.parts;
  const std::string_view accept = req.headers.Get("Accept");
  const std::string* body = nullptr;
  std::string_view content_type = kJson;
  if (p.size() == 1 && p[0] == "api") {
    if (WantsAggregatedDiscovery(accept)) {
      body = &d->AggregatedCore();
      content_type = kAggregatedDiscoveryContentType;
    } else {
      body = &d->ApiVersions();
    }
  } else if (p.size() == 1 && p[0] == "apis") {
    if (WantsAggregatedDiscovery(accept)) {
      body = &d->AggregatedGroups();
      content_type = kAggregatedDiscoveryContentType;
    } else {
      body = &d->ApiGroupList();
    }
  } else if (p.size() == 2 && p[0] == "api") {
    body = d->ResourceList("", p[1]);
  } else if (p.size() == 2 && p[0] == "apis") {
    body = d->ApiGroup(p[1]);
  } else if (p.size() == 3 && p[0] == "apis") {
    body = d->ResourceList(p[1], p[2]);
  }
  if (body == nullptr) {
    ReplyError(*c, ApiError::NotFoundPath());
    return;
  }
  c->discovery_found = true;
  // The group and version the document describes (RequestInfo leaves them
  // empty on discovery paths): /api/<v>, /apis/<g>, /apis/<g>/<v>.
  if (p[0] == "api" && p.size() == 2) c->discovery_version = p[1];
  if (p[0] == "apis" && p.size() >= 2) c->discovery_group = p[1];
  if (p[0] == "apis" && p.size() == 3) c->discovery_version = p[2];
  Reply(*c, 200, content_type, *body);
}

// metrics.k8s.io/v1beta1 (apiserver/resource_metrics.h): get and list
// only, answered in JSON whatever the Accept header asks (as
// metrics-server, which serves no Tables).
void ApiServer::Impl::ServeResourceMetrics(Call& c) {
  const RequestInfo& i = c.info;
  const objects::ResourceInfo* r =
      i.resource == "pods"    ? &PodMetricsResource()
      : i.resource == "nodes" ? &NodeMetricsResource()
                              : nullptr;
  if (r == nullptr || i.version != r->gv.version || !i.subresource.empty() ||
      (!r->namespaced && !i.ns.empty()) ||
      (r->namespaced && i.ns.empty() && !i.name.empty())) {
    return ReplyError(c, ApiError::NotFoundPath());
  }
  c.resource = r;
  if (i.verb != "get" && i.verb != "list") {
    ApiError e = ApiError::MethodNotAllowed(c.req().method, r->resource);
    e.message =
        "the server does not allow this method on the requested resource";
    return ReplyError(c, e);
  }
  if (!TakeInflightSlot(c)) return;
  ApiResult<ListParams> p = ParseListParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const ListParams& lp = std::get<ListParams>(p);
  Backend* selected = r == &PodMetricsResource() ? pods : nodes;
  ApiResult<ObjectPredicate> pred =
      selected->rest->Predicate(lp.label_selector, lp.field_selector);
  if (IsError(pred)) return ReplyError(c, std::get<ApiError>(pred));
  MetricsRequest mr{.resource = r->resource,
                    .ns = i.ns,
                    .name = i.name,
                    .now_unix_seconds = objects::TimeNow(*opts.clock).seconds()};
  (selected == pods ? mr.pod_predicate : mr.node_predicate) =
      std::get<ObjectPredicate>(std::move(pred));
  ApiResult<std::string> body = metrics_api->Serve(mr);
  if (IsError(body)) return ReplyError(c, std::get<ApiError>(body));
  Reply(c, 200, kJson, std::get<std::string>(std::move(body)));
}

void ApiServer::Impl::Process(const std::shared_ptr<Call>& c) {
  const std::string& verb = c->info.verb;
  if (c->sub != nullptr && c->sub->name == "log") {
    PodLog(c);  // text from the kubelet, not an object: no negotiation
    return;
  }
  if (c->sub != nullptr && c->sub->name == "exec") {
    PodExec(c);  // a WebSocket to the kubelet
    return;
  }
  NegotiateOptions no;
  if (verb == "watch") no.allow_yaml = false;
  // Custom resources are JSON (and YAML) only, as kube serves them: a
  // client asking for protobuf alone gets 406, one that also takes JSON
  // gets JSON.
  const bool custom = !c->crd_name.empty();
  if (custom) no.allow_protobuf = false;
  if (c->review || (c->sub != nullptr && c->sub->name != "status")) {
    // Scale and binding have no Table printer of their own.
    no.allow_table = false;
    no.allow_metadata = false;
  }
  std::optional<Negotiated> neg =
      NegotiateResponse(c->req().headers.Get("Accept"), no);
  if (!neg) {
    ReplyError(*c, ApiError::NotAcceptable(SupportedResponseTypes(!custom)));
    return;
  }
  c->neg = *neg;
  c->negotiated = true;
  if (neg->shape == ResponseShape::kMetadata) {
    // Checked before the request runs (Kubernetes checks when it encodes
    // the answer, after a write has happened).
    const bool list = verb == "list" || verb == "deletecollection";
    std::string mismatch = MetadataFormMismatch(
        *neg, list, GoTypeName(*c->resource, !c->crd_name.empty(), list));
    if (!mismatch.empty()) {
      ApiError e = ApiError::NotAcceptable({});
      e.message = std::move(mismatch);
      ReplyError(*c, e);
      return;
    }
  }
  if (c->review) {
    Review(*c);
  } else if (verb == "get") {
    Get(*c);
  } else if (verb == "list") {
    List(*c);
  } else if (verb == "watch") {
    Watch(c);
  } else if (verb == "create") {
    if (c->sub != nullptr && c->sub->name == "token") {
      CreateToken(*c);
    } else if (c->sub != nullptr && c->sub->name == "eviction") {
      Evict(*c);
    } else if (c->sub != nullptr || c->resource->resource == "bindings") {
      Bind(*c);
    } else {
      Create(*c);
    }
  } else if (verb == "update") {
    Update(*c);
  } else if (verb == "patch") {
    Patch(*c);
  } else if (verb == "delete") {
    Delete(*c);
  } else if (verb == "deletecollection") {
    DeleteCollection(*c);
  } else {
    ReplyError(
        *c, ApiError::MethodNotAllowed(c->req().method, c->resource->resource));
  }
}

void ApiServer::Impl::Review(Call& c) {
  const objects::KindInfo* kind =
      ReviewKind(c.info.group, c.info.version, c.info.resource);
  std::vector<std::string> warnings;
  ApiResult<MutableObject> review =
      DecodeObject(c, *kind, FieldValidation::kWarn, &warnings);
  if (IsError(review)) return ReplyError(c, std::get<ApiError>(review));
  ReviewContext ctx{
      .user = c.user, .now = opts.clock->WallNow(), .ns = c.info.ns};
  if (authenticator != nullptr) {
    ctx.authenticate_token =
        [this](std::string_view token, const std::vector<std::string>& auds,
               std::vector<std::string>* matched) -> StatusOr<auth::UserInfo> {
      const std::string header = "Bearer " + std::string(token);
      // A "token" the header cannot carry is no token; of one with a
      // space, the part a request would carry.
      std::optional<std::string_view> carried = auth::BearerToken(header);
      if (!carried.has_value()) {
        return Status(StatusCode::kUnauthenticated, "invalid bearer token");
      }
      return authenticator->AuthenticateTokenFor(*carried, auds, matched);
    };
  }
  if (opts.auth.enabled) {
    ctx.authorize = [this](const auth::Attributes& a, std::string* reason) {
      return Authorize(a, reason);
    };
    if (rbac_policy != nullptr) {
      ctx.rules_for = [this](const auth::UserInfo& u, const std::string& ns,
                             std::vector<std::string>* errors) {
        std::shared_ptr<const auth::StaticPolicy> p = rbac_policy->Current();
        return auth::RbacAuthorizer(p.get()).RulesFor(u, ns, errors);
      };
    }
  } else {
    // Without authorization everything is allowed.
    ctx.authorize = [](const auth::Attributes&, std::string*) {
      return auth::Decision::kAllow;
    };
  }
  MutableObject answer = std::get<MutableObject>(std::move(review));
  if (std::optional<ApiError> e = AnswerReview(ctx, answer.get())) {
    return ReplyError(c, *e);
  }
  Reply(c, 201, c.neg.ContentType(), RenderObject(Render(c), *answer),
        warnings);
}

// ---------------------------------------------------------------------------
// Handlers

ApiResult<MutableObject> ApiServer::Impl::DecodeObject(
    Call& c, const objects::KindInfo& kind, FieldValidation validation,
    std::vector<std::string>* warnings) {
  const std::string_view ct = c.req().headers.Get("Content-Type");
  StatusOr<objects::MediaType> type = objects::ParseMediaType(ct);
  const bool custom = !c.crd_name.empty();
  if (!type.ok() || (custom && *type == objects::MediaType::kProtobuf)) {
    return ApiError::UnsupportedMediaType(ct, SupportedBodyTypes(!custom));
  }
  MutableObject obj = kind.New();
  StatusOr<objects::DecodeResult> r =
      objects::DecodeBody(*type, c.body, obj.get());
  if (!r.ok()) {
    return ApiError::BadRequest(r.status().message());
  }
  const objects::TypeMeta& tm = r->type_meta;
  if (!tm.api_version.empty() && tm.api_version != kind.gv.ApiVersion()) {
    return ApiError::BadRequest("the API version in the data (" +
                                tm.api_version +
                                ") does not match the expected API version (" +
                                kind.gv.ApiVersion() + ")");
  }
  if (!tm.kind.empty() && tm.kind != kind.kind) {
    return ApiError::BadRequest(
        "the object provided is unrecognized (must be "
        "of type " +
        kind.kind + "): kind \"" + tm.kind + "\" does not match");
  }
  if (!r->strict_ok()) {
    if (validation == FieldValidation::kStrict) {
      return ApiError::BadRequest(r->StrictErrorMessage());
    }
    if (validation == FieldValidation::kWarn && warnings != nullptr) {
      for (std::string& w : r->Warnings()) warnings->push_back(std::move(w));
    }
  }
  return obj;
}

void ApiServer::Impl::Get(Call& c) {
  ResourceStore* rest = c.backend->rest.get();
  ApiResult<ObjectPtr> r =
      c.sub != nullptr && c.sub->name == "scale"
          ? rest->GetScale(Namespace(c), c.info.name)
          : rest->Get(Namespace(c), c.info.name,
                      c.req().QueryParam("resourceVersion"));
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  Reply(c, 200, c.neg.ContentType(),
        RenderObject(Render(c), *std::get<ObjectPtr>(r)));
}

ApiResult<KubeletEndpoint> ApiServer::Impl::KubeletEndpointOfPod(
    const objects::corev1::Pod& pod) {
  ApiResult<ObjectPtr> node = nodes->rest->Get("", pod.spec().nodename(), "");
  if (IsError(node)) return std::get<ApiError>(std::move(node));
  return KubeletEndpointFor(
      static_cast<const objects::corev1::Node&>(*std::get<ObjectPtr>(node)),
      opts.kubelet_preferred_address_types);
}

// kube's pod log REST: the pod, its options and its node's kubelet, then
// the kubelet's answer streamed through (apiserver/pod_logs.h).
void ApiServer::Impl::PodLog(const std::shared_ptr<Call>& c) {
  ApiResult<ObjectPtr> got = pods->rest->Get(Namespace(*c), c->info.name, "");
  if (IsError(got)) return ReplyError(*c, std::get<ApiError>(got));
  const auto& pod =
      static_cast<const objects::corev1::Pod&>(*std::get<ObjectPtr>(got));
  ApiResult<PodLogRequest> lr = ParsePodLogRequest(c->req(), pod);
  if (IsError(lr)) return ReplyError(*c, std::get<ApiError>(lr));
  if (pod.spec().nodename().empty()) {
    // kube's LogLocation: no host yet, no location, an empty log.
    return Reply(*c, 200, "text/plain", "");
  }
  ApiResult<KubeletEndpoint> ep = KubeletEndpointOfPod(pod);
  if (IsError(ep)) return ReplyError(*c, std::get<ApiError>(ep));
  // The proxy thread owns the call from here on.
  kubelet_logs->Stream(
      std::get<KubeletEndpoint>(ep),
      std::get<PodLogRequest>(lr).KubeletTarget(pod), c->user.name, c->resp,
      [this, c](const ApiError& e) { ReplyError(*c, e); },
      [this, c] {
        c->responded = true;
        Record(*c, 200);
        c->inflight.reset();  // a follower holds no request slot
      });
}

// kube's ExecREST: the pod, its exec options and its node's kubelet, then
// the client's WebSocket spliced to the kubelet's exec (apiserver/
// pod_exec.h).
void ApiServer::Impl::PodExec(const std::shared_ptr<Call>& c) {
  ApiResult<ObjectPtr> got = pods->rest->Get(Namespace(*c), c->info.name, "");
  if (IsError(got)) return ReplyError(*c, std::get<ApiError>(got));
  const auto& pod =
      static_cast<const objects::corev1::Pod&>(*std::get<ObjectPtr>(got));
  ApiResult<PodExecRequest> er = ParsePodExecRequest(c->req(), pod);
  if (IsError(er)) return ReplyError(*c, std::get<ApiError>(er));
  ApiResult<ExecUpgrade> up = ParseExecUpgrade(c->req());
  if (IsError(up)) return ReplyError(*c, std::get<ApiError>(up));
  ApiResult<KubeletEndpoint> ep = KubeletEndpointOfPod(pod);
  if (IsError(ep)) return ReplyError(*c, std::get<ApiError>(ep));
  pod_exec->Exec(
      std::get<KubeletEndpoint>(ep),
      std::get<PodExecRequest>(er).KubeletTarget(pod),
      std::move(std::get<ExecUpgrade>(up)), c->user.name, c->resp,
      [this, c](const ApiError& e) { ReplyError(*c, e); },
      [this, c] {
        c->responded = true;
        Record(*c, 101);
        c->inflight.reset();  // a session holds no request slot
      });
}

void ApiServer::Impl::List(Call& c) {
  ApiResult<ListParams> p = ParseListParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const ListParams& lp = std::get<ListParams>(p);
  ResourceStore* rest = c.backend->rest.get();
  ApiResult<ObjectPredicate> pred =
      rest->Predicate(lp.label_selector, lp.field_selector);
  if (IsError(pred)) return ReplyError(c, std::get<ApiError>(pred));
  ApiResult<ListResult> r =
      rest->List(Namespace(c), lp, std::get<ObjectPredicate>(std::move(pred)));
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  // Everything that can fail has been decided: from here on the list is
  // only encoded, straight from the snapshot's shared objects into the
  // connection (list_stream.h).
  ListResult& list = std::get<ListResult>(r);
  const RenderOptions render = Render(c);
  std::unique_ptr<ListEncoder> encoder = NewListEncoder(render, &list);
  if (encoder == nullptr) {
    return Reply(c, 200, c.neg.ContentType(), RenderList(render, list));
  }
  net::HttpHeaders h;
  h.Add("Content-Type", std::string(c.neg.ContentType()));
  ListStreamOptions lso;
  lso.open_streams = m_list_streams;
  lso.deadline = opts.request_timeout;
  StreamList(c.resp, std::move(h), std::move(encoder), lso, [this, &c] {
    // As Reply: counted, and the in-flight slot freed, before the client
    // can have its answer.
    c.responded = true;
    Record(c, 200);
    c.inflight.reset();
  });
}

void ApiServer::Impl::Watch(const std::shared_ptr<Call>& c) {
  ApiResult<ListParams> p = ParseListParams(c->req(), true);
  if (IsError(p)) return ReplyError(*c, std::get<ApiError>(p));
  const ListParams& lp = std::get<ListParams>(p);
  ResourceStore* rest = c->backend->rest.get();
  std::string field_selector = lp.field_selector;
  if (!c->info.name.empty()) {
    // /watch/namespaces/d/pods/x: one object.
    field_selector = "metadata.name=" + c->info.name +
                     (field_selector.empty() ? "" : "," + field_selector);
  }
  ApiResult<ObjectPredicate> pred =
      rest->Predicate(lp.label_selector, field_selector);
  if (IsError(pred)) return ReplyError(*c, std::get<ApiError>(pred));
  StatusOr<int64_t> rev = Versioner::Parse(lp.resource_version);
  if (!rev.ok()) {
    return ReplyError(*c, ApiError::BadRequest(rev.status().message()));
  }

  WatchOptions wo;
  wo.ns = Namespace(*c);
  if (c->backend == pods) {
    StatusOr<machinery::FieldSelector> fs =
        machinery::FieldSelector::Parse(field_selector);
    if (fs.ok()) wo.index_value = fs->RequiresExactMatch("spec.nodeName");
  }
  wo.predicate = std::get<ObjectPredicate>(std::move(pred));
  wo.allow_bookmarks = lp.allow_watch_bookmarks;
  Cacher* cacher = c->backend->cacher.get();
  if (lp.send_initial_events.has_value()) {
    if (*lp.send_initial_events) {
      // A watch-list: "at least as new as resourceVersion"; "" = as new as
      // the store now (the cache catches up or the watch fails: 504).
      wo.send_initial_events = true;
      wo.revision = *rev;
      wo.consistent = lp.resource_version.empty();
    } else {
      wo.revision = *rev;  // 0: from now
    }
  } else if (lp.resource_version.empty() || *rev == 0) {
    // Legacy: synthetic ADDED events first, "" like "0" from the cache as it
    // is (kube's getWatchCacheResourceVersion, legacy case: with
    // WatchFromStorageWithoutResourceVersion off, locked off since 1.33),
    // and no initial-events-end bookmark.
    wo.send_initial_events = true;
    wo.legacy_initial_events = true;
  } else {
    wo.revision = *rev;
  }
  if (lp.timeout_seconds.has_value() && *lp.timeout_seconds > 0) {
    wo.timeout = seconds(*lp.timeout_seconds);
  } else {
    const int64_t base = std::chrono::duration_cast<std::chrono::seconds>(
                             opts.min_request_timeout)
                             .count();
    int64_t jitter = 0;
    if (base > 0) {
      MutexLock l(&rand_mu);
      jitter = static_cast<int64_t>(rand() % static_cast<uint64_t>(base));
    }
    wo.timeout = seconds(base + jitter);
  }

  if (watches.fetch_add(1) >= opts.max_watches) {
    watches.fetch_sub(1);
    m_dropped->With({"watch"})->Inc();
    return ReplyError(*c, ApiError::TooManyRequests(
                              "Too many watches, please try again later.", 1));
  }
  RenderOptions render = Render(*c);
  auto sink = std::make_shared<HttpWatchSink>(
      c->resp,
      net::HttpHeaders{{"Content-Type", WatchContentType(c->neg)},
                       {"Cache-Control", "no-cache, private"}},
      render, opts.clock, c->backend->watch_events, opts.max_watch_buffer_bytes,
      watch_budget.get());
  const RequestInfo& i = c->info;
  metrics::Gauge* open = m_longrunning->With(
      {"WATCH", i.group, i.version, i.resource, c->scope_label});
  open->Inc();
  // The sink is paced to max_watch_buffer_bytes plus one event; this cap
  // only backs that up (one event of the largest object, in any encoding,
  // must fit).
  if (opts.max_watch_buffer_bytes != 0) {
    c->resp->SetMaxBufferedBytes(opts.max_watch_buffer_bytes +
                                 4 * opts.max_request_body_bytes);
  }
  const uint64_t budget_id = watch_budget->Add(c->resp);
  c->resp->OnClose([this, sink, open, budget_id] {
    watch_budget->Remove(budget_id);
    sink->ClientGone();
    open->Dec();
    watches.fetch_sub(1);
  });
  StatusOr<std::unique_ptr<WatchHandle>> h = cacher->Watch(wo, sink);
  if (!h.ok()) {
    // Refused before anything was sent (the cache is (re)initializing:
    // 429): an HTTP error; otherwise an ERROR event in the stream.
    if (sink->Abort()) return ReplyError(*c, ApiError::FromStatus(h.status()));
    sink->Close(h.status());
    return;
  }
  c->responded = true;
  Record(*c, 200);
  sink->StartNow();
  sink->SetHandle(std::move(*h));
}

void ApiServer::Impl::Create(Call& c) {
  ApiResult<WriteParams> p = ParseWriteParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const WriteParams& wp = std::get<WriteParams>(p);
  std::vector<std::string> warnings;
  ApiResult<MutableObject> obj =
      DecodeObject(c, *c.resource->kind, wp.field_validation, &warnings);
  if (IsError(obj)) return ReplyError(c, std::get<ApiError>(obj));
  ApiResult<WriteResult> r = c.backend->rest->Create(
      Namespace(c), std::get<MutableObject>(std::move(obj)),
      Context(c, wp, &warnings));
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  Reply(c, 201, c.neg.ContentType(),
        RenderObject(Render(c), *std::get<WriteResult>(r).object), warnings);
}

void ApiServer::Impl::Update(Call& c) {
  ApiResult<WriteParams> p = ParseWriteParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const WriteParams& wp = std::get<WriteParams>(p);
  std::vector<std::string> warnings;
  const bool scale = c.sub != nullptr && c.sub->name == "scale";
  const objects::KindInfo& kind = scale ? *c.sub->kind : *c.resource->kind;
  ApiResult<MutableObject> obj =
      DecodeObject(c, kind, wp.field_validation, &warnings);
  if (IsError(obj)) return ReplyError(c, std::get<ApiError>(obj));
  WriteContext ctx = Context(c, wp, &warnings);
  ApiResult<WriteResult> r =
      scale ? c.backend->rest->UpdateScale(
                  Namespace(c), c.info.name,
                  std::get<MutableObject>(std::move(obj)), ctx)
            : c.backend->rest->Update(
                  Namespace(c), c.info.name, c.info.subresource,
                  std::get<MutableObject>(std::move(obj)), ctx);
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  const WriteResult& w = std::get<WriteResult>(r);
  Reply(c, w.created ? 201 : 200, c.neg.ContentType(),
        RenderObject(Render(c), *w.object), warnings);
}

void ApiServer::Impl::Patch(Call& c) {
  const std::string_view ct = c.req().headers.Get("Content-Type");
  std::optional<PatchType> type = ParsePatchType(ct);
  if (!type) {
    return ReplyError(
        c, ApiError::UnsupportedMediaType(ct, SupportedPatchTypes()));
  }
  // Custom resources have no patch strategies (kube answers the same 415).
  if (*type == PatchType::kStrategicMergePatch &&
      c.resource->kind->descriptor == objects::Unstructured::descriptor()) {
    return ReplyError(c, ApiError::UnsupportedMediaType(
                             ct, {"application/json-patch+json",
                                  "application/merge-patch+json",
                                  "application/apply-patch+yaml"}));
  }
  ApiResult<WriteParams> p =
      ParseWriteParams(c.req(), *type == PatchType::kApply);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const WriteParams& wp = std::get<WriteParams>(p);
  std::vector<std::string> warnings;
  ApiResult<WriteResult> r =
      c.backend->rest->Patch(Namespace(c), c.info.name, c.info.subresource,
                             *type, c.body, Context(c, wp, &warnings));
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  const WriteResult& w = std::get<WriteResult>(r);
  Reply(c, w.created ? 201 : 200, c.neg.ContentType(),
        RenderObject(Render(c), *w.object), warnings);
}

void ApiServer::Impl::Delete(Call& c) {
  ApiResult<objects::metav1::DeleteOptions> o =
      ParseDeleteOptions(c.req(), c.body);
  if (IsError(o)) return ReplyError(c, std::get<ApiError>(o));
  const objects::metav1::DeleteOptions& opts_ =
      std::get<objects::metav1::DeleteOptions>(o);
  ResourceStore* rest = c.backend->rest.get();
  ApiResult<DeleteResult> r = rest->Delete(Namespace(c), c.info.name, opts_);
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  const DeleteResult& d = std::get<DeleteResult>(r);
  const int code =
      !d.deleted && opts_.has_orphandependents() && !opts_.orphandependents()
          ? 202
          : 200;
  if (d.deleted && !rest->ReturnsDeletedObject()) {
    // A Status answer is never a Table or metadata, but takes the media
    // type asked for (a Table's is JSON).
    const objects::MediaType media = c.neg.media;
    return Reply(
        c, code, objects::MediaTypeName(media),
        RenderSuccessStatus(media, c.info.name, c.resource->gv.group,
                            c.resource->resource, objects::Uid(*d.object)));
  }
  Reply(c, code, c.neg.ContentType(), RenderObject(Render(c), *d.object));
}

void ApiServer::Impl::DeleteCollection(Call& c) {
  ApiResult<objects::metav1::DeleteOptions> o =
      ParseDeleteOptions(c.req(), c.body);
  if (IsError(o)) return ReplyError(c, std::get<ApiError>(o));
  ApiResult<ListParams> p = ParseListParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const ListParams& lp = std::get<ListParams>(p);
  ResourceStore* rest = c.backend->rest.get();
  ApiResult<ObjectPredicate> pred =
      rest->Predicate(lp.label_selector, lp.field_selector);
  if (IsError(pred)) return ReplyError(c, std::get<ApiError>(pred));
  ApiResult<std::vector<ObjectPtr>> r = rest->DeleteCollection(
      Namespace(c), std::get<objects::metav1::DeleteOptions>(o),
      std::get<ObjectPredicate>(std::move(pred)));
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  StatusOr<int64_t> rev = rest->object_store()->CurrentRevision();
  RenderOptions ro = Render(c);
  if (ro.negotiated.shape == ResponseShape::kTable) {
    ro.negotiated = Negotiated{};  // the deleted objects, not a Table
  }
  Reply(c, 200, ro.negotiated.ContentType(),
        RenderItems(ro, std::get<std::vector<ObjectPtr>>(r),
                    rev.ok() ? *rev : 0));
}

void ApiServer::Impl::Bind(Call& c) {
  ApiResult<WriteParams> p = ParseWriteParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  const objects::KindInfo* kind =
      objects::Scheme::Default().FindKind("v1", "Binding");
  ApiResult<MutableObject> obj = DecodeObject(
      c, *kind, std::get<WriteParams>(p).field_validation, nullptr);
  if (IsError(obj)) return ReplyError(c, std::get<ApiError>(obj));
  auto* binding = dynamic_cast<objects::corev1::Binding*>(
      std::get<MutableObject>(obj).get());
  CHECK(binding != nullptr);
  auto* meta = binding->mutable_metadata();
  if (c.sub != nullptr) {
    if (!meta->name().empty() && meta->name() != c.info.name) {
      return ReplyError(
          c, ApiError::BadRequest("name in URL does not match name in Binding "
                                  "object"));
    }
    meta->set_name(c.info.name);
  }
  if (meta->namespace_().empty()) {
    meta->set_namespace_(c.info.ns);
  } else if (meta->namespace_() != c.info.ns) {
    return ReplyError(
        c, ApiError::BadRequest("the namespace of the provided object does not "
                                "match the namespace sent on the request"));
  }
  if (std::optional<ApiError> e = pods->rest->Bind(
          c.info.ns, *binding, std::get<WriteParams>(p).dry_run)) {
    return ReplyError(c, *e);
  }
  objects::metav1::Status s;
  s.mutable_metadata();
  s.set_status("Success");
  s.set_code(201);
  const objects::MediaType media = c.neg.media;  // a Status, in any shape
  Reply(c, 201, objects::MediaTypeName(media),
        objects::EncodeBody(media, s, {"v1", "Status"}));
}

void ApiServer::Impl::CreateToken(Call& c) {
  ApiResult<WriteParams> p = ParseWriteParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  std::vector<std::string> warnings;
  ApiResult<MutableObject> obj = DecodeObject(
      c, *c.sub->kind, std::get<WriteParams>(p).field_validation, &warnings);
  if (IsError(obj)) return ReplyError(c, std::get<ApiError>(obj));
  using objects::authenticationv1::TokenRequest;
  MutableObject decoded = std::get<MutableObject>(std::move(obj));
  CHECK(decoded->GetDescriptor() == TokenRequest::descriptor());
  TokenRequestPtr request(static_cast<TokenRequest*>(decoded.release()));
  ApiResult<TokenRequestPtr> r = service_account_tokens->CreateToken(
      c.info.ns, c.info.name, std::move(request));
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  Reply(c, 201, c.neg.ContentType(),
        RenderObject(Render(c), *std::get<TokenRequestPtr>(r)), warnings);
}

void ApiServer::Impl::Evict(Call& c) {
  ApiResult<WriteParams> p = ParseWriteParams(c.req(), false);
  if (IsError(p)) return ReplyError(c, std::get<ApiError>(p));
  std::vector<std::string> warnings;
  ApiResult<MutableObject> obj = DecodeObject(
      c, *c.sub->kind, std::get<WriteParams>(p).field_validation, &warnings);
  if (IsError(obj)) return ReplyError(c, std::get<ApiError>(obj));
  const google::protobuf::Message& decoded = *std::get<MutableObject>(obj);
  CHECK(decoded.GetDescriptor() == objects::policyv1::Eviction::descriptor());
  ApiResult<objects::metav1::Status> r =
      evictions->Evict(c.info.ns, c.info.name,
                       static_cast<const objects::policyv1::Eviction&>(decoded),
                       std::get<WriteParams>(p).dry_run);
  if (IsError(r)) return ReplyError(c, std::get<ApiError>(r));
  // kube answers the created Status (201).
  Reply(c, 201, c.neg.ContentType(),
        RenderObject(Render(c), std::get<objects::metav1::Status>(r)),
        warnings);
}

Status ApiServer::Impl::SetUpServiceAccountTokens() {
  ServiceAccountTokensOptions o;
  o.signing_key_pem = opts.service_account_signing_key_pem;
  o.verification_key_pems = opts.service_account_key_pems;
  o.issuers = opts.service_account_issuers;
  o.audiences = opts.api_audiences;
  o.serviceaccounts = by_key.at("/v1/serviceaccounts")->rest.get();
  o.pods = pods->rest.get();
  o.secrets = by_key.at("/v1/secrets")->rest.get();
  o.clock = opts.clock;
  ASSIGN_OR_RETURN(service_account_tokens,
                   ServiceAccountTokens::Create(std::move(o)));
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// ApiServer

ApiServer::ApiServer(ApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

ApiServer::~ApiServer() { Stop(); }

// ---------------------------------------------------------------------------
// CustomResourceDefinitions

bool ApiServer::Impl::FindExtraResource(Call& c) {
  const RequestInfo& i = c.info;
  const std::string key = i.group + "/" + i.version + "/" + i.resource;
  if (auto it = by_key.find(key); it != by_key.end()) {  // the CRD resource
    c.resource = it->second->info;
    c.backend = it->second;
    return true;
  }
  std::shared_ptr<const CustomSnapshot> snapshot = CurrentCustom();
  if (snapshot == nullptr) return false;
  auto it = snapshot->by_key.find(key);
  if (it == snapshot->by_key.end()) return false;
  c.resource = it->second.first->info;
  c.backend = it->second.first;
  c.keep = it->second.second;
  c.crd_name = it->second.second->type->definition().name;
  return true;
}

std::optional<ApiError> ApiServer::Impl::RefuseCreateWhileTerminating(
    const Call& c) const {
  if (c.crd_name.empty() || c.info.verb != "create" ||
      !c.info.subresource.empty()) {
    return std::nullopt;
  }
  // From the CRD watch cache, as kube's handler reads its CRD lister.
  StatusOr<ObjectPtr> crd = crds->cacher->Get("", c.crd_name);
  if (!crd.ok() || !objects::IsBeingDeleted(*objects::GetObjectMeta(**crd))) {
    return std::nullopt;
  }
  // apiextensions-apiserver's customresource_handler: MethodNotSupported
  // with its own message.
  ApiError e = ApiError::MethodNotAllowed(c.req().method, c.info.resource);
  e.group = c.info.group;
  e.message =
      "create not allowed while custom resource definition is "
      "terminating";
  return e;
}

void ApiServer::Impl::PublishDiscovery(
    std::shared_ptr<const CustomSnapshot> snapshot) {
  std::vector<const objects::ResourceInfo*> extra = {
      &CrdResource(), &NodeMetricsResource(), &PodMetricsResource()};
  extra.insert(extra.end(), snapshot->resources.begin(),
               snapshot->resources.end());
  // The served versions' schemas for /openapi/v2 and /openapi/v3 (built
  // when first asked for; the Discovery keeps the snapshot alive).
  std::vector<openapi::CustomResourceApi> custom_openapi;
  for (const auto& [name, set] : snapshot->by_crd) {
    const CustomResourceType& type = *set->type;
    for (size_t i = 0; i < type.versions().size(); ++i) {
      if (!type.versions()[i]->served) continue;
      custom_openapi.push_back(
          {&type.versions()[i]->resource,
           type.definition().versions[i].openapi_schema_json});
    }
  }
  std::atomic_store(
      &discovery,
      std::shared_ptr<const Discovery>(std::make_shared<Discovery>(
          objects::Scheme::Default(), server_address, std::move(extra),
          std::move(custom_openapi), std::move(snapshot))));
}

namespace {

// Wakes the CRD controller on every change of a CRD.
class CrdWatchSink : public WatchSink {
 public:
  explicit CrdWatchSink(std::function<void(bool closed)> wake)
      : wake_(std::move(wake)) {}
  bool Send(const WatchEventPtr&) override {
    wake_(false);
    return true;
  }
  void Close(const Status&) override { wake_(true); }

 private:
  std::function<void(bool)> wake_;
};

std::string ConditionKey(const rapidjson::Value& c) {
  std::string out;
  for (const char* m : {"type", "status", "reason", "message"}) {
    auto it = c.FindMember(m);
    if (it != c.MemberEnd() && it->value.IsString())
      out += it->value.GetString();
    out += '\n';
  }
  return out;
}

// The CRD's status as the controller wants it: acceptedNames and the
// NamesAccepted and Established conditions (lastTransitionTime kept from
// `old` for a condition that did not change). Empty when `crd` already
// says so.
std::unique_ptr<objects::Unstructured> DesiredCrdStatus(
    const objects::Unstructured& crd, const CrdDefinition& d,
    const std::optional<CrdNameClaims::Conflict>& conflict,
    const std::string& now) {
  rapidjson::Document content = objects::ContentOf(crd);
  auto& a = content.GetAllocator();
  if (!content.HasMember("status") || !content["status"].IsObject()) {
    content.RemoveMember("status");
    content.AddMember("status", rapidjson::Value(rapidjson::kObjectType), a);
  }
  rapidjson::Value& status = content["status"];
  const std::string before = [&] {
    rapidjson::StringBuffer b;
    rapidjson::Writer<rapidjson::StringBuffer> w(b);
    status.Accept(w);
    return std::string(b.GetString(), b.GetSize());
  }();
  std::map<std::string, rapidjson::Value> old_conditions;
  if (status.HasMember("conditions") && status["conditions"].IsArray()) {
    for (rapidjson::Value& c : status["conditions"].GetArray()) {
      if (c.IsObject() && c.HasMember("type") && c["type"].IsString()) {
        old_conditions[c["type"].GetString()] = rapidjson::Value(c, a);
      }
    }
  }
  const bool accepted = !conflict.has_value();
  struct Want {
    const char* type;
    bool ok;
    std::string reason, message;
  };
  const std::vector<Want> wants = {
      {"NamesAccepted", accepted, accepted ? "NoConflicts" : conflict->reason,
       accepted ? "no conflicts found" : conflict->message},
      {"Established", accepted,
       accepted ? "InitialNamesAccepted" : "NotAccepted",
       accepted ? "the initial names have been accepted"
                : "not all names are accepted"}};
  rapidjson::Value conditions(rapidjson::kArrayType);
  for (const Want& w : wants) {
    rapidjson::Value c(rapidjson::kObjectType);
    c.AddMember("type", rapidjson::Value(w.type, a), a);
    c.AddMember("status", rapidjson::Value(w.ok ? "True" : "False", a), a);
    c.AddMember("lastTransitionTime", rapidjson::Value(now.c_str(), a), a);
    c.AddMember("reason", rapidjson::Value(w.reason.c_str(), a), a);
    c.AddMember("message", rapidjson::Value(w.message.c_str(), a), a);
    auto old = old_conditions.find(w.type);
    if (old != old_conditions.end() &&
        ConditionKey(old->second) == ConditionKey(c)) {
      c = rapidjson::Value(old->second, a);
    }
    conditions.PushBack(std::move(c), a);
  }
  status.RemoveMember("conditions");
  status.AddMember("conditions", std::move(conditions), a);
  status.RemoveMember("acceptedNames");
  rapidjson::Value names(rapidjson::kObjectType);
  if (accepted) {
    names.AddMember("plural", rapidjson::Value(d.plural.c_str(), a), a);
    names.AddMember("singular", rapidjson::Value(d.singular.c_str(), a), a);
    auto list = [&](const std::vector<std::string>& v) {
      rapidjson::Value arr(rapidjson::kArrayType);
      for (const std::string& s : v)
        arr.PushBack(rapidjson::Value(s.c_str(), a), a);
      return arr;
    };
    if (!d.short_names.empty())
      names.AddMember("shortNames", list(d.short_names), a);
    names.AddMember("kind", rapidjson::Value(d.kind.c_str(), a), a);
    names.AddMember("listKind", rapidjson::Value(d.list_kind.c_str(), a), a);
    if (!d.categories.empty())
      names.AddMember("categories", list(d.categories), a);
  } else {
    names.AddMember("plural", rapidjson::Value("", a), a);
    names.AddMember("kind", rapidjson::Value("", a), a);
  }
  status.AddMember("acceptedNames", std::move(names), a);
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  status.Accept(w);
  if (std::string_view(b.GetString(), b.GetSize()) == before) return nullptr;
  auto out = std::make_unique<objects::Unstructured>(crd);
  objects::SetContent(out.get(), content);
  return out;
}

}  // namespace

void ApiServer::Impl::MarkCrdsDirty(bool rewatch) {
  MutexLock l(&crd_mu);
  crd_dirty = true;
  if (rewatch) crd_rewatch = true;
  crd_cv.notify_all();
}

Status ApiServer::Impl::WatchCrds() {
  WatchOptions wo;
  auto sink = std::make_shared<CrdWatchSink>(
      [this](bool closed) { MarkCrdsDirty(closed); });
  ASSIGN_OR_RETURN(crd_watch, crds->cacher->Watch(wo, sink));
  return Status::Ok();
}

void ApiServer::Impl::StartCrdController() {
  crd_thread = std::thread([this] { CrdControllerLoop(); });
}

void ApiServer::Impl::StopCrdController() {
  if (crd_thread.joinable()) {
    {
      MutexLock l(&crd_mu);
      crd_stop = true;
      crd_cv.notify_all();
    }
    crd_thread.join();
  }
  std::shared_ptr<const CustomSnapshot> snapshot;
  {
    MutexLock l(&custom_mu);
    snapshot = std::move(custom);
  }
  if (snapshot != nullptr) {
    for (const auto& [name, set] : snapshot->by_crd) set->Stop();
  }
}

void ApiServer::Impl::CrdControllerLoop() {
  bool retry = false;
  bool watching = false;
  for (;;) {
    {
      MutexLock l(&crd_mu);
      // Deleted CRDs whose objects are not gone yet are looked at again
      // every second; otherwise only a change of a CRD wakes us.
      opts.clock->WaitFor(
          l.native(), crd_cv, retry ? seconds(1) : seconds(60),
          [this]() NO_THREAD_SAFETY_ANALYSIS { return crd_stop || crd_dirty; });
      if (crd_stop) break;
      crd_dirty = false;
      if (crd_rewatch) {
        crd_rewatch = false;
        watching = false;
      }
    }
    if (!watching) {
      crd_watch.reset();
      Status s = WatchCrds();
      if (!s.ok()) {
        LOG(WARNING) << "watching CustomResourceDefinitions: " << s;
        retry = true;
        continue;
      }
      watching = true;
    }
    retry = ReconcileCrds();
  }
  crd_watch.reset();
}

std::unique_ptr<Backend> ApiServer::Impl::NewCustomBackend(
    const CustomResourceType& t, size_t i) {
  const CrdDefinition& d = t.definition();
  const CustomResourceType::Version& v = *t.versions()[i];
  // The version's schema prunes and defaults on write (reporting unknown
  // fields) and on read from storage.
  ResourceStoreOptions ro = rest_options;
  CustomStorage custom;
  if (std::shared_ptr<const CrdSchema> schema = d.versions[i].schema) {
    ro.prune_unknown_fields = [schema](google::protobuf::Message* m) {
      return schema->PruneAndDefault(static_cast<objects::Unstructured*>(m));
    };
    custom.on_decode = [schema](google::protobuf::Message* m) {
      schema->PruneAndDefault(static_cast<objects::Unstructured*>(m));
    };
  }
  // Objects written before the storage version changed are read as the
  // storage version (status.storedVersions keeps every version that may
  // still be stored inside spec.versions).
  for (const CrdVersion& other : d.versions) {
    if (!other.storage) {
      custom.also_stored_as.push_back(d.group + "/" + other.name);
    }
  }
  return NewBackend(v.resource, t.storage().resource, *v.strategy, d.group,
                    cacher_options, ro, std::move(custom));
}

StatusOr<std::shared_ptr<CustomSet>> ApiServer::Impl::BuildCustomSet(
    const CrdDefinition& d) {
  auto set = std::make_shared<CustomSet>();
  set->type = CustomResourceType::Build(d);
  if (set->type == nullptr) {
    return InvalidArgumentError("no storage version");
  }
  for (size_t i = 0; i < set->type->versions().size(); ++i) {
    if (set->type->versions()[i]->served) {
      set->backends.push_back(NewCustomBackend(*set->type, i));
    }
  }
  for (const auto& b : set->backends) {
    Status s = b->cacher->Start();
    if (s.ok() && !b->cacher->WaitReady(seconds(10))) {
      s = UnavailableError("the watch cache did not load");
    }
    if (!s.ok()) {
      set->Stop();
      return s;
    }
  }
  return set;
}

bool ApiServer::Impl::DeleteCustomResources(const CustomSet& set) {
  const CustomResourceType::Version& storage = set.type->storage();
  Backend* b = nullptr;
  for (const auto& candidate : set.backends) {
    if (candidate->info == &storage.resource || b == nullptr) {
      b = candidate.get();
    }
  }
  // No version served: its objects are still stored, and deleted through
  // the storage version (reads go to the store; no watch cache is started).
  std::unique_ptr<Backend> unserved;
  if (b == nullptr) {
    unserved = NewCustomBackend(*set.type, set.type->storage_index());
    b = unserved.get();
  }
  StatusOr<ListResult> list = b->store->List("", ListOptions{});
  if (!list.ok()) return false;
  for (const ObjectPtr& obj : list->items) {
    const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(*obj);
    if (objects::IsBeingDeleted(*meta)) continue;  // finalizers pending
    b->rest->Delete(meta->namespace_(), meta->name(),
                    objects::metav1::DeleteOptions());
  }
  return list->items.empty();
}

std::shared_ptr<const CrdDefinition> ApiServer::Impl::ParseCrdCached(
    const objects::Unstructured& crd, std::map<std::string, ParsedCrd>* next) {
  const objects::metav1::ObjectMeta& meta = crd.metadata();
  ParsedCrd parsed;
  auto it = parsed_crds.find(meta.name());
  if (it != parsed_crds.end() && it->second.uid == meta.uid() &&
      it->second.generation == meta.generation()) {
    parsed = it->second;
  } else {
    parsed = {meta.uid(), meta.generation(),
              std::make_shared<const CrdDefinition>(ParseCrd(crd))};
  }
  std::shared_ptr<const CrdDefinition> d = parsed.definition;
  (*next)[meta.name()] = std::move(parsed);
  return d;
}

bool ApiServer::Impl::ReconcileCrds() {
  StatusOr<ListResult> list = crds->store->List("", ListOptions{});
  if (!list.ok()) {
    LOG(WARNING) << "listing CustomResourceDefinitions: " << list.status();
    return true;
  }
  std::shared_ptr<const CustomSnapshot> current = CurrentCustom();
  auto next = std::make_shared<CustomSnapshot>();
  bool changed = false;
  bool retry = false;
  WriteContext ctx;
  ctx.field_manager = "kube-apiserver";
  const std::string now =
      objects::FormatRfc3339(std::chrono::duration_cast<std::chrono::seconds>(
                                 opts.clock->WallNow().time_since_epoch())
                                 .count());
  // Names per group (kube's naming controller): held names first.
  CrdNameClaims claims;
  for (const ObjectPtr& obj : list->items) {
    claims.Hold(static_cast<const objects::Unstructured&>(*obj));
  }
  std::vector<std::unique_ptr<objects::Unstructured>> status_writes;
  std::vector<std::unique_ptr<objects::Unstructured>> releases;
  std::map<std::string, ParsedCrd> parsed;
  for (const ObjectPtr& obj : list->items) {
    const auto& crd = static_cast<const objects::Unstructured&>(*obj);
    const std::shared_ptr<const CrdDefinition> parsed_crd =
        ParseCrdCached(crd, &parsed);
    const CrdDefinition& d = *parsed_crd;
    std::shared_ptr<CustomSet> set;
    if (current != nullptr) {
      auto it = current->by_crd.find(d.name);
      if (it != current->by_crd.end() &&
          it->second->type->definition().serving_key == d.serving_key) {
        set = it->second;
      }
    }
    if (objects::IsBeingDeleted(crd.metadata())) {
      // Served until its objects are gone, then released.
      const auto& fin = crd.metadata().finalizers();
      if (std::find(fin.begin(), fin.end(), kCrdCleanupFinalizer) ==
          fin.end()) {
        continue;
      }
      if (set == nullptr) {
        StatusOr<std::shared_ptr<CustomSet>> built = BuildCustomSet(d);
        if (built.ok()) set = *built;
      }
      if (set != nullptr && !DeleteCustomResources(*set)) {
        next->by_crd[d.name] = set;
        retry = true;
        continue;
      }
      // Released after the swap below: once the CRD is gone, so is its
      // resource.
      auto released = std::make_unique<objects::Unstructured>(crd);
      auto* f = released->mutable_metadata()->mutable_finalizers();
      f->erase(std::remove(f->begin(), f->end(), kCrdCleanupFinalizer),
               f->end());
      releases.push_back(std::move(released));
      continue;
    }
    const std::optional<CrdNameClaims::Conflict> conflict = claims.Claim(d);
    if (!conflict) {
      if (set == nullptr) {
        StatusOr<std::shared_ptr<CustomSet>> built = BuildCustomSet(d);
        if (!built.ok()) {
          LOG(WARNING) << "serving " << d.name << ": " << built.status();
          retry = true;
          continue;
        }
        set = *built;
        changed = true;
      }
      next->by_crd[d.name] = set;
    }
    if (std::unique_ptr<objects::Unstructured> s =
            DesiredCrdStatus(crd, d, conflict, now)) {
      status_writes.push_back(std::move(s));
    }
  }
  if (current != nullptr) {
    for (const auto& [name, set] : current->by_crd) {
      auto it = next->by_crd.find(name);
      if (it == next->by_crd.end() || it->second != set) {
        set->Stop();
        changed = true;
      }
    }
  }
  if (changed || current == nullptr) {
    for (const auto& [name, set] : next->by_crd) {
      for (const auto& b : set->backends) {
        const objects::ResourceInfo* r = b->info;
        next->by_key[r->gv.group + "/" + r->gv.version + "/" + r->resource] = {
            b.get(), set};
        next->resources.push_back(r);
      }
    }
    {
      MutexLock l(&custom_mu);
      custom = next;
    }
    PublishDiscovery(next);
  }
  // Established only once served.
  for (std::unique_ptr<objects::Unstructured>& obj : status_writes) {
    const std::string name = obj->metadata().name();
    ApiResult<WriteResult> r =
        crds->rest->Update("", name, "status", std::move(obj), ctx);
    if (IsError(r)) retry = true;
  }
  for (std::unique_ptr<objects::Unstructured>& obj : releases) {
    const std::string name = obj->metadata().name();
    ApiResult<WriteResult> r =
        crds->rest->Update("", name, "", std::move(obj), ctx);
    if (IsError(r)) retry = true;
  }
  parsed_crds = std::move(parsed);
  return retry;
}

Status ApiServer::Start() {
  Impl& m = *impl_;
  CHECK(m.opts.kv != nullptr) << "ApiServerOptions.kv is required";
  CHECK(!m.started);
  m.started = true;
  m.SetupMetrics();
  ASSIGN_OR_RETURN(m.service_allocator,
                   ServiceAllocator::New(m.opts.kv, m.opts.storage_prefix,
                                         m.opts.service_cluster_ip_range,
                                         m.opts.service_node_port_range));
  m.BuildBackends();
  RETURN_IF_ERROR(m.SetUpServiceAccountTokens());
  m.metrics_api =
      std::make_unique<MetricsApi>(m.pods->cacher.get(), m.nodes->cacher.get());
  m.evictions = std::make_unique<Evictions>(EvictionOptions{
      .pods = m.pods->rest.get(),
      .pdbs = m.by_key.at("policy/v1/poddisruptionbudgets")->rest.get(),
      .clock = m.opts.clock,
      .before_budget_write = m.opts.eviction_budget_write_hook,
      .before_pod_delete = m.opts.eviction_pod_delete_hook});
  // ServiceAccount tokens after the token file (kube's order); the chain
  // borrows the authenticator, which the Impl owns.
  if (m.service_account_tokens != nullptr &&
      m.service_account_tokens->authenticator() != nullptr) {
    m.token_authenticators.push_back(m.service_account_tokens->authenticator());
  }
  RETURN_IF_ERROR(m.SetupAuth());
  m.kubelet_logs = std::make_unique<KubeletLogProxy>(KubeletClientOptions{
      .tls = m.opts.kubelet_tls,
      .max_streams = m.opts.max_log_streams,
      .max_streams_per_user = m.opts.max_kubelet_streams_per_user,
      .clock = m.opts.clock});
  m.pod_exec = std::make_unique<PodExecProxy>(PodExecOptions{
      .tls = m.opts.kubelet_tls,
      .max_streams = m.opts.max_exec_streams,
      .max_streams_per_user = m.opts.max_kubelet_streams_per_user,
      .idle_timeout = m.opts.exec_idle_timeout,
      .clock = m.opts.clock});
  for (const auto& b : m.backends) {
    RETURN_IF_ERROR(b->cacher->Start());
  }
  m.storage_health = std::make_unique<StorageHealth>(
      StorageHealthOptions{.kv = m.opts.kv,
                           .storage_prefix = m.opts.storage_prefix,
                           .interval = m.opts.storage_health_interval,
                           .clock = m.opts.clock});
  m.storage_health->Start();
  // Before the port listens: no client ever sees a cluster without its
  // default namespace (kube creates it in a post-start hook, and clients
  // that do not wait for /readyz meet a 404 there).
  RETURN_IF_ERROR(m.CreateSystemNamespaces());
  net::HttpServerOptions ho;
  ho.host = m.opts.bind_address;
  ho.port = m.opts.port;
  ho.io_threads = m.opts.io_threads;
  ho.worker_threads = m.opts.worker_threads;
  // Bodies are read by our handlers, which enforce their own limit (413
  // with a Status); this cap only guards routes that do not stream.
  ho.max_body_bytes = m.opts.max_request_body_bytes;
  ho.body_timeout = m.opts.request_body_timeout;
  ho.max_connections = m.opts.max_connections;
  ho.clock = m.opts.clock;
  ho.metrics = m.opts.metrics;
  ho.name = "apiserver";
  ho.tls = m.opts.tls;
  m.http = std::make_unique<net::HttpServer>(ho);
  m.RegisterRoutes();
  RETURN_IF_ERROR(m.http->Start());
  std::string address = m.opts.advertise_address;
  if (address.empty()) {
    std::string host = m.opts.bind_address;
    if (host.empty() || host == "0.0.0.0" || host == "::") host = "127.0.0.1";
    address = host + ":" + std::to_string(m.http->port());
  }
  m.server_address = address;
  m.PublishDiscovery(std::make_shared<const CustomSnapshot>());
  {
    const size_t colon = address.rfind(':');
    RETURN_IF_ERROR(
        m.ReconcileKubernetesService(address.substr(0, colon), m.http->port()));
  }
  m.bootstrap_controller_done = true;
  if (m.rbac_policy != nullptr) {
    RETURN_IF_ERROR(m.ReconcileBootstrapPolicy());
    ASSIGN_OR_RETURN(
        int64_t revision,
        m.rbac_backends.at("clusterrolebindings")->store->CurrentRevision());
    for (const auto& [name, b] : m.rbac_backends) {
      if (!b->cacher->WaitReady(seconds(60))) {
        return UnavailableError("the " + b->info->GroupResource() +
                                " watch cache did not load");
      }
    }
    RETURN_IF_ERROR(m.rbac_policy->Start(revision));
  }
  m.rbac_bootstrap_done = true;
  m.StartCrdController();
  LOG(INFO) << "apiserver listening on " << m.opts.bind_address << ":"
            << m.http->port();
  return Status::Ok();
}

void ApiServer::Stop() {
  Impl& m = *impl_;
  if (m.http) m.http->Stop();  // ends every watch and handler
  // After the connections: their OnClose callbacks have run.
  if (m.kubelet_logs) m.kubelet_logs->Stop();
  if (m.pod_exec) m.pod_exec->Stop();
  if (m.rbac_policy) m.rbac_policy->Stop();  // before the caches it watches
  m.StopCrdController();  // before the CRD cache; stops the custom ones
  if (m.storage_health) m.storage_health->Stop();
  // Each cache stops its storage watch; in parallel, they take the time of
  // one.
  std::vector<std::thread> stoppers;
  for (const auto& b : m.backends) {
    stoppers.emplace_back([c = b->cacher.get()] { c->Stop(); });
  }
  for (std::thread& t : stoppers) t.join();
}

uint16_t ApiServer::port() const {
  return impl_->http ? impl_->http->port() : 0;
}

bool ApiServer::WaitReady(Duration timeout) {
  const TimePoint deadline = impl_->opts.clock->Now() + timeout;
  for (const auto& b : impl_->backends) {
    Duration left = deadline - impl_->opts.clock->Now();
    if (left < Duration(0)) left = Duration(0);
    if (!b->cacher->WaitReady(left)) return false;
  }
  return true;
}

const auth::TokenAuthenticator* ApiServer::service_account_authenticator()
    const {
  return impl_->service_account_tokens != nullptr
             ? impl_->service_account_tokens->authenticator()
             : nullptr;
}

bool ApiServer::ready() const {
  for (const auto& b : impl_->backends) {
    if (!b->cacher->ready()) return false;
  }
  return !impl_->backends.empty();
}

}  // namespace kplane::apiserver
