// The client stack end to end over HTTP against FakeApiServer: the
// informer factory, an informer relisting after compaction, and leader
// election through a Lease.
#include <gtest/gtest.h>

#include "objects/meta.h"
#include "objects/time.h"
#include "informer/api_errors.h"
#include "informer/fake_api_server.h"
#include "informer/informer_factory.h"
#include "informer/leader_election.h"
#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::MakePod;
using testing::PodsResource;
using testing::Recorder;
using testing::TestClock;

std::string Desc(const ObjectPtr& o) {
  return objects::Name(*o) + "@" + objects::ResourceVersion(*o);
}

EventHandlerFuncs Recording(Recorder* r) {
  return EventHandlerFuncs{
      .on_add =
          [r](const ObjectPtr& o, bool initial) {
            r->Record("add " + Desc(o) + (initial ? " initial" : ""));
          },
      .on_update =
          [r](const ObjectPtr& o, const ObjectPtr& n) {
            r->Record("update " + Desc(o) + "->" + Desc(n));
          },
      .on_delete =
          [r](const DeletedObject& d) {
            r->Record((d.final_state_unknown ? "tombstone " : "delete ") +
                      Desc(d.object));
          }};
}

class HttpInformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    auto c = RestClient::New(
        {.server = server_.Url(), .clock = &clock_, .metrics = &registry_});
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
  }

  TestClock clock_;
  metrics::Registry registry_;
  FakeApiServer server_;
  std::unique_ptr<RestClient> client_;
};

TEST_F(HttpInformerTest, FactorySharesOneInformerPerResourceAndScope) {
  FakeListerWatcher* pods = server_.Resource(*PodsResource());
  ASSERT_TRUE(pods->Create(MakePod("default", "a", {{"app", "web"}})).ok());
  ASSERT_TRUE(pods->Create(MakePod("other", "b", {{"app", "web"}})).ok());
  objects::corev1::Node node;
  node.mutable_metadata()->set_name("n1");
  ASSERT_TRUE(client_->Create(node).ok());

  SharedInformerFactory factory(client_.get(), {.clock = &clock_});
  SharedIndexInformer* all_pods = factory.InformerFor<objects::corev1::Pod>();
  EXPECT_EQ(factory.InformerFor<objects::corev1::Pod>(), all_pods);
  SharedIndexInformer* default_pods =
      factory.InformerFor(*PodsResource(), {.ns = "default"});
  EXPECT_NE(default_pods, all_pods);
  SharedIndexInformer* nodes = factory.InformerFor<objects::corev1::Node>();
  Recorder pod_events;
  all_pods->AddEventHandler(Recording(&pod_events));
  factory.Start();
  ASSERT_TRUE(factory.WaitForCacheSync());

  EXPECT_EQ(all_pods->GetIndexer().Size(), 2u);
  EXPECT_EQ(default_pods->GetIndexer().Size(), 1u);
  TypedLister<objects::corev1::Node> node_lister =
      factory.ListerFor<objects::corev1::Node>();
  ASSERT_TRUE(node_lister.Get("n1").ok());
  EXPECT_EQ(nodes->Kind().kind, "Node");

  ASSERT_TRUE(pod_events.WaitForCount(2));
  ASSERT_TRUE(client_->Create(MakePod("default", "c")).ok());
  ASSERT_TRUE(pod_events.WaitForCount(3));
  EXPECT_EQ(pod_events.Items()[2], "add c@3");
  auto web = machinery::LabelSelector::Parse("app=web");
  EXPECT_EQ(all_pods->GetLister().List(*web).size(), 2u);
  factory.Shutdown();
}

// Over real HTTP: the watch connection breaks, the store compacts while the
// informer is away, the re-watch gets a 410 ERROR event, and the relist
// delivers the difference with a tombstone.
TEST_F(HttpInformerTest, InformerRelistsAfterCompactionWhileDisconnected) {
  FakeListerWatcher* pods = server_.Resource(*PodsResource());
  ASSERT_TRUE(pods->Create(MakePod("default", "a")).ok());  // 1
  ASSERT_TRUE(pods->Create(MakePod("default", "b")).ok());  // 2
  ASSERT_TRUE(pods->Create(MakePod("default", "d")).ok());  // 3
  SharedInformerFactory factory(client_.get(), {.clock = &clock_});
  SharedIndexInformer* informer =
      factory.InformerFor(*PodsResource(), {.ns = "default"});
  Recorder events;
  informer->AddEventHandler(Recording(&events));
  factory.Start();
  ASSERT_TRUE(events.WaitForCount(3));
  pods->WaitForWatchCalls(1);

  pods->CloseWatches(UnavailableError("connection reset"));
  Duration first = clock_.WaitForCall(1);  // backing off, disconnected
  ASSERT_TRUE(pods->Update(MakePod("default", "a", {{"v", "2"}})).ok());  // 4
  ASSERT_TRUE(pods->Delete("default", "b").ok());                         // 5
  ASSERT_TRUE(pods->Create(MakePod("default", "c")).ok());                // 6
  pods->Compact();
  clock_.Advance(first);
  clock_.Advance(clock_.WaitForCall(2));  // after the 410: relist

  ASSERT_TRUE(events.WaitForCount(6));
  std::vector<std::string> got = events.Items();
  EXPECT_EQ(std::vector<std::string>(got.begin() + 3, got.end()),
            (std::vector<std::string>{"update a@1->a@4", "add c@6",
                                      "tombstone b@2"}));
  EXPECT_EQ(informer->ReflectorStats().expired, 1);
  pods->WaitForWatchCalls(3);  // 3, then 3 again (410), then the relist's
  EXPECT_EQ(pods->WatchCalls()[2].resource_version, "6");
  std::vector<std::string> requests = server_.Requests();
  auto has = [&](const std::string& r) {
    return std::find(requests.begin(), requests.end(), r) != requests.end();
  };
  EXPECT_TRUE(
      has("GET /api/v1/namespaces/default/pods?resourceVersion=3&"
          "limit=500"));  // 410
  EXPECT_TRUE(has("GET /api/v1/namespaces/default/pods?limit=500"));
  factory.Shutdown();
}

TEST_F(HttpInformerTest, LeaseLockUsesOptimisticLocking) {
  LeaseLock a(client_.get(), "kube-system", "kplane-cm", "a");
  LeaseLock b(client_.get(), "kube-system", "kplane-cm", "b");
  EXPECT_TRUE(IsNotFound(a.Get(kNoLockTimeout).status()));
  const WallTime t0 = FakeClock::DefaultWall();
  LeaderElectionRecord rec{.holder_identity = "a",
                           .lease_duration = seconds(15),
                           .acquire_time = t0,
                           .renew_time = t0};
  ASSERT_TRUE(a.Create(rec, kNoLockTimeout).ok());
  EXPECT_TRUE(IsAlreadyExists(b.Create(rec, kNoLockTimeout)));
  auto seen_by_b = b.Get(kNoLockTimeout);
  ASSERT_TRUE(seen_by_b.ok());
  EXPECT_EQ(*seen_by_b, rec);

  rec.renew_time = t0 + seconds(2);
  ASSERT_TRUE(a.Update(rec, kNoLockTimeout).ok());  // a renews
  LeaderElectionRecord steal = rec;
  steal.holder_identity = "b";
  EXPECT_TRUE(IsConflict(
      b.Update(steal, kNoLockTimeout)));  // b read before a's renewal

  auto lease =
      client_->Get<objects::coordinationv1::Lease>("kube-system", "kplane-cm");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)->spec().holderidentity(), "a");
  EXPECT_EQ((*lease)->spec().leasedurationseconds(), 15);
  EXPECT_EQ(objects::ToWallTime((*lease)->spec().renewtime()), t0 + seconds(2));
}

TEST_F(HttpInformerTest, ElectorLeadsAndReleasesThroughALease) {
  LeaseLock lock(client_.get(), "kube-system", "kplane-cm", "cm-1");
  Recorder events;
  auto elector = LeaderElector::New(
      {.lock = &lock,
       .on_started_leading =
           [&](const Leadership& l) {
             events.Record("started");
             l.WaitUntilLost();
           },
       .on_stopped_leading = [&] { events.Record("stopped"); },
       .release_on_cancel = true,
       .clock = &clock_});
  ASSERT_TRUE(elector.ok()) << elector.status();
  (*elector)->Start();
  ASSERT_TRUE(events.WaitForCount(1));
  auto lease =
      client_->Get<objects::coordinationv1::Lease>("kube-system", "kplane-cm");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)->spec().holderidentity(), "cm-1");
  EXPECT_EQ((*lease)->spec().leasetransitions(), 0);

  // A renewal after one retry period.
  clock_.Advance(clock_.WaitForCall(1));
  clock_.WaitForCall(2);
  lease = client_->Get<objects::coordinationv1::Lease>("kube-system", "kplane-cm");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(objects::ToWallTime((*lease)->spec().renewtime()),
            objects::ToWallTime((*lease)->spec().acquiretime()) + seconds(2));

  (*elector)->Stop();
  EXPECT_EQ(events.Items(), (std::vector<std::string>{"started", "stopped"}));
  lease = client_->Get<objects::coordinationv1::Lease>("kube-system", "kplane-cm");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)->spec().holderidentity(), "");
}

}  // namespace
}  // namespace kplane::informer
