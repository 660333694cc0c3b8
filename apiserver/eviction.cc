#include "apiserver/eviction.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "apiserver/query_params.h"
#include "base/logging.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::apiserver {

namespace {

using objects::corev1::Pod;
using objects::metav1::DeleteOptions;
using objects::policyv1::PodDisruptionBudget;

// kube's EvictionsRetry has 20 steps (budget writes, direct deletes).
constexpr int kEvictionTries = 20;
// kube's MaxDisruptedPodSize.
constexpr int kMaxDisruptedPods = 2000;

bool IsReady(const Pod& pod) {
  for (const auto& c : pod.status().conditions()) {
    if (c.type() == "Ready") return c.status() == "True";
  }
  return false;
}

// canIgnorePDB.
bool CanIgnoreBudgets(const Pod& pod) {
  const std::string& phase = pod.status().phase();
  return phase == "Succeeded" || phase == "Failed" || phase == "Pending" ||
         objects::IsBeingDeleted(pod.metadata());
}

// shouldEnforceResourceVersion: a pod that has already disrupted (terminal,
// or on its way out) cannot turn Ready meanwhile, so a change since the
// read (its kubelet's status writes) is no reason to refuse the delete.
bool ShouldEnforceResourceVersion(const Pod& pod) {
  const std::string& phase = pod.status().phase();
  return phase != "Succeeded" && phase != "Failed" &&
         !objects::IsBeingDeleted(pod.metadata());
}

// policy/v1: a missing selector matches nothing, an empty one every pod.
bool Selects(const PodDisruptionBudget& pdb, const Pod& pod) {
  if (!pdb.spec().has_selector()) return false;
  StatusOr<machinery::LabelSelector> s =
      objects::LabelSelectorAsSelector(pdb.spec().selector());
  if (!s.ok()) return false;
  machinery::Labels labels;
  for (const auto& [k, v] : pod.metadata().labels()) labels[k] = v;
  return s->Matches(labels);
}

ApiError Denied(std::string cause, int retry_after_seconds = 0) {
  ApiError e =
      ApiError::TooManyRequests(kEvictionDeniedMessage, retry_after_seconds);
  e.causes.push_back({"DisruptionBudget", std::move(cause), ""});
  return e;
}

// createTooManyRequestsError.
ApiError BudgetNotReady(const std::string& pdb) {
  return Denied("The disruption budget " + pdb +
                    " is still being processed by the server.",
                /*retry_after_seconds=*/10);
}

bool HasResourceVersionPrecondition(const DeleteOptions& o) {
  return o.has_preconditions() && o.preconditions().has_resourceversion();
}

template <typename T>
std::unique_ptr<T> Copy(const ObjectPtr& obj) {
  return std::make_unique<T>(static_cast<const T&>(*obj));
}

}  // namespace

Evictions::Evictions(EvictionOptions options) : options_(std::move(options)) {
  CHECK(options_.pods != nullptr && options_.pdbs != nullptr &&
        options_.clock != nullptr);
}

ApiResult<objects::metav1::Status> Evictions::Evict(
    std::string_view ns, std::string_view name,
    const objects::policyv1::Eviction& eviction, bool dry_run) {
  if (eviction.metadata().name() != name) {
    return ApiError::BadRequest(
        "name in URL does not match name in Eviction object");
  }
  DeleteOptions delete_options = eviction.deleteoptions();
  // As a DELETE's: the grace period and dryRun reach the pod's deletion.
  if (auto e = ValidateDeleteOptions(&delete_options)) return *e;
  if (dry_run && delete_options.dryrun().empty()) {
    delete_options.add_dryrun("All");
  }
  dry_run = !delete_options.dryrun().empty();
  objects::metav1::Status success;
  success.set_status("Success");

  ObjectPtr read;
  for (int attempt = 0;; ++attempt) {
    ApiResult<ObjectPtr> got = options_.pods->Get(ns, name, "");
    if (std::holds_alternative<ApiError>(got)) return std::get<ApiError>(got);
    read = std::get<ObjectPtr>(got);
    const Pod& pod = static_cast<const Pod&>(*read);
    if (!CanIgnoreBudgets(pod)) break;
    // Already disrupted (or not yet running): deleted directly. A pod not
    // yet running is deleted only as read, lest it turned Ready meanwhile.
    if (options_.before_pod_delete) options_.before_pod_delete(name);
    DeleteOptions guarded = delete_options;
    if (ShouldEnforceResourceVersion(pod) &&
        !HasResourceVersionPrecondition(guarded)) {
      guarded.mutable_preconditions()->set_resourceversion(
          pod.metadata().resourceversion());
    }
    std::optional<ApiError> e = MarkAndDelete(ns, name, guarded, dry_run);
    if (!e) return success;
    // A conflict with our own precondition reads the pod again (kube's
    // retry.OnError); one with the client's is the client's answer.
    if (e->code != 409 || HasResourceVersionPrecondition(delete_options) ||
        attempt + 1 >= kEvictionTries) {
      return *e;
    }
  }
  const Pod& pod = static_cast<const Pod&>(*read);

  ApiResult<ListResult> listed = options_.pdbs->List(ns, ListParams{}, nullptr);
  if (std::holds_alternative<ApiError>(listed)) {
    return std::get<ApiError>(listed);
  }
  std::vector<const PodDisruptionBudget*> budgets;
  for (const ObjectPtr& obj : std::get<ListResult>(listed).items) {
    const auto& pdb = static_cast<const PodDisruptionBudget&>(*obj);
    if (pdb.metadata().namespace_() == ns && Selects(pdb, pod)) {
      budgets.push_back(&pdb);
    }
  }
  if (budgets.size() > 1) {
    ApiError e;
    e.code = 500;
    e.reason.clear();
    e.message =
        "This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.";
    return e;
  }
  bool unhealthy_delete = false;
  if (budgets.size() == 1) {
    const PodDisruptionBudget& pdb = *budgets[0];
    const auto& st = pdb.status();
    if (!IsReady(pod) &&
        (pdb.spec().unhealthypodevictionpolicy() == "AlwaysAllow" ||
         (st.currenthealthy() >= st.desiredhealthy() &&
          st.desiredhealthy() > 0))) {
      // An unready pod does not count as healthy: deleting it disrupts
      // nothing, as long as it does not turn Ready meanwhile.
      unhealthy_delete = true;
    } else if (auto e = TakeDisruption(ns, name, pdb, dry_run)) {
      return *e;
    }
  }
  DeleteOptions options = delete_options;
  if (unhealthy_delete && !HasResourceVersionPrecondition(options)) {
    options.mutable_preconditions()->set_resourceversion(
        pod.metadata().resourceversion());
  }
  if (auto e = MarkAndDelete(ns, name, options, dry_run)) {
    if (e->code == 409 && unhealthy_delete &&
        !HasResourceVersionPrecondition(delete_options)) {
      return BudgetNotReady(budgets[0]->metadata().name());
    }
    return *e;
  }
  return success;
}

std::optional<ApiError> Evictions::TakeDisruption(std::string_view ns,
                                                  std::string_view pod,
                                                  PodDisruptionBudget pdb,
                                                  bool dry_run) {
  const std::string name = pdb.metadata().name();
  for (int attempt = 0; attempt < kEvictionTries; ++attempt) {
    if (attempt > 0) {
      ApiResult<ObjectPtr> fresh = options_.pdbs->Get(ns, name, "");
      if (std::holds_alternative<ApiError>(fresh)) {
        return std::get<ApiError>(fresh);
      }
      pdb =
          static_cast<const PodDisruptionBudget&>(*std::get<ObjectPtr>(fresh));
    }
    auto* st = pdb.mutable_status();
    if (st->observedgeneration() < pdb.metadata().generation()) {
      return BudgetNotReady(name);
    }
    if (st->disruptionsallowed() < 0) {
      return ApiError::Forbidden(options_.pdbs->resource(), name,
                                 "pdb disruptions allowed is negative");
    }
    if (st->disruptedpods_size() > kMaxDisruptedPods) {
      return ApiError::Forbidden(
          options_.pdbs->resource(), name,
          "DisruptedPods map too big - too many evictions not confirmed by "
          "PDB controller");
    }
    if (st->disruptionsallowed() == 0) {
      return Denied("The disruption budget " + name + " needs " +
                    std::to_string(st->desiredhealthy()) +
                    " healthy pods and has " +
                    std::to_string(st->currenthealthy()) + " currently");
    }
    st->set_disruptionsallowed(st->disruptionsallowed() - 1);
    if (st->disruptionsallowed() == 0) {
      // pdbhelper.UpdateDisruptionAllowedCondition.
      for (auto& c : *st->mutable_conditions()) {
        if (c.type() != "DisruptionAllowed" || c.status() == "False") continue;
        c.set_status("False");
        c.set_reason("InsufficientPods");
        c.set_message("");
        c.set_observedgeneration(st->observedgeneration());
        objects::SetTime(c.mutable_lasttransitiontime(),
                         options_.clock->WallNow());
      }
    }
    if (dry_run) return std::nullopt;
    objects::SetTime(&(*st->mutable_disruptedpods())[std::string(pod)],
                     options_.clock->WallNow());
    if (options_.before_budget_write) options_.before_budget_write(name);
    // metadata.resourceVersion is the one read: a budget written since
    // answers 409, and this eviction looks again.
    WriteContext ctx;
    ctx.field_manager = "kube-apiserver";
    ApiResult<WriteResult> w = options_.pdbs->Update(
        ns, name, "status", std::make_unique<PodDisruptionBudget>(pdb), ctx);
    if (!std::holds_alternative<ApiError>(w)) return std::nullopt;
    const ApiError& e = std::get<ApiError>(w);
    if (e.code != 409) return e;
  }
  return ApiError::Timeout(
      "couldn't update PodDisruptionBudget \"" + name + "\" due to conflicts",
      10);
}

std::optional<ApiError> Evictions::MarkAndDelete(std::string_view ns,
                                                 std::string_view name,
                                                 DeleteOptions options,
                                                 bool dry_run) {
  if (!dry_run) {
    // The DisruptionTarget condition on the latest pod, under the
    // caller's preconditions.
    for (int attempt = 0;; ++attempt) {
      ApiResult<ObjectPtr> got = options_.pods->Get(ns, name, "");
      if (std::holds_alternative<ApiError>(got)) return std::get<ApiError>(got);
      std::unique_ptr<Pod> pod = Copy<Pod>(std::get<ObjectPtr>(got));
      const auto& pre = options.preconditions();
      if (pre.has_uid() && !pre.uid().empty() &&
          pre.uid() != pod->metadata().uid()) {
        return ApiError::Conflict(
            options_.pods->resource(), name,
            "Precondition failed: UID in precondition: " + pre.uid() +
                ", UID in object meta: " + pod->metadata().uid());
      }
      const bool guarded =
          pre.has_resourceversion() && !pre.resourceversion().empty();
      if (guarded) {
        pod->mutable_metadata()->set_resourceversion(pre.resourceversion());
      }
      objects::corev1::PodCondition* condition = nullptr;
      for (auto& c : *pod->mutable_status()->mutable_conditions()) {
        if (c.type() == "DisruptionTarget") condition = &c;
      }
      if (condition == nullptr) {
        condition = pod->mutable_status()->add_conditions();
        condition->set_type("DisruptionTarget");
      }
      if (condition->status() != "True") {
        objects::SetTime(condition->mutable_lasttransitiontime(),
                         options_.clock->WallNow());
      }
      condition->set_status("True");
      condition->set_reason("EvictionByEvictionAPI");
      condition->set_message("Eviction API: evicting");
      WriteContext ctx;
      ctx.field_manager = "kube-apiserver";
      ApiResult<WriteResult> w =
          options_.pods->Update(ns, name, "status", std::move(pod), ctx);
      if (!std::holds_alternative<ApiError>(w)) {
        if (guarded) {
          // Our own write moved the resourceVersion.
          options.mutable_preconditions()->set_resourceversion(
              objects::ResourceVersion(*std::get<WriteResult>(w).object));
        }
        break;
      }
      const ApiError& e = std::get<ApiError>(w);
      if (e.code != 409 || guarded || attempt + 1 >= kEvictionTries) {
        return e;
      }
    }
  }
  ApiResult<DeleteResult> d = options_.pods->Delete(ns, name, options);
  if (std::holds_alternative<ApiError>(d)) return std::get<ApiError>(d);
  return std::nullopt;
}

}  // namespace kplane::apiserver
