#include "controllers/root_ca_publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "controllers/util.h"
#include "informer/api_errors.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

constexpr char kCA[] =
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

std::shared_ptr<corev1::Namespace> NewNamespace(const std::string& name,
                                                const std::string& phase) {
  auto ns = std::make_shared<corev1::Namespace>();
  SetMeta(ns->mutable_metadata(), "", name);
  ns->mutable_status()->set_phase(phase);
  return ns;
}

class RootCAPublisherTest : public ::testing::Test {
 protected:
  RootCAPublisher New() {
    return RootCAPublisher({.api = &fake_,
                            .namespaces = &namespaces_,
                            .config_maps = &config_maps_,
                            .root_ca_pem = kCA,
                            .clock = &clock_,
                            .metrics = &reg_});
  }
  const corev1::ConfigMap& Written(size_t i = 0) {
    return static_cast<const corev1::ConfigMap&>(*fake_.Written().at(i));
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer namespaces_;
  informer::Indexer config_maps_;
};

TEST_F(RootCAPublisherTest, CreatesThenKeepsTheConfigMap) {
  RootCAPublisher c = New();
  namespaces_.Upsert(NewNamespace("team", "Active"));
  ASSERT_TRUE(c.Sync("team").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("create configmaps team/kube-root-ca.crt"));
  const corev1::ConfigMap& cm = Written();
  EXPECT_EQ(cm.data().at("ca.crt"), kCA);
  EXPECT_EQ(cm.data_size(), 1);
  EXPECT_THAT(cm.metadata().annotations().at("kubernetes.io/description"),
              ::testing::StartsWith("Contains a CA bundle"));

  // As it should be: nothing.
  auto stored = std::make_shared<corev1::ConfigMap>(cm);
  SetMeta(stored->mutable_metadata(), "team", "kube-root-ca.crt");
  *stored->mutable_metadata()->mutable_annotations() =
      cm.metadata().annotations();
  config_maps_.Upsert(stored);
  fake_.Clear();
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());

  // Edited by someone: put back (other keys dropped), same object.
  auto edited = std::make_shared<corev1::ConfigMap>(*stored);
  (*edited->mutable_data())["ca.crt"] = "forged";
  (*edited->mutable_data())["extra"] = "x";
  config_maps_.Upsert(edited);
  ASSERT_TRUE(c.Sync("team").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("update configmaps team/kube-root-ca.crt"));
  EXPECT_EQ(Written().data_size(), 1);
  EXPECT_EQ(Written().data().at("ca.crt"), kCA);
  EXPECT_EQ(Written().metadata().uid(), "uid-kube-root-ca.crt");

  // The annotation removed: put back too.
  auto bare = std::make_shared<corev1::ConfigMap>(*stored);
  bare->mutable_metadata()->clear_annotations();
  config_maps_.Upsert(bare);
  fake_.Clear();
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update configmaps team/kube-root-ca.crt"));
}

TEST_F(RootCAPublisherTest, LeavesNamespacesThatAreNotActive) {
  RootCAPublisher c = New();
  namespaces_.Upsert(NewNamespace("going", "Terminating"));
  ASSERT_TRUE(c.Sync("going").ok());
  ASSERT_TRUE(c.Sync("absent").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

// kube's syncNamespace skips only NotFound and the NamespaceTerminating
// cause; any other refusal is retried.
TEST_F(RootCAPublisherTest, APlainForbiddenCreateIsRetried) {
  RootCAPublisher c = New();
  auto team = NewNamespace("team", "Active");
  namespaces_.Upsert(team);
  fake_.SetLive(NamespacesResource(), team);
  metav1::Status forbidden;
  forbidden.set_reason("Forbidden");
  forbidden.set_code(403);
  forbidden.set_message(
      "configmaps is forbidden: User \"system:kube-controller-manager\" "
      "cannot create resource \"configmaps\" in the namespace \"team\"");
  fake_.FailNext("create configmaps",
                 informer::StatusFromApiStatus(forbidden, 403));
  EXPECT_TRUE(informer::IsForbidden(c.Sync("team")));
}

TEST_F(RootCAPublisherTest, AForbiddenCreateInAnEndingNamespaceIsNot) {
  RootCAPublisher c = New();
  namespaces_.Upsert(NewNamespace("team", "Active"));
  // The cache has not seen the deletion yet; the server has.
  auto ending = NewNamespace("team", "Terminating");
  objects::SetTime(ending->mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000100});
  fake_.SetLive(NamespacesResource(), ending);
  metav1::Status forbidden;
  forbidden.set_reason("Forbidden");
  forbidden.set_code(403);
  forbidden.set_message(
      "configmaps \"kube-root-ca.crt\" is forbidden: unable to create new "
      "content in namespace team because it is being terminated");
  fake_.FailNext("create configmaps",
                 informer::StatusFromApiStatus(forbidden, 403));
  EXPECT_TRUE(c.Sync("team").ok());
}

}  // namespace
}  // namespace kplane::controllers
