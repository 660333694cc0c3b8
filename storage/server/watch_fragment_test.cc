// Watch response fragmenting (watch_fragment.h): etcd 3.4's own
// sendFragments table (etcdserver/api/v3rpc/watch_test.go, same messages,
// same limits, same piece counts), reassembly, the size bound of every
// piece, and that a queued item is cut exactly as the response it stands
// for.
#include "storage/server/watch_fragment.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

// etcd's createResponse: `events` events, each a key of `data_size` bytes.
pb::WatchResponse CreateResponse(size_t data_size, int events) {
  pb::WatchResponse r;
  for (int i = 0; i < events; ++i) {
    r.add_events()->mutable_kv()->set_key(std::string(data_size, 'a'));
  }
  return r;
}

void ExpectFlags(const std::vector<pb::WatchResponse>& pieces) {
  ASSERT_FALSE(pieces.empty());
  for (size_t i = 0; i + 1 < pieces.size(); ++i) {
    EXPECT_TRUE(pieces[i].fragment()) << "piece " << i;
  }
  EXPECT_FALSE(pieces.back().fragment());
}

TEST(WatchFragmentTest, EtcdSendFragmentTable) {
  struct Case {
    size_t data_size;
    int events;
    size_t limit;
    size_t pieces;
  };
  const Case cases[] = {
      {100, 1, 2147483647, 1},  // large limit: whole
      {10, 2, 50, 1},           // fits although two events
      {1024, 1, 1, 1},          // one event over the limit: whole
      {11, 5, 20, 5},           // over only when combined
      {15, 5, 10, 5},           // every event over the limit
      {10, 4, 35, 2},           // some combined over the limit
  };
  for (const Case& c : cases) {
    std::vector<pb::WatchResponse> pieces =
        FragmentWatchResponse(CreateResponse(c.data_size, c.events), c.limit);
    EXPECT_EQ(pieces.size(), c.pieces)
        << c.data_size << " x " << c.events << " limit " << c.limit;
    ExpectFlags(pieces);
  }
}

TEST(WatchFragmentTest, WorkedExampleOfTheHeader) {
  EXPECT_EQ(FragmentEnds(20, {30, 30, 30, 120}, 100),
            (std::vector<size_t>{2, 3, 4}));
  // Under the limit as it stands (fragment false: 2 bytes fewer): whole.
  EXPECT_EQ(FragmentEnds(20, {30, 30}, 79), (std::vector<size_t>{2}));
  EXPECT_EQ(FragmentEnds(20, {30, 30}, 78), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(FragmentEnds(20, {}, 1), (std::vector<size_t>{0}));
}

TEST(WatchFragmentTest, PiecesReassembleToTheOriginalWithinTheLimit) {
  pb::WatchResponse r;
  r.mutable_header()->set_cluster_id(7);
  r.mutable_header()->set_member_id(9);
  r.mutable_header()->set_revision(1234);
  r.mutable_header()->set_raft_term(2);
  r.set_watch_id(5);
  for (int i = 0; i < 40; ++i) {
    mvccpb::Event* e = r.add_events();
    e->set_type(i % 3 == 0 ? mvccpb::Event::DELETE : mvccpb::Event::PUT);
    e->mutable_kv()->set_key("k" + std::to_string(i));
    e->mutable_kv()->set_mod_revision(1000 + i);
    // Sizes from 1 byte to 4 KiB, one event (i = 17) over the limit.
    e->mutable_kv()->set_value(std::string(i == 17 ? 9000 : (i * 97) % 4096,
                                           static_cast<char>('a' + i % 26)));
  }
  const size_t limit = 8192;
  std::vector<pb::WatchResponse> pieces = FragmentWatchResponse(r, limit);
  ASSERT_GT(pieces.size(), 3u);
  ExpectFlags(pieces);
  pb::WatchResponse joined;
  for (const pb::WatchResponse& p : pieces) {
    ASSERT_GE(p.events_size(), 1);
    if (p.events_size() > 1) {
      EXPECT_LT(p.ByteSizeLong(), limit);
    }
    EXPECT_EQ(p.header().SerializeAsString(), r.header().SerializeAsString());
    EXPECT_EQ(p.watch_id(), 5);
    for (const mvccpb::Event& e : p.events()) *joined.add_events() = e;
  }
  ASSERT_EQ(joined.events_size(), r.events_size());
  for (int i = 0; i < r.events_size(); ++i) {
    EXPECT_EQ(joined.events(i).SerializeAsString(),
              r.events(i).SerializeAsString())
        << "event " << i;
  }
  // Greedy: no piece could have taken the next piece's first event.
  for (size_t i = 0; i + 1 < pieces.size(); ++i) {
    pb::WatchResponse more = pieces[i];
    *more.add_events() = pieces[i + 1].events(0);
    EXPECT_GE(more.ByteSizeLong(), limit) << "piece " << i;
  }
}

TEST(WatchFragmentTest, ItemIsCutAsTheResponseItStandsFor) {
  auto events = std::make_shared<std::vector<mvccpb::Event>>();
  for (int i = 0; i < 12; ++i) {
    mvccpb::Event e;
    e.mutable_kv()->set_key("key/" + std::to_string(i));
    e.mutable_kv()->set_value(std::string(300 + 50 * i, 'v'));
    // A prev_kv the watcher did not ask for: not sent, not measured.
    e.mutable_prev_kv()->set_value(std::string(5000, 'p'));
    events->push_back(e);
  }
  mvcc::WatchItem item;
  item.watch_id = 3;
  item.revision = 77;
  item.events = events;
  item.keep_prev_kv = false;
  pb::ResponseHeader header;
  header.set_cluster_id(0x1234567890);
  header.set_member_id(0xabcdef);
  header.set_raft_term(4);

  const size_t limit = 2000;
  pb::WatchResponse as_sent = mvcc::ToWatchResponse(item);
  *as_sent.mutable_header() = header;
  as_sent.mutable_header()->set_revision(77);
  std::vector<pb::WatchResponse> want = FragmentWatchResponse(as_sent, limit);
  ASSERT_GT(want.size(), 1u);

  std::vector<WatchItemPiece> got = FragmentWatchItem(item, header, limit);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    pb::WatchResponse w = mvcc::ToWatchResponse(got[i].item);
    *w.mutable_header() = header;
    w.mutable_header()->set_revision(77);
    w.set_fragment(got[i].fragment);
    EXPECT_EQ(w.SerializeAsString(), want[i].SerializeAsString())
        << "piece " << i;
  }

  // Kept prev_kv counts: the same events cut into more pieces.
  item.keep_prev_kv = true;
  EXPECT_GT(FragmentWatchItem(item, header, limit).size(), got.size());

  // Not cut: the item itself, events shared, not copied.
  std::vector<WatchItemPiece> whole = FragmentWatchItem(item, header, 1 << 20);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_FALSE(whole[0].fragment);
  EXPECT_EQ(whole[0].item.events.get(), events.get());
}

TEST(WatchFragmentTest, LimitIsMaxRequestBytesPlusGrpcOverhead) {
  EXPECT_EQ(WatchFragmentLimit(1536 * 1024), 2048u * 1024);
  EXPECT_EQ(WatchFragmentLimit(1024), 1024u + 512 * 1024);
}

}  // namespace
}  // namespace kplane::storage
