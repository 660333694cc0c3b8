#include "cmd/kplane/store_flags.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "base/file_system.h"
#include "base/strings.h"
#include "cmd/kplane/watch_limit_flag.h"
#include "net/http_server.h"
#include "objects/yaml.h"

extern char** environ;

namespace kplane::cmd {
namespace {

// How a config-file value of a flag is written in etcd's YAML (embed.Config's
// field types): durations are integers there, in the unit of the field.
enum class ConfigKind {
  kText,     // strings, numbers and booleans as the flag would take them
  kMillis,   // uint milliseconds (heartbeat-interval, election-timeout)
  kNanos,    // Go time.Duration: integer nanoseconds
  kSeconds,  // uint seconds (auth-token-ttl)
  kList,     // a YAML sequence (log-outputs) or a comma-separated string
};

// etcd 3.4's flags that have no counterpart in kplane, accepted at any value
// and named here with the reason (docs/store.md lists them).
struct NoOp {
  const char* name;
  const char* why;
};
constexpr NoOp kNoOps[] = {
    {"max-snapshots", "the store keeps one snapshot; older ones are removed"},
    {"max-wals", "WAL segments are released once a snapshot covers them"},
    {"backend-batch-interval", "each apply batch is one RocksDB write"},
    {"backend-batch-limit", "each apply batch is one RocksDB write"},
    {"initial-election-tick-advance",
     "raft's first election timeout is randomized as every other"},
    {"strict-reconfig-check",
     "always on: a voter is added or removed only if the voters then hold a "
     "quorum of started members; the peer-health check is not done"},
    {"experimental-backend-bbolt-freelist-type", "the backend is RocksDB"},
    {"experimental-warning-apply-duration", "slow applies are not logged"},
    {"experimental-enable-lease-checkpoint",
     "lease deadlines are not checkpointed (etcd 3.4's default)"},
    {"logger", "kplane has one logger"},
    {"log-package-levels", "kplane has one log level (--log-level)"},
    {"enable-pprof", "no Go runtime to profile"},
    {"metrics", "/metrics always has the same series"},
    {"cors", "no CORS headers are sent: browsers cannot read responses"},
    {"bcrypt-cost", "passwords are hashed with PBKDF2 (docs/store.md)"},
    {"discovery-fallback", "discovery is not supported"},
    {"proxy-failure-wait", "proxy mode is not supported"},
    {"proxy-refresh-interval", "proxy mode is not supported"},
    {"proxy-dial-timeout", "proxy mode is not supported"},
    {"proxy-write-timeout", "proxy mode is not supported"},
    {"proxy-read-timeout", "proxy mode is not supported"},
    {"experimental-peer-skip-client-san-verification",
     "a peer's client certificate is verified against the peer CA, never "
     "against the address it connects from"},
};

// etcd 3.4's flags whose non-default values kplane cannot honour: accepted at
// the default, refused with `why` otherwise.
struct Refused {
  const char* name;
  const char* fine;  // the accepted value ("" for strings, "false" for bools)
  const char* why;
};
constexpr Refused kRefused[] = {
    {"host-whitelist", "*",
     "Host checks come with the security work (issue #18)"},
    {"enable-v2", "false", "the v2 API is not served (etcd 3.4: deprecated)"},
    {"experimental-enable-v2v3", "", "the v2 API is not served"},
    {"proxy", "off", "proxy mode is not supported"},
    {"discovery", "", "discovery is not supported; use --initial-cluster"},
    {"discovery-srv", "", "discovery is not supported; use --initial-cluster"},
    {"discovery-srv-name", "",
     "discovery is not supported; use --initial-cluster"},
    {"discovery-proxy", "", "discovery is not supported"},
    {"force-new-cluster", "false",
     "not supported; to start over from one member's data, take `etcdctl "
     "snapshot save` and restore it"},
    {"wal-dir", "", "not supported: the WAL lives in <data-dir>/member/wal"},
    {"unsafe-no-fsync", "false", "kplane always fsyncs"},
};

// Config-file keys whose value is not the flag's text form.
const std::map<std::string, ConfigKind>& ConfigKinds() {
  static const auto* kinds = new std::map<std::string, ConfigKind>{
      {"heartbeat-interval", ConfigKind::kMillis},
      {"election-timeout", ConfigKind::kMillis},
      {"experimental-corrupt-check-time", ConfigKind::kNanos},
      {"grpc-keepalive-min-time", ConfigKind::kNanos},
      {"grpc-keepalive-interval", ConfigKind::kNanos},
      {"grpc-keepalive-timeout", ConfigKind::kNanos},
      {"backend-batch-interval", ConfigKind::kNanos},
      {"experimental-watch-progress-notify-interval", ConfigKind::kNanos},
      {"experimental-warning-apply-duration", ConfigKind::kNanos},
      {"auth-token-ttl", ConfigKind::kSeconds},
      {"log-outputs", ConfigKind::kList},
      {"cipher-suites", ConfigKind::kList},
  };
  return *kinds;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// etcd's rules for TLS on the URLs (embed/etcd.go, pkg/transport): an
// https:// URL needs the side's certificate and key; certificates given
// with http:// URLs are ignored for those URLs, with etcd's warning.
Status CheckTlsSide(const storage::MemberTlsFiles& files,
                    const std::vector<net::Url>& listen, bool peer,
                    std::vector<std::string>* warnings) {
  const std::string p = peer ? "peer-" : "";
  const char* side = peer ? "peer" : "client";
  if (!files.empty() && (files.cert_file.empty() || files.key_file.empty())) {
    return InvalidArgumentError(
        "--" + p + "cert-file and --" + p +
        "key-file must both be given: KeyFile and CertFile must both be "
        "present[key: " +
        files.key_file + ", cert: " + files.cert_file + "]");
  }
  if (files.client_cert_auth && files.trusted_ca_file.empty()) {
    return InvalidArgumentError("--" + p + "client-cert-auth needs --" + p +
                                "trusted-ca-file (the CA that signs the " +
                                side + " certificates)");
  }
  for (const net::Url& u : listen) {
    if (u.scheme == "https" || u.scheme == "unixs") {
      if (files.empty()) {
        const std::string where =
            u.scheme == "unixs" ? "unixs://" + u.host : u.HostPort();
        if (peer) {
          return InvalidArgumentError("cannot listen on TLS for " + where +
                                      ": KeyFile and CertFile are not "
                                      "presented (--peer-cert-file, "
                                      "--peer-key-file)");
        }
        return InvalidArgumentError(
            "TLS key/cert (--cert-file, --key-file) must be provided for "
            "client url " +
            (u.scheme == "unixs" ? where : "https://" + where) +
            " with HTTPS scheme");
      }
    } else if (u.scheme == "http") {
      const std::string url = "http://" + u.HostPort();
      if (!files.empty()) {
        warnings->push_back("The scheme of " + std::string(side) + " url " +
                            url + " is HTTP while " + (peer ? "peer " : "") +
                            "key/cert files are presented. Ignored " +
                            (peer ? "peer " : "") + "key/cert files.");
      }
      if (files.client_cert_auth) {
        warnings->push_back("The scheme of " + std::string(side) + " url " +
                            url + " is HTTP while client cert auth (--" + p +
                            "client-cert-auth) is enabled. Ignored client "
                            "cert auth for this url.");
      }
    }
  }
  return Status::Ok();
}

// One side's TLS flags as etcd declares them: --cert-file, --key-file,
// --client-cert-auth and --trusted-ca-file, with `prefix` "" for the client
// URLs and "peer-" for the peer URLs. ETCD_* variables and the config
// file's {client,peer}-transport-security keys reach them by these names.
void DeclareTlsSideFlags(FlagSet& f, const std::string& prefix,
                         storage::MemberTlsFiles* files) {
  const bool peer = prefix == "peer-";
  const std::string side = peer ? "peer" : "client";
  f.String(prefix + "cert-file", &files->cert_file,
           "Path to the " + side + " server TLS cert file (" +
               (peer ? "served on https:// peer URLs and presented to other "
                       "members"
                     : "needed by https:// client URLs") +
               ").");
  f.String(prefix + "key-file", &files->key_file,
           "Path to the " + side + " server TLS key file.");
  f.Bool(prefix + "client-cert-auth", &files->client_cert_auth,
         std::string("Enable ") + (peer ? "peer " : "") +
             "client cert authentication: " + (peer ? "members" : "clients") +
             " must present a certificate signed by --" + prefix +
             "trusted-ca-file.");
  f.String(prefix + "trusted-ca-file", &files->trusted_ca_file,
           peer ? "Path to the peer server TLS trusted CA file (verifies the "
                  "other members; as in etcd, setting it requires their "
                  "certificates)."
                : "Path to the client server TLS trusted CA cert file (as in "
                  "etcd, setting it requires client certificates signed by "
                  "it).");
  f.String((peer ? "peer-" : "client-") + std::string("crl-file"),
           &files->crl_file,
           "Path to the " + side +
               " certificate revocation list file (PEM or DER): " +
               (peer ? "members" : "clients") +
               " whose certificate chain holds a serial number it lists are "
               "refused (its signature and dates are not checked, as etcd's).");
  if (peer) {
    f.String("peer-cert-allowed-cn", &files->allowed_cn,
             "Allowed CN for inter peer authentication: other members' "
             "certificates must have exactly this subject CommonName (needs "
             "--peer-client-cert-auth).");
  }
  f.String(prefix + (peer ? "" : "client-") + "cert-allowed-hostname",
           &files->allowed_hostname,
           std::string("Allowed TLS hostname for ") +
               (peer ? "inter peer" : "client") +
               " authentication: certificates must be valid for this name "
               "(needs --" +
               prefix + "client-cert-auth).");
}

}  // namespace

StatusOr<net::Url> ListenUrl(const std::string& text, const char* flag,
                             bool unix_ok) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError(std::string("--") + flag + ": " + why + ": " +
                                text);
  };
  const bool unixs = text.starts_with("unixs://");
  if (unixs || text.starts_with("unix://")) {
    if (!unix_ok) {
      return bad(
          "unix socket URLs are served for client and peer URLs only; use "
          "http://");
    }
    net::Url u;
    u.scheme = unixs ? "unixs" : "unix";
    u.host = text.substr(unixs ? 8 : 7);
    if (u.host.empty()) return bad("unix socket URL without a path");
    return u;
  }
  const bool https = text.starts_with("https://");
  if (!https && !text.starts_with("http://")) {
    return bad("URL scheme must be http or https");
  }
  const size_t scheme_len = https ? 8 : 7;
  std::string_view authority = std::string_view(text).substr(scheme_len);
  authority = authority.substr(0, authority.find('/'));
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos ||
      authority.find(']', colon) != std::string_view::npos) {
    return bad("URL address does not have the form \"host:port\"");
  }
  // Port 0 (a listener picks a free port) is no port to connect to, so
  // net::ParseUrl refuses it: parse the rest with a stand-in.
  const bool any_port = authority.substr(colon + 1) == "0";
  std::string parse_text = text;
  if (any_port) parse_text.replace(scheme_len + colon + 1, 1, "1");
  auto u = net::ParseUrl(parse_text, net::UrlSchemes::kHttpOrHttps);
  if (!u.ok()) return u.status().Annotate(std::string("--") + flag);
  if (any_port) u->port = 0;
  if (u->path != "/" && !u->path.empty()) {
    return bad("URL must not contain a path");
  }
  return u;
}

struct StoreFlags::State {
  FlagSet flags{"kplane store",
                "Runs one member of kplane's replicated store (our etcd). "
                "The flags are etcd 3.4's (also as ETCD_* environment "
                "variables, or etcd's YAML --config-file); see docs/store.md "
                "for the few it accepts without effect or refuses."};
  StoreOptions o;
  std::string data_dir;
  std::vector<std::string> listen_client = {"http://127.0.0.1:2379"};
  std::vector<std::string> advertise_client;
  std::vector<std::string> listen_peer = {"http://127.0.0.1:2380"};
  std::vector<std::string> advertise_peer;
  std::vector<std::string> listen_metrics;
  std::string auto_mode;
  std::string auto_retention = "0";
  int64_t quota = 0;
  int64_t max_request = 0;
  int64_t max_txn_ops = 128;
  int64_t compaction_batch = 1000;
  int64_t snapshot_count = 0;
  int64_t catchup_entries = 0;
  int64_t max_connections = 0;
  int64_t max_concurrent_streams = 0;
  int64_t max_watchers_per_stream = 0;
  bool debug = false;
  bool client_auto_tls = false;
  bool peer_auto_tls = false;
  std::vector<std::string> cipher_suites;
  std::string config_file;
  std::string auth_token = "simple";
  std::vector<std::string> log_outputs = {"default"};
  // Values of the no-op and refused flags (kept as text).
  std::map<std::string, std::string> other;
  std::map<std::string, bool> other_bool;
};

StoreFlags::StoreFlags() : st_(std::make_unique<State>()) {
  State& s = *st_;
  FlagSet& f = s.flags;
  storage::StoreConfig& cfg = s.o.cfg;
  s.quota = cfg.quota_backend_bytes;
  s.max_request = cfg.max_request_bytes;
  s.snapshot_count = static_cast<int64_t>(cfg.snapshot_count);
  s.catchup_entries = static_cast<int64_t>(cfg.snapshot_catch_up_entries);
  s.max_connections =
      static_cast<int64_t>(net::HttpServerOptions{}.max_connections);
  s.o.body_timeout = net::HttpServerOptions{}.body_timeout;
  s.max_watchers_per_stream = static_cast<int64_t>(cfg.max_watchers_per_stream);

  // ---- member --------------------------------------------------------------
  f.String("name", &cfg.name, "Human-readable name for this member.");
  f.String("data-dir", &s.data_dir,
           "Path to the data directory (default <name>.etcd).");
  f.Int64("snapshot-count", &s.snapshot_count,
          "Applied entries between snapshots (then the log is truncated).");
  f.Duration("heartbeat-interval", &cfg.heartbeat_interval,
             "Time between leader heartbeats (bare number: ms).",
             milliseconds(1));
  f.Duration("election-timeout", &cfg.election_timeout,
             "Time without a leader before an election (bare number: ms).",
             milliseconds(1));
  f.StringListLastWins(
      "listen-peer-urls", &s.listen_peer,
      "URLs to listen on for peer traffic (http://host:port, port "
      "0 picks one; https:// with the --peer-* TLS files; unix://<path> "
      "and unixs://<path> for a unix socket, plain or TLS).");
  f.StringListLastWins(
      "listen-client-urls", &s.listen_client,
      "URLs to listen on for client traffic: gRPC and the JSON "
      "gateway on each (port 0 picks one).");
  f.StringListLastWins("listen-metrics-urls", &s.listen_metrics,
                       "Extra URLs that serve only /metrics and /health.");
  f.Int64("quota-backend-bytes", &s.quota,
          "Database size that raises the NOSPACE alarm.");
  f.Int64("max-txn-ops", &s.max_txn_ops, "Most operations in one transaction.");
  f.Duration("experimental-watch-progress-notify-interval",
             &cfg.watch_progress_interval,
             "How often a watch with progress_notify hears the current "
             "revision when it had no event.");
  f.Int64("experimental-compaction-batch-limit", &s.compaction_batch,
          "Records compaction deletes per write batch.");
  f.Bool("experimental-key-index", &cfg.key_index,
         "Keep every key's revisions in memory (etcd's tree index): puts "
         "read no previous version, counts and paged ranges scan no "
         "history. false: read them from the database (comparisons).");
  f.Int64("max-request-bytes", &s.max_request,
          "Largest client request accepted.");
  f.Int64("max-concurrent-streams", &s.max_concurrent_streams,
          "Most concurrent gRPC streams per client connection (0: "
          "gRPC's default).");
  f.Duration("grpc-keepalive-min-time", &s.o.grpc_keepalive_min_time,
             "Shortest interval a client may ping the server at (0: gRPC's "
             "default).");
  f.Duration("grpc-keepalive-interval", &s.o.grpc_keepalive_interval,
             "How often the server pings an idle connection (0: gRPC's "
             "default).");
  f.Duration("grpc-keepalive-timeout", &s.o.grpc_keepalive_timeout,
             "How long the server waits for a ping's answer (0: gRPC's "
             "default).");

  // ---- clustering ----------------------------------------------------------
  f.StringListLastWins("initial-advertise-peer-urls", &s.advertise_peer,
                       "This member's peer URLs to advertise to the cluster "
                       "(default: the listen URLs).");
  f.String("initial-cluster", &cfg.initial_cluster,
           "Initial cluster configuration for bootstrapping "
           "(name=peerURL,...; default <name>=<advertised peer URLs>).");
  f.String("initial-cluster-state", &cfg.initial_cluster_state,
           "\"new\" to bootstrap a cluster, \"existing\" to join one "
           "(after `member add`).");
  f.String("initial-cluster-token", &cfg.initial_cluster_token,
           "Initial cluster token, mixed into member ids.");
  f.StringListLastWins("advertise-client-urls", &s.advertise_client,
                       "Client URLs to advertise to the rest of the cluster "
                       "(default: the listen URLs).");
  f.Bool("pre-vote", &cfg.pre_vote,
         "Run raft's pre-vote round before an election.");
  f.String("auto-compaction-mode", &s.auto_mode,
           "\"periodic\" (keep a time window) or \"revision\" (keep the "
           "last N revisions); empty: off.");
  f.String("auto-compaction-retention", &s.auto_retention,
           "periodic: a duration (\"1h\", \"30m\"; a bare number is "
           "hours); revision: a number of revisions.");
  f.Duration("experimental-corrupt-check-time", &cfg.corrupt_check_interval,
             "How often the leader compares members' hashes (0: off).");
  f.Bool("experimental-initial-corrupt-check", &s.o.initial_corrupt_check,
         "Before serving, compare this member's hash with its peers' and "
         "refuse to start if a quorum disagrees with it.");
  f.Int64("experimental-snapshot-catchup-entries", &s.catchup_entries,
          "Entries kept behind a snapshot for slow followers (etcd 3.5's "
          "flag).");

  // ---- logging -------------------------------------------------------------
  f.String("log-level", &s.o.log_level, "debug, info, warn or error.");
  f.Bool("debug", &s.debug, "Same as --log-level=debug (deprecated in etcd).");
  f.StringListLastWins("log-outputs", &s.log_outputs,
                       "Where logs go: default, stderr or stdout.");
  f.String("config-file", &s.config_file,
           "etcd's YAML configuration file; when given, the other flags and "
           "ETCD_* variables are ignored, as in etcd.");

  // ---- kplane's own --------------------------------------------------------
  f.Int64("max-connections", &s.max_connections,
          "Client connections open at once; more are answered 503 and closed "
          "(0: no cap).");
  f.Int64("max-watchers-per-stream", &s.max_watchers_per_stream,
          std::string(kMaxWatchersPerStreamHelp) +
              " Both protocols: gRPC Watch and /v3/watch.");
  f.String("auth-token", &s.auth_token,
           "Specify auth token type and its options: simple, or "
           "jwt,pub-key=<path>,priv-key=<path>,sign-method=<RS256|RS384|"
           "RS512|PS256|PS384|PS512|ES256|ES384|ES512|HS256|HS384|HS512>,"
           "ttl=<duration> (docs/store.md, \"Auth\").");
  f.Duration("auth-token-ttl", &cfg.auth_token_ttl,
             "How long a simple auth token stays valid after its last use "
             "(bare number: seconds).",
             seconds(1));
  f.Duration("request-body-timeout", &s.o.body_timeout,
             "A client request's body must arrive within this time of its "
             "head, or 408 (0: none; watch and lease keepalive streams have "
             "none).");

  // ---- accepted without effect, and refused unless at the default ----------
  auto text_flag = [&](const std::string& name, const std::string& help,
                       const std::string& def) {
    s.other[name] = def;
    f.String(name, &s.other[name], help);
  };
  auto bool_flag = [&](const std::string& name, const std::string& help,
                       bool def) {
    s.other_bool[name] = def;
    f.Bool(name, &s.other_bool[name], help);
  };
  const std::set<std::string> bools = {
      "experimental-peer-skip-client-san-verification",
      "enable-v2",
      "force-new-cluster",
      "unsafe-no-fsync",
      "strict-reconfig-check",
      "initial-election-tick-advance",
      "experimental-enable-lease-checkpoint",
      "enable-pprof"};
  const std::map<std::string, std::string> defaults = {
      {"max-snapshots", "5"},
      {"max-wals", "5"},
      {"backend-batch-interval", "0"},
      {"backend-batch-limit", "0"},
      {"experimental-backend-bbolt-freelist-type", "map"},
      {"experimental-warning-apply-duration", "100ms"},
      {"logger", "capnslog"},
      {"metrics", "basic"},
      {"bcrypt-cost", "10"},
      {"discovery-fallback", "proxy"},
      {"proxy-failure-wait", "5000"},
      {"proxy-refresh-interval", "30000"},
      {"proxy-dial-timeout", "1000"},
      {"proxy-write-timeout", "5000"},
      {"proxy-read-timeout", "0"}};
  const std::set<std::string> default_true = {"strict-reconfig-check",
                                              "initial-election-tick-advance"};
  // ---- security (etcd's flags and help texts) -------------------------------
  DeclareTlsSideFlags(f, "", &s.o.client_tls);
  DeclareTlsSideFlags(f, "peer-", &s.o.peer_tls);
  f.Bool("auto-tls", &s.client_auto_tls,
         "Client TLS using generated certificates (under "
         "<data-dir>/fixtures/client; ignored when --cert-file/--key-file "
         "are given; clients cannot verify them: --insecure-skip-tls-verify).");
  f.Bool("peer-auto-tls", &s.peer_auto_tls,
         "Peer TLS using generated certificates (under "
         "<data-dir>/fixtures/peer; ignored when --peer-cert-file/"
         "--peer-key-file are given): encrypted, but members do not verify "
         "each other's certificates.");

  f.StringListLastWins(
      "cipher-suites", &s.cipher_suites,
      "Comma-separated list of supported TLS 1.2 cipher suites between "
      "client/server and peers, by Go's names "
      "(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,...; empty: OpenSSL's defaults "
      "at security level 2). TLS 1.3's suites are not configurable, as in "
      "etcd.");

  for (const NoOp& n : kNoOps) {
    std::string help =
        std::string("etcd's flag, accepted without effect: ") + n.why + ".";
    if (bools.count(n.name)) {
      bool_flag(n.name, help, default_true.count(n.name) > 0);
    } else {
      auto it = defaults.find(n.name);
      text_flag(n.name, help, it == defaults.end() ? "" : it->second);
    }
  }
  for (const Refused& r : kRefused) {
    std::string help = std::string("etcd's flag; only \"") + r.fine +
                       "\" is accepted: " + r.why + ".";
    if (bools.count(r.name)) {
      bool_flag(r.name, help, false);
    } else {
      text_flag(r.name, help, r.fine);
    }
  }
}

StoreFlags::~StoreFlags() = default;

bool StoreFlags::help_requested() const { return st_->flags.help_requested(); }
std::string StoreFlags::Usage() const { return st_->flags.Usage(); }
std::vector<std::string> StoreFlags::FlagNames() const {
  return st_->flags.Names();
}

std::string StoreFlags::EnvName(const std::string& flag) {
  std::string env = "ETCD_";
  for (char c : flag) {
    env += c == '-'
               ? '_'
               : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return env;
}

StatusOr<StoreOptions> StoreFlags::Parse(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env) {
  State& s = *st_;
  FlagSet& f = s.flags;
  RETURN_IF_ERROR(f.Parse(args));
  if (f.help_requested()) return s.o;
  if (!f.args().empty()) {
    return InvalidArgumentError("'" + f.args().front() +
                                "' is not a valid flag");
  }
  if (s.config_file.empty()) {
    if (auto it = env.find("ETCD_CONFIG_FILE");
        it != env.end() && !it->second.empty()) {
      s.config_file = it->second;
    }
  }
  if (!s.config_file.empty()) {
    RETURN_IF_ERROR(LoadConfigFile(s.config_file, &s.o));
    s.o.config_file = s.config_file;
    return Finish(s.o);
  }
  // etcd's pkg/flags.SetFlagsFromEnv: ETCD_<FLAG> fills a flag not given on
  // the command line; one that is given must not also be in the
  // environment; other ETCD_* variables are warned about.
  std::set<std::string> used;
  std::set<std::string> on_command_line;
  for (const std::string& name : f.Names()) {
    const std::string key = EnvName(name);
    auto it = env.find(key);
    if (f.IsSet(name)) {
      on_command_line.insert(key);
      continue;
    }
    if (it == env.end() || it->second.empty()) continue;
    used.insert(key);
    if (Status st = f.Set(name, it->second); !st.ok()) {
      return InvalidArgumentError("invalid value \"" + it->second + "\" for " +
                                  key + ": " + st.message());
    }
  }
  for (const auto& [key, value] : env) {
    if (used.count(key) || !key.starts_with("ETCD_")) continue;
    if (on_command_line.count(key)) {
      return InvalidArgumentError(
          "conflicting environment variable \"" + key +
          "\" is shadowed by corresponding command-line flag (either unset "
          "environment variable or disable flag)");
    }
    // Variables of etcdctl and the e2e tooling are common in an etcd
    // user's environment; etcd warns about them too.
    s.o.warnings.push_back("unrecognized environment variable " + key + "=" +
                           value);
  }
  return Finish(s.o);
}

Status StoreFlags::LoadConfigFile(const std::string& path, StoreOptions* o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgumentError("--config-file: cannot read " + path);
  }
  std::stringstream buf;
  buf << in.rdbuf();
  auto doc = objects::ParseYamlDocument(buf.str());
  if (!doc.ok()) {
    return InvalidArgumentError("--config-file " + path + ": " +
                                std::string(doc.status().message()));
  }
  if (!doc->IsObject()) {
    return InvalidArgumentError("--config-file " + path +
                                ": not a YAML mapping");
  }
  FlagSet& f = st_->flags;
  auto scalar_text =
      [](const rapidjson::Value& v) -> std::optional<std::string> {
    if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
    if (v.IsBool()) return std::string(v.GetBool() ? "true" : "false");
    if (v.IsInt64()) return std::to_string(v.GetInt64());
    if (v.IsUint64()) return std::to_string(v.GetUint64());
    if (v.IsNull()) return std::string();
    return std::nullopt;
  };
  std::function<Status(const std::string&, const rapidjson::Value&)> set_key;
  set_key = [&](const std::string& key, const rapidjson::Value& v) -> Status {
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError("--config-file " + path + ": key \"" + key +
                                  "\": " + why);
    };
    if (key == "client-transport-security" ||
        key == "peer-transport-security") {
      // etcd's securityConfig: {cert-file, key-file, client-cert-auth,
      // trusted-ca-file, auto-tls}, the flags' names with "peer-" for peers.
      if (v.IsNull()) return Status::Ok();
      if (!v.IsObject()) return bad("must be a mapping");
      const std::string prefix =
          key == "peer-transport-security" ? "peer-" : "";
      for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
        std::string sub(m->name.GetString(), m->name.GetStringLength());
        // crl-file is the one whose client flag has a prefix too.
        const std::string flag = sub == "crl-file" && prefix.empty()
                                     ? "client-crl-file"
                                     : prefix + sub;
        if (!f.Has(flag)) {
          o->warnings.push_back("--config-file: unknown key " + key + "." +
                                sub + " ignored");
          continue;
        }
        RETURN_IF_ERROR(set_key(flag, m->value));
      }
      return Status::Ok();
    }
    if (!f.Has(key) || key == "config-file") {
      // Go's YAML decoding into etcd's Config ignores unknown keys.
      o->warnings.push_back("--config-file: unknown key \"" + key +
                            "\" ignored");
      return Status::Ok();
    }
    auto kind_it = ConfigKinds().find(key);
    const ConfigKind kind =
        kind_it == ConfigKinds().end() ? ConfigKind::kText : kind_it->second;
    std::string text;
    if (kind == ConfigKind::kList && v.IsArray()) {
      std::vector<std::string> parts;
      for (const auto& item : v.GetArray()) {
        auto t = scalar_text(item);
        if (!t) return bad("list items must be strings");
        parts.push_back(*t);
      }
      text = StrJoin(parts, ",");
    } else {
      auto t = scalar_text(v);
      if (!t) return bad("must be a string, number or boolean");
      text = *t;
      if (v.IsNumber()) {
        switch (kind) {
          case ConfigKind::kMillis:
            text += "ms";
            break;
          case ConfigKind::kNanos:
            text += "ns";
            break;
          case ConfigKind::kSeconds:
            text += "s";
            break;
          default:
            break;
        }
      }
    }
    if (text.empty() && !v.IsString()) return Status::Ok();  // null
    if (Status st = f.Set(key, text); !st.ok()) {
      return bad(std::string(st.message()));
    }
    return Status::Ok();
  };
  for (auto m = doc->MemberBegin(); m != doc->MemberEnd(); ++m) {
    RETURN_IF_ERROR(set_key(
        std::string(m->name.GetString(), m->name.GetStringLength()), m->value));
  }
  return Status::Ok();
}

StatusOr<StoreOptions> StoreFlags::Finish(StoreOptions o) {
  State& s = *st_;
  FlagSet& f = s.flags;
  storage::StoreConfig& cfg = o.cfg;
  for (const Refused& r : kRefused) {
    std::string value = s.other_bool.count(r.name)
                            ? (s.other_bool[r.name] ? "true" : "false")
                            : s.other[r.name];
    if (value != r.fine) {
      return InvalidArgumentError(std::string("--") + r.name + "=" + value +
                                  ": " + r.why);
    }
  }
  for (const NoOp& n : kNoOps) {
    if (f.IsSet(n.name)) {
      o.warnings.push_back(std::string("--") + n.name +
                           " has no effect in kplane: " + n.why);
    }
  }
  if (s.debug) o.log_level = "debug";
  if (o.log_level == "warn") o.log_level = "warning";
  for (const std::string& out : s.log_outputs) {
    if (out != "default" && out != "stderr") {
      return InvalidArgumentError("--log-outputs=" + out +
                                  ": only default and stderr are supported");
    }
  }
  if (s.max_connections < 0) {
    return InvalidArgumentError("--max-connections must not be negative");
  }
  o.max_connections = static_cast<size_t>(s.max_connections);
  if (o.body_timeout < Duration::zero()) {
    return InvalidArgumentError("--request-body-timeout must not be negative");
  }
  if (s.max_concurrent_streams < 0 ||
      s.max_concurrent_streams > int64_t{0xffffffff}) {
    return InvalidArgumentError(
        "--max-concurrent-streams must be between 0 and 2^32-1");
  }
  o.max_concurrent_streams = static_cast<uint32_t>(s.max_concurrent_streams);
  ASSIGN_OR_RETURN(cfg.max_watchers_per_stream,
                   MaxWatchersPerStreamFromFlag(s.max_watchers_per_stream));
  for (Duration d : {o.grpc_keepalive_min_time, o.grpc_keepalive_interval,
                     o.grpc_keepalive_timeout}) {
    if (d < Duration::zero()) {
      return InvalidArgumentError("--grpc-keepalive-* must not be negative");
    }
  }
  cfg.data_dir = s.data_dir.empty() ? cfg.name + ".etcd" : s.data_dir;
  cfg.quota_backend_bytes = s.quota;
  cfg.max_request_bytes = s.max_request;
  if (s.max_txn_ops <= 0 || s.max_txn_ops > int64_t{1} << 20) {
    return InvalidArgumentError("--max-txn-ops must be between 1 and 2^20");
  }
  cfg.max_txn_ops = static_cast<int>(s.max_txn_ops);
  if (s.compaction_batch <= 0 || s.compaction_batch > int64_t{1} << 24) {
    return InvalidArgumentError(
        "--experimental-compaction-batch-limit must be between 1 and 2^24");
  }
  cfg.compaction_batch_records = static_cast<int>(s.compaction_batch);
  if (cfg.watch_progress_interval <= Duration::zero()) {
    return InvalidArgumentError(
        "--experimental-watch-progress-notify-interval must be positive");
  }
  if (cfg.auth_token_ttl <= Duration::zero()) {
    return InvalidArgumentError("--auth-token-ttl must be positive");
  }
  // Read at start-up, as etcd's NewTokenProvider: a bad option or key file
  // stops the member before it serves.
  StatusOr<std::shared_ptr<const storage::TokenProvider>> tokens =
      storage::ParseAuthTokenOption(s.auth_token, [](const std::string& path) {
        return ReadFile(FileSystem::Default(), path);
      });
  if (!tokens.ok()) return tokens.status();
  cfg.auth_tokens = std::move(*tokens);
  if (s.snapshot_count <= 0) {
    return InvalidArgumentError("--snapshot-count must be positive");
  }
  cfg.snapshot_count = static_cast<uint64_t>(s.snapshot_count);
  if (s.catchup_entries < 0) {
    return InvalidArgumentError(
        "--experimental-snapshot-catchup-entries must not be negative");
  }
  cfg.snapshot_catch_up_entries = static_cast<uint64_t>(s.catchup_entries);
  if (!s.auto_mode.empty()) {
    if (s.auto_mode == "revision") {
      auto n = ParseInt64(s.auto_retention);
      if (!n || *n <= 0) {
        return InvalidArgumentError(
            "--auto-compaction-retention must be a positive number of "
            "revisions in revision mode");
      }
      cfg.auto_compaction.mode = mvcc::AutoCompactionMode::kRevision;
      cfg.auto_compaction.retention_revisions = *n;
    } else if (s.auto_mode == "periodic") {
      Duration d;
      if (auto n = ParseInt64(s.auto_retention)) {
        d = hours(*n);
      } else if (auto g = ParseGoDuration(s.auto_retention)) {
        d = nanoseconds(*g);
      } else {
        return InvalidArgumentError(
            "--auto-compaction-retention: not a duration: " + s.auto_retention);
      }
      if (d <= Duration(0)) {
        return InvalidArgumentError(
            "--auto-compaction-retention must be positive");
      }
      cfg.auto_compaction.mode = mvcc::AutoCompactionMode::kPeriodic;
      cfg.auto_compaction.retention_period = d;
    } else {
      return InvalidArgumentError(
          "--auto-compaction-mode must be \"periodic\" or \"revision\"");
    }
  }
  auto listen = [](const std::vector<std::string>& urls, const char* flag,
                   bool required, std::vector<net::Url>* out,
                   bool unix_ok = false) -> Status {
    if (urls.empty() && required) {
      return InvalidArgumentError(std::string("--") + flag +
                                  " needs at least one URL");
    }
    for (const std::string& u : urls) {
      auto parsed = ListenUrl(Trim(u), flag, unix_ok);
      if (!parsed.ok()) return parsed.status();
      out->push_back(*parsed);
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(listen(s.listen_client, "listen-client-urls", true,
                         &o.listen_client,
                         /*unix_ok=*/true));
  RETURN_IF_ERROR(listen(s.listen_peer, "listen-peer-urls", true,
                         &o.listen_peer, /*unix_ok=*/true));
  RETURN_IF_ERROR(listen(s.listen_metrics, "listen-metrics-urls", false,
                         &o.listen_metrics));
  std::vector<net::Url> ignored;
  RETURN_IF_ERROR(listen(s.advertise_client, "advertise-client-urls", false,
                         &ignored,
                         /*unix_ok=*/true));
  RETURN_IF_ERROR(listen(s.advertise_peer, "initial-advertise-peer-urls", false,
                         &ignored, /*unix_ok=*/true));
  // etcd's --auto-tls / --peer-auto-tls (embed.Config.ClientSelfCert,
  // PeerSelfCert): a pair generated at start under <data-dir>/fixtures/,
  // for the listen URLs' hosts; files given win, with etcd's warning.
  auto self_cert = [&](bool on, const char* side,
                       const std::vector<net::Url>& urls,
                       storage::MemberTlsFiles* files) {
    if (!on) return;
    if (!files->empty()) {
      o.warnings.push_back(std::string("ignoring ") + side +
                           " auto TLS since certs given");
      return;
    }
    const std::string dir = cfg.data_dir + "/fixtures/" + side;
    files->cert_file = dir + "/cert.crt";
    files->key_file = dir + "/cert.key";
    files->self_signed = true;
    // A unix socket's certificate names "localhost" (the name its clients
    // verify, net/http_client.h).
    for (const net::Url& u : urls) {
      files->self_signed_hosts.push_back(
          u.scheme == "unix" || u.scheme == "unixs" ? "localhost" : u.host);
    }
  };
  o.client_tls.cipher_suites = s.cipher_suites;
  o.peer_tls.cipher_suites = s.cipher_suites;
  self_cert(s.client_auto_tls, "client", o.listen_client, &o.client_tls);
  self_cert(s.peer_auto_tls, "peer", o.listen_peer, &o.peer_tls);
  RETURN_IF_ERROR(
      CheckTlsSide(o.client_tls, o.listen_client, /*peer=*/false, &o.warnings));
  RETURN_IF_ERROR(
      CheckTlsSide(o.peer_tls, o.listen_peer, /*peer=*/true, &o.warnings));
  for (const net::Url& u : o.listen_metrics) {
    if (u.scheme == "https" && o.client_tls.empty()) {
      return InvalidArgumentError(
          "TLS key/cert (--cert-file, --key-file) must be provided for "
          "metrics url https://" +
          u.HostPort() + " with HTTPS scheme");
    }
  }
  o.advertise_client_given = !s.advertise_client.empty();
  o.advertise_peer_given = !s.advertise_peer.empty();
  cfg.client_urls =
      o.advertise_client_given ? s.advertise_client : s.listen_client;
  cfg.peer_urls = o.advertise_peer_given ? s.advertise_peer : s.listen_peer;
  // etcd keeps a member's URLs sorted (types.NewURLs); `member list` shows
  // them in that order.
  for (auto* urls : {&cfg.client_urls, &cfg.peer_urls}) {
    for (auto& u : *urls) u = Trim(u);
    std::sort(urls->begin(), urls->end());
  }
  return o;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

}  // namespace kplane::cmd
