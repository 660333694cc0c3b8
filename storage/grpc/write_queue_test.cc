// WriteQueue, the write side of the store's gRPC server streams: one write
// in flight, ending now (the queue dropped) or after the queued answers
// (LeaseKeepAlive's error and end of stream: etcd returns after the
// answers it sent), the byte bound, and a broken call.
#include "storage/grpc/write_queue.h"

#include <gtest/gtest.h>

#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::storage {
namespace {

using Resp = etcdserverpb::LeaseKeepAliveResponse;

Resp Answer(int64_t id) {
  Resp r;
  r.set_id(id);
  r.set_ttl(60);
  return r;
}

TEST(WriteQueue, OneWriteInFlightTheRestInOrder) {
  WriteQueue<Resp> q(1 << 20);
  auto first = q.Push(Answer(1));
  ASSERT_NE(first.write, nullptr);
  EXPECT_EQ(first.write->id(), 1);
  EXPECT_EQ(q.Push(Answer(2)).write, nullptr);  // waits for the first
  auto next = q.WriteDone(true);
  ASSERT_NE(next.write, nullptr);
  EXPECT_EQ(next.write->id(), 2);
  auto idle = q.WriteDone(true);
  EXPECT_EQ(idle.write, nullptr);
  EXPECT_FALSE(idle.finish);
}

// Ending after the queued answers writes each of them, then finishes with
// the status; ending now drops them.
TEST(WriteQueue, EndingAfterTheQueuedAnswersWritesThemFirst) {
  WriteQueue<Resp> q(1 << 20);
  ASSERT_NE(q.Push(Answer(1)).write, nullptr);
  q.Push(Answer(2));
  q.Push(Answer(3));
  EXPECT_FALSE(q.End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone"),
                     /*after_queued=*/true));
  EXPECT_TRUE(q.ending());
  EXPECT_EQ(q.Push(Answer(4)).write, nullptr);  // nothing after the end
  std::vector<int64_t> written = {1};
  for (;;) {
    auto step = q.WriteDone(true);
    if (step.finish) break;
    ASSERT_NE(step.write, nullptr) << "neither a write nor the finish";
    written.push_back(step.write->id());
  }
  EXPECT_EQ(written, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(q.status().error_code(), grpc::StatusCode::UNAVAILABLE);

  WriteQueue<Resp> dropped(1 << 20);
  ASSERT_NE(dropped.Push(Answer(1)).write, nullptr);
  dropped.Push(Answer(2));
  EXPECT_FALSE(dropped.End(grpc::Status::CANCELLED));
  auto step = dropped.WriteDone(true);
  EXPECT_TRUE(step.finish);
  EXPECT_EQ(step.write, nullptr);
}

TEST(WriteQueue, NothingInFlightEndsAtOnceAndOnlyOnce) {
  WriteQueue<Resp> q(1 << 20);
  EXPECT_TRUE(q.End(grpc::Status::OK, /*after_queued=*/true));
  EXPECT_FALSE(q.End(grpc::Status::CANCELLED));  // the first End wins
  EXPECT_TRUE(q.status().ok());
}

TEST(WriteQueue, PastTheBoundAndABrokenCall) {
  WriteQueue<Resp> q(Answer(1).ByteSizeLong() * 2);
  EXPECT_FALSE(q.Push(Answer(1)).over);
  EXPECT_FALSE(q.Push(Answer(2)).over);
  EXPECT_TRUE(q.Push(Answer(3)).over);

  WriteQueue<Resp> broken(1 << 20);
  ASSERT_NE(broken.Push(Answer(1)).write, nullptr);
  broken.Push(Answer(2));
  broken.End(grpc::Status::OK, /*after_queued=*/true);
  auto step = broken.WriteDone(false);  // nothing more can be written
  EXPECT_TRUE(step.finish);
  EXPECT_EQ(step.write, nullptr);
  EXPECT_EQ(broken.status().error_code(), grpc::StatusCode::OK);
}

}  // namespace
}  // namespace kplane::storage
