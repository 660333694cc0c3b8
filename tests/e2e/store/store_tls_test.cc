// The store's TLS as etcd 3.4's (etcd's --cert-file, --key-file,
// --trusted-ca-file, --client-cert-auth and --peer-* flags), checked the
// same way against a 3-member etcd 3.4 and a 3-member `kplane store` with
// the same certificates (LocalClusterTls, net/pki.h):
//  - members replicate over https:// peer URLs, clients (RemoteKV, `kpctl
//    store` with etcdctl's --cacert/--cert/--key and ETCDCTL_* variables)
//    read and write over https:// client URLs;
//  - a client without a certificate, or with one another CA signed, is
//    refused;
//  - a member restarted with a peer certificate from another CA gets no raft
//    traffic: the others refuse its handshakes and it cannot verify theirs;
//    with its own certificate back, it catches up.
// Besides, `kplane apiserver --storage-backend=remote` with kube's
// --etcd-cafile/--etcd-certfile/--etcd-keyfile stores objects in each
// cluster and compacts it every --etcd-compaction-interval.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/subprocess.h"
#include "kpctl/store/store_command.h"
#include "net/http_client.h"
#include "storage/client/local_cluster.h"
#include "storage/client/maintenance.h"
#include "storage/client/remote_kv.h"

namespace kplane::e2e {
namespace {

using storage::LocalCluster;
using storage::LocalClusterTls;
using storage::StoreKind;

struct Out {
  std::string out, err;
  int code = -1;
};

Out Kpctl(std::vector<std::string> args,
          std::map<std::string, std::string> env = {}) {
  std::istringstream is;
  std::ostringstream os, es;
  kpctl::StoreIo io{&is, &os, &es};
  io.getenv = [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Out o;
  o.code = kpctl::RunStore(args, io);
  o.out = os.str();
  o.err = es.str();
  return o;
}

class StoreTlsTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    if (GetParam() == StoreKind::kKplane &&
        storage::FindKplaneBinary().empty()) {
      GTEST_SKIP() << "build/kplane is absent (build target kplane)";
    }
    char tmpl[] = "/tmp/kplane-store-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    auto pki = storage::WriteTestPki(dir_ + "/pki", "cluster");
    ASSERT_TRUE(pki.ok()) << pki.status();
    tls_ = *pki;
    auto other = storage::WriteTestPki(dir_ + "/other", "stranger");
    ASSERT_TRUE(other.ok()) << other.status();
    stranger_ = *other;
    auto c =
        LocalCluster::Start({.kind = GetParam(), .members = 3, .tls = tls_});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }
  void TearDown() override {
    cluster_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A client of every member with the CA's client certificate.
  std::unique_ptr<storage::RemoteKV> Client() {
    storage::RemoteKVOptions o;
    o.endpoints = cluster_->client_urls();
    o.tls = cluster_->client_tls();
    auto kv = storage::RemoteKV::Create(o);
    EXPECT_TRUE(kv.ok()) << kv.status();
    return kv.ok() ? std::move(*kv) : nullptr;
  }

  // `kplane apiserver` (the binary `kplane`) over the cluster with kube's
  // --etcd-servers, --etcd-cafile, --etcd-certfile and --etcd-keyfile, and
  // `extra` flags; not started yet. The store's TLS is what these tests are
  // about: the API server's own port stays plain HTTP, and its clients
  // send no credentials.
  Subprocess ApiServer(const std::string& kplane, int port,
                       std::vector<std::string> extra = {}) {
    std::string servers;
    for (const std::string& u : cluster_->client_urls()) {
      servers += (servers.empty() ? "" : ",") + u;
    }
    std::vector<std::string> argv = {kplane,
                                     "apiserver",
                                     "--storage-backend=remote",
                                     "--etcd-servers=" + servers,
                                     "--etcd-cafile=" + tls_.ca_file,
                                     "--etcd-certfile=" + tls_.client_cert_file,
                                     "--etcd-keyfile=" + tls_.client_key_file,
                                     "--port=" + std::to_string(port),
                                     "--insecure-http",
                                     "--authorization-mode=AlwaysAllow"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Subprocess(std::move(argv), {.log_path = dir_ + "/apiserver.log"});
  }

  std::string dir_;
  LocalClusterTls tls_;
  LocalClusterTls stranger_;
  std::unique_ptr<LocalCluster> cluster_;
};

#define EXPECT_OK(o) EXPECT_EQ((o).code, 0) << (o).out << (o).err

TEST_P(StoreTlsTest, ClientsWithTheCasCertificatesReadAndWrite) {
  std::unique_ptr<storage::RemoteKV> kv = Client();
  ASSERT_NE(kv, nullptr);
  etcdserverpb::PutRequest put;
  put.set_key("k");
  put.set_value("v");
  auto p = kv->Put(put);
  ASSERT_TRUE(p.ok()) << p.status();
  // Replicated to every member over the TLS peer links.
  for (int i : cluster_->members()) {
    etcdserverpb::RangeRequest r;
    r.set_key("k");
    for (;;) {
      auto got = cluster_->SerializableRange(i, r);
      ASSERT_TRUE(got.ok()) << got.status();
      if (got->kvs_size() == 1) break;
    }
  }

  // kpctl store with etcdctl's flags; bare host:port endpoints speak TLS
  // once a TLS file is given, as etcdctl's.
  const std::vector<std::string> flags = {
      "--endpoints=" + cluster_->endpoints_flag(), "--cacert=" + tls_.ca_file,
      "--cert=" + tls_.client_cert_file, "--key=" + tls_.client_key_file};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), flags.begin(), flags.end());
    return args;
  };
  EXPECT_EQ(Kpctl(with({"get", "k", "--print-value-only"})).out, "v\n");
  EXPECT_OK(Kpctl(with({"put", "k2", "v2"})));
  Out status = Kpctl(with({"endpoint", "status", "-w", "table"}));
  EXPECT_OK(status);
  EXPECT_NE(status.out.find("127.0.0.1"), std::string::npos) << status.out;
  // The same from ETCDCTL_* variables.
  Out env = Kpctl({"get", "k2", "--print-value-only"},
                  {{"ETCDCTL_ENDPOINTS", cluster_->endpoints_flag()},
                   {"ETCDCTL_CACERT", tls_.ca_file},
                   {"ETCDCTL_CERT", tls_.client_cert_file},
                   {"ETCDCTL_KEY", tls_.client_key_file}});
  EXPECT_EQ(env.out, "v2\n") << env.err;
  // curl, as etcd's docs and e2e suite call the gateway (`curl -d` sends a
  // form content type and no Origin, which kplane's gateway still reads).
  {
    const std::string out = dir_ + "/curl.out";
    Subprocess curl(
        {"curl", "-sS", "--cacert", tls_.ca_file, "--cert",
         tls_.client_cert_file, "--key", tls_.client_key_file,
         cluster_->client_url(0) + "/v3/kv/range", "-d", R"({"key":"aw=="})"},
        {.log_path = out});
    ASSERT_TRUE(curl.Start().ok());
    EXPECT_EQ(curl.Wait(), 0);
    std::ifstream in(out);
    std::stringstream got;
    got << in.rdbuf();
    EXPECT_NE(got.str().find(R"("value":"dg==")"), std::string::npos)
        << got.str();
  }
  // --insecure-skip-tls-verify: no CA, the server is not verified.
  EXPECT_EQ(
      Kpctl({"--endpoints=" + cluster_->client_url(0),
             "--cert=" + tls_.client_cert_file, "--key=" + tls_.client_key_file,
             "--insecure-skip-tls-verify", "get", "k", "--print-value-only"})
          .out,
      "v\n");
}

// The real etcdctl 3.4 (gRPC, ALPN h2) over the same https:// client URLs:
// the listener hands h2 connections to the gRPC front decrypted.
TEST_P(StoreTlsTest, EtcdctlOverTls) {
  if (!std::filesystem::exists("/usr/bin/etcdctl")) {
    GTEST_SKIP() << "/usr/bin/etcdctl is absent (Debian etcd-client)";
  }
  int calls = 0;
  auto etcdctl = [&](std::vector<std::string> args, bool with_cert = true) {
    std::vector<std::string> argv = {
        "/usr/bin/etcdctl", "--endpoints=" + cluster_->endpoints_flag(),
        "--cacert=" + tls_.ca_file, "--dial-timeout=3s",
        "--command-timeout=5s"};
    if (with_cert) {
      argv.push_back("--cert=" + tls_.client_cert_file);
      argv.push_back("--key=" + tls_.client_key_file);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    // The log is appended to: one file per call.
    const std::string log =
        dir_ + "/etcdctl-" + std::to_string(++calls) + ".out";
    Subprocess p(argv, {.log_path = log, .env = {"ETCDCTL_API=3"}});
    Out o;
    if (!p.Start().ok()) return o;
    o.code = p.Wait();
    std::ifstream in(log);
    std::stringstream got;
    got << in.rdbuf();
    o.out = got.str();
    return o;
  };
  EXPECT_OK(etcdctl({"put", "grpc-key", "over-tls"}));
  Out get = etcdctl({"get", "grpc-key", "--print-value-only"});
  EXPECT_OK(get);
  EXPECT_EQ(get.out, "over-tls\n");
  Out members = etcdctl({"member", "list"});
  EXPECT_OK(members);
  EXPECT_NE(members.out.find("https://"), std::string::npos) << members.out;
  // Without a client certificate (--client-cert-auth): refused.
  EXPECT_NE(etcdctl({"put", "grpc-key", "nope"}, /*with_cert=*/false).code, 0);
}

TEST_P(StoreTlsTest, ClientsWithoutACaSignedCertificateAreRefused) {
  const std::string ep = cluster_->client_url(0);
  // No client certificate (etcd's --client-cert-auth).
  Out none = Kpctl({"--endpoints=" + ep, "--cacert=" + tls_.ca_file,
                    "--command-timeout=3s", "put", "x", "1"});
  EXPECT_NE(none.code, 0) << none.out;
  // A certificate another CA signed.
  Out foreign = Kpctl({"--endpoints=" + ep, "--cacert=" + tls_.ca_file,
                       "--cert=" + stranger_.client_cert_file,
                       "--key=" + stranger_.client_key_file,
                       "--command-timeout=3s", "put", "x", "1"});
  EXPECT_NE(foreign.code, 0) << foreign.out;
  // A server this CA did not sign: refused by the client.
  Out wrong_ca =
      Kpctl({"--endpoints=" + ep, "--cacert=" + stranger_.ca_file,
             "--cert=" + tls_.client_cert_file, "--key=" + tls_.client_key_file,
             "--command-timeout=3s", "get", "x"});
  EXPECT_NE(wrong_ca.code, 0);
  EXPECT_NE(wrong_ca.err.find("unknown authority"), std::string::npos)
      << wrong_ca.err;
  // Plain HTTP to the TLS port: kplane answers Go's 400 (as Go's
  // http.Server does); etcd 3.4's own TLS listener just closes.
  const auto port =
      static_cast<uint16_t>(std::stoi(ep.substr(ep.rfind(':') + 1)));
  net::HttpClient plain("127.0.0.1", port, {});
  auto r = plain.Request("POST", "/v3/kv/range", {}, R"({"key":"eA=="})");
  if (GetParam() == StoreKind::kKplane) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("Client sent an HTTP request to an HTTPS server"),
              std::string::npos);
  } else {
    EXPECT_FALSE(r.ok()) << r->status;
  }
  // The control: the same request with the CA's client certificate.
  EXPECT_OK(Kpctl({"--endpoints=" + ep, "--cacert=" + tls_.ca_file,
                   "--cert=" + tls_.client_cert_file,
                   "--key=" + tls_.client_key_file, "put", "x", "1"}));
}

// A member whose peer certificate another CA signed cannot take part: it is
// restarted with one, the others commit a write without it, and it never
// sees it; back on its own certificate it catches up.
TEST_P(StoreTlsTest, MemberWithAnotherCasPeerCertificateGetsNoRaftTraffic) {
  auto leader = cluster_->WaitForLeader(seconds(10));
  ASSERT_TRUE(leader.ok()) << leader.status();
  const int outcast = (*leader + 1) % 3;
  const int witness = (*leader + 2) % 3;
  ASSERT_TRUE(cluster_->Terminate(outcast).ok());
  ASSERT_TRUE(
      cluster_
          ->Restart(outcast, {"--peer-cert-file", stranger_.peer_cert_file,
                              "--peer-key-file", stranger_.peer_key_file})
          .ok());

  storage::RemoteKVOptions o;
  o.endpoints = {cluster_->client_url(*leader)};
  o.tls = cluster_->client_tls();
  auto kv = storage::RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  etcdserverpb::PutRequest put;
  put.set_key("while-out");
  put.set_value("v");
  ASSERT_TRUE((*kv)->Put(put).ok());

  // The refusals happen: the leader keeps trying to reach the outcast.
  const std::string leader_sees =
      GetParam() == StoreKind::kKplane
          ? "TLS handshake with 127.0.0.1 failed"
          : "certificate signed by unknown authority";
  const std::string outcast_sees = GetParam() == StoreKind::kKplane
                                       ? "TLS handshake from"
                                       : "rejected connection from";
  for (;;) {
    if (cluster_->LogCount(*leader, leader_sees) > 0 &&
        cluster_->LogCount(*leader, outcast_sees) +
                cluster_->LogCount(witness, outcast_sees) >
            0) {
      break;
    }
    Clock::Real()->SleepFor(milliseconds(100));  // polling two logs
  }
  // The outcast has not got the write (it may not even serve clients: a
  // member without a leader does not publish itself).
  etcdserverpb::RangeRequest r;
  r.set_key("while-out");
  auto got = cluster_->SerializableRange(outcast, r);
  if (got.ok()) {
    EXPECT_EQ(got->kvs_size(), 0) << cluster_->LogTails();
  }

  // Back on the cluster's certificate it catches up.
  auto stopped = cluster_->Terminate(outcast);
  ASSERT_TRUE(stopped.ok()) << stopped.status() << cluster_->LogTails();
  ASSERT_TRUE(cluster_->Restart(outcast).ok());
  ASSERT_TRUE(cluster_->WaitReady(outcast, seconds(30)).ok())
      << cluster_->LogTails();
  for (;;) {
    auto again = cluster_->SerializableRange(outcast, r);
    ASSERT_TRUE(again.ok()) << again.status();
    if (again->kvs_size() == 1) break;
  }
}

// kube-apiserver's --etcd-cafile/--etcd-certfile/--etcd-keyfile: `kplane
// apiserver` stores a ConfigMap through the TLS cluster.
TEST_P(StoreTlsTest, ApiServerWithKubesEtcdFlags) {
  const std::string kplane = storage::FindKplaneBinary();
  if (kplane.empty()) GTEST_SKIP() << "build/kplane is absent";
  auto port = storage::PickFreePort();
  ASSERT_TRUE(port.ok());
  Subprocess api = ApiServer(kplane, *port);
  ASSERT_TRUE(api.Start().ok());
  net::HttpClient http("127.0.0.1", *port, {});
  const std::string cm =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"tls"},)"
      R"("data":{"a":"b"}})";
  for (;;) {  // until the apiserver listens (another process: polled)
    ASSERT_TRUE(api.running()) << "kplane apiserver exited";
    auto r = http.Request("POST", "/api/v1/namespaces/default/configmaps",
                          {{"Content-Type", "application/json"}}, cm);
    if (r.ok() && r->status == 201) break;
    if (r.ok()) {
      ASSERT_TRUE(r->status == 404 || r->status >= 500) << r->body;
    }
    Clock::Real()->SleepFor(milliseconds(100));
  }
  api.Stop();
  etcdserverpb::RangeRequest range;
  range.set_key("/registry/configmaps/default/tls");
  for (;;) {  // member 0 may apply it a moment after the leader
    auto got = cluster_->SerializableRange(0, range);
    ASSERT_TRUE(got.ok()) << got.status();
    if (got->kvs_size() == 1) break;
  }
}

// kube-apiserver's --etcd-compaction-interval with --storage-backend=remote:
// the apiserver compacts the store itself (apiserver/storage/compactor.h),
// keeping one interval of history. Against etcd 3.4 and `kplane store`,
// neither of which compacts by itself here.
TEST_P(StoreTlsTest, ApiServerCompactsTheStore) {
  const std::string kplane = storage::FindKplaneBinary();
  if (kplane.empty()) GTEST_SKIP() << "build/kplane is absent";
  std::unique_ptr<storage::RemoteKV> kv = Client();
  ASSERT_NE(kv, nullptr);
  etcdserverpb::PutRequest put;
  put.set_key("old");
  put.set_value("v1");
  auto first = kv->Put(put);
  ASSERT_TRUE(first.ok()) << first.status();
  put.set_value("v2");
  ASSERT_TRUE(kv->Put(put).ok());
  const int64_t old_revision = first->header().revision();

  auto port = storage::PickFreePort();
  ASSERT_TRUE(port.ok());
  Subprocess api = ApiServer(kplane, *port, {"--etcd-compaction-interval=2s"});
  ASSERT_TRUE(api.Start().ok());

  // Round 1 (after 2 s) records a revision above old_revision, round 2
  // (after 4 s) compacts to it. Another process: polled, bounded.
  etcdserverpb::RangeRequest at_old;
  at_old.set_key("old");
  at_old.set_revision(old_revision);
  const TimePoint deadline = Clock::Real()->Now() + seconds(60);
  for (;;) {
    ASSERT_TRUE(api.running()) << "kplane apiserver exited";
    auto got = kv->Range(at_old);
    if (!got.ok()) {
      ASSERT_EQ(got.status().code(), StatusCode::kCompacted) << got.status();
      EXPECT_NE(
          got.status().message().find("required revision has been compacted"),
          std::string::npos)
          << got.status();
      break;
    }
    ASSERT_LT(Clock::Real()->Now(), deadline)
        << "the store was never compacted\n"
        << cluster_->LogTails();
    Clock::Real()->SleepFor(milliseconds(200));
  }
  api.Stop();

  // kube's coordination key, outside --etcd-prefix, counting rounds.
  etcdserverpb::RangeRequest key;
  key.set_key("compact_rev_key");
  auto rounds = kv->Range(key);
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ASSERT_EQ(rounds->kvs_size(), 1);
  EXPECT_GE(rounds->kvs(0).version(), 2);
  EXPECT_GT(std::stoll(rounds->kvs(0).value()), old_revision);
  // The latest value is untouched.
  etcdserverpb::RangeRequest now;
  now.set_key("old");
  auto latest = kv->Range(now);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_EQ(latest->kvs_size(), 1);
  EXPECT_EQ(latest->kvs(0).value(), "v2");
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTlsTest,
                         ::testing::Values(StoreKind::kEtcd,
                                           StoreKind::kKplane),
                         [](const auto& info) {
                           return info.param == StoreKind::kEtcd
                                      ? std::string("Etcd34")
                                      : std::string("Kplane");
                         });

}  // namespace
}  // namespace kplane::e2e
