#include "kpctl/sim/sim_command.h"

#include <cstdio>
#include <cstdlib>

#include "base/flags.h"
#include "kubeletsim/control/control_client.h"

namespace kplane::kpctl {

int RunSim(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err) {
  FlagSet flags("kpctl sim",
                "Drives a kubeletsim fleet: list | stop-node NAME... | "
                "resume-node NAME... | stop-all | resume-all");
  const char* env = std::getenv("KPLANE_SIM_ENDPOINT");
  std::string endpoint = env != nullptr ? env : "http://127.0.0.1:10250";
  flags.String("endpoint", &endpoint,
               "The fleet's control endpoint (kplane kubeletsim --port).");
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
  auto client = kubeletsim::ControlClient::New(endpoint);
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
