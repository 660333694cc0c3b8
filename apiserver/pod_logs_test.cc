#include "apiserver/pod_logs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "net/http_server.h"

namespace kplane::apiserver {
namespace {

namespace corev1 = objects::corev1;

corev1::Pod TwoContainerPod() {
  corev1::Pod p;
  p.mutable_metadata()->set_name("web");
  p.mutable_metadata()->set_namespace_("default");
  p.mutable_spec()->add_initcontainers()->set_name("init");
  p.mutable_spec()->add_containers()->set_name("a");
  p.mutable_spec()->add_containers()->set_name("b");
  return p;
}

net::HttpRequest Query(std::multimap<std::string, std::string> q) {
  net::HttpRequest r;
  r.query = std::move(q);
  return r;
}

TEST(PodLogRequest, ValidatesOptionsAsKube) {
  corev1::Pod pod = TwoContainerPod();
  auto ok = ParsePodLogRequest(
      Query({{"container", "b"}, {"follow", "true"}, {"tailLines", "5"}}), pod);
  ASSERT_FALSE(std::holds_alternative<ApiError>(ok));
  const PodLogRequest& lr = std::get<PodLogRequest>(ok);
  EXPECT_EQ(lr.container, "b");
  EXPECT_TRUE(lr.follow);
  EXPECT_EQ(lr.KubeletTarget(pod),
            "/containerLogs/default/web/b?follow=true&tailLines=5");
  // init containers are containers too.
  EXPECT_FALSE(std::holds_alternative<ApiError>(
      ParsePodLogRequest(Query({{"container", "init"}}), pod)));

  auto e = ParsePodLogRequest(Query({}), pod);
  ASSERT_TRUE(std::holds_alternative<ApiError>(e));
  EXPECT_EQ(std::get<ApiError>(e).code, 400);
  EXPECT_EQ(std::get<ApiError>(e).message,
            "a container name must be specified for pod web, choose one of: "
            "[init a b]");
  e = ParsePodLogRequest(Query({{"container", "x"}}), pod);
  EXPECT_EQ(std::get<ApiError>(e).message,
            "container x is not valid for pod web");
  e = ParsePodLogRequest(Query({{"container", "a"}, {"tailLines", "-1"}}), pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  EXPECT_EQ(std::get<ApiError>(e).message,
            "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: "
            "must be greater than or equal to 0");
  e = ParsePodLogRequest(Query({{"container", "a"}, {"limitBytes", "0"}}), pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  e = ParsePodLogRequest(Query({{"container", "a"}, {"sinceSeconds", "0"}}),
                         pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  e = ParsePodLogRequest(Query({{"container", "a"},
                                {"sinceSeconds", "5"},
                                {"sinceTime", "2026-12-03T17:00:00Z"}}),
                         pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  e = ParsePodLogRequest(Query({{"container", "a"}, {"tailLines", "ten"}}),
                         pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 400);
}

TEST(PodLogRequest, KubeletEndpointFollowsThePreferredAddressTypes) {
  corev1::Node n;
  n.mutable_metadata()->set_name("node-0");
  auto add = [&](const char* type, const char* address) {
    corev1::NodeAddress* a = n.mutable_status()->add_addresses();
    a->set_type(type);
    a->set_address(address);
  };
  add("InternalIP", "172.16.0.1");
  add("Hostname", "node-0");
  add("ExternalIP", "127.0.0.1");
  // No port: the node has no kubelet to reach.
  EXPECT_TRUE(
      std::holds_alternative<ApiError>(KubeletEndpointFor(n, {"ExternalIP"})));
  n.mutable_status()
      ->mutable_daemonendpoints()
      ->mutable_kubeletendpoint()
      ->set_port(10250);
  auto ep = KubeletEndpointFor(n, {"ExternalIP", "InternalIP"});
  ASSERT_FALSE(std::holds_alternative<ApiError>(ep));
  EXPECT_EQ(std::get<KubeletEndpoint>(ep).host, "127.0.0.1");
  EXPECT_EQ(std::get<KubeletEndpoint>(ep).port, 10250);
  ep = KubeletEndpointFor(n, {"Hostname", "ExternalIP"});
  EXPECT_EQ(std::get<KubeletEndpoint>(ep).host, "node-0");
  EXPECT_TRUE(
      std::holds_alternative<ApiError>(KubeletEndpointFor(n, {"InternalDNS"})));
}

// The apiserver's side of a log stream, to a client that takes `Take()`
// bytes when the test says: what waits for the client is counted exactly.
class SlowClient : public net::Responder {
 public:
  const net::HttpRequest& request() const override { return request_; }
  bool Respond(int, net::HttpHeaders, std::string body) override {
    MutexLock l(&mu_);
    error_ = std::move(body);
    ended_ = true;
    cv_.notify_all();
    return true;
  }
  bool StartStream(int, net::HttpHeaders) override { return true; }
  bool Write(std::string_view chunk) override {
    MutexLock l(&mu_);
    waiting_ += chunk.size();
    received_ += chunk.size();
    most_waiting_ = std::max(most_waiting_, waiting_);
    return true;
  }
  bool WriteChunks(std::span<const std::string_view> chunks) override {
    for (std::string_view c : chunks) Write(c);
    return true;
  }
  bool Finish() override {
    MutexLock l(&mu_);
    ended_ = true;
    cv_.notify_all();
    return true;
  }
  size_t BufferedBytes() const override {
    MutexLock l(&mu_);
    return waiting_;
  }
  void SetMaxBufferedBytes(size_t) override {}
  void SetResponseDeadline(Duration) override {}
  void OnDrained(size_t low_water, std::function<void()> callback) override {
    MutexLock l(&mu_);
    if (waiting_ <= low_water) {
      std::thread(std::move(callback)).detach();
      return;
    }
    on_drained_ = std::move(callback);
    cv_.notify_all();
  }
  void OnClose(std::function<void()>) override {}
  bool IsClosed() const override { return false; }
  void OnBodyData(std::function<void(std::string_view, bool)>) override {}
  void Close() override {}

  // The client reads everything waiting; false once the stream ended.
  bool TakeAll() {
    std::function<void()> drained;
    bool ended;
    {
      MutexLock l(&mu_);
      waiting_ = 0;
      ended = ended_;
      if (on_drained_) drained = std::move(on_drained_);
      on_drained_ = nullptr;
    }
    if (drained) drained();
    return !ended;
  }
  // Blocks until the proxy waits for the client (or the stream ended).
  void AwaitStalled() {
    MutexLock l(&mu_);
    cv_.wait(l.native(),
             [&]() REQUIRES(mu_) { return on_drained_ != nullptr || ended_; });
  }
  size_t received() {
    MutexLock l(&mu_);
    return received_;
  }
  size_t most_waiting() {
    MutexLock l(&mu_);
    return most_waiting_;
  }
  std::string error() {
    MutexLock l(&mu_);
    return error_;
  }

 private:
  net::HttpRequest request_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  size_t waiting_ GUARDED_BY(mu_) = 0;
  size_t received_ GUARDED_BY(mu_) = 0;
  size_t most_waiting_ GUARDED_BY(mu_) = 0;
  std::function<void()> on_drained_ GUARDED_BY(mu_);
  bool ended_ GUARDED_BY(mu_) = false;
  std::string error_ GUARDED_BY(mu_);
};

// A log streams at the pace its client reads (kube's proxy copies with
// back-pressure): no more than the high water (plus what one read from the
// kubelet brings) waits for the client; the client gets the whole log.
// Read as fast as the kubelet wrote, the whole log waited (and a real
// connection was closed at its 16 MiB cap, cutting the log).
TEST(KubeletLogProxyTest, ALogStreamsAtItsClientsPace) {
  constexpr size_t kLogBytes = 8 << 20;
  net::HttpServer kubelet(net::HttpServerOptions{.port = 0});
  kubelet.Handle(
      "GET", "/containerLogs/default/web/a",
      [&](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->SetMaxBufferedBytes(0);
        r->StartStream(200, {{"Content-Type", "text/plain"}});
        const std::string chunk(64 << 10, 'x');
        for (size_t sent = 0; sent < kLogBytes; sent += chunk.size()) {
          if (!r->Write(chunk)) break;
        }
        r->Finish();
      });
  ASSERT_TRUE(kubelet.Start().ok());
  KubeletClientOptions options;
  options.log_high_water_bytes = 256 << 10;
  KubeletLogProxy proxy(options);
  auto client = std::make_shared<SlowClient>();
  proxy.Stream(
      {"127.0.0.1", kubelet.port()}, "/containerLogs/default/web/a", "", client,
      [](const ApiError& e) { ADD_FAILURE() << e.message; }, [] {});
  do {
    client->AwaitStalled();
  } while (client->TakeAll());
  EXPECT_EQ(client->received(), kLogBytes) << client->error();
  // One read from the kubelet is at most what its connection buffers.
  EXPECT_LE(client->most_waiting(), options.log_high_water_bytes + (1 << 20));
  proxy.Stop();
  kubelet.Stop();
}

// At most max_streams at once, and at most max_per_user of one user; a
// finished stream gives its user's slot back; "" counts only in the total.
TEST(KubeletStreamThreads, OneUserCannotTakeEverySlot) {
  KubeletStreamThreads threads(4, 2);
  Mutex mu;
  std::condition_variable cv;
  std::set<std::string> released;
  int finished = 0;
  auto start = [&](const std::string& user) {
    return threads.Start("pod log streams", user, [&, user](uint64_t id) {
      {
        MutexLock l(&mu);
        cv.wait(l.native(), [&] { return released.count(user) > 0; });
      }
      threads.Finished(id);
      MutexLock l(&mu);
      ++finished;
      cv.notify_all();
    });
  };
  EXPECT_FALSE(start("alice").has_value());
  EXPECT_FALSE(start("alice").has_value());
  std::optional<ApiError> third = start("alice");
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->code, 429);
  EXPECT_EQ(third->message,
            "too many pod log streams for user \"alice\" (at most 2 at once), "
            "please try again later");
  EXPECT_FALSE(start("bob").has_value());
  EXPECT_FALSE(start("").has_value());
  std::optional<ApiError> full = start("carol");
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->code, 429);
  EXPECT_EQ(full->message, "too many pod log streams, please try again later");
  {
    MutexLock l(&mu);
    released.insert("alice");
    cv.notify_all();
    cv.wait(l.native(), [&] { return finished == 2; });
  }
  EXPECT_EQ(threads.Active(), 2);
  EXPECT_FALSE(start("carol").has_value());
  EXPECT_FALSE(start("alice").has_value());
  {
    MutexLock l(&mu);
    released.insert("bob");
    released.insert("");
    released.insert("carol");
    cv.notify_all();
  }
  threads.Stop();
}

}  // namespace
}  // namespace kplane::apiserver
