// The Node authorizer's allow/deny table.
#include "apiserver/auth/node_authorizer.h"

#include <gtest/gtest.h>

namespace kplane::apiserver::auth {
namespace {

UserInfo Node(const std::string& name) {
  return {.name = "system:node:" + name,
          .groups = {"system:nodes", "system:authenticated"}};
}

struct Case {
  std::string verb;
  std::string group;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  Decision want;
};

TEST(NodeAuthorizerTest, Table) {
  // p1 is bound to node-1, p2 to node-2; p3 does not exist.
  NodeAuthorizer node([](std::string_view ns,
                         std::string_view name) -> std::optional<std::string> {
    if (ns == "default" && name == "p1") return "node-1";
    if (ns == "default" && name == "p2") return "node-2";
    return std::nullopt;
  });
  const Decision kAllow = Decision::kAllow;
  const Decision kNo = Decision::kNoOpinion;
  const Case cases[] = {
      // Its own Node and its status; reads of every node.
      {"get", "", "nodes", "", "", "node-1", kAllow},
      {"list", "", "nodes", "", "", "", kAllow},
      {"watch", "", "nodes", "", "", "", kAllow},
      {"create", "", "nodes", "", "", "", kAllow},
      {"update", "", "nodes", "", "", "node-1", kAllow},
      {"patch", "", "nodes", "status", "", "node-1", kAllow},
      {"update", "", "nodes", "status", "", "node-1", kAllow},
      {"patch", "", "nodes", "", "", "node-2", kNo},
      {"update", "", "nodes", "status", "", "node-2", kNo},
      {"delete", "", "nodes", "", "", "node-2", kNo},
      {"deletecollection", "", "nodes", "", "", "", kNo},
      // Its own Lease in kube-node-lease.
      {"get", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-1",
       kAllow},
      {"create", "coordination.k8s.io", "leases", "", "kube-node-lease", "",
       kAllow},
      {"update", "coordination.k8s.io", "leases", "", "kube-node-lease",
       "node-1", kAllow},
      {"update", "coordination.k8s.io", "leases", "", "kube-node-lease",
       "node-2", kNo},
      {"create", "coordination.k8s.io", "leases", "", "default", "", kNo},
      {"list", "coordination.k8s.io", "leases", "", "kube-node-lease", "", kNo},
      // Pods: read all; status and delete only of pods bound to it.
      {"list", "", "pods", "", "", "", kAllow},
      {"watch", "", "pods", "", "default", "", kAllow},
      {"patch", "", "pods", "status", "default", "p1", kAllow},
      {"update", "", "pods", "status", "default", "p1", kAllow},
      {"delete", "", "pods", "", "default", "p1", kAllow},
      {"patch", "", "pods", "status", "default", "p2", kNo},
      {"delete", "", "pods", "", "default", "p2", kNo},
      {"delete", "", "pods", "", "default", "p3", kNo},
      {"create", "", "pods", "", "default", "", kNo},
      {"update", "", "pods", "", "default", "p1", kNo},
      {"create", "", "pods", "binding", "default", "p1", kNo},
      // Events; services; nothing else.
      {"create", "", "events", "", "default", "", kAllow},
      {"patch", "events.k8s.io", "events", "", "default", "e", kAllow},
      {"delete", "", "events", "", "default", "e", kNo},
      {"list", "", "services", "", "", "", kAllow},
      {"get", "", "secrets", "", "default", "s", kNo},
      {"list", "", "configmaps", "", "default", "", kNo},
      {"create", "apps", "deployments", "", "default", "", kNo},
  };
  for (const Case& c : cases) {
    Attributes a{.user = Node("node-1"),
                 .verb = c.verb,
                 .resource_request = true,
                 .api_group = c.group,
                 .resource = c.resource,
                 .subresource = c.subresource,
                 .ns = c.ns,
                 .name = c.name};
    std::string reason;
    EXPECT_EQ(node.Authorize(a, &reason), c.want)
        << c.verb << " " << c.group << "/" << c.resource << "/" << c.subresource
        << " " << c.ns << "/" << c.name << ": " << reason;
  }
}

TEST(NodeAuthorizerTest, OnlyNodeUsers) {
  NodeAuthorizer node([](std::string_view, std::string_view) {
    return std::optional<std::string>("node-1");
  });
  std::string reason;
  // Not in system:nodes, or not named system:node:<name>: no opinion.
  Attributes a{.user = {.name = "system:node:node-1", .groups = {"dev"}},
               .verb = "update",
               .resource_request = true,
               .resource = "nodes",
               .name = "node-1"};
  EXPECT_EQ(node.Authorize(a, &reason), Decision::kNoOpinion);
  a.user = {.name = "alice", .groups = {"system:nodes"}};
  EXPECT_EQ(node.Authorize(a, &reason), Decision::kNoOpinion);
  a.user = {.name = "system:node:", .groups = {"system:nodes"}};
  EXPECT_EQ(node.Authorize(a, &reason), Decision::kNoOpinion);
  EXPECT_EQ(reason, "unknown node for user \"system:node:\"");
  // Non-resource requests are RBAC's.
  Attributes healthz{.user = Node("node-1"), .verb = "get", .path = "/healthz"};
  EXPECT_EQ(node.Authorize(healthz, &reason), Decision::kNoOpinion);
  EXPECT_EQ(NodeIdentity(Node("n7")), std::optional<std::string>("n7"));
}

}  // namespace
}  // namespace kplane::apiserver::auth
