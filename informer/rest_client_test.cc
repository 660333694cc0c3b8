#include "informer/rest_client.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <future>
#include <set>
#include <thread>

#include "informer/api_errors.h"
#include "informer/fake_api_server.h"
#include "informer/test_util.h"
#include "net/http_server.h"
#include "net/socket.h"
#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/meta.h"

namespace kplane::informer {
namespace {

using testing::MakePod;
using testing::PodsResource;
using testing::TestClock;

const objects::ResourceInfo* Resource(const std::string& group,
                                  const std::string& resource) {
  return objects::Scheme::Default().FindResource(group, "v1", resource);
}

TEST(RestClientPathTest, PathsFromResourceInfo) {
  const objects::ResourceInfo* pods = PodsResource();
  EXPECT_EQ(RestClient::ResourcePath(*pods, "default", "web"),
            "/api/v1/namespaces/default/pods/web");
  EXPECT_EQ(RestClient::ResourcePath(*pods, "default", "web", "status"),
            "/api/v1/namespaces/default/pods/web/status");
  EXPECT_EQ(RestClient::ResourcePath(*pods, ""), "/api/v1/pods");
  EXPECT_EQ(RestClient::ResourcePath(*Resource("", "nodes"), "ignored", "n1"),
            "/api/v1/nodes/n1");
  EXPECT_EQ(RestClient::ResourcePath(*Resource("apps", "deployments"), "prod",
                                     "web", "scale"),
            "/apis/apps/v1/namespaces/prod/deployments/web/scale");
  EXPECT_EQ(RestClient::ResourcePath(*Resource("coordination.k8s.io", "leases"),
                                     "kube-node-lease"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases");
  EXPECT_EQ(RestClient::ResourcePath(*pods, "default", "a b"),
            "/api/v1/namespaces/default/pods/a%20b");
  EXPECT_EQ(RestClient::ResourceFor<objects::appsv1::Deployment>(),
            Resource("apps", "deployments"));
}

class RestClientTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    client_ = NewClient({});
  }

  std::unique_ptr<RestClient> NewClient(RestClientOptions o) {
    o.server = server_.Url();
    o.protobuf = GetParam();
    o.clock = &clock_;
    o.seed = 9;
    o.metrics = &registry_;
    auto c = RestClient::New(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  TestClock clock_;
  metrics::Registry registry_;
  FakeApiServer server_;
  std::unique_ptr<RestClient> client_;
};

INSTANTIATE_TEST_SUITE_P(Wire, RestClientTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Protobuf" : "Json";
                         });

TEST_P(RestClientTest, CreateGetUpdateDeleteWithApiErrors) {
  objects::corev1::Pod pod = MakePod("default", "web", {{"app", "web"}}, "n1");
  auto created = client_->Create(pod);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)->metadata().resourceversion(), "1");
  EXPECT_FALSE((*created)->metadata().uid().empty());
  EXPECT_EQ((*created)->spec().nodename(), "n1");

  auto dup = client_->Create(pod);
  EXPECT_TRUE(IsAlreadyExists(dup.status())) << dup.status();
  EXPECT_EQ(dup.status().message(), "pods \"web\" already exists");

  auto got = client_->Get<objects::corev1::Pod>("default", "web");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->metadata().labels().at("app"), "web");

  objects::corev1::Pod changed = **got;
  changed.mutable_spec()->set_nodename("n2");
  auto updated = client_->Update(changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)->metadata().resourceversion(), "2");
  EXPECT_EQ((*updated)->spec().nodename(), "n2");

  // The same write again carries a stale resourceVersion: 409 Conflict.
  auto stale = client_->Update(changed);
  EXPECT_TRUE(IsConflict(stale.status())) << stale.status();
  EXPECT_NE(stale.status().message().find("the object has been modified"),
            std::string::npos);
  EXPECT_EQ(HttpCodeOf(stale.status()), 409);

  auto status = client_->UpdateStatus(**updated);
  ASSERT_TRUE(status.ok()) << status.status();

  ASSERT_TRUE(client_->Delete<objects::corev1::Pod>("default", "web").ok());
  auto gone = client_->Get<objects::corev1::Pod>("default", "web");
  EXPECT_TRUE(IsNotFound(gone.status()));
  EXPECT_EQ(gone.status().message(), "pods \"web\" not found");
  EXPECT_TRUE(IsNotFound(client_->Delete<objects::corev1::Pod>("default", "web")));

  std::vector<std::string> requests = server_.Requests();
  ASSERT_GE(requests.size(), 5u);
  EXPECT_EQ(requests[0], "POST /api/v1/namespaces/default/pods");
  EXPECT_EQ(requests[2], "GET /api/v1/namespaces/default/pods/web");
  EXPECT_EQ(requests[3], "PUT /api/v1/namespaces/default/pods/web");
  EXPECT_EQ(requests[5], "PUT /api/v1/namespaces/default/pods/web/status");
}

TEST_P(RestClientTest, ClusterScopedAndGroupedResources) {
  objects::corev1::Node node;
  node.mutable_metadata()->set_name("n1");
  ASSERT_TRUE(client_->Create(node).ok());
  objects::appsv1::Deployment d;
  d.mutable_metadata()->set_name("web");
  d.mutable_metadata()->set_namespace_("prod");
  d.mutable_spec()->set_replicas(3);
  ASSERT_TRUE(client_->Create(d).ok());
  auto got = client_->Get<objects::appsv1::Deployment>("prod", "web");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->spec().replicas(), 3);
  EXPECT_EQ(server_.Requests()[0], "POST /api/v1/nodes");
  EXPECT_EQ(server_.Requests()[1],
            "POST /apis/apps/v1/namespaces/prod/deployments");
  // A namespaced create without a namespace is refused locally.
  EXPECT_EQ(client_->Create(MakePod("", "x")).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(RestClientTest, ListObjectsPagesAndMovesItems) {
  FakeListerWatcher* pods = server_.Resource(*PodsResource());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(pods->Create(MakePod("default", "p" + std::to_string(i))).ok());
  }
  auto page1 = client_->ListObjects(*PodsResource(), "default", {.limit = 2});
  ASSERT_TRUE(page1.ok()) << page1.status();
  ASSERT_EQ(page1->items.size(), 2u);
  EXPECT_EQ(objects::Name(*page1->items[0]), "p0");
  EXPECT_EQ(objects::Name(*page1->items[1]), "p1");
  EXPECT_EQ(page1->resource_version, "5");
  EXPECT_EQ(page1->remaining_item_count, 3);
  ASSERT_FALSE(page1->continue_token.empty());
  auto page2 = client_->ListObjects(
      *PodsResource(), "default",
      {.limit = 10, .continue_token = page1->continue_token});
  ASSERT_TRUE(page2.ok());
  EXPECT_EQ(page2->items.size(), 3u);
  EXPECT_TRUE(page2->continue_token.empty());
  EXPECT_EQ(server_.Requests()[0],
            "GET /api/v1/namespaces/default/pods?limit=2");

  auto list = client_->List(*PodsResource(), "default");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(objects::ListSize(**list), 5);
  EXPECT_EQ((*list)->GetDescriptor(), objects::corev1::PodList::descriptor());

  // A compacted continue token: 410 Expired.
  pods->Compact();
  ASSERT_TRUE(pods->Create(MakePod("default", "late")).ok());
  pods->Compact();
  auto expired = client_->ListObjects(
      *PodsResource(), "default",
      {.limit = 2, .continue_token = page1->continue_token});
  EXPECT_TRUE(IsExpired(expired.status())) << expired.status();
}

// GET is retried on 503 with growing, jittered backoff on the clock.
TEST_P(RestClientTest, IdempotentRequestsAreRetriedWithBackoff) {
  ASSERT_TRUE(server_.Resource(*PodsResource())
                  ->Create(MakePod("default", "web"))
                  .ok());
  server_.FailNext(2, 503);
  auto get = std::async(std::launch::async, [&] {
    return client_->Get<objects::corev1::Pod>("default", "web");
  });
  Duration first = clock_.WaitForCall(1);
  EXPECT_GE(first, milliseconds(100));
  EXPECT_LT(first, milliseconds(200));
  clock_.Advance(first);
  Duration second = clock_.WaitForCall(2);
  EXPECT_GE(second, milliseconds(200));
  EXPECT_LT(second, milliseconds(400));
  clock_.Advance(second);
  auto pod = get.get();
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(server_.Requests().size(), 3u);
  EXPECT_NE(registry_.Render().find("rest_client_request_retries_total{code="
                                    "\"503\""),
            std::string::npos);
}

// 429 is retried for every verb, after at least Retry-After.
TEST_P(RestClientTest, TooManyRequestsHonoursRetryAfterEvenForPost) {
  server_.FailNext(1, 429, /*retry_after_seconds=*/3);
  auto create = std::async(std::launch::async, [&] {
    return client_->Create(MakePod("default", "web"));
  });
  EXPECT_EQ(clock_.WaitForCall(1), seconds(3));
  clock_.Advance(seconds(3));
  auto pod = create.get();
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(server_.Requests().size(), 2u);
}

TEST_P(RestClientTest, NonIdempotentRequestsAreNotRetriedOn503) {
  server_.FailNext(1, 503);
  auto create = client_->Create(MakePod("default", "web"));
  EXPECT_TRUE(IsServiceUnavailable(create.status())) << create.status();
  EXPECT_EQ(server_.Requests().size(), 1u);
  EXPECT_EQ(clock_.NumCalls(), 0u);
}

TEST_P(RestClientTest, RetriesAreBounded) {
  auto client = NewClient({.max_retries = 2});
  server_.FailNext(5, 504);
  auto get = std::async(std::launch::async, [&] {
    return client->Get<objects::corev1::Pod>("default", "web");
  });
  clock_.Advance(clock_.WaitForCall(1));
  clock_.Advance(clock_.WaitForCall(2));
  auto pod = get.get();
  EXPECT_TRUE(IsTimeout(pod.status())) << pod.status();
  EXPECT_EQ(server_.Requests().size(), 3u);
}

TEST_P(RestClientTest, ConnectionRefusedIsRetriedThenReported) {
  FakeApiServer closed;
  ASSERT_TRUE(closed.Start().ok());
  std::string url = closed.Url();
  closed.Stop();
  auto client = RestClient::New({.server = url,
                                 .max_retries = 1,
                                 .clock = &clock_,
                                 .metrics = &registry_});
  ASSERT_TRUE(client.ok());
  auto get = std::async(std::launch::async, [&] {
    return (*client)->Get<objects::corev1::Pod>("default", "web");
  });
  clock_.Advance(clock_.WaitForCall(1));
  auto pod = get.get();
  EXPECT_EQ(pod.status().code(), StatusCode::kUnavailable) << pod.status();
  EXPECT_EQ(HttpCodeOf(pod.status()), 0);
}

TEST_P(RestClientTest, ConnectionPoolBoundsConnections) {
  auto client = NewClient({.max_connections = 3});
  ASSERT_TRUE(server_.Resource(*PodsResource())
                  ->Create(MakePod("default", "web"))
                  .ok());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        ok += client->Get<objects::corev1::Pod>("default", "web").ok() ? 1 : 0;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
  std::vector<std::string> remotes = server_.RemoteAddresses();
  std::set<std::string> distinct(remotes.begin(), remotes.end());
  EXPECT_EQ(remotes.size(), 200u);
  EXPECT_LE(distinct.size(), 3u);
}

TEST_P(RestClientTest, WatchDecodesEventsSplitAcrossWrites) {
  FakeApiServer split({.split_watch_writes = true});
  ASSERT_TRUE(split.Start().ok());
  auto client = RestClient::New({.server = split.Url(), .metrics = &registry_});
  ASSERT_TRUE(client.ok());
  FakeListerWatcher* pods = split.Resource(*PodsResource());
  ASSERT_TRUE(pods->Create(MakePod("default", "a")).ok());  // 1

  auto w = (*client)->Watch(*PodsResource(), "default",
                            {.resource_version = "0",
                             .allow_watch_bookmarks = true,
                             .timeout_seconds = 300});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(pods->Create(MakePod("default", "b")).ok());  // 2
  ASSERT_TRUE(pods->Delete("default", "a").ok());           // 3
  pods->SendBookmark();
  WatchEvent ev;
  ASSERT_TRUE((*w)->Next(&ev));
  EXPECT_EQ(ev.type, EventType::kAdded);
  EXPECT_EQ(objects::Name(*ev.object), "a");
  ASSERT_TRUE((*w)->Next(&ev));
  EXPECT_EQ(ev.type, EventType::kAdded);
  EXPECT_EQ(ev.ResourceVersion(), "2");
  ASSERT_TRUE((*w)->Next(&ev));
  EXPECT_EQ(ev.type, EventType::kDeleted);
  EXPECT_EQ(ev.ResourceVersion(), "3");
  ASSERT_TRUE((*w)->Next(&ev));
  EXPECT_EQ(ev.type, EventType::kBookmark);
  EXPECT_EQ(ev.ResourceVersion(), "3");
  // The server ends the watch normally.
  pods->CloseWatches();
  EXPECT_FALSE((*w)->Next(&ev));
  EXPECT_TRUE((*w)->Result().ok()) << (*w)->Result();
  std::vector<std::string> requests = split.Requests();
  EXPECT_EQ(requests.back(),
            "GET /api/v1/namespaces/default/pods?watch=true&resourceVersion=0&"
            "timeoutSeconds=300&allowWatchBookmarks=true");
}

TEST_P(RestClientTest, WatchFromACompactedVersionGetsA410Event) {
  FakeListerWatcher* pods = server_.Resource(*PodsResource());
  ASSERT_TRUE(pods->Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(pods->Create(MakePod("default", "b")).ok());
  pods->Compact();
  auto w =
      client_->Watch(*PodsResource(), "default", {.resource_version = "1"});
  ASSERT_TRUE(w.ok());
  WatchEvent ev;
  ASSERT_TRUE((*w)->Next(&ev));
  EXPECT_EQ(ev.type, EventType::kError);
  EXPECT_TRUE(IsExpired(ev.error)) << ev.error;
  EXPECT_EQ(ev.error.message(), "too old resource version: 1 (2)");
  EXPECT_FALSE((*w)->Next(&ev));
}

TEST_P(RestClientTest, WatchErrorsAndStop) {
  server_.FailNext(1, 500);
  auto w = client_->Watch(*PodsResource(), "default", {});
  EXPECT_TRUE(IsInternalError(w.status())) << w.status();

  auto open = client_->Watch(*PodsResource(), "default", {});
  ASSERT_TRUE(open.ok());
  std::thread stopper([&] { (*open)->Stop(); });
  WatchEvent ev;
  EXPECT_FALSE((*open)->Next(&ev));  // returns once stopped
  stopper.join();
  EXPECT_EQ((*open)->Result().code(), StatusCode::kCancelled);

  // The connection breaks mid-stream.
  auto broken = client_->Watch(*PodsResource(), "default", {});
  ASSERT_TRUE(broken.ok());
  server_.Resource(*PodsResource())
      ->CloseWatches(UnavailableError("connection reset"));
  EXPECT_FALSE((*broken)->Next(&ev));
  EXPECT_FALSE((*broken)->Result().ok());
  EXPECT_EQ(HttpCodeOf((*broken)->Result()), 0);
}

// kube-apiserver answers POST pods/binding with a Status; in protobuf its
// bytes do not parse as a Binding, and that is still a success.
TEST(RestClientRequestTest, ProtobufStatusAnswerToABindingIsNoObject) {
  net::HttpServer server({.name = "binding"});
  std::string answer_kind = "Status";
  server.HandlePrefix(
      "", "/",
      [&](const net::HttpRequest& req, std::shared_ptr<net::Responder> resp) {
        objects::metav1::Status ok;
        ok.set_status("Success");
        ok.set_code(201);
        ok.set_message(std::string(40, 'x'));
        resp->Respond(201,
                      {{"Content-Type", "application/vnd.kubernetes.protobuf"}},
                      objects::EncodeEnvelope(ok, {"v1", answer_kind}));
      });
  ASSERT_TRUE(server.Start().ok());
  auto client = RestClient::New(
      {.server = "http://127.0.0.1:" + std::to_string(server.port()),
       .protobuf = true});
  ASSERT_TRUE(client.ok());
  objects::corev1::Binding binding;
  binding.mutable_metadata()->set_name("web");
  binding.mutable_target()->set_name("n1");
  auto bound = (*client)->Create(*PodsResource(), "default", binding, {}, "web",
                                 "binding");
  EXPECT_TRUE(bound.ok()) << bound.status();
  // The same bytes named as anything else are still malformed.
  answer_kind = "Binding";
  bound = (*client)->Create(*PodsResource(), "default", binding, {}, "web",
                            "binding");
  EXPECT_EQ(bound.status().code(), StatusCode::kCorruption) << bound.status();
  server.Stop();
}

// A server that takes connections (the kernel's backlog) but never answers,
// so only a deadline ends a request to it.
class SilentServer {
 public:
  SilentServer() {
    auto fd = net::ListenTcp("127.0.0.1", 0, 16);
    EXPECT_TRUE(fd.ok()) << fd.status();
    fd_ = std::move(*fd);
    port_ = *net::LocalPort(fd_.get());
  }
  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }
  // True once a client has connected (the listener turns readable).
  bool WaitForConnection() {
    pollfd p{.fd = fd_.get(), .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, 30'000) == 1;
  }
  // Closing the listener resets the connections it never accepted.
  void Close() { fd_.Reset(); }

 private:
  net::ScopedFd fd_;
  uint16_t port_ = 0;
};

// The call's deadline ends it, whatever the client's per-attempt timeout
// (an hour here) and retries would allow.
TEST(RestClientDeadlineTest, ACallEndsAtItsDeadline) {
  SilentServer silent;
  TestClock clock;
  auto client = RestClient::New(
      {.server = silent.Url(), .timeout = hours(1), .clock = &clock});
  ASSERT_TRUE(client.ok());
  auto get = std::async(std::launch::async, [&] {
    return (*client)->Get<objects::corev1::Pod>(
        "default", "web", {.deadline = clock.Now() + milliseconds(200)});
  });
  if (get.wait_for(seconds(30)) != std::future_status::ready) {
    silent.Close();  // lets the call end so the test can report
    FAIL() << "the GET ran past its deadline";
  }
  auto pod = get.get();
  EXPECT_EQ(pod.status().code(), StatusCode::kDeadlineExceeded) << pod.status();

  auto update = std::async(std::launch::async, [&] {
    return (*client)->Update(MakePod("default", "web"),
                             {.deadline = clock.Now() + milliseconds(200)});
  });
  if (update.wait_for(seconds(30)) != std::future_status::ready) {
    silent.Close();
    FAIL() << "the PUT ran past its deadline";
  }
  EXPECT_EQ(update.get().status().code(), StatusCode::kDeadlineExceeded);
}

// A call that finds every connection busy waits for one only until its
// deadline.
TEST(RestClientDeadlineTest, WaitingForAConnectionEndsAtTheDeadline) {
  SilentServer silent;
  TestClock clock;
  auto client = RestClient::New({.server = silent.Url(),
                                 .timeout = hours(1),
                                 .max_retries = 0,
                                 .max_connections = 1,
                                 .clock = &clock});
  ASSERT_TRUE(client.ok());
  // Holds the only connection until the listener closes.
  auto holder = std::async(std::launch::async, [&] {
    return (*client)->Get<objects::corev1::Pod>("default", "a");
  });
  ASSERT_TRUE(silent.WaitForConnection());
  auto waiter = std::async(std::launch::async, [&] {
    return (*client)->Get<objects::corev1::Pod>(
        "default", "b", {.deadline = clock.Now() + seconds(3)});
  });
  std::optional<Duration> waits = clock.WaitForCall(1, seconds(30));
  if (!waits.has_value()) {
    silent.Close();  // the waiter still waits for the holder's connection
    FAIL() << "the GET waits for a connection without its deadline";
  }
  EXPECT_EQ(*waits, seconds(3));
  clock.Advance(seconds(3));
  if (waiter.wait_for(seconds(30)) != std::future_status::ready) {
    silent.Close();
    FAIL() << "the GET waited for a connection past its deadline";
  }
  auto pod = waiter.get();
  EXPECT_EQ(pod.status().code(), StatusCode::kDeadlineExceeded) << pod.status();
  silent.Close();
  EXPECT_FALSE(holder.get().ok());
}

// Request shapes the fake server does not check: PATCH, DELETE bodies,
// write options, raw requests.
TEST(RestClientRequestTest, PatchDeleteOptionsAndQuery) {
  Mutex mu;
  std::vector<net::HttpRequest> seen;
  net::HttpServer server({.name = "capture"});
  server.HandlePrefix(
      "", "/",
      [&](const net::HttpRequest& req, std::shared_ptr<net::Responder> resp) {
        {
          MutexLock l(&mu);
          seen.push_back(req);
        }
        if (req.path.ends_with("/binding")) {
          objects::metav1::Status ok;
          ok.set_status("Success");
          ok.set_code(201);
          resp->Respond(201, {{"Content-Type", "application/json"}},
                        objects::EncodeJson(ok, {"v1", "Status"}));
          return;
        }
        objects::corev1::Pod pod = MakePod("default", "web");
        resp->Respond(200, {{"Content-Type", "application/json"}},
                      objects::EncodeJson(pod, {"v1", "Pod"}));
      });
  ASSERT_TRUE(server.Start().ok());
  auto client = RestClient::New(
      {.server = "http://127.0.0.1:" + std::to_string(server.port())});
  ASSERT_TRUE(client.ok());

  auto patched = (*client)->Patch<objects::corev1::Pod>(
      "default", "web", PatchType::kStrategicMergePatch,
      R"({"metadata":{"labels":{"a":"b"}}})",
      {.dry_run = true, .field_manager = "kpctl"}, "status");
  ASSERT_TRUE(patched.ok()) << patched.status();
  objects::metav1::DeleteOptions del;
  del.set_propagationpolicy("Foreground");
  del.mutable_preconditions()->set_resourceversion("7");
  ASSERT_TRUE((*client)->Delete<objects::corev1::Pod>("default", "web", del).ok());
  auto wrong = (*client)->Get<objects::corev1::Node>("", "n1");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);  // a Pod
  objects::corev1::Binding binding;
  binding.mutable_metadata()->set_name("web");
  binding.mutable_target()->set_kind("Node");
  binding.mutable_target()->set_name("n1");
  auto bound = (*client)->Create(*PodsResource(), "default", binding, {}, "web",
                                 "binding");
  ASSERT_TRUE(bound.ok()) << bound.status();  // a Status answer is fine

  MutexLock l(&mu);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].method, "POST");
  EXPECT_EQ(seen[3].target, "/api/v1/namespaces/default/pods/web/binding");
  EXPECT_NE(seen[3].body.find("\"kind\":\"Binding\""), std::string::npos);
  EXPECT_EQ(seen[0].method, "PATCH");
  EXPECT_EQ(seen[0].target,
            "/api/v1/namespaces/default/pods/web/status?dryRun=All&"
            "fieldManager=kpctl");
  EXPECT_EQ(seen[0].headers.Get("Content-Type"),
            "application/strategic-merge-patch+json");
  EXPECT_EQ(seen[0].body, R"({"metadata":{"labels":{"a":"b"}}})");
  EXPECT_EQ(seen[1].method, "DELETE");
  EXPECT_EQ(seen[1].headers.Get("Content-Type"), "application/json");
  EXPECT_NE(seen[1].body.find("\"propagationPolicy\":\"Foreground\""),
            std::string::npos)
      << seen[1].body;
  EXPECT_NE(seen[1].body.find("\"resourceVersion\":\"7\""), std::string::npos);
  EXPECT_EQ(seen[2].target, "/api/v1/nodes/n1");
  EXPECT_EQ(seen[2].headers.Get("User-Agent"), "kplane-client/1");
  server.Stop();
}

TEST(RestClientRequestTest, DeleteCollectionDeletesAtTheCollectionPath) {
  std::mutex mu;
  std::vector<net::HttpRequest> seen;
  net::HttpServer server({.name = "capture"});
  server.HandlePrefix(
      "", "/",
      [&](const net::HttpRequest& req, std::shared_ptr<net::Responder> resp) {
        {
          std::lock_guard<std::mutex> l(mu);
          seen.push_back(req);
        }
        resp->Respond(200, {{"Content-Type", "application/json"}},
                      R"({"kind":"ConfigMapList","apiVersion":"v1",)"
                      R"("metadata":{},"items":[]})");
      });
  ASSERT_TRUE(server.Start().ok());
  auto client = RestClient::New(
      {.server = "http://127.0.0.1:" + std::to_string(server.port())});
  ASSERT_TRUE(client.ok());
  objects::metav1::DeleteOptions del;
  del.set_propagationpolicy("Background");
  ASSERT_TRUE((*client)
                  ->DeleteCollection(*Resource("", "configmaps"), "team", del)
                  .ok());
  std::lock_guard<std::mutex> l(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "DELETE");
  EXPECT_EQ(seen[0].target, "/api/v1/namespaces/team/configmaps");
  EXPECT_NE(seen[0].body.find("\"propagationPolicy\":\"Background\""),
            std::string::npos)
      << seen[0].body;
  server.Stop();
}

}  // namespace
}  // namespace kplane::informer
