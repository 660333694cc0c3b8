// The KV service's unary calls on the gRPC front's completion queues
// (GrpcFrontOptions::kv_threads, docs/store.md "gRPC front: KV on
// completion queues"), on an in-process member: many concurrent calls of
// every method, far more than the calls posted per queue, all answered;
// stopping the front while calls are in flight ends them and returns.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

// A deadline far past any answer on a loaded machine, so that a call that
// is never served fails the test instead of hanging it.
void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(30));
}

class KvAsyncTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    TestMemberOptions o;
    o.grpc.kv_threads = GetParam();
    ASSERT_TRUE(member_.Start(o).ok());
  }

  TestMember member_;
};

// 8 clients x 40 rounds of Put, Range, Txn and DeleteRange on their own
// keys, each on its own channel (so calls really overlap): 1,280 calls,
// over a hundred times the calls posted per method, all answered right.
TEST_P(KvAsyncTest, ConcurrentCallsOfEveryMethodAreAllAnswered) {
  constexpr int kClients = 8;
  constexpr int kRounds = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      grpc::ChannelArguments args;
      args.SetInt("kplane-client", c);  // distinct channels, not shared
      auto kv = pb::KV::NewStub(member_.Channel(args));
      auto fail = [&](const std::string& what, const grpc::Status& st) {
        ADD_FAILURE() << what << ": " << st.error_code() << " "
                      << st.error_message();
        failures++;
      };
      for (int i = 0; i < kRounds; ++i) {
        std::string key = "c" + std::to_string(c) + "/" + std::to_string(i);
        {
          grpc::ClientContext ctx;
          SetDeadline(&ctx);
          pb::PutRequest req;
          req.set_key(key);
          req.set_value("v" + std::to_string(i));
          pb::PutResponse resp;
          grpc::Status st = kv->Put(&ctx, req, &resp);
          if (!st.ok()) fail("put", st);
        }
        {
          grpc::ClientContext ctx;
          SetDeadline(&ctx);
          pb::RangeRequest req;
          req.set_key(key);
          pb::RangeResponse resp;
          grpc::Status st = kv->Range(&ctx, req, &resp);
          if (!st.ok()) {
            fail("range", st);
          } else if (resp.kvs_size() != 1 ||
                     resp.kvs(0).value() != "v" + std::to_string(i)) {
            ADD_FAILURE() << "range " << key << ": " << resp.DebugString();
            failures++;
          }
        }
        {
          // Compare-and-swap: the value just read, so the txn succeeds.
          grpc::ClientContext ctx;
          SetDeadline(&ctx);
          pb::TxnRequest req;
          pb::Compare* cmp = req.add_compare();
          cmp->set_key(key);
          cmp->set_target(pb::Compare::VALUE);
          cmp->set_result(pb::Compare::EQUAL);
          cmp->set_value("v" + std::to_string(i));
          pb::PutRequest* put = req.add_success()->mutable_request_put();
          put->set_key(key);
          put->set_value("t");
          pb::TxnResponse resp;
          grpc::Status st = kv->Txn(&ctx, req, &resp);
          if (!st.ok()) {
            fail("txn", st);
          } else if (!resp.succeeded()) {
            ADD_FAILURE() << "txn " << key << " did not succeed";
            failures++;
          }
        }
        if (i % 2 == 1) {
          grpc::ClientContext ctx;
          SetDeadline(&ctx);
          pb::DeleteRangeRequest req;
          req.set_key(key);
          pb::DeleteRangeResponse resp;
          grpc::Status st = kv->DeleteRange(&ctx, req, &resp);
          if (!st.ok()) {
            fail("delete", st);
          } else if (resp.deleted() != 1) {
            ADD_FAILURE() << "delete " << key << ": " << resp.deleted();
            failures++;
          }
        }
        if (failures > 0) return;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(failures, 0);

  // Every odd round's key was deleted, every even one's holds "t".
  auto kv = pb::KV::NewStub(member_.Channel());
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  pb::RangeRequest req;
  req.set_key("c");
  req.set_range_end("d");
  req.set_count_only(true);
  pb::RangeResponse resp;
  ASSERT_TRUE(kv->Range(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.count(), kClients * kRounds / 2);
}

// An error answer goes through the same path: a Compact above the
// current revision is etcd's ErrFutureRev, OUT_OF_RANGE.
TEST_P(KvAsyncTest, ErrorsAreAnsweredWithEtcdsCodes) {
  auto kv = pb::KV::NewStub(member_.Channel());
  for (int i = 0; i < 10; ++i) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    pb::CompactionRequest req;
    req.set_revision(1000000);
    pb::CompactionResponse resp;
    grpc::Status st = kv->Compact(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_EQ(st.error_message(),
              "etcdserver: mvcc: required revision is a future revision");
  }
}

// Stopping the member while clients keep putting: every call ends (with an
// answer or an error, none hangs), Stop() returns, and the call state is
// freed (the ASan build's leak check).
TEST_P(KvAsyncTest, StopWithCallsInFlightEndsThem) {
  constexpr int kClients = 8;
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      grpc::ChannelArguments args;
      args.SetInt("kplane-client", c);
      auto kv = pb::KV::NewStub(member_.Channel(args));
      // After the stop every call fails fast (connection refused or
      // closed); a few more show that nothing is left hanging.
      int after_stop = 0;
      while (after_stop < 3) {
        if (stop) ++after_stop;
        grpc::ClientContext ctx;
        SetDeadline(&ctx);
        pb::PutRequest req;
        req.set_key("k" + std::to_string(c));
        req.set_value("v");
        pb::PutResponse resp;
        grpc::Status st = kv->Put(&ctx, req, &resp);
        if (st.ok()) {
          answered++;
        } else {
          EXPECT_NE(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
          errors++;
        }
      }
    });
  }
  // Stop once every client has been answered a few times.
  while (answered < kClients * 5) std::this_thread::yield();
  member_.Stop();
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_GE(errors, kClients * 3);
}

INSTANTIATE_TEST_SUITE_P(KvThreads, KvAsyncTest, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return "Threads" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace kplane::storage
