#include "controllers/endpoints_controller.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {

constexpr char kHeadlessLabel[] = "service.kubernetes.io/headless";
constexpr char kOverCapacityAnnotation[] =
    "endpoints.kubernetes.io/over-capacity";

const objects::ResourceInfo& EndpointsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<corev1::Endpoints>();
  CHECK(r != nullptr);
  return *r;
}

std::string ProtocolOr(const std::string& p) { return p.empty() ? "TCP" : p; }

}  // namespace

int32_t FindServicePort(const corev1::Pod& pod, const corev1::ServicePort& sp) {
  const auto& target = sp.targetport();
  if (target.type() == 0) {
    return target.intval() != 0 ? target.intval() : sp.port();
  }
  for (const auto* containers :
       {&pod.spec().containers(), &pod.spec().initcontainers()}) {
    for (const auto& c : *containers) {
      for (const auto& port : c.ports()) {
        if (port.name() == target.strval() &&
            ProtocolOr(port.protocol()) == ProtocolOr(sp.protocol())) {
          return port.containerport();
        }
      }
    }
  }
  return 0;
}

bool ShouldPodBeInEndpoints(const corev1::Pod& pod, bool include_terminating) {
  const std::string& phase = pod.status().phase();
  if (phase == "Succeeded" || phase == "Failed") return false;
  if (pod.status().podip().empty()) return false;
  if (!include_terminating && objects::IsBeingDeleted(pod.metadata())) {
    return false;
  }
  return true;
}

bool ServiceSelectsPod(const corev1::Service& svc, const corev1::Pod& pod) {
  if (svc.spec().selector().empty()) return false;
  return machinery::LabelSelector::FromSet(LabelMap(svc.spec().selector()))
      .Matches(LabelMap(pod.metadata().labels()));
}

std::vector<std::string> ServicesSelecting(const informer::Indexer& services,
                                           const corev1::Pod& pod) {
  std::vector<std::string> keys;
  StatusOr<std::vector<informer::ObjectPtr>> in_ns =
      services.ByIndex(informer::kNamespaceIndex, pod.metadata().namespace_());
  if (!in_ns.ok()) return keys;
  for (const informer::ObjectPtr& obj : *in_ns) {
    const auto& svc = static_cast<const corev1::Service&>(*obj);
    if (ServiceSelectsPod(svc, pod)) keys.push_back(informer::ObjectKey(svc));
  }
  return keys;
}

bool ShouldSetHostname(const corev1::Pod& pod, const corev1::Service& svc) {
  return !pod.spec().hostname().empty() &&
         pod.spec().subdomain() == svc.metadata().name() &&
         pod.metadata().namespace_() == svc.metadata().namespace_();
}

corev1::Endpoints DesiredEndpoints(
    const corev1::Service& service,
    const std::vector<informer::ObjectPtr>& pods) {
  const bool publish_not_ready = service.spec().publishnotreadyaddresses();
  struct Subset {
    std::vector<corev1::EndpointPort> ports;
    std::vector<corev1::EndpointAddress> ready, not_ready;
  };
  // Keyed by the ports' bytes: addresses serving the same ports share one.
  std::map<std::string, Subset> subsets;
  for (const informer::ObjectPtr& obj : pods) {
    const auto& pod = static_cast<const corev1::Pod&>(*obj);
    if (pod.metadata().namespace_() != service.metadata().namespace_() ||
        !ServiceSelectsPod(service, pod) ||
        !ShouldPodBeInEndpoints(pod, publish_not_ready)) {
      continue;
    }
    corev1::EndpointAddress address;
    address.set_ip(pod.status().podip());
    if (!pod.spec().nodename().empty()) {
      address.set_nodename(pod.spec().nodename());
    }
    if (ShouldSetHostname(pod, service)) {
      address.set_hostname(pod.spec().hostname());
    }
    corev1::ObjectReference* ref = address.mutable_targetref();
    ref->set_kind("Pod");
    ref->set_namespace_(pod.metadata().namespace_());
    ref->set_name(pod.metadata().name());
    ref->set_uid(pod.metadata().uid());
    std::vector<corev1::EndpointPort> ports;
    for (const auto& sp : service.spec().ports()) {
      const int32_t port = FindServicePort(pod, sp);
      if (port == 0) continue;
      corev1::EndpointPort ep;
      ep.set_name(sp.name());
      ep.set_port(port);
      ep.set_protocol(ProtocolOr(sp.protocol()));
      if (sp.has_appprotocol()) ep.set_appprotocol(sp.appprotocol());
      ports.push_back(std::move(ep));
    }
    if (ports.empty() && !service.spec().ports().empty()) continue;
    std::string key;
    for (const auto& p : ports) key += DeterministicBytes(p) + '\n';
    Subset& s = subsets[key];
    s.ports = ports;
    const bool ready = IsPodReady(pod) || publish_not_ready;
    (ready ? s.ready : s.not_ready).push_back(std::move(address));
  }
  corev1::Endpoints ep;
  auto* meta = ep.mutable_metadata();
  meta->set_name(service.metadata().name());
  meta->set_namespace_(service.metadata().namespace_());
  *meta->mutable_labels() = service.metadata().labels();
  if (service.spec().clusterip() == "None") {
    (*meta->mutable_labels())[kHeadlessLabel] = "";
  }
  auto by_ip = [](const corev1::EndpointAddress& a,
                  const corev1::EndpointAddress& b) {
    return a.ip() != b.ip() ? a.ip() < b.ip()
                            : a.targetref().uid() < b.targetref().uid();
  };
  // Ready addresses are kept before not-ready ones past the capacity.
  int room = kMaxEndpointsAddresses;
  bool truncated = false;
  for (bool ready : {true, false}) {
    for (auto& [key, s] : subsets) {
      auto& list = ready ? s.ready : s.not_ready;
      std::sort(list.begin(), list.end(), by_ip);
      if (static_cast<int>(list.size()) > room) {
        list.resize(static_cast<size_t>(room));
        truncated = true;
      }
      room -= static_cast<int>(list.size());
    }
  }
  for (auto& [key, s] : subsets) {
    if (s.ready.empty() && s.not_ready.empty()) continue;
    corev1::EndpointSubset* out = ep.add_subsets();
    for (auto& a : s.ready) *out->add_addresses() = std::move(a);
    for (auto& a : s.not_ready) *out->add_notreadyaddresses() = std::move(a);
    for (auto& p : s.ports) *out->add_ports() = std::move(p);
  }
  if (truncated) {
    (*meta->mutable_annotations())[kOverCapacityAnnotation] = "truncated";
  }
  return ep;
}

EndpointsController::EndpointsController(EndpointsControllerOptions options)
    : Controller("endpoint", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.services != nullptr &&
        options_.pods != nullptr && options_.endpoints != nullptr);
}

void EndpointsController::RegisterHandlers(
    informer::SharedIndexInformer* services,
    informer::SharedIndexInformer* pods,
    informer::SharedIndexInformer* endpoints) {
  OnObjectEvents(services, [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    for (const std::string& key :
         ServicesSelecting(*options_.services, e.As<corev1::Pod>())) {
      Enqueue(key);
    }
    if (e.old == nullptr) return;
    for (const std::string& key :
         ServicesSelecting(*options_.services, e.OldAs<corev1::Pod>())) {
      Enqueue(key);
    }
  });
  OnObjectEvents(endpoints, [this](const ObjectEvent& e) {
    if (e.deleted() && options_.services->Get(e.Key()) != nullptr) {
      Enqueue(e.Key());
    }
  });
}

Status EndpointsController::Sync(const std::string& key) {
  const size_t slash = key.find('/');
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  informer::ObjectPtr cached_svc = options_.services->Get(key);
  if (cached_svc == nullptr) {
    // The Service is gone: so are the Endpoints it had.
    if (options_.endpoints->Get(key) == nullptr) return Status::Ok();
    Status s = options_.api->Delete(EndpointsResource(), ns, name);
    return informer::IsNotFound(s) ? Status::Ok() : s;
  }
  const auto& svc = static_cast<const corev1::Service&>(*cached_svc);
  if (svc.spec().selector().empty()) return Status::Ok();
  StatusOr<std::vector<informer::ObjectPtr>> pods =
      options_.pods->ByIndex(informer::kNamespaceIndex, ns);
  RETURN_IF_ERROR(pods.status());
  corev1::Endpoints desired = DesiredEndpoints(svc, *pods);

  informer::ObjectPtr cached_ep = options_.endpoints->Get(key);
  if (cached_ep == nullptr) {
    StatusOr<informer::ObjectPtr> r =
        options_.api->Create(EndpointsResource(), desired);
    if (r.ok()) return Status::Ok();
    if (CreateRefusedInEndingNamespace(options_.api, r.status(), ns)) {
      return Status::Ok();
    }
    return r.status();
  }
  const auto& current = static_cast<const corev1::Endpoints&>(*cached_ep);
  corev1::Endpoints next = current;
  *next.mutable_subsets() = desired.subsets();
  *next.mutable_metadata()->mutable_labels() = desired.metadata().labels();
  auto* annotations = next.mutable_metadata()->mutable_annotations();
  if (desired.metadata().annotations().count(kOverCapacityAnnotation)) {
    (*annotations)[kOverCapacityAnnotation] = "truncated";
  } else {
    annotations->erase(kOverCapacityAnnotation);
  }
  if (DeterministicBytes(next) == DeterministicBytes(current)) {
    return Status::Ok();
  }
  return options_.api->Update(EndpointsResource(), next).status();
}

}  // namespace kplane::controllers
