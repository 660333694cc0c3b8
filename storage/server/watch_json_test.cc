#include "storage/server/watch_json.h"

#include <gtest/gtest.h>

#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {
namespace {

using EventList = std::vector<mvccpb::Event>;

mvccpb::Event Put(const std::string& key, const std::string& value, int64_t rev,
                  int64_t version, bool with_prev) {
  mvccpb::Event e;
  e.set_type(mvccpb::Event::PUT);
  auto* kv = e.mutable_kv();
  kv->set_key(key);
  kv->set_value(value);
  kv->set_create_revision(version == 1 ? rev : 2);
  kv->set_mod_revision(rev);
  kv->set_version(version);
  if (with_prev) {
    auto* p = e.mutable_prev_kv();
    p->set_key(key);
    p->set_value("old \"quoted\" \x01 value");
    p->set_create_revision(2);
    p->set_mod_revision(rev - 1);
    p->set_version(version - 1);
    p->set_lease(0x7fff);
  }
  return e;
}

mvccpb::Event Delete(const std::string& key, int64_t rev) {
  mvccpb::Event e;
  e.set_type(mvccpb::Event::DELETE);
  e.mutable_kv()->set_key(key);
  e.mutable_kv()->set_mod_revision(rev);
  return e;
}

// What the server sent before the encoder: the materialized response with
// the server's header, through protobuf's JSON printer.
std::string Reference(const etcdserverpb::ResponseHeader& header,
                      const mvcc::WatchItem& item) {
  etcdserverpb::WatchResponse r = mvcc::ToWatchResponse(item);
  int64_t rev = r.header().revision();
  *r.mutable_header() = header;
  if (item.compact_revision != 0) {
    r.mutable_header()->clear_revision();
  } else {
    r.mutable_header()->set_revision(rev);
  }
  std::string out;
  etcdjson::AppendStreamResult(r, &out);
  return out;
}

TEST(WatchJsonEncoderTest, MatchesProtobufJsonForEveryKindOfResponse) {
  auto events = std::make_shared<const EventList>(EventList{
      Put("/registry/a", std::string(300, 'v'), 12, 3, true),
      Put("/registry/b\n\xff", "x", 12, 1, false), Delete("/registry/c", 12)});
  std::vector<etcdserverpb::ResponseHeader> headers(3);
  headers[0].set_cluster_id(0xdeadbeefcafef00dULL);  // > INT64_MAX
  headers[0].set_member_id(9);
  headers[0].set_raft_term(2);
  headers[1].set_member_id(1);  // cluster 0, term 0: omitted
  // headers[2]: all zero, still printed as "header":{}

  std::vector<mvcc::WatchItem> items;
  for (int64_t id : {int64_t{0}, int64_t{3}, int64_t{1} << 40}) {
    for (bool keep : {false, true}) {
      mvcc::WatchItem it;
      it.watch_id = id;
      it.revision = 12;
      it.events = events;
      it.keep_prev_kv = keep;
      items.push_back(it);
    }
  }
  mvcc::WatchItem progress;  // stream-wide progress
  progress.watch_id = mvcc::kStreamProgressWatchId;
  progress.revision = 40;
  items.push_back(progress);
  mvcc::WatchItem compacted;
  compacted.watch_id = 5;
  compacted.compact_revision = 7;
  compacted.canceled = true;
  items.push_back(compacted);
  mvcc::WatchItem empty_list;  // non-null but empty: no "events"
  empty_list.watch_id = 2;
  empty_list.revision = 13;
  empty_list.events = std::make_shared<const EventList>();
  items.push_back(empty_list);

  WatchJsonEncoder enc;
  for (const auto& h : headers) {
    for (const auto& item : items) {
      std::string got;
      enc.Append(h, item, &got);
      EXPECT_EQ(got, Reference(h, item))
          << "watch_id " << item.watch_id << " keep " << item.keep_prev_kv;
    }
  }
}

TEST(WatchJsonEncoderTest, EncodesASharedEventListOncePerPrevKvChoice) {
  auto events =
      std::make_shared<const EventList>(EventList{Put("/k", "v", 5, 2, true)});
  etcdserverpb::ResponseHeader h;
  h.set_member_id(1);
  WatchJsonEncoder enc;
  std::string out;
  for (int w = 0; w < 10; ++w) {
    mvcc::WatchItem it;
    it.watch_id = w;
    it.revision = 5;
    it.events = events;
    it.keep_prev_kv = (w % 2 == 0);
    enc.Append(h, it, &out);
  }
  EXPECT_EQ(enc.misses(), 2u);  // with and without prev_kv
  EXPECT_EQ(enc.hits(), 8u);
  // Ten lines, the even watch ids with prev_kv.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 10);
  size_t with_prev = 0;
  for (size_t p = 0; (p = out.find("\"prev_kv\"", p)) != std::string::npos;
       ++p) {
    ++with_prev;
  }
  EXPECT_EQ(with_prev, 5u);
}

TEST(WatchJsonEncoderTest, AnEqualButDistinctListIsEncodedAfresh) {
  etcdserverpb::ResponseHeader h;
  WatchJsonEncoder enc;
  std::string a, b;
  mvcc::WatchItem it;
  it.revision = 5;
  it.events = std::make_shared<const EventList>(
      EventList{Put("/k", "one", 5, 1, false)});
  enc.Append(h, it, &a);
  // A list freed and replaced: its entry no longer matches, even if the
  // allocator hands out the same address.
  it.events = std::make_shared<const EventList>(
      EventList{Put("/k", "two", 5, 1, false)});
  enc.Append(h, it, &b);
  EXPECT_EQ(enc.misses(), 2u);
  EXPECT_NE(a, b);
  EXPECT_EQ(b, Reference(h, it));
}

TEST(WatchJsonEncoderTest, CacheKeepsOnlyTheNewestLists) {
  etcdserverpb::ResponseHeader h;
  WatchJsonEncoder enc;
  std::vector<std::shared_ptr<const EventList>> lists;
  for (size_t i = 0; i < WatchJsonEncoder::kCacheEntries + 1; ++i) {
    lists.push_back(std::make_shared<const EventList>(
        EventList{Put("/k" + std::to_string(i), "v", 5, 1, false)}));
  }
  std::string out;
  for (const auto& l : lists) {
    mvcc::WatchItem it;
    it.events = l;
    enc.Append(h, it, &out);
  }
  EXPECT_EQ(enc.misses(), lists.size());
  mvcc::WatchItem newest, oldest;
  newest.events = lists.back();
  oldest.events = lists.front();
  enc.Append(h, newest, &out);
  EXPECT_EQ(enc.hits(), 1u);
  enc.Append(h, oldest, &out);  // evicted by the newest
  EXPECT_EQ(enc.misses(), lists.size() + 1);
}

}  // namespace
}  // namespace kplane::storage
