// The client stack against the real API server (apiserver::ApiServer over
// an embedded single-member store, in process, on loopback ports).
//
// The main scenario is the seeds' ErrCompacted: an informer is cut off
// (a TCP proxy between it and the API server drops every connection),
// while it is away more changes happen than the watch cache keeps and the
// store compacts, then it is reconnected. Its re-watch must get 410, its
// relist at the old revision must get 410 (compacted), its consistent
// relist must deliver the difference with tombstones, and its cache must
// converge to the server's state.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "apiserver/test_server.h"
#include "informer/api_errors.h"
#include "informer/informer_factory.h"
#include "informer/leader_election.h"
#include "informer/list_watch.h"
#include "informer/tcp_proxy.h"
#include "informer/test_util.h"
#include "objects/meta.h"
#include "objects/serializer.h"

namespace kplane::informer {
namespace {

using testing::MakePod;
using testing::PodsResource;
using testing::Recorder;

std::unique_ptr<RestClient> ClientFor(uint16_t port, bool protobuf = false) {
  auto c =
      RestClient::New({.server = "http://127.0.0.1:" + std::to_string(port),
                       .protobuf = protobuf});
  CHECK(c.ok()) << c.status();
  return std::move(*c);
}

std::map<std::string, std::string> ServerState(RestClient* client) {
  std::map<std::string, std::string> out;
  auto list = client->ListObjects(*PodsResource(), "default");
  EXPECT_TRUE(list.ok()) << list.status();
  if (!list.ok()) return out;
  for (const ObjectPtr& o : list->items) {
    out[objects::Name(*o)] = objects::ResourceVersion(*o);
  }
  return out;
}

std::map<std::string, std::string> CacheState(const SharedIndexInformer& inf) {
  std::map<std::string, std::string> out;
  for (const ObjectPtr& o : inf.GetIndexer().List()) {
    out[objects::Name(*o)] = objects::ResourceVersion(*o);
  }
  return out;
}

TEST(ApiServerIntegrationTest, DisconnectedInformerRelistsAfterCompaction) {
  apiserver::testing::TestServer server([](apiserver::ApiServerOptions* o) {
    o->cacher.window_events = 20;  // so a short absence outlives the window
  });
  testing::TcpProxy proxy(server.port());
  std::unique_ptr<RestClient> direct = ClientFor(server.port());
  std::unique_ptr<RestClient> through_proxy = ClientFor(proxy.port());

  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        direct->Create(MakePod("default", "a" + std::to_string(i))).ok());
  }
  InformerFactoryOptions fo;
  fo.reflector.backoff.initial = milliseconds(20);
  fo.reflector.backoff.max = milliseconds(200);
  SharedInformerFactory factory(through_proxy.get(), fo);
  SharedIndexInformer* informer =
      factory.InformerFor(*PodsResource(), {.ns = "default"});
  Recorder events;
  informer->AddEventHandler(EventHandlerFuncs{
      .on_add =
          [&](const ObjectPtr& o, bool initial) {
            events.Record("add " + objects::Name(*o) + (initial ? " initial" : ""));
          },
      .on_update =
          [&](const ObjectPtr& o, const ObjectPtr& n) {
            events.Record("update " + objects::Name(*n));
          },
      .on_delete =
          [&](const DeletedObject& d) {
            events.Record((d.final_state_unknown ? "tombstone " : "delete ") +
                          objects::Name(*d.object));
          }});
  factory.Start();
  ASSERT_TRUE(factory.WaitForCacheSync(seconds(20)));
  ASSERT_TRUE(events.WaitForCount(5));

  // A change while connected arrives through the watch.
  ASSERT_TRUE(direct->Create(MakePod("default", "live")).ok());
  ASSERT_TRUE(events.WaitForCount(6));
  EXPECT_EQ(events.Items()[5], "add live");

  proxy.Cut();
  // While the informer is away: deletions it will never see as events,
  // an update, and more writes than the watch cache keeps.
  ASSERT_TRUE(direct->Delete<objects::corev1::Pod>("default", "a0").ok());
  ASSERT_TRUE(direct->Delete<objects::corev1::Pod>("default", "a1").ok());
  auto a2 = direct->Get<objects::corev1::Pod>("default", "a2");
  ASSERT_TRUE(a2.ok());
  (*(*a2)->mutable_metadata()->mutable_labels())["changed"] = "yes";
  ASSERT_TRUE(direct->Update(**a2).ok());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(
        direct->Create(MakePod("default", "b" + std::to_string(i))).ok());
  }
  auto list = direct->ListObjects(*PodsResource(), "default");
  ASSERT_TRUE(list.ok());
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(std::stoll(list->resource_version));
  compact.set_physical(true);
  ASSERT_TRUE(server.store()->Compact(compact).ok());

  proxy.Restore();
  auto converged = [&] {
    return CacheState(*informer) == ServerState(direct.get());
  };
  ASSERT_TRUE(events.WaitFor([&](const std::vector<std::string>& v) {
    return std::count(v.begin(), v.end(), "tombstone a0") == 1 &&
           std::count(v.begin(), v.end(), "tombstone a1") == 1 &&
           std::count(v.begin(), v.end(), "add b29") == 1;
  })) << ::testing::PrintToString(events.Items());
  EXPECT_TRUE(converged());
  std::vector<std::string> got = events.Items();
  EXPECT_EQ(std::count(got.begin(), got.end(), "update a2"), 1);
  EXPECT_EQ(std::count(got.begin(), got.end(), "delete a0"), 0);
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(std::count(got.begin(), got.end(), "add b" + std::to_string(i)),
              1);
  }
  EXPECT_EQ(got.size(), 6u + 2 + 1 + 30);  // nothing else: unchanged pods quiet
  EXPECT_GE(informer->ReflectorStats().expired, 1);

  // And it follows the server again.
  ASSERT_TRUE(direct->Delete<objects::corev1::Pod>("default", "b0").ok());
  ASSERT_TRUE(events.WaitFor([](const std::vector<std::string>& v) {
    return v.back() == "delete b0";
  }));
  EXPECT_TRUE(converged());
  factory.Shutdown();
}

TEST(ApiServerIntegrationTest, RestClientVerbsAgainstTheRealServer) {
  apiserver::testing::TestServer server;
  for (bool protobuf : {false, true}) {
    SCOPED_TRACE(protobuf ? "protobuf" : "json");
    std::unique_ptr<RestClient> client = ClientFor(server.port(), protobuf);
    const std::string name = protobuf ? "web-pb" : "web-json";
    auto created = client->Create(MakePod("default", name, {{"app", "web"}}));
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_FALSE((*created)->metadata().uid().empty());
    objects::corev1::Pod again = **created;
    again.mutable_metadata()->clear_resourceversion();
    EXPECT_TRUE(IsAlreadyExists(client->Create(again).status()));

    // Pod specs are immutable but for images and a few more; labels are not.
    objects::corev1::Pod changed = **created;
    (*changed.mutable_metadata()->mutable_labels())["tier"] = "front";
    auto updated = client->Update(changed);
    ASSERT_TRUE(updated.ok()) << updated.status();
    auto stale = client->Update(changed);
    EXPECT_TRUE(IsConflict(stale.status())) << stale.status();

    auto patched = client->Patch<objects::corev1::Pod>(
        "default", name, PatchType::kMergePatch,
        R"({"metadata":{"labels":{"patched":"yes"}}})");
    ASSERT_TRUE(patched.ok()) << patched.status();
    EXPECT_EQ((*patched)->metadata().labels().at("patched"), "yes");

    ASSERT_TRUE(client->Delete<objects::corev1::Pod>("default", name).ok());
    auto gone = client->Get<objects::corev1::Pod>("default", name);
    EXPECT_TRUE(IsNotFound(gone.status())) << gone.status();
    EXPECT_EQ(gone.status().message(), "pods \"" + name + "\" not found");
  }
}

TEST(ApiServerIntegrationTest, ListPagesAndWatchFromTheListRevision) {
  apiserver::testing::TestServer server;
  std::unique_ptr<RestClient> client = ClientFor(server.port());
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(
        client->Create(MakePod("default", "p" + std::to_string(i))).ok());
  }
  std::vector<std::string> names;
  std::string token, rv;
  do {
    auto page = client->ListObjects(*PodsResource(), "default",
                                    {.limit = 3, .continue_token = token});
    ASSERT_TRUE(page.ok()) << page.status();
    if (rv.empty()) rv = page->resource_version;
    for (const ObjectPtr& o : page->items) names.push_back(objects::Name(*o));
    token = page->continue_token;
  } while (!token.empty());
  EXPECT_EQ(names.size(), 7u);

  auto w = client->Watch(*PodsResource(), "default",
                         {.resource_version = rv, .timeout_seconds = 60});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(client->Delete<objects::corev1::Pod>("default", "p3").ok());
  WatchEvent ev;
  ASSERT_TRUE((*w)->Next(&ev));
  EXPECT_EQ(ev.type, EventType::kDeleted);
  EXPECT_EQ(objects::Name(*ev.object), "p3");
  (*w)->Stop();
}

TEST(ApiServerIntegrationTest, LeaseElectionAgainstTheRealServer) {
  apiserver::testing::TestServer server;
  std::unique_ptr<RestClient> client = ClientFor(server.port());
  testing::TestClock clock;
  LeaseLock lock_a(client.get(), "kube-system", "kplane-cm", "a");
  LeaseLock lock_b(client.get(), "kube-system", "kplane-cm", "b");
  Recorder events;
  auto a = LeaderElector::New(
      {.lock = &lock_a,
       .on_started_leading =
           [&](const Leadership&) { events.Record("a leads"); },
       .on_stopped_leading = [&] { events.Record("a stopped"); },
       .clock = &clock});
  ASSERT_TRUE(a.ok());
  (*a)->Start();
  ASSERT_TRUE(events.WaitForCount(1));
  auto lease =
      client->Get<objects::coordinationv1::Lease>("kube-system", "kplane-cm");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)->spec().holderidentity(), "a");

  // b read the lease; a renews; b's write carries a stale resourceVersion.
  auto seen = lock_b.Get(kNoLockTimeout);
  ASSERT_TRUE(seen.ok());
  clock.Advance(clock.WaitForCall(1));
  clock.WaitForCall(2);  // renewed
  LeaderElectionRecord steal = *seen;
  steal.holder_identity = "b";
  EXPECT_TRUE(IsConflict(lock_b.Update(steal, kNoLockTimeout)));
  (*a)->Stop();
  EXPECT_EQ(events.Items().back(), "a stopped");
}

// A metadata informer (the garbage collector's kind) against the real
// server: the LIST and the WATCH arrive as PartialObjectMetadata (protobuf,
// though the client's own wire format is JSON), with what the collector
// reads: names, labels, owner references, resource versions, deletions.
TEST(ApiServerIntegrationTest, MetadataInformerFollowsPartialObjectMetadata) {
  apiserver::testing::TestServer server;
  std::unique_ptr<RestClient> client = ClientFor(server.port());
  objects::corev1::Pod owned = MakePod("default", "owned", {{"app", "x"}});
  auto* ref = owned.mutable_metadata()->add_ownerreferences();
  ref->set_apiversion("apps/v1");
  ref->set_kind("ReplicaSet");
  ref->set_name("rs");
  ref->set_uid("uid-rs");
  ASSERT_TRUE(client->Create(owned).ok());
  ASSERT_TRUE(client->Create(MakePod("default", "plain")).ok());

  Recorder events;  // before the informer: its handlers write here
  SharedIndexInformer informer(
      std::make_shared<RestListerWatcher>(client.get(), PodsResource(),
                                          ListWatchScope{.ns = "default"},
                                          ObjectForm::kMetadata),
      SharedInformerOptions{.name = "metadata-pods"});
  informer.AddEventHandler(EventHandlerFuncs{
      .on_add = [&](const ObjectPtr& o,
                    bool) { events.Record("add " + objects::Name(*o)); },
      .on_update =
          [&](const ObjectPtr&, const ObjectPtr& n) {
            events.Record("update " + objects::Name(*n) + " app=" +
                          objects::GetObjectMeta(*n)->labels().at("app"));
          },
      .on_delete =
          [&](const DeletedObject& d) {
            events.Record("delete " + objects::Name(*d.object));
          }});
  informer.Start();
  ASSERT_TRUE(informer.WaitForCacheSync(seconds(20)));
  ASSERT_TRUE(events.WaitForCount(2));
  ObjectPtr cached = informer.GetIndexer().Get("default/owned");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(cached->GetDescriptor(),
            objects::metav1::PartialObjectMetadata::descriptor());
  const objects::metav1::ObjectMeta& meta = *objects::GetObjectMeta(*cached);
  EXPECT_EQ(meta.labels().at("app"), "x");
  ASSERT_EQ(meta.ownerreferences_size(), 1);
  EXPECT_EQ(meta.ownerreferences(0).uid(), "uid-rs");
  EXPECT_FALSE(meta.uid().empty());

  auto pod = client->Get<objects::corev1::Pod>("default", "owned");
  ASSERT_TRUE(pod.ok());
  (*(*pod)->mutable_metadata()->mutable_labels())["app"] = "y";
  ASSERT_TRUE(client->Update(**pod).ok());
  ASSERT_TRUE(client->Delete<objects::corev1::Pod>("default", "plain").ok());
  ASSERT_TRUE(events.WaitForCount(4));
  std::vector<std::string> got = events.Items();
  EXPECT_EQ(got[2], "update owned app=y");
  EXPECT_EQ(got[3], "delete plain");
  EXPECT_EQ(
      objects::ResourceVersion(*informer.GetIndexer().Get("default/owned")),
      objects::ResourceVersion(
          **client->Get<objects::corev1::Pod>("default", "owned")));
  informer.Stop();

  // One object's metadata (the garbage collector's live read of an owner).
  auto partial = client->GetMetadata(*PodsResource(), "default", "owned");
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ((*partial)->GetDescriptor(),
            objects::metav1::PartialObjectMetadata::descriptor());
  const objects::metav1::ObjectMeta& got_meta =
      *objects::GetObjectMeta(**partial);
  EXPECT_EQ(got_meta.name(), "owned");
  EXPECT_EQ(got_meta.labels().at("app"), "y");
  ASSERT_EQ(got_meta.ownerreferences_size(), 1);
  EXPECT_EQ(got_meta.ownerreferences(0).uid(), "uid-rs");
  EXPECT_EQ(got_meta.uid(), meta.uid());
  EXPECT_TRUE(IsNotFound(
      client->GetMetadata(*PodsResource(), "default", "plain").status()));

  // A server that answers the JSON form instead: the same list decodes.
  RestRequest req{.method = "GET", .path = "/api/v1/namespaces/default/pods"};
  req.headers.Set("Accept",
                  "application/json;as=PartialObjectMetadataList;"
                  "g=meta.k8s.io;v=v1");
  auto resp = client->Do(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  objects::metav1::PartialObjectMetadataList list;
  auto decoded =
      objects::DecodeBody(objects::MediaType::kJson, resp->body, &list);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(list.items_size(), 1);
  EXPECT_EQ(list.items(0).metadata().name(), "owned");
  EXPECT_EQ(list.items(0).metadata().ownerreferences(0).uid(), "uid-rs");
}

}  // namespace
}  // namespace kplane::informer
