#include "controllers/statefulset_controller.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/logging.h"
#include "base/strings.h"
#include "controllers/controller_history.h"
#include "controllers/workload_pods.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

constexpr char kKind[] = "StatefulSet";
// Pods a Parallel set creates in one sync (kube's ReplicaSet
// burstReplicas; the creations' events sync the set again).
constexpr int kBurstPods = 500;

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

// A pod of `set` at `ordinal` from `tmpl`, the template of `revision`.
corev1::Pod NewStatefulPod(const appsv1::StatefulSet& set,
                           const corev1::PodTemplateSpec& tmpl, int64_t ordinal,
                           const std::string& revision) {
  const metav1::ObjectMeta& meta = set.metadata();
  corev1::Pod pod;
  metav1::ObjectMeta* pm = pod.mutable_metadata();
  std::string name = meta.name() + "-" + std::to_string(ordinal);
  pm->set_namespace_(meta.namespace_());
  pm->set_name(name);
  *pm->mutable_labels() = tmpl.metadata().labels();
  *pm->mutable_annotations() = tmpl.metadata().annotations();
  (*pm->mutable_labels())[kStatefulSetPodNameLabel] = name;
  (*pm->mutable_labels())[kPodIndexLabel] = std::to_string(ordinal);
  (*pm->mutable_labels())[kControllerRevisionHashLabel] = revision;
  *pm->add_ownerreferences() = ControllerRefTo("apps/v1", kKind, meta);
  *pod.mutable_spec() = tmpl.spec();
  pod.mutable_spec()->set_hostname(name);
  if (!set.spec().servicename().empty()) {
    pod.mutable_spec()->set_subdomain(set.spec().servicename());
  }
  return pod;
}

// kube's realHistory.CreateControllerRevision: a name taken by a revision
// with other data bumps `collision_count` and hashes again; one with the
// same data is ours already.
StatusOr<RevisionPtr> CreateRevision(ApiWriter* api,
                                     const appsv1::StatefulSet& set,
                                     const std::string& data, int64_t number,
                                     int32_t* collision_count) {
  for (int attempt = 0;; ++attempt) {
    appsv1::ControllerRevision rev =
        NewRevision(set.metadata(), kKind, set.spec().template_(), data,
                    HashRevisionData(data, *collision_count), number);
    StatusOr<ObjectPtr> created =
        api->Create(ControllerRevisionsResource(), rev);
    if (created.ok()) {
      return std::static_pointer_cast<const appsv1::ControllerRevision>(
          *created);
    }
    if (!informer::IsAlreadyExists(created.status()) || attempt >= 100) {
      return created.status();
    }
    ASSIGN_OR_RETURN(ObjectPtr existing, api->Get(ControllerRevisionsResource(),
                                                  rev.metadata().namespace_(),
                                                  rev.metadata().name()));
    auto have =
        std::static_pointer_cast<const appsv1::ControllerRevision>(existing);
    if (SameRevisionData(have->data().raw(), data)) return have;
    ++*collision_count;
  }
}

}  // namespace

const objects::ResourceInfo& StatefulSetsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<appsv1::StatefulSet>();
  CHECK(r != nullptr);
  return *r;
}

std::string StatefulSetRevision(const appsv1::StatefulSet& set) {
  const std::string data = TemplatePatch(set.spec().template_());
  return NewRevision(set.metadata(), kKind, set.spec().template_(), data,
                     HashRevisionData(data, set.status().collisioncount()), 0)
      .metadata()
      .name();
}

StatefulSetController::StatefulSetController(
    StatefulSetControllerOptions options)
    : Controller("statefulset", options.clock, options.metrics),
      options_(options) {
  CHECK(options_.api != nullptr && options_.statefulsets != nullptr &&
        options_.pods != nullptr && options_.revisions != nullptr);
}

void StatefulSetController::RegisterHandlers(
    informer::SharedIndexInformer* statefulsets,
    informer::SharedIndexInformer* pods,
    informer::SharedIndexInformer* revisions) {
  OnObjectEvents(revisions, [this](const ObjectEvent& e) {
    OnRevision(e.As<appsv1::ControllerRevision>());
  });
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

void StatefulSetController::OnRevision(
    const appsv1::ControllerRevision& revision) {
  const metav1::OwnerReference* ref =
      objects::ControllerRef(revision.metadata());
  if (ref != nullptr) {
    if (ref->kind() == kKind) {
      Enqueue(
          informer::ObjectKey(revision.metadata().namespace_(), ref->name()));
    }
    return;
  }
  EnqueueSetsIn(*options_.statefulsets, revision.metadata().namespace_(),
                [this](const std::string& key) { Enqueue(key); });
}

Status StatefulSetController::Sync(const std::string& key) {
  ObjectPtr obj = options_.statefulsets->Get(key);
  if (obj == nullptr) {
    Status s = DeletePodsOfGoneOwner(options_.api, *options_.pods,
                                     StatefulSetsResource(), kKind, key);
    KeepFirstError(
        &s, DeleteRevisionsOfGoneOwner(options_.api, *options_.revisions,
                                       StatefulSetsResource(), kKind, key));
    return s;
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

  // Revisions (getStatefulSetRevisions): the update revision holds the
  // set's template; the current one is what status names, else the same.
  ASSIGN_OR_RETURN(std::vector<RevisionPtr> revisions,
                   ClaimRevisions(api, *options_.revisions, meta, kKind,
                                  selector, &first_error));
  int32_t collision_count = set->status().collisioncount();
  RevisionPtr update_rev;
  {
    const std::string data = TemplatePatch(spec.template_());
    const int64_t next = MaxRevision(revisions) + 1;
    RevisionPtr equal;  // the newest revision with this template
    for (const RevisionPtr& r : revisions) {
      if (SameRevisionData(r->data().raw(), data)) equal = r;
    }
    if (equal != nullptr && equal == revisions.back()) {
      update_rev = equal;  // unchanged
    } else if (equal != nullptr) {
      // Back to an older template: its revision becomes the newest.
      ASSIGN_OR_RETURN(update_rev, SetRevisionNumber(api, *equal, next));
    } else {
      ASSIGN_OR_RETURN(update_rev,
                       CreateRevision(api, *set, data, next, &collision_count));
    }
  }
  RevisionPtr current_rev = update_rev;
  for (const RevisionPtr& r : revisions) {
    if (r->metadata().name() == set->status().currentrevision()) {
      current_rev = r;
    }
  }

  // 2. Replicas and condemned pods.
  const int64_t replica_count = spec.has_replicas() ? spec.replicas() : 1;
  const int64_t start = spec.ordinals().start();
  const std::string update_revision = update_rev->metadata().name();
  const std::string current_revision = current_rev->metadata().name();
  // By index (ordinal - start), only the pods that exist: replicas may be
  // 2^31 - 1, and a slot for each cost 32 GiB every sync.
  std::map<int64_t, PodPtr> replicas;
  auto replica = [&](int64_t i) -> PodPtr {
    auto it = replicas.find(i);
    return it != replicas.end() ? it->second : nullptr;
  };
  std::vector<PodPtr> condemned;
  for (const PodPtr& p : owned) {
    int64_t ord = OrdinalOf(meta.name(), p->metadata().name());
    if (ord >= start && ord - start < replica_count) {
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
  if (collision_count != 0 || set->status().has_collisioncount()) {
    status.set_collisioncount(collision_count);
  }
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
  int created_now = 0;
  for (int64_t i = 0; i < replica_count && !done; ++i) {
    const PodPtr p = replica(i);
    if (p != nullptr && IsTerminal(*p) && !IsPodTerminating(*p)) {
      // Replaced once it is gone (kube deletes failed pods to recreate).
      KeepFirstError(&first_error, delete_pod(*p));
      if (monotonic) done = true;
      continue;
    }
    if (p == nullptr) {
      // Below the partition during a rollout a pod is recreated at the
      // current revision (newVersionedStatefulSetPod: ordinal < start +
      // partition, i.e. the index, as the rolling update below counts).
      const bool at_current =
          current_rev != update_rev &&
          spec.updatestrategy().type() != "OnDelete" &&
          i < spec.updatestrategy().rollingupdate().partition();
      corev1::PodTemplateSpec tmpl = spec.template_();
      if (at_current) {
        StatusOr<corev1::PodTemplateSpec> old = RevisionTemplate(*current_rev);
        if (!old.ok()) {
          KeepFirstError(&first_error, old.status());
          done = true;
          continue;
        }
        tmpl = *std::move(old);
      }
      corev1::Pod pod =
          NewStatefulPod(*set, tmpl, start + i,
                         at_current ? current_revision : update_revision);
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
      if (monotonic || ++created_now >= kBurstPods) done = true;
      continue;
    }
    if (monotonic && !healthy(*p)) done = true;
  }
  // 2b. Condemned pods, highest ordinal first.
  if (!done && !condemned.empty()) {
    if (monotonic) {
      // One at a time; a target that is not healthy waits unless it is the
      // first unhealthy pod (kube's processCondemned), so an unhealthy lower
      // condemned pod does not hold back a healthy higher one.
      const corev1::Pod* unhealthy = nullptr;
      for (const auto& [i, p] : replicas) {
        if (unhealthy == nullptr && p != nullptr && !healthy(*p)) {
          unhealthy = p.get();
        }
      }
      for (const PodPtr& p : condemned) {
        if (unhealthy == nullptr && !healthy(*p)) unhealthy = p.get();
      }
      const corev1::Pod& target = *condemned.front();
      if (IsPodTerminating(target) ||
          (!healthy(target) && unhealthy != &target)) {
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
      const PodPtr at = replica(target);
      if (at == nullptr) break;  // being created (Parallel)
      const corev1::Pod& p = *at;
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

  // truncateHistory: revisions no pod and neither status revision uses,
  // oldest first, beyond revisionHistoryLimit.
  std::set<std::string> live = {status.currentrevision(),
                                status.updaterevision()};
  for (const PodPtr& p : owned) live.insert(RevisionOf(*p));
  std::vector<RevisionPtr> history;
  for (const RevisionPtr& r : revisions) {
    if (live.count(r->metadata().name()) == 0) history.push_back(r);
  }
  const size_t limit =
      spec.has_revisionhistorylimit()
          ? static_cast<size_t>(std::max(0, spec.revisionhistorylimit()))
          : 10;
  for (size_t i = 0; i + limit < history.size(); ++i) {
    const metav1::ObjectMeta& rm = history[i]->metadata();
    Status s =
        api->Delete(ControllerRevisionsResource(), rm.namespace_(), rm.name());
    if (!informer::IsNotFound(s)) KeepFirstError(&first_error, s);
  }
  if (next_available != Duration::max()) EnqueueAfter(key, next_available);
  return first_error;
}

}  // namespace kplane::controllers
