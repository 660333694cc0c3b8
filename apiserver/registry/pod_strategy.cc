// The pod strategy (core/v1 Pod; upstream: pkg/registry/core/pod/strategy.go of
// Kubernetes 1.32).
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/defaults.h"
#include "apiserver/registry/pod_validation.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types

class PodStrategy : public TypedStrategy<Pod> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::PodColumns();
  }

 protected:
  void DefaultT(Pod* pod) const override { defaults::DefaultPod(pod); }

  void CreateT(Pod* pod) const override {
    AdmitPod(pod);
    PodStatus status;
    status.set_phase("Pending");
    status.set_qosclass(podvalidation::ComputeQOS(*pod));
    *pod->mutable_status() = std::move(status);
    if (!pod->spec().schedulinggates().empty()) {
      PodCondition* c = pod->mutable_status()->add_conditions();
      c->set_type("PodScheduled");
      c->set_status("False");
      c->set_reason("SchedulingGated");
      c->set_message("Scheduling is blocked due to non-empty scheduling gates");
      c->mutable_lastprobetime();
      c->mutable_lasttransitiontime();
    }
  }

  void UpdateT(Pod* pod, const Pod& old) const override {
    *pod->mutable_status() = old.status();
  }

  void StatusUpdateT(Pod* pod, const Pod& old) const override {
    *pod->mutable_spec() = old.spec();
    auto* meta = pod->mutable_metadata();
    if (old.metadata().has_deletiontimestamp()) {
      *meta->mutable_deletiontimestamp() = old.metadata().deletiontimestamp();
    } else {
      meta->clear_deletiontimestamp();
    }
    // Old kubelets corrupt owner references through pods/status.
    *meta->mutable_ownerreferences() = old.metadata().ownerreferences();
    if (pod->status().qosclass().empty()) {
      pod->mutable_status()->set_qosclass(old.status().qosclass());
    }
    defaults::NormalizePodIPs(pod->mutable_status());
  }

  FieldErrors ValidateCreateT(const Pod& pod) const override {
    return podvalidation::ValidatePodCreate(pod);
  }
  FieldErrors ValidateUpdateT(const Pod& pod, const Pod& old) const override {
    return podvalidation::ValidatePodUpdate(pod, old);
  }
  FieldErrors ValidateStatusUpdateT(const Pod& pod,
                                    const Pod& old) const override {
    return podvalidation::ValidatePodStatusUpdate(pod, old);
  }

  std::optional<std::string> FieldValueT(const Pod& pod,
                                         std::string_view f) const override {
    const PodSpec& spec = pod.spec();
    if (f == "spec.nodeName") return spec.nodename();
    if (f == "spec.restartPolicy") return spec.restartpolicy();
    if (f == "spec.schedulerName") return spec.schedulername();
    if (f == "spec.serviceAccountName") return spec.serviceaccountname();
    if (f == "spec.hostNetwork") {
      return std::string(spec.hostnetwork() ? "true" : "false");
    }
    if (f == "status.phase") return pod.status().phase();
    if (f == "status.podIP") {
      return pod.status().podips().empty() ? std::string()
                                           : pod.status().podips(0).ip();
    }
    if (f == "status.nominatedNodeName")
      return pod.status().nominatednodename();
    // Accepted as a label upstream but absent from the field set: it
    // reads as "".
    if (f == "status.podIPs") return std::string();
    return std::nullopt;
  }

  std::vector<TableCell> RowT(const Pod& pod, WallTime now) const override {
    return printers::PodRow(pod, now);
  }

  // podStrategy.CheckGracefulDelete without a request value.
  int64_t GraceT(const Pod& pod) const override {
    int64_t period = pod.spec().has_terminationgraceperiodseconds()
                         ? pod.spec().terminationgraceperiodseconds()
                         : 0;
    if (pod.spec().nodename().empty()) period = 0;
    const std::string& phase = pod.status().phase();
    if (phase == "Failed" || phase == "Succeeded") period = 0;
    if (period < 0) period = 1;
    return period;
  }

 private:
  // The mutating admission plugins kube-apiserver enables by default and
  // that apply without other objects: ServiceAccount (the "default"
  // account), Priority (no PriorityClass: priority 0, PreemptLowerPriority)
  // and DefaultTolerationSeconds (300 s for not-ready and unreachable).
  static void AdmitPod(Pod* pod) {
    PodSpec* spec = pod->mutable_spec();
    if (spec->serviceaccountname().empty()) {
      spec->set_serviceaccountname("default");
      spec->set_serviceaccount("default");
    }
    if (spec->priorityclassname().empty()) {
      if (!spec->has_priority()) spec->set_priority(0);
      if (!spec->has_preemptionpolicy()) {
        spec->set_preemptionpolicy("PreemptLowerPriority");
      }
    }
    bool not_ready = false, unreachable = false;
    for (const Toleration& t : spec->tolerations()) {
      bool effect_ok = t.effect() == "NoExecute" || t.effect().empty();
      if ((t.key() == "node.kubernetes.io/not-ready" || t.key().empty()) &&
          effect_ok) {
        not_ready = true;
      }
      if ((t.key() == "node.kubernetes.io/unreachable" || t.key().empty()) &&
          effect_ok) {
        unreachable = true;
      }
    }
    for (auto [missing, key] :
         {std::pair{!not_ready, "node.kubernetes.io/not-ready"},
          std::pair{!unreachable, "node.kubernetes.io/unreachable"}}) {
      if (!missing) continue;
      Toleration* t = spec->add_tolerations();
      t->set_key(key);
      t->set_operator_("Exists");
      t->set_effect("NoExecute");
      t->set_tolerationseconds(300);
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> NewPodStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<PodStrategy>(r);
}

}  // namespace kplane::apiserver
