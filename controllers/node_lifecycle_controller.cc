#include "controllers/node_lifecycle_controller.h"

#include <algorithm>

#include "base/logging.h"
#include "base/saturating.h"
#include "informer/api_errors.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

constexpr char kUnknownReason[] = "NodeStatusUnknown";
constexpr char kUnknownMessage[] = "Kubelet stopped posting node status.";

bool IsNodeHealthTaint(const std::string& key) {
  return key == kUnreachableTaint || key == kNotReadyTaint;
}

bool IsAdmissionDefault(const corev1::Toleration& t) {
  return IsNodeHealthTaint(t.key()) && t.operator_() == "Exists" &&
         t.effect() == "NoExecute" && t.has_tolerationseconds() &&
         t.tolerationseconds() == 300;
}

bool HasTaint(const corev1::Node& node, const std::string& key) {
  for (const corev1::Taint& t : node.spec().taints()) {
    if (t.key() == key && t.effect() == "NoExecute") return true;
  }
  return false;
}

// Set by this controller when the node stopped renewing: Ready=Unknown with
// our reason, or the unreachable taint.
bool MarkedUnhealthy(const corev1::Node& node) {
  if (HasTaint(node, kUnreachableTaint)) return true;
  const corev1::NodeCondition* ready = FindNodeCondition(node.status(), "Ready");
  return ready != nullptr && ready->status() == "Unknown" &&
         ready->reason() == kUnknownReason;
}

bool HasNoExecuteTaint(const corev1::Node& node) {
  for (const corev1::Taint& t : node.spec().taints()) {
    if (t.effect() == "NoExecute") return true;
  }
  return false;
}

void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

}  // namespace

NodeLifecycleController::NodeLifecycleController(NodeLifecycleOptions options)
    : Controller("nodelifecycle", options.clock, options.metrics),
      options_(options) {
  CHECK(options_.api != nullptr && options_.nodes != nullptr &&
        options_.leases != nullptr && options_.pods != nullptr);
  tokens_ = std::max(1.0, options_.eviction_qps);
  tokens_at_ = clock_->Now();
}

NodeLifecycleController::~NodeLifecycleController() { Stop(); }

void NodeLifecycleController::RegisterHandlers(
    informer::SharedIndexInformer* nodes, informer::SharedIndexInformer* leases,
    informer::SharedIndexInformer* pods) {
  OnObjectEvents(nodes, [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  // A renewal is recorded at once; its node is synced only when that can
  // change something (ObserveLease). A deleted lease changes nothing until
  // its grace period runs out.
  OnObjectEvents(leases, [this](const ObjectEvent& e) {
    if (e.deleted() || objects::Namespace(e.object) != kNodeLeaseNamespace) {
      return;
    }
    const auto& lease = e.As<coordinationv1::Lease>();
    if (ObserveLease(lease)) Enqueue(lease.metadata().name());
  });
  // A pod landing on a tainted node must be looked at.
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    if (e.deleted()) return;
    const auto& p = e.As<corev1::Pod>();
    if (p.spec().nodename().empty()) return;
    if (e.type == ObjectEvent::Type::kAdded ||
        e.OldAs<corev1::Pod>().spec().nodename() != p.spec().nodename()) {
      Enqueue(p.spec().nodename());
    }
  });
}

void NodeLifecycleController::Run(int workers) {
  Controller::Run(workers);
  monitor_ = std::thread([this] { MonitorLoop(); });
}

void NodeLifecycleController::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  Controller::Stop();
}

void NodeLifecycleController::MonitorLoop() {
  MutexLock l(&mu_);
  while (!stop_) {
    l.Unlock();
    MonitorOnce();
    l.Lock();
    clock_->WaitFor(l.native(), cv_, options_.monitor_period,
                    [this]() REQUIRES(mu_) { return stop_; });
  }
}

void NodeLifecycleController::MonitorOnce() {
  for (const std::string& name : options_.nodes->ListKeys()) {
    if (NeedsSync(name)) Enqueue(name);
  }
  // Nodes that only pods still name (deleted nodes): see Sync.
  auto bound_to = options_.pods->ListIndexValues(kPodNodeIndex);
  if (bound_to.ok()) {
    for (const std::string& name : *bound_to) {
      if (options_.nodes->Get(name) == nullptr) Enqueue(name);
    }
  }
}

Status NodeLifecycleController::DeleteOrphanedPods(const std::string& node) {
  auto on_node = options_.pods->ByIndex(kPodNodeIndex, node);
  RETURN_IF_ERROR(on_node.status());
  if (on_node->empty()) return Status::Ok();
  // The cache may not have seen a new node yet: ask the API server.
  StatusOr<ObjectPtr> live = options_.api->Get(NodesResource(), "", node);
  if (live.ok()) return Status::Ok();
  if (!informer::IsNotFound(live.status())) return live.status();
  Status first_error;
  for (const ObjectPtr& o : *on_node) {
    const auto& pod = static_cast<const corev1::Pod&>(*o);
    LOG(INFO) << "nodelifecycle: deleting " << informer::ObjectKey(pod)
              << ": its node " << node << " is gone";
    metav1::DeleteOptions opts;
    opts.set_graceperiodseconds(0);
    opts.mutable_preconditions()->set_uid(pod.metadata().uid());
    Status s = options_.api->Delete(PodsResource(), pod.metadata().namespace_(),
                                    pod.metadata().name(), opts);
    if (!informer::IsNotFound(s) && !informer::IsConflict(s)) {
      Keep(&first_error, s);
    }
  }
  return first_error;
}

NodeLifecycleController::RenewTime NodeLifecycleController::RenewTimeOf(
    const coordinationv1::Lease& lease) {
  if (!lease.spec().has_renewtime()) return {};
  return {.set = true,
          .seconds = lease.spec().renewtime().seconds(),
          .nanos = lease.spec().renewtime().nanos()};
}

bool NodeLifecycleController::ObserveLease(
    const coordinationv1::Lease& lease) {
  const std::string& node = lease.metadata().name();
  const RenewTime renew = RenewTimeOf(lease);
  const TimePoint now = clock_->Now();
  {
    MutexLock l(&mu_);
    auto it = probes_.find(node);
    if (it == probes_.end()) return true;  // Sync starts its grace period
    if (it->second.renew != renew) it->second = {renew, now};
  }
  ObjectPtr obj = options_.nodes->Get(node);
  return obj == nullptr ||
         MarkedUnhealthy(static_cast<const corev1::Node&>(*obj));
}

bool NodeLifecycleController::NeedsSync(const std::string& name) {
  ObjectPtr obj = options_.nodes->Get(name);
  if (obj == nullptr) return true;
  {
    MutexLock l(&mu_);
    if (!registered_.contains(name)) return true;
  }
  const auto& node = static_cast<const corev1::Node&>(*obj);
  // Marked (to be made Ready again), or pods to evict in time.
  if (MarkedUnhealthy(node) || HasNoExecuteTaint(node)) return true;
  return !Healthy(name);
}

bool NodeLifecycleController::Healthy(const std::string& node) {
  ObjectPtr lease =
      options_.leases->Get(informer::ObjectKey(kNodeLeaseNamespace, node));
  RenewTime renew;
  if (lease != nullptr) {
    renew = RenewTimeOf(static_cast<const coordinationv1::Lease&>(*lease));
  }
  TimePoint now = clock_->Now();
  MutexLock l(&mu_);
  auto it = probes_.find(node);
  if (it == probes_.end()) {
    probes_[node] = {renew, now};
    return true;
  }
  if (it->second.renew != renew) {
    it->second = {renew, now};
    return true;
  }
  return now - it->second.observed < options_.grace_period;
}

int64_t NodeLifecycleController::TolerationSeconds(
    const corev1::Pod& pod, const corev1::Node& node) const {
  int64_t result = -1;
  auto take = [&](int64_t s) { result = result < 0 ? s : std::min(result, s); };
  for (const corev1::Taint& taint : node.spec().taints()) {
    if (taint.effect() != "NoExecute") continue;
    bool matched = false;
    int64_t best = -2;  // -2: none yet; -1: forever
    for (const corev1::Toleration& t : pod.spec().tolerations()) {
      if (!Tolerates(t, taint)) continue;
      matched = true;
      int64_t s = -1;
      if (IsAdmissionDefault(t)) {
        s = options_.default_toleration_seconds;
      } else if (t.has_tolerationseconds()) {
        s = std::max<int64_t>(0, t.tolerationseconds());
      }
      // The longest matching toleration wins for one taint.
      if (best == -2 || s == -1 || (best != -1 && s > best)) best = s;
    }
    if (!matched) {
      if (!IsNodeHealthTaint(taint.key())) return 0;
      best = options_.default_toleration_seconds;
    }
    if (best >= 0) take(best);
  }
  return result;
}

bool NodeLifecycleController::TakeEvictionToken(Duration* wait) {
  if (options_.eviction_qps <= 0) return true;
  MutexLock l(&mu_);
  TimePoint now = clock_->Now();
  double burst = std::max(1.0, options_.eviction_qps);
  tokens_ = std::min(
      burst, tokens_ + std::chrono::duration<double>(now - tokens_at_).count() *
                           options_.eviction_qps);
  tokens_at_ = now;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  *wait = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>((1 - tokens_) / options_.eviction_qps));
  return false;
}

Status NodeLifecycleController::Sync(const std::string& key) {
  ObjectPtr obj = options_.nodes->Get(key);
  if (obj == nullptr) {
    bool was_registered;
    {
      MutexLock l(&mu_);
      probes_.erase(key);
      was_registered = registered_.erase(key) > 0;
    }
    if (was_registered) {
      corev1::Node gone;
      gone.mutable_metadata()->set_name(key);
      RecordEvent(
          gone, informer::kEventNormal, "RemovingNode",
          "Node " + key + " event: Removing Node " + key + " from Controller");
    }
    return DeleteOrphanedPods(key);
  }
  auto node = std::static_pointer_cast<const corev1::Node>(obj);
  bool first_seen;
  {
    MutexLock l(&mu_);
    first_seen = registered_.insert(key).second;
  }
  if (first_seen) {
    RecordEvent(
        *node, informer::kEventNormal, "RegisteredNode",
        "Node " + key + " event: Registered Node " + key + " in Controller");
  }
  const bool healthy = Healthy(key);
  Status first_error;
  const metav1::Time now = objects::TimeNow(*clock_);
  const corev1::NodeCondition* ready =
      FindNodeCondition(node->status(), "Ready");
  auto on_node = options_.pods->ByIndex(kPodNodeIndex, key);
  RETURN_IF_ERROR(on_node.status());

  if (!healthy) {
    if (ready == nullptr || ready->status() != "Unknown") {
      LOG(INFO) << "nodelifecycle: node " << key
                << " stopped renewing its lease: NotReady";
      corev1::Node copy = *node;
      bool has_ready = false;
      for (corev1::NodeCondition& c :
           *copy.mutable_status()->mutable_conditions()) {
        if (c.type() != "Ready" && c.type() != "MemoryPressure" &&
            c.type() != "DiskPressure" && c.type() != "PIDPressure") {
          continue;
        }
        has_ready |= c.type() == "Ready";
        c.set_status("Unknown");
        c.set_reason(kUnknownReason);
        c.set_message(kUnknownMessage);
        *c.mutable_lasttransitiontime() = now;
      }
      if (!has_ready) {
        corev1::NodeCondition* c = copy.mutable_status()->add_conditions();
        c->set_type("Ready");
        c->set_status("Unknown");
        c->set_reason(kUnknownReason);
        c->set_message(kUnknownMessage);
        *c->mutable_lasttransitiontime() = now;
        *c->mutable_lastheartbeattime() = now;
      }
      StatusOr<ObjectPtr> r = options_.api->UpdateStatus(NodesResource(), copy);
      if (!r.ok()) return r.status();
      node = std::static_pointer_cast<const corev1::Node>(*r);
      RecordEvent(*node, informer::kEventNormal, "NodeNotReady",
                  "Node " + key + " status is now: NodeNotReady");
      // Its pods are no longer ready (MarkPodsNotReady).
      for (const ObjectPtr& o : *on_node) {
        const auto& pod = static_cast<const corev1::Pod&>(*o);
        if (!IsPodReady(pod) || IsPodTerminating(pod)) continue;
        corev1::Pod p = pod;
        for (corev1::PodCondition& c :
             *p.mutable_status()->mutable_conditions()) {
          if (c.type() != "Ready") continue;
          c.set_status("False");
          *c.mutable_lasttransitiontime() = now;
        }
        Status s = options_.api->UpdateStatus(PodsResource(), p).status();
        if (s.ok()) {
          RecordEvent(pod, informer::kEventWarning, "NodeNotReady",
                      "Node is not ready");
        }
        if (!informer::IsNotFound(s)) Keep(&first_error, s);
      }
    }
    if (!HasTaint(*node, kUnreachableTaint)) {
      corev1::Node copy = *node;
      auto* taints = copy.mutable_spec()->mutable_taints();
      for (int i = taints->size() - 1; i >= 0; --i) {
        if (taints->Get(i).key() == kNotReadyTaint)
          taints->DeleteSubrange(i, 1);
      }
      corev1::Taint* t = taints->Add();
      t->set_key(kUnreachableTaint);
      t->set_effect("NoExecute");
      *t->mutable_timeadded() = now;
      StatusOr<ObjectPtr> r = options_.api->Update(NodesResource(), copy);
      if (!r.ok()) return r.status();
      node = std::static_pointer_cast<const corev1::Node>(*r);
    }
  } else {
    if (ready != nullptr && ready->status() == "Unknown" &&
        ready->reason() == kUnknownReason) {
      LOG(INFO) << "nodelifecycle: node " << key << " renews its lease again";
      corev1::Node copy = *node;
      for (corev1::NodeCondition& c :
           *copy.mutable_status()->mutable_conditions()) {
        if (c.reason() != kUnknownReason) continue;
        bool is_ready = c.type() == "Ready";
        c.set_status(is_ready ? "True" : "False");
        c.set_reason(is_ready ? "KubeletReady"
                              : "KubeletHasSufficient" + c.type());
        c.set_message(is_ready ? "kubelet is posting ready status" : "");
        *c.mutable_lasttransitiontime() = now;
        *c.mutable_lastheartbeattime() = now;
      }
      StatusOr<ObjectPtr> r = options_.api->UpdateStatus(NodesResource(), copy);
      if (!r.ok()) return r.status();
      node = std::static_pointer_cast<const corev1::Node>(*r);
    }
    if (HasTaint(*node, kUnreachableTaint)) {
      corev1::Node copy = *node;
      auto* taints = copy.mutable_spec()->mutable_taints();
      for (int i = taints->size() - 1; i >= 0; --i) {
        if (taints->Get(i).key() == kUnreachableTaint)
          taints->DeleteSubrange(i, 1);
      }
      StatusOr<ObjectPtr> r = options_.api->Update(NodesResource(), copy);
      if (!r.ok()) return r.status();
      node = std::static_pointer_cast<const corev1::Node>(*r);
    }
  }

  // Taint-based eviction.
  bool no_execute = false;
  int64_t earliest_taint = INT64_MAX;
  for (const corev1::Taint& t : node->spec().taints()) {
    if (t.effect() != "NoExecute") continue;
    no_execute = true;
    int64_t added = objects::IsZero(t.timeadded())
                        ? objects::UnixSeconds(now)
                        : objects::UnixSeconds(t.timeadded());
    earliest_taint = std::min(earliest_taint, added);
  }
  if (!no_execute) return first_error;
  Duration recheck = Duration::max();
  const int64_t now_s = objects::UnixSeconds(now);
  for (const ObjectPtr& o : *on_node) {
    const auto& pod = static_cast<const corev1::Pod&>(*o);
    if (IsPodTerminating(pod)) continue;
    int64_t tolerate = TolerationSeconds(pod, *node);
    if (tolerate < 0) continue;
    // Both from objects a user may write: a toleration of 10^10 s must
    // neither wrap into an eviction now nor into a recheck in the past.
    int64_t due = SaturatingAdd(earliest_taint, tolerate);
    if (due > now_s) {
      recheck = std::min<Duration>(
          recheck, SaturatingSeconds(SaturatingAdd(due, -now_s)));
      continue;
    }
    Duration wait;
    if (!TakeEvictionToken(&wait)) {
      recheck = std::min(recheck, wait);
      continue;
    }
    LOG(INFO) << "nodelifecycle: evicting " << informer::ObjectKey(pod)
              << " from " << key;
    Status s = options_.api->Delete(PodsResource(), pod.metadata().namespace_(),
                                    pod.metadata().name());
    if (!informer::IsNotFound(s)) Keep(&first_error, s);
  }
  if (recheck != Duration::max()) EnqueueAfter(key, recheck);
  return first_error;
}

}  // namespace kplane::controllers
