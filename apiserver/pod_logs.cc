#include "apiserver/pod_logs.h"

#include <condition_variable>
#include <memory>
#include <optional>
#include <utility>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "net/url.h"
#include "objects/time.h"

namespace kplane::apiserver {
namespace {

namespace corev1 = objects::corev1;

// Every container name of the pod, init ones first, as kube's
// podutil.VisitContainers lists them (kplane's PodSpec has no ephemeral
// containers).
std::vector<std::string> ContainerNames(const corev1::Pod& pod) {
  std::vector<std::string> names;
  for (const auto& c : pod.spec().initcontainers()) names.push_back(c.name());
  for (const auto& c : pod.spec().containers()) names.push_back(c.name());
  return names;
}

}  // namespace

ApiResult<PodLogRequest> ParsePodLogRequest(const net::HttpRequest& req,
                                            const corev1::Pod& pod) {
  PodLogRequest out;
  std::vector<std::pair<std::string, std::string>> query;
  auto flag = [&](const char* name, bool* value) -> std::optional<ApiError> {
    if (!req.HasQueryParam(name)) return std::nullopt;
    std::optional<bool> b = ParseBool(req.QueryParam(name));
    if (!b) {
      return ApiError::BadRequest(std::string(name) + ": invalid value " +
                                  GoQuote(req.QueryParam(name)));
    }
    if (value != nullptr) *value = *b;
    if (*b) query.emplace_back(name, "true");
    return std::nullopt;
  };
  bool previous = false, timestamps = false;
  for (auto [name, value] :
       {std::pair{"follow", &out.follow}, std::pair{"previous", &previous},
        std::pair{"timestamps", &timestamps}}) {
    if (auto e = flag(name, value)) return *e;
  }
  FieldErrors errors;
  auto number = [&](const char* name, int64_t min,
                    const char* detail) -> std::optional<ApiError> {
    if (!req.HasQueryParam(name)) return std::nullopt;
    std::optional<int64_t> v = ParseInt64(req.QueryParam(name));
    if (!v) {
      return ApiError::BadRequest(std::string(name) + ": invalid value " +
                                  GoQuote(req.QueryParam(name)));
    }
    if (*v < min) {
      errors.push_back(
          {FieldError::Type::kInvalid, name, std::to_string(*v), detail});
    }
    query.emplace_back(name, std::to_string(*v));
    return std::nullopt;
  };
  // kube's ValidatePodLogOptions.
  if (auto e = number("tailLines", 0, "must be greater than or equal to 0")) {
    return *e;
  }
  if (auto e = number("limitBytes", 1, "must be greater than 0")) return *e;
  if (auto e = number("sinceSeconds", 1, "must be greater than 0")) return *e;
  if (req.HasQueryParam("sinceTime")) {
    std::string_view t = req.QueryParam("sinceTime");
    if (!objects::ParseRfc3339(t).ok()) {
      return ApiError::BadRequest("sinceTime: invalid value " + GoQuote(t));
    }
    if (req.HasQueryParam("sinceSeconds")) {
      errors.push_back(
          {FieldError::Type::kForbidden, "", "",
           "at most one of `sinceTime` or `sinceSeconds` may be specified"});
    }
    query.emplace_back("sinceTime", std::string(t));
  }
  if (!errors.empty()) {
    return ApiError::Invalid("", "PodLogOptions", pod.metadata().name(),
                             errors);
  }

  // kube's ValidateContainer.
  ApiResult<std::string> container =
      ChoosePodContainer(pod, req.QueryParam("container"));
  if (std::holds_alternative<ApiError>(container)) {
    return std::get<ApiError>(container);
  }
  out.container = std::move(std::get<std::string>(container));
  out.kubelet_query = net::BuildQuery(query);
  return out;
}

std::string PodLogRequest::KubeletTarget(const corev1::Pod& pod) const {
  std::string t =
      "/containerLogs/" + net::PathEscape(pod.metadata().namespace_()) + "/" +
      net::PathEscape(pod.metadata().name()) + "/" + net::PathEscape(container);
  if (!kubelet_query.empty()) t += "?" + kubelet_query;
  return t;
}

ApiResult<std::string> ChoosePodContainer(const corev1::Pod& pod,
                                          std::string_view requested) {
  const std::string& name = pod.metadata().name();
  if (requested.empty()) {
    std::vector<std::string> names = ContainerNames(pod);
    if (pod.spec().containers_size() == 1) {
      return pod.spec().containers(0).name();
    }
    if (pod.spec().containers_size() == 0) {
      return ApiError::BadRequest(
          "a container name must be specified for pod " + name);
    }
    return ApiError::BadRequest("a container name must be specified for pod " +
                                name + ", choose one of: [" +
                                StrJoin(names, " ") + "]");
  }
  for (const std::string& c : ContainerNames(pod)) {
    if (c == requested) return std::string(requested);
  }
  return ApiError::BadRequest("container " + std::string(requested) +
                              " is not valid for pod " + name);
}

ApiError KubeletAnswerError(int status, std::string_view text) {
  ApiError e;
  if (status == 400) {
    e = ApiError::BadRequest(text);
  } else if (status == 404) {
    e = ApiError::BadRequest(text);
    e.code = 404;
    e.reason = "NotFound";
  } else {
    e = ApiError::Internal("the kubelet answered " + std::to_string(status) +
                           ": " + std::string(text));
  }
  return e;
}

ApiResult<KubeletEndpoint> KubeletEndpointFor(
    const corev1::Node& node, const std::vector<std::string>& preferred_types) {
  const int32_t port = node.status().daemonendpoints().kubeletendpoint().port();
  if (port <= 0 || port > 65535) {
    return ApiError::BadRequest("node " + node.metadata().name() +
                                " reports no kubelet port");
  }
  for (const std::string& type : preferred_types) {
    for (const corev1::NodeAddress& a : node.status().addresses()) {
      if (a.type() == type && !a.address().empty()) {
        return KubeletEndpoint{a.address(), static_cast<uint16_t>(port)};
      }
    }
  }
  return ApiError::BadRequest(
      "no preferred addresses found; known addresses: " +
      std::to_string(node.status().addresses_size()));
}

// ---------------------------------------------------------------------------
// KubeletLogProxy

KubeletStreamThreads::~KubeletStreamThreads() { Stop(); }

std::optional<ApiError> KubeletStreamThreads::Start(
    std::string_view what, const std::string& user,
    std::function<void(uint64_t id)> fn) {
  JoinFinished();
  MutexLock l(&mu_);
  if (stopped_) {
    return ApiError::ServiceUnavailable("the server is shutting down");
  }
  if (static_cast<int>(threads_.size()) >= max_) {
    return ApiError::TooManyRequests(
        "too many " + std::string(what) + ", please try again later", 1);
  }
  if (!user.empty()) {
    int& mine = per_user_[user];
    if (mine >= max_per_user_) {
      return ApiError::TooManyRequests(
          "too many " + std::string(what) + " for user " + GoQuote(user) +
              " (at most " + std::to_string(max_per_user_) +
              " at once), please try again later",
          1);
    }
    ++mine;
  }
  const uint64_t id = ++next_id_;
  if (!user.empty()) user_of_[id] = user;
  threads_[id] = std::thread(std::move(fn), id);
  return std::nullopt;
}

bool KubeletStreamThreads::SetCancel(uint64_t id,
                                     std::function<void()> cancel) {
  MutexLock l(&mu_);
  if (stopped_) return false;
  cancels_[id] = std::move(cancel);
  return true;
}

void KubeletStreamThreads::Cancel(uint64_t id) {
  MutexLock l(&mu_);
  auto it = cancels_.find(id);
  if (it != cancels_.end()) it->second();
}

void KubeletStreamThreads::Finished(uint64_t id) {
  MutexLock l(&mu_);
  cancels_.erase(id);
  finished_.push_back(id);
  if (auto it = user_of_.find(id); it != user_of_.end()) {
    if (--per_user_[it->second] == 0) per_user_.erase(it->second);
    user_of_.erase(it);
  }
}

int KubeletStreamThreads::Active() {
  MutexLock l(&mu_);
  return static_cast<int>(threads_.size() - finished_.size());
}

void KubeletStreamThreads::JoinFinished() {
  std::vector<std::thread> done;
  {
    MutexLock l(&mu_);
    for (uint64_t id : finished_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      done.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }
  for (std::thread& t : done) t.join();
}

void KubeletStreamThreads::Stop() {
  std::map<uint64_t, std::thread> threads;
  {
    MutexLock l(&mu_);
    stopped_ = true;
    for (auto& [id, cancel] : cancels_) cancel();
    threads = std::move(threads_);
    threads_.clear();
    finished_.clear();
    user_of_.clear();
    per_user_.clear();
  }
  for (auto& [id, t] : threads) t.join();
}

// ---------------------------------------------------------------------------
// KubeletLogProxy

KubeletLogProxy::KubeletLogProxy(KubeletClientOptions options)
    : options_(std::move(options)),
      threads_(options_.max_streams, options_.max_streams_per_user) {}

KubeletLogProxy::~KubeletLogProxy() { Stop(); }

void KubeletLogProxy::Stop() { threads_.Stop(); }

void KubeletLogProxy::Stream(const KubeletEndpoint& ep, std::string target,
                             const std::string& user,
                             std::shared_ptr<net::Responder> r,
                             std::function<void(const ApiError&)> on_error,
                             std::function<void()> on_start) {
  std::optional<ApiError> refused = threads_.Start(
      "pod log streams", user,
      [this, ep, target = std::move(target), r = std::move(r), on_error,
       on_start = std::move(on_start)](uint64_t id) mutable {
        Run(id, ep, std::move(target), std::move(r), std::move(on_error),
            std::move(on_start));
      });
  if (refused.has_value()) on_error(*refused);
}

namespace {

// Wakes a stream's thread when the bytes waiting for its client drained
// (Responder::OnDrained) or the stream is being ended (client gone, Stop).
class Drained {
 public:
  void Wake() EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }
  void End() EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      ended_ = true;
    }
    cv_.notify_all();
  }
  // Waits for a Wake (consumed) or the End; false once ended.
  bool Wait() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    cv_.wait(l.native(), [&]() REQUIRES(mu_) { return woken_ || ended_; });
    woken_ = false;
    return !ended_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  bool woken_ GUARDED_BY(mu_) = false;
  bool ended_ GUARDED_BY(mu_) = false;
};

}  // namespace

void KubeletLogProxy::Run(uint64_t id, KubeletEndpoint ep, std::string target,
                          std::shared_ptr<net::Responder> r,
                          std::function<void(const ApiError&)> on_error,
                          std::function<void()> on_start) {
  net::HttpClientOptions co;
  co.tls = options_.tls;
  co.clock = options_.clock;
  co.connect_timeout = options_.connect_timeout;
  co.read_timeout = options_.response_timeout;
  net::HttpClient client(ep.host, ep.port, co);
  StatusOr<std::unique_ptr<net::HttpStream>> s =
      client.OpenStream("GET", target, {{"Accept", "*/*"}});
  bool registered = false;
  auto drained = std::make_shared<Drained>();
  if (s.ok()) {
    net::HttpStream* stream = s->get();
    registered = threads_.SetCancel(id, [stream, drained] {
      stream->Cancel();
      drained->End();
    });
  }
  // The client leaving cancels the kubelet request too.
  // (The server stops its connections before this proxy is stopped, so the
  // callback never outlives `this`; Run erases the entry before the stream
  // is destroyed.)
  if (registered) {
    r->OnClose([this, id] { threads_.Cancel(id); });
  }
  auto fail = [&](const Status& st) {
    on_error(ApiError::ServiceUnavailable(
        "error trying to reach the kubelet at " + ep.host + ":" +
        std::to_string(ep.port) + ": " + st.message()));
  };
  if (!s.ok()) {
    fail(s.status());
  } else if (!registered) {
    on_error(ApiError::ServiceUnavailable("the server is shutting down"));
  } else {
    net::HttpStream& stream = **s;
    Status sent = stream.CloseSend();
    StatusOr<net::HttpResponse> head =
        sent.ok() ? stream.ReadHead(options_.response_timeout)
                  : StatusOr<net::HttpResponse>(sent);
    if (!head.ok()) {
      fail(head.status());
    } else if (head->status != 200) {
      // The kubelet's words, as kube's GenericHttpResponseChecker keeps them
      // (at most 16 KiB of them).
      std::string text;
      while (text.size() < 16 * 1024) {
        StatusOr<bool> more = stream.Read(&text, options_.response_timeout);
        if (!more.ok() || !*more) break;
      }
      on_error(KubeletAnswerError(head->status, StripWhitespace(text)));
    } else {
      on_start();
      std::string content_type(head->headers.Get("Content-Type"));
      r->StartStream(200,
                     {{"Content-Type",
                       content_type.empty() ? "text/plain" : content_type}});
      std::string data;
      for (;;) {
        // Paced as kube's proxy copies: past the high water of bytes
        // waiting for the client, the next read from the kubelet waits
        // until the client took them down to the low water, so a slow
        // reader slows the kubelet's stream (TCP) rather than filling the
        // connection's buffer to its cap, which closed it mid-log.
        if (r->BufferedBytes() > options_.log_high_water_bytes) {
          r->OnDrained(options_.log_high_water_bytes / 2,
                       [drained] { drained->Wake(); });
          if (!drained->Wait()) break;
        }
        data.clear();
        StatusOr<bool> more = stream.Read(&data);
        if (!data.empty() && !r->Write(data)) break;  // the client left
        if (!more.ok() || !*more) break;
      }
      r->Finish();
    }
  }
  threads_.Finished(id);
}

}  // namespace kplane::apiserver
