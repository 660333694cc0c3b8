#include "controllers/pod_gc_controller.h"

#include "base/logging.h"
#include "informer/api_errors.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

PodGCController::PodGCController(PodGCControllerOptions options)
    : Controller("podgc", options.clock, options.metrics), options_(options) {
  CHECK(options_.api != nullptr && options_.pods != nullptr);
}

void PodGCController::RegisterHandlers(informer::SharedIndexInformer* pods) {
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    if (e.deleted()) return;
    std::optional<Duration> left = GraceLeft(e.As<corev1::Pod>());
    if (!left) return;
    if (*left > Duration(0)) {
      EnqueueAfter(e.Key(), *left);
    } else {
      Enqueue(e.Key());
    }
  });
}

std::optional<Duration> PodGCController::GraceLeft(
    const corev1::Pod& pod) const {
  const metav1::ObjectMeta& m = pod.metadata();
  if (!objects::IsBeingDeleted(m) || !m.has_deletiongraceperiodseconds() ||
      m.deletiongraceperiodseconds() <= 0) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<Duration>(
      objects::ToWallTime(m.deletiontimestamp()) - clock_->WallNow());
}

Status PodGCController::Sync(const std::string& key) {
  ObjectPtr obj = options_.pods->Get(key);
  if (obj == nullptr) return Status::Ok();
  const auto& pod = static_cast<const corev1::Pod&>(*obj);
  std::optional<Duration> left = GraceLeft(pod);
  if (!left) return Status::Ok();
  if (*left > Duration(0)) {
    EnqueueAfter(key, *left);
    return Status::Ok();
  }
  LOG(INFO) << "podgc: deleting " << key
            << ": its grace period is over and nothing removed it";
  metav1::DeleteOptions opts;
  opts.set_graceperiodseconds(0);
  opts.mutable_preconditions()->set_uid(pod.metadata().uid());
  Status s = options_.api->Delete(PodsResource(), pod.metadata().namespace_(),
                                  pod.metadata().name(), opts);
  return informer::IsNotFound(s) || informer::IsConflict(s) ? Status::Ok() : s;
}

}  // namespace kplane::controllers
