#include "controllers/serviceaccounts_controller.h"

#include <algorithm>

#include "base/logging.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {

const objects::ResourceInfo& ServiceAccountsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<corev1::ServiceAccount>();
  CHECK(r != nullptr);
  return *r;
}

}  // namespace

ServiceAccountsController::ServiceAccountsController(
    ServiceAccountsControllerOptions options)
    : Controller("serviceaccount", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.namespaces != nullptr &&
        options_.service_accounts_cache != nullptr);
}

bool ServiceAccountsController::Managed(const std::string& name) const {
  const auto& names = options_.service_accounts;
  return std::find(names.begin(), names.end(), name) != names.end();
}

void ServiceAccountsController::RegisterHandlers(
    informer::SharedIndexInformer* namespaces,
    informer::SharedIndexInformer* service_accounts) {
  OnObjectEvents(namespaces, [this](const ObjectEvent& e) {
    if (!e.deleted()) Enqueue(e.Key());
  });
  OnObjectEvents(service_accounts, [this](const ObjectEvent& e) {
    const metav1::ObjectMeta& meta = e.As<corev1::ServiceAccount>().metadata();
    if (e.deleted() && Managed(meta.name())) Enqueue(meta.namespace_());
  });
}

Status ServiceAccountsController::Sync(const std::string& key) {
  ObjectPtr cached = options_.namespaces->Get(key);
  if (cached == nullptr) return Status::Ok();
  const auto& ns = static_cast<const corev1::Namespace&>(*cached);
  if (ns.status().phase() != "Active") return Status::Ok();
  Status result = Status::Ok();
  for (const std::string& name : options_.service_accounts) {
    if (options_.service_accounts_cache->Get(key + "/" + name) != nullptr) {
      continue;
    }
    corev1::ServiceAccount sa;
    sa.mutable_metadata()->set_name(name);
    sa.mutable_metadata()->set_namespace_(key);
    Status s = options_.api->Create(ServiceAccountsResource(), sa).status();
    if (s.ok()) {
      LOG(INFO) << "serviceaccount: created " << key << "/" << name;
    } else if (!informer::IsAlreadyExists(s) &&
               !CreateRefusedInEndingNamespace(options_.api, s, key)) {
      result = s;  // the others are still tried
    }
  }
  return result;
}

}  // namespace kplane::controllers
