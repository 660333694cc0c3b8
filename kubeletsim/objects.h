// The API objects a simulated kubelet writes, as pure functions of the
// node's configuration, the pod's spec and the simulation stage, so the
// fleet's I/O code stays small and these can be tested without a server.
//
// Addresses (worked example for node index 300 with the defaults):
//   podCIDR      10.(64 + 300/256).(300%256).0/24 = 10.65.44.0/24, only
//                registered with FleetOptions::register_pod_cidr (indexes
//                below 16,384: disjoint /24s in 10.64.0.0/10); otherwise
//                the controller manager's node IPAM assigns spec.podCIDR
//   pod IPs      the podCIDR's .2 .. .254 (first free, reused on delete;
//                fewer in a CIDR smaller than /24)
//   InternalIP   172.16.0.0 + 300 + 1          = 172.16.1.45
//
// Thread-safety: all functions are pure. Errors: parsers return
// InvalidArgument naming the bad text.
#ifndef KPLANE_KUBELETSIM_OBJECTS_H_
#define KPLANE_KUBELETSIM_OBJECTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "objects/types.h"

namespace kplane::kubeletsim {

namespace corev1 = objects::corev1;
namespace coordinationv1 = objects::coordinationv1;

inline constexpr char kReadyAfterAnnotation[] =
    "kubeletsim.kplane.io/ready-after";
// How long a pod's containers run before they exit, and with which code
// (KWOK-stage style; on the pod, or its template so a Job's pods carry it).
// Without run-for, pods with restartPolicy Never/OnFailure exit after
// FleetOptions::pod_run_duration and pods with Always run until deleted.
inline constexpr char kRunForAnnotation[] = "kubeletsim.kplane.io/run-for";
inline constexpr char kExitCodeAnnotation[] = "kubeletsim.kplane.io/exit-code";
inline constexpr char kKubeletVersion[] = "v1.32.0-kplane";
inline constexpr char kNodeLeaseNamespace[] = "kube-node-lease";

// What every node of a fleet shares.
struct NodeTemplate {
  std::string cpu = "32";
  std::string memory = "256Gi";
  std::string pods = "110";
  std::map<std::string, std::string> labels;  // beyond hostname/os/arch
  std::vector<corev1::Taint> taints;
  std::string kubelet_version = kKubeletVersion;
  int kubelet_port = 10250;  // daemonEndpoints (the fleet's endpoint)
  // Where kube-apiserver reaches the fleet's serving endpoint (pods/log),
  // reported as every node's ExternalIP: the simulated InternalIPs are not
  // routable. Empty: no ExternalIP.
  std::string kubelet_address;
};

// One node's identity.
struct NodeIdentity {
  std::string name;
  int index = 0;  // decides its CIDR and address
  std::string pod_cidr;  // registered with the Node; "" = none
  std::string internal_ip;
  uint32_t pod_net = 0;  // pod_cidr's network address, host byte order
};
NodeIdentity MakeNodeIdentity(std::string name, int index);
std::string FormatIPv4(uint32_t addr);

// The Node as registered (metadata, spec, full status), conditions
// transitioned and heartbeated at `now`.
corev1::Node BuildNode(const NodeTemplate& t, const NodeIdentity& id,
                       WallTime now);
// `status` refreshed for a report at `now`: heartbeat times move; a
// condition whose status differs from the healthy one transitions (its
// lastTransitionTime becomes now). Keeps everything else of `current`.
void RefreshNodeStatus(const NodeTemplate& t, const NodeIdentity& id,
                       WallTime now, corev1::NodeStatus* status);
// True when the reported status lacks what this kubelet would report:
// a condition missing or with another status (e.g. the node lifecycle
// controller set Ready=Unknown), or capacity/allocatable changed. Heartbeat
// times are not compared.
bool NodeStatusDiffers(const NodeTemplate& t, const corev1::NodeStatus& s);

// The node's Lease in kube-node-lease: holderIdentity = node name,
// leaseDurationSeconds, renewTime = now, owned by the Node (if uid known).
coordinationv1::Lease BuildLease(const std::string& node,
                                 const std::string& node_uid,
                                 int lease_duration_seconds, WallTime now);

// Simulated pod stages, in order.
enum class PodStage {
  kCreating,    // Pending, containers waiting ContainerCreating
  kStarted,     // Running, containers started but not ready
  kReady,       // Running, containers ready
  kTerminated,  // containers killed at the pod's deletion (exit
                // PodRuntime::exit_code): Failed unless that is 0
  kCompleted,   // containers exited on their own: Succeeded or Failed by
                // PodRuntime::exit_code
  kBackOff,     // Running, containers exited and waiting CrashLoopBackOff
                // (PodRuntime::back_off) before their next run
};
const char* PodStageName(PodStage s);

struct PodRuntime {
  std::string host_ip;
  std::string pod_ip;    // "" before kStarted
  WallTime start_time;   // when the kubelet first saw the pod
  WallTime started_at;   // containers' start (kStarted+)
  WallTime ready_at;     // kReady+
  WallTime finished_at;  // kTerminated, kCompleted
  int exit_code = 0;     // kCompleted, kTerminated
  // Restarts after an exit (restartPolicy Always, or OnFailure and a
  // non-zero code): the count and the previous run, shown as lastState.
  int restart_count = 0;
  int last_exit_code = 0;
  WallTime last_started_at;
  WallTime last_finished_at;
  // kBackOff: how long the kubelet waits before the next run.
  Duration back_off{0};
};

// The kubelet's CrashLoopBackOff: a container that exits is restarted at
// once the first time, then after 10 s, doubling up to 5 min; a run of 10
// min or more starts the count again. `level` counts the exits since that
// (0 before the first): the wait before the next run is returned and the
// level advanced.
Duration NextCrashLoopBackOff(int* level, Duration last_run);

// The exit code of a container the kubelet kills at the pod's deletion:
// 128 + SIGTERM, as a process that dies of the signal reports.
inline constexpr int kKilledExitCode = 143;

// The pod conditions the kubelet owns and rewrites at every status write
// (kubetypes.PodConditionByKubelet); all others (a controller's, a
// readiness gate's, DisruptionTarget) belong to someone else and are kept.
bool PodConditionByKubelet(std::string_view type);

// The pod's status at `stage`, merged as the kubelet's status manager does
// (generateAPIPodStatus + mergePodStatus): the conditions of pod.status()
// the kubelet does not own come first, unchanged; then the kubelet's, Ready
// also waiting on every spec.readinessGates condition being True
// (GeneratePodReadyCondition). Keeps the scheduler's PodScheduled
// transition time when present.
corev1::PodStatus BuildPodStatus(const corev1::Pod& pod, PodStage stage,
                                 const PodRuntime& rt);

// isPodStatusByKubeletEqual: whether the API's status `api` already says
// what the kubelet would write (`want`): everything but the conditions
// equal, and the kubelet-owned conditions alike in type, status, reason
// and message (their times and others' conditions are not compared).
bool PodStatusByKubeletEqual(const corev1::PodStatus& api,
                             const corev1::PodStatus& want);

// "containerd://<64 hex>" from the pod uid and container name, and a
// "docker.io/library/nginx@sha256:<64 hex>" image id; stable per input.
std::string FakeContainerId(std::string_view pod_uid,
                            std::string_view container);
std::string FakeImageId(std::string_view image);

// "k=v" -> {k, v}.
StatusOr<std::pair<std::string, std::string>> ParseLabel(std::string_view s);
// "key=value:Effect" or "key:Effect" (kubectl taint syntax).
StatusOr<corev1::Taint> ParseTaint(std::string_view s);

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_OBJECTS_H_
