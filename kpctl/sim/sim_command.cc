#include "kpctl/sim/sim_command.h"

#include <cstdio>
#include <cstdlib>

#include "base/flags.h"
#include "kpctl/kube/kubeconfig.h"
#include "kubeletsim/control/control_client.h"

namespace kplane::kpctl {
namespace {

// The TLS settings for an https endpoint: --cacert/--cert/--key when
// given, else the kubeconfig's cluster CA and user certificate (`kplane
// up` signs the fleet's serving certificate with the CA its kubeconfig
// trusts, and the fleet accepts any client certificate that CA signed).
StatusOr<std::shared_ptr<const net::TlsContext>> EndpointTls(
    const std::string& endpoint, const std::string& kubeconfig,
    const std::string& cacert, const std::string& cert,
    const std::string& key) {
  if (endpoint.rfind("https://", 0) != 0) {
    return std::shared_ptr<const net::TlsContext>();
  }
  net::TlsClientConfig config;
  if (!cacert.empty() || !cert.empty()) {
    config = net::TlsClientConfig{
        .ca_file = cacert, .cert_file = cert, .key_file = key};
  } else {
    ASSIGN_OR_RETURN(kube::Kubeconfig kc,
                     kube::LoadKubeconfig(kubeconfig, [](const char* name) {
                       return static_cast<const char*>(std::getenv(name));
                     }));
    StatusOr<kube::ClientConfig> resolved = kube::ResolveClientConfig(kc, {});
    if (!resolved.ok()) {
      return InvalidArgumentError(
          "an https endpoint needs a CA: pass --cacert (and --cert/--key), "
          "or a kubeconfig whose cluster carries one (" +
          resolved.status().message() + ")");
    }
    config = resolved->tls;
    config.server_name.clear();
  }
  config.alpn = {"http/1.1"};
  return net::TlsContext::NewClient(config);
}

}  // namespace

int RunSim(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err) {
  FlagSet flags("kpctl sim",
                "Drives a kubeletsim fleet: list | stop-node NAME... | "
                "resume-node NAME... | stop-all | resume-all");
  const char* env = std::getenv("KPLANE_SIM_ENDPOINT");
  std::string endpoint = env != nullptr ? env : "https://127.0.0.1:10250";
  std::string kubeconfig, cacert, cert, key;
  flags.String("endpoint", &endpoint,
               "The fleet's control endpoint (kplane kubeletsim --port; "
               "http:// for a fleet serving plain HTTP).");
  flags.String("cacert", &cacert,
               "CA file to trust for an https endpoint (default: the "
               "kubeconfig's cluster CA).");
  flags.String("cert", &cert,
               "Client certificate file (default: the kubeconfig's user).");
  flags.String("key", &key, "Client key file.");
  flags.String("kubeconfig", &kubeconfig,
               "Kubeconfig whose CA and client certificate are used when "
               "--cacert is not given (else $KUBECONFIG, ~/.kube/config, "
               "~/.kplane/kubeconfig).");
  Status s = flags.Parse(args);
  if (flags.help_requested()) {
    out << flags.Usage();
    return 0;
  }
  if (!s.ok()) {
    err << "Error: " << s.message() << "\n";
    return 2;
  }
  const std::vector<std::string>& pos = flags.args();
  if (pos.empty()) {
    err << flags.Usage();
    return 2;
  }
  if (cert.empty() != key.empty()) {
    err << "Error: --cert and --key go together\n";
    return 2;
  }
  auto tls = EndpointTls(endpoint, kubeconfig, cacert, cert, key);
  if (!tls.ok()) {
    err << "Error: " << tls.status().message() << "\n";
    return 2;
  }
  auto client = kubeletsim::ControlClient::New(endpoint, *tls);
  if (!client.ok()) {
    err << "Error: " << client.status().message() << "\n";
    return 2;
  }
  const std::string& verb = pos[0];
  std::vector<std::string> names(pos.begin() + 1, pos.end());
  auto fail = [&](const Status& st) {
    err << "Error: " << st.message() << "\n";
    return 1;
  };
  if (verb == "list") {
    auto nodes = client->List();
    if (!nodes.ok()) return fail(nodes.status());
    char line[256];
    std::snprintf(line, sizeof(line), "%-24s %-12s %6s %9s %8s %10s\n", "NAME",
                  "STATE", "PODS", "RENEWALS", "STATUS", "LAST-LAG");
    out << line;
    for (const kubeletsim::NodeInfo& n : *nodes) {
      std::snprintf(line, sizeof(line), "%-24s %-12s %6d %9lld %8lld %9.3fs\n",
                    n.name.c_str(),
                    n.stopped      ? "Stopped"
                    : n.registered ? "Running"
                                   : "Registering",
                    n.pods, static_cast<long long>(n.lease_renewals),
                    static_cast<long long>(n.status_updates),
                    n.last_lag_seconds);
      out << line;
    }
    return 0;
  }
  if (verb == "stop-all" || verb == "resume-all") {
    Status st = verb == "stop-all" ? client->StopAll() : client->ResumeAll();
    if (!st.ok()) return fail(st);
    out << (verb == "stop-all" ? "all nodes stopped\n" : "all nodes resumed\n");
    return 0;
  }
  if (verb == "stop-node" || verb == "resume-node") {
    if (names.empty()) {
      err << "Error: " << verb << " needs node names\n";
      return 2;
    }
    int code = 0;
    for (const std::string& n : names) {
      Status st =
          verb == "stop-node" ? client->StopNode(n) : client->ResumeNode(n);
      if (!st.ok()) {
        code = fail(st);
        continue;
      }
      out << "node/" << n
          << (verb == "stop-node" ? " stopped\n" : " resumed\n");
    }
    return code;
  }
  err << "Error: unknown sim command \"" << verb << "\"\n" << flags.Usage();
  return 2;
}

}  // namespace kplane::kpctl
