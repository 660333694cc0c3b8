// Field selectors: the labels each kind accepts (as kube-apiserver's
// conversion functions) and the values objects expose, exercised through
// machinery::FieldSelector as the handlers use them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/machinery/fields.h"
#include "objects/test_util.h"
#include "apiserver/registry/test_util.h"

namespace kplane::apiserver {
namespace {

using testing::Decode;
using testing::StrategyOf;

// What a list handler does: validate the labels, then match.
bool Selects(const Strategy& s, const google::protobuf::Message& obj,
             std::string_view selector) {
  auto fs = machinery::FieldSelector::Parse(selector);
  EXPECT_TRUE(fs.ok()) << fs.status();
  EXPECT_TRUE(fs->Validate(s.SupportedFieldLabels()).ok()) << selector;
  return fs->Matches([&](std::string_view f) {
    auto v = s.FieldValue(obj, f);
    EXPECT_TRUE(v.has_value()) << f;
    return v.value_or("");
  });
}

TEST(FieldSelectorTest, SupportedLabelsPerKind) {
  struct Case {
    const char* group;
    const char* resource;
    std::vector<std::string> labels;
  } cases[] = {
      {"",
       "pods",
       {"metadata.name", "metadata.namespace", "spec.nodeName",
        "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
        "status.nominatedNodeName"}},
      {"", "nodes", {"metadata.name", "spec.unschedulable"}},
      {"", "namespaces", {"metadata.name", "status.phase"}},
      {"", "secrets", {"metadata.name", "metadata.namespace", "type"}},
      {"",
       "services",
       {"metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"}},
      {"", "configmaps", {"metadata.name", "metadata.namespace"}},
      {"", "serviceaccounts", {"metadata.name", "metadata.namespace"}},
      {"apps",
       "replicasets",
       {"metadata.name", "metadata.namespace", "status.replicas"}},
      {"apps", "deployments", {"metadata.name", "metadata.namespace"}},
      {"coordination.k8s.io",
       "leases",
       {"metadata.name", "metadata.namespace"}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(StrategyOf(c.group, c.resource).SupportedFieldLabels(), c.labels)
        << c.resource;
  }
  auto events = StrategyOf("", "events").SupportedFieldLabels();
  for (const char* f :
       {"involvedObject.kind", "involvedObject.namespace",
        "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source",
        "type"}) {
    EXPECT_NE(std::find(events.begin(), events.end(), f), events.end()) << f;
  }
}

TEST(FieldSelectorTest, UnsupportedLabelIsRejectedWithKubeText) {
  auto fs = machinery::FieldSelector::Parse("spec.nodeName=n1");
  ASSERT_TRUE(fs.ok());
  Status st = fs->Validate(StrategyOf("", "nodes").SupportedFieldLabels());
  EXPECT_EQ(st.message(), "field label not supported: spec.nodeName");
  // Cluster-scoped kinds have no metadata.namespace label.
  auto ns = machinery::FieldSelector::Parse("metadata.namespace=x");
  EXPECT_FALSE(
      ns->Validate(StrategyOf("", "nodes").SupportedFieldLabels()).ok());
  EXPECT_FALSE(StrategyOf("", "nodes")
                   .FieldValue(objects::corev1::Node(), "metadata.namespace")
                   .has_value());
}

TEST(FieldSelectorTest, DescribeNodePodList) {
  // kubectl describe node: spec.nodeName=X,status.phase!=Succeeded,
  // status.phase!=Failed.
  const Strategy& s = StrategyOf("", "pods");
  const char* sel =
      "spec.nodeName=node-1,status.phase!=Succeeded,status.phase!=Failed";
  auto running = Decode<objects::corev1::Pod>(R"({"metadata":{"name":"a",
    "namespace":"default"},"spec":{"nodeName":"node-1","containers":[]},
    "status":{"phase":"Running","podIPs":[{"ip":"10.0.0.5"}]}})");
  EXPECT_TRUE(Selects(s, running, sel));
  auto done = running;
  done.mutable_status()->set_phase("Succeeded");
  EXPECT_FALSE(Selects(s, done, sel));
  auto elsewhere = running;
  elsewhere.mutable_spec()->set_nodename("node-2");
  EXPECT_FALSE(Selects(s, elsewhere, sel));
  EXPECT_TRUE(Selects(s, running, "status.podIP=10.0.0.5"));
  EXPECT_TRUE(Selects(s, running, "spec.hostNetwork=false"));
  EXPECT_TRUE(
      Selects(s, running, "metadata.namespace=default,metadata.name=a"));
  EXPECT_TRUE(Selects(s, running, "status.podIPs="))
      << "accepted but not in the field set: reads as empty";
  // Unscheduled pods (the scheduler's query).
  auto pending = Decode<objects::corev1::Pod>(R"({"metadata":{"name":"p"},
    "spec":{"schedulerName":"default-scheduler","containers":[]},
    "status":{"phase":"Pending"}})");
  EXPECT_TRUE(Selects(s, pending, "spec.nodeName=,status.phase=Pending"));
  EXPECT_TRUE(Selects(s, pending, "spec.schedulerName=default-scheduler"));
}

TEST(FieldSelectorTest, DescribeEvents) {
  const Strategy& s = StrategyOf("", "events");
  auto ev = Decode<objects::corev1::Event>(R"({"metadata":{"name":"n.1",
    "namespace":"default"},"involvedObject":{"kind":"Node","name":"node-1",
    "uid":"node-1","apiVersion":"v1","resourceVersion":"7",
    "fieldPath":""},"reason":"NodeReady","type":"Normal",
    "source":{"component":"kubelet"},"reportingComponent":"kubelet"})");
  EXPECT_TRUE(Selects(s, ev,
                      "involvedObject.name=node-1,involvedObject.namespace=,"
                      "involvedObject.kind=Node,involvedObject.uid=node-1"));
  EXPECT_TRUE(Selects(s, ev, "reason=NodeReady,type=Normal,source=kubelet"));
  EXPECT_TRUE(Selects(s, ev,
                      "involvedObject.apiVersion=v1,"
                      "involvedObject.resourceVersion=7"));
  EXPECT_FALSE(Selects(s, ev, "type=Warning"));
  // source falls back to reportingComponent.
  ev.mutable_source()->clear_component();
  ev.set_reportingcomponent("node-controller");
  EXPECT_TRUE(Selects(s, ev, "source=node-controller"));
}

TEST(FieldSelectorTest, OtherKinds) {
  auto node = Decode<objects::corev1::Node>(
      R"({"metadata":{"name":"n1"},"spec":{"unschedulable":true}})");
  EXPECT_TRUE(
      Selects(StrategyOf("", "nodes"), node, "spec.unschedulable=true"));
  EXPECT_TRUE(Selects(StrategyOf("", "nodes"), node, "metadata.name=n1"));

  auto ns = Decode<objects::corev1::Namespace>(
      R"({"metadata":{"name":"a"},"status":{"phase":"Active"}})");
  EXPECT_TRUE(Selects(StrategyOf("", "namespaces"), ns, "status.phase=Active"));

  auto sec = Decode<objects::corev1::Secret>(
      R"({"metadata":{"name":"s","namespace":"d"},"type":"kubernetes.io/tls"})");
  EXPECT_TRUE(
      Selects(StrategyOf("", "secrets"), sec, "type=kubernetes.io/tls"));

  auto svc = Decode<objects::corev1::Service>(R"({"metadata":{"name":"s"},
    "spec":{"type":"ClusterIP","clusterIP":"None"}})");
  EXPECT_TRUE(Selects(StrategyOf("", "services"), svc,
                      "spec.clusterIP=None,spec.type=ClusterIP"));

  auto rs = Decode<objects::appsv1::ReplicaSet>(
      R"({"metadata":{"name":"r","namespace":"d"},"status":{"replicas":0}})");
  EXPECT_TRUE(
      Selects(StrategyOf("apps", "replicasets"), rs, "status.replicas=0"));
  EXPECT_TRUE(
      Selects(StrategyOf("apps", "replicasets"), rs, "status.replicas!=3"));

  auto d = Decode<objects::appsv1::Deployment>(
      R"({"metadata":{"name":"web","namespace":"d"}})");
  EXPECT_TRUE(
      Selects(StrategyOf("apps", "deployments"), d, "metadata.name=web"));
  EXPECT_FALSE(StrategyOf("apps", "deployments")
                   .FieldValue(d, "spec.replicas")
                   .has_value());
}

}  // namespace
}  // namespace kplane::apiserver
