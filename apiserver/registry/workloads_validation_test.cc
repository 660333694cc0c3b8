// apps/v1 StatefulSets, DaemonSets and ControllerRevisions: defaults,
// validation with kube-apiserver's texts, generation bumps and printed rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "apiserver/registry/strategy.h"
#include "apiserver/registry/test_util.h"
#include "objects/apps_workloads_types.h"

namespace kplane::apiserver {
namespace {

using objects::appsv1::ControllerRevision;
using objects::appsv1::DaemonSet;
using objects::appsv1::StatefulSet;
using testing::Decode;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::StrategyOf;
using testing::Texts;

StatefulSet ValidStatefulSet() {
  auto s = Decode<StatefulSet>(R"({"metadata":{"name":"web",
    "namespace":"default"},"spec":{"replicas":3,"serviceName":"web",
    "selector":{"matchLabels":{"app":"web"}},
    "template":{"metadata":{"labels":{"app":"web"}},
      "spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}})");
  StrategyOf("apps", "statefulsets").Default(&s);
  return s;
}

DaemonSet ValidDaemonSet() {
  auto d = Decode<DaemonSet>(R"({"metadata":{"name":"agent",
    "namespace":"default"},"spec":{
    "selector":{"matchLabels":{"app":"agent"}},
    "template":{"metadata":{"labels":{"app":"agent"}},
      "spec":{"nodeSelector":{"disk":"ssd"},
        "containers":[{"name":"a","image":"agent:1"}]}}}})");
  StrategyOf("apps", "daemonsets").Default(&d);
  return d;
}

TEST(StatefulSetStrategyTest, Defaults) {
  StatefulSet s = ValidStatefulSet();
  EXPECT_EQ(s.spec().podmanagementpolicy(), "OrderedReady");
  EXPECT_EQ(s.spec().updatestrategy().type(), "RollingUpdate");
  EXPECT_TRUE(s.spec().updatestrategy().rollingupdate().has_partition());
  EXPECT_EQ(s.spec().revisionhistorylimit(), 10);
  EXPECT_EQ(s.spec().persistentvolumeclaimretentionpolicy().whendeleted(),
            "Retain");
  EXPECT_EQ(s.spec().template_().spec().restartpolicy(), "Always");
}

TEST(StatefulSetStrategyTest, Rules) {
  const Strategy& st = StrategyOf("apps", "statefulsets");
  ASSERT_THAT(Texts(st.ValidateCreate(ValidStatefulSet())), IsEmpty());
  struct Case {
    std::function<void(StatefulSet*)> mutate;
    std::vector<std::string> want;
  } cases[] = {
      {[](auto* s) { s->mutable_spec()->set_replicas(-1); },
       {"spec.replicas: Invalid value: -1: must be greater than or equal to "
        "0"}},
      {[](auto* s) { s->mutable_spec()->set_podmanagementpolicy("Random"); },
       {"spec.podManagementPolicy: Unsupported value: \"Random\": supported "
        "values: \"OrderedReady\", \"Parallel\""}},
      {[](auto* s) {
         s->mutable_spec()->mutable_updatestrategy()->set_type("OnDelete");
       },
       {"spec.updateStrategy.rollingUpdate: Invalid value: "
        "apps.RollingUpdateStatefulSetStrategy{...}: only allowed for "
        "updateStrategy 'RollingUpdate'"}},
      {[](auto* s) {
         s->mutable_spec()
             ->mutable_updatestrategy()
             ->mutable_rollingupdate()
             ->set_partition(-1);
       },
       {"spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: "
        "must be greater than or equal to 0"}},
      {[](auto* s) {
         s->mutable_spec()
             ->mutable_template_()
             ->mutable_metadata()
             ->mutable_labels()
             ->clear();
       },
       {"spec.template.metadata.labels: Invalid value: "
        "map[string]string(nil): `selector` does not match template "
        "`labels`"}},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    auto s = ValidStatefulSet();
    cases[i].mutate(&s);
    EXPECT_EQ(Texts(st.ValidateCreate(s)), cases[i].want) << "case " << i;
  }
}

TEST(StatefulSetStrategyTest, OnlySomeSpecFieldsMayChange) {
  const Strategy& st = StrategyOf("apps", "statefulsets");
  StatefulSet old = ValidStatefulSet();
  old.mutable_metadata()->set_generation(1);
  StatefulSet ok = old;
  ok.mutable_spec()->set_replicas(5);
  ok.mutable_spec()
      ->mutable_template_()
      ->mutable_spec()
      ->mutable_containers(0)
      ->set_image("nginx:1.28");
  ok.mutable_spec()
      ->mutable_updatestrategy()
      ->mutable_rollingupdate()
      ->set_partition(2);
  EXPECT_THAT(Texts(st.ValidateUpdate(ok, old)), IsEmpty());
  st.PrepareForUpdate(&ok, old);
  EXPECT_EQ(ok.metadata().generation(), 2);

  StatefulSet bad = old;
  bad.mutable_spec()->set_servicename("other");
  EXPECT_THAT(
      Texts(st.ValidateUpdate(bad, old)),
      ElementsAre("spec: Forbidden: updates to statefulset spec for fields "
                  "other than 'replicas', 'ordinals', 'template', "
                  "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
                  "and 'minReadySeconds' are forbidden"));
  bad = old;
  bad.mutable_spec()->set_podmanagementpolicy("Parallel");
  EXPECT_THAT(Texts(st.ValidateUpdate(bad, old)), ::testing::SizeIs(1));
}

TEST(StatefulSetStrategyTest, PrintsReadyOverReplicas) {
  const Strategy& st = StrategyOf("apps", "statefulsets");
  StatefulSet s = ValidStatefulSet();
  s.mutable_status()->set_readyreplicas(2);
  std::vector<std::string> names;
  for (const auto& c : st.Columns()) names.push_back(c.name);
  EXPECT_THAT(names,
              ElementsAre("Name", "Ready", "Age", "Containers", "Images"));
  auto row = st.Row(s, WallTime(seconds(0)));
  ASSERT_EQ(row.size(), 5u);
  EXPECT_EQ(row[1].str, "2/3");
  EXPECT_EQ(st.ToScale(s).spec().replicas(), 3);
}

TEST(DaemonSetStrategyTest, DefaultsAndRules) {
  const Strategy& st = StrategyOf("apps", "daemonsets");
  DaemonSet d = ValidDaemonSet();
  EXPECT_EQ(d.spec().updatestrategy().type(), "RollingUpdate");
  EXPECT_EQ(d.spec().updatestrategy().rollingupdate().maxunavailable().intval(),
            1);
  EXPECT_EQ(d.spec().revisionhistorylimit(), 10);
  ASSERT_THAT(Texts(st.ValidateCreate(d)), IsEmpty());

  DaemonSet bad = d;
  bad.mutable_spec()
      ->mutable_updatestrategy()
      ->mutable_rollingupdate()
      ->mutable_maxunavailable()
      ->set_intval(0);
  EXPECT_THAT(Texts(st.ValidateCreate(bad)),
              ElementsAre("spec.updateStrategy.rollingUpdate.maxUnavailable: "
                          "Required value: cannot be 0 when maxSurge is 0"));
  bad = d;
  bad.mutable_spec()->mutable_template_()->mutable_spec()->set_restartpolicy(
      "Never");
  EXPECT_THAT(Texts(st.ValidateCreate(bad)),
              ElementsAre("spec.template.spec.restartPolicy: Unsupported "
                          "value: \"Never\": supported values: \"Always\""));
  bad = d;
  bad.mutable_spec()->mutable_selector()->mutable_matchlabels()->clear();
  EXPECT_THAT(Texts(st.ValidateCreate(bad)),
              ::testing::Contains("spec.selector: Invalid value: "
                                  "v1.LabelSelector{MatchLabels:map[string]"
                                  "string(nil), MatchExpressions:[]v1."
                                  "LabelSelectorRequirement(nil)}: empty "
                                  "selector is invalid for daemonset"));
  bad = d;
  (*bad.mutable_spec()->mutable_selector()->mutable_matchlabels())["x"] = "y";
  (*bad.mutable_spec()
        ->mutable_template_()
        ->mutable_metadata()
        ->mutable_labels())["x"] = "y";
  EXPECT_THAT(Texts(st.ValidateUpdate(bad, d)),
              ElementsAre(::testing::HasSubstr("field is immutable")));
}

TEST(DaemonSetStrategyTest, PrintsKubesColumns) {
  const Strategy& st = StrategyOf("apps", "daemonsets");
  DaemonSet d = ValidDaemonSet();
  auto* s = d.mutable_status();
  s->set_desirednumberscheduled(3);
  s->set_currentnumberscheduled(3);
  s->set_numberready(2);
  s->set_updatednumberscheduled(1);
  s->set_numberavailable(2);
  std::vector<std::string> names;
  for (const auto& c : st.Columns()) names.push_back(c.name);
  EXPECT_THAT(names, ElementsAre("Name", "Desired", "Current", "Ready",
                                 "Up-to-date", "Available", "Node Selector",
                                 "Age", "Containers", "Images", "Selector"));
  auto row = st.Row(d, WallTime(seconds(0)));
  ASSERT_EQ(row.size(), 11u);
  EXPECT_EQ(row[1].num, 3);
  EXPECT_EQ(row[3].num, 2);
  EXPECT_EQ(row[4].num, 1);
  EXPECT_EQ(row[6].str, "disk=ssd");
  EXPECT_EQ(row[10].str, "app=agent");
}

ControllerRevision ValidRevision() {
  return Decode<ControllerRevision>(R"({"metadata":{"name":"web-6d4c9b7f5c",
    "namespace":"default","creationTimestamp":"2026-11-29T08:37:42Z",
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet",
      "name":"web","uid":"u1","controller":true}]},
    "data":{"spec":{"template":{"$patch":"replace","metadata":{}}}},
    "revision":2})");
}

TEST(ControllerRevisionStrategyTest, KubesRules) {
  const Strategy& st = StrategyOf("apps", "controllerrevisions");
  const ControllerRevision cr = ValidRevision();
  ASSERT_THAT(Texts(st.ValidateCreate(cr)), IsEmpty());
  ControllerRevision bad = cr;
  bad.clear_data();
  bad.set_revision(-1);
  bad.mutable_metadata()->set_name("Web_1");
  EXPECT_THAT(
      Texts(st.ValidateCreate(bad)),
      ElementsAre(::testing::HasSubstr("metadata.name: Invalid value: "
                                       "\"Web_1\": a lowercase RFC 1123 "
                                       "subdomain"),
                  "data: Required value: data is mandatory",
                  "revision: Invalid value: -1: must be greater than or "
                  "equal to 0"));
  // data is immutable; the revision number is not (rollbacks renumber).
  ControllerRevision renumbered = cr;
  renumbered.set_revision(5);
  EXPECT_THAT(Texts(st.ValidateUpdate(renumbered, cr)), IsEmpty());
  ControllerRevision respaced = cr;
  respaced.mutable_data()->set_raw(
      R"({ "spec": {"template": {"metadata": {}, "$patch": "replace"}}})");
  EXPECT_THAT(Texts(st.ValidateUpdate(respaced, cr)), IsEmpty());
  ControllerRevision changed = cr;
  changed.mutable_data()->set_raw(R"({"spec":{}})");
  EXPECT_THAT(Texts(st.ValidateUpdate(changed, cr)),
              ElementsAre(::testing::HasSubstr("data: Invalid value: ")));
  EXPECT_THAT(Texts(st.ValidateUpdate(changed, cr)),
              ElementsAre(::testing::HasSubstr("field is immutable")));
}

TEST(ControllerRevisionStrategyTest, PrintsControllerAndRevision) {
  const Strategy& st = StrategyOf("apps", "controllerrevisions");
  std::vector<std::string> names;
  for (const auto& c : st.Columns()) names.push_back(c.name);
  EXPECT_THAT(names, ElementsAre("Name", "Controller", "Revision", "Age"));
  auto row = st.Row(ValidRevision(), WallTime(seconds(1795941462 + 120)));
  ASSERT_EQ(row.size(), 4u);
  EXPECT_EQ(row[0].str, "web-6d4c9b7f5c");
  EXPECT_EQ(row[1].str, "statefulset.apps/web");
  EXPECT_EQ(row[2].num, 2);
  EXPECT_EQ(row[3].str, "2m");
  ControllerRevision orphan = ValidRevision();
  orphan.mutable_metadata()->clear_ownerreferences();
  EXPECT_EQ(st.Row(orphan, WallTime(seconds(0)))[1].str, "<none>");
}

}  // namespace
}  // namespace kplane::apiserver
