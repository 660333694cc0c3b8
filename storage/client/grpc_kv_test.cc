// Both store clients (RemoteKV over JSON, GrpcKV over gRPC) against an
// in-process member that serves both APIs on one port, as `kplane store`
// does: etcd's errors come back as the same domain codes, and a write moves
// on from an endpoint that refuses connections or is a learner.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include "storage/client/grpc_kv.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "base/testing/absl_lock_cycle.h"
#include "informer/tcp_proxy.h"

namespace kplane::storage {
namespace {

constexpr char kCompacted[] =
    "etcdserver: mvcc: required revision has been compacted";

// A loopback port nothing listens on (bound, then closed).
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class StoreClientTest : public ::testing::TestWithParam<StoreProtocol> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start({.max_request_bytes = 64 << 10}).ok());
    kv_ = NewKV({member_.address()});
  }

  std::unique_ptr<KV> NewKV(std::vector<std::string> endpoints) {
    RemoteKVOptions o;
    o.endpoints = std::move(endpoints);
    o.call_timeout = seconds(5);
    auto kv = NewStoreClient(o, GetParam());
    EXPECT_TRUE(kv.ok()) << kv.status();
    return kv.ok() ? std::move(*kv) : nullptr;
  }

  int64_t Put(const std::string& k, const std::string& v) {
    etcdserverpb::PutRequest p;
    p.set_key(k);
    p.set_value(v);
    auto r = kv_->Put(p);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->header().revision() : -1;
  }

  TestMember member_;
  std::unique_ptr<KV> kv_;
};

TEST_P(StoreClientTest, ErrorsMapToDomainCodes) {
  const int64_t r1 = Put("k", "1");
  const int64_t r2 = Put("k", "2");
  etcdserverpb::CompactionRequest c;
  c.set_revision(r2);
  ASSERT_TRUE(kv_->Compact(c).ok());

  etcdserverpb::RangeRequest r;
  r.set_key("k");
  r.set_revision(r1);
  auto old = kv_->Range(r);
  EXPECT_EQ(old.status().code(), StatusCode::kCompacted) << old.status();
  EXPECT_EQ(old.status().message(), kCompacted);
  EXPECT_EQ(kv_->Compact(c).status().code(), StatusCode::kCompacted);

  r.set_revision(r2 + 10);
  auto future = kv_->Range(r);
  EXPECT_EQ(future.status().code(), StatusCode::kFutureRevision)
      << future.status();

  etcdserverpb::LeaseRevokeRequest rv;
  rv.set_id(12345);
  auto revoked = kv_->LeaseRevoke(rv);
  EXPECT_EQ(revoked.status().code(), StatusCode::kNotFound) << revoked.status();
  etcdserverpb::LeaseKeepAliveRequest ka;
  ka.set_id(12345);
  EXPECT_EQ(kv_->LeaseKeepAlive(ka).status().code(), StatusCode::kNotFound);

  etcdserverpb::PutRequest big;
  big.set_key("big");
  big.set_value(std::string(100 << 10, 'x'));
  auto too_large = kv_->Put(big);
  EXPECT_EQ(too_large.status().code(), StatusCode::kTooLarge)
      << too_large.status();
}

TEST_P(StoreClientTest, WatchFromACompactedRevisionEndsCanceled) {
  const int64_t r1 = Put("w", "1");
  const int64_t r2 = Put("w", "2");
  etcdserverpb::CompactionRequest c;
  c.set_revision(r2);
  ASSERT_TRUE(kv_->Compact(c).ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<etcdserverpb::WatchResponse> got;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("w");
  req.set_start_revision(r1);
  auto w = kv_->StartWatch(req, [&](const etcdserverpb::WatchResponse& r) {
    std::lock_guard<std::mutex> l(mu);
    got.push_back(r);
    cv.notify_all();
  });
  ASSERT_TRUE(w.ok()) << w.status();
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] {
    return !got.empty() && got.back().canceled();
  }));
  EXPECT_EQ(got.back().compact_revision(), r2);
}

// Connecting failed, so the write never left: it is safe, and expected, to
// send it to the next endpoint.
TEST_P(StoreClientTest, WriteMovesOnFromARefusingEndpoint) {
  auto kv =
      NewKV({"127.0.0.1:" + std::to_string(ClosedPort()), member_.address()});
  ASSERT_NE(kv, nullptr);
  etcdserverpb::PutRequest p;
  p.set_key("k");
  p.set_value("v");
  auto r = kv->Put(p);
  EXPECT_TRUE(r.ok()) << r.status();
  // And a watch starts on the endpoint that answers.
  etcdserverpb::WatchCreateRequest req;
  req.set_key("k");
  auto w = kv->StartWatch(req, [](const etcdserverpb::WatchResponse&) {});
  EXPECT_TRUE(w.ok()) << w.status();
}

INSTANTIATE_TEST_SUITE_P(Transports, StoreClientTest,
                         ::testing::Values(StoreProtocol::kJson,
                                           StoreProtocol::kGrpc),
                         [](const auto& info) {
                           return std::string(StoreProtocolName(info.param));
                         });

// A learner (StoreServer::RefuseIfLearner, as etcd 3.4's) refuses a write
// and a watch with UNAVAILABLE "etcdserver: rpc not supported for learner"
// (the JSON gateway: 503) before either reaches raft: a client whose
// endpoints list it first goes on to the voter, as clientv3 does, and the
// write is applied once.
class LearnerEndpointTest : public ::testing::TestWithParam<StoreProtocol> {
 protected:
  // One voter and its learner for both transports: the learner takes
  // seconds to become ready.
  static void SetUpTestSuite() {
    voter_ = new TestMember;
    learner_ = new TestMember;
    started_ = new Status(voter_->Start({.peers = true}));
    if (started_->ok()) *started_ = learner_->StartLearnerOf(*voter_);
  }
  static void TearDownTestSuite() {
    delete learner_;
    delete voter_;
    delete started_;
  }

  static TestMember* voter_;
  static TestMember* learner_;
  static Status* started_;
};

TestMember* LearnerEndpointTest::voter_ = nullptr;
TestMember* LearnerEndpointTest::learner_ = nullptr;
Status* LearnerEndpointTest::started_ = nullptr;

TEST_P(LearnerEndpointTest, WritesAndWatchesMoveOnFromALearner) {
  ASSERT_TRUE(started_->ok()) << *started_;
  const std::string key = std::string("k-") + StoreProtocolName(GetParam());
  RemoteKVOptions o;
  o.endpoints = {learner_->address(), voter_->address()};
  o.call_timeout = seconds(5);
  auto kv = NewStoreClient(o, GetParam());
  ASSERT_TRUE(kv.ok()) << kv.status();

  // The watch first: calls still start at the learner.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<etcdserverpb::WatchResponse> got;
  etcdserverpb::WatchCreateRequest req;
  req.set_key(key);
  auto w = (*kv)->StartWatch(req, [&](const etcdserverpb::WatchResponse& r) {
    std::lock_guard<std::mutex> l(mu);
    got.push_back(r);
    cv.notify_all();
  });
  ASSERT_TRUE(w.ok()) << w.status();

  etcdserverpb::PutRequest p;
  p.set_key(key);
  p.set_value("v");
  auto put = (*kv)->Put(p);
  ASSERT_TRUE(put.ok()) << put.status();
  const int64_t rev = put->header().revision();

  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] {
    return !got.empty() && got.back().events_size() > 0;
  }));
  const etcdserverpb::WatchResponse& events = got.back();
  ASSERT_EQ(events.events_size(), 1);
  EXPECT_EQ(events.events(0).kv().key(), key);
  EXPECT_EQ(events.events(0).kv().mod_revision(), rev);
  EXPECT_EQ(events.events(0).kv().version(), 1);  // applied once
}

INSTANTIATE_TEST_SUITE_P(Transports, LearnerEndpointTest,
                         ::testing::Values(StoreProtocol::kJson,
                                           StoreProtocol::kGrpc),
                         [](const auto& info) {
                           return std::string(StoreProtocolName(info.param));
                         });

// A member slower than a second to complete a connection's handshake (TLS
// under load, in the sanitizer build's fault tests) is still reached: one
// connection attempt may take kGrpcConnectAttempt, whatever the reconnect
// backoff. With the attempt bounded by the backoff (50 ms growing to 1 s,
// as it was) no attempt lasts the 1.5 s the relay holds it, and the put
// fails with "not connected".
TEST(GrpcKVConnectTest, ReachesAMemberSlowToCompleteAConnection) {
  TestMember member;
  ASSERT_TRUE(member.Start().ok());
  informer::testing::TcpProxy slow(member.port(), milliseconds(1500));
  RemoteKVOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(slow.port())};
  o.dial_timeout = seconds(5);
  o.call_timeout = seconds(10);
  auto kv = GrpcKV::Create(o);
  ASSERT_TRUE(kv.ok()) << kv.status();
  etcdserverpb::PutRequest p;
  p.set_key("k");
  p.set_value("v");
  auto put = (*kv)->Put(p);
  EXPECT_TRUE(put.ok()) << put.status();
}

// Creates a GrpcKV, then takes two absl::Mutexes in both orders (one
// thread, so no real deadlock) and exits 0; 2 if Create failed.
void CreateThenLockBothOrders() {
  RemoteKVOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(ClosedPort())};
  if (!GrpcKV::Create(o).ok()) std::_Exit(2);
  kplane::testing::LockAbslMutexesInBothOrders();
  std::_Exit(0);
}

// GrpcKV::Create switches off abseil's lock-order (deadlock) detection,
// which Debian's abseil (built without NDEBUG) runs on every lock gRPC
// takes. Taking two absl::Mutexes in both orders is a cycle the detector
// aborts on; with it off the child exits cleanly. In a child process: the
// mode is process-wide, and the detector's answer is an abort.
TEST(GrpcKVRuntimeTest, CreateSwitchesOffAbslDeadlockDetection) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(CreateThenLockBothOrders(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kplane::storage
