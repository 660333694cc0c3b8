// Create/update/status preparation: status resets, status-vs-spec
// separation, generation bumps, grace periods, /scale, and the strategy
// registry itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/meta.h"
#include "objects/test_util.h"
#include "apiserver/registry/test_util.h"

namespace kplane::apiserver {
namespace {

using testing::Decode;
using ::testing::IsEmpty;
using testing::StrategyOf;
using testing::Texts;

TEST(StrategyForTest, EveryServedResourceHasItsStrategy) {
  for (const auto& r : objects::Scheme::Default().resources()) {
    const Strategy& s = StrategyFor(*r);
    EXPECT_EQ(&s.resource(), r.get()) << r->resource;
    EXPECT_EQ(&StrategyFor(*r), &s) << "singleton per resource";
    EXPECT_FALSE(s.Columns().empty()) << r->resource;
    auto labels = s.SupportedFieldLabels();
    EXPECT_EQ(labels.front(), "metadata.name") << r->resource;
  }
  EXPECT_TRUE(StrategyOf("apps", "deployments").HasScale());
  EXPECT_TRUE(StrategyOf("apps", "replicasets").HasScale());
  EXPECT_FALSE(StrategyOf("", "pods").HasScale());
}

objects::appsv1::Deployment StoredDeployment() {
  auto d = Decode<objects::appsv1::Deployment>(
      objects::testing::ReadTestdata("deployment.json"));
  return d;  // generation 2, status filled by the controller
}

TEST(DeploymentPrepareTest, CreateResetsStatusAndSetsGeneration) {
  const Strategy& s = StrategyOf("apps", "deployments");
  auto d = StoredDeployment();
  d.mutable_metadata()->set_generation(7);
  s.PrepareForCreate(&d);
  EXPECT_EQ(d.metadata().generation(), 1);
  EXPECT_EQ(objects::EncodeJson(d.status()), "{}");
}

TEST(DeploymentPrepareTest, GenerationBumpsOnSpecOrAnnotationChangeOnly) {
  const Strategy& s = StrategyOf("apps", "deployments");
  const auto old = StoredDeployment();
  struct Case {
    const char* name;
    std::function<void(objects::appsv1::Deployment*)> mutate;
    int64_t generation;
  } cases[] = {
      {"no change", [](auto*) {}, 2},
      {"label change",
       [](auto* d) { (*d->mutable_metadata()->mutable_labels())["x"] = "y"; },
       2},
      {"replicas", [](auto* d) { d->mutable_spec()->set_replicas(5); }, 3},
      {"image",
       [](auto* d) {
         d->mutable_spec()
             ->mutable_template_()
             ->mutable_spec()
             ->mutable_containers(0)
             ->set_image("nginx:1.28");
       },
       3},
      {"annotation",
       [](auto* d) {
         (*d->mutable_metadata()->mutable_annotations())["note"] = "x";
       },
       3},
      {"status only (ignored)",
       [](auto* d) { d->mutable_status()->set_replicas(99); }, 2},
      {"client sets generation (ignored)",
       [](auto* d) { d->mutable_metadata()->set_generation(40); }, 2},
  };
  for (const auto& c : cases) {
    auto d = old;
    c.mutate(&d);
    s.Default(&d);
    s.PrepareForUpdate(&d, old);
    EXPECT_EQ(d.metadata().generation(), c.generation) << c.name;
    EXPECT_TRUE(objects::EncodeJson(d.status()) == objects::EncodeJson(old.status()))
        << c.name << ": status must come from the stored object";
  }
}

TEST(DeploymentPrepareTest, StatusUpdateKeepsSpecAndLabels) {
  const Strategy& s = StrategyOf("apps", "deployments");
  const auto old = StoredDeployment();
  auto d = old;
  d.mutable_spec()->set_replicas(10);
  (*d.mutable_metadata()->mutable_labels())["app"] = "changed";
  (*d.mutable_metadata()->mutable_annotations())["kept"] = "yes";
  d.mutable_status()->set_observedgeneration(2);
  d.mutable_status()->set_updatedreplicas(1);
  d.mutable_status()->set_terminatingreplicas(2);
  s.PrepareForStatusUpdate(&d, old);
  EXPECT_EQ(d.spec().replicas(), 3);
  EXPECT_EQ(d.metadata().labels().at("app"), "web");
  EXPECT_EQ(d.metadata().annotations().at("kept"), "yes");
  EXPECT_EQ(d.status().updatedreplicas(), 1);
  EXPECT_FALSE(d.status().has_terminatingreplicas());
  EXPECT_EQ(d.metadata().generation(), 2);
  EXPECT_THAT(Texts(s.ValidateStatusUpdate(d, old)), IsEmpty());
}

TEST(ReplicaSetPrepareTest, GenerationAndStatus) {
  const Strategy& s = StrategyOf("apps", "replicasets");
  auto old = Decode<objects::appsv1::ReplicaSet>(
      objects::testing::ReadTestdata("replicaset.json"));
  auto rs = old;
  (*rs.mutable_metadata()->mutable_annotations())["only"] = "annotation";
  s.PrepareForUpdate(&rs, old);
  EXPECT_EQ(rs.metadata().generation(), old.metadata().generation())
      << "replicasets bump on spec changes only";
  rs.mutable_spec()->set_replicas(old.spec().replicas() + 1);
  s.PrepareForUpdate(&rs, old);
  EXPECT_EQ(rs.metadata().generation(), old.metadata().generation() + 1);

  auto st = old;
  st.mutable_spec()->set_replicas(42);
  st.mutable_status()->set_replicas(1);
  s.PrepareForStatusUpdate(&st, old);
  EXPECT_EQ(st.spec().replicas(), old.spec().replicas());
  EXPECT_EQ(st.status().replicas(), 1);
}

TEST(PodPrepareTest, CreateUpdateAndStatus) {
  const Strategy& s = StrategyOf("", "pods");
  auto stored =
      Decode<objects::corev1::Pod>(objects::testing::ReadTestdata("pod.json"));
  // A client-provided status never survives create.
  auto created = stored;
  s.PrepareForCreate(&created);
  EXPECT_EQ(created.status().phase(), "Pending");
  EXPECT_EQ(created.status().qosclass(), "Burstable");
  EXPECT_TRUE(created.status().containerstatuses().empty());
  EXPECT_EQ(created.metadata().generation(), 0)
      << "pods have no generation in 1.32";

  // A main-resource update keeps the stored status.
  auto upd = stored;
  upd.mutable_status()->set_phase("Failed");
  (*upd.mutable_metadata()->mutable_labels())["x"] = "y";
  s.PrepareForUpdate(&upd, stored);
  EXPECT_EQ(upd.status().phase(), stored.status().phase());
  EXPECT_EQ(upd.metadata().labels().at("x"), "y");

  // A status update keeps the stored spec and owner references, but may
  // change labels (pods reset only spec, deletionTimestamp, ownerReferences).
  auto st = stored;
  st.mutable_spec()->set_nodename("elsewhere");
  st.mutable_metadata()->clear_ownerreferences();
  (*st.mutable_metadata()->mutable_labels())["ready"] = "true";
  st.mutable_status()->set_phase("Succeeded");
  st.mutable_status()->clear_qosclass();
  st.mutable_status()->set_podip("10.244.1.9");
  s.PrepareForStatusUpdate(&st, stored);
  EXPECT_EQ(st.spec().nodename(), stored.spec().nodename());
  EXPECT_EQ(st.metadata().ownerreferences_size(), 1);
  EXPECT_EQ(st.metadata().labels().at("ready"), "true");
  EXPECT_EQ(st.status().phase(), "Succeeded");
  EXPECT_EQ(st.status().qosclass(), stored.status().qosclass());
  // podIP is authoritative over a disagreeing podIPs.
  ASSERT_EQ(st.status().podips_size(), 1);
  EXPECT_EQ(st.status().podips(0).ip(), "10.244.1.9");
}

TEST(NodePrepareTest, StatusAllowedOnCreateNotOnUpdate) {
  const Strategy& s = StrategyOf("", "nodes");
  auto node =
      Decode<objects::corev1::Node>(objects::testing::ReadTestdata("node.json"));
  auto created = node;
  s.PrepareForCreate(&created);
  EXPECT_EQ(objects::EncodeJson(created.status()), objects::EncodeJson(node.status()))
      << "kubelets register nodes with their status";
  ASSERT_TRUE(node.spec().unschedulable()) << "the fixture is cordoned";
  ASSERT_GT(node.status().conditions_size(), 0);
  auto upd = node;
  upd.mutable_spec()->set_unschedulable(false);  // uncordon
  upd.mutable_status()->clear_conditions();
  s.PrepareForUpdate(&upd, node);
  EXPECT_FALSE(upd.spec().unschedulable());
  EXPECT_EQ(upd.status().conditions_size(), node.status().conditions_size());
  auto st = node;
  st.mutable_spec()->set_unschedulable(false);
  st.mutable_status()->clear_conditions();
  s.PrepareForStatusUpdate(&st, node);
  EXPECT_TRUE(st.spec().unschedulable());
  EXPECT_EQ(st.status().conditions_size(), 0);
}

TEST(NamespacePrepareTest, FinalizersAndStatusComeFromStorage) {
  const Strategy& s = StrategyOf("", "namespaces");
  auto ns = Decode<objects::corev1::Namespace>(
      R"({"metadata":{"name":"a"},"spec":{"finalizers":["example.com/x"]},
          "status":{"phase":"Terminating"}})");
  s.Default(&ns);
  s.PrepareForCreate(&ns);
  EXPECT_EQ(ns.status().phase(), "Active");
  EXPECT_EQ(ns.spec().finalizers_size(), 2);
  EXPECT_EQ(ns.spec().finalizers(1), "kubernetes");
  auto upd = ns;
  upd.mutable_spec()->clear_finalizers();
  upd.mutable_status()->set_phase("Terminating");
  s.PrepareForUpdate(&upd, ns);
  EXPECT_EQ(upd.spec().finalizers_size(), 2);
  EXPECT_EQ(upd.status().phase(), "Active");
}

TEST(ServicePrepareTest, AllocatedValuesSurviveApply) {
  const Strategy& s = StrategyOf("", "services");
  auto stored = Decode<objects::corev1::Service>(R"({"metadata":{"name":"web",
    "namespace":"d"},"spec":{"type":"NodePort","clusterIP":"10.96.0.20",
    "clusterIPs":["10.96.0.20"],"ipFamilies":["IPv4"],
    "ipFamilyPolicy":"SingleStack","selector":{"app":"web"},
    "ports":[{"name":"http","port":80,"targetPort":80,"protocol":"TCP",
              "nodePort":30080}],"sessionAffinity":"None",
    "externalTrafficPolicy":"Cluster","internalTrafficPolicy":"Cluster"},
    "status":{"loadBalancer":{}}})");
  // What `kubectl apply` sends: no clusterIP, no nodePort.
  auto applied = Decode<objects::corev1::Service>(R"({"metadata":{"name":"web",
    "namespace":"d","resourceVersion":"5"},"spec":{"type":"NodePort",
    "selector":{"app":"web"},"ports":[{"name":"http","port":80}]}})");
  s.Default(&applied);
  s.PrepareForUpdate(&applied, stored);
  EXPECT_EQ(applied.spec().clusterip(), "10.96.0.20");
  ASSERT_EQ(applied.spec().clusterips_size(), 1);
  EXPECT_EQ(applied.spec().ports(0).nodeport(), 30080);
  EXPECT_THAT(Texts(s.ValidateUpdate(applied, stored)), IsEmpty());
}

TEST(LeasePrepareTest, GatedFieldsAreDropped) {
  const Strategy& s = StrategyOf("coordination.k8s.io", "leases");
  auto l = Decode<objects::coordinationv1::Lease>(R"({"metadata":{"name":"x",
    "namespace":"kube-system"},"spec":{"holderIdentity":"a",
    "strategy":"OldestEmulationVersion","preferredHolder":"b"}})");
  s.PrepareForCreate(&l);
  EXPECT_FALSE(l.spec().has_strategy());
  EXPECT_FALSE(l.spec().has_preferredholder());
  EXPECT_EQ(l.spec().holderidentity(), "a");
}

TEST(GracePeriodTest, PodsBoundToANodeGetTheirTerminationGrace) {
  const Strategy& s = StrategyOf("", "pods");
  auto pod = Decode<objects::corev1::Pod>(
      R"({"spec":{"containers":[{"name":"c","image":"i"}]}})");
  s.Default(&pod);
  EXPECT_EQ(s.DefaultGracePeriodSeconds(pod), 0) << "unbound pods go at once";
  pod.mutable_spec()->set_nodename("node-1");
  EXPECT_EQ(s.DefaultGracePeriodSeconds(pod), 30);
  pod.mutable_spec()->set_terminationgraceperiodseconds(5);
  EXPECT_EQ(s.DefaultGracePeriodSeconds(pod), 5);
  pod.mutable_spec()->set_terminationgraceperiodseconds(-3);
  EXPECT_EQ(s.DefaultGracePeriodSeconds(pod), 1);
  pod.mutable_spec()->set_terminationgraceperiodseconds(5);
  pod.mutable_status()->set_phase("Succeeded");
  EXPECT_EQ(s.DefaultGracePeriodSeconds(pod), 0) << "terminal pods go at once";
  auto d = StoredDeployment();
  EXPECT_EQ(StrategyOf("apps", "deployments").DefaultGracePeriodSeconds(d), 0);
}

TEST(ScaleTest, DeploymentToScaleAndBack) {
  const Strategy& s = StrategyOf("apps", "deployments");
  auto d = StoredDeployment();
  auto scale = s.ToScale(d);
  EXPECT_TRUE(objects::testing::JsonEqual(
      R"({"metadata":{"name":"web","namespace":"default",
          "uid":"3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d","resourceVersion":"1250",
          "creationTimestamp":"2026-11-29T08:37:41Z"},
          "spec":{"replicas":3},"status":{"replicas":3,"selector":"app=web"}})",
      objects::EncodeJson(scale)));
  scale.mutable_spec()->set_replicas(5);
  EXPECT_THAT(ValidateScale(scale), IsEmpty());
  auto old = d;
  s.ApplyScale(scale, &d);
  EXPECT_EQ(d.spec().replicas(), 5);
  s.PrepareForUpdate(&d, old);
  EXPECT_EQ(d.metadata().generation(), 3) << "scaling is a spec change";
}

TEST(ScaleTest, ReplicaSetSelectorString) {
  const Strategy& s = StrategyOf("apps", "replicasets");
  auto rs = Decode<objects::appsv1::ReplicaSet>(R"({"metadata":{"name":"r"},
    "spec":{"replicas":2,"selector":{"matchLabels":{"b":"2","a":"1"},
      "matchExpressions":[{"key":"env","operator":"In","values":["prod"]}]}},
    "status":{"replicas":1}})");
  auto scale = s.ToScale(rs);
  EXPECT_EQ(scale.spec().replicas(), 2);
  EXPECT_EQ(scale.status().replicas(), 1);
  EXPECT_EQ(scale.status().selector(), "a=1,b=2,env in (prod)");
  scale.mutable_spec()->set_replicas(0);
  s.ApplyScale(scale, &rs);
  EXPECT_EQ(rs.spec().replicas(), 0);
  EXPECT_TRUE(rs.spec().has_replicas());
}

}  // namespace
}  // namespace kplane::apiserver

namespace kplane::apiserver {
namespace {

TEST(StrategyForTest, ResourcesOfOtherSchemesGetMetadataRulesOnly) {
  // A resource the default scheme does not serve (e.g. from a test scheme);
  // StrategyFor keeps a pointer to it, so it must outlive the process.
  static objects::ResourceInfo widgets =
      *objects::Scheme::Default().FindResource("", "v1", "configmaps");
  widgets.gv.group = "example.com";
  widgets.resource = "widgets";
  const Strategy& s = StrategyFor(widgets);
  EXPECT_EQ(&s.resource(), &widgets);
  objects::corev1::ConfigMap cm;
  cm.mutable_metadata()->set_name("Bad_Name");
  cm.mutable_metadata()->set_namespace_("d");
  (*cm.mutable_data())["not/a/key"] = "ok here";
  auto errs = testing::Texts(s.ValidateCreate(cm));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].substr(0, 40),
            "metadata.name: Invalid value: \"Bad_Name\"");
  EXPECT_EQ(s.Columns().size(), 2u);
}

}  // namespace
}  // namespace kplane::apiserver
