#include "apiserver/registry/strategy.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/logging.h"
#include "base/strings.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::apiserver {

namespace {

const char* TypeText(FieldError::Type t) {
  switch (t) {
    case FieldError::Type::kRequired:
      return "Required value";
    case FieldError::Type::kInvalid:
      return "Invalid value";
    case FieldError::Type::kNotSupported:
      return "Unsupported value";
    case FieldError::Type::kDuplicate:
      return "Duplicate value";
    case FieldError::Type::kForbidden:
      return "Forbidden";
    case FieldError::Type::kTooLong:
      return "Too long";
    case FieldError::Type::kTooMany:
      return "Too many";
    case FieldError::Type::kNotFound:
      return "Not found";
  }
  return "Invalid value";
}

}  // namespace

std::string FieldError::Reason() const {
  switch (type) {
    case Type::kRequired:
      return "FieldValueRequired";
    case Type::kInvalid:
      return "FieldValueInvalid";
    case Type::kNotSupported:
      return "FieldValueNotSupported";
    case Type::kDuplicate:
      return "FieldValueDuplicate";
    case Type::kForbidden:
      return "FieldValueForbidden";
    case Type::kTooLong:
      return "FieldValueTooLong";
    case Type::kTooMany:
      return "FieldValueTooMany";
    case Type::kNotFound:
      return "FieldValueNotFound";
  }
  return "FieldValueInvalid";
}

std::string FieldError::Body() const {
  std::string s = TypeText(type);
  bool shows_value = type != Type::kRequired && type != Type::kForbidden &&
                     type != Type::kTooLong;
  if (shows_value) s += ": " + value;
  if (!detail.empty()) s += ": " + detail;
  return s;
}

std::string FieldError::Error() const { return field + ": " + Body(); }

std::string InvalidMessage(std::string_view qualified_kind,
                           std::string_view name, const FieldErrors& errors) {
  std::string out =
      std::string(qualified_kind) + " " + GoQuote(name) + " is invalid";
  std::vector<std::string> msgs;
  std::set<std::string> seen;
  for (const FieldError& e : errors) {
    std::string m = e.Error();
    if (seen.insert(m).second) msgs.push_back(std::move(m));
  }
  if (msgs.empty()) return out;
  out += ": ";
  if (msgs.size() == 1) return out + msgs[0];
  out += "[";
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (i > 0) out += ", ";
    out += msgs[i];
  }
  return out + "]";
}

// --- Strategy defaults ---

std::optional<std::string> Strategy::FieldValue(
    const google::protobuf::Message& obj, std::string_view field) const {
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  if (meta == nullptr) return std::nullopt;
  if (field == "metadata.name") return meta->name();
  if (field == "metadata.namespace" && resource().namespaced) {
    return meta->namespace_();
  }
  return std::nullopt;
}

std::vector<std::string> Strategy::SupportedFieldLabels() const {
  if (resource().namespaced) return {"metadata.name", "metadata.namespace"};
  return {"metadata.name"};
}

std::vector<TableColumn> Strategy::Columns() const {
  return printers::DefaultColumns();
}

std::vector<TableCell> Strategy::Row(const google::protobuf::Message& obj,
                                     WallTime now) const {
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  if (meta == nullptr) return {};
  return printers::DefaultRow(*meta);
}

namespace {

// For resources of a Scheme other than the default one: metadata rules and
// the default table, nothing kind-specific.
class GenericStrategy : public Strategy {
 public:
  explicit GenericStrategy(const objects::ResourceInfo* r) : resource_(r) {}
  const objects::ResourceInfo& resource() const override { return *resource_; }
  FieldErrors ValidateCreate(
      const google::protobuf::Message& obj) const override {
    const auto* meta = objects::GetObjectMeta(obj);
    if (meta == nullptr) return {};
    return validation::ValidateObjectMeta(
        *meta, resource_->namespaced, validation::NameRule::kDNS1123Subdomain);
  }
  FieldErrors ValidateUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    const auto* meta = objects::GetObjectMeta(obj);
    const auto* old_meta = objects::GetObjectMeta(old);
    if (meta == nullptr || old_meta == nullptr) return {};
    FieldErrors errs = validation::ValidateObjectMetaUpdate(*meta, *old_meta);
    validation::Append(&errs, ValidateCreate(obj));
    return errs;
  }

 private:
  const objects::ResourceInfo* resource_;
};

using Factory = std::unique_ptr<Strategy> (*)(const objects::ResourceInfo*);

Factory FactoryFor(const objects::ResourceInfo& r) {
  static const auto* factories =
      new std::map<std::pair<std::string, std::string>, Factory>{
          {{"", "pods"}, &NewPodStrategy},
          {{"", "bindings"}, &NewBindingStrategy},
          {{"", "nodes"}, &NewNodeStrategy},
          {{"", "namespaces"}, &NewNamespaceStrategy},
          {{"", "configmaps"}, &NewConfigMapStrategy},
          {{"", "secrets"}, &NewSecretStrategy},
          {{"", "services"}, &NewServiceStrategy},
          {{"", "events"}, &NewEventStrategy},
          {{"", "endpoints"}, &NewEndpointsStrategy},
          {{"", "serviceaccounts"}, &NewServiceAccountStrategy},
          {{"apps", "deployments"}, &NewDeploymentStrategy},
          {{"apps", "replicasets"}, &NewReplicaSetStrategy},
          {{"apps", "statefulsets"}, &NewStatefulSetStrategy},
          {{"apps", "daemonsets"}, &NewDaemonSetStrategy},
          {{"apps", "controllerrevisions"}, &NewControllerRevisionStrategy},
          {{"batch", "jobs"}, &NewJobStrategy},
          {{"batch", "cronjobs"}, &NewCronJobStrategy},
          {{"coordination.k8s.io", "leases"}, &NewLeaseStrategy},
          {{"discovery.k8s.io", "endpointslices"}, &NewEndpointSliceStrategy},
          {{"events.k8s.io", "events"}, &NewEventsV1Strategy},
          {{"policy", "poddisruptionbudgets"}, &NewPodDisruptionBudgetStrategy},
          {{"rbac.authorization.k8s.io", "roles"}, &NewRbacStrategy},
          {{"rbac.authorization.k8s.io", "clusterroles"}, &NewRbacStrategy},
          {{"rbac.authorization.k8s.io", "rolebindings"}, &NewRbacStrategy},
          {{"rbac.authorization.k8s.io", "clusterrolebindings"},
           &NewRbacStrategy},
      };
  auto it = factories->find({r.gv.group, r.resource});
  return it == factories->end() ? nullptr : it->second;
}

}  // namespace

// Strategies are built on first use and cached by the ResourceInfo's
// address; the default scheme's entries live as long as the process (a
// caller passing another scheme's resource must keep it alive too).
const Strategy& StrategyFor(const objects::ResourceInfo& resource) {
  static std::mutex* mu = new std::mutex;
  static auto* cache =
      new std::map<const objects::ResourceInfo*, std::unique_ptr<Strategy>>;
  std::lock_guard<std::mutex> lock(*mu);
  auto it = cache->find(&resource);
  if (it != cache->end()) return *it->second;
  Factory f = FactoryFor(resource);
  std::unique_ptr<Strategy> s =
      f != nullptr ? f(&resource)
                   : std::make_unique<GenericStrategy>(&resource);
  const Strategy& ref = *s;
  cache->emplace(&resource, std::move(s));
  return ref;
}

// --- helpers for the handlers ---

FieldErrors ValidateGenericObjectMeta(const objects::metav1::ObjectMeta& meta,
                                      bool namespaced) {
  return validation::ValidateObjectMeta(meta, namespaced,
                                        validation::NameRule::kPathSegment);
}

FieldErrors ValidateScale(const objects::autoscalingv1::Scale& scale) {
  FieldErrors errs = validation::ValidateObjectMeta(
      scale.metadata(), true, validation::NameRule::kDNS1123Subdomain);
  if (scale.spec().replicas() < 0) {
    errs.push_back(validation::InvalidInt(
        validation::Path("spec").Child("replicas"), scale.spec().replicas(),
        "must be greater than or equal to 0"));
  }
  return errs;
}

FieldErrors ValidateBinding(const objects::corev1::Binding& binding) {
  FieldErrors errs;
  validation::Path target("target");
  const auto& t = binding.target();
  if (!t.kind().empty() && t.kind() != "Node") {
    errs.push_back(validation::NotSupportedString(
        target.Child("kind"), t.kind(), {"Node", "<empty>"}));
  }
  if (t.name().empty())
    errs.push_back(validation::Required(target.Child("name")));
  return errs;
}

Status ApplyBinding(const objects::corev1::Binding& binding,
                    objects::corev1::Pod* pod, WallTime now) {
  const auto& meta = pod->metadata();
  if (!binding.metadata().uid().empty() &&
      binding.metadata().uid() != meta.uid()) {
    return ConflictError("Precondition failed: UID in precondition: " +
                         binding.metadata().uid() +
                         ", UID in object meta: " + meta.uid());
  }
  if (objects::IsBeingDeleted(meta)) {
    return ConflictError("pod " + meta.name() +
                         " is being deleted, cannot be assigned to a host");
  }
  if (!pod->spec().nodename().empty()) {
    return ConflictError("pod " + meta.name() +
                         " is already assigned to node " +
                         GoQuote(pod->spec().nodename()));
  }
  if (!pod->spec().schedulinggates().empty()) {
    return ConflictError("pod " + meta.name() +
                         " has non-empty .spec.schedulingGates");
  }
  pod->mutable_spec()->set_nodename(binding.target().name());
  for (const auto& [k, v] : binding.metadata().annotations()) {
    (*pod->mutable_metadata()->mutable_annotations())[k] = v;
  }
  // podutil.UpdatePodCondition: keep lastTransitionTime when the status
  // does not change.
  objects::corev1::PodCondition* cond = nullptr;
  for (auto& c : *pod->mutable_status()->mutable_conditions()) {
    if (c.type() == "PodScheduled") {
      cond = &c;
      break;
    }
  }
  if (cond == nullptr) {
    cond = pod->mutable_status()->add_conditions();
    cond->set_type("PodScheduled");
    objects::SetTime(cond->mutable_lasttransitiontime(), now);
  } else if (cond->status() != "True") {
    objects::SetTime(cond->mutable_lasttransitiontime(), now);
  }
  cond->set_status("True");
  cond->clear_reason();
  cond->clear_message();
  cond->clear_lastprobetime();
  return Status::Ok();
}

}  // namespace kplane::apiserver
