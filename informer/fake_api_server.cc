#include "informer/fake_api_server.h"

#include "objects/codec.h"
#include "objects/meta.h"
#include "objects/serializer.h"
#include "base/logging.h"
#include "base/strings.h"
#include "informer/api_errors.h"

namespace kplane::informer {

namespace {

struct ParsedPath {
  const objects::ResourceInfo* resource = nullptr;
  std::string ns;
  std::string name;
  std::string subresource;
};

ParsedPath ParsePath(std::string_view path) {
  std::vector<std::string> seg;
  for (std::string& s : StrSplit(path, '/')) {
    if (!s.empty()) seg.push_back(std::move(s));
  }
  ParsedPath out;
  std::string group, version;
  size_t i;
  if (seg.size() >= 3 && seg[0] == "api") {
    version = seg[1];
    i = 2;
  } else if (seg.size() >= 4 && seg[0] == "apis") {
    group = seg[1];
    version = seg[2];
    i = 3;
  } else {
    return out;
  }
  if (seg.size() - i >= 3 && seg[i] == "namespaces") {
    out.ns = seg[i + 1];
    i += 2;
  }
  out.resource = objects::Scheme::Default().FindResource(group, version, seg[i]);
  if (i + 1 < seg.size()) out.name = seg[i + 1];
  if (i + 2 < seg.size()) out.subresource = seg[i + 2];
  if (i + 3 < seg.size()) out.resource = nullptr;
  return out;
}

// Kubernetes' texts for the storage errors the fake produces.
Status AsApiError(const Status& s, const objects::ResourceInfo& r,
                  const std::string& name) {
  const std::string what = r.GroupResource() + " \"" + name + "\"";
  switch (s.code()) {
    case StatusCode::kNotFound:
      return Status(s.code(), what + " not found", 404);
    case StatusCode::kAlreadyExists:
      return Status(s.code(), what + " already exists", 409);
    case StatusCode::kConflict:
      return Status(s.code(),
                    "Operation cannot be fulfilled on " + what +
                        ": the object has been modified; please apply your "
                        "changes to the latest version and try again",
                    409);
    default:
      return s;
  }
}

void ReplyError(const std::shared_ptr<net::Responder>& resp, const Status& s,
                int retry_after = -1) {
  objects::metav1::Status st = ApiStatusOf(s);
  net::HttpHeaders headers{{"Content-Type", "application/json"}};
  if (retry_after >= 0) {
    headers.Add("Retry-After", std::to_string(retry_after));
  }
  resp->Respond(st.code(), std::move(headers),
                objects::EncodeJson(st, {"v1", "Status"}));
}

void ReplyObject(const std::shared_ptr<net::Responder>& resp, int code,
                 const google::protobuf::Message& obj,
                 const objects::TypeMeta& type_meta, bool protobuf) {
  objects::MediaType type =
      protobuf ? objects::MediaType::kProtobuf : objects::MediaType::kJson;
  resp->Respond(code, {{"Content-Type", std::string(objects::MediaTypeName(type))}},
                objects::EncodeBody(type, obj, type_meta));
}

std::string EncodeEvent(const WatchEvent& ev, const objects::KindInfo& kind) {
  std::string out = "{\"type\":\"";
  out += EventTypeName(ev.type);
  out += "\",\"object\":";
  if (ev.type == EventType::kError) {
    out += objects::EncodeJson(ApiStatusOf(ev.error), {"v1", "Status"});
  } else {
    out += objects::EncodeJson(*ev.object, kind.type_meta());
  }
  out += "}\n";
  return out;
}

ListOptions ListOptionsFrom(const net::HttpRequest& req) {
  ListOptions o;
  o.label_selector = std::string(req.QueryParam("labelSelector"));
  o.field_selector = std::string(req.QueryParam("fieldSelector"));
  o.resource_version = std::string(req.QueryParam("resourceVersion"));
  o.resource_version_match =
      std::string(req.QueryParam("resourceVersionMatch"));
  o.limit = ParseInt64(req.QueryParam("limit")).value_or(0);
  o.continue_token = std::string(req.QueryParam("continue"));
  o.allow_watch_bookmarks =
      ParseBool(req.QueryParam("allowWatchBookmarks")).value_or(false);
  if (req.HasQueryParam("timeoutSeconds")) {
    o.timeout_seconds = ParseInt64(req.QueryParam("timeoutSeconds"));
  }
  return o;
}

}  // namespace

FakeApiServer::FakeApiServer() : FakeApiServer(Options{}) {}

FakeApiServer::FakeApiServer(Options options)
    : options_(options),
      server_(net::HttpServerOptions{.worker_threads = 4, .name = "fakeapi"}) {
  auto handler = [this](const net::HttpRequest& req,
                        std::shared_ptr<net::Responder> resp) {
    Serve(req, std::move(resp));
  };
  server_.HandlePrefix("", "/api/", handler);
  server_.HandlePrefix("", "/apis/", handler);
}

FakeApiServer::~FakeApiServer() { Stop(); }

Status FakeApiServer::Start() { return server_.Start(); }

std::string FakeApiServer::Url() const {
  return "http://127.0.0.1:" + std::to_string(server_.port());
}

void FakeApiServer::Stop() {
  std::vector<FakeListerWatcher*> fakes;
  {
    MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [r, fake] : resources_) fakes.push_back(fake.get());
  }
  for (FakeListerWatcher* f : fakes) f->CloseWatches();
  server_.Stop();
  std::vector<std::thread> pumps;
  {
    MutexLock l(&mu_);
    pumps.swap(pumps_);
  }
  for (std::thread& t : pumps) t.join();
}

FakeListerWatcher* FakeApiServer::Resource(const objects::ResourceInfo& resource) {
  MutexLock l(&mu_);
  std::unique_ptr<FakeListerWatcher>& slot = resources_[&resource];
  if (slot == nullptr) {
    slot = std::make_unique<FakeListerWatcher>(resource.kind);
  }
  return slot.get();
}

void FakeApiServer::FailNext(int count, int code, int retry_after_seconds) {
  MutexLock l(&mu_);
  for (int i = 0; i < count; ++i) {
    injected_.push_back({code, retry_after_seconds});
  }
}

std::vector<std::string> FakeApiServer::Requests() const {
  MutexLock l(&mu_);
  return requests_;
}

std::vector<std::string> FakeApiServer::RemoteAddresses() const {
  MutexLock l(&mu_);
  return remotes_;
}

void FakeApiServer::Serve(const net::HttpRequest& req,
                          std::shared_ptr<net::Responder> resp) {
  std::optional<Injected> injected;
  {
    MutexLock l(&mu_);
    requests_.push_back(req.method + " " + req.target);
    remotes_.push_back(req.remote_address);
    if (!injected_.empty()) {
      injected = injected_.front();
      injected_.pop_front();
    }
  }
  if (injected.has_value()) {
    StatusCode code = injected->code == 429   ? StatusCode::kResourceExhausted
                      : injected->code == 503 ? StatusCode::kUnavailable
                      : injected->code == 504 ? StatusCode::kDeadlineExceeded
                                              : StatusCode::kInternal;
    ReplyError(resp, Status(code, "injected failure", injected->code),
               injected->retry_after);
    return;
  }
  ParsedPath p = ParsePath(req.path);
  if (p.resource == nullptr) {
    ReplyError(resp,
               Status(StatusCode::kNotFound,
                      "the server could not find the requested resource", 404));
    return;
  }
  const objects::ResourceInfo& r = *p.resource;
  if (!r.namespaced) p.ns.clear();
  FakeListerWatcher* fake = Resource(r);
  const bool protobuf =
      req.headers.Get("Accept").starts_with(objects::kProtobufMediaType);
  auto reply = [&](int code, const StatusOr<ObjectPtr>& obj) {
    if (!obj.ok()) {
      ReplyError(resp, AsApiError(obj.status(), r, p.name));
    } else {
      ReplyObject(resp, code, **obj, r.kind->type_meta(), protobuf);
    }
  };
  auto decode_body =
      [&]() -> StatusOr<std::unique_ptr<google::protobuf::Message>> {
    ASSIGN_OR_RETURN(objects::MediaType type,
                     objects::ParseMediaType(req.headers.Get("Content-Type")));
    std::unique_ptr<google::protobuf::Message> obj = r.kind->New();
    StatusOr<objects::DecodeResult> d = objects::DecodeBody(type, req.body, obj.get());
    if (!d.ok())
      return Status(StatusCode::kInvalidArgument, d.status().message(), 400);
    objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj.get());
    if (r.namespaced && meta->namespace_().empty()) meta->set_namespace_(p.ns);
    if (r.namespaced && meta->namespace_() != p.ns) {
      return Status(StatusCode::kInvalidArgument,
                    "the namespace of the object does not match the namespace "
                    "on the request",
                    400);
    }
    return obj;
  };

  if (req.method == "GET" && p.name.empty()) {
    ListOptions o = ListOptionsFrom(req);
    std::string_view watch = req.QueryParam("watch");
    if (watch == "true" || watch == "1") {
      ServeWatch(r, p.ns, o, std::move(resp));
      return;
    }
    StatusOr<ListResult> list = fake->List(o);
    if (!list.ok()) {
      ReplyError(resp, list.status());
      return;
    }
    std::unique_ptr<google::protobuf::Message> msg = r.list_kind->New();
    objects::metav1::ListMeta* meta = objects::MutableListMeta(msg.get());
    meta->set_resourceversion(list->resource_version);
    if (!list->continue_token.empty()) {
      meta->set_continue_(list->continue_token);
    }
    if (list->remaining_item_count.has_value()) {
      meta->set_remainingitemcount(*list->remaining_item_count);
    }
    for (const ObjectPtr& item : list->items) {
      if (!p.ns.empty() && objects::Namespace(*item) != p.ns) continue;
      objects::AddListItem(msg.get())->CopyFrom(*item);
    }
    ReplyObject(resp, 200, *msg, r.list_kind->type_meta(), protobuf);
  } else if (req.method == "GET") {
    reply(200, fake->Get(p.ns, p.name));
  } else if (req.method == "POST" && p.name.empty()) {
    auto obj = decode_body();
    if (!obj.ok()) {
      ReplyError(resp, obj.status());
      return;
    }
    p.name = objects::Name(**obj);
    reply(201, fake->Create(**obj));
  } else if (req.method == "PUT" && !p.name.empty()) {
    auto obj = decode_body();
    if (!obj.ok()) {
      ReplyError(resp, obj.status());
      return;
    }
    reply(200, fake->Update(**obj));
  } else if (req.method == "DELETE" && !p.name.empty()) {
    reply(200, fake->Delete(p.ns, p.name));
  } else {
    ReplyError(resp, Status(StatusCode::kUnimplemented,
                            "the server does not allow this method on the "
                            "requested resource",
                            405));
  }
}

void FakeApiServer::ServeWatch(const objects::ResourceInfo& resource,
                               const std::string& ns,
                               const ListOptions& options,
                               std::shared_ptr<net::Responder> resp) {
  StatusOr<std::unique_ptr<WatchStream>> w = Resource(resource)->Watch(options);
  if (!w.ok()) {
    ReplyError(resp, w.status());
    return;
  }
  std::shared_ptr<WatchStream> stream(std::move(*w));
  resp->StartStream(200, {{"Content-Type", "application/json"}});
  resp->OnClose([stream] { stream->Stop(); });
  MutexLock l(&mu_);
  if (stopped_) {
    stream->Stop();
    resp->Close();
    return;
  }
  const objects::KindInfo* kind = resource.kind;
  const bool split = options_.split_watch_writes;
  const bool namespaced = resource.namespaced;
  pumps_.emplace_back([stream, resp, kind, ns, split, namespaced] {
    WatchEvent ev;
    while (stream->Next(&ev)) {
      if (namespaced && !ns.empty() && ev.object != nullptr &&
          ev.type != EventType::kBookmark && objects::Namespace(*ev.object) != ns) {
        continue;
      }
      std::string line = EncodeEvent(ev, *kind);
      bool ok = true;
      if (split && line.size() >= 3) {
        size_t third = line.size() / 3;
        ok = resp->Write(line.substr(0, third)) &&
             resp->Write(line.substr(third, third)) &&
             resp->Write(line.substr(2 * third));
      } else {
        ok = resp->Write(line);
      }
      if (!ok) {
        stream->Stop();
        break;
      }
    }
    if (stream->Result().ok()) {
      resp->Finish();
    } else {
      resp->Close();  // as a broken connection looks to the client
    }
  });
}

}  // namespace kplane::informer
