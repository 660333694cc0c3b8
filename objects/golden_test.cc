// Golden tests: real kube-apiserver JSON (testdata/*.json) must decode with
// no unknown fields and re-encode to the same JSON value, and survive the
// protobuf, envelope, DOM and YAML paths unchanged.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/scheme.h"
#include "objects/test_util.h"
#include "objects/types.h"
#include "objects/yaml.h"

namespace kplane::objects {
namespace {

using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;
using testing::JsonEqual;
using testing::ParseJsonOrDie;
using testing::ReadTestdata;

struct Golden {
  const char* file;
  // The kind to decode into; WatchEvent has no TypeMeta of its own.
  const char* api_version;
  const char* kind;
};

const Golden kGoldens[] = {
    {"pod.json", "v1", "Pod"},
    {"node.json", "v1", "Node"},
    {"deployment.json", "apps/v1", "Deployment"},
    {"replicaset.json", "apps/v1", "ReplicaSet"},
    {"lease.json", "coordination.k8s.io/v1", "Lease"},
    {"secret.json", "v1", "Secret"},
    {"configmap.json", "v1", "ConfigMap"},
    {"eventlist.json", "v1", "EventList"},
    {"status_notfound.json", "v1", "Status"},
    {"status_invalid.json", "v1", "Status"},
    {"service.json", "v1", "Service"},
    {"namespace.json", "v1", "Namespace"},
    {"scale.json", "autoscaling/v1", "Scale"},
    {"podlist_empty.json", "v1", "PodList"},
    {"deleteoptions.json", "v1", "DeleteOptions"},
    {"list.json", "v1", "List"},
    {"watchevent.json", "v1", "WatchEvent"},
    {"kubectl_run_pod.json", "v1", "Pod"},
    {"kubectl_create_deployment.json", "apps/v1", "Deployment"},
};

// One test per golden (each ctest entry is a process; the checks share the
// decoded message).
class GoldenTest : public ::testing::TestWithParam<Golden> {};

TEST_P(GoldenTest, RoundTrips) {
  const Golden& g = GetParam();
  const std::string text = ReadTestdata(g.file);
  const KindInfo* kind = Scheme::Default().FindKind(g.api_version, g.kind);
  ASSERT_NE(kind, nullptr) << g.api_version << " " << g.kind;
  // WatchEvent carries no TypeMeta; everything else names its kind.
  const TypeMeta tm =
      std::string(g.kind) == "WatchEvent" ? TypeMeta{} : kind->type_meta();
  std::unique_ptr<Message> msg = kind->New();
  StatusOr<DecodeResult> r = DecodeJson(text, msg.get());
  ASSERT_TRUE(r.ok()) << r.status();

  {
    SCOPED_TRACE("decodes without unknown or duplicate fields");
    EXPECT_TRUE(r->unknown_fields.empty())
        << "first unknown: " << r->unknown_fields.front();
    EXPECT_TRUE(r->duplicate_fields.empty());
    EXPECT_EQ(r->type_meta, tm);
  }
  {
    SCOPED_TRACE("re-encodes to the same JSON, on one line");
    const std::string out = EncodeJson(*msg, tm);
    EXPECT_TRUE(JsonEqual(text, out));
    EXPECT_EQ(out.find('\n'), std::string::npos);
  }
  {
    SCOPED_TRACE("survives protobuf");
    const std::string bytes = SerializeDeterministic(*msg);
    std::unique_ptr<Message> back = kind->New();
    ASSERT_TRUE(back->ParseFromString(bytes));
    EXPECT_TRUE(MessageDifferencer::Equals(*msg, *back));
    EXPECT_TRUE(JsonEqual(text, EncodeJson(*back, tm)));
    // Deterministic: the same object gives the same bytes.
    EXPECT_EQ(SerializeDeterministic(*back), bytes);
  }
  {
    SCOPED_TRACE("survives the envelope");
    const std::string stored = EncodeEnvelope(*msg, kind->type_meta());
    ASSERT_TRUE(HasEnvelopeMagic(stored));
    std::unique_ptr<Message> back = kind->New();
    StatusOr<TypeMeta> etm = DecodeEnvelopeInto(stored, back.get());
    ASSERT_TRUE(etm.ok()) << etm.status();
    EXPECT_EQ(*etm, kind->type_meta());
    EXPECT_TRUE(MessageDifferencer::Equals(*msg, *back));
  }
  {
    SCOPED_TRACE("survives the DOM");
    rapidjson::Document expected = ParseJsonOrDie(text);
    rapidjson::Document doc;
    rapidjson::Value v = ToJsonValue(*msg, doc.GetAllocator(), tm);
    EXPECT_TRUE(v == expected) << testing::Pretty(v);
    std::unique_ptr<Message> back = kind->New();
    StatusOr<DecodeResult> dr = DecodeJsonValue(expected, back.get());
    ASSERT_TRUE(dr.ok()) << dr.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*msg, *back));
  }
  {
    SCOPED_TRACE("survives YAML");
    const std::string yaml = EncodeYaml(*msg, tm);
    std::unique_ptr<Message> back = kind->New();
    StatusOr<DecodeResult> yr = DecodeYaml(yaml, back.get());
    ASSERT_TRUE(yr.ok()) << yr.status() << "\n" << yaml;
    EXPECT_TRUE(yr->strict_ok()) << yaml;
    EXPECT_EQ(yr->type_meta, tm);
    // Compared as JSON values: raw embedded JSON (RawExtension, FieldsV1)
    // comes back in YAML's sorted key order, which is the same value.
    EXPECT_TRUE(JsonEqual(text, EncodeJson(*back, tm))) << yaml;
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenTest, ::testing::ValuesIn(kGoldens),
                         [](const auto& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           return name;
                         });

// kubectl's own bodies must come back byte for byte: the same member order
// (Go struct order), `"creationTimestamp":null`, `"resources":{}`,
// `"strategy":{}` and `"status":{}`.
TEST(GoldenBytes, KubectlBodiesReencodeByteForByte) {
  for (const char* file :
       {"kubectl_run_pod.json", "kubectl_create_deployment.json"}) {
    std::string text = ReadTestdata(file);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    rapidjson::Document doc = ParseJsonOrDie(text);
    const KindInfo* kind = Scheme::Default().FindKind(
        doc["apiVersion"].GetString(), doc["kind"].GetString());
    ASSERT_NE(kind, nullptr);
    std::unique_ptr<Message> msg = kind->New();
    ASSERT_TRUE(DecodeJson(text, msg.get()).ok());
    EXPECT_EQ(EncodeJson(*msg, kind->type_meta()), text) << file;
  }
}

}  // namespace
}  // namespace kplane::objects
