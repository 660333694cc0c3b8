// A member's TLS options beyond the files (member_tls.h): etcd's
// --client-crl-file, --cipher-suites and the certificate name filters, checked
// by TLS handshakes against a store member serving https, with etcd 3.4's own
// test certificates (Debian's golang-etcd-server-dev; skipped without them).
#include "storage/server/member_tls.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <filesystem>
#include <functional>

#include "net/http_client.h"
#include "storage/server/single_member_store.h"

namespace kplane::storage {
namespace {

const std::string kFixtures =
    "/usr/share/gocode/src/go.etcd.io/etcd/integration/fixtures/";

class MemberTlsOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kFixtures + "revoke.crl")) {
      GTEST_SKIP() << "no etcd test certificates in " << kFixtures
                   << " (apt-get install golang-etcd-server-dev)";
    }
  }

  // A member serving https with server.crt and these extra options,
  // requiring client certificates signed by ca.crt.
  void StartStore(const std::string& crl_file,
                  std::vector<std::string> cipher_suites,
                  std::function<void(MemberTlsFiles*)> tweak = nullptr) {
    MemberTlsFiles files{.cert_file = kFixtures + "server.crt",
                         .key_file = kFixtures + "server.key.insecure",
                         .trusted_ca_file = kFixtures + "ca.crt",
                         .client_cert_auth = true};
    files.crl_file = crl_file;
    files.cipher_suites = std::move(cipher_suites);
    if (tweak) tweak(&files);
    auto tls = NewMemberServerTls(files);
    ASSERT_TRUE(tls.ok()) << tls.status();
    net::HttpServerOptions http;
    http.tls = *tls;
    auto store = SingleMemberStore::Start(http);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // GET /health over TLS with `cert` (a fixture name without extension);
  // `tweak` adjusts the client's context (protocol versions, ciphers).
  StatusOr<net::HttpResponse> Get(const std::string& cert,
                                  void (*tweak)(ssl_ctx_st*) = nullptr) {
    net::TlsClientConfig cc;
    cc.ca_file = kFixtures + "ca.crt";
    cc.cert_file = kFixtures + cert + ".crt";
    cc.key_file = kFixtures + cert + ".key.insecure";
    ASSIGN_OR_RETURN(auto ctx, net::TlsContext::NewClient(cc));
    if (tweak != nullptr) tweak(ctx->native());
    return GetWith(ctx);
  }

  StatusOr<net::HttpResponse> GetWith(
      std::shared_ptr<const net::TlsContext> ctx) {
    net::HttpClientOptions o;
    o.tls = ctx;
    ASSIGN_OR_RETURN(
        auto client,
        net::HttpClient::ForUrl(
            "https://127.0.0.1:" + std::to_string(store_->port()), o));
    return client->Request("GET", "/health");
  }

  std::unique_ptr<SingleMemberStore> store_;
};

// etcd's TestCtlV3GetRevokedCRL: a client whose certificate's serial is in
// the CRL is refused at the handshake; another signed by the same CA is
// served. The fixture CRL expired in 2021: as etcd, its dates do not count.
TEST_F(MemberTlsOptionsTest, CrlRefusesARevokedClientCertificate) {
  ASSERT_NO_FATAL_FAILURE(StartStore(kFixtures + "revoke.crl", {}));
  auto revoked = Get("server-revoked");
  EXPECT_FALSE(revoked.ok()) << "a revoked certificate was served";
  auto good = Get("server");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->status, 200);
}

TEST_F(MemberTlsOptionsTest, CrlFileThatHoldsNoCrlIsRefused) {
  MemberTlsFiles files{.cert_file = kFixtures + "server.crt",
                       .key_file = kFixtures + "server.key.insecure",
                       .trusted_ca_file = kFixtures + "ca.crt"};
  files.crl_file = kFixtures + "ca.crt";
  auto tls = NewMemberServerTls(files);
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("no X509 CRL"), std::string::npos)
      << tls.status();
}

// etcd's TestV3CurlCipherSuites*: a TLS 1.2 client offering only a suite
// outside --cipher-suites fails the handshake; one in the list is served.
TEST_F(MemberTlsOptionsTest, CipherSuitesRestrictTls12) {
  ASSERT_NO_FATAL_FAILURE(
      StartStore("", {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}));
  auto outside = Get("server", [](ssl_ctx_st* c) {
    SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(c, "ECDHE-RSA-AES256-GCM-SHA384");
  });
  EXPECT_FALSE(outside.ok()) << "a suite outside the list was negotiated";
  auto inside = Get("server", [](ssl_ctx_st* c) {
    SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(c, "ECDHE-RSA-AES128-GCM-SHA256");
  });
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(inside->status, 200);
}

// etcd's TestEtcdPeerCNAuth: --peer-cert-allowed-cn admits only
// certificates with that CommonName (server.crt is example.com,
// server2.crt example2.com); the refused side hears Go's words.
TEST_F(MemberTlsOptionsTest, AllowedCnRefusesOtherCommonNames) {
  ASSERT_NO_FATAL_FAILURE(StartStore(
      "", {}, [](MemberTlsFiles* f) { f->allowed_cn = "example.com"; }));
  auto good = Get("server");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->status, 200);
  auto other = Get("server2");
  ASSERT_FALSE(other.ok()) << "a certificate for example2.com was served";
  EXPECT_NE(other.status().message().find("remote error: tls: bad certificate"),
            std::string::npos)
      << other.status();
}

// --peer-cert-allowed-hostname: the certificate must be valid for the name
// (both fixtures are for localhost and 127.0.0.1 only).
TEST_F(MemberTlsOptionsTest, AllowedHostnameRefusesCertificatesForOtherNames) {
  ASSERT_NO_FATAL_FAILURE(StartStore(
      "", {}, [](MemberTlsFiles* f) { f->allowed_hostname = "example2.com"; }));
  EXPECT_FALSE(Get("server").ok()) << "a certificate for localhost was served";
  store_.reset();
  ASSERT_NO_FATAL_FAILURE(StartStore(
      "", {}, [](MemberTlsFiles* f) { f->allowed_hostname = "localhost"; }));
  auto good = Get("server2");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->status, 200);
}

// As etcd's baseConfig, the peer client checks the other member's server
// certificate with the same filter.
TEST_F(MemberTlsOptionsTest, PeerClientChecksTheServersCommonName) {
  ASSERT_NO_FATAL_FAILURE(StartStore("", {}));
  MemberTlsFiles peer{.cert_file = kFixtures + "server.crt",
                      .key_file = kFixtures + "server.key.insecure",
                      .trusted_ca_file = kFixtures + "ca.crt"};
  peer.allowed_cn = "example2.com";
  auto refusing = NewMemberPeerClientTls(peer);
  ASSERT_TRUE(refusing.ok()) << refusing.status();
  auto refused = GetWith(*refusing);
  ASSERT_FALSE(refused.ok())
      << "the peer client accepted a server certificate for example.com";
  // etcd's words for a name check that failed (a refusing server says
  // "client certificate authentication failed", which etcd's
  // TestEtcdPeerNameAuth waits for in the refusing member's log).
  EXPECT_NE(refused.status().message().find(
                "server certificate authentication failed"),
            std::string::npos)
      << refused.status();
  peer.allowed_cn = "example.com";
  auto accepting = NewMemberPeerClientTls(peer);
  ASSERT_TRUE(accepting.ok()) << accepting.status();
  auto good = GetWith(*accepting);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->status, 200);
}

TEST(MemberTlsOptionsNamesTest, AllowedCnAndHostnameAreMutuallyExclusive) {
  MemberTlsFiles files;
  files.allowed_cn = "a";
  files.allowed_hostname = "b";
  auto tls = NewMemberPeerClientTls(files);
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("mutually exclusive"),
            std::string::npos)
      << tls.status();
}

TEST(MemberTlsOptionsNamesTest, UnknownCipherSuiteIsRefusedWithEtcdsWords) {
  MemberTlsFiles files;
  files.cipher_suites = {"TLS_NOT_A_SUITE"};
  auto tls = NewMemberPeerClientTls(files);
  ASSERT_FALSE(tls.ok());
  EXPECT_EQ(tls.status().message(),
            "unexpected TLS cipher suite \"TLS_NOT_A_SUITE\"");
}

}  // namespace
}  // namespace kplane::storage
