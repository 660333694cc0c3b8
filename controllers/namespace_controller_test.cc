#include "controllers/namespace_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;
using namespace testing;  // NOLINT: test builders

const objects::ResourceInfo& ConfigMaps() {
  return *objects::Scheme::Default().FindResource("", "v1", "configmaps");
}

std::shared_ptr<corev1::Namespace> NewNamespace(
    const std::string& name, bool terminating,
    std::vector<std::string> finalizers = {kNamespaceFinalizer}) {
  auto ns = std::make_shared<corev1::Namespace>();
  SetMeta(ns->mutable_metadata(), "", name);
  for (const std::string& f : finalizers) ns->mutable_spec()->add_finalizers(f);
  ns->mutable_status()->set_phase(terminating ? "Terminating" : "Active");
  if (terminating) {
    objects::SetTime(ns->mutable_metadata()->mutable_deletiontimestamp(),
                     int64_t{1700000100});
  }
  return ns;
}

std::shared_ptr<corev1::ConfigMap> NewConfigMap(const std::string& ns,
                                                const std::string& name) {
  auto cm = std::make_shared<corev1::ConfigMap>();
  SetMeta(cm->mutable_metadata(), ns, name);
  return cm;
}

class NamespaceControllerTest : public ::testing::Test {
 protected:
  NamespaceController New(std::vector<const objects::ResourceInfo*> resources =
                              {&PodsResource(), &ConfigMaps()}) {
    return NamespaceController({.api = &fake_,
                                .namespaces = &namespaces_,
                                .resources = std::move(resources),
                                .retry_interval = seconds(2),
                                .clock = &clock_,
                                .metrics = &reg_});
  }
  // `ns` in the cache and on the server.
  void Put(std::shared_ptr<corev1::Namespace> ns) {
    namespaces_.Upsert(ns);
    fake_.SetLive(NamespacesResource(), ns);
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer namespaces_;
};

TEST_F(NamespaceControllerTest, EmptiesTheNamespaceThenRemovesItsFinalizer) {
  NamespaceController c = New();
  Put(NewNamespace("team", true, {"example.com/x", kNamespaceFinalizer}));
  auto pod = NewPod("team", "p");
  RunOn(pod.get(), "n1", true);
  fake_.SetLive(PodsResource(), pod);
  fake_.SetLive(ConfigMaps(), NewConfigMap("team", "a"));
  fake_.SetLive(ConfigMaps(), NewConfigMap("other", "b"));

  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("deletecollection pods team",
                                           "deletecollection configmaps team"));
  // Content is left (a terminating pod, say): looked at again later.
  EXPECT_EQ(c.queue().NumWaiting(), 1);

  fake_.RemoveLive(ConfigMaps(), "team", "a");
  fake_.Clear();
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), Not(Contains("finalize namespaces team")));

  fake_.RemoveLive(PodsResource(), "team", "p");
  fake_.Clear();
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("deletecollection pods team",
                                           "deletecollection configmaps team",
                                           "finalize namespaces team"));
  ASSERT_EQ(fake_.Written().size(), 1u);
  const auto& finalized =
      static_cast<const corev1::Namespace&>(*fake_.Written()[0]);
  // Only its own finalizer goes; the object sent is the live one.
  EXPECT_THAT(finalized.spec().finalizers(), ElementsAre("example.com/x"));
  EXPECT_EQ(finalized.metadata().resourceversion(), "1");
}

TEST_F(NamespaceControllerTest, LeavesNamespacesThatAreNotItsToEnd) {
  NamespaceController c = New();
  Put(NewNamespace("active", false));
  // Finalized already (by another controller, or a user's PUT /finalize).
  Put(NewNamespace("finalized", true, {"example.com/x"}));
  // The cache still has it terminating; the server no longer has it.
  namespaces_.Upsert(NewNamespace("gone", true));
  for (const char* name : {"active", "finalized", "gone", "unknown"}) {
    ASSERT_TRUE(c.Sync(name).ok()) << name;
  }
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  EXPECT_EQ(c.queue().NumWaiting(), 0);
}

TEST_F(NamespaceControllerTest, DeletesEachObjectWithoutDeleteCollection) {
  objects::ResourceInfo no_collection = ConfigMaps();
  no_collection.verbs = {"delete", "get", "list"};
  NamespaceController c = New({&no_collection});
  Put(NewNamespace("team", true));
  fake_.SetLive(no_collection, NewConfigMap("team", "a"));
  auto deleting = NewConfigMap("team", "b");
  objects::SetTime(deleting->mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000100});
  fake_.SetLive(no_collection, deleting);
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete configmaps team/a"));
}

TEST_F(NamespaceControllerTest, AFailedDeleteFailsTheSync) {
  NamespaceController c = New();
  Put(NewNamespace("team", true));
  fake_.FailNext("deletecollection configmaps", UnavailableError("down"));
  EXPECT_FALSE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), Not(Contains("finalize namespaces team")));
}

TEST_F(NamespaceControllerTest, EmptiesEveryNamespacedResourceByDefault) {
  NamespaceController c = New({});
  Put(NewNamespace("team", true));
  ASSERT_TRUE(c.Sync("team").ok());
  const std::vector<std::string> actions = fake_.Actions();
  for (const char* r : {"pods", "configmaps", "secrets", "services", "events",
                        "deployments", "replicasets", "leases"}) {
    EXPECT_THAT(actions,
                Contains("deletecollection " + std::string(r) + " team"));
  }
  // Not bindings (create-only), nor cluster-scoped resources.
  EXPECT_THAT(actions, Not(Contains("deletecollection bindings team")));
  EXPECT_THAT(actions, Not(Contains("deletecollection nodes team")));
  EXPECT_THAT(actions, Contains("finalize namespaces team"));
}

}  // namespace
}  // namespace kplane::controllers
