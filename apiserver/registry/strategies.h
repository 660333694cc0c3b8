// Internal to apiserver/registry: the per-resource Strategy singletons that
// StrategyFor() hands out, and the typed base they share.
//
// Each strategy is a TypedStrategy<T>: the virtual Strategy methods cast the
// generic Message to T (CHECK-failing on a wrong type, a programming error
// in the caller) and call the typed hooks below, which default to "nothing
// to do". Thread-safety: stateless singletons.
#ifndef KPLANE_APISERVER_REGISTRY_STRATEGIES_H_
#define KPLANE_APISERVER_REGISTRY_STRATEGIES_H_

#include <google/protobuf/message.h>

#include "objects/scheme.h"
#include "apiserver/registry/strategy.h"
#include "base/logging.h"

namespace kplane::apiserver {

template <typename T>
class TypedStrategy : public Strategy {
 public:
  explicit TypedStrategy(const objects::ResourceInfo* resource)
      : resource_(resource) {
    CHECK(resource_ != nullptr);
  }
  const objects::ResourceInfo& resource() const override { return *resource_; }

  void Default(google::protobuf::Message* obj) const final {
    DefaultT(Cast(obj));
  }
  void PrepareForCreate(google::protobuf::Message* obj) const final {
    CreateT(Cast(obj));
  }
  // Both updates start from the stored generation (requests cannot set
  // it, as kube's rest.BeforeUpdate ensures); UpdateT bumps it.
  void PrepareForUpdate(google::protobuf::Message* obj,
                        const google::protobuf::Message& old) const final {
    T* o = Cast(obj);
    const T& prev = Cast(old);
    KeepGeneration(o, prev);
    UpdateT(o, prev);
  }
  void PrepareForStatusUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const final {
    T* o = Cast(obj);
    const T& prev = Cast(old);
    KeepGeneration(o, prev);
    StatusUpdateT(o, prev);
  }
  FieldErrors ValidateCreate(const google::protobuf::Message& obj) const final {
    return ValidateCreateT(Cast(obj));
  }
  FieldErrors ValidateUpdate(const google::protobuf::Message& obj,
                             const google::protobuf::Message& old) const final {
    return ValidateUpdateT(Cast(obj), Cast(old));
  }
  FieldErrors ValidateStatusUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const final {
    return ValidateStatusUpdateT(Cast(obj), Cast(old));
  }
  std::optional<std::string> FieldValue(const google::protobuf::Message& obj,
                                        std::string_view field) const final {
    if (auto v = FieldValueT(Cast(obj), field)) return v;
    return Strategy::FieldValue(obj, field);
  }
  std::vector<TableCell> Row(const google::protobuf::Message& obj,
                             WallTime now) const final {
    return RowT(Cast(obj), now);
  }
  int64_t DefaultGracePeriodSeconds(
      const google::protobuf::Message& obj) const final {
    return GraceT(Cast(obj));
  }
  objects::autoscalingv1::Scale ToScale(
      const google::protobuf::Message& obj) const final {
    return ToScaleT(Cast(obj));
  }
  void ApplyScale(const objects::autoscalingv1::Scale& scale,
                  google::protobuf::Message* obj) const final {
    ApplyScaleT(scale, Cast(obj));
  }

 protected:
  virtual void DefaultT(T* obj) const {}
  virtual void CreateT(T* obj) const {}
  virtual void UpdateT(T* obj, const T& old) const {}
  virtual void StatusUpdateT(T* obj, const T& old) const {}
  virtual FieldErrors ValidateCreateT(const T& obj) const { return {}; }
  virtual FieldErrors ValidateUpdateT(const T& obj, const T& old) const {
    return {};
  }
  virtual FieldErrors ValidateStatusUpdateT(const T& obj, const T& old) const {
    return {};
  }
  // Kind-specific field labels; metadata.* are handled by the base.
  virtual std::optional<std::string> FieldValueT(const T& obj,
                                                 std::string_view f) const {
    return std::nullopt;
  }
  virtual std::vector<TableCell> RowT(const T& obj, WallTime now) const {
    return Strategy::Row(obj, now);
  }
  virtual int64_t GraceT(const T& obj) const { return 0; }
  virtual objects::autoscalingv1::Scale ToScaleT(const T& obj) const { return {}; }
  virtual void ApplyScaleT(const objects::autoscalingv1::Scale& scale,
                           T* obj) const {}

 private:
  static T* Cast(google::protobuf::Message* m) {
    CHECK(m != nullptr && m->GetDescriptor() == T::descriptor())
        << "strategy for " << T::descriptor()->full_name() << " got "
        << (m ? m->GetDescriptor()->full_name() : "null");
    return static_cast<T*>(m);
  }
  static const T& Cast(const google::protobuf::Message& m) {
    CHECK(m.GetDescriptor() == T::descriptor())
        << "strategy for " << T::descriptor()->full_name() << " got "
        << m.GetDescriptor()->full_name();
    return static_cast<const T&>(m);
  }
  // The stored generation as stored: an absent one stays absent (kube's is
  // a plain int64, 0 either way), so that an update changing nothing
  // encodes to the stored bytes and the store writes nothing.
  static void KeepGeneration(T* o, const T& prev) {
    if (prev.metadata().has_generation()) {
      o->mutable_metadata()->set_generation(prev.metadata().generation());
    } else {
      o->mutable_metadata()->clear_generation();
    }
  }

  const objects::ResourceInfo* resource_;
};

// Factories; each builds its strategy for the given resource of
// objects::Scheme::Default().
std::unique_ptr<Strategy> NewPodStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewBindingStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewNodeStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewNamespaceStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewConfigMapStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewSecretStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewServiceStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewEventStrategy(const objects::ResourceInfo* r);
// events.k8s.io/v1 events (the same stored objects, event_strategy.cc).
std::unique_ptr<Strategy> NewEventsV1Strategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewEndpointsStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewServiceAccountStrategy(
    const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewDeploymentStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewReplicaSetStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewStatefulSetStrategy(
    const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewDaemonSetStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewControllerRevisionStrategy(
    const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewJobStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewCronJobStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewLeaseStrategy(const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewEndpointSliceStrategy(
    const objects::ResourceInfo* r);
std::unique_ptr<Strategy> NewPodDisruptionBudgetStrategy(
    const objects::ResourceInfo* r);
// rbac.authorization.k8s.io/v1: roles, clusterroles and their bindings.
std::unique_ptr<Strategy> NewRbacStrategy(const objects::ResourceInfo* r);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_REGISTRY_STRATEGIES_H_
