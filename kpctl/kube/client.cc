#include "kpctl/kube/client.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <condition_variable>
#include <set>
#include <thread>

#include "base/json.h"
#include "base/mutex.h"
#include "informer/api_errors.h"
#include "net/http_client.h"
#include "net/url.h"
#include "objects/time.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Document;
using rapidjson::Value;

constexpr char kTableAccept[] =
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

std::string ToJson(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  json::Accept(v, w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::string ContinueOf(const Document& d) {
  if (!d.IsObject()) return "";
  auto m = d.FindMember("metadata");
  if (m == d.MemberEnd() || !m->value.IsObject()) return "";
  auto c = m->value.FindMember("continue");
  return c != m->value.MemberEnd() && c->value.IsString()
             ? std::string(c->value.GetString())
             : "";
}

// Records the continue token of a page; an error when the server hands out
// one it gave before, which would page forever.
Status CheckContinue(const std::string& cont, const objects::ResourceInfo& r,
                     std::set<std::string>* seen) {
  if (cont.empty() || seen->insert(cont).second) return Status::Ok();
  return InvalidArgumentError("the server repeated the continue token \"" +
                              cont + "\" listing " + r.GroupResource());
}

// Appends page[key] (an array) to into[key] and drops into's continue.
void MergePage(Document& page, const char* key, Document* into) {
  auto& alloc = into->GetAllocator();
  if (!into->HasMember(key) || !(*into)[key].IsArray()) {
    into->RemoveMember(key);
    into->AddMember(Value(key, alloc), Value(rapidjson::kArrayType), alloc);
  }
  auto it = page.FindMember(key);
  if (it == page.MemberEnd() || !it->value.IsArray()) return;
  for (Value& v : it->value.GetArray()) {
    (*into)[key].PushBack(Value(v, alloc), alloc);
  }
}

}  // namespace

StatusOr<Document> ParseJsonBody(std::string_view body) {
  Document d;
  if (!json::ParseDom(body, &d).ok()) {
    return InvalidArgumentError(
        "the server answered with a body that is "
        "not JSON: " +
        std::string(body.substr(0, 200)));
  }
  return d;
}

StatusOr<std::unique_ptr<KubeClient>> KubeClient::New(
    const ClientConfig& config, Duration timeout, Clock* clock) {
  informer::RestClientOptions o;
  o.server = config.server;
  o.timeout = timeout;
  // A command-line user wants an answer, not minutes of retries.
  o.max_retries = 2;
  o.retry_max_backoff = seconds(1);
  o.max_connections = 4;
  o.user_agent = "kpctl/v1.32.4 (linux/amd64) kplane";
  o.clock = clock;
  ASSIGN_OR_RETURN(o.tls, ClientTlsContext(config));
  ASSIGN_OR_RETURN(std::unique_ptr<informer::RestClient> rest,
                   informer::RestClient::New(o));
  return std::unique_ptr<KubeClient>(
      new KubeClient(config, std::move(rest),
                     clock != nullptr ? clock : Clock::Real(), timeout));
}

KubeClient::KubeClient(ClientConfig config,
                       std::unique_ptr<informer::RestClient> rest, Clock* clock,
                       Duration timeout)
    : config_(std::move(config)),
      rest_(std::move(rest)),
      clock_(clock),
      timeout_(timeout) {}

KubeClient::~KubeClient() = default;

StatusOr<Document> KubeClient::Send(informer::RestRequest req) {
  if (!config_.token.empty()) {
    req.headers.Set("Authorization", "Bearer " + config_.token);
  }
  if (!req.headers.Has("Accept")) req.headers.Set("Accept", "application/json");
  if (server_dry_run_ && req.method != "GET") {
    req.query.emplace_back("dryRun", "All");
  }
  // The whole request, retries included: a 429 asking to come back in an
  // hour fails now instead of sleeping past --request-timeout.
  req.deadline = clock_->Now() + timeout_;
  ASSIGN_OR_RETURN(net::HttpResponse resp, rest_->Do(req));
  return ParseJsonBody(resp.body);
}

std::vector<std::pair<std::string, std::string>> KubeClient::ListParams(
    const ListQuery& q) {
  std::vector<std::pair<std::string, std::string>> p;
  if (!q.label_selector.empty())
    p.emplace_back("labelSelector", q.label_selector);
  if (!q.field_selector.empty())
    p.emplace_back("fieldSelector", q.field_selector);
  if (!q.resource_version.empty()) {
    p.emplace_back("resourceVersion", q.resource_version);
  }
  return p;
}

StatusOr<Document> KubeClient::Get(const objects::ResourceInfo& r,
                                   std::string_view ns, std::string_view name,
                                   std::string_view subresource) {
  informer::RestRequest req;
  req.method = "GET";
  req.path = informer::RestClient::ResourcePath(r, ns, name, subresource);
  return Send(std::move(req));
}

StatusOr<Document> KubeClient::List(const objects::ResourceInfo& r,
                                    std::string_view ns,
                                    const ListQuery& query) {
  Document all;
  std::string cont;
  std::set<std::string> seen;
  for (bool first = true; first || !cont.empty(); first = false) {
    informer::RestRequest req;
    req.method = "GET";
    req.path = informer::RestClient::ResourcePath(r, ns);
    req.query = ListParams(query);
    req.query.emplace_back("limit", "500");
    if (!cont.empty()) req.query.emplace_back("continue", cont);
    ASSIGN_OR_RETURN(Document page, Send(std::move(req)));
    cont = ContinueOf(page);
    RETURN_IF_ERROR(CheckContinue(cont, r, &seen));
    if (first) {
      all.CopyFrom(page, all.GetAllocator());
      if (all.HasMember("metadata") && all["metadata"].IsObject()) {
        all["metadata"].RemoveMember("continue");
        all["metadata"].RemoveMember("remainingItemCount");
      }
      if (!all.HasMember("items") || !all["items"].IsArray()) {
        all.RemoveMember("items");
        all.AddMember("items", Value(rapidjson::kArrayType),
                      all.GetAllocator());
      }
    } else {
      MergePage(page, "items", &all);
    }
  }
  return all;
}

StatusOr<Document> KubeClient::Table(const objects::ResourceInfo& r,
                                     std::string_view ns, std::string_view name,
                                     const ListQuery& query) {
  Document all;
  std::string cont;
  std::set<std::string> seen;
  for (bool first = true; first || !cont.empty(); first = false) {
    informer::RestRequest req;
    req.method = "GET";
    req.path = informer::RestClient::ResourcePath(r, ns, name);
    req.headers.Set("Accept", kTableAccept);
    if (name.empty()) {
      req.query = ListParams(query);
      req.query.emplace_back("limit", "500");
      if (!cont.empty()) req.query.emplace_back("continue", cont);
    }
    ASSIGN_OR_RETURN(Document page, Send(std::move(req)));
    if (!page.IsObject() || !page.HasMember("rows")) {
      return InvalidArgumentError(
          "the server did not answer with a Table "
          "for " +
          r.GroupResource());
    }
    // One object is one answer: a continue there pages nothing.
    if (name.empty()) {
      cont = ContinueOf(page);
      RETURN_IF_ERROR(CheckContinue(cont, r, &seen));
    }
    if (first) {
      all.CopyFrom(page, all.GetAllocator());
    } else {
      MergePage(page, "rows", &all);
    }
  }
  return all;
}

StatusOr<Document> KubeClient::Create(const objects::ResourceInfo& r,
                                      std::string_view ns, const Value& obj,
                                      std::string_view field_manager) {
  informer::RestRequest req;
  req.method = "POST";
  req.path = informer::RestClient::ResourcePath(r, ns);
  if (!field_manager.empty()) {
    req.query.emplace_back("fieldManager", std::string(field_manager));
  }
  req.headers.Set("Content-Type", "application/json");
  req.body = ToJson(obj);
  return Send(std::move(req));
}

StatusOr<Document> KubeClient::Update(const objects::ResourceInfo& r,
                                      std::string_view ns,
                                      std::string_view name, const Value& obj,
                                      std::string_view field_manager) {
  informer::RestRequest req;
  req.method = "PUT";
  req.path = informer::RestClient::ResourcePath(r, ns, name);
  if (!field_manager.empty()) {
    req.query.emplace_back("fieldManager", std::string(field_manager));
  }
  req.headers.Set("Content-Type", "application/json");
  req.body = ToJson(obj);
  return Send(std::move(req));
}

StatusOr<Document> KubeClient::Patch(
    const objects::ResourceInfo& r, std::string_view ns, std::string_view name,
    PatchType type, std::string_view patch, std::string_view field_manager,
    std::string_view subresource,
    const std::vector<std::pair<std::string, std::string>>& extra_query) {
  informer::RestRequest req;
  req.method = "PATCH";
  req.path = informer::RestClient::ResourcePath(r, ns, name, subresource);
  if (!field_manager.empty()) {
    req.query.emplace_back("fieldManager", std::string(field_manager));
  }
  for (const auto& q : extra_query) req.query.push_back(q);
  req.headers.Set("Content-Type",
                  std::string(informer::PatchContentType(type)));
  req.body = std::string(patch);
  return Send(std::move(req));
}

StatusOr<Document> KubeClient::Delete(const objects::ResourceInfo& r,
                                      std::string_view ns,
                                      std::string_view name,
                                      std::string_view propagation_policy) {
  informer::RestRequest req;
  req.method = "DELETE";
  req.path = informer::RestClient::ResourcePath(r, ns, name);
  req.headers.Set("Content-Type", "application/json");
  req.body = propagation_policy.empty()
                 ? "{}"
                 : "{\"propagationPolicy\":\"" +
                       std::string(propagation_policy) + "\"}";
  return Send(std::move(req));
}

StatusOr<Document> KubeClient::Version() {
  informer::RestRequest req;
  req.method = "GET";
  req.path = "/version";
  return Send(std::move(req));
}

Status KubeClient::Watch(const objects::ResourceInfo& r, std::string_view ns,
                         const ListQuery& query, bool table,
                         const WatchCallback& on_event,
                         std::optional<TimePoint> deadline) {
  net::HttpClientOptions http;
  // --request-timeout bounds each step up to the response head (kubectl:
  // the request's http.Client.Timeout); the stream itself runs on.
  http.connect_timeout = std::min(http.connect_timeout, timeout_);
  http.tls_handshake_timeout = std::min(http.tls_handshake_timeout, timeout_);
  http.write_timeout = std::min(http.write_timeout, timeout_);
  http.read_timeout = timeout_;
  http.clock = clock_;
  http.default_headers = {{"User-Agent", "kpctl (kplane)"}};
  http.tls = rest_->options().tls;
  ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> client,
                   net::HttpClient::ForUrl(config_.server, http));
  std::vector<std::pair<std::string, std::string>> params = ListParams(query);
  if (query.allow_bookmarks) params.emplace_back("allowWatchBookmarks", "true");
  if (query.timeout_seconds) {
    params.emplace_back("timeoutSeconds",
                        std::to_string(*query.timeout_seconds));
  }
  params.emplace_back("watch", "true");
  const std::string target =
      informer::RestClient::ResourcePath(r, ns) + "?" + net::BuildQuery(params);
  net::HttpHeaders headers;
  headers.Set("Accept", table ? kTableAccept : "application/json");
  if (!config_.token.empty()) {
    headers.Set("Authorization", "Bearer " + config_.token);
  }

  // The deadline cancels the stream from a timer thread.
  net::CancelToken cancel;
  Mutex mu;
  std::condition_variable cv;
  bool finished = false;
  bool timed_out = false;
  std::thread timer;
  if (deadline) {
    timer = std::thread([&] {
      MutexLock lock(&mu);
      if (!clock_->WaitUntil(lock.native(), cv, *deadline,
                             [&] { return finished; })) {
        timed_out = true;
        cancel.Cancel();
      }
    });
  }

  std::string buffer;  // bytes not yet ending in a newline
  std::string raw;     // the start of the body, for an error answer
  Status callback_error;
  auto on_data = [&](std::string_view data) {
    if (raw.size() < 65536) raw.append(data.substr(0, 65536 - raw.size()));
    buffer.append(data);
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      std::string_view line(buffer.data() + start, nl - start);
      if (line.empty()) continue;
      Document ev;
      if (!json::ParseDom(line, &ev).ok() || !ev.IsObject() ||
          !ev.HasMember("type") || !ev["type"].IsString() ||
          !ev.HasMember("object")) {
        // Not an event: an error answer (handled after the stream).
        continue;
      }
      std::string type = ev["type"].GetString();
      if (type == "ERROR") {
        const Value& o = ev["object"];
        int code =
            o.HasMember("code") && o["code"].IsInt() ? o["code"].GetInt() : 500;
        callback_error =
            informer::StatusFromResponse(code, "application/json", ToJson(o));
        return false;
      }
      if (!on_event(type, ev["object"])) {
        return false;
      }
    }
    buffer.erase(0, start);
    // A line without end must not grow the buffer without bound.
    if (buffer.size() > kMaxWatchEventBytes) {
      callback_error =
          Status(StatusCode::kTooLarge,
                 "a watch event of " + r.GroupResource() + " is longer than " +
                     std::to_string(kMaxWatchEventBytes) +
                     " bytes (no newline); giving up");
      return false;
    }
    return true;
  };
  StatusOr<net::HttpResponse> resp =
      client->Stream("GET", target, headers, "", on_data, &cancel);
  {
    MutexLock lock(&mu);
    finished = true;
  }
  cv.notify_all();
  if (timer.joinable()) timer.join();
  if (timed_out) return DeadlineExceededError("timed out waiting");
  if (!callback_error.ok()) return callback_error;
  if (!resp.ok() && resp.status().code() == StatusCode::kDeadlineExceeded) {
    // Connecting or the response head took longer than --request-timeout.
    return DeadlineExceededError(
        "watching " + r.GroupResource() + ": " + resp.status().message() +
        " (--request-timeout " +
        objects::FormatGoDuration(
            std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_)
                .count()) +
        ")");
  }
  if (!resp.ok()) return resp.status();
  if (resp->status < 200 || resp->status >= 300) {
    return informer::StatusFromResponse(resp->status,
                                        resp->headers.Get("Content-Type"), raw);
  }
  return Status();
}

}  // namespace kplane::kpctl::kube
