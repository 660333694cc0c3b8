// RFC 6902 JSON patch, with RFC 6901 pointers; cases after the RFC's
// appendix A and kubectl's managedFields migration patch.
#include "objects/patch/json_patch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/testing/hostile_inputs.h"
#include "objects/patch/test_util.h"

namespace kplane::patch {
namespace {

struct Case {
  const char* name;
  const char* doc;
  const char* patch;
  const char* want;  // nullptr when an error is expected
  StatusCode code = StatusCode::kOk;
  const char* error = "";
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class JsonPatchTest : public ::testing::TestWithParam<Case> {};

TEST_P(JsonPatchTest, Applies) {
  const Case& c = GetParam();
  rapidjson::Document doc, patch;
  ASSERT_TRUE(ParseJson(c.doc, &doc).ok());
  ASSERT_TRUE(ParseJson(c.patch, &patch).ok());
  std::string before = CanonicalJson(doc);
  Status st = ApplyJsonPatch(doc, patch, doc.GetAllocator());
  if (c.want == nullptr) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), c.code) << st;
    EXPECT_NE(st.message().find(c.error), std::string::npos) << st;
    EXPECT_EQ(CanonicalJson(doc), before) << "failed patch must not write";
    return;
  }
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(CanonicalJson(doc), Canon(c.want));
}

const Case kCases[] = {
    {"AddObjectMember", R"({"foo":"bar"})",
     R"([{"op":"add","path":"/baz","value":"qux"}])",
     R"({"baz":"qux","foo":"bar"})"},
    {"AddArrayElement", R"({"foo":["bar","baz"]})",
     R"([{"op":"add","path":"/foo/1","value":"qux"}])",
     R"({"foo":["bar","qux","baz"]})"},
    {"AddAppend", R"({"foo":[1]})",
     R"([{"op":"add","path":"/foo/-","value":2}])", R"({"foo":[1,2]})"},
    {"AddAtEndIndex", R"({"foo":[1]})",
     R"([{"op":"add","path":"/foo/1","value":2}])", R"({"foo":[1,2]})"},
    {"AddReplacesExistingMember", R"({"a":1})",
     R"([{"op":"add","path":"/a","value":2}])", R"({"a":2})"},
    {"AddWholeDocument", R"({"a":1})",
     R"([{"op":"add","path":"","value":{"b":2}}])", R"({"b":2})"},
    {"RemoveMember", R"({"baz":"qux","foo":"bar"})",
     R"([{"op":"remove","path":"/baz"}])", R"({"foo":"bar"})"},
    {"RemoveElement", R"({"foo":["bar","qux","baz"]})",
     R"([{"op":"remove","path":"/foo/1"}])", R"({"foo":["bar","baz"]})"},
    {"Replace", R"({"baz":"qux","foo":"bar"})",
     R"([{"op":"replace","path":"/baz","value":"boo"}])",
     R"({"baz":"boo","foo":"bar"})"},
    {"Move", R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
     R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])",
     R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"},
    {"MoveArrayElement", R"({"foo":["all","grass","cows","eat"]})",
     R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])",
     R"({"foo":["all","cows","eat","grass"]})"},
    {"Copy", R"({"a":{"b":[1]}})",
     R"([{"op":"copy","from":"/a/b","path":"/c"}])",
     R"({"a":{"b":[1]},"c":[1]})"},
    {"TestPasses", R"({"baz":"qux","foo":["a",2,"c"]})",
     R"([{"op":"test","path":"/baz","value":"qux"},
         {"op":"test","path":"/foo/1","value":2}])",
     R"({"baz":"qux","foo":["a",2,"c"]})"},
    {"EscapedPointer", R"({"a/b":1,"m~n":2})",
     R"([{"op":"replace","path":"/a~1b","value":3},
         {"op":"remove","path":"/m~0n"}])",
     R"({"a/b":3})"},
    {"AnnotationKeyWithSlash", R"({"metadata":{"annotations":{}}})",
     R"([{"op":"add","path":"/metadata/annotations/kubectl.kubernetes.io~1x","value":"v"}])",
     R"({"metadata":{"annotations":{"kubectl.kubernetes.io/x":"v"}}})"},
    {"ManagedFieldsMigration",
     R"({"metadata":{"resourceVersion":"5","managedFields":[{"manager":"old"}]}})",
     R"([{"op":"test","path":"/metadata/resourceVersion","value":"5"},
         {"op":"replace","path":"/metadata/managedFields","value":[{"manager":"new"}]}])",
     R"({"metadata":{"resourceVersion":"5","managedFields":[{"manager":"new"}]}})"},
    {"TestNullOnMissingMember", R"({"a":1})",
     R"([{"op":"test","path":"/b","value":null}])", R"({"a":1})"},
    {"TestFails", R"({"baz":"qux"})",
     R"([{"op":"test","path":"/baz","value":"bar"}])", nullptr,
     StatusCode::kFailedPrecondition, "testing value /baz failed"},
    {"FailureIsAtomic", R"({"a":1})",
     R"([{"op":"add","path":"/b","value":2},
         {"op":"test","path":"/a","value":5}])",
     nullptr, StatusCode::kFailedPrecondition, "test failed"},
    {"AddToMissingParent", R"({"a":1})",
     R"([{"op":"add","path":"/x/y","value":1}])", nullptr,
     StatusCode::kFailedPrecondition, "doc is missing path"},
    {"RemoveMissing", R"({"a":1})", R"([{"op":"remove","path":"/b"}])", nullptr,
     StatusCode::kFailedPrecondition, "doc is missing"},
    {"ReplaceMissing", R"({"a":1})",
     R"([{"op":"replace","path":"/b","value":1}])", nullptr,
     StatusCode::kFailedPrecondition, "replace operation does not apply"},
    {"IndexOutOfRange", R"({"a":[1]})",
     R"([{"op":"add","path":"/a/5","value":1}])", nullptr,
     StatusCode::kFailedPrecondition, "out of bounds"},
    {"LeadingZeroIndex", R"({"a":[1,2]})",
     R"([{"op":"remove","path":"/a/01"}])", nullptr,
     StatusCode::kFailedPrecondition, "out of bounds"},
    {"MoveIntoOwnChild", R"({"a":{"b":1}})",
     R"([{"op":"move","from":"/a","path":"/a/c"}])", nullptr,
     StatusCode::kFailedPrecondition, "prefix"},
    {"UnknownOp", R"({})", R"([{"op":"frob","path":"/a"}])", nullptr,
     StatusCode::kFailedPrecondition, "Unexpected kind: frob"},
    {"MissingValue", R"({})", R"([{"op":"add","path":"/a"}])", nullptr,
     StatusCode::kFailedPrecondition, "missing \"value\""},
    {"BadPointer", R"({})", R"([{"op":"add","path":"a","value":1}])", nullptr,
     StatusCode::kFailedPrecondition, "JSON pointer"},
    {"MissingOp", R"({})", R"([{"path":"/a"}])", nullptr,
     StatusCode::kFailedPrecondition, "missing \"op\""},
    {"MissingPath", R"({})", R"([{"op":"add","value":1}])", nullptr,
     StatusCode::kFailedPrecondition, "missing \"path\""},
    {"MissingFrom", R"({"a":1})", R"([{"op":"move","path":"/b"}])", nullptr,
     StatusCode::kFailedPrecondition, "missing \"from\""},
    {"BadFromPointer", R"({"a":1})",
     R"([{"op":"copy","from":"a","path":"/b"}])", nullptr,
     StatusCode::kFailedPrecondition, "JSON pointer"},
    {"OperationNotAnObject", R"({})", R"(["add"])", nullptr,
     StatusCode::kInvalidArgument, "must be an object"},
    // The body decodes before any operation runs (kube's DecodePatch).
    {"OperationNotAnObjectAfterAFailingOne", R"({})",
     R"([{"op":"remove","path":"/missing"},7])", nullptr,
     StatusCode::kInvalidArgument, "cannot unmarshal number"},
    // null decodes as an operation without an "op".
    {"NullOperation", R"({})", R"([null])", nullptr,
     StatusCode::kFailedPrecondition, "missing \"op\""},
    {"NotAnArray", R"({})", R"({"op":"add"})", nullptr,
     StatusCode::kInvalidArgument, "cannot unmarshal object"},
    // An operation decodes as Go's map[string]*json.RawMessage (evanphx
    // json-patch's Operation): of a member given twice, the last counts.
    {"DuplicatePathLastWins", R"({"data":{"a":"x","b":"y"}})",
     R"([{"op":"replace","path":"/data/a","path":"/data/b","value":"k1"}])",
     R"({"data":{"a":"x","b":"k1"}})"},
    {"DuplicateValueLastWins", R"({"data":{"a":"x"}})",
     R"([{"op":"replace","path":"/data/a","value":"j1","value":"j2"}])",
     R"({"data":{"a":"j2"}})"},
    {"DuplicateOpLastWins", R"({"a":1})",
     R"([{"op":"remove","op":"add","path":"/b","value":2}])",
     R"({"a":1,"b":2})"},
    {"DuplicateFromLastWins", R"({"a":1,"b":2})",
     R"([{"op":"copy","from":"/a","from":"/b","path":"/c"}])",
     R"({"a":1,"b":2,"c":2})"},
};

INSTANTIATE_TEST_SUITE_P(Rfc6902, JsonPatchTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// kube-apiserver's strict decoding of a JSON patch into []jsonPatchOp:
// the texts of its integration test (test/integration/apiserver/
// field_validation_test.go), in document order, each once.
TEST(JsonPatchStrictErrors, NameUnknownAndRepeatedMembers) {
  rapidjson::Document p;
  auto errors = [&](const char* json) {
    EXPECT_TRUE(ParseJson(json, &p).ok()) << json;
    return JsonPatchStrictErrors(p);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(errors(R"([{"op":"add","path":"/a","value":{"k":1}}])"), V{});
  EXPECT_EQ(
      errors(
          R"([{"op":"add","path":"/spec/unknown1","value":"val1","foo":"bar"},
                 {"op":"add","path":"/spec/unknown2","path":"/spec/unknown3","value":"val1"},
                 {"op":"add","path":"/spec/unknownDupe","value":"valDupe"}])"),
      (V{R"(json patch unknown field "[0].foo")",
         R"(json patch duplicate field "[1].path")"}));
  // Names match case-sensitively; an unknown member given twice is named
  // once and its value is not walked; duplicates inside a value are found.
  EXPECT_EQ(
      errors(
          R"([{"op":"test","Path":"/a","Path":"/b","x":{"k":1,"k":2},)"
          R"("value":{"k":[{"m":1,"m":2}],"k":0},"op":"test","from":"/c"}])"),
      (V{R"(json patch unknown field "[0].Path")",
         R"(json patch unknown field "[0].x")",
         R"(json patch duplicate field "[0].value.k[0].m")",
         R"(json patch duplicate field "[0].value.k")",
         R"(json patch duplicate field "[0].op")"}));
  // Elements that are no operation, and bodies that are no list, are left
  // to the decoding proper.
  EXPECT_EQ(errors(R"([null,7,{"op":"remove","op":"remove","path":"/a"}])"),
            V{R"(json patch duplicate field "[2].op")"});
  EXPECT_EQ(errors(R"({"op":"add","op":"add"})"), V{});
}

TEST(JsonPointerTest, ParseAndEscape) {
  auto t = ParseJsonPointer("/a~1b/~0c/0/");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (std::vector<std::string>{"a/b", "~c", "0", ""}));
  EXPECT_TRUE(ParseJsonPointer("")->empty());
  EXPECT_FALSE(ParseJsonPointer("/a~2").ok());
  EXPECT_EQ(EscapeJsonPointerToken("a/b~c"), "a~1b~0c");
}

}  // namespace
}  // namespace kplane::patch

namespace kplane::patch {
namespace {

using kplane::testing::HostileInput;

Status Apply(const std::string& doc_text, const std::string& patch_text,
             const PatchLimits& limits = {}, std::string* out = nullptr) {
  rapidjson::Document doc, patch;
  EXPECT_TRUE(ParseJson(doc_text, &doc).ok());
  EXPECT_TRUE(ParseJson(patch_text, &patch).ok());
  Status st = ApplyJsonPatch(doc, patch, doc.GetAllocator(), limits);
  if (out != nullptr) *out = CanonicalJson(doc);
  return st;
}

std::string Ops(int n, const std::string& op) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + op;
  return s + "]";
}

constexpr char kConfigMap[] =
    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},)"
    R"("data":{"k":"0123456789012345678901234567890123456789"}})";

// The issue's 3 KB patch: copying data into itself 40 times would make
// 2^40 copies; the accumulated copy limit stops it after a few operations.
TEST(JsonPatchLimits, SelfCopyFailsBeforeMemoryGrows) {
  Status st = Apply(kConfigMap, HostileInput("json_patch/self_copy_40.json"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("unable to copy, the accumulated size increase "
                              "of copy is"),
            std::string::npos)
      << st;
  EXPECT_NE(st.message().find("exceeding the limit 3145728"), std::string::npos)
      << st;
  // A few copies are fine.
  std::string out;
  ASSERT_TRUE(Apply(kConfigMap,
                    Ops(3, R"({"op":"copy","from":"/data","path":"/data/d"})"),
                    {}, &out)
                  .ok());
  EXPECT_NE(out.find(R"("d":{"d":{"d":{"k")"), std::string::npos) << out;
}

TEST(JsonPatchLimits, AtMostTenThousandOperations) {
  const std::string op = R"({"op":"add","path":"/x","value":"y"})";
  Status st = Apply(kConfigMap, Ops(10001, op));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kTooLarge);
  EXPECT_EQ(st.message(),
            "The allowed maximum operations in a JSON patch is 10000, got "
            "10001");
  std::string out;
  EXPECT_TRUE(Apply(kConfigMap, Ops(10000, op), {}, &out).ok());
  EXPECT_NE(out.find(R"("x":"y")"), std::string::npos);
}

TEST(JsonPatchLimits, TheDocumentStaysUnderTheSizeLimit) {
  PatchLimits small;
  small.max_bytes = 1000;
  // Adding a 100-byte value under new keys: the 10th addition passes 1000
  // bytes.
  std::string patch = "[";
  for (int i = 0; i < 20; ++i) {
    patch += std::string(i ? "," : "") + R"({"op":"add","path":"/k)" +
             std::to_string(i) + R"(","value":")" + std::string(100, 'v') +
             "\"}";
  }
  patch += "]";
  Status st = Apply("{}", patch, small);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kTooLarge);
  EXPECT_EQ(st.message(), "the patched object would be larger than 1000 bytes");
  // Replacing and removing give the room back.
  std::string churn = "[";
  for (int i = 0; i < 20; ++i) {
    churn += std::string(i ? "," : "") +
             R"({"op":"add","path":"/k","value":")" + std::string(100, 'v') +
             R"("},{"op":"replace","path":"/k","value":")" +
             std::string(100, 'w') + R"("},{"op":"remove","path":"/k"})";
  }
  churn += "]";
  EXPECT_TRUE(Apply("{}", churn, small).ok());
}

TEST(JsonPatchLimits, ValuesStayWithinTheDepthLimit) {
  PatchLimits shallow;
  shallow.max_depth = 5;
  // /a/b holds a 3-deep value: 2 + 3 = 5 levels.
  EXPECT_TRUE(Apply(R"({"a":{}})",
                    R"([{"op":"add","path":"/a/b","value":[[[1]]]}])", shallow)
                  .ok());
  Status st =
      Apply(R"({"a":{}})", R"([{"op":"add","path":"/a/b","value":[[[[1]]]]}])",
            shallow);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "exceeded max depth of 5");
  // Copying and moving a value deeper count too.
  st = Apply(R"({"a":[[[1]]],"b":{"c":{}}})",
             R"([{"op":"copy","from":"/a","path":"/b/c/d"}])", shallow);
  EXPECT_EQ(st.message(), "exceeded max depth of 5");
  st = Apply(R"({"a":[[[1]]],"b":{"c":{}}})",
             R"([{"op":"move","from":"/a","path":"/b/c/d"}])", shallow);
  EXPECT_EQ(st.message(), "exceeded max depth of 5");
  EXPECT_TRUE(Apply(R"({"a":[[[1]]],"b":{"c":{}}})",
                    R"([{"op":"move","from":"/a","path":"/b/d"}])", shallow)
                  .ok());
}

}  // namespace
}  // namespace kplane::patch
