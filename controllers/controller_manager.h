// ControllerManager: kplane's kube-controller-manager in one object, for
// `kplane controller-manager` and for `kplane up` (in process).
//
//   auto cm = ControllerManager::Start({.server = "http://127.0.0.1:6443",
//                                       .identity = "cm-1"});
//   ...
//   (*cm)->Stop();
//
// It talks to the API server over REST only. With leader_elect, it
// campaigns for the Lease kube-system/kube-controller-manager (15 s / 10 s
// / 2 s) and runs the controllers only while it leads; a manager that
// loses the lease stops its controllers for good (Lost() turns true; the
// command then exits, as kube-controller-manager does) -- start a new one
// to campaign again. Without leader_elect the controllers start at once.
//
// Controllers: replicaset, deployment, scheduler, nodelifecycle,
// garbagecollector, namespace, podgc, serviceaccount, statefulset,
// daemonset, job, ttlafterfinished, cronjob, endpoint,
// clusterrole-aggregation, root-ca-cert-publisher (with root_ca_pem),
// nodeipam (with allocate_node_cidrs) (all
// by default;
// `controllers` picks a subset). Without namespace, deleted namespaces stay
// Terminating; without podgc, pods deleted gracefully on a node with no kubelet
// stay Terminating, as in Kubernetes without its controller manager.
//
// HTTP (HTTPS with serving_tls) on bind_address:port (port 0 = none; the port
// may be ephemeral via `ephemeral_port`): GET /healthz ("ok"), GET /metrics
// (Prometheus text: workqueue_* per controller, controller_sync_*,
// rest_client_*, leader_election_master_status).
//
// Ownership: owns its REST client, informers, controllers, elector and
// HTTP server. Thread-safety: Start/Stop from one thread; the accessors
// from any. Errors: Start fails with InvalidArgument for bad options, or
// the HTTP server's error when the port cannot be bound.
#ifndef KPLANE_CONTROLLERS_CONTROLLER_MANAGER_H_
#define KPLANE_CONTROLLERS_CONTROLLER_MANAGER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/statusor.h"
#include "net/tls.h"

namespace kplane::controllers {

struct ControllerManagerOptions {
  std::string server = "http://127.0.0.1:6443";
  // Client TLS for an https:// server (the CA and this manager's client
  // certificate) and a bearer token, as informer::RestClientOptions.
  std::shared_ptr<const net::TlsContext> tls;
  std::string bearer_token;
  // --kube-api-content-type: the wire format of requests, answers and
  // watches, as kube-controller-manager's (protobuf by default; custom
  // resources always travel as JSON). Anything else is InvalidArgument.
  std::string content_type = "application/vnd.kubernetes.protobuf";
  bool leader_elect = true;
  std::string identity;  // "" = <hostname>_<pid>
  Duration node_monitor_grace_period = seconds(40);
  Duration node_monitor_period = seconds(5);
  // The scheduler's share of feasible nodes to score, as kube-scheduler's
  // percentageOfNodesToScore: 0 adaptive (50 % minus 1 % per 125 nodes, at
  // least 5 % and 100 nodes), 1-100 that share.
  int percentage_of_nodes_to_score = 0;
  // --default-not-ready-toleration-seconds: how long pods without their own
  // not-ready/unreachable toleration stay on an unreachable node.
  Duration pod_eviction_timeout_default = seconds(300);
  double node_eviction_rate = 10;  // pods deleted per second at most
  int workers = 2;                 // per controller
  std::string bind_address = "127.0.0.1";
  int port = 10257;             // 0 = no HTTP
  bool ephemeral_port = false;  // bind an ephemeral port instead (tests)
  // Serve /healthz and /metrics over HTTPS with this server context
  // (kube-controller-manager serves HTTPS on 10257). Null: HTTP.
  std::shared_ptr<const net::TlsContext> serving_tls;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;  // nullptr: Registry::Default()
  Duration leader_elect_lease_duration = seconds(15);
  Duration leader_elect_renew_deadline = seconds(10);
  Duration leader_elect_retry_period = seconds(2);
  std::string leader_elect_namespace = "kube-system";
  std::string leader_elect_name = "kube-controller-manager";
  // Stop() releases the Lease so a successor need not wait out its
  // duration; false behaves like a crash (tests of failover).
  bool release_lease_on_stop = true;
  // Which controllers run: "*" or names.
  std::vector<std::string> controllers = {"*"};
  // How often the namespace controller re-checks a Terminating namespace
  // whose content is not gone yet.
  Duration namespace_retry_interval = seconds(2);
  Duration informer_resync = Duration(0);
  // --root-ca-file's PEM, published as kube-root-ca.crt in every namespace
  // (root-ca-cert-publisher). Empty: that controller does not run.
  std::string root_ca_pem;
  // Node IPAM (controller "nodeipam"), kube-controller-manager's
  // --allocate-node-cidrs / --cluster-cidr / --node-cidr-mask-size: every
  // Node gets spec.podCIDR(s) from cluster_cidr. Off by default, as in kube;
  // on without a cluster CIDR is InvalidArgument.
  bool allocate_node_cidrs = false;
  std::string cluster_cidr;
  int node_cidr_mask_size = 24;
};

class ControllerManager {
 public:
  static StatusOr<std::unique_ptr<ControllerManager>> Start(
      ControllerManagerOptions options);
  void Stop();
  ~ControllerManager();
  ControllerManager(const ControllerManager&) = delete;
  ControllerManager& operator=(const ControllerManager&) = delete;

  // True while the controllers run.
  bool IsLeading() const;
  // Waits until the controllers run; false at the timeout or on Stop().
  bool WaitLeading(Duration timeout);
  // True once this manager led and lost the lease.
  bool Lost() const;
  // Blocks until Lost() or Stop(), or `timeout` (negative: forever).
  bool WaitLost(Duration timeout = Duration(-1));
  // The HTTP port (0 without HTTP).
  uint16_t port() const;
  const std::string& identity() const;

 private:
  class Impl;
  explicit ControllerManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_CONTROLLER_MANAGER_H_
