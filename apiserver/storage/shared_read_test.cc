#include "apiserver/storage/shared_read.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kplane::apiserver {
namespace {

// A read whose first call blocks until the test opens the gate, after it
// has taken the value (the store answered; the answer is on its way).
class GatedRead {
 public:
  StatusOr<int64_t> operator()() {
    const int64_t v = value.load();
    if (calls.fetch_add(1) == 0) {
      first_started.set_value();
      gate_future.wait();
    }
    return v;
  }
  void Open() { gate.set_value(); }

  std::atomic<int64_t> value{1};
  std::atomic<int> calls{0};
  std::promise<void> first_started;
  std::promise<void> gate;
  std::shared_future<void> gate_future = gate.get_future().share();
};

// Calls `fn` once the `n`-th wait began.
std::function<void()> AfterWaits(int n, std::promise<void>* p) {
  auto count = std::make_shared<std::atomic<int>>(0);
  return [count, n, p] {
    if (count->fetch_add(1) + 1 == n) p->set_value();
  };
}

// The protection: a caller that arrives while a read is in flight does not
// take that read's answer (it may predate a write acknowledged before the
// caller started); it waits for the next read.
TEST(SharedReadTest, ReadInFlightNeverAnswersALaterCaller) {
  GatedRead store;
  SharedRead<int64_t> reads([&] { return store(); });
  std::promise<void> b_waits;
  reads.set_on_wait_for_testing(AfterWaits(1, &b_waits));

  auto a = std::async(std::launch::async, [&] { return reads.Read(); });
  store.first_started.get_future().wait();  // A's read took value 1
  store.value = 2;                          // a write is acknowledged
  auto b = std::async(std::launch::async, [&] { return reads.Read(); });
  b_waits.get_future().wait();  // B arrived while A's read is in flight
  store.Open();

  StatusOr<int64_t> ra = a.get();
  StatusOr<int64_t> rb = b.get();
  ASSERT_TRUE(ra.ok());
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(*ra, 1);
  EXPECT_EQ(*rb, 2);  // the write acknowledged before B started
  EXPECT_EQ(reads.reads(), 2);
}

// Callers that arrive during one read share the next one.
TEST(SharedReadTest, CallersWaitingForARoundShareOneRead) {
  GatedRead store;
  SharedRead<int64_t> reads([&] { return store(); });
  constexpr int kWaiting = 16;
  std::promise<void> all_wait;
  reads.set_on_wait_for_testing(AfterWaits(kWaiting, &all_wait));

  auto first = std::async(std::launch::async, [&] { return reads.Read(); });
  store.first_started.get_future().wait();
  store.value = 7;
  std::vector<std::future<StatusOr<int64_t>>> later;
  for (int i = 0; i < kWaiting; ++i) {
    later.push_back(
        std::async(std::launch::async, [&] { return reads.Read(); }));
  }
  all_wait.get_future().wait();
  store.Open();

  ASSERT_TRUE(first.get().ok());
  for (auto& f : later) {
    StatusOr<int64_t> r = f.get();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, 7);
  }
  EXPECT_EQ(reads.reads(), 2);  // 17 callers, 2 reads
  EXPECT_EQ(store.calls.load(), 2);
}

// A failed read fails exactly the callers it answers; the next call reads
// again.
TEST(SharedReadTest, AnErrorAnswersItsRoundOnly) {
  std::atomic<int> calls{0};
  SharedRead<int64_t> reads([&]() -> StatusOr<int64_t> {
    if (calls.fetch_add(1) == 0) return UnavailableError("no leader");
    return int64_t{5};
  });
  StatusOr<int64_t> r1 = reads.Read();
  EXPECT_EQ(r1.status().code(), StatusCode::kUnavailable);
  StatusOr<int64_t> r2 = reads.Read();
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(*r2, 5);
}

// A read that throws ends its round: the next caller sends a read of its
// own instead of waiting forever for the one that never finished.
TEST(SharedReadTest, AReadThatThrowsDoesNotStopTheNext) {
  // Shared with the caller's thread, which a failure leaves blocked.
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto reads =
      std::make_shared<SharedRead<int64_t>>([calls]() -> StatusOr<int64_t> {
        if (calls->fetch_add(1) == 0) throw std::runtime_error("no memory");
        return int64_t{7};
      });
  EXPECT_THROW((void)reads->Read(), std::runtime_error);
  auto next = std::make_shared<std::promise<StatusOr<int64_t>>>();
  std::future<StatusOr<int64_t>> got = next->get_future();
  std::thread caller([reads, next] { next->set_value(reads->Read()); });
  if (got.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    caller.detach();  // blocked for good: that is the failure
    FAIL() << "the read after a throwing one never returned";
  }
  caller.join();
  StatusOr<int64_t> r = got.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(reads->reads(), 2);
}

// Under concurrency every call sees every write acknowledged before it
// started. (That the reads are shared is AfterWaits' test: how many are
// shared here depends on the scheduler.)
TEST(SharedReadTest, ConcurrentCallersSeeEveryAcknowledgedWrite) {
  std::atomic<int64_t> store_rev{0};  // the store's revision
  std::atomic<int64_t> acked{0};      // highest revision a writer saw acked
  SharedRead<int64_t> reads([&]() -> StatusOr<int64_t> {
    const int64_t v = store_rev.load();
    std::this_thread::yield();  // the answer travels back
    return v;
  });
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&] {
      while (!stop.load()) {
        const int64_t rev = store_rev.fetch_add(1) + 1;
        int64_t seen = acked.load();
        while (seen < rev && !acked.compare_exchange_weak(seen, rev)) {
        }
      }
    });
  }
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> stale{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 8; ++r) {
    readers.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        const int64_t before = acked.load();
        StatusOr<int64_t> got = reads.Read();
        calls.fetch_add(1);
        if (!got.ok() || *got < before) stale.fetch_add(1);
      }
    });
  }
  for (auto& t : readers) t.join();
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(stale.load(), 0);
  EXPECT_EQ(calls.load(), 8 * 2000);
}

}  // namespace
}  // namespace kplane::apiserver
