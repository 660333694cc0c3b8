// RemoteKV's failover rules and watch resumption against scripted fake
// servers (net::HttpServer on loopback), so every case is deterministic.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>

#include "base/mutex.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "storage/client/lease_keepalive.h"
#include "storage/client/local_cluster.h"
#include "storage/client/remote_kv.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {
namespace {

using net::HttpRequest;
using net::HttpServer;
using net::HttpServerOptions;
using net::Responder;
using net::testing::Latch;

const net::HttpHeaders kJson = {{"Content-Type", "application/json"}};

// A fake member: routes plus a request counter per path.
class FakeMember {
 public:
  FakeMember() : server_(HttpServerOptions{.port = 0, .worker_threads = 2}) {}
  ~FakeMember() { server_.Stop(); }

  void Unary(const std::string& path,
             std::function<void(const HttpRequest&, Responder*)> fn) {
    server_.Handle(
        "POST", path,
        [this, path, fn](const HttpRequest& req, std::shared_ptr<Responder> r) {
          Count(path);
          fn(req, r.get());
        });
  }
  void Streaming(const std::string& path, net::HttpHandler h) {
    server_.Handle("POST", path, std::move(h), {.stream_request_body = true});
  }
  void Start() { ASSERT_TRUE(server_.Start().ok()); }
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(server_.port());
  }
  int hits(const std::string& path) {
    MutexLock l(&mu_);
    return hits_[path];
  }

 private:
  void Count(const std::string& path) {
    MutexLock l(&mu_);
    ++hits_[path];
  }
  HttpServer server_;
  Mutex mu_;
  std::map<std::string, int> hits_ GUARDED_BY(mu_);
};

std::string ClosedEndpoint() {
  return "127.0.0.1:" + std::to_string(*PickFreePort());
}

std::unique_ptr<RemoteKV> NewKV(std::vector<std::string> eps) {
  RemoteKVOptions o;
  o.endpoints = std::move(eps);
  o.request_timeout = seconds(5);
  o.call_timeout = seconds(10);
  o.retry_backoff = milliseconds(10);
  auto kv = RemoteKV::Create(o);
  EXPECT_TRUE(kv.ok()) << kv.status();
  return std::move(*kv);
}

const char kNoLeader[] =
    R"({"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14})";

TEST(RemoteKVFailover, ReadMovesOnFromNoLeaderMember) {
  FakeMember a, b;
  a.Unary("/v3/kv/range", [](const HttpRequest&, Responder* r) {
    r->Respond(503, kJson, kNoLeader);
  });
  b.Unary("/v3/kv/range", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson, R"({"header":{"revision":"9"},"count":"1"})");
  });
  a.Start();
  b.Start();
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::RangeRequest req;
  req.set_key("k");
  auto r = kv->Range(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->header().revision(), 9);
  EXPECT_EQ(a.hits("/v3/kv/range"), 1);
  EXPECT_EQ(b.hits("/v3/kv/range"), 1);
  // The member that answered is now preferred.
  EXPECT_EQ(kv->preferred_endpoint(), 1u);
  ASSERT_TRUE(kv->Range(req).ok());
  EXPECT_EQ(a.hits("/v3/kv/range"), 1);
  EXPECT_EQ(b.hits("/v3/kv/range"), 2);
}

TEST(RemoteKVFailover, WriteIsNotResentAfterItReachedAServer) {
  FakeMember a, b;
  // A takes the request and drops the connection without answering: the
  // put may or may not have been applied.
  a.Unary("/v3/kv/put", [](const HttpRequest&, Responder* r) { r->Close(); });
  b.Unary("/v3/kv/put", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson, R"({"header":{"revision":"2"}})");
  });
  a.Start();
  b.Start();
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::PutRequest put;
  put.set_key("k");
  put.set_value("v");
  auto r = kv->Put(put);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("may have been applied"),
            std::string::npos);
  EXPECT_EQ(a.hits("/v3/kv/put"), 1);
  EXPECT_EQ(b.hits("/v3/kv/put"), 0);
}

TEST(RemoteKVFailover, WriteIsNotResentAfterAmbiguousServerError) {
  FakeMember a, b;
  // The proposal may have been committed before the member gave up on it.
  a.Unary("/v3/kv/put", [](const HttpRequest&, Responder* r) {
    r->Respond(503, kJson,
               R"({"error":"etcdserver: request timed out",)"
               R"("message":"etcdserver: request timed out","code":14})");
  });
  b.Unary("/v3/kv/put", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson, R"({"header":{"revision":"2"}})");
  });
  a.Start();
  b.Start();
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::PutRequest put;
  put.set_key("k");
  auto r = kv->Put(put);
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_EQ(b.hits("/v3/kv/put"), 0);
}

TEST(RemoteKVFailover, WriteRefusedForWantOfLeaderGoesElsewhere) {
  FakeMember a, b;
  // "no leader": the member's raft core dropped the proposal unlogged.
  a.Unary("/v3/kv/put", [](const HttpRequest&, Responder* r) {
    r->Respond(503, kJson, kNoLeader);
  });
  b.Unary("/v3/kv/put", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson, R"({"header":{"revision":"2"}})");
  });
  a.Start();
  b.Start();
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::PutRequest put;
  put.set_key("k");
  auto r = kv->Put(put);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(a.hits("/v3/kv/put"), 1);
  EXPECT_EQ(b.hits("/v3/kv/put"), 1);
}

TEST(RemoteKVFailover, WriteMovesOnWhenConnectFails) {
  FakeMember b;
  b.Unary("/v3/kv/put", [](const HttpRequest& req, Responder* r) {
    r->Respond(200, kJson, R"({"header":{"revision":"2"}})");
  });
  b.Start();
  auto kv = NewKV({ClosedEndpoint(), b.endpoint()});
  etcdserverpb::PutRequest put;
  put.set_key("k");
  auto r = kv->Put(put);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->header().revision(), 2);
  EXPECT_EQ(b.hits("/v3/kv/put"), 1);
}

TEST(RemoteKVFailover, ReadOnlyTxnRetriedWriteTxnNot) {
  FakeMember a, b;
  a.Unary("/v3/kv/txn", [](const HttpRequest&, Responder* r) { r->Close(); });
  b.Unary("/v3/kv/txn", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson, R"({"header":{"revision":"3"},"succeeded":true})");
  });
  a.Start();
  b.Start();
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::TxnRequest read;
  read.add_success()->mutable_request_range()->set_key("k");
  auto r = kv->Txn(read);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->succeeded());
  EXPECT_EQ(b.hits("/v3/kv/txn"), 1);

  auto kv2 = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::TxnRequest write;
  write.add_success()->mutable_request_put()->set_key("k");
  EXPECT_FALSE(kv2->Txn(write).ok());
  EXPECT_EQ(b.hits("/v3/kv/txn"), 1);
}

TEST(RemoteKVFailover, DomainErrorsAreReturnedNotRetried) {
  FakeMember a, b;
  a.Unary("/v3/kv/range", [](const HttpRequest&, Responder* r) {
    r->Respond(
        400, kJson,
        R"({"error":"etcdserver: mvcc: required revision has been compacted",)"
        R"("message":"etcdserver: mvcc: required revision has been compacted",)"
        R"("code":11})");
  });
  b.Unary("/v3/kv/range", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson, "{}");
  });
  a.Start();
  b.Start();
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  etcdserverpb::RangeRequest req;
  req.set_key("k");
  req.set_revision(1);
  auto r = kv->Range(req);
  EXPECT_EQ(r.status().code(), StatusCode::kCompacted);
  EXPECT_EQ(r.status().message(),
            "etcdserver: mvcc: required revision has been compacted");
  EXPECT_EQ(b.hits("/v3/kv/range"), 0);
}

TEST(RemoteKVFailover, NoEndpointAnswersIsUnavailable) {
  RemoteKVOptions o;
  o.endpoints = {ClosedEndpoint(), ClosedEndpoint()};
  o.call_timeout = milliseconds(300);
  o.retry_backoff = milliseconds(20);
  auto kv = RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  etcdserverpb::RangeRequest req;
  req.set_key("k");
  auto r = (*kv)->Range(req);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
}

TEST(RemoteKVFailover, KeepAliveOfUnknownLeaseIsNotFound) {
  FakeMember a;
  a.Unary("/v3/lease/keepalive", [](const HttpRequest&, Responder* r) {
    r->Respond(200, kJson,
               "{\"result\":{\"header\":{\"revision\":\"1\"},\"ID\":\"5\"}}\n");
  });
  a.Start();
  auto kv = NewKV({a.endpoint()});
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(5);
  auto r = kv->LeaseKeepAlive(req);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "etcdserver: requested lease not found");
}

// --- watch -----------------------------------------------------------------

// A scripted /v3/watch member: records each create request and hands the
// responder to the test, which writes what it wants.
class FakeWatchMember {
 public:
  FakeWatchMember() {
    member_.Streaming("/v3/watch", [this](const HttpRequest&,
                                          std::shared_ptr<Responder> r) {
      auto body = std::make_shared<std::string>();
      r->OnBodyData([this, r, body](std::string_view data, bool eof) {
        body->append(data);
        if (body->empty() || eof) return;
        etcdserverpb::WatchRequest req;
        // The client sends one create request, then maybe progress requests.
        if (etcdjson::ParseJson(*body, &req).ok() && req.has_create_request()) {
          body->clear();
          MutexLock l(&mu_);
          creates_.push_back(req.create_request());
          streams_.push_back(r);
          cv_.notify_all();
        } else if (etcdjson::ParseJson(*body, &req).ok() &&
                   req.has_progress_request()) {
          body->clear();
          MutexLock l(&mu_);
          ++progress_requests_;
          cv_.notify_all();
        }
      });
    });
    member_.Start();
  }

  std::string endpoint() const { return member_.endpoint(); }

  // Waits for the n-th (1-based) create request.
  std::pair<etcdserverpb::WatchCreateRequest, std::shared_ptr<Responder>>
  WaitCreate(size_t n) {
    MutexLock l(&mu_);
    cv_.wait(l.native(), [&]() REQUIRES(mu_) { return creates_.size() >= n; });
    return {creates_[n - 1], streams_[n - 1]};
  }
  void WaitProgressRequests(int n) {
    MutexLock l(&mu_);
    cv_.wait(l.native(),
             [&]() REQUIRES(mu_) { return progress_requests_ >= n; });
  }

 private:
  FakeMember member_;
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<etcdserverpb::WatchCreateRequest> creates_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Responder>> streams_ GUARDED_BY(mu_);
  int progress_requests_ GUARDED_BY(mu_) = 0;
};

// Collects callbacks; lets the test wait for a count.
class Recorder {
 public:
  WatchCallback Callback() {
    return [this](const etcdserverpb::WatchResponse& r) {
      MutexLock l(&mu_);
      got_.push_back(r);
      cv_.notify_all();
    };
  }
  std::vector<etcdserverpb::WatchResponse> WaitFor(size_t n) {
    MutexLock l(&mu_);
    cv_.wait(l.native(), [&]() REQUIRES(mu_) { return got_.size() >= n; });
    return got_;
  }
  size_t size() {
    MutexLock l(&mu_);
    return got_.size();
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<etcdserverpb::WatchResponse> got_ GUARDED_BY(mu_);
};

std::string Event(int64_t rev, const std::string& key_b64 = "YQ==") {
  return R"({"kv":{"key":")" + key_b64 +
         R"(","create_revision":"2",)"
         R"("mod_revision":")" +
         std::to_string(rev) + R"(","version":"1"}})";
}

TEST(RemoteWatch, ChunkedFramesAndResumeWithoutGapOrDuplicate) {
  FakeWatchMember a, b;
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  Recorder rec;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  req.set_range_end("b");
  req.set_prev_kv(true);
  req.add_filters(etcdserverpb::WatchCreateRequest::NODELETE);

  // StartWatch blocks until `created`; script member A from another thread.
  std::thread script_a([&] {
    auto [create, r] = a.WaitCreate(1);
    EXPECT_EQ(create.start_revision(), 0);
    r->StartStream(200, kJson);
    // One object split over two writes, then two objects in one write.
    r->Write(R"({"result":{"header":{"revision":"5"},"crea)");
    r->Write("ted\":true}}\n");
    r->Write(R"({"result":{"header":{"revision":"6"},"events":[)" + Event(6) +
             "]}}\n" + R"({"result":{"header":{"revision":"7"},"events":[)" +
             Event(7) + "]}}\n");
  });
  auto w = kv->StartWatch(req, rec.Callback());
  ASSERT_TRUE(w.ok()) << w.status();
  script_a.join();
  auto got = rec.WaitFor(3);
  EXPECT_TRUE(got[0].created());
  EXPECT_EQ(got[1].events(0).kv().mod_revision(), 6);
  EXPECT_EQ(got[2].events(0).kv().mod_revision(), 7);

  // Member A goes away; the watch resumes on B from revision 8 with the
  // same filters, and B's overlap (7) is not delivered again.
  a.WaitCreate(1).second->Close();
  auto [create, rb] = b.WaitCreate(1);
  EXPECT_EQ(create.start_revision(), 8);
  EXPECT_EQ(create.key(), "a");
  EXPECT_EQ(create.range_end(), "b");
  EXPECT_TRUE(create.prev_kv());
  ASSERT_EQ(create.filters_size(), 1);
  rb->StartStream(200, kJson);
  rb->Write(R"({"result":{"header":{"revision":"7"},"created":true}})"
            "\n");
  rb->Write(R"({"result":{"header":{"revision":"8"},"events":[)" + Event(7) +
            "," + Event(8) + "]}}\n" +
            R"({"result":{"header":{"revision":"9"},"events":[)" + Event(9) +
            "]}}\n");
  got = rec.WaitFor(5);
  ASSERT_EQ(got.size(), 5u);
  ASSERT_EQ(got[3].events_size(), 1);
  EXPECT_EQ(got[3].events(0).kv().mod_revision(), 8);
  EXPECT_EQ(got[4].events(0).kv().mod_revision(), 9);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_FALSE(got[i].created());
  w->reset();
  EXPECT_EQ(rec.size(), 5u);
}

TEST(RemoteWatch, CompactedWhileDisconnectedEndsWithCanceled) {
  FakeWatchMember a, b;
  auto kv = NewKV({a.endpoint(), b.endpoint()});
  Recorder rec;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  req.set_start_revision(3);
  std::thread script([&] {
    auto [create, r] = a.WaitCreate(1);
    EXPECT_EQ(create.start_revision(), 3);
    r->StartStream(200, kJson);
    r->Write(R"({"result":{"header":{"revision":"4"},"created":true}})"
             "\n"
             R"({"result":{"header":{"revision":"4"},"events":[)" +
             Event(3) + "]}}\n");
  });
  auto w = kv->StartWatch(req, rec.Callback());
  ASSERT_TRUE(w.ok());
  script.join();
  rec.WaitFor(2);
  a.WaitCreate(1).second->Close();
  auto [create, rb] = b.WaitCreate(1);
  EXPECT_EQ(create.start_revision(), 4);
  rb->StartStream(200, kJson);
  rb->Write(R"({"result":{"header":{"revision":"9"},"created":true}})"
            "\n"
            R"({"result":{"header":{},"canceled":true,)"
            R"("compact_revision":"6"}})"
            "\n");
  auto got = rec.WaitFor(3);
  EXPECT_TRUE(got[2].canceled());
  EXPECT_EQ(got[2].compact_revision(), 6);
}

TEST(RemoteWatch, ProgressRequestAndNeverBackwards) {
  FakeWatchMember a;
  auto kv = NewKV({a.endpoint()});
  Recorder rec;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  std::shared_ptr<Responder> r;
  std::thread script([&] {
    r = a.WaitCreate(1).second;
    r->StartStream(200, kJson);
    r->Write(R"({"result":{"header":{"revision":"10"},"created":true}})"
             "\n");
  });
  auto w = kv->StartWatch(req, rec.Callback());
  ASSERT_TRUE(w.ok());
  script.join();
  (*w)->RequestProgress();
  a.WaitProgressRequests(1);
  r->Write(R"({"result":{"header":{"revision":"12"},"watch_id":"-1"}})"
           "\n");
  auto got = rec.WaitFor(2);
  EXPECT_EQ(got[1].header().revision(), 12);
  EXPECT_EQ(got[1].events_size(), 0);
}

TEST(RemoteWatch, StartFailsWhenNothingAnswers) {
  RemoteKVOptions o;
  o.endpoints = {ClosedEndpoint()};
  o.call_timeout = milliseconds(200);
  o.retry_backoff = milliseconds(20);
  auto kv = RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  Recorder rec;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  auto w = (*kv)->StartWatch(req, rec.Callback());
  EXPECT_EQ(w.status().code(), StatusCode::kUnavailable) << w.status();
  EXPECT_EQ(rec.size(), 0u);
}

TEST(RemoteWatch, DestroyWhileIdleAndFromCallback) {
  FakeWatchMember a;
  auto kv = NewKV({a.endpoint()});
  Recorder rec;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  std::shared_ptr<Responder> r;
  std::thread script([&] {
    r = a.WaitCreate(1).second;
    r->StartStream(200, kJson);
    r->Write(R"({"result":{"header":{"revision":"1"},"created":true}})"
             "\n");
  });
  auto w = kv->StartWatch(req, rec.Callback());
  ASSERT_TRUE(w.ok());
  script.join();
  w->reset();  // the stream is idle: the destructor must not hang
  r->Write(R"({"result":{"header":{"revision":"2"},"events":[)" + Event(2) +
           "]}}\n");
  EXPECT_EQ(rec.size(), 1u);

  // Destroying the watch from inside its own callback.
  std::unique_ptr<Watch> self;
  Mutex mu;
  std::condition_variable cv;
  bool destroyed = false;
  std::shared_ptr<Responder> rr;
  std::thread script2([&] {
    rr = a.WaitCreate(2).second;
    rr->StartStream(200, kJson);
    rr->Write(R"({"result":{"header":{"revision":"1"},"created":true}})"
              "\n");
  });
  auto w2 = kv->StartWatch(req, [&](const etcdserverpb::WatchResponse& resp) {
    if (resp.events_size() == 0) return;
    std::unique_ptr<Watch> me;
    {
      MutexLock l(&mu);
      me = std::move(self);
    }
    ASSERT_NE(me, nullptr);
    me.reset();
    MutexLock l(&mu);
    destroyed = true;
    cv.notify_all();
  });
  ASSERT_TRUE(w2.ok());
  script2.join();
  {
    MutexLock l(&mu);
    self = std::move(*w2);
  }
  rr->Write(R"({"result":{"header":{"revision":"2"},"events":[)" + Event(2) +
            "]}}\n");
  MutexLock l(&mu);
  cv.wait(l.native(), [&] { return destroyed; });
  EXPECT_EQ(self, nullptr);
}

// A half-duplex member, like etcd 3.4's gateway: it reads the whole request
// body before it answers anything.
TEST(RemoteWatch, HalfDuplexServerAndSideStreamProgress) {
  FakeMember m;
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::string> bodies;  // complete request bodies, in order
  std::vector<std::shared_ptr<Responder>> streams;
  m.Streaming("/v3/watch", [&](const HttpRequest&,
                               std::shared_ptr<Responder> r) {
    auto body = std::make_shared<std::string>();
    r->OnBodyData([&, r, body](std::string_view data, bool eof) {
      body->append(data);
      if (!eof) return;
      etcdserverpb::WatchRequest req;
      ASSERT_TRUE(etcdjson::ParseJson(*body, &req).ok()) << *body;
      r->StartStream(200, kJson);
      if (req.has_progress_request()) {
        r->Write(R"({"result":{"header":{"revision":"12"},"watch_id":"-1"}})"
                 "\n");
        r->Finish();
      } else {
        r->Write(R"({"result":{"header":{"revision":"10"},"created":true}})"
                 "\n");
      }
      MutexLock l(&mu);
      bodies.push_back(*body);
      streams.push_back(r);
      cv.notify_all();
    });
  });
  m.Start();
  RemoteKVOptions o;
  o.endpoints = {m.endpoint()};
  o.duplex_probe = milliseconds(50);
  auto kv = RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  Recorder rec;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("a");
  auto w = (*kv)->StartWatch(req, rec.Callback());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*kv)->watch_duplex(0), WatchDuplex::kHalf);

  // The progress request goes on a side stream of its own.
  (*w)->RequestProgress();
  auto got = rec.WaitFor(2);
  EXPECT_EQ(got[1].header().revision(), 12);
  EXPECT_EQ(got[1].events_size(), 0);
  {
    MutexLock l(&mu);
    cv.wait(l.native(), [&] { return bodies.size() >= 2; });
    EXPECT_NE(bodies[1].find("progress_request"), std::string::npos);
  }

  // Events still flow on the main stream; after a break the watch comes
  // back at once (no probe wait: the member is known to be half-duplex).
  std::shared_ptr<Responder> main_stream;
  {
    MutexLock l(&mu);
    main_stream = streams[0];
  }
  main_stream->Write(R"({"result":{"header":{"revision":"11"},"events":[)" +
                     Event(11) + "]}}\n");
  got = rec.WaitFor(3);
  EXPECT_EQ(got[2].events(0).kv().mod_revision(), 11);
  main_stream->Close();
  MutexLock l(&mu);
  cv.wait(l.native(), [&] { return bodies.size() >= 3; });
  etcdserverpb::WatchRequest again;
  ASSERT_TRUE(etcdjson::ParseJson(bodies[2], &again).ok());
  EXPECT_EQ(again.create_request().start_revision(), 12);
}

// --- lease keepalive loop ----------------------------------------------------

TEST(KeepAliveLoop, RenewsEveryThirdOfTtlOnFakeClockUntilGone) {
  FakeMember a;
  std::atomic<int> calls{0};
  a.Unary("/v3/lease/keepalive", [&](const HttpRequest& req, Responder* r) {
    etcdserverpb::LeaseKeepAliveRequest k;
    ASSERT_TRUE(etcdjson::ParseJson(req.body, &k).ok());
    EXPECT_EQ(k.id(), 77);
    // Three renewals, then the lease is gone (no TTL).
    if (++calls <= 3) {
      r->Respond(200, kJson,
                 "{\"result\":{\"header\":{},\"ID\":\"77\",\"TTL\":\"9\"}}\n");
    } else {
      r->Respond(200, kJson, "{\"result\":{\"header\":{},\"ID\":\"77\"}}\n");
    }
  });
  a.Start();
  auto kv = NewKV({a.endpoint()});
  FakeClock clock;
  Mutex mu;
  std::condition_variable cv;
  int renewed = 0;
  KeepAliveLoop loop(kv.get(), 77,
                     {.on_renewed =
                          [&](const etcdserverpb::LeaseKeepAliveResponse& r) {
                            EXPECT_EQ(r.ttl(), 9);
                            MutexLock l(&mu);
                            ++renewed;
                            cv.notify_all();
                          },
                      .clock = &clock});
  for (int i = 1; i <= 3; ++i) {
    {
      MutexLock l(&mu);
      cv.wait(l.native(), [&] { return renewed >= i; });
    }
    clock.WaitForWaiters(1);  // asleep after round i
    EXPECT_EQ(loop.renewals(), i);
    EXPECT_EQ(calls.load(), i);
    clock.Advance(seconds(2));  // less than TTL/3: no new round
    clock.WaitForWaiters(1);
    EXPECT_EQ(calls.load(), i);
    clock.Advance(seconds(1));
  }
  Status why = loop.Wait();
  EXPECT_EQ(why.code(), StatusCode::kNotFound);
  EXPECT_EQ(renewed, 3);
  EXPECT_EQ(calls.load(), 4);
}

// The contract: no callback once Stop() returned. A round in flight at the
// Stop (here: its keepalive held by the member) must not report its
// failure afterwards.
TEST(KeepAliveLoop, NoCallbackAfterStopReturns) {
  FakeMember a;
  Latch entered, release;
  a.Unary("/v3/lease/keepalive", [&](const HttpRequest&, Responder* r) {
    entered.CountDown();
    EXPECT_TRUE(release.Wait());
    // An error no client retries: the round ends at once.
    r->Respond(400, kJson, R"({"error":"bad","code":3,"message":"bad"})");
  });
  a.Start();
  auto kv = NewKV({a.endpoint()});
  std::atomic<int> errors{0};
  {
    KeepAliveLoop loop(kv.get(), 77,
                       {.on_error = [&](const Status&) { ++errors; }});
    ASSERT_TRUE(entered.Wait());
    loop.Stop();
    release.CountDown();
  }  // joins the loop: the round has ended
  EXPECT_EQ(errors.load(), 0);
}

}  // namespace
}  // namespace kplane::storage
