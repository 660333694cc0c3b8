// The member's bound on the watchers of one client Watch stream
// (--max-watchers-per-stream, here 3) on one in-process member, over gRPC
// and the JSON gateway's /v3/watch: a create on a full stream is answered
// as etcd answers a create it refuses (created and canceled at once, watch
// id -1, the limit's text as cancel_reason, the text the gRPC proxy uses);
// the stream and its watchers go on, and once one of them is canceled a
// create succeeds again. Each refusal moves the member's
// kplane_watch_creates_refused_total{protocol} on /metrics by one.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/base64.h"
#include "net/http_client.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

constexpr size_t kMaxWatchers = 3;
constexpr char kRefusal[] =
    "etcdserver: too many watchers on this stream (limit 3)";

using WatchRW = grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>;

pb::WatchRequest CreateRequest(const std::string& key) {
  pb::WatchRequest req;
  req.mutable_create_request()->set_key(key);
  return req;
}

pb::WatchRequest CancelRequest(int64_t id) {
  pb::WatchRequest req;
  req.mutable_cancel_request()->set_watch_id(id);
  return req;
}

// A refused create, as etcd answers one (and the gRPC proxy).
void ExpectRefused(const pb::WatchResponse& r) {
  EXPECT_TRUE(r.created()) << r.DebugString();
  EXPECT_TRUE(r.canceled()) << r.DebugString();
  EXPECT_EQ(r.watch_id(), -1);
  EXPECT_EQ(r.cancel_reason(), kRefusal);
  EXPECT_EQ(r.events_size(), 0);
}

class WatchLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start({.max_watchers_per_stream = kMaxWatchers}).ok());
    auto ch = member_.Channel();
    watch_ = pb::Watch::NewStub(ch);
  }

  // kplane_watch_creates_refused_total{protocol="<protocol>"} on the
  // member's /metrics, as a scraper reads it; -1 when absent.
  double RefusedCreates(const std::string& protocol) {
    net::HttpClient c("127.0.0.1", member_.port());
    auto r = c.Request("GET", "/metrics");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return -1;
    EXPECT_EQ(r->status, 200);
    const std::string series =
        "\nkplane_watch_creates_refused_total{protocol=\"" + protocol + "\"} ";
    const std::string text = "\n" + r->body;
    const size_t pos = text.find(series);
    if (pos == std::string::npos) return -1;
    return std::stod(text.substr(pos + series.size()));
  }

  TestMember member_;
  std::unique_ptr<pb::Watch::Stub> watch_;
};

// Reads responses from `next` until every watcher in `ids` has the one
// event at `rev`; fails on any other response with events, and on one for
// a watcher outside `ids`.
template <typename Next>
void ExpectEventForEach(Next next, const std::set<int64_t>& ids, int64_t rev,
                        const std::string& key) {
  std::set<int64_t> seen;
  while (seen != ids) {
    pb::WatchResponse r;
    if (!next(&r)) return;
    ASSERT_EQ(ids.count(r.watch_id()), 1u) << r.DebugString();
    ASSERT_EQ(r.events_size(), 1) << r.DebugString();
    EXPECT_EQ(r.events(0).kv().key(), key);
    EXPECT_EQ(r.events(0).kv().mod_revision(), rev);
    EXPECT_TRUE(seen.insert(r.watch_id()).second) << r.DebugString();
  }
}

TEST_F(WatchLimitTest, GrpcStreamAtTheLimitRefusesTheNextCreate) {
  // Both series are there from the start, at zero.
  ASSERT_EQ(RefusedCreates("grpc"), 0);
  ASSERT_EQ(RefusedCreates("json"), 0);
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  auto read = [&](pb::WatchResponse* r) {
    bool ok = rw->Read(r);
    EXPECT_TRUE(ok) << "watch stream ended: " << rw->Finish().error_message();
    return ok;
  };
  // Two watchers on w/0, one on w/1.
  std::map<std::string, std::set<int64_t>> on;
  for (const char* key : {"w/0", "w/1", "w/0"}) {
    ASSERT_TRUE(rw->Write(CreateRequest(key)));
    pb::WatchResponse r;
    ASSERT_TRUE(read(&r));
    ASSERT_TRUE(r.created());
    ASSERT_FALSE(r.canceled()) << r.cancel_reason();
    EXPECT_GE(r.watch_id(), 0);
    on[key].insert(r.watch_id());
  }
  ASSERT_EQ(on["w/0"].size() + on["w/1"].size(), kMaxWatchers);

  // The fourth create is refused, also with an id of its own choosing.
  ASSERT_TRUE(rw->Write(CreateRequest("w/0")));
  pb::WatchRequest with_id = CreateRequest("w/0");
  with_id.mutable_create_request()->set_watch_id(100);
  ASSERT_TRUE(rw->Write(with_id));
  for (int i = 0; i < 2; ++i) {
    pb::WatchResponse r;
    ASSERT_TRUE(read(&r));
    ExpectRefused(r);
    EXPECT_GT(r.header().revision(), 0);  // the member's header
  }
  EXPECT_EQ(RefusedCreates("grpc"), 2);

  // The three go on: each gets the next change of its key, and the
  // refused ones get nothing.
  int64_t rev = member_.MustPut("w/0", "a");
  ExpectEventForEach(read, on["w/0"], rev, "w/0");
  rev = member_.MustPut("w/1", "b");
  ExpectEventForEach(read, on["w/1"], rev, "w/1");

  // Canceling one frees its place.
  const int64_t gone = *on["w/1"].begin();
  ASSERT_TRUE(rw->Write(CancelRequest(gone)));
  pb::WatchResponse r;
  ASSERT_TRUE(read(&r));
  EXPECT_TRUE(r.canceled());
  EXPECT_EQ(r.watch_id(), gone);
  ASSERT_TRUE(rw->Write(CreateRequest("w/1")));
  ASSERT_TRUE(read(&r));
  ASSERT_TRUE(r.created());
  ASSERT_FALSE(r.canceled()) << r.cancel_reason();
  const int64_t again = r.watch_id();
  EXPECT_GE(again, 0);
  rev = member_.MustPut("w/1", "c");
  ExpectEventForEach(read, {again}, rev, "w/1");
  // ... and the stream is full again.
  ASSERT_TRUE(rw->Write(CreateRequest("w/1")));
  ASSERT_TRUE(read(&r));
  ExpectRefused(r);
  // Three refusals in all (the creates that succeeded count nothing), all
  // over gRPC.
  EXPECT_EQ(RefusedCreates("grpc"), 3);
  EXPECT_EQ(RefusedCreates("json"), 0);
  ctx.TryCancel();
}

// The JSON gateway takes several creates in one body chunk: the ones past
// the limit are refused in the same response shape, one message each.
TEST_F(WatchLimitTest, JsonGatewayStreamAtTheLimitRefusesTheNextCreate) {
  net::HttpClient c("127.0.0.1", member_.port());
  auto st = c.OpenStream("POST", "/v3/watch");
  ASSERT_TRUE(st.ok()) << st.status();
  auto create = [](const std::string& key) {
    return "{\"create_request\":{\"key\":\"" + Base64Encode(key) + "\"}}";
  };
  std::string buf;
  auto read = [&](pb::WatchResponse* r) {
    size_t nl;
    while ((nl = buf.find('\n')) == std::string::npos) {
      StatusOr<bool> more = (*st)->Read(&buf, seconds(30));
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok()) return false;
      EXPECT_TRUE(*more) << "watch stream ended";
      if (!*more) return false;
    }
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl + 1);
    const std::string prefix = "{\"result\":";
    EXPECT_EQ(line.compare(0, prefix.size(), prefix), 0) << line;
    Status parsed = etcdjson::ParseJson(
        line.substr(prefix.size(), line.size() - prefix.size() - 1), r);
    EXPECT_TRUE(parsed.ok()) << parsed << ": " << line;
    return parsed.ok();
  };

  ASSERT_EQ(RefusedCreates("json"), 0);
  // Five creates in one chunk: three watchers, two refusals.
  std::string body;
  for (int i = 0; i < 5; ++i) body += create("j/" + std::to_string(i % 2));
  ASSERT_TRUE((*st)->Send(body).ok());
  std::set<int64_t> ids, on_0;
  for (int i = 0; i < 5; ++i) {
    pb::WatchResponse r;
    ASSERT_TRUE(read(&r));
    if (i < 3) {
      ASSERT_TRUE(r.created());
      ASSERT_FALSE(r.canceled()) << r.cancel_reason();
      ids.insert(r.watch_id());
      if (i % 2 == 0) on_0.insert(r.watch_id());
    } else {
      ExpectRefused(r);
    }
  }
  ASSERT_EQ(ids.size(), kMaxWatchers);
  EXPECT_EQ(RefusedCreates("json"), 2);

  int64_t rev = member_.MustPut("j/0", "a");
  ExpectEventForEach(read, on_0, rev, "j/0");

  // Canceling one frees its place.
  const int64_t gone = *on_0.begin();
  ASSERT_TRUE((*st)
                  ->Send("{\"cancel_request\":{\"watch_id\":\"" +
                         std::to_string(gone) + "\"}}")
                  .ok());
  pb::WatchResponse r;
  ASSERT_TRUE(read(&r));
  EXPECT_TRUE(r.canceled());
  EXPECT_EQ(r.watch_id(), gone);
  ASSERT_TRUE((*st)->Send(create("j/0") + create("j/0")).ok());
  ASSERT_TRUE(read(&r));
  ASSERT_TRUE(r.created());
  ASSERT_FALSE(r.canceled()) << r.cancel_reason();
  std::set<int64_t> now_on_0 = on_0;
  now_on_0.erase(gone);
  now_on_0.insert(r.watch_id());
  ASSERT_TRUE(read(&r));
  ExpectRefused(r);  // full again
  rev = member_.MustPut("j/0", "b");
  ExpectEventForEach(read, now_on_0, rev, "j/0");
  // Three refusals in all, all on /v3/watch.
  EXPECT_EQ(RefusedCreates("json"), 3);
  EXPECT_EQ(RefusedCreates("grpc"), 0);
}

}  // namespace
}  // namespace kplane::storage
