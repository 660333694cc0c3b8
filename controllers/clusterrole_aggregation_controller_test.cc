#include "controllers/clusterrole_aggregation_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "schemas/k8s/rbac.pb.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders
namespace rbacv1 = ::k8s::io::api::rbac::v1;

constexpr char kToView[] = "rbac.authorization.k8s.io/aggregate-to-view";

rbacv1::PolicyRule Rule(const std::string& group, const std::string& resource,
                        const std::string& verb = "get") {
  rbacv1::PolicyRule r;
  r.add_verbs(verb);
  r.add_apigroups(group);
  r.add_resources(resource);
  return r;
}

std::shared_ptr<rbacv1::ClusterRole> Role(
    const std::string& name, std::vector<rbacv1::PolicyRule> rules,
    std::map<std::string, std::string> labels = {},
    const std::string& selects = "") {
  auto r = std::make_shared<rbacv1::ClusterRole>();
  SetMeta(r->mutable_metadata(), "", name);
  for (const auto& [k, v] : labels) {
    (*r->mutable_metadata()->mutable_labels())[k] = v;
  }
  for (auto& rule : rules) *r->add_rules() = rule;
  if (!selects.empty()) {
    (*r->mutable_aggregationrule()
          ->add_clusterroleselectors()
          ->mutable_matchlabels())[selects] = "true";
  }
  return r;
}

class ClusterRoleAggregationControllerTest : public ::testing::Test {
 protected:
  ClusterRoleAggregationController New() {
    return ClusterRoleAggregationController({.api = &fake_,
                                             .cluster_roles = &roles_,
                                             .clock = &clock_,
                                             .metrics = &reg_});
  }
  const rbacv1::ClusterRole& Written(size_t i = 0) {
    return static_cast<const rbacv1::ClusterRole&>(*fake_.Written().at(i));
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer roles_;
};

TEST_F(ClusterRoleAggregationControllerTest, RulesAreTheUnionOfMatchedRoles) {
  ClusterRoleAggregationController c = New();
  roles_.Upsert(Role("view", {Rule("", "pods")}, {}, kToView));
  roles_.Upsert(Role("b-widgets",
                     {Rule("example.io", "widgets"), Rule("", "pods")},
                     {{kToView, "true"}}));
  roles_.Upsert(Role("a-base", {Rule("", "pods")}, {{kToView, "true"}}));
  roles_.Upsert(Role("unlabelled", {Rule("", "secrets")}));
  roles_.Upsert(Role("false", {Rule("", "nodes")}, {{kToView, "false"}}));
  ASSERT_TRUE(c.Sync("view").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update clusterroles view"));
  // Roles in name order, an equal rule once.
  const rbacv1::ClusterRole view = Written();  // a copy: Clear() frees it
  ASSERT_EQ(view.rules_size(), 2);
  EXPECT_EQ(view.rules(0).resources(0), "pods");
  EXPECT_EQ(view.rules(1).resources(0), "widgets");
  EXPECT_TRUE(view.has_aggregationrule());

  // Up to date: nothing written.
  fake_.Clear();
  roles_.Upsert(std::make_shared<rbacv1::ClusterRole>(view));
  ASSERT_TRUE(c.Sync("view").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());

  // The labelled role gone: its rule goes too.
  roles_.Delete("b-widgets");
  ASSERT_TRUE(c.Sync("view").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("update clusterroles view"));
  ASSERT_EQ(Written().rules_size(), 1);
  EXPECT_EQ(Written().rules(0).resources(0), "pods");
}

TEST_F(ClusterRoleAggregationControllerTest, RolesWithoutARuleAreLeftAlone) {
  ClusterRoleAggregationController c = New();
  roles_.Upsert(Role("plain", {Rule("", "pods")}));
  roles_.Upsert(Role("other", {Rule("", "nodes")}, {{kToView, "true"}}));
  ASSERT_TRUE(c.Sync("plain").ok());
  ASSERT_TRUE(c.Sync("absent").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

TEST_F(ClusterRoleAggregationControllerTest, FailedUpdateFailsTheSync) {
  ClusterRoleAggregationController c = New();
  roles_.Upsert(Role("view", {}, {}, kToView));
  roles_.Upsert(
      Role("w", {Rule("example.io", "widgets")}, {{kToView, "true"}}));
  fake_.FailNext("update", Status(StatusCode::kAborted, "conflict"));
  EXPECT_FALSE(c.Sync("view").ok());
}

}  // namespace
}  // namespace kplane::controllers
