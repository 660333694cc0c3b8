// ControlPlane: everything `kplane up` runs, started in order and stopped
// in reverse: the store (one member embedded in this process, or three
// `kplane store` child processes), the API server, the controller manager
// and a fleet of simulated nodes; and a kubeconfig pointing at the API
// server so `kubectl` and `kpctl` work at once. Everything but the store
// speaks HTTPS with certificates from <data_dir>/pki (cluster_pki.h) unless
// insecure_http.
//
//   UpOptions o;
//   o.data_dir = "/tmp/kp";  o.apiserver_port = 0;  o.nodes = 3;
//   auto cp = ControlPlane::Start(o);          // returns once all serve
//   ... (*cp)->apiserver_url() ...
//   (*cp)->Stop();
//
// Restarting on the same data directory keeps every object: the store is
// durable and the simulated nodes re-register idempotently.
//
// With store_members = 3 the members are separate processes (the same
// binary, `kplane store`, found through `kplane_binary`) so that a user can
// kill the leader and watch the cluster elect another. A member that fails
// (exits non-zero or is killed) is restarted after `store_restart_delay`,
// doubled for each failure in a row up to 5 minutes (the kubelet's
// CrashLoopBackOff) and back to `store_restart_delay` after a run of 10
// minutes; none is restarted when that is zero. A member that exits 0
// (SIGTERM, or removed from the cluster) is left down. Each member's pid
// is in <data_dir>/<name>.pid while it runs.
//
// Thread-safety: Start/Stop from one thread; accessors from any.
#ifndef KPLANE_CMD_KPLANE_CONTROL_PLANE_H_
#define KPLANE_CMD_KPLANE_CONTROL_PLANE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"

namespace kplane::cmd {

struct UpOptions {
  std::string data_dir;  // required
  std::string bind_address = "127.0.0.1";
  int apiserver_port = 6443;  // 0: ephemeral
  // 1: embedded member; 3: three `kplane store` processes.
  int store_members = 1;
  // Client port of the (first) store member; members 2 and 3 use
  // store_port + 20000 and + 30000 (etcd's own Procfile convention: 2379,
  // 22379, 32379), peers the client port + 1. 0: ephemeral (embedded only).
  int store_port = 2379;
  // Path of the kplane binary, for store_members = 3.
  std::string kplane_binary;
  Duration store_restart_delay = seconds(3);
  // The API server's store client with store_members = 3: "json" or
  // "grpc" (storage/client/grpc_kv.h).
  std::string store_protocol = "json";
  Duration compaction_interval = minutes(5);

  int nodes = 3;  // simulated nodes; 0: none
  std::string node_prefix = "node-";
  int kubeletsim_port = 10250;  // control endpoint; 0: ephemeral, -1: none
  bool controllers = true;
  int controller_manager_port = 10257;  // 0: ephemeral, -1: none
  // Node lifecycle settings (kube-controller-manager's defaults).
  Duration node_monitor_grace_period = seconds(40);
  Duration node_monitor_period = seconds(5);
  int percentage_of_nodes_to_score = 0;  // the scheduler's; 0 adaptive
  Duration pod_eviction_timeout = seconds(300);
  Duration lease_renew_interval = seconds(10);
  // Node pod CIDRs, cut by the controller manager's node IPAM (its
  // --cluster-cidr / --node-cidr-mask-size). Empty, or without controllers:
  // every simulated node registers its own /24 of 10.64.0.0/10.
  std::string cluster_cidr = "10.64.0.0/10";
  int node_cidr_mask_size = 24;

  // Written once the API server serves; empty: none.
  std::string kubeconfig_out;

  // Encryption at rest (kube-apiserver's --encryption-provider-config).
  // A path: that configuration. Empty with secrets_encryption (the
  // default): <data_dir>/encryption-config.yaml, written on first start with
  // a fresh random aesgcm key for Secrets (mode 0600) and reused after
  // (EnsureEncryptionConfig). secrets_encryption = false and no path: values
  // are stored plain.
  bool secrets_encryption = true;
  std::string encryption_provider_config;

  // TLS (docs/security.md): by default every API server, controller
  // manager and simulated-node endpoint serves HTTPS with certificates from
  // <data_dir>/pki (cluster_pki.h, created on first start and reused), the
  // components connect with their own client certificates, and the
  // kubeconfig carries the CA and the admin's certificate. true: all of
  // them speak plain HTTP, as before issue 18 (development only). The
  // store stays plain HTTP on loopback either way for now.
  bool insecure_http = false;
};

class ControlPlane {
 public:
  // Refuses bad options (ValidateUpOptions) before doing anything, then
  // takes <data_dir>/kplane.lock (kFailedPrecondition while another control
  // plane holds it) for the life of the control plane. `interrupted`, when
  // set (from another thread, e.g. on SIGINT), abandons the start:
  // everything started so far is stopped and kCancelled returned.
  static StatusOr<std::unique_ptr<ControlPlane>> Start(
      UpOptions options, const std::atomic<bool>* interrupted = nullptr);
  ~ControlPlane();  // Stop()
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  void Stop();

  std::string apiserver_url() const;
  // Client URLs of the store members ("http://127.0.0.1:2379", ...).
  std::vector<std::string> store_endpoints() const;
  // Control endpoint of the simulated nodes ("" when none).
  std::string kubeletsim_url() const;
  std::string controller_manager_url() const;
  // <data_dir>/pki ("" with insecure_http).
  std::string pki_dir() const;
  // A few lines telling a user where everything is.
  std::string Summary() const;

 private:
  struct Impl;
  explicit ControlPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// kInvalidArgument naming the flag of the first bad option: a port outside
// 0..65535 (-1 too for the kubeletsim and controller manager ports), a
// member port of --store-nodes 3 past 65535, --store-nodes other than 1 or
// 3, an unknown --etcd-protocol, a negative duration. Does nothing else.
Status ValidateUpOptions(const UpOptions& options);

// The default encryption configuration of `kplane up`: its path,
// <data_dir>/encryption-config.yaml, created (0600, one random 32-byte aesgcm
// key for Secrets, identity as a reader for Secrets written before) if it is
// not there; an existing file is used as it is.
StatusOr<std::string> EnsureEncryptionConfig(const std::string& data_dir);

// What a kubeconfig's cluster and user carry for TLS (PEM text; written
// base64-encoded as the *-data fields, as kubeadm's admin.conf).
struct KubeconfigCredentials {
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
};

// Writes a kubeconfig (mode 0600, atomically) with one cluster/context/user
// named "kplane" whose server is `server`, whose namespace is "default" and
// whose cluster and user carry `credentials` (the fields left out when
// empty).
Status WriteKubeconfig(const std::string& path, const std::string& server,
                       const KubeconfigCredentials& credentials = {});

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_CONTROL_PLANE_H_
