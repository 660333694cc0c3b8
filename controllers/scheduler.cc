#include "controllers/scheduler.h"

#include <algorithm>

#include "base/logging.h"
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
      if (q.ok()) r.cpu_milli += q->MilliValue();
    }
    if (auto it = req.find("memory"); it != req.end()) {
      auto q = machinery::Quantity::Parse(it->second.string());
      if (q.ok()) r.memory += q->Value();
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
  cpu_milli += r.cpu_milli;
  memory += r.memory;
  ++pods;
  std::string owner = OwnerUid(pod);
  if (!owner.empty()) ++by_owner[owner];
}

StatusOr<std::string> SelectNode(
    const corev1::Pod& pod, const std::vector<const corev1::Node*>& nodes,
    const std::map<std::string, NodeUsage>& usage) {
  const Requests req = PodRequests(pod);
  const std::string owner = OwnerUid(pod);
  std::map<std::string, int> reasons;  // reason -> nodes
  struct Candidate {
    const corev1::Node* node;
    const NodeUsage* use;
  };
  static const NodeUsage kEmpty;
  std::vector<Candidate> fit;
  for (const corev1::Node* n : nodes) {
    auto u = usage.find(n->metadata().name());
    const NodeUsage& use = u != usage.end() ? u->second : kEmpty;
    if (!IsNodeReady(*n)) {
      ++reasons["node(s) were not ready"];
      continue;
    }
    if (n->spec().unschedulable()) {
      ++reasons["node(s) were unschedulable"];
      continue;
    }
    if (!ToleratesAll(pod.spec(), n->spec().taints(), "NoSchedule") ||
        !ToleratesAll(pod.spec(), n->spec().taints(), "NoExecute")) {
      ++reasons["node(s) had untolerated taint(s)"];
      continue;
    }
    bool selected = true;
    for (const auto& [k, v] : pod.spec().nodeselector()) {
      auto it = n->metadata().labels().find(k);
      if (it == n->metadata().labels().end() || it->second != v)
        selected = false;
    }
    if (!selected) {
      ++reasons["node(s) didn't match Pod's node affinity/selector"];
      continue;
    }
    int64_t cpu = Allocatable(*n, "cpu");
    int64_t mem = Allocatable(*n, "memory");
    int64_t pods = Allocatable(*n, "pods");
    bool ok = true;
    if (cpu >= 0 && use.cpu_milli + req.cpu_milli > cpu) {
      ++reasons["Insufficient cpu"];
      ok = false;
    }
    if (mem >= 0 && use.memory + req.memory > mem) {
      ++reasons["Insufficient memory"];
      ok = false;
    }
    if (pods >= 0 && use.pods + 1 > pods) {
      ++reasons["Too many pods"];
      ok = false;
    }
    if (ok) fit.push_back({n, &use});
  }
  if (fit.empty()) {
    std::string msg =
        "0/" + std::to_string(nodes.size()) + " nodes are available";
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
    auto it = c.use->by_owner.find(owner);
    if (it != c.use->by_owner.end()) max_mine = std::max(max_mine, it->second);
  }
  const Candidate* best = nullptr;
  double best_score = -1;
  for (const Candidate& c : fit) {
    double least = 50.0 * (FreeFraction(Allocatable(*c.node, "cpu"),
                                        c.use->cpu_milli + req.cpu_milli) +
                           FreeFraction(Allocatable(*c.node, "memory"),
                                        c.use->memory + req.memory));
    double spread = 200.0;
    if (max_mine > 0) {
      auto it = c.use->by_owner.find(owner);
      int mine = it != c.use->by_owner.end() ? it->second : 0;
      spread = 200.0 * (max_mine - mine) / max_mine;
    }
    double score = least + spread;
    bool better =
        best == nullptr || score > best_score + 1e-9 ||
        (score > best_score - 1e-9 &&
         (c.use->pods < best->use->pods ||
          (c.use->pods == best->use->pods &&
           c.node->metadata().name() < best->node->metadata().name())));
    if (better) {
      best = &c;
      best_score = score;
    }
  }
  return best->node->metadata().name();
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
    if (e.type != ObjectEvent::Type::kUpdated) return;
    const auto& a = e.OldAs<corev1::Node>();
    const auto& b = e.As<corev1::Node>();
    if (IsNodeReady(a) != IsNodeReady(b) ||
        DeterministicBytes(a.spec()) != DeterministicBytes(b.spec())) {
      EnqueuePending();
    }
  });
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
  std::map<std::string, NodeUsage> usage;
  std::vector<ObjectPtr> node_objs = options_.nodes->List();
  std::vector<const corev1::Node*> nodes;
  for (const ObjectPtr& o : node_objs) {
    const auto* n = static_cast<const corev1::Node*>(o.get());
    nodes.push_back(n);
    auto on_node = options_.pods->ByIndex(kPodNodeIndex, n->metadata().name());
    if (!on_node.ok()) continue;
    NodeUsage& u = usage[n->metadata().name()];
    for (const ObjectPtr& p : *on_node) {
      const auto& placed = static_cast<const corev1::Pod&>(*p);
      const std::string& phase = placed.status().phase();
      if (phase != "Succeeded" && phase != "Failed") u.Add(placed);
    }
  }
  {
    MutexLock l(&mu_);
    if (assumed_.count(key) > 0) return Status::Ok();  // bound, not yet seen
    for (const auto& [k, placed] : assumed_)
      usage[placed.first].Add(*placed.second);
  }
  StatusOr<std::string> node = SelectNode(*pod, nodes, usage);
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
