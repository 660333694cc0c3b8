// `kplane store gateway start`: etcd 3.4's `etcd gateway start`, an L4 TCP
// proxy in front of a store cluster (net/tcp_gateway.h).
//
//   kplane store gateway start --endpoints=127.0.0.1:2379,127.0.0.1:22379
//       --listen-addr=127.0.0.1:23790
//
// etcd's flags, with etcd's defaults and meaning: --listen-addr
// (127.0.0.1:23790), --endpoints (127.0.0.1:2379; a scheme is stripped),
// --retry-delay (1m; 0 means etcd's 5m), --discovery-srv and
// --discovery-srv-name (DNS SRV discovery, _etcd-client-ssl._tcp and
// _etcd-client._tcp; when it yields nothing usable the --endpoints are
// used, as etcd does), --insecure-discovery (keep http:// and unverified
// records), --trusted-ca-file (the CA that verifies discovered https
// endpoints); --insecure-skip-tls-verify (accept discovered https
// endpoints whose certificate does not verify; etcd 3.4's grpc-proxy has
// it, its gateway does not). kplane's bounds: --max-connections (1024),
// --dial-timeout (5s), --idle-timeout (0: none). Flags may come before or
// after `start`, as with etcd's command line. docs/store.md, "The gateway".
//
// Thread-safety: single-threaded use (the command's main thread).
// Errors: InvalidArgument naming the flag; discovery's errors as
// net/srv_discovery.h gives them.
#ifndef KPLANE_CMD_KPLANE_GATEWAY_COMMAND_H_
#define KPLANE_CMD_KPLANE_GATEWAY_COMMAND_H_

#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "net/srv_discovery.h"
#include "net/tcp_gateway.h"

namespace kplane::cmd {

struct GatewayOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 23790;
  std::vector<net::GatewayEndpoint> endpoints;  // from --endpoints
  std::string discovery_srv;
  std::string discovery_srv_name;
  bool insecure_discovery = false;
  bool insecure_skip_tls_verify = false;
  std::string trusted_ca_file;
  Duration retry_delay = minutes(1);
  size_t max_connections = 1024;
  Duration dial_timeout = seconds(5);
  Duration idle_timeout = Duration(0);
};

// Parses the arguments after `gateway` (the subcommand `start` and the
// flags, in any order). *help is set for --help (the result is then
// meaningless). InvalidArgument for a missing or unknown subcommand, an
// unknown flag or a value out of range.
StatusOr<GatewayOptions> ParseGatewayArgs(const std::vector<std::string>& args,
                                          bool* help);
std::string GatewayUsage();

// Checks a discovered https endpoint (a TLS handshake, as etcd's
// ValidateSecureEndpoints). The command uses TlsEndpointValidator.
using EndpointValidator = std::function<Status(const net::DiscoveredEndpoint&)>;
EndpointValidator TlsEndpointValidator(const GatewayOptions& o);

// The endpoints to proxy to: SRV discovery when --discovery-srv is given
// (records that are not https, or fail `validate`, are dropped unless
// --insecure-discovery; if none is left, the --endpoints), else the
// --endpoints. Then, as etcd: every endpoint host must resolve, and none
// may be the gateway's own listen address (it would proxy to itself).
// `notes` receives what a user should see in the log.
StatusOr<std::vector<net::GatewayEndpoint>> ResolveGatewayEndpoints(
    const GatewayOptions& o, net::SrvResolver& resolver,
    const EndpointValidator& validate, std::vector<std::string>* notes);

// Runs until SIGINT/SIGTERM; returns the exit code. `args` are those after
// `kplane store gateway`.
int RunGatewayCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_GATEWAY_COMMAND_H_
