#include "informer/watch.h"

#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "informer/api_errors.h"
#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::PodKind;

std::string JsonEvent(const std::string& type, const std::string& name,
                      const std::string& rv) {
  objects::corev1::Pod pod = testing::MakePod("default", name);
  pod.mutable_metadata()->set_resourceversion(rv);
  return "{\"type\":\"" + type +
         "\",\"object\":" + objects::EncodeJson(pod, {"v1", "Pod"}) + "}\n";
}

TEST(WatchDecoderTest, JsonLinesSplitAnywhere) {
  std::string body = JsonEvent("ADDED", "a", "5") +
                     JsonEvent("MODIFIED", "a", "6") +
                     JsonEvent("DELETED", "a", "7") +
                     "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
                     "\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                     "\"9\"}}}\n";
  // Every split point, including byte-at-a-time.
  for (size_t step : {size_t{1}, size_t{7}, size_t{64}, body.size()}) {
    WatchDecoder dec(PodKind());
    std::vector<WatchEvent> events;
    for (size_t i = 0; i < body.size(); i += step) {
      ASSERT_TRUE(dec.Feed(body.substr(i, step), &events).ok());
    }
    ASSERT_TRUE(dec.Finish().ok());
    ASSERT_EQ(events.size(), 4u) << "step " << step;
    EXPECT_EQ(events[0].type, EventType::kAdded);
    EXPECT_EQ(events[1].type, EventType::kModified);
    EXPECT_EQ(events[2].type, EventType::kDeleted);
    EXPECT_EQ(events[3].type, EventType::kBookmark);
    EXPECT_EQ(events[0].ResourceVersion(), "5");
    EXPECT_EQ(events[2].ResourceVersion(), "7");
    EXPECT_EQ(events[3].ResourceVersion(), "9");
    EXPECT_EQ(objects::Name(*events[1].object), "a");
    EXPECT_EQ(events[1].object->GetDescriptor(),
              objects::corev1::Pod::descriptor());
  }
}

// Lines of another shape than {"type":..,"object":..} take the general
// path and decode the same.
TEST(WatchDecoderTest, AnyMemberOrderAndWhitespace) {
  objects::corev1::Pod pod = testing::MakePod("default", "a");
  pod.mutable_metadata()->set_resourceversion("3");
  const std::string obj = objects::EncodeJson(pod, {"v1", "Pod"});
  WatchDecoder dec(PodKind());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(dec.Feed("{\"object\":" + obj + ",\"type\":\"MODIFIED\"}\n" +
                           "{ \"type\" : \"DELETED\", \"object\" : " + obj +
                           " }\r\n" + "{\"type\":\"ADDED\",\"object\":" + obj +
                           ",\"extra\":1}\n",
                       &events)
                  .ok());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, EventType::kModified);
  EXPECT_EQ(events[1].type, EventType::kDeleted);
  EXPECT_EQ(events[2].type, EventType::kAdded);
  for (const WatchEvent& e : events) EXPECT_EQ(e.ResourceVersion(), "3");
}

TEST(WatchDecoderTest, ErrorEventCarriesTheStatus) {
  WatchDecoder dec(PodKind());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(dec.Feed("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
                       "\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"too old resource version: 5 "
                       "(17)\",\"reason\":\"Expired\",\"code\":410}}\n",
                       &events)
                  .ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::kError);
  EXPECT_EQ(events[0].object, nullptr);
  EXPECT_TRUE(IsExpired(events[0].error));
  EXPECT_EQ(events[0].error.message(), "too old resource version: 5 (17)");
  EXPECT_EQ(events[0].ResourceVersion(), "");
}

TEST(WatchDecoderTest, ErrorsAreStickyAndNamed) {
  WatchDecoder dec(PodKind());
  std::vector<WatchEvent> events;
  Status s = dec.Feed("{\"type\":\"ADDED\"}\n", &events);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(dec.Feed(JsonEvent("ADDED", "a", "1"), &events).ok());
  EXPECT_TRUE(events.empty());

  WatchDecoder wrong_kind(PodKind());
  s = wrong_kind.Feed(
      "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\","
      "\"metadata\":{\"name\":\"n\"}}}\n",
      &events);
  EXPECT_NE(s.message().find("expected v1 Pod"), std::string::npos) << s;

  WatchDecoder bad_type(PodKind());
  s = bad_type.Feed("{\"type\":\"EXPLODED\",\"object\":{}}\n", &events);
  EXPECT_NE(s.message().find("EXPLODED"), std::string::npos);

  WatchDecoder not_json(PodKind());
  EXPECT_FALSE(not_json.Feed("not json\n", &events).ok());
}

TEST(WatchDecoderTest, PartialEventAtEndIsDataLoss) {
  WatchDecoder dec(PodKind());
  std::vector<WatchEvent> events;
  std::string ev = JsonEvent("ADDED", "a", "1");
  ASSERT_TRUE(dec.Feed(ev.substr(0, 20), &events).ok());
  EXPECT_EQ(dec.Finish().code(), StatusCode::kCorruption);
  WatchDecoder blank(PodKind());
  ASSERT_TRUE(blank.Feed("\n\r\n", &events).ok());
  EXPECT_TRUE(blank.Finish().ok());
  EXPECT_TRUE(events.empty());
}

TEST(WatchDecoderTest, OversizedEventIsRefused) {
  WatchDecoder dec(PodKind(), WatchFraming::kJsonLines, 100);
  std::vector<WatchEvent> events;
  EXPECT_EQ(dec.Feed(std::string(150, ' '), &events).code(),
            StatusCode::kTooLarge);
}

std::string ProtobufFrame(const std::string& type,
                          const google::protobuf::Message& obj,
                          const objects::TypeMeta& tm) {
  objects::metav1::WatchEvent ev;
  ev.set_type(type);
  ev.mutable_object()->set_raw(objects::EncodeEnvelope(obj, tm));
  std::string payload = ev.SerializeAsString();
  std::string frame(4, '\0');
  uint32_t n = static_cast<uint32_t>(payload.size());
  frame[0] = static_cast<char>(n >> 24);
  frame[1] = static_cast<char>(n >> 16);
  frame[2] = static_cast<char>(n >> 8);
  frame[3] = static_cast<char>(n);
  return frame + payload;
}

TEST(WatchDecoderTest, ProtobufFrames) {
  objects::corev1::Pod pod = testing::MakePod("default", "web");
  pod.mutable_metadata()->set_resourceversion("12");
  objects::metav1::Status gone;
  gone.set_status("Failure");
  gone.set_reason("Expired");
  gone.set_code(410);
  gone.set_message("too old");
  std::string body = ProtobufFrame("ADDED", pod, {"v1", "Pod"}) +
                     ProtobufFrame("ERROR", gone, {"v1", "Status"});
  WatchDecoder dec(PodKind(), WatchFraming::kProtobufFrames);
  std::vector<WatchEvent> events;
  for (size_t i = 0; i < body.size(); i += 3) {
    ASSERT_TRUE(dec.Feed(body.substr(i, 3), &events).ok());
  }
  ASSERT_TRUE(dec.Finish().ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, EventType::kAdded);
  EXPECT_EQ(events[0].ResourceVersion(), "12");
  EXPECT_EQ(objects::Name(*events[0].object), "web");
  EXPECT_TRUE(IsExpired(events[1].error));
}

// A newer server's object may carry fields this build does not know. The
// decoder keeps them as unknown fields (it no longer walks every event's
// object to drop them); this checks what that must not change: the known
// fields read the same, and the object's JSON (what a reader or a JSON
// client sees) leaves them out. (It passes with the walk too.)
TEST(WatchDecoderTest, ProtobufUnknownFieldsStayOutOfSight) {
  objects::corev1::Pod pod = testing::MakePod("default", "web");
  pod.mutable_metadata()->set_resourceversion("7");
  const std::string plain_json = objects::EncodeJson(pod);
  objects::corev1::Pod newer = pod;
  newer.mutable_metadata()
      ->GetReflection()
      ->MutableUnknownFields(newer.mutable_metadata())
      ->AddVarint(9999, 42);
  newer.mutable_spec()
      ->GetReflection()
      ->MutableUnknownFields(newer.mutable_spec())
      ->AddLengthDelimited(9998, "future");
  WatchDecoder dec(PodKind(), WatchFraming::kProtobufFrames);
  std::vector<WatchEvent> events;
  ASSERT_TRUE(
      dec.Feed(ProtobufFrame("MODIFIED", newer, {"v1", "Pod"}), &events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].ResourceVersion(), "7");
  EXPECT_EQ(objects::Name(*events[0].object), "web");
  EXPECT_EQ(objects::EncodeJson(*events[0].object), plain_json);
}

}  // namespace
}  // namespace kplane::informer
