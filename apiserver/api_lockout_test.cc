// "No cheap lock-out" (issue 15) against a real ApiServer: hundreds of
// connections that send a request head and one body byte, then nothing,
// must not keep well-behaved clients out. Before the in-flight slot was
// taken only once a body had arrived, they held every slot and everyone
// else got 429 until they went away (they never did: bodies had no
// deadline; the HTTP layer's 408 after 60 s is tested in net/).
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "apiserver/test_server.h"
#include "net/http_test_util.h"

namespace kplane::apiserver {
namespace {

using net::testing::RawConnection;
using testing::Response;
using testing::TestServer;

constexpr char kLeases[] =
    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

std::string Lease(const std::string& name, const std::string& rv,
                  const std::string& renew) {
  std::string meta = R"({"name":")" + name + R"(")";
  if (!rv.empty()) meta += R"(,"resourceVersion":")" + rv + R"(")";
  meta += "}";
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":)" +
         meta + R"(,"spec":{"holderIdentity":")" + name +
         R"(","leaseDurationSeconds":40,"renewTime":")" + renew + R"("}})";
}

TEST(ApiLockoutTest, LeasesAndNodeStatusFlowWhileSlowBodiesAreHeld) {
  // Small slot counts, so a few hundred connections are several times
  // more than every slot (kube's defaults are 400 and 200).
  TestServer s([](ApiServerOptions* o) {
    o->max_requests_inflight = 40;
    o->max_mutating_requests_inflight = 20;
  });
  constexpr int kSlow = 300;
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < kSlow; ++i) {
    auto c = std::make_unique<RawConnection>(s.port());
    // Half mutating (a create), half read-only (a list with a body).
    if (i % 2 == 0) {
      c->Send(
          "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
          "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
    } else {
      c->Send(
          "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n"
          "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
    }
    slow.push_back(std::move(c));
  }
  // Every slow connection is in; once a later request on a new connection
  // is answered, the (single) I/O loop has parsed their heads too.
  metrics::Gauge* open =
      s.metrics()
          ->NewGauge("kplane_http_connections_open", "", {"server"})
          ->With({"apiserver"});
  while (open->Value() < kSlow) std::this_thread::yield();
  ASSERT_EQ(s.Get("/healthz").code, 200);

  // A kubelet: its Lease, renewed, and its Node's status.
  Response lease =
      s.Post(kLeases, Lease("node-1", "", "2026-01-01T00:00:00.000000Z"));
  ASSERT_EQ(lease.code, 201) << lease.body;
  std::string rv = lease.Str({"metadata", "resourceVersion"});
  for (int i = 1; i <= 5; ++i) {
    Response renewed =
        s.Put(std::string(kLeases) + "/node-1",
              Lease("node-1", rv,
                    "2026-01-01T00:00:0" + std::to_string(i) + ".000000Z"));
    ASSERT_EQ(renewed.code, 200) << renewed.body;
    rv = renewed.Str({"metadata", "resourceVersion"});
  }
  Response node = s.Post("/api/v1/nodes", R"({"apiVersion":"v1","kind":"Node",)"
                                          R"("metadata":{"name":"node-1"}})");
  ASSERT_EQ(node.code, 201) << node.body;
  Response status = s.Patch(
      "/api/v1/nodes/node-1/status",
      R"({"status":{"conditions":[{"type":"Ready","status":"True",)"
      R"("reason":"KubeletReady","lastHeartbeatTime":"2026-01-01T00:00:05Z"}]}})",
      "application/strategic-merge-patch+json");
  ASSERT_EQ(status.code, 200) << status.body;
  Response leases = s.Get(kLeases);
  ASSERT_EQ(leases.code, 200) << leases.body;

  // The slow requests were not refused either: they are still waiting for
  // their bodies, and one that completes is served.
  const std::string rest =
      R"("apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}})";
  slow[0]->Send(rest + std::string(1000 - 1 - rest.size(), ' '));
  auto late = slow[0]->ReadResponse();
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->status, 201) << late->body;
}

}  // namespace
}  // namespace kplane::apiserver
