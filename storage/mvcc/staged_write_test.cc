// The write path without an index on the write group's batch
// (staged_batch.h) against the path that indexes every staged record (the
// store before it, Options::index_every_staged_write): the same random
// writes, in write groups, must give the same answers and leave the same
// RocksDB records, byte for byte.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"
#include "storage/mvcc/watch.h"

namespace kplane::mvcc {
namespace {

constexpr int64_t kLease = 77;

std::string Key(std::mt19937* rng) {
  return "/k" + std::to_string((*rng)() % 6);
}

// One random write request; `step` makes values unique.
etcdserverpb::RequestOp RandomOp(std::mt19937* rng, int step) {
  etcdserverpb::RequestOp op;
  const std::string value = "v" + std::to_string(step);
  switch ((*rng)() % 9) {
    case 0:
    case 1:  // a plain put
      *op.mutable_request_put() = testing::MakePut(Key(rng), value);
      break;
    case 2:  // with a lease, or moving a key off it
      *op.mutable_request_put() =
          testing::MakePut(Key(rng), value, (*rng)() % 2 ? kLease : 0);
      break;
    case 3: {  // keep the lease (fails on a missing key)
      auto* p = op.mutable_request_put();
      *p = testing::MakePut(Key(rng), value);
      p->set_ignore_lease(true);
      break;
    }
    case 4: {  // keep the value, and answer the previous one
      auto* p = op.mutable_request_put();
      *p = testing::MakePut(Key(rng), "");
      p->set_ignore_value(true);
      p->set_prev_kv(true);
      break;
    }
    case 5: {
      auto* p = op.mutable_request_put();
      *p = testing::MakePut(Key(rng), value);
      p->set_prev_kv(true);
      break;
    }
    case 6: {
      auto* d = op.mutable_request_delete_range();
      *d = testing::MakeDelete(Key(rng));
      d->set_prev_kv((*rng)() % 2 == 0);
      break;
    }
    case 7: {
      auto* d = op.mutable_request_delete_range();
      *d = testing::MakeDelete("/k2", "/k5");
      break;
    }
    case 8: {  // a CAS on a value the group may have staged; on success a
               // put, then a read of it and a put that may fail half-way
      auto* t = op.mutable_request_txn();
      const std::string key = Key(rng);
      auto* c = t->add_compare();
      c->set_key(key);
      c->set_target(etcdserverpb::Compare::VALUE);
      c->set_result(etcdserverpb::Compare::NOT_EQUAL);
      c->set_value("v0");
      *t->add_success()->mutable_request_put() = testing::MakePut(key, value);
      t->add_success()->mutable_request_range()->set_key(key);
      if ((*rng)() % 3 == 0) {
        auto* p = t->add_success()->mutable_request_put();
        *p = testing::MakePut("/missing", value);
        p->set_ignore_lease(true);  // KeyNotFound: the txn rolls back
      }
      t->add_failure()->mutable_request_range()->set_key("/k");
      t->mutable_failure(0)->mutable_request_range()->set_range_end("/l");
      break;
    }
  }
  return op;
}

// Applies `ops` in write groups of 1-8 and returns a transcript of the
// answers (status code, then the response's bytes).
std::vector<std::string> Apply(
    Store* s, const std::vector<int>& group_sizes,
    const std::vector<etcdserverpb::RequestOp>& ops) {
  std::vector<std::string> out;
  size_t next = 0;
  uint64_t index = 10;
  for (int n : group_sizes) {
    s->BeginWriteGroup();
    for (int i = 0; i < n && next < ops.size(); ++i, ++next) {
      const etcdserverpb::RequestOp& op = ops[next];
      std::string bytes;
      Status st;
      if (op.has_request_put()) {
        auto r = s->Put(op.request_put(), ++index);
        st = r.status();
        if (r.ok()) r->SerializeToString(&bytes);
      } else if (op.has_request_delete_range()) {
        auto r = s->DeleteRange(op.request_delete_range(), ++index);
        st = r.status();
        if (r.ok()) r->SerializeToString(&bytes);
      } else {
        auto r = s->Txn(op.request_txn(), ++index);
        st = r.status();
        if (r.ok()) r->SerializeToString(&bytes);
      }
      // The only refusal these requests can meet: ignore_lease or
      // ignore_value on a missing key.
      EXPECT_TRUE(st.ok() || st.message() == "etcdserver: key not found")
          << st << " on " << op.ShortDebugString();
      out.push_back(std::to_string(static_cast<int>(st.code())) + " " + bytes);
    }
    s->EndWriteGroup();
  }
  return out;
}

// Every RocksDB record, in key order.
std::vector<std::pair<std::string, std::string>> Dump(const std::string& dir) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status st =
      rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir, &raw);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<std::pair<std::string, std::string>> out;
  if (!st.ok()) return out;
  std::unique_ptr<rocksdb::DB> db(raw);
  std::unique_ptr<rocksdb::Iterator> it(
      db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.emplace_back(it->key().ToString(), it->value().ToString());
  }
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

TEST(MvccStagedWriteTest, PlainBatchWritesWhatAnIndexedBatchWrites) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::vector<etcdserverpb::RequestOp> ops;
    for (int i = 0; i < 120; ++i) ops.push_back(RandomOp(&rng, i));
    std::vector<int> groups;
    for (size_t n = 0; n < ops.size();) {
      groups.push_back(1 + static_cast<int>(rng() % 8));
      n += groups.back();
    }
    // Odd seeds: a watcher that wants prev_kv, so every put reads its
    // previous value (from the database, or from the group's batch when
    // the group staged it).
    const bool watch_prev = seed % 2 == 1;
    std::vector<std::string> answers[2];
    std::vector<std::pair<std::string, std::string>> records[2];
    for (int indexed = 0; indexed < 2; ++indexed) {
      testing::TempDir dir;
      {
        auto s = testing::OpenOrDie(dir.path(), nullptr, [&](Options* o) {
          o->index_every_staged_write = indexed == 1;
        });
        ASSERT_NE(s, nullptr);
        etcdserverpb::LeaseGrantRequest g;
        g.set_id(kLease);
        g.set_ttl(3600);
        ASSERT_TRUE(s->LeaseGrant(g).ok());
        std::unique_ptr<WatchStream> stream;
        if (watch_prev) {
          stream = s->NewWatchStream();
          etcdserverpb::WatchCreateRequest w;
          w.set_key("/");
          w.set_range_end("0");
          w.set_prev_kv(true);
          ASSERT_TRUE(stream->Watch(w).ok());
        }
        answers[indexed] = Apply(s.get(), groups, ops);
        ASSERT_TRUE(s->WriteStatus().ok()) << s->WriteStatus();
      }
      records[indexed] = Dump(dir.path());
    }
    ASSERT_EQ(answers[0].size(), ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      EXPECT_EQ(answers[0][i], answers[1][i])
          << "op " << i << ": " << ops[i].ShortDebugString();
    }
    ASSERT_EQ(records[0].size(), records[1].size());
    for (size_t i = 0; i < records[0].size(); ++i) {
      EXPECT_EQ(records[0][i], records[1][i]) << "record " << i;
    }
  }
}

// prev_kv inside a write group: the previous version is read from the
// database when it is published and from the group's batch when the group
// staged it, in either mode.
TEST(MvccStagedWriteTest, PrevKvFromTheDatabaseOrTheGroup) {
  for (bool indexed : {false, true}) {
    SCOPED_TRACE(indexed ? "batch indexed" : "plain batch");
    testing::TempDir dir;
    auto s = testing::OpenOrDie(dir.path(), nullptr, [&](Options* o) {
      o->index_every_staged_write = indexed;
    });
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Put(testing::MakePut("/a", "published"), 10).ok());
    s->BeginWriteGroup();
    etcdserverpb::PutRequest p = testing::MakePut("/a", "staged");
    p.set_prev_kv(true);
    auto r1 = s->Put(p, 11);
    ASSERT_TRUE(r1.ok()) << r1.status();
    EXPECT_EQ(r1->prev_kv().value(), "published");
    p.set_value("staged again");
    auto r2 = s->Put(p, 12);
    ASSERT_TRUE(r2.ok()) << r2.status();
    EXPECT_EQ(r2->prev_kv().value(), "staged");
    EXPECT_EQ(r2->prev_kv().mod_revision(), r1->header().revision());
    s->EndWriteGroup();
    EXPECT_EQ(testing::ValueAt(s.get(), "/a"), "staged again");
  }
}

}  // namespace
}  // namespace kplane::mvcc
