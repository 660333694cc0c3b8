#include "informer/rest_client.h"

#include <algorithm>
#include <deque>

#include "base/logging.h"
#include "base/strings.h"
#include "informer/api_errors.h"
#include "informer/unstructured.h"
#include "net/url.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "objects/serializer.h"

namespace kplane::informer {

namespace {

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" ||
         method == "DELETE";
}

// Retry-After as delta-seconds (the form Kubernetes sends); an HTTP date
// is not worth honouring for a control plane.
std::optional<Duration> RetryAfter(const net::HttpResponse& resp) {
  std::string_view v = resp.headers.Get("Retry-After");
  if (v.empty()) return std::nullopt;
  std::optional<int64_t> secs = ParseInt64(StripWhitespace(v));
  if (!secs.has_value() || *secs < 0) return std::nullopt;
  return seconds(*secs);
}

constexpr std::string_view kProtobufWatch =
    "application/vnd.kubernetes.protobuf;stream=watch";

// What kube's metadata client asks for: PartialObjectMetadata (or its
// list) in protobuf, else in JSON, else the plain JSON object (an old
// server; it then fails to decode as metadata, clearly).
std::string MetadataAccept(std::string_view as) {
  std::string a(as);
  return "application/vnd.kubernetes.protobuf;as=" + a +
         ";g=meta.k8s.io;v=v1,application/json;as=" + a +
         ";g=meta.k8s.io;v=v1,application/json";
}

const objects::KindInfo& MetaKind(std::string_view kind) {
  const objects::KindInfo* k =
      objects::Scheme::Default().FindKind("meta.k8s.io/v1", kind);
  CHECK(k != nullptr) << kind << " is not in the scheme";
  return *k;
}
const objects::KindInfo& MetadataListKind() {
  static const objects::KindInfo& k = MetaKind("PartialObjectMetadataList");
  return k;
}

// The items of a list message, moved out of it (not copied).
ListResult TakeItems(std::unique_ptr<google::protobuf::Message> list) {
  ListResult result;
  if (const objects::metav1::ListMeta* meta = objects::GetListMeta(*list)) {
    result.resource_version = meta->resourceversion();
    result.continue_token = meta->continue_();
    if (meta->has_remainingitemcount()) {
      result.remaining_item_count = meta->remainingitemcount();
    }
  }
  // Move the items out of the list rather than copying each one.
  const google::protobuf::FieldDescriptor* items =
      list->GetDescriptor()->FindFieldByName("items");
  CHECK(items != nullptr) << list->GetDescriptor()->full_name();
  const google::protobuf::Reflection* refl = list->GetReflection();
  int n = refl->FieldSize(*list, items);
  result.items.resize(n);
  for (int i = n - 1; i >= 0; --i) {
    result.items[i] = ObjectPtr(refl->ReleaseLast(list.get(), items));
  }
  return result;
}

// A watch over one HTTP response body.
class HttpWatchStream : public WatchStream {
 public:
  HttpWatchStream(std::unique_ptr<net::HttpStream> stream,
                  const objects::KindInfo* kind, WatchFraming framing,
                  Duration idle_timeout)
      : stream_(std::move(stream)),
        decoder_(kind, framing),
        idle_timeout_(idle_timeout) {}

  ~HttpWatchStream() override { stream_->Cancel(); }

  bool Next(WatchEvent* event) override {
    while (pending_.empty()) {
      if (done_) return false;
      std::string data;
      StatusOr<bool> more = stream_->Read(&data, idle_timeout_);
      if (!more.ok()) {
        Finish(stopped_.load() ? CancelledError("watch stopped")
                               : more.status());
        continue;
      }
      std::vector<WatchEvent> events;
      Status s = decoder_.Feed(data, &events);
      for (WatchEvent& e : events) pending_.push_back(std::move(e));
      if (!s.ok()) {
        Finish(s);
      } else if (!*more) {
        Finish(decoder_.Finish());
      }
    }
    *event = std::move(pending_.front());
    pending_.pop_front();
    return true;
  }

  Status Result() const override {
    MutexLock l(&mu_);
    return result_;
  }

  void Stop() override {
    stopped_ = true;
    stream_->Cancel();
  }

 private:
  void Finish(Status s) {
    MutexLock l(&mu_);
    done_ = true;
    result_ = std::move(s);
  }

  std::unique_ptr<net::HttpStream> stream_;
  WatchDecoder decoder_;
  const Duration idle_timeout_;
  std::deque<WatchEvent> pending_;  // decoded, not yet returned
  std::atomic<bool> stopped_{false};
  bool done_ = false;  // Next()'s thread only
  mutable Mutex mu_;
  Status result_ GUARDED_BY(mu_);
};

}  // namespace

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
    case PatchType::kMergePatch:
      return "application/merge-patch+json";
    case PatchType::kStrategicMergePatch:
      return "application/strategic-merge-patch+json";
    case PatchType::kApplyPatch:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

// Up to max_connections keep-alive HttpClients; each holds one connection.
class RestClient::Pool {
 public:
  Pool(std::string host, uint16_t port, net::HttpClientOptions options, int max)
      : host_(std::move(host)),
        port_(port),
        options_(std::move(options)),
        max_(std::max(1, max)) {}

  // nullptr if none is free by `deadline` (on `clock`).
  std::unique_ptr<net::HttpClient> Acquire(Clock* clock, TimePoint deadline) {
    MutexLock l(&mu_);
    auto free = [&]()
                    REQUIRES(mu_) { return !idle_.empty() || created_ < max_; };
    if (free()) {
      // Most calls: no timed wait at all.
    } else if (deadline == TimePoint::max()) {
      cv_.wait(l.native(), free);
    } else if (!clock->WaitUntil(l.native(), cv_, deadline, free)) {
      return nullptr;
    }
    if (!idle_.empty()) {
      std::unique_ptr<net::HttpClient> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++created_;
    return std::make_unique<net::HttpClient>(host_, port_, options_);
  }

  void Release(std::unique_ptr<net::HttpClient> c) {
    {
      MutexLock l(&mu_);
      idle_.push_back(std::move(c));
    }
    cv_.notify_one();
  }

 private:
  const std::string host_;
  const uint16_t port_;
  const net::HttpClientOptions options_;
  const int max_;
  Mutex mu_;
  std::condition_variable cv_;
  // Most recently used last, so a burst reuses warm connections.
  std::vector<std::unique_ptr<net::HttpClient>> idle_ GUARDED_BY(mu_);
  int created_ GUARDED_BY(mu_) = 0;
};

StatusOr<std::unique_ptr<RestClient>> RestClient::New(
    RestClientOptions options) {
  ASSIGN_OR_RETURN(net::Url url, net::ParseUrl(options.server,
                                               net::UrlSchemes::kHttpOrHttps));
  if ((url.scheme == "https") != (options.tls != nullptr)) {
    return InvalidArgumentError(
        url.scheme == "https"
            ? "server " + options.server + ": https needs a TLS context"
            : "server " + options.server +
                  ": a TLS context was given for an http:// server (use "
                  "https://)");
  }
  return std::unique_ptr<RestClient>(
      new RestClient(std::move(options), url.host, url.port));
}

RestClient::RestClient(RestClientOptions options, std::string host,
                       uint16_t port)
    : options_(std::move(options)),
      host_(std::move(host)),
      port_(port),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()) {
  net::HttpClientOptions http;
  http.connect_timeout = options_.connect_timeout;
  http.read_timeout = options_.timeout;
  http.write_timeout = options_.timeout;
  http.default_headers = {{"User-Agent", options_.user_agent}};
  if (!options_.bearer_token.empty()) {
    http.default_headers.Set("Authorization",
                             "Bearer " + options_.bearer_token);
  }
  http.tls = options_.tls;
  http.clock = clock_;
  pool_ = std::make_unique<Pool>(host_, port_, http, options_.max_connections);
  stream_client_ = std::make_unique<net::HttpClient>(host_, port_, http);
  metrics::Registry* reg = options_.metrics != nullptr
                               ? options_.metrics
                               : metrics::Registry::Default();
  requests_ = reg->NewCounter(
      "rest_client_requests_total",
      "Number of HTTP requests, partitioned by status code, method, and host.",
      {"code", "host", "method"});
  retries_ = reg->NewCounter(
      "rest_client_request_retries_total",
      "Number of request retries, partitioned by status code, verb, and host.",
      {"code", "host", "verb"});
}

RestClient::~RestClient() = default;

std::string RestClient::ResourcePath(const objects::ResourceInfo& resource,
                                     std::string_view ns, std::string_view name,
                                     std::string_view subresource) {
  std::string path = resource.gv.group.empty() ? "/api/" + resource.gv.version
                                               : "/apis/" + resource.gv.group +
                                                     "/" + resource.gv.version;
  if (resource.namespaced && !ns.empty()) {
    path += "/namespaces/" + net::PathEscape(ns);
  }
  path += "/" + resource.resource;
  if (!name.empty()) {
    path += "/" + net::PathEscape(name);
    if (!subresource.empty()) path += "/" + std::string(subresource);
  }
  return path;
}

Duration RestClient::Jitter(Duration d) {
  MutexLock l(&rng_mu_);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return d + Duration(static_cast<int64_t>(static_cast<double>(d.count()) *
                                           u(rng_)));
}

StatusOr<net::HttpResponse> RestClient::Do(const RestRequest& request) {
  std::string target = request.path;
  if (!request.query.empty()) target += "?" + net::BuildQuery(request.query);
  net::HttpHeaders headers = request.headers;
  if (!headers.Has("Accept")) {
    headers.Set("Accept", options_.protobuf
                              ? "application/vnd.kubernetes.protobuf, "
                                "application/json"
                              : "application/json");
  }
  const bool idempotent = IsIdempotent(request.method);
  const std::string host = host_ + ":" + std::to_string(port_);
  Duration backoff = options_.retry_initial_backoff;
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<net::HttpClient> http =
        pool_->Acquire(clock_, request.deadline);
    if (http == nullptr) {
      return DeadlineExceededError(request.method + " " + request.path +
                                   ": deadline passed waiting for a "
                                   "connection");
    }
    StatusOr<net::HttpResponse> resp = http->Request(
        request.method, target, headers, request.body, request.deadline);
    pool_->Release(std::move(http));

    bool retry = false;
    std::optional<Duration> retry_after;
    Status error;
    std::string code_label;
    if (!resp.ok()) {
      error = resp.status();
      code_label = "<error>";
      retry = idempotent && error.code() == StatusCode::kUnavailable;
    } else {
      code_label = std::to_string(resp->status);
      if (resp->status >= 200 && resp->status < 300) {
        requests_->With({code_label, host, request.method})->Inc();
        return resp;
      }
      retry_after = RetryAfter(*resp);
      const int code = resp->status;
      if (code == 429 || (code >= 500 && retry_after.has_value())) {
        retry = true;
      } else if (idempotent && (code == 502 || code == 503 || code == 504)) {
        retry = true;
      }
      error = StatusFromResponse(code, resp->headers.Get("Content-Type"),
                                 resp->body);
    }
    requests_->With({code_label, host, request.method})->Inc();
    if (!retry || attempt >= options_.max_retries) return error;

    Duration wait = Jitter(backoff);
    backoff = std::min(backoff * 2, options_.retry_max_backoff);
    if (retry_after.has_value()) {
      wait = std::max(wait, std::min(*retry_after, options_.max_retry_after));
    }
    if (request.deadline != CallDeadline::max() &&
        clock_->Now() + wait >= request.deadline) {
      return error;  // no time left for another attempt
    }
    retries_->With({code_label, host, request.method})->Inc();
    LOG(DEBUG) << request.method << " " << request.path << ": "
               << error.ToString() << "; retry " << attempt + 1 << " in "
               << std::chrono::duration_cast<milliseconds>(wait).count()
               << " ms";
    clock_->SleepFor(wait);
  }
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::DecodeResponse(
    const net::HttpResponse& resp, const objects::KindInfo& kind) const {
  ASSIGN_OR_RETURN(objects::MediaType type,
                   objects::ParseMediaType(resp.headers.Get("Content-Type")));
  std::unique_ptr<google::protobuf::Message> obj = kind.New();
  auto decode = [&]() -> StatusOr<objects::DecodeResult> {
    if (type != objects::MediaType::kProtobuf) {
      return objects::DecodeBody(type, resp.body, obj.get());
    }
    // An answer is not a client's body: unknown fields are kept, not
    // walked for (watch.cc's decoder says why).
    ASSIGN_OR_RETURN(objects::TypeMeta tm,
                     objects::DecodeEnvelopeInto(resp.body, obj.get(),
                                                 /*discard_unknown=*/false));
    return objects::DecodeResult{.type_meta = std::move(tm)};
  };
  StatusOr<objects::DecodeResult> r = decode();
  if (!r.ok()) {
    // A protobuf Status rarely parses as the expected kind's message: the
    // envelope says what it is.
    if (type == objects::MediaType::kProtobuf && kind.kind != "Status") {
      StatusOr<objects::Envelope> env = objects::DecodeEnvelope(resp.body);
      if (env.ok() && env->type_meta.kind == "Status") return kind.New();
    }
    return r.status().Annotate("decoding " + kind.kind);
  }
  const objects::TypeMeta& tm = r->type_meta;
  if (tm.kind == "Status" && kind.kind != "Status") {
    // A success answered with a Status (POST pods/binding does): there is
    // no object to return.
    return kind.New();
  }
  if ((!tm.kind.empty() && tm.kind != kind.kind) ||
      (!tm.api_version.empty() && tm.api_version != kind.gv.ApiVersion())) {
    return InvalidArgumentError("expected " + kind.gv.ApiVersion() + " " +
                                kind.kind + " in the response, got " +
                                tm.api_version + " " + tm.kind);
  }
  return obj;
}

void RestClient::SetBody(RestRequest* req, const google::protobuf::Message& obj,
                         const objects::KindInfo* kind) const {
  objects::TypeMeta tm =
      kind != nullptr ? kind->type_meta() : objects::TypeMeta{};
  // Custom resources are JSON only (the server refuses protobuf bodies
  // for them, as kube does).
  objects::MediaType type =
      options_.protobuf && kind != nullptr && !IsUnstructuredKind(*kind)
          ? objects::MediaType::kProtobuf
          : objects::MediaType::kJson;
  req->body = objects::EncodeBody(type, obj, tm);
  req->headers.Set("Content-Type", std::string(objects::MediaTypeName(type)));
}

void RestClient::AddWriteOptions(RestRequest* req,
                                 const WriteOptions& options) {
  if (options.dry_run) req->query.emplace_back("dryRun", "All");
  if (!options.field_manager.empty()) {
    req->query.emplace_back("fieldManager", options.field_manager);
  }
  if (!options.field_validation.empty()) {
    req->query.emplace_back("fieldValidation", options.field_validation);
  }
  if (options.force) req->query.emplace_back("force", "true");
  req->deadline = options.deadline;
}

namespace {

const objects::KindInfo* SubresourceKind(const objects::ResourceInfo& resource,
                                         std::string_view subresource) {
  if (subresource.empty()) return resource.kind;
  const objects::SubresourceInfo* sub = resource.FindSubresource(subresource);
  return sub != nullptr && sub->kind != nullptr ? sub->kind : resource.kind;
}

}  // namespace

void RestClient::AddListQuery(RestRequest* req, const ListOptions& o) {
  if (!o.label_selector.empty()) {
    req->query.emplace_back("labelSelector", o.label_selector);
  }
  if (!o.field_selector.empty()) {
    req->query.emplace_back("fieldSelector", o.field_selector);
  }
  if (!o.resource_version.empty()) {
    req->query.emplace_back("resourceVersion", o.resource_version);
  }
  if (!o.resource_version_match.empty()) {
    req->query.emplace_back("resourceVersionMatch", o.resource_version_match);
  }
  if (o.limit > 0) req->query.emplace_back("limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) {
    req->query.emplace_back("continue", o.continue_token);
  }
  if (o.timeout_seconds.has_value()) {
    req->query.emplace_back("timeoutSeconds",
                            std::to_string(*o.timeout_seconds));
  }
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::Get(
    const objects::ResourceInfo& resource, std::string_view ns,
    std::string_view name, const GetOptions& options,
    std::string_view subresource) {
  RestRequest req{.method = "GET",
                  .path = ResourcePath(resource, ns, name, subresource)};
  if (!options.resource_version.empty()) {
    req.query.emplace_back("resourceVersion", options.resource_version);
  }
  req.deadline = options.deadline;
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  return DecodeResponse(resp, *SubresourceKind(resource, subresource));
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::List(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options) {
  if (resource.list_kind == nullptr) {
    return InvalidArgumentError(resource.resource + " cannot be listed");
  }
  RestRequest req{.method = "GET", .path = ResourcePath(resource, ns)};
  AddListQuery(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  return DecodeResponse(resp, *resource.list_kind);
}

StatusOr<ListResult> RestClient::ListObjects(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options) {
  if (IsUnstructuredKind(*resource.kind)) {
    return ListUnstructured(resource, ns, options);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<google::protobuf::Message> list,
                   List(resource, ns, options));
  return TakeItems(std::move(list));
}

StatusOr<ListResult> RestClient::ListMetadata(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options) {
  RestRequest req{.method = "GET", .path = ResourcePath(resource, ns)};
  req.headers.Set("Accept", MetadataAccept("PartialObjectMetadataList"));
  AddListQuery(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  ASSIGN_OR_RETURN(std::unique_ptr<google::protobuf::Message> list,
                   DecodeResponse(resp, MetadataListKind()));
  return TakeItems(std::move(list));
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::GetMetadata(
    const objects::ResourceInfo& resource, std::string_view ns,
    std::string_view name) {
  RestRequest req{.method = "GET", .path = ResourcePath(resource, ns, name)};
  req.headers.Set("Accept", MetadataAccept("PartialObjectMetadata"));
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  return DecodeResponse(resp, MetadataKind());
}

StatusOr<ListResult> RestClient::ListUnstructured(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options) {
  RestRequest req{.method = "GET", .path = ResourcePath(resource, ns)};
  req.headers.Set("Accept", "application/json");
  AddListQuery(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  StatusOr<UnstructuredList> list = ParseUnstructuredList(resp.body);
  if (!list.ok()) {
    return list.status().Annotate("decoding the list of " +
                                  resource.GroupResource());
  }
  ListResult result{.resource_version = std::move(list->resource_version),
                    .continue_token = std::move(list->continue_token),
                    .remaining_item_count = list->remaining_item_count};
  result.items.reserve(list->items.size());
  for (const Unstructured& item : list->items) {
    ASSIGN_OR_RETURN(ObjectPtr obj, NewUnstructuredObject(item.value()));
    result.items.push_back(std::move(obj));
  }
  return result;
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::Create(
    const objects::ResourceInfo& resource, std::string_view ns,
    const google::protobuf::Message& obj, const WriteOptions& options,
    std::string_view name_for_subresource, std::string_view subresource) {
  std::string target_ns(ns);
  if (target_ns.empty() && objects::GetObjectMeta(obj) != nullptr) {
    target_ns = objects::Namespace(obj);
  }
  if (resource.namespaced && target_ns.empty()) {
    return InvalidArgumentError("creating " + resource.resource +
                                " needs a namespace");
  }
  RestRequest req{.method = "POST",
                  .path = ResourcePath(resource, target_ns,
                                       name_for_subresource, subresource)};
  const objects::KindInfo* kind = SubresourceKind(resource, subresource);
  SetBody(&req, obj, objects::Scheme::Default().KindFor(obj.GetDescriptor()));
  AddWriteOptions(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  return DecodeResponse(resp, *kind);
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::Update(
    const objects::ResourceInfo& resource, const google::protobuf::Message& obj,
    const WriteOptions& options, std::string_view subresource) {
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  if (meta == nullptr || meta->name().empty()) {
    return InvalidArgumentError("update needs metadata.name");
  }
  if (resource.namespaced && meta->namespace_().empty()) {
    return InvalidArgumentError("update of " + resource.resource +
                                " needs metadata.namespace");
  }
  RestRequest req{.method = "PUT",
                  .path = ResourcePath(resource, meta->namespace_(),
                                       meta->name(), subresource)};
  SetBody(&req, obj, objects::Scheme::Default().KindFor(obj.GetDescriptor()));
  AddWriteOptions(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  return DecodeResponse(resp, *SubresourceKind(resource, subresource));
}

StatusOr<std::unique_ptr<google::protobuf::Message>> RestClient::Patch(
    const objects::ResourceInfo& resource, std::string_view ns,
    std::string_view name, PatchType type, std::string_view patch,
    const WriteOptions& options, std::string_view subresource) {
  RestRequest req{.method = "PATCH",
                  .path = ResourcePath(resource, ns, name, subresource),
                  .body = std::string(patch)};
  req.headers.Set("Content-Type", std::string(PatchContentType(type)));
  AddWriteOptions(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, Do(req));
  return DecodeResponse(resp, *SubresourceKind(resource, subresource));
}

Status RestClient::Delete(const objects::ResourceInfo& resource,
                          std::string_view ns, std::string_view name,
                          const objects::metav1::DeleteOptions& options) {
  RestRequest req{.method = "DELETE", .path = ResourcePath(resource, ns, name)};
  if (options.ByteSizeLong() > 0) {
    SetBody(&req, options,
            objects::Scheme::Default().FindKind("v1", "DeleteOptions"));
  }
  return Do(req).status();
}

Status RestClient::DeleteCollection(
    const objects::ResourceInfo& resource, std::string_view ns,
    const objects::metav1::DeleteOptions& options) {
  // The collection's path: Delete without a name.
  return Delete(resource, ns, "", options);
}

StatusOr<std::unique_ptr<WatchStream>> RestClient::Watch(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options) {
  // Unstructured objects are read from JSON only.
  return OpenWatch(resource, ns, options,
                   options_.protobuf && !IsUnstructuredKind(*resource.kind)
                       ? std::string(kProtobufWatch) + ", application/json"
                       : "application/json",
                   resource.kind);
}

const objects::KindInfo& RestClient::MetadataKind() {
  static const objects::KindInfo& k = MetaKind("PartialObjectMetadata");
  return k;
}

StatusOr<std::unique_ptr<WatchStream>> RestClient::WatchMetadata(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options) {
  return OpenWatch(resource, ns, options,
                   MetadataAccept("PartialObjectMetadata"), &MetadataKind());
}

StatusOr<std::unique_ptr<WatchStream>> RestClient::OpenWatch(
    const objects::ResourceInfo& resource, std::string_view ns,
    const ListOptions& options, const std::string& accept,
    const objects::KindInfo* kind) {
  RestRequest req{.method = "GET", .path = ResourcePath(resource, ns)};
  req.query.emplace_back("watch", "true");
  AddListQuery(&req, options);
  if (options.allow_watch_bookmarks) {
    req.query.emplace_back("allowWatchBookmarks", "true");
  }
  net::HttpHeaders headers;
  headers.Set("Accept", accept);
  const std::string target = req.path + "?" + net::BuildQuery(req.query);
  // OpenStream gives a pull-style body reader on a connection of its own;
  // the (empty) request body ends at once.
  ASSIGN_OR_RETURN(std::unique_ptr<net::HttpStream> stream,
                   stream_client_->OpenStream("GET", target, headers));
  RETURN_IF_ERROR(stream->CloseSend());
  ASSIGN_OR_RETURN(net::HttpResponse head, stream->ReadHead(options_.timeout));
  const std::string host = host_ + ":" + std::to_string(port_);
  requests_->With({std::to_string(head.status), host, "WATCH"})->Inc();
  if (head.status != 200) {
    std::string body;
    for (;;) {
      StatusOr<bool> more = stream->Read(&body, options_.timeout);
      if (!more.ok() || !*more || body.size() > (1 << 20)) break;
    }
    return StatusFromResponse(head.status, head.headers.Get("Content-Type"),
                              body);
  }
  WatchFraming framing = WatchFraming::kJsonLines;
  StatusOr<objects::MediaType> type =
      objects::ParseMediaType(head.headers.Get("Content-Type"));
  if (type.ok() && *type == objects::MediaType::kProtobuf) {
    framing = WatchFraming::kProtobufFrames;
  }
  // The server ends a watch after timeoutSeconds; a stream silent for well
  // beyond that is a dead connection.
  Duration idle = Duration(-1);
  if (options.timeout_seconds.has_value()) {
    idle = seconds(*options.timeout_seconds) + seconds(30);
  }
  return std::unique_ptr<WatchStream>(
      new HttpWatchStream(std::move(stream), kind, framing, idle));
}

}  // namespace kplane::informer
