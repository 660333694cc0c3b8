#include "cmd/kplane/serving_tls_flags.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "net/pki.h"

namespace kplane::cmd {
namespace {

// The flags each component declares, and the errors users see for half a
// pair or a client CA without one (the same in every component).
TEST(ServingTlsFlagsTest, DeclaresKubesFlagsAndRefusesHalfAPair) {
  FlagSet verified("kubeletsim", "");
  ServingTlsFlags kubelet(verified,
                          {.served = "the control endpoint",
                           .origin = "the kubelet's",
                           .client_auth = net::ClientAuth::kRequireAndVerify});
  EXPECT_TRUE(verified.Has("tls-cert-file"));
  EXPECT_TRUE(verified.Has("tls-private-key-file"));
  EXPECT_TRUE(verified.Has("client-ca-file"));
  EXPECT_NE(verified.Usage().find("Require client certificates signed by "
                                  "these CAs on the control endpoint"),
            std::string::npos)
      << verified.Usage();

  FlagSet none("controller-manager", "");
  ServingTlsFlags cm(none, {.served = "/healthz and /metrics",
                            .origin = "kube-controller-manager's"});
  EXPECT_FALSE(none.Has("client-ca-file"));
  ASSERT_TRUE(none.Parse(std::vector<std::string>{}).ok());
  auto plain = cm.Context();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*plain, nullptr);

  ASSERT_TRUE(verified.Parse({"--tls-cert-file", "a.crt"}).ok());
  EXPECT_EQ(kubelet.Context().status().message(),
            "--tls-cert-file and --tls-private-key-file go together");
  FlagSet ca_only("kubeletsim", "");
  ServingTlsFlags ca(ca_only,
                     {.served = "the control endpoint",
                      .origin = "the kubelet's",
                      .client_auth = net::ClientAuth::kRequireAndVerify});
  ASSERT_TRUE(ca_only.Parse({"--client-ca-file", "ca.crt"}).ok());
  EXPECT_EQ(ca.Context().status().message(),
            "--client-ca-file needs --tls-cert-file and --tls-private-key-file "
            "(client certificates only exist over TLS)");
}

TEST(ServingTlsFlagsTest, BuildsTheServerContextWithTheClientPolicy) {
  char tmpl[] = "/tmp/kplane-serving-tls-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  net::Pki pki({.dir = dir});
  ASSERT_TRUE(pki.EnsureCertificate("server", {.common_name = "server",
                                               .ip_addresses = {"127.0.0.1"},
                                               .server_auth = true})
                  .ok());
  FlagSet flags("apiserver", "");
  ServingTlsFlags serving(flags, {.served = "the API",
                                  .origin = "kube-apiserver's",
                                  .client_auth = net::ClientAuth::kRequest});
  ASSERT_TRUE(flags
                  .Parse({"--tls-cert-file", pki.CertPath("server"),
                          "--tls-private-key-file", pki.KeyPath("server"),
                          "--client-ca-file", pki.CertPath("ca")})
                  .ok());
  auto tls = serving.Context();
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_NE(*tls, nullptr);
  EXPECT_TRUE((*tls)->is_server());
  EXPECT_EQ((*tls)->client_auth(), net::ClientAuth::kRequest);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::cmd
