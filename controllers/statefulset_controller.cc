#include "controllers/statefulset_controller.h"

#include <algorithm>
#include <map>

#include "base/logging.h"
#include "base/strings.h"
#include "controllers/deployment_controller.h"
#include "controllers/workload_pods.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

constexpr char kKind[] = "StatefulSet";

// The ordinal of a pod named "<set>-<n>", or -1 (getParentNameAndOrdinal).
int64_t OrdinalOf(const std::string& set_name, const std::string& pod_name) {
  if (pod_name.size() <= set_name.size() + 1 ||
      pod_name.compare(0, set_name.size(), set_name) != 0 ||
      pod_name[set_name.size()] != '-') {
    return -1;
  }
  std::string_view digits =
      std::string_view(pod_name).substr(set_name.size() + 1);
  if (digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return -1;
  }
  return ParseInt64(digits).value_or(-1);
}

std::string RevisionOf(const corev1::Pod& pod) {
  auto it = pod.metadata().labels().find(kControllerRevisionHashLabel);
  return it == pod.metadata().labels().end() ? "" : it->second;
}

bool IsTerminal(const corev1::Pod& pod) {
  return pod.status().phase() == "Failed" ||
         pod.status().phase() == "Succeeded";
}

bool IsCreated(const corev1::Pod& pod) { return !pod.status().phase().empty(); }

bool IsRunningAndReady(const corev1::Pod& pod) {
  return pod.status().phase() == "Running" && IsPodReady(pod);
}

corev1::Pod NewStatefulPod(const appsv1::StatefulSet& set, int64_t ordinal,
                           const std::string& revision) {
  const metav1::ObjectMeta& meta = set.metadata();
  corev1::Pod pod;
  metav1::ObjectMeta* pm = pod.mutable_metadata();
  std::string name = meta.name() + "-" + std::to_string(ordinal);
  pm->set_namespace_(meta.namespace_());
  pm->set_name(name);
  *pm->mutable_labels() = set.spec().template_().metadata().labels();
  *pm->mutable_annotations() = set.spec().template_().metadata().annotations();
  (*pm->mutable_labels())[kStatefulSetPodNameLabel] = name;
  (*pm->mutable_labels())[kPodIndexLabel] = std::to_string(ordinal);
  (*pm->mutable_labels())[kControllerRevisionHashLabel] = revision;
  *pm->add_ownerreferences() = ControllerRefTo("apps/v1", kKind, meta);
  *pod.mutable_spec() = set.spec().template_().spec();
  pod.mutable_spec()->set_hostname(name);
  if (!set.spec().servicename().empty()) {
    pod.mutable_spec()->set_subdomain(set.spec().servicename());
  }
  return pod;
}

}  // namespace

const objects::ResourceInfo& StatefulSetsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<appsv1::StatefulSet>();
  CHECK(r != nullptr);
  return *r;
}

std::string StatefulSetRevision(const appsv1::StatefulSet& set) {
  return set.metadata().name() + "-" +
         ComputePodTemplateHash(set.spec().template_());
}

StatefulSetController::StatefulSetController(
    StatefulSetControllerOptions options)
    : Controller("statefulset", options.clock, options.metrics),
      options_(options) {
  CHECK(options_.api != nullptr && options_.statefulsets != nullptr &&
        options_.pods != nullptr);
}

void StatefulSetController::RegisterHandlers(
    informer::SharedIndexInformer* statefulsets,
    informer::SharedIndexInformer* pods) {
  OnObjectEvents(statefulsets,
                 [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    if (e.type == ObjectEvent::Type::kUpdated &&
        e.OldAs<corev1::Pod>().metadata().resourceversion() ==
            e.As<corev1::Pod>().metadata().resourceversion()) {
      return;  // periodic resync
    }
    if (e.old != nullptr) OnPod(e.OldAs<corev1::Pod>());
    OnPod(e.As<corev1::Pod>());
  });
}

void StatefulSetController::OnPod(const corev1::Pod& pod) {
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (ref != nullptr) {
    if (ref->kind() == kKind) {
      Enqueue(informer::ObjectKey(pod.metadata().namespace_(), ref->name()));
    }
    return;
  }
  // An orphan: every set of its namespace may adopt it.
  EnqueueSetsIn(*options_.statefulsets, pod.metadata().namespace_(),
                [this](const std::string& key) { Enqueue(key); });
}

Status StatefulSetController::Sync(const std::string& key) {
  ObjectPtr obj = options_.statefulsets->Get(key);
  if (obj == nullptr) {
    return DeletePodsOfGoneOwner(options_.api, *options_.pods,
                                 StatefulSetsResource(), kKind, key);
  }
  auto set = std::static_pointer_cast<const appsv1::StatefulSet>(obj);
  const metav1::ObjectMeta& meta = set->metadata();
  const appsv1::StatefulSetSpec& spec = set->spec();
  ASSIGN_OR_RETURN(machinery::LabelSelector selector,
                   objects::LabelSelectorAsSelector(spec.selector()));
  ApiWriter* api = options_.api;
  Status first_error;

  // 1. Claim: orphans are adopted only under one of the set's names.
  ASSIGN_OR_RETURN(std::vector<PodPtr> owned,
                   ClaimPods(
                       api, *options_.pods, meta, kKind, selector,
                       [&](const corev1::Pod& p) {
                         return OrdinalOf(meta.name(), p.metadata().name()) >=
                                0;
                       },
                       &first_error));

  // 2. Replicas and condemned pods.
  const int64_t replica_count = spec.has_replicas() ? spec.replicas() : 1;
  const int64_t start = spec.ordinals().start();
  const std::string update_revision = StatefulSetRevision(*set);
  const std::string current_revision = set->status().currentrevision().empty()
                                           ? update_revision
                                           : set->status().currentrevision();
  std::vector<PodPtr> replicas(replica_count);
  std::vector<PodPtr> condemned;
  for (const PodPtr& p : owned) {
    int64_t ord = OrdinalOf(meta.name(), p->metadata().name());
    if (ord >= start && ord < start + replica_count) {
      replicas[ord - start] = p;
    } else {
      condemned.push_back(p);
    }
  }
  std::sort(condemned.begin(), condemned.end(),
            [&](const PodPtr& a, const PodPtr& b) {
              return OrdinalOf(meta.name(), a->metadata().name()) >
                     OrdinalOf(meta.name(), b->metadata().name());
            });

  // Status from what the cache shows (computeReplicaStatus); the writes
  // below show up in the next sync's.
  const WallTime now = clock_->WallNow();
  const int32_t min_ready = spec.minreadyseconds();
  appsv1::StatefulSetStatus status = set->status();
  int32_t created = 0, ready = 0, available = 0, current = 0, updated = 0;
  Duration next_available = Duration::max();
  for (const PodPtr& p : owned) {
    if (IsCreated(*p)) ++created;
    if (IsRunningAndReady(*p)) {
      ++ready;
      CountAvailable(*p, min_ready, now, &available, &next_available);
    }
    if (IsCreated(*p) && !IsPodTerminating(*p)) {
      if (RevisionOf(*p) == current_revision) ++current;
      if (RevisionOf(*p) == update_revision) ++updated;
    }
  }
  status.set_replicas(created);
  status.set_readyreplicas(ready);
  status.set_availablereplicas(available);
  status.set_currentreplicas(current);
  status.set_updatedreplicas(updated);
  status.set_currentrevision(current_revision);
  status.set_updaterevision(update_revision);
  status.set_observedgeneration(meta.generation());

  const bool monotonic = spec.podmanagementpolicy() != "Parallel";
  auto healthy = [&](const corev1::Pod& p) {
    return IsRunningAndReady(p) && !IsPodTerminating(p) &&
           IsPodAvailable(p, min_ready, now);
  };
  bool done = objects::IsBeingDeleted(meta);
  // kube's StatefulPodControl events.
  auto delete_pod = [&](const corev1::Pod& p) {
    Status s = DeletePodOnce(api, p);
    if (s.ok()) {
      RecordEvent(*set, informer::kEventNormal, "SuccessfulDelete",
                  "delete Pod " + p.metadata().name() + " in StatefulSet " +
                      meta.name() + " successful");
    } else {
      RecordEvent(*set, informer::kEventWarning, "FailedDelete",
                  "delete Pod " + p.metadata().name() + " in StatefulSet " +
                      meta.name() + " failed error: " + s.message());
    }
    return s;
  };
  // 2a. Replicas in ordinal order.
  for (int64_t i = 0; i < replica_count && !done; ++i) {
    const PodPtr& p = replicas[i];
    if (p != nullptr && IsTerminal(*p) && !IsPodTerminating(*p)) {
      // Replaced once it is gone (kube deletes failed pods to recreate).
      KeepFirstError(&first_error, delete_pod(*p));
      if (monotonic) done = true;
      continue;
    }
    if (p == nullptr) {
      corev1::Pod pod = NewStatefulPod(*set, start + i, update_revision);
      Status s = api->Create(PodsResource(), pod).status();
      if (s.ok()) {
        RecordEvent(*set, informer::kEventNormal, "SuccessfulCreate",
                    "create Pod " + pod.metadata().name() + " in StatefulSet " +
                        meta.name() + " successful");
      } else if (!informer::IsAlreadyExists(s)) {
        RecordEvent(*set, informer::kEventWarning, "FailedCreate",
                    "create Pod " + pod.metadata().name() + " in StatefulSet " +
                        meta.name() + " failed error: " + s.message());
      }
      if (!informer::IsAlreadyExists(s)) KeepFirstError(&first_error, s);
      if (monotonic) done = true;
      continue;
    }
    if (monotonic && !healthy(*p)) done = true;
  }
  // 2b. Condemned pods, highest ordinal first.
  if (!done && !condemned.empty()) {
    if (monotonic) {
      // Only when every other pod is healthy, one at a time.
      const corev1::Pod* unhealthy = nullptr;
      for (const PodPtr& p : replicas) {
        if (unhealthy == nullptr && p != nullptr && !healthy(*p)) {
          unhealthy = p.get();
        }
      }
      for (const PodPtr& p : condemned) {
        if (unhealthy == nullptr && !healthy(*p)) unhealthy = p.get();
      }
      const corev1::Pod& target = *condemned.front();
      if (IsPodTerminating(target) ||
          (unhealthy != nullptr && unhealthy != &target)) {
        done = true;
      } else {
        KeepFirstError(&first_error, delete_pod(target));
        done = true;
      }
    } else {
      for (const PodPtr& p : condemned) {
        if (!IsPodTerminating(*p)) KeepFirstError(&first_error, delete_pod(*p));
      }
    }
  }
  // 3. Rolling update, from the highest ordinal down to the partition.
  if (!done && spec.updatestrategy().type() != "OnDelete") {
    const int64_t partition = spec.updatestrategy().rollingupdate().partition();
    for (int64_t target = replica_count - 1; target >= partition; --target) {
      if (replicas[target] == nullptr) break;  // being created (Parallel)
      const corev1::Pod& p = *replicas[target];
      if (RevisionOf(p) != update_revision && !IsPodTerminating(p)) {
        KeepFirstError(&first_error, delete_pod(p));
        break;
      }
      if (!healthy(p)) break;
    }
  }

  // 4. A complete rolling update makes the update revision current.
  if (spec.updatestrategy().type() != "OnDelete" &&
      status.updatedreplicas() == replica_count &&
      status.readyreplicas() == replica_count &&
      status.replicas() == replica_count) {
    status.set_currentrevision(update_revision);
    status.set_currentreplicas(status.updatedreplicas());
  }
  KeepFirstError(&first_error, UpdateStatusIfChanged(
                                   api, StatefulSetsResource(), *set, status));
  if (next_available != Duration::max()) EnqueueAfter(key, next_available);
  return first_error;
}

}  // namespace kplane::controllers
