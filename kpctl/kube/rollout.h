// The status logic of `rollout status` and `wait`, on objects as JSON.
//
// DeploymentRolloutStatus follows kubectl's DeploymentStatusViewer:
//   generation > status.observedGeneration
//       -> "Waiting for deployment spec update to be observed..."
//   Progressing condition with reason ProgressDeadlineExceeded -> error
//   updatedReplicas < spec.replicas
//       -> "... rollout to finish: 1 out of 3 new replicas have been
//       updated..."
//   status.replicas > updatedReplicas
//       -> "... rollout to finish: 2 old replicas are pending termination..."
//   availableReplicas < updatedReplicas
//       -> "... rollout to finish: 1 of 3 updated replicas are available..."
//   else "deployment \"web\" successfully rolled out" (done)
// where "..." is `Waiting for deployment "web"`. spec.replicas defaults
// to 1 when absent.
//
// ConditionMet: status.conditions[type=T].status equals the wanted value
// (case-insensitive, default "True"), as `kubectl wait --for=condition=T`.
//
// Thread-safety: pure functions. Errors: FailedPrecondition for an exceeded
// progress deadline.
#ifndef KPLANE_KPCTL_KUBE_ROLLOUT_H_
#define KPLANE_KPCTL_KUBE_ROLLOUT_H_

#include <rapidjson/document.h>

#include <string>

#include "base/statusor.h"

namespace kplane::kpctl::kube {

struct RolloutState {
  std::string message;  // without a trailing newline
  bool done = false;
};

StatusOr<RolloutState> DeploymentRolloutStatus(
    const rapidjson::Value& deployment);

bool ConditionMet(const rapidjson::Value& obj, const std::string& type,
                  const std::string& want = "True");

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_ROLLOUT_H_
