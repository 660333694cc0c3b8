#include "cmd/kplane/grpc_proxy_command.h"

#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "cmd/kplane/store_command.h"
#include "net/http_client.h"
#include "net/pki.h"
#include "net/url.h"

namespace kplane::cmd {
namespace {

StatusOr<GrpcProxyCommandOptions> Parse(std::vector<std::string> args) {
  bool help = false;
  return ParseGrpcProxyArgs(args, &help);
}

// A self-signed certificate whose subject is "O=kplane" (no CN), as etcd's
// fixtures/server3.crt that TestGrpcproxyAndCommonName passes.
StatusOr<net::KeyPair> SelfSignedWithoutCommonName() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  if (key == nullptr || x == nullptr) return InternalError("openssl");
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
  X509_gmtime_adj(X509_getm_notBefore(x), -300);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("kplane"),
                             -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_sign(x, key, EVP_sha256());
  auto pem = [](auto write) {
    BIO* b = BIO_new(BIO_s_mem());
    write(b);
    char* data = nullptr;
    const long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(b);
    return out;
  };
  net::KeyPair kp;
  kp.cert_pem = pem([&](BIO* b) { PEM_write_bio_X509(b, x); });
  kp.key_pem = pem([&](BIO* b) {
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
  X509_free(x);
  EVP_PKEY_free(key);
  return kp;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kplane-grpcproxy-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& body) {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << body;
    return p;
  }

 private:
  std::string path_;
};

TEST(GrpcProxyFlagsTest, EtcdsDefaults) {
  auto o = Parse({"start"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->proxy.listen_addr, "127.0.0.1:23790");
  EXPECT_EQ(o->proxy.endpoints, std::vector<std::string>{"127.0.0.1:2379"});
  EXPECT_EQ(o->proxy.advertise_client_url, "127.0.0.1:23790");
  EXPECT_EQ(o->proxy.max_send_bytes, 3 * 512 * 1024);
  EXPECT_EQ(o->proxy.key_prefix, "");
  EXPECT_EQ(o->proxy.range_cache_entries, 2048u);  // etcd's fixed size
}

TEST(GrpcProxyFlagsTest, RangeCacheFlags) {
  auto o = Parse(
      {"start", "--range-cache-max-entries=0", "--range-cache-max-bytes=1000"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->proxy.range_cache_entries, 0u);
  EXPECT_EQ(o->proxy.range_cache_bytes, 1000u);
}

// The store's --max-watchers-per-stream, on the proxy's client streams:
// 10,000 unless set, 0 for none; a negative or non-numeric value is
// refused by name, and the command exits 2 as for any bad flag.
TEST(GrpcProxyFlagsTest, MaxWatchersPerStream) {
  auto d = Parse({"start"});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->proxy.max_watchers_per_stream, 10000u);
  auto set = Parse({"start", "--max-watchers-per-stream", "3"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->proxy.max_watchers_per_stream, 3u);
  auto none = Parse({"start", "--max-watchers-per-stream=0"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->proxy.max_watchers_per_stream, 0u);

  auto negative = Parse({"start", "--max-watchers-per-stream=-1"});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "--max-watchers-per-stream must not be negative (0: no cap)");
  auto word = Parse({"start", "--max-watchers-per-stream=many"});
  ASSERT_FALSE(word.ok());
  EXPECT_EQ(word.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(word.status().message().find(
                "invalid integer \"many\" for --max-watchers-per-stream"),
            std::string::npos)
      << word.status();
  EXPECT_EQ(
      RunStoreCommand({"grpc-proxy", "start", "--max-watchers-per-stream=-1"}),
      2);
  EXPECT_EQ(RunStoreCommand(
                {"grpc-proxy", "start", "--max-watchers-per-stream=many"}),
            2);

  EXPECT_NE(GrpcProxyUsage().find("--max-watchers-per-stream"),
            std::string::npos);
}

TEST(GrpcProxyFlagsTest, FlagsBeforeOrAfterStart) {
  auto o = Parse({"--endpoints=a:1,b:2", "start", "--namespace=t/",
                  "--listen-addr=127.0.0.1:0", "--advertise-client-url="});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->proxy.endpoints, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(o->proxy.key_prefix, "t/");
  EXPECT_EQ(o->proxy.advertise_client_url, "");
}

TEST(GrpcProxyFlagsTest, BadInputIsRefusedWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  } cases[] = {
      // The whole messages of the three subcommand errors.
      {{}, "a subcommand is needed: `kplane store grpc-proxy start [flags]`"},
      {{"stop"}, "unknown subcommand \"stop\" (the grpc-proxy has one: start)"},
      {{"start", "now"}, "unexpected argument \"now\""},
      {{"start", "--bogus"}, "unknown flag"},
      {{"start", "--listen-addr=23790"},
       "--listen-addr: \"23790\": missing port"},
      {{"start", "--listen-addr=::1:23790"},
       "--listen-addr: \"::1:23790\": too many colons"},
      {{"start", "--metrics-addr=127.0.0.1:1"},
       "--metrics-addr: URL scheme must be http or https: 127.0.0.1:1"},
      {{"start", "--metrics-addr=http://127.0.0.1"},
       "--metrics-addr: URL address does not have the form \"host:port\""},
      {{"start", "--metrics-addr=https://127.0.0.1:6633"},
       "--metrics-addr: an https:// URL needs --cert-file and --key-file"},
      {{"start", "--discovery-srv=example.com"},
       "--discovery-srv is not supported"},
      {{"start", "--resolver-prefix=p", "--resolver-ttl=5"},
       "--resolver-prefix is not supported"},
      {{"start", "--insecure-skip-tls-verify"},
       "--insecure-skip-tls-verify is not supported"},
      {{"start", "--cert=/x"}, "--cert and --key must be given together"},
      {{"start", "--cert-file=/x"}, "--cert-file and --key-file"},
      {{"start", "--max-send-bytes=0"}, "--max-send-bytes must be in"},
      {{"start", "--range-cache-max-entries=-1"},
       "--range-cache-max-entries must be in 0..16777216"},
      {{"start", "--range-cache-max-bytes=0"},
       "--range-cache-max-bytes must be at least 1"},
      {{"start", "--listen-cipher-suites=TLS_BOGUS"},
       "unexpected TLS cipher suite \"TLS_BOGUS\""},
  };
  for (const Case& c : cases) {
    auto o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.want;
    EXPECT_NE(o.status().message().find(c.want), std::string::npos)
        << o.status().message() << " (want: " << c.want << ")";
  }
}

TEST(GrpcProxyFlagsTest, MetricsAddr) {
  auto none = Parse({"start"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->metrics_url.has_value());
  auto o = Parse({"start", "--metrics-addr=http://127.0.0.1:6633"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(o->metrics_url.has_value());
  EXPECT_EQ(o->metrics_url->scheme, "http");
  EXPECT_EQ(o->metrics_url->host, "127.0.0.1");
  EXPECT_EQ(o->metrics_url->port, 6633);
}

TEST(GrpcProxyFlagsTest, ListenCipherSuitesAreCheckedAndPassedOn) {
  auto o =
      Parse({"start",
             "--listen-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
             "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->proxy.cipher_suites,
            (std::vector<std::string>{
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"}));
  // etcd's e2e passes an empty list: the defaults.
  o = Parse({"start", "--listen-cipher-suites", ""});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->proxy.cipher_suites.empty());
}

TEST(GrpcProxyFlagsTest, MaxConnections) {
  auto o = Parse({"start"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->proxy.max_connections, 10000u);
  o = Parse({"start", "--max-connections=0"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->proxy.max_connections, 0u);
  o = Parse({"start", "--max-connections=-1"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "--max-connections must not be negative (0: no cap)");
}

// etcd's TestGrpcproxyAndCommonName: a client certificate with a Common
// Name is refused, one without is taken.
TEST(GrpcProxyFlagsTest, ClientCertificateWithCommonNameIsRefused) {
  TempDir dir;
  const WallTime now = std::chrono::system_clock::now();
  auto ca = net::GenerateCa("test-ca", now);
  ASSERT_TRUE(ca.ok());
  net::CertificateRequest named;
  named.common_name = "example.com";
  named.client_auth = true;
  auto with_cn = net::IssueCertificate(*ca, named, now);
  ASSERT_TRUE(with_cn.ok());
  // net/pki.h insists on a CN; this one has only an O.
  auto without_cn = SelfSignedWithoutCommonName();
  ASSERT_TRUE(without_cn.ok());
  const std::string ca_file = dir.Write("ca.crt", ca->cert_pem);

  auto o = Parse({"start", "--cert=" + dir.Write("cn.crt", with_cn->cert_pem),
                  "--key=" + dir.Write("cn.key", with_cn->key_pem),
                  "--cacert=" + ca_file});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "cert has non empty Common Name (example.com)");

  o = Parse({"start", "--cert=" + dir.Write("nocn.crt", without_cn->cert_pem),
             "--key=" + dir.Write("nocn.key", without_cn->key_pem),
             "--cacert=" + ca_file});
  EXPECT_TRUE(o.ok()) << o.status().ToString();

  // The exit code and message of the command, as etcd's e2e sees them.
  const int rc =
      RunStoreCommand({"grpc-proxy", "start",
                       "--cert=" + dir.Write("c2.crt", with_cn->cert_pem),
                       "--key=" + dir.Write("c2.key", with_cn->key_pem)});
  EXPECT_EQ(rc, 2);
}

TEST(GrpcProxyFlagsTest, CommonNameOfAnUnreadableFile) {
  auto cn = CertificateCommonName("/nonexistent/cert.pem");
  ASSERT_FALSE(cn.ok());
  EXPECT_NE(cn.status().message().find("cannot read certificate"),
            std::string::npos);
}

// --metrics-addr https:// gets the client port's TLS settings, as etcd's
// proxy gives both listeners one TLSInfo: with --trusted-ca-file a client
// certificate is required there too.
TEST(GrpcProxyMetricsServerTest, HttpsTakesTheClientPortsTlsSettings) {
  testing::TempDir dir("kplane-proxymetrics-");
  net::Pki pki({.dir = dir.path()});
  ASSERT_TRUE(pki.EnsureCertificate("server", {.common_name = "server",
                                               .ip_addresses = {"127.0.0.1"},
                                               .server_auth = true})
                  .ok());
  ASSERT_TRUE(pki.EnsureCertificate(
                     "client", {.common_name = "client", .client_auth = true})
                  .ok());
  storage::GrpcProxyOptions o;
  o.endpoints = {"127.0.0.1:1"};  // no member: /proxy/metrics needs none
  o.listen_addr = "127.0.0.1:0";
  o.cert_file = pki.CertPath("server");
  o.key_file = pki.KeyPath("server");
  o.trusted_ca_file = pki.CertPath("ca");
  auto proxy = storage::GrpcProxy::Start(o);
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  net::Url url;
  url.scheme = "https";
  url.host = "127.0.0.1";
  url.port = 0;  // any
  auto server = StartProxyMetricsServer(url, o, proxy->get());
  ASSERT_TRUE(server.ok()) << server.status();
  auto get = [&](bool with_cert) -> StatusOr<net::HttpResponse> {
    net::TlsClientConfig cc{.ca_file = pki.CertPath("ca")};
    if (with_cert) {
      cc.cert_file = pki.CertPath("client");
      cc.key_file = pki.KeyPath("client");
    }
    ASSIGN_OR_RETURN(auto tls, net::TlsContext::NewClient(cc));
    ASSIGN_OR_RETURN(
        auto c, net::HttpClient::ForUrl(
                    "https://127.0.0.1:" + std::to_string((*server)->port()),
                    {.tls = tls}));
    return c->Request("GET", "/proxy/metrics");
  };
  EXPECT_FALSE(get(false).ok()) << "served without a client certificate";
  auto ok = get(true);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->status, 200);
  EXPECT_NE(ok->body.find("etcd_grpc_proxy_cache_hits_total"),
            std::string::npos);
  (*server)->Stop();
}

}  // namespace
}  // namespace kplane::cmd
