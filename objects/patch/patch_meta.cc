#include "objects/patch/patch_meta.h"

#include "base/strings.h"

namespace kplane::patch {

std::vector<std::string> PatchMeta::MapKeys() const {
  if (!list_map_keys.empty()) return list_map_keys;
  if (merge_key.empty()) return {};
  return {merge_key};
}

bool PatchMeta::Has(std::string_view s) const {
  for (const auto& x : strategies) {
    if (x == s) return true;
  }
  return false;
}

PatchMetaTable& PatchMetaTable::Add(std::string message, std::string field,
                                    std::string_view strategy,
                                    std::string merge_key) {
  PatchMeta m;
  if (!strategy.empty()) m.strategies = StrSplit(strategy, ',');
  m.merge_key = std::move(merge_key);
  meta_[{std::move(message), std::move(field)}] = std::move(m);
  return *this;
}

PatchMetaTable& PatchMetaTable::AddInline(std::string message,
                                          std::string field) {
  inline_.emplace_back(std::move(message), std::move(field));
  return *this;
}

PatchMetaTable& PatchMetaTable::AddListMapKeys(
    std::string_view message, std::string_view field,
    std::vector<std::string> keys,
    std::vector<std::pair<std::string, std::string>> key_defaults) {
  auto it =
      meta_.find(std::make_pair(std::string(message), std::string(field)));
  if (it != meta_.end()) {
    it->second.list_map_keys = std::move(keys);
    it->second.key_defaults = std::move(key_defaults);
  }
  return *this;
}

const PatchMeta* PatchMetaTable::Find(std::string_view message,
                                      std::string_view field) const {
  auto it =
      meta_.find(std::make_pair(std::string(message), std::string(field)));
  return it == meta_.end() ? nullptr : &it->second;
}

bool PatchMetaTable::IsInline(std::string_view message,
                              std::string_view field) const {
  for (const auto& [m, f] : inline_) {
    if (m == message && f == field) return true;
  }
  return false;
}

std::vector<std::string> PatchMetaTable::InlineFields(
    std::string_view message) const {
  std::vector<std::string> out;
  for (const auto& [m, f] : inline_) {
    if (m == message) out.push_back(f);
  }
  return out;
}

const PatchMetaTable& KubernetesPatchMetaTable() {
  // Generated from the struct tags of kubernetes/api (core, apps, batch,
  // networking, policy v1) and apimachinery meta/v1; regenerate when those
  // types gain patch strategies.
  static const PatchMetaTable* table = [] {
    auto* t = new PatchMetaTable();
    (*t).Add("k8s.io.api.apps.v1.DaemonSetStatus", "conditions", "merge",
             "type")
        .Add("k8s.io.api.apps.v1.DeploymentSpec", "strategy", "retainKeys")
        .Add("k8s.io.api.apps.v1.DeploymentStatus", "conditions", "merge",
             "type")
        .Add("k8s.io.api.apps.v1.ReplicaSetStatus", "conditions", "merge",
             "type")
        .Add("k8s.io.api.apps.v1.StatefulSetStatus", "conditions", "merge",
             "type")
        .Add("k8s.io.api.batch.v1.JobSchedulingConfiguration", "resourceClaims",
             "merge", "name")
        .Add("k8s.io.api.batch.v1.JobStatus", "conditions", "merge", "type")
        .Add("k8s.io.api.core.v1.ComponentStatus", "conditions", "merge",
             "type")
        .Add("k8s.io.api.core.v1.Container", "env", "merge", "name")
        .Add("k8s.io.api.core.v1.Container", "ports", "merge", "containerPort")
        .Add("k8s.io.api.core.v1.Container", "volumeDevices", "merge",
             "devicePath")
        .Add("k8s.io.api.core.v1.Container", "volumeMounts", "merge",
             "mountPath")
        .Add("k8s.io.api.core.v1.ContainerStatus", "allocatedResourcesStatus",
             "merge", "name")
        .Add("k8s.io.api.core.v1.ContainerStatus", "volumeMounts", "merge",
             "mountPath")
        .Add("k8s.io.api.core.v1.EphemeralContainerCommon", "env", "merge",
             "name")
        .Add("k8s.io.api.core.v1.EphemeralContainerCommon", "ports", "merge",
             "containerPort")
        .Add("k8s.io.api.core.v1.EphemeralContainerCommon", "volumeDevices",
             "merge", "devicePath")
        .Add("k8s.io.api.core.v1.EphemeralContainerCommon", "volumeMounts",
             "merge", "mountPath")
        .Add("k8s.io.api.core.v1.NamespaceStatus", "conditions", "merge",
             "type")
        .Add("k8s.io.api.core.v1.NodeAllocatableResourceClaimStatus", "mapping",
             "merge", "name")
        .Add("k8s.io.api.core.v1.NodeAllocatableResourceClaimStatus",
             "overhead", "merge", "name")
        .Add("k8s.io.api.core.v1.NodeSpec", "podCIDRs", "merge")
        .Add("k8s.io.api.core.v1.NodeStatus", "addresses", "merge", "type")
        .Add("k8s.io.api.core.v1.NodeStatus", "conditions", "merge", "type")
        .Add("k8s.io.api.core.v1.PersistentVolumeClaimStatus", "conditions",
             "merge", "type")
        .Add("k8s.io.api.core.v1.PodSpec", "containers", "merge", "name")
        .Add("k8s.io.api.core.v1.PodSpec", "ephemeralContainers", "merge",
             "name")
        .Add("k8s.io.api.core.v1.PodSpec", "evictionResponders", "merge",
             "name")
        .Add("k8s.io.api.core.v1.PodSpec", "hostAliases", "merge", "ip")
        .Add("k8s.io.api.core.v1.PodSpec", "imagePullSecrets", "merge", "name")
        .Add("k8s.io.api.core.v1.PodSpec", "initContainers", "merge", "name")
        .Add("k8s.io.api.core.v1.PodSpec", "resourceClaims", "merge,retainKeys",
             "name")
        .Add("k8s.io.api.core.v1.PodSpec", "schedulingGates", "merge", "name")
        .Add("k8s.io.api.core.v1.PodSpec", "topologySpreadConstraints", "merge",
             "topologyKey")
        .Add("k8s.io.api.core.v1.PodSpec", "volumes", "merge,retainKeys",
             "name")
        .Add("k8s.io.api.core.v1.PodStatus", "conditions", "merge", "type")
        .Add("k8s.io.api.core.v1.PodStatus", "hostIPs", "merge", "ip")
        .Add("k8s.io.api.core.v1.PodStatus",
             "nodeAllocatableResourceClaimStatuses", "merge",
             "resourceClaimName")
        .Add("k8s.io.api.core.v1.PodStatus", "podIPs", "merge", "ip")
        .Add("k8s.io.api.core.v1.PodStatus", "resourceClaimStatuses",
             "merge,retainKeys", "name")
        .Add("k8s.io.api.core.v1.PodVolumeHealth", "healthConditions", "merge",
             "status")
        .Add("k8s.io.api.core.v1.ReplicationControllerStatus", "conditions",
             "merge", "type")
        .Add("k8s.io.api.core.v1.ServiceAccount", "secrets", "merge", "name")
        .Add("k8s.io.api.core.v1.ServiceSpec", "ports", "merge", "port")
        .Add("k8s.io.api.core.v1.ServiceStatus", "conditions", "merge", "type")
        .Add("k8s.io.api.core.v1.VolumeHealthStatus", "healthConditions",
             "merge", "status")
        .Add("k8s.io.api.networking.v1.ServiceCIDRStatus", "conditions",
             "merge", "type")
        .Add("k8s.io.api.policy.v1.PodDisruptionBudgetSpec", "selector",
             "replace")
        .Add("k8s.io.api.policy.v1.PodDisruptionBudgetStatus", "conditions",
             "merge", "type")
        .Add("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers",
             "merge")
        .Add("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
             "ownerReferences", "merge", "uid")
        // Server-side apply's keys where kube's OpenAPI lists more than the
        // patchMergeKey (+listMapKey tags of kubernetes/api core/v1; none in
        // the other groups of this table), with the +default of a key field
        // an element may omit. Strategic merge patch keeps patchMergeKey.
        .AddListMapKeys("k8s.io.api.core.v1.Container", "ports",
                        {"containerPort", "protocol"}, {{"protocol", "TCP"}})
        .AddListMapKeys("k8s.io.api.core.v1.EphemeralContainerCommon", "ports",
                        {"containerPort", "protocol"}, {{"protocol", "TCP"}})
        .AddListMapKeys("k8s.io.api.core.v1.ServiceSpec", "ports",
                        {"port", "protocol"}, {{"protocol", "TCP"}})
        .AddListMapKeys("k8s.io.api.core.v1.PodSpec",
                        "topologySpreadConstraints",
                        {"topologyKey", "whenUnsatisfiable"})
        .AddListMapKeys("k8s.io.api.core.v1.PodVolumeHealth",
                        "healthConditions", {"status", "reason"})
        .AddListMapKeys("k8s.io.api.core.v1.VolumeHealthStatus",
                        "healthConditions", {"status", "reason"})
        // Go-embedded structs: inline in JSON, a message field in proto.
        .AddInline("k8s.io.api.core.v1.Volume", "volumeSource")
        .AddInline("k8s.io.api.core.v1.PersistentVolumeSpec",
                   "persistentVolumeSource")
        .AddInline("k8s.io.api.core.v1.EphemeralContainer",
                   "ephemeralContainerCommon")
        .AddInline("k8s.io.api.core.v1.Probe", "handler")
        .AddInline("k8s.io.api.core.v1.LifecycleHandler", "handler");
    return t;
  }();
  return *table;
}

PatchSchema::Field PatchSchema::Lookup(std::string_view name) const {
  Field out = LookupField(name);
  if (by_list_map_keys_) {
    out.schema.by_list_map_keys_ = true;
    if (out.meta.list_map_keys.size() > 1) {
      out.meta.merge_key = std::string(kListMapKeyMember);
    }
  }
  return out;
}

PatchSchema::Field PatchSchema::LookupField(std::string_view name) const {
  Field out;
  if (message_ == nullptr) return out;
  if (map_of_messages_) {
    out.schema = PatchSchema(message_, table_);
    return out;
  }
  const google::protobuf::FieldDescriptor* fd =
      message_->FindFieldByName(std::string(name));
  if (fd == nullptr) fd = message_->FindFieldByCamelcaseName(std::string(name));
  if (fd == nullptr) {
    // Look through Go-embedded (inline) message fields.
    if (table_ != nullptr) {
      for (const auto& inl : table_->InlineFields(message_->full_name())) {
        const auto* ifd = message_->FindFieldByName(inl);
        if (ifd == nullptr || ifd->message_type() == nullptr) continue;
        Field f = PatchSchema(ifd->message_type(), table_).Lookup(name);
        if (f.schema.known() || !f.meta.empty()) return f;
      }
    }
    return out;
  }
  if (table_ != nullptr) {
    if (const PatchMeta* m = table_->Find(message_->full_name(), name)) {
      out.meta = *m;
    }
  }
  if (fd->is_map()) {
    const auto* value = fd->message_type()->map_value();
    if (value->message_type() != nullptr) {
      out.schema = PatchSchema(value->message_type(), table_);
      out.schema.map_of_messages_ = true;
    }
    return out;
  }
  if (fd->message_type() != nullptr) {
    out.schema = PatchSchema(fd->message_type(), table_);
  }
  return out;
}

std::string PatchSchema::Name() const {
  return message_ == nullptr ? std::string() : message_->full_name();
}

}  // namespace kplane::patch
