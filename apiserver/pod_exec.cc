#include "apiserver/pod_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <utility>

#include "base/logging.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "net/http_message.h"
#include "net/http_upgrade.h"
#include "net/url.h"
#include "net/websocket.h"

namespace kplane::apiserver {

namespace corev1 = objects::corev1;

namespace {

// kube's query booleans (runtime.Convert_Slice_string_To_bool): "1",
// "true" and friends are true, absent or "false"/"0" false.
bool QueryBool(const net::HttpRequest& req, std::string_view key) {
  if (!req.HasQueryParam(key)) return false;
  std::string v = ToLower(req.QueryParam(key));
  return v == "1" || v == "true" || v == "t" || v == "yes" || v == "y" ||
         v.empty();
}

// Writes all of `bytes` to the blocking socket; false when it is gone.
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

ApiResult<PodExecRequest> ParsePodExecRequest(const net::HttpRequest& req,
                                              const corev1::Pod& pod) {
  PodExecRequest out;
  for (auto [it, end] = req.query.equal_range("command"); it != end; ++it) {
    out.command.push_back(it->second);
  }
  out.stdin = QueryBool(req, "stdin");
  out.stdout = QueryBool(req, "stdout");
  out.stderr = QueryBool(req, "stderr");
  out.tty = QueryBool(req, "tty");
  // kube's ExecLocation, then the streams the kubelet insists on.
  if (out.command.empty()) {
    return ApiError::BadRequest(
        "you must specify at least one command for the container");
  }
  if (!out.stdin && !out.stdout && !out.stderr) {
    return ApiError::BadRequest(
        "you must specify at least 1 of stdin, stdout, stderr");
  }
  ApiResult<std::string> container =
      ChoosePodContainer(pod, req.QueryParam("container"));
  if (std::holds_alternative<ApiError>(container)) {
    return std::get<ApiError>(container);
  }
  out.container = std::move(std::get<std::string>(container));
  if (pod.spec().nodename().empty()) {
    return ApiError::BadRequest("pod " + pod.metadata().name() +
                                " does not have a host assigned");
  }
  return out;
}

std::string PodExecRequest::KubeletTarget(const corev1::Pod& pod) const {
  std::vector<std::pair<std::string, std::string>> query;
  for (const std::string& c : command) query.emplace_back("command", c);
  query.emplace_back("stdin", stdin ? "1" : "0");
  query.emplace_back("stdout", stdout ? "1" : "0");
  query.emplace_back("stderr", stderr ? "1" : "0");
  query.emplace_back("tty", tty ? "1" : "0");
  return "/exec/" + net::PathEscape(pod.metadata().namespace_()) + "/" +
         net::PathEscape(pod.metadata().name()) + "/" +
         net::PathEscape(container) + "?" + net::BuildQuery(query);
}

ApiResult<ExecUpgrade> ParseExecUpgrade(const net::HttpRequest& req) {
  const net::HttpHeaders& h = req.headers;
  if (h.HasToken("Upgrade", "spdy/3.1")) {
    return ApiError::BadRequest(
        "SPDY/3.1 streaming is not served by kplane: use kubectl 1.30 or "
        "later (WebSocket, v5.channel.k8s.io)");
  }
  if (req.method != "GET" || !h.HasToken("Upgrade", "websocket") ||
      !h.HasToken("Connection", "upgrade")) {
    return ApiError::BadRequest("Upgrade request required");
  }
  if (h.Get("Sec-WebSocket-Version") != "13") {
    return ApiError::BadRequest(
        "unable to upgrade: websocket version 13 is required");
  }
  std::string_view key = h.Get("Sec-WebSocket-Key");
  if (key.empty() || key.size() > 64) {
    return ApiError::BadRequest(
        "unable to upgrade: missing or malformed Sec-WebSocket-Key");
  }
  ExecUpgrade up{.accept = net::WebSocketAcceptKey(key)};
  std::vector<std::string> offered;
  for (const auto& [name, value] : h) {
    if (!net::EqualsIgnoreCase(name, "Sec-WebSocket-Protocol")) continue;
    for (const std::string& p : StrSplit(value, ',')) {
      offered.emplace_back(StripWhitespace(p));
    }
  }
  for (const char* want : {kExecProtocolV5, kExecProtocolV4}) {
    for (const std::string& p : offered) {
      if (p == want) {
        up.protocol = want;
        return up;
      }
    }
  }
  return ApiError::BadRequest(
      "unable to upgrade: unable to negotiate protocol: client supports [" +
      StrJoin(offered, " ") + "], server supports [" + kExecProtocolV5 + " " +
      kExecProtocolV4 + "]");
}

// ---------------------------------------------------------------------------
// PodExecProxy

PodExecProxy::PodExecProxy(PodExecOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      threads_(options_.max_streams) {}

PodExecProxy::~PodExecProxy() { Stop(); }

void PodExecProxy::Exec(const KubeletEndpoint& ep, std::string target,
                        ExecUpgrade upgrade, std::shared_ptr<net::Responder> r,
                        std::function<void(const ApiError&)> on_error,
                        std::function<void()> on_start) {
  std::optional<ApiError> refused = threads_.Start(
      "too many exec streams, please try again later",
      [this, ep, target = std::move(target), upgrade = std::move(upgrade),
       r = std::move(r), on_error,
       on_start = std::move(on_start)](uint64_t id) mutable {
        Run(id, ep, std::move(target), std::move(upgrade), std::move(r),
            std::move(on_error), std::move(on_start));
      });
  if (refused.has_value()) on_error(*refused);
}

// The upgraded socket and the kubelet stream of one exec.
struct PodExecProxy::Session {
  Mutex mu;
  std::condition_variable cv;
  bool have_fd GUARDED_BY(mu) = false;
  int fd GUARDED_BY(mu) = -1;
  bool ended GUARDED_BY(mu) = false;  // shut down: both loops stop
  Mutex write_mu;                     // one frame at a time to the client
  std::atomic<int64_t> last_activity_ns{0};

  void Touch(Clock* clock) {
    last_activity_ns = clock->Now().time_since_epoch().count();
  }
  // Ends the exchange with the client: its reads see EOF.
  void End() {
    MutexLock l(&mu);
    ended = true;
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    cv.notify_all();
  }
  bool Send(int socket, std::string_view frame) {
    MutexLock l(&write_mu);
    return WriteAll(socket, frame);
  }
};

void PodExecProxy::Run(uint64_t id, KubeletEndpoint ep, std::string target,
                       ExecUpgrade upgrade, std::shared_ptr<net::Responder> r,
                       std::function<void(const ApiError&)> on_error,
                       std::function<void()> on_start) {
  auto session = std::make_shared<Session>();
  net::HttpClientOptions co;
  co.tls = options_.tls;
  co.clock = options_.clock;
  co.connect_timeout = options_.connect_timeout;
  co.read_timeout = options_.response_timeout;
  net::HttpClient client(ep.host, ep.port, co);
  StatusOr<std::unique_ptr<net::HttpStream>> s = client.OpenStream(
      "POST", target, {{"Content-Type", "application/octet-stream"}});
  bool registered = false;
  if (s.ok()) {
    net::HttpStream* stream = s->get();
    registered = threads_.SetCancel(id, [stream, session] {
      stream->Cancel();
      session->End();
    });
  }
  auto finish = [&] { threads_.Finished(id); };
  if (!s.ok()) {
    on_error(ApiError::ServiceUnavailable(
        "error trying to reach the kubelet at " + ep.host + ":" +
        std::to_string(ep.port) + ": " + std::string(s.status().message())));
    return finish();
  }
  if (!registered) {
    on_error(ApiError::ServiceUnavailable("the server is shutting down"));
    return finish();
  }
  net::HttpStream& stream = **s;
  StatusOr<net::HttpResponse> head = stream.ReadHead(options_.response_timeout);
  if (!head.ok()) {
    on_error(ApiError::ServiceUnavailable(
        "error trying to reach the kubelet at " + ep.host + ":" +
        std::to_string(ep.port) + ": " + std::string(head.status().message())));
    return finish();
  }
  if (head->status != 200) {
    std::string text;
    while (text.size() < 16 * 1024) {
      StatusOr<bool> more = stream.Read(&text, options_.response_timeout);
      if (!more.ok() || !*more) break;
    }
    on_error(KubeletAnswerError(head->status, StripWhitespace(text)));
    return finish();
  }
  on_start();
  const bool upgraded =
      net::UpgradeConnection(r,
                             {{"Upgrade", "websocket"},
                              {"Sec-WebSocket-Accept", upgrade.accept},
                              {"Sec-WebSocket-Protocol", upgrade.protocol}},
                             [session](int fd) {
                               MutexLock l(&session->mu);
                               session->have_fd = true;
                               session->fd = fd;
                               if (session->ended && fd >= 0)
                                 ::shutdown(fd, SHUT_RDWR);
                               session->cv.notify_all();
                             });
  int fd = -1;
  if (upgraded) {
    MutexLock l(&session->mu);
    while (!session->have_fd) session->cv.wait(l.native());
    fd = session->fd;
  }
  if (fd < 0) {
    stream.Cancel();
    return finish();
  }
  // Blocking from here: each direction has its thread.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  session->Touch(clock_);
  const bool v5 = upgrade.protocol == kExecProtocolV5;

  // Kubelet to client: records become binary messages.
  std::thread out([&, session, fd] {
    net::ChannelRecordReader records(options_.max_frame_bytes);
    std::string data;
    bool ok = true;
    while (ok) {
      data.clear();
      StatusOr<bool> more = stream.Read(&data);
      records.Feed(data);
      for (;;) {
        StatusOr<std::optional<net::ChannelRecord>> rec = records.Next();
        if (!rec.ok()) {
          LOG(WARNING) << "exec: the kubelet at " << ep.host << " sent "
                       << rec.status();
          ok = false;
          break;
        }
        if (!rec->has_value()) break;
        std::string msg(1, static_cast<char>((*rec)->channel));
        msg += (*rec)->payload;
        if (!session->Send(fd, net::EncodeWebSocketFrame(
                                   net::WebSocketOpcode::kBinary, msg))) {
          ok = false;
          break;
        }
        session->Touch(clock_);
      }
      if (!more.ok() || !*more) break;
    }
    session->Send(fd, net::EncodeWebSocketClose(1000, ""));
    session->End();
  });

  // Client to kubelet: stdin, the v5 close of stdin, pings, the close.
  net::WebSocketReader reader(
      {.max_message_bytes = options_.max_frame_bytes, .require_mask = true});
  char buf[16 * 1024];
  bool stdin_closed = false;
  for (;;) {
    {
      MutexLock l(&session->mu);
      if (session->ended) break;
    }
    const Duration idle =
        clock_->Now() -
        TimePoint(TimePoint::duration(session->last_activity_ns.load()));
    if (idle >= options_.idle_timeout) {
      session->Send(fd, net::EncodeWebSocketClose(1000, "idle timeout"));
      break;
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min<Duration>(options_.idle_timeout - idle, seconds(1)));
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    int pr = ::poll(&p, 1, static_cast<int>(wait.count()) + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    if (pr == 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the client left (or the other side ended it)
    session->Touch(clock_);
    reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
    bool stop = false;
    while (!stop) {
      StatusOr<std::optional<net::WebSocketMessage>> m = reader.Next();
      if (!m.ok()) {
        session->Send(fd, net::EncodeWebSocketClose(reader.close_code(),
                                                    m.status().message()));
        stop = true;
        break;
      }
      if (!m->has_value()) break;
      net::WebSocketMessage& msg = **m;
      switch (msg.opcode) {
        case net::WebSocketOpcode::kClose:
          session->Send(fd, net::EncodeWebSocketClose(
                                net::WebSocketCloseCode(msg.payload), ""));
          stop = true;
          break;
        case net::WebSocketOpcode::kPing:
          session->Send(fd, net::EncodeWebSocketFrame(
                                net::WebSocketOpcode::kPong, msg.payload));
          break;
        case net::WebSocketOpcode::kBinary: {
          if (msg.payload.empty()) break;
          const uint8_t channel = static_cast<uint8_t>(msg.payload[0]);
          std::string_view payload = std::string_view(msg.payload).substr(1);
          if (channel == 0 && !stdin_closed && !payload.empty()) {
            if (!stream.Send(payload).ok()) stop = true;
          } else if (v5 && channel == 255 && payload.size() == 1 &&
                     payload[0] == 0 && !stdin_closed) {
            stdin_closed = true;
            if (!stream.CloseSend().ok()) stop = true;
          }
          // 4 (resize) and others: nothing to do for the simulated shell.
          break;
        }
        default:
          break;  // text and pong messages carry nothing here
      }
    }
    if (stop) break;
  }
  stream.Cancel();
  session->End();
  out.join();
  {
    MutexLock l(&session->mu);
    session->fd = -1;
  }
  ::close(fd);  // the server flushes what was written and closes
  finish();
}

}  // namespace kplane::apiserver
