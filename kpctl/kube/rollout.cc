#include "kpctl/kube/rollout.h"

#include "base/strings.h"
#include "kpctl/kube/printer.h"

namespace kplane::kpctl::kube {

StatusOr<RolloutState> DeploymentRolloutStatus(const rapidjson::Value& d) {
  const std::string name = StrAt(d, {"metadata", "name"});
  const std::string waiting =
      "Waiting for deployment \"" + name + "\" rollout to finish: ";
  RolloutState st;
  if (IntAt(d, {"metadata", "generation"}) >
      IntAt(d, {"status", "observedGeneration"})) {
    st.message = "Waiting for deployment spec update to be observed...";
    return st;
  }
  if (const rapidjson::Value* conds = At(d, {"status", "conditions"});
      conds != nullptr && conds->IsArray()) {
    for (const rapidjson::Value& c : conds->GetArray()) {
      if (StrAt(c, {"type"}) == "Progressing" &&
          StrAt(c, {"reason"}) == "ProgressDeadlineExceeded") {
        return FailedPreconditionError("deployment \"" + name +
                                       "\" exceeded its progress deadline");
      }
    }
  }
  const int64_t want = IntAt(d, {"spec", "replicas"}, 1);
  const int64_t updated = IntAt(d, {"status", "updatedReplicas"});
  const int64_t replicas = IntAt(d, {"status", "replicas"});
  const int64_t available = IntAt(d, {"status", "availableReplicas"});
  if (updated < want) {
    st.message = waiting + std::to_string(updated) + " out of " +
                 std::to_string(want) + " new replicas have been updated...";
  } else if (replicas > updated) {
    st.message = waiting + std::to_string(replicas - updated) +
                 " old replicas are pending termination...";
  } else if (available < updated) {
    st.message = waiting + std::to_string(available) + " of " +
                 std::to_string(updated) + " updated replicas are available...";
  } else {
    st.message = "deployment \"" + name + "\" successfully rolled out";
    st.done = true;
  }
  return st;
}

bool ConditionMet(const rapidjson::Value& obj, const std::string& type,
                  const std::string& want) {
  const rapidjson::Value* conds = At(obj, {"status", "conditions"});
  if (conds == nullptr || !conds->IsArray()) return false;
  for (const rapidjson::Value& c : conds->GetArray()) {
    if (ToLower(StrAt(c, {"type"})) == ToLower(type)) {
      return ToLower(StrAt(c, {"status"})) == ToLower(want);
    }
  }
  return false;
}

}  // namespace kplane::kpctl::kube
