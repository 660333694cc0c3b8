#include "controllers/scheduler.h"

#include <algorithm>

#include "base/logging.h"
#include "base/saturating.h"
#include "informer/api_errors.h"
#include "objects/machinery/quantity.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

struct Requests {
  int64_t cpu_milli = 0;
  int64_t memory = 0;
};

Requests PodRequests(const corev1::Pod& pod) {
  Requests r;
  for (const corev1::Container& c : pod.spec().containers()) {
    const auto& req = c.resources().requests();
    if (auto it = req.find("cpu"); it != req.end()) {
      auto q = machinery::Quantity::Parse(it->second.string());
      if (q.ok()) r.cpu_milli = SaturatingAdd(r.cpu_milli, q->MilliValue());
    }
    if (auto it = req.find("memory"); it != req.end()) {
      auto q = machinery::Quantity::Parse(it->second.string());
      if (q.ok()) r.memory = SaturatingAdd(r.memory, q->Value());
    }
  }
  return r;
}

// allocatable[name] (cpu in milli), or -1 when the node does not say.
int64_t Allocatable(const corev1::Node& node, const std::string& name) {
  const auto& a = node.status().allocatable();
  auto it = a.find(name);
  if (it == a.end()) return -1;
  auto q = machinery::Quantity::Parse(it->second.string());
  if (!q.ok()) return -1;
  return name == "cpu" ? q->MilliValue() : q->Value();
}

std::string OwnerUid(const corev1::Pod& pod) {
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  return ref != nullptr ? ref->uid() : "";
}

double FreeFraction(int64_t alloc, int64_t used) {
  if (alloc <= 0) return 1.0;
  return std::max(0.0, static_cast<double>(alloc - used) / alloc);
}

}  // namespace

void NodeUsage::Add(const corev1::Pod& pod) {
  Requests r = PodRequests(pod);
  // Requests are never negative (validation) and their sums saturate, so
  // usage stays in [0, INT64_MAX] and `alloc - use` below cannot overflow.
  cpu_milli = SaturatingAdd(cpu_milli, r.cpu_milli);
  memory = SaturatingAdd(memory, r.memory);
  ++pods;
  std::string owner = OwnerUid(pod);
  if (!owner.empty()) ++by_owner[owner];
}

size_t NumFeasibleNodesToFind(size_t all_nodes, int percentage) {
  // kube-scheduler's minFeasibleNodesToFind, minFeasibleNodesPercentageToFind
  // and basePercentageOfNodesToScore.
  constexpr size_t kMinFeasible = 100;
  constexpr int kMinPercentage = 5;
  constexpr int kBasePercentage = 50;
  if (all_nodes < kMinFeasible || percentage >= 100) return all_nodes;
  if (percentage <= 0) {
    percentage = std::max(kMinPercentage,
                          kBasePercentage - static_cast<int>(all_nodes / 125));
  }
  return std::max(kMinFeasible, all_nodes * percentage / 100);
}

StatusOr<Placement> SelectNode(const corev1::Pod& pod,
                               const std::vector<const corev1::Node*>& nodes,
                               const NodeUsageFn& usage_of, NodeSample sample) {
  const Requests req = PodRequests(pod);
  const std::string owner = OwnerUid(pod);
  std::map<std::string, int> reasons;  // reason -> nodes
  struct Candidate {
    const corev1::Node* node;
    NodeUsage use;
    int64_t cpu;  // allocatable, -1: not limited
    int64_t memory;
  };
  std::vector<Candidate> fit;
  size_t evaluated = 0;
  const size_t n = nodes.size();
  for (; evaluated < n && fit.size() < sample.feasible_to_find; ++evaluated) {
    const corev1::Node* node = nodes[(sample.start + evaluated) % n];
    if (!IsNodeReady(*node)) {
      ++reasons["node(s) were not ready"];
      continue;
    }
    if (node->spec().unschedulable()) {
      ++reasons["node(s) were unschedulable"];
      continue;
    }
    if (!ToleratesAll(pod.spec(), node->spec().taints(), "NoSchedule") ||
        !ToleratesAll(pod.spec(), node->spec().taints(), "NoExecute")) {
      ++reasons["node(s) had untolerated taint(s)"];
      continue;
    }
    bool selected = true;
    for (const auto& [k, v] : pod.spec().nodeselector()) {
      auto it = node->metadata().labels().find(k);
      if (it == node->metadata().labels().end() || it->second != v)
        selected = false;
    }
    if (!selected) {
      ++reasons["node(s) didn't match Pod's node affinity/selector"];
      continue;
    }
    Candidate c{node, usage_of(*node), Allocatable(*node, "cpu"),
                Allocatable(*node, "memory")};
    int64_t pods = Allocatable(*node, "pods");
    bool ok = true;
    // kube's fit.go: the request against what is left, so that a huge
    // request is never added to the usage.
    if (c.cpu >= 0 && req.cpu_milli > c.cpu - c.use.cpu_milli) {
      ++reasons["Insufficient cpu"];
      ok = false;
    }
    if (c.memory >= 0 && req.memory > c.memory - c.use.memory) {
      ++reasons["Insufficient memory"];
      ok = false;
    }
    if (pods >= 0 && c.use.pods + 1 > pods) {
      ++reasons["Too many pods"];
      ok = false;
    }
    if (ok) fit.push_back(std::move(c));
  }
  if (fit.empty()) {
    std::string msg = "0/" + std::to_string(n) + " nodes are available";
    std::string sep = ": ";
    for (const auto& [reason, count] : reasons) {
      msg += sep + std::to_string(count) + " " + reason;
      sep = ", ";
    }
    return FailedPreconditionError(msg + ".");
  }
  int max_mine = 0;
  for (const Candidate& c : fit) {
    if (owner.empty()) break;
    auto it = c.use.by_owner.find(owner);
    if (it != c.use.by_owner.end()) max_mine = std::max(max_mine, it->second);
  }
  const Candidate* best = nullptr;
  double best_score = -1;
  for (const Candidate& c : fit) {
    double least =
        50.0 *
        (FreeFraction(c.cpu, SaturatingAdd(c.use.cpu_milli, req.cpu_milli)) +
         FreeFraction(c.memory, SaturatingAdd(c.use.memory, req.memory)));
    double spread = 200.0;
    if (max_mine > 0) {
      auto it = c.use.by_owner.find(owner);
      int mine = it != c.use.by_owner.end() ? it->second : 0;
      spread = 200.0 * (max_mine - mine) / max_mine;
    }
    double score = least + spread;
    bool better =
        best == nullptr || score > best_score + 1e-9 ||
        (score > best_score - 1e-9 &&
         (c.use.pods < best->use.pods ||
          (c.use.pods == best->use.pods &&
           c.node->metadata().name() < best->node->metadata().name())));
    if (better) {
      best = &c;
      best_score = score;
    }
  }
  return Placement{best->node->metadata().name(), evaluated};
}

StatusOr<std::string> SelectNode(
    const corev1::Pod& pod, const std::vector<const corev1::Node*>& nodes,
    const std::map<std::string, NodeUsage>& usage) {
  auto usage_of = [&usage](const corev1::Node& node) {
    auto it = usage.find(node.metadata().name());
    return it != usage.end() ? it->second : NodeUsage{};
  };
  ASSIGN_OR_RETURN(Placement p, SelectNode(pod, nodes, usage_of, {}));
  return p.node;
}

Scheduler::Scheduler(SchedulerOptions options)
    : Controller("scheduler", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.pods != nullptr &&
        options_.nodes != nullptr);
}

bool Scheduler::Responsible(const corev1::Pod& pod) const {
  const std::string& name = pod.spec().schedulername();
  return pod.spec().nodename().empty() && !IsPodTerminating(pod) &&
         (name.empty() || name == options_.scheduler_name) &&
         pod.status().phase() != "Succeeded" &&
         pod.status().phase() != "Failed";
}

void Scheduler::OnPodEvent(const corev1::Pod& pod, bool deleted) {
  std::string key = informer::ObjectKey(pod);
  if (!pod.spec().nodename().empty()) ForgetUsage(pod.spec().nodename());
  if (deleted || !pod.spec().nodename().empty()) {
    MutexLock l(&mu_);
    assumed_.erase(key);
    return;
  }
  if (Responsible(pod)) Enqueue(key);
}

void Scheduler::EnqueuePending() {
  for (const ObjectPtr& o : options_.pods->List()) {
    const auto& pod = static_cast<const corev1::Pod&>(*o);
    if (Responsible(pod)) Enqueue(informer::ObjectKey(pod));
  }
}

void Scheduler::RegisterHandlers(informer::SharedIndexInformer* pods,
                                 informer::SharedIndexInformer* nodes) {
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    OnPodEvent(e.As<corev1::Pod>(), e.deleted());
  });
  // A node that appears, or whose readiness or spec (taints,
  // unschedulable) changes, may fit pending pods.
  OnObjectEvents(nodes, [this](const ObjectEvent& e) {
    if (e.type == ObjectEvent::Type::kAdded) return EnqueuePending();
    if (e.deleted()) {
      MutexLock l(&mu_);
      usage_by_node_.erase(e.As<corev1::Node>().metadata().name());
      return;
    }
    if (e.type != ObjectEvent::Type::kUpdated) return;
    const auto& a = e.OldAs<corev1::Node>();
    const auto& b = e.As<corev1::Node>();
    if (IsNodeReady(a) != IsNodeReady(b) ||
        DeterministicBytes(a.spec()) != DeterministicBytes(b.spec())) {
      EnqueuePending();
    }
  });
}

NodeUsage Scheduler::CachedUsage(const std::string& node) {
  uint64_t version;
  {
    MutexLock l(&mu_);
    NodeUsageEntry& e = usage_by_node_[node];
    if (e.usage.has_value()) return *e.usage;
    version = e.version;
  }
  NodeUsage u;
  auto on_node = options_.pods->ByIndex(kPodNodeIndex, node);
  if (on_node.ok()) {
    for (const ObjectPtr& p : *on_node) {
      const auto& placed = static_cast<const corev1::Pod&>(*p);
      const std::string& phase = placed.status().phase();
      if (phase != "Succeeded" && phase != "Failed") u.Add(placed);
    }
  }
  MutexLock l(&mu_);
  NodeUsageEntry& e = usage_by_node_[node];
  if (e.version == version) e.usage = u;  // else a pod changed meanwhile
  return u;
}

void Scheduler::ForgetUsage(const std::string& node) {
  MutexLock l(&mu_);
  NodeUsageEntry& e = usage_by_node_[node];
  e.usage.reset();
  ++e.version;
}

Status Scheduler::Sync(const std::string& key) {
  ObjectPtr obj = options_.pods->Get(key);
  if (obj == nullptr) {
    MutexLock l(&mu_);
    assumed_.erase(key);
    return Status::Ok();
  }
  auto pod = std::static_pointer_cast<const corev1::Pod>(obj);
  if (!Responsible(*pod)) return Status::Ok();
  std::vector<ObjectPtr> node_objs = options_.nodes->List();
  std::vector<const corev1::Node*> nodes;
  nodes.reserve(node_objs.size());
  for (const ObjectPtr& o : node_objs)
    nodes.push_back(static_cast<const corev1::Node*>(o.get()));
  // Pods we bound that the cache does not show yet, by node.
  std::map<std::string, std::vector<std::shared_ptr<const corev1::Pod>>,
           std::less<>>
      assumed_on;
  NodeSample sample;
  {
    MutexLock l(&mu_);
    if (assumed_.count(key) > 0) return Status::Ok();  // bound, not yet seen
    for (const auto& [k, placed] : assumed_)
      assumed_on[placed.first].push_back(placed.second);
    if (!nodes.empty()) sample.start = next_start_node_ % nodes.size();
  }
  sample.feasible_to_find = NumFeasibleNodesToFind(
      nodes.size(), options_.percentage_of_nodes_to_score);
  auto usage_of = [&](const corev1::Node& n) {
    const std::string& name = n.metadata().name();
    NodeUsage u = CachedUsage(name);
    if (auto it = assumed_on.find(name); it != assumed_on.end()) {
      for (const auto& placed : it->second) u.Add(*placed);
    }
    return u;
  };
  StatusOr<Placement> placement = SelectNode(*pod, nodes, usage_of, sample);
  {
    MutexLock l(&mu_);
    if (!nodes.empty()) {
      next_start_node_ = (sample.start + (placement.ok() ? placement->evaluated
                                                         : nodes.size())) %
                         nodes.size();
    }
  }
  StatusOr<std::string> node = placement.ok()
                                   ? StatusOr<std::string>(placement->node)
                                   : StatusOr<std::string>(placement.status());
  if (!node.ok()) {
    EnqueueAfter(key, options_.retry_unschedulable);
    // Every attempt, as kube's scheduler: the recorder folds repeats into
    // one event's count.
    RecordEvent(*pod, informer::kEventWarning, "FailedScheduling",
                node.status().message());
    // Tell the user why (kubectl describe pod), once per distinct reason.
    const corev1::PodCondition* c =
        FindPodCondition(pod->status(), "PodScheduled");
    if (c != nullptr && c->status() == "False" &&
        c->reason() == "Unschedulable" &&
        c->message() == node.status().message()) {
      return Status::Ok();
    }
    LOG(INFO) << "scheduler: " << key << ": " << node.status().message();
    corev1::Pod p = *pod;
    corev1::PodCondition* cond = nullptr;
    for (corev1::PodCondition& x : *p.mutable_status()->mutable_conditions()) {
      if (x.type() == "PodScheduled") cond = &x;
    }
    if (cond == nullptr) {
      cond = p.mutable_status()->add_conditions();
      cond->set_type("PodScheduled");
    }
    if (cond->status() != "False") {
      *cond->mutable_lasttransitiontime() = objects::TimeNow(*clock_);
    }
    cond->set_status("False");
    cond->set_reason("Unschedulable");
    cond->set_message(node.status().message());
    Status s = options_.api->UpdateStatus(PodsResource(), p).status();
    // A stale pod is retried anyway; a vanished one needs nothing.
    if (!s.ok() && !informer::IsNotFound(s) && !informer::IsConflict(s))
      return s;
    return Status::Ok();
  }
  {
    MutexLock l(&mu_);
    assumed_[key] = {*node, pod};
  }
  Status s =
      options_.api->Bind(pod->metadata().namespace_(), pod->metadata().name(),
                         pod->metadata().uid(), *node);
  if (!s.ok()) {
    MutexLock l(&mu_);
    assumed_.erase(key);
    return s;
  }
  RecordEvent(*pod, informer::kEventNormal, "Scheduled",
              "Successfully assigned " + key + " to " + *node);
  return Status::Ok();
}

}  // namespace kplane::controllers
