#include "storage/server/store_gate.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;

class StoreGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-gate-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<mvcc::Store> OpenStore(const std::string& name) {
    mvcc::Options o;
    o.dir = dir_ + "/" + name;
    auto s = mvcc::Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::string dir_;
};

// The swap waits for a ref taken before it, and a ref asked for while the
// swap is announced gets the new store.
TEST_F(StoreGateTest, ReplaceWaitsForUsersAndUsersWaitForIt) {
  StoreGate gate(OpenStore("a"));
  mvcc::Store* old_store = gate.owned();
  StoreRef held = gate.Use();
  ASSERT_EQ(held.get(), old_store);

  std::atomic<bool> swapped{false};
  std::thread installer([&] {
    gate.Replace([&](std::unique_ptr<mvcc::Store>& s) {
      s->Close();
      s = OpenStore("b");
      swapped = true;
    });
  });
  // Once the swap is announced, a new user waits for it.
  while (!gate.swap_pending()) std::this_thread::yield();
  auto later = std::async(std::launch::async, [&] {
    StoreRef r = gate.Use();
    return std::make_pair(r.get(), swapped.load());
  });
  // Still open and usable: the swap cannot run while `held` lives.
  EXPECT_TRUE(held->Range([] {
                    etcdserverpb::RangeRequest r;
                    r.set_key("k");
                    return r;
                  }())
                  .ok());
  EXPECT_FALSE(swapped.load());
  held = StoreRef();
  installer.join();
  auto [seen, was_swapped] = later.get();
  EXPECT_TRUE(was_swapped);
  EXPECT_EQ(seen, gate.owned());
  EXPECT_EQ(gate.users(), 0);
}

// A thread that holds a ref may take another while a swap waits for it
// (it would otherwise wait for a swap that waits for it).
TEST_F(StoreGateTest, NestedUseDoesNotDeadlockWithAPendingSwap) {
  StoreGate gate(OpenStore("a"));
  StoreRef outer = gate.Use();
  std::thread installer(
      [&] { gate.Replace([&](std::unique_ptr<mvcc::Store>&) {}); });
  while (!gate.swap_pending()) std::this_thread::yield();
  {
    StoreRef inner = gate.Use();  // would hang without the nesting rule
    EXPECT_EQ(inner.get(), outer.get());
    EXPECT_EQ(gate.users(), 2);
  }
  outer = StoreRef();
  installer.join();
  EXPECT_EQ(gate.users(), 0);
}

}  // namespace
}  // namespace kplane::storage
