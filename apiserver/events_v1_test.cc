// events.k8s.io/v1 events over HTTP against a real ApiServer and store:
// one storage with core/v1 events (an object written through either version
// is read, listed, updated and watched through the other with the fields
// mapped), kube's validation, the version's field selectors, the table,
// discovery and OpenAPI; and --event-ttl: however an event is written
// (POST, PUT, apply, patch), it lives one TTL from that write. The TTL
// tests let real time pass (the store's shortest lease is 2 s) and await
// the store's deletions through a store watch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <optional>

#include "apiserver/test_server.h"
#include "base/mutex.h"

namespace kplane::apiserver {
namespace {

using ::testing::HasSubstr;
using testing::Response;
using testing::TestServer;

constexpr char kV1[] = "/apis/events.k8s.io/v1/namespaces/default/events";
constexpr char kCore[] = "/api/v1/namespaces/default/events";

// What client-go's events.EventRecorder (k8s.io/client-go/tools/events)
// posts.
std::string NewStyle(const std::string& name) {
  return R"({"apiVersion":"events.k8s.io/v1","kind":"Event",)"
         R"("metadata":{"name":")" +
         name +
         R"(","namespace":"default"},)"
         R"("eventTime":"2026-11-29T08:37:42.123456Z",)"
         R"("reportingController":"default-scheduler",)"
         R"("reportingInstance":"default-scheduler-node-1",)"
         R"("action":"Binding","reason":"Scheduled",)"
         R"("regarding":{"kind":"Pod","namespace":"default","name":"web",)"
         R"("uid":"u-1","apiVersion":"v1"},)"
         R"("note":"Successfully assigned default/web to node-1",)"
         R"("type":"Normal"})";
}

// What the core/v1 recorder (informer/event_recorder.h) posts.
std::string OldStyle(const std::string& name) {
  return R"({"metadata":{"name":")" + name +
         R"(","namespace":"default"},)"
         R"("involvedObject":{"kind":"Pod","namespace":"default","name":"db"},)"
         R"("reason":"Pulled","message":"Pulled image \"postgres\"",)"
         R"("source":{"component":"kubelet","host":"node-2"},)"
         R"("firstTimestamp":"2026-11-29T08:37:42Z",)"
         R"("lastTimestamp":"2026-11-29T08:40:42Z","count":3,)"
         R"("type":"Normal"})";
}

std::string Type(const rapidjson::Document& d) {
  return d.HasMember("type") ? d["type"].GetString() : "";
}
std::string Field(const rapidjson::Value& v, const char* a,
                  const char* b = nullptr) {
  const rapidjson::Value* p = &v;
  for (const char* k : {a, b}) {
    if (k == nullptr) break;
    if (!p->IsObject() || !p->HasMember(k)) return "";
    p = &(*p)[k];
  }
  return p->IsString() ? p->GetString() : "";
}

TEST(EventsV1Test, CreatedAsV1ReadAsCore) {
  TestServer s;
  Response created = s.Post(kV1, NewStyle("web.1"));
  ASSERT_EQ(created.code, 201) << created.body;
  EXPECT_EQ(created.Str({"apiVersion"}), "events.k8s.io/v1");
  EXPECT_EQ(created.Str({"note"}),
            "Successfully assigned default/web to node-1");

  Response core = s.Get(std::string(kCore) + "/web.1");
  ASSERT_EQ(core.code, 200) << core.body;
  EXPECT_EQ(core.Str({"apiVersion"}), "v1");
  EXPECT_EQ(core.Str({"message"}),
            "Successfully assigned default/web to node-1");
  EXPECT_EQ(core.Str({"involvedObject", "name"}), "web");
  EXPECT_EQ(core.Str({"involvedObject", "uid"}), "u-1");
  EXPECT_EQ(core.Str({"reportingComponent"}), "default-scheduler");
  EXPECT_EQ(core.Str({"reportingInstance"}), "default-scheduler-node-1");
  EXPECT_EQ(core.Str({"eventTime"}), "2026-11-29T08:37:42.123456Z");
  EXPECT_EQ(core.Str({"action"}), "Binding");
  EXPECT_EQ(core.Str({"metadata", "uid"}), created.Str({"metadata", "uid"}));
  EXPECT_EQ(core.Str({"metadata", "resourceVersion"}),
            created.Str({"metadata", "resourceVersion"}));
  // One object: deleting it through core/v1 removes it from events.k8s.io.
  EXPECT_EQ(s.Delete(std::string(kCore) + "/web.1").code, 200);
  EXPECT_EQ(s.Get(std::string(kV1) + "/web.1").code, 404);
}

TEST(EventsV1Test, CreatedAsCoreReadAndUpdatedAsV1) {
  TestServer s;
  ASSERT_EQ(s.Post(kCore, OldStyle("db.1")).code, 201);
  Response v1 = s.Get(std::string(kV1) + "/db.1");
  ASSERT_EQ(v1.code, 200) << v1.body;
  EXPECT_EQ(v1.Str({"kind"}), "Event");
  EXPECT_EQ(v1.Str({"apiVersion"}), "events.k8s.io/v1");
  EXPECT_EQ(v1.Str({"note"}), "Pulled image \"postgres\"");
  EXPECT_EQ(v1.Str({"regarding", "name"}), "db");
  EXPECT_EQ(v1.Str({"deprecatedSource", "component"}), "kubelet");
  EXPECT_EQ(v1.Str({"deprecatedSource", "host"}), "node-2");
  EXPECT_EQ(v1.Str({"deprecatedFirstTimestamp"}), "2026-11-29T08:37:42Z");
  EXPECT_EQ(v1.Str({"deprecatedLastTimestamp"}), "2026-11-29T08:40:42Z");
  ASSERT_NE(v1.At({"deprecatedCount"}), nullptr);
  EXPECT_EQ(v1.At({"deprecatedCount"})->GetInt(), 3);
  EXPECT_EQ(v1.At({"message"}), nullptr);

  // A patch through events.k8s.io keeps what only core/v1 names.
  Response patched = s.Patch(std::string(kV1) + "/db.1",
                             R"({"metadata":{"labels":{"seen":"yes"}}})",
                             "application/merge-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.body;
  Response core = s.Get(std::string(kCore) + "/db.1");
  EXPECT_EQ(core.Str({"metadata", "labels", "seen"}), "yes");
  EXPECT_EQ(core.Str({"source", "host"}), "node-2");
  EXPECT_EQ(core.At({"count"})->GetInt(), 3);
  // The strict rules of this version: the note cannot change.
  Response refused = s.Patch(std::string(kV1) + "/db.1", R"({"note":"other"})",
                             "application/merge-patch+json");
  EXPECT_EQ(refused.code, 422) << refused.body;
  EXPECT_THAT(refused.Str({"message"}),
              HasSubstr("message: Invalid value: \"other\": field is "
                        "immutable"));

  Response list = s.Get(kV1);
  ASSERT_EQ(list.code, 200);
  EXPECT_EQ(list.Str({"kind"}), "EventList");
  EXPECT_EQ(list.Str({"apiVersion"}), "events.k8s.io/v1");
  ASSERT_EQ(list.At({"items"})->Size(), 1u);
}

TEST(EventsV1Test, ValidationAsKube) {
  TestServer s;
  Response r =
      s.Post(kV1, R"({"metadata":{"name":"bad"},"regarding":{"kind":"Pod"}})");
  EXPECT_EQ(r.code, 422) << r.body;
  EXPECT_EQ(r.Str({"message"}),
            "Event.events.k8s.io \"bad\" is invalid: [eventTime: Required "
            "value, type: Invalid value: \"\": has invalid value: ]");
  EXPECT_EQ(r.Str({"details", "group"}), "events.k8s.io");
  // The core/v1 path keeps its legacy rules for the same body.
  EXPECT_EQ(s.Post(kCore, R"({"metadata":{"name":"bad"},)"
                          R"("involvedObject":{"kind":"Pod",)"
                          R"("namespace":"default"}})")
                .code,
            201);
}

TEST(EventsV1Test, FieldSelectorsOfTheVersion) {
  TestServer s;
  ASSERT_EQ(s.Post(kV1, NewStyle("web.1")).code, 201);
  ASSERT_EQ(s.Post(kCore, OldStyle("db.1")).code, 201);
  Response web =
      s.Get(std::string(kV1) + "?fieldSelector=regarding.name%3Dweb");
  ASSERT_EQ(web.code, 200) << web.body;
  ASSERT_EQ(web.At({"items"})->Size(), 1u);
  EXPECT_EQ(Field((*web.At({"items"}))[0], "metadata", "name"), "web.1");
  Response kubelet =
      s.Get(std::string(kV1) + "?fieldSelector=source%3Dkubelet");
  ASSERT_EQ(kubelet.At({"items"})->Size(), 1u);
  EXPECT_EQ(Field((*kubelet.At({"items"}))[0], "metadata", "name"), "db.1");
  Response sched =
      s.Get(std::string(kV1) +
            "?fieldSelector=reportingController%3Ddefault-scheduler");
  ASSERT_EQ(sched.At({"items"})->Size(), 1u);
  Response wrong =
      s.Get(std::string(kV1) + "?fieldSelector=involvedObject.name%3Dweb");
  EXPECT_EQ(wrong.code, 400) << wrong.body;
  EXPECT_THAT(wrong.Str({"message"}),
              HasSubstr("field label not supported: involvedObject.name"));
}

// A watch through either version sees writes through the other, in its own
// form.
TEST(EventsV1Test, WatchAcrossVersions) {
  TestServer s;
  Response start = s.Get(kV1);
  ASSERT_EQ(start.code, 200);
  const std::string rv = start.Str({"metadata", "resourceVersion"});
  auto v1_watch = s.Watch(std::string(kV1) + "?watch=1&resourceVersion=" + rv);
  auto core_watch =
      s.Watch(std::string(kCore) + "?watch=1&resourceVersion=" + rv);

  ASSERT_EQ(s.Post(kCore, OldStyle("db.1")).code, 201);
  ASSERT_EQ(s.Post(kV1, NewStyle("web.1")).code, 201);
  ASSERT_EQ(s.Delete(std::string(kV1) + "/db.1").code, 200);

  rapidjson::Document a = v1_watch->NextJson();
  EXPECT_EQ(Type(a), "ADDED");
  EXPECT_EQ(Field(a["object"], "apiVersion"), "events.k8s.io/v1");
  EXPECT_EQ(Field(a["object"], "note"), "Pulled image \"postgres\"");
  EXPECT_EQ(Field(a["object"], "regarding", "name"), "db");
  rapidjson::Document b = v1_watch->NextJson();
  EXPECT_EQ(Type(b), "ADDED");
  EXPECT_EQ(Field(b["object"], "metadata", "name"), "web.1");
  rapidjson::Document c = v1_watch->NextJson();
  EXPECT_EQ(Type(c), "DELETED");
  EXPECT_EQ(Field(c["object"], "metadata", "name"), "db.1");

  rapidjson::Document d = core_watch->NextJson();
  EXPECT_EQ(Type(d), "ADDED");
  EXPECT_EQ(Field(d["object"], "metadata", "name"), "db.1");
  rapidjson::Document e = core_watch->NextJson();
  EXPECT_EQ(Type(e), "ADDED");
  EXPECT_EQ(Field(e["object"], "apiVersion"), "v1");
  EXPECT_EQ(Field(e["object"], "message"),
            "Successfully assigned default/web to node-1");
  EXPECT_EQ(Field(e["object"], "involvedObject", "name"), "web");
  rapidjson::Document f = core_watch->NextJson();
  EXPECT_EQ(Type(f), "DELETED");
}

TEST(EventsV1Test, TableDiscoveryAndOpenApi) {
  TestServer s;
  ASSERT_EQ(s.Post(kV1, NewStyle("web.1")).code, 201);
  Response table = s.Get(kV1, "application/json;as=Table;v=v1;g=meta.k8s.io");
  ASSERT_EQ(table.code, 200) << table.body;
  EXPECT_EQ(table.Str({"kind"}), "Table");
  const rapidjson::Value* cols = table.At({"columnDefinitions"});
  ASSERT_NE(cols, nullptr);
  EXPECT_EQ(Field((*cols)[1], "name"), "Type");
  EXPECT_EQ(Field((*cols)[2], "name"), "Reason");
  const rapidjson::Value& cells = (*table.At({"rows"}))[0]["cells"];
  EXPECT_STREQ(cells[2].GetString(), "Scheduled");
  EXPECT_STREQ(cells[3].GetString(), "pod/web");

  Response group = s.Get("/apis/events.k8s.io/v1");
  ASSERT_EQ(group.code, 200) << group.body;
  EXPECT_THAT(group.body, HasSubstr(R"("name":"events")"));
  EXPECT_THAT(s.Get("/apis").body, HasSubstr(R"("name":"events.k8s.io")"));

  Response v2 = s.Get("/openapi/v2");
  ASSERT_NE(v2.At({"definitions", "io.k8s.api.events.v1.Event"}), nullptr);
  EXPECT_NE(v2.At({"definitions", "io.k8s.api.events.v1.Event", "properties",
                   "note"}),
            nullptr);
  EXPECT_NE(v2.At({"paths",
                   "/apis/events.k8s.io/v1/namespaces/{namespace}/"
                   "events/{name}"}),
            nullptr);
  Response v3 = s.Get("/openapi/v3/apis/events.k8s.io/v1");
  ASSERT_EQ(v3.code, 200);
  EXPECT_NE(v3.At({"components", "schemas", "io.k8s.api.events.v1.Event"}),
            nullptr);
}

// When each key under "/" is deleted, seen through a store watch opened at
// construction; awaited, never polled.
class StoreDeletions {
 public:
  explicit StoreDeletions(storage::KV* kv) {
    etcdserverpb::WatchCreateRequest req;
    req.set_key("/");
    req.set_range_end("0");  // every key starting with '/'
    auto watch =
        kv->StartWatch(req, [this](const etcdserverpb::WatchResponse& resp) {
          const TimePoint now = Clock::Real()->Now();
          MutexLock l(&mu_);
          for (const mvccpb::Event& ev : resp.events()) {
            if (ev.type() == mvccpb::Event::DELETE) {
              deleted_.emplace(ev.kv().key(), now);
            }
          }
          cv_.notify_all();
        });
    EXPECT_TRUE(watch.ok()) << watch.status();
    if (watch.ok()) watch_ = std::move(*watch);
  }

  // When `key` was deleted; nullopt if it was not by `deadline`.
  std::optional<TimePoint> Await(const std::string& key, TimePoint deadline) {
    MutexLock l(&mu_);
    cv_.wait_until(l.native(), deadline,
                   [&]() REQUIRES(mu_) { return deleted_.count(key) > 0; });
    auto it = deleted_.find(key);
    if (it == deleted_.end()) return std::nullopt;
    return it->second;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, TimePoint> deleted_ GUARDED_BY(mu_);
  std::unique_ptr<storage::Watch> watch_;  // last: stopped first
};

// The store lease `key` is attached to (0: none, -1: no such key).
int64_t LeaseOf(TestServer& s, const std::string& key) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  auto r = s.store()->Range(req);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok() || r->kvs_size() != 1) return -1;
  return r->kvs(0).lease();
}

std::string EventKey(const std::string& name) {
  return "/registry/events/default/" + name;
}

// Events created by PUT (create-on-update) and by server-side apply get
// the lease a POST gives them, as kube-apiserver's Store.Update passes
// calculateTTL's answer to GuaranteedUpdate when it creates.
TEST(EventsTtlTest, CreatedByPutOrApplyExpire) {
  TestServer s([](ApiServerOptions* o) { o->event_ttl = seconds(2); });
  StoreDeletions deletions(s.store());
  Response put = s.Put(std::string(kCore) + "/put.1", OldStyle("put.1"));
  ASSERT_EQ(put.code, 201) << put.body;
  Response put_v1 = s.Put(std::string(kV1) + "/put.2", NewStyle("put.2"));
  ASSERT_EQ(put_v1.code, 201) << put_v1.body;
  Response applied = s.Patch(
      std::string(kCore) + "/apply.1?fieldManager=tester",
      R"({"apiVersion":"v1","kind":"Event",)" + OldStyle("apply.1").substr(1),
      "application/apply-patch+yaml");
  ASSERT_EQ(applied.code, 201) << applied.body;

  const TimePoint deadline = Clock::Real()->Now() + seconds(10);
  for (const std::string name : {"put.1", "put.2", "apply.1"}) {
    EXPECT_GT(LeaseOf(s, EventKey(name)), 0) << name << " has no lease";
  }
  for (const std::string name : {"put.1", "put.2", "apply.1"}) {
    EXPECT_TRUE(deletions.Await(EventKey(name), deadline).has_value())
        << name << " did not expire";
    EXPECT_EQ(s.Get(std::string(kCore) + "/" + name).code, 404) << name;
  }
}

// A write to an event renews its TTL: kube's Store.Update asks
// calculateTTL on every update (the event store's TTLFunc answers the full
// --event-ttl) and GuaranteedUpdate attaches a fresh lease, so an event a
// recorder keeps patching (count, series) lives one TTL past the last
// patch.
TEST(EventsTtlTest, PatchRenewsTheTtl) {
  static constexpr int64_t kTtl = 4;
  TestServer s([](ApiServerOptions* o) { o->event_ttl = seconds(kTtl); });
  StoreDeletions deletions(s.store());
  ASSERT_EQ(s.Post(kCore, OldStyle("db.1")).code, 201);
  const int64_t first = LeaseOf(s, EventKey("db.1"));
  ASSERT_GT(first, 0);

  // Half the event's TTL passes: a 2 s store lease granted after the
  // event's expires.
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(2);
  auto timer = s.store()->LeaseGrant(grant);
  ASSERT_TRUE(timer.ok()) << timer.status();
  etcdserverpb::PutRequest put;
  put.set_key("/test/half-the-ttl");
  put.set_value("x");
  put.set_lease(timer->id());
  ASSERT_TRUE(s.store()->Put(put).ok());
  ASSERT_TRUE(
      deletions.Await("/test/half-the-ttl", Clock::Real()->Now() + seconds(10))
          .has_value());

  const TimePoint patched_at = Clock::Real()->Now();
  Response patched = s.Patch(std::string(kCore) + "/db.1", R"({"count":4})",
                             "application/strategic-merge-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.body;
  const int64_t renewed = LeaseOf(s, EventKey("db.1"));
  EXPECT_GT(renewed, 0);
  EXPECT_NE(renewed, first) << "the patch kept the event's first lease";
  etcdserverpb::LeaseTimeToLiveRequest ttl_req;
  ttl_req.set_id(renewed);
  auto ttl = s.store()->LeaseTimeToLive(ttl_req);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(ttl->grantedttl(), kTtl);
  EXPECT_GE(ttl->ttl(), kTtl - 1);

  std::optional<TimePoint> gone = deletions.Await(
      EventKey("db.1"), patched_at + seconds(kTtl) + seconds(10));
  ASSERT_TRUE(gone.has_value()) << "the event did not expire";
  EXPECT_GE(*gone - patched_at, seconds(kTtl))
      << "the event lived "
      << std::chrono::duration<double>(*gone - patched_at).count()
      << " s after the patch, not a full TTL";
  EXPECT_EQ(s.Get(std::string(kCore) + "/db.1").code, 404);
}

}  // namespace
}  // namespace kplane::apiserver
