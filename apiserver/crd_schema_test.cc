// CrdSchema (crd_schema.h): each validation rule with kube's message, the
// structural rules CRD creation enforces, pruning and defaulting.
#include "apiserver/crd_schema.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <random>
#include <string>
#include <vector>

#include "base/json.h"

namespace kplane::apiserver {
namespace {

using validation::Path;

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document doc;
  json::ParseDom<rapidjson::kParseFullPrecisionFlag>(text, &doc);
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::vector<std::string> Errors(const FieldErrors& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.Error());
  return out;
}

constexpr char kSchema[] = R"({"type":"object","properties":{
 "spec":{"type":"object","required":["name"],"properties":{
   "name":{"type":"string","minLength":3,"maxLength":8,"pattern":"^[a-z]+$"},
   "replicas":{"type":"integer","format":"int32","minimum":1,"maximum":10,
               "default":1},
   "ratio":{"type":"number","minimum":0,"exclusiveMinimum":true,
            "maximum":1,"exclusiveMaximum":true,"multipleOf":0.25},
   "color":{"type":"string","enum":["red","blue"]},
   "when":{"type":"string","format":"date-time"},
   "day":{"type":"string","format":"date"},
   "id":{"type":"string","format":"uuid"},
   "data":{"type":"string","format":"byte"},
   "addr":{"type":"string","format":"ipv4"},
   "port":{"x-kubernetes-int-or-string":true},
   "tags":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string"},
           "x-kubernetes-list-type":"set"},
   "ports":{"type":"array","x-kubernetes-list-type":"map",
            "x-kubernetes-list-map-keys":["name"],
            "items":{"type":"object","properties":{
              "name":{"type":"string"},"port":{"type":"integer"}}}},
   "labels":{"type":"object","minProperties":1,"maxProperties":2,
             "additionalProperties":{"type":"string"}},
   "note":{"type":"string","nullable":true},
   "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
           "properties":{"known":{"type":"object",
                                  "properties":{"a":{"type":"string"}}}}},
   "template":{"type":"object","x-kubernetes-embedded-resource":true,
               "x-kubernetes-preserve-unknown-fields":true},
   "enabled":{"type":"boolean"},
   "mode":{"type":"string","default":"fast"},
   "limits":{"type":"object","default":{},"properties":{
     "cpu":{"type":"string","default":"1"}}}
 }},
 "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}})";

std::shared_ptr<const CrdSchema> TestSchema() {
  FieldErrors errs;
  auto s = CrdSchema::Build(Json(kSchema), Path("openAPIV3Schema"), &errs);
  EXPECT_TRUE(errs.empty()) << Errors(errs)[0];
  return s;
}

struct ValidationCase {
  std::string name;
  std::string spec;  // the members of spec besides name:"abc"
  std::vector<std::string> want;
};

TEST(CrdSchemaTest, ValidationRulesWithKubesMessages) {
  const auto schema = TestSchema();
  const std::vector<ValidationCase> cases = {
      {"valid",
       R"("replicas":3,"color":"red","when":"2024-01-02T03:04:05Z",
                  "day":"2024-02-29","id":"123e4567-e89b-12d3-a456-426614174000",
                  "data":"aGk=","addr":"10.0.0.1","port":"http","tags":["a","b"],
                  "ratio":0.5,"labels":{"a":"b"},"note":null,
                  "free":{"x":{"y":1}},"enabled":true,
                  "template":{"apiVersion":"v1","kind":"Pod"})",
       {}},
      {"type",
       R"("replicas":"three")",
       {R"(spec.replicas: Invalid value: "string": spec.replicas in body must )"
        R"(be of type integer: "string")"}},
      {"integral number is an integer", R"("replicas":2.0)", {}},
      {"boolean type",
       R"("enabled":"yes")",
       {R"(spec.enabled: Invalid value: "string": spec.enabled in body must )"
        R"(be of type boolean: "string")"}},
      {"not nullable",
       R"("enabled":null)",
       {R"(spec.enabled: Invalid value: "null": spec.enabled in body must be )"
        R"(of type boolean: "null")"}},
      {"required", R"("name":null)", {}},  // replaced below: name missing
      {"enum",
       R"("color":"pink")",
       {R"(spec.color: Unsupported value: "pink": supported values: "red", )"
        R"("blue")"}},
      {"maximum",
       R"("replicas":11)",
       {"spec.replicas: Invalid value: 11: spec.replicas in body should be "
        "less than or equal to 10"}},
      {"minimum",
       R"("replicas":0)",
       {"spec.replicas: Invalid value: 0: spec.replicas in body should be "
        "greater than or equal to 1"}},
      {"exclusiveMaximum",
       R"("ratio":1)",
       {"spec.ratio: Invalid value: 1: spec.ratio in body should be less "
        "than 1"}},
      {"exclusiveMinimum",
       R"("ratio":0)",
       {"spec.ratio: Invalid value: 0: spec.ratio in body should be greater "
        "than 0"}},
      {"multipleOf",
       R"("ratio":0.3)",
       {"spec.ratio: Invalid value: 0.3: spec.ratio in body should be a "
        "multiple of 0.25"}},
      {"int32",
       R"("replicas":3000000000)",
       {R"(spec.replicas: Invalid value: 3000000000: spec.replicas in body )"
        R"(must be of type int32: "3000000000")",
        "spec.replicas: Invalid value: 3000000000: spec.replicas in body "
        "should be less than or equal to 10"}},
      {"maxLength",
       R"("name":"abcdefghi")",
       {"spec.name: Too long: may not be more than 8 bytes"}},
      {"minLength",
       R"("name":"ab")",
       {R"(spec.name: Invalid value: "ab": spec.name in body should be at )"
        R"(least 3 chars long)"}},
      {"pattern",
       R"("name":"ABC")",
       {R"(spec.name: Invalid value: "ABC": spec.name in body should match )"
        R"('^[a-z]+$')"}},
      {"date-time",
       R"("when":"yesterday")",
       {R"(spec.when: Invalid value: "yesterday": spec.when in body must be )"
        R"(of type date-time: "yesterday")"}},
      {"date",
       R"("day":"2023-02-29")",
       {R"(spec.day: Invalid value: "2023-02-29": spec.day in body must be )"
        R"(of type date: "2023-02-29")"}},
      {"uuid",
       R"("id":"nope")",
       {R"(spec.id: Invalid value: "nope": spec.id in body must be of type )"
        R"(uuid: "nope")"}},
      {"byte",
       R"("data":"***")",
       {R"(spec.data: Invalid value: "***": spec.data in body must be of type )"
        R"(byte: "***")"}},
      {"ipv4",
       R"("addr":"10.0.0.256")",
       {R"(spec.addr: Invalid value: "10.0.0.256": spec.addr in body must be )"
        R"(of type ipv4: "10.0.0.256")"}},
      {"int-or-string int", R"("port":8080)", {}},
      {"int-or-string bad",
       R"("port":true)",
       {R"(spec.port: Invalid value: "boolean": spec.port in body must be of )"
        R"(type integer or string: "boolean")"}},
      {"maxItems",
       R"("tags":["a","b","c","d"])",
       {"spec.tags: Too many: 4: must have at most 3 items"}},
      {"minItems",
       R"("tags":[])",
       {"spec.tags: Invalid value: 0: spec.tags in body should have at least "
        "1 items"}},
      {"items type",
       R"("tags":["a",1])",
       {R"(spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must )"
        R"(be of type string: "integer")"}},
      {"list-type set",
       R"("tags":["a","b","a"])",
       {R"(spec.tags[2]: Duplicate value: "a")"}},
      {"list-type map",
       R"("ports":[{"name":"h","port":1},{"name":"h","port":2}])",
       {R"(spec.ports[1]: Duplicate value: map[string]interface {}{"name":"h"})"}},
      {"maxProperties",
       R"("labels":{"a":"1","b":"2","c":"3"})",
       {"spec.labels: Too many: 3: must have at most 2 items"}},
      {"minProperties",
       R"("labels":{})",
       {"spec.labels: Invalid value: 0: spec.labels in body should have at "
        "least 1 properties"}},
      {"additionalProperties",
       R"("labels":{"a":1})",
       {R"(spec.labels.a: Invalid value: "integer": spec.labels.a in body )"
        R"(must be of type string: "integer")"}},
      {"nullable", R"("note":null)", {}},
      {"preserve-unknown-fields validates known",
       R"("free":{"known":{"a":1}})",
       {R"(spec.free.known.a: Invalid value: "integer": spec.free.known.a in )"
        R"(body must be of type string: "integer")"}},
      {"embedded resource",
       R"("template":{"metadata":{}})",
       {"spec.template.kind: Required value: must not be empty",
        "spec.template.apiVersion: Required value: must not be empty"}},
  };
  for (const ValidationCase& c : cases) {
    if (c.name == "required") continue;
    rapidjson::Document obj = Json(R"({"spec":{"name":"abc",)" + c.spec + "}}");
    EXPECT_EQ(Errors(schema->Validate(obj)), c.want) << c.name;
  }
  rapidjson::Document missing = Json(R"({"spec":{"replicas":1}})");
  EXPECT_EQ(Errors(schema->Validate(missing)),
            std::vector<std::string>{"spec.name: Required value"});
  rapidjson::Document status = Json(R"({"spec":{"name":"abc"},"status":[]})");
  EXPECT_EQ(Errors(schema->Validate(status)),
            std::vector<std::string>{
                R"(status: Invalid value: "array": status in body must be of )"
                R"(type object: "array")"});
}

// kube validates the whole object: the schema's constraints on
// metadata.name and generateName apply, ahead of the content's.
TEST(CrdSchemaTest, ValidatesTheMetadataNamesItConstrains) {
  const auto schema = CrdSchema::Build(
      Json(R"({"type":"object","properties":{)"
           R"("metadata":{"type":"object","properties":{)"
           R"("name":{"type":"string","maxLength":5,"pattern":"^[a-z]+$"},)"
           R"("generateName":{"type":"string","maxLength":3}}},)"
           R"("spec":{"type":"object","properties":{)"
           R"("size":{"type":"integer","minimum":1}}}}})"),
      Path("openAPIV3Schema"), nullptr);
  objects::Unstructured u;
  u.mutable_metadata()->set_name("toolong-name-1");
  u.mutable_metadata()->set_generatename("long-");
  u.set_content(R"({"spec":{"size":0}})");
  EXPECT_EQ(Errors(schema->Validate(u)),
            (std::vector<std::string>{
                "metadata.name: Too long: may not be more than 5 bytes",
                "metadata.name: Invalid value: \"toolong-name-1\": "
                "metadata.name in body should match '^[a-z]+$'",
                "metadata.generateName: Too long: may not be more than 3 "
                "bytes",
                "spec.size: Invalid value: 0: spec.size in body should be "
                "greater than or equal to 1"}));
  u.mutable_metadata()->set_name("abc");
  u.mutable_metadata()->clear_generatename();
  u.set_content(R"({"spec":{"size":1}})");
  EXPECT_TRUE(schema->Validate(u).empty());
}

TEST(CrdSchemaTest, PrunesUnknownFieldsAndReportsTheirPaths) {
  const auto schema = TestSchema();
  rapidjson::Document obj = Json(
      R"({"spec":{"name":"abc","bogus":1,"ports":[{"name":"a","x":2}],)"
      R"("free":{"kept":1,"known":{"a":"b","gone":3}},)"
      R"("labels":{"k":"v"},"mode":"slow","limits":{"cpu":"2"},)"
      R"("template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},)"
      R"("spec":{"any":1}}},"extra":true})");
  const std::vector<std::string> unknown =
      schema->PruneAndDefault(&obj, obj.GetAllocator());
  EXPECT_EQ(unknown,
            (std::vector<std::string>{"spec.bogus", "spec.ports[0].x",
                                      "spec.free.known.gone", "extra"}));
  EXPECT_EQ(Compact(obj),
            R"({"spec":{"name":"abc","ports":[{"name":"a"}],)"
            R"("free":{"kept":1,"known":{"a":"b"}},"labels":{"k":"v"},)"
            R"("mode":"slow","limits":{"cpu":"2"},)"
            R"("template":{"apiVersion":"v1","kind":"Pod",)"
            R"("metadata":{"name":"p"},"spec":{"any":1}},"replicas":1}})");
}

// Many unknown members go in one pass, the known ones kept in order (each
// erased in place shifted all after it: 280,000 of them took minutes).
TEST(CrdSchemaTest, PrunesManyUnknownMembersInOnePass) {
  const auto schema = TestSchema();
  std::string json = R"({"spec":{"name":"abc",)";
  for (int i = 0; i < 200000; ++i) {
    json += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  }
  json += R"("mode":"slow"}})";
  rapidjson::Document obj = Json(json);
  const std::vector<std::string> unknown =
      schema->PruneAndDefault(&obj, obj.GetAllocator());
  ASSERT_EQ(unknown.size(), 200000u);
  EXPECT_EQ(unknown.front(), "spec.k0");
  EXPECT_EQ(unknown.back(), "spec.k199999");
  EXPECT_EQ(Compact(obj),
            R"({"spec":{"name":"abc","mode":"slow","limits":{"cpu":"1"},)"
            R"("replicas":1}})");  // with the schema's defaults
}

TEST(CrdSchemaTest, DefaultsAbsentMembersAndNonNullableNulls) {
  const auto schema = TestSchema();
  rapidjson::Document obj =
      Json(R"({"spec":{"name":"abc","mode":null,"enabled":null,"note":null}})");
  EXPECT_TRUE(schema->PruneAndDefault(&obj, obj.GetAllocator()).empty());
  // mode: null defaulted; enabled: null dropped; note is nullable; limits
  // defaulted to {} and then its cpu default applied inside.
  EXPECT_EQ(Compact(obj), R"({"spec":{"name":"abc","mode":"fast","note":null,)"
                          R"("limits":{"cpu":"1"},"replicas":1}})");
  EXPECT_TRUE(schema->Validate(obj).empty());
  // The Unstructured form leaves apiVersion/kind/metadata alone.
  objects::Unstructured u;
  u.set_apiversion("example.com/v1");
  u.mutable_metadata()->set_name("w");
  u.set_content(R"({"spec":{"name":"abc"},"junk":1})");
  EXPECT_EQ(schema->PruneAndDefault(&u), std::vector<std::string>{"junk"});
  EXPECT_EQ(u.content(),
            R"({"spec":{"name":"abc","limits":{"cpu":"1"},"mode":"fast",)"
            R"("replicas":1}})");
  EXPECT_EQ(u.metadata().name(), "w");
}

struct StructuralCase {
  std::string name;
  std::string schema;
  std::vector<std::string> want;
};

TEST(CrdSchemaTest, RefusesNonStructuralSchemasWithKubesMessages) {
  const std::string p = "spec.versions[0].schema.openAPIV3Schema";
  const std::vector<StructuralCase> cases = {
      {"missing type",
       R"({"type":"object","properties":{"spec":{}}})",
       {p + ".properties[spec].type: Required value: must not be empty for "
            "specified object fields"}},
      {"missing items type",
       R"({"type":"object","properties":{"l":{"type":"array","items":{}}}})",
       {p + ".properties[l].items.type: Required value: must not be empty "
            "for specified array items"}},
      {"preserve without type is fine",
       R"({"type":"object","properties":{"x":{"x-kubernetes-preserve-unknown-fields":true}}})",
       {}},
      {"metadata",
       R"({"type":"object","properties":{"metadata":{"type":"object",)"
       R"("properties":{"labels":{"type":"object"}}}}})",
       {p + ".properties[metadata]: Forbidden: must not specify anything "
            "other than name and generateName, but metadata is implicitly "
            "specified"}},
      {"metadata name is fine",
       R"({"type":"object","properties":{"metadata":{"type":"object",)"
       R"("properties":{"name":{"type":"string","maxLength":10}}}}})",
       {}},
      {"bad type",
       R"({"type":"object","properties":{"x":{"type":"float"}}})",
       {p + R"(.properties[x].type: Unsupported value: "float": supported )"
            R"(values: "array", "boolean", "integer", "number", "object", )"
            R"("string")"}},
      {"properties and additionalProperties",
       R"({"type":"object","properties":{"x":{"type":"object",)"
       R"("properties":{"a":{"type":"string"}},)"
       R"("additionalProperties":{"type":"string"}}}})",
       {p + ".properties[x].additionalProperties: Forbidden: "
            "additionalProperties and properties are mutual exclusive"}},
      {"uniqueItems",
       R"({"type":"object","properties":{"x":{"type":"array","uniqueItems":true,)"
       R"("items":{"type":"string"}}}})",
       {p + ".properties[x].uniqueItems: Forbidden: uniqueItems cannot be set "
            "to true since the runtime complexity becomes quadratic"}},
      {"preserve false",
       R"({"type":"object","x-kubernetes-preserve-unknown-fields":false})",
       {p + ".x-kubernetes-preserve-unknown-fields: Invalid value: false: "
            "must be true or undefined"}},
      {"list map keys",
       R"({"type":"object","properties":{"x":{"type":"array",)"
       R"("x-kubernetes-list-type":"map","items":{"type":"object"}}}})",
       {p + ".properties[x].x-kubernetes-list-map-keys: Required value: must "
            "not be empty if x-kubernetes-list-type is map"}},
      {"bad pattern",
       R"({"type":"object","properties":{"x":{"type":"string","pattern":"a("}}})",
       {p + R"(.properties[x].pattern: Invalid value: "a(": must be a valid )"
            R"(regular expression, but isn't: missing ): a()"}},
      {"bad default",
       R"({"type":"object","properties":{"x":{"type":"integer","default":"a"}}})",
       {p + R"(.properties[x].default: Invalid value: "string": )" + p +
        R"(.properties[x].default in body must be of type integer: "string")"}},
      {"default with unknown fields",
       R"({"type":"object","properties":{"x":{"type":"object","default":{"a":1}}}})",
       {p + R"(.properties[x].default: Invalid value: {"a":1}: must not have )"
            R"(unknown fields, got: a)"}},
  };
  for (const StructuralCase& c : cases) {
    FieldErrors errs;
    CrdSchema::Build(Json(c.schema), Path(p), &errs);
    EXPECT_EQ(Errors(errs), c.want) << c.name;
  }
}

TEST(CrdSchemaTest, DepthAndSizeAreBounded) {
  std::string deep = R"({"type":"object"})";
  for (int i = 0; i < kMaxCrdSchemaDepth + 5; ++i) {
    deep = R"({"type":"object","properties":{"a":)" + deep + "}}";
  }
  FieldErrors errs;
  auto s = CrdSchema::Build(Json(deep), Path("s"), &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].Error().find("must not be nested deeper than 64 levels "
                                 "(kplane's limit)"),
            std::string::npos)
      << errs[0].Error();
  // An object as deep as the schema validates and prunes without trouble.
  std::string obj = "1";
  for (int i = 0; i < kMaxCrdSchemaDepth + 10; ++i)
    obj = R"({"a":)" + obj + "}";
  rapidjson::Document doc = Json(obj);
  s->PruneAndDefault(&doc, doc.GetAllocator());
  s->Validate(doc);

  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i <= kMaxCrdSchemaNodes; ++i) {
    wide += (i ? "," : "") + std::string("\"p") + std::to_string(i) +
            R"(":{"type":"string"})";
  }
  wide += "}}";
  errs.clear();
  CrdSchema::Build(Json(wide), Path("s"), &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].Error().find("nested schemas (kplane's limit)"),
            std::string::npos);
}

// The compiled patterns of one schema are bounded together: 75 patterns
// of ~60,000 RE2 instructions each (`\pL{50}`, ~0.5 MB apiece) pass the
// bound and are refused once, at the first pattern past it; the same
// number of ordinary patterns is fine.
TEST(CrdSchemaTest, PatternsAreBoundedTogether) {
  // Each property's pattern is `pattern` and, when `distinct`, a suffix
  // of its own.
  auto schema = [](const std::string& pattern, int n, bool distinct) {
    std::string s = R"({"type":"object","properties":{)";
    for (int i = 0; i < n; ++i) {
      s += (i ? "," : "") + std::string("\"p") + std::to_string(i) +
           R"(":{"type":"string","pattern":")" + pattern +
           (distinct ? std::to_string(i) : "") + R"("})";
    }
    return s + "}}";
  };
  FieldErrors errs;
  CrdSchema::Build(Json(schema(R"(\\pL{50})", 75, true)), Path("s"), &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].Error().find("patterns would take more than 64 MiB once "
                                 "compiled (kplane's limit)"),
            std::string::npos)
      << errs[0].Error();
  errs.clear();
  auto ok = CrdSchema::Build(
      Json(schema(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)", 200, true)), Path("s"),
      &errs);
  EXPECT_TRUE(errs.empty()) << errs[0].Error();
  ASSERT_NE(ok, nullptr);
  // A pattern repeated is compiled and counted once: 2,000 fields of the
  // same pattern (the 75 above took more than the bound).
  auto repeated = CrdSchema::Build(Json(schema(R"(\\pL{50})", 2000, false)),
                                   Path("s"), &errs);
  EXPECT_TRUE(errs.empty()) << errs[0].Error();
  ASSERT_NE(repeated, nullptr);
  const FieldErrors found = repeated->Validate(Json(R"({"p7":"x"})"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].Error().find("p7 in body should match"), std::string::npos)
      << found[0].Error();
}

// Matching grows RE2's DFA caches (states it has met); each pattern's are
// bounded with its program, so values that drive patterns with many DFA
// states through them take little memory. Before the bound each could
// grow to 1 MiB: these 40 patterns took ~20 MB (measured), now ~2 MB.
TEST(CrdSchemaTest, MatchingMemoryIsBoundedWithThePatterns) {
  constexpr int kPatterns = 40;
  std::string s = R"({"type":"object","properties":{)";
  for (int i = 0; i < kPatterns; ++i) {
    // 2^12 DFA states: the last 12 letters read.
    s += (i ? "," : "") + std::string("\"p") + std::to_string(i) +
         R"(":{"type":"string","pattern":"[ab]*a[ab]{11})" +
         std::string(1, static_cast<char>('c' + i % 20)) + R"("})";
  }
  s += "}}";
  FieldErrors errs;
  auto schema = CrdSchema::Build(Json(s), Path("s"), &errs);
  ASSERT_TRUE(errs.empty()) << errs[0].Error();
  ASSERT_NE(schema, nullptr);
  std::mt19937 random(7);
  std::string object = "{";
  for (int i = 0; i < kPatterns; ++i) {
    object += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":\"";
    for (int j = 0; j < 20000; ++j) object += "ab"[random() % 2];
    // Matches only at its end.
    object +=
        "abbbbbbbbbbb" + std::string(1, static_cast<char>('c' + i % 20)) + "\"";
  }
  object += "}";
  const rapidjson::Document value = Json(object);
  const size_t before = mallinfo2().uordblks;
  {
    const FieldErrors found = schema->Validate(value);
    EXPECT_TRUE(found.empty()) << found[0].Error();
  }
  const size_t grown = mallinfo2().uordblks - before;
  EXPECT_LT(grown, size_t{kPatterns} * (kPatternDfaBytes + (32 << 10)))
      << grown << " bytes for " << kPatterns << " patterns";
}

}  // namespace
}  // namespace kplane::apiserver
