// Applying strategic merge patches (the server side of PATCH with
// application/strategic-merge-patch+json). Cases follow the behaviour of
// k8s.io/apimachinery/pkg/util/strategicpatch on Kubernetes-shaped objects.
#include "objects/patch/strategic.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "objects/patch/test_util.h"

namespace kplane::patch {
namespace {

struct ApplyCase {
  const char* name;
  const char* original;
  const char* patch;
  const char* want;        // result, or nullptr when an error is expected
  const char* error = "";  // substring of the expected error message
};
void PrintTo(const ApplyCase& c, std::ostream* os) { *os << c.name; }

class StrategicApplyTest : public ::testing::TestWithParam<ApplyCase> {};

TEST_P(StrategicApplyTest, Applies) {
  const ApplyCase& c = GetParam();
  StatusOr<std::string> got =
      StrategicMergePatchJson(c.original, c.patch, PodSchema());
  if (c.want == nullptr) {
    ASSERT_FALSE(got.ok()) << *got;
    EXPECT_NE(got.status().message().find(c.error), std::string::npos)
        << got.status();
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Canon(*got), Canon(c.want));
}

const ApplyCase kApplyCases[] = {
    {"MapsMergeRecursively", R"({"metadata":{"name":"p","labels":{"a":"1"}}})",
     R"({"metadata":{"labels":{"b":"2"}}})",
     R"({"metadata":{"name":"p","labels":{"a":"1","b":"2"}}})"},
    {"NullDeletesKey", R"({"metadata":{"labels":{"a":"1","b":"2"}}})",
     R"({"metadata":{"labels":{"a":null}}})",
     R"({"metadata":{"labels":{"b":"2"}}})"},
    {"NullForMissingKeyIsIgnored", R"({"metadata":{"labels":{"a":"1"}}})",
     R"({"metadata":{"labels":{"zzz":null},"annotations":{"x":null}}})",
     R"({"metadata":{"labels":{"a":"1"},"annotations":{}}})"},
    {"CordonSetsAndUnsets", R"({"spec":{"nodeName":"n1"}})",
     R"({"spec":{"unschedulable":true}})",
     R"({"spec":{"nodeName":"n1","unschedulable":true}})"},
    {"ScalarReplaced", R"({"spec":{"nodeName":"a"}})",
     R"({"spec":{"nodeName":"b"}})", R"({"spec":{"nodeName":"b"}})"},
    {"TypeChangeReplacesValue", R"({"spec":{"nodeName":"a"}})",
     R"({"spec":{"nodeName":{"x":1}}})", R"({"spec":{"nodeName":{"x":1}}})"},
    {"ContainersMergeByName",
     R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}})",
     R"({"spec":{"containers":[{"name":"b","image":"z"}]}})",
     R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"z"}]}})"},
    {"NewContainerGoesFirstWithoutOrderHint",
     // Upstream puts patch-only elements before server-only ones when no
     // $setElementOrder says otherwise.
     R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[{"name":"c","image":"n"}]}})",
     R"({"spec":{"containers":[{"name":"c","image":"n"},{"name":"a"}]}})"},
    {"SetElementOrderReorders",
     R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],
                 "containers":[{"name":"a","image":"z"}]}})",
     R"({"spec":{"containers":[{"name":"b","image":"y"},{"name":"a","image":"z"}]}})"},
    {"SetElementOrderWithAddition",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"new"},{"name":"b"}],
                 "containers":[{"name":"new","image":"i"}]}})",
     R"({"spec":{"containers":[{"name":"a"},{"name":"new","image":"i"},{"name":"b"}]}})"},
    {"DeleteDirectiveRemovesElement",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
     R"({"spec":{"containers":[{"name":"a","$patch":"delete"}]}})",
     R"({"spec":{"containers":[{"name":"b"}]}})"},
    {"ReplaceDirectiveOnList",
     R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b"}]}})",
     R"({"spec":{"containers":[{"name":"c"},{"$patch":"replace"}]}})",
     R"({"spec":{"containers":[{"name":"c"}]}})"},
    {"ReplaceDirectiveOnMap", R"({"spec":{"nodeSelector":{"a":"1","b":"2"}}})",
     R"({"spec":{"nodeSelector":{"$patch":"replace","c":"3"}}})",
     R"({"spec":{"nodeSelector":{"c":"3"}}})"},
    {"DeleteDirectiveOnMap",
     R"({"metadata":{"labels":{"a":"1"}},"spec":{"nodeName":"n"}})",
     R"({"metadata":{"labels":{"$patch":"delete"}}})",
     R"({"metadata":{"labels":{}},"spec":{"nodeName":"n"}})"},
    {"NestedMergeListEnvByName",
     R"({"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]}]}})",
     R"({"spec":{"containers":[{"name":"a","env":[{"name":"Y","value":"3"}]}]}})",
     R"({"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"3"}]}]}})"},
    {"NumericMergeKeyContainerPort",
     R"({"spec":{"containers":[{"name":"a","ports":[{"containerPort":80,"name":"http"},{"containerPort":443}]}]}})",
     R"({"spec":{"containers":[{"name":"a","ports":[{"containerPort":80,"protocol":"TCP"}]}]}})",
     R"({"spec":{"containers":[{"name":"a","ports":[{"containerPort":80,"name":"http","protocol":"TCP"},{"containerPort":443}]}]}})"},
    {"VolumeMountsByMountPath",
     R"({"spec":{"containers":[{"name":"a","volumeMounts":[{"name":"v","mountPath":"/a"}]}]}})",
     R"({"spec":{"containers":[{"name":"a","volumeMounts":[{"name":"w","mountPath":"/a"}]}]}})",
     R"({"spec":{"containers":[{"name":"a","volumeMounts":[{"name":"w","mountPath":"/a"}]}]}})"},
    {"TolerationsHaveNoMergeKeyAndAreReplaced",
     R"({"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}})",
     R"({"spec":{"tolerations":[{"key":"c"}]}})",
     R"({"spec":{"tolerations":[{"key":"c"}]}})"},
    {"NonMergingScalarListReplaced",
     R"({"spec":{"containers":[{"name":"a","command":["sh","-c"]}]}})",
     R"({"spec":{"containers":[{"name":"a","command":["bash"]}]}})",
     R"({"spec":{"containers":[{"name":"a","command":["bash"]}]}})"},
    {"FinalizersSetMerge", R"({"metadata":{"finalizers":["a","b"]}})",
     R"({"metadata":{"$setElementOrder/finalizers":["a","b","c"],"finalizers":["c"]}})",
     R"({"metadata":{"finalizers":["a","b","c"]}})"},
    {"FinalizersDuplicateNotAdded", R"({"metadata":{"finalizers":["a","b"]}})",
     R"({"metadata":{"finalizers":["b"]}})",
     R"({"metadata":{"finalizers":["a","b"]}})"},
    {"DeleteFromPrimitiveList", R"({"metadata":{"finalizers":["a","b","c"]}})",
     R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["b","zzz"]}})",
     R"({"metadata":{"finalizers":["a","c"]}})"},
    {"OwnerReferencesByUid",
     R"({"metadata":{"ownerReferences":[{"uid":"1","name":"rs-a"}]}})",
     R"({"metadata":{"ownerReferences":[{"uid":"1","controller":true},{"uid":"2","name":"rs-b"}]}})",
     R"({"metadata":{"ownerReferences":[{"uid":"1","name":"rs-a","controller":true},{"uid":"2","name":"rs-b"}]}})"},
    {"RetainKeysDropsOtherVolumeSourceThroughInlineField",
     R"({"spec":{"volumes":[{"name":"v","emptyDir":{}}]}})",
     R"({"spec":{"volumes":[{"name":"v","$retainKeys":["hostPath","name"],"hostPath":{"path":"/x"}}]}})",
     R"({"spec":{"volumes":[{"name":"v","hostPath":{"path":"/x"}}]}})"},
    {"ConfigMapItemsBelowInlineVolumeSourceAreReplaced",
     R"({"spec":{"volumes":[{"name":"v","configMap":{"name":"c","items":[{"key":"a","path":"a"}]}}]}})",
     R"({"spec":{"volumes":[{"name":"v","configMap":{"items":[{"key":"b","path":"b"}]}}]}})",
     R"({"spec":{"volumes":[{"name":"v","configMap":{"name":"c","items":[{"key":"b","path":"b"}]}}]}})"},
    {"EphemeralContainerEnvMergesThroughInlineCommon",
     R"({"spec":{"ephemeralContainers":[{"name":"dbg","env":[{"name":"A","value":"1"}]}]}})",
     R"({"spec":{"ephemeralContainers":[{"name":"dbg","env":[{"name":"B","value":"2"}]}]}})",
     R"({"spec":{"ephemeralContainers":[{"name":"dbg","env":[{"name":"B","value":"2"},{"name":"A","value":"1"}]}]}})"},
    {"MapOfMessagesWalksValueType",
     R"({"spec":{"sidecars":{"log":{"name":"log","env":[{"name":"A","value":"1"}]}}}})",
     R"({"spec":{"sidecars":{"log":{"env":[{"name":"A","value":"2"}]}}}})",
     R"({"spec":{"sidecars":{"log":{"name":"log","env":[{"name":"A","value":"2"}]}}}})"},
    {"StatusConditionsByType",
     R"({"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Scheduled","status":"True"}]}})",
     R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})",
     R"({"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Scheduled","status":"True"}]}})"},
    {"UnknownFieldListsAreReplaced", R"({"spec":{"extra":[{"name":"a"}]}})",
     R"({"spec":{"extra":[{"name":"b"}]}})",
     R"({"spec":{"extra":[{"name":"b"}]}})"},
    {"NewSubtreeLosesDirectivesAndNulls", R"({})",
     R"({"spec":{"nodeName":null,"containers":[{"name":"a"},{"name":"b","$patch":"delete"}]}})",
     R"({"spec":{"containers":[{"name":"a"}]}})"},
    {"EmptyPatchIsNoOp", R"({"a":1})", R"({})", R"({"a":1})"},
    {"PatchOnEmptyOriginal", "", R"({"metadata":{"name":"x"}})",
     R"({"metadata":{"name":"x"}})"},
    {"UnknownMapDirective", R"({"metadata":{"labels":{"a":"1"}}})",
     R"({"metadata":{"labels":{"$patch":"frobnicate"}}})", nullptr,
     "unknown patch type: frobnicate in map: map[$patch:frobnicate]"},
    {"MissingMergeKey", R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[{"image":"x"}]}})", nullptr,
     "map: map[image:x] does not contain declared merge key: name"},
    {"MergeDirectiveInListUnsupported",
     R"({"spec":{"containers":[{"name":"a"}]}})",
     R"({"spec":{"containers":[{"$patch":"merge"}]}})", nullptr,
     "merging lists cannot yet be specified in the patch"},
    {"MixedElementTypes", R"({"metadata":{"finalizers":["a"]}})",
     R"({"metadata":{"finalizers":[1]}})", nullptr,
     "list element types are not identical"},
    {"ListOfLists", R"({"metadata":{"finalizers":[["a"]]}})",
     R"({"metadata":{"finalizers":[["b"]]}})", nullptr,
     "lists of lists are not supported"},
    {"RetainKeysMustCoverPatch", R"({"spec":{"volumes":[{"name":"v"}]}})",
     R"({"spec":{"volumes":[{"name":"v","$retainKeys":["name"],"hostPath":{}}]}})",
     nullptr, "invalid patch format of retainKeys"},
    {"SetElementOrderMustMatchPatchOrder",
     R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
     R"({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
                 "containers":[{"name":"b","image":"1"},{"name":"a","image":"2"}]}})",
     nullptr, "doesn't match $setElementOrder list"},
    {"BadSetElementOrderKey", R"({"spec":{}})",
     R"({"spec":{"$setElementOrder":[]}})", nullptr,
     "invalid patch format of setElementOrder list"},
    {"NotJson", R"({"a":1})", R"(<not json>)", nullptr,
     "invalid JSON document"},
    // Kubernetes decodes the patch into map[string]interface{}: of a member
    // given twice in one object, at any depth, the last counts.
    {"DuplicateKeysLastWins", R"({"metadata":{"labels":{"x":"0"}}})",
     R"({"metadata":{"labels":{"a":"1"}},"metadata":{"labels":{"b":"2"}}})",
     R"({"metadata":{"labels":{"x":"0","b":"2"}}})"},
    {"DuplicateNestedKeysLastWins", R"({"metadata":{"labels":{"a":"0"}}})",
     R"({"metadata":{"labels":{"a":"1","a":null}}})",
     R"({"metadata":{"labels":{}}})"},
    {"DuplicateDirectiveLastWins", R"({"metadata":{"labels":{"a":"1"}}})",
     R"({"metadata":{"labels":{"$patch":"delete","$patch":"replace","b":"2"}}})",
     R"({"metadata":{"labels":{"b":"2"}}})"},
    {"DuplicateKeysInListElementLastWins",
     R"({"spec":{"containers":[{"name":"a","image":"0"}]}})",
     R"({"spec":{"containers":[{"name":"a","image":"1","image":"2"}]}})",
     R"({"spec":{"containers":[{"name":"a","image":"2"}]}})"},
};

INSTANTIATE_TEST_SUITE_P(Cases, StrategicApplyTest,
                         ::testing::ValuesIn(kApplyCases),
                         [](const auto& info) { return info.param.name; });

TEST(StrategicApplyTest, ReplaceStrategyStructIsReplacedWhole) {
  PatchSchema pdb(patchtest::PodDisruptionBudgetSpec::descriptor(),
                  &PatchTestTable());
  auto got =
      StrategicMergePatchJson(R"({"selector":{"matchLabels":{"a":"1"}}})",
                              R"({"selector":{"matchLabels":{"b":"2"}}})", pdb);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Canon(*got), Canon(R"({"selector":{"matchLabels":{"b":"2"}}})"));
}

TEST(StrategicApplyTest, DeploymentRetainKeysOnStrategy) {
  // kubectl switching RollingUpdate -> Recreate sends $retainKeys.
  auto got = StrategicMergePatchJson(
      R"({"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}}}})",
      R"({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}})",
      DeploymentSchema());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Canon(*got), Canon(R"({"spec":{"strategy":{"type":"Recreate"}}})"));
}

TEST(StrategicApplyTest, RolloutRestartAnnotatesTemplate) {
  auto got = StrategicMergePatchJson(
      R"({"spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"x"}}}}})",
      R"({"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z"}}}}})",
      DeploymentSchema());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(
      Canon(*got),
      Canon(
          R"({"spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"x"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z"}}}}})"));
}

TEST(StrategicApplyTest, ErrorLeavesObjectUnchanged) {
  rapidjson::Document obj, patch;
  ASSERT_TRUE(
      ParseJson(R"({"spec":{"nodeName":"a","containers":[{"name":"x"}]}})",
                &obj)
          .ok());
  ASSERT_TRUE(
      ParseJson(R"({"spec":{"nodeName":"b","containers":[{"image":"y"}]}})",
                &patch)
          .ok());
  std::string before = CanonicalJson(obj);
  Status st = StrategicMergePatch(obj, patch, PodSchema(), obj.GetAllocator());
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(CanonicalJson(obj), before);
}

// A patch of many keys (merged through an index, removals in one pass)
// gives what applying its keys one at a time gives, order included:
// removals, updates, new keys, nested maps, a list merged by key, a
// $patch: replace map, nulls.
TEST(StrategicApplyManyKeys, MergeAsOneAtATime) {
  std::string labels = "{", patch_labels = "{";
  for (int i = 0; i < 100; ++i) {
    labels += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  }
  labels += "}";
  for (int i = 0; i < 30; ++i) {
    patch_labels += "\"k" + std::to_string(i) + "\":null,";
  }
  for (int i = 30; i < 60; ++i) {
    patch_labels += "\"k" + std::to_string(i) + "\":\"x\",";
  }
  for (int i = 0; i < 10; ++i) {
    patch_labels += "\"n" + std::to_string(i) + "\":\"new\",";
  }
  patch_labels += "\"k5\":\"back\",\"k31\":null,\"gone\":null}";
  const std::string original =
      R"({"metadata":{"name":"p","labels":)" + labels +
      R"(,"annotations":{"a":"1"}},"spec":{"containers":[{"name":"x",)"
      R"("image":"1"}]}})";
  std::string spec_patch;
  for (int i = 0; i < 40; ++i) {
    spec_patch += "\"f" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  }
  const std::string patch =
      R"({"metadata":{"labels":)" + patch_labels +
      R"(,"annotations":{"$patch":"replace","b":"2"}},"spec":{)" + spec_patch +
      R"("containers":[{"name":"x","image":"2"},{"name":"y"}]}})";
  rapidjson::Document whole, one_by_one, p;
  ASSERT_TRUE(ParseJson(original, &whole).ok());
  ASSERT_TRUE(ParseJson(original, &one_by_one).ok());
  ASSERT_TRUE(ParseJson(patch, &p).ok());
  ASSERT_TRUE(
      StrategicMergePatch(whole, p, PodSchema(), whole.GetAllocator()).ok());
  // The same changes, one key of each map per patch; of "k5" and "k31",
  // given twice, the last (the patch decodes as a Go map).
  KeepLastMembers(p);
  std::vector<std::string> singles;
  for (const auto& m : p["metadata"]["labels"].GetObject()) {
    rapidjson::Document one;
    one.SetObject();
    one.AddMember(JsonValue(m.name, one.GetAllocator()),
                  JsonValue(m.value, one.GetAllocator()), one.GetAllocator());
    singles.push_back(R"({"metadata":{"labels":)" + CompactJson(one) + "}}");
  }
  singles.push_back(
      R"({"metadata":{"annotations":{"$patch":"replace","b":"2"}}})");
  for (const auto& m : p["spec"].GetObject()) {
    rapidjson::Document one;
    one.SetObject();
    one.AddMember(JsonValue(m.name, one.GetAllocator()),
                  JsonValue(m.value, one.GetAllocator()), one.GetAllocator());
    singles.push_back(R"({"spec":)" + CompactJson(one) + "}");
  }
  for (const std::string& single : singles) {
    rapidjson::Document sp;
    ASSERT_TRUE(ParseJson(single, &sp).ok()) << single;
    ASSERT_TRUE(StrategicMergePatch(one_by_one, sp, PodSchema(),
                                    one_by_one.GetAllocator())
                    .ok())
        << single;
  }
  EXPECT_EQ(CompactJson(whole), CompactJson(one_by_one));
  EXPECT_EQ(whole["metadata"]["labels"].MemberCount(), 80u);
  EXPECT_EQ(CompactJson(whole["metadata"]["annotations"]), R"({"b":"2"})");
  EXPECT_EQ(whole["spec"]["containers"].Size(), 2u);
}

// ... in one walk: a patch of 400,000 labels took a scan of the map per
// label and an order-keeping erase per removal (the old loop passes the
// test's 120 s timeout).
TEST(StrategicApplyManyKeys, AreOneWalk) {
  std::string labels = "{", patch = R"({"metadata":{"labels":{)";
  for (int i = 0; i < 400000; ++i) {
    const std::string k = "\"k" + std::to_string(i) + "\":";
    labels += (i ? "," : "") + k + "\"v\"";
    patch += (i ? "," : "") + k + (i % 2 ? "\"w\"" : "null");
  }
  rapidjson::Document obj, p;
  ASSERT_TRUE(
      ParseJson(R"({"metadata":{"name":"p","labels":)" + labels + "}}}", &obj)
          .ok());
  ASSERT_TRUE(ParseJson(patch + "}}}", &p).ok());
  ASSERT_TRUE(
      StrategicMergePatch(obj, p, PodSchema(), obj.GetAllocator()).ok());
  const JsonValue& got = obj["metadata"]["labels"];
  ASSERT_EQ(got.MemberCount(), 200000u);
  EXPECT_EQ(std::string(StringOf(got.MemberBegin()->name)), "k1");
  EXPECT_STREQ(got.MemberBegin()->value.GetString(), "w");
}

}  // namespace
}  // namespace kplane::patch
