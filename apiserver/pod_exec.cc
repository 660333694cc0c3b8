#include "apiserver/pod_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <map>
#include <set>
#include <utility>

#include "base/json.h"
#include "base/logging.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "net/http_message.h"
#include "net/http_upgrade.h"
#include "net/spdy.h"
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
  // kube's httpstream/spdy responseUpgrader: "upgrade" in Connection and
  // "spdy/3.1" in Upgrade; GET or POST (kubectl POSTs).
  if (h.HasToken("Upgrade", "spdy/3.1") &&
      h.HasToken("Connection", "upgrade")) {
    std::vector<std::string> offered;
    for (const auto& [name, value] : h) {
      if (!net::EqualsIgnoreCase(name, "X-Stream-Protocol-Version")) continue;
      for (const std::string& p : StrSplit(value, ',')) {
        offered.emplace_back(StripWhitespace(p));
      }
    }
    // kube's httpstream.Handshake: the first the client lists that the
    // server serves.
    for (const std::string& p : offered) {
      for (const char* have :
           {kExecProtocolV4, kExecProtocolV3, kExecProtocolV2}) {
        if (p != have) continue;
        return ExecUpgrade{.transport = ExecUpgrade::Transport::kSpdy,
                           .protocol = have,
                           .stdin = QueryBool(req, "stdin"),
                           .stdout = QueryBool(req, "stdout"),
                           .stderr = QueryBool(req, "stderr"),
                           .tty = QueryBool(req, "tty")};
      }
    }
    return ApiError::BadRequest(
        "unable to upgrade: unable to negotiate protocol: client supports [" +
        StrJoin(offered, " ") + "], server supports [" + kExecProtocolV4 + " " +
        kExecProtocolV3 + " " + kExecProtocolV2 + "]");
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
// The client's transport: what one exec session needs from it.

namespace {

// What a transport made of the client's bytes.
struct ClientInput {
  std::string to_client;  // answers: pongs, SYN_REPLYs, resets, GOAWAY
  std::string stdin_data;
  bool stdin_closed = false;
  bool stop = false;  // the client ended, or broke the protocol
};

// One per session. OnClientBytes, Ready and Abort run on the session's
// reader thread; Record and End on its writer thread, which starts only
// once Ready() (so what OnClientBytes set up before is visible to it and
// no longer changes).
class ClientTransport {
 public:
  virtual ~ClientTransport() = default;
  // The 101's headers (UpgradeConnection adds Connection).
  virtual net::HttpHeaders UpgradeHeaders() const = 0;
  virtual void OnClientBytes(std::string_view bytes, ClientInput* in) = 0;
  // Every stream the client will use is there: output may flow.
  virtual bool Ready() const = 0;
  // A kubelet record (channel 1 stdout, 2 stderr, 3 error) for the client.
  virtual std::string Record(uint8_t channel, std::string_view payload) = 0;
  // After the kubelet's last record.
  virtual std::string End() = 0;
  // The session ends early (idle, streams never opened).
  virtual std::string Abort(std::string_view why) = 0;
  // After End(), keep the connection until the client closes it (at most
  // kLinger): a SPDY client (spdystream) drops the DATA it has not yet
  // handed to its readers when the connection closes under it, so closing
  // right after the last frames could lose the output or the exit status.
  virtual bool LingerAfterEnd() const { return false; }
};

constexpr Duration kLinger = seconds(10);

class WebSocketTransport : public ClientTransport {
 public:
  WebSocketTransport(const ExecUpgrade& up, size_t max_frame_bytes)
      : accept_(up.accept),
        protocol_(up.protocol),
        v5_(up.protocol == kExecProtocolV5),
        reader_({.max_message_bytes = max_frame_bytes, .require_mask = true}) {}

  net::HttpHeaders UpgradeHeaders() const override {
    return {{"Upgrade", "websocket"},
            {"Sec-WebSocket-Accept", accept_},
            {"Sec-WebSocket-Protocol", protocol_}};
  }
  bool Ready() const override { return true; }

  void OnClientBytes(std::string_view bytes, ClientInput* in) override {
    reader_.Feed(bytes);
    for (;;) {
      StatusOr<std::optional<net::WebSocketMessage>> m = reader_.Next();
      if (!m.ok()) {
        in->to_client += net::EncodeWebSocketClose(reader_.close_code(),
                                                   m.status().message());
        in->stop = true;
        return;
      }
      if (!m->has_value()) return;
      net::WebSocketMessage& msg = **m;
      switch (msg.opcode) {
        case net::WebSocketOpcode::kClose:
          in->to_client += net::EncodeWebSocketClose(
              net::WebSocketCloseReply(msg.payload), "");
          in->stop = true;
          return;
        case net::WebSocketOpcode::kPing:
          in->to_client += net::EncodeWebSocketFrame(
              net::WebSocketOpcode::kPong, msg.payload);
          break;
        case net::WebSocketOpcode::kBinary: {
          if (msg.payload.empty()) break;
          const uint8_t channel = static_cast<uint8_t>(msg.payload[0]);
          std::string_view payload = std::string_view(msg.payload).substr(1);
          if (channel == 0 && !stdin_closed_) {
            in->stdin_data.append(payload);
          } else if (v5_ && channel == 255 && payload.size() == 1 &&
                     payload[0] == 0 && !stdin_closed_) {
            stdin_closed_ = true;
            in->stdin_closed = true;
          }
          // 4 (resize) and others: nothing to do for the simulated shell.
          break;
        }
        default:
          break;  // text and pong messages carry nothing here
      }
    }
  }

  std::string Record(uint8_t channel, std::string_view payload) override {
    std::string msg(1, static_cast<char>(channel));
    msg += payload;
    return net::EncodeWebSocketFrame(net::WebSocketOpcode::kBinary, msg);
  }
  std::string End() override { return net::EncodeWebSocketClose(1000, ""); }
  std::string Abort(std::string_view why) override {
    return net::EncodeWebSocketClose(1000, why);
  }

 private:
  const std::string accept_;
  const std::string protocol_;
  const bool v5_;
  net::WebSocketReader reader_;
  bool stdin_closed_ = false;
};

// v3 and v2 carry a failure's message as text on the error stream, and
// nothing on success (kube's errorDecoderV2); v4 the Status JSON as is.
std::string StatusMessageText(std::string_view status_json) {
  rapidjson::Document doc;
  if (!json::ParseDom(status_json, &doc).ok() || !doc.IsObject()) {
    return std::string(status_json);
  }
  auto text = [&doc](const char* key) -> std::string {
    auto it = doc.FindMember(key);
    if (it == doc.MemberEnd() || !it->value.IsString()) return "";
    return std::string(it->value.GetString(), it->value.GetStringLength());
  };
  if (text("status") == "Success") return "";
  std::string message = text("message");
  return message.empty() ? std::string(status_json) : message;
}

class SpdyTransport : public ClientTransport {
 public:
  SpdyTransport(const ExecUpgrade& up, size_t max_frame_bytes)
      : protocol_(up.protocol),
        session_({.reader = {.max_frame_bytes = max_frame_bytes},
                  // error, stdin, stdout, stderr, resize; a few spare for
                  // the streams we reset.
                  .max_streams = 8}) {
    expected_.insert("error");
    if (up.stdin) expected_.insert("stdin");
    if (up.stdout) expected_.insert("stdout");
    if (up.stderr && !up.tty) expected_.insert("stderr");
    if (up.tty && up.protocol != kExecProtocolV2) expected_.insert("resize");
  }

  net::HttpHeaders UpgradeHeaders() const override {
    return {{"Upgrade", "SPDY/3.1"}, {"X-Stream-Protocol-Version", protocol_}};
  }
  bool Ready() const override { return ready_; }

  void OnClientBytes(std::string_view bytes, ClientInput* in) override {
    session_.Feed(bytes);
    for (;;) {
      StatusOr<std::optional<net::SpdyEvent>> e = session_.Next(&in->to_client);
      if (!e.ok()) {  // the GOAWAY is in to_client
        in->stop = true;
        return;
      }
      if (!e->has_value()) return;
      net::SpdyEvent& ev = **e;
      switch (ev.kind) {
        case net::SpdyEvent::kNewStream: {
          std::string type;
          for (const auto& [name, value] : ev.headers) {
            if (name == "streamtype") type = value;
          }
          if (ready_ || expected_.count(type) == 0 ||
              stream_ids_.count(type) != 0) {
            in->to_client += session_.Reset(ev.stream_id,
                                            net::SpdyRstStatus::kProtocolError);
            break;
          }
          stream_ids_[type] = ev.stream_id;
          in->to_client += session_.Reply(ev.stream_id);
          if (type == "stdin" && ev.fin) in->stdin_closed = true;
          if (stream_ids_.size() == expected_.size()) {
            ready_ = true;
            goaway_ = session_.GoAway(net::SpdyGoAwayStatus::kOk);
          }
          break;
        }
        case net::SpdyEvent::kData:
        case net::SpdyEvent::kReset: {
          auto it = stream_ids_.find("stdin");
          if (it == stream_ids_.end() || it->second != ev.stream_id ||
              stdin_closed_) {
            break;  // resize and the rest: nothing for the simulated shell
          }
          in->stdin_data.append(ev.data);
          if (ev.fin || ev.kind == net::SpdyEvent::kReset) {
            stdin_closed_ = true;
            in->stdin_closed = true;
          }
          break;
        }
        case net::SpdyEvent::kGoAway:
          in->stop = true;
          return;
      }
    }
  }

  std::string Record(uint8_t channel, std::string_view payload) override {
    const char* type = channel == 1   ? "stdout"
                       : channel == 2 ? "stderr"
                       : channel == 3 ? "error"
                                      : nullptr;
    if (type == nullptr) return "";
    auto it = stream_ids_.find(type);
    if (it == stream_ids_.end()) return "";
    if (channel == 3 && protocol_ != kExecProtocolV4) {
      std::string text = StatusMessageText(payload);
      return text.empty() ? "" : net::EncodeSpdyData(it->second, text, false);
    }
    return net::EncodeSpdyData(it->second, payload, false);
  }

  std::string End() override {
    std::string out;
    for (const char* type : {"stdout", "stderr", "error"}) {
      auto it = stream_ids_.find(type);
      if (it != stream_ids_.end()) {
        out += net::EncodeSpdyData(it->second, "", /*fin=*/true);
      }
    }
    return out + goaway_;
  }
  std::string Abort(std::string_view) override {
    return session_.GoAway(net::SpdyGoAwayStatus::kOk);
  }
  bool LingerAfterEnd() const override { return true; }

 private:
  const std::string protocol_;
  net::SpdyServerSession session_;
  std::set<std::string> expected_;
  std::map<std::string, uint32_t> stream_ids_;
  bool ready_ = false;
  bool stdin_closed_ = false;
  std::string goaway_;
};

std::unique_ptr<ClientTransport> MakeTransport(const ExecUpgrade& up,
                                               size_t max_frame_bytes) {
  if (up.transport == ExecUpgrade::Transport::kSpdy) {
    return std::make_unique<SpdyTransport>(up, max_frame_bytes);
  }
  return std::make_unique<WebSocketTransport>(up, max_frame_bytes);
}

}  // namespace

// ---------------------------------------------------------------------------
// PodExecProxy

PodExecProxy::PodExecProxy(PodExecOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      threads_(options_.max_streams, options_.max_streams_per_user) {}

PodExecProxy::~PodExecProxy() { Stop(); }

void PodExecProxy::Exec(const KubeletEndpoint& ep, std::string target,
                        ExecUpgrade upgrade, const std::string& user,
                        std::shared_ptr<net::Responder> r,
                        std::function<void(const ApiError&)> on_error,
                        std::function<void()> on_start) {
  std::optional<ApiError> refused = threads_.Start(
      "exec streams", user,
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
  // The kubelet's output is all sent (LingerAfterEnd): when, or 0.
  std::atomic<int64_t> output_done_ns{0};

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
  // A write that fails (the client left, or took nothing for the write
  // timeout) ends the session: a client that stops reading must not hold
  // both threads, and its exec slot, until the server stops.
  bool Send(int socket, std::string_view frame) {
    MutexLock l(&write_mu);
    if (WriteAll(socket, frame)) return true;
    End();
    return false;
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
  std::unique_ptr<ClientTransport> transport =
      MakeTransport(upgrade, options_.max_frame_bytes);
  const bool upgraded =
      net::UpgradeConnection(r, transport->UpgradeHeaders(), [session](int fd) {
        MutexLock l(&session->mu);
        session->have_fd = true;
        session->fd = fd;
        if (session->ended && fd >= 0) ::shutdown(fd, SHUT_RDWR);
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
  // Blocking from here: each direction has its thread. A send the client
  // takes nothing of for the idle timeout fails (Session::Send): its
  // pings alone keep the session from being idle.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        options_.idle_timeout)
                        .count();
    timeval tv{.tv_sec = static_cast<time_t>(us / 1000000),
               .tv_usec = static_cast<suseconds_t>(us % 1000000)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  session->Touch(clock_);
  const TimePoint upgraded_at = clock_->Now();

  // Kubelet to client: records become the transport's frames. Started once
  // the transport is ready (SPDY: the client's streams are open); until
  // then the kubelet's output waits in its connection.
  std::thread out;
  auto start_out = [&] {
    out = std::thread([&, session, fd] {
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
          const std::string frame =
              transport->Record((*rec)->channel, (*rec)->payload);
          if (!frame.empty() && !session->Send(fd, frame)) {
            ok = false;
            break;
          }
          session->Touch(clock_);
        }
        if (!more.ok() || !*more) break;
      }
      session->Send(fd, transport->End());
      if (transport->LingerAfterEnd()) {
        session->output_done_ns = clock_->Now().time_since_epoch().count();
      } else {
        session->End();
      }
    });
  };
  if (transport->Ready()) start_out();

  // Client to kubelet: stdin, its end, the transport's own frames.
  char buf[16 * 1024];
  bool stdin_closed = false;
  for (;;) {
    {
      MutexLock l(&session->mu);
      if (session->ended) break;
    }
    const TimePoint now = clock_->Now();
    if (const int64_t done = session->output_done_ns.load();
        done != 0 && now - TimePoint(TimePoint::duration(done)) >= kLinger) {
      break;  // the client did not close: close under it
    }
    const Duration idle =
        now - TimePoint(TimePoint::duration(session->last_activity_ns.load()));
    if (idle >= options_.idle_timeout) {
      session->Send(fd, transport->Abort("idle timeout"));
      break;
    }
    Duration wait =
        std::min<Duration>(options_.idle_timeout - idle, seconds(1));
    if (!out.joinable()) {
      const Duration waiting = now - upgraded_at;
      if (waiting >= options_.stream_creation_timeout) {
        session->Send(fd, transport->Abort("timed out waiting for streams"));
        break;
      }
      wait = std::min(wait, options_.stream_creation_timeout - waiting);
    }
    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(wait);
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    int pr = ::poll(&p, 1, static_cast<int>(wait_ms.count()) + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    if (pr == 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the client left (or the other side ended it)
    session->Touch(clock_);
    ClientInput in;
    transport->OnClientBytes(std::string_view(buf, static_cast<size_t>(n)),
                             &in);
    if (!in.to_client.empty()) session->Send(fd, in.to_client);
    if (!in.stdin_data.empty() && !stdin_closed &&
        !stream.Send(in.stdin_data).ok()) {
      break;
    }
    if (in.stdin_closed && !stdin_closed) {
      stdin_closed = true;
      if (!stream.CloseSend().ok()) break;
    }
    if (in.stop) break;
    if (!out.joinable() && transport->Ready()) start_out();
  }
  stream.Cancel();
  session->End();
  if (out.joinable()) out.join();
  {
    MutexLock l(&session->mu);
    session->fd = -1;
  }
  ::close(fd);  // the server flushes what was written and closes
  finish();
}

}  // namespace kplane::apiserver
