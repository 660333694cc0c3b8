// Test support for apiserver HTTP tests (not part of the library): a real
// single-member store (storage::StoreServer in a temporary directory), an
// ApiServer on a loopback ephemeral port over it, and small HTTP helpers:
// requests whose JSON answers are parsed, and watch streams read on a
// thread of their own whose lines are awaited (condition variable, with a
// deadline that only turns a hang into a failure).
//
// Thread-safety: a TestServer and a WatchStream are used by one test
// thread; WatchStream's reader thread is internal.
#ifndef KPLANE_APISERVER_TEST_SERVER_H_
#define KPLANE_APISERVER_TEST_SERVER_H_

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "apiserver/api_server.h"
#include "base/clock.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "net/http_client.h"
#include "storage/server/store_server.h"

namespace kplane::apiserver::testing {

inline constexpr Duration kDeadline = seconds(20);

struct Response {
  int code = 0;
  net::HttpHeaders headers;
  std::string body;
  rapidjson::Document json;  // parsed when the body is JSON

  // json[a][b]... as a string ("" when absent or not a string).
  std::string Str(std::initializer_list<const char*> path) const {
    const rapidjson::Value* v = &json;
    for (const char* p : path) {
      if (!v->IsObject() || !v->HasMember(p)) return "";
      v = &(*v)[p];
    }
    return v->IsString() ? std::string(v->GetString(), v->GetStringLength())
                         : "";
  }
  const rapidjson::Value* At(std::initializer_list<const char*> path) const {
    const rapidjson::Value* v = &json;
    for (const char* p : path) {
      if (!v->IsObject() || !v->HasMember(p)) return nullptr;
      v = &(*v)[p];
    }
    return v;
  }
};

inline Response ToResponse(const StatusOr<net::HttpResponse>& r) {
  Response out;
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  out.code = r->status;
  out.headers = r->headers;
  out.body = r->body;
  out.json.Parse(out.body.data(), out.body.size());
  if (out.json.HasParseError()) out.json.SetNull();
  return out;
}

// The real clock with the calendar moved forward on demand: a test reaches
// a token's expiry, an age or a new managedFields second without sleeping
// and without moving the monotonic time the server's timeouts run on.
class SkewedClock : public RealClock {
 public:
  WallTime WallNow() const override {
    return RealClock::WallNow() + Duration(skew_.load());
  }
  void Skip(Duration d) { skew_ += d.count(); }

 private:
  std::atomic<Duration::rep> skew_{0};
};

// A streamed GET read on its own thread; lines (newline-framed) or raw
// bytes are queued for the test to await.
class WatchStream {
 public:
  WatchStream(uint16_t port, std::string target, net::HttpHeaders headers)
      : client_("127.0.0.1", port) {
    thread_ = std::thread(
        [this, target = std::move(target), headers = std::move(headers)] {
          StatusOr<net::HttpResponse> r = client_.Stream(
              "GET", target, headers, "",
              [this](std::string_view data) {
                MutexLock l(&mu_);
                raw_.append(data);
                partial_.append(data);
                size_t nl;
                while ((nl = partial_.find('\n')) != std::string::npos) {
                  lines_.push_back(partial_.substr(0, nl));
                  partial_.erase(0, nl + 1);
                }
                cv_.notify_all();
                return true;
              },
              &cancel_);
          MutexLock l(&mu_);
          if (r.ok()) {
            status_ = r->status;
            content_type_ = std::string(r->headers.Get("Content-Type"));
          }
          ended_ = true;
          cv_.notify_all();
        });
  }
  ~WatchStream() {
    cancel_.Cancel();
    if (thread_.joinable()) thread_.join();
  }

  // The next line, or nullopt if the stream ended (or the deadline passed).
  std::optional<std::string> Next(Duration timeout = kDeadline) {
    MutexLock l(&mu_);
    cv_.wait_for(l.native(), timeout,
                 [&]() REQUIRES(mu_) { return !lines_.empty() || ended_; });
    if (lines_.empty()) return std::nullopt;
    std::string s = std::move(lines_.front());
    lines_.pop_front();
    return s;
  }
  // The next line parsed as JSON.
  rapidjson::Document NextJson(Duration timeout = kDeadline) {
    rapidjson::Document d;
    std::optional<std::string> line = Next(timeout);
    EXPECT_TRUE(line.has_value()) << "watch stream ended or timed out";
    if (!line) return d;
    d.Parse(line->data(), line->size());
    EXPECT_FALSE(d.HasParseError()) << *line;
    return d;
  }
  // Waits for the server to end the stream; true if it did.
  bool WaitEnd(Duration timeout = kDeadline) {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), timeout,
                        [&]() REQUIRES(mu_) { return ended_; });
  }
  // Waits until at least `n` raw bytes arrived.
  std::string WaitRaw(size_t n, Duration timeout = kDeadline) {
    MutexLock l(&mu_);
    cv_.wait_for(l.native(), timeout,
                 [&]() REQUIRES(mu_) { return raw_.size() >= n || ended_; });
    return raw_;
  }
  int status() {
    MutexLock l(&mu_);
    return status_;
  }
  std::string content_type() {
    MutexLock l(&mu_);
    return content_type_;
  }
  size_t pending() {
    MutexLock l(&mu_);
    return lines_.size();
  }

 private:
  net::HttpClient client_;
  net::CancelToken cancel_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_ GUARDED_BY(mu_);
  std::string partial_ GUARDED_BY(mu_);
  std::string raw_ GUARDED_BY(mu_);
  bool ended_ GUARDED_BY(mu_) = false;
  int status_ GUARDED_BY(mu_) = 0;
  std::string content_type_ GUARDED_BY(mu_);
  std::thread thread_;
};

class TestServer {
 public:
  explicit TestServer(
      const std::function<void(ApiServerOptions*)>& tweak = nullptr)
      : TestServer(nullptr, tweak) {}
  // Over `kv` (e.g. a RemoteKV to etcd), or over an embedded store when
  // `kv` is null.
  TestServer(storage::KV* kv,
             const std::function<void(ApiServerOptions*)>& tweak) {
    if (kv != nullptr) {
      StartApi(kv, tweak);
      return;
    }
    char tmpl[] = "/tmp/kplane-apihttp-XXXXXX";
    char* dir = mkdtemp(tmpl);
    CHECK(dir != nullptr);
    dir_ = dir;
    storage::StoreConfig config;
    config.name = "default";
    config.data_dir = dir_ + "/data";
    config.peer_urls = {"http://127.0.0.1:2380"};
    config.heartbeat_interval = milliseconds(10);
    config.election_timeout = milliseconds(100);
    config.corrupt_check_interval = Duration(0);
    config.metrics = &store_metrics_;
    auto server = storage::StoreServer::Open(config);
    CHECK(server.ok()) << server.status();
    store_ = std::move(*server);
    CHECK(store_->Start(nullptr).ok());
    CHECK(store_->WaitForLeader(seconds(10)));
    StartApi(store_.get(), tweak);
  }
  void StartApi(storage::KV* kv,
                const std::function<void(ApiServerOptions*)>& tweak) {
    ApiServerOptions o;
    o.kv = kv;
    o.metrics = &metrics_;
    o.worker_threads = 16;
    if (tweak) tweak(&o);
    api_ = std::make_unique<ApiServer>(o);
    Status s = api_->Start();
    CHECK(s.ok()) << s;
    CHECK(api_->WaitReady(kDeadline));
    client_ = std::make_unique<net::HttpClient>("127.0.0.1", api_->port());
  }
  ~TestServer() {
    client_.reset();
    api_->Stop();
    api_.reset();
    if (store_) {
      store_->Stop();
      store_.reset();
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  uint16_t port() const { return api_->port(); }
  ApiServer* api() { return api_.get(); }
  // The embedded store (null when running over an external KV).
  storage::StoreServer* store() { return store_.get(); }
  metrics::Registry* metrics() { return &metrics_; }

  Response Do(std::string_view method, std::string_view target,
              std::string_view body = {}, net::HttpHeaders headers = {}) {
    if (!body.empty() && !headers.Has("Content-Type")) {
      headers.Add("Content-Type", "application/json");
    }
    return ToResponse(client_->Request(method, target, headers, body));
  }
  Response Get(std::string_view target, std::string_view accept = {}) {
    net::HttpHeaders h;
    if (!accept.empty()) h.Add("Accept", std::string(accept));
    return Do("GET", target, {}, h);
  }
  Response Post(std::string_view target, std::string_view json) {
    return Do("POST", target, json);
  }
  Response Put(std::string_view target, std::string_view json) {
    return Do("PUT", target, json);
  }
  Response Patch(std::string_view target, std::string_view body,
                 std::string_view content_type) {
    return Do("PATCH", target, body,
              {{"Content-Type", std::string(content_type)}});
  }
  Response Delete(std::string_view target, std::string_view body = {}) {
    return Do("DELETE", target, body);
  }
  std::unique_ptr<WatchStream> Watch(std::string target,
                                     net::HttpHeaders headers = {}) {
    return std::make_unique<WatchStream>(port(), std::move(target),
                                         std::move(headers));
  }

 private:
  std::string dir_;
  metrics::Registry store_metrics_;
  metrics::Registry metrics_;
  std::unique_ptr<storage::StoreServer> store_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<net::HttpClient> client_;
};

}  // namespace kplane::apiserver::testing

#endif  // KPLANE_APISERVER_TEST_SERVER_H_
