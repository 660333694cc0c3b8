// Fleet: N simulated kubelets in one process (KWOK-style), talking to the
// API server like real ones: each registers its Node, renews its Lease in
// kube-node-lease every lease_renew_interval (jittered, optimistic-locking
// PUT), reports Node status only when it changed or every
// node_status_report_frequency, and runs the pods bound to it through
// Pending/ContainerCreating -> Running -> Ready, and through graceful
// deletion to a DELETE with gracePeriodSeconds=0. docs/kubeletsim.md has
// the full behaviour.
//
//   FleetOptions o;
//   o.server = "http://127.0.0.1:6443";
//   o.nodes = 100;
//   o.port = -1;                        // control endpoint on any port
//   auto fleet = Fleet::Start(o);       // registers the nodes, then runs
//   (*fleet)->StopNode("node-3");       // crash: lease + status stop
//   (*fleet)->ResumeNode("node-3");
//   (*fleet)->Stop();                   // the whole fleet goes silent
//
// Structure: one TimerQueue thread for every node's timers; two WorkerPools
// do the API calls, `heartbeat_workers` threads for registration, leases
// and Node status and `workers` for pods, through two serial executors per
// node (one on each), so one node's calls never race each other and no
// amount of pod work delays any node's heartbeat. ONE pod
// informer (field selector spec.nodeName!=) and ONE node informer serve
// all nodes; events are dispatched by node name.
//
// Ownership: the Fleet owns its client, informers, threads and the control
// HTTP server. Stop() (also in the destructor) silences every node without
// deleting anything from the API, as a killed process would.
// Thread-safety: all public methods may be called from any thread.
// Errors: Start() fails on bad options, an unreachable server (the
// initial registration) or a control port that cannot be bound.
#ifndef KPLANE_KUBELETSIM_FLEET_H_
#define KPLANE_KUBELETSIM_FLEET_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/statusor.h"
#include "kubeletsim/control/control_client.h"
#include "kubeletsim/objects.h"
#include "net/tls.h"

namespace kplane::kubeletsim {

struct FleetOptions {
  std::string server = "http://127.0.0.1:6443";
  // Client TLS for an https:// server and a bearer token (as
  // informer::RestClientOptions), used for the fleet's watches and, without
  // node_tls, for every node's writes too.
  std::shared_ptr<const net::TlsContext> tls;
  std::string bearer_token;
  // One identity per node, as real kubelets have (kube's Node authorizer
  // tells them apart by CN = system:node:<name>): when set, node <name>'s
  // registration, lease, Node status and pod writes go through a client of
  // its own with the context this returns (up to node_api_connections
  // keep-alive connections, opened on demand).
  std::function<StatusOr<std::shared_ptr<const net::TlsContext>>(
      const std::string& node_name)>
      node_tls;
  int node_api_connections = 2;
  int nodes = 3;
  std::string name_prefix = "node-";
  // Node i is named name_prefix + (first_index + i) and gets the
  // InternalIP (and with register_pod_cidr the pod CIDR) of that index, so
  // several fleets can share a cluster. Indexes lie in [0, 2^20 - 2)
  // (InternalIPs in 172.16.0.0/12); [0, 16384) with register_pod_cidr.
  int first_index = 0;
  // true: every node registers with its own /24 of 10.64.0.0/10 by index
  // (kubelet's standalone --pod-cidr). false (Kubernetes' way): the Node is
  // registered without one and the controller manager's node IPAM
  // (--allocate-node-cidrs) assigns spec.podCIDR; until it has one, pods
  // bound to the node stay ContainerCreating.
  bool register_pod_cidr = false;
  // Capacity (= allocatable), extra labels and taints of every node.
  NodeTemplate node;

  Duration lease_renew_interval = seconds(10);  // +0..4% jitter each time
  int lease_duration_seconds = 40;
  Duration node_status_report_frequency = minutes(5);

  // Pod lifecycle: bound -> (start delay) -> Running -> (ready delay, or
  // the pod's kubeletsim.kplane.io/ready-after annotation) -> Ready;
  // deletionTimestamp -> (termination delay, at most the grace period)
  // -> containers terminated -> DELETE gracePeriodSeconds=0.
  Duration pod_start_delay = seconds(1);
  Duration pod_ready_delay = Duration(0);
  Duration pod_termination_delay = seconds(1);
  // Running -> containers exited, for pods with restartPolicy Never or
  // OnFailure and no kubeletsim.kplane.io/run-for annotation (objects.h).
  Duration pod_run_duration = seconds(2);

  // Record kubelet events (Pulled/Created/Started/Killing on pods,
  // Starting/NodeReady on nodes at (re)start) through one event broadcaster
  // (informer/event_recorder.h: bounded queue, aggregation, spam filter).
  bool record_events = true;

  int workers = 8;           // threads making the pods' API calls
  int api_connections = 16;  // keep-alive connections to the API server
  // Threads (and, without node_tls, keep-alive connections of a client of
  // their own) for registration, Lease renewals and Node status -- the
  // kubelet's separate heartbeat client: pod work, however much of it is
  // queued, never delays a heartbeat. 0: AutoHeartbeatWorkers().
  int heartbeat_workers = 0;
  // Nodes registering at once (0: half the heartbeat workers, at least 1).
  // The rest wait their turn, so that a large fleet's registrations never
  // queue in front of the lease renewals of the nodes already registered.
  int max_registering = 0;
  bool protobuf = true;  // wire format to the API server
  // Control endpoint (/healthz, /metrics, /nodes): 0 = none, -1 = any
  // free port (see Fleet::port()).
  std::string bind_address = "127.0.0.1";
  int port = 10250;
  // Serve the control endpoint over HTTPS with this server context (a
  // kubelet serves HTTPS on 10250). Null: HTTP.
  std::shared_ptr<const net::TlsContext> serving_tls;

  // Tests and tracing: called (on a worker thread, no lock held) each time
  // a pod's next step is put on the clock: "start", "ready", "terminate",
  // with the pod's "namespace/name".
  std::function<void(const std::string& pod, const std::string& step)>
      on_pod_step;

  Clock* clock = nullptr;                // nullptr: Clock::Real()
  metrics::Registry* metrics = nullptr;  // nullptr: Registry::Default()
  uint64_t seed = 0;                     // jitter; 0: random
};

// The heartbeat workers a fleet of `nodes` renewing every `interval` gets by
// default: renewals are blocking calls, so a fleet renews at most workers /
// PUT latency per second; this allows 250 ms per renewal (a loaded machine
// with a 3-member store) at the due rate, between 2 and 256 threads.
int AutoHeartbeatWorkers(int nodes, Duration interval);

class Fleet {
 public:
  static StatusOr<std::unique_ptr<Fleet>> Start(FleetOptions options);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Crash one node: no more lease renewals or status reports; its pods
  // keep their last status and new pods bound to it stay Pending.
  // kNotFound for a name this fleet does not simulate.
  Status StopNode(const std::string& name);
  // Back: renews the lease and reports status at once (fixing conditions
  // the node lifecycle controller changed), then picks up its pods.
  Status ResumeNode(const std::string& name);
  // All nodes at once.
  void StopAll();
  void ResumeAll();

  std::vector<NodeInfo> List() const;
  // The control endpoint's port (0 when there is none).
  uint16_t port() const;

  // Tests: blocks until no timer is due on the clock and no API work is
  // queued or running. Events still in an informer's watch are not seen.
  void WaitIdle() const;

  // Silences every node and stops all threads. Idempotent.
  void Stop();

  class Impl;

 private:
  explicit Fleet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_FLEET_H_
