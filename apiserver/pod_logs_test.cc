#include "apiserver/pod_logs.h"

#include <gtest/gtest.h>

namespace kplane::apiserver {
namespace {

namespace corev1 = objects::corev1;

corev1::Pod TwoContainerPod() {
  corev1::Pod p;
  p.mutable_metadata()->set_name("web");
  p.mutable_metadata()->set_namespace_("default");
  p.mutable_spec()->add_initcontainers()->set_name("init");
  p.mutable_spec()->add_containers()->set_name("a");
  p.mutable_spec()->add_containers()->set_name("b");
  return p;
}

net::HttpRequest Query(std::multimap<std::string, std::string> q) {
  net::HttpRequest r;
  r.query = std::move(q);
  return r;
}

TEST(PodLogRequest, ValidatesOptionsAsKube) {
  corev1::Pod pod = TwoContainerPod();
  auto ok = ParsePodLogRequest(
      Query({{"container", "b"}, {"follow", "true"}, {"tailLines", "5"}}), pod);
  ASSERT_FALSE(std::holds_alternative<ApiError>(ok));
  const PodLogRequest& lr = std::get<PodLogRequest>(ok);
  EXPECT_EQ(lr.container, "b");
  EXPECT_TRUE(lr.follow);
  EXPECT_EQ(lr.KubeletTarget(pod),
            "/containerLogs/default/web/b?follow=true&tailLines=5");
  // init containers are containers too.
  EXPECT_FALSE(std::holds_alternative<ApiError>(
      ParsePodLogRequest(Query({{"container", "init"}}), pod)));

  auto e = ParsePodLogRequest(Query({}), pod);
  ASSERT_TRUE(std::holds_alternative<ApiError>(e));
  EXPECT_EQ(std::get<ApiError>(e).code, 400);
  EXPECT_EQ(std::get<ApiError>(e).message,
            "a container name must be specified for pod web, choose one of: "
            "[init a b]");
  e = ParsePodLogRequest(Query({{"container", "x"}}), pod);
  EXPECT_EQ(std::get<ApiError>(e).message,
            "container x is not valid for pod web");
  e = ParsePodLogRequest(Query({{"container", "a"}, {"tailLines", "-1"}}), pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  EXPECT_EQ(std::get<ApiError>(e).message,
            "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: "
            "must be greater than or equal to 0");
  e = ParsePodLogRequest(Query({{"container", "a"}, {"limitBytes", "0"}}), pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  e = ParsePodLogRequest(Query({{"container", "a"}, {"sinceSeconds", "0"}}),
                         pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  e = ParsePodLogRequest(Query({{"container", "a"},
                                {"sinceSeconds", "5"},
                                {"sinceTime", "2026-12-03T17:00:00Z"}}),
                         pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 422);
  e = ParsePodLogRequest(Query({{"container", "a"}, {"tailLines", "ten"}}),
                         pod);
  EXPECT_EQ(std::get<ApiError>(e).code, 400);
}

TEST(PodLogRequest, KubeletEndpointFollowsThePreferredAddressTypes) {
  corev1::Node n;
  n.mutable_metadata()->set_name("node-0");
  auto add = [&](const char* type, const char* address) {
    corev1::NodeAddress* a = n.mutable_status()->add_addresses();
    a->set_type(type);
    a->set_address(address);
  };
  add("InternalIP", "172.16.0.1");
  add("Hostname", "node-0");
  add("ExternalIP", "127.0.0.1");
  // No port: the node has no kubelet to reach.
  EXPECT_TRUE(
      std::holds_alternative<ApiError>(KubeletEndpointFor(n, {"ExternalIP"})));
  n.mutable_status()
      ->mutable_daemonendpoints()
      ->mutable_kubeletendpoint()
      ->set_port(10250);
  auto ep = KubeletEndpointFor(n, {"ExternalIP", "InternalIP"});
  ASSERT_FALSE(std::holds_alternative<ApiError>(ep));
  EXPECT_EQ(std::get<KubeletEndpoint>(ep).host, "127.0.0.1");
  EXPECT_EQ(std::get<KubeletEndpoint>(ep).port, 10250);
  ep = KubeletEndpointFor(n, {"Hostname", "ExternalIP"});
  EXPECT_EQ(std::get<KubeletEndpoint>(ep).host, "node-0");
  EXPECT_TRUE(
      std::holds_alternative<ApiError>(KubeletEndpointFor(n, {"InternalDNS"})));
}

}  // namespace
}  // namespace kplane::apiserver
