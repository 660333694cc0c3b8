// Strategies of apps/v1 deployments, replicasets and statefulsets (with
// /scale), daemonsets and of
// coordination.k8s.io/v1 leases. Upstream models:
// pkg/registry/apps/{deployment,replicaset}/strategy.go,
// pkg/apis/apps/validation, pkg/registry/coordination/lease/strategy.go and
// pkg/apis/coordination/validation of Kubernetes 1.32.
#include "apiserver/registry/defaults.h"
#include "apiserver/registry/pod_validation.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/apps_workloads_types.h"

namespace kplane::apiserver {

namespace {

using objects::appsv1::DaemonSet;
using objects::appsv1::DaemonSetSpec;
using objects::appsv1::Deployment;
using objects::appsv1::DeploymentSpec;
using objects::appsv1::ReplicaSet;
using objects::appsv1::ReplicaSetSpec;
using objects::appsv1::StatefulSet;
using objects::appsv1::StatefulSetSpec;
using objects::autoscalingv1::Scale;
using objects::coordinationv1::Lease;
using objects::intstr::IntOrString;
using validation::Append;
using validation::Forbidden;
using validation::GoIntOrString;
using validation::GoLabelSelector;
using validation::Invalid;
using validation::InvalidInt;
using validation::IsNotMoreThan100Percent;
using validation::NameRule;
using validation::Path;
using validation::PercentValue;
using validation::Required;
using validation::ValidatePositiveIntOrPercent;

// --- int-or-percent (pkg/apis/apps/validation) ---

// intstr.IntValue(): strings parse as integers (0 when they do not).
int64_t IntValue(const IntOrString& v) {
  if (v.type() == 1) return ParseInt64(v.strval()).value_or(0);
  return v.intval();
}

int64_t IntOrPercentValue(const IntOrString& v) {
  if (auto p = PercentValue(v)) return *p;
  return IntValue(v);
}

std::string GoDeploymentStrategy(const objects::appsv1::DeploymentStrategy& s) {
  return "apps.DeploymentStrategy{Type:" + GoQuote(s.type()) +
         ", RollingUpdate:" +
         (s.has_rollingupdate() ? "&apps.RollingUpdateDeployment{...}"
                                : "(*apps.RollingUpdateDeployment)(nil)") +
         "}";
}

FieldErrors ValidateDeploymentStrategy(
    const objects::appsv1::DeploymentStrategy& s, const Path& p) {
  FieldErrors errs;
  if (s.type() == "Recreate") {
    if (s.has_rollingupdate()) {
      errs.push_back(Forbidden(p.Child("rollingUpdate"),
                               "may not be specified when strategy `type` is "
                               "'Recreate'"));
    }
  } else if (s.type() == "RollingUpdate") {
    if (!s.has_rollingupdate()) {
      errs.push_back(Required(p.Child("rollingUpdate"),
                              "this should be defaulted and never be nil"));
    } else {
      Path rp = p.Child("rollingUpdate");
      const auto& ru = s.rollingupdate();
      Append(&errs, ValidatePositiveIntOrPercent(ru.maxunavailable(),
                                                 rp.Child("maxUnavailable")));
      Append(&errs,
             ValidatePositiveIntOrPercent(ru.maxsurge(), rp.Child("maxSurge")));
      if (IntOrPercentValue(ru.maxunavailable()) == 0 &&
          IntOrPercentValue(ru.maxsurge()) == 0) {
        errs.push_back(Invalid(rp.Child("maxUnavailable"),
                               GoIntOrString(ru.maxunavailable()),
                               "may not be 0 when `maxSurge` is 0"));
      }
      Append(&errs, IsNotMoreThan100Percent(ru.maxunavailable(),
                                            rp.Child("maxUnavailable")));
    }
  } else {
    errs.push_back(validation::NotSupported(p, GoDeploymentStrategy(s),
                                            {"Recreate", "RollingUpdate"}));
  }
  return errs;
}

// Selector and template rules shared by deployments and replicasets
// (ValidateDeploymentSpec / ValidateReplicaSetSpec).
FieldErrors ValidateSelectorAndTemplate(
    bool has_selector, const objects::metav1::LabelSelector& selector,
    const objects::corev1::PodTemplateSpec& tmpl, const Path& spec) {
  FieldErrors errs;
  if (!has_selector) {
    errs.push_back(Required(spec.Child("selector")));
  } else {
    Append(&errs,
           validation::ValidateLabelSelector(selector, spec.Child("selector")));
    if (selector.matchlabels().empty() && selector.matchexpressions().empty()) {
      // The text says "deployment" for replicasets too, as upstream.
      errs.push_back(Invalid(spec.Child("selector"), GoLabelSelector(selector),
                             "empty selector is invalid for deployment"));
    }
  }
  auto sel = validation::AsSelector(has_selector ? &selector : nullptr);
  if (!sel) {
    errs.push_back(Invalid(spec.Child("selector"), GoLabelSelector(selector),
                           "invalid label selector"));
  } else {
    Append(&errs, podvalidation::ValidatePodTemplateForController(
                      tmpl, *sel, spec.Child("template"), "ReplicaSet"));
  }
  return errs;
}

FieldErrors ValidateDeploymentSpec(const DeploymentSpec& spec) {
  Path sp("spec");
  FieldErrors errs =
      validation::ValidateNonnegative(spec.replicas(), sp.Child("replicas"));
  Append(&errs,
         ValidateSelectorAndTemplate(spec.has_selector(), spec.selector(),
                                     spec.template_(), sp));
  Append(&errs,
         ValidateDeploymentStrategy(spec.strategy(), sp.Child("strategy")));
  Append(&errs, validation::ValidateNonnegative(spec.minreadyseconds(),
                                                sp.Child("minReadySeconds")));
  if (spec.has_revisionhistorylimit()) {
    Append(&errs,
           validation::ValidateNonnegative(spec.revisionhistorylimit(),
                                           sp.Child("revisionHistoryLimit")));
  }
  if (spec.has_progressdeadlineseconds()) {
    Append(&errs, validation::ValidateNonnegative(
                      spec.progressdeadlineseconds(),
                      sp.Child("progressDeadlineSeconds")));
    if (spec.progressdeadlineseconds() <= spec.minreadyseconds()) {
      errs.push_back(InvalidInt(sp.Child("progressDeadlineSeconds"),
                                spec.progressdeadlineseconds(),
                                "must be greater than minReadySeconds"));
    }
  }
  return errs;
}

FieldErrors ValidateDeploymentStatus(
    const objects::appsv1::DeploymentStatus& s) {
  Path p("status");
  FieldErrors errs;
  Append(&errs, validation::ValidateNonnegative(s.observedgeneration(),
                                                p.Child("observedGeneration")));
  Append(&errs,
         validation::ValidateNonnegative(s.replicas(), p.Child("replicas")));
  Append(&errs, validation::ValidateNonnegative(s.updatedreplicas(),
                                                p.Child("updatedReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.readyreplicas(),
                                                p.Child("readyReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.availablereplicas(),
                                                p.Child("availableReplicas")));
  Append(&errs, validation::ValidateNonnegative(
                    s.unavailablereplicas(), p.Child("unavailableReplicas")));
  if (s.has_collisioncount()) {
    Append(&errs, validation::ValidateNonnegative(s.collisioncount(),
                                                  p.Child("collisionCount")));
  }
  constexpr char kMsg[] = "cannot be greater than status.replicas";
  if (s.updatedreplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("updatedReplicas"), s.updatedreplicas(), kMsg));
  }
  if (s.readyreplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("readyReplicas"), s.readyreplicas(), kMsg));
  }
  if (s.availablereplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("availableReplicas"), s.availablereplicas(), kMsg));
  }
  if (s.availablereplicas() > s.readyreplicas()) {
    errs.push_back(InvalidInt(p.Child("availableReplicas"),
                              s.availablereplicas(),
                              "cannot be greater than readyReplicas"));
  }
  return errs;
}

FieldErrors ValidateReplicaSetSpec(const ReplicaSetSpec& spec) {
  Path sp("spec");
  FieldErrors errs =
      validation::ValidateNonnegative(spec.replicas(), sp.Child("replicas"));
  Append(&errs, validation::ValidateNonnegative(spec.minreadyseconds(),
                                                sp.Child("minReadySeconds")));
  Append(&errs,
         ValidateSelectorAndTemplate(spec.has_selector(), spec.selector(),
                                     spec.template_(), sp));
  return errs;
}

FieldErrors ValidateReplicaSetStatus(
    const objects::appsv1::ReplicaSetStatus& s) {
  Path p("status");
  FieldErrors errs;
  Append(&errs,
         validation::ValidateNonnegative(s.replicas(), p.Child("replicas")));
  Append(&errs, validation::ValidateNonnegative(
                    s.fullylabeledreplicas(), p.Child("fullyLabeledReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.readyreplicas(),
                                                p.Child("readyReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.availablereplicas(),
                                                p.Child("availableReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.observedgeneration(),
                                                p.Child("observedGeneration")));
  constexpr char kMsg[] = "cannot be greater than status.replicas";
  if (s.fullylabeledreplicas() > s.replicas()) {
    errs.push_back(InvalidInt(p.Child("fullyLabeledReplicas"),
                              s.fullylabeledreplicas(), kMsg));
  }
  if (s.readyreplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("readyReplicas"), s.readyreplicas(), kMsg));
  }
  if (s.availablereplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("availableReplicas"), s.availablereplicas(), kMsg));
  }
  if (s.availablereplicas() > s.readyreplicas()) {
    errs.push_back(InvalidInt(p.Child("availableReplicas"),
                              s.availablereplicas(),
                              "cannot be greater than readyReplicas"));
  }
  return errs;
}

FieldErrors SelectorImmutable(const DeploymentSpec& ns,
                              const DeploymentSpec& os) {
  return validation::ValidateImmutable(
      ns.has_selector() == os.has_selector() &&
          validation::Equal(ns.selector(), os.selector()),
      ns.has_selector() ? GoLabelSelector(ns.selector()) : "null",
      Path("spec").Child("selector"));
}

FieldErrors SelectorImmutable(const ReplicaSetSpec& ns,
                              const ReplicaSetSpec& os) {
  return validation::ValidateImmutable(
      ns.has_selector() == os.has_selector() &&
          validation::Equal(ns.selector(), os.selector()),
      ns.has_selector() ? GoLabelSelector(ns.selector()) : "null",
      Path("spec").Child("selector"));
}

template <typename T>
Scale ScaleOf(const T& obj, int32_t status_replicas) {
  Scale scale;
  auto* m = scale.mutable_metadata();
  m->set_name(obj.metadata().name());
  m->set_namespace_(obj.metadata().namespace_());
  m->set_uid(obj.metadata().uid());
  m->set_resourceversion(obj.metadata().resourceversion());
  *m->mutable_creationtimestamp() = obj.metadata().creationtimestamp();
  scale.mutable_spec()->set_replicas(obj.spec().replicas());
  scale.mutable_status()->set_replicas(status_replicas);
  auto sel = validation::AsSelector(
      obj.spec().has_selector() ? &obj.spec().selector() : nullptr);
  if (sel) scale.mutable_status()->set_selector(sel->String());
  return scale;
}

bool AnnotationsEqual(const validation::StringMap& a,
                      const validation::StringMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) return false;
  }
  return true;
}

// ============================== deployments ==============================

class DeploymentStrategy : public TypedStrategy<Deployment> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<TableColumn> Columns() const override {
    return printers::DeploymentColumns();
  }
  bool HasScale() const override { return true; }

 protected:
  void DefaultT(Deployment* d) const override {
    defaults::DefaultDeployment(d);
  }
  void CreateT(Deployment* d) const override {
    d->mutable_status()->Clear();
    d->mutable_metadata()->set_generation(1);
  }
  // Spec changes bump the generation to tell scaling from template changes;
  // annotation changes too, since they are copied to the replicasets.
  void UpdateT(Deployment* d, const Deployment& old) const override {
    *d->mutable_status() = old.status();
    if (!validation::Equal(d->spec(), old.spec()) ||
        !AnnotationsEqual(d->metadata().annotations(),
                          old.metadata().annotations())) {
      d->mutable_metadata()->set_generation(old.metadata().generation() + 1);
    }
  }
  void StatusUpdateT(Deployment* d, const Deployment& old) const override {
    *d->mutable_spec() = old.spec();
    *d->mutable_metadata()->mutable_labels() = old.metadata().labels();
    // DeploymentReplicaSetTerminatingReplicas is off in 1.32.
    if (!old.status().has_terminatingreplicas()) {
      d->mutable_status()->clear_terminatingreplicas();
    }
  }
  FieldErrors ValidateCreateT(const Deployment& d) const override {
    FieldErrors errs = validation::ValidateObjectMeta(
        d.metadata(), true, NameRule::kDNS1123Subdomain);
    Append(&errs, ValidateDeploymentSpec(d.spec()));
    return errs;
  }
  FieldErrors ValidateUpdateT(const Deployment& d,
                              const Deployment& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(d.metadata(), old.metadata());
    Append(&errs, ValidateDeploymentSpec(d.spec()));
    Append(&errs, SelectorImmutable(d.spec(), old.spec()));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const Deployment& d,
                                    const Deployment& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(d.metadata(), old.metadata());
    Append(&errs, ValidateDeploymentStatus(d.status()));
    const auto& ns = d.status();
    const auto& os = old.status();
    bool decremented =
        os.has_collisioncount() &&
        (!ns.has_collisioncount() || ns.collisioncount() < os.collisioncount());
    if (decremented) {
      errs.push_back(InvalidInt(Path("status").Child("collisionCount"),
                                ns.collisioncount(), "cannot be decremented"));
    }
    return errs;
  }
  std::vector<TableCell> RowT(const Deployment& d,
                              WallTime now) const override {
    return printers::DeploymentRow(d, now);
  }
  Scale ToScaleT(const Deployment& d) const override {
    return ScaleOf(d, d.status().replicas());
  }
  void ApplyScaleT(const Scale& scale, Deployment* d) const override {
    d->mutable_spec()->set_replicas(scale.spec().replicas());
  }
};

// ============================== replicasets ==============================

class ReplicaSetStrategy : public TypedStrategy<ReplicaSet> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "metadata.namespace", "status.replicas"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::ReplicaSetColumns();
  }
  bool HasScale() const override { return true; }

 protected:
  void DefaultT(ReplicaSet* rs) const override {
    defaults::DefaultReplicaSet(rs);
  }
  void CreateT(ReplicaSet* rs) const override {
    rs->mutable_status()->Clear();
    rs->mutable_metadata()->set_generation(1);
  }
  void UpdateT(ReplicaSet* rs, const ReplicaSet& old) const override {
    *rs->mutable_status() = old.status();
    if (!validation::Equal(rs->spec(), old.spec())) {
      rs->mutable_metadata()->set_generation(old.metadata().generation() + 1);
    }
  }
  void StatusUpdateT(ReplicaSet* rs, const ReplicaSet& old) const override {
    *rs->mutable_spec() = old.spec();
    if (!old.status().has_terminatingreplicas()) {
      rs->mutable_status()->clear_terminatingreplicas();
    }
  }
  FieldErrors ValidateCreateT(const ReplicaSet& rs) const override {
    FieldErrors errs = validation::ValidateObjectMeta(
        rs.metadata(), true, NameRule::kDNS1123Subdomain);
    Append(&errs, ValidateReplicaSetSpec(rs.spec()));
    return errs;
  }
  // Upstream validates the new object both as a create and as an update,
  // so some errors appear twice in details.causes (the message prints
  // each once).
  FieldErrors ValidateUpdateT(const ReplicaSet& rs,
                              const ReplicaSet& old) const override {
    FieldErrors errs = ValidateCreateT(rs);
    Append(&errs,
           validation::ValidateObjectMetaUpdate(rs.metadata(), old.metadata()));
    Append(&errs, ValidateReplicaSetSpec(rs.spec()));
    Append(&errs, SelectorImmutable(rs.spec(), old.spec()));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const ReplicaSet& rs,
                                    const ReplicaSet& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(rs.metadata(), old.metadata());
    Append(&errs, ValidateReplicaSetStatus(rs.status()));
    return errs;
  }
  std::optional<std::string> FieldValueT(const ReplicaSet& rs,
                                         std::string_view f) const override {
    if (f == "status.replicas") return std::to_string(rs.status().replicas());
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const ReplicaSet& rs,
                              WallTime now) const override {
    return printers::ReplicaSetRow(rs, now);
  }
  Scale ToScaleT(const ReplicaSet& rs) const override {
    return ScaleOf(rs, rs.status().replicas());
  }
  void ApplyScaleT(const Scale& scale, ReplicaSet* rs) const override {
    rs->mutable_spec()->set_replicas(scale.spec().replicas());
  }
};

// ============================== statefulsets ==============================

// SetDefaults_StatefulSet (StatefulSetAutoDeletePVC is beta, on, in 1.32).
void DefaultStatefulSet(StatefulSet* sts) {
  StatefulSetSpec* spec = sts->mutable_spec();
  if (!spec->has_replicas()) spec->set_replicas(1);
  if (spec->podmanagementpolicy().empty()) {
    spec->set_podmanagementpolicy("OrderedReady");
  }
  auto* us = spec->mutable_updatestrategy();
  if (us->type().empty()) us->set_type("RollingUpdate");
  if (us->type() == "RollingUpdate" && !us->rollingupdate().has_partition()) {
    us->mutable_rollingupdate()->set_partition(0);
  }
  if (!spec->has_revisionhistorylimit()) spec->set_revisionhistorylimit(10);
  auto* retention = spec->mutable_persistentvolumeclaimretentionpolicy();
  if (retention->whendeleted().empty()) retention->set_whendeleted("Retain");
  if (retention->whenscaled().empty()) retention->set_whenscaled("Retain");
  defaults::DefaultPodTemplate(spec->mutable_template_());
}

// A selector that is required, valid, non-empty and matches the template
// (the part of ValidateStatefulSetSpec / ValidateDaemonSetSpec they share;
// `kind` is "statefulset" or "daemonset" in the empty-selector text).
FieldErrors ValidateControllerSelector(
    bool has_selector, const objects::metav1::LabelSelector& selector,
    const Path& spec, std::string_view kind) {
  FieldErrors errs;
  if (!has_selector) {
    errs.push_back(Required(spec.Child("selector")));
    return errs;
  }
  Append(&errs,
         validation::ValidateLabelSelector(selector, spec.Child("selector")));
  if (selector.matchlabels().empty() && selector.matchexpressions().empty()) {
    errs.push_back(
        Invalid(spec.Child("selector"), GoLabelSelector(selector),
                "empty selector is invalid for " + std::string(kind)));
  }
  return errs;
}

FieldErrors ValidateStatefulSetSpec(const StatefulSetSpec& spec) {
  Path sp("spec");
  FieldErrors errs;
  const std::string& policy = spec.podmanagementpolicy();
  if (policy.empty()) {
    errs.push_back(Required(sp.Child("podManagementPolicy")));
  } else if (policy != "OrderedReady" && policy != "Parallel") {
    errs.push_back(validation::NotSupportedString(
        sp.Child("podManagementPolicy"), policy, {"OrderedReady", "Parallel"}));
  }
  const auto& us = spec.updatestrategy();
  Path up = sp.Child("updateStrategy");
  if (us.type() == "RollingUpdate") {
    if (us.has_rollingupdate()) {
      Append(&errs, validation::ValidateNonnegative(
                        us.rollingupdate().partition(),
                        up.Child("rollingUpdate").Child("partition")));
    }
  } else if (us.type() == "OnDelete") {
    if (us.has_rollingupdate()) {
      errs.push_back(
          Invalid(up.Child("rollingUpdate"),
                  "apps.RollingUpdateStatefulSetStrategy{...}",
                  "only allowed for updateStrategy 'RollingUpdate'"));
    }
  } else if (us.type().empty()) {
    errs.push_back(Required(up, ""));
  } else {
    errs.push_back(validation::NotSupportedString(
        up, us.type(), {"OnDelete", "RollingUpdate"}));
  }
  if (spec.has_revisionhistorylimit()) {
    Append(&errs,
           validation::ValidateNonnegative(spec.revisionhistorylimit(),
                                           sp.Child("revisionHistoryLimit")));
  }
  Append(&errs, validation::ValidateNonnegative(spec.replicas(),
                                                sp.Child("replicas")));
  Append(&errs, validation::ValidateNonnegative(spec.minreadyseconds(),
                                                sp.Child("minReadySeconds")));
  if (spec.has_ordinals()) {
    Append(&errs,
           validation::ValidateNonnegative(
               spec.ordinals().start(), sp.Child("ordinals").Child("start")));
  }
  Append(&errs, ValidateControllerSelector(spec.has_selector(), spec.selector(),
                                           sp, "statefulset"));
  auto sel =
      validation::AsSelector(spec.has_selector() ? &spec.selector() : nullptr);
  if (spec.has_selector() && !sel) {
    errs.push_back(Invalid(sp.Child("selector"),
                           GoLabelSelector(spec.selector()),
                           "invalid label selector"));
  } else if (sel) {
    Append(&errs,
           podvalidation::ValidatePodTemplateForController(
               spec.template_(), *sel, sp.Child("template"), "StatefulSet"));
  }
  return errs;
}

FieldErrors ValidateStatefulSetStatus(
    const objects::appsv1::StatefulSetStatus& s) {
  Path p("status");
  FieldErrors errs;
  Append(&errs,
         validation::ValidateNonnegative(s.replicas(), p.Child("replicas")));
  Append(&errs, validation::ValidateNonnegative(s.readyreplicas(),
                                                p.Child("readyReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.currentreplicas(),
                                                p.Child("currentReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.updatedreplicas(),
                                                p.Child("updatedReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.availablereplicas(),
                                                p.Child("availableReplicas")));
  Append(&errs, validation::ValidateNonnegative(s.observedgeneration(),
                                                p.Child("observedGeneration")));
  if (s.has_collisioncount()) {
    Append(&errs, validation::ValidateNonnegative(s.collisioncount(),
                                                  p.Child("collisionCount")));
  }
  constexpr char kMsg[] = "cannot be greater than status.replicas";
  if (s.readyreplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("readyReplicas"), s.readyreplicas(), kMsg));
  }
  if (s.currentreplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("currentReplicas"), s.currentreplicas(), kMsg));
  }
  if (s.updatedreplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("updatedReplicas"), s.updatedreplicas(), kMsg));
  }
  if (s.availablereplicas() > s.replicas()) {
    errs.push_back(
        InvalidInt(p.Child("availableReplicas"), s.availablereplicas(), kMsg));
  }
  if (s.availablereplicas() > s.readyreplicas()) {
    errs.push_back(InvalidInt(p.Child("availableReplicas"),
                              s.availablereplicas(),
                              "cannot be greater than status.readyReplicas"));
  }
  return errs;
}

// The status/spec/generation rules StatefulSets and DaemonSets share:
// create clears the status (generation 1), an update keeps it and bumps
// the generation on spec changes, a status update keeps the spec.
template <typename T>
class WorkloadStrategy : public TypedStrategy<T> {
 public:
  using TypedStrategy<T>::TypedStrategy;

 protected:
  void CreateT(T* obj) const override {
    obj->mutable_status()->Clear();
    obj->mutable_metadata()->set_generation(1);
  }
  void UpdateT(T* obj, const T& old) const override {
    *obj->mutable_status() = old.status();
    if (!validation::Equal(obj->spec(), old.spec())) {
      obj->mutable_metadata()->set_generation(old.metadata().generation() + 1);
    }
  }
  void StatusUpdateT(T* obj, const T& old) const override {
    *obj->mutable_spec() = old.spec();
  }
};

class StatefulSetStrategy : public WorkloadStrategy<StatefulSet> {
 public:
  using WorkloadStrategy::WorkloadStrategy;

  std::vector<TableColumn> Columns() const override {
    return printers::StatefulSetColumns();
  }
  bool HasScale() const override { return true; }

 protected:
  void DefaultT(StatefulSet* s) const override { DefaultStatefulSet(s); }
  FieldErrors ValidateCreateT(const StatefulSet& s) const override {
    FieldErrors errs = validation::ValidateObjectMeta(
        s.metadata(), true, NameRule::kDNS1123Subdomain);
    Append(&errs, ValidateStatefulSetSpec(s.spec()));
    return errs;
  }
  // ValidateStatefulSetUpdate: only replicas, ordinals, template,
  // updateStrategy, persistentVolumeClaimRetentionPolicy and
  // minReadySeconds may change.
  FieldErrors ValidateUpdateT(const StatefulSet& s,
                              const StatefulSet& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(s.metadata(), old.metadata());
    Append(&errs, ValidateStatefulSetSpec(s.spec()));
    StatefulSetSpec rest = s.spec();
    rest.set_replicas(old.spec().replicas());
    *rest.mutable_ordinals() = old.spec().ordinals();
    if (!old.spec().has_ordinals()) rest.clear_ordinals();
    *rest.mutable_template_() = old.spec().template_();
    *rest.mutable_updatestrategy() = old.spec().updatestrategy();
    *rest.mutable_persistentvolumeclaimretentionpolicy() =
        old.spec().persistentvolumeclaimretentionpolicy();
    if (!old.spec().has_persistentvolumeclaimretentionpolicy()) {
      rest.clear_persistentvolumeclaimretentionpolicy();
    }
    rest.set_minreadyseconds(old.spec().minreadyseconds());
    if (!validation::Equal(rest, old.spec())) {
      errs.push_back(Forbidden(
          Path("spec"),
          "updates to statefulset spec for fields other than 'replicas', "
          "'ordinals', 'template', 'updateStrategy', "
          "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
          "forbidden"));
    }
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const StatefulSet& s,
                                    const StatefulSet& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(s.metadata(), old.metadata());
    Append(&errs, ValidateStatefulSetStatus(s.status()));
    if (old.status().has_collisioncount() &&
        s.status().collisioncount() < old.status().collisioncount()) {
      errs.push_back(InvalidInt(Path("status").Child("collisionCount"),
                                s.status().collisioncount(),
                                "cannot be decremented"));
    }
    return errs;
  }
  std::vector<TableCell> RowT(const StatefulSet& s,
                              WallTime now) const override {
    return printers::StatefulSetRow(s, now);
  }
  Scale ToScaleT(const StatefulSet& s) const override {
    return ScaleOf(s, s.status().replicas());
  }
  void ApplyScaleT(const Scale& scale, StatefulSet* s) const override {
    s->mutable_spec()->set_replicas(scale.spec().replicas());
  }
};

// ============================== daemonsets ==============================

// SetDefaults_DaemonSet.
void DefaultDaemonSet(DaemonSet* ds) {
  DaemonSetSpec* spec = ds->mutable_spec();
  auto* us = spec->mutable_updatestrategy();
  if (us->type().empty()) us->set_type("RollingUpdate");
  if (us->type() == "RollingUpdate") {
    auto* ru = us->mutable_rollingupdate();
    if (!ru->has_maxunavailable()) ru->mutable_maxunavailable()->set_intval(1);
    if (!ru->has_maxsurge()) ru->mutable_maxsurge()->set_intval(0);
  }
  if (!spec->has_revisionhistorylimit()) spec->set_revisionhistorylimit(10);
  defaults::DefaultPodTemplate(spec->mutable_template_());
}

// ValidateRollingUpdateDaemonSet: exactly one of maxUnavailable and
// maxSurge is non-zero.
FieldErrors ValidateRollingUpdateDaemonSet(
    const objects::appsv1::RollingUpdateDaemonSet& ru, const Path& p) {
  FieldErrors errs = ValidatePositiveIntOrPercent(ru.maxunavailable(),
                                                  p.Child("maxUnavailable"));
  Append(&errs,
         ValidatePositiveIntOrPercent(ru.maxsurge(), p.Child("maxSurge")));
  Append(&errs, IsNotMoreThan100Percent(ru.maxunavailable(),
                                        p.Child("maxUnavailable")));
  Append(&errs, IsNotMoreThan100Percent(ru.maxsurge(), p.Child("maxSurge")));
  bool has_unavailable = IntOrPercentValue(ru.maxunavailable()) != 0;
  bool has_surge = IntOrPercentValue(ru.maxsurge()) != 0;
  if (has_unavailable && has_surge) {
    errs.push_back(Invalid(p.Child("maxSurge"), GoIntOrString(ru.maxsurge()),
                           "may not be set when maxUnavailable is non-zero"));
  } else if (!has_unavailable && !has_surge) {
    errs.push_back(
        Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"));
  }
  return errs;
}

FieldErrors ValidateDaemonSetSpec(const DaemonSetSpec& spec) {
  Path sp("spec");
  FieldErrors errs = ValidateControllerSelector(
      spec.has_selector(), spec.selector(), sp, "daemonset");
  auto sel =
      validation::AsSelector(spec.has_selector() ? &spec.selector() : nullptr);
  if (spec.has_selector() && !sel) {
    errs.push_back(Invalid(sp.Child("selector"),
                           GoLabelSelector(spec.selector()),
                           "invalid label selector"));
  } else if (sel) {
    Append(&errs,
           podvalidation::ValidatePodTemplateForController(
               spec.template_(), *sel, sp.Child("template"), "DaemonSet"));
  }
  Append(&errs, validation::ValidateNonnegative(spec.minreadyseconds(),
                                                sp.Child("minReadySeconds")));
  const auto& us = spec.updatestrategy();
  Path up = sp.Child("updateStrategy");
  if (us.type() == "RollingUpdate") {
    if (!us.has_rollingupdate()) {
      errs.push_back(Required(up.Child("rollingUpdate"), ""));
    } else {
      Append(&errs, ValidateRollingUpdateDaemonSet(us.rollingupdate(),
                                                   up.Child("rollingUpdate")));
    }
  } else if (us.type() != "OnDelete") {
    errs.push_back(validation::NotSupportedString(
        up.Child("type"), us.type(), {"OnDelete", "RollingUpdate"}));
  }
  if (spec.has_revisionhistorylimit()) {
    Append(&errs,
           validation::ValidateNonnegative(spec.revisionhistorylimit(),
                                           sp.Child("revisionHistoryLimit")));
  }
  return errs;
}

FieldErrors ValidateDaemonSetStatus(const objects::appsv1::DaemonSetStatus& s) {
  Path p("status");
  FieldErrors errs;
  Append(&errs,
         validation::ValidateNonnegative(s.currentnumberscheduled(),
                                         p.Child("currentNumberScheduled")));
  Append(&errs, validation::ValidateNonnegative(s.numbermisscheduled(),
                                                p.Child("numberMisscheduled")));
  Append(&errs,
         validation::ValidateNonnegative(s.desirednumberscheduled(),
                                         p.Child("desiredNumberScheduled")));
  Append(&errs, validation::ValidateNonnegative(s.numberready(),
                                                p.Child("numberReady")));
  Append(&errs, validation::ValidateNonnegative(s.observedgeneration(),
                                                p.Child("observedGeneration")));
  Append(&errs,
         validation::ValidateNonnegative(s.updatednumberscheduled(),
                                         p.Child("updatedNumberScheduled")));
  Append(&errs, validation::ValidateNonnegative(s.numberavailable(),
                                                p.Child("numberAvailable")));
  Append(&errs, validation::ValidateNonnegative(s.numberunavailable(),
                                                p.Child("numberUnavailable")));
  if (s.has_collisioncount()) {
    Append(&errs, validation::ValidateNonnegative(s.collisioncount(),
                                                  p.Child("collisionCount")));
  }
  return errs;
}

class DaemonSetStrategy : public WorkloadStrategy<DaemonSet> {
 public:
  using WorkloadStrategy::WorkloadStrategy;

  std::vector<TableColumn> Columns() const override {
    return printers::DaemonSetColumns();
  }

 protected:
  void DefaultT(DaemonSet* ds) const override { DefaultDaemonSet(ds); }
  FieldErrors ValidateCreateT(const DaemonSet& ds) const override {
    FieldErrors errs = validation::ValidateObjectMeta(
        ds.metadata(), true, NameRule::kDNS1123Subdomain);
    Append(&errs, ValidateDaemonSetSpec(ds.spec()));
    return errs;
  }
  FieldErrors ValidateUpdateT(const DaemonSet& ds,
                              const DaemonSet& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(ds.metadata(), old.metadata());
    Append(&errs, ValidateDaemonSetSpec(ds.spec()));
    Append(
        &errs,
        validation::ValidateImmutable(
            ds.spec().has_selector() == old.spec().has_selector() &&
                validation::Equal(ds.spec().selector(), old.spec().selector()),
            ds.spec().has_selector() ? GoLabelSelector(ds.spec().selector())
                                     : "null",
            Path("spec").Child("selector")));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const DaemonSet& ds,
                                    const DaemonSet& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(ds.metadata(), old.metadata());
    Append(&errs, ValidateDaemonSetStatus(ds.status()));
    return errs;
  }
  std::vector<TableCell> RowT(const DaemonSet& ds,
                              WallTime now) const override {
    return printers::DaemonSetRow(ds, now);
  }
};

// ============================== leases ==============================

FieldErrors ValidateLeaseSpec(const objects::coordinationv1::LeaseSpec& spec) {
  Path sp("spec");
  FieldErrors errs;
  if (spec.has_leasedurationseconds() && spec.leasedurationseconds() <= 0) {
    errs.push_back(InvalidInt(sp.Child("leaseDurationSeconds"),
                              spec.leasedurationseconds(),
                              "must be greater than 0"));
  }
  if (spec.has_leasetransitions() && spec.leasetransitions() < 0) {
    errs.push_back(InvalidInt(sp.Child("leaseTransitions"),
                              spec.leasetransitions(),
                              "must be greater than or equal to 0"));
  }
  return errs;
}

class LeaseStrategy : public TypedStrategy<Lease> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::LeaseColumns();
  }

 protected:
  // strategy and preferredHolder belong to CoordinatedLeaderElection, an
  // alpha feature (off) in 1.32: dropped unless already in use.
  void CreateT(Lease* l) const override {
    l->mutable_spec()->clear_strategy();
    l->mutable_spec()->clear_preferredholder();
  }
  void UpdateT(Lease* l, const Lease& old) const override {
    if (!old.spec().has_strategy() && !old.spec().has_preferredholder()) {
      l->mutable_spec()->clear_strategy();
      l->mutable_spec()->clear_preferredholder();
    }
  }
  FieldErrors ValidateCreateT(const Lease& l) const override {
    FieldErrors errs = validation::ValidateObjectMeta(
        l.metadata(), true, NameRule::kDNS1123Subdomain);
    Append(&errs, ValidateLeaseSpec(l.spec()));
    return errs;
  }
  FieldErrors ValidateUpdateT(const Lease& l, const Lease& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(l.metadata(), old.metadata());
    Append(&errs, ValidateLeaseSpec(l.spec()));
    return errs;
  }
  std::vector<TableCell> RowT(const Lease& l, WallTime now) const override {
    return printers::LeaseRow(l, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewDeploymentStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<DeploymentStrategy>(r);
}
std::unique_ptr<Strategy> NewReplicaSetStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<ReplicaSetStrategy>(r);
}
std::unique_ptr<Strategy> NewStatefulSetStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<StatefulSetStrategy>(r);
}
std::unique_ptr<Strategy> NewDaemonSetStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<DaemonSetStrategy>(r);
}
std::unique_ptr<Strategy> NewLeaseStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<LeaseStrategy>(r);
}

}  // namespace kplane::apiserver
