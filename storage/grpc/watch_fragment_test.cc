// Watch response fragmenting on one in-process member (max request bytes
// 1 MiB, so etcd's fragment limit is 1.5 MiB), over gRPC and the JSON
// gateway: a watcher created with fragment gets a large response in
// pieces that reassemble to exactly the events a watcher without it gets
// in one response; a single event over the limit still arrives, alone.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include "storage/server/watch_fragment.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/base64.h"
#include "net/http_client.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

constexpr int64_t kMaxRequestBytes = 1 << 20;
const size_t kLimit = WatchFragmentLimit(kMaxRequestBytes);

std::string Value(size_t bytes, int i) {
  return std::string(bytes, static_cast<char>('a' + i % 26));
}

using WatchRW = grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>;

class WatchFragmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start({.max_request_bytes = kMaxRequestBytes}).ok());
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    auto ch = member_.Channel(args);
    kv_ = pb::KV::NewStub(ch);
    watch_ = pb::Watch::NewStub(ch);
  }

  // One txn putting every key of `kvs` (one revision).
  int64_t TxnPut(const std::map<std::string, std::string>& kvs) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::TxnRequest req;
    for (const auto& [k, v] : kvs) {
      pb::PutRequest* p = req.add_success()->mutable_request_put();
      p->set_key(k);
      p->set_value(v);
    }
    pb::TxnResponse resp;
    grpc::Status st = kv_->Txn(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.header().revision();
  }

  // A gRPC watch stream.
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<WatchRW> rw;
    // Responses of other watchers read while awaiting a "created" (an
    // earlier watcher's history may arrive first); ReadAll takes them first.
    std::deque<pb::WatchResponse> backlog;
  };
  std::unique_ptr<Stream> Open() {
    auto s = std::make_unique<Stream>();
    s->ctx.set_deadline(TestCallDeadline());
    s->rw = watch_->Watch(&s->ctx);
    return s;
  }
  // Creates a watcher with `id` on `prefix` and awaits its "created"
  // (other watchers' responses that arrive first go to the backlog).
  static void Create(Stream* s, int64_t id, const std::string& prefix,
                     int64_t start, bool fragment, bool prev_kv) {
    pb::WatchRequest req;
    pb::WatchCreateRequest* c = req.mutable_create_request();
    c->set_key(prefix);
    std::string end = prefix;
    end.back()++;
    c->set_range_end(end);
    c->set_start_revision(start);
    c->set_watch_id(id);
    c->set_fragment(fragment);
    c->set_prev_kv(prev_kv);
    ASSERT_TRUE(s->rw->Write(req));
    for (;;) {
      pb::WatchResponse r;
      ASSERT_TRUE(s->rw->Read(&r));
      if (r.created() && r.watch_id() == id) return;
      // Nothing of this watcher's may come before its "created".
      ASSERT_NE(r.watch_id(), id) << r.DebugString();
      s->backlog.push_back(std::move(r));
    }
  }
  // Reads until every watcher in `want` (id -> events) has its events;
  // returns the responses per watcher, in order.
  static std::map<int64_t, std::vector<pb::WatchResponse>> ReadAll(
      Stream* s, std::map<int64_t, int> want) {
    std::map<int64_t, std::vector<pb::WatchResponse>> got;
    std::map<int64_t, int> have;
    auto done = [&] {
      for (const auto& [id, n] : want) {
        if (have[id] < n) return false;
        // A fragment run ends with fragment false.
        if (got[id].empty() || got[id].back().fragment()) return false;
      }
      return true;
    };
    while (!done()) {
      pb::WatchResponse r;
      if (!s->backlog.empty()) {
        r = std::move(s->backlog.front());
        s->backlog.pop_front();
      } else if (!s->rw->Read(&r)) {
        ADD_FAILURE() << "watch stream ended: "
                      << s->rw->Finish().error_message();
        return got;
      }
      have[r.watch_id()] += r.events_size();
      got[r.watch_id()].push_back(std::move(r));
    }
    return got;
  }

  static std::vector<std::string> Events(
      const std::vector<pb::WatchResponse>& rs) {
    std::vector<std::string> out;
    for (const pb::WatchResponse& r : rs) {
      for (const mvccpb::Event& e : r.events()) {
        out.push_back(e.SerializeAsString());
      }
    }
    return out;
  }

  // The pieces of one fragmented response: fragment on all but the last,
  // one header, the watcher's id, every piece of several events under the
  // limit.
  static void ExpectPieces(const std::vector<pb::WatchResponse>& pieces,
                           int64_t id) {
    ASSERT_GE(pieces.size(), 2u);
    for (size_t i = 0; i < pieces.size(); ++i) {
      const pb::WatchResponse& p = pieces[i];
      EXPECT_EQ(p.fragment(), i + 1 < pieces.size()) << "piece " << i;
      EXPECT_EQ(p.watch_id(), id);
      EXPECT_GE(p.events_size(), 1);
      EXPECT_EQ(p.header().SerializeAsString(),
                pieces[0].header().SerializeAsString());
      if (p.events_size() > 1) {
        EXPECT_LT(p.ByteSizeLong(), kLimit) << "piece " << i;
      }
    }
  }

  TestMember member_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Watch::Stub> watch_;
};

// etcd's TestWatchFragmentEnable/Disable, scaled: ten 200 KiB puts read
// back from history as one 2 MiB response.
TEST_F(WatchFragmentTest, HistoryReassemblesToTheWholeResponse) {
  int64_t first = 0;
  for (int i = 0; i < 10; ++i) {
    int64_t rev =
        member_.MustPut("f/" + std::to_string(i), Value(200 << 10, i));
    if (i == 0) first = rev;
  }
  auto s = Open();
  Create(s.get(), 1, "f/", first, /*fragment=*/false, /*prev_kv=*/false);
  Create(s.get(), 2, "f/", first, /*fragment=*/true, /*prev_kv=*/false);
  auto got = ReadAll(s.get(), {{1, 10}, {2, 10}});

  // Without fragment: one response over the limit, as etcd sends it.
  ASSERT_EQ(got[1].size(), 1u);
  EXPECT_FALSE(got[1][0].fragment());
  EXPECT_EQ(got[1][0].events_size(), 10);
  EXPECT_GT(got[1][0].ByteSizeLong(), kLimit);

  ExpectPieces(got[2], 2);
  EXPECT_EQ(got[2][0].header().revision(), got[1][0].header().revision());
  EXPECT_EQ(Events(got[2]), Events(got[1]));
}

// A txn of several large puts over large values, watched with prev_kv:
// one live revision over the limit.
TEST_F(WatchFragmentTest, LiveTxnWithPrevKvIsCut) {
  std::map<std::string, std::string> before, after;
  for (int i = 0; i < 4; ++i) {
    before["t/" + std::to_string(i)] = Value(220 << 10, i);
    after["t/" + std::to_string(i)] = Value(220 << 10, i + 1);
  }
  TxnPut(before);
  auto s = Open();
  Create(s.get(), 1, "t/", 0, /*fragment=*/false, /*prev_kv=*/true);
  Create(s.get(), 2, "t/", 0, /*fragment=*/true, /*prev_kv=*/true);
  int64_t rev = TxnPut(after);
  auto got = ReadAll(s.get(), {{1, 4}, {2, 4}});

  ASSERT_EQ(got[1].size(), 1u);
  EXPECT_FALSE(got[1][0].fragment());
  EXPECT_GT(got[1][0].ByteSizeLong(), kLimit);
  ExpectPieces(got[2], 2);
  EXPECT_EQ(got[2][0].header().revision(), rev);
  EXPECT_EQ(Events(got[2]), Events(got[1]));
  for (const pb::WatchResponse& p : got[2]) {
    for (const mvccpb::Event& e : p.events()) {
      EXPECT_EQ(e.prev_kv().value(), before[e.kv().key()]);
      EXPECT_EQ(e.kv().value(), after[e.kv().key()]);
    }
  }
}

// One event larger than the limit is sent, whole and alone (etcd never
// splits an event).
TEST_F(WatchFragmentTest, EventOverTheLimitIsDeliveredAlone) {
  int64_t first = member_.MustPut("big", Value(900 << 10, 0));
  auto s = Open();
  Create(s.get(), 1, "big", 0, /*fragment=*/true, /*prev_kv=*/true);
  member_.MustPut("big", Value(900 << 10, 1));
  auto live = ReadAll(s.get(), {{1, 1}});
  ASSERT_EQ(live[1].size(), 1u);
  EXPECT_FALSE(live[1][0].fragment());
  EXPECT_GT(live[1][0].ByteSizeLong(), kLimit);
  EXPECT_EQ(live[1][0].events(0).prev_kv().value(), Value(900 << 10, 0));

  // From history: both events, each alone in its piece.
  Create(s.get(), 2, "big", first, /*fragment=*/true, /*prev_kv=*/true);
  auto history = ReadAll(s.get(), {{2, 2}});
  ASSERT_EQ(history[2].size(), 2u);
  EXPECT_TRUE(history[2][0].fragment());
  EXPECT_FALSE(history[2][1].fragment());
  EXPECT_EQ(history[2][0].events_size(), 1);
  EXPECT_EQ(history[2][1].events_size(), 1);
  EXPECT_GT(history[2][1].ByteSizeLong(), kLimit);
  EXPECT_EQ(history[2][1].events(0).kv().value(), Value(900 << 10, 1));
}

// The JSON gateway: each piece its own message, `"fragment":true` where
// etcd's gateway prints it (before "events"), nothing on the last piece.
// A Watch stream whose client does not read holds about a megabyte of
// output; the rest waits in the MVCC stream's bounded queue and, once that
// is full, nowhere: its watcher becomes a victim that re-reads the log
// when the client catches up (as the JSON gateway's /v3/watch, and etcd).
// Without the pacing the stream buffered all 25 MiB (up to its 64 MiB
// cut-off) and its watcher never fell behind.
TEST_F(WatchFragmentTest, AStreamThatIsNotReadIsPaced) {
  auto s = Open();
  Create(s.get(), 1, "p/", 0, false, false);
  const std::string value(64 << 10, 'v');
  for (int i = 0; i < 400; ++i) {  // 25 MiB of events
    member_.MustPut("p/" + std::to_string(i), value);
  }
  StatusOr<StoreRef> store = member_.server()->ReadStore();
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->GetWatchStats().victims, 1u)
      << "the stream's responses were all moved into its write queue";
  *store = StoreRef();
  // Read now, the client gets every event, in order.
  int events = 0;
  while (events < 400) {
    pb::WatchResponse r;
    ASSERT_TRUE(s->rw->Read(&r)) << "after " << events << " events";
    ASSERT_FALSE(r.canceled()) << r.DebugString();
    for (const auto& e : r.events()) {
      EXPECT_EQ(e.kv().key(), "p/" + std::to_string(events));
      ++events;
    }
  }
  s->ctx.TryCancel();
}

// A client may name any watch id, the largest int64 too (the next id
// after it was computed with a signed overflow, fatal under the
// sanitizers); its events come under that id, over gRPC and JSON.
TEST_F(WatchFragmentTest, TheLargestWatchIdIsServed) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto s = Open();
  Create(s.get(), kMax, "m/", 0, false, false);
  member_.MustPut("m/a", "1");
  pb::WatchResponse r;
  ASSERT_TRUE(s->rw->Read(&r));
  EXPECT_EQ(r.watch_id(), kMax);
  EXPECT_EQ(r.events_size(), 1);
  s->ctx.TryCancel();

  net::HttpClient c("127.0.0.1", member_.port());
  auto st = c.OpenStream("POST", "/v3/watch");
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE((*st)
                  ->Send("{\"create_request\":{\"key\":\"" +
                         Base64Encode("m/b") + "\",\"watch_id\":\"" +
                         std::to_string(kMax) + "\"}}")
                  .ok());
  std::string buf;
  while (buf.find('\n') == std::string::npos) {
    StatusOr<bool> more = (*st)->Read(&buf, seconds(30));
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(*more) << "watch stream ended";
  }
  EXPECT_NE(buf.find("\"created\":true"), std::string::npos) << buf;
  EXPECT_NE(buf.find("\"watch_id\":\"" + std::to_string(kMax) + "\""),
            std::string::npos)
      << buf;
}

TEST_F(WatchFragmentTest, JsonGatewayPrintsThePieces) {
  int64_t first = 0;
  for (int i = 0; i < 10; ++i) {
    int64_t rev =
        member_.MustPut("j/" + std::to_string(i), Value(200 << 10, i));
    if (i == 0) first = rev;
  }
  net::HttpClient c("127.0.0.1", member_.port());
  auto st = c.OpenStream("POST", "/v3/watch");
  ASSERT_TRUE(st.ok()) << st.status();
  auto create = [&](int id, bool fragment) {
    return "{\"create_request\":{\"key\":\"" + Base64Encode("j/") +
           "\",\"range_end\":\"" + Base64Encode("j0") +
           "\",\"start_revision\":\"" + std::to_string(first) +
           "\",\"watch_id\":\"" + std::to_string(id) + "\"" +
           (fragment ? ",\"fragment\":true" : "") + "}}";
  };
  ASSERT_TRUE((*st)->Send(create(1, false)).ok());
  ASSERT_TRUE((*st)->Send(create(2, true)).ok());

  std::map<int64_t, std::vector<pb::WatchResponse>> got;
  std::map<int64_t, std::vector<std::string>> lines;
  std::map<int64_t, int> events;
  std::string buf;
  auto done = [&] {
    return events[1] == 10 && events[2] == 10 && !got[2].back().fragment();
  };
  while (got[2].empty() || !done()) {
    size_t nl;
    while ((nl = buf.find('\n')) == std::string::npos) {
      StatusOr<bool> more = (*st)->Read(&buf, seconds(30));
      ASSERT_TRUE(more.ok()) << more.status();
      ASSERT_TRUE(*more) << "watch stream ended";
    }
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl + 1);
    const std::string prefix = "{\"result\":";
    ASSERT_EQ(line.compare(0, prefix.size(), prefix), 0) << line.substr(0, 80);
    pb::WatchResponse r;
    ASSERT_TRUE(
        etcdjson::ParseJson(
            line.substr(prefix.size(), line.size() - prefix.size() - 1), &r)
            .ok());
    if (r.created()) continue;
    events[r.watch_id()] += r.events_size();
    lines[r.watch_id()].push_back(line.substr(0, line.find("\"events\"")));
    got[r.watch_id()].push_back(std::move(r));
  }
  ASSERT_EQ(got[1].size(), 1u);
  EXPECT_EQ(lines[1][0].find("fragment"), std::string::npos);
  ExpectPieces(got[2], 2);
  for (size_t i = 0; i < lines[2].size(); ++i) {
    bool last = i + 1 == lines[2].size();
    // `..."watch_id":"2","fragment":true,"events":[...` on all but the last.
    EXPECT_EQ(lines[2][i].size() >= 17 &&
                  lines[2][i].compare(lines[2][i].size() - 17, 17,
                                      ",\"fragment\":true,") == 0,
              !last)
        << lines[2][i];
  }
  EXPECT_EQ(Events(got[2]), Events(got[1]));
}

}  // namespace
}  // namespace kplane::storage
