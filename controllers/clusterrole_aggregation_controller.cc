#include "controllers/clusterrole_aggregation_controller.h"

#include <algorithm>
#include <vector>

#include "base/logging.h"
#include "informer/rest_client.h"
#include "objects/label_selector.h"
#include "schemas/k8s/rbac.pb.h"

namespace kplane::controllers {

namespace {

namespace rbacv1 = ::k8s::io::api::rbac::v1;

const objects::ResourceInfo& ClusterRolesResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<rbacv1::ClusterRole>();
  CHECK(r != nullptr);
  return *r;
}

bool SameRule(const rbacv1::PolicyRule& a, const rbacv1::PolicyRule& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

}  // namespace

ClusterRoleAggregationController::ClusterRoleAggregationController(
    ClusterRoleAggregationControllerOptions options)
    : Controller("clusterrole-aggregation", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.cluster_roles != nullptr);
}

void ClusterRoleAggregationController::RegisterHandlers(
    informer::SharedIndexInformer* cluster_roles) {
  OnObjectEvents(cluster_roles,
                 [this](const ObjectEvent&) { EnqueueAggregated(); });
}

void ClusterRoleAggregationController::EnqueueAggregated() {
  for (const ObjectPtr& o : options_.cluster_roles->List()) {
    const auto& role = static_cast<const rbacv1::ClusterRole&>(*o);
    if (role.has_aggregationrule()) Enqueue(role.metadata().name());
  }
}

Status ClusterRoleAggregationController::Sync(const std::string& key) {
  ObjectPtr cached = options_.cluster_roles->Get(key);
  if (cached == nullptr) return Status::Ok();
  const auto& role = static_cast<const rbacv1::ClusterRole&>(*cached);
  if (!role.has_aggregationrule()) return Status::Ok();

  std::vector<const rbacv1::ClusterRole*> all;
  const std::vector<ObjectPtr> listed = options_.cluster_roles->List();
  for (const ObjectPtr& o : listed) {
    all.push_back(static_cast<const rbacv1::ClusterRole*>(o.get()));
  }
  std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
    return a->metadata().name() < b->metadata().name();
  });
  std::vector<rbacv1::PolicyRule> rules;
  for (const auto& selector : role.aggregationrule().clusterroleselectors()) {
    ASSIGN_OR_RETURN(machinery::LabelSelector s,
                     objects::LabelSelectorAsSelector(selector));
    for (const rbacv1::ClusterRole* other : all) {
      if (other->metadata().name() == key) continue;
      const auto& labels = other->metadata().labels();
      if (!s.Matches(machinery::Labels(labels.begin(), labels.end()))) {
        continue;
      }
      for (const rbacv1::PolicyRule& rule : other->rules()) {
        if (std::none_of(rules.begin(), rules.end(),
                         [&](const auto& r) { return SameRule(r, rule); })) {
          rules.push_back(rule);
        }
      }
    }
  }
  const bool same =
      static_cast<size_t>(role.rules_size()) == rules.size() &&
      std::equal(rules.begin(), rules.end(), role.rules().begin(), SameRule);
  if (same) return Status::Ok();
  rbacv1::ClusterRole updated = role;
  updated.clear_rules();
  for (rbacv1::PolicyRule& r : rules) *updated.add_rules() = std::move(r);
  RETURN_IF_ERROR(
      options_.api->Update(ClusterRolesResource(), updated).status());
  LOG(INFO) << "clusterrole-aggregation: " << key << " now has "
            << updated.rules_size() << " rules";
  return Status::Ok();
}

}  // namespace kplane::controllers
