#include "cmd/kplane/kubeletsim_command.h"

#include <signal.h>

#include <condition_variable>
#include <iostream>
#include <thread>

#include "base/command.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "cmd/kplane/kubeconfig_flags.h"
#include "cmd/kplane/serving_tls_flags.h"
#include "kubeletsim/fleet.h"

namespace kplane::cmd {

using kubeletsim::Fleet;
using kubeletsim::FleetOptions;
using kubeletsim::ParseLabel;
using kubeletsim::ParseTaint;

int RunKubeletSimCommand(const std::vector<std::string>& args) {
  FlagSet flags("kplane kubeletsim",
                "Simulates a fleet of kubelets: nodes that register, "
                "heartbeat through Leases and run pods, without containers.");
  FleetOptions o;
  std::vector<std::string> labels, taints, stop_nodes;
  Duration stop_after{0}, resume_after{0};
  std::string log_level = "info";
  std::string kubeconfig;
  flags.String("kubeconfig", &kubeconfig,
               "Kubeconfig with the API server, the CA to trust and the "
               "client certificate or token to present (kubelet's flag); "
               "--server overrides its server.");
  std::string server;
  ServingTlsFlags serving_tls(
      flags, {.served = "the control endpoint",
              .origin = "the kubelet's",
              .client_auth = net::ClientAuth::kRequireAndVerify});
  flags.String("server", &server,
               "API server URL (default: the kubeconfig's, else "
               "http://127.0.0.1:6443).");
  flags.Int("nodes", &o.nodes, "Number of simulated nodes.");
  flags.String("name-prefix", &o.name_prefix,
               "Node names are <prefix><index>.");
  flags.Int("first-index", &o.first_index,
            "Index of the first node (decides names and InternalIPs; lets "
            "several fleets share a cluster).");
  flags.Bool("register-pod-cidr", &o.register_pod_cidr,
             "Register every node with its own /24 of 10.64.0.0/10 by index "
             "(at most 16,384 nodes), as kubelet's standalone --pod-cidr. "
             "Default: the controller manager's node IPAM "
             "(--allocate-node-cidrs) assigns spec.podCIDR, and pods wait in "
             "ContainerCreating until the node has one.");
  flags.String("node-cpu", &o.node.cpu, "Capacity and allocatable cpu.");
  flags.String("node-memory", &o.node.memory,
               "Capacity and allocatable memory.");
  flags.String("node-pods", &o.node.pods, "Capacity and allocatable pods.");
  flags.StringList("node-labels", &labels,
                   "Extra node labels, key=value (repeatable).");
  flags.StringList("register-with-taints", &taints,
                   "Node taints, key[=value]:Effect (repeatable).");
  flags.String("kubelet-version", &o.node.kubelet_version,
               "status.nodeInfo.kubeletVersion.");
  flags.Duration("lease-renew-interval", &o.lease_renew_interval,
                 "How often each node renews its Lease (+0-4% jitter).");
  flags.Int("node-lease-duration-seconds", &o.lease_duration_seconds,
            "leaseDurationSeconds written in each Lease.");
  flags.Duration("node-status-report-frequency",
                 &o.node_status_report_frequency,
                 "Node status is written when it changes or this often.");
  flags.Duration("pod-start-delay", &o.pod_start_delay,
                 "ContainerCreating -> Running.");
  flags.Duration("pod-ready-delay", &o.pod_ready_delay,
                 "Running -> Ready (the pod annotation "
                 "kubeletsim.kplane.io/ready-after overrides it).");
  flags.Duration("pod-termination-delay", &o.pod_termination_delay,
                 "deletionTimestamp -> containers terminated (at most the "
                 "pod's grace period).");
  flags.Duration("pod-run-duration", &o.pod_run_duration,
                 "Running -> containers exited (exit code 0 unless the "
                 "annotation kubeletsim.kplane.io/exit-code says otherwise) "
                 "for pods with restartPolicy Never/OnFailure; the "
                 "annotation kubeletsim.kplane.io/run-for overrides it.");
  flags.Bool("record-events", &o.record_events,
             "Record kubelet events (Pulled, Created, Started, Killing on "
             "pods; Starting, NodeReady on nodes when a node (re)starts).");
  flags.Int("workers", &o.workers, "Threads making the pods' API calls.");
  flags.Int("heartbeat-workers", &o.heartbeat_workers,
            "Threads (and keep-alive connections) registering nodes, "
            "renewing Leases and reporting Node status, apart from the "
            "pods' so that pod work never delays a heartbeat (0: enough for "
            "a 250 ms renewal at the due rate, nodes / interval / 4, "
            "2..256).");
  flags.Int("api-connections", &o.api_connections,
            "Keep-alive connections to the API server.");
  flags.Bool("protobuf", &o.protobuf,
             "Talk protobuf to the API server (else JSON).");
  flags.String("bind-address", &o.bind_address,
               "Address of the control endpoint.");
  flags.Int("port", &o.port,
            "Port of the control endpoint (/healthz, /metrics, /nodes, the "
            "kubelet's /containerLogs); 0: none, -1: any free port.");
  flags.String("advertise-address", &o.node.kubelet_address,
               "Address the API server reaches the control endpoint at "
               "(pods/log), reported as every node's ExternalIP (default: "
               "--bind-address, or 127.0.0.1 when that is 0.0.0.0).");
  flags.StringList("stop-nodes", &stop_nodes,
                   "Fault injection: nodes to crash after --stop-after "
                   "(\"all\": the whole fleet).");
  flags.Duration("stop-after", &stop_after,
                 "Fault injection: when to stop --stop-nodes.");
  flags.Duration("resume-after", &resume_after,
                 "Fault injection: when to resume them (0: never).");
  flags.String("log-level", &log_level, "debug, info, warning or error.");
  if (auto code = ParseCommandFlags(flags, args, "kplane kubeletsim"))
    return *code;
  auto fail = [](const Status& st) {
    return CommandFailed("kplane kubeletsim", st);
  };
  SetMinLogLevelByName(log_level);
  for (const std::string& l : labels) {
    auto kv = ParseLabel(l);
    if (!kv.ok()) return fail(kv.status());
    o.node.labels[kv->first] = kv->second;
  }
  for (const std::string& t : taints) {
    auto taint = ParseTaint(t);
    if (!taint.ok()) return fail(taint.status());
    o.node.taints.push_back(*taint);
  }
  if (o.port > 65535) return fail(InvalidArgumentError("--port > 65535"));
  if (server.empty() && kubeconfig.empty()) server = o.server;
  auto api = ApiClientFromFlags(kubeconfig, server);
  if (!api.ok()) return fail(api.status());
  o.server = api->server;
  o.tls = api->tls;
  o.bearer_token = api->bearer_token;
  auto serving = serving_tls.Context();
  if (!serving.ok()) return fail(serving.status());
  o.serving_tls = *serving;
  o.node.kubelet_port = o.port > 0 ? o.port : 10250;

  sigset_t stop_signals = BlockStopSignals();
  auto fleet = Fleet::Start(o);
  if (!fleet.ok()) return fail(fleet.status());
  std::cout << "kplane kubeletsim: " << o.nodes << " nodes against "
            << o.server;
  if ((*fleet)->port() != 0) {
    std::cout << ", control on "
              << (o.serving_tls != nullptr ? "https://" : "http://")
              << o.bind_address << ":" << (*fleet)->port();
  }
  std::cout << std::endl;

  // Scripted faults, on their own thread so signals still end the run.
  Mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread faults;
  if (!stop_nodes.empty()) {
    faults = std::thread([&] {
      Clock* clock = Clock::Real();
      TimePoint start = clock->Now();
      auto apply = [&](bool stop) {
        for (const std::string& n : stop_nodes) {
          if (n == "all") {
            stop ? (*fleet)->StopAll() : (*fleet)->ResumeAll();
            continue;
          }
          Status st = stop ? (*fleet)->StopNode(n) : (*fleet)->ResumeNode(n);
          if (!st.ok()) LOG(WARNING) << st;
        }
      };
      MutexLock l(&mu);
      if (clock->WaitUntil(l.native(), cv, start + stop_after,
                           [&] { return done; })) {
        return;
      }
      apply(true);
      if (resume_after <= Duration(0)) return;
      if (clock->WaitUntil(l.native(), cv, start + resume_after,
                           [&] { return done; })) {
        return;
      }
      apply(false);
    });
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  LOG(INFO) << "received signal " << sig << ", stopping the fleet";
  {
    MutexLock l(&mu);
    done = true;
    cv.notify_all();
  }
  if (faults.joinable()) faults.join();
  (*fleet)->Stop();
  return 0;
}

}  // namespace kplane::cmd
