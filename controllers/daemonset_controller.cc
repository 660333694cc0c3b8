#include "controllers/daemonset_controller.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/logging.h"
#include "base/strings.h"
#include "controllers/controller_history.h"
#include "controllers/deployment_controller.h"
#include "controllers/workload_pods.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

constexpr char kKind[] = "DaemonSet";
constexpr char kControllerRevisionHash[] = "controller-revision-hash";

std::string HashOf(const corev1::Pod& pod) {
  auto it = pod.metadata().labels().find(kControllerRevisionHash);
  return it == pod.metadata().labels().end() ? "" : it->second;
}

// One requirement of a node selector term against the node
// (v1.NodeSelectorRequirement with kube's operators).
bool RequirementMatches(const corev1::NodeSelectorRequirement& r,
                        const std::string* value) {
  const std::string& op = r.operator_();
  auto in_values = [&] {
    return value != nullptr && std::find(r.values().begin(), r.values().end(),
                                         *value) != r.values().end();
  };
  if (op == "In") return in_values();
  if (op == "NotIn") return !in_values();
  if (op == "Exists") return value != nullptr;
  if (op == "DoesNotExist") return value == nullptr;
  if (op == "Gt" || op == "Lt") {
    if (value == nullptr || r.values_size() != 1) return false;
    std::optional<int64_t> have = ParseInt64(*value);
    std::optional<int64_t> want = ParseInt64(r.values(0));
    if (!have || !want) return false;
    return op == "Gt" ? *have > *want : *have < *want;
  }
  return false;
}

// A term matches when all its requirements do; an empty term matches
// nothing (kube's nodeaffinity.NodeSelector).
bool TermMatches(const corev1::NodeSelectorTerm& term,
                 const corev1::Node& node) {
  if (term.matchexpressions().empty() && term.matchfields().empty()) {
    return false;
  }
  for (const auto& r : term.matchexpressions()) {
    auto it = node.metadata().labels().find(r.key());
    if (!RequirementMatches(
            r, it == node.metadata().labels().end() ? nullptr : &it->second)) {
      return false;
    }
  }
  for (const auto& r : term.matchfields()) {
    // metadata.name is the only field kube supports here.
    if (r.key() != "metadata.name") return false;
    if (!RequirementMatches(r, &node.metadata().name())) return false;
  }
  return true;
}

bool MatchesNodeSelectorAndAffinity(const corev1::PodSpec& spec,
                                    const corev1::Node& node) {
  for (const auto& [k, v] : spec.nodeselector()) {
    auto it = node.metadata().labels().find(k);
    if (it == node.metadata().labels().end() || it->second != v) return false;
  }
  if (!spec.affinity()
           .nodeaffinity()
           .has_requiredduringschedulingignoredduringexecution()) {
    return true;
  }
  for (const auto& term : spec.affinity()
                              .nodeaffinity()
                              .requiredduringschedulingignoredduringexecution()
                              .nodeselectorterms()) {
    if (TermMatches(term, node)) return true;
  }
  return false;
}

void AddToleration(corev1::PodSpec* spec, const char* key, const char* effect) {
  for (const corev1::Toleration& t : spec->tolerations()) {
    if (t.key() == key && t.effect() == effect && t.operator_() == "Exists") {
      return;
    }
  }
  corev1::Toleration* t = spec->add_tolerations();
  t->set_key(key);
  t->set_operator_("Exists");
  t->set_effect(effect);
}

// The pod to count for a node: the oldest one not being deleted.
PodPtr OldestActive(const std::vector<PodPtr>& pods) {
  PodPtr best;
  for (const PodPtr& p : pods) {
    if (IsPodTerminating(*p)) continue;
    if (best == nullptr ||
        objects::UnixSeconds(p->metadata().creationtimestamp()) <
            objects::UnixSeconds(best->metadata().creationtimestamp())) {
      best = p;
    }
  }
  return best;
}

bool SameLabels(const corev1::Node& a, const corev1::Node& b) {
  const auto& x = a.metadata().labels();
  const auto& y = b.metadata().labels();
  if (x.size() != y.size()) return false;
  for (const auto& [k, v] : x) {
    auto it = y.find(k);
    if (it == y.end() || it->second != v) return false;
  }
  return true;
}

// The set's current revision (the one holding its template, renumbered to
// be the newest) and the others, oldest first: kube's constructHistory.
struct DaemonSetHistory {
  RevisionPtr current;
  std::vector<RevisionPtr> old;
};

StatusOr<DaemonSetHistory> ConstructHistory(
    ApiWriter* api, const appsv1::DaemonSet& ds,
    const std::vector<RevisionPtr>& revisions) {
  const std::string data = TemplatePatch(ds.spec().template_());
  DaemonSetHistory h;
  for (RevisionPtr r : revisions) {
    if (RevisionHashLabel(r->metadata()).empty()) {
      // Labelled with its name, as kube does: no hash to recompute.
      appsv1::ControllerRevision copy = *r;
      (*copy.mutable_metadata()->mutable_labels())[kControllerRevisionHash] =
          copy.metadata().name();
      ASSIGN_OR_RETURN(ObjectPtr o,
                       api->Update(ControllerRevisionsResource(), copy));
      r = std::static_pointer_cast<const appsv1::ControllerRevision>(o);
    }
    if (!SameRevisionData(r->data().raw(), data)) {
      h.old.push_back(r);
    } else if (h.current == nullptr) {
      h.current = r;
    } else {
      // Sorted by revision: the later one is kept as current.
      h.old.push_back(h.current);
      h.current = r;
    }
  }
  const int64_t next = MaxRevision(h.old) + 1;
  if (h.current != nullptr) {
    if (h.current->revision() < next) {
      ASSIGN_OR_RETURN(h.current, SetRevisionNumber(api, *h.current, next));
    }
    return h;
  }
  // snapshot
  appsv1::ControllerRevision rev =
      NewRevision(ds.metadata(), kKind, ds.spec().template_(), data,
                  DaemonSetTemplateHash(ds), next);
  StatusOr<ObjectPtr> created = api->Create(ControllerRevisionsResource(), rev);
  if (created.ok()) {
    h.current =
        std::static_pointer_cast<const appsv1::ControllerRevision>(*created);
    return h;
  }
  if (!informer::IsAlreadyExists(created.status())) return created.status();
  ASSIGN_OR_RETURN(ObjectPtr existing, api->Get(ControllerRevisionsResource(),
                                                rev.metadata().namespace_(),
                                                rev.metadata().name()));
  auto have =
      std::static_pointer_cast<const appsv1::ControllerRevision>(existing);
  if (!SameRevisionData(have->data().raw(), data)) {
    return FailedPreconditionError(
        "controllerrevision " + rev.metadata().name() +
        " exists with another template (a hash collision)");
  }
  h.current = have;  // created by an earlier sync the cache has not seen
  return h;
}

}  // namespace

const objects::ResourceInfo& DaemonSetsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<appsv1::DaemonSet>();
  CHECK(r != nullptr);
  return *r;
}

std::string DaemonSetTemplateHash(const appsv1::DaemonSet& ds) {
  return ComputePodTemplateHash(ds.spec().template_());
}

corev1::PodSpec DaemonPodSpec(const corev1::PodSpec& tmpl) {
  corev1::PodSpec spec = tmpl;
  AddToleration(&spec, "node.kubernetes.io/not-ready", "NoExecute");
  AddToleration(&spec, "node.kubernetes.io/unreachable", "NoExecute");
  AddToleration(&spec, "node.kubernetes.io/disk-pressure", "NoSchedule");
  AddToleration(&spec, "node.kubernetes.io/memory-pressure", "NoSchedule");
  AddToleration(&spec, "node.kubernetes.io/pid-pressure", "NoSchedule");
  AddToleration(&spec, "node.kubernetes.io/unschedulable", "NoSchedule");
  if (spec.hostnetwork()) {
    AddToleration(&spec, "node.kubernetes.io/network-unavailable",
                  "NoSchedule");
  }
  return spec;
}

NodeFit DaemonPodFits(const corev1::PodSpec& spec, const corev1::Node& node) {
  NodeFit fit;
  if (!MatchesNodeSelectorAndAffinity(spec, node)) return fit;
  const auto& taints = node.spec().taints();
  fit.should_continue_running = ToleratesAll(spec, taints, "NoExecute");
  fit.should_run =
      fit.should_continue_running && ToleratesAll(spec, taints, "NoSchedule");
  return fit;
}

DaemonSetController::DaemonSetController(DaemonSetControllerOptions options)
    : Controller("daemonset", options.clock, options.metrics),
      options_(options),
      expectations_(clock_) {
  CHECK(options_.api != nullptr && options_.daemonsets != nullptr &&
        options_.pods != nullptr && options_.nodes != nullptr &&
        options_.revisions != nullptr);
}

void DaemonSetController::RegisterHandlers(
    informer::SharedIndexInformer* daemonsets,
    informer::SharedIndexInformer* pods, informer::SharedIndexInformer* nodes,
    informer::SharedIndexInformer* revisions) {
  OnObjectEvents(revisions, [this](const ObjectEvent& e) {
    const auto& meta = e.As<appsv1::ControllerRevision>().metadata();
    const metav1::OwnerReference* ref = objects::ControllerRef(meta);
    if (ref == nullptr) {
      EnqueueSetsIn(*options_.daemonsets, meta.namespace_(),
                    [this](const std::string& key) { Enqueue(key); });
    } else if (ref->kind() == kKind) {
      Enqueue(informer::ObjectKey(meta.namespace_(), ref->name()));
    }
  });
  OnObjectEvents(daemonsets,
                 [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    const auto& pod = e.As<corev1::Pod>();
    if (e.type == ObjectEvent::Type::kUpdated) {
      const auto& old = e.OldAs<corev1::Pod>();
      if (old.metadata().resourceversion() ==
          pod.metadata().resourceversion()) {
        return;  // periodic resync
      }
      OnPod(pod, IsPodTerminating(pod) && !IsPodTerminating(old)
                     ? PodChange::kGone
                     : PodChange::kChanged);
      return;
    }
    OnPod(pod, e.deleted() ? PodChange::kGone : PodChange::kAdded);
  });
  OnObjectEvents(nodes, [this](const ObjectEvent& e) {
    if (e.type == ObjectEvent::Type::kUpdated) {
      const auto& n = e.As<corev1::Node>();
      const auto& o = e.OldAs<corev1::Node>();
      // Only labels and taints change where daemon pods belong.
      if (DeterministicBytes(n.spec()) == DeterministicBytes(o.spec()) &&
          SameLabels(n, o)) {
        return;
      }
    }
    EnqueueAll();
  });
}

void DaemonSetController::OnPod(const corev1::Pod& pod, PodChange change) {
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (ref == nullptr) {
    // An orphan: every set of its namespace may adopt it.
    EnqueueSetsIn(*options_.daemonsets, pod.metadata().namespace_(),
                  [this](const std::string& key) { Enqueue(key); });
    return;
  }
  if (ref->kind() != kKind) return;
  std::string key =
      informer::ObjectKey(pod.metadata().namespace_(), ref->name());
  if (change == PodChange::kGone) {
    expectations_.DeletionObserved(key, informer::ObjectKey(pod));
  } else if (change == PodChange::kAdded && !IsPodTerminating(pod)) {
    expectations_.CreationObserved(key);
  }
  Enqueue(key);
}

void DaemonSetController::EnqueueAll() {
  for (const ObjectPtr& o : options_.daemonsets->List()) {
    Enqueue(informer::ObjectKey(*o));
  }
}

Status DaemonSetController::Sync(const std::string& key) {
  ObjectPtr obj = options_.daemonsets->Get(key);
  if (obj == nullptr) {
    expectations_.Forget(key);
    Status s = DeletePodsOfGoneOwner(options_.api, *options_.pods,
                                     DaemonSetsResource(), kKind, key);
    KeepFirstError(
        &s, DeleteRevisionsOfGoneOwner(options_.api, *options_.revisions,
                                       DaemonSetsResource(), kKind, key));
    return s;
  }
  auto ds = std::static_pointer_cast<const appsv1::DaemonSet>(obj);
  const metav1::ObjectMeta& meta = ds->metadata();
  ASSIGN_OR_RETURN(machinery::LabelSelector selector,
                   objects::LabelSelectorAsSelector(ds->spec().selector()));
  ApiWriter* api = options_.api;
  // Decided before reading the pods, so that pods observed in between are
  // in the list acted on.
  const bool satisfied = expectations_.Satisfied(key);
  Status first_error;
  ASSIGN_OR_RETURN(std::vector<PodPtr> owned,
                   ClaimPods(
                       api, *options_.pods, meta, kKind, selector,
                       [](const corev1::Pod&) { return true; }, &first_error));
  std::map<std::string, std::vector<PodPtr>> by_node;
  for (const PodPtr& p : owned) by_node[p->spec().nodename()].push_back(p);

  ASSIGN_OR_RETURN(std::vector<RevisionPtr> revisions,
                   ClaimRevisions(api, *options_.revisions, meta, kKind,
                                  selector, &first_error));
  ASSIGN_OR_RETURN(DaemonSetHistory history,
                   ConstructHistory(api, *ds, revisions));
  const std::string hash = RevisionHashLabel(history.current->metadata());
  const corev1::PodSpec pod_spec = DaemonPodSpec(ds->spec().template_().spec());
  const WallTime now = clock_->WallNow();
  const int32_t min_ready = ds->spec().minreadyseconds();

  std::vector<std::string> to_create;
  std::vector<PodPtr> to_delete;
  std::vector<PodPtr> to_force_delete;  // on nodes that are gone
  appsv1::DaemonSetStatus status = ds->status();
  int32_t desired = 0, current = 0, misscheduled = 0, ready = 0, available = 0,
          updated = 0;
  Duration next_available = Duration::max();
  // Per node that should run the pod: its counted pod (null: none yet).
  std::vector<std::pair<std::string, PodPtr>> running;
  std::vector<ObjectPtr> nodes = options_.nodes->List();
  std::set<std::string> node_names;
  for (const ObjectPtr& o : nodes) {
    const auto& node = static_cast<const corev1::Node&>(*o);
    const std::string& name = node.metadata().name();
    node_names.insert(name);
    NodeFit fit = DaemonPodFits(pod_spec, node);
    auto it = by_node.find(name);
    const std::vector<PodPtr> none;
    const std::vector<PodPtr>& pods = it == by_node.end() ? none : it->second;
    if (fit.should_run) ++desired;
    if (fit.should_run && !pods.empty()) ++current;
    if (!fit.should_run && !pods.empty()) ++misscheduled;
    if (fit.should_run && pods.empty()) to_create.push_back(name);
    if (fit.should_continue_running) {
      // Failed pods are replaced; of several others the oldest stays.
      std::vector<PodPtr> alive;
      for (const PodPtr& p : pods) {
        if (IsPodTerminating(*p)) continue;
        if (p->status().phase() == "Failed") {
          to_delete.push_back(p);
        } else {
          alive.push_back(p);
        }
      }
      PodPtr keep = OldestActive(alive);
      for (const PodPtr& p : alive) {
        if (p != keep) to_delete.push_back(p);
      }
      if (fit.should_run) running.emplace_back(name, keep);
    } else {
      for (const PodPtr& p : pods) {
        if (!IsPodTerminating(*p)) to_delete.push_back(p);
      }
    }
    if (fit.should_run) {
      if (PodPtr p = OldestActive(pods)) {
        if (IsPodReady(*p)) {
          ++ready;
          CountAvailable(*p, min_ready, now, &available, &next_available);
        }
        if (HashOf(*p) == hash) ++updated;
      }
    }
  }
  for (const auto& [node, pods] : by_node) {
    if (node_names.count(node) > 0) continue;
    for (const PodPtr& p : pods) {
      if (!IsPodTerminating(*p)) to_force_delete.push_back(p);
    }
  }

  // Rolling update (maxSurge 0), only while nothing else is being done.
  const auto& strategy = ds->spec().updatestrategy();
  if (to_create.empty() && to_delete.empty() && strategy.type() != "OnDelete") {
    // At least 1: a set validated with maxSurge > 0 has maxUnavailable 0,
    // and rolls here as maxSurge 0 with maxUnavailable 1.
    int64_t max_unavailable = std::max<int64_t>(
        1, ScaledValueFromIntOrPercent(
               strategy.rollingupdate().maxunavailable(), desired, true));
    int64_t unavailable = 0;
    for (const auto& [node, p] : running) {
      if (p == nullptr || !IsPodAvailable(*p, min_ready, now)) ++unavailable;
    }
    std::sort(running.begin(), running.end());
    for (const auto& [node, p] : running) {
      if (p == nullptr || HashOf(*p) == hash) continue;
      if (!IsPodAvailable(*p, min_ready, now)) {
        to_delete.push_back(p);  // unavailable already: no budget needed
        continue;
      }
      if (unavailable >= max_unavailable) continue;
      ++unavailable;
      to_delete.push_back(p);
    }
  }

  if (satisfied && !objects::IsBeingDeleted(meta)) {
    std::set<std::string> doomed;
    for (const PodPtr& p : to_delete) doomed.insert(informer::ObjectKey(*p));
    for (const PodPtr& p : to_force_delete) {
      doomed.insert(informer::ObjectKey(*p));
    }
    // Both at once: each Expect* call replaces the other's.
    expectations_.SetExpectations(key, static_cast<int>(to_create.size()),
                                  doomed);
    for (size_t i = 0; i < to_create.size(); ++i) {
      corev1::Pod pod;
      metav1::ObjectMeta* pm = pod.mutable_metadata();
      pm->set_namespace_(meta.namespace_());
      pm->set_generatename(meta.name() + "-");
      *pm->mutable_labels() = ds->spec().template_().metadata().labels();
      *pm->mutable_annotations() =
          ds->spec().template_().metadata().annotations();
      (*pm->mutable_labels())[kControllerRevisionHash] = hash;
      *pm->add_ownerreferences() = ControllerRefTo("apps/v1", kKind, meta);
      *pod.mutable_spec() = pod_spec;
      pod.mutable_spec()->set_nodename(to_create[i]);
      // kube's ReplaceDaemonSetPodNodeNameNodeAffinity: one required term,
      // the node's name.
      auto* terms =
          pod.mutable_spec()
              ->mutable_affinity()
              ->mutable_nodeaffinity()
              ->mutable_requiredduringschedulingignoredduringexecution()
              ->mutable_nodeselectorterms();
      terms->Clear();
      corev1::NodeSelectorRequirement* req = terms->Add()->add_matchfields();
      req->set_key("metadata.name");
      req->set_operator_("In");
      req->add_values(to_create[i]);
      StatusOr<ObjectPtr> created = api->Create(PodsResource(), pod);
      Status s = created.status();
      if (s.ok()) {
        RecordEvent(*ds, informer::kEventNormal, "SuccessfulCreate",
                    "Created pod: " + objects::Name(**created));
      } else {
        RecordEvent(*ds, informer::kEventWarning, "FailedCreate",
                    "Error creating: " + s.message());
        // The failed one and those not attempted will never be seen.
        for (size_t j = i; j < to_create.size(); ++j) {
          expectations_.CreationFailed(key);
        }
        KeepFirstError(&first_error, s);
        break;
      }
    }
    auto remove = [&](const PodPtr& p, bool force) {
      Status s = DeletePodOnce(api, *p, force);
      if (s.ok()) {
        RecordEvent(*ds, informer::kEventNormal, "SuccessfulDelete",
                    "Deleted pod: " + p->metadata().name());
      } else {
        expectations_.DeletionObserved(key, informer::ObjectKey(*p));
        KeepFirstError(&first_error, s);
      }
    };
    for (const PodPtr& p : to_delete) remove(p, false);
    for (const PodPtr& p : to_force_delete) remove(p, true);

    // cleanupHistory: old revisions no pod uses, oldest first.
    std::set<std::string> live_hashes;
    for (const PodPtr& p : owned) live_hashes.insert(HashOf(*p));
    int64_t to_kill = static_cast<int64_t>(history.old.size()) -
                      (ds->spec().has_revisionhistorylimit()
                           ? ds->spec().revisionhistorylimit()
                           : 10);
    for (const RevisionPtr& r : history.old) {
      if (to_kill <= 0) break;
      if (live_hashes.count(RevisionHashLabel(r->metadata())) > 0) continue;
      Status s = api->Delete(ControllerRevisionsResource(),
                             r->metadata().namespace_(), r->metadata().name());
      if (!informer::IsNotFound(s)) KeepFirstError(&first_error, s);
      --to_kill;
    }
  }

  status.set_desirednumberscheduled(desired);
  status.set_currentnumberscheduled(current);
  status.set_numbermisscheduled(misscheduled);
  status.set_numberready(ready);
  status.set_numberavailable(available);
  status.set_numberunavailable(std::max(0, desired - available));
  status.set_updatednumberscheduled(updated);
  status.set_observedgeneration(meta.generation());
  KeepFirstError(&first_error,
                 UpdateStatusIfChanged(api, DaemonSetsResource(), *ds, status));
  if (next_available != Duration::max()) EnqueueAfter(key, next_available);
  return first_error;
}

}  // namespace kplane::controllers
