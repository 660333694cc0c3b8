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

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "base/base64.h"
#include "base/mutex.h"
#include "net/http_parser.h"
#include "tests/e2e/hostile/hostile_cluster.h"

namespace kplane::e2e {
namespace {

using ::testing::HasSubstr;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

// Peak RSS growth allowed per process and row (MiB over the RSS before the
// row). The largest legal request is 3 MiB; parsing it, with its copies, a
// decoded tree and the answer, costs a few times that. Unbounded paths grew
// the processes by 700 MiB to several GiB (issue 15).
constexpr int64_t kRowBoundMiB = 64;

std::string ReadHostile(const std::string& name) {
  std::ifstream in(std::string(KPLANE_HOSTILE_TESTDATA) + "/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string NestedArrays(int depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

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
Reply Call(uint16_t port, const std::string& method, const std::string& path,
           const std::string& body = "", const std::string& content_type = "",
           Duration timeout = seconds(60)) {
  net::HttpClient c("127.0.0.1", port,
                    net::HttpClientOptions{.read_timeout = timeout});
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
// poll(); deadlines only turn a hang into a failure.
class RawConn {
 public:
  // `rcvbuf` > 0: a small receive buffer (a client that reads nothing then
  // holds little in its kernel buffer, so the server's side fills up).
  explicit RawConn(uint16_t port, int rcvbuf = 0) {
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
    }
  }
  ~RawConn() {
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
  // Appends what arrives; false on EOF or at the deadline.
  bool ReadSome(std::chrono::steady_clock::time_point until) {
    if (eof_) return false;
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

  int fd_ = -1;
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
    Reply health = Call(store(), "GET", "/health");
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
        ConfigMap("deep", ",\"x\":" + NestedArrays(100000));
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
                          "{\"x\":" + NestedArrays(100000) + "}",
                          "application/strategic-merge-patch+json"),
                     400, "BadRequest", "exceeded max depth of 10000");
      });
}

TEST_F(HostileTest, DeepStoreJson) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a 2 MB text/plain /v3/kv/put nested 1,000,000 deep", kRowBoundMiB,
      [&](Meanwhile*) {
        const int depth = 1000000;
        const std::string body =
            R"({"key":"YQ==","value":)" + NestedArrays(depth) + "}";
        Reply r = Call(store(), "POST", "/v3/kv/put", body, "text/plain");
        EXPECT_EQ(r.code, 400) << r.error << r.body.substr(0, 300);
        EXPECT_THAT(r.body, HasSubstr("\"code\":3"));
        EXPECT_THAT(r.body, HasSubstr("exceeded max depth of 10000"));
        r = Call(store(), "POST", "/v3/kv/put",
                 ReadHostile("etcd_json/put_deep_10001.json"),
                 "application/json");
        EXPECT_EQ(r.code, 400) << r.error << r.body.substr(0, 300);
        EXPECT_THAT(r.body, HasSubstr("exceeded max depth of 10000"));
      });
  // The store still takes a well-formed put.
  Reply ok = Call(store(), "POST", "/v3/kv/put",
                  R"({"key":"YQ==","value":"Yg=="})", "application/json");
  EXPECT_EQ(ok.code, 200) << ok.body;
}

TEST_F(HostileTest, YamlAliasCycles) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a 68-byte application/yaml POST with x: &a [*a]", kRowBoundMiB,
      [&](Meanwhile*) {
        const std::string yaml = ReadHostile("yaml/alias_cycle_configmap.yaml");
        ExpectStatus(Call(api(), "POST", kConfigMaps, yaml, "application/yaml"),
                     400, "BadRequest",
                     "yaml: anchor 'a' value contains itself");
      });
  Row("a 70-byte server-side apply with x: &a [*a]", kRowBoundMiB,
      [&](Meanwhile*) {
        ExpectStatus(
            Call(api(), "PATCH", std::string(kConfigMaps) + "/x?fieldManager=m",
                 ReadHostile("yaml/alias_cycle_apply.yaml"),
                 "application/apply-patch+yaml"),
            400, "BadRequest", "yaml: anchor 'a' value contains itself");
      });
}

TEST_F(HostileTest, ExpansionBombs) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Row("a 536-byte billion laughs server-side apply", kRowBoundMiB,
      [&](Meanwhile*) {
        const std::string yaml = ReadHostile("yaml/billion_laughs.yaml");
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
                          ReadHostile("json_patch/self_copy_40.json"),
                          "application/json-patch+json"),
                     422, "Invalid",
                     "unable to copy, the accumulated size increase of copy "
                     "is");
      });
}

}  // namespace
}  // namespace kplane::e2e
