#include "controllers/root_ca_publisher.h"

#include "base/logging.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"

namespace kplane::controllers {

namespace {

constexpr char kDescriptionAnnotation[] = "kubernetes.io/description";
constexpr char kDescription[] =
    "Contains a CA bundle that can be used to verify the kube-apiserver when "
    "using internal endpoints such as the internal service IP or "
    "kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters.";
constexpr char kCAKey[] = "ca.crt";

const objects::ResourceInfo& ConfigMapsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<corev1::ConfigMap>();
  CHECK(r != nullptr);
  return *r;
}

}  // namespace

RootCAPublisher::RootCAPublisher(RootCAPublisherOptions options)
    : Controller("root-ca-cert-publisher", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.namespaces != nullptr &&
        options_.config_maps != nullptr && !options_.root_ca_pem.empty());
}

void RootCAPublisher::RegisterHandlers(
    informer::SharedIndexInformer* namespaces,
    informer::SharedIndexInformer* config_maps) {
  OnObjectEvents(namespaces, [this](const ObjectEvent& e) {
    if (!e.deleted()) Enqueue(e.Key());
  });
  OnObjectEvents(config_maps, [this](const ObjectEvent& e) {
    const metav1::ObjectMeta& meta = e.As<corev1::ConfigMap>().metadata();
    if (meta.name() == kRootCAConfigMapName &&
        e.type != ObjectEvent::Type::kAdded) {
      Enqueue(meta.namespace_());
    }
  });
}

Status RootCAPublisher::Sync(const std::string& key) {
  informer::ObjectPtr cached_ns = options_.namespaces->Get(key);
  if (cached_ns == nullptr) return Status::Ok();
  if (static_cast<const corev1::Namespace&>(*cached_ns).status().phase() !=
      "Active") {
    return Status::Ok();
  }
  informer::ObjectPtr cached =
      options_.config_maps->Get(key + "/" + kRootCAConfigMapName);
  if (cached == nullptr) {
    corev1::ConfigMap cm;
    cm.mutable_metadata()->set_name(kRootCAConfigMapName);
    cm.mutable_metadata()->set_namespace_(key);
    (*cm.mutable_metadata()->mutable_annotations())[kDescriptionAnnotation] =
        kDescription;
    (*cm.mutable_data())[kCAKey] = options_.root_ca_pem;
    Status s = options_.api->Create(ConfigMapsResource(), cm).status();
    if (s.ok() || informer::IsAlreadyExists(s) || informer::IsNotFound(s) ||
        CreateRefusedInEndingNamespace(options_.api, s, key)) {
      return Status::Ok();
    }
    return s;
  }
  const auto& current = static_cast<const corev1::ConfigMap&>(*cached);
  const auto& annotations = current.metadata().annotations();
  const auto described = annotations.find(kDescriptionAnnotation);
  if (current.data_size() == 1 && current.data().count(kCAKey) &&
      current.data().at(kCAKey) == options_.root_ca_pem &&
      described != annotations.end() && !described->second.empty()) {
    return Status::Ok();
  }
  corev1::ConfigMap next = current;
  next.clear_data();
  (*next.mutable_data())[kCAKey] = options_.root_ca_pem;
  (*next.mutable_metadata()->mutable_annotations())[kDescriptionAnnotation] =
      kDescription;
  return options_.api->Update(ConfigMapsResource(), next).status();
}

}  // namespace kplane::controllers
