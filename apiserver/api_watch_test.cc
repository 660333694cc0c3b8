// HTTP tests of WATCH, discovery, version, OpenAPI and health against a
// real ApiServer on a loopback port over an embedded store.
#include <gtest/gtest.h>

#include <atomic>

#include "apiserver/test_server.h"
#include "objects/envelope.h"
#include "objects/types.h"
#include "storage/forwarding_kv.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";
constexpr char kPods[] = "/api/v1/namespaces/default/pods";

std::string ConfigMap(const std::string& name, const std::string& value = "v") {
  return R"({"metadata":{"name":")" + name + R"("},"data":{"k":")" + value +
         "\"}}";
}

std::string Type(const rapidjson::Document& e) {
  return e.IsObject() && e.HasMember("type") ? e["type"].GetString() : "";
}
std::string Name(const rapidjson::Document& e) {
  return e["object"]["metadata"]["name"].GetString();
}

TEST(ApiWatchTest, ZeroOrEmptyResourceVersionStartsWithSyntheticAdded) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("b")).code, 201);
  for (const char* rv : {"0", ""}) {
    auto w =
        s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv);
    rapidjson::Document e1 = w->NextJson();
    rapidjson::Document e2 = w->NextJson();
    EXPECT_EQ(Type(e1), "ADDED");
    EXPECT_EQ(Name(e1), "a");
    EXPECT_EQ(Type(e2), "ADDED");
    EXPECT_EQ(Name(e2), "b");
    EXPECT_STREQ(e1["object"]["kind"].GetString(), "ConfigMap");
    EXPECT_STREQ(e1["object"]["apiVersion"].GetString(), "v1");
    ASSERT_EQ(s.Put(std::string(kConfigMaps) + "/a", ConfigMap("a", rv)).code,
              200);
    rapidjson::Document e3 = w->NextJson();
    EXPECT_EQ(Type(e3), "MODIFIED");
    EXPECT_EQ(Name(e3), "a");
  }
}

TEST(ApiWatchTest, ResourceVersionNSendsStrictlyLaterEvents) {
  TestServer s;
  Response a = s.Post(kConfigMaps, ConfigMap("a"));
  const std::string rv = a.Str({"metadata", "resourceVersion"});
  Response b = s.Post(kConfigMaps, ConfigMap("b"));
  ASSERT_EQ(s.Delete(std::string(kConfigMaps) + "/a").code, 200);
  auto w =
      s.Watch(std::string(kConfigMaps) + "?watch=True&resourceVersion=" + rv);
  rapidjson::Document e1 = w->NextJson();
  EXPECT_EQ(Type(e1), "ADDED");
  EXPECT_EQ(Name(e1), "b");
  EXPECT_EQ(
      std::string(e1["object"]["metadata"]["resourceVersion"].GetString()),
      b.Str({"metadata", "resourceVersion"}));
  rapidjson::Document e2 = w->NextJson();
  EXPECT_EQ(Type(e2), "DELETED");
  EXPECT_EQ(Name(e2), "a");
  // The DELETED object carries the deletion's revision.
  EXPECT_GT(
      std::stoll(e2["object"]["metadata"]["resourceVersion"].GetString()),
      std::stoll(e1["object"]["metadata"]["resourceVersion"].GetString()));
}

TEST(ApiWatchTest, SingleObjectWatchLikeKubectlGetW) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("x")).code, 201);
  auto w =
      s.Watch(std::string(kConfigMaps) +
              "?fieldSelector=metadata.name%3Dx&resourceVersion=0&watch=true");
  rapidjson::Document first = w->NextJson();
  EXPECT_EQ(Type(first), "ADDED");
  EXPECT_EQ(Name(first), "x");
  ASSERT_EQ(s.Put(std::string(kConfigMaps) + "/a", ConfigMap("a", "2")).code,
            200);
  ASSERT_EQ(s.Put(std::string(kConfigMaps) + "/x", ConfigMap("x", "2")).code,
            200);
  rapidjson::Document next = w->NextJson();
  EXPECT_EQ(Type(next), "MODIFIED");
  EXPECT_EQ(Name(next), "x");  // the change to "a" was filtered out
}

TEST(ApiWatchTest, BookmarksOnlyWhenAsked) {
  TestServer s([](ApiServerOptions* o) {
    o->cacher.bookmark_interval = milliseconds(50);
  });
  Response list = s.Get(kConfigMaps);
  const std::string rv = list.Str({"metadata", "resourceVersion"});
  auto with =
      s.Watch(std::string(kConfigMaps) +
              "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv);
  auto without =
      s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv);
  // The cache's revision moves on (a write elsewhere, then a consistent
  // read that makes the configmaps cache catch up): the next bookmark
  // timer reports it, on the stream that asked only.
  ASSERT_EQ(s.Post("/api/v1/namespaces/default/secrets",
                   R"({"metadata":{"name":"elsewhere"}})")
                .code,
            201);
  ASSERT_EQ(s.Get(kConfigMaps).code, 200);
  rapidjson::Document b = with->NextJson();
  ASSERT_EQ(Type(b), "BOOKMARK");
  EXPECT_STREQ(b["object"]["kind"].GetString(), "ConfigMap");
  EXPECT_GT(std::stoll(b["object"]["metadata"]["resourceVersion"].GetString()),
            std::stoll(rv));
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("after")).code, 201);
  // The stream that did not ask sees the object first, no bookmark.
  rapidjson::Document e = without->NextJson();
  EXPECT_EQ(Type(e), "ADDED");
  EXPECT_EQ(Name(e), "after");
}

TEST(ApiWatchTest, TimeoutSecondsEndsTheStream) {
  TestServer s;
  auto w = s.Watch(std::string(kConfigMaps) + "?watch=1&timeoutSeconds=1");
  EXPECT_TRUE(w->WaitEnd());
  EXPECT_EQ(w->status(), 200);
}

TEST(ApiWatchTest, SendInitialEventsEndsWithAnnotatedBookmark) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  auto w = s.Watch(std::string(kConfigMaps) +
                   "?watch=1&sendInitialEvents=true&resourceVersionMatch="
                   "NotOlderThan&allowWatchBookmarks=true");
  rapidjson::Document e1 = w->NextJson();
  EXPECT_EQ(Type(e1), "ADDED");
  rapidjson::Document e2 = w->NextJson();
  ASSERT_EQ(Type(e2), "BOOKMARK");
  EXPECT_STREQ(
      e2["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"]
          .GetString(),
      "true");
  Response invalid =
      s.Get(std::string(kConfigMaps) + "?watch=1&sendInitialEvents=true");
  EXPECT_EQ(invalid.code, 422) << invalid.body;
  EXPECT_EQ(invalid.Str({"reason"}), "Invalid");
}

// Only a watch-list (sendInitialEvents=true) ends its initial events with
// the k8s.io/initial-events-end bookmark (kube's isListWatchRequest); a
// legacy watch from resourceVersion 0 or "" goes straight on to the changes.
TEST(ApiWatchTest, LegacyWatchGetsNoInitialEventsEndBookmark) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  std::vector<std::string> names = {"a"};
  for (const std::string rv : {"0", ""}) {
    auto w = s.Watch(std::string(kConfigMaps) +
                     "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv);
    for (const std::string& name : names) {
      rapidjson::Document e = w->NextJson();
      ASSERT_EQ(Type(e), "ADDED");
      EXPECT_EQ(Name(e), name);
    }
    const std::string next = "after-" + std::to_string(names.size());
    ASSERT_EQ(s.Post(kConfigMaps, ConfigMap(next)).code, 201);
    rapidjson::Document e = w->NextJson();
    ASSERT_EQ(Type(e), "ADDED") << "resourceVersion=\"" << rv << "\"";
    EXPECT_EQ(Name(e), next);
    names.push_back(next);
  }
}

// Swallows the storage watches' progress notifications while `drop` is set:
// a watch cache then stays at its resource's last change while writes to
// other resources move the store's revision on.
class NoProgressKV : public storage::ForwardingKV {
 public:
  using ForwardingKV::ForwardingKV;
  StatusOr<std::unique_ptr<storage::Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req,
      storage::WatchCallback cb) override {
    return ForwardingKV::StartWatch(
        req, [this, cb = std::move(cb)](const etcdserverpb::WatchResponse& r) {
          if (drop.load() && r.events_size() == 0 && !r.created() &&
              !r.canceled()) {
            return;
          }
          cb(r);
        });
  }
  std::atomic<bool> drop{true};
};

// A watch-list from resourceVersion "" starts at least as new as the store
// was when it was asked (kube: the cache catches up with etcd's current
// revision or the watch fails with 504 Too large resource version); it is
// never served from a cache that lags, nor does it read the whole store.
// A legacy watch from "" is served from the cache as it is, as kube does.
TEST(ApiWatchTest, WatchListFromEmptyResourceVersionIsNeverStale) {
  TestServer backing;
  NoProgressKV kv(backing.store());
  TestServer s(&kv, [](ApiServerOptions* o) {
    o->cacher.consistent_read_wait = milliseconds(200);
  });
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  // A write elsewhere: the store moves on; the configmaps cache sees no
  // change of its own and no progress notification.
  Response other = s.Post("/api/v1/namespaces/default/secrets",
                          R"({"metadata":{"name":"elsewhere"}})");
  ASSERT_EQ(other.code, 201);
  const int64_t store_rev =
      std::stoll(other.Str({"metadata", "resourceVersion"}));
  const std::string watch_list =
      std::string(kConfigMaps) +
      "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
      "&allowWatchBookmarks=true";

  Response stale = s.Get(watch_list + "&timeoutSeconds=1");
  ASSERT_NE(stale.code, 200) << "served while the cache lags the store (at "
                             << store_rev << "): " << stale.body;
  EXPECT_EQ(stale.code, 504) << stale.body;
  EXPECT_EQ(stale.Str({"reason"}), "Timeout");
  EXPECT_NE(stale.Str({"message"}).find("Too large resource version"),
            std::string::npos)
      << stale.body;

  auto legacy = s.Watch(std::string(kConfigMaps) + "?watch=1");
  rapidjson::Document added = legacy->NextJson();
  EXPECT_EQ(Type(added), "ADDED");
  EXPECT_EQ(Name(added), "a");
  // Neither watch fell back to reading the store.
  EXPECT_EQ(s.metrics()->Render().find(
                R"(resource="configmaps",success="false",fallback="true"})"),
            std::string::npos);

  // With progress the cache catches up, and the bookmark ending the
  // initial events is at least the store's revision.
  kv.drop.store(false);
  auto w = s.Watch(watch_list);
  rapidjson::Document e1 = w->NextJson();
  EXPECT_EQ(Type(e1), "ADDED");
  rapidjson::Document e2 = w->NextJson();
  ASSERT_EQ(Type(e2), "BOOKMARK");
  EXPECT_GE(std::stoll(e2["object"]["metadata"]["resourceVersion"].GetString()),
            store_rev);
}

// For a server made with window_events = 4: creates 12 ConfigMaps
// (c0..c11) and returns the first one's resourceVersion, which the
// cache's window no longer covers ("" after a failure).
std::string ExpiredResourceVersion(TestServer& s) {
  Response first = s.Post(kConfigMaps, ConfigMap("c0"));
  const std::string old_rv = first.Str({"metadata", "resourceVersion"});
  std::string last_rv;
  for (int i = 1; i < 12; ++i) {
    Response r = s.Post(kConfigMaps, ConfigMap("c" + std::to_string(i)));
    EXPECT_EQ(r.code, 201);
    last_rv = r.Str({"metadata", "resourceVersion"});
  }
  // A LIST not older than the last create is served by the cache once it
  // reached it: from then on its 4-event window no longer covers old_rv (a
  // cache still behind would rightly serve the watch).
  if (s.Get(std::string(kConfigMaps) + "?resourceVersion=" + last_rv).code !=
      200) {
    ADD_FAILURE() << "the cache did not reach " << last_rv;
    return "";
  }
  return old_rv;
}

TEST(ApiWatchTest, TooOldResourceVersionIsAnExpiredErrorEventThenRelist) {
  TestServer s([](ApiServerOptions* o) { o->cacher.window_events = 4; });
  const std::string old_rv = ExpiredResourceVersion(s);
  ASSERT_FALSE(old_rv.empty());
  auto w =
      s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + old_rv);
  rapidjson::Document e = w->NextJson();
  ASSERT_EQ(Type(e), "ERROR");
  EXPECT_STREQ(e["object"]["kind"].GetString(), "Status");
  EXPECT_EQ(e["object"]["code"].GetInt(), 410);
  EXPECT_STREQ(e["object"]["reason"].GetString(), "Expired");
  EXPECT_TRUE(e["object"].HasMember("message"));
  EXPECT_TRUE(w->WaitEnd());  // closed after the ERROR
  EXPECT_EQ(w->status(), 200);
  // The client relists and watches from the list's resourceVersion.
  Response list = s.Get(kConfigMaps);
  ASSERT_EQ(list.At({"items"})->Size(), 12u);
  auto w2 = s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" +
                    list.Str({"metadata", "resourceVersion"}));
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("fresh")).code, 201);
  rapidjson::Document e2 = w2->NextJson();
  EXPECT_EQ(Type(e2), "ADDED");
  EXPECT_EQ(Name(e2), "fresh");
}

TEST(ApiWatchTest, TableWatchSendsColumnsOnlyFirst) {
  TestServer s;
  ASSERT_EQ(
      s.Post(
           kPods,
           R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}})")
          .code,
      201);
  auto w = s.Watch(
      std::string(kPods) + "?watch=1&resourceVersion=0",
      {{"Accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  rapidjson::Document e1 = w->NextJson();
  ASSERT_EQ(Type(e1), "ADDED");
  EXPECT_STREQ(e1["object"]["kind"].GetString(), "Table");
  EXPECT_TRUE(e1["object"]["columnDefinitions"].IsArray());
  EXPECT_STREQ(e1["object"]["rows"][0]["cells"][0].GetString(), "p");
  EXPECT_STREQ(e1["object"]["rows"][0]["object"]["kind"].GetString(),
               "PartialObjectMetadata");
  ASSERT_EQ(
      s.Patch(std::string(kPods) + "/p", R"({"metadata":{"labels":{"a":"b"}}})",
              "application/merge-patch+json")
          .code,
      200);
  rapidjson::Document e2 = w->NextJson();
  EXPECT_EQ(Type(e2), "MODIFIED");
  EXPECT_TRUE(e2["object"]["columnDefinitions"].IsNull());
  EXPECT_EQ(e2["object"]["rows"].Size(), 1u);
}

// The i-th frame of a protobuf watch's body (counted from the start).
template <typename Stream>
objects::metav1::WatchEvent ProtoFrame(Stream* w, int index) {
  size_t off = 0;
  std::string raw;
  for (int i = 0;; ++i) {
    raw = w->WaitRaw(off + 4);
    if (raw.size() < off + 4) return objects::metav1::WatchEvent();
    const uint32_t len = (uint32_t(uint8_t(raw[off])) << 24) |
                         (uint32_t(uint8_t(raw[off + 1])) << 16) |
                         (uint32_t(uint8_t(raw[off + 2])) << 8) |
                         uint32_t(uint8_t(raw[off + 3]));
    raw = w->WaitRaw(off + 4 + len);
    if (raw.size() < off + 4 + len) return objects::metav1::WatchEvent();
    if (i == index) {
      objects::metav1::WatchEvent ev;
      EXPECT_TRUE(ev.ParseFromString(raw.substr(off + 4, len)));
      return ev;
    }
    off += 4 + len;
  }
}

constexpr char kProtobufMetadata[] =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;"
    "g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;"
    "g=meta.k8s.io;v=v1,application/json";

TEST(ApiWatchTest, ProtobufWatchFrames) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  auto w = s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=0",
                   {{"Accept", "application/vnd.kubernetes.protobuf"}});
  objects::metav1::WatchEvent ev = ProtoFrame(w.get(), 0);
  EXPECT_EQ(ev.type(), "ADDED");
  objects::corev1::ConfigMap cm;
  auto tm = objects::DecodeEnvelopeInto(ev.object().raw(), &cm);
  ASSERT_TRUE(tm.ok()) << tm.status();
  EXPECT_EQ(tm->kind, "ConfigMap");
  EXPECT_EQ(cm.metadata().name(), "a");
}

// kube's metadata informers (the garbage collector's) ask for
// PartialObjectMetadata in protobuf first. Each watcher gets its own form:
// a plain protobuf watcher of the same resource still gets ConfigMaps.
TEST(ApiWatchTest, ProtobufMetadataWatchFrames) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  const std::string url =
      std::string(kConfigMaps) + "?watch=1&resourceVersion=0";
  auto meta_watch = s.Watch(url, {{"Accept", kProtobufMetadata}});
  auto full_watch =
      s.Watch(url, {{"Accept", "application/vnd.kubernetes.protobuf"}});
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    if (i == 1) {  // both watchers have their ADDED: change the object
      ASSERT_EQ(
          s.Patch(std::string(kConfigMaps) + "/a",
                  R"({"metadata":{"labels":{"x":"y"}},"data":{"k2":"v"}})",
                  "application/merge-patch+json")
              .code,
          200);
    }
    objects::metav1::WatchEvent ev = ProtoFrame(meta_watch.get(), i);
    EXPECT_EQ(ev.type(), i == 0 ? "ADDED" : "MODIFIED");
    objects::metav1::PartialObjectMetadata partial;
    auto tm = objects::DecodeEnvelopeInto(ev.object().raw(), &partial);
    ASSERT_TRUE(tm.ok()) << tm.status();
    EXPECT_EQ(tm->kind, "PartialObjectMetadata");
    EXPECT_EQ(tm->api_version, "meta.k8s.io/v1");
    EXPECT_EQ(partial.metadata().name(), "a");
    EXPECT_FALSE(partial.metadata().uid().empty());
    EXPECT_FALSE(partial.metadata().resourceversion().empty());
    EXPECT_EQ(partial.metadata().labels().count("x"), i == 0 ? 0u : 1u);

    objects::metav1::WatchEvent full = ProtoFrame(full_watch.get(), i);
    objects::corev1::ConfigMap cm;
    auto full_tm = objects::DecodeEnvelopeInto(full.object().raw(), &cm);
    ASSERT_TRUE(full_tm.ok()) << full_tm.status();
    EXPECT_EQ(full_tm->kind, "ConfigMap");
    EXPECT_EQ(cm.data().count("k2"), i == 0 ? 0u : 1u);
  }
}

// The BOOKMARK that ends a metadata watch's initial events is a
// PartialObjectMetadata too, with its resourceVersion and annotation.
TEST(ApiWatchTest, ProtobufMetadataBookmarkEndsTheInitialEvents) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  auto w = s.Watch(std::string(kConfigMaps) +
                       "?watch=1&sendInitialEvents=true&resourceVersionMatch="
                       "NotOlderThan&allowWatchBookmarks=true",
                   {{"Accept", kProtobufMetadata}});
  EXPECT_EQ(ProtoFrame(w.get(), 0).type(), "ADDED");
  objects::metav1::WatchEvent bookmark = ProtoFrame(w.get(), 1);
  ASSERT_EQ(bookmark.type(), "BOOKMARK");
  objects::metav1::PartialObjectMetadata partial;
  auto tm = objects::DecodeEnvelopeInto(bookmark.object().raw(), &partial);
  ASSERT_TRUE(tm.ok()) << tm.status();
  EXPECT_EQ(tm->kind, "PartialObjectMetadata");
  EXPECT_FALSE(partial.metadata().resourceversion().empty());
  EXPECT_EQ(partial.metadata().annotations().at("k8s.io/initial-events-end"),
            "true");
}

// A metadata watcher (kube's garbage collector's) that asks for a version
// the cache no longer has gets the same ERROR, in its protobuf form: a
// Status, not a PartialObjectMetadata.
TEST(ApiWatchTest, ProtobufMetadataWatchOfAnExpiredVersionGetsA410) {
  TestServer s([](ApiServerOptions* o) { o->cacher.window_events = 4; });
  const std::string old_rv = ExpiredResourceVersion(s);
  ASSERT_FALSE(old_rv.empty());
  auto w =
      s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + old_rv,
              {{"Accept", kProtobufMetadata}});
  objects::metav1::WatchEvent ev = ProtoFrame(w.get(), 0);
  ASSERT_EQ(ev.type(), "ERROR");
  objects::metav1::Status status;
  auto tm = objects::DecodeEnvelopeInto(ev.object().raw(), &status);
  ASSERT_TRUE(tm.ok()) << tm.status();
  EXPECT_EQ(tm->kind, "Status");
  EXPECT_EQ(tm->api_version, "v1");
  EXPECT_EQ(status.code(), 410);
  EXPECT_EQ(status.reason(), "Expired");
  EXPECT_TRUE(w->WaitEnd());  // closed after the ERROR
}

// The metadata form must fit the answer: each WATCH event is one object,
// so PartialObjectMetadataList is 406, as for a GET (kube-apiserver starts
// such a watch and ends it without an event when the first one fails to
// convert; a 406 says why).
TEST(ApiWatchTest, MetadataListFormIsNotAcceptableForAWatch) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  Response r = s.Get(std::string(kConfigMaps) + "?watch=1&resourceVersion=0",
                     "application/json;as=PartialObjectMetadataList;"
                     "g=meta.k8s.io;v=v1,application/json");
  EXPECT_EQ(r.code, 406) << r.body;
  EXPECT_EQ(r.Str({"reason"}), "NotAcceptable");
  EXPECT_EQ(r.Str({"message"}),
            "you requested PartialObjectMetadataList, but the requested "
            "object is not a list (*core.ConfigMap)");
}

TEST(ApiWatchTest, WatchCountIsLimited) {
  TestServer s([](ApiServerOptions* o) { o->max_watches = 2; });
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  auto w1 = s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=0");
  auto w2 = s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=0");
  // Both are open once each delivered its first event.
  EXPECT_EQ(Type(w1->NextJson()), "ADDED");
  EXPECT_EQ(Type(w2->NextJson()), "ADDED");
  Response third = s.Get(std::string(kConfigMaps) + "?watch=1");
  EXPECT_EQ(third.code, 429);
  EXPECT_EQ(third.Str({"reason"}), "TooManyRequests");
  // Ordinary requests are not affected.
  EXPECT_EQ(s.Get(kConfigMaps).code, 200);
}

TEST(ApiWatchTest, TwoApiServersShareOneStore) {
  TestServer a;
  TestServer b(a.store(), nullptr);
  Response list = b.Get(kConfigMaps);
  auto w = b.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" +
                   list.Str({"metadata", "resourceVersion"}));
  ASSERT_EQ(a.Post(kConfigMaps, ConfigMap("via-a")).code, 201);
  rapidjson::Document e = w->NextJson();
  EXPECT_EQ(Type(e), "ADDED");
  EXPECT_EQ(Name(e), "via-a");
  // Optimistic concurrency holds across servers.
  Response got = b.Get(std::string(kConfigMaps) + "/via-a");
  ASSERT_EQ(
      a.Put(std::string(kConfigMaps) + "/via-a", ConfigMap("via-a", "2")).code,
      200);
  std::string stale = R"({"metadata":{"name":"via-a","resourceVersion":")" +
                      got.Str({"metadata", "resourceVersion"}) +
                      R"("},"data":{"k":"3"}})";
  EXPECT_EQ(b.Put(std::string(kConfigMaps) + "/via-a", stale).code, 409);
}

TEST(ApiDiscoveryTest, LegacyAndAggregatedDiscovery) {
  TestServer s;
  Response api = s.Get("/api");
  ASSERT_EQ(api.code, 200);
  EXPECT_EQ(api.Str({"kind"}), "APIVersions");
  EXPECT_EQ(api.headers.Get("Content-Type"), "application/json");
  Response apis = s.Get("/apis");
  EXPECT_EQ(apis.Str({"kind"}), "APIGroupList");
  Response v1 = s.Get("/api/v1");
  EXPECT_EQ(v1.Str({"kind"}), "APIResourceList");
  EXPECT_EQ(v1.Str({"groupVersion"}), "v1");
  Response apps = s.Get("/apis/apps/v1");
  EXPECT_EQ(apps.Str({"groupVersion"}), "apps/v1");
  Response group = s.Get("/apis/apps");
  EXPECT_EQ(group.Str({"kind"}), "APIGroup");
  EXPECT_EQ(s.Get("/apis/nope/v1").code, 404);

  const std::string v2 =
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
      "application/"
      "json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
      "application/json";
  Response agg = s.Get("/apis", v2);
  ASSERT_EQ(agg.code, 200);
  EXPECT_EQ(
      agg.headers.Get("Content-Type"),
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  EXPECT_EQ(agg.Str({"kind"}), "APIGroupDiscoveryList");
  Response core = s.Get("/api", v2);
  EXPECT_EQ(core.Str({"kind"}), "APIGroupDiscoveryList");
  const rapidjson::Value& res =
      (*core.At({"items"}))[0]["versions"][0]["resources"];
  bool pods = false;
  for (const auto& r : res.GetArray()) {
    if (std::string(r["resource"].GetString()) == "pods") {
      pods = true;
      EXPECT_STREQ(r["scope"].GetString(), "Namespaced");
    }
  }
  EXPECT_TRUE(pods);
  Response beta_only =
      s.Get("/apis",
            "application/"
            "json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json");
  EXPECT_EQ(beta_only.Str({"kind"}), "APIGroupList");
}

// The reviews are listed as kube-apiserver 1.32 lists them (kubectl get
// --raw /apis/authorization.k8s.io/v1 against kube): create only, no
// storageVersionHash; v1beta1 selfsubjectreviews is answered, not listed.
TEST(ApiDiscoveryTest, ReviewsAreListedAsKubeListsThem) {
  TestServer s;
  Response authz = s.Get("/apis/authorization.k8s.io/v1");
  ASSERT_EQ(authz.code, 200) << authz.body;
  EXPECT_EQ(authz.body,
            R"({"kind":"APIResourceList","apiVersion":"v1",)"
            R"("groupVersion":"authorization.k8s.io/v1","resources":[)"
            R"({"name":"localsubjectaccessreviews",)"
            R"("singularName":"localsubjectaccessreview","namespaced":true,)"
            R"("kind":"LocalSubjectAccessReview","verbs":["create"]},)"
            R"({"name":"selfsubjectaccessreviews",)"
            R"("singularName":"selfsubjectaccessreview","namespaced":false,)"
            R"("kind":"SelfSubjectAccessReview","verbs":["create"]},)"
            R"({"name":"selfsubjectrulesreviews",)"
            R"("singularName":"selfsubjectrulesreview","namespaced":false,)"
            R"("kind":"SelfSubjectRulesReview","verbs":["create"]},)"
            R"({"name":"subjectaccessreviews",)"
            R"("singularName":"subjectaccessreview","namespaced":false,)"
            R"("kind":"SubjectAccessReview","verbs":["create"]}]})");
  Response authn = s.Get("/apis/authentication.k8s.io/v1");
  ASSERT_EQ(authn.code, 200) << authn.body;
  EXPECT_EQ(
      authn.body,
      R"({"kind":"APIResourceList","apiVersion":"v1",)"
      R"("groupVersion":"authentication.k8s.io/v1","resources":[)"
      R"({"name":"selfsubjectreviews","singularName":"selfsubjectreview",)"
      R"("namespaced":false,"kind":"SelfSubjectReview","verbs":["create"]},)"
      R"({"name":"tokenreviews","singularName":"tokenreview",)"
      R"("namespaced":false,"kind":"TokenReview","verbs":["create"]}]})");
  EXPECT_EQ(s.Get("/apis/authentication.k8s.io/v1beta1").code, 404);
  Response group = s.Get("/apis/authentication.k8s.io");
  EXPECT_EQ(group.Str({"preferredVersion", "groupVersion"}),
            "authentication.k8s.io/v1");
  Response apis = s.Get("/apis");
  EXPECT_NE(apis.body.find(R"("name":"authorization.k8s.io")"),
            std::string::npos);
  // Listed, and still answered.
  Response review = s.Post(
      "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      R"({"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1",)"
      R"("spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}})");
  EXPECT_EQ(review.code, 201) << review.body;
}

TEST(ApiDiscoveryTest, VersionOpenApiHealth) {
  TestServer s;
  Response v = s.Get("/version?timeout=5s");
  ASSERT_EQ(v.code, 200);
  EXPECT_EQ(v.Str({"major"}), "1");
  EXPECT_EQ(v.Str({"minor"}), "32");
  EXPECT_EQ(v.Str({"gitVersion"}), "v1.32.4");
  Response index = s.Get("/openapi/v3");
  ASSERT_EQ(index.code, 200);
  std::string url = index.Str({"paths", "apis/apps/v1", "serverRelativeURL"});
  ASSERT_FALSE(url.empty()) << index.body;
  Response doc = s.Get(url);
  ASSERT_EQ(doc.code, 200);
  EXPECT_NE(doc.At({"paths",
                    "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
                    "patch"}),
            nullptr);
  EXPECT_EQ(s.Get("/openapi/v2").code, 200);
  EXPECT_EQ(s.Get("/healthz").body, "ok");
  EXPECT_EQ(s.Get("/livez").body, "ok");
  Response ready = s.Get("/readyz?verbose");
  EXPECT_EQ(ready.code, 200);
  EXPECT_NE(ready.body.find("readyz check passed"), std::string::npos);
  Response root = s.Get("/");
  EXPECT_NE(root.body.find("/api/v1"), std::string::npos);
  // The system namespaces exist.
  for (const char* ns :
       {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    EXPECT_EQ(s.Get(std::string("/api/v1/namespaces/") + ns).code, 200) << ns;
  }
}

}  // namespace
}  // namespace kplane::apiserver
