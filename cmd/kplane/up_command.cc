// `kplane up`: flags, signals, the summary; ControlPlane does the work.
#include "cmd/kplane/up_command.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <thread>

#include "base/command.h"
#include "base/flags.h"
#include "base/logging.h"
#include "cmd/kplane/control_plane.h"

namespace kplane::cmd {
namespace {

std::string HomeDir() {
  const char* home = getenv("HOME");
  return home && *home ? home : ".";
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "kplane";
}

}  // namespace

int RunUpCommand(const std::vector<std::string>& args) {
  FlagSet flags("kplane up",
                "Runs a whole control plane on this machine: the store, the "
                "API server, the controller manager and simulated nodes, and "
                "writes a kubeconfig for kubectl and kpctl.");
  UpOptions o;
  o.data_dir = HomeDir() + "/.kplane/data";
  o.kubeconfig_out = HomeDir() + "/.kplane/kubeconfig";
  o.kplane_binary = SelfExe();
  std::string log_level = "warning";
  flags.String("data-dir", &o.data_dir,
               "Where the store keeps its data (kept across restarts).");
  flags.String("bind-address", &o.bind_address,
               "Address the API server and the store listen on.");
  flags.Int("port", &o.apiserver_port, "API server port (HTTPS).");
  flags.Bool("insecure-http", &o.insecure_http,
             "Serve plain HTTP without TLS on the API server, controller "
             "manager and simulated-node ports, and write a kubeconfig "
             "without certificates (development only; default: HTTPS with "
             "a PKI created in <data-dir>/pki).");
  flags.Int("store-nodes", &o.store_members,
            "1: a store member embedded in this process; 3: three `kplane "
            "store` processes (kill the leader and watch).");
  flags.Int("store-port", &o.store_port,
            "Client port of the first store member (others: +20000, "
            "+30000; peers: client port + 1).");
  flags.Duration("store-restart-delay", &o.store_restart_delay,
                 "With --store-nodes 3: restart a member that failed after "
                 "this long, doubled for each failure in a row up to 5m "
                 "(0: leave it down). A member that exits 0 (stopped, or "
                 "removed from the cluster) stays down.");
  flags.String("etcd-protocol", &o.store_protocol,
               "With --store-nodes 3: the API server's store client speaks "
               "\"json\" (etcd's v3 JSON gateway) or \"grpc\" (etcd's "
               "gRPC API).");
  flags.Int("nodes", &o.nodes, "Simulated nodes to run.");
  flags.String("node-prefix", &o.node_prefix, "Names of simulated nodes.");
  flags.Int("kubeletsim-port", &o.kubeletsim_port,
            "Control endpoint of the simulated nodes (-1: none).");
  flags.Bool("controllers", &o.controllers, "Run the controller manager.");
  flags.Int("controller-manager-port", &o.controller_manager_port,
            "Controller manager /healthz and /metrics (-1: none).");
  flags.String("cluster-cidr", &o.cluster_cidr,
               "Node pod CIDRs are cut from this (the controller manager's "
               "node IPAM); empty: each node registers its own /24 of "
               "10.64.0.0/10.");
  flags.Int("node-cidr-mask-size", &o.node_cidr_mask_size,
            "Prefix length of each node's pod CIDR.");
  flags.Duration("node-monitor-grace-period", &o.node_monitor_grace_period,
                 "A node whose lease is older than this is NotReady.");
  flags.Duration("node-monitor-period", &o.node_monitor_period,
                 "How often node health is checked.");
  flags.Int("percentage-of-nodes-to-score", &o.percentage_of_nodes_to_score,
            "Share of feasible nodes the scheduler scores per pod "
            "(kube-scheduler's percentageOfNodesToScore; 0 adaptive).");
  flags.Duration("pod-eviction-timeout", &o.pod_eviction_timeout,
                 "Pods on a NotReady node without a toleration are evicted "
                 "after this long.");
  flags.Duration("lease-renew-interval", &o.lease_renew_interval,
                 "How often simulated nodes renew their leases.");
  flags.Duration("etcd-compaction-interval", &o.compaction_interval,
                 "Compact store history older than this, this often (0: "
                 "never).");
  flags.Bool("secrets-encryption", &o.secrets_encryption,
             "Encrypt Secrets at rest with a key generated on first start "
             "(<data-dir>/encryption-config.yaml, mode 0600; as k3s's "
             "--secrets-encryption). false: store them in plaintext.");
  flags.String("encryption-provider-config", &o.encryption_provider_config,
               "An EncryptionConfiguration file to use instead of the "
               "generated one (kube-apiserver's flag; docs/security.md).");
  flags.String("kubeconfig-out", &o.kubeconfig_out,
               "Where to write the kubeconfig (empty: nowhere).");
  flags.String("log-level", &log_level, "debug, info, warning or error.");
  if (auto code = ParseCommandFlags(flags, args, "kplane up")) return *code;
  auto fail = [](const Status& st) { return CommandFailed("kplane up", st); };
  SetMinLogLevelByName(log_level);
  // Our default is "warning", so an explicit "info" must lower it.
  if (log_level == "info") SetMinLogLevel(LogLevel::kInfo);

  // Every flag before anything is done (exit 2, as a bad flag).
  if (Status st = ValidateUpOptions(o); !st.ok()) return fail(st);

  sigset_t stop_signals = BlockStopSignals();

  if (o.insecure_http) {
    std::cerr << "kplane up: WARNING: --insecure-http: every port speaks "
                 "plain HTTP without TLS or authentication; anyone who can "
                 "reach them can read every Secret and change everything. "
                 "Development only.\n";
  }
  std::cout << "kplane up: starting (data in " << o.data_dir << ")..."
            << std::endl;
  // The start runs on its own thread (the stop signals blocked there too)
  // while this one waits for it or for SIGINT/SIGTERM: a start that hangs
  // (a store member that never becomes healthy) can still be interrupted.
  // On a signal the start is abandoned at its next step or wait, and what
  // it started is stopped.
  std::atomic<bool> interrupted{false};
  StatusOr<std::unique_ptr<ControlPlane>> cp =
      InternalError("kplane up: the start did not finish");
  const int started_fd = ::eventfd(0, EFD_CLOEXEC);
  const int signal_fd = ::signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (started_fd < 0 || signal_fd < 0) {
    return fail(IOError(std::string("eventfd/signalfd: ") + strerror(errno)));
  }
  std::thread starter([&] {
    cp = ControlPlane::Start(o, &interrupted);
    const uint64_t one = 1;
    (void)!::write(started_fd, &one, sizeof(one));
  });
  int interrupt_signal = 0;
  while (true) {
    pollfd fds[2] = {{started_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info;
      if (::read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
        interrupt_signal = static_cast<int>(info.ssi_signo);
      }
      break;
    }
    if (fds[0].revents & POLLIN) break;
  }
  if (interrupt_signal != 0) {
    std::cerr << "kplane up: interrupted by signal " << interrupt_signal
              << " during startup; stopping what was started..." << std::endl;
    interrupted = true;
  }
  starter.join();
  ::close(started_fd);
  ::close(signal_fd);
  if (interrupt_signal != 0) {
    if (cp.ok()) (*cp)->Stop();
    std::cerr << "kplane up: interrupted during startup; stopped." << std::endl;
    return 128 + interrupt_signal;
  }
  if (!cp.ok()) return fail(cp.status());
  std::cout << (*cp)->Summary() << "\nCtrl-C stops everything; the data stays."
            << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "kplane up: stopping..." << std::endl;
  (*cp)->Stop();
  std::cout << "kplane up: stopped." << std::endl;
  return 0;
}

}  // namespace kplane::cmd
