// Two- and three-way strategic merge patch creation: what `kubectl apply`
// computes client-side (CreateTwoWayMergePatch / CreateThreeWayMergePatch).
// Expected patches are the bytes kubectl sends (keys sorted).
#include <gtest/gtest.h>

#include "objects/patch/strategic.h"
#include "objects/patch/test_util.h"

namespace kplane::patch {
namespace {

struct TwoWayCase {
  const char* name;
  const char* original;
  const char* modified;
  const char* want_patch;
};
void PrintTo(const TwoWayCase& c, std::ostream* os) { *os << c.name; }

class TwoWayTest : public ::testing::TestWithParam<TwoWayCase> {};

TEST_P(TwoWayTest, CreatesPatchThatReproducesModified) {
  const TwoWayCase& c = GetParam();
  rapidjson::Document o, m;
  ASSERT_TRUE(ParseJson(c.original, &o).ok());
  ASSERT_TRUE(ParseJson(c.modified, &m).ok());
  JsonValue patch;
  ASSERT_TRUE(
      CreateTwoWayMergePatch(o, m, PodSchema(), &patch, o.GetAllocator()).ok());
  EXPECT_EQ(CanonicalJson(patch), Canon(c.want_patch));
  // Round trip: original + patch == modified.
  ASSERT_TRUE(
      StrategicMergePatch(o, patch, PodSchema(), o.GetAllocator()).ok());
  EXPECT_EQ(CanonicalJson(o), CanonicalJson(m));
}

const TwoWayCase kTwoWayCases[] = {
    {"Identical", R"({"a":1,"spec":{"containers":[{"name":"x"}]}})",
     R"({"a":1,"spec":{"containers":[{"name":"x"}]}})", R"({})"},
    {"ScalarChangedAddedRemoved", R"({"a":1,"b":2})", R"({"a":3,"c":4})",
     R"({"a":3,"b":null,"c":4})"},
    {"LabelRemoved", R"({"metadata":{"labels":{"a":"1","b":"2"}}})",
     R"({"metadata":{"labels":{"a":"1"}}})",
     R"({"metadata":{"labels":{"b":null}}})"},
    {"ContainerImageChanged",
     R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}})",
     R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"z"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
                 "containers":[{"image":"z","name":"b"}]}})"},
    {"ContainersReorderedOnly",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
     R"({"spec":{"containers":[{"name":"b"},{"name":"a"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}]}})"},
    {"ContainerRemoved",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
     R"({"spec":{"containers":[{"name":"b"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"b"}],
                 "containers":[{"$patch":"delete","name":"a"}]}})"},
    {"ContainerAdded", R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b","image":"i"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
                 "containers":[{"image":"i","name":"b"}]}})"},
    {"EnvNestedInContainer",
     R"({"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"}]}]}})",
     R"({"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"2"}]}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"a"}],
                 "containers":[{"$setElementOrder/env":[{"name":"X"}],
                                "env":[{"name":"X","value":"2"}],"name":"a"}]}})"},
    {"FinalizersAsSet", R"({"metadata":{"finalizers":["a","b"]}})",
     R"({"metadata":{"finalizers":["b","c"]}})",
     R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],
                     "$setElementOrder/finalizers":["b","c"],
                     "finalizers":["c"]}})"},
    {"TolerationsReplacedWhole", R"({"spec":{"tolerations":[{"key":"a"}]}})",
     R"({"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}})",
     R"({"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}})"},
    {"ListEmptied", R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[]}})",
     R"({"spec":{"containers":[{"$patch":"delete","name":"a"}]}})"},
    {"ListFromEmpty", R"({"spec":{"containers":[]}})",
     R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[{"name":"a"}]}})"},
    {"VolumeSourceSwitchedGetsRetainKeys",
     R"({"spec":{"volumes":[{"name":"v","emptyDir":{}}]}})",
     R"({"spec":{"volumes":[{"name":"v","hostPath":{"path":"/x"}}]}})",
     R"({"spec":{"$setElementOrder/volumes":[{"name":"v"}],
                 "volumes":[{"$retainKeys":["hostPath","name"],"emptyDir":null,
                             "hostPath":{"path":"/x"},"name":"v"}]}})"},
    {"TypeChangeIsReplacement", R"({"a":{"b":1}})", R"({"a":"s"})",
     R"({"a":"s"})"},
};

INSTANTIATE_TEST_SUITE_P(Cases, TwoWayTest, ::testing::ValuesIn(kTwoWayCases),
                         [](const auto& info) { return info.param.name; });

TEST(TwoWayTest, DeploymentStrategySwitchRetainsOnlyType) {
  rapidjson::Document o, m;
  ASSERT_TRUE(ParseJson(R"({"spec":{"strategy":{"type":"RollingUpdate",
                            "rollingUpdate":{"maxSurge":"25%"}}}})",
                        &o)
                  .ok());
  ASSERT_TRUE(
      ParseJson(R"({"spec":{"strategy":{"type":"Recreate"}}})", &m).ok());
  JsonValue patch;
  ASSERT_TRUE(
      CreateTwoWayMergePatch(o, m, DeploymentSchema(), &patch, o.GetAllocator())
          .ok());
  EXPECT_EQ(CanonicalJson(patch),
            Canon(R"({"spec":{"strategy":{"$retainKeys":["type"],
                      "rollingUpdate":null,"type":"Recreate"}}})"));
}

TEST(TwoWayTest, PreconditionRejectsNameChange) {
  rapidjson::Document o, m;
  ASSERT_TRUE(ParseJson(R"({"metadata":{"name":"a"}})", &o).ok());
  ASSERT_TRUE(ParseJson(R"({"metadata":{"name":"b"}})", &m).ok());
  JsonValue patch;
  Status st =
      CreateTwoWayMergePatch(o, m, PodSchema(), &patch, o.GetAllocator(),
                             {RequireMetadataKeyUnchanged("name")});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "precondition failed for: map[metadata:map[name:b]]");
}

// ------------------------------------------------------------- three-way

struct ThreeWayCase {
  const char* name;
  const char* original;  // last-applied
  const char* modified;  // new manifest
  const char* current;   // live object
  const char* want_patch;
  const char* want_result;  // current + patch
};
void PrintTo(const ThreeWayCase& c, std::ostream* os) { *os << c.name; }

class ThreeWayTest : public ::testing::TestWithParam<ThreeWayCase> {};

TEST_P(ThreeWayTest, CreatesKubectlApplyPatch) {
  const ThreeWayCase& c = GetParam();
  auto patch = CreateThreeWayMergePatchJson(c.original, c.modified, c.current,
                                            PodSchema(), /*overwrite=*/true);
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_EQ(*patch, Canon(c.want_patch));
  auto result = StrategicMergePatchJson(c.current, *patch, PodSchema());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Canon(*result), Canon(c.want_result));
}

const ThreeWayCase kThreeWayCases[] = {
    {"UnchangedManifestGivesEmptyPatch",
     R"({"spec":{"containers":[{"name":"a","image":"x"}]}})",
     R"({"spec":{"containers":[{"name":"a","image":"x"}]}})",
     R"({"spec":{"containers":[{"name":"a","image":"x","imagePullPolicy":"Always"}]},"status":{"phase":"Running"}})",
     R"({})",
     R"({"spec":{"containers":[{"name":"a","image":"x","imagePullPolicy":"Always"}]},"status":{"phase":"Running"}})"},
    {"ServerDefaultsSurviveAndRemovedFieldsAreDeleted",
     R"({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"nodeName":"n"}})",
     R"({"metadata":{"labels":{"a":"1"}}})",
     R"({"metadata":{"labels":{"a":"1","b":"2","c":"3"}},"spec":{"nodeName":"n","x":1}})",
     // spec was applied before and is gone from the manifest: upstream deletes
     // all of it, server-set fields included.
     R"({"metadata":{"labels":{"b":null}},"spec":null})",
     R"({"metadata":{"labels":{"a":"1","c":"3"}}})"},
    {"LiveDriftIsReverted", R"({"spec":{"nodeName":"a"}})",
     R"({"spec":{"nodeName":"a"}})", R"({"spec":{"nodeName":"b"}})",
     R"({"spec":{"nodeName":"a"}})", R"({"spec":{"nodeName":"a"}})"},
    {"ContainerRemovedFromManifest",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
     R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[{"name":"a","tty":true},{"name":"b"},{"name":"injected"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"a"}],
                 "containers":[{"$patch":"delete","name":"b"}]}})",
     R"({"spec":{"containers":[{"name":"a","tty":true},{"name":"injected"}]}})"},
    {"ImageBumpKeepsSidecarInjectedByServer",
     R"({"spec":{"containers":[{"name":"app","image":"v1"}]}})",
     R"({"spec":{"containers":[{"name":"app","image":"v2"}]}})",
     R"({"spec":{"containers":[{"name":"app","image":"v1"},{"name":"proxy","image":"p"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"app"}],
                 "containers":[{"image":"v2","name":"app"}]}})",
     R"({"spec":{"containers":[{"name":"app","image":"v2"},{"name":"proxy","image":"p"}]}})"},
    {"FinalizerRemovedFromManifestOnly",
     R"({"metadata":{"finalizers":["a","b"]}})",
     R"({"metadata":{"finalizers":["a"]}})",
     R"({"metadata":{"finalizers":["a","b","server"]}})",
     R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["b"],
                     "$setElementOrder/finalizers":["a"]}})",
     R"({"metadata":{"finalizers":["a","server"]}})"},
};

INSTANTIATE_TEST_SUITE_P(Cases, ThreeWayTest,
                         ::testing::ValuesIn(kThreeWayCases),
                         [](const auto& info) { return info.param.name; });

// The PATCH kubectl-surface.md recorded for `kubectl apply` after editing
// replicas and the image of a Deployment.
TEST(ThreeWayTest, KubectlApplyDeploymentExample) {
  const char* last = R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"annotations":{},"name":"nginx","namespace":"default"},
      "spec":{"replicas":3,"selector":{"matchLabels":{"app":"nginx"}},
      "template":{"metadata":{"labels":{"app":"nginx"}},
      "spec":{"containers":[{"image":"nginx:1.27","name":"nginx"}]}}}})";
  const char* modified = R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"NEW\n"},
      "name":"nginx","namespace":"default"},
      "spec":{"replicas":4,"selector":{"matchLabels":{"app":"nginx"}},
      "template":{"metadata":{"labels":{"app":"nginx"}},
      "spec":{"containers":[{"image":"nginx:1.28","name":"nginx"}]}}}})";
  const char* live = R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"annotations":{"deployment.kubernetes.io/revision":"1",
      "kubectl.kubernetes.io/last-applied-configuration":"OLD\n"},
      "name":"nginx","namespace":"default","uid":"u1","resourceVersion":"7"},
      "spec":{"replicas":3,"selector":{"matchLabels":{"app":"nginx"}},
      "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}},
      "template":{"metadata":{"labels":{"app":"nginx"}},
      "spec":{"containers":[{"image":"nginx:1.27","name":"nginx",
      "imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always"}}},
      "status":{"replicas":3}})";
  auto patch = CreateThreeWayMergePatchJson(
      last, modified, live, DeploymentSchema(), true,
      {RequireKeyUnchanged("apiVersion"), RequireKeyUnchanged("kind"),
       RequireMetadataKeyUnchanged("name")});
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_EQ(
      *patch,
      R"({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"NEW\n"}},)"
      R"("spec":{"replicas":4,"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],)"
      R"("containers":[{"image":"nginx:1.28","name":"nginx"}]}}}})");
}

TEST(ThreeWayTest, ConflictWhenNotOverwriting) {
  // Someone scaled the live object to 5 since the last apply (which set 3);
  // the user now applies 4.
  const char* last = R"({"spec":{"nodeName":"a"}})";
  const char* modified = R"({"spec":{"nodeName":"c"}})";
  const char* live = R"({"spec":{"nodeName":"b"}})";
  auto no = CreateThreeWayMergePatchJson(last, modified, live, PodSchema(),
                                         /*overwrite=*/false);
  ASSERT_FALSE(no.ok());
  EXPECT_EQ(no.status().code(), StatusCode::kConflict);
  EXPECT_NE(no.status().message().find("conflicts with changes made from "
                                       "original to current"),
            std::string::npos);
  auto yes = CreateThreeWayMergePatchJson(last, modified, live, PodSchema(),
                                          /*overwrite=*/true);
  ASSERT_TRUE(yes.ok()) << yes.status();
  EXPECT_EQ(*yes, R"({"spec":{"nodeName":"c"}})");
}

TEST(ThreeWayTest, NoConflictWhenChangesAgree) {
  auto p = CreateThreeWayMergePatchJson(R"({"a":1})", R"({"a":2})",
                                        R"({"a":2})", PodSchema(), false);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, "{}");
}

TEST(ThreeWayTest, KindChangeFailsPrecondition) {
  auto p = CreateThreeWayMergePatchJson(
      R"({"kind":"Pod"})", R"({"kind":"Service"})", R"({"kind":"Pod"})",
      PodSchema(), true, {RequireKeyUnchanged("kind")});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
}

TEST(MergingMapsHaveConflictsTest, Cases) {
  struct Case {
    const char* left;
    const char* right;
    bool conflict;
  } cases[] = {
      {R"({"a":1})", R"({"a":1})", false},
      {R"({"a":1})", R"({"a":2})", true},
      {R"({"a":1})", R"({"b":2})", false},
      {R"({"a":{"x":1}})", R"({"a":"s"})", true},
      {R"({"spec":{"containers":[{"name":"a","image":"x"}]}})",
       R"({"spec":{"containers":[{"name":"b","image":"y"}]}})", false},
      {R"({"spec":{"containers":[{"name":"a","image":"x"}]}})",
       R"({"spec":{"containers":[{"name":"a","image":"y"}]}})", true},
      {R"({"spec":{"tolerations":[{"key":"a"}]}})",
       R"({"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}})", true},
      {R"({"metadata":{"finalizers":["a"]}})",
       R"({"metadata":{"finalizers":["b"]}})", false},
      {R"({"m":{"$patch":"replace"}})", R"({"m":{}})", true},
  };
  for (const auto& c : cases) {
    rapidjson::Document l, r;
    ASSERT_TRUE(ParseJson(c.left, &l).ok());
    ASSERT_TRUE(ParseJson(c.right, &r).ok());
    auto got = MergingMapsHaveConflicts(l, r, PodSchema());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.conflict) << c.left << " vs " << c.right;
  }
}

}  // namespace
}  // namespace kplane::patch
