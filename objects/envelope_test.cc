#include "objects/envelope.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/types.h"

namespace kplane::objects {
namespace {

using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

TEST(Envelope, BytesMatchKubernetes) {
  corev1::ConfigMap cm;
  cm.mutable_metadata()->set_name("cm1");
  (*cm.mutable_data())["a"] = "1";
  const std::string raw =
      Bytes({0x0a, 0x05, 0x0a, 0x03, 'c', 'm', '1',           // metadata
             0x12, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, '1'});  // data
  const std::string want =
      std::string("k8s\0", 4) +
      Bytes({0x0a, 0x0f, 0x0a, 0x02, 'v', '1', 0x12, 0x09}) + "ConfigMap" +
      Bytes({0x12, 0x0f}) + raw + Bytes({0x1a, 0x00, 0x22, 0x00});
  EXPECT_EQ(EncodeEnvelope(cm, {"v1", "ConfigMap"}), want);
}

// The body kubectl 1.32 POSTs for `kubectl create namespace demo`: Go's
// marshaller writes every non-pointer field, zero or not.
TEST(Envelope, DecodesAKubectlProtobufBody) {
  const std::string meta = Bytes({0x0a, 0x04, 'd', 'e', 'm', 'o',  // name
                                  0x12, 0x00,    // generateName ""
                                  0x1a, 0x00,    // namespace ""
                                  0x22, 0x00,    // selfLink ""
                                  0x2a, 0x00,    // uid ""
                                  0x32, 0x00,    // resourceVersion ""
                                  0x38, 0x00,    // generation 0
                                  0x42, 0x00});  // creationTimestamp (zero)
  std::string ns = Bytes({0x0a, static_cast<int>(meta.size())}) + meta +
                   Bytes({0x12, 0x00, 0x1a, 0x02, 0x0a, 0x00});  // spec, status
  std::string body = std::string("k8s\0", 4) +
                     Bytes({0x0a, 0x0f, 0x0a, 0x02, 'v', '1', 0x12, 0x09}) +
                     "Namespace" + Bytes({0x12, static_cast<int>(ns.size())}) +
                     ns + Bytes({0x1a, 0x00, 0x22, 0x00});
  corev1::Namespace got;
  StatusOr<TypeMeta> tm = DecodeEnvelopeInto(body, &got);
  ASSERT_TRUE(tm.ok()) << tm.status();
  EXPECT_EQ(*tm, (TypeMeta{"v1", "Namespace"}));
  EXPECT_EQ(got.metadata().name(), "demo");
  EXPECT_EQ(
      EncodeJson(got, *tm),
      R"({"kind":"Namespace","apiVersion":"v1","metadata":{"name":"demo",)"
      R"("creationTimestamp":null},"spec":{},"status":{}})");
}

TEST(Envelope, DropsFieldsTheSchemaDoesNotDeclare) {
  corev1::ConfigMap cm;
  cm.mutable_metadata()->set_name("x");
  std::string raw = cm.SerializeAsString() +
                    Bytes({0xa8, 0x06, 0x01});  // field 101, varint 1
  runtimepb::Unknown u;
  u.mutable_typemeta()->set_apiversion("v1");
  u.mutable_typemeta()->set_kind("ConfigMap");
  u.set_raw(raw);
  corev1::ConfigMap got;
  ASSERT_TRUE(
      DecodeEnvelopeInto(std::string("k8s\0", 4) + u.SerializeAsString(), &got)
          .ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, cm));
  EXPECT_EQ(got.SerializeAsString(), cm.SerializeAsString());
  // Reading our own stored values skips the walk and keeps what is there.
  ASSERT_TRUE(
      DecodeEnvelopeInto(std::string("k8s\0", 4) + u.SerializeAsString(), &got,
                         /*discard_unknown=*/false)
          .ok());
  EXPECT_EQ(got.SerializeAsString(), raw);
}

TEST(Envelope, Errors) {
  corev1::Pod pod;
  EXPECT_EQ(DecodeEnvelopeInto("{\"kind\":\"Pod\"}", &pod).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(
      DecodeEnvelopeInto(std::string("k8s\0\xff\xff", 6), &pod).status().code(),
      StatusCode::kCorruption);
  runtimepb::Unknown u;
  u.set_raw("x");
  u.set_contentencoding("gzip");
  StatusOr<TypeMeta> r =
      DecodeEnvelopeInto(std::string("k8s\0", 4) + u.SerializeAsString(), &pod);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("gzip"));
  EXPECT_FALSE(HasEnvelopeMagic("k8s"));
  EXPECT_TRUE(HasEnvelopeMagic(std::string("k8s\0", 4)));
}

TEST(Envelope, SerializationIsDeterministic) {
  corev1::ConfigMap a, b;
  std::vector<std::string> keys;
  for (int i = 0; i < 64; ++i)
    keys.push_back("key-" + std::to_string(i * 7 % 64));
  for (const std::string& k : keys) (*a.mutable_data())[k] = k;
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    (*b.mutable_data())[*it] = *it;
  }
  EXPECT_EQ(EncodeEnvelope(a, {"v1", "ConfigMap"}),
            EncodeEnvelope(b, {"v1", "ConfigMap"}));
}

}  // namespace
}  // namespace kplane::objects
