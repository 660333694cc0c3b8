// tests/e2e/hostile: every row of issue 15's table, sent by a hostile client
// to real `kplane store` and `kplane apiserver` processes (README.md).
//
// Each row runs through Row(): the attack on its own thread while a
// kubelet-like client renews its Lease, patches its Node's status and lists
// Leases on another connection, back to back. Then the verdicts:
//   - the attack got the answer docs/limits.md documents for that limit;
//   - every call of the well-behaved client during the attack succeeded;
//   - both processes are alive, /healthz (apiserver) and /health (store)
//     answer 200, and a create succeeds afterwards;
//   - each process's peak RSS during the row (VmHWM, reset before it) grew
//     by at most the row's bound over its RSS before the row.
// Each process's address space is capped (hostile_cluster.h), so a path
// that grows without bound fails here instead of swapping the machine.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/base64.h"
#include "base/mutex.h"
#include "base/testing/hostile_inputs.h"
#include "net/http_parser.h"
#include "net/tls.h"
#include "tests/e2e/hostile/hostile_cluster.h"

namespace kplane::e2e {
namespace {

using kplane::testing::HostileInput;
using kplane::testing::NestedJsonArrays;
using ::testing::HasSubstr;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

// Peak RSS growth allowed per process and row (MiB over the RSS before the
// row). The largest legal request is 3 MiB; parsing it, with its copies, a
// decoded tree and the answer, costs a few times that. Unbounded paths grew
// the processes by 700 MiB to several GiB (issue 15).
constexpr int64_t kRowBoundMiB = 64;

std::string ConfigMap(const std::string& name, const std::string& extra = "") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
         name + R"("},"data":{"k":"v"})" + extra + "}";
}

// One request on a connection of its own (the attacker's).
struct Reply {
  int code = -1;
  std::string body;
  net::HttpHeaders headers;
  std::string error;
};
// `tls`: over HTTPS with that client context (the store's port).
Reply Call(uint16_t port, const std::string& method, const std::string& path,
           const std::string& body = "", const std::string& content_type = "",
           Duration timeout = seconds(60),
           std::shared_ptr<const net::TlsContext> tls = nullptr) {
  net::HttpClient c(
      "127.0.0.1", port,
      net::HttpClientOptions{.read_timeout = timeout, .tls = std::move(tls)});
  net::HttpHeaders h;
  if (!content_type.empty()) h.Add("Content-Type", content_type);
  StatusOr<net::HttpResponse> r = c.Request(method, path, h, body);
  Reply out;
  if (!r.ok()) {
    out.error = r.status().ToString();
    return out;
  }
  out.code = r->status;
  out.body = std::move(r->body);
  out.headers = std::move(r->headers);
  return out;
}

// A Kubernetes Status with this code, reason and message part.
void ExpectStatus(const Reply& r, int code, const std::string& reason,
                  const std::string& message_part) {
  ASSERT_EQ(r.code, code) << r.error << r.body.substr(0, 500);
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("kind") && d["kind"].IsString() &&
              d.HasMember("reason") && d["reason"].IsString() &&
              d.HasMember("message") && d["message"].IsString())
      << r.body.substr(0, 500);
  EXPECT_STREQ(d["kind"].GetString(), "Status");
  EXPECT_EQ(d["reason"].GetString(), reason);
  EXPECT_THAT(d["message"].GetString(), HasSubstr(message_part));
}

// A client socket for bytes no well-formed client sends. Reads wait on
// poll(); deadlines only turn a hang into a failure. With a TLS context the
// bytes travel inside a TLS session (the store's port), the socket is then
// non-blocking and the session is driven here.
class RawConn {
 public:
  // `rcvbuf` > 0: a small receive buffer (a client that reads nothing then
  // holds little in its kernel buffer, so the server's side fills up).
  explicit RawConn(uint16_t port, int rcvbuf = 0,
                   std::shared_ptr<const net::TlsContext> tls = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    if (tls != nullptr && !Handshake(std::move(tls))) {
      tls_.reset();
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConn() {
    tls_.reset();  // the session borrows the socket
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool ok() const { return fd_ >= 0; }

  enum SendResult { kSent, kClosed, kStalled };
  // Sends all of `data`; kClosed when the peer closed or reset the
  // connection, kStalled when it accepted nothing for `stall`.
  SendResult Send(std::string_view data, Duration stall = seconds(30)) {
    while (!data.empty()) {
      pollfd p{fd_, POLLOUT, 0};
      const int n = ::poll(&p, 1, static_cast<int>(ToMillis(stall)));
      if (n == 0) return kStalled;
      if (n < 0 || (p.revents & (POLLERR | POLLHUP))) return kClosed;
      if (tls_ != nullptr) {
        size_t written = 0;
        switch (tls_->Write(data.data(), data.size(), &written)) {
          case net::TlsSession::Result::kOk:
            data.remove_prefix(written);
            continue;
          case net::TlsSession::Result::kWantWrite:
            continue;  // poll for POLLOUT again
          case net::TlsSession::Result::kWantRead:
            if (!WaitFor(POLLIN, stall)) return kStalled;
            continue;
          default:
            return kClosed;
        }
      }
      const ssize_t sent =
          ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return kClosed;
      }
      data.remove_prefix(static_cast<size_t>(sent));
    }
    return kSent;
  }

  struct Response {
    int code = -1;          // -1: no complete head arrived
    std::string head;       // the raw head, status line to blank line
    std::string body;       // at most `keep` bytes of the payload
    size_t body_bytes = 0;  // payload bytes seen
    bool ended = false;     // the body ended or the connection closed
    bool eof = false;       // the connection closed
  };
  // Reads one response (for `method`) until its body ends, the connection
  // closes, or `deadline` passes (then ended is false).
  Response ReadResponse(const std::string& method, Duration deadline,
                        size_t keep = 1 << 20) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    net::HttpResponse resp;
    Response out = ReadHeadUntil(until, &resp);
    if (out.code < 0) return out;
    StatusOr<net::BodyFraming> framing = net::ResponseBodyFraming(method, resp);
    if (!framing.ok()) return out;
    net::BodyDecoder decoder(*framing);
    std::string payload;
    for (;;) {
      StatusOr<size_t> used = decoder.Decode(buf_, &payload);
      if (!used.ok()) return out;
      buf_.erase(0, *used);
      out.body_bytes += payload.size();
      if (out.body.size() < keep) {
        out.body.append(payload, 0, keep - out.body.size());
      }
      payload.clear();
      if (decoder.done()) {
        out.ended = true;
        return out;
      }
      if (!ReadSome(until)) {
        out.ended = out.eof = eof_;
        return out;
      }
    }
  }

  // Reads only the head of the next response (a watch's body never ends).
  Response ReadHead(Duration deadline) {
    net::HttpResponse resp;
    return ReadHeadUntil(std::chrono::steady_clock::now() + deadline, &resp);
  }

  // True when bytes or an EOF from the peer wait to be read.
  bool Readable() {
    if (!buf_.empty() || eof_) return true;
    pollfd p{fd_, POLLIN, 0};
    if (tls_ == nullptr) return ::poll(&p, 1, 0) > 0;
    // Over TLS a readable socket may hold only records that carry no data
    // (TLS 1.3 session tickets): read what there is to tell.
    if (tls_->Pending() == 0 && ::poll(&p, 1, 0) <= 0) return false;
    ReadTlsOnce();
    return !buf_.empty() || eof_;
  }
  // Reads until the peer ends its side: true if it did within `deadline`.
  // What arrived meanwhile stays in unread().
  bool WaitEof(Duration deadline) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (ReadSome(until)) {
    }
    return eof_;
  }
  const std::string& unread() const { return buf_; }
  // For a peer that has ended its side: sends it a byte every `probe`
  // until one is answered with a reset (the peer closed the connection;
  // only a probe can tell). True then, false at `deadline`.
  bool WaitReset(Duration deadline, Duration probe = milliseconds(100)) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < until) {
      if (::send(fd_, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
          errno != EAGAIN && errno != EINTR) {
        return true;
      }
      pollfd p{fd_, 0, 0};  // POLLERR and POLLHUP only
      if (::poll(&p, 1, static_cast<int>(ToMillis(probe))) > 0) return true;
    }
    return false;
  }

 private:
  Response ReadHeadUntil(std::chrono::steady_clock::time_point until,
                         net::HttpResponse* resp) {
    Response out;
    size_t scan = 0;
    for (;;) {
      net::HeadResult r = net::ParseResponseHead(buf_, &scan, {}, resp);
      if (r.kind == net::HeadResult::kError) return out;
      if (r.kind == net::HeadResult::kComplete) {
        out.code = resp->status;
        out.head = buf_.substr(0, r.head_length);
        buf_.erase(0, r.head_length);
        return out;
      }
      if (!ReadSome(until)) {
        out.ended = out.eof = eof_;
        return out;
      }
    }
  }

  static int64_t ToMillis(Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }
  // Waits up to `timeout` for `events` on the socket.
  bool WaitFor(short events, Duration timeout) {
    pollfd p{fd_, events, 0};
    const int64_t ms = std::max<int64_t>(0, ToMillis(timeout));
    return ::poll(&p, 1, static_cast<int>(ms)) > 0;
  }

  // The client's side of the TLS handshake on a non-blocking socket.
  bool Handshake(std::shared_ptr<const net::TlsContext> ctx) {
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) != 0) {
      return false;
    }
    StatusOr<std::unique_ptr<net::TlsSession>> session =
        net::TlsSession::NewClient(std::move(ctx), fd_, "127.0.0.1");
    if (!session.ok()) return false;
    tls_ = std::move(*session);
    for (;;) {
      switch (tls_->Handshake()) {
        case net::TlsSession::Result::kOk:
          return true;
        case net::TlsSession::Result::kWantRead:
          if (!WaitFor(POLLIN, seconds(10))) return false;
          break;
        case net::TlsSession::Result::kWantWrite:
          if (!WaitFor(POLLOUT, seconds(10))) return false;
          break;
        default:
          return false;
      }
    }
  }

  // One TLS read: decrypted bytes to buf_, or eof_ when the stream ended.
  // False when nothing could be read without waiting.
  bool ReadTlsOnce() {
    char tmp[65536];
    size_t got = 0;
    switch (tls_->Read(tmp, sizeof(tmp), &got)) {
      case net::TlsSession::Result::kOk:
        buf_.append(tmp, got);
        return true;
      case net::TlsSession::Result::kWantRead:
      case net::TlsSession::Result::kWantWrite:
        return false;
      default:
        eof_ = true;
        return true;
    }
  }

  // Appends what arrives; false on EOF or at the deadline.
  bool ReadSome(std::chrono::steady_clock::time_point until) {
    if (eof_) return false;
    if (tls_ != nullptr) {
      for (;;) {
        if (tls_->Pending() > 0 || WaitFor(POLLIN, Left(until))) {
          if (ReadTlsOnce()) return !eof_;
        }
        if (Left(until) <= Duration::zero()) return false;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  static Duration Left(std::chrono::steady_clock::time_point until) {
    return std::chrono::duration_cast<Duration>(
        until - std::chrono::steady_clock::now());
  }

  int fd_ = -1;
  std::unique_ptr<net::TlsSession> tls_;  // null over plain TCP
  std::string buf_;
  bool eof_ = false;
};

// What the well-behaved client has done while an attack runs; lets the
// attack wait until the client was served a number of times while the
// attack's state (open connections, unread streams) is in place.
class Meanwhile {
 public:
  // Blocks until `n` more rounds of the well-behaved client completed
  // (each round: renew Lease, patch Node status, list Leases). Returns
  // false if that took more than a minute (a hang, not a measure).
  bool WaitRounds(int n) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    const int target = rounds_ + n;
    return cv_.wait_for(l.native(), std::chrono::seconds(60),
                        [&]() REQUIRES(mu_) { return rounds_ >= target; });
  }
  void RoundDone() EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      ++rounds_;
    }
    cv_.notify_all();
  }
  void AttackDone() { attack_done_.store(true); }
  bool attack_done() const { return attack_done_.load(); }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int rounds_ GUARDED_BY(mu_) = 0;
  std::atomic<bool> attack_done_{false};
};

class HostileTest : public ::testing::Test {
 protected:
  void Start(HostileClusterOptions options = {}) {
    StatusOr<std::unique_ptr<HostileCluster>> c =
        HostileCluster::Start(std::move(options));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    kubelet_ =
        std::make_unique<WellBehavedClient>(cluster_->api_port(), "node-1");
    Status st = kubelet_->Setup();
    ASSERT_TRUE(st.ok()) << st;
  }

  void TearDown() override {
    if (HasFailure() && cluster_) std::cerr << cluster_->LogTails() << "\n";
  }

  uint16_t api() const { return cluster_->api_port(); }
  uint16_t store() const { return cluster_->store_port(); }
  // One request to the store on a connection of its own (over TLS with the
  // harness's certificate unless KPLANE_STORE_TLS=0).
  Reply StoreCall(const std::string& method, const std::string& path,
                  const std::string& body = "",
                  const std::string& content_type = "") {
    return Call(store(), method, path, body, content_type, seconds(60),
                cluster_->store_tls());
  }

  // One row of the table: `attack` on its own thread while the well-behaved
  // client is served here; then the verdicts of the file comment.
  void Row(const std::string& row, int64_t bound_mib,
           const std::function<void(Meanwhile*)>& attack) {
    Row(row, bound_mib, bound_mib, attack);
  }
  void Row(const std::string& row, int64_t api_bound_mib,
           int64_t store_bound_mib,
           const std::function<void(Meanwhile*)>& attack) {
    SCOPED_TRACE("row: " + row);
    const pid_t api_pid = cluster_->api_pid();
    const pid_t store_pid = cluster_->store_pid();
    ASSERT_TRUE(ResetPeakRss(api_pid).ok());
    ASSERT_TRUE(ResetPeakRss(store_pid).ok());
    StatusOr<ProcMemory> api0 = ReadProcMemory(api_pid);
    StatusOr<ProcMemory> store0 = ReadProcMemory(store_pid);
    ASSERT_TRUE(api0.ok() && store0.ok());

    Meanwhile meanwhile;
    std::thread attacker([&] {
      attack(&meanwhile);
      meanwhile.AttackDone();
    });
    int rounds = 0;
    std::vector<std::string> failures;
    do {
      const int lease = kubelet_->RenewLease();
      const int node = kubelet_->PatchNodeStatus();
      const int list = kubelet_->ListLeases();
      if (lease != 200 || node != 200 || list != 200) {
        failures.push_back("lease " + std::to_string(lease) + ", node " +
                           std::to_string(node) + ", list " +
                           std::to_string(list));
      }
      ++rounds;
      meanwhile.RoundDone();
    } while (!meanwhile.attack_done());
    attacker.join();
    EXPECT_TRUE(failures.empty())
        << failures.size() << " of " << rounds
        << " rounds of the well-behaved client failed during the attack; "
           "first: "
        << failures.front();

    const bool api_alive = ProcessAlive(api_pid);
    const bool store_alive = ProcessAlive(store_pid);
    EXPECT_TRUE(api_alive) << "the apiserver died";
    EXPECT_TRUE(store_alive) << "the store died";
    EXPECT_EQ(Call(api(), "GET", "/healthz").code, 200);
    Reply health = StoreCall("GET", "/health");
    EXPECT_EQ(health.code, 200) << health.body;
    EXPECT_EQ(kubelet_->CreateConfigMap("after-" + std::to_string(++rows_)),
              201);

    StatusOr<ProcMemory> api1 = ReadProcMemory(api_pid);
    StatusOr<ProcMemory> store1 = ReadProcMemory(store_pid);
    ASSERT_TRUE(api1.ok() && store1.ok());
    const int64_t api_growth = (api1->hwm_kib - api0->rss_kib) / 1024;
    const int64_t store_growth = (store1->hwm_kib - store0->rss_kib) / 1024;
    std::cout << "FIGURE row \"" << row << "\": apiserver RSS "
              << api0->rss_kib / 1024 << " MiB, peak +" << api_growth
              << " MiB; store RSS " << store0->rss_kib / 1024 << " MiB, peak +"
              << store_growth << " MiB (bounds +" << api_bound_mib << ", +"
              << store_bound_mib << " MiB); well-behaved rounds: " << rounds
              << std::endl;
    EXPECT_LE(api_growth, api_bound_mib) << "apiserver peak RSS growth";
    EXPECT_LE(store_growth, store_bound_mib) << "store peak RSS growth";
  }

  // The apiserver's counter `name` summed over the series whose labels
  // include every one of `labels` (`key="value"`).
  int64_t ApiCounter(const std::string& name,
                     const std::vector<std::string>& labels) {
    Reply m = Call(api(), "GET", "/metrics");
    EXPECT_EQ(m.code, 200);
    int64_t n = 0;
    std::istringstream in(m.body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(name + "{", 0) != 0) continue;
      bool match = true;
      for (const std::string& l : labels) {
        match = match && line.find(l) != std::string::npos;
      }
      if (match) {
        n += std::strtoll(line.c_str() + line.rfind(' ') + 1, nullptr, 10);
      }
    }
    return n;
  }
  // LISTs of configmaps the apiserver answered with 200 so far
  // (apiserver_request_total, summed over its other labels).
  int64_t ServedConfigMapLists() {
    return ApiCounter(
        "apiserver_request_total",
        {"verb=\"LIST\"", "resource=\"configmaps\"", "code=\"200\""});
  }
  // Creates ConfigMaps big-0 .. big-<n-1> of 200 KiB each.
  void CreateBigConfigMaps(int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(
          Call(api(), "POST", kConfigMaps,
               R"({"metadata":{"name":"big-)" + std::to_string(i) +
                   R"("},"data":{"v":")" + std::string(200 << 10, 'x') + "\"}}",
               "application/json")
              .code,
          201);
    }
  }
  // The apiserver's unlabelled gauge `name` (-1 if it is not exported).
  int64_t ApiGauge(const std::string& name) {
    Reply m = Call(api(), "GET", "/metrics");
    EXPECT_EQ(m.code, 200);
    std::istringstream in(m.body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(name + " ", 0) == 0) {
        return std::strtoll(line.c_str() + name.size() + 1, nullptr, 10);
      }
    }
    return -1;
  }
  // ConfigMap watches the watch cache closed as too slow so far.
  int64_t TerminatedConfigMapWatchers() {
    return ApiCounter("apiserver_terminated_watchers_total",
                      {"resource=\"configmaps\""});
  }

  std::unique_ptr<HostileCluster> cluster_;
  std::unique_ptr<WellBehavedClient> kubelet_;
  int rows_ = 0;
};

// ---------------------------------------------------------------------------
// Rows fixed on main: the parsers (docs/limits.md, "Parsers").

TEST_F(HostileTest, DeepJson) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a 200 KB ConfigMap nested 100,000 deep", kRowBoundMiB, [&](Meanwhile*) {
    const std::string body =
        ConfigMap("deep", ",\"x\":" + NestedJsonArrays(100000));
    ASSERT_GT(body.size(), 200000u);
    ExpectStatus(Call(api(), "POST", kConfigMaps, body, "application/json"),
                 400, "BadRequest", "exceeded max depth of 10000");
  });
  Row("a Secret's .dockerconfigjson nested 1 MiB deep", kRowBoundMiB,
      [&](Meanwhile*) {
        const std::string body =
            R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"pull"},)"
            R"("type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":")" +
            Base64Encode(std::string(1 << 20, '[')) + "\"}}";
        ExpectStatus(Call(api(), "POST", "/api/v1/namespaces/default/secrets",
                          body, "application/json"),
                     422, "Invalid", "invalid JSON");
      });
  Row("a strategic merge patch nested 100,000 deep", kRowBoundMiB,
      [&](Meanwhile*) {
        ASSERT_EQ(Call(api(), "POST", kConfigMaps, ConfigMap("target"),
                       "application/json")
                      .code,
                  201);
        ExpectStatus(Call(api(), "PATCH", std::string(kConfigMaps) + "/target",
                          "{\"x\":" + NestedJsonArrays(100000) + "}",
                          "application/strategic-merge-patch+json"),
                     400, "BadRequest", "exceeded max depth of 10000");
      });
}

TEST_F(HostileTest, DeepStoreJson) {
  ASSERT_NO_FATAL_FAILURE(Start());
  // application/json: the gateway refuses text/plain unread (issue 18).
  Row("a 2 MB JSON /v3/kv/put body nested 1,000,000 deep", kRowBoundMiB,
      [&](Meanwhile*) {
        const int depth = 1000000;
        const std::string body =
            R"({"key":"YQ==","value":)" + NestedJsonArrays(depth) + "}";
        Reply r = StoreCall("POST", "/v3/kv/put", body, "application/json");
        EXPECT_EQ(r.code, 400) << r.error << r.body.substr(0, 300);
        EXPECT_THAT(r.body, HasSubstr("\"code\":3"));
        EXPECT_THAT(r.body, HasSubstr("exceeded max depth of 10000"));
        r = StoreCall("POST", "/v3/kv/put",
                      HostileInput("etcd_json/put_deep_10001.json"),
                      "application/json");
        EXPECT_EQ(r.code, 400) << r.error << r.body.substr(0, 300);
        EXPECT_THAT(r.body, HasSubstr("exceeded max depth of 10000"));
      });
  // The store still takes a well-formed put.
  Reply ok = StoreCall("POST", "/v3/kv/put", R"({"key":"YQ==","value":"Yg=="})",
                       "application/json");
  EXPECT_EQ(ok.code, 200) << ok.body;
}

TEST_F(HostileTest, YamlAliasCycles) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a 68-byte application/yaml POST with x: &a [*a]", kRowBoundMiB,
      [&](Meanwhile*) {
        const std::string yaml =
            HostileInput("yaml/alias_cycle_configmap.yaml");
        ExpectStatus(Call(api(), "POST", kConfigMaps, yaml, "application/yaml"),
                     400, "BadRequest",
                     "yaml: anchor 'a' value contains itself");
      });
  Row("a 70-byte server-side apply with x: &a [*a]", kRowBoundMiB,
      [&](Meanwhile*) {
        ExpectStatus(
            Call(api(), "PATCH", std::string(kConfigMaps) + "/x?fieldManager=m",
                 HostileInput("yaml/alias_cycle_apply.yaml"),
                 "application/apply-patch+yaml"),
            400, "BadRequest", "yaml: anchor 'a' value contains itself");
      });
}

TEST_F(HostileTest, ExpansionBombs) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a 536-byte billion laughs server-side apply", kRowBoundMiB,
      [&](Meanwhile*) {
        const std::string yaml = HostileInput("yaml/billion_laughs.yaml");
        ExpectStatus(Call(api(), "PATCH",
                          std::string(kConfigMaps) + "/laughs?fieldManager=m",
                          yaml, "application/apply-patch+yaml"),
                     400, "BadRequest", "excessive aliasing");
      });
  Row("a 2.4 MB YAML aliasing one 2 MiB string 100,000 times", kRowBoundMiB,
      [&](Meanwhile*) {
        std::string yaml =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
            "data:\n  s: &s " +
            std::string(2 << 20, 'x') + "\n  l: [";
        for (int i = 0; i < 100000; ++i) yaml += i ? ",*s" : "*s";
        yaml += "]\n";
        ASSERT_LT(yaml.size(), 3u << 20);
        ExpectStatus(Call(api(), "POST", kConfigMaps, yaml, "application/yaml"),
                     400, "BadRequest", "excessive aliasing");
      });
  Row("a 3 KB JSON patch copying a value into itself 40 times", kRowBoundMiB,
      [&](Meanwhile*) {
        ASSERT_EQ(Call(api(), "POST", kConfigMaps, ConfigMap("target"),
                       "application/json")
                      .code,
                  201);
        ExpectStatus(Call(api(), "PATCH", std::string(kConfigMaps) + "/target",
                          HostileInput("json_patch/self_copy_40.json"),
                          "application/json-patch+json"),
                     422, "Invalid",
                     "unable to copy, the accumulated size increase of copy "
                     "is");
      });
}

// Body read timeout; an in-flight slot only while a request is served.
// 600 connections send a head and 1 body byte: 200 mutating and 400
// read-only ones, as many as the default in-flight limits
// (--max-mutating-requests-inflight 200, --max-requests-inflight 400).
// kBodyTimeoutFlag sets HttpServerOptions::body_timeout (default 60 s,
// kube's request timeout), shortened so the row ends soon.
constexpr char kBodyTimeoutFlag[] = "--request-body-timeout";
TEST_F(HostileTest, SlowBodiesHoldNoSlots) {
  ASSERT_NO_FATAL_FAILURE(Start({.apiserver_flags = {kBodyTimeoutFlag, "3s"}}));
  Row("600 connections that send headers and 1 body byte", kRowBoundMiB,
      [&](Meanwhile* meanwhile) {
        std::vector<std::unique_ptr<RawConn>> slow;
        for (int i = 0; i < 600; ++i) {
          const bool write = i < 200;
          auto c = std::make_unique<RawConn>(api());
          ASSERT_TRUE(c->ok()) << "connection " << i;
          const std::string head =
              std::string(write ? "POST " : "GET ") + kConfigMaps +
              " HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              "Content-Length: 100\r\n\r\n{";
          ASSERT_EQ(c->Send(head), RawConn::kSent);
          slow.push_back(std::move(c));
        }
        // The well-behaved client (mutating and read-only calls) is served
        // while all 600 bodies are still trickling in.
        ASSERT_TRUE(meanwhile->WaitRounds(10));
        // Each slow body is cut off: 408, then the connection closes.
        int timed_out = 0;
        for (auto& c : slow) {
          RawConn::Response r = c->ReadResponse("POST", seconds(60));
          if (r.code == 408 && r.ended) ++timed_out;
        }
        EXPECT_EQ(timed_out, 600);
      });
}

// Pipelined reads pause while output is pending; a default per-connection
// output cap. 162 KB of pipelined LISTs (3,500 of them) on one connection
// whose client never reads; each LIST answers 2 MB. The server must not keep
// serving them into memory: it may answer the first (the output of one request
// is never cut) and must then wait for the client to read. The window is the
// well-behaved client's 200 rounds, or until the server has served 20 of these
// LISTs (then it is not pausing, and the row fails however fast memory grew).
TEST_F(HostileTest, PipelinedUnreadLists) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(CreateBigConfigMaps(10));  // 2 MB
  const int64_t lists_before = ServedConfigMapLists();
  Row("162 KB of pipelined LISTs on one connection, never read", kRowBoundMiB,
      [&](Meanwhile* meanwhile) {
        RawConn c(api(), 4096);
        ASSERT_TRUE(c.ok());
        const std::string get =
            std::string("GET ") + kConfigMaps + " HTTP/1.1\r\nHost: a\r\n\r\n";
        std::string pipelined;
        while (pipelined.size() < 162 * 1000) pipelined += get;
        // The kernel's buffers take it all whether the server reads or not.
        ASSERT_EQ(c.Send(pipelined), RawConn::kSent);
        for (int i = 0; i < 20; ++i) {
          ASSERT_TRUE(meanwhile->WaitRounds(10));
          if (ServedConfigMapLists() - lists_before >= 20) break;
        }
        EXPECT_LE(ServedConfigMapLists() - lists_before, 2)
            << "LISTs served to a client that reads nothing";
        // The first answer is there, whole, for a client that reads.
        RawConn::Response r = c.ReadResponse("GET", seconds(30), 0);
        EXPECT_EQ(r.code, 200);
        EXPECT_TRUE(r.ended);
        EXPECT_GT(r.body_bytes, 2000000u);
      });
}

// A LIST whose client reads its head and then nothing: the stream holds
// only its bounded backlog (docs/limits.md), and only until
// --request-timeout (kube-apiserver's 60 s; 3 s here), when the connection
// closes without the body's end and the list's snapshot is freed
// (apiserver_list_streams_open back to 0). Without the deadline the stream
// stays open as long as the client does.
TEST_F(HostileTest, StalledListIsCutAtTheRequestTimeout) {
  ASSERT_NO_FATAL_FAILURE(
      Start({.apiserver_flags = {"--request-timeout", "3s"}}));
  // 8 MB: more than the kernel's socket buffers hold.
  ASSERT_NO_FATAL_FAILURE(CreateBigConfigMaps(40));
  Row("an 8 MB LIST whose client reads only the head", kRowBoundMiB,
      [&](Meanwhile* meanwhile) {
        RawConn c(api(), 4096);
        ASSERT_TRUE(c.ok());
        ASSERT_EQ(c.Send(std::string("GET ") + kConfigMaps +
                         " HTTP/1.1\r\nHost: a\r\n\r\n"),
                  RawConn::kSent);
        RawConn::Response head = c.ReadHead(seconds(30));
        ASSERT_EQ(head.code, 200);
        ASSERT_EQ(ApiGauge("apiserver_list_streams_open"), 1)
            << "the LIST was not streamed";
        // Checked between the well-behaved client's rounds, for up to 20 s.
        const auto until = std::chrono::steady_clock::now() + seconds(20);
        bool freed = false;
        while (!freed && std::chrono::steady_clock::now() < until) {
          ASSERT_TRUE(meanwhile->WaitRounds(1));
          freed = ApiGauge("apiserver_list_streams_open") == 0;
        }
        EXPECT_TRUE(freed) << "the stalled LIST outlived --request-timeout";
      });
}

// 20 watches that never read while ~36 MB of events are written (40
// updates of a 900 KB ConfigMap, under the 1 MiB ConfigMap limit). Each
// watch is paced to a 256 KiB buffer, its later events queue in the watch
// cache, and once its queue would pass 16 MiB (--max-watch-pending-bytes)
// the server drops the connection, as kube-apiserver ends a watcher that
// cannot keep up (the client relists) (docs/limits.md, "Watches and
// streams").
//
// Writing 36 MB costs memory by itself (a fresh pair grows by ~250-300
// MiB: the store's raft log and memtable, copies of each 900 KB object on
// many worker threads' malloc arenas). So this row's bound is the growth
// of the same writes with no watcher (measured first, in this test) plus
// kRowBoundMiB. Without the watch bounds the apiserver grew by ~800 MiB
// more (issue 15).
TEST_F(HostileTest, UnreadWatches) {
  // A short watch cache window: the cache keeps 8 events, not 10,000.
  ASSERT_NO_FATAL_FAILURE(
      Start({.apiserver_flags = {"--default-watch-cache-size", "8"}}));
  ASSERT_EQ(
      Call(api(), "POST", kConfigMaps, ConfigMap("churn"), "application/json")
          .code,
      201);
  const std::string value(900 << 10, 'v');
  int version = 0;
  auto write_events = [&] {
    for (int i = 0; i < 40; ++i) {
      Reply r = Call(api(), "PUT", std::string(kConfigMaps) + "/churn",
                     R"({"metadata":{"name":"churn"},"data":{"v":")" +
                         std::to_string(++version) + value + "\"}}",
                     "application/json");
      ASSERT_EQ(r.code, 200) << r.error << r.body.substr(0, 300);
    }
  };
  // The control: the same writes, nobody watching.
  ASSERT_TRUE(ResetPeakRss(cluster_->api_pid()).ok());
  ASSERT_TRUE(ResetPeakRss(cluster_->store_pid()).ok());
  StatusOr<ProcMemory> api0 = ReadProcMemory(cluster_->api_pid());
  StatusOr<ProcMemory> store0 = ReadProcMemory(cluster_->store_pid());
  ASSERT_NO_FATAL_FAILURE(write_events());
  StatusOr<ProcMemory> api1 = ReadProcMemory(cluster_->api_pid());
  StatusOr<ProcMemory> store1 = ReadProcMemory(cluster_->store_pid());
  ASSERT_TRUE(api0.ok() && store0.ok() && api1.ok() && store1.ok());
  const int64_t api_control = (api1->hwm_kib - api0->rss_kib) / 1024;
  const int64_t store_control = (store1->hwm_kib - store0->rss_kib) / 1024;
  std::cout << "FIGURE control: 36 MB of events, no watcher: apiserver peak +"
            << api_control << " MiB, store peak +" << store_control << " MiB"
            << std::endl;

  const int64_t terminated_before = TerminatedConfigMapWatchers();
  Row("20 watches that never read, ~36 MB of events",
      api_control + kRowBoundMiB, store_control + kRowBoundMiB,
      [&](Meanwhile*) {
        std::vector<std::unique_ptr<RawConn>> watches;
        for (int i = 0; i < 20; ++i) {
          auto c = std::make_unique<RawConn>(api(), 4096);
          ASSERT_TRUE(c->ok());
          ASSERT_EQ(c->Send(std::string("GET ") + kConfigMaps +
                            "?watch=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
                    RawConn::kSent);
          watches.push_back(std::move(c));
        }
        ASSERT_NO_FATAL_FAILURE(write_events());
        // Every unread watch ends (the server closes it or ends its body)
        // while its client still reads nothing but what is in flight.
        std::vector<std::thread> readers;
        std::atomic<int> ended{0};
        for (auto& w : watches) {
          readers.emplace_back([&w, &ended] {
            RawConn::Response r = w->ReadResponse("GET", seconds(30), 0);
            if (r.ended) ended.fetch_add(1);
          });
        }
        for (std::thread& t : readers) t.join();
        EXPECT_EQ(ended.load(), 20);
        // Each by the watch cache, for falling behind.
        EXPECT_EQ(TerminatedConfigMapWatchers() - terminated_before, 20);
      });
}

// An unterminated JSON object streamed into the store's /v3/watch. The
// store refuses the object once it passes etcd's gRPC message limit
// (--max-request-bytes + 512 KiB, 2 MiB): it answers 429 with etcd's code
// 8 and `Connection: close`, then ends its side (the client reads the
// answer, then EOF). It parses no more of the request: what still arrives
// is discarded for the lingering close (2 s, so that the client reads the
// answer rather than a reset; net/README.md), then the connection is
// closed (docs/limits.md, "Watches and streams").
TEST_F(HostileTest, UnterminatedStoreWatchJson) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("an unterminated JSON object streamed into the store's /v3/watch",
      kRowBoundMiB, [&](Meanwhile*) {
        RawConn c(store(), 0, cluster_->store_tls());
        ASSERT_TRUE(c.ok());
        std::string head =
            "POST /v3/watch HTTP/1.1\r\nHost: a\r\nContent-Type: "
            "application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        const std::string open = R"({"create_request":{"key":"x)";
        char size[16];
        std::snprintf(size, sizeof(size), "%zx\r\n", open.size());
        ASSERT_EQ(c.Send(head + size + open + "\r\n"), RawConn::kSent);
        const std::string mib(1 << 20, 'x');
        std::snprintf(size, sizeof(size), "%zx\r\n", mib.size());
        const std::string chunk = size + mib + "\r\n";
        // The object grows a MiB at a time until the store answers.
        int mibs = 0;
        for (; mibs < 128 && !c.Readable(); ++mibs) {
          ASSERT_EQ(c.Send(chunk), RawConn::kSent)
              << "the store stopped taking bytes after " << mibs
              << " MiB without an answer";
        }
        std::cout << "FIGURE the store answered an unterminated /v3/watch "
                     "object after "
                  << mibs << " MiB had been sent" << std::endl;
        ASSERT_LT(mibs, 128)
            << "the store took 128 MiB of one unterminated object";
        RawConn::Response r = c.ReadResponse("POST", seconds(30));
        EXPECT_EQ(r.code, 429) << r.head << r.body.substr(0, 300);
        EXPECT_THAT(r.head, HasSubstr("Connection: close"));
        EXPECT_THAT(r.body, HasSubstr("\"code\":8"));
        EXPECT_THAT(r.body,
                    HasSubstr("grpc: received message larger than max"));
        EXPECT_TRUE(r.ended) << "the answer's body did not end";
        // The answer is all: then the store's side ends.
        EXPECT_TRUE(c.WaitEof(seconds(30))) << "no EOF after the answer";
        EXPECT_EQ(c.unread(), "") << "bytes after the answer";
        // Once its linger is over the store closes the connection: a byte
        // sent then is refused.
        EXPECT_TRUE(c.WaitReset(seconds(60)))
            << "the connection stayed open after the linger";
      });
}

// Metric labels only from known resources/verbs. 2,000 requests to
// /apis/<random>/<v> (the issue sent 20,000; 2,000 show the same growth in a
// tenth of the time).
TEST_F(HostileTest, RandomGroupMetricSeries) {
  ASSERT_NO_FATAL_FAILURE(Start());
  // The series (a sample line up to its value) /metrics shows.
  auto series = [&] {
    Reply m = Call(api(), "GET", "/metrics");
    EXPECT_EQ(m.code, 200);
    std::set<std::string> out;
    std::istringstream in(m.body);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] != '#') {
        out.insert(line.substr(0, line.rfind(' ')));
      }
    }
    return out;
  };
  // Every series a request can create exists once already: a 404 like the
  // attack's, and the well-behaved client's calls (one round, and the
  // ConfigMap Row creates after the attack): they would add series too.
  EXPECT_EQ(Call(api(), "GET", "/apis/warmup.example.com/v1/things").code, 404);
  EXPECT_EQ(kubelet_->CreateConfigMap("warmup"), 201);
  EXPECT_EQ(kubelet_->RenewLease(), 200);
  EXPECT_EQ(kubelet_->PatchNodeStatus(), 200);
  EXPECT_EQ(kubelet_->ListLeases(), 200);
  const std::set<std::string> before = series();
  Row("2,000 requests to /apis/<random>/<v>", kRowBoundMiB, [&](Meanwhile*) {
    net::HttpClient c("127.0.0.1", api());
    std::mt19937_64 rng(15);
    int not_found = 0;
    for (int i = 0; i < 2000; ++i) {
      const std::string group = "g" + std::to_string(rng()) + ".example.com";
      StatusOr<net::HttpResponse> r =
          c.Request("GET", "/apis/" + group + "/v" + std::to_string(i % 7) +
                               "/r" + std::to_string(rng() % 1000));
      if (r.ok() && r->status == 404) ++not_found;
    }
    EXPECT_EQ(not_found, 2000);
  });
  const std::set<std::string> after = series();
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  std::string first;
  for (size_t i = 0; i < added.size() && i < 5; ++i) {
    first += "\n  " + added[i];
  }
  EXPECT_LE(added.size(), 20u)
      << "metric series grew by " << added.size() << ", e.g." << first;
  for (const std::string& s : added) {
    ASSERT_EQ(s.find(".example.com"), std::string::npos)
        << "a label taken from the URL: " << s;
  }
}

// A field named "a\r\nX-Injected: yes" in a create: the unknown-field
// warning quotes the name as Go's %q (the apiserver), and the HTTP server
// drops any header field that still holds CR/LF, so nothing is injected and
// the warning itself is still sent.
TEST_F(HostileTest, HeaderInjection) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a field named a\\r\\nX-Injected: yes in a create", kRowBoundMiB,
      [&](Meanwhile*) {
        RawConn c(api());
        ASSERT_TRUE(c.ok());
        const std::string body =
            R"({"metadata":{"name":"inj"},"data":{"k":"v"},)"
            R"("a\r\nX-Injected: yes":1})";
        ASSERT_EQ(c.Send(std::string("POST ") + kConfigMaps +
                         " HTTP/1.1\r\nHost: a\r\nContent-Type: "
                         "application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body),
                  RawConn::kSent);
        RawConn::Response r = c.ReadResponse("POST", seconds(30));
        EXPECT_EQ(r.code, 201) << r.head << r.body.substr(0, 300);
        std::string lower = r.head;
        for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
        EXPECT_EQ(lower.find("\nx-injected"), std::string::npos) << r.head;
        EXPECT_THAT(r.head, HasSubstr("Warning: 299 - \"unknown field"))
            << "the warning itself is still sent";
      });
}

// Future resourceVersions answered as Kubernetes does: after a short wait,
// 504 "Too large resource version".
TEST_F(HostileTest, FutureResourceVersion) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("watch from resourceVersion=99999999999", kRowBoundMiB, [&](Meanwhile*) {
    ExpectStatus(
        Call(api(), "GET",
             std::string(kConfigMaps) + "?watch=1&resourceVersion=99999999999"),
        504, "Timeout", "Too large resource version");
    ExpectStatus(
        Call(api(), "GET",
             std::string(kConfigMaps) + "?resourceVersion=99999999999&"
                                        "resourceVersionMatch=NotOlderThan"),
        504, "Timeout", "Too large resource version");
  });
}

// No signed overflow on request parameters.
// A release build cannot see undefined behaviour; the same test against a
// -fsanitize=undefined build (scripts/clang-checks.sh's build-clang, where
// undefined behaviour is fatal) fails by the process dying. Here it checks
// the answers are those of a server that did the arithmetic right.
TEST_F(HostileTest, OverflowParameters) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string max = "9223372036854775807";
  const std::string min = "-9223372036854775808";
  ASSERT_EQ(Call(api(), "POST", "/api/v1/namespaces/default/pods",
                 R"({"metadata":{"name":"p"},"spec":{"nodeName":"node-1",)"
                 R"("containers":[{"name":"c","image":"busybox"}]}})",
                 "application/json")
                .code,
            201);
  Row("limit=INT64_MAX, huge timeoutSeconds and grace periods", kRowBoundMiB,
      [&](Meanwhile*) {
        Reply r =
            Call(api(), "GET", std::string(kConfigMaps) + "?limit=" + max);
        EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
        r = Call(api(), "GET", std::string(kConfigMaps) + "?limit=" + min);
        EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
        r = Call(api(), "GET",
                 std::string(kConfigMaps) + "?timeoutSeconds=" + max);
        EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
        // A watch that may last "forever" starts like any other.
        RawConn w(api());
        ASSERT_TRUE(w.ok());
        ASSERT_EQ(w.Send(std::string("GET ") + kConfigMaps +
                         "?watch=1&timeoutSeconds=" + max +
                         " HTTP/1.1\r\nHost: a\r\n\r\n"),
                  RawConn::kSent);
        RawConn::Response head = w.ReadHead(seconds(30));
        EXPECT_EQ(head.code, 200) << head.head;
        // Grace periods: deletionTimestamp = now + grace must not overflow.
        for (const std::string& grace : {max, min}) {
          r = Call(
              api(), "DELETE",
              "/api/v1/namespaces/default/pods/p?gracePeriodSeconds=" + grace);
          EXPECT_TRUE(r.code == 200 || r.code == 422)
              << grace << ": " << r.code << " " << r.body.substr(0, 300);
        }
        r = Call(api(), "DELETE", "/api/v1/namespaces/default/pods/p",
                 R"({"kind":"DeleteOptions","apiVersion":"v1",)"
                 R"("gracePeriodSeconds":)" +
                     max + "}",
                 "application/json");
        EXPECT_TRUE(r.code == 200 || r.code == 404 || r.code == 422)
            << r.code << " " << r.body.substr(0, 300);
      });
}

}  // namespace
}  // namespace kplane::e2e
