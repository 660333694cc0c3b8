// A watch or lease keep-alive stream that requires a leader (etcd's
// "hasleader" metadata: clientv3's WithRequireLeader, which
// kube-apiserver's watches and clientv3's lessor use; over the JSON
// gateway the header Grpc-Metadata-Hasleader) on a member cut off from the
// others ends with "etcdserver: no leader" once the member has had no
// leader for a few election timeouts, and a new one is refused while it has
// none; a watch without it stays open and gets the events written after
// the member rejoins. The same test runs against Debian's etcd 3.4, the
// behaviour kplane follows (etcd's v3rpc monitorLeader).
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "base/base64.h"
#include "base/file_system.h"
#include "net/http_client.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/client/local_cluster.h"

namespace kplane::e2e {
namespace {

namespace pb = etcdserverpb;

// etcd's default raft timings (the member ends the streams after three
// election timeouts without a leader).
const std::vector<std::string> kTimings = {"--heartbeat-interval", "100",
                                           "--election-timeout", "1000"};

constexpr Duration kEndDeadline = seconds(20);

std::string CreateRequest(std::string_view key) {
  return R"({"create_request":{"key":")" + Base64Encode(key) + R"("}})";
}

class LeaderRequiredTest : public ::testing::TestWithParam<bool> {
 protected:
  bool etcd() const { return GetParam(); }

  void SetUp() override {
    if (etcd() && ::access("/usr/bin/etcd", X_OK) != 0) {
      GTEST_SKIP() << "no /usr/bin/etcd (scripts/install-deps.sh)";
    }
    if (!etcd() && storage::FindKplaneBinary().empty()) {
      GTEST_SKIP() << "no kplane binary in this build tree";
    }
    auto c = storage::LocalCluster::Start(
        {.kind =
             etcd() ? storage::StoreKind::kEtcd : storage::StoreKind::kKplane,
         .members = 3,
         .extra_flags = kTimings,
         .start_timeout = seconds(60),
         .test_pki = storage::StoreSuitesUseTls()});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }

  void TearDown() override {
    if (HasFailure() && cluster_) {
      std::printf("member logs (tails):\n%s\n",
                  cluster_->LogTails(4000).c_str());
    }
  }

  // A /v3/watch stream on member `i`, its create sent.
  std::unique_ptr<net::HttpStream> JsonWatch(int i, bool require_leader) {
    auto client = net::HttpClient::ForUrl(cluster_->client_url(i),
                                          {.tls = cluster_->client_tls()});
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    clients_.push_back(std::move(*client));
    net::HttpHeaders h = {{"Content-Type", "application/json"}};
    if (require_leader) h.Add("Grpc-Metadata-Hasleader", "true");
    auto s = clients_.back()->OpenStream("POST", "/v3/watch", h);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    EXPECT_TRUE((*s)->Send(CreateRequest("k")).ok());
    // etcd's gateway answers once the request body ended (half duplex);
    // the watch stays open.
    EXPECT_TRUE((*s)->CloseSend().ok());
    return std::move(*s);
  }

  // Reads `s` until `text` shows up (true) or the stream ends or times out
  // (false); everything read is appended to `got`.
  static bool ReadUntil(net::HttpStream* s, std::string_view text,
                        std::string* got) {
    const TimePoint deadline = Clock::Real()->Now() + kEndDeadline;
    while (got->find(text) == std::string::npos) {
      const Duration left = deadline - Clock::Real()->Now();
      if (left <= Duration(0)) return false;
      StatusOr<bool> more = s->Read(got, left);
      if (!more.ok() || !*more) return got->find(text) != std::string::npos;
    }
    return true;
  }

  // A gRPC channel to member `i` (with the harness's certificate over TLS).
  std::shared_ptr<grpc::Channel> Channel(int i) {
    std::string url = cluster_->client_url(i);
    const std::string target = url.substr(url.find("://") + 3);
    const storage::LocalClusterTls& tls = cluster_->tls();
    if (!tls.enabled()) {
      return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    }
    grpc::SslCredentialsOptions o;
    FileSystem* fs = FileSystem::Default();
    o.pem_root_certs = ReadFile(fs, tls.ca_file).value_or("");
    o.pem_cert_chain = ReadFile(fs, tls.client_cert_file).value_or("");
    o.pem_private_key = ReadFile(fs, tls.client_key_file).value_or("");
    return grpc::CreateChannel(target, grpc::SslCredentials(o));
  }

  std::unique_ptr<storage::LocalCluster> cluster_;
  std::vector<std::unique_ptr<net::HttpClient>> clients_;
};

TEST_P(LeaderRequiredTest, AWatchThatRequiresALeaderEndsWhenTheMemberLosesIt) {
  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  const int m = (*leader + 1) % 3;  // a follower, cut off below

  // Over the JSON gateway: one watch that requires a leader, one that
  // does not.
  auto required = JsonWatch(m, true);
  auto plain = JsonWatch(m, false);
  ASSERT_TRUE(required && plain);
  std::string got_required, got_plain;
  ASSERT_TRUE(ReadUntil(required.get(), "\"created\":true", &got_required))
      << "[" << got_required << "]";
  ASSERT_TRUE(ReadUntil(plain.get(), "\"created\":true", &got_plain))
      << got_plain;
  // Over gRPC: the same with the metadata.
  auto stub = pb::Watch::NewStub(Channel(m));
  grpc::ClientContext ctx;
  ctx.AddMetadata("hasleader", "true");
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(40));
  auto rw = stub->Watch(&ctx);
  pb::WatchRequest create;
  create.mutable_create_request()->set_key("k");
  ASSERT_TRUE(rw->Write(create));
  pb::WatchResponse created;
  ASSERT_TRUE(rw->Read(&created));
  ASSERT_TRUE(created.created());
  // A lease kept alive over a stream with the metadata (clientv3's lessor).
  auto lease = pb::Lease::NewStub(Channel(m));
  pb::LeaseGrantResponse granted;
  {
    grpc::ClientContext gctx;
    gctx.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    pb::LeaseGrantRequest grant;
    grant.set_ttl(60);
    grpc::Status gst = lease->LeaseGrant(&gctx, grant, &granted);
    ASSERT_TRUE(gst.ok()) << gst.error_message();
  }
  grpc::ClientContext kctx;
  kctx.AddMetadata("hasleader", "true");
  kctx.set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(40));
  auto keepalive = lease->LeaseKeepAlive(&kctx);
  pb::LeaseKeepAliveRequest renew;
  renew.set_id(granted.id());
  ASSERT_TRUE(keepalive->Write(renew));
  pb::LeaseKeepAliveResponse renewed;
  ASSERT_TRUE(keepalive->Read(&renewed));
  ASSERT_EQ(renewed.id(), granted.id());

  // Cut m off: the other two freeze.
  std::vector<int> others;
  for (int i : cluster_->members()) {
    if (i != m) others.push_back(i);
  }
  for (int i : others) ASSERT_TRUE(cluster_->Pause(i).ok());

  EXPECT_TRUE(ReadUntil(required.get(), "etcdserver: no leader", &got_required))
      << got_required;
  pb::WatchResponse r;
  while (rw->Read(&r)) {
  }
  grpc::Status st = rw->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE)
      << st.error_message();
  EXPECT_EQ(st.error_message(), "etcdserver: no leader");
  // The keep-alive stream ends the same way (nothing was asked of it).
  while (keepalive->Read(&renewed)) {
  }
  grpc::Status kst = keepalive->Finish();
  EXPECT_EQ(kst.error_code(), grpc::StatusCode::UNAVAILABLE)
      << kst.error_message();
  EXPECT_EQ(kst.error_message(), "etcdserver: no leader");

  // A new one is refused while m has no leader.
  auto again = JsonWatch(m, true);
  ASSERT_TRUE(again);
  std::string got_again;
  EXPECT_TRUE(ReadUntil(again.get(), "etcdserver: no leader", &got_again))
      << got_again;
  {
    grpc::ClientContext actx;
    actx.AddMetadata("hasleader", "true");
    actx.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(20));
    auto refused = lease->LeaseKeepAlive(&actx);
    refused->Write(renew);  // may fail: the call may have ended already
    while (refused->Read(&renewed)) {
    }
    grpc::Status rst = refused->Finish();
    EXPECT_EQ(rst.error_code(), grpc::StatusCode::UNAVAILABLE)
        << rst.error_message();
    EXPECT_EQ(rst.error_message(), "etcdserver: no leader");
  }

  for (int i : others) ASSERT_TRUE(cluster_->Resume(i).ok());
  // The watch without the metadata stayed open: it sees a write made
  // after the member rejoined. Right after the resume a frozen leader may
  // still be reported as such, then step down ("no leader"): ask again.
  pb::PutRequest put;
  put.set_key("k");
  put.set_value("after");
  grpc::Status put_st;
  const TimePoint put_deadline = Clock::Real()->Now() + seconds(30);
  do {
    auto back = cluster_->WaitForLeader(seconds(30));
    ASSERT_TRUE(back.ok()) << back.status();
    auto kv = pb::KV::NewStub(Channel(*back));
    pb::PutResponse put_resp;
    grpc::ClientContext pctx;
    pctx.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    put_st = kv->Put(&pctx, put, &put_resp);
  } while (!put_st.ok() &&
           put_st.error_code() == grpc::StatusCode::UNAVAILABLE &&
           Clock::Real()->Now() < put_deadline);
  ASSERT_TRUE(put_st.ok()) << put_st.error_message();
  EXPECT_TRUE(ReadUntil(plain.get(), Base64Encode("after"), &got_plain))
      << got_plain;
}

INSTANTIATE_TEST_SUITE_P(, LeaderRequiredTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Etcd" : "Kplane";
                         });

}  // namespace
}  // namespace kplane::e2e
