// The store's client port over TLS, driven by the real etcdctl 3.4
// (/usr/bin/etcdctl, gRPC): put, get and watch with certificates from
// net/pki.h, the JSON gateway on the same port, and etcd's
// --client-cert-auth (ClientAuth::kRequireAndVerify): a client without a
// certificate, with one from another CA, or without TLS is refused.
// Starts etcdctl processes, hence the "slow" label.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/base64.h"
#include "base/file_system.h"
#include "base/subprocess.h"
#include "net/http_client.h"
#include "net/pki.h"
#include "net/socket.h"

namespace kplane::storage {
namespace {

constexpr char kEtcdctl[] = "/usr/bin/etcdctl";

struct EtcdctlRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class GrpcTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kEtcdctl, X_OK) != 0) GTEST_SKIP() << "no " << kEtcdctl;
    char tmpl[] = "/tmp/kplane-grpctls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    net::Pki pki({.dir = dir_ + "/pki"});
    ASSERT_TRUE(pki.EnsureCa().ok());
    ASSERT_TRUE(pki.EnsureCertificate("server", {.common_name = "kplane-store",
                                                 .dns_names = {"localhost"},
                                                 .ip_addresses = {"127.0.0.1"},
                                                 .server_auth = true})
                    .ok());
    ASSERT_TRUE(pki.EnsureCertificate(
                       "client", {.common_name = "root", .client_auth = true})
                    .ok());
    ASSERT_TRUE(pki.EnsureCertificate(
                       "alice", {.common_name = "alice", .client_auth = true})
                    .ok());
    alice_cert_ = pki.CertPath("alice");
    alice_key_ = pki.KeyPath("alice");
    ca_ = pki.CertPath("ca");
    cert_ = pki.CertPath("client");
    key_ = pki.KeyPath("client");
    // A client certificate from a CA the store does not trust.
    net::Pki other({.dir = dir_ + "/other"});
    ASSERT_TRUE(other
                    .EnsureCertificate(
                        "client", {.common_name = "root", .client_auth = true})
                    .ok());
    other_cert_ = other.CertPath("client");
    other_key_ = other.KeyPath("client");

    auto tls = net::TlsContext::NewServer(
        {.cert_file = pki.CertPath("server"),
         .key_file = pki.KeyPath("server"),
         .client_ca_file = ca_,
         .client_auth = net::ClientAuth::kRequireAndVerify,
         .alpn = {"h2", "http/1.1"}});
    ASSERT_TRUE(tls.ok()) << tls.status();
    ASSERT_TRUE(member_.Start({.tls = *tls}).ok());
    endpoint_ = "https://" + member_.address();
  }
  void TearDown() override {
    member_.Stop();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<std::string> Argv(std::vector<std::string> args,
                                bool with_cert = true) {
    std::vector<std::string> argv = {kEtcdctl,
                                     "--endpoints",
                                     endpoint_,
                                     "--cacert",
                                     ca_,
                                     "--dial-timeout=3s",
                                     "--command-timeout=5s"};
    if (with_cert) {
      argv.insert(argv.end(), {"--cert", cert_, "--key", key_});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // Runs etcdctl to completion.
  EtcdctlRun Etcdctl(std::vector<std::string> argv) {
    const std::string log = dir_ + "/etcdctl-" + std::to_string(++runs_);
    Subprocess p(std::move(argv), {.log_path = log, .env = {"ETCDCTL_API=3"}});
    EtcdctlRun r;
    Status st = p.Start();
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return r;
    r.exit_code = p.Wait();
    StatusOr<std::string> out = ReadFile(FileSystem::Default(), log);
    if (out.ok()) r.output = *out;
    return r;
  }

  TestMember member_;
  std::string dir_, ca_, cert_, key_, alice_cert_, alice_key_, other_cert_,
      other_key_, endpoint_;
  int runs_ = 0;
};

// Reads `fd` (non-blocking) into `out` until it contains `needle`; false on
// EOF or after the test deadline.
bool ReadUntil(int fd, std::string* out, const std::string& needle) {
  while (out->find(needle) == std::string::npos) {
    if (!net::WaitFd(fd, false, seconds(20)).ok()) return false;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return false;
    if (n > 0) out->append(buf, static_cast<size_t>(n));
  }
  return true;
}

TEST_F(GrpcTlsTest, EtcdctlPutGetWatch) {
  EtcdctlRun put = Etcdctl(Argv({"put", "foo", "bar"}));
  EXPECT_EQ(put.exit_code, 0) << put.output;
  EXPECT_EQ(put.output, "OK\n");
  EtcdctlRun get = Etcdctl(Argv({"get", "foo"}));
  EXPECT_EQ(get.exit_code, 0) << get.output;
  EXPECT_EQ(get.output, "foo\nbar\n");

  // A watch from revision 1 replays the put, then sees a new one. Its
  // output goes through a FIFO, so the test waits on it without polling.
  const std::string fifo = dir_ + "/watch.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  net::ScopedFd reader(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  ASSERT_TRUE(reader.valid());
  Subprocess watch(Argv({"watch", "--rev=1", "foo"}),
                   {.log_path = fifo, .env = {"ETCDCTL_API=3"}});
  ASSERT_TRUE(watch.Start().ok());
  std::string seen;
  ASSERT_TRUE(ReadUntil(reader.get(), &seen, "PUT\nfoo\nbar\n")) << seen;
  EXPECT_EQ(Etcdctl(Argv({"put", "foo", "baz"})).exit_code, 0);
  ASSERT_TRUE(ReadUntil(reader.get(), &seen, "PUT\nfoo\nbaz\n")) << seen;
  EXPECT_EQ(seen, "PUT\nfoo\nbar\nPUT\nfoo\nbaz\n");
  watch.Stop();

  EtcdctlRun status = Etcdctl(Argv({"endpoint", "status", "-w", "simple"}));
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find(endpoint_), std::string::npos) << status.output;
}

// The same port serves the JSON gateway over TLS (HTTP/1.1 by ALPN).
TEST_F(GrpcTlsTest, JsonGatewayOnTheSamePort) {
  ASSERT_EQ(Etcdctl(Argv({"put", "k", "v1"})).exit_code, 0);
  auto tls = net::TlsContext::NewClient({.ca_file = ca_,
                                         .cert_file = cert_,
                                         .key_file = key_,
                                         .alpn = {"http/1.1"}});
  ASSERT_TRUE(tls.ok()) << tls.status();
  net::HttpClient http("127.0.0.1", member_.port(), {.tls = *tls});
  StatusOr<net::HttpResponse> r = http.Request(
      "POST", "/v3/kv/range", {{"Content-Type", "application/json"}},
      "{\"key\":\"" + Base64Encode("k") + "\"}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find(Base64Encode("v1")), std::string::npos) << r->body;
}

// etcd's --client-cert-auth: only certificates the CA signed get in.
TEST_F(GrpcTlsTest, ClientsWithoutATrustedCertificateAreRefused) {
  // etcd 3.4 with the same certificates and flags answers each of these
  // with etcdctl's "context deadline exceeded" as well.
  EtcdctlRun none = Etcdctl(Argv({"put", "a", "1"}, /*with_cert=*/false));
  EXPECT_NE(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("context deadline exceeded"), std::string::npos)
      << none.output;
  EtcdctlRun other = Etcdctl(
      Argv({"--cert", other_cert_, "--key", other_key_, "put", "a", "2"},
           /*with_cert=*/false));
  EXPECT_NE(other.exit_code, 0) << other.output;
  EXPECT_NE(other.output.find("context deadline exceeded"), std::string::npos)
      << other.output;
  // Plaintext gRPC to the TLS port.
  std::vector<std::string> plain = {kEtcdctl,
                                    "--endpoints",
                                    "http://" + member_.address(),
                                    "--dial-timeout=3s",
                                    "--command-timeout=5s",
                                    "put",
                                    "a",
                                    "3"};
  EtcdctlRun plaintext = Etcdctl(plain);
  EXPECT_NE(plaintext.exit_code, 0) << plaintext.output;
  // Nothing was written; the trusted client still works.
  EtcdctlRun get = Etcdctl(Argv({"get", "a"}));
  EXPECT_EQ(get.exit_code, 0) << get.output;
  EXPECT_EQ(get.output, "");
}

// With auth enabled, a call without a token acts as its certificate's CN
// (etcd's --client-cert-auth): `client` (CN root) may write without
// --user, `alice` (no such user) may not.
TEST_F(GrpcTlsTest, WithAuthTheCertificateNamesTheUser) {
  const std::vector<std::vector<std::string>> steps = {
      {"role", "add", "root"},
      {"user", "add", "root:secret", "--interactive=false"},
      {"user", "grant-role", "root", "root"},
      {"auth", "enable"}};
  for (const std::vector<std::string>& args : steps) {
    EtcdctlRun r = Etcdctl(Argv(args));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EtcdctlRun put = Etcdctl(Argv({"put", "k", "by-root"}));
  EXPECT_EQ(put.exit_code, 0) << put.output;
  EtcdctlRun denied = Etcdctl(
      Argv({"--cert", alice_cert_, "--key", alice_key_, "put", "k", "by-alice"},
           /*with_cert=*/false));
  EXPECT_NE(denied.exit_code, 0) << denied.output;
  EXPECT_NE(denied.output.find("permission denied"), std::string::npos)
      << denied.output;
  EtcdctlRun get = Etcdctl(Argv({"get", "k", "--print-value-only"}));
  EXPECT_EQ(get.exit_code, 0) << get.output;
  EXPECT_EQ(get.output, "by-root\n");
}

}  // namespace
}  // namespace kplane::storage
