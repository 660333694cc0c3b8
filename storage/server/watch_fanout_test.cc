// The /v3/watch fan-out end to end over HTTP: many streams on one prefix,
// several concurrent writers; with drains coalesced per session and many
// sessions drained per worker task, every stream must still receive every
// event exactly once, in revision order, with prev_kv only where asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/base64.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/json_stream.h"
#include "storage/server/single_member_store.h"

namespace kplane::storage {
namespace {

class WatchFanoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SingleMemberStore::Start();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  std::unique_ptr<SingleMemberStore> store_;
};

struct Reader {
  std::unique_ptr<net::HttpClient> client;
  std::unique_ptr<net::HttpStream> stream;
  bool prev_kv = false;
  std::vector<int64_t> revs;  // mod_revision of every event, as received
  int with_prev = 0;          // events carrying prev_kv
  int overwrites = 0;         // events of keys at version > 1
  Status error;
};

TEST_F(WatchFanoutTest, ManyStreamsGetEveryEventOnceAndInOrder) {
  constexpr int kStreams = 48;
  constexpr int kWriters = 4;
  constexpr int kPutsPerWriter = 60;
  constexpr size_t kTotal = kWriters * kPutsPerWriter;
  const std::string prefix = "/registry/fan/";

  std::vector<Reader> readers(kStreams);
  std::mutex mu;
  std::condition_variable cv;
  int created = 0;
  for (int i = 0; i < kStreams; ++i) {
    Reader& r = readers[i];
    r.prev_kv = i % 3 == 0;
    r.client = std::make_unique<net::HttpClient>("127.0.0.1", store_->port());
    auto st = r.client->OpenStream("POST", "/v3/watch",
                                   {{"Content-Type", "application/json"}});
    ASSERT_TRUE(st.ok()) << st.status();
    r.stream = std::move(*st);
    std::string req = "{\"create_request\":{\"key\":\"" + Base64Encode(prefix) +
                      "\",\"range_end\":\"" +
                      Base64Encode(PrefixRangeEnd(prefix)) + "\"" +
                      (r.prev_kv ? ",\"prev_kv\":true" : "") + "}}";
    ASSERT_TRUE(r.stream->Send(req).ok());
  }
  std::vector<std::thread> threads;
  for (Reader& r : readers) {
    threads.emplace_back([&r, &mu, &cv, &created] {
      etcdjson::JsonObjectSplitter split;
      std::string chunk, object;
      while (r.revs.size() < kTotal) {
        chunk.clear();
        auto more = r.stream->Read(&chunk, seconds(30));
        if (!more.ok() || !*more) {
          r.error =
              more.ok() ? UnavailableError("stream ended") : more.status();
          break;
        }
        split.Feed(chunk);
        Status err;
        while (split.Next(&object, &err)) {
          etcdserverpb::WatchResponse resp;
          Status ps = etcdjson::ParseStreamMessage(object, &resp);
          if (!ps.ok()) {
            r.error = ps;
            return;
          }
          if (resp.created()) {
            std::lock_guard<std::mutex> l(mu);
            ++created;
            cv.notify_all();
          }
          for (const mvccpb::Event& ev : resp.events()) {
            r.revs.push_back(ev.kv().mod_revision());
            if (ev.has_prev_kv()) ++r.with_prev;
            if (ev.kv().version() > 1) ++r.overwrites;
          }
        }
        if (!err.ok()) {
          r.error = err;
          break;
        }
      }
      std::lock_guard<std::mutex> l(mu);
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30),
                            [&] { return created == kStreams; }))
        << created << " of " << kStreams << " watchers created";
  }

  // Concurrent writers overwrite a few keys each, so most events have a
  // previous version.
  std::vector<std::vector<int64_t>> put_revs(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int j = 0; j < kPutsPerWriter; ++j) {
        etcdserverpb::PutRequest p;
        p.set_key(prefix + "w" + std::to_string(w) + "-" +
                  std::to_string(j % 5));
        p.set_value(std::string(64, 'a' + (j % 26)));
        auto res = store_->server()->Put(p);
        ASSERT_TRUE(res.ok()) << res.status();
        put_revs[w].push_back(res->header().revision());
      }
    });
  }
  for (auto& t : writers) t.join();
  for (auto& t : threads) t.join();

  std::vector<int64_t> want;
  for (const auto& v : put_revs) want.insert(want.end(), v.begin(), v.end());
  std::sort(want.begin(), want.end());
  ASSERT_EQ(want.size(), kTotal);
  for (int i = 0; i < kStreams; ++i) {
    const Reader& r = readers[i];
    ASSERT_TRUE(r.error.ok()) << "stream " << i << ": " << r.error;
    // Exactly the put revisions, strictly increasing: none lost, none
    // repeated, none reordered.
    EXPECT_EQ(r.revs, want) << "stream " << i;
    EXPECT_EQ(r.overwrites, kWriters * (kPutsPerWriter - 5));
    EXPECT_EQ(r.with_prev, r.prev_kv ? r.overwrites : 0) << "stream " << i;
  }
}

}  // namespace
}  // namespace kplane::storage
