// The events.k8s.io/v1 Event strategy (event_strategy.cc): kube 1.32's
// ValidateEventCreate/ValidateEventUpdate for this version with kube's
// texts, the version's field labels, and the core/v1 table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "apiserver/registry/strategy.h"
#include "apiserver/registry/test_util.h"
#include "objects/events_types.h"
#include "objects/machinery/fields.h"
#include "objects/test_util.h"

namespace kplane::apiserver {
namespace {

using objects::eventsv1::Event;
using testing::Decode;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::StrategyOf;
using testing::Texts;

const Strategy& V1() { return StrategyOf("events.k8s.io", "events"); }

// What client-go's events.EventRecorder creates.
Event Valid() {
  return Decode<Event>(R"({"metadata":{"name":"web.17a","namespace":"default"},
    "eventTime":"2026-11-29T08:37:42.000000Z",
    "reportingController":"kplane.io/scheduler",
    "reportingInstance":"scheduler-node-1","action":"Binding",
    "reason":"Scheduled","regarding":{"kind":"Pod","namespace":"default",
    "name":"web","uid":"u1","apiVersion":"v1"},
    "note":"Successfully assigned default/web to node-1","type":"Normal"})");
}

TEST(EventsV1ValidationTest, AcceptsWhatTheNewRecorderWrites) {
  EXPECT_THAT(V1().ValidateCreate(Valid()), IsEmpty());
  Event series = Valid();
  series.mutable_series()->set_count(2);
  *series.mutable_series()->mutable_lastobservedtime() = series.eventtime();
  EXPECT_THAT(V1().ValidateCreate(series), IsEmpty());
}

TEST(EventsV1ValidationTest, RequiresTheNewFields) {
  Event ev;
  ev.mutable_metadata()->set_name("e");
  ev.mutable_metadata()->set_namespace_("default");
  // Without eventTime the legacy rules apply; the strict ones still want it.
  EXPECT_THAT(Texts(V1().ValidateCreate(ev)),
              ElementsAre("eventTime: Required value",
                          "type: Invalid value: \"\": has invalid value: "));
  ev = Valid();
  ev.clear_reportingcontroller();
  ev.clear_reportinginstance();
  ev.clear_action();
  ev.clear_reason();
  ev.set_type("Fatal");
  EXPECT_THAT(
      Texts(V1().ValidateCreate(ev)),
      ElementsAre(
          "reportingController: Required value",
          "reportingController: Invalid value: \"\": name part must be "
          "non-empty",
          "reportingController: Invalid value: \"\": name part must consist "
          "of alphanumeric characters, '-', '_' or '.', and must start and "
          "end with an alphanumeric character (e.g. 'MyName',  or "
          "'my.name',  or '123-abc', regex used for validation is "
          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
          "reportingInstance: Required value", "action: Required value",
          "reason: Required value",
          "type: Invalid value: \"\": has invalid value: Fatal"));
}

TEST(EventsV1ValidationTest, Limits) {
  Event ev = Valid();
  ev.set_note(std::string(1025, 'n'));
  ev.set_action(std::string(129, 'a'));
  ev.set_reason(std::string(129, 'r'));
  ev.set_reportinginstance(std::string(129, 'i'));
  EXPECT_THAT(Texts(V1().ValidateCreate(ev)),
              ElementsAre("reportingInstance: Invalid value: \"\": can have "
                          "at most 128 characters",
                          "action: Invalid value: \"\": can have at most 128 "
                          "characters",
                          "reason: Invalid value: \"\": can have at most 128 "
                          "characters",
                          "message: Invalid value: \"\": can have at most 1024 "
                          "characters"));
  ev = Valid();
  ev.set_note(std::string(1024, 'n'));
  EXPECT_THAT(V1().ValidateCreate(ev), IsEmpty());
}

TEST(EventsV1ValidationTest, DeprecatedFieldsAndSeries) {
  Event ev = Valid();
  ev.set_deprecatedcount(3);
  ev.mutable_deprecatedsource()->set_component("kubelet");
  *ev.mutable_deprecatedfirsttimestamp() =
      Decode<Event>(R"({"deprecatedFirstTimestamp":"2026-11-29T08:37:42Z"})")
          .deprecatedfirsttimestamp();
  ev.mutable_series()->set_count(1);
  EXPECT_THAT(
      Texts(V1().ValidateCreate(ev)),
      ElementsAre("series.count: Invalid value: \"\": should be at least 2",
                  "series.lastObservedTime: Required value",
                  "firstTimestamp: Invalid value: \"\": needs to be unset",
                  "count: Invalid value: \"\": needs to be unset",
                  "source: Invalid value: \"\": needs to be unset"));
  // Names are DNS subdomains here (core/v1 only wants path segments).
  ev = Valid();
  ev.mutable_metadata()->set_name("Web_1");
  ASSERT_EQ(V1().ValidateCreate(ev).size(), 1u);
  EXPECT_EQ(V1().ValidateCreate(ev)[0].field, "metadata.name");
  // Cluster-scoped objects' events go to default or kube-system.
  ev = Valid();
  ev.mutable_regarding()->clear_namespace_();
  ev.mutable_metadata()->set_namespace_("team");
  EXPECT_THAT(Texts(V1().ValidateCreate(ev)),
              ElementsAre("involvedObject.namespace: Invalid value: \"\": "
                          "does not match event.namespace"));
}

TEST(EventsV1ValidationTest, UpdatesOnlyMetadataAndSeries) {
  Event old = Valid();
  old.mutable_metadata()->set_resourceversion("5");
  Event now = old;
  (*now.mutable_metadata()->mutable_labels())["seen"] = "yes";
  now.mutable_series()->set_count(2);
  *now.mutable_series()->mutable_lastobservedtime() = now.eventtime();
  EXPECT_THAT(V1().ValidateUpdate(now, old), IsEmpty());
  now.set_note("changed");
  now.set_action("Other");
  now.mutable_regarding()->set_name("other");
  now.set_reportingcontroller("other");
  EXPECT_THAT(Texts(V1().ValidateUpdate(now, old)),
              ElementsAre("involvedObject: Invalid value: "
                          "core.ObjectReference{Kind:\"Pod\", "
                          "Namespace:\"default\", Name:\"other\", "
                          "UID:\"u1\", APIVersion:\"v1\", "
                          "ResourceVersion:\"\", FieldPath:\"\"}: field is "
                          "immutable",
                          "message: Invalid value: \"changed\": field is "
                          "immutable",
                          "action: Invalid value: \"Other\": field is "
                          "immutable",
                          "reportingController: Invalid value: \"other\": "
                          "field is immutable"));
  // A new series is validated.
  now = old;
  now.mutable_series()->set_count(1);
  EXPECT_THAT(
      Texts(V1().ValidateUpdate(now, old)),
      ElementsAre("series.count: Invalid value: \"\": should be at least 2",
                  "series.lastObservedTime: Required value"));
}

bool Selects(const Strategy& s, const google::protobuf::Message& obj,
             std::string_view selector) {
  auto fs = machinery::FieldSelector::Parse(selector);
  EXPECT_TRUE(fs.ok()) << fs.status();
  EXPECT_TRUE(fs->Validate(s.SupportedFieldLabels()).ok()) << selector;
  return fs->Matches([&](std::string_view f) {
    auto v = s.FieldValue(obj, f);
    EXPECT_TRUE(v.has_value()) << f;
    return v.value_or("");
  });
}

TEST(EventsV1FieldSelectorTest, TheVersionsLabels) {
  const Event ev = Valid();
  EXPECT_TRUE(Selects(V1(), ev,
                      "regarding.kind=Pod,regarding.name=web,"
                      "regarding.namespace=default,regarding.uid=u1,"
                      "regarding.apiVersion=v1,regarding.resourceVersion=,"
                      "regarding.fieldPath="));
  EXPECT_TRUE(Selects(V1(), ev,
                      "reason=Scheduled,type=Normal,"
                      "reportingController=kplane.io/scheduler,"
                      "metadata.name=web.17a,metadata.namespace=default"));
  // source: deprecatedSource.component, else reportingController.
  EXPECT_TRUE(Selects(V1(), ev, "source=kplane.io/scheduler"));
  Event old_style = ev;
  old_style.mutable_deprecatedsource()->set_component("kubelet");
  EXPECT_TRUE(Selects(V1(), old_style, "source=kubelet"));
  EXPECT_FALSE(Selects(V1(), ev, "regarding.kind=Node"));
  // core/v1's names are not this version's.
  auto fs = machinery::FieldSelector::Parse("involvedObject.kind=Pod");
  ASSERT_TRUE(fs.ok());
  EXPECT_FALSE(fs->Validate(V1().SupportedFieldLabels()).ok());
}

TEST(EventsV1TableTest, PrintsAsCoreEvents) {
  const Event ev = Valid();
  const Strategy& core = StrategyOf("", "events");
  ASSERT_EQ(V1().Columns().size(), core.Columns().size());
  auto cells = [](const std::vector<TableCell>& row) {
    std::vector<std::string> out;
    for (const TableCell& c : row) {
      out.push_back(c.is_int ? std::to_string(c.num) : c.str);
    }
    return out;
  };
  const WallTime now = testing::At(testing::kCreated + 60);
  EXPECT_EQ(cells(V1().Row(ev, now)),
            cells(core.Row(objects::ToCoreEvent(ev), now)));
  EXPECT_EQ(cells(V1().Row(ev, now))[2], "Scheduled");
  EXPECT_EQ(cells(V1().Row(ev, now))[3], "pod/web");
}

}  // namespace
}  // namespace kplane::apiserver
