// Interoperability with curl (the reference HTTP/1.1 client on this
// machine): streamed responses with -N, chunked and streamed uploads from
// stdin, Expect: 100-continue, HTTP/1.0 and keep-alive.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <mutex>

#include "base/testing/temp_dir.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/pki.h"
#include "net/socket.h"
#include "net/tls.h"

extern char** environ;

namespace kplane::net {
namespace {

// A curl process with pipes to its stdin, stdout and stderr.
class Curl {
 public:
  explicit Curl(const std::vector<std::string>& args) {
    int in[2], out[2], err[2];
    CHECK_EQ(pipe2(in, O_CLOEXEC), 0);
    CHECK_EQ(pipe2(out, O_CLOEXEC), 0);
    CHECK_EQ(pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    std::vector<std::string> argv = {"curl", "-sS"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    int rc = posix_spawnp(&pid_, "curl", &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    CHECK_EQ(rc, 0) << "cannot start curl";
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    stdin_.Reset(in[1]);
    stdout_.Reset(out[0]);
    stderr_.Reset(err[0]);
  }
  ~Curl() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
  }

  void Write(std::string_view data) {
    ASSERT_EQ(::write(stdin_.get(), data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
  }
  void CloseStdin() { stdin_.Reset(); }

  // Reads stdout until it contains `needle`; false on EOF or deadline.
  bool ReadUntil(std::string_view needle) {
    while (out_.find(needle) == std::string::npos) {
      if (!ReadSome(stdout_.get(), &out_)) return false;
    }
    return true;
  }
  // Waits for exit; returns the exit code and collects remaining output.
  int Wait() {
    while (ReadSome(stdout_.get(), &out_)) {
    }
    while (ReadSome(stderr_.get(), &err_)) {
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  static bool ReadSome(int fd, std::string* into) {
    if (fd < 0) return false;
    if (!WaitFd(fd, false, testing::kTestDeadline).ok()) return false;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return false;
    into->append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  ScopedFd stdin_, stdout_, stderr_;
  std::string out_, err_;
};

class CurlInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.metrics = &registry_;
    server_ = std::make_unique<HttpServer>(o);
    server_->Handle(
        "POST", "/echo",
        [](const HttpRequest& req, std::shared_ptr<Responder> r) {
          std::string framing =
              req.headers.Has("Transfer-Encoding") ? "chunked" : "length";
          r->Respond(200, {{"Content-Type", "text/plain"}},
                     framing + " " + std::to_string(req.body.size()) + ":" +
                         req.body.substr(0, 32));
        });
    server_->Handle("GET", "/plain",
                    [](const HttpRequest& req, std::shared_ptr<Responder> r) {
                      r->Respond(200, {}, "plain " + req.path + "\n");
                    });
    server_->Handle(
        "GET", "/watch",
        [this](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->StartStream(200, {{"Content-Type", "application/json"}});
          watch_.set_value(r);
        });
    // Echoes each piece of a streamed request body on the response stream.
    server_->Handle("POST", "/v3/watch",
                    [](const HttpRequest&, std::shared_ptr<Responder> r) {
                      r->StartStream(200, {});
                      r->OnBodyData([r](std::string_view data, bool eof) {
                        if (!data.empty())
                          r->Write("ECHO " + std::string(data));
                        if (eof) r->Finish();
                      });
                    },
                    {.stream_request_body = true});
    ASSERT_TRUE(server_->Start().ok());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  double Accepted() {
    return registry_.NewCounter("kplane_http_connections_accepted_total", "")
        ->With({"http"})
        ->Value();
  }

  metrics::Registry registry_;
  std::unique_ptr<HttpServer> server_;
  std::string base_;
  std::promise<std::shared_ptr<Responder>> watch_;
};

TEST_F(CurlInteropTest, NoBufferStreamShowsEachChunkAsWritten) {
  Curl curl({"-N", base_ + "/watch"});
  std::shared_ptr<Responder> r = watch_.get_future().get();
  for (int i = 0; i < 3; ++i) {
    std::string event = "{\"n\":" + std::to_string(i) + "}\n";
    ASSERT_TRUE(r->Write(event));
    ASSERT_TRUE(curl.ReadUntil(event)) << curl.out();  // before Finish
  }
  ASSERT_TRUE(r->Finish());
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
  EXPECT_EQ(curl.out(), "{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n");
}

TEST_F(CurlInteropTest, ChunkedUploadFromStdin) {
  Curl curl({"--data-binary", "@-", "-H", "Transfer-Encoding: chunked",
             base_ + "/echo"});
  curl.Write("hello ");
  curl.Write("world");
  curl.CloseStdin();
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
  EXPECT_EQ(curl.out(), "chunked 11:hello world");
}

TEST_F(CurlInteropTest, StreamedUploadAndDownloadAtOnce) {
  // -T . reads stdin without blocking, so each piece goes out as it is
  // written while the response streams back (etcd's /v3/watch shape).
  Curl curl({"-N", "-T", ".", "-X", "POST", base_ + "/v3/watch"});
  curl.Write("{\"create_request\":1}\n");
  ASSERT_TRUE(curl.ReadUntil("ECHO {\"create_request\":1}\n")) << curl.err();
  curl.Write("{\"cancel_request\":1}\n");
  ASSERT_TRUE(curl.ReadUntil("ECHO {\"cancel_request\":1}\n")) << curl.err();
  curl.CloseStdin();
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
}

TEST_F(CurlInteropTest, ExpectContinueIsHonoured) {
  std::string body(5000, 'b');
  Curl curl({"-v", "-H", "Expect: 100-continue", "--expect100-timeout", "60",
             "--data-binary", "@-", base_ + "/echo"});
  curl.Write(body);
  curl.CloseStdin();
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
  EXPECT_EQ(curl.out(), "length 5000:" + body.substr(0, 32));
  EXPECT_NE(curl.err().find("< HTTP/1.1 100 Continue"), std::string::npos)
      << curl.err();
}

TEST_F(CurlInteropTest, Http10) {
  Curl curl({"-0", "-i", base_ + "/plain"});
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
  EXPECT_NE(curl.out().find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(curl.out().find("\r\n\r\nplain /plain\n"), std::string::npos);
}

TEST_F(CurlInteropTest, KeepAliveAcrossUrls) {
  Curl curl({base_ + "/plain", base_ + "/plain?second"});
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
  EXPECT_EQ(curl.out(), "plain /plain\nplain /plain\n");
  EXPECT_EQ(Accepted(), 1);
}

TEST_F(CurlInteropTest, ErrorsAreReadable) {
  Curl curl({"-i", "-X", "DELETE", base_ + "/plain"});
  EXPECT_EQ(curl.Wait(), 0);
  EXPECT_EQ(curl.out().rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u)
      << curl.out();
  EXPECT_NE(curl.out().find("Allow: GET, HEAD\r\n"), std::string::npos);
}

// curl over HTTPS, with a PKI generated into files (net/pki.h) and a
// server reading them, as kplane will: the generated certificates are what
// curl's OpenSSL accepts, the client certificate's identity reaches the
// handler, and a client without one is refused.
class CurlTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = std::make_unique<Pki>(PkiOptions{.dir = dir_.Sub("pki")});
    ASSERT_TRUE(
        pki_->EnsureCertificate("server", {.common_name = "server",
                                           .dns_names = {"localhost"},
                                           .ip_addresses = {"127.0.0.1"},
                                           .server_auth = true})
            .ok());
    ASSERT_TRUE(
        pki_->EnsureCertificate("admin", {.common_name = "admin",
                                          .organizations = {"system:masters"},
                                          .client_auth = true})
            .ok());
    StatusOr<std::shared_ptr<const TlsContext>> tls =
        TlsContext::NewServer({.cert_file = pki_->CertPath("server"),
                               .key_file = pki_->KeyPath("server"),
                               .client_ca_file = pki_->CertPath("ca"),
                               .client_auth = ClientAuth::kRequireAndVerify,
                               .alpn = {"http/1.1"}});
    ASSERT_TRUE(tls.ok()) << tls.status();
    HttpServerOptions o{.tls = *tls};
    o.metrics = &registry_;
    server_ = std::make_unique<HttpServer>(o);
    server_->Handle("GET", "/whoami",
                    [](const HttpRequest& req, std::shared_ptr<Responder> r) {
                      std::string who = req.tls && req.tls->peer_verified
                                            ? req.tls->peer.common_name
                                            : "nobody";
                      for (const auto& g : req.tls->peer.organizations) {
                        who += " " + g;
                      }
                      r->Respond(200, {}, who + "\n");
                    });
    server_->Handle(
        "GET", "/watch",
        [this](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->StartStream(200, {{"Content-Type", "application/json"}});
          watch_.set_value(r);
        });
    ASSERT_TRUE(server_->Start().ok());
    base_ = "https://127.0.0.1:" + std::to_string(server_->port());
  }

  std::vector<std::string> WithCerts(std::vector<std::string> args) {
    std::vector<std::string> out = {"--cacert", pki_->CertPath("ca"),
                                    "--cert",   pki_->CertPath("admin"),
                                    "--key",    pki_->KeyPath("admin")};
    out.insert(out.end(), args.begin(), args.end());
    return out;
  }

  kplane::testing::TempDir dir_{"kplane-curl-tls-"};
  std::unique_ptr<Pki> pki_;
  metrics::Registry registry_;
  std::unique_ptr<HttpServer> server_;
  std::string base_;
  std::promise<std::shared_ptr<Responder>> watch_;
};

TEST_F(CurlTlsTest, ClientCertificateIdentityReachesTheHandler) {
  Curl curl(WithCerts({base_ + "/whoami", base_ + "/whoami"}));
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
  EXPECT_EQ(curl.out(), "admin system:masters\nadmin system:masters\n");
  // The name in the certificate works as well as the IP.
  Curl by_name(WithCerts(
      {"https://localhost:" + std::to_string(server_->port()) + "/whoami"}));
  EXPECT_EQ(by_name.Wait(), 0) << by_name.err();
}

TEST_F(CurlTlsTest, StreamOverTls) {
  Curl curl(WithCerts({"-N", base_ + "/watch"}));
  std::shared_ptr<Responder> r = watch_.get_future().get();
  for (int i = 0; i < 3; ++i) {
    std::string event = "{\"n\":" + std::to_string(i) + "}\n";
    ASSERT_TRUE(r->Write(event));
    ASSERT_TRUE(curl.ReadUntil(event)) << curl.out();  // before Finish
  }
  ASSERT_TRUE(r->Finish());
  EXPECT_EQ(curl.Wait(), 0) << curl.err();
}

TEST_F(CurlTlsTest, RefusalsAsCurlReportsThem) {
  // No client certificate: the server ends the handshake.
  Curl no_cert({"--cacert", pki_->CertPath("ca"), base_ + "/whoami"});
  EXPECT_NE(no_cert.Wait(), 0);
  EXPECT_EQ(no_cert.out(), "");
  // curl does not trust the CA.
  Curl untrusted({"--cert", pki_->CertPath("admin"), "--key",
                  pki_->KeyPath("admin"), base_ + "/whoami"});
  EXPECT_EQ(untrusted.Wait(), 60)
      << untrusted.err();  // CURLE_PEER_FAILED_VERIFICATION
  // Plaintext to the TLS port: Go's 400.
  Curl plain({"-i", "http://127.0.0.1:" + std::to_string(server_->port()) +
                        "/whoami"});
  EXPECT_EQ(plain.Wait(), 0) << plain.err();
  EXPECT_EQ(plain.out().rfind("HTTP/1.0 400 Bad Request\r\n", 0), 0u)
      << plain.out();
  EXPECT_NE(plain.out().find("Client sent an HTTP request to an HTTPS server."),
            std::string::npos);
}

}  // namespace
}  // namespace kplane::net
