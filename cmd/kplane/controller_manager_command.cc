#include "cmd/kplane/controller_manager_command.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "base/command.h"
#include "base/file_system.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/strings.h"
#include "cmd/kplane/kubeconfig_flags.h"
#include "cmd/kplane/serving_tls_flags.h"
#include "controllers/controller_manager.h"

namespace kplane::cmd {

using controllers::ControllerManager;
using controllers::ControllerManagerOptions;

int RunControllerManagerCommand(const std::vector<std::string>& args) {
  FlagSet flags(
      "kplane controller-manager",
      "Runs kplane's controllers (replicaset, deployment, scheduler, "
      "nodelifecycle, garbagecollector, namespace, podgc, "
      "serviceaccount, statefulset, daemonset, job, ttlafterfinished, "
      "cronjob, endpoint, clusterrole-aggregation, endpointslice, "
      "disruption, root-ca-cert-publisher) against an API server.");
  ControllerManagerOptions o;
  std::string master;
  std::string kubeconfig;
  std::string controllers = "*";
  int64_t toleration_seconds = 300;
  std::string log_level = "info";
  std::string eviction_rate = "10";
  flags.String("kubeconfig", &kubeconfig,
               "Kubeconfig with the API server, the CA to trust and the "
               "client certificate or token to present "
               "(kube-controller-manager's flag).");
  flags.String("master", &master,
               "API server URL; overrides the kubeconfig's (default without "
               "one: http://127.0.0.1:6443).");
  flags.String("server", &master, "Same as --master.");
  flags.String("kube-api-content-type", &o.content_type,
               "Wire format to the API server: "
               "application/vnd.kubernetes.protobuf or application/json "
               "(custom resources always travel as JSON).");
  flags.Bool("leader-elect", &o.leader_elect,
             "Campaign for the kube-system/kube-controller-manager Lease and "
             "run controllers only while leading.");
  flags.String("leader-elect-identity", &o.identity,
               "Identity in the Lease (default <hostname>_<pid>_<random>).");
  flags.Duration("leader-elect-lease-duration", &o.leader_elect_lease_duration,
                 "How long a lease is valid without renewal.");
  flags.Duration("leader-elect-renew-deadline", &o.leader_elect_renew_deadline,
                 "The leader steps down when it cannot renew for this long.");
  flags.Duration("leader-elect-retry-period", &o.leader_elect_retry_period,
                 "How often candidates try and leaders renew.");
  flags.String("leader-elect-resource-namespace", &o.leader_elect_namespace,
               "Namespace of the leader election Lease.");
  flags.String("leader-elect-resource-name", &o.leader_elect_name,
               "Name of the leader election Lease.");
  flags.Duration("node-monitor-grace-period", &o.node_monitor_grace_period,
                 "A node whose lease is not renewed for this long is marked "
                 "NotReady (Ready=Unknown) and tainted unreachable.");
  flags.Duration("node-monitor-period", &o.node_monitor_period,
                 "How often every node's lease is checked.");
  flags.Int("percentage-of-nodes-to-score", &o.percentage_of_nodes_to_score,
            "The scheduler places a pod on the best of this share of the "
            "feasible nodes (kube-scheduler's percentageOfNodesToScore): "
            "0 adaptive (50 % minus 1 % per 125 nodes, at least 5 % and 100 "
            "nodes), 100 all.");
  flags.Bool("allocate-node-cidrs", &o.allocate_node_cidrs,
             "Give every Node a pod CIDR (spec.podCIDR/podCIDRs) from "
             "--cluster-cidr (the nodeipam controller).");
  flags.String("cluster-cidr", &o.cluster_cidr,
               "IPv4 CIDR the node pod CIDRs are cut from, e.g. "
               "10.0.0.0/8 (required with --allocate-node-cidrs).");
  flags.Int("node-cidr-mask-size", &o.node_cidr_mask_size,
            "Prefix length of each node's pod CIDR (at most 2^16 of them per "
            "cluster CIDR).");
  flags.Int64("default-not-ready-toleration-seconds", &toleration_seconds,
              "Seconds pods without their own not-ready/unreachable "
              "toleration (or with the API server's default 300 s one) stay "
              "on an unreachable node before eviction.");
  flags.String("node-eviction-rate", &eviction_rate,
               "Pods evicted per second at most (0: unlimited).");
  flags.Int("concurrent-syncs", &o.workers, "Workers per controller.");
  flags.String("controllers", &controllers,
               "Comma-separated controllers to run, or *.");
  flags.String("bind-address", &o.bind_address,
               "Address of /healthz and /metrics.");
  flags.Int("port", &o.port, "Port of /healthz and /metrics (0: none).");
  flags.Int("secure-port", &o.port,
            "Same as --port (plain HTTP here; "
            "`kplane up` serves it over HTTPS).");
  ServingTlsFlags serving_tls(flags, {.served = "/healthz and /metrics",
                                      .origin = "kube-controller-manager's"});
  std::string root_ca_file;
  flags.String("root-ca-file", &root_ca_file,
               "PEM CA bundle published as the kube-root-ca.crt ConfigMap "
               "(key ca.crt) in every namespace (the root-ca-cert-publisher "
               "controller). Empty: that controller does not run.");
  flags.String("log-level", &log_level, "debug, info, warning or error.");
  if (auto code = ParseCommandFlags(flags, args, "kplane controller-manager"))
    return *code;
  auto fail = [](const Status& st) {
    return CommandFailed("kplane controller-manager", st);
  };
  SetMinLogLevelByName(log_level);
  if (o.port < 0 || o.port > 65535) {
    return fail(InvalidArgumentError("--port must be in 0..65535"));
  }
  if (master.empty() && kubeconfig.empty()) master = o.server;
  auto api = ApiClientFromFlags(kubeconfig, master);
  if (!api.ok()) return fail(api.status());
  o.server = api->server;
  o.tls = api->tls;
  o.bearer_token = api->bearer_token;
  auto serving = serving_tls.Context();
  if (!serving.ok()) return fail(serving.status());
  o.serving_tls = *serving;
  if (!root_ca_file.empty()) {
    auto ca = ReadFile(FileSystem::Default(), root_ca_file);
    if (!ca.ok()) return fail(ca.status().Annotate("--root-ca-file"));
    o.root_ca_pem = std::move(*ca);
  }
  o.pod_eviction_timeout_default = seconds(toleration_seconds);
  char* end = nullptr;
  o.node_eviction_rate = std::strtod(eviction_rate.c_str(), &end);
  if (eviction_rate.empty() || *end != '\0') {
    return fail(InvalidArgumentError("--node-eviction-rate: not a number"));
  }
  o.controllers = StrSplit(controllers, ',');

  sigset_t set = BlockStopSignals();

  auto cm = ControllerManager::Start(o);
  if (!cm.ok()) return fail(cm.status());
  std::cout << "kplane controller-manager " << (*cm)->identity()
            << " started against " << o.server;
  if ((*cm)->port() != 0) {
    std::cout << ", serving on "
              << (o.serving_tls != nullptr ? "https://" : "http://")
              << o.bind_address << ":" << (*cm)->port();
  }
  std::cout << std::endl;

  // The signal waiter ends the wait for a lost leadership.
  std::atomic<bool> signalled{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&set, &sig);
    LOG(INFO) << "received signal " << sig << ", shutting down";
    signalled = true;
    (*cm)->Stop();
  });
  bool lost = (*cm)->WaitLost();
  if (!signalled) {
    // Lost leadership: wake the waiter ourselves.
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  (*cm)->Stop();
  if (lost && !signalled) {
    std::cerr << "kplane controller-manager: leader election lost\n";
    return 1;
  }
  return 0;
}

}  // namespace kplane::cmd
