// Objects created with a TTL disappear when their store lease expires. Real
// time passes here (the store's minimum lease TTL is 2 s), hence "slow".
#include <gtest/gtest.h>

#include <condition_variable>

#include "apiserver/storage/object_store.h"
#include "apiserver/storage/test_store.h"
#include "base/mutex.h"

namespace kplane::apiserver {
namespace {

TEST(ObjectStoreTtlTest, ObjectExpiresWithItsLease) {
  testing::EmbeddedStore db;
  metrics::Registry metrics;
  ObjectStore store(db.server(), testing::Resource("", "configmaps"),
                    ObjectStoreOptions{.metrics = &metrics});
  const std::string key = store.Key("default", "short-lived");

  // Await the deletion through a store watch instead of polling.
  Mutex mu;
  std::condition_variable cv;
  bool deleted = false;
  etcdserverpb::WatchCreateRequest req;
  req.set_key(key);
  auto watch = db.server()->StartWatch(
      req, [&](const etcdserverpb::WatchResponse& resp) {
        for (const auto& ev : resp.events()) {
          if (ev.type() == mvccpb::Event::DELETE) {
            MutexLock l(&mu);
            deleted = true;
            cv.notify_all();
          }
        }
      });
  ASSERT_TRUE(watch.ok()) << watch.status();

  auto created =
      store.Create(testing::MakeConfigMap("default", "short-lived"), 2);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(store.Create(testing::MakeConfigMap("default", "forever")).ok());
  ASSERT_TRUE(store.Get("default", "short-lived").ok());

  MutexLock l(&mu);
  ASSERT_TRUE(cv.wait_for(l.native(), std::chrono::seconds(15), [&] {
    return deleted;
  })) << "the TTL object was not deleted";
  l.Unlock();
  EXPECT_EQ(store.Get("default", "short-lived").status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(store.Get("default", "forever").ok());
}

}  // namespace
}  // namespace kplane::apiserver
