#include "informer/shared_informer.h"

#include <gtest/gtest.h>

#include <future>

#include "objects/meta.h"
#include "informer/fake_list_watcher.h"
#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::MakePod;
using testing::PodKind;
using testing::Recorder;

std::string Desc(const ObjectPtr& o) {
  return objects::Name(*o) + "@" + objects::ResourceVersion(*o);
}

// Records notifications as strings:
//   "add a@1 initial", "add c@3", "update a@1->a@4", "delete b@5",
//   "tombstone b@2" (final state unknown).
std::shared_ptr<ResourceEventHandler> RecordingHandler(Recorder* r) {
  return MakeHandler(EventHandlerFuncs{
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
            EXPECT_EQ(d.key, ObjectKey(*d.object));
            r->Record((d.final_state_unknown ? "tombstone " : "delete ") +
                      Desc(d.object));
          }});
}

class SharedInformerTest : public ::testing::Test {
 protected:
  SharedInformerTest()
      : fake_(std::make_shared<FakeListerWatcher>(PodKind())) {}
  ~SharedInformerTest() override {
    if (informer_) informer_->Stop();
  }

  void MakeInformer(Duration resync = Duration(0)) {
    SharedInformerOptions o;
    o.clock = &clock_;
    o.resync_period = resync;
    o.reflector.backoff.random = [] { return 0.0; };  // delay == base
    o.reflector.on_backoff = [this](Duration d) {
      backoffs_.Record(std::to_string(d.count()));
    };
    informer_ = std::make_unique<SharedIndexInformer>(fake_, o);
  }

  // The reflector is sleeping in its n-th backoff; let it pass.
  void PassBackoff(size_t n) {
    ASSERT_TRUE(backoffs_.WaitForCount(n));
    clock_.WaitForWaiters(1);
    clock_.Advance(informer_->ReflectorStats().last_backoff);
  }

  std::vector<std::string> CachedObjects() {
    std::vector<std::string> out;
    for (const ObjectPtr& o : informer_->GetIndexer().List()) {
      out.push_back(Desc(o));
    }
    return out;
  }

  FakeClock clock_;
  std::shared_ptr<FakeListerWatcher> fake_;
  Recorder backoffs_;
  std::unique_ptr<SharedIndexInformer> informer_;
};

TEST_F(SharedInformerTest, InitialListThenWatchEvents) {
  ASSERT_TRUE(fake_->Create(MakePod("default", "a")).ok());  // 1
  ASSERT_TRUE(fake_->Create(MakePod("default", "b")).ok());  // 2
  MakeInformer();
  Recorder events;
  HandlerRegistration* reg =
      informer_->AddEventHandler(RecordingHandler(&events));
  EXPECT_FALSE(informer_->HasSynced());
  EXPECT_FALSE(reg->HasSynced());
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForCacheSync(seconds(1)));
  fake_->WaitForWatchCalls(1);

  ASSERT_TRUE(fake_->Create(MakePod("default", "c")).ok());  // 3
  objects::corev1::Pod a = MakePod("default", "a", {{"v", "2"}});
  ASSERT_TRUE(fake_->Update(a).ok());               // 4
  ASSERT_TRUE(fake_->Delete("default", "b").ok());  // 5
  ASSERT_TRUE(events.WaitForCount(5));
  EXPECT_EQ(events.Items(), (std::vector<std::string>{
                                "add a@1 initial", "add b@2 initial", "add c@3",
                                "update a@1->a@4", "delete b@5"}));
  EXPECT_TRUE(reg->HasSynced());
  EXPECT_EQ(CachedObjects(), (std::vector<std::string>{"a@4", "c@3"}));
  auto a_cached = informer_->GetLister().ByNamespace("default").Get("a");
  ASSERT_TRUE(a_cached.ok());
  EXPECT_EQ(objects::Label(*objects::GetObjectMeta(**a_cached), "v"), "2");
}

TEST_F(SharedInformerTest, WaitForCacheSyncTimesOutOnTheClock) {
  fake_->FailNextLists(InternalError("down"), 100);
  MakeInformer();
  informer_->Start();
  ASSERT_TRUE(backoffs_.WaitForCount(1));
  std::future<bool> synced = std::async(std::launch::async, [&] {
    return informer_->WaitForCacheSync(seconds(5));
  });
  clock_.WaitForWaiters(2);  // the reflector's backoff and our wait
  clock_.Advance(seconds(5));
  EXPECT_FALSE(synced.get());
}

// A handler that blocks delays only itself: the cache and the other
// handlers keep up, and the slow one later gets everything in order.
TEST_F(SharedInformerTest, SlowHandlerNeverBlocksTheOthers) {
  MakeInformer();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Recorder slow_events, fast_events;
  bool let_go = false;
  // On any return (a failed ASSERT too), the slow handler is let go and
  // the informer stopped before the locals its handlers use are destroyed.
  struct Finish {
    std::promise<void>* release;
    bool* let_go;
    SharedIndexInformer* informer;
    ~Finish() {
      if (!*let_go) release->set_value();
      informer->Stop();
    }
  } finish{&release, &let_go, informer_.get()};
  informer_->AddEventHandler(
      EventHandlerFuncs{.on_add = [&](const ObjectPtr& o, bool) {
        released.wait();
        slow_events.Record(objects::Name(*o));
      }});
  informer_->AddEventHandler(
      EventHandlerFuncs{.on_add = [&](const ObjectPtr& o, bool) {
        fast_events.Record(objects::Name(*o));
      }});
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForCacheSync(seconds(1)));
  fake_->WaitForWatchCalls(1);
  constexpr int kObjects = 200;
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_TRUE(
        fake_->Create(MakePod("default", "p" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(fast_events.WaitForCount(kObjects));
  EXPECT_EQ(informer_->GetIndexer().Size(), static_cast<size_t>(kObjects));
  EXPECT_TRUE(slow_events.Items().empty());
  release.set_value();
  let_go = true;
  ASSERT_TRUE(slow_events.WaitForCount(kObjects));
  std::vector<std::string> slow = slow_events.Items();
  for (int i = 0; i < kObjects; ++i) {
    EXPECT_EQ(slow[i], "p" + std::to_string(i));
  }
}

// The informer was away while the store compacted. The watch gets 410,
// the reflector relists, and the handlers receive exactly the difference:
// a changed (update), b deleted meanwhile (a tombstone with its last known
// state), c created (a non-initial add), d untouched (nothing).
TEST_F(SharedInformerTest, RelistAfterExpiryDeliversTheDifference) {
  ASSERT_TRUE(fake_->Create(MakePod("default", "a")).ok());  // 1
  ASSERT_TRUE(fake_->Create(MakePod("default", "b")).ok());  // 2
  ASSERT_TRUE(fake_->Create(MakePod("default", "d")).ok());  // 3
  MakeInformer();
  Recorder events;
  informer_->AddEventHandler(RecordingHandler(&events));
  informer_->Start();
  ASSERT_TRUE(events.WaitForCount(3));
  fake_->WaitForWatchCalls(1);

  fake_->CloseWatches(UnavailableError("connection reset by peer"));
  ASSERT_TRUE(backoffs_.WaitForCount(1));  // disconnected
  ASSERT_TRUE(fake_->Update(MakePod("default", "a", {{"v", "2"}})).ok());  // 4
  ASSERT_TRUE(fake_->Delete("default", "b").ok());                         // 5
  ASSERT_TRUE(fake_->Create(MakePod("default", "c")).ok());                // 6
  fake_->Compact();
  PassBackoff(1);  // re-watch from 3: ERROR 410
  PassBackoff(2);  // relist

  ASSERT_TRUE(events.WaitForCount(6));
  std::vector<std::string> got = events.Items();
  EXPECT_EQ(std::vector<std::string>(got.begin() + 3, got.end()),
            (std::vector<std::string>{"update a@1->a@4", "add c@6",
                                      "tombstone b@2"}));
  EXPECT_EQ(CachedObjects(), (std::vector<std::string>{"a@4", "c@6", "d@3"}));
  EXPECT_EQ(informer_->ReflectorStats().expired, 1);

  // And it carries on watching from the relist.
  fake_->WaitForWatchCalls(3);
  ASSERT_TRUE(fake_->Delete("default", "d").ok());  // 7
  ASSERT_TRUE(events.WaitForCount(7));
  EXPECT_EQ(events.Items().back(), "delete d@7");
}

TEST_F(SharedInformerTest, LateHandlerGetsTheCacheAsInitialAdds) {
  ASSERT_TRUE(fake_->Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(fake_->Create(MakePod("default", "b")).ok());
  MakeInformer();
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForCacheSync(seconds(1)));
  Recorder events;
  HandlerRegistration* reg =
      informer_->AddEventHandler(RecordingHandler(&events));
  ASSERT_TRUE(events.WaitForCount(2));
  EXPECT_EQ(events.Items(),
            (std::vector<std::string>{"add a@1 initial", "add b@2 initial"}));
  fake_->WaitForWatchCalls(1);
  ASSERT_TRUE(fake_->Create(MakePod("default", "c")).ok());
  ASSERT_TRUE(events.WaitForCount(3));
  EXPECT_TRUE(reg->HasSynced());
}

TEST_F(SharedInformerTest, PeriodicResyncOnlyForHandlersThatAskForIt) {
  ASSERT_TRUE(fake_->Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(fake_->Create(MakePod("default", "b")).ok());
  MakeInformer();
  Recorder resyncing, quiet;
  informer_->AddEventHandler(RecordingHandler(&resyncing), seconds(30));
  informer_->AddEventHandler(RecordingHandler(&quiet));
  informer_->Start();
  ASSERT_TRUE(resyncing.WaitForCount(2));
  fake_->WaitForWatchCalls(1);

  clock_.WaitForWaiters(1);  // the resync loop
  clock_.Advance(seconds(29));
  clock_.Advance(seconds(1));
  ASSERT_TRUE(resyncing.WaitForCount(4));
  EXPECT_EQ(resyncing.Items()[2], "update a@1->a@1");
  EXPECT_EQ(resyncing.Items()[3], "update b@2->b@2");

  // The quiet handler's queue is in order: had it been resynced, those
  // updates would come before this add.
  ASSERT_TRUE(fake_->Create(MakePod("default", "c")).ok());
  ASSERT_TRUE(quiet.WaitForCount(3));
  EXPECT_EQ(quiet.Items()[2], "add c@3");

  ASSERT_TRUE(resyncing.WaitForCount(5));  // add c@3
  clock_.WaitForWaiters(1);
  clock_.Advance(seconds(30));
  ASSERT_TRUE(resyncing.WaitForCount(8));
  EXPECT_EQ(resyncing.Items()[7], "update c@3->c@3");
}

TEST_F(SharedInformerTest, RemovedHandlerGetsNothingMore) {
  MakeInformer();
  Recorder kept, removed;
  informer_->AddEventHandler(RecordingHandler(&kept));
  HandlerRegistration* reg =
      informer_->AddEventHandler(RecordingHandler(&removed));
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForCacheSync(seconds(1)));
  fake_->WaitForWatchCalls(1);
  ASSERT_TRUE(fake_->Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(removed.WaitForCount(1));
  ASSERT_TRUE(informer_->RemoveEventHandler(reg).ok());
  EXPECT_EQ(informer_->RemoveEventHandler(reg).code(), StatusCode::kNotFound);
  ASSERT_TRUE(fake_->Create(MakePod("default", "b")).ok());
  ASSERT_TRUE(kept.WaitForCount(2));
  EXPECT_EQ(removed.Items().size(), 1u);
}

TEST_F(SharedInformerTest, CustomIndexersAndTypedListers) {
  ASSERT_TRUE(fake_->Create(MakePod("default", "a", {}, "n1")).ok());
  ASSERT_TRUE(fake_->Create(MakePod("default", "b", {}, "n2")).ok());
  MakeInformer();
  ASSERT_TRUE(informer_
                  ->AddIndexers({{"node",
                                  [](const google::protobuf::Message& m) {
                                    return std::vector<std::string>{
                                        static_cast<const objects::corev1::Pod&>(m)
                                            .spec()
                                            .nodename()};
                                  }}})
                  .ok());
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForCacheSync(seconds(1)));
  TypedLister<objects::corev1::Pod> pods(&informer_->GetIndexer());
  auto on_n2 = pods.ByIndex("node", "n2");
  ASSERT_TRUE(on_n2.ok());
  ASSERT_EQ(on_n2->size(), 1u);
  EXPECT_EQ((*on_n2)[0]->metadata().name(), "b");
}

TEST_F(SharedInformerTest, StopDropsPendingNotificationsAndJoins) {
  MakeInformer();
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  informer_->AddEventHandler(
      EventHandlerFuncs{.on_add = [&](const ObjectPtr&, bool) {
        if (calls++ == 0) {
          entered.set_value();
          released.wait();
        }
      }});
  informer_->Start();
  fake_->WaitForWatchCalls(1);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        fake_->Create(MakePod("default", "p" + std::to_string(i))).ok());
  }
  entered.get_future().wait();
  // Stop waits for the handler that is mid-call, then no handler runs again.
  std::thread stopper([&] { informer_->Stop(); });
  release.set_value();
  stopper.join();
  const int calls_at_stop = calls.load();
  EXPECT_GE(calls_at_stop, 1);
  EXPECT_EQ(fake_->OpenWatches(), 0);
  informer_->Stop();  // idempotent
  EXPECT_EQ(calls.load(), calls_at_stop);
}

}  // namespace
}  // namespace kplane::informer
