#include "objects/codec.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/json.h"
#include "base/testing/hostile_inputs.h"
#include "objects/test_util.h"
#include "objects/time.h"
#include "objects/types.h"
#include "objects/unstructured.h"

namespace kplane::objects {
namespace {

using google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::JsonEqual;
using testing::ReadFile;

template <typename T>
T DecodeOk(std::string_view json, DecodeResult* result = nullptr) {
  T msg;
  StatusOr<DecodeResult> r = DecodeJson(json, &msg);
  EXPECT_TRUE(r.ok()) << r.status() << " for " << json;
  if (r.ok() && result != nullptr) *result = *r;
  return msg;
}

template <typename T>
Status DecodeError(std::string_view json) {
  T msg;
  StatusOr<DecodeResult> r = DecodeJson(json, &msg);
  EXPECT_FALSE(r.ok()) << "decoded: " << json;
  return r.ok() ? Status::Ok() : r.status();
}

// --- unknown and duplicate fields ------------------------------------------

TEST(CodecDecode, ReportsUnknownFieldsWithJsonPaths) {
  DecodeResult r;
  corev1::Pod pod = DecodeOk<corev1::Pod>(
      R"({"kind":"Pod","apiVersion":"v1",
          "metadata":{"name":"p","bogus":1},
          "spec":{"containers":[{"name":"a","image":"x"},
                                {"name":"b","imagee":"y","ports":[{"containerPort":1,"nope":[1,{"x":2}]}]}],
                  "foo":{"bar":[1,2]}},
          "extra":null})",
      &r);
  EXPECT_THAT(
      r.unknown_fields,
      ElementsAre("metadata.bogus", "spec.containers[1].imagee",
                  "spec.containers[1].ports[0].nope", "spec.foo", "extra"));
  EXPECT_TRUE(r.duplicate_fields.empty());
  // Known fields around the unknown ones are still decoded.
  EXPECT_EQ(pod.metadata().name(), "p");
  ASSERT_EQ(pod.spec().containers_size(), 2);
  EXPECT_EQ(pod.spec().containers(1).name(), "b");
  EXPECT_EQ(pod.spec().containers(1).ports(0).containerport(), 1);
  EXPECT_FALSE(r.strict_ok());
  EXPECT_EQ(r.Warnings()[1], "unknown field \"spec.containers[1].imagee\"");
  EXPECT_EQ(r.StrictErrorMessage(),
            "strict decoding error: unknown field \"metadata.bogus\", unknown "
            "field \"spec.containers[1].imagee\", unknown field "
            "\"spec.containers[1].ports[0].nope\", unknown field \"spec.foo\", "
            "unknown field \"extra\"");
}

// Field names are quoted as Go's %q does: these texts become Warning
// headers, which must never carry a line break.
TEST(CodecDecode, WarningsQuoteControlCharactersInFieldNames) {
  DecodeResult r;
  DecodeOk<corev1::ConfigMap>(
      R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},
          "a\r\nX-Injected: yes":1,"b\"\u0001":2})",
      &r);
  EXPECT_THAT(r.Warnings(),
              ElementsAre(R"(unknown field "a\r\nX-Injected: yes")",
                          R"(unknown field "b\"\x01")"));
}

TEST(CodecDecode, ReportsDuplicateFieldsAndKeepsTheLastValue) {
  DecodeResult r;
  corev1::Pod pod = DecodeOk<corev1::Pod>(
      R"({"metadata":{"name":"a","labels":{"x":"1","y":"2","x":"3"},"name":"b"},
          "spec":{"containers":[{"name":"c1"}],"containers":[{"name":"c2"}]}})",
      &r);
  EXPECT_THAT(
      r.duplicate_fields,
      ElementsAre("metadata.labels.x", "metadata.name", "spec.containers"));
  EXPECT_EQ(pod.metadata().name(), "b");
  EXPECT_EQ(pod.metadata().labels().at("x"), "3");
  EXPECT_EQ(pod.metadata().labels().size(), 2u);
  // Go replaces a slice on a repeated key rather than appending.
  ASSERT_EQ(pod.spec().containers_size(), 1);
  EXPECT_EQ(pod.spec().containers(0).name(), "c2");
  EXPECT_EQ(r.Warnings()[0], "duplicate field \"metadata.labels.x\"");
}

TEST(CodecDecode, UnknownFieldReportsAreDeduplicatedAndCapped) {
  std::string json = "{\"metadata\":{";
  for (int i = 0; i < 150; ++i) {
    json += "\"u" + std::to_string(i) + "\":1,";
  }
  json += "\"u0\":2}}";
  DecodeResult r;
  DecodeOk<corev1::Pod>(json, &r);
  EXPECT_EQ(r.unknown_fields.size(), 100u);
  EXPECT_EQ(r.unknown_fields.front(), "metadata.u0");
}

TEST(CodecDecode, TypeMetaIsAcceptedOnKindsOnly) {
  DecodeResult r;
  corev1::PodList list = DecodeOk<corev1::PodList>(
      R"({"kind":"PodList","apiVersion":"v1","metadata":{},
          "items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"},
                    "spec":{"kind":"oops"}}]})",
      &r);
  EXPECT_EQ(r.type_meta.kind, "PodList");
  EXPECT_EQ(r.type_meta.api_version, "v1");
  EXPECT_EQ(list.items(0).metadata().name(), "a");
  // PodSpec embeds no TypeMeta in Go, so "kind" there is unknown.
  EXPECT_THAT(r.unknown_fields, ElementsAre("items[0].spec.kind"));
  EXPECT_THAT(DecodeError<corev1::Pod>(R"({"kind":3})").message(),
              HasSubstr("kind: expected string, got number 3"));
}

// --- type errors -------------------------------------------------------------

TEST(CodecDecode, TypeErrorsNameThePath) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"spec":{"replicas":"3"}})",
       "spec.replicas: expected integer, got string \"3\""},
      {R"({"spec":{"replicas":1.5}})",
       "spec.replicas: expected integer, got number 1.5"},
      // Go's encoding/json refuses 1.0 and 1e3 for integers too.
      {R"({"spec":{"replicas":1.0}})",
       "spec.replicas: expected integer, got number 1.0"},
      {R"({"spec":{"replicas":1e3}})",
       "spec.replicas: expected integer, got number 1e3"},
      {R"({"spec":{"replicas":3000000000}})",
       "spec.replicas: number 3000000000 overflows int32"},
      {R"({"spec":{"paused":"true"}})",
       "spec.paused: expected bool, got string \"true\""},
      {R"({"spec":{"template":{"spec":{"containers":{}}}}})",
       "spec.template.spec.containers: expected array, got object"},
      {R"({"spec":{"template":{"spec":{"containers":[{"name":7}]}}}})",
       "spec.template.spec.containers[0].name: expected string, got number 7"},
      {R"({"metadata":{"labels":{"app":1}}})",
       "metadata.labels.app: expected string, got number 1"},
      {R"({"metadata":{"labels":[]}})",
       "metadata.labels: expected object, got array"},
      {R"({"metadata":"x"})", "metadata: expected object, got string \"x\""},
      {R"({"metadata":{"creationTimestamp":"yesterday"}})",
       "metadata.creationTimestamp: parsing time \"yesterday\" as RFC 3339"},
      {R"({"metadata":{"creationTimestamp":5}})",
       "metadata.creationTimestamp: expected string, got number 5"},
      {R"({"spec":{"strategy":{"rollingUpdate":{"maxSurge":true}}}})",
       "spec.strategy.rollingUpdate.maxSurge: expected integer, got bool true"},
      {R"({"spec":{"strategy":{"rollingUpdate":{"maxSurge":{}}}}})",
       "spec.strategy.rollingUpdate.maxSurge: expected string, got object"},
      {R"([])", "expected object, got array"},
      {R"("x")", "expected object, got string \"x\""},
  };
  for (const Case& c : cases) {
    Status s = DecodeError<appsv1::Deployment>(c.json);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.message) << c.json;
  }
}

TEST(CodecDecode, MalformedJsonIsAnError) {
  for (const char* bad : {"", "{", R"({"a":})", R"({} {})", R"({"a":1,})"}) {
    Status s = DecodeError<corev1::Pod>(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("invalid JSON")) << bad;
  }
}

TEST(CodecDecode, NulBytesAreMalformed) {
  Status s = DecodeError<corev1::Pod>(std::string_view("{}\0{}", 5));
  EXPECT_THAT(s.message(), HasSubstr("invalid JSON"));
  s = DecodeError<corev1::Pod>(
      std::string_view("{\"metadata\":{\"name\":\"a\0b\"}}", 28));
  EXPECT_THAT(s.message(), HasSubstr("invalid JSON"));
}

TEST(CodecDecode, StringsMustBeUtf8) {
  // Valid: ASCII, 2-, 3- and 4-byte sequences, also past an 8-byte chunk.
  corev1::Pod pod = DecodeOk<corev1::Pod>(
      "{\"metadata\":{\"name\":"
      "\"abcdefgh\xc3\xa9\xe4\xb8\x96\xf0\x9f\x98\x80\"}}");
  EXPECT_EQ(pod.metadata().name(),
            "abcdefgh\xc3\xa9\xe4\xb8\x96\xf0\x9f\x98\x80");
  for (const char* bad : {"\xff", "abcdefgh\x80", "\xc0\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "\xe4\xb8"}) {
    Status s = DecodeError<corev1::Pod>(
        std::string("{\"metadata\":{\"name\":\"") + bad + "\"}}");
    EXPECT_THAT(s.message(), HasSubstr("metadata.name: invalid UTF-8")) << bad;
    s = DecodeError<corev1::Pod>(std::string("{\"") + bad + "\":1}");
    EXPECT_THAT(s.message(), HasSubstr("invalid UTF-8 in member name"));
  }
}

TEST(CodecDecode, BytesAreBase64) {
  corev1::Secret s =
      DecodeOk<corev1::Secret>(R"({"data":{"k":"AAEC/w==","e":""}})");
  EXPECT_EQ(s.data().at("k"), std::string("\x00\x01\x02\xff", 4));
  EXPECT_EQ(s.data().at("e"), "");
  EXPECT_THAT(DecodeError<corev1::Secret>(R"({"data":{"k":"!!"}})").message(),
              HasSubstr("data.k: illegal base64 data"));
  EXPECT_EQ(
      EncodeJson(s),
      R"({"metadata":{"creationTimestamp":null},"data":{"e":"","k":"AAEC/w=="}})");
}

// --- nulls, numbers, special types ----------------------------------------

TEST(CodecDecode, NullClearsAField) {
  corev1::Pod pod = DecodeOk<corev1::Pod>(
      R"({"metadata":{"name":"p","labels":null,"deletionTimestamp":null,
                      "creationTimestamp":null,"finalizers":null},
          "spec":null,"status":null})");
  EXPECT_FALSE(pod.metadata().has_deletiontimestamp());
  EXPECT_FALSE(pod.metadata().has_creationtimestamp());
  EXPECT_FALSE(pod.has_spec());
  EXPECT_EQ(pod.metadata().labels_size(), 0);
  // Zero values in lists and maps, as Go decodes them.
  corev1::Container c =
      DecodeOk<corev1::Container>(R"({"args":["a",null],"ports":[null]})");
  EXPECT_THAT(c.args(), ElementsAre("a", ""));
  ASSERT_EQ(c.ports_size(), 1);
  EXPECT_EQ(c.ports(0).containerport(), 0);
}

TEST(CodecDecode, Int64KeepsFullPrecision) {
  corev1::Pod pod = DecodeOk<corev1::Pod>(
      R"({"metadata":{"generation":9007199254740993},
          "spec":{"activeDeadlineSeconds":-9223372036854775808}})");
  EXPECT_EQ(pod.metadata().generation(), 9007199254740993);
  EXPECT_EQ(pod.spec().activedeadlineseconds(), INT64_MIN);
  std::string out = EncodeJson(pod);
  EXPECT_THAT(out, HasSubstr(R"("generation":9007199254740993)"));
  EXPECT_THAT(out,
              HasSubstr(R"("activeDeadlineSeconds":-9223372036854775808)"));
  EXPECT_THAT(DecodeError<corev1::Pod>(
                  R"({"metadata":{"generation":9223372036854775808}})")
                  .message(),
              HasSubstr("overflows int64"));
}

TEST(CodecTime, RoundTripsAndNormalisesToUtc) {
  corev1::Pod pod = DecodeOk<corev1::Pod>(
      R"({"metadata":{"creationTimestamp":"2026-11-29T10:37:42.987+02:00"}})");
  EXPECT_EQ(pod.metadata().creationtimestamp().seconds(), 1795941462);
  EXPECT_EQ(pod.metadata().creationtimestamp().nanos(), 0);
  EXPECT_THAT(EncodeJson(pod),
              HasSubstr(R"("creationTimestamp":"2026-11-29T08:37:42Z")"));
}

TEST(CodecTime, ZeroTimeIsNullAndUnsetPointerTimeIsOmitted) {
  corev1::Pod pod;
  pod.mutable_metadata()->mutable_deletiontimestamp();  // set, but zero
  pod.mutable_status()->mutable_starttime();
  std::string out = EncodeJson(pod);
  EXPECT_THAT(out, HasSubstr(R"("creationTimestamp":null)"));
  EXPECT_THAT(out, HasSubstr(R"("deletionTimestamp":null)"));
  EXPECT_THAT(out, HasSubstr(R"("startTime":null)"));
  // The epoch is a time, not the zero time.
  SetTime(pod.mutable_metadata()->mutable_creationtimestamp(), 0);
  EXPECT_THAT(EncodeJson(pod),
              HasSubstr(R"("creationTimestamp":"1970-01-01T00:00:00Z")"));
}

TEST(CodecTime, MicroTimeKeepsMicroseconds) {
  coordinationv1::Lease lease = DecodeOk<coordinationv1::Lease>(
      R"({"spec":{"renewTime":"2026-11-29T08:37:42.1234567Z",
                  "acquireTime":"2026-11-29T08:37:42Z"}})");
  EXPECT_EQ(lease.spec().renewtime().nanos(), 123456000);
  std::string out = EncodeJson(lease);
  EXPECT_THAT(out, HasSubstr(R"("renewTime":"2026-11-29T08:37:42.123456Z")"));
  EXPECT_THAT(out, HasSubstr(R"("acquireTime":"2026-11-29T08:37:42.000000Z")"));
}

TEST(CodecSpecial, DurationIsAGoDurationString) {
  metav1::Duration d;
  d.set_duration(90'000'000'000);
  EXPECT_EQ(EncodeJson(d), R"("1m30s")");
}

TEST(CodecSpecial, IntOrString) {
  appsv1::Deployment d = DecodeOk<appsv1::Deployment>(
      R"({"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":0}}}})");
  const auto& ru = d.spec().strategy().rollingupdate();
  EXPECT_EQ(ru.maxsurge().type(), 1);
  EXPECT_EQ(ru.maxsurge().strval(), "25%");
  EXPECT_EQ(ru.maxunavailable().type(), 0);
  EXPECT_EQ(ru.maxunavailable().intval(), 0);
  EXPECT_THAT(
      EncodeJson(d),
      HasSubstr(R"("rollingUpdate":{"maxUnavailable":0,"maxSurge":"25%"})"));
  EXPECT_THAT(
      DecodeError<appsv1::Deployment>(
          R"({"spec":{"strategy":{"rollingUpdate":{"maxSurge":4294967296}}}})")
          .message(),
      HasSubstr("overflows int32"));
}

TEST(CodecSpecial, QuantityAcceptsStringsAndNumbers) {
  corev1::ResourceRequirements r = DecodeOk<corev1::ResourceRequirements>(
      R"({"limits":{"cpu":2,"memory":"1Gi","x":0.5,"y":" 100m ","z":1e3}})");
  EXPECT_EQ(r.limits().at("cpu").string(), "2");
  EXPECT_EQ(r.limits().at("memory").string(), "1Gi");
  EXPECT_EQ(r.limits().at("x").string(), "0.5");
  EXPECT_EQ(r.limits().at("y").string(), "100m");
  EXPECT_EQ(r.limits().at("z").string(), "1e3");
  EXPECT_EQ(
      EncodeJson(r),
      R"({"limits":{"cpu":"2","memory":"1Gi","x":"0.5","y":"100m","z":"1e3"}})");
  for (const char* bad :
       {R"({"limits":{"cpu":"abc"}})", R"({"limits":{"cpu":"1Xi"}})",
        R"({"limits":{"cpu":""}})", R"({"limits":{"cpu":true}})"}) {
    EXPECT_FALSE(DecodeJson(bad, &r).ok()) << bad;
  }
  // An unset Quantity in a value field is Go's zero quantity, "0".
  corev1::ResourceFieldSelector sel;
  sel.set_resource("limits.cpu");
  EXPECT_EQ(EncodeJson(sel), R"({"resource":"limits.cpu","divisor":"0"})");
}

TEST(CodecSpecial, RawExtensionEmbedsJson) {
  metav1::WatchEvent ev = DecodeOk<metav1::WatchEvent>(
      R"({"type":"ADDED","object":{"kind":"Pod",
          "n":[1,2.50,{"a":null}],"s":"x\ny"}})");
  EXPECT_EQ(ev.object().raw(),
            R"({"kind":"Pod","n":[1,2.50,{"a":null}],"s":"x\ny"})");
  EXPECT_EQ(
      EncodeJson(ev),
      R"({"type":"ADDED","object":{"kind":"Pod","n":[1,2.50,{"a":null}],"s":"x\ny"}})");
  // Stored raw JSON with newlines still encodes on one line.
  ev.mutable_object()->set_raw("{\n  \"a\": [1,\n 2]\n}\n");
  EXPECT_EQ(EncodeJson(ev), R"({"type":"ADDED","object":{"a":[1,2]}})");
  // Bytes that are not JSON are written as null, never as broken JSON.
  ev.mutable_object()->set_raw(std::string("k8s\0\x0a", 5));
  EXPECT_EQ(EncodeJson(ev), R"({"type":"ADDED","object":null})");
  ev.clear_object();
  EXPECT_EQ(EncodeJson(ev), R"({"type":"ADDED","object":null})");
  // Scalars and arrays are raw values too.
  ev = DecodeOk<metav1::WatchEvent>(R"({"object":[1,"a"]})");
  EXPECT_EQ(ev.object().raw(), R"([1,"a"])");
  ev = DecodeOk<metav1::WatchEvent>(R"({"object":-1.5e3})");
  EXPECT_EQ(ev.object().raw(), "-1.5e3");
}

TEST(CodecSpecial, RawExtensionItemsOfAList) {
  corev1::List list = DecodeOk<corev1::List>(
      R"({"kind":"List","apiVersion":"v1","items":[{"kind":"A"},{"kind":"B","x":{}}]})");
  ASSERT_EQ(list.items_size(), 2);
  EXPECT_EQ(list.items(0).raw(), R"({"kind":"A"})");
  EXPECT_EQ(list.items(1).raw(), R"({"kind":"B","x":{}})");
}

// --- hostile input -----------------------------------------------------------

using kplane::testing::HostileInput;
using kplane::testing::NestedJsonArrays;

std::string ConfigMapWithField(const std::string& value) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},)"
         R"("data":{"k":"v"},"x":)" +
         value + "}";
}

// The issue's 200 KB ConfigMap nested 100,000 deep killed a worker: the
// decoder now refuses it without recursing, in Kubernetes' words.
TEST(CodecHostile, DeepJsonIsRefusedNotRecursedInto) {
  const std::string body = ConfigMapWithField(NestedJsonArrays(100000));
  ASSERT_GT(body.size(), 200000u);
  corev1::ConfigMap cm;
  StatusOr<DecodeResult> r = DecodeJson(body, &cm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("invalid JSON: exceeded max depth of 10000"));
  r = DecodeJson(HostileInput("json/configmap_deep_10001.json"), &cm);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("exceeded max depth of 10000"));
}

TEST(CodecHostile, DeepButLegalJsonDecodes) {
  // 10,000 levels in all: the ConfigMap's own object plus 9,999.
  corev1::ConfigMap cm;
  StatusOr<DecodeResult> r = DecodeJson(
      ConfigMapWithField(NestedJsonArrays(json::kMaxDepth - 1)), &cm);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->Warnings(), ElementsAre("unknown field \"x\""));
  EXPECT_EQ(cm.data().at("k"), "v");
}

TEST(CodecHostile, DeepDomsAreDecodedWithoutRecursion) {
  rapidjson::Document deep;
  ASSERT_TRUE(
      json::ParseDom(ConfigMapWithField(NestedJsonArrays(json::kMaxDepth - 1)),
                     &deep)
          .ok());
  corev1::ConfigMap cm;
  StatusOr<DecodeResult> r = DecodeJsonValue(deep, &cm);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(cm.data().at("k"), "v");
  // A DOM built some other way may be deeper still.
  ASSERT_TRUE(json::ParseDom(ConfigMapWithField(NestedJsonArrays(100000)),
                             &deep, 1000000)
                  .ok());
  r = DecodeJsonValue(deep, &cm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "exceeded max depth of 10000");
}

// Raw JSON (RawExtension, FieldsV1) from a protobuf body can be any bytes;
// writing it out must not recurse into them.
TEST(CodecHostile, DeepRawJsonFromProtobufIsWrittenAsNull) {
  metav1::WatchEvent ev;
  ev.set_type("ADDED");
  ev.mutable_object()->set_raw(NestedJsonArrays(100000));
  EXPECT_EQ(EncodeJson(ev), R"({"type":"ADDED","object":null})");
  rapidjson::Document doc;
  rapidjson::Value v = ToJsonValue(ev, doc.GetAllocator());
  ASSERT_TRUE(v.IsObject());
  EXPECT_TRUE(v["object"].IsNull());
  // Within the limit it is embedded as before.
  ev.mutable_object()->set_raw(NestedJsonArrays(json::kMaxDepth - 1));
  EXPECT_EQ(EncodeJson(ev), R"({"type":"ADDED","object":)" +
                                NestedJsonArrays(json::kMaxDepth - 1) + "}");
}

// --- inline members ----------------------------------------------------------

TEST(CodecInline, EmbeddedStructsShareTheirParentsObject) {
  corev1::Pod pod = DecodeOk<corev1::Pod>(R"({"spec":{
      "volumes":[{"name":"cfg","configMap":{"name":"web","defaultMode":420}}],
      "containers":[{"name":"c",
        "env":[{"name":"A","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],
        "livenessProbe":{"exec":{"command":["true"]},"periodSeconds":5}}]}})");
  const corev1::Volume& v = pod.spec().volumes(0);
  EXPECT_EQ(v.name(), "cfg");
  EXPECT_EQ(v.volumesource().configmap().localobjectreference().name(), "web");
  EXPECT_EQ(v.volumesource().configmap().defaultmode(), 420);
  const corev1::Container& c = pod.spec().containers(0);
  EXPECT_EQ(c.env(0).valuefrom().secretkeyref().localobjectreference().name(),
            "s");
  EXPECT_EQ(c.livenessprobe().handler().exec().command(0), "true");
  EXPECT_EQ(c.livenessprobe().periodseconds(), 5);
  std::string out = EncodeJson(pod);
  EXPECT_THAT(
      out,
      HasSubstr(
          R"("volumes":[{"name":"cfg","configMap":{"name":"web","defaultMode":420}}])"));
  EXPECT_THAT(
      out,
      HasSubstr(
          R"("livenessProbe":{"exec":{"command":["true"]},"periodSeconds":5})"));
  EXPECT_THAT(out, HasSubstr(R"("secretKeyRef":{"name":"s","key":"k"})"));
}

// --- which fields are written (Go's omitempty / pointer / value rules) ------

TEST(CodecEmit, ZeroObjectsLookLikeGosZeroValues) {
  EXPECT_EQ(
      EncodeJson(corev1::Pod()),
      R"({"metadata":{"creationTimestamp":null},"spec":{"containers":[]},"status":{}})");
  EXPECT_EQ(EncodeJson(corev1::PodList(), {"v1", "PodList"}),
            R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]})");
  EXPECT_EQ(EncodeJson(metav1::Status(), {"v1", "Status"}),
            R"({"kind":"Status","apiVersion":"v1","metadata":{}})");
  EXPECT_EQ(
      EncodeJson(corev1::Event()),
      R"({"metadata":{"creationTimestamp":null},"involvedObject":{},)"
      R"("source":{},"firstTimestamp":null,"lastTimestamp":null,)"
      R"("eventTime":null,"reportingComponent":"","reportingInstance":""})");
  EXPECT_EQ(
      EncodeJson(corev1::NodeStatus()),
      R"({"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{)"
      R"("machineID":"","systemUUID":"","bootID":"","kernelVersion":"",)"
      R"("osImage":"","containerRuntimeVersion":"","kubeletVersion":"",)"
      R"("kubeProxyVersion":"","operatingSystem":"","architecture":""}})");
}

TEST(CodecEmit, PointerZeroIsWrittenValueZeroIsNot) {
  appsv1::Deployment d;
  d.mutable_spec()->set_replicas(0);         // *int32: written
  d.mutable_status()->set_replicas(0);       // int32 omitempty: omitted
  d.mutable_spec()->set_minreadyseconds(0);  // int32 omitempty: omitted
  d.mutable_spec()->set_paused(false);       // bool omitempty: omitted
  std::string out = EncodeJson(d);
  EXPECT_THAT(out, HasSubstr(R"("spec":{"replicas":0,"template")"));
  EXPECT_THAT(out, HasSubstr(R"("status":{})"));
  appsv1::ReplicaSet rs;
  rs.mutable_status();  // ReplicaSetStatus.replicas has no omitempty
  EXPECT_THAT(EncodeJson(rs), HasSubstr(R"("status":{"replicas":0})"));
  corev1::ConfigMap cm;
  cm.set_immutable(false);  // *bool
  EXPECT_THAT(EncodeJson(cm), HasSubstr(R"("immutable":false)"));
}

TEST(CodecEmit, ProtobufZeroScalarsFromGoStayHidden) {
  // Go's protobuf marshaller writes every non-pointer scalar, so decoded
  // Kubernetes bytes have many fields "set" to zero; JSON must still omit
  // the omitempty ones.
  corev1::Pod pod;
  pod.mutable_metadata()->set_name("p");
  pod.mutable_metadata()->set_generatename("");
  pod.mutable_metadata()->set_generation(0);
  pod.mutable_spec()->set_hostnetwork(false);
  pod.mutable_spec()->set_nodename("");
  EXPECT_EQ(
      EncodeJson(pod),
      R"({"metadata":{"name":"p","creationTimestamp":null},"spec":{"containers":[]},"status":{}})");
}

TEST(CodecEmit, MapsAreSortedByKey) {
  corev1::ConfigMap cm;
  auto& data = *cm.mutable_data();
  for (const char* k : {"zeta", "alpha", "Mid", "beta", "alpha2"}) data[k] = k;
  EXPECT_EQ(
      EncodeJson(cm),
      R"({"metadata":{"creationTimestamp":null},"data":{"Mid":"Mid",)"
      R"("alpha":"alpha","alpha2":"alpha2","beta":"beta","zeta":"zeta"}})");
}

TEST(CodecEmit, StringsAreEscapedOnOneLine) {
  corev1::ConfigMap cm;
  (*cm.mutable_data())["k"] = "line1\nline2\t\"q\" \\ \x01 \xe4\xb8\x96";
  std::string out = EncodeJson(cm);
  EXPECT_EQ(out.find('\n'), std::string::npos);
  EXPECT_THAT(out, HasSubstr(R"("k":"line1\nline2\t\"q\" \\ \u0001 )"
                             "\xe4\xb8\x96\""));
  corev1::ConfigMap back = DecodeOk<corev1::ConfigMap>(out);
  EXPECT_EQ(back.data().at("k"), cm.data().at("k"));
}

// Protobuf bodies do not check string fields for UTF-8; the JSON written
// for them replaces each invalid byte with U+FFFD, as Go's encoding/json
// does, so it always reads back (found by the k8s_protobuf fuzz target).
TEST(CodecEmit, InvalidUtf8IsWrittenAsReplacementCharacters) {
  corev1::ConfigMap cm;
  // A lone continuation byte, a truncated sequence, an overlong '/', a
  // surrogate; then valid text that must stay as it is.
  (*cm.mutable_data())["k\xff"] =
      "a\x80"
      "b\xe4\xb8"
      "c\xc0\xaf"
      "d\xed\xa0\x80"
      "e\xe4\xb8\x96";
  cm.mutable_metadata()->set_name("n\xfe");
  std::string out = EncodeJson(cm);
  const std::string r = "\xef\xbf\xbd";
  EXPECT_THAT(out, HasSubstr("\"k" + r + "\":\"a" + r + "b" + r + r + "c" + r +
                             r + "d" + r + r + r + "e\xe4\xb8\x96\""));
  EXPECT_THAT(out, HasSubstr("\"name\":\"n" + r + "\""));
  corev1::ConfigMap back = DecodeOk<corev1::ConfigMap>(out);
  EXPECT_EQ(back.metadata().name(), "n" + r);
  ASSERT_EQ(back.data().count("k" + r), 1u);
}

// --- writer and DOM entry points ---------------------------------------------

TEST(CodecApi, WriteJsonEmbedsAnObjectInAWatchEvent) {
  corev1::Pod pod;
  pod.mutable_metadata()->set_name("p");
  pod.mutable_metadata()->set_resourceversion("7");
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("type");
  w.String("ADDED");
  w.Key("object");
  WriteJson(pod, &w, {"v1", "Pod"});
  w.EndObject();
  EXPECT_EQ(
      std::string(buf.GetString()),
      R"({"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",)"
      R"("metadata":{"name":"p","resourceVersion":"7",)"
      R"("creationTimestamp":null},"spec":{"containers":[]},"status":{}}})");
}

TEST(CodecApi, ToJsonValueMatchesEncodeJson) {
  corev1::Pod pod = DecodeOk<corev1::Pod>(testing::ReadTestdata("pod.json"));
  rapidjson::Document doc;
  doc.SetObject();
  rapidjson::Value v = ToJsonValue(pod, doc.GetAllocator(), {"v1", "Pod"});
  doc.AddMember("object", v, doc.GetAllocator());
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc["object"].Accept(w);
  EXPECT_TRUE(JsonEqual(EncodeJson(pod, {"v1", "Pod"}), buf.GetString()));
}

TEST(CodecApi, PrettyWriterProducesTheSameValue) {
  corev1::Pod pod = DecodeOk<corev1::Pod>(testing::ReadTestdata("pod.json"));
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  WriteJson(pod, &w, {"v1", "Pod"});
  EXPECT_NE(std::string(buf.GetString()).find('\n'), std::string::npos);
  EXPECT_TRUE(JsonEqual(EncodeJson(pod, {"v1", "Pod"}), buf.GetString()));
}

TEST(CodecApi, DomDecodingAcceptsIntegralDoublesLikeYaml) {
  rapidjson::Document doc;
  doc.Parse(R"({"spec":{"replicas":3.0}})");
  appsv1::Deployment d;
  ASSERT_TRUE(DecodeJsonValue(doc, &d).ok());
  EXPECT_EQ(d.spec().replicas(), 3);
  doc.Parse(R"({"spec":{"replicas":3.5}})");
  EXPECT_FALSE(DecodeJsonValue(doc, &d).ok());
  doc.Parse(R"({"spec":{"replicas":4294967296.0}})");
  EXPECT_FALSE(DecodeJsonValue(doc, &d).ok());
}

TEST(CodecApi, ConcurrentUseSharesOneTableCache) {
  const std::string text = testing::ReadTestdata("deployment.json");
  appsv1::Deployment want;
  ASSERT_TRUE(DecodeJson(text, &want).ok());
  const std::string want_json = EncodeJson(want);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        appsv1::Deployment d;
        if (!DecodeJson(text, &d).ok() || EncodeJson(d) != want_json) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(CodecUnstructured, SplitsAndSplicesTheObject) {
  Unstructured u;
  StatusOr<DecodeResult> r = DecodeJson(
      R"({"apiVersion":"example.com/v1","kind":"Widget",)"
      R"("metadata":{"name":"a","labels":{"x":"y"},"bogus":1},)"
      R"("spec":{"size":3,"ratio":0.5,"big":12345678901234,"tags":["a"]},)"
      R"("status":null})",
      &u);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->type_meta, (TypeMeta{"example.com/v1", "Widget"}));
  EXPECT_EQ(r->unknown_fields, std::vector<std::string>{"metadata.bogus"});
  EXPECT_EQ(u.metadata().name(), "a");
  EXPECT_EQ(u.metadata().labels().at("x"), "y");
  EXPECT_EQ(u.content(),
            R"({"spec":{"size":3,"ratio":0.5,"big":12345678901234,)"
            R"("tags":["a"]},"status":null})");
  // apiVersion and kind first, then metadata, then the content's members.
  EXPECT_EQ(
      EncodeJson(u),
      R"({"apiVersion":"example.com/v1","kind":"Widget",)"
      R"("metadata":{"name":"a","creationTimestamp":null,"labels":{"x":"y"}},)"
      R"("spec":{"size":3,"ratio":0.5,"big":12345678901234,)"
      R"("tags":["a"]},"status":null})");
  // The caller's type wins (a custom resource read as another version).
  EXPECT_EQ(EncodeJson(u, {"example.com/v2", "Widget"}).substr(0, 46),
            R"({"apiVersion":"example.com/v2","kind":"Widget")");
  // The DOM form, as patches and managed fields see it.
  rapidjson::Document doc;
  rapidjson::Value v = ToJsonValue(u, doc.GetAllocator());
  ASSERT_TRUE(v.IsObject());
  EXPECT_EQ(v["spec"]["size"].GetInt(), 3);
  EXPECT_EQ(v["metadata"]["name"], "a");
  Unstructured back;
  ASSERT_TRUE(DecodeJsonValue(v, &back).ok());
  EXPECT_EQ(EncodeJson(back), EncodeJson(u));
  // Lists carry their items whole.
  UnstructuredList list;
  *list.add_items() = u;
  EXPECT_NE(EncodeJson(list).find(R"("items":[{"apiVersion":"example.com/v1")"),
            std::string::npos);
}

TEST(CodecUnstructured, RefusesWhatIsNotAnObject) {
  Unstructured u;
  EXPECT_FALSE(DecodeJson("[1]", &u).ok());
  EXPECT_FALSE(DecodeJson(R"({"kind":3})", &u).ok());
  EXPECT_FALSE(DecodeJson(R"({"metadata":{"name":3}})", &u).ok());
  EXPECT_FALSE(DecodeJson(R"({"a":)", &u).ok());
  // Content that is not an object (a protobuf body may carry anything)
  // adds nothing rather than breaking the output.
  u.Clear();
  u.set_content("[1,2]");
  EXPECT_EQ(EncodeJson(u), R"({"metadata":{"creationTimestamp":null}})");
}

}  // namespace
}  // namespace kplane::objects
