// Helpers for the kplane_mvcc tests: temporary directories, request
// builders, store opening.
#ifndef KPLANE_STORAGE_MVCC_TEST_UTIL_H_
#define KPLANE_STORAGE_MVCC_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "base/testing/temp_dir.h"
#include "storage/mvcc/store.h"

namespace kplane::mvcc::testing {

// A fresh directory under /tmp, removed with everything in it.
using ::kplane::testing::TempDir;

inline etcdserverpb::PutRequest MakePut(const std::string& key,
                                        const std::string& value,
                                        int64_t lease = 0) {
  etcdserverpb::PutRequest r;
  r.set_key(key);
  r.set_value(value);
  r.set_lease(lease);
  return r;
}

inline etcdserverpb::RangeRequest MakeRange(const std::string& key,
                                            const std::string& range_end = "",
                                            int64_t revision = 0) {
  etcdserverpb::RangeRequest r;
  r.set_key(key);
  r.set_range_end(range_end);
  r.set_revision(revision);
  return r;
}

inline etcdserverpb::DeleteRangeRequest MakeDelete(
    const std::string& key, const std::string& range_end = "") {
  etcdserverpb::DeleteRangeRequest r;
  r.set_key(key);
  r.set_range_end(range_end);
  return r;
}

inline std::unique_ptr<Store> OpenOrDie(
    const std::string& dir, Clock* clock = nullptr,
    const std::function<void(Options*)>& tweak = nullptr) {
  Options o;
  o.dir = dir;
  // Closing without a flush is faster and makes every reopen recover from
  // the WAL, as after a crash. Tests that want the flush path set it back.
  o.flush_on_close = false;
  if (clock != nullptr) o.clock = clock;
  if (tweak) tweak(&o);
  auto s = Store::Open(o);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return nullptr;
  return std::move(*s);
}

// The value of `key` at `rev` (0 = current), or "<none>".
inline std::string ValueAt(Store* s, const std::string& key, int64_t rev = 0) {
  auto r = s->Range(MakeRange(key, "", rev));
  if (!r.ok()) return "<" + r.status().ToString() + ">";
  if (r->kvs_size() == 0) return "<none>";
  return r->kvs(0).value();
}

}  // namespace kplane::mvcc::testing

#endif  // KPLANE_STORAGE_MVCC_TEST_UTIL_H_
