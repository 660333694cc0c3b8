#include "objects/serializer.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "objects/envelope.h"
#include "objects/test_util.h"
#include "objects/types.h"

namespace kplane::objects {
namespace {

using google::protobuf::util::MessageDifferencer;

TEST(Serializer, ParsesContentTypes) {
  EXPECT_EQ(*ParseMediaType("application/json"), MediaType::kJson);
  EXPECT_EQ(*ParseMediaType("application/json; charset=utf-8"),
            MediaType::kJson);
  EXPECT_EQ(*ParseMediaType(""), MediaType::kJson);
  EXPECT_EQ(*ParseMediaType("Application/YAML"), MediaType::kYaml);
  EXPECT_EQ(*ParseMediaType("application/vnd.kubernetes.protobuf"),
            MediaType::kProtobuf);
  for (const char* bad : {"text/plain", "application/cbor",
                          "application/strategic-merge-patch+json"}) {
    StatusOr<MediaType> t = ParseMediaType(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(MediaTypeName(MediaType::kProtobuf),
            "application/vnd.kubernetes.protobuf");
}

// The same object in the three media types decodes to the same message, and
// each encoding decodes back to it.
TEST(Serializer, AllMediaTypesAgree) {
  appsv1::Deployment want;
  ASSERT_TRUE(DecodeJson(testing::ReadTestdata("deployment.json"), &want).ok());
  const TypeMeta tm{"apps/v1", "Deployment"};
  for (MediaType type :
       {MediaType::kJson, MediaType::kYaml, MediaType::kProtobuf}) {
    std::string body = EncodeBody(type, want, tm);
    appsv1::Deployment got;
    StatusOr<DecodeResult> r = DecodeBody(type, body, &got);
    ASSERT_TRUE(r.ok()) << MediaTypeName(type) << ": " << r.status();
    EXPECT_EQ(r->type_meta, tm) << MediaTypeName(type);
    EXPECT_TRUE(r->strict_ok());
    EXPECT_TRUE(MessageDifferencer::Equals(want, got)) << MediaTypeName(type);
  }
  EXPECT_TRUE(HasEnvelopeMagic(EncodeBody(MediaType::kProtobuf, want, tm)));
  EXPECT_EQ(
      EncodeBody(MediaType::kYaml, want, tm).rfind("apiVersion: apps/v1\n", 0),
      0u);
}

TEST(Serializer, ProtobufBodyWithoutMagicIsRejected) {
  corev1::ConfigMap cm;
  StatusOr<DecodeResult> r =
      DecodeBody(MediaType::kProtobuf, "{\"kind\":\"ConfigMap\"}", &cm);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace kplane::objects
