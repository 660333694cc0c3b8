#include "apiserver/auth/rbac.h"

#include <gtest/gtest.h>

#include "apiserver/auth/bootstrap_policy.h"

namespace kplane::apiserver::auth {
namespace {

UserInfo Alice() { return {.name = "alice", .groups = {kAllAuthenticated}}; }

Attributes Req(UserInfo user, std::string verb, std::string group,
               std::string resource, std::string ns = "", std::string name = "",
               std::string subresource = "") {
  return Attributes{.user = std::move(user),
                    .verb = std::move(verb),
                    .resource_request = true,
                    .api_group = std::move(group),
                    .resource = std::move(resource),
                    .subresource = std::move(subresource),
                    .ns = std::move(ns),
                    .name = std::move(name)};
}

Attributes Path(UserInfo user, std::string verb, std::string path) {
  return Attributes{.user = std::move(user),
                    .verb = std::move(verb),
                    .path = std::move(path)};
}

PolicyRule Rule(std::vector<std::string> verbs, std::vector<std::string> groups,
                std::vector<std::string> resources,
                std::vector<std::string> names = {}) {
  return PolicyRule{.verbs = std::move(verbs),
                    .api_groups = std::move(groups),
                    .resources = std::move(resources),
                    .resource_names = std::move(names)};
}

TEST(RuleAllowsTest, VerbsGroupsAndResources) {
  PolicyRule r = Rule({"get", "list"}, {"apps"}, {"deployments"});
  EXPECT_TRUE(RuleAllows(r, Req(Alice(), "get", "apps", "deployments")));
  EXPECT_TRUE(RuleAllows(r, Req(Alice(), "list", "apps", "deployments")));
  EXPECT_FALSE(RuleAllows(r, Req(Alice(), "delete", "apps", "deployments")));
  EXPECT_FALSE(RuleAllows(r, Req(Alice(), "get", "", "deployments")));
  EXPECT_FALSE(RuleAllows(r, Req(Alice(), "get", "apps", "replicasets")));
  // A subresource needs its own grant.
  EXPECT_FALSE(RuleAllows(
      r, Req(Alice(), "get", "apps", "deployments", "d", "web", "scale")));
  PolicyRule star = Rule({"*"}, {"*"}, {"*"});
  EXPECT_TRUE(RuleAllows(
      star, Req(Alice(), "patch", "apps", "deployments", "d", "w", "scale")));
}

TEST(RuleAllowsTest, Subresources) {
  PolicyRule log = Rule({"get"}, {""}, {"pods/log"});
  EXPECT_TRUE(
      RuleAllows(log, Req(Alice(), "get", "", "pods", "d", "p", "log")));
  EXPECT_FALSE(RuleAllows(log, Req(Alice(), "get", "", "pods", "d", "p")));
  EXPECT_FALSE(
      RuleAllows(log, Req(Alice(), "get", "", "pods", "d", "p", "status")));
  PolicyRule any_scale = Rule({"update"}, {"*"}, {"*/scale"});
  EXPECT_TRUE(RuleAllows(any_scale, Req(Alice(), "update", "apps",
                                        "deployments", "d", "w", "scale")));
  EXPECT_FALSE(RuleAllows(
      any_scale, Req(Alice(), "update", "apps", "deployments", "d", "w")));
  EXPECT_FALSE(RuleAllows(
      any_scale, Req(Alice(), "update", "", "pods", "d", "w", "status")));
}

TEST(RuleAllowsTest, ResourceNames) {
  PolicyRule r =
      Rule({"get", "list", "update"}, {""}, {"configmaps"}, {"settings"});
  EXPECT_TRUE(
      RuleAllows(r, Req(Alice(), "get", "", "configmaps", "d", "settings")));
  EXPECT_FALSE(
      RuleAllows(r, Req(Alice(), "get", "", "configmaps", "d", "other")));
  // A list has no name: a rule limited to names does not grant it.
  EXPECT_FALSE(RuleAllows(r, Req(Alice(), "list", "", "configmaps", "d")));
}

TEST(RuleAllowsTest, NonResourceUrls) {
  PolicyRule r{.verbs = {"get"}, .non_resource_urls = {"/healthz", "/apis/*"}};
  EXPECT_TRUE(RuleAllows(r, Path(Alice(), "get", "/healthz")));
  EXPECT_FALSE(RuleAllows(r, Path(Alice(), "get", "/healthz/etcd")));
  EXPECT_TRUE(RuleAllows(r, Path(Alice(), "get", "/apis/apps/v1")));
  EXPECT_FALSE(RuleAllows(r, Path(Alice(), "get", "/api/v1")));
  EXPECT_FALSE(RuleAllows(r, Path(Alice(), "post", "/healthz")));
  // A resource rule never grants a path, nor a URL rule a resource.
  EXPECT_FALSE(
      RuleAllows(Rule({"*"}, {"*"}, {"*"}), Path(Alice(), "get", "/healthz")));
  EXPECT_FALSE(RuleAllows(r, Req(Alice(), "get", "", "pods", "d")));
}

TEST(SubjectMatchesTest, UsersGroupsAndServiceAccounts) {
  UserInfo sa{.name = "system:serviceaccount:team:builder",
              .groups = {"system:serviceaccounts"}};
  Subject user{.kind = Subject::Kind::kUser, .name = "alice"};
  Subject group{.kind = Subject::Kind::kGroup, .name = kAllAuthenticated};
  Subject sa_subject{
      .kind = Subject::Kind::kServiceAccount, .name = "builder", .ns = "team"};
  Subject sa_no_ns{.kind = Subject::Kind::kServiceAccount, .name = "builder"};
  EXPECT_TRUE(SubjectMatches(user, Alice(), ""));
  EXPECT_FALSE(SubjectMatches(user, sa, ""));
  EXPECT_TRUE(SubjectMatches(group, Alice(), ""));
  EXPECT_FALSE(SubjectMatches(group, sa, ""));
  EXPECT_TRUE(SubjectMatches(sa_subject, sa, ""));
  EXPECT_FALSE(SubjectMatches(sa_subject, Alice(), ""));
  // A ServiceAccount subject without a namespace takes the RoleBinding's.
  EXPECT_TRUE(SubjectMatches(sa_no_ns, sa, "team"));
  EXPECT_FALSE(SubjectMatches(sa_no_ns, sa, "other"));
  EXPECT_FALSE(SubjectMatches(sa_no_ns, sa, ""));
}

class RbacTest : public ::testing::Test {
 protected:
  RbacTest() : rbac_(&policy_) {}

  Decision Check(const Attributes& a) { return rbac_.Authorize(a, &reason_); }

  StaticPolicy policy_;
  RbacAuthorizer rbac_;
  std::string reason_;
};

TEST_F(RbacTest, NothingBoundGrantsNothing) {
  EXPECT_EQ(Check(Req(Alice(), "get", "", "pods", "d", "p")),
            Decision::kNoOpinion);
  EXPECT_EQ(reason_, "");
}

TEST_F(RbacTest, RoleBindingGrantsOnlyInItsNamespace) {
  policy_.AddRole(Role{.ns = "team",
                       .name = "pod-reader",
                       .rules = {Rule({"get", "list"}, {""}, {"pods"})}});
  policy_.AddBinding(RoleBinding{
      .ns = "team",
      .name = "alice-reads",
      .role_ref = {.cluster_role = false, .name = "pod-reader"},
      .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods", "team")), Decision::kAllow);
  EXPECT_EQ(reason_,
            "RBAC: allowed by RoleBinding \"team/alice-reads\" of Role "
            "\"pod-reader\" to User \"alice\"");
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods", "other")),
            Decision::kNoOpinion);
  // Nor across namespaces (a list of all namespaces has ns "").
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods")), Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(Alice(), "delete", "", "pods", "team", "p")),
            Decision::kNoOpinion);
  UserInfo bob{.name = "bob", .groups = {kAllAuthenticated}};
  EXPECT_EQ(Check(Req(bob, "list", "", "pods", "team")), Decision::kNoOpinion);
}

TEST_F(RbacTest, RoleBindingToClusterRoleIsStillNamespaced) {
  policy_.AddRole(
      Role{.name = "reader", .rules = {Rule({"get"}, {""}, {"configmaps"})}});
  policy_.AddBinding(RoleBinding{
      .ns = "team",
      .name = "b",
      .role_ref = {.cluster_role = true, .name = "reader"},
      .subjects = {{.kind = Subject::Kind::kGroup, .name = "dev"}}});
  UserInfo dev{.name = "carol", .groups = {"dev"}};
  EXPECT_EQ(Check(Req(dev, "get", "", "configmaps", "team", "c")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(dev, "get", "", "configmaps", "default", "c")),
            Decision::kNoOpinion);
}

TEST_F(RbacTest, ClusterRoleBindingGrantsEverywhere) {
  policy_.AddRole(
      Role{.name = "reader",
           .rules = {Rule({"get", "list"}, {""}, {"nodes", "pods"})}});
  policy_.AddBinding(RoleBinding{
      .name = "readers",
      .role_ref = {.cluster_role = true, .name = "reader"},
      .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods", "any")), Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods")), Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "get", "", "nodes", "", "n1")),
            Decision::kAllow);
  EXPECT_EQ(reason_,
            "RBAC: allowed by ClusterRoleBinding \"readers\" of ClusterRole "
            "\"reader\" to User \"alice\"");
}

TEST_F(RbacTest, MissingRoleIsAReasonNotAGrant) {
  policy_.AddBinding(RoleBinding{
      .name = "dangling",
      .role_ref = {.cluster_role = true, .name = "gone"},
      .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  policy_.AddBinding(RoleBinding{
      .ns = "team",
      .name = "dangling2",
      .role_ref = {.cluster_role = false, .name = "gone-too"},
      .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  EXPECT_EQ(Check(Req(Alice(), "get", "", "pods", "team", "p")),
            Decision::kNoOpinion);
  EXPECT_EQ(reason_,
            "RBAC: [clusterrole.rbac.authorization.k8s.io \"gone\" not found, "
            "role.rbac.authorization.k8s.io \"gone-too\" not found]");
  std::vector<std::string> errors;
  EXPECT_TRUE(rbac_.RulesFor(Alice(), "team", &errors).empty());
  EXPECT_EQ(errors.size(), 2u);
}

TEST_F(RbacTest, RulesForListsClusterThenNamespaceRules) {
  policy_.AddRole(Role{.name = "a", .rules = {Rule({"get"}, {""}, {"x"})}});
  policy_.AddRole(
      Role{.ns = "team", .name = "b", .rules = {Rule({"get"}, {""}, {"y"})}});
  policy_.AddBinding(RoleBinding{
      .ns = "team",
      .name = "rb",
      .role_ref = {.cluster_role = false, .name = "b"},
      .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  policy_.AddBinding(RoleBinding{
      .name = "crb",
      .role_ref = {.cluster_role = true, .name = "a"},
      .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  std::vector<std::string> errors;
  std::vector<PolicyRule> rules = rbac_.RulesFor(Alice(), "team", &errors);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].resources, std::vector<std::string>{"x"});
  EXPECT_EQ(rules[1].resources, std::vector<std::string>{"y"});
  EXPECT_EQ(rbac_.RulesFor(Alice(), "", &errors).size(), 1u);
}

// A fixed answer, for the chain's tests.
class Fixed final : public Authorizer {
 public:
  Fixed(Decision d, std::string why) : d_(d), why_(std::move(why)) {}
  Decision Authorize(const Attributes&, std::string* reason) const override {
    *reason = why_;
    return d_;
  }

 private:
  Decision d_;
  std::string why_;
};

TEST(AuthorizerChainTest, FirstDecisionWinsAndNoOpinionDenies) {
  Fixed none(Decision::kNoOpinion, "node: not a node");
  Fixed none2(Decision::kNoOpinion, "RBAC: role missing");
  Fixed allow(Decision::kAllow, "ok");
  Fixed deny(Decision::kDeny, "no");
  std::string why;
  Attributes a = Req(Alice(), "get", "", "pods", "d", "p");
  EXPECT_EQ(AuthorizerChain({&none, &allow, &deny}).Authorize(a, &why),
            Decision::kAllow);
  EXPECT_EQ(why, "ok");
  EXPECT_EQ(AuthorizerChain({&deny, &allow}).Authorize(a, &why),
            Decision::kDeny);
  EXPECT_EQ(why, "no");
  EXPECT_EQ(AuthorizerChain({&none, &none2}).Authorize(a, &why),
            Decision::kDeny);
  EXPECT_EQ(why, "node: not a node, RBAC: role missing");
  EXPECT_EQ(AuthorizerChain({}).Authorize(a, &why), Decision::kDeny);
}

TEST(ForbiddenMessageTest, KubeApiserverText) {
  EXPECT_EQ(ForbiddenMessage(Req(Alice(), "list", "", "pods", "default"), ""),
            "User \"alice\" cannot list resource \"pods\" in API group \"\" "
            "in the namespace \"default\"");
  EXPECT_EQ(
      ForbiddenMessage(Req(Alice(), "get", "", "nodes", "", "n1"), ""),
      "User \"alice\" cannot get resource \"nodes\" in API group \"\" at the "
      "cluster scope");
  EXPECT_EQ(ForbiddenMessage(
                Req(Alice(), "patch", "apps", "deployments", "d", "w", "scale"),
                "RBAC: x"),
            "User \"alice\" cannot patch resource \"deployments/scale\" in API "
            "group \"apps\" in the namespace \"d\": RBAC: x");
  EXPECT_EQ(
      ForbiddenMessage(Path({.name = kAnonymousUser}, "get", "/metrics"), ""),
      "User \"system:anonymous\" cannot get path \"/metrics\"");
}

class BootstrapTest : public RbacTest {
 protected:
  BootstrapTest() { AddBootstrapPolicy(&policy_); }

  // Binds the ClusterRole `role` to alice in namespace "team".
  void BindInTeam(const std::string& role) {
    policy_.AddBinding(RoleBinding{
        .ns = "team",
        .name = "alice-" + role,
        .role_ref = {.cluster_role = true, .name = role},
        .subjects = {{.kind = Subject::Kind::kUser, .name = "alice"}}});
  }
};

TEST_F(BootstrapTest, SystemMastersMayDoAnything) {
  UserInfo admin{.name = "kplane-admin",
                 .groups = {kSystemMasters, kAllAuthenticated}};
  EXPECT_EQ(Check(Req(admin, "delete", "", "secrets", "kube-system", "s")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(admin, "create", "rbac.authorization.k8s.io",
                      "clusterrolebindings")),
            Decision::kAllow);
  EXPECT_EQ(Check(Path(admin, "get", "/metrics")), Decision::kAllow);
}

TEST_F(BootstrapTest, AnonymousReachesOnlyPublicInfo) {
  UserInfo anon{.name = kAnonymousUser, .groups = {kAllUnauthenticated}};
  for (const char* p : {"/healthz", "/livez", "/readyz", "/version"}) {
    EXPECT_EQ(Check(Path(anon, "get", p)), Decision::kAllow) << p;
  }
  // Discovery is for authenticated users (kube since 1.14).
  EXPECT_EQ(Check(Path(anon, "get", "/api")), Decision::kNoOpinion);
  EXPECT_EQ(Check(Path(anon, "get", "/metrics")), Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(anon, "list", "", "pods", "default")),
            Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(anon, "create", "authorization.k8s.io",
                      "selfsubjectaccessreviews")),
            Decision::kNoOpinion);
}

TEST_F(BootstrapTest, AuthenticatedUsersDiscoverAndAskAboutThemselves) {
  EXPECT_EQ(Check(Path(Alice(), "get", "/apis/apps/v1")), Decision::kAllow);
  EXPECT_EQ(Check(Path(Alice(), "get", "/openapi/v2")), Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "create", "authorization.k8s.io",
                      "selfsubjectaccessreviews")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "create", "authentication.k8s.io",
                      "selfsubjectreviews")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods", "team")),
            Decision::kNoOpinion);
  EXPECT_EQ(Check(Path(Alice(), "get", "/metrics")), Decision::kNoOpinion);
}

TEST_F(BootstrapTest, ViewReadsButNotSecretsAndNeverWrites) {
  BindInTeam("view");
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods", "team")), Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "get", "", "pods", "team", "p", "log")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "watch", "apps", "deployments", "team")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "list", "apps", "controllerrevisions", "team")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "get", "", "secrets", "team", "s")),
            Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(Alice(), "create", "", "configmaps", "team")),
            Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(Alice(), "delete", "apps", "deployments", "team", "w")),
            Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(Alice(), "list", "", "pods", "other")),
            Decision::kNoOpinion);
}

TEST_F(BootstrapTest, EditWritesWorkloadsAndSecretsButNotRoles) {
  BindInTeam("edit");
  EXPECT_EQ(Check(Req(Alice(), "create", "apps", "deployments", "team")),
            Decision::kAllow);
  EXPECT_EQ(
      Check(Req(Alice(), "patch", "apps", "deployments", "team", "w", "scale")),
      Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "get", "", "secrets", "team", "s")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "create", "rbac.authorization.k8s.io",
                      "rolebindings", "team")),
            Decision::kNoOpinion);
  // Status and history are the controllers' to write (kube's edit reads
  // controllerrevisions only).
  EXPECT_EQ(Check(Req(Alice(), "update", "apps", "deployments", "team", "w",
                      "status")),
            Decision::kNoOpinion);
  EXPECT_EQ(
      Check(Req(Alice(), "get", "apps", "controllerrevisions", "team", "r")),
      Decision::kAllow);
  EXPECT_EQ(
      Check(Req(Alice(), "create", "apps", "controllerrevisions", "team")),
      Decision::kNoOpinion);
}

TEST_F(BootstrapTest, AdminManagesTheNamespacesAccess) {
  BindInTeam("admin");
  EXPECT_EQ(Check(Req(Alice(), "create", "rbac.authorization.k8s.io",
                      "rolebindings", "team")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(Alice(), "create", "rbac.authorization.k8s.io",
                      "clusterrolebindings")),
            Decision::kNoOpinion);
  EXPECT_EQ(Check(Req(Alice(), "delete", "", "nodes", "", "n1")),
            Decision::kNoOpinion);
}

TEST_F(BootstrapTest, ControllerManagerWritesWhatItsControllersWrite) {
  UserInfo cm{.name = "system:kube-controller-manager",
              .groups = {kAllAuthenticated}};
  EXPECT_EQ(Check(Req(cm, "create", "", "pods", "d")), Decision::kAllow);
  EXPECT_EQ(Check(Req(cm, "update", "apps", "replicasets", "d", "r", "status")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(cm, "patch", "", "nodes", "", "n1", "status")),
            Decision::kAllow);
  EXPECT_EQ(Check(Req(cm, "list", "", "secrets")), Decision::kAllow);
  // The statefulset and daemonset controllers' history.
  for (const char* verb : {"create", "update", "delete"}) {
    EXPECT_EQ(Check(Req(cm, verb, "apps", "controllerrevisions", "d", "r")),
              Decision::kAllow)
        << verb;
  }
  EXPECT_EQ(Check(Req(cm, "create", "rbac.authorization.k8s.io",
                      "clusterrolebindings")),
            Decision::kNoOpinion);
  // The garbage collector edits ownerReferences and finalizers of any
  // resource, custom ones included, and deletes them; it creates none.
  for (const char* verb : {"watch", "patch", "update", "delete"}) {
    EXPECT_EQ(Check(Req(cm, verb, "example.com", "widgets", "d", "w1")),
              Decision::kAllow)
        << verb;
  }
  EXPECT_EQ(Check(Req(cm, "create", "example.com", "widgets", "d")),
            Decision::kNoOpinion);
}

}  // namespace
}  // namespace kplane::apiserver::auth
