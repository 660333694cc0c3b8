// What the real etcd 3.4 wrote into this directory's fixtures
// (make_snapshot.sh: etcd34.snapshot; make_restored_dir.sh: restored/,
// the same data after `etcdctl snapshot restore`), for the tests that read
// them back through kplane's store: the snapshot restore (kpctl) and the
// data-dir import (storage/server).
//
//   auto s = ...;  // the store that restore/import produced
//   ASSERT_NO_FATAL_FAILURE(ExpectEtcdFixtureData(s.get()));
//
// Header-only test support: gtest assertions, no link dependency.
#ifndef KPLANE_TESTDATA_ETCD_FIXTURE_DATA_H_
#define KPLANE_TESTDATA_ETCD_FIXTURE_DATA_H_

#include <gtest/gtest.h>

#include <cstdint>

#include "schemas/rpc.pb.h"
#include "storage/mvcc/store.h"

namespace kplane::testdata {

// The lease make_snapshot.sh granted (TTL 600), attached to "lk".
inline constexpr int64_t kEtcdLease = 0x7b16a2414cc9040a;

// Asserts that `s` holds the fixture's data as etcd left it: revision 8,
// compacted at 4, no raft index carried over (kplane's log starts anew),
// "foo" = "v3" created at revision 2, last modified at 7, version 3, and
// kEtcdLease granted for 600 s holding "lk". A fatal failure returns from
// here only: wrap the call in ASSERT_NO_FATAL_FAILURE.
inline void ExpectEtcdFixtureData(mvcc::Store* s) {
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->CurrentRevision(), 8);
  EXPECT_EQ(s->CompactRevision(), 4);
  EXPECT_EQ(s->ConsistentIndex(), 0u);
  etcdserverpb::RangeRequest r;
  r.set_key("foo");
  auto foo = s->Range(r);
  ASSERT_TRUE(foo.ok()) << foo.status();
  ASSERT_EQ(foo->kvs_size(), 1);
  EXPECT_EQ(foo->kvs(0).value(), "v3");
  EXPECT_EQ(foo->kvs(0).create_revision(), 2);
  EXPECT_EQ(foo->kvs(0).mod_revision(), 7);
  EXPECT_EQ(foo->kvs(0).version(), 3);
  etcdserverpb::LeaseTimeToLiveRequest ttl;
  ttl.set_id(kEtcdLease);
  ttl.set_keys(true);
  auto t = s->LeaseTimeToLive(ttl);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->grantedttl(), 600);
  ASSERT_EQ(t->keys_size(), 1);
  EXPECT_EQ(t->keys(0), "lk");
}

}  // namespace kplane::testdata

#endif  // KPLANE_TESTDATA_ETCD_FIXTURE_DATA_H_
