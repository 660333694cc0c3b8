// Services' ClusterIPs and NodePorts (apiserver/service_allocation.h,
// apiserver/range_allocator.h): the persisted bitmaps under concurrency,
// kube's 422s over HTTP, freeing on delete, on type changes and on failed
// creates, the `kubernetes` Service, Endpoints and EndpointSlice, and no double
// allocation across an apiserver restart or between two apiservers on one
// store.
#include "apiserver/service_allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "apiserver/range_allocator.h"
#include "apiserver/test_server.h"
#include "objects/types.h"

namespace kplane::apiserver {
namespace {

using ::testing::HasSubstr;
using testing::Response;
using testing::TestServer;

constexpr char kServices[] = "/api/v1/namespaces/default/services";

std::string ServiceJson(
    const std::string& name, const std::string& extra,
    const std::string& ports = R"([{"port":80,"targetPort":8080}])") {
  return R"({"metadata":{"name":")" + name +
         R"("},"spec":{"selector":{"app":"web"},"ports":)" + ports +
         (extra.empty() ? "" : "," + extra) + "}}";
}

int NodePort(const Response& r, int i = 0) {
  const rapidjson::Value* ports = r.At({"spec", "ports"});
  if (ports == nullptr || !ports->IsArray() ||
      static_cast<int>(ports->Size()) <= i ||
      !(*ports)[i].HasMember("nodePort")) {
    return 0;
  }
  return (*ports)[i]["nodePort"].GetInt();
}

TEST(RangeAllocatorTest, TakesGivesBackAndRefusesTwice) {
  TestServer server;
  RangeAllocator a(server.store(), "/test/ranges/a", "0-9", 10);
  ASSERT_TRUE(a.Allocate(3).ok());
  EXPECT_TRUE(a.Allocate(3).Is(StatusCode::kAlreadyExists));
  EXPECT_TRUE(a.Allocate(10).Is(StatusCode::kOutOfRange));
  std::set<int64_t> got = {3};
  for (int i = 0; i < 9; ++i) {
    StatusOr<int64_t> n = a.AllocateNext();
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_TRUE(got.insert(*n).second) << *n << " handed out twice";
  }
  EXPECT_TRUE(a.AllocateNext().status().Is(StatusCode::kResourceExhausted));
  ASSERT_TRUE(a.Release(3).ok());
  // Another allocator over the same key sees the same bitmap (a restart).
  RangeAllocator b(server.store(), "/test/ranges/a", "0-9", 10);
  EXPECT_EQ(*b.Has(3), false);
  EXPECT_EQ(*b.AllocateNext(), 3);
  // A stored bitmap of another range is refused, not reinterpreted.
  RangeAllocator other(server.store(), "/test/ranges/a", "0-19", 20);
  EXPECT_TRUE(
      other.AllocateNext().status().Is(StatusCode::kFailedPrecondition));
}

TEST(RangeAllocatorTest, ConcurrentAllocatorsOnOneKeyNeverShareAnOffset) {
  TestServer server;
  constexpr int kSize = 64;
  RangeAllocator a(server.store(), "/test/ranges/c", "c", kSize);
  RangeAllocator b(server.store(), "/test/ranges/c", "c", kSize);
  std::vector<int64_t> got_a, got_b;
  auto run = [](RangeAllocator* r, std::vector<int64_t>* out) {
    for (int i = 0; i < kSize / 2; ++i) {
      StatusOr<int64_t> n = r->AllocateNext();
      if (n.ok()) out->push_back(*n);
    }
  };
  std::thread ta(run, &a, &got_a);
  std::thread tb(run, &b, &got_b);
  ta.join();
  tb.join();
  std::set<int64_t> all(got_a.begin(), got_a.end());
  all.insert(got_b.begin(), got_b.end());
  EXPECT_EQ(got_a.size() + got_b.size(), static_cast<size_t>(kSize));
  EXPECT_EQ(all.size(), static_cast<size_t>(kSize));
}

// Free node ports are picked above kube's portallocator static band,
// min(max(16, size/32), 128) ports (0 for 16 or fewer), not the ClusterIP
// one (size/16, up to 256): for 30000-30519 (520 ports) the lowest 16 stay
// for explicit requests until the rest is taken.
TEST(RangeAllocatorTest, NodePortsLeaveKubesStaticBandToExplicitRequests) {
  TestServer server;
  StatusOr<std::unique_ptr<ServiceAllocator>> alloc = ServiceAllocator::New(
      server.store(), "/test", kDefaultServiceClusterIPRange, "30000-30519");
  ASSERT_TRUE(alloc.ok()) << alloc.status();
  objects::corev1::Service svc;
  svc.mutable_metadata()->set_name("many");
  svc.mutable_spec()->set_type("NodePort");
  svc.mutable_spec()->set_clusterip("None");  // node ports only
  constexpr int kDynamic = 520 - 16;
  for (int i = 0; i < kDynamic; ++i) {
    svc.mutable_spec()->add_ports()->set_port(i + 1);
  }
  auto pending = (*alloc)->Allocate(&svc, nullptr, /*dry_run=*/false);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<WriteAllocator::Pending>>(
      pending));
  std::get<std::unique_ptr<WriteAllocator::Pending>>(pending)->Commit();
  std::set<int> got;
  for (const auto& p : svc.spec().ports()) got.insert(p.nodeport());
  EXPECT_EQ(got.size(), static_cast<size_t>(kDynamic));
  EXPECT_GE(*got.begin(), 30016) << "dynamic pick inside the static band";

  using Kind = RangeAllocator::Kind;
  EXPECT_EQ(RangeAllocator::StaticBand(Kind::kNodePorts, 2768), 86);
  EXPECT_EQ(RangeAllocator::StaticBand(Kind::kNodePorts, 16), 0);
  EXPECT_EQ(RangeAllocator::StaticBand(Kind::kNodePorts, 17), 16);
  EXPECT_EQ(RangeAllocator::StaticBand(Kind::kNodePorts, 65535), 128);
  // The ClusterIP formula is another one.
  EXPECT_EQ(RangeAllocator::StaticBand(Kind::kServiceIPs, 2768), 173);
  EXPECT_EQ(RangeAllocator::StaticBand(Kind::kServiceIPs, (1 << 20) - 2), 256);
}

TEST(ServiceAllocationTest, ClusterIPs) {
  TestServer server;
  // The kubernetes Service: the first IP, 443 -> our port, and its
  // Endpoints.
  Response k = server.Get(std::string(kServices) + "/kubernetes");
  ASSERT_EQ(k.code, 200) << k.body;
  EXPECT_EQ(k.Str({"spec", "clusterIP"}), "10.96.0.1");
  EXPECT_EQ((*k.At({"spec", "ports"}))[0]["targetPort"].GetInt(),
            server.port());
  Response ke = server.Get("/api/v1/namespaces/default/endpoints/kubernetes");
  ASSERT_EQ(ke.code, 200) << ke.body;
  EXPECT_EQ(
      std::string((*ke.At({"subsets"}))[0]["addresses"][0]["ip"].GetString()),
      "127.0.0.1");
  // And the EndpointSlice kube's endpoints adapter writes beside them.
  Response ks = server.Get(
      "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/"
      "kubernetes");
  ASSERT_EQ(ks.code, 200) << ks.body;
  EXPECT_EQ(ks.Str({"addressType"}), "IPv4");
  EXPECT_EQ(ks.Str({"metadata", "labels", "kubernetes.io/service-name"}),
            "kubernetes");
  EXPECT_EQ(std::string((*ks.At({"endpoints"}))[0]["addresses"][0].GetString()),
            "127.0.0.1");
  EXPECT_TRUE((*ks.At({"endpoints"}))[0]["conditions"]["ready"].GetBool());
  EXPECT_EQ((*ks.At({"ports"}))[0]["port"].GetInt(), server.port());

  Response a = server.Post(kServices, ServiceJson("a", ""));
  ASSERT_EQ(a.code, 201) << a.body;
  const std::string ip = a.Str({"spec", "clusterIP"});
  EXPECT_THAT(ip, ::testing::StartsWith("10."));
  EXPECT_NE(ip, "10.96.0.1");
  EXPECT_EQ(std::string((*a.At({"spec", "clusterIPs"}))[0].GetString()), ip);

  Response fixed = server.Post(
      kServices, ServiceJson("fixed", R"("clusterIP":"10.96.0.10")"));
  ASSERT_EQ(fixed.code, 201) << fixed.body;
  EXPECT_EQ(fixed.Str({"spec", "clusterIP"}), "10.96.0.10");
  Response twice = server.Post(
      kServices, ServiceJson("twice", R"("clusterIP":"10.96.0.10")"));
  EXPECT_EQ(twice.code, 422);
  EXPECT_EQ(twice.Str({"message"}),
            "Service \"twice\" is invalid: spec.clusterIPs: Invalid value: "
            "[]string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: "
            "provided IP is already allocated");
  Response outside =
      server.Post(kServices, ServiceJson("out", R"("clusterIP":"10.0.0.5")"));
  EXPECT_EQ(outside.code, 422);
  EXPECT_THAT(outside.Str({"message"}),
              HasSubstr("failed to allocate IP 10.0.0.5: the provided IP "
                        "(10.0.0.5) is not in the valid range. The range of "
                        "valid IPs is 10.96.0.0/12"));
  Response headless =
      server.Post(kServices, ServiceJson("headless", R"("clusterIP":"None")"));
  ASSERT_EQ(headless.code, 201) << headless.body;
  EXPECT_EQ(headless.Str({"spec", "clusterIP"}), "None");

  // A failed create gives its IP back: "fixed" exists already (409).
  Response clash = server.Post(
      kServices, ServiceJson("fixed", R"("clusterIP":"10.96.0.11")"));
  EXPECT_EQ(clash.code, 409);
  EXPECT_EQ(
      server
          .Post(kServices, ServiceJson("eleven", R"("clusterIP":"10.96.0.11")"))
          .code,
      201);

  // Deleting frees the IP.
  EXPECT_EQ(server.Delete(std::string(kServices) + "/fixed").code, 200);
  Response again = server.Post(
      kServices, ServiceJson("again", R"("clusterIP":"10.96.0.10")"));
  EXPECT_EQ(again.code, 201) << again.body;
  // An update keeps the IP it has (kubectl apply sends none).
  Response put = server.Put(std::string(kServices) + "/again",
                            ServiceJson("again", R"("type":"ClusterIP")"));
  ASSERT_EQ(put.code, 200) << put.body;
  EXPECT_EQ(put.Str({"spec", "clusterIP"}), "10.96.0.10");
  // To ExternalName and the IP is free again.
  Response external = server.Put(
      std::string(kServices) + "/again",
      ServiceJson("again",
                  R"("type":"ExternalName","externalName":"db.example.com")"));
  ASSERT_EQ(external.code, 200) << external.body;
  EXPECT_EQ(
      server.Post(kServices, ServiceJson("ten", R"("clusterIP":"10.96.0.10")"))
          .code,
      201);
}

TEST(ServiceAllocationTest, NodePorts) {
  TestServer server;
  Response a = server.Post(kServices, ServiceJson("a", R"("type":"NodePort")"));
  ASSERT_EQ(a.code, 201) << a.body;
  EXPECT_GE(NodePort(a), 30000);
  EXPECT_LE(NodePort(a), 32767);
  Response fixed =
      server.Post(kServices, ServiceJson("fixed", R"("type":"NodePort")",
                                         R"([{"port":80,"nodePort":30080}])"));
  ASSERT_EQ(fixed.code, 201) << fixed.body;
  EXPECT_EQ(NodePort(fixed), 30080);
  Response twice =
      server.Post(kServices, ServiceJson("twice", R"("type":"NodePort")",
                                         R"([{"port":80,"nodePort":30080}])"));
  EXPECT_EQ(twice.code, 422);
  EXPECT_EQ(twice.Str({"message"}),
            "Service \"twice\" is invalid: spec.ports[0].nodePort: Invalid "
            "value: 30080: provided port is already allocated");
  Response low =
      server.Post(kServices, ServiceJson("low", R"("type":"NodePort")",
                                         R"([{"port":80,"nodePort":8080}])"));
  EXPECT_EQ(low.code, 422);
  EXPECT_EQ(low.Str({"message"}),
            "Service \"low\" is invalid: spec.ports[0].nodePort: Invalid "
            "value: 8080: provided port is not in the valid range. The range "
            "of valid ports is 30000-32767");
  // The failed create of "twice" took its ClusterIP and gave it back; an
  // update keeps the node port; NodePort -> ClusterIP frees it.
  Response put = server.Put(
      std::string(kServices) + "/fixed",
      ServiceJson("fixed", R"("type":"NodePort")", R"([{"port":81}])"));
  ASSERT_EQ(put.code, 200) << put.body;
  EXPECT_EQ(NodePort(put), 30080);
  Response cluster = server.Put(
      std::string(kServices) + "/fixed",
      ServiceJson("fixed", R"("type":"ClusterIP")", R"([{"port":81}])"));
  ASSERT_EQ(cluster.code, 200) << cluster.body;
  EXPECT_EQ(NodePort(cluster), 0);
  EXPECT_EQ(
      server
          .Post(kServices, ServiceJson("taken", R"("type":"NodePort")",
                                       R"([{"port":80,"nodePort":30080}])"))
          .code,
      201);
  // Deleting frees node ports too.
  EXPECT_EQ(server.Delete(std::string(kServices) + "/taken").code, 200);
  EXPECT_EQ(
      server
          .Post(kServices, ServiceJson("back", R"("type":"NodePort")",
                                       R"([{"port":80,"nodePort":30080}])"))
          .code,
      201);
}

// `kubectl patch svc web -p '{"spec":{"type":"ClusterIP"}}'` sends only the
// type: what the old type needed and the new one does not (node ports,
// cluster IPs, externalTrafficPolicy, ...) is still in the merged object,
// and kube drops it when the request left it as it was
// (dropTypeDependentFields); the allocator then gives it back.
TEST(ServiceAllocationTest, TypeChangesByPatchDropWhatTheNewTypeDoesNotUse) {
  TestServer server;
  const std::string np = std::string(kServices) + "/np";
  ASSERT_EQ(
      server
          .Post(kServices, ServiceJson("np", R"("type":"NodePort")",
                                       R"([{"port":80,"nodePort":30080}])"))
          .code,
      201);
  // A nodePort the request itself sets is the user's: still a 422.
  Response own = server.Patch(
      np,
      R"({"spec":{"type":"ClusterIP","ports":[{"port":80,"nodePort":30081}]}})",
      "application/merge-patch+json");
  EXPECT_EQ(own.code, 422) << own.body;
  Response to_cluster_ip = server.Patch(np, R"({"spec":{"type":"ClusterIP"}})",
                                        "application/merge-patch+json");
  ASSERT_EQ(to_cluster_ip.code, 200) << to_cluster_ip.body;
  EXPECT_EQ(NodePort(to_cluster_ip), 0);
  EXPECT_EQ(to_cluster_ip.At({"spec", "externalTrafficPolicy"}), nullptr);
  EXPECT_EQ(
      server
          .Post(kServices, ServiceJson("reuse", R"("type":"NodePort")",
                                       R"([{"port":80,"nodePort":30080}])"))
          .code,
      201);

  // A LoadBalancer's own fields go too.
  const std::string lb = std::string(kServices) + "/lb";
  Response made = server.Post(
      kServices,
      ServiceJson("lb",
                  R"("type":"LoadBalancer","externalTrafficPolicy":"Local",
                     "healthCheckNodePort":30500,
                     "loadBalancerClass":"example.com/lb")",
                  R"([{"port":80,"nodePort":30090}])"));
  ASSERT_EQ(made.code, 201) << made.body;
  Response from_lb = server.Patch(lb, R"({"spec":{"type":"ClusterIP"}})",
                                  "application/merge-patch+json");
  ASSERT_EQ(from_lb.code, 200) << from_lb.body;
  EXPECT_EQ(NodePort(from_lb), 0);
  EXPECT_EQ(from_lb.At({"spec", "healthCheckNodePort"}), nullptr);
  EXPECT_EQ(from_lb.At({"spec", "allocateLoadBalancerNodePorts"}), nullptr);
  EXPECT_EQ(from_lb.At({"spec", "loadBalancerClass"}), nullptr);
  EXPECT_EQ(from_lb.At({"spec", "externalTrafficPolicy"}), nullptr);

  // ClusterIP -> ExternalName: the IP (and its families) go, and the IP is
  // free for another Service.
  const std::string cip = std::string(kServices) + "/cip";
  ASSERT_EQ(
      server.Post(kServices, ServiceJson("cip", R"("clusterIP":"10.96.0.20")"))
          .code,
      201);
  Response to_external = server.Patch(
      cip,
      R"({"spec":{"type":"ExternalName","externalName":"db.example.com"}})",
      "application/merge-patch+json");
  ASSERT_EQ(to_external.code, 200) << to_external.body;
  EXPECT_EQ(to_external.At({"spec", "clusterIP"}), nullptr);
  EXPECT_EQ(to_external.At({"spec", "clusterIPs"}), nullptr);
  EXPECT_EQ(to_external.At({"spec", "ipFamilies"}), nullptr);
  EXPECT_EQ(to_external.At({"spec", "ipFamilyPolicy"}), nullptr);
  EXPECT_EQ(
      server.Post(kServices, ServiceJson("ip", R"("clusterIP":"10.96.0.20")"))
          .code,
      201);
}

// A LoadBalancer with allocateLoadBalancerNodePorts false gets no new node
// ports, but those it names are its own (kube's alloc.go: "Don't allocate
// new ports, but do respect specific requests"), also after a switch from
// true, which used to give back every port the stored spec still names:
// either way a second Service could take the same port.
TEST(ServiceAllocationTest, LoadBalancerWithoutNodePortAllocationKeepsItsOwn) {
  TestServer server;
  const std::string no_alloc =
      R"("type":"LoadBalancer","allocateLoadBalancerNodePorts":false)";
  Response named = server.Post(
      kServices, ServiceJson("named", no_alloc,
                             R"([{"port":80,"name":"a","nodePort":30080},
                                             {"port":81,"name":"b"}])"));
  ASSERT_EQ(named.code, 201) << named.body;
  EXPECT_EQ(NodePort(named), 30080);
  EXPECT_EQ(NodePort(named, 1), 0) << "allocated with allocation off";
  Response twice =
      server.Post(kServices, ServiceJson("twice", R"("type":"NodePort")",
                                         R"([{"port":80,"nodePort":30080}])"));
  EXPECT_EQ(twice.code, 422) << twice.body;
  EXPECT_EQ(twice.Str({"message"}),
            "Service \"twice\" is invalid: spec.ports[0].nodePort: Invalid "
            "value: 30080: provided port is already allocated");

  Response lb =
      server.Post(kServices, ServiceJson("lb", R"("type":"LoadBalancer")",
                                         R"([{"port":80,"nodePort":30090}])"));
  ASSERT_EQ(lb.code, 201) << lb.body;
  Response off = server.Put(
      std::string(kServices) + "/lb",
      ServiceJson("lb", no_alloc, R"([{"port":80,"nodePort":30090}])"));
  ASSERT_EQ(off.code, 200) << off.body;
  EXPECT_EQ(NodePort(off), 30090);
  Response again =
      server.Post(kServices, ServiceJson("again", R"("type":"NodePort")",
                                         R"([{"port":80,"nodePort":30090}])"));
  EXPECT_EQ(again.code, 422) << again.body;
  EXPECT_EQ(again.Str({"message"}),
            "Service \"again\" is invalid: spec.ports[0].nodePort: Invalid "
            "value: 30090: provided port is already allocated");
  // A delete gives them back.
  EXPECT_EQ(server.Delete(std::string(kServices) + "/lb").code, 200);
  EXPECT_EQ(
      server
          .Post(kServices, ServiceJson("now", R"("type":"NodePort")",
                                       R"([{"port":80,"nodePort":30090}])"))
          .code,
      201);
  EXPECT_EQ(server.Delete(std::string(kServices) + "/named").code, 200);
  EXPECT_EQ(
      server
          .Post(kServices, ServiceJson("later", R"("type":"NodePort")",
                                       R"([{"port":80,"nodePort":30080}])"))
          .code,
      201);
}

TEST(ServiceAllocationTest, RestartsAndTwoApiServersOnOneStore) {
  TestServer first;
  ASSERT_EQ(
      first.Post(kServices, ServiceJson("kept", R"("clusterIP":"10.96.0.42")"))
          .code,
      201);
  {
    // A second apiserver on the same store, and after a "restart" (a new
    // one: nothing is remembered in the process).
    TestServer second(first.store(), nullptr);
    Response dup = second.Post(
        kServices, ServiceJson("dup", R"("clusterIP":"10.96.0.42")"));
    EXPECT_EQ(dup.code, 422) << dup.body;
    EXPECT_EQ(second.Get(std::string(kServices) + "/kubernetes")
                  .Str({"spec", "clusterIP"}),
              "10.96.0.1");
  }
  TestServer second(first.store(), nullptr);
  // Both create services at once: no IP and no node port twice.
  constexpr int kEach = 15;
  std::vector<std::string> ips[2];
  std::vector<int> ports[2];
  auto run = [&](TestServer* s, int which) {
    for (int i = 0; i < kEach; ++i) {
      Response r = s->Post(kServices, ServiceJson("s" + std::to_string(which) +
                                                      "-" + std::to_string(i),
                                                  R"("type":"NodePort")"));
      if (r.code != 201) continue;
      ips[which].push_back(r.Str({"spec", "clusterIP"}));
      ports[which].push_back(NodePort(r));
    }
  };
  std::thread t0(run, &first, 0);
  std::thread t1(run, &second, 1);
  t0.join();
  t1.join();
  std::set<std::string> all_ips = {"10.96.0.1", "10.96.0.42"};
  std::set<int> all_ports;
  for (int w = 0; w < 2; ++w) {
    ASSERT_EQ(ips[w].size(), static_cast<size_t>(kEach));
    all_ips.insert(ips[w].begin(), ips[w].end());
    all_ports.insert(ports[w].begin(), ports[w].end());
  }
  EXPECT_EQ(all_ips.size(), 2u + 2 * kEach);
  EXPECT_EQ(all_ports.size(), 2u * kEach);
}

}  // namespace
}  // namespace kplane::apiserver
