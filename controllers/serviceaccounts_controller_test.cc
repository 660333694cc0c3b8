#include "controllers/serviceaccounts_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "informer/api_errors.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

std::shared_ptr<corev1::Namespace> NewNamespace(const std::string& name,
                                                const std::string& phase) {
  auto ns = std::make_shared<corev1::Namespace>();
  SetMeta(ns->mutable_metadata(), "", name);
  ns->mutable_status()->set_phase(phase);
  return ns;
}

std::shared_ptr<corev1::ServiceAccount> NewServiceAccount(
    const std::string& ns, const std::string& name) {
  auto sa = std::make_shared<corev1::ServiceAccount>();
  SetMeta(sa->mutable_metadata(), ns, name);
  return sa;
}

// What the API server answers a create in a namespace being deleted.
Status NamespaceTerminatingError() {
  metav1::Status st;
  st.set_status("Failure");
  st.set_reason("Forbidden");
  st.set_code(403);
  st.set_message(
      "serviceaccounts \"default\" is forbidden: unable to create new content "
      "in namespace team because it is being terminated");
  return informer::StatusFromApiStatus(st, 403);
}

class ServiceAccountsControllerTest : public ::testing::Test {
 protected:
  ServiceAccountsController New() {
    return ServiceAccountsController({.api = &fake_,
                                      .namespaces = &namespaces_,
                                      .service_accounts_cache = &accounts_,
                                      .clock = &clock_,
                                      .metrics = &reg_});
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer namespaces_;
  informer::Indexer accounts_;
};

TEST_F(ServiceAccountsControllerTest, CreatesTheDefaultAccountWhereMissing) {
  ServiceAccountsController c = New();
  namespaces_.Upsert(NewNamespace("team", "Active"));
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create serviceaccounts team/default"));
  ASSERT_EQ(fake_.Written().size(), 1u);
  const auto& sa =
      static_cast<const corev1::ServiceAccount&>(*fake_.Written()[0]);
  EXPECT_EQ(sa.metadata().namespace_(), "team");
  EXPECT_EQ(sa.metadata().name(), "default");

  // Present: nothing to do.
  fake_.Clear();
  accounts_.Upsert(NewServiceAccount("team", "default"));
  ASSERT_TRUE(c.Sync("team").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

TEST_F(ServiceAccountsControllerTest, LeavesNamespacesThatAreNotActive) {
  ServiceAccountsController c = New();
  namespaces_.Upsert(NewNamespace("ending", "Terminating"));
  ASSERT_TRUE(c.Sync("ending").ok());
  ASSERT_TRUE(c.Sync("unknown").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

TEST_F(ServiceAccountsControllerTest, OnlyUnexpectedCreateFailuresFailTheSync) {
  ServiceAccountsController c = New();
  namespaces_.Upsert(NewNamespace("team", "Active"));
  // The cache lagged behind a create.
  fake_.FailNext("create serviceaccounts", informer::StatusFromApiStatus(
                                               [] {
                                                 metav1::Status st;
                                                 st.set_reason("AlreadyExists");
                                                 st.set_code(409);
                                                 return st;
                                               }(),
                                               409));
  EXPECT_TRUE(c.Sync("team").ok());
  // The namespace started terminating after the cache saw it: the server
  // has it being deleted.
  auto ending = NewNamespace("team", "Terminating");
  objects::SetTime(ending->mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000100});
  fake_.SetLive(NamespacesResource(), ending);
  fake_.FailNext("create serviceaccounts", NamespaceTerminatingError());
  EXPECT_TRUE(c.Sync("team").ok());
  // Any other refusal, or a 403 for a namespace that is not ending, is an
  // error (retried).
  fake_.FailNext("create serviceaccounts", UnavailableError("down"));
  EXPECT_FALSE(c.Sync("team").ok());
  fake_.SetLive(NamespacesResource(), NewNamespace("team", "Active"));
  fake_.FailNext("create serviceaccounts", NamespaceTerminatingError());
  EXPECT_FALSE(c.Sync("team").ok());
}

}  // namespace
}  // namespace kplane::controllers
