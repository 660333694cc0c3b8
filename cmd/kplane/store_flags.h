// StoreFlags: `kplane store`'s command line, which is etcd 3.4's: every flag
// `etcd --help` lists is accepted with etcd's meaning, from the command line,
// from ETCD_* environment variables (flags not given on the command line) or
// from etcd's YAML --config-file (which then replaces both, as in etcd), so a
// tool that starts etcd can start a kplane member with the same argv.
//
//   StoreFlags flags;
//   StatusOr<StoreOptions> o = flags.Parse(args, environ_map);
//   if (flags.help_requested()) std::cout << flags.Usage();
//
// Each etcd flag is one of (docs/store.md, "Flags"):
//   served     it does what etcd's does;
//   no-op      accepted because it has no counterpart here (named in the
//              table with the reason), e.g. --max-wals: the WAL's retention
//              follows the snapshots;
//   refused    accepted at its default, refused with a clear error otherwise
//              (auto TLS, CRLs, certificate name filters, cipher suites, the
//              v2 API, proxy mode, discovery, --force-new-cluster,
//              --wal-dir).
// TLS: --cert-file, --key-file, --trusted-ca-file, --client-cert-auth and
// their --peer-* twins are served with etcd's meaning (member_tls.h): an
// https:// listen URL needs its side's pair (etcd's error otherwise).
// kplane's own flags (--max-connections, --request-body-timeout,
// --experimental-snapshot-catchup-entries) sit beside them.
//
// Thread-safety: single-threaded use. Errors: InvalidArgument naming the flag,
// the variable or the config file key.
#ifndef KPLANE_CMD_KPLANE_STORE_FLAGS_H_
#define KPLANE_CMD_KPLANE_STORE_FLAGS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/flags.h"
#include "base/statusor.h"
#include "net/url.h"
#include "storage/server/member_tls.h"
#include "storage/server/store_config.h"

namespace kplane::cmd {

// What `kplane store` runs with, after the flags were read and checked.
struct StoreOptions {
  storage::StoreConfig cfg;
  // One listener per URL (etcd: several URLs per flag). Port 0 picks a free
  // port; the advertised URLs then default to the ports chosen.
  std::vector<net::Url> listen_client;
  std::vector<net::Url> listen_peer;
  // Extra listeners that serve only /metrics and /health.
  std::vector<net::Url> listen_metrics;
  // Whether --advertise-client-urls / --initial-advertise-peer-urls were
  // given (otherwise cfg's URLs are the listen URLs, fixed up for port 0).
  bool advertise_client_given = false;
  bool advertise_peer_given = false;
  // etcd's client and peer TLSInfo (--cert-file ..., --peer-cert-file ...),
  // used by the https:// URLs of each side.
  storage::MemberTlsFiles client_tls;
  storage::MemberTlsFiles peer_tls;
  bool initial_corrupt_check = false;
  std::string log_level = "info";
  size_t max_connections = 0;
  Duration body_timeout = Duration(0);
  // gRPC server settings (etcd's --max-concurrent-streams and
  // --grpc-keepalive-*); 0: gRPC's default.
  uint32_t max_concurrent_streams = 0;
  Duration grpc_keepalive_min_time = Duration(0);
  Duration grpc_keepalive_interval = Duration(0);
  Duration grpc_keepalive_timeout = Duration(0);
  // Set when a --config-file was read (its path), for the start-up log.
  std::string config_file;
  // Warnings to log once logging is set up (unrecognized ETCD_* variables,
  // unknown config keys, no-op flags given).
  std::vector<std::string> warnings;
};

class StoreFlags {
 public:
  StoreFlags();
  ~StoreFlags();
  StoreFlags(const StoreFlags&) = delete;
  StoreFlags& operator=(const StoreFlags&) = delete;

  // Reads `args` (without the program and subcommand names), then `env`
  // (ETCD_<FLAG> for flags not on the command line; a variable that repeats
  // a command-line flag is an error, as in etcd) -- or, with --config-file /
  // ETCD_CONFIG_FILE, only that file.
  StatusOr<StoreOptions> Parse(const std::vector<std::string>& args,
                               const std::map<std::string, std::string>& env);

  bool help_requested() const;
  std::string Usage() const;

  // The environment variable etcd reads for `flag` ("data-dir" ->
  // "ETCD_DATA_DIR").
  static std::string EnvName(const std::string& flag);
  // Every flag name this command accepts (etcd's and kplane's).
  std::vector<std::string> FlagNames() const;

 private:
  struct State;
  Status LoadConfigFile(const std::string& path, StoreOptions* o);
  StatusOr<StoreOptions> Finish(StoreOptions o);

  std::unique_ptr<State> st_;
};

// "http://host:port" or "https://host:port" with an explicit port (0
// allowed), no path: etcd's types.NewURLs rules. Where `unix_ok` (the
// client and peer URLs), also "unix://<path>" and "unixs://<path>" (TLS over
// the socket): as etcd, the socket's path is all that follows "//"
// ("unix://localhost:2379" is the file "localhost:2379" in the working
// directory), kept in Url::host with scheme "unix" or "unixs".
// Errors: kInvalidArgument naming --`flag` and the URL.
StatusOr<net::Url> ListenUrl(const std::string& text, const char* flag,
                             bool unix_ok);

// The process environment as a map (for Parse).
std::map<std::string, std::string> ProcessEnvironment();

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_STORE_FLAGS_H_
