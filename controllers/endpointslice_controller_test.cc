#include "controllers/endpointslice_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: test builders

std::shared_ptr<corev1::Service> WebService() {
  auto svc = std::make_shared<corev1::Service>();
  SetMeta(svc->mutable_metadata(), "default", "web", {{"team", "web"}});
  (*svc->mutable_spec()->mutable_selector())["app"] = "web";
  svc->mutable_spec()->set_clusterip("10.96.0.20");
  auto* http = svc->mutable_spec()->add_ports();
  http->set_name("http");
  http->set_port(80);
  http->set_protocol("TCP");
  http->mutable_targetport()->set_type(1);
  http->mutable_targetport()->set_strval("web");
  return svc;
}

// A pod on node-<name> with `ip` and a container port "web" (8080) unless
// `web_port` is 0.
std::shared_ptr<corev1::Pod> ServingPod(const std::string& name,
                                        const std::string& ip, bool ready,
                                        int web_port = 8080) {
  auto pod = NewPod("default", name, {{"app", "web"}});
  RunOn(pod.get(), "node-" + name, ready);
  pod->mutable_status()->set_podip(ip);
  if (web_port != 0) {
    auto* port = pod->mutable_spec()->mutable_containers(0)->add_ports();
    port->set_name("web");
    port->set_containerport(web_port);
    port->set_protocol("TCP");
  }
  return pod;
}

class EndpointSliceControllerTest : public ::testing::Test {
 protected:
  std::unique_ptr<EndpointSliceController> New(int max_per_slice = 100) {
    return std::make_unique<EndpointSliceController>(
        EndpointSliceControllerOptions{.api = &fake_,
                                       .services = &services_,
                                       .pods = &pods_,
                                       .slices = &slices_,
                                       .max_endpoints_per_slice = max_per_slice,
                                       .clock = &clock_,
                                       .metrics = &reg_});
  }
  const discoveryv1::EndpointSlice& Written(size_t i = 0) {
    return static_cast<const discoveryv1::EndpointSlice&>(
        *fake_.Written().at(i));
  }
  // What the informer would deliver: every slice written so far, stored.
  void CacheWrites() {
    for (const auto& obj : fake_.Written()) {
      auto slice = std::make_shared<discoveryv1::EndpointSlice>(
          static_cast<const discoveryv1::EndpointSlice&>(*obj));
      slices_.Upsert(slice);
    }
    fake_.Clear();
  }
  std::vector<std::string> Addresses(const discoveryv1::EndpointSlice& s) {
    std::vector<std::string> out;
    for (const auto& e : s.endpoints()) out.push_back(e.addresses(0));
    return out;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer services_;
  informer::Indexer pods_;
  informer::Indexer slices_;
};

TEST_F(EndpointSliceControllerTest, EndpointsWithConditionsPortsAndLabels) {
  auto c = New();
  services_.Upsert(WebService());
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  pods_.Upsert(ServingPod("slow", "10.244.0.13", false));
  auto leaving = ServingPod("leaving", "10.244.0.14", true);
  objects::SetTime(leaving->mutable_metadata()->mutable_deletiontimestamp(),
                   WallTime(std::chrono::seconds(1795941462)));
  pods_.Upsert(leaving);
  auto done = ServingPod("done", "10.244.0.15", true);
  done->mutable_status()->set_phase("Succeeded");
  pods_.Upsert(done);
  pods_.Upsert(ServingPod("pending", "", true));
  pods_.Upsert(NewPod("default", "other", {{"app", "db"}}));
  // Serves no "web" port: an endpoint of a slice without ports.
  pods_.Upsert(ServingPod("noweb", "10.244.0.16", true, 0));

  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("create endpointslices default/web-",
                          "create endpointslices default/web-"));
  const discoveryv1::EndpointSlice* with_port = &Written(0);
  const discoveryv1::EndpointSlice* without = &Written(1);
  if (with_port->ports().empty()) std::swap(with_port, without);
  EXPECT_EQ(with_port->addresstype(), "IPv4");
  const auto& labels = with_port->metadata().labels();
  EXPECT_EQ(labels.at("kubernetes.io/service-name"), "web");
  EXPECT_EQ(labels.at("endpointslice.kubernetes.io/managed-by"),
            "endpointslice-controller.k8s.io");
  EXPECT_EQ(labels.at("team"), "web");
  ASSERT_EQ(with_port->metadata().ownerreferences_size(), 1);
  const auto& owner = with_port->metadata().ownerreferences(0);
  EXPECT_EQ(owner.kind(), "Service");
  EXPECT_EQ(owner.name(), "web");
  EXPECT_EQ(owner.uid(), "uid-web");
  EXPECT_TRUE(owner.controller());
  ASSERT_EQ(with_port->ports_size(), 1);
  EXPECT_EQ(with_port->ports(0).name(), "http");
  EXPECT_EQ(with_port->ports(0).port(), 8080);
  EXPECT_EQ(with_port->ports(0).protocol(), "TCP");
  EXPECT_THAT(Addresses(*with_port),
              ElementsAre("10.244.0.11", "10.244.0.13", "10.244.0.14"));
  const auto& a = with_port->endpoints(0);
  EXPECT_TRUE(a.conditions().ready());
  EXPECT_TRUE(a.conditions().serving());
  EXPECT_FALSE(a.conditions().terminating());
  EXPECT_EQ(a.nodename(), "node-a");
  EXPECT_EQ(a.targetref().kind(), "Pod");
  EXPECT_EQ(a.targetref().name(), "a");
  EXPECT_EQ(a.targetref().uid(), "uid-a");
  const auto& slow = with_port->endpoints(1);
  EXPECT_TRUE(slow.conditions().has_ready());
  EXPECT_FALSE(slow.conditions().ready());
  EXPECT_FALSE(slow.conditions().serving());
  // Terminating: serving still, never ready.
  const auto& leaving_ep = with_port->endpoints(2);
  EXPECT_FALSE(leaving_ep.conditions().ready());
  EXPECT_TRUE(leaving_ep.conditions().serving());
  EXPECT_TRUE(leaving_ep.conditions().terminating());
  EXPECT_THAT(without->ports(), IsEmpty());
  EXPECT_THAT(Addresses(*without), ElementsAre("10.244.0.16"));
}

// As the Endpoints controller: a 403 on create is skipped only while the
// namespace is being deleted.
TEST_F(EndpointSliceControllerTest,
       AForbiddenCreateIsRetriedUnlessTheNamespaceEnds) {
  auto c = New();
  services_.Upsert(WebService());
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  fake_.SetLive(NamespacesResource(), LiveNamespace("default", false));
  fake_.FailNext("create endpointslices",
                 ForbiddenStatus("forbidden by policy"));
  EXPECT_TRUE(informer::IsForbidden(c->Sync("default/web")));

  fake_.SetLive(NamespacesResource(), LiveNamespace("default", true));
  fake_.FailNext("create endpointslices",
                 ForbiddenStatus("unable to create new content in namespace "
                                 "default because it is being terminated"));
  EXPECT_TRUE(c->Sync("default/web").ok());
}

TEST_F(EndpointSliceControllerTest, KeepsEndpointsInPlaceAndWritesOnlyChanges) {
  auto c = New();
  services_.Upsert(WebService());
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  pods_.Upsert(ServingPod("b", "10.244.0.12", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  CacheWrites();
  ASSERT_TRUE(c->Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());

  // a goes, c comes: the one slice is updated, not replaced.
  pods_.Delete("default/a");
  pods_.Upsert(ServingPod("c", "10.244.0.10", false));
  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("update endpointslices default/web-1"));
  EXPECT_THAT(Addresses(Written()), ElementsAre("10.244.0.12", "10.244.0.10"));
  CacheWrites();

  // The Service is deleted: so is its slice.
  services_.Delete("default/web");
  ASSERT_TRUE(c->Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("delete endpointslices default/web-1"));
}

TEST_F(EndpointSliceControllerTest, AStaleCacheDoesNotDuplicateSlices) {
  auto c = New();
  services_.Upsert(WebService());
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_EQ(fake_.Actions().size(), 1u);
  // The slices cache has not seen the create yet: no second create.
  pods_.Upsert(ServingPod("b", "10.244.0.12", true));
  EXPECT_FALSE(c->Sync("default/web").ok());
  EXPECT_EQ(fake_.Actions().size(), 1u);
  CacheWrites();
  ASSERT_TRUE(c->Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update endpointslices default/web-1"));
}

TEST_F(EndpointSliceControllerTest, ASliceDeletedByOthersIsRecreated) {
  auto c = New();
  services_.Upsert(WebService());
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  CacheWrites();
  pods_.Upsert(ServingPod("b", "10.244.0.12", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("update endpointslices default/web-1"));
  fake_.Clear();
  // Someone else (kubectl delete) deletes the slice before the cache saw
  // our update: the informer drops it and delivers the delete.
  informer::ObjectPtr gone = slices_.Get("default/web-1");
  ASSERT_NE(gone, nullptr);
  slices_.Delete("default/web-1");
  c->OnSliceEvent(ObjectEvent{ObjectEvent::Type::kDeleted, *gone});
  Status s = c->Sync("default/web");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create endpointslices default/web-"));
  EXPECT_THAT(Addresses(Written()), ElementsAre("10.244.0.11", "10.244.0.12"));
}

TEST_F(EndpointSliceControllerTest, AGoneServiceIsSyncedBehindItsWrites) {
  auto c = New();
  services_.Upsert(WebService());
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  // The Service is deleted before the cache saw the slice created for it:
  // nothing to wait for, the Service's memory of its writes goes.
  services_.Delete("default/web");
  fake_.Clear();
  Status s = c->Sync("default/web");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(fake_.Actions(), IsEmpty());
  // Recreated, with the old slice never seen: a fresh start.
  services_.Upsert(WebService());
  s = c->Sync("default/web");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create endpointslices default/web-"));
}

TEST_F(EndpointSliceControllerTest, SplitsAtMaxEndpointsPerSlice) {
  auto c = New(/*max_per_slice=*/3);
  services_.Upsert(WebService());
  for (int i = 0; i < 7; ++i) {
    pods_.Upsert(ServingPod("p" + std::to_string(i),
                            "10.244.0." + std::to_string(20 + i), true));
  }
  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_EQ(fake_.Written().size(), 3u);
  EXPECT_EQ(Written(0).endpoints_size(), 3);
  EXPECT_EQ(Written(1).endpoints_size(), 3);
  EXPECT_EQ(Written(2).endpoints_size(), 1);
  CacheWrites();
  // Two more fill the slice with room first.
  pods_.Upsert(ServingPod("q0", "10.244.0.40", true));
  pods_.Upsert(ServingPod("q1", "10.244.0.41", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("update endpointslices default/web-3"));
  EXPECT_EQ(Written().endpoints_size(), 3);
}

TEST_F(EndpointSliceControllerTest, PlaceholderWithoutPodsAndNoSelector) {
  auto c = New();
  services_.Upsert(WebService());
  ASSERT_TRUE(c->Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("create endpointslices default/web-"));
  EXPECT_THAT(Written().endpoints(), IsEmpty());
  EXPECT_THAT(Written().ports(), IsEmpty());
  CacheWrites();
  ASSERT_TRUE(c->Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
  // A pod arrives: the placeholder goes, a slice with ports comes.
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  ASSERT_TRUE(c->Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create endpointslices default/web-",
                          "delete endpointslices default/web-1"));

  auto manual = WebService();
  manual->mutable_metadata()->set_name("manual");
  manual->mutable_spec()->clear_selector();
  services_.Upsert(manual);
  fake_.Clear();
  ASSERT_TRUE(c->Sync("default/manual").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
}

}  // namespace
}  // namespace kplane::controllers
