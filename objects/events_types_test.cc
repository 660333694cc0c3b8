// The core/v1 <-> events.k8s.io/v1 Event conversion (events_types.h):
// lossless both ways on kubernetes' fully filled fixtures, fields mapped as
// pkg/apis/events/v1/conversion.go maps them.
#include "objects/events_types.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/test_util.h"

namespace kplane::objects {
namespace {

using google::protobuf::util::MessageDifferencer;

template <typename T>
T Fixture(const std::string& name) {
  T out;
  StatusOr<DecodeResult> r =
      DecodeJson(testing::ReadTestdata("k8s-api/" + name), &out);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return out;
}

TEST(EventConversion, CoreToV1AndBackIsLossless) {
  corev1::Event core = Fixture<corev1::Event>("core.v1.Event.json");
  ASSERT_FALSE(core.message().empty());
  corev1::Event back = ToCoreEvent(ToEventsV1Event(core));
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(core, back)) << diff;
  // Same bytes: the apiserver compares them to skip no-op updates.
  EXPECT_EQ(EncodeEnvelope(back, {"v1", "Event"}),
            EncodeEnvelope(core, {"v1", "Event"}));
}

TEST(EventConversion, V1ToCoreAndBackIsLossless) {
  eventsv1::Event v1 = Fixture<eventsv1::Event>("events.k8s.io.v1.Event.json");
  ASSERT_FALSE(v1.note().empty());
  eventsv1::Event back = ToEventsV1Event(ToCoreEvent(v1));
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(v1, back)) << diff;
  EXPECT_EQ(EncodeJson(back, {"events.k8s.io/v1", "Event"}),
            EncodeJson(v1, {"events.k8s.io/v1", "Event"}));
}

TEST(EventConversion, MapsRenamedFields) {
  eventsv1::Event v1 = Fixture<eventsv1::Event>("events.k8s.io.v1.Event.json");
  corev1::Event core = ToCoreEvent(v1);
  EXPECT_EQ(core.message(), v1.note());
  EXPECT_TRUE(
      MessageDifferencer::Equals(core.involvedobject(), v1.regarding()));
  EXPECT_TRUE(MessageDifferencer::Equals(core.related(), v1.related()));
  EXPECT_EQ(core.reportingcomponent(), v1.reportingcontroller());
  EXPECT_EQ(core.reportinginstance(), v1.reportinginstance());
  EXPECT_EQ(core.source().component(), v1.deprecatedsource().component());
  EXPECT_EQ(core.source().host(), v1.deprecatedsource().host());
  EXPECT_TRUE(MessageDifferencer::Equals(core.firsttimestamp(),
                                         v1.deprecatedfirsttimestamp()));
  EXPECT_TRUE(MessageDifferencer::Equals(core.lasttimestamp(),
                                         v1.deprecatedlasttimestamp()));
  EXPECT_EQ(core.count(), v1.deprecatedcount());
  EXPECT_EQ(core.series().count(), v1.series().count());
  EXPECT_TRUE(MessageDifferencer::Equals(core.series().lastobservedtime(),
                                         v1.series().lastobservedtime()));
  EXPECT_TRUE(MessageDifferencer::Equals(core.eventtime(), v1.eventtime()));
  EXPECT_EQ(core.action(), v1.action());
  EXPECT_EQ(core.reason(), v1.reason());
  EXPECT_EQ(core.type(), v1.type());
  EXPECT_EQ(core.metadata().name(), v1.metadata().name());
  EXPECT_EQ(core.metadata().managedfields_size(),
            v1.metadata().managedfields_size());
}

// An unset field stays unset in the other form (no empty structs appear).
TEST(EventConversion, KeepsPresence) {
  corev1::Event core;
  core.mutable_metadata()->set_name("e");
  core.set_message("hello");
  eventsv1::Event v1 = ToEventsV1Event(core);
  EXPECT_FALSE(v1.has_regarding());
  EXPECT_FALSE(v1.has_series());
  EXPECT_FALSE(v1.has_related());
  EXPECT_FALSE(v1.has_deprecatedcount());
  EXPECT_EQ(v1.note(), "hello");
}

}  // namespace
}  // namespace kplane::objects
