// The watch cache over a real etcd 3.4.23 (Debian's /usr/bin/etcd), through
// both store clients. That etcd answers a progress request at once, ahead
// of events still on their way (etcd-io/etcd#15220), and neither client
// claims ordered answers (storage::Watch::ProgressOrdered), so the cache
// takes none of them for "caught up" (docs/api-storage.md, "Stores whose
// progress answers run ahead of their events").
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>

#include "apiserver/cacher/cacher.h"
#include "apiserver/storage/test_store.h"
#include "objects/meta.h"
#include "storage/client/grpc_kv.h"
#include "storage/client/local_cluster.h"
#include "storage/client/remote_kv.h"

namespace kplane::apiserver {
namespace {

// "ADDED a@5", "BOOKMARK@9 end".
std::string Describe(const WatchEvent& e) {
  std::string s(WatchEventTypeName(e.type));
  if (e.object) {
    s += " " + objects::Name(*e.object) + "@" +
         objects::ResourceVersion(*e.object);
  } else {
    s += "@" + std::to_string(e.revision);
  }
  if (e.initial_events_end) s += " end";
  return s;
}

class RecordingSink : public WatchSink {
 public:
  bool Send(const WatchEventPtr& e) override {
    MutexLock l(&mu_);
    events_.push_back(Describe(*e));
    cv_.notify_all();
    return true;
  }
  void Close(const Status& s) override {
    MutexLock l(&mu_);
    events_.push_back("CLOSED " + s.ToString());
    cv_.notify_all();
  }
  // Waits (20 s at most, a guard) for `n` events; returns what arrived.
  std::vector<std::string> WaitFor(size_t n) {
    MutexLock l(&mu_);
    cv_.wait_for(l.native(), std::chrono::seconds(20),
                 [&]() REQUIRES(mu_) { return events_.size() >= n; });
    return events_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_ GUARDED_BY(mu_);
};

std::string At(int64_t rev) { return "@" + std::to_string(rev); }

int64_t Rev(const StatusOr<ObjectPtr>& o) {
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *Versioner::Parse(objects::ResourceVersion(**o)) : -1;
}

// A watch-list of a resource nobody writes, while another resource moves
// the store's revision: the cache never reaches that revision through
// events, and no progress answer of this etcd proves it complete. The
// watch-list is served at once (not a 504 after consistent_read_wait),
// from the store's list at its latest revision, and then gets each later
// change once.
TEST(CacherOverEtcdTest, WatchListOfAQuietResource) {
  if (access("/usr/bin/etcd", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/etcd";
  storage::LocalClusterOptions lo;
  lo.kind = storage::StoreKind::kEtcd;
  auto cluster = storage::LocalCluster::Start(lo);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  for (storage::StoreProtocol protocol :
       {storage::StoreProtocol::kJson, storage::StoreProtocol::kGrpc}) {
    const std::string ns = storage::StoreProtocolName(protocol);
    SCOPED_TRACE(ns);
    storage::RemoteKVOptions ro;
    ro.endpoints = (*cluster)->client_urls();
    auto kv = storage::NewStoreClient(ro, protocol);
    ASSERT_TRUE(kv.ok()) << kv.status();
    metrics::Registry metrics;
    ObjectStore pods(kv->get(), testing::Resource("", "pods"),
                     ObjectStoreOptions{.metrics = &metrics});
    ObjectStore configmaps(kv->get(), testing::Resource("", "configmaps"),
                           ObjectStoreOptions{.metrics = &metrics});
    const int64_t ra = Rev(pods.Create(testing::MakePod(ns, "a")));
    Cacher cacher(&pods, CacherOptions{.metrics = &metrics});
    ASSERT_TRUE(cacher.Start().ok());
    ASSERT_TRUE(cacher.WaitReady(seconds(20)));
    // Only another resource moves the store's revision.
    const int64_t rx = Rev(configmaps.Create(testing::MakeConfigMap(ns, "x")));

    auto consistent = std::make_shared<RecordingSink>();
    auto h1 = cacher.Watch({.ns = ns,
                            .send_initial_events = true,
                            .allow_bookmarks = true,
                            .consistent = true},
                           consistent);
    ASSERT_TRUE(h1.ok()) << h1.status();
    EXPECT_EQ(consistent->WaitFor(2),
              (std::vector<std::string>{"ADDED a" + At(ra),
                                        "BOOKMARK" + At(rx) + " end"}));
    // Not older than x's revision, which no pod event carries.
    auto not_older = std::make_shared<RecordingSink>();
    auto h2 = cacher.Watch({.ns = ns,
                            .send_initial_events = true,
                            .revision = rx,
                            .allow_bookmarks = true},
                           not_older);
    ASSERT_TRUE(h2.ok()) << h2.status();
    EXPECT_EQ(not_older->WaitFor(2),
              (std::vector<std::string>{"ADDED a" + At(ra),
                                        "BOOKMARK" + At(rx) + " end"}));

    const int64_t rb = Rev(pods.Create(testing::MakePod(ns, "b")));
    const int64_t rc = Rev(pods.Create(testing::MakePod(ns, "c")));
    // c is the last change: once it arrived, nothing else can follow.
    for (auto& sink : {consistent, not_older}) {
      EXPECT_EQ(sink->WaitFor(4),
                (std::vector<std::string>{
                    "ADDED a" + At(ra), "BOOKMARK" + At(rx) + " end",
                    "ADDED b" + At(rb), "ADDED c" + At(rc)}));
    }
    h1->reset();
    h2->reset();
    cacher.Stop();
  }
}

}  // namespace
}  // namespace kplane::apiserver
