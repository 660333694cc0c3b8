// Differential run: the same script of API requests against an apiserver
// over the embedded store and over a real etcd 3.4 (Debian's /usr/bin/etcd,
// through RemoteKV and etcd's JSON gateway) must give the same answers:
// status codes, Content-Types and bodies, with uids and timestamps masked
// (they are random or clock-dependent) and continue tokens masked (they
// embed revisions). resourceVersions are compared relative to the revision
// at which the script's namespace was created: kplane's store gives its
// first write revision 1 where etcd gives it 2, so absolute values are off
// by one.
#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <set>

#include "apiserver/object_history.h"
#include "apiserver/storage/object_store.h"
#include "apiserver/storage/test_store.h"
#include "apiserver/test_server.h"
#include "net/url.h"
#include "objects/meta.h"
#include "storage/client/grpc_kv.h"
#include "storage/client/local_cluster.h"
#include "storage/client/remote_kv.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;

void Mask(rapidjson::Value& v, int64_t base,
          rapidjson::Document::AllocatorType& a) {
  static const std::set<std::string> kMasked = {
      "uid",  "creationTimestamp",  "deletionTimestamp",
      "time", "lastTransitionTime", "continue"};
  if (v.IsObject()) {
    for (auto& m : v.GetObject()) {
      const std::string name = m.name.GetString();
      if (kMasked.count(name) && m.value.IsString()) {
        m.value.SetString("<masked>");
      } else if (name == "resourceVersion" && m.value.IsString()) {
        const int64_t rv = std::stoll(m.value.GetString());
        m.value.SetString(("r" + std::to_string(rv - base)).c_str(), a);
      } else {
        Mask(m.value, base, a);
      }
    }
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) Mask(e, base, a);
  }
}

std::string Normalize(const std::string& body, int64_t base) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  if (d.HasParseError()) return body;
  Mask(d, base, d.GetAllocator());
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  d.Accept(w);
  return b.GetString();
}

struct Step {
  std::string method, target, body, content_type;
};

// Runs the script and returns one line per answer (and per watch event).
std::vector<std::string> RunScript(TestServer& s, storage::KV* kv) {
  std::vector<std::string> out;
  int64_t base = 0;
  auto record = [&](const std::string& what, const Response& r) {
    std::string w = what;
    const size_t c = w.find("continue=");
    if (c != std::string::npos) w = w.substr(0, c) + "continue=<token>";
    out.push_back(w + " -> " + std::to_string(r.code) + " " +
                  std::string(r.headers.Get("Content-Type")) + " " +
                  Normalize(r.body, base));
  };
  auto run = [&](const Step& st) {
    net::HttpHeaders h;
    if (!st.content_type.empty()) h.Add("Content-Type", st.content_type);
    Response r = s.Do(st.method, st.target, st.body, h);
    record(st.method + " " + st.target, r);
    return r;
  };
  const std::string ns = "/api/v1/namespaces/diff";
  const std::string cms = ns + "/configmaps";
  const std::string deps = "/apis/apps/v1/namespaces/diff/deployments";
  const std::string kDep =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}})";

  Response created =
      s.Post("/api/v1/namespaces", R"({"metadata":{"name":"diff"}})");
  const std::string start_rv = created.Str({"metadata", "resourceVersion"});
  base = std::stoll(start_rv);
  record("POST /api/v1/namespaces", created);
  for (const char* n : {"a", "b", "c"}) {
    run({"POST", cms,
         std::string(R"({"metadata":{"name":")") + n +
             R"(","labels":{"x":"1"}},"data":{"k":"v"}})",
         ""});
  }
  Response page = run({"GET", cms + "?limit=2", "", ""});
  const std::string token = page.Str({"metadata", "continue"});
  run({"GET", cms + "?limit=2&continue=" + net::QueryEscape(token), "", ""});
  run({"PUT", cms + "/a",
       R"({"metadata":{"name":"a","resourceVersion":"2"},"data":{}})", ""});
  run({"PATCH", cms + "/a", R"({"data":{"k":"merged"}})",
       "application/merge-patch+json"});
  run({"POST", deps, kDep, ""});
  run({"PATCH", deps + "/web",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}})",
       "application/strategic-merge-patch+json"});
  run({"PATCH", deps + "/web",
       R"([{"op":"replace","path":"/spec/replicas","value":3}])",
       "application/json-patch+json"});
  run({"GET", deps + "/web/scale", "", ""});
  run({"PATCH", deps + "/web/scale", R"({"spec":{"replicas":4}})",
       "application/merge-patch+json"});
  std::string ssa = kDep;
  ssa.replace(ssa.find("\"web\""), 5, "\"ssa\"");
  run({"PATCH", deps + "/ssa?fieldManager=kubectl", ssa,
       "application/apply-patch+yaml"});
  run({"PATCH", deps + "/ssa?fieldManager=other", R"({"spec":{"replicas":9}})",
       "application/merge-patch+json"});
  run({"PATCH", deps + "/ssa?fieldManager=kubectl", ssa,
       "application/apply-patch+yaml"});
  run({"DELETE", cms + "/b", "", ""});
  run({"DELETE", cms + "/b", "", ""});
  run({"POST", cms, R"({"metadata":{"name":"held","finalizers":["x.io/y"]}})",
       ""});
  run({"DELETE", cms + "/held", "", ""});
  run({"PATCH", cms + "/held", R"({"metadata":{"finalizers":null}})",
       "application/merge-patch+json"});
  run({"GET", cms + "/held", "", ""});
  run({"DELETE", cms + "?labelSelector=x%3D1", "", ""});
  {
    Response exact = s.Get(cms + "?resourceVersion=" + start_rv +
                           "&resourceVersionMatch=Exact");
    record("GET exact list at the start", exact);
  }
  // Every change since the namespace was created, as a watch replays it.
  auto w =
      s.Watch(cms + "?watch=1&timeoutSeconds=2&resourceVersion=" + start_rv);
  while (std::optional<std::string> line = w->Next()) {
    out.push_back("WATCH " + Normalize(*line, base));
  }
  // Compaction: the old continue token and the old resourceVersion expire.
  Response now = s.Get(cms);
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(std::stoll(now.Str({"metadata", "resourceVersion"})));
  compact.set_physical(true);
  EXPECT_TRUE(kv->Compact(compact).ok());
  Response expired =
      s.Get(cms + "?limit=2&continue=" + net::QueryEscape(token));
  out.push_back("GET old continue -> " + std::to_string(expired.code) + " " +
                expired.Str({"reason"}));
  return out;
}

TEST(DifferentialTest, EmbeddedStoreAndEtcdAnswerAlike) {
  if (access("/usr/bin/etcd", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/etcd";
  std::vector<std::string> embedded;
  {
    TestServer s;
    embedded = RunScript(s, s.store());
  }
  storage::LocalClusterOptions lo;
  lo.kind = storage::StoreKind::kEtcd;
  auto cluster = storage::LocalCluster::Start(lo);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  storage::RemoteKVOptions ro;
  ro.endpoints = (*cluster)->client_urls();
  auto kv = storage::RemoteKV::Create(ro);
  ASSERT_TRUE(kv.ok()) << kv.status();
  std::vector<std::string> etcd;
  {
    TestServer s(kv->get(), nullptr);
    etcd = RunScript(s, kv->get());
  }
  ASSERT_EQ(embedded.size(), etcd.size());
  for (size_t i = 0; i < embedded.size(); ++i) {
    EXPECT_EQ(embedded[i], etcd[i]) << "step " << i;
  }
  // The script did exercise both paths.
  EXPECT_GT(embedded.size(), 25u);
}

// The history of a deleted object over etcd 3.4, through either client.
// etcd 3.4.23 answers a progress request at once with its revision, ahead
// of the events its replay of the key sends on its next sync (every
// 100 ms): taken for "the replay is complete", that answer made every
// deleted object's history a 404 (etcd-io/etcd#15220).
TEST(DifferentialTest, HistoryOfADeletedObjectOverEtcd) {
  if (access("/usr/bin/etcd", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/etcd";
  storage::LocalClusterOptions lo;
  lo.kind = storage::StoreKind::kEtcd;
  auto cluster = storage::LocalCluster::Start(lo);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  for (storage::StoreProtocol protocol :
       {storage::StoreProtocol::kJson, storage::StoreProtocol::kGrpc}) {
    SCOPED_TRACE(protocol == storage::StoreProtocol::kJson ? "json" : "grpc");
    storage::RemoteKVOptions ro;
    ro.endpoints = (*cluster)->client_urls();
    auto kv = storage::NewStoreClient(ro, protocol);
    ASSERT_TRUE(kv.ok()) << kv.status();
    ObjectStore store(kv->get(), objects::Scheme::Default().FindResource(
                                     "", "v1", "configmaps"));
    const std::string name =
        protocol == storage::StoreProtocol::kJson ? "json" : "grpc";
    ASSERT_TRUE(store.Create(testing::MakeConfigMap("default", name)).ok());
    for (const char* v : {"2", "3"}) {
      auto updated = store.GuaranteedUpdate(
          "default", name, {},
          [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
            MutableObject next(cur->New());
            next->CopyFrom(*cur);
            (*static_cast<objects::corev1::ConfigMap*>(next.get())
                  ->mutable_data())["v"] = v;
            return next;
          });
      ASSERT_TRUE(updated.ok()) << updated.status();
    }
    StatusOr<ObjectPtr> deleted = store.Delete("default", name, {});
    ASSERT_TRUE(deleted.ok()) << deleted.status();

    StatusOr<ObjectHistory> h = ReadObjectHistory(store, "default", name, 10);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->deleted_revision,
              std::stoll(objects::ResourceVersion(**deleted)));
    EXPECT_EQ(h->versions.size(), 3u);
    EXPECT_EQ(h->end, ObjectHistory::End::kCreated);

    // A name the store never held: not found (not a timeout).
    StatusOr<ObjectHistory> none =
        ReadObjectHistory(store, "default", "never", 10);
    EXPECT_TRUE(none.status().Is(StatusCode::kNotFound)) << none.status();
  }
}

// A watch through the apiserver survives the loss of the store's leader:
// the watch cache's storage watch resumes on another member (RemoteKV) and
// the HTTP watch keeps delivering, with no ERROR and no end of stream.
TEST(StoreFailoverTest, WatchSurvivesStoreLeaderChange) {
  if (storage::FindKplaneBinary().empty()) GTEST_SKIP() << "no kplane binary";
  storage::LocalClusterOptions lo;
  lo.kind = storage::StoreKind::kKplane;
  lo.members = 3;
  auto cluster = storage::LocalCluster::Start(lo);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // The leader's endpoint first: the client's streams (the watch caches'
  // storage watches among them) start there, so killing it breaks them.
  auto leader = (*cluster)->LeaderIndex();
  ASSERT_TRUE(leader.ok()) << leader.status();
  storage::RemoteKVOptions ro;
  ro.endpoints.push_back((*cluster)->client_url(*leader));
  for (int i = 0; i < (*cluster)->size(); ++i) {
    if (i != *leader) ro.endpoints.push_back((*cluster)->client_url(i));
  }
  auto kv = storage::RemoteKV::Create(ro);
  ASSERT_TRUE(kv.ok()) << kv.status();
  {
    TestServer s(kv->get(), nullptr);
    const std::string cms = "/api/v1/namespaces/default/configmaps";
    ASSERT_EQ(s.Post(cms, R"({"metadata":{"name":"before"}})").code, 201);
    Response list = s.Get(cms);
    auto w = s.Watch(cms + "?watch=1&resourceVersion=" +
                     list.Str({"metadata", "resourceVersion"}));
    ASSERT_TRUE((*cluster)->Kill(*leader).ok());
    // Writes fail (503/504) until a new leader is elected; a write that
    // reached the store before failing shows up as AlreadyExists.
    int code = 0;
    for (int attempt = 0; attempt < 200 && code != 201 && code != 409;
         ++attempt) {
      code = s.Post(cms, R"({"metadata":{"name":"after"}})").code;
    }
    ASSERT_TRUE(code == 201 || code == 409) << code;
    std::optional<std::string> line = w->Next();
    ASSERT_TRUE(line.has_value()) << "watch ended";
    rapidjson::Document e;
    e.Parse(line->c_str());
    EXPECT_STREQ(e["type"].GetString(), "ADDED") << *line;
    EXPECT_STREQ(e["object"]["metadata"]["name"].GetString(), "after");
  }
}

}  // namespace
}  // namespace kplane::apiserver
