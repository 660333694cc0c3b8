#include "controllers/endpoints_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "informer/api_errors.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

std::shared_ptr<corev1::Service> NewService(const std::string& name,
                                            const LabelMapT& selector) {
  auto svc = std::make_shared<corev1::Service>();
  SetMeta(svc->mutable_metadata(), "default", name, {{"team", "web"}});
  for (const auto& [k, v] : selector) {
    (*svc->mutable_spec()->mutable_selector())[k] = v;
  }
  svc->mutable_spec()->set_clusterip("10.96.0.20");
  auto* http = svc->mutable_spec()->add_ports();
  http->set_name("http");
  http->set_port(80);
  http->set_protocol("TCP");
  http->mutable_targetport()->set_type(1);
  http->mutable_targetport()->set_strval("web");
  auto* metrics = svc->mutable_spec()->add_ports();
  metrics->set_name("metrics");
  metrics->set_port(9090);
  metrics->set_protocol("TCP");
  metrics->mutable_targetport()->set_intval(9100);
  return svc;
}

// A pod on `node` with `ip`, Ready or not, with a container port "web".
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

class EndpointsControllerTest : public ::testing::Test {
 protected:
  EndpointsController New() {
    return EndpointsController({.api = &fake_,
                                .services = &services_,
                                .pods = &pods_,
                                .endpoints = &endpoints_,
                                .clock = &clock_,
                                .metrics = &reg_});
  }
  const corev1::Endpoints& Written(size_t i = 0) {
    return static_cast<const corev1::Endpoints&>(*fake_.Written().at(i));
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer services_;
  informer::Indexer pods_;
  informer::Indexer endpoints_;
};

// A 403 on create is only skipped while the namespace is being deleted
// (the namespace controller is emptying it); any other refusal (RBAC, a
// webhook) is an error, retried.
TEST_F(EndpointsControllerTest,
       AForbiddenCreateIsRetriedUnlessTheNamespaceEnds) {
  EndpointsController c = New();
  services_.Upsert(NewService("web", {{"app", "web"}}));
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  fake_.SetLive(NamespacesResource(), LiveNamespace("default", false));
  fake_.FailNext("create endpoints", ForbiddenStatus("forbidden by policy"));
  EXPECT_TRUE(informer::IsForbidden(c.Sync("default/web")));

  fake_.SetLive(NamespacesResource(), LiveNamespace("default", true));
  fake_.FailNext("create endpoints",
                 ForbiddenStatus("unable to create new content in namespace "
                                 "default because it is being terminated"));
  EXPECT_TRUE(c.Sync("default/web").ok());
}

TEST_F(EndpointsControllerTest, ReadyAndNotReadyPodsByPort) {
  EndpointsController c = New();
  services_.Upsert(NewService("web", {{"app", "web"}}));
  pods_.Upsert(ServingPod("b", "10.244.0.12", true));
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  pods_.Upsert(ServingPod("slow", "10.244.0.13", false));
  // Not selected, no IP yet, finished, or without the named port (it
  // still serves 9100, so it has a subset of its own).
  pods_.Upsert(NewPod("default", "other", {{"app", "db"}}));
  auto pending = ServingPod("pending", "", true);
  pods_.Upsert(pending);
  auto done = ServingPod("done", "10.244.0.14", true);
  done->mutable_status()->set_phase("Succeeded");
  pods_.Upsert(done);
  pods_.Upsert(ServingPod("noweb", "10.244.0.15", true, 0));

  ASSERT_TRUE(c.Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("create endpoints default/web"));
  const corev1::Endpoints& ep = Written();
  EXPECT_EQ(ep.metadata().labels().at("team"), "web");
  ASSERT_EQ(ep.subsets_size(), 2);
  // The subset with both ports: a and b ready (by IP), slow not ready.
  const corev1::EndpointSubset* both = &ep.subsets(0);
  const corev1::EndpointSubset* only_metrics = &ep.subsets(1);
  if (both->ports_size() != 2) std::swap(both, only_metrics);
  ASSERT_EQ(both->ports_size(), 2);
  EXPECT_EQ(both->ports(0).name(), "http");
  EXPECT_EQ(both->ports(0).port(), 8080);
  EXPECT_EQ(both->ports(1).name(), "metrics");
  EXPECT_EQ(both->ports(1).port(), 9100);
  ASSERT_EQ(both->addresses_size(), 2);
  EXPECT_EQ(both->addresses(0).ip(), "10.244.0.11");
  EXPECT_EQ(both->addresses(0).nodename(), "node-a");
  EXPECT_EQ(both->addresses(0).targetref().kind(), "Pod");
  EXPECT_EQ(both->addresses(0).targetref().name(), "a");
  EXPECT_EQ(both->addresses(0).targetref().uid(), "uid-a");
  EXPECT_EQ(both->addresses(1).ip(), "10.244.0.12");
  ASSERT_EQ(both->notreadyaddresses_size(), 1);
  EXPECT_EQ(both->notreadyaddresses(0).ip(), "10.244.0.13");
  ASSERT_EQ(only_metrics->ports_size(), 1);
  EXPECT_EQ(only_metrics->ports(0).port(), 9100);
  ASSERT_EQ(only_metrics->addresses_size(), 1);
  EXPECT_EQ(only_metrics->addresses(0).ip(), "10.244.0.15");
}

TEST_F(EndpointsControllerTest, UpdatesOnlyWhatChangedAndDeletesWithService) {
  EndpointsController c = New();
  services_.Upsert(NewService("web", {{"app", "web"}}));
  auto a = ServingPod("a", "10.244.0.11", true);
  pods_.Upsert(a);
  ASSERT_TRUE(c.Sync("default/web").ok());
  auto stored = std::make_shared<corev1::Endpoints>(Written());
  SetMeta(stored->mutable_metadata(), "default", "web", {{"team", "web"}});
  endpoints_.Upsert(stored);

  // Nothing changed: nothing written.
  fake_.Clear();
  ASSERT_TRUE(c.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());

  // The pod turns NotReady: it moves to notReadyAddresses.
  auto not_ready = ServingPod("a", "10.244.0.11", false);
  pods_.Upsert(not_ready);
  ASSERT_TRUE(c.Sync("default/web").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("update endpoints default/web"));
  ASSERT_EQ(Written().subsets_size(), 1);
  EXPECT_EQ(Written().subsets(0).addresses_size(), 0);
  ASSERT_EQ(Written().subsets(0).notreadyaddresses_size(), 1);
  EXPECT_EQ(Written().metadata().uid(), "uid-web");

  // The Service is deleted: so are its Endpoints.
  fake_.Clear();
  services_.Delete("default/web");
  ASSERT_TRUE(c.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete endpoints default/web"));
}

TEST_F(EndpointsControllerTest, LeavesEndpointsOfServicesWithoutSelector) {
  EndpointsController c = New();
  services_.Upsert(NewService("patroni", {}));
  pods_.Upsert(ServingPod("a", "10.244.0.11", true));
  auto own = std::make_shared<corev1::Endpoints>();
  SetMeta(own->mutable_metadata(), "default", "patroni");
  (*own->mutable_metadata()->mutable_annotations())["leader"] = "a";
  endpoints_.Upsert(own);
  ASSERT_TRUE(c.Sync("default/patroni").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

TEST_F(EndpointsControllerTest, PublishNotReadyHeadlessAndCapacity) {
  auto svc = NewService("db", {{"app", "web"}});
  svc->mutable_spec()->set_clusterip("None");
  svc->mutable_spec()->set_publishnotreadyaddresses(true);
  svc->mutable_spec()->clear_ports();
  std::vector<informer::ObjectPtr> pods;
  for (int i = 0; i < kMaxEndpointsAddresses + 5; ++i) {
    pods.push_back(ServingPod(
        "p" + std::to_string(i),
        "10.244." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1),
        i % 2 == 0));
  }
  corev1::Endpoints ep = DesiredEndpoints(*svc, pods);
  EXPECT_EQ(ep.metadata().labels().at("service.kubernetes.io/headless"), "");
  EXPECT_EQ(
      ep.metadata().annotations().at("endpoints.kubernetes.io/over-capacity"),
      "truncated");
  ASSERT_EQ(ep.subsets_size(), 1);
  EXPECT_EQ(ep.subsets(0).ports_size(), 0);
  // Not-ready pods count as ready when the Service publishes them.
  EXPECT_EQ(ep.subsets(0).addresses_size(), kMaxEndpointsAddresses);
  EXPECT_EQ(ep.subsets(0).notreadyaddresses_size(), 0);
}

}  // namespace
}  // namespace kplane::controllers
