#include "controllers/deployment_controller.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "base/logging.h"
#include "base/saturating.h"
#include "base/strings.h"
#include "controllers/util.h"
#include "informer/api_errors.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

using RsPtr = std::shared_ptr<const appsv1::ReplicaSet>;

int32_t Desired(const appsv1::Deployment& d) {
  return d.spec().has_replicas() ? d.spec().replicas() : 1;
}
int32_t SpecReplicas(const appsv1::ReplicaSet& rs) {
  return rs.spec().has_replicas() ? rs.spec().replicas() : 1;
}
// Pods an RS may have: what it wants or what it still has.
int32_t PodsOf(const appsv1::ReplicaSet& rs) {
  return std::max(SpecReplicas(rs), rs.status().replicas());
}
int64_t Revision(const google::protobuf::Message& obj) {
  std::string_view v =
      objects::Annotation(*objects::GetObjectMeta(obj), kRevisionAnnotation);
  std::optional<int64_t> r = ParseInt64(v);
  return r ? *r : 0;
}
bool EqualIgnoringHash(const corev1::PodTemplateSpec& a,
                       const corev1::PodTemplateSpec& b) {
  corev1::PodTemplateSpec x = a, y = b;
  x.mutable_metadata()->mutable_labels()->erase(kPodTemplateHashLabel);
  y.mutable_metadata()->mutable_labels()->erase(kPodTemplateHashLabel);
  return DeterministicBytes(x) == DeterministicBytes(y);
}
bool OlderFirst(const RsPtr& a, const RsPtr& b) {
  int64_t ca = objects::UnixSeconds(a->metadata().creationtimestamp());
  int64_t cb = objects::UnixSeconds(b->metadata().creationtimestamp());
  if (ca != cb) return ca < cb;
  return a->metadata().name() < b->metadata().name();
}
void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

struct Limits {
  int32_t max_surge = 0;
  int32_t max_unavailable = 0;
};
Limits RollingLimits(const appsv1::Deployment& d) {
  int32_t desired = Desired(d);
  objects::intstr::IntOrString surge, unavailable;
  surge.set_type(1);
  surge.set_strval("25%");
  unavailable = surge;
  const appsv1::DeploymentStrategy& st = d.spec().strategy();
  if (st.has_rollingupdate()) {
    if (st.rollingupdate().has_maxsurge())
      surge = st.rollingupdate().maxsurge();
    if (st.rollingupdate().has_maxunavailable()) {
      unavailable = st.rollingupdate().maxunavailable();
    }
  }
  Limits l;
  // Validation keeps both non-negative integers or percentages.
  l.max_surge =
      static_cast<int32_t>(ScaledValueFromIntOrPercent(surge, desired, true));
  l.max_unavailable = static_cast<int32_t>(
      ScaledValueFromIntOrPercent(unavailable, desired, false));
  if (l.max_surge == 0 && l.max_unavailable == 0) l.max_unavailable = 1;
  if (l.max_unavailable > desired) l.max_unavailable = desired;
  return l;
}
bool IsRecreate(const appsv1::Deployment& d) {
  return d.spec().strategy().type() == "Recreate";
}
// Kube's oldPodsRunning: an old RS still wants or counts pods, or a pod
// it controls has not ended (Failed / Succeeded), also one being deleted:
// the RS controller stops counting a pod once it is marked for deletion,
// but its containers run until the kubelet has stopped them.
StatusOr<bool> OldPodsRunning(const informer::Indexer& pods,
                              const std::string& ns,
                              const std::vector<RsPtr>& old_rss) {
  std::set<std::string> uids;
  for (const RsPtr& rs : old_rss) {
    if (PodsOf(*rs) > 0) return true;
    uids.insert(rs->metadata().uid());
  }
  if (uids.empty()) return false;
  ASSIGN_OR_RETURN(std::vector<ObjectPtr> in_ns,
                   pods.ByIndex(informer::kNamespaceIndex, ns));
  for (const ObjectPtr& o : in_ns) {
    const auto& pod = static_cast<const corev1::Pod&>(*o);
    const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
    if (ref == nullptr || !uids.contains(ref->uid())) continue;
    const std::string& phase = pod.status().phase();
    if (phase != "Failed" && phase != "Succeeded") return true;
  }
  return false;
}

}  // namespace

std::string ComputePodTemplateHash(const corev1::PodTemplateSpec& tmpl) {
  corev1::PodTemplateSpec t = tmpl;
  t.mutable_metadata()->mutable_labels()->erase(kPodTemplateHashLabel);
  uint32_t h = 2166136261u;
  for (unsigned char c : DeterministicBytes(t)) {
    h ^= c;
    h *= 16777619u;
  }
  // rand.SafeEncodeString(fmt.Sprint(hash)): no vowels, no look-alikes.
  static constexpr char kAlphanums[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string digits = std::to_string(h);
  std::string out;
  for (char c : digits) {
    out += kAlphanums[static_cast<unsigned char>(c) % (sizeof(kAlphanums) - 1)];
  }
  return out;
}

DeploymentController::DeploymentController(DeploymentControllerOptions options)
    : Controller("deployment", options.clock, options.metrics),
      options_(options) {
  CHECK(options_.api != nullptr && options_.deployments != nullptr &&
        options_.replicasets != nullptr && options_.pods != nullptr);
}

void DeploymentController::RegisterHandlers(
    informer::SharedIndexInformer* deployments,
    informer::SharedIndexInformer* replicasets,
    informer::SharedIndexInformer* pods) {
  OnObjectEvents(deployments,
                 [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(replicasets, [this](const ObjectEvent& e) {
    OnReplicaSetEvent(e.As<appsv1::ReplicaSet>());
  });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    if (e.deleted()) OnPodDeleted(e.As<corev1::Pod>());
  });
}

void DeploymentController::OnReplicaSetEvent(const appsv1::ReplicaSet& rs) {
  const metav1::OwnerReference* ref = objects::ControllerRef(rs.metadata());
  if (ref != nullptr) {
    if (ref->kind() == "Deployment") {
      Enqueue(informer::ObjectKey(rs.metadata().namespace_(), ref->name()));
    }
    return;
  }
  // An orphan: any deployment that selects it may adopt it.
  auto in_ns = options_.deployments->ByIndex(informer::kNamespaceIndex,
                                             rs.metadata().namespace_());
  if (!in_ns.ok()) return;
  for (const ObjectPtr& o : *in_ns) {
    const auto& d = static_cast<const appsv1::Deployment&>(*o);
    StatusOr<machinery::LabelSelector> sel =
        objects::LabelSelectorAsSelector(d.spec().selector());
    if (sel.ok() && !sel->Empty() &&
        sel->Matches(LabelMap(rs.metadata().labels()))) {
      Enqueue(informer::ObjectKey(d));
    }
  }
}

void DeploymentController::OnPodDeleted(const corev1::Pod& pod) {
  // The pod's RS, and the RS's deployment, by name and uid.
  const std::string& ns = pod.metadata().namespace_();
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (ref == nullptr || ref->kind() != "ReplicaSet") return;
  ObjectPtr rs =
      options_.replicasets->Get(informer::ObjectKey(ns, ref->name()));
  if (rs == nullptr || objects::Uid(*rs) != ref->uid()) return;
  ref = objects::ControllerRef(*objects::GetObjectMeta(*rs));
  if (ref == nullptr || ref->kind() != "Deployment") return;
  const std::string key = informer::ObjectKey(ns, ref->name());
  ObjectPtr d = options_.deployments->Get(key);
  if (d == nullptr || objects::Uid(*d) != ref->uid()) return;
  // Only Recreate waits for pods (kube enqueues once none is left; a sync
  // finding some left does nothing).
  if (IsRecreate(static_cast<const appsv1::Deployment&>(*d))) Enqueue(key);
}

Status DeploymentController::Sync(const std::string& key) {
  ObjectPtr obj = options_.deployments->Get(key);
  if (obj == nullptr) return Status::Ok();
  auto d = std::static_pointer_cast<const appsv1::Deployment>(obj);
  const metav1::ObjectMeta& meta = d->metadata();
  if (objects::IsBeingDeleted(meta)) return Status::Ok();
  ASSIGN_OR_RETURN(machinery::LabelSelector selector,
                   objects::LabelSelectorAsSelector(d->spec().selector()));
  if (selector.Empty()) return Status::Ok();  // selects everything: refuse
  Status first_error;
  const int32_t desired = Desired(*d);

  // Claim ReplicaSets.
  std::vector<RsPtr> owned;
  ASSIGN_OR_RETURN(std::vector<ObjectPtr> in_ns,
                   options_.replicasets->ByIndex(informer::kNamespaceIndex,
                                                 meta.namespace_()));
  for (const ObjectPtr& o : in_ns) {
    auto rs = std::static_pointer_cast<const appsv1::ReplicaSet>(o);
    const metav1::OwnerReference* ref = objects::ControllerRef(rs->metadata());
    if (ref != nullptr) {
      if (ref->uid() == meta.uid()) owned.push_back(rs);
      continue;
    }
    if (objects::IsBeingDeleted(rs->metadata()) ||
        !selector.Matches(LabelMap(rs->metadata().labels()))) {
      continue;
    }
    appsv1::ReplicaSet copy = *rs;
    *copy.mutable_metadata()->add_ownerreferences() =
        ControllerRefTo("apps/v1", "Deployment", meta);
    StatusOr<ObjectPtr> adopted =
        options_.api->Update(ReplicaSetsResource(), copy);
    if (adopted.ok()) {
      owned.push_back(
          std::static_pointer_cast<const appsv1::ReplicaSet>(*adopted));
    } else if (!informer::IsNotFound(adopted.status())) {
      Keep(&first_error, adopted.status());
    }
  }

  RsPtr new_rs;
  std::vector<RsPtr> old_rss;
  int64_t max_old_revision = 0;
  for (const RsPtr& rs : owned) {
    if (new_rs == nullptr &&
        EqualIgnoringHash(rs->spec().template_(), d->spec().template_())) {
      new_rs = rs;
    } else {
      old_rss.push_back(rs);
      max_old_revision = std::max(max_old_revision, Revision(*rs));
    }
  }
  std::sort(old_rss.begin(), old_rss.end(), OlderFirst);
  // Sums and differences of replica counts in int64: each count is an
  // int32 a user sets (replicas 2^31 - 1 with a 25 % surge overflowed).
  int64_t all_pods = 0;
  for (const RsPtr& rs : owned) all_pods += PodsOf(*rs);

  const bool paused = d->spec().paused();
  const Limits limits = RollingLimits(*d);
  bool created_new = false;
  auto scale = [&](const RsPtr& rs, int32_t replicas) -> RsPtr {
    appsv1::ReplicaSet copy = *rs;
    copy.mutable_spec()->set_replicas(replicas);
    StatusOr<ObjectPtr> r = options_.api->Update(ReplicaSetsResource(), copy);
    if (!r.ok()) {
      Keep(&first_error, r.status());
      return nullptr;
    }
    const int32_t from = SpecReplicas(*rs);
    RecordEvent(*d, informer::kEventNormal, "ScalingReplicaSet",
                std::string("Scaled ") + (replicas > from ? "up" : "down") +
                    " replica set " + rs->metadata().name() + " from " +
                    std::to_string(from) + " to " + std::to_string(replicas));
    return std::static_pointer_cast<const appsv1::ReplicaSet>(*r);
  };

  const std::string new_revision =
      std::to_string(SaturatingAdd(max_old_revision, 1));
  if (new_rs != nullptr) {
    // Kube's getNewReplicaSet: the existing new RS gets the newest
    // revision (not while paused here) and the deployment's
    // minReadySeconds (paused or not).
    const bool bump = !paused && Revision(*new_rs) <= max_old_revision;
    if (bump ||
        new_rs->spec().minreadyseconds() != d->spec().minreadyseconds()) {
      appsv1::ReplicaSet copy = *new_rs;
      if (bump) {
        (*copy.mutable_metadata()->mutable_annotations())[kRevisionAnnotation] =
            new_revision;
      }
      copy.mutable_spec()->set_minreadyseconds(d->spec().minreadyseconds());
      StatusOr<ObjectPtr> r = options_.api->Update(ReplicaSetsResource(), copy);
      if (!r.ok()) return r.status();
      new_rs = std::static_pointer_cast<const appsv1::ReplicaSet>(*r);
    }
  }

  if (!paused) {
    // The new RS: create it when missing.
    if (new_rs == nullptr) {
      int32_t replicas = 0;
      if (IsRecreate(*d)) {
        // All owned RSs are old ones here.
        ASSIGN_OR_RETURN(
            bool old_running,
            OldPodsRunning(*options_.pods, meta.namespace_(), old_rss));
        replicas = old_running ? 0 : desired;
      } else {
        replicas = static_cast<int32_t>(std::clamp<int64_t>(
            int64_t{desired} + limits.max_surge - all_pods, 0, desired));
      }
      std::string hash = ComputePodTemplateHash(d->spec().template_());
      appsv1::ReplicaSet rs;
      metav1::ObjectMeta* rm = rs.mutable_metadata();
      rm->set_name(meta.name() + "-" + hash);
      rm->set_namespace_(meta.namespace_());
      *rm->mutable_labels() = d->spec().template_().metadata().labels();
      (*rm->mutable_labels())[kPodTemplateHashLabel] = hash;
      (*rm->mutable_annotations())[kRevisionAnnotation] = new_revision;
      *rm->add_ownerreferences() =
          ControllerRefTo("apps/v1", "Deployment", meta);
      appsv1::ReplicaSetSpec* spec = rs.mutable_spec();
      spec->set_replicas(replicas);
      spec->set_minreadyseconds(d->spec().minreadyseconds());
      *spec->mutable_selector() = d->spec().selector();
      (*spec->mutable_selector()
            ->mutable_matchlabels())[kPodTemplateHashLabel] = hash;
      *spec->mutable_template_() = d->spec().template_();
      (*spec->mutable_template_()
            ->mutable_metadata()
            ->mutable_labels())[kPodTemplateHashLabel] = hash;
      StatusOr<ObjectPtr> r = options_.api->Create(ReplicaSetsResource(), rs);
      if (!r.ok()) return r.status();  // AlreadyExists: the cache lags
      new_rs = std::static_pointer_cast<const appsv1::ReplicaSet>(*r);
      if (replicas > 0) {
        RecordEvent(*d, informer::kEventNormal, "ScalingReplicaSet",
                    "Scaled up replica set " + new_rs->metadata().name() +
                        " from 0 to " + std::to_string(replicas));
      }
      all_pods += replicas;
      created_new = true;
    }
    // The deployment carries its new RS's revision.
    std::string rev = std::to_string(Revision(*new_rs));
    if (objects::Annotation(meta, kRevisionAnnotation) != rev) {
      appsv1::Deployment copy = *d;
      (*copy.mutable_metadata()->mutable_annotations())[kRevisionAnnotation] =
          rev;
      StatusOr<ObjectPtr> r = options_.api->Update(DeploymentsResource(), copy);
      if (!r.ok()) return r.status();
      d = std::static_pointer_cast<const appsv1::Deployment>(*r);
    }

    if (!created_new && IsRecreate(*d)) {
      // Kube's rolloutRecreate: scale the old RSs down; the new one goes
      // up in a later sync, once no old pod runs.
      bool scaled_down = false;
      for (RsPtr& rs : old_rss) {
        if (SpecReplicas(*rs) > 0) {
          scaled_down = true;
          if (RsPtr s = scale(rs, 0)) rs = s;
        }
      }
      bool old_running = scaled_down;
      if (!old_running) {
        StatusOr<bool> r =
            OldPodsRunning(*options_.pods, meta.namespace_(), old_rss);
        if (!r.ok()) Keep(&first_error, r.status());
        old_running = !r.ok() || *r;
      }
      if (!old_running && SpecReplicas(*new_rs) != desired) {
        if (RsPtr s = scale(new_rs, desired)) new_rs = s;
      }
    } else if (!created_new) {
      // Scale the new RS up (within the surge) or down (to desired).
      int32_t want = SpecReplicas(*new_rs);
      if (want > desired) {
        want = desired;
      } else if (want < desired) {
        const int64_t room = int64_t{desired} + limits.max_surge - all_pods;
        if (room > 0) {
          want = static_cast<int32_t>(std::min<int64_t>(desired, want + room));
        }
      }
      if (want != SpecReplicas(*new_rs)) {
        if (RsPtr s = scale(new_rs, want)) new_rs = s;
      }
      // Scale old RSs down within maxUnavailable.
      int64_t spec_total = SpecReplicas(*new_rs);
      for (const RsPtr& rs : old_rss) spec_total += SpecReplicas(*rs);
      const int64_t min_available = int64_t{desired} - limits.max_unavailable;
      const int64_t new_unavailable =
          std::max<int64_t>(0, int64_t{SpecReplicas(*new_rs)} -
                                   new_rs->status().availablereplicas());
      const int64_t max_scaled_down =
          spec_total - min_available - new_unavailable;
      if (max_scaled_down > 0) {
        // First the old pods that are not available anyway.
        int64_t cleaned = 0;
        for (RsPtr& rs : old_rss) {
          if (cleaned >= max_scaled_down) break;
          const int64_t unhealthy =
              int64_t{SpecReplicas(*rs)} - rs->status().availablereplicas();
          if (SpecReplicas(*rs) == 0 || unhealthy <= 0) continue;
          const int64_t down = std::min(max_scaled_down - cleaned, unhealthy);
          if (RsPtr s =
                  scale(rs, static_cast<int32_t>(SpecReplicas(*rs) - down))) {
            rs = s;
            cleaned += down;
          }
        }
        // Then available ones, oldest RS first.
        int64_t available = new_rs->status().availablereplicas();
        for (const RsPtr& rs : old_rss) {
          available += rs->status().availablereplicas();
        }
        int64_t total_down =
            std::min(available - min_available, max_scaled_down - cleaned);
        for (RsPtr& rs : old_rss) {
          if (total_down <= 0) break;
          if (SpecReplicas(*rs) == 0) continue;
          const int64_t down = std::min<int64_t>(SpecReplicas(*rs), total_down);
          if (RsPtr s =
                  scale(rs, static_cast<int32_t>(SpecReplicas(*rs) - down))) {
            rs = s;
            total_down -= down;
          }
        }
      }
    }

    // History: keep revisionHistoryLimit old RSs that have nothing left.
    int32_t limit = d->spec().has_revisionhistorylimit()
                        ? d->spec().revisionhistorylimit()
                        : 10;
    std::vector<RsPtr> idle;
    for (const RsPtr& rs : old_rss) {
      if (SpecReplicas(*rs) == 0 && rs->status().replicas() == 0 &&
          !objects::IsBeingDeleted(rs->metadata())) {
        idle.push_back(rs);
      }
    }
    std::sort(idle.begin(), idle.end(), [](const RsPtr& a, const RsPtr& b) {
      return Revision(*a) < Revision(*b);
    });
    for (size_t i = 0; i + limit < idle.size(); ++i) {
      Status s = options_.api->Delete(ReplicaSetsResource(),
                                      idle[i]->metadata().namespace_(),
                                      idle[i]->metadata().name());
      if (!informer::IsNotFound(s)) Keep(&first_error, s);
    }
  }

  if (paused && new_rs != nullptr && SpecReplicas(*new_rs) != desired) {
    // A paused deployment still scales (kubectl scale), when it is not in
    // the middle of a rollout (no proportional scaling across RSs here).
    bool old_active = false;
    for (const RsPtr& rs : old_rss) old_active |= SpecReplicas(*rs) > 0;
    if (!old_active) {
      if (RsPtr s = scale(new_rs, desired)) new_rs = s;
    }
  }

  // Status.
  appsv1::DeploymentStatus status = d->status();
  int64_t replicas = 0, ready = 0, available = 0;
  for (const RsPtr& rs : old_rss) {
    replicas += rs->status().replicas();
    ready += rs->status().readyreplicas();
    available += rs->status().availablereplicas();
  }
  int32_t updated = 0;
  if (new_rs != nullptr) {
    replicas += new_rs->status().replicas();
    ready += new_rs->status().readyreplicas();
    available += new_rs->status().availablereplicas();
    updated = new_rs->status().replicas();
  }
  auto count = [](int64_t n) {
    return static_cast<int32_t>(std::clamp<int64_t>(n, 0, INT32_MAX));
  };
  status.set_observedgeneration(meta.generation());
  status.set_replicas(count(replicas));
  status.set_updatedreplicas(updated);
  status.set_readyreplicas(count(ready));
  status.set_availablereplicas(count(available));
  status.set_unavailablereplicas(count(desired - available));

  metav1::Time now = objects::TimeNow(*clock_);
  auto set_condition = [&](const std::string& type, const std::string& st,
                           const std::string& reason, const std::string& msg,
                           bool touch) {
    appsv1::DeploymentCondition* c = nullptr;
    for (auto& x : *status.mutable_conditions()) {
      if (x.type() == type) c = &x;
    }
    if (c == nullptr) {
      c = status.add_conditions();
      c->set_type(type);
    }
    if (c->status() != st) *c->mutable_lasttransitiontime() = now;
    if (c->status() != st || c->reason() != reason || touch) {
      *c->mutable_lastupdatetime() = now;
    }
    c->set_status(st);
    c->set_reason(reason);
    c->set_message(msg);
  };
  const int64_t min_available =
      IsRecreate(*d) ? desired : int64_t{desired} - limits.max_unavailable;
  if (available >= min_available) {
    set_condition("Available", "True", "MinimumReplicasAvailable",
                  "Deployment has minimum availability.", false);
  } else {
    set_condition("Available", "False", "MinimumReplicasUnavailable",
                  "Deployment does not have minimum availability.", false);
  }
  std::string rs_name = new_rs != nullptr ? new_rs->metadata().name() : "";
  const appsv1::DeploymentCondition* progressing = nullptr;
  for (const auto& c : d->status().conditions()) {
    if (c.type() == "Progressing") progressing = &c;
  }
  bool complete = new_rs != nullptr && updated == desired &&
                  replicas == desired && available == desired;
  Duration recheck = Duration::max();
  if (paused) {
    // Kubernetes' DeploymentPaused reason.
    set_condition("Progressing", "Unknown", "DeploymentPaused",
                  "Deployment is paused", false);
  } else if (complete) {
    set_condition("Progressing", "True", "NewReplicaSetAvailable",
                  "ReplicaSet \"" + rs_name + "\" has successfully progressed.",
                  false);
  } else if (created_new) {
    set_condition("Progressing", "True", "NewReplicaSetCreated",
                  "Created new replica set \"" + rs_name + "\"", true);
  } else if (progressing != nullptr &&
             progressing->reason() == "NewReplicaSetAvailable" &&
             replicas == updated) {
    // Kube's syncRolloutStatus: the rollout is complete and nothing new
    // rolls out (every pod is the new RS's), so progress is not estimated
    // again: losing availability later is no stalled rollout. The
    // condition stays as it is.
  } else {
    const appsv1::DeploymentStatus& old = d->status();
    bool progressed =
        progressing == nullptr ||
        progressing->reason() == "NewReplicaSetAvailable" ||
        updated > old.updatedreplicas() || ready > old.readyreplicas() ||
        available > old.availablereplicas() || replicas < old.replicas();
    int64_t deadline = d->spec().has_progressdeadlineseconds()
                           ? d->spec().progressdeadlineseconds()
                           : 600;
    if (progressed) {
      set_condition("Progressing", "True", "ReplicaSetUpdated",
                    "ReplicaSet \"" + rs_name + "\" is progressing.", true);
      recheck = seconds(deadline);
    } else if (progressing->reason() != "ProgressDeadlineExceeded") {
      int64_t last = objects::UnixSeconds(progressing->lastupdatetime());
      int64_t left = last + deadline - objects::UnixSeconds(now);
      if (left < 0) {
        set_condition(
            "Progressing", "False", "ProgressDeadlineExceeded",
            "ReplicaSet \"" + rs_name + "\" has timed out progressing.", false);
      } else {
        recheck = seconds(left + 1);
      }
    }
  }
  if (DeterministicBytes(status) != DeterministicBytes(d->status())) {
    appsv1::Deployment copy = *d;
    *copy.mutable_status() = status;
    Status s = options_.api->UpdateStatus(DeploymentsResource(), copy).status();
    if (informer::IsConflict(s)) {
      // Our previous status write is not in the cache yet: the status is
      // ours alone, so write it onto the live object of the same spec.
      StatusOr<ObjectPtr> live = options_.api->Get(
          DeploymentsResource(), meta.namespace_(), meta.name());
      if (live.ok() && objects::Uid(**live) == meta.uid()) {
        appsv1::Deployment fresh =
            static_cast<const appsv1::Deployment&>(**live);
        if (fresh.metadata().generation() == d->metadata().generation()) {
          *fresh.mutable_status() = status;
          s = options_.api->UpdateStatus(DeploymentsResource(), fresh).status();
        }
      }
    }
    if (!informer::IsNotFound(s)) Keep(&first_error, s);
  }
  if (recheck != Duration::max()) EnqueueAfter(key, recheck);
  return first_error;
}

}  // namespace kplane::controllers
