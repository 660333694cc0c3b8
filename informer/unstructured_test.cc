#include "informer/unstructured.h"

#include <gtest/gtest.h>

#include "informer/indexer.h"
#include "informer/lister.h"
#include "informer/watch.h"
#include "objects/meta.h"

namespace kplane::informer {
namespace {

constexpr std::string_view kWidget =
    R"({"apiVersion":"example.com/v1","kind":"Widget",)"
    R"("metadata":{"name":"w1","namespace":"team-a","resourceVersion":"7",)"
    R"("labels":{"app":"web"},"annotations":{"note":"x"}},)"
    R"("spec":{"size":3,"enabled":true,"color":"red"}})";

TEST(UnstructuredTest, ReadsTopLevelMetadataAndNestedFields) {
  StatusOr<Unstructured> w = Unstructured::Parse(kWidget);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->ApiVersion(), "example.com/v1");
  EXPECT_EQ(w->Kind(), "Widget");
  EXPECT_EQ(w->Name(), "w1");
  EXPECT_EQ(w->Namespace(), "team-a");
  EXPECT_EQ(w->ResourceVersion(), "7");
  EXPECT_EQ(w->Labels(), (std::map<std::string, std::string>{{"app", "web"}}));
  EXPECT_EQ(w->Annotations().at("note"), "x");
  EXPECT_EQ(w->NestedInt64({"spec", "size"}), 3);
  EXPECT_EQ(w->NestedBool({"spec", "enabled"}), true);
  EXPECT_EQ(w->NestedString({"spec", "color"}), "red");
  EXPECT_EQ(w->NestedString({"spec", "size"}), std::nullopt);  // not a string
  EXPECT_EQ(w->Nested({"spec", "missing", "deeper"}), nullptr);
  EXPECT_EQ(w->Uid(), "");
}

TEST(UnstructuredTest, SetsAndRemovesNestedFields) {
  Unstructured u;
  u.SetApiVersion("example.com/v1");
  u.SetKind("Widget");
  u.SetName("w2");
  u.SetNestedInt64({"spec", "size"}, 5);
  u.SetNestedString({"spec", "color"}, "blue");
  u.SetNestedStringMap({"metadata", "labels"}, {{"a", "1"}, {"b", "2"}});
  EXPECT_EQ(u.ToJson(),
            R"({"apiVersion":"example.com/v1","kind":"Widget",)"
            R"("metadata":{"name":"w2","labels":{"a":"1","b":"2"}},)"
            R"("spec":{"size":5,"color":"blue"}})");
  // Replacing keeps the member's place; a scalar on the way becomes an
  // object.
  u.SetNestedInt64({"spec", "size"}, 6);
  u.SetNestedString({"spec", "color", "shade"}, "dark");
  EXPECT_EQ(u.NestedInt64({"spec", "size"}), 6);
  EXPECT_EQ(u.NestedString({"spec", "color", "shade"}), "dark");
  EXPECT_TRUE(u.RemoveNested({"spec", "color"}));
  EXPECT_FALSE(u.RemoveNested({"spec", "color"}));
  EXPECT_FALSE(u.RemoveNested({"nothing", "here"}));
  EXPECT_EQ(u.ToJson(),
            R"({"apiVersion":"example.com/v1","kind":"Widget",)"
            R"("metadata":{"name":"w2","labels":{"a":"1","b":"2"}},)"
            R"("spec":{"size":6}})");
  // Copies are deep.
  Unstructured copy = u;
  copy.SetName("other");
  EXPECT_EQ(u.Name(), "w2");
  EXPECT_EQ(copy.Name(), "other");
}

TEST(UnstructuredTest, RefusesWhatIsNotAnObject) {
  EXPECT_EQ(Unstructured::Parse("[1]").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Unstructured::Parse("{").status().code(),
            StatusCode::kInvalidArgument);
  objects::corev1::Pod pod;
  EXPECT_EQ(Unstructured::FromObject(pod).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(UnstructuredTest, InformerObjectsCarryMetadataForTheTypedMachinery) {
  StatusOr<std::shared_ptr<const UnstructuredObject>> obj =
      NewUnstructuredObject(std::string(kWidget));
  ASSERT_TRUE(obj.ok()) << obj.status();
  // objects/meta.h, keys, the namespace index and label selectors read it as
  // they read any kind.
  EXPECT_EQ(objects::Name(**obj), "w1");
  EXPECT_EQ(objects::ResourceVersion(**obj), "7");
  EXPECT_EQ(ObjectKey(**obj), "team-a/w1");
  EXPECT_EQ(NamespaceIndexFunc(**obj), std::vector<std::string>{"team-a"});
  EXPECT_EQ(LabelsOf(**obj).size(), 1u);
  StatusOr<Unstructured> back = Unstructured::FromObject(**obj);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->NestedInt64({"spec", "size"}), 3);

  EXPECT_FALSE(NewUnstructuredObject(R"({"metadata":{"name":5}})").ok());
  EXPECT_FALSE(NewUnstructuredObject("[]").ok());
}

TEST(UnstructuredTest, ParsesLists) {
  StatusOr<UnstructuredList> list = ParseUnstructuredList(
      R"({"apiVersion":"example.com/v1","kind":"WidgetList",)"
      R"("metadata":{"resourceVersion":"12","continue":"tok",)"
      R"("remainingItemCount":4},"items":[)" +
      std::string(kWidget) + "," + std::string(kWidget) + "]}");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->kind, "WidgetList");
  EXPECT_EQ(list->resource_version, "12");
  EXPECT_EQ(list->continue_token, "tok");
  EXPECT_EQ(list->remaining_item_count, 4);
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[1].Name(), "w1");
  EXPECT_TRUE(ParseUnstructuredList(R"({"items":null})").ok());
  EXPECT_FALSE(ParseUnstructuredList(R"({"items":[1]})").ok());
  EXPECT_FALSE(ParseUnstructuredList(R"({"items":{}})").ok());
}

TEST(UnstructuredTest, WatchDecoderKeepsObjectsOfUnstructuredKinds) {
  objects::KindInfo kind = MakeUnstructuredKind({"example.com", "v1"});
  EXPECT_TRUE(IsUnstructuredKind(kind));
  EXPECT_FALSE(IsUnstructuredKind(
      *objects::Scheme::Default().FindKind("v1", "ConfigMap")));
  WatchDecoder decoder(&kind);
  std::vector<WatchEvent> events;
  // The canonical shape (fast path), another member order (the DOM path), a
  // bookmark and an error.
  ASSERT_TRUE(decoder
                  .Feed(R"({"type":"ADDED","object":)" + std::string(kWidget) +
                            "}\n" + R"({"object":)" + std::string(kWidget) +
                            R"(,"type":"MODIFIED"})" + "\n" +
                            R"({"type":"BOOKMARK","object":{"kind":"Widget",)"
                            R"("apiVersion":"example.com/v1","metadata":)"
                            R"({"resourceVersion":"9"}}})"
                            "\n"
                            R"({"type":"ERROR","object":{"kind":"Status",)"
                            R"("apiVersion":"v1","status":"Failure",)"
                            R"("reason":"Expired","code":410,)"
                            R"("message":"too old"}})"
                            "\n",
                        &events)
                  .ok());
  ASSERT_EQ(events.size(), 4u);
  for (int i : {0, 1}) {
    StatusOr<Unstructured> u = Unstructured::FromObject(*events[i].object);
    ASSERT_TRUE(u.ok()) << u.status();
    EXPECT_EQ(u->NestedString({"spec", "color"}), "red");
    EXPECT_EQ(events[i].ResourceVersion(), "7");
  }
  EXPECT_EQ(events[1].type, EventType::kModified);
  EXPECT_EQ(events[2].ResourceVersion(), "9");
  EXPECT_EQ(events[3].error.code(), StatusCode::kExpired);

  // Unstructured objects travel as JSON only.
  WatchDecoder protobuf(&kind, WatchFraming::kProtobufFrames);
  objects::metav1::WatchEvent frame;
  frame.set_type("ADDED");
  std::string payload = frame.SerializeAsString();
  EXPECT_EQ(protobuf.DecodeEvent(payload).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kplane::informer
