// The store clients (RemoteKV over JSON, GrpcKV over gRPC) and Maintenance
// over https:// against an in-process member whose client port (gRPC and
// the JSON gateway, as `kplane store` serves it) requires certificates
// (etcd's --client-cert-auth), with certificates from net/pki.h.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "storage/client/grpc_kv.h"
#include "storage/client/local_cluster.h"
#include "storage/client/maintenance.h"
#include "storage/client/remote_kv.h"
#include "storage/server/member_tls.h"

namespace kplane::storage {
namespace {

class RemoteKVTlsTest : public ::testing::TestWithParam<StoreProtocol> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-kv-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    auto pki = WriteTestPki(dir_ + "/pki", "cluster");
    ASSERT_TRUE(pki.ok()) << pki.status();
    tls_ = *pki;
    auto other = WriteTestPki(dir_ + "/other", "stranger");
    ASSERT_TRUE(other.ok()) << other.status();
    stranger_ = *other;
    // h2 for gRPC clients, http/1.1 for the JSON gateway.
    auto server_tls = NewMemberServerTls({.cert_file = tls_.server_cert_file,
                                          .key_file = tls_.server_key_file,
                                          .trusted_ca_file = tls_.ca_file,
                                          .client_cert_auth = true},
                                         {"http/1.1", "h2"});
    ASSERT_TRUE(server_tls.ok()) << server_tls.status();
    ASSERT_TRUE(store_.Start({.tls = *server_tls}).ok());
  }
  void TearDown() override {
    store_.Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string HostPort() const { return store_.address(); }
  // The client's TLS settings: the context (JSON) and its files (gRPC).
  struct ClientTls {
    StoreClientTlsFiles files;
    std::shared_ptr<const net::TlsContext> context;
  };
  static ClientTls Tls(StoreClientTlsFiles files) {
    return {files, NewStoreClientTls(files).value()};
  }
  static ClientTls Client(const LocalClusterTls& ca,
                          const LocalClusterTls& cert) {
    return Tls({.ca_file = ca.ca_file,
                .cert_file = cert.client_cert_file,
                .key_file = cert.client_key_file});
  }
  StatusOr<std::unique_ptr<KV>> NewKV(const std::string& endpoint,
                                      const ClientTls& tls) {
    RemoteKVOptions o;
    o.endpoints = {endpoint};
    o.tls = tls.context;
    o.tls_files = tls.files;
    o.call_timeout = seconds(3);
    return NewStoreClient(o, GetParam());
  }
  StatusOr<etcdserverpb::PutResponse> Put(const std::string& endpoint,
                                          const ClientTls& tls) {
    ASSIGN_OR_RETURN(auto kv, NewKV(endpoint, tls));
    etcdserverpb::PutRequest p;
    p.set_key("k");
    p.set_value("v");
    return kv->Put(p);
  }

  std::string dir_;
  LocalClusterTls tls_;
  LocalClusterTls stranger_;
  TestMember store_;
};

TEST_P(RemoteKVTlsTest, HttpsWithTheCasClientCertificate) {
  auto kv = NewKV("https://" + HostPort(), Client(tls_, tls_));
  ASSERT_TRUE(kv.ok()) << kv.status();
  etcdserverpb::PutRequest p;
  p.set_key("k");
  p.set_value("v");
  ASSERT_TRUE((*kv)->Put(p).ok());
  // A watch streams over TLS too.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<etcdserverpb::WatchResponse> got;
  etcdserverpb::WatchCreateRequest w;
  w.set_key("k");
  w.set_start_revision(1);
  auto watch = (*kv)->StartWatch(w, [&](const etcdserverpb::WatchResponse& r) {
    std::lock_guard<std::mutex> l(mu);
    got.push_back(r);
    cv.notify_all();
  });
  ASSERT_TRUE(watch.ok()) << watch.status();
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] {
      for (const auto& r : got) {
        if (r.events_size() > 0) return true;
      }
      return false;
    });
  }
  watch->reset();
  // Maintenance too; a bare host:port speaks TLS when given a context.
  auto m = Maintenance::Create(HostPort(), {.tls = Client(tls_, tls_).context});
  ASSERT_TRUE(m.ok()) << m.status();
  auto st = (*m)->Status();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_GE(st->header().revision(), 2);
  EXPECT_TRUE(Put(HostPort(), Client(tls_, tls_)).ok());
}

TEST_P(RemoteKVTlsTest, RefusedCertificatesAndServers) {
  // gRPC does not pass the handshake's reason on ("failed to connect to all
  // addresses"); the JSON client names it.
  const bool names_reason = GetParam() == StoreProtocol::kJson;
  // No client certificate.
  auto none = Put("https://" + HostPort(), Tls({.ca_file = tls_.ca_file}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable) << none.status();
  // A client certificate from another CA.
  auto foreign = Put("https://" + HostPort(), Client(tls_, stranger_));
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), StatusCode::kUnavailable)
      << foreign.status();
  // A server the client's CA did not sign.
  auto wrong_ca = Put("https://" + HostPort(), Client(stranger_, tls_));
  ASSERT_FALSE(wrong_ca.ok());
  EXPECT_EQ(wrong_ca.status().code(), StatusCode::kUnavailable);
  if (names_reason) {
    EXPECT_NE(wrong_ca.status().message().find("unknown authority"),
              std::string::npos)
        << wrong_ca.status();
  }
  // http:// stays plain even with a context: the TLS port answers Go's 400
  // (JSON), or no HTTP/2 (gRPC).
  auto plain = Put("http://" + HostPort(), Client(tls_, tls_));
  ASSERT_FALSE(plain.ok());
  // https:// without a context: the system's roots do not know this CA.
  auto system = Put("https://" + HostPort(), {});
  ASSERT_FALSE(system.ok());
  EXPECT_EQ(system.status().code(), StatusCode::kUnavailable);
  if (names_reason) {
    EXPECT_NE(system.status().message().find("unknown authority"),
              std::string::npos)
        << system.status();
  }
  // The control.
  EXPECT_TRUE(Put("https://" + HostPort(), Client(tls_, tls_)).ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, RemoteKVTlsTest,
                         ::testing::Values(StoreProtocol::kJson,
                                           StoreProtocol::kGrpc),
                         [](const auto& info) {
                           return std::string(StoreProtocolName(info.param));
                         });

// The gRPC transport cannot skip verification; it says so.
TEST(StoreClientTlsTest, GrpcRefusesInsecureSkipVerify) {
  RemoteKVOptions o;
  o.endpoints = {"https://127.0.0.1:1"};
  o.tls_files.insecure_skip_verify = true;
  auto kv = NewStoreClient(o, StoreProtocol::kGrpc);
  EXPECT_EQ(kv.status().code(), StatusCode::kInvalidArgument) << kv.status();
  EXPECT_EQ(ParseStoreProtocol("http").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(StoreClientTlsTest, EndpointsAndFiles) {
  auto eps = ParseEndpoints(
      {"https://10.0.0.1:2379,http://10.0.0.2:2379,10.0.0.3:2379"});
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_TRUE((*eps)[0].tls);
  EXPECT_EQ((*eps)[0].url, "https://10.0.0.1:2379");
  EXPECT_FALSE((*eps)[1].tls);
  EXPECT_FALSE((*eps)[2].tls);
  // etcdctl with --cacert: bare host:port speaks TLS, http:// does not.
  eps = ParseEndpoints({"10.0.0.3:2379", "http://10.0.0.2:2379"},
                       /*tls_by_default=*/true);
  ASSERT_TRUE(eps.ok());
  EXPECT_TRUE((*eps)[0].tls);
  EXPECT_EQ((*eps)[0].url, "https://10.0.0.3:2379");
  EXPECT_FALSE((*eps)[1].tls);
  auto half = NewStoreClientTls({.cert_file = "c.crt"});
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().message(),
            "KeyFile and CertFile must both be present[key: , cert: c.crt]");
  EXPECT_EQ(
      NewStoreClientTls({.ca_file = "/nonexistent/ca.crt"}).status().code(),
      StatusCode::kNotFound);
}

}  // namespace
}  // namespace kplane::storage
