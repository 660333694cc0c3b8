#include "cmd/kplane/store_flags.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kplane::cmd {
namespace {

// Every flag `etcd --help` of etcd 3.4.23 (Debian's etcd-server) lists.
constexpr const char* kEtcd34Flags[] = {
    "name",
    "data-dir",
    "wal-dir",
    "snapshot-count",
    "heartbeat-interval",
    "election-timeout",
    "initial-election-tick-advance",
    "listen-peer-urls",
    "listen-client-urls",
    "max-snapshots",
    "max-wals",
    "quota-backend-bytes",
    "backend-batch-interval",
    "backend-batch-limit",
    "max-txn-ops",
    "max-request-bytes",
    "max-concurrent-streams",
    "grpc-keepalive-min-time",
    "grpc-keepalive-interval",
    "grpc-keepalive-timeout",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "advertise-client-urls",
    "discovery",
    "discovery-fallback",
    "discovery-proxy",
    "discovery-srv",
    "discovery-srv-name",
    "strict-reconfig-check",
    "pre-vote",
    "auto-compaction-retention",
    "auto-compaction-mode",
    "enable-v2",
    "cert-file",
    "key-file",
    "client-cert-auth",
    "client-crl-file",
    "client-cert-allowed-hostname",
    "trusted-ca-file",
    "auto-tls",
    "peer-cert-file",
    "peer-key-file",
    "peer-client-cert-auth",
    "peer-trusted-ca-file",
    "peer-cert-allowed-cn",
    "peer-cert-allowed-hostname",
    "peer-auto-tls",
    "peer-crl-file",
    "cipher-suites",
    "cors",
    "host-whitelist",
    "auth-token",
    "bcrypt-cost",
    "auth-token-ttl",
    "enable-pprof",
    "metrics",
    "listen-metrics-urls",
    "logger",
    "log-outputs",
    "log-level",
    "proxy",
    "proxy-failure-wait",
    "proxy-refresh-interval",
    "proxy-dial-timeout",
    "proxy-write-timeout",
    "proxy-read-timeout",
    "experimental-initial-corrupt-check",
    "experimental-corrupt-check-time",
    "experimental-enable-v2v3",
    "experimental-backend-bbolt-freelist-type",
    "experimental-enable-lease-checkpoint",
    "experimental-compaction-batch-limit",
    "experimental-peer-skip-client-san-verification",
    "experimental-watch-progress-notify-interval",
    "experimental-warning-apply-duration",
    "force-new-cluster",
    "debug",
    "log-package-levels",
    "config-file"};

using Env = std::map<std::string, std::string>;

StatusOr<StoreOptions> Parse(std::vector<std::string> args, Env env = {}) {
  StoreFlags flags;
  return flags.Parse(args, env);
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/store_flags_testXXXXXX";
    int fd = mkstemp(tmpl);
    path_ = tmpl;
    ::close(fd);
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(StoreFlagsTest, AcceptsEveryFlagOfEtcd34) {
  StoreFlags flags;
  std::vector<std::string> names = flags.FlagNames();
  for (const char* f : kEtcd34Flags) {
    EXPECT_NE(std::find(names.begin(), names.end(), f), names.end())
        << "--" << f << " is etcd 3.4's but not accepted";
  }
}

TEST(StoreFlagsTest, EveryEtcdFlagAtItsDefaultStarts) {
  // `etcd --name x --max-wals 5 ...` with any flag at etcd's default value
  // is accepted (the no-op ones warn).
  auto o = Parse({"--name", "m", "--max-wals", "5", "--enable-v2=false",
                  "--auto-tls=false", "--proxy", "off", "--logger", "zap",
                  "--strict-reconfig-check", "--host-whitelist", "*",
                  "--log-outputs", "stderr", "--auth-token", "simple",
                  "--experimental-enable-lease-checkpoint=false"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cfg.name, "m");
  EXPECT_EQ(o->cfg.data_dir, "m.etcd");
  bool warned = false;
  for (const std::string& w : o->warnings) {
    warned |= w.find("--max-wals has no effect") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

// etcd's --auto-tls / --peer-auto-tls: a pair generated under
// <data-dir>/fixtures/<side> for the listen URLs' hosts, which also makes
// https:// URLs acceptable; files given win, with etcd's warning.
TEST(StoreFlagsTest, AutoTlsGeneratesAPairUnderTheDataDir) {
  auto o =
      Parse({"--name", "m", "--data-dir", "/d", "--auto-tls", "--peer-auto-tls",
             "--listen-client-urls", "https://127.0.0.1:2379",
             "--listen-peer-urls", "https://localhost:2380"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->client_tls.self_signed);
  EXPECT_EQ(o->client_tls.cert_file, "/d/fixtures/client/cert.crt");
  EXPECT_EQ(o->client_tls.key_file, "/d/fixtures/client/cert.key");
  EXPECT_EQ(o->client_tls.self_signed_hosts,
            std::vector<std::string>{"127.0.0.1"});
  EXPECT_FALSE(o->client_tls.requires_client_certs());
  EXPECT_TRUE(o->peer_tls.self_signed);
  EXPECT_EQ(o->peer_tls.cert_file, "/d/fixtures/peer/cert.crt");
  EXPECT_EQ(o->peer_tls.self_signed_hosts,
            std::vector<std::string>{"localhost"});

  auto given = Parse({"--name", "m", "--peer-auto-tls", "--peer-cert-file",
                      "p.crt", "--peer-key-file", "p.key"});
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_FALSE(given->peer_tls.self_signed);
  EXPECT_EQ(given->peer_tls.cert_file, "p.crt");
  bool warned = false;
  for (const std::string& w : given->warnings) {
    warned |= w == "ignoring peer auto TLS since certs given";
  }
  EXPECT_TRUE(warned);
}

TEST(StoreFlagsTest, RefusesWhatItCannotHonour) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--cert-file", "server.crt"},
       "--cert-file and --key-file must both be given: KeyFile and CertFile "
       "must both be present[key: , cert: server.crt]"},
      {{"--client-cert-auth=true"},
       "--client-cert-auth needs --trusted-ca-file"},
      {{"--peer-client-cert-auth=true"},
       "--peer-client-cert-auth needs --peer-trusted-ca-file"},
      {{"--enable-v2"}, "the v2 API is not served"},
      {{"--proxy", "on"}, "proxy mode is not supported"},
      {{"--discovery", "https://discovery.etcd.io/x"},
       "discovery is not supported"},
      {{"--force-new-cluster"}, "--force-new-cluster=true: not supported"},
      {{"--wal-dir", "/wal"}, "the WAL lives in <data-dir>/member/wal"},
      {{"--auth-token", "jwt"},
       "--auth-token=jwt: sign-method \"\" is not one of RS256"},
      {{"--auth-token", "jwt,sign-method=ES256,priv-key=/nonexistent/k.pem"},
       "priv-key /nonexistent/k.pem: "},
      {{"--auth-token", "token"},
       "--auth-token=token: unknown token type \"token\" (simple or jwt)"},
      {{"--listen-client-urls", "https://127.0.0.1:2379"},
       "TLS key/cert (--cert-file, --key-file) must be provided for client "
       "url https://127.0.0.1:2379 with HTTPS scheme"},
      {{"--listen-peer-urls", "https://127.0.0.1:2380"},
       "cannot listen on TLS for 127.0.0.1:2380: KeyFile and CertFile are "
       "not presented"},
      {{"--listen-metrics-urls", "https://127.0.0.1:2381"},
       "must be provided for metrics url https://127.0.0.1:2381"},
      {{"--listen-client-urls", "ftp://127.0.0.1:2379"},
       "URL scheme must be http or https"},
      {{"--listen-metrics-urls", "unix://metrics:1"},
       "unix socket URLs are served for client and peer URLs only"},
      {{"--listen-client-urls", "unixs://etcd.unix:1"},
       "TLS key/cert (--cert-file, --key-file) must be provided for client "
       "url unixs://etcd.unix:1 with HTTPS scheme"},
      {{"--listen-peer-urls", "unixs://localhost:2380"},
       "cannot listen on TLS for unixs://localhost:2380: KeyFile and "
       "CertFile are not presented"},
      {{"--listen-peer-urls", "unix://"}, "unix socket URL without a path"},
      {{"--listen-client-urls", "unix://"}, "unix socket URL without a path"},
      {{"--listen-client-urls", "http://127.0.0.1"},
       "URL address does not have the form \"host:port\""},
      {{"--advertise-client-urls", "http://127.0.0.1:2379/x"},
       "URL must not contain a path"},
      {{"--log-outputs", "/var/log/etcd.log"},
       "only default and stderr are supported"},
      {{"--max-txn-ops", "0"}, "--max-txn-ops must be between"},
      {{"--no-such-flag"}, "unknown flag: --no-such-flag"},
      {{"positional"}, "'positional' is not a valid flag"},
  };
  for (const Case& c : cases) {
    auto o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.args.front();
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.message), std::string::npos)
        << c.args.front() << ": " << o.status();
  }
}

// etcd's unix://host:port (the socket file "host:port") and a path.
TEST(StoreFlagsTest, UnixSocketClientUrls) {
  auto o = Parse({"--listen-client-urls",
                  "unix://localhost:2379,unix:///run/kp.sock,http://"
                  "127.0.0.1:2379",
                  "--advertise-client-urls", "unix://localhost:2379"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->listen_client.size(), 3u);
  EXPECT_EQ(o->listen_client[0].scheme, "unix");
  EXPECT_EQ(o->listen_client[0].host, "localhost:2379");
  EXPECT_EQ(o->listen_client[1].host, "/run/kp.sock");
  EXPECT_EQ(o->listen_client[2].scheme, "http");
  EXPECT_EQ(o->cfg.client_urls,
            std::vector<std::string>{"unix://localhost:2379"});
}

// etcd 3.4 serves peers over unix sockets too (its integration suite's
// members talk over unix://localhost:<n>), and unixs:// with TLS.
TEST(StoreFlagsTest, UnixSocketPeerUrls) {
  auto o = Parse({"--listen-peer-urls", "unix://localhost:2380",
                  "--initial-advertise-peer-urls", "unix://localhost:2380",
                  "--initial-cluster", "default=unix://localhost:2380"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->listen_peer.size(), 1u);
  EXPECT_EQ(o->listen_peer[0].scheme, "unix");
  EXPECT_EQ(o->listen_peer[0].host, "localhost:2380");
  EXPECT_EQ(o->cfg.peer_urls,
            std::vector<std::string>{"unix://localhost:2380"});
  auto t = Parse({"--listen-peer-urls", "unixs:///run/kp-peer.sock",
                  "--peer-cert-file", "/p.crt", "--peer-key-file", "/p.key"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->listen_peer[0].scheme, "unixs");
  EXPECT_EQ(t->listen_peer[0].host, "/run/kp-peer.sock");
}

TEST(StoreFlagsTest, SeveralUrlsPerFlagAndPortZero) {
  auto o =
      Parse({"--listen-client-urls", "http://127.0.0.1:0,http://127.0.0.1:2379",
             "--listen-peer-urls", "http://127.0.0.1:0",
             "--listen-metrics-urls", "http://127.0.0.1:0"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->listen_client.size(), 2u);
  EXPECT_EQ(o->listen_client[0].port, 0);
  EXPECT_EQ(o->listen_client[1].port, 2379);
  EXPECT_EQ(o->listen_peer.size(), 1u);
  EXPECT_EQ(o->listen_metrics.size(), 1u);
  EXPECT_FALSE(o->advertise_client_given);
  auto a = Parse(
      {"--advertise-client-urls", "http://10.0.0.1:2379,http://10.0.0.2:2379"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->advertise_client_given);
  EXPECT_EQ(a->cfg.client_urls,
            (std::vector<std::string>{"http://10.0.0.1:2379",
                                      "http://10.0.0.2:2379"}));
}

// etcd parses its flags with Go's flag package: a flag given twice keeps
// its last value, URL lists included (URLsValue.Set replaces the list), so
// `--listen-client-urls a --listen-client-urls b` listens on b only.
TEST(StoreFlagsTest, RepeatedFlagsKeepTheLastValueAsEtcd) {
  auto o = Parse({"--listen-client-urls",
                  "http://127.0.0.1:0",
                  "--listen-peer-urls",
                  "http://127.0.0.1:0",
                  "--listen-metrics-urls",
                  "http://127.0.0.1:0",
                  "--advertise-client-urls",
                  "http://10.0.0.1:2379",
                  "--initial-advertise-peer-urls",
                  "http://10.0.0.1:2380",
                  "--log-outputs",
                  "stdout",
                  "--name",
                  "first",
                  "--snapshot-count",
                  "10",
                  "--pre-vote=false",
                  "--listen-client-urls",
                  "http://127.0.0.1:2379",
                  "--listen-peer-urls",
                  "http://127.0.0.1:2380",
                  "--listen-metrics-urls",
                  "http://127.0.0.1:2381",
                  "--advertise-client-urls",
                  "http://10.0.0.2:2379",
                  "--initial-advertise-peer-urls",
                  "http://10.0.0.2:2380",
                  "--log-outputs",
                  "stderr",
                  "--name",
                  "last",
                  "--snapshot-count",
                  "20",
                  "--pre-vote=true"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->listen_client.size(), 1u);
  EXPECT_EQ(o->listen_client[0].port, 2379);
  ASSERT_EQ(o->listen_peer.size(), 1u);
  EXPECT_EQ(o->listen_peer[0].port, 2380);
  ASSERT_EQ(o->listen_metrics.size(), 1u);
  EXPECT_EQ(o->listen_metrics[0].port, 2381);
  EXPECT_EQ(o->cfg.client_urls,
            std::vector<std::string>{"http://10.0.0.2:2379"});
  EXPECT_EQ(o->cfg.peer_urls, std::vector<std::string>{"http://10.0.0.2:2380"});
  EXPECT_EQ(o->cfg.name, "last");
  EXPECT_EQ(o->cfg.snapshot_count, 20u);
  EXPECT_TRUE(o->cfg.pre_vote);
}

TEST(StoreFlagsTest, ServedFlagsReachTheConfig) {
  auto o = Parse({"-name", "m2",  // Go's one-dash long flag
                  "--max-txn-ops", "256", "--heartbeat-interval", "50",
                  "--experimental-watch-progress-notify-interval", "2s",
                  "--experimental-compaction-batch-limit", "77",
                  "--max-concurrent-streams", "9", "--grpc-keepalive-interval",
                  "30s", "--debug", "--experimental-key-index=false"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cfg.name, "m2");
  EXPECT_FALSE(o->cfg.key_index);
  EXPECT_EQ(o->cfg.max_txn_ops, 256);
  EXPECT_EQ(o->cfg.heartbeat_interval, milliseconds(50));
  EXPECT_EQ(o->cfg.watch_progress_interval, seconds(2));
  EXPECT_EQ(o->cfg.compaction_batch_records, 77);
  EXPECT_EQ(o->max_concurrent_streams, 9u);
  EXPECT_EQ(o->grpc_keepalive_interval, seconds(30));
  EXPECT_EQ(o->log_level, "debug");
}

// kplane's bound on one client Watch stream's watchers: 10,000 (the gRPC
// proxy's) unless set, 0 for none, from a flag, the environment or the
// config file; a negative or non-numeric value is refused by name.
TEST(StoreFlagsTest, MaxWatchersPerStream) {
  auto d = Parse({});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->cfg.max_watchers_per_stream, 10000u);
  auto set = Parse({"--max-watchers-per-stream", "3"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->cfg.max_watchers_per_stream, 3u);
  auto none = Parse({"--max-watchers-per-stream=0"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->cfg.max_watchers_per_stream, 0u);
  auto env = Parse({}, {{"ETCD_MAX_WATCHERS_PER_STREAM", "5"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->cfg.max_watchers_per_stream, 5u);
  TempFile f("max-watchers-per-stream: 7\n");
  auto file = Parse({"--config-file", f.path()});
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->cfg.max_watchers_per_stream, 7u);

  auto negative = Parse({"--max-watchers-per-stream=-1"});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "--max-watchers-per-stream must not be negative (0: no cap)");
  auto word = Parse({"--max-watchers-per-stream=many"});
  ASSERT_FALSE(word.ok());
  EXPECT_EQ(word.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(word.status().message().find(
                "invalid integer \"many\" for --max-watchers-per-stream"),
            std::string::npos)
      << word.status();
}

TEST(StoreFlagsTest, EnvironmentFillsFlagsNotGiven) {
  EXPECT_EQ(StoreFlags::EnvName("initial-cluster-state"),
            "ETCD_INITIAL_CLUSTER_STATE");
  auto o = Parse({"--name", "cli"},
                 {{"ETCD_DATA_DIR", "/data/x"},
                  {"ETCD_HEARTBEAT_INTERVAL", "20"},
                  {"ETCD_LISTEN_CLIENT_URLS", "http://127.0.0.1:0"},
                  {"ETCD_UNHEARD_OF", "1"},
                  {"ETCDCTL_API", "3"},
                  {"PATH", "/bin"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cfg.name, "cli");
  EXPECT_EQ(o->cfg.data_dir, "/data/x");
  EXPECT_EQ(o->cfg.heartbeat_interval, milliseconds(20));
  EXPECT_EQ(o->listen_client.at(0).port, 0);
  ASSERT_EQ(o->warnings.size(), 1u);
  EXPECT_NE(o->warnings[0].find("unrecognized environment variable "
                                "ETCD_UNHEARD_OF"),
            std::string::npos);
  // A variable that repeats a command-line flag is an error, as in etcd.
  auto c = Parse({"--name", "cli"}, {{"ETCD_NAME", "env"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("conflicting environment variable "
                                      "\"ETCD_NAME\" is shadowed"),
            std::string::npos);
  // A bad value names the variable.
  auto b = Parse({}, {{"ETCD_SNAPSHOT_COUNT", "many"}});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("ETCD_SNAPSHOT_COUNT"),
            std::string::npos);
}

TEST(StoreFlagsTest, ConfigFileAsEtcdReadsIt) {
  TempFile f(R"(
name: from-file
data-dir: /data/file
listen-client-urls: http://127.0.0.1:0,http://127.0.0.1:0
listen-peer-urls: http://127.0.0.1:0
initial-cluster-state: new
heartbeat-interval: 50
election-timeout: 500
snapshot-count: 1234
experimental-corrupt-check-time: 60000000000
auto-compaction-mode: revision
auto-compaction-retention: "100"
pre-vote: false
enable-v2: false
client-transport-security:
  auto-tls: false
  cert-file:
peer-transport-security:
  client-cert-auth: false
log-outputs: [stderr]
a-key-etcd-does-not-have: 1
)");
  // The file replaces the command line's other flags and the environment.
  auto o = Parse({"--config-file", f.path(), "--snapshot-count", "5"},
                 {{"ETCD_NAME", "from-env"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->config_file, f.path());
  EXPECT_EQ(o->cfg.name, "from-file");
  EXPECT_EQ(o->cfg.data_dir, "/data/file");
  EXPECT_EQ(o->listen_client.size(), 2u);
  EXPECT_EQ(o->cfg.heartbeat_interval, milliseconds(50));  // ms in YAML
  EXPECT_EQ(o->cfg.election_timeout, milliseconds(500));
  EXPECT_EQ(o->cfg.corrupt_check_interval, minutes(1));  // ns in YAML
  EXPECT_EQ(o->cfg.snapshot_count, 1234u);
  EXPECT_EQ(o->cfg.auto_compaction.retention_revisions, 100);
  EXPECT_FALSE(o->cfg.pre_vote);
  bool warned = false;
  for (const std::string& w : o->warnings) {
    warned |= w.find("a-key-etcd-does-not-have") != std::string::npos;
  }
  EXPECT_TRUE(warned);

  // ETCD_CONFIG_FILE names it too.
  auto e = Parse({}, {{"ETCD_CONFIG_FILE", f.path()}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->cfg.name, "from-file");
}

// etcd's --auth-token=jwt,...: the key files are read and the provider
// reaches the config (storage/server/auth_token.h has the option's every
// error); simple, the default, leaves it null. The config file's key too.
TEST(StoreFlagsTest, AuthTokenJwtReadsTheKeys) {
  TempFile secret("a shared secret\n");
  auto o = Parse({"--auth-token", "jwt,priv-key=" + secret.path() +
                                      ",sign-method=HS256,ttl=90s"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_NE(o->cfg.auth_tokens, nullptr);
  EXPECT_TRUE(o->cfg.auth_tokens->can_assign());
  auto token = o->cfg.auth_tokens->Assign("alice", 3, WallTime{});
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(o->cfg.auth_tokens->Info(*token, WallTime{})->user, "alice");

  auto simple = Parse({});
  ASSERT_TRUE(simple.ok());
  EXPECT_EQ(simple->cfg.auth_tokens, nullptr);

  TempFile yml("auth-token: jwt,priv-key=" + secret.path() +
               ",sign-method=HS512\n");
  auto f = Parse({"--config-file", yml.path()});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_NE(f->cfg.auth_tokens, nullptr);
  auto env = Parse({}, {{"ETCD_AUTH_TOKEN", "jwt,sign-method=HS256"}});
  EXPECT_EQ(env.status().message(),
            "--auth-token=jwt,sign-method=HS256: HS256 needs priv-key, the "
            "file whose bytes are the shared secret");
}

TEST(StoreFlagsTest, ConfigFileErrorsNameTheKey) {
  TempFile tls("client-transport-security:\n  cert-file: server.crt\n");
  auto o = Parse({"--config-file", tls.path()});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("KeyFile and CertFile must both be"),
            std::string::npos)
      << o.status();
  TempFile bad("snapshot-count: [1, 2]\n");
  o = Parse({"--config-file", bad.path()});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("key \"snapshot-count\""),
            std::string::npos)
      << o.status();
  TempFile not_map("- a\n- b\n");
  o = Parse({"--config-file", not_map.path()});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not a YAML mapping"), std::string::npos)
      << o.status();
  o = Parse({"--config-file", "/nonexistent/etcd.yml"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("cannot read /nonexistent/etcd.yml"),
            std::string::npos);
}

// etcd's TLS flags: each side's files reach its MemberTlsFiles, https://
// URLs are accepted with them, and a trusted CA alone requires client
// certificates (etcd's TLSInfo.ServerConfig).
TEST(StoreFlagsTest, TlsFlagsAsEtcd) {
  auto o = Parse({"--listen-client-urls",
                  "https://127.0.0.1:0",
                  "--advertise-client-urls",
                  "https://127.0.0.1:2379",
                  "--listen-peer-urls",
                  "https://127.0.0.1:0",
                  "--initial-advertise-peer-urls",
                  "https://127.0.0.1:2380",
                  "--cert-file",
                  "s.crt",
                  "--key-file",
                  "s.key",
                  "--trusted-ca-file",
                  "ca.crt",
                  "--peer-cert-file",
                  "p.crt",
                  "--peer-key-file",
                  "p.key",
                  "--peer-trusted-ca-file",
                  "pca.crt",
                  "--peer-client-cert-auth",
                  "--client-crl-file",
                  "c.crl",
                  "--peer-crl-file",
                  "p.crl",
                  "--peer-cert-allowed-cn",
                  "example.com",
                  "--peer-cert-allowed-hostname",
                  "peer.example.com",
                  "--cipher-suites",
                  "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
                  "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client_tls.crl_file, "c.crl");
  EXPECT_EQ(o->peer_tls.crl_file, "p.crl");
  EXPECT_EQ(o->peer_tls.allowed_cn, "example.com");
  EXPECT_EQ(o->peer_tls.allowed_hostname, "peer.example.com");
  const std::vector<std::string> suites = {
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
      "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"};
  EXPECT_EQ(o->client_tls.cipher_suites, suites);
  EXPECT_EQ(o->peer_tls.cipher_suites, suites);
  EXPECT_EQ(o->listen_client[0].scheme, "https");
  EXPECT_EQ(o->listen_client[0].port, 0);
  EXPECT_EQ(o->listen_peer[0].scheme, "https");
  EXPECT_EQ(o->client_tls.cert_file, "s.crt");
  EXPECT_EQ(o->client_tls.key_file, "s.key");
  EXPECT_EQ(o->client_tls.trusted_ca_file, "ca.crt");
  EXPECT_FALSE(o->client_tls.client_cert_auth);
  EXPECT_TRUE(o->client_tls.requires_client_certs());  // as etcd
  EXPECT_EQ(o->peer_tls.cert_file, "p.crt");
  EXPECT_EQ(o->peer_tls.key_file, "p.key");
  EXPECT_EQ(o->peer_tls.trusted_ca_file, "pca.crt");
  EXPECT_TRUE(o->peer_tls.client_cert_auth);
  EXPECT_EQ(o->cfg.client_urls,
            std::vector<std::string>{"https://127.0.0.1:2379"});
  EXPECT_EQ(o->cfg.peer_urls,
            std::vector<std::string>{"https://127.0.0.1:2380"});

  // The same through ETCD_* and etcd's YAML sections.
  auto e = Parse({"--listen-client-urls", "https://127.0.0.1:0"},
                 {{"ETCD_CERT_FILE", "s.crt"},
                  {"ETCD_KEY_FILE", "s.key"},
                  {"ETCD_CLIENT_CERT_AUTH", "true"},
                  {"ETCD_TRUSTED_CA_FILE", "ca.crt"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->client_tls.client_cert_auth);
  EXPECT_EQ(e->client_tls.key_file, "s.key");
  TempFile f(R"(
listen-client-urls: https://127.0.0.1:0
listen-peer-urls: https://127.0.0.1:0
client-transport-security:
  cert-file: s.crt
  key-file: s.key
  client-cert-auth: true
  trusted-ca-file: ca.crt
peer-transport-security:
  cert-file: p.crt
  key-file: p.key
  trusted-ca-file: pca.crt
)");
  auto y = Parse({"--config-file", f.path()});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(y->client_tls.client_cert_auth);
  EXPECT_EQ(y->peer_tls.cert_file, "p.crt");
  EXPECT_EQ(y->peer_tls.trusted_ca_file, "pca.crt");
  EXPECT_TRUE(y->peer_tls.requires_client_certs());
}

// Certificates with http:// URLs are ignored for them, with etcd's warning.
TEST(StoreFlagsTest, TlsFilesWithHttpUrlsWarn) {
  auto o =
      Parse({"--cert-file", "s.crt", "--key-file", "s.key", "--peer-cert-file",
             "p.crt", "--peer-key-file", "p.key", "--peer-trusted-ca-file",
             "ca.crt", "--peer-client-cert-auth"});
  ASSERT_TRUE(o.ok()) << o.status();
  std::string all;
  for (const std::string& w : o->warnings) all += w + "\n";
  EXPECT_NE(all.find("The scheme of client url http://127.0.0.1:2379 is HTTP "
                     "while key/cert files are presented. Ignored key/cert "
                     "files."),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("The scheme of peer url http://127.0.0.1:2380 is HTTP "
                     "while peer key/cert files are presented."),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("client cert auth (--peer-client-cert-auth) is enabled"),
            std::string::npos)
      << all;
}

}  // namespace
}  // namespace kplane::cmd
