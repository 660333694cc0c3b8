#include "kubeletsim/objects.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstdio>

#include "net/ipv4_cidr.h"
#include "objects/time.h"

namespace kplane::kubeletsim {
namespace {

void SetQuantity(
    google::protobuf::Map<std::string, objects::resourcepb::Quantity>* m,
    const std::string& key, const std::string& value) {
  (*m)[key].set_string(value);
}

struct HealthyCondition {
  const char* type;
  const char* status;
  const char* reason;
  const char* message;
};
constexpr HealthyCondition kHealthy[] = {
    {"MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"},
    {"DiskPressure", "False", "KubeletHasNoDiskPressure",
     "kubelet has no disk pressure"},
    {"PIDPressure", "False", "KubeletHasSufficientPID",
     "kubelet has sufficient PID available"},
    {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
};

// 64 hex digits from FNV-1a over `a`, `b` and a round counter.
std::string Hex64(std::string_view a, std::string_view b) {
  std::string out;
  for (int round = 0; round < 4; ++round) {
    uint64_t h = 1469598103934665603ULL ^ static_cast<uint64_t>(round);
    for (char c : a) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (char c : b) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx",
                  static_cast<unsigned long long>(h));
    out += buf;
  }
  return out;
}

void SetPodCondition(corev1::PodStatus* s, const char* type, bool ok,
                     WallTime transition, const char* reason,
                     const std::string& message) {
  corev1::PodCondition* c = s->add_conditions();
  c->set_type(type);
  c->set_status(ok ? "True" : "False");
  objects::SetTime(c->mutable_lasttransitiontime(), transition);
  if (reason != nullptr) c->set_reason(reason);
  if (!message.empty()) c->set_message(message);
}

std::string QosClass(const corev1::PodSpec& spec) {
  bool any = false, guaranteed = true;
  for (const corev1::Container& c : spec.containers()) {
    const auto& lim = c.resources().limits();
    const auto& req = c.resources().requests();
    if (!lim.empty() || !req.empty()) any = true;
    for (const char* r : {"cpu", "memory"}) {
      auto l = lim.find(r);
      if (l == lim.end()) {
        guaranteed = false;
        continue;
      }
      auto q = req.find(r);
      if (q != req.end() && q->second.string() != l->second.string()) {
        guaranteed = false;
      }
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

}  // namespace

std::string FormatIPv4(uint32_t a) { return net::FormatIPv4Address(a); }

NodeIdentity MakeNodeIdentity(std::string name, int index) {
  NodeIdentity id;
  id.name = std::move(name);
  id.index = index;
  uint32_t i = static_cast<uint32_t>(index);
  id.pod_net = (10u << 24) | ((64u + i / 256u) << 16) | ((i % 256u) << 8);
  id.pod_cidr = FormatIPv4(id.pod_net) + "/24";
  id.internal_ip = FormatIPv4((172u << 24) | (16u << 16) | (i + 1u));
  return id;
}

void RefreshNodeStatus(const NodeTemplate& t, const NodeIdentity& id,
                       WallTime now, corev1::NodeStatus* s) {
  auto* cap = s->mutable_capacity();
  cap->clear();
  SetQuantity(cap, "cpu", t.cpu);
  SetQuantity(cap, "memory", t.memory);
  SetQuantity(cap, "pods", t.pods);
  SetQuantity(cap, "ephemeral-storage", "100Gi");
  *s->mutable_allocatable() = *cap;

  // Keep existing conditions' transition times when their status holds.
  std::map<std::string, corev1::NodeCondition> old;
  for (const corev1::NodeCondition& c : s->conditions()) old[c.type()] = c;
  s->clear_conditions();
  for (const HealthyCondition& h : kHealthy) {
    corev1::NodeCondition* c = s->add_conditions();
    c->set_type(h.type);
    c->set_status(h.status);
    c->set_reason(h.reason);
    c->set_message(h.message);
    objects::SetTime(c->mutable_lastheartbeattime(), now);
    auto it = old.find(h.type);
    if (it != old.end() && it->second.status() == h.status &&
        !objects::IsZero(it->second.lasttransitiontime())) {
      *c->mutable_lasttransitiontime() = it->second.lasttransitiontime();
    } else {
      objects::SetTime(c->mutable_lasttransitiontime(), now);
    }
  }

  s->clear_addresses();
  corev1::NodeAddress* a = s->add_addresses();
  a->set_type("InternalIP");
  a->set_address(id.internal_ip);
  a = s->add_addresses();
  a->set_type("Hostname");
  a->set_address(id.name);
  if (!t.kubelet_address.empty()) {
    a = s->add_addresses();
    a->set_type("ExternalIP");
    a->set_address(t.kubelet_address);
  }

  s->mutable_daemonendpoints()->mutable_kubeletendpoint()->set_port(
      t.kubelet_port);
  corev1::NodeSystemInfo* info = s->mutable_nodeinfo();
  info->set_machineid(Hex64(id.name, "machine").substr(0, 32));
  info->set_systemuuid(Hex64(id.name, "uuid").substr(0, 32));
  info->set_bootid(Hex64(id.name, "boot").substr(0, 32));
  info->set_kernelversion("6.1.0-kplane");
  info->set_osimage("kplane simulated node");
  info->set_containerruntimeversion("kubeletsim://1.0.0");
  info->set_kubeletversion(t.kubelet_version);
  info->set_kubeproxyversion("");
  info->set_operatingsystem("linux");
  info->set_architecture("amd64");
}

bool NodeStatusDiffers(const NodeTemplate& t, const corev1::NodeStatus& s) {
  for (const HealthyCondition& h : kHealthy) {
    bool found = false;
    for (const corev1::NodeCondition& c : s.conditions()) {
      if (c.type() != h.type) continue;
      found = true;
      if (c.status() != h.status) return true;
    }
    if (!found) return true;
  }
  auto same = [&](const char* key, const std::string& want) {
    auto it = s.capacity().find(key);
    auto jt = s.allocatable().find(key);
    return it != s.capacity().end() && it->second.string() == want &&
           jt != s.allocatable().end() && jt->second.string() == want;
  };
  if (s.daemonendpoints().kubeletendpoint().port() != t.kubelet_port) {
    return true;  // the fleet restarted on another port
  }
  if (!t.kubelet_address.empty()) {
    bool advertised = false;
    for (const corev1::NodeAddress& a : s.addresses()) {
      advertised |=
          a.type() == "ExternalIP" && a.address() == t.kubelet_address;
    }
    if (!advertised) return true;
  }
  return !same("cpu", t.cpu) || !same("memory", t.memory) ||
         !same("pods", t.pods);
}

corev1::Node BuildNode(const NodeTemplate& t, const NodeIdentity& id,
                       WallTime now) {
  corev1::Node n;
  objects::metav1::ObjectMeta* m = n.mutable_metadata();
  m->set_name(id.name);
  auto* labels = m->mutable_labels();
  for (const auto& [k, v] : t.labels) (*labels)[k] = v;
  (*labels)["kubernetes.io/hostname"] = id.name;
  (*labels)["kubernetes.io/os"] = "linux";
  (*labels)["kubernetes.io/arch"] = "amd64";
  (*labels)["beta.kubernetes.io/os"] = "linux";
  (*labels)["beta.kubernetes.io/arch"] = "amd64";
  (*labels)["type"] = "kubeletsim";
  (*m->mutable_annotations())["node.alpha.kubernetes.io/ttl"] = "0";
  corev1::NodeSpec* spec = n.mutable_spec();
  if (!id.pod_cidr.empty()) {
    spec->set_podcidr(id.pod_cidr);
    spec->add_podcidrs(id.pod_cidr);
  }
  spec->set_providerid("kubeletsim://" + id.name);
  for (const corev1::Taint& taint : t.taints) *spec->add_taints() = taint;
  RefreshNodeStatus(t, id, now, n.mutable_status());
  return n;
}

coordinationv1::Lease BuildLease(const std::string& node,
                                 const std::string& node_uid,
                                 int lease_duration_seconds, WallTime now) {
  coordinationv1::Lease l;
  l.mutable_metadata()->set_name(node);
  l.mutable_metadata()->set_namespace_(kNodeLeaseNamespace);
  if (!node_uid.empty()) {
    objects::metav1::OwnerReference* o =
        l.mutable_metadata()->add_ownerreferences();
    o->set_apiversion("v1");
    o->set_kind("Node");
    o->set_name(node);
    o->set_uid(node_uid);
  }
  l.mutable_spec()->set_holderidentity(node);
  l.mutable_spec()->set_leasedurationseconds(lease_duration_seconds);
  objects::SetMicroTime(l.mutable_spec()->mutable_renewtime(), now);
  return l;
}

const char* PodStageName(PodStage s) {
  switch (s) {
    case PodStage::kCreating:
      return "ContainerCreating";
    case PodStage::kStarted:
      return "Started";
    case PodStage::kReady:
      return "Ready";
    case PodStage::kTerminated:
      return "Terminated";
    case PodStage::kCompleted:
      return "Completed";
    case PodStage::kBackOff:
      return "CrashLoopBackOff";
  }
  return "?";
}

Duration NextCrashLoopBackOff(int* level, Duration last_run) {
  constexpr Duration kInitial = std::chrono::seconds(10);
  constexpr Duration kMax = std::chrono::minutes(5);
  // The kubelet forgets a container's back-off once it has gone twice the
  // maximum without an exit.
  if (last_run >= 2 * kMax) *level = 0;
  const int n = *level;
  if (*level < 8) ++*level;  // 10 s << 5 is past the maximum already
  if (n == 0) return Duration(0);
  return std::min(kInitial * (int64_t{1} << std::min(n - 1, 5)), kMax);
}

std::string FakeContainerId(std::string_view pod_uid,
                            std::string_view container) {
  return "containerd://" + Hex64(pod_uid, container);
}

std::string FakeImageId(std::string_view image) {
  std::string repo(image);
  size_t slash = repo.find('/');
  if (slash == std::string::npos) {
    repo = "docker.io/library/" + repo;
  } else if (repo.substr(0, slash).find('.') == std::string::npos &&
             repo.substr(0, slash) != "localhost") {
    repo = "docker.io/" + repo;
  }
  // Drop a tag: the digest replaces it.
  size_t colon = repo.rfind(':');
  if (colon != std::string::npos && colon > repo.rfind('/')) {
    repo.resize(colon);
  }
  return repo + "@sha256:" + Hex64(image, "image");
}

corev1::PodStatus BuildPodStatus(const corev1::Pod& pod, PodStage stage,
                                 const PodRuntime& rt) {
  const corev1::PodStatus& old = pod.status();
  corev1::PodStatus s;
  const bool backing_off = stage == PodStage::kBackOff;
  const bool running =
      stage == PodStage::kStarted || stage == PodStage::kReady || backing_off;
  const bool ready = stage == PodStage::kReady;
  const bool exited = stage == PodStage::kCompleted;
  // Containers that stopped: killed at deletion or exited on their own.
  // Either way the pod is terminal, Succeeded only if they all exited 0
  // (kubelet getPhase for a terminal pod).
  const bool stopped = stage == PodStage::kTerminated || exited;
  const bool failed = stopped && rt.exit_code != 0;
  s.set_phase(stage == PodStage::kCreating ? "Pending"
              : failed                     ? "Failed"
              : stopped                    ? "Succeeded"
                                           : "Running");
  s.set_hostip(rt.host_ip);
  s.add_hostips()->set_ip(rt.host_ip);
  if (!rt.pod_ip.empty()) {
    s.set_podip(rt.pod_ip);
    s.add_podips()->set_ip(rt.pod_ip);
  }
  objects::SetTime(s.mutable_starttime(), rt.start_time);
  s.set_qosclass(QosClass(pod.spec()));

  // Others' conditions first, as generateAPIPodStatus starts from them.
  for (const corev1::PodCondition& c : old.conditions()) {
    if (!PodConditionByKubelet(c.type())) *s.add_conditions() = c;
  }
  // Then the kubelet's, in its order.
  std::string unready;
  for (const corev1::Container& c : pod.spec().containers()) {
    unready += unready.empty() ? c.name() : " " + c.name();
  }
  WallTime scheduled = rt.start_time;
  for (const corev1::PodCondition& c : old.conditions()) {
    if (c.type() == "PodScheduled" &&
        !objects::IsZero(c.lasttransitiontime())) {
      scheduled = objects::ToWallTime(c.lasttransitiontime());
    }
  }
  // The kubelet says PodCompleted only of a Succeeded pod.
  const bool completed = stopped && !failed;
  const char* not_ready_reason =
      completed ? "PodCompleted" : "ContainersNotReady";
  std::string not_ready_msg =
      completed ? "" : "containers with unready status: [" + unready + "]";
  WallTime ready_transition = stopped ? rt.finished_at
                              : ready ? rt.ready_at
                                      : rt.start_time;
  SetPodCondition(&s, "PodReadyToStartContainers",
                  stage != PodStage::kCreating && !stopped,
                  running ? rt.started_at : rt.start_time, nullptr, "");
  SetPodCondition(&s, "Initialized", true, rt.start_time, nullptr, "");
  // Ready containers make a Ready pod only once every readiness gate's
  // condition (set by whoever owns the gate) is True.
  std::string gates_msg;
  WallTime gates_transition = ready_transition;
  bool gates_ready = true;
  if (ready) {
    for (const corev1::PodReadinessGate& g : pod.spec().readinessgates()) {
      const corev1::PodCondition* found = nullptr;
      for (const corev1::PodCondition& c : old.conditions()) {
        if (c.type() == g.conditiontype()) found = &c;
      }
      if (found != nullptr && found->status() == "True") {
        // Ready from when the last gate opened.
        gates_transition = std::max(
            gates_transition, objects::ToWallTime(found->lasttransitiontime()));
        continue;
      }
      if (!gates_msg.empty()) gates_msg += ", ";
      gates_msg += found == nullptr
                       ? "corresponding condition of pod readiness gate \"" +
                             g.conditiontype() + "\" does not exist."
                       : "the status of pod readiness gate \"" +
                             g.conditiontype() + "\" is not \"True\", but " +
                             found->status();
      gates_ready = false;
    }
  }
  if (!gates_ready) {
    // Not Ready since the pod started, or since a gate closed.
    gates_transition = rt.start_time;
    for (const corev1::PodCondition& c : old.conditions()) {
      for (const corev1::PodReadinessGate& g : pod.spec().readinessgates()) {
        if (c.type() == g.conditiontype() && c.status() != "True") {
          gates_transition = std::max(
              gates_transition, objects::ToWallTime(c.lasttransitiontime()));
        }
      }
    }
    SetPodCondition(&s, "Ready", false, gates_transition,
                    "ReadinessGatesNotReady", gates_msg);
  } else {
    SetPodCondition(&s, "Ready", ready, gates_transition,
                    ready ? nullptr : not_ready_reason,
                    ready ? "" : not_ready_msg);
  }
  SetPodCondition(&s, "ContainersReady", ready, ready_transition,
                  ready ? nullptr : not_ready_reason,
                  ready ? "" : not_ready_msg);
  SetPodCondition(&s, "PodScheduled", true, scheduled, nullptr, "");

  auto fill = [&](const corev1::Container& c, bool init,
                  corev1::ContainerStatus* cs) {
    cs->set_name(c.name());
    cs->set_image(c.image());
    cs->set_restartcount(init ? 0 : rt.restart_count);
    corev1::ContainerState* st = cs->mutable_state();
    corev1::ContainerState* last = cs->mutable_laststate();
    if (!init && rt.restart_count > 0) {
      corev1::ContainerStateTerminated* t = last->mutable_terminated();
      t->set_exitcode(rt.last_exit_code);
      t->set_reason(rt.last_exit_code == 0 ? "Completed" : "Error");
      objects::SetTime(t->mutable_startedat(), rt.last_started_at);
      objects::SetTime(t->mutable_finishedat(), rt.last_finished_at);
      t->set_containerid(FakeContainerId(pod.metadata().uid(), c.name()));
    }
    if (stage == PodStage::kCreating) {
      // Behind init containers, app containers wait "PodInitializing".
      st->mutable_waiting()->set_reason(
          init || pod.spec().initcontainers_size() == 0 ? "ContainerCreating"
                                                        : "PodInitializing");
      cs->set_imageid("");
      cs->set_ready(false);
      cs->set_started(false);
      return;
    }
    cs->set_imageid(FakeImageId(c.image()));
    cs->set_containerid(FakeContainerId(pod.metadata().uid(), c.name()));
    if (init || stopped) {
      corev1::ContainerStateTerminated* t = st->mutable_terminated();
      const int code = init ? 0 : rt.exit_code;
      t->set_exitcode(code);
      t->set_reason(code == 0 ? "Completed" : "Error");
      objects::SetTime(t->mutable_startedat(),
                       init ? rt.start_time : rt.started_at);
      objects::SetTime(t->mutable_finishedat(),
                       init ? rt.started_at : rt.finished_at);
      t->set_containerid(cs->containerid());
      cs->set_ready(init);
      cs->set_started(false);
      return;
    }
    if (backing_off) {
      corev1::ContainerStateWaiting* w = st->mutable_waiting();
      w->set_reason("CrashLoopBackOff");
      w->set_message(
          "back-off " + objects::FormatGoDuration(rt.back_off.count()) +
          " restarting failed container=" + c.name() +
          " pod=" + pod.metadata().name() + "_" + pod.metadata().namespace_() +
          "(" + pod.metadata().uid() + ")");
      cs->set_ready(false);
      cs->set_started(false);
      return;
    }
    objects::SetTime(st->mutable_running()->mutable_startedat(), rt.started_at);
    cs->set_ready(ready);
    cs->set_started(true);
  };
  for (const corev1::Container& c : pod.spec().initcontainers()) {
    fill(c, true, s.add_initcontainerstatuses());
  }
  for (const corev1::Container& c : pod.spec().containers()) {
    fill(c, false, s.add_containerstatuses());
  }
  return s;
}

bool PodConditionByKubelet(std::string_view type) {
  return type == "PodScheduled" || type == "Ready" || type == "Initialized" ||
         type == "ContainersReady" || type == "PodReadyToStartContainers";
}

bool PodStatusByKubeletEqual(const corev1::PodStatus& api,
                             const corev1::PodStatus& want) {
  std::map<std::string, const corev1::PodCondition*> a, w;
  for (const corev1::PodCondition& c : api.conditions()) {
    if (PodConditionByKubelet(c.type())) a[c.type()] = &c;
  }
  for (const corev1::PodCondition& c : want.conditions()) {
    if (PodConditionByKubelet(c.type())) w[c.type()] = &c;
  }
  if (a.size() != w.size()) return false;
  for (const auto& [type, c] : w) {
    auto it = a.find(type);
    if (it == a.end() || it->second->status() != c->status() ||
        it->second->reason() != c->reason() ||
        it->second->message() != c->message()) {
      return false;
    }
  }
  corev1::PodStatus x = api, y = want;
  x.clear_conditions();
  y.clear_conditions();
  return google::protobuf::util::MessageDifferencer::Equals(x, y);
}

StatusOr<std::pair<std::string, std::string>> ParseLabel(std::string_view s) {
  size_t eq = s.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgumentError("label must be key=value: \"" + std::string(s) +
                                "\"");
  }
  return std::make_pair(std::string(s.substr(0, eq)),
                        std::string(s.substr(eq + 1)));
}

StatusOr<corev1::Taint> ParseTaint(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgumentError("taint must be key[=value]:Effect: \"" +
                                std::string(s) + "\"");
  }
  std::string_view effect = s.substr(colon + 1);
  if (effect != "NoSchedule" && effect != "PreferNoSchedule" &&
      effect != "NoExecute") {
    return InvalidArgumentError(
        "taint effect must be NoSchedule, PreferNoSchedule or NoExecute: \"" +
        std::string(s) + "\"");
  }
  std::string_view kv = s.substr(0, colon);
  corev1::Taint t;
  size_t eq = kv.find('=');
  t.set_key(std::string(kv.substr(0, eq)));
  if (eq != std::string_view::npos) t.set_value(std::string(kv.substr(eq + 1)));
  if (t.key().empty()) {
    return InvalidArgumentError("taint key is empty: \"" + std::string(s) +
                                "\"");
  }
  t.set_effect(std::string(effect));
  return t;
}

}  // namespace kplane::kubeletsim
