// TlsContext / TlsSession (net/tls.h) and the PKI (net/pki.h): certificates
// as asked, verified by OpenSSL itself, reused from disk; handshakes driven
// over a socket pair in one thread (no timing), with every refusal the
// header promises and its message.
#include "net/tls.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_system.h"
#include "base/logging.h"
#include "base/testing/temp_dir.h"
#include "net/pki.h"
#include "net/socket.h"

namespace kplane::net {
namespace {

using ::testing::HasSubstr;

// OpenSSL's own verdict on `leaf` against `ca` (the purpose checked too).
std::string OpenSslVerify(const std::string& ca_pem,
                          const std::string& leaf_pem, int purpose) {
  auto read = [](const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return x;
  };
  X509* ca = read(ca_pem);
  X509* leaf = read(leaf_pem);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  std::string result =
      X509_verify_cert(ctx) == 1
          ? "ok"
          : X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(leaf);
  X509_free(ca);
  return result;
}

CertificateRequest ServerRequest() {
  return {.common_name = "kplane-test-server",
          .dns_names = {"localhost", "server.kplane.test"},
          .ip_addresses = {"127.0.0.1", "::1"},
          .server_auth = true};
}

CertificateRequest ClientRequest(std::string user,
                                 std::vector<std::string> groups) {
  return {.common_name = std::move(user),
          .organizations = std::move(groups),
          .client_auth = true};
}

// ---------------------------------------------------------------------------
// PKI

TEST(PkiTest, CertificatesNameWhatWasAskedAndVerifyAgainstTheCa) {
  const WallTime now = Clock::Real()->WallNow();
  StatusOr<KeyPair> ca = GenerateCa("test-ca", now);
  ASSERT_TRUE(ca.ok()) << ca.status();
  StatusOr<KeyPair> server = IssueCertificate(*ca, ServerRequest(), now);
  ASSERT_TRUE(server.ok()) << server.status();
  StatusOr<KeyPair> client =
      IssueCertificate(*ca, ClientRequest("alice", {"dev", "ops"}), now);
  ASSERT_TRUE(client.ok()) << client.status();

  EXPECT_EQ(
      OpenSslVerify(ca->cert_pem, server->cert_pem, X509_PURPOSE_SSL_SERVER),
      "ok");
  EXPECT_EQ(
      OpenSslVerify(ca->cert_pem, client->cert_pem, X509_PURPOSE_SSL_CLIENT),
      "ok");
  // Usages are enforced: a client certificate cannot serve, and the other
  // way round.
  EXPECT_NE(
      OpenSslVerify(ca->cert_pem, client->cert_pem, X509_PURPOSE_SSL_SERVER),
      "ok");
  EXPECT_NE(
      OpenSslVerify(ca->cert_pem, server->cert_pem, X509_PURPOSE_SSL_CLIENT),
      "ok");
  // Another CA does not vouch for them.
  StatusOr<KeyPair> other = GenerateCa("other-ca", now);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(
      OpenSslVerify(other->cert_pem, server->cert_pem, X509_PURPOSE_SSL_SERVER),
      "ok");

  StatusOr<CertificateInfo> ci = ParseCertificatePem(ca->cert_pem);
  ASSERT_TRUE(ci.ok());
  EXPECT_TRUE(ci->is_ca);
  EXPECT_EQ(ci->identity.common_name, "test-ca");

  StatusOr<CertificateInfo> si = ParseCertificatePem(server->cert_pem);
  ASSERT_TRUE(si.ok());
  EXPECT_FALSE(si->is_ca);
  EXPECT_EQ(si->issuer_common_name, "test-ca");
  EXPECT_EQ(si->identity.dns_names,
            (std::vector<std::string>{"localhost", "server.kplane.test"}));
  EXPECT_EQ(si->identity.ip_addresses,
            (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_TRUE(si->server_auth);
  EXPECT_FALSE(si->client_auth);

  StatusOr<CertificateInfo> li = ParseCertificatePem(client->cert_pem);
  ASSERT_TRUE(li.ok());
  EXPECT_EQ(li->identity.common_name, "alice");
  EXPECT_EQ(li->identity.organizations,
            (std::vector<std::string>{"dev", "ops"}));
  EXPECT_TRUE(li->client_auth);
  EXPECT_FALSE(li->server_auth);
}

TEST(PkiTest, ValidityComesFromTheInjectedClock) {
  FakeClock clock;
  const WallTime now = clock.WallNow();
  StatusOr<KeyPair> ca = GenerateCa("ca", now);
  ASSERT_TRUE(ca.ok());
  CertificateRequest req = ServerRequest();
  req.validity = hours(48);
  StatusOr<KeyPair> leaf = IssueCertificate(*ca, req, now);
  ASSERT_TRUE(leaf.ok());
  StatusOr<CertificateInfo> ci = ParseCertificatePem(ca->cert_pem);
  StatusOr<CertificateInfo> li = ParseCertificatePem(leaf->cert_pem);
  ASSERT_TRUE(ci.ok() && li.ok());
  using std::chrono::duration_cast;
  EXPECT_EQ(duration_cast<seconds>(now - li->not_before),
            duration_cast<seconds>(kClockSkewAllowance));
  EXPECT_EQ(duration_cast<seconds>(li->not_after - now), hours(48));
  EXPECT_EQ(duration_cast<seconds>(ci->not_after - now),
            duration_cast<seconds>(kCaValidity));
}

TEST(PkiTest, RejectsRequestsASanCannotHold) {
  StatusOr<KeyPair> ca = GenerateCa("ca", Clock::Real()->WallNow());
  ASSERT_TRUE(ca.ok());
  CertificateRequest bad_ip = ServerRequest();
  bad_ip.ip_addresses = {"127.0.0.300"};
  EXPECT_EQ(
      IssueCertificate(*ca, bad_ip, Clock::Real()->WallNow()).status().code(),
      StatusCode::kInvalidArgument);
  CertificateRequest injected = ServerRequest();
  injected.dns_names = {"a,IP:1.2.3.4"};  // would add a SAN if spliced in
  EXPECT_EQ(
      IssueCertificate(*ca, injected, Clock::Real()->WallNow()).status().code(),
      StatusCode::kInvalidArgument);
}

TEST(PkiTest, EnsureCreatesPrivateFilesAndReusesThemOnTheNextStart) {
  kplane::testing::TempDir tmp("tlstest");
  const std::string dir = tmp.Sub("pki");
  KeyPair ca1, server1, admin1;
  {
    Pki pki({.dir = dir});
    StatusOr<KeyPair> ca = pki.EnsureCa();
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca1 = *ca;
    StatusOr<KeyPair> s = pki.EnsureCertificate("apiserver", ServerRequest());
    ASSERT_TRUE(s.ok()) << s.status();
    server1 = *s;
    StatusOr<KeyPair> a = pki.EnsureCertificate(
        "admin", ClientRequest("admin", {"system:masters"}));
    ASSERT_TRUE(a.ok()) << a.status();
    admin1 = *a;
  }
  for (const char* f : {"ca.crt", "ca.key", "apiserver.crt", "apiserver.key",
                        "admin.crt", "admin.key"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir + "/" + f).c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }
  struct stat dst {};
  ASSERT_EQ(::stat(dir.c_str(), &dst), 0);
  EXPECT_EQ(dst.st_mode & 0777, 0700u);
  StatusOr<std::string> on_disk =
      ReadFile(FileSystem::Default(), dir + "/apiserver.crt");
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(*on_disk, server1.cert_pem);

  // A restart: the same bytes come back.
  Pki again({.dir = dir});
  StatusOr<KeyPair> ca2 = again.EnsureCa();
  ASSERT_TRUE(ca2.ok());
  EXPECT_EQ(ca2->cert_pem, ca1.cert_pem);
  EXPECT_EQ(ca2->key_pem, ca1.key_pem);
  StatusOr<KeyPair> s2 = again.EnsureCertificate("apiserver", ServerRequest());
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->cert_pem, server1.cert_pem);
  EXPECT_EQ(s2->key_pem, server1.key_pem);
  StatusOr<KeyPair> a2 = again.EnsureCertificate(
      "admin", ClientRequest("admin", {"system:masters"}));
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(a2->cert_pem, admin1.cert_pem);

  // A new SAN: a new certificate from the same CA.
  CertificateRequest wider = ServerRequest();
  wider.ip_addresses.push_back("10.0.0.7");
  StatusOr<KeyPair> s3 = again.EnsureCertificate("apiserver", wider);
  ASSERT_TRUE(s3.ok());
  EXPECT_NE(s3->cert_pem, server1.cert_pem);
  EXPECT_EQ(OpenSslVerify(ca1.cert_pem, s3->cert_pem, X509_PURPOSE_SSL_SERVER),
            "ok");
  StatusOr<CertificateInfo> info = ParseCertificatePem(s3->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->identity.ip_addresses.back(), "10.0.0.7");
}

TEST(PkiTest, ReissuesAnExpiredLeafButNeverReplacesTheCa) {
  kplane::testing::TempDir tmp("tlstest");
  const std::string dir = tmp.path();
  FakeClock clock;
  clock.SetWall(Clock::Real()->WallNow());
  Pki pki({.dir = dir, .clock = &clock});
  CertificateRequest req = ClientRequest("node-1", {"system:nodes"});
  req.validity = hours(1);
  StatusOr<KeyPair> first = pki.EnsureCertificate("node-1", req);
  ASSERT_TRUE(first.ok()) << first.status();
  clock.Advance(hours(2));
  StatusOr<KeyPair> second = pki.EnsureCertificate("node-1", req);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->cert_pem, first->cert_pem);

  // A CA whose key was swapped is refused, and left alone.
  StatusOr<KeyPair> other = GenerateCa("other", clock.WallNow());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(WriteFileAtomically(FileSystem::Default(), dir + "/ca.key",
                                  other->key_pem)
                  .ok());
  Pki restarted({.dir = dir, .clock = &clock});
  StatusOr<KeyPair> ca = restarted.EnsureCa();
  EXPECT_EQ(ca.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(ca.status().message()), HasSubstr("does not match"));
  StatusOr<std::string> key = ReadFile(FileSystem::Default(), dir + "/ca.key");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, other->key_pem);
}

// ---------------------------------------------------------------------------
// Contexts

TEST(TlsContextTest, ClearErrorsForMissingFilesAndMismatchedKeys) {
  StatusOr<std::shared_ptr<const TlsContext>> missing = TlsContext::NewServer(
      {.cert_file = "/nonexistent/server.crt", .key_file = "/nonexistent/k"});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("/nonexistent/server.crt"));

  const WallTime now = Clock::Real()->WallNow();
  StatusOr<KeyPair> ca = GenerateCa("ca", now);
  StatusOr<KeyPair> a = IssueCertificate(*ca, ServerRequest(), now);
  StatusOr<KeyPair> b = IssueCertificate(*ca, ServerRequest(), now);
  ASSERT_TRUE(ca.ok() && a.ok() && b.ok());
  StatusOr<std::shared_ptr<const TlsContext>> mismatch =
      TlsContext::NewServer({.cert_pem = a->cert_pem, .key_pem = b->key_pem});
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mismatch.status().message()),
              HasSubstr("does not match"));

  StatusOr<std::shared_ptr<const TlsContext>> garbage =
      TlsContext::NewServer({.cert_pem = "hello", .key_pem = a->key_pem});
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(garbage.status().message()),
              HasSubstr("no PEM certificate"));

  StatusOr<std::shared_ptr<const TlsContext>> no_ca =
      TlsContext::NewServer({.cert_pem = a->cert_pem,
                             .key_pem = a->key_pem,
                             .client_auth = ClientAuth::kRequireAndVerify});
  EXPECT_EQ(no_ca.status().code(), StatusCode::kInvalidArgument);

  StatusOr<std::shared_ptr<const TlsContext>> half =
      TlsContext::NewClient({.ca_pem = ca->cert_pem, .cert_pem = a->cert_pem});
  EXPECT_EQ(half.status().code(), StatusCode::kInvalidArgument);

  StatusOr<std::shared_ptr<const TlsContext>> ok =
      TlsContext::NewServer({.cert_pem = a->cert_pem, .key_pem = a->key_pem});
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// ---------------------------------------------------------------------------
// Handshakes over a socket pair, pumped in one thread.

struct Pumped {
  TlsSession::Result server = TlsSession::Result::kWantRead;
  TlsSession::Result client = TlsSession::Result::kWantRead;
  std::unique_ptr<TlsSession> s;
  std::unique_ptr<TlsSession> c;
  ScopedFd sfd, cfd;
};

// Steps both handshakes until neither can move (each step either
// progresses or waits for bytes the other side has not written yet).
std::unique_ptr<Pumped> Handshake(std::shared_ptr<const TlsContext> server,
                                  std::shared_ptr<const TlsContext> client,
                                  std::string_view host) {
  int sv[2];
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  auto p = std::make_unique<Pumped>();
  p->sfd.Reset(sv[0]);
  p->cfd.Reset(sv[1]);
  p->s = *TlsSession::NewServer(server, sv[0]);
  p->c = *TlsSession::NewClient(client, sv[1], host);
  using R = TlsSession::Result;
  auto waiting = [](R r) { return r == R::kWantRead || r == R::kWantWrite; };
  for (int i = 0; i < 100 && (waiting(p->server) || waiting(p->client)); ++i) {
    if (waiting(p->client)) p->client = p->c->Handshake();
    if (waiting(p->server)) p->server = p->s->Handshake();
  }
  return p;
}

// Moves one message each way after the handshake; returns the client's
// view ("ok" or its error) -- in TLS 1.3 a refused client certificate
// shows up here, on the client's first read.
std::string Exchange(Pumped* p) {
  using R = TlsSession::Result;
  size_t n = 0;
  if (p->c->Write("ping", 4, &n) != R::kOk) {
    return std::string(p->c->error().message());
  }
  char buf[32 * 1024];
  R r = R::kWantRead;
  for (int i = 0; i < 10 && r == R::kWantRead; ++i) {
    r = p->s->Read(buf, sizeof(buf), &n);
  }
  if (r != R::kOk)
    return "server read: " + std::string(p->s->error().message());
  if (p->s->Write("pong", 4, &n) != R::kOk) return "server write failed";
  r = R::kWantRead;
  for (int i = 0; i < 10 && r == R::kWantRead; ++i) {
    r = p->c->Read(buf, sizeof(buf), &n);
  }
  if (r == R::kError) return std::string(p->c->error().message());
  if (r != R::kOk) return "client read ended";
  return std::string(buf, n) == "pong" ? "ok" : "garbled";
}

class TlsHandshakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    now_ = Clock::Real()->WallNow();
    ca_ = *GenerateCa("ca", now_);
    server_ = *IssueCertificate(ca_, ServerRequest(), now_);
    alice_ = *IssueCertificate(ca_, ClientRequest("alice", {"g1", "g2"}), now_);
    other_ca_ = *GenerateCa("other-ca", now_);
  }

  std::shared_ptr<const TlsContext> Server(ClientAuth auth = ClientAuth::kNone,
                                           std::vector<std::string> alpn = {}) {
    TlsServerConfig c{.cert_pem = server_.cert_pem,
                      .key_pem = server_.key_pem,
                      .client_auth = auth,
                      .alpn = std::move(alpn)};
    if (auth != ClientAuth::kNone) c.client_ca_pem = ca_.cert_pem;
    StatusOr<std::shared_ptr<const TlsContext>> ctx = TlsContext::NewServer(c);
    CHECK(ctx.ok()) << ctx.status();
    return *ctx;
  }
  std::shared_ptr<const TlsContext> Client(const KeyPair* cert = nullptr,
                                           const KeyPair* ca = nullptr,
                                           std::vector<std::string> alpn = {}) {
    TlsClientConfig c{.ca_pem = (ca ? ca : &ca_)->cert_pem,
                      .alpn = std::move(alpn)};
    if (cert) {
      c.cert_pem = cert->cert_pem;
      c.key_pem = cert->key_pem;
    }
    StatusOr<std::shared_ptr<const TlsContext>> ctx = TlsContext::NewClient(c);
    CHECK(ctx.ok()) << ctx.status();
    return *ctx;
  }

  WallTime now_;
  KeyPair ca_, server_, alice_, other_ca_;
};

using R = TlsSession::Result;

TEST_F(TlsHandshakeTest, VerifiedClientIdentityAndAlpn) {
  auto p = Handshake(Server(ClientAuth::kRequireAndVerify, {"h2", "http/1.1"}),
                     Client(&alice_, nullptr, {"http/1.1"}), "127.0.0.1");
  ASSERT_EQ(p->client, R::kOk) << p->c->error();
  ASSERT_EQ(p->server, R::kOk) << p->s->error();
  EXPECT_EQ(Exchange(p.get()), "ok");
  TlsConnectionInfo si = p->s->Info();
  EXPECT_TRUE(si.peer_verified);
  EXPECT_EQ(si.peer.common_name, "alice");
  EXPECT_EQ(si.peer.organizations, (std::vector<std::string>{"g1", "g2"}));
  EXPECT_EQ(si.alpn, "http/1.1");
  EXPECT_TRUE(si.version == "TLSv1.3" || si.version == "TLSv1.2");
  TlsConnectionInfo ci = p->c->Info();
  EXPECT_EQ(ci.alpn, "http/1.1");
  EXPECT_TRUE(ci.peer_verified);
  EXPECT_EQ(ci.peer.common_name, "kplane-test-server");
}

TEST_F(TlsHandshakeTest, NoCommonAlpnProtocolIsRefused) {
  auto p = Handshake(Server(ClientAuth::kNone, {"h2"}),
                     Client(nullptr, nullptr, {"http/1.1"}), "127.0.0.1");
  EXPECT_EQ(p->server, R::kError);
  EXPECT_EQ(p->client, R::kError);
  EXPECT_THAT(std::string(p->c->error().message()),
              HasSubstr("no application protocol"));
}

TEST_F(TlsHandshakeTest, RequiredClientCertificateMissingIsRefused) {
  auto p =
      Handshake(Server(ClientAuth::kRequireAndVerify), Client(), "127.0.0.1");
  EXPECT_EQ(p->server, R::kError);
  EXPECT_THAT(std::string(p->s->error().message()),
              HasSubstr("did not return a certificate"));
  // TLS 1.3: the client learns it on its first read.
  std::string client_view = std::string(p->c->error().message());
  if (p->client == R::kOk) {
    char buf[32 * 1024];
    size_t n = 0;
    R r = R::kWantRead;
    for (int i = 0; i < 10 && r == R::kWantRead; ++i) {
      r = p->c->Read(buf, sizeof(buf), &n);
    }
    EXPECT_EQ(r, R::kError);
    client_view = std::string(p->c->error().message());
  }
  EXPECT_THAT(client_view, HasSubstr("certificate required"));
}

TEST_F(TlsHandshakeTest, ClientCertificateFromAnotherCaIsRefused) {
  KeyPair mallory = *IssueCertificate(
      other_ca_, ClientRequest("admin", {"system:masters"}), now_);
  auto p = Handshake(Server(ClientAuth::kRequireAndVerify), Client(&mallory),
                     "127.0.0.1");
  EXPECT_EQ(p->server, R::kError);
  EXPECT_THAT(std::string(p->s->error().message()),
              HasSubstr("client certificate signed by an unknown authority"));
}

TEST_F(TlsHandshakeTest, RequestModeAcceptsButDoesNotVouch) {
  // No certificate: accepted, no identity.
  auto none = Handshake(Server(ClientAuth::kRequest), Client(), "127.0.0.1");
  ASSERT_EQ(none->server, R::kOk) << none->s->error();
  ASSERT_EQ(none->client, R::kOk);
  EXPECT_EQ(Exchange(none.get()), "ok");
  EXPECT_FALSE(none->s->Info().peer_certificate);
  EXPECT_FALSE(none->s->Info().peer_verified);

  // A certificate the CA did not sign: accepted, not verified, no identity
  // (kube's authenticator then answers 401).
  KeyPair mallory = *IssueCertificate(
      other_ca_, ClientRequest("admin", {"system:masters"}), now_);
  auto bad =
      Handshake(Server(ClientAuth::kRequest), Client(&mallory), "127.0.0.1");
  ASSERT_EQ(bad->server, R::kOk) << bad->s->error();
  EXPECT_EQ(Exchange(bad.get()), "ok");
  TlsConnectionInfo info = bad->s->Info();
  EXPECT_TRUE(info.peer_certificate);
  EXPECT_FALSE(info.peer_verified);
  EXPECT_EQ(info.peer.common_name, "");
  EXPECT_THAT(info.peer_verify_error, HasSubstr("unknown authority"));

  auto good =
      Handshake(Server(ClientAuth::kRequest), Client(&alice_), "127.0.0.1");
  ASSERT_EQ(good->server, R::kOk);
  EXPECT_EQ(Exchange(good.get()), "ok");
  EXPECT_TRUE(good->s->Info().peer_verified);
  EXPECT_EQ(good->s->Info().peer.common_name, "alice");
}

TEST_F(TlsHandshakeTest, ServerFromAnotherCaIsRefused) {
  auto p = Handshake(Server(), Client(nullptr, &other_ca_), "127.0.0.1");
  EXPECT_EQ(p->client, R::kError);
  EXPECT_THAT(std::string(p->c->error().message()),
              HasSubstr("server certificate signed by an unknown authority"));
}

TEST_F(TlsHandshakeTest, NameMismatchIsRefused) {
  auto by_ip = Handshake(Server(), Client(), "127.0.0.2");
  EXPECT_EQ(by_ip->client, R::kError);
  EXPECT_THAT(std::string(by_ip->c->error().message()),
              HasSubstr("not valid for 127.0.0.2"));
  auto by_name = Handshake(Server(), Client(), "evil.example");
  EXPECT_EQ(by_name->client, R::kError);
  EXPECT_THAT(std::string(by_name->c->error().message()),
              HasSubstr("not valid for evil.example"));
  auto good_name = Handshake(Server(), Client(), "server.kplane.test");
  EXPECT_EQ(good_name->client, R::kOk) << good_name->c->error();
  auto good_v6 = Handshake(Server(), Client(), "::1");
  EXPECT_EQ(good_v6->client, R::kOk) << good_v6->c->error();
}

TEST_F(TlsHandshakeTest, ExpiredAndNotYetValidServerCertificates) {
  CertificateRequest req = ServerRequest();
  req.validity = hours(1);
  KeyPair expired = *IssueCertificate(ca_, req, now_ - hours(24));
  KeyPair future = *IssueCertificate(ca_, req, now_ + hours(24));
  for (auto [pair, want] :
       {std::pair{&expired, "certificate has expired"},
        std::pair{&future, "certificate is not yet valid"}}) {
    auto ctx = TlsContext::NewServer(
        {.cert_pem = pair->cert_pem, .key_pem = pair->key_pem});
    ASSERT_TRUE(ctx.ok());
    auto p = Handshake(*ctx, Client(), "127.0.0.1");
    EXPECT_EQ(p->client, R::kError);
    EXPECT_THAT(std::string(p->c->error().message()), HasSubstr(want));
  }
}

TEST_F(TlsHandshakeTest, WritingToAVanishedPeerIsAnErrorNotASignal) {
  // kplane does not ignore SIGPIPE; OpenSSL's own socket BIO would write(2)
  // and the process would die here. (Set the default action explicitly: a
  // parent may have left SIGPIPE ignored -- Python does, so ctest under
  // /work/bin/cpu would hide the bug.)
  struct sigaction dfl {
  }, old{};
  dfl.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, &old), 0);
  auto p = Handshake(Server(), Client(), "127.0.0.1");
  ASSERT_EQ(p->server, R::kOk);
  ASSERT_EQ(p->client, R::kOk);
  p->cfd.Reset();
  R r = R::kOk;
  const std::string data(64 * 1024, 'x');
  for (int i = 0; i < 4 && r != R::kError; ++i) {
    size_t n = 0;
    r = p->s->Write(data.data(), data.size(), &n);
  }
  EXPECT_EQ(r, R::kError);
  EXPECT_THAT(std::string(p->s->error().message()), HasSubstr("TLS write"));
  sigaction(SIGPIPE, &old, nullptr);
}

TEST_F(TlsHandshakeTest, PlaintextHttpIsRecognised) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  ScopedFd a(sv[0]), b(sv[1]);
  auto s = *TlsSession::NewServer(Server(), sv[0]);
  const std::string req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(sv[1], req.data(), req.size()),
            static_cast<ssize_t>(req.size()));
  EXPECT_EQ(s->Handshake(), R::kError);
  EXPECT_TRUE(s->peer_sent_http());

  int sv2[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv2), 0);
  ScopedFd c(sv2[0]), d(sv2[1]);
  auto s2 = *TlsSession::NewServer(Server(), sv2[0]);
  ASSERT_EQ(::write(sv2[1], "\x01\x02\x03\x04\x05garbage", 12), 12);
  EXPECT_EQ(s2->Handshake(), R::kError);
  EXPECT_FALSE(s2->peer_sent_http());
}

}  // namespace
}  // namespace kplane::net
