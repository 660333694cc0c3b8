#include "apiserver/registry/printers.h"

#include <algorithm>
#include <set>

#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/machinery/duration.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::apiserver::printers {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types

// SwaggerDoc() texts of k8s.io/api v0.32 used as column descriptions.
constexpr char kNameDoc[] =
    "Name must be unique within a namespace. Is required when creating "
    "resources, although some resources may allow a client to request the "
    "generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot "
    "be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/"
    "names#names";
constexpr char kCreationTimestampDoc[] =
    "CreationTimestamp is a timestamp representing the server time when this "
    "object was created. It is not guaranteed to be set in happens-before "
    "order across separate operations. Clients may not set this value. It is "
    "represented in RFC3339 form and is in UTC.\n\nPopulated by the system. "
    "Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";
constexpr char kContainersDoc[] = "Names of each container in the template.";
constexpr char kImagesDoc[] =
    "Images referenced by each container in the template.";

TableColumn NameColumn() { return {"Name", "string", "name", kNameDoc, 0}; }
TableColumn AgeColumn() {
  return {"Age", "string", "", kCreationTimestampDoc, 0};
}
TableColumn Col(const char* name, const char* type, const char* doc,
                int priority = 0) {
  return {name, type, "", doc, priority};
}

TableCell S(std::string s) { return TableCell::Str(std::move(s)); }
TableCell I(int64_t n) { return TableCell::Int(n); }

std::string Age(const objects::metav1::ObjectMeta& m, WallTime now) {
  return TranslateTimestampSince(m.creationtimestamp(), now);
}

// layoutContainerCells: names and images comma-joined.
std::pair<std::string, std::string> ContainerCells(
    const google::protobuf::RepeatedPtrField<Container>& containers) {
  std::vector<std::string> names, images;
  for (const auto& c : containers) {
    names.push_back(c.name());
    images.push_back(c.image());
  }
  return {StrJoin(names, ","), StrJoin(images, ",")};
}

std::string FormatLabels(const validation::StringMap& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> parts;
  for (const auto& k : keys) parts.push_back(k + "=" + m.at(k));
  std::string s = StrJoin(parts, ",");
  return s.empty() ? "<none>" : s;
}

bool IsZeroTime(const objects::metav1::Time& t) { return objects::IsZero(t); }

int64_t Seconds(const objects::metav1::Time& t) {
  return objects::UnixSeconds(t);
}

}  // namespace

std::string TranslateTimestampSince(const objects::metav1::Time& t,
                                    WallTime now) {
  if (objects::IsZero(t)) return "<unknown>";
  auto d = now - objects::ToWallTime(t);
  return machinery::HumanDuration(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

std::string TranslateMicroTimestampSince(const objects::metav1::MicroTime& t,
                                         WallTime now) {
  if (objects::IsZero(t)) return "<unknown>";
  auto d = now - objects::ToWallTime(t);
  return machinery::HumanDuration(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

std::vector<TableColumn> DefaultColumns() {
  return {NameColumn(), {"Created At", "date", "", kCreationTimestampDoc, 0}};
}

std::vector<TableCell> DefaultRow(const objects::metav1::ObjectMeta& meta) {
  std::string created;
  if (!objects::IsZero(meta.creationtimestamp())) {
    created =
        objects::FormatRfc3339(objects::UnixSeconds(meta.creationtimestamp()));
  } else {
    created = "0001-01-01T00:00:00Z";
  }
  return {S(meta.name()), S(created)};
}

// --- pods ---

std::vector<TableColumn> PodColumns() {
  return {
      NameColumn(),
      Col("Ready", "string",
          "The aggregate readiness state of this pod for accepting traffic."),
      Col("Status", "string",
          "The aggregate status of the containers in this pod."),
      Col("Restarts", "string",
          "The number of times the containers in this pod have been restarted "
          "and when the last container in this pod has restarted."),
      AgeColumn(),
      Col("IP", "string",
          "podIP address allocated to the pod. Routable at least within the "
          "cluster. Empty if not yet allocated.",
          1),
      Col("Node", "string",
          "NodeName indicates in which node this pod is scheduled. If empty, "
          "this pod is a candidate for scheduling by the scheduler defined in "
          "schedulerName. Once this field is set, the kubelet for this node "
          "becomes responsible for the lifecycle of this pod. This field "
          "should not be used to express a desire for the pod to be scheduled "
          "on a specific node. "
          "https://kubernetes.io/docs/concepts/scheduling-eviction/"
          "assign-pod-node/#nodename",
          1),
      Col("Nominated Node", "string",
          "nominatedNodeName is set only when this pod preempts other pods on "
          "the node, but it cannot be scheduled right away as preemption "
          "victims receive their graceful termination periods. This field "
          "does not guarantee that the pod will be scheduled on this node. "
          "Scheduler may decide to place the pod elsewhere if other nodes "
          "become available sooner. Scheduler may also decide to give the "
          "resources on this node to a higher priority pod that is created "
          "after preemption. As a result, this field may be different than "
          "PodSpec.nodeName when the pod is scheduled.",
          1),
      Col("Readiness Gates", "string",
          "If specified, all readiness gates will be evaluated for pod "
          "readiness. A pod is ready when all its containers are ready AND "
          "all conditions specified in the readiness gates have status equal "
          "to \"True\" More info: "
          "https://git.k8s.io/enhancements/keps/sig-network/"
          "580-pod-readiness-gates",
          1),
  };
}

std::vector<TableCell> PodRow(const Pod& pod, WallTime now) {
  const PodSpec& spec = pod.spec();
  const PodStatus& status = pod.status();
  int restarts = 0;
  int restartable_init_restarts = 0;
  int total = spec.containers_size();
  int ready = 0;
  int64_t last_restart = 0;  // unix seconds; 0 = none
  int64_t last_restartable_init_restart = 0;

  std::string reason = status.phase();
  if (!status.reason().empty()) reason = status.reason();
  for (const auto& c : status.conditions()) {
    if (c.type() == "PodScheduled" && c.reason() == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }

  std::set<std::string> restartable_init;
  for (const auto& c : spec.initcontainers()) {
    if (c.restartpolicy() == "Always") {
      restartable_init.insert(c.name());
      ++total;
    }
  }

  auto finished = [](const ContainerStatus& cs) -> int64_t {
    if (!cs.laststate().has_terminated()) return 0;
    const auto& t = cs.laststate().terminated().finishedat();
    return IsZeroTime(t) ? 0 : Seconds(t);
  };

  bool initializing = false;
  for (int i = 0; i < status.initcontainerstatuses_size(); ++i) {
    const ContainerStatus& c = status.initcontainerstatuses(i);
    restarts += c.restartcount();
    last_restart = std::max(last_restart, finished(c));
    bool restartable = restartable_init.count(c.name()) > 0;
    if (restartable) {
      restartable_init_restarts += c.restartcount();
      last_restartable_init_restart =
          std::max(last_restartable_init_restart, finished(c));
    }
    const ContainerState& st = c.state();
    if (st.has_terminated() && st.terminated().exitcode() == 0) continue;
    if (restartable && c.has_started() && c.started()) {
      if (c.ready()) ++ready;
      continue;
    }
    if (st.has_terminated()) {
      const auto& t = st.terminated();
      if (t.reason().empty()) {
        reason = t.signal() != 0
                     ? "Init:Signal:" + std::to_string(t.signal())
                     : "Init:ExitCode:" + std::to_string(t.exitcode());
      } else {
        reason = "Init:" + t.reason();
      }
    } else if (st.has_waiting() && !st.waiting().reason().empty() &&
               st.waiting().reason() != "PodInitializing") {
      reason = "Init:" + st.waiting().reason();
    } else {
      reason = "Init:" + std::to_string(i) + "/" +
               std::to_string(spec.initcontainers_size());
    }
    initializing = true;
    break;
  }

  bool initialized_true = false;
  for (const auto& c : status.conditions()) {
    if (c.type() == "Initialized" && c.status() == "True") {
      initialized_true = true;
    }
  }
  if (!initializing || initialized_true) {
    restarts = restartable_init_restarts;
    last_restart = last_restartable_init_restart;
    bool has_running = false;
    for (int i = status.containerstatuses_size() - 1; i >= 0; --i) {
      const ContainerStatus& c = status.containerstatuses(i);
      restarts += c.restartcount();
      last_restart = std::max(last_restart, finished(c));
      const ContainerState& st = c.state();
      if (st.has_waiting() && !st.waiting().reason().empty()) {
        reason = st.waiting().reason();
      } else if (st.has_terminated() && !st.terminated().reason().empty()) {
        reason = st.terminated().reason();
      } else if (st.has_terminated()) {
        const auto& t = st.terminated();
        reason = t.signal() != 0 ? "Signal:" + std::to_string(t.signal())
                                 : "ExitCode:" + std::to_string(t.exitcode());
      } else if (c.ready() && st.has_running()) {
        has_running = true;
        ++ready;
      }
    }
    if (reason == "Completed" && has_running) {
      bool pod_ready = false;
      for (const auto& c : status.conditions()) {
        if (c.type() == "Ready" && c.status() == "True") pod_ready = true;
      }
      reason = pod_ready ? "Running" : "NotReady";
    }
  }

  bool deleting = pod.metadata().has_deletiontimestamp() &&
                  !objects::IsZero(pod.metadata().deletiontimestamp());
  bool terminal = status.phase() == "Succeeded" || status.phase() == "Failed";
  if (deleting && status.reason() == "NodeLost") {
    reason = "Unknown";
  } else if (deleting && !terminal) {
    reason = "Terminating";
  }

  std::string restarts_str = std::to_string(restarts);
  if (restarts != 0 && last_restart != 0) {
    objects::metav1::Time t;
    objects::SetTime(&t, last_restart);
    restarts_str += " (" + TranslateTimestampSince(t, now) + " ago)";
  }

  std::string ip = status.podips().empty() ? "" : status.podips(0).ip();
  if (ip.empty()) ip = "<none>";
  std::string node = spec.nodename().empty() ? "<none>" : spec.nodename();
  std::string nominated = status.nominatednodename().empty()
                              ? "<none>"
                              : status.nominatednodename();
  std::string gates = "<none>";
  if (!spec.readinessgates().empty()) {
    int true_conditions = 0;
    for (const auto& g : spec.readinessgates()) {
      for (const auto& c : status.conditions()) {
        if (c.type() == g.conditiontype()) {
          if (c.status() == "True") ++true_conditions;
          break;
        }
      }
    }
    gates = std::to_string(true_conditions) + "/" +
            std::to_string(spec.readinessgates_size());
  }
  return {S(pod.metadata().name()),
          S(std::to_string(ready) + "/" + std::to_string(total)),
          S(reason),
          S(restarts_str),
          S(Age(pod.metadata(), now)),
          S(ip),
          S(node),
          S(nominated),
          S(gates)};
}

// --- nodes ---

std::vector<TableColumn> NodeColumns() {
  return {
      NameColumn(),
      Col("Status", "string", "The status of the node"),
      Col("Roles", "string", "The roles of the node"),
      AgeColumn(),
      Col("Version", "string", "Kubelet Version reported by the node."),
      Col("Internal-IP", "string",
          "List of addresses reachable to the node. Queried from cloud "
          "provider, if available. More info: "
          "https://kubernetes.io/docs/reference/node/node-status/#addresses "
          "Note: This field is declared as mergeable, but the merge key is "
          "not sufficiently unique, which can cause data corruption when it "
          "is merged. Callers should instead use a full-replacement patch. "
          "See https://pr.k8s.io/79391 for an example. Consumers should "
          "assume that addresses can change during the lifetime of a Node. "
          "However, there are some exceptions where this may not be "
          "possible, such as Pods that inherit a Node's address in its own "
          "status or consumers of the downward API (status.hostIP).",
          1),
      Col("External-IP", "string",
          "List of addresses reachable to the node. Queried from cloud "
          "provider, if available. More info: "
          "https://kubernetes.io/docs/reference/node/node-status/#addresses "
          "Note: This field is declared as mergeable, but the merge key is "
          "not sufficiently unique, which can cause data corruption when it "
          "is merged. Callers should instead use a full-replacement patch. "
          "See https://pr.k8s.io/79391 for an example. Consumers should "
          "assume that addresses can change during the lifetime of a Node. "
          "However, there are some exceptions where this may not be "
          "possible, such as Pods that inherit a Node's address in its own "
          "status or consumers of the downward API (status.hostIP).",
          1),
      Col("OS-Image", "string",
          "OS Image reported by the node from /etc/os-release (e.g. Debian "
          "GNU/Linux 7 (wheezy)).",
          1),
      Col("Kernel-Version", "string",
          "Kernel Version reported by the node from 'uname -r' (e.g. "
          "3.16.0-0.bpo.4-amd64).",
          1),
      Col("Container-Runtime", "string",
          "ContainerRuntime Version reported by the node through runtime "
          "remote API (e.g. containerd://1.4.2).",
          1),
  };
}

std::vector<TableCell> NodeRow(const Node& node, WallTime now) {
  std::vector<std::string> status;
  // The last Ready condition wins, as upstream's map does.
  const NodeCondition* ready = nullptr;
  for (const auto& c : node.status().conditions()) {
    if (c.type() == "Ready") ready = &c;
  }
  if (ready != nullptr) {
    status.push_back(ready->status() == "True" ? "Ready" : "NotReady");
  }
  if (status.empty()) status.push_back("Unknown");
  if (node.spec().unschedulable()) status.push_back("SchedulingDisabled");

  std::set<std::string> roles;
  constexpr std::string_view kRolePrefix = "node-role.kubernetes.io/";
  for (const auto& [k, v] : node.metadata().labels()) {
    if (k.substr(0, kRolePrefix.size()) == kRolePrefix) {
      std::string role = k.substr(kRolePrefix.size());
      if (!role.empty()) roles.insert(role);
    } else if (k == "kubernetes.io/role" && !v.empty()) {
      roles.insert(v);
    }
  }
  std::string roles_str =
      StrJoin(std::vector<std::string>(roles.begin(), roles.end()), ",");
  if (roles_str.empty()) roles_str = "<none>";

  auto address = [&](std::string_view type) -> std::string {
    for (const auto& a : node.status().addresses()) {
      if (a.type() == type) return a.address();
    }
    return "<none>";
  };
  auto or_unknown = [](const std::string& s) {
    return s.empty() ? std::string("<unknown>") : s;
  };
  const auto& info = node.status().nodeinfo();
  return {S(node.metadata().name()),
          S(StrJoin(status, ",")),
          S(roles_str),
          S(Age(node.metadata(), now)),
          S(info.kubeletversion()),
          S(address("InternalIP")),
          S(address("ExternalIP")),
          S(or_unknown(info.osimage())),
          S(or_unknown(info.kernelversion())),
          S(or_unknown(info.containerruntimeversion()))};
}

// --- namespaces, configmaps, secrets, leases ---

std::vector<TableColumn> NamespaceColumns() {
  return {NameColumn(), Col("Status", "string", "The status of the namespace"),
          AgeColumn()};
}

std::vector<TableCell> NamespaceRow(const Namespace& ns, WallTime now) {
  return {S(ns.metadata().name()), S(ns.status().phase()),
          S(Age(ns.metadata(), now))};
}

std::vector<TableColumn> ConfigMapColumns() {
  return {NameColumn(),
          Col("Data", "string",
              "Data contains the configuration data. Each key must consist of "
              "alphanumeric characters, '-', '_' or '.'. Values with "
              "non-UTF-8 byte sequences must use the BinaryData field. The "
              "keys stored in Data must not overlap with the keys in the "
              "BinaryData field, this is enforced during validation process."),
          AgeColumn()};
}

std::vector<TableCell> ConfigMapRow(const ConfigMap& cm, WallTime now) {
  return {S(cm.metadata().name()), I(cm.data_size() + cm.binarydata_size()),
          S(Age(cm.metadata(), now))};
}

std::vector<TableColumn> SecretColumns() {
  return {NameColumn(),
          Col("Type", "string",
              "Used to facilitate programmatic handling of secret data. More "
              "info: "
              "https://kubernetes.io/docs/concepts/configuration/secret/"
              "#secret-types"),
          Col("Data", "string",
              "Data contains the secret data. Each key must consist of "
              "alphanumeric characters, '-', '_' or '.'. The serialized form "
              "of the secret data is a base64 encoded string, representing "
              "the arbitrary (possibly non-string) data value here. Described "
              "in https://tools.ietf.org/html/rfc4648#section-4"),
          AgeColumn()};
}

std::vector<TableCell> SecretRow(const Secret& s, WallTime now) {
  // The internal Secret has stringData folded into data.
  std::set<std::string> keys;
  for (const auto& [k, v] : s.data()) keys.insert(k);
  for (const auto& [k, v] : s.stringdata()) keys.insert(k);
  return {S(s.metadata().name()), S(s.type()),
          I(static_cast<int64_t>(keys.size())), S(Age(s.metadata(), now))};
}

std::vector<TableColumn> LeaseColumns() {
  return {NameColumn(),
          Col("Holder", "string",
              "holderIdentity contains the identity of the holder of a "
              "current lease. If Coordinated Leader Election is used, the "
              "holder identity must be equal to the elected "
              "LeaseCandidate.metadata.name field."),
          AgeColumn()};
}

std::vector<TableCell> LeaseRow(const objects::coordinationv1::Lease& l,
                                WallTime now) {
  return {S(l.metadata().name()), S(l.spec().holderidentity()),
          S(Age(l.metadata(), now))};
}

// --- services ---

std::vector<TableColumn> ServiceColumns() {
  return {
      NameColumn(),
      Col("Type", "string",
          "type determines how the Service is exposed. Defaults to ClusterIP. "
          "Valid options are ExternalName, ClusterIP, NodePort, and "
          "LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP "
          "address for load-balancing to endpoints. Endpoints are determined "
          "by the selector or if that is not specified, by manual "
          "construction of an Endpoints object or EndpointSlice objects. If "
          "clusterIP is \"None\", no virtual IP is allocated and the "
          "endpoints are published as a set of endpoints rather than a "
          "virtual IP. \"NodePort\" builds on ClusterIP and allocates a port "
          "on every node which routes to the same endpoints as the "
          "clusterIP. \"LoadBalancer\" builds on NodePort and creates an "
          "external load-balancer (if supported in the current cloud) which "
          "routes to the same endpoints as the clusterIP. \"ExternalName\" "
          "aliases this service to the specified externalName. Several other "
          "fields do not apply to ExternalName services. More info: "
          "https://kubernetes.io/docs/concepts/services-networking/service/"
          "#publishing-services-service-types"),
      Col("Cluster-IP", "string",
          "clusterIP is the IP address of the service and is usually "
          "assigned randomly. If an address is specified manually, is "
          "in-range (as per system configuration), and is not in use, it "
          "will be allocated to the service; otherwise creation of the "
          "service will fail. This field may not be changed through updates "
          "unless the type field is also being changed to ExternalName "
          "(which requires this field to be blank) or the type field is "
          "being changed from ExternalName (in which case this field may "
          "optionally be specified, as describe above).  Valid values are "
          "\"None\", empty string (\"\"), or a valid IP address. Setting "
          "this to \"None\" makes a \"headless service\" (no virtual IP), "
          "which is useful when direct endpoint connections are preferred "
          "and proxying is not required.  Only applies to types ClusterIP, "
          "NodePort, and LoadBalancer. If this field is specified when "
          "creating a Service of type ExternalName, creation will fail. This "
          "field will be wiped when updating a Service to type ExternalName. "
          "More info: "
          "https://kubernetes.io/docs/concepts/services-networking/service/"
          "#virtual-ips-and-service-proxies"),
      Col("External-IP", "string",
          "externalIPs is a list of IP addresses for which nodes in the "
          "cluster will also accept traffic for this service.  These IPs are "
          "not managed by Kubernetes.  The user is responsible for ensuring "
          "that traffic arrives at a node with this IP.  A common example is "
          "external load-balancers that are not part of the Kubernetes "
          "system."),
      Col("Port(s)", "string",
          "The list of ports that are exposed by this service. More info: "
          "https://kubernetes.io/docs/concepts/services-networking/service/"
          "#virtual-ips-and-service-proxies"),
      AgeColumn(),
      Col("Selector", "string",
          "Route service traffic to pods with label keys and values matching "
          "this selector. If empty or not present, the service is assumed to "
          "have an external process managing its endpoints, which Kubernetes "
          "will not modify. Only applies to types ClusterIP, NodePort, and "
          "LoadBalancer. Ignored if type is ExternalName. More info: "
          "https://kubernetes.io/docs/concepts/services-networking/service/",
          1),
  };
}

std::vector<TableCell> ServiceRow(const Service& svc, WallTime now) {
  const ServiceSpec& spec = svc.spec();
  std::string cluster_ip =
      spec.clusterips().empty() ? "<none>" : spec.clusterips(0);
  auto join_external = [&]() {
    return StrJoin(std::vector<std::string>(spec.externalips().begin(),
                                            spec.externalips().end()),
                   ",");
  };
  std::string external;
  const std::string& type = spec.type();
  if (type == "ClusterIP" || type == "NodePort") {
    external = spec.externalips().empty() ? "<none>" : join_external();
  } else if (type == "LoadBalancer") {
    std::set<std::string> lb;
    for (const auto& ing : svc.status().loadbalancer().ingress()) {
      if (!ing.ip().empty()) {
        lb.insert(ing.ip());
      } else if (!ing.hostname().empty()) {
        lb.insert(ing.hostname());
      }
    }
    std::string lb_ips =
        StrJoin(std::vector<std::string>(lb.begin(), lb.end()), ",");
    if (!spec.externalips().empty()) {
      external =
          lb_ips.empty() ? join_external() : lb_ips + "," + join_external();
    } else {
      external = lb_ips.empty() ? "<pending>" : lb_ips;
    }
  } else if (type == "ExternalName") {
    external = spec.externalname();
  } else {
    external = "<unknown>";
  }
  std::vector<std::string> ports;
  for (const auto& p : spec.ports()) {
    if (p.nodeport() > 0) {
      ports.push_back(std::to_string(p.port()) + ":" +
                      std::to_string(p.nodeport()) + "/" + p.protocol());
    } else {
      ports.push_back(std::to_string(p.port()) + "/" + p.protocol());
    }
  }
  std::string ports_str = StrJoin(ports, ",");
  if (ports_str.empty()) ports_str = "<none>";
  return {S(svc.metadata().name()),
          S(type),
          S(cluster_ip),
          S(external),
          S(ports_str),
          S(Age(svc.metadata(), now)),
          S(FormatLabels(spec.selector()))};
}

// --- events ---

std::vector<TableColumn> EventColumns() {
  return {
      Col("Last Seen", "string",
          "The time at which the most recent occurrence of this event was "
          "recorded."),
      Col("Type", "string",
          "Type of this event (Normal, Warning), new types could be added in "
          "the future"),
      Col("Reason", "string",
          "This should be a short, machine understandable string that gives "
          "the reason for the transition into the object's current status."),
      Col("Object", "string", "The object that this event is about."),
      Col("Subobject", "string",
          "If referring to a piece of an object instead of an entire object, "
          "this string should contain a valid JSON/Go field access "
          "statement, such as desiredState.manifest.containers[2]. For "
          "example, if the object reference is to a container within a pod, "
          "this would take on a value like: \"spec.containers{name}\" (where "
          "\"name\" refers to the name of the container that triggered the "
          "event) or if no container name is specified \"spec.containers[2]\" "
          "(container with index 2 in this pod). This syntax is chosen only "
          "to have some well-defined way of referencing a part of an object.",
          1),
      Col("Source", "string",
          "The component reporting this event. Should be a short machine "
          "understandable string.",
          1),
      Col("Message", "string",
          "A human-readable description of the status of this operation."),
      Col("First Seen", "string",
          "The time at which the event was first recorded. (Time of server "
          "receipt is in TypeMeta.)",
          1),
      Col("Count", "string", "The number of times this event has occurred.", 1),
      {"Name", "string", "name", kNameDoc, 1},
  };
}

std::vector<TableCell> EventRow(const Event& ev, WallTime now) {
  std::string first = TranslateTimestampSince(ev.firsttimestamp(), now);
  if (objects::IsZero(ev.firsttimestamp())) {
    first = TranslateMicroTimestampSince(ev.eventtime(), now);
  }
  std::string last = TranslateTimestampSince(ev.lasttimestamp(), now);
  if (objects::IsZero(ev.lasttimestamp())) last = first;
  int64_t count = ev.count();
  if (ev.has_series()) {
    last = TranslateMicroTimestampSince(ev.series().lastobservedtime(), now);
    count = ev.series().count();
  } else if (count == 0) {
    count = 1;
  }
  const ObjectReference& io = ev.involvedobject();
  std::string target = ToLower(io.kind());
  if (!io.name().empty()) target += "/" + io.name();
  std::string component = ev.source().component().empty()
                              ? ev.reportingcomponent()
                              : ev.source().component();
  std::string instance =
      ev.source().host().empty() ? ev.reportinginstance() : ev.source().host();
  std::string source =
      instance.empty() ? component : component + ", " + instance;
  return {S(last),
          S(ev.type()),
          S(ev.reason()),
          S(target),
          S(io.fieldpath()),
          S(source),
          S(std::string(StripWhitespace(ev.message()))),
          S(first),
          I(count),
          S(ev.metadata().name())};
}

// --- apps ---

std::vector<TableColumn> DeploymentColumns() {
  return {
      NameColumn(),
      Col("Ready", "string", "Number of the pod with ready state"),
      Col("Up-to-date", "string",
          "Total number of non-terminated pods targeted by this deployment "
          "that have the desired template spec."),
      Col("Available", "string",
          "Total number of available pods (ready for at least "
          "minReadySeconds) targeted by this deployment."),
      AgeColumn(),
      Col("Containers", "string", kContainersDoc, 1),
      Col("Images", "string", kImagesDoc, 1),
      Col("Selector", "string",
          "Label selector for pods. Existing ReplicaSets whose pods are "
          "selected by this will be the ones affected by this deployment.",
          1),
  };
}

std::vector<TableCell> DeploymentRow(const objects::appsv1::Deployment& d,
                                     WallTime now) {
  auto [names, images] =
      ContainerCells(d.spec().template_().spec().containers());
  auto sel = validation::AsSelector(
      d.spec().has_selector() ? &d.spec().selector() : nullptr);
  std::string selector = sel ? sel->String() : "<invalid>";
  return {S(d.metadata().name()),
          S(std::to_string(d.status().readyreplicas()) + "/" +
            std::to_string(d.spec().replicas())),
          I(d.status().updatedreplicas()),
          I(d.status().availablereplicas()),
          S(Age(d.metadata(), now)),
          S(names),
          S(images),
          S(selector)};
}

std::vector<TableColumn> ReplicaSetColumns() {
  return {
      NameColumn(),
      Col("Desired", "integer",
          "Replicas is the number of desired replicas. This is a pointer to "
          "distinguish between explicit zero and unspecified. Defaults to 1. "
          "More info: "
          "https://kubernetes.io/docs/concepts/workloads/controllers/"
          "replicationcontroller/#what-is-a-replicationcontroller"),
      Col("Current", "integer",
          "Replicas is the most recently observed number of replicas. More "
          "info: "
          "https://kubernetes.io/docs/concepts/workloads/controllers/"
          "replicationcontroller/#what-is-a-replicationcontroller"),
      Col("Ready", "integer",
          "The number of ready replicas for this replica set."),
      AgeColumn(),
      Col("Containers", "string", kContainersDoc, 1),
      Col("Images", "string", kImagesDoc, 1),
      Col("Selector", "string",
          "Selector is a label query over pods that should match the replica "
          "count. If the selector is empty, it is defaulted to the labels "
          "present on the pod template. Label keys and values that must "
          "match in order to be controlled by this replica set. More info: "
          "https://kubernetes.io/docs/concepts/overview/working-with-objects/"
          "labels/#label-selectors",
          1),
  };
}

std::vector<TableCell> ReplicaSetRow(const objects::appsv1::ReplicaSet& rs,
                                     WallTime now) {
  auto [names, images] =
      ContainerCells(rs.spec().template_().spec().containers());
  // metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid.
  std::string selector;
  if (!rs.spec().has_selector()) {
    selector = "<none>";
  } else {
    auto sel = validation::AsSelector(&rs.spec().selector());
    if (!sel) {
      selector = "<error>";
    } else {
      selector = sel->String();
      if (selector.empty()) selector = "<none>";
    }
  }
  return {S(rs.metadata().name()),
          I(rs.spec().replicas()),
          I(rs.status().replicas()),
          I(rs.status().readyreplicas()),
          S(Age(rs.metadata(), now)),
          S(names),
          S(images),
          S(selector)};
}

std::vector<TableColumn> ServiceAccountColumns() {
  return {NameColumn(),
          Col("Secrets", "string",
              "Secrets is a list of the secrets in the same namespace that "
              "pods running using this ServiceAccount are allowed to use. "
              "Pods are only limited to this list if this service account "
              "has a \"kubernetes.io/enforce-mountable-secrets\" annotation "
              "set to \"true\". The \"kubernetes.io/enforce-mountable-"
              "secrets\" annotation is deprecated since v1.32. Prefer "
              "separate namespaces to isolate access to mounted secrets. This "
              "field should not be used to find auto-generated service "
              "account token secrets for use outside of pods. Instead, tokens "
              "can be requested directly using the TokenRequest API, or "
              "service account token secrets can be manually created. More "
              "info: https://kubernetes.io/docs/concepts/configuration/secret"),
          AgeColumn()};
}

std::vector<TableCell> ServiceAccountRow(
    const objects::corev1::ServiceAccount& sa, WallTime now) {
  return {S(sa.metadata().name()), I(sa.secrets_size()),
          S(Age(sa.metadata(), now))};
}

std::vector<TableColumn> StatefulSetColumns() {
  return {NameColumn(),
          Col("Ready", "string", "Number of the pod with ready state"),
          AgeColumn(), Col("Containers", "string", kContainersDoc, 1),
          Col("Images", "string", kImagesDoc, 1)};
}

std::vector<TableCell> StatefulSetRow(const objects::appsv1::StatefulSet& s,
                                      WallTime now) {
  auto [names, images] =
      ContainerCells(s.spec().template_().spec().containers());
  return {S(s.metadata().name()),
          S(std::to_string(s.status().readyreplicas()) + "/" +
            std::to_string(s.spec().replicas())),
          S(Age(s.metadata(), now)), S(names), S(images)};
}

std::vector<TableColumn> DaemonSetColumns() {
  return {
      NameColumn(),
      Col("Desired", "integer",
          "The total number of nodes that should be running the daemon pod "
          "(including nodes correctly running the daemon pod). More info: "
          "https://kubernetes.io/docs/concepts/workloads/controllers/"
          "daemonset/"),
      Col("Current", "integer",
          "The number of nodes that are running at least 1 daemon pod and "
          "are supposed to run the daemon pod. More info: "
          "https://kubernetes.io/docs/concepts/workloads/controllers/"
          "daemonset/"),
      Col("Ready", "integer",
          "numberReady is the number of nodes that should be running the "
          "daemon pod and have one or more of the daemon pod running with a "
          "Ready Condition."),
      Col("Up-to-date", "integer",
          "The total number of nodes that are running updated daemon pod"),
      Col("Available", "integer",
          "The number of nodes that should be running the daemon pod and "
          "have one or more of the daemon pod running and available (ready "
          "for at least spec.minReadySeconds)"),
      Col("Node Selector", "string",
          "NodeSelector is a selector which must be true for the pod to fit "
          "on a node. Selector which must match a node's labels for the pod "
          "to be scheduled on that node. More info: "
          "https://kubernetes.io/docs/concepts/configuration/"
          "assign-pod-node/"),
      AgeColumn(),
      Col("Containers", "string", kContainersDoc, 1),
      Col("Images", "string", kImagesDoc, 1),
      Col("Selector", "string",
          "A label query over pods that are managed by the daemon set. Must "
          "match in order to be controlled. It must match the pod "
          "template's labels. More info: "
          "https://kubernetes.io/docs/concepts/overview/working-with-objects/"
          "labels/#label-selectors",
          1),
  };
}

std::vector<TableCell> DaemonSetRow(const objects::appsv1::DaemonSet& ds,
                                    WallTime now) {
  auto [names, images] =
      ContainerCells(ds.spec().template_().spec().containers());
  auto sel = validation::AsSelector(
      ds.spec().has_selector() ? &ds.spec().selector() : nullptr);
  const auto& st = ds.status();
  return {S(ds.metadata().name()),
          I(st.desirednumberscheduled()),
          I(st.currentnumberscheduled()),
          I(st.numberready()),
          I(st.updatednumberscheduled()),
          I(st.numberavailable()),
          S(FormatLabels(ds.spec().template_().spec().nodeselector())),
          S(Age(ds.metadata(), now)),
          S(names),
          S(images),
          S(sel ? sel->String() : "<invalid>")};
}

}  // namespace kplane::apiserver::printers

namespace kplane::apiserver::printers {

// --- batch ---

namespace {

// The Selector column of jobs and cronjobs (a CronJob shows its job
// template's).
TableColumn JobSelectorColumn() {
  return Col("Selector", "string",
             "A label query over pods that should match the pod count. "
             "Normally, the system sets this field for you. More info: "
             "https://kubernetes.io/docs/concepts/overview/"
             "working-with-objects/labels/#label-selectors",
             1);
}

std::string JobSelectorCell(const objects::batchv1::JobSpec& spec) {
  if (!spec.has_selector()) return "<none>";
  auto sel = validation::AsSelector(&spec.selector());
  return !sel ? "<error>" : sel->Empty() ? "<none>" : sel->String();
}

}  // namespace

std::vector<TableColumn> JobColumns() {
  return {
      NameColumn(),
      Col("Status", "string", "Status of the job."),
      Col("Completions", "string",
          "The number of pods which reached phase Succeeded. The value "
          "increases monotonically for a given spec. However, it may decrease "
          "in reaction to scale down of elastic indexed jobs."),
      Col("Duration", "string", "Time required to complete the job."),
      AgeColumn(),
      Col("Containers", "string", kContainersDoc, 1),
      Col("Images", "string", kImagesDoc, 1),
      JobSelectorColumn(),
  };
}

std::vector<TableCell> JobRow(const objects::batchv1::Job& job, WallTime now) {
  auto has = [&](std::string_view type) {
    for (const auto& c : job.status().conditions()) {
      if (c.type() == type && c.status() == "True") return true;
    }
    return false;
  };
  std::string status = has("Complete")                           ? "Complete"
                       : has("Failed")                           ? "Failed"
                       : objects::IsBeingDeleted(job.metadata()) ? "Terminating"
                       : has("Suspended")                        ? "Suspended"
                       : has("FailureTarget")      ? "FailureTarget"
                       : has("SuccessCriteriaMet") ? "SuccessCriteriaMet"
                                                   : "Running";
  const auto& spec = job.spec();
  const std::string succeeded = std::to_string(job.status().succeeded());
  std::string completions;
  if (spec.has_completions()) {
    completions = succeeded + "/" + std::to_string(spec.completions());
  } else if (spec.parallelism() > 1) {
    completions = succeeded + "/1 of " + std::to_string(spec.parallelism());
  } else {
    completions = succeeded + "/1";
  }
  std::string duration;
  if (job.status().has_starttime()) {
    WallTime end = job.status().has_completiontime()
                       ? objects::ToWallTime(job.status().completiontime())
                       : now;
    duration = machinery::HumanDuration(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            end - objects::ToWallTime(job.status().starttime()))
            .count());
  }
  auto [names, images] = ContainerCells(spec.template_().spec().containers());
  return {S(job.metadata().name()),
          S(status),
          S(completions),
          S(duration),
          S(Age(job.metadata(), now)),
          S(names),
          S(images),
          S(JobSelectorCell(spec))};
}

std::vector<TableColumn> CronJobColumns() {
  return {
      NameColumn(),
      Col("Schedule", "string",
          "The schedule in Cron format, see "
          "https://en.wikipedia.org/wiki/Cron."),
      Col("Timezone", "string",
          "The time zone name for the given schedule, see "
          "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If "
          "not specified, this will default to the time zone of the "
          "kube-controller-manager process. The set of valid time zone names "
          "and the time zone offset is loaded from the system-wide time zone "
          "database by the API server during CronJob validation and the "
          "controller manager during execution. If no system-wide time zone "
          "database can be found a bundled version of the database is used "
          "instead. If the time zone name becomes invalid during the "
          "lifetime of a CronJob or due to a change in host configuration, "
          "the controller will stop creating new new Jobs and will create a "
          "system event with the reason UnknownTimeZone. More information "
          "can be found in "
          "https://kubernetes.io/docs/concepts/workloads/controllers/"
          "cron-jobs/#time-zones"),
      Col("Suspend", "boolean",
          "This flag tells the controller to suspend subsequent executions, "
          "it does not apply to already started executions.  Defaults to "
          "false."),
      Col("Active", "integer", "A list of pointers to currently running jobs."),
      Col("Last Schedule", "string",
          "Information when was the last time the job was successfully "
          "scheduled."),
      AgeColumn(),
      Col("Containers", "string", kContainersDoc, 1),
      Col("Images", "string", kImagesDoc, 1),
      JobSelectorColumn(),
  };
}

std::vector<TableCell> CronJobRow(const objects::batchv1::CronJob& cj,
                                  WallTime now) {
  const auto& spec = cj.spec();
  std::string last = "<none>";
  if (cj.status().has_lastscheduletime()) {
    last = TranslateTimestampSince(cj.status().lastscheduletime(), now);
  }
  const auto& job_spec = spec.jobtemplate().spec();
  auto [names, images] =
      ContainerCells(job_spec.template_().spec().containers());
  return {S(cj.metadata().name()),
          S(spec.schedule()),
          S(spec.has_timezone() ? spec.timezone() : "<none>"),
          S(!spec.has_suspend() ? "<unset>"
            : spec.suspend()    ? "True"
                                : "False"),
          I(cj.status().active_size()),
          S(last),
          S(Age(cj.metadata(), now)),
          S(names),
          S(images),
          S(JobSelectorCell(job_spec))};
}

std::vector<TableColumn> EndpointsColumns() {
  return {NameColumn(),
          Col("Endpoints", "string",
              "The set of all endpoints is the union of all subsets. "
              "Addresses are placed into subsets according to the IPs they "
              "share. A single address with multiple ports, some of which are "
              "ready and some of which are not (because they come from "
              "different containers) will result in the address being "
              "displayed in different subsets for the different ports. No "
              "address will appear in both Addresses and NotReadyAddresses in "
              "the same subset. Sets of addresses and ports that comprise a "
              "service."),
          AgeColumn()};
}

// kube's formatEndpoints: the first three ready ip:port pairs (bare IPs for
// a subset without ports), then " + N more...".
std::vector<TableCell> EndpointsRow(const objects::corev1::Endpoints& ep,
                                    WallTime now) {
  constexpr size_t kMax = 3;
  std::vector<std::string> shown;
  size_t count = 0;
  auto add = [&](std::string s) {
    ++count;
    if (shown.size() < kMax) shown.push_back(std::move(s));
  };
  for (const auto& ss : ep.subsets()) {
    if (ss.ports().empty()) {
      for (const auto& a : ss.addresses()) add(a.ip());
      continue;
    }
    for (const auto& port : ss.ports()) {
      for (const auto& a : ss.addresses()) {
        const bool v6 = a.ip().find(':') != std::string::npos;
        add((v6 ? "[" + a.ip() + "]" : a.ip()) + ":" +
            std::to_string(port.port()));
      }
    }
  }
  std::string endpoints = StrJoin(shown, ",");
  if (ep.subsets().empty()) {
    endpoints = "<none>";
  } else if (count > kMax) {
    endpoints += " + " + std::to_string(count - kMax) + " more...";
  }
  return {S(ep.metadata().name()), S(endpoints), S(Age(ep.metadata(), now))};
}

namespace {

// kube's listWithMoreString.
std::string ListWithMore(const std::vector<std::string>& shown, size_t count,
                         size_t max) {
  std::string out = StrJoin(shown, ",");
  if (count > max)
    return out + " + " + std::to_string(count - max) + " more...";
  return out.empty() ? "<unset>" : out;
}

}  // namespace

std::vector<TableColumn> EndpointSliceColumns() {
  return {NameColumn(),
          Col("AddressType", "string",
              "addressType specifies the type of address carried by this "
              "EndpointSlice. All addresses in this slice must be the same "
              "type. This field is immutable after creation. The following "
              "address types are currently supported: * IPv4: Represents an "
              "IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: "
              "Represents a Fully Qualified Domain Name."),
          Col("Ports", "string",
              "ports specifies the list of network ports exposed by each "
              "endpoint in this slice. Each port must have a unique name. When "
              "ports is empty, it indicates that there are no defined ports. "
              "When a port is defined with a nil port value, it indicates "
              "\"all ports\". Each slice may include a maximum of 100 ports."),
          Col("Endpoints", "string",
              "endpoints is a list of unique endpoints in this slice. Each "
              "slice may include a maximum of 1000 endpoints."),
          AgeColumn()};
}

std::vector<TableCell> EndpointSliceRow(
    const objects::discoveryv1::EndpointSlice& slice, WallTime now) {
  constexpr size_t kMax = 3;
  std::vector<std::string> ports;
  for (const auto& port : slice.ports()) {
    if (ports.size() == kMax) break;
    if (port.has_port()) {
      ports.push_back(std::to_string(port.port()));
    } else {
      ports.push_back(port.has_name() ? port.name() : "*");
    }
  }
  std::vector<std::string> addresses;
  size_t address_count = 0;
  for (const auto& endpoint : slice.endpoints()) {
    for (const auto& address : endpoint.addresses()) {
      if (addresses.size() < kMax) addresses.push_back(address);
      ++address_count;
    }
  }
  return {S(slice.metadata().name()), S(slice.addresstype()),
          S(ListWithMore(ports, static_cast<size_t>(slice.ports_size()), kMax)),
          S(ListWithMore(addresses, address_count, kMax)),
          S(Age(slice.metadata(), now))};
}

std::vector<TableColumn> PodDisruptionBudgetColumns() {
  return {NameColumn(),
          Col("Min Available", "string",
              "The minimum number of pods that must be available"),
          Col("Max Unavailable", "string",
              "The maximum number of pods that may be unavailable"),
          Col("Allowed Disruptions", "integer",
              "Calculated number of pods that may be disrupted at this time"),
          AgeColumn()};
}

std::vector<TableCell> PodDisruptionBudgetRow(
    const objects::policyv1::PodDisruptionBudget& pdb, WallTime now) {
  // IntOrString.String().
  auto text = [](bool set, const objects::intstr::IntOrString& v) {
    if (!set) return std::string("N/A");
    return v.type() == 1 ? v.strval() : std::to_string(v.intval());
  };
  return {S(pdb.metadata().name()),
          S(text(pdb.spec().has_minavailable(), pdb.spec().minavailable())),
          S(text(pdb.spec().has_maxunavailable(), pdb.spec().maxunavailable())),
          TableCell::Int(pdb.status().disruptionsallowed()),
          S(Age(pdb.metadata(), now))};
}

std::vector<TableColumn> ControllerRevisionColumns() {
  return {NameColumn(), Col("Controller", "string", "Controller of the object"),
          Col("Revision", "string",
              "Revision indicates the revision of the state represented by "
              "Data."),
          AgeColumn()};
}

std::vector<TableCell> ControllerRevisionRow(
    const objects::appsv1::ControllerRevision& cr, WallTime now) {
  std::string controller = "<none>";
  for (const auto& ref : cr.metadata().ownerreferences()) {
    if (!ref.controller()) continue;
    // GroupKind.String(), lower-cased: "DaemonSet.apps" -> "daemonset.apps".
    const std::string& api_version = ref.apiversion();
    size_t slash = api_version.find('/');
    std::string kind = ref.kind();
    if (slash != std::string::npos) kind += "." + api_version.substr(0, slash);
    controller = ToLower(kind) + "/" + ref.name();
    break;
  }
  return {S(cr.metadata().name()), S(controller), I(cr.revision()),
          S(Age(cr.metadata(), now))};
}

}  // namespace kplane::apiserver::printers
