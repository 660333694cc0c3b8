#include "controllers/endpointslice_controller.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/strings.h"
#include "controllers/endpoints_controller.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {

constexpr char kHeadlessLabel[] = "service.kubernetes.io/headless";

// Endpoints sharing an address type and ports (kube's endpointMeta).
struct Group {
  std::string address_type;
  std::vector<discoveryv1::EndpointPort> ports;
  // By EndpointKey.
  std::map<std::string, discoveryv1::Endpoint> endpoints;
};

std::string GroupKey(
    const std::string& address_type,
    const google::protobuf::RepeatedPtrField<discoveryv1::EndpointPort>&
        ports) {
  std::string key = address_type + "\n";
  for (const auto& p : ports) key += DeterministicBytes(p) + "\n";
  return key;
}

std::string GroupKey(const Group& g) {
  google::protobuf::RepeatedPtrField<discoveryv1::EndpointPort> ports(
      g.ports.begin(), g.ports.end());
  return GroupKey(g.address_type, ports);
}

// Which endpoint an entry is, whatever its conditions (kube hashes the
// addresses and the target).
std::string EndpointKey(const discoveryv1::Endpoint& e) {
  return (e.addresses().empty() ? "" : e.addresses(0)) + "/" +
         e.targetref().namespace_() + "/" + e.targetref().name();
}

// getAddressTypesForService.
std::vector<std::string> AddressTypes(const corev1::Service& svc) {
  std::vector<std::string> types;
  for (const std::string& family : svc.spec().ipfamilies()) {
    if (family == "IPv4" || family == "IPv6") types.push_back(family);
  }
  if (types.empty()) {
    types.push_back(svc.spec().clusterip().find(':') != std::string::npos
                        ? "IPv6"
                        : "IPv4");
  }
  return types;
}

// The pod's IP of the address type's family, "" when it has none.
std::string PodAddress(const corev1::Pod& pod, const std::string& type) {
  const bool want_v6 = type == "IPv6";
  for (const auto& ip : pod.status().podips()) {
    if ((ip.ip().find(':') != std::string::npos) == want_v6) return ip.ip();
  }
  const std::string& ip = pod.status().podip();
  if (!ip.empty() && (ip.find(':') != std::string::npos) == want_v6) {
    return ip;
  }
  return "";
}

// podToEndpoint.
discoveryv1::Endpoint PodEndpoint(const corev1::Pod& pod,
                                  const corev1::Service& svc,
                                  const std::string& address) {
  discoveryv1::Endpoint e;
  e.add_addresses(address);
  const bool serving = IsPodReady(pod);
  const bool terminating = objects::IsBeingDeleted(pod.metadata());
  auto* conditions = e.mutable_conditions();
  conditions->set_ready(svc.spec().publishnotreadyaddresses() ||
                        (serving && !terminating));
  conditions->set_serving(serving);
  conditions->set_terminating(terminating);
  if (!pod.spec().nodename().empty()) e.set_nodename(pod.spec().nodename());
  if (ShouldSetHostname(pod, svc)) e.set_hostname(pod.spec().hostname());
  auto* ref = e.mutable_targetref();
  ref->set_kind("Pod");
  ref->set_namespace_(pod.metadata().namespace_());
  ref->set_name(pod.metadata().name());
  ref->set_uid(pod.metadata().uid());
  return e;
}

// getEndpointPorts: the Service ports the pod serves.
std::vector<discoveryv1::EndpointPort> PodPorts(const corev1::Pod& pod,
                                                const corev1::Service& svc) {
  std::vector<discoveryv1::EndpointPort> ports;
  for (const auto& sp : svc.spec().ports()) {
    const int32_t port = FindServicePort(pod, sp);
    if (port == 0) continue;
    discoveryv1::EndpointPort ep;
    ep.set_name(sp.name());
    ep.set_port(port);
    ep.set_protocol(sp.protocol().empty() ? "TCP" : sp.protocol());
    if (sp.has_appprotocol()) ep.set_appprotocol(sp.appprotocol());
    ports.push_back(std::move(ep));
  }
  return ports;
}

// setEndpointSliceLabels.
google::protobuf::Map<std::string, std::string> SliceLabels(
    const corev1::Service& svc) {
  google::protobuf::Map<std::string, std::string> labels =
      svc.metadata().labels();
  labels.erase(kServiceNameLabel);
  labels.erase(kManagedByLabel);
  if (svc.spec().clusterip() == "None") labels[kHeadlessLabel] = "";
  labels[kServiceNameLabel] = svc.metadata().name();
  labels[kManagedByLabel] = kEndpointSliceControllerName;
  return labels;
}

bool IsNewer(const std::string& cached, const std::string& written) {
  if (written.empty()) return true;
  std::optional<int64_t> c = ParseInt64(cached), w = ParseInt64(written);
  if (!c || !w) return cached == written;
  return *c >= *w;
}

}  // namespace

const objects::ResourceInfo& EndpointSlicesResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<discoveryv1::EndpointSlice>();
  CHECK(r != nullptr);
  return *r;
}

EndpointSliceController::EndpointSliceController(
    EndpointSliceControllerOptions options)
    : Controller("endpointslice", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.services != nullptr &&
        options_.pods != nullptr && options_.slices != nullptr &&
        options_.max_endpoints_per_slice > 0);
}

void EndpointSliceController::RegisterHandlers(
    informer::SharedIndexInformer* services,
    informer::SharedIndexInformer* pods,
    informer::SharedIndexInformer* slices) {
  OnObjectEvents(services, [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    std::set<std::string> keys;
    for (std::string& k :
         ServicesSelecting(*options_.services, e.As<corev1::Pod>())) {
      keys.insert(std::move(k));
    }
    if (e.old != nullptr) {
      for (std::string& k :
           ServicesSelecting(*options_.services, e.OldAs<corev1::Pod>())) {
        keys.insert(std::move(k));
      }
    }
    for (const std::string& k : keys) Enqueue(k);
  });
  OnObjectEvents(slices, [this](const ObjectEvent& e) { OnSliceEvent(e); });
}

void EndpointSliceController::OnSliceEvent(const ObjectEvent& e) {
  const auto& meta = e.As<discoveryv1::EndpointSlice>().metadata();
  auto managed = meta.labels().find(kManagedByLabel);
  auto service = meta.labels().find(kServiceNameLabel);
  if (managed == meta.labels().end() ||
      managed->second != kEndpointSliceControllerName ||
      service == meta.labels().end()) {
    return;
  }
  const std::string service_key =
      informer::ObjectKey(meta.namespace_(), service->second);
  if (e.deleted()) {
    // kube's HandleDeletion: a slice that is gone, whoever deleted it, is
    // no longer waited for (else a slice deleted by others before the cache
    // showed our update of it would block the Service forever). Only the
    // delete event tells: a slice absent from the cache may just not be
    // there yet.
    MutexLock l(&mu_);
    auto it = written_.find(service_key);
    if (it != written_.end()) {
      it->second.erase(meta.name());
      if (it->second.empty()) written_.erase(it);
    }
  }
  Enqueue(service_key);
}

std::vector<const discoveryv1::EndpointSlice*>
EndpointSliceController::ManagedSlices(
    const std::vector<informer::ObjectPtr>& in_namespace,
    const std::string& service_name) const {
  std::vector<const discoveryv1::EndpointSlice*> out;
  for (const informer::ObjectPtr& obj : in_namespace) {
    const auto& slice = static_cast<const discoveryv1::EndpointSlice&>(*obj);
    const auto& labels = slice.metadata().labels();
    auto service = labels.find(kServiceNameLabel);
    auto managed = labels.find(kManagedByLabel);
    if (service != labels.end() && service->second == service_name &&
        managed != labels.end() &&
        managed->second == kEndpointSliceControllerName) {
      out.push_back(&slice);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    return a->metadata().name() < b->metadata().name();
  });
  return out;
}

bool EndpointSliceController::CacheHasCaughtUp(const std::string& service_key) {
  const std::string ns = informer::SplitObjectKey(service_key).first;
  MutexLock l(&mu_);
  auto it = written_.find(service_key);
  if (it == written_.end()) return true;
  auto& slices = it->second;
  for (auto s = slices.begin(); s != slices.end();) {
    informer::ObjectPtr cached =
        options_.slices->Get(informer::ObjectKey(ns, s->first));
    const bool caught_up =
        !s->second.has_value()
            ? cached == nullptr
            : cached != nullptr &&
                  IsNewer(objects::ResourceVersion(*cached), *s->second);
    s = caught_up ? slices.erase(s) : std::next(s);
  }
  if (slices.empty()) {
    written_.erase(it);
    return true;
  }
  return false;
}

void EndpointSliceController::Remember(
    const std::string& service_key, const std::string& slice,
    std::optional<std::string> resource_version) {
  MutexLock l(&mu_);
  written_[service_key][slice] = std::move(resource_version);
}

Status EndpointSliceController::Sync(const std::string& key) {
  const auto [ns, name] = informer::SplitObjectKey(key);
  informer::ObjectPtr cached_svc = options_.services->Get(key);
  if (cached_svc == nullptr) {
    // kube's DeleteService: nothing to wait for. Deleting a slice twice
    // (a cache behind our deletes) is only a 404.
    {
      MutexLock l(&mu_);
      written_.erase(key);
    }
    StatusOr<std::vector<informer::ObjectPtr>> in_ns =
        options_.slices->ByIndex(informer::kNamespaceIndex, ns);
    RETURN_IF_ERROR(in_ns.status());
    for (const auto* slice : ManagedSlices(*in_ns, name)) {
      Status s = options_.api->Delete(EndpointSlicesResource(), ns,
                                      slice->metadata().name());
      if (!s.ok() && !informer::IsNotFound(s)) return s;
    }
    return Status::Ok();
  }
  if (!CacheHasCaughtUp(key)) {
    return UnavailableError(
        "endpointslice cache is behind this controller's "
        "writes for service " +
        key);
  }
  // Listed after the check, so the list has every write it waited for.
  StatusOr<std::vector<informer::ObjectPtr>> in_ns =
      options_.slices->ByIndex(informer::kNamespaceIndex, ns);
  RETURN_IF_ERROR(in_ns.status());
  std::vector<const discoveryv1::EndpointSlice*> existing =
      ManagedSlices(*in_ns, name);
  const auto& svc = static_cast<const corev1::Service&>(*cached_svc);
  if (svc.spec().selector().empty()) return Status::Ok();

  // Desired endpoints, grouped.
  StatusOr<std::vector<informer::ObjectPtr>> pods =
      options_.pods->ByIndex(informer::kNamespaceIndex, ns);
  RETURN_IF_ERROR(pods.status());
  const std::vector<std::string> address_types = AddressTypes(svc);
  std::map<std::string, Group> groups;
  for (const informer::ObjectPtr& obj : *pods) {
    const auto& pod = static_cast<const corev1::Pod&>(*obj);
    if (!ServiceSelectsPod(svc, pod) || !ShouldPodBeInEndpoints(pod, true)) {
      continue;
    }
    std::vector<discoveryv1::EndpointPort> ports = PodPorts(pod, svc);
    for (const std::string& type : address_types) {
      const std::string address = PodAddress(pod, type);
      if (address.empty()) continue;
      discoveryv1::Endpoint e = PodEndpoint(pod, svc, address);
      google::protobuf::RepeatedPtrField<discoveryv1::EndpointPort> rp(
          ports.begin(), ports.end());
      Group& g = groups[GroupKey(type, rp)];
      g.address_type = type;
      g.ports = ports;
      g.endpoints.emplace(EndpointKey(e), std::move(e));
    }
  }
  // Kube keeps one empty placeholder slice per address type that has no
  // endpoints.
  for (const std::string& type : address_types) {
    bool any = false;
    for (const auto& [k, g] : groups) any = any || g.address_type == type;
    if (!any) {
      Group placeholder;
      placeholder.address_type = type;
      groups.emplace(GroupKey(placeholder), std::move(placeholder));
    }
  }

  const google::protobuf::Map<std::string, std::string> labels =
      SliceLabels(svc);
  const metav1::OwnerReference owner =
      ControllerRefTo("v1", "Service", svc.metadata());
  const size_t max = static_cast<size_t>(options_.max_endpoints_per_slice);

  // Existing slices by group; those of no group are deleted.
  std::map<std::string, std::vector<discoveryv1::EndpointSlice>> next;
  std::vector<std::string> to_delete;
  std::map<std::string, const discoveryv1::EndpointSlice*> current;
  for (const auto* slice : existing) {
    const std::string k = GroupKey(slice->addresstype(), slice->ports());
    current[slice->metadata().name()] = slice;
    if (groups.count(k) == 0) {
      to_delete.push_back(slice->metadata().name());
      continue;
    }
    next[k].push_back(*slice);
  }
  std::vector<discoveryv1::EndpointSlice> to_create;
  for (auto& [k, g] : groups) {
    std::vector<discoveryv1::EndpointSlice>& slices = next[k];
    // Endpoints stay where they are (updated), gone ones leave.
    for (auto& slice : slices) {
      google::protobuf::RepeatedPtrField<discoveryv1::Endpoint> kept;
      for (const auto& e : slice.endpoints()) {
        auto it = g.endpoints.find(EndpointKey(e));
        if (it == g.endpoints.end()) continue;
        *kept.Add() = std::move(it->second);
        g.endpoints.erase(it);
      }
      *slice.mutable_endpoints() = std::move(kept);
    }
    // New endpoints fill slices with room, then new slices.
    auto rest = g.endpoints.begin();
    for (auto& slice : slices) {
      while (rest != g.endpoints.end() &&
             static_cast<size_t>(slice.endpoints_size()) < max) {
        *slice.add_endpoints() = std::move(rest->second);
        ++rest;
      }
    }
    while (rest != g.endpoints.end()) {
      discoveryv1::EndpointSlice slice;
      slice.set_addresstype(g.address_type);
      for (auto& p : g.ports) *slice.add_ports() = p;
      while (rest != g.endpoints.end() &&
             static_cast<size_t>(slice.endpoints_size()) < max) {
        *slice.add_endpoints() = std::move(rest->second);
        ++rest;
      }
      to_create.push_back(std::move(slice));
    }
    // Slices left empty go, unless one must stay as the placeholder.
    const bool placeholder =
        g.ports.empty() && g.endpoints.empty() &&
        std::all_of(slices.begin(), slices.end(),
                    [](const auto& s) { return s.endpoints().empty(); });
    bool kept_placeholder = false;
    std::vector<discoveryv1::EndpointSlice> survivors;
    for (auto& slice : slices) {
      if (slice.endpoints().empty()) {
        if (placeholder && !kept_placeholder) {
          kept_placeholder = true;
          survivors.push_back(std::move(slice));
        } else {
          to_delete.push_back(slice.metadata().name());
        }
        continue;
      }
      survivors.push_back(std::move(slice));
    }
    if (placeholder && !kept_placeholder && to_create.empty()) {
      discoveryv1::EndpointSlice slice;
      slice.set_addresstype(g.address_type);
      to_create.push_back(std::move(slice));
    }
    slices = std::move(survivors);
  }

  // Writes: creates, then updates, then deletes (kube's order, so that
  // clients never see the Service without its endpoints).
  for (auto& slice : to_create) {
    auto* meta = slice.mutable_metadata();
    meta->set_namespace_(ns);
    meta->set_generatename(name.substr(0, 57) + "-");
    *meta->mutable_labels() = labels;
    *meta->add_ownerreferences() = owner;
    StatusOr<informer::ObjectPtr> r =
        options_.api->Create(EndpointSlicesResource(), slice);
    if (!r.ok()) {
      if (CreateRefusedInEndingNamespace(options_.api, r.status(), ns)) {
        return Status::Ok();
      }
      return r.status();
    }
    Remember(key, objects::Name(**r), objects::ResourceVersion(**r));
  }
  for (auto& [k, slices] : next) {
    for (auto& slice : slices) {
      const discoveryv1::EndpointSlice& was =
          *current.at(slice.metadata().name());
      *slice.mutable_metadata()->mutable_labels() = labels;
      bool owned = false;
      for (const auto& ref : slice.metadata().ownerreferences()) {
        owned = owned || ref.uid() == owner.uid();
      }
      if (!owned) *slice.mutable_metadata()->add_ownerreferences() = owner;
      if (DeterministicBytes(slice) == DeterministicBytes(was)) continue;
      StatusOr<informer::ObjectPtr> r =
          options_.api->Update(EndpointSlicesResource(), slice);
      if (!r.ok()) return r.status();
      Remember(key, objects::Name(**r), objects::ResourceVersion(**r));
    }
  }
  for (const std::string& slice : to_delete) {
    Status s = options_.api->Delete(EndpointSlicesResource(), ns, slice);
    if (!s.ok() && !informer::IsNotFound(s)) return s;
    Remember(key, slice, std::nullopt);
  }
  return Status::Ok();
}

}  // namespace kplane::controllers
