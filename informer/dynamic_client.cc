#include "informer/dynamic_client.h"

#include <utility>

#include "base/json.h"
#include "informer/api_errors.h"
#include "objects/codec.h"

namespace kplane::informer {

namespace {

constexpr std::string_view kJson = "application/json";

RestRequest JsonRequest(std::string method, std::string path) {
  RestRequest req{.method = std::move(method), .path = std::move(path)};
  req.headers.Set("Accept", std::string(kJson));
  return req;
}

std::string DiscoveryPath(const objects::GroupVersion& gv) {
  return gv.group.empty() ? "/api/" + gv.version
                          : "/apis/" + gv.group + "/" + gv.version;
}

}  // namespace

std::string GroupVersionResource::ToString() const {
  return resource + "." + version + "." + group;
}

// ---- DynamicResourceClient --------------------------------------------------

DynamicResourceClient DynamicResourceClient::Namespace(
    std::string_view ns) const {
  return DynamicResourceClient(client_, gvr_, resource_, std::string(ns));
}

std::string DynamicResourceClient::Path(std::string_view ns,
                                        std::string_view name,
                                        std::string_view subresource) const {
  return RestClient::ResourcePath(*resource_, ns, name, subresource);
}

StatusOr<std::string> DynamicResourceClient::WriteNamespace(
    const Unstructured& obj) const {
  std::string obj_ns = obj.Namespace();
  if (ns_.empty()) return obj_ns;
  if (!obj_ns.empty() && obj_ns != ns_) {
    // kube-apiserver's words for the same mismatch.
    return InvalidArgumentError(
        "the namespace of the provided object does not match the namespace "
        "sent on the request (" +
        obj_ns + " vs " + ns_ + ")");
  }
  return ns_;
}

StatusOr<Unstructured> DynamicResourceClient::Send(RestRequest req) const {
  ASSIGN_OR_RETURN(net::HttpResponse resp, client_->rest_client()->Do(req));
  StatusOr<Unstructured> obj = Unstructured::Parse(resp.body);
  if (!obj.ok()) {
    return obj.status().Annotate("decoding " + resource_->GroupResource());
  }
  return obj;
}

StatusOr<Unstructured> DynamicResourceClient::Get(
    std::string_view name, const GetOptions& options,
    std::string_view subresource) const {
  RestRequest req = JsonRequest("GET", Path(ns_, name, subresource));
  if (!options.resource_version.empty()) {
    req.query.emplace_back("resourceVersion", options.resource_version);
  }
  return Send(std::move(req));
}

StatusOr<UnstructuredList> DynamicResourceClient::List(
    const ListOptions& options) const {
  RestRequest req = JsonRequest("GET", Path(ns_));
  RestClient::AddListQuery(&req, options);
  ASSIGN_OR_RETURN(net::HttpResponse resp, client_->rest_client()->Do(req));
  StatusOr<UnstructuredList> list = ParseUnstructuredList(resp.body);
  if (!list.ok()) {
    return list.status().Annotate("decoding the list of " +
                                  resource_->GroupResource());
  }
  return list;
}

StatusOr<std::unique_ptr<WatchStream>> DynamicResourceClient::Watch(
    const ListOptions& options) const {
  // The resource's kind is unstructured: the RestClient asks for JSON and
  // decodes UnstructuredObjects.
  return client_->rest_client()->Watch(*resource_, ns_, options);
}

StatusOr<Unstructured> DynamicResourceClient::Create(
    const Unstructured& obj, const WriteOptions& options,
    std::string_view subresource) const {
  ASSIGN_OR_RETURN(std::string ns, WriteNamespace(obj));
  std::string name = subresource.empty() ? "" : obj.Name();
  if (!subresource.empty() && name.empty()) {
    return InvalidArgumentError("creating " + std::string(subresource) +
                                " needs metadata.name");
  }
  RestRequest req = JsonRequest("POST", Path(ns, name, subresource));
  req.headers.Set("Content-Type", std::string(kJson));
  req.body = obj.ToJson();
  RestClient::AddWriteOptions(&req, options);
  return Send(std::move(req));
}

StatusOr<Unstructured> DynamicResourceClient::Update(
    const Unstructured& obj, const WriteOptions& options,
    std::string_view subresource) const {
  std::string name = obj.Name();
  if (name.empty()) return InvalidArgumentError("update needs metadata.name");
  ASSIGN_OR_RETURN(std::string ns, WriteNamespace(obj));
  RestRequest req = JsonRequest("PUT", Path(ns, name, subresource));
  req.headers.Set("Content-Type", std::string(kJson));
  req.body = obj.ToJson();
  RestClient::AddWriteOptions(&req, options);
  return Send(std::move(req));
}

StatusOr<Unstructured> DynamicResourceClient::Patch(
    std::string_view name, PatchType type, std::string_view patch,
    const WriteOptions& options, std::string_view subresource) const {
  RestRequest req = JsonRequest("PATCH", Path(ns_, name, subresource));
  req.headers.Set("Content-Type", std::string(PatchContentType(type)));
  req.body = std::string(patch);
  RestClient::AddWriteOptions(&req, options);
  return Send(std::move(req));
}

StatusOr<Unstructured> DynamicResourceClient::Apply(
    const Unstructured& obj, const WriteOptions& options) const {
  std::string name = obj.Name();
  if (name.empty()) return InvalidArgumentError("apply needs metadata.name");
  if (options.field_manager.empty()) {
    return InvalidArgumentError(
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required "
        "value: is required for apply patch");
  }
  ASSIGN_OR_RETURN(std::string ns, WriteNamespace(obj));
  // JSON is YAML: the object's text is the apply configuration.
  return Namespace(ns).Patch(name, PatchType::kApplyPatch, obj.ToJson(),
                             options);
}

Status DynamicResourceClient::Delete(
    std::string_view name,
    const objects::metav1::DeleteOptions& options) const {
  RestRequest req = JsonRequest("DELETE", Path(ns_, name));
  if (options.ByteSizeLong() > 0) {
    req.headers.Set("Content-Type", std::string(kJson));
    req.body = objects::EncodeJson(options, {"v1", "DeleteOptions"});
  }
  return client_->rest_client()->Do(req).status();
}

Status DynamicResourceClient::DeleteCollection(
    const objects::metav1::DeleteOptions& options,
    const ListOptions& list_options) const {
  RestRequest req = JsonRequest("DELETE", Path(ns_));
  RestClient::AddListQuery(&req, list_options);
  if (options.ByteSizeLong() > 0) {
    req.headers.Set("Content-Type", std::string(kJson));
    req.body = objects::EncodeJson(options, {"v1", "DeleteOptions"});
  }
  return client_->rest_client()->Do(req).status();
}

// ---- DynamicClient ---------------------------------------------------------

DynamicClient::DynamicClient(RestClient* client) : client_(client) {}

const objects::ResourceInfo& DynamicClient::ResourceInfoFor(
    const GroupVersionResource& gvr) {
  MutexLock l(&mu_);
  std::unique_ptr<Entry>& e = entries_[gvr];
  if (e == nullptr) {
    e = std::make_unique<Entry>();
    objects::GroupVersion gv{gvr.group, gvr.version};
    e->kind = MakeUnstructuredKind(gv);
    e->resource.gv = gv;
    e->resource.resource = gvr.resource;
    // The dynamic client does not know the scope: paths carry the
    // namespace whenever one is given (ResourcePath leaves it out of
    // cluster-scoped resources' paths only).
    e->resource.namespaced = true;
    e->resource.kind = &e->kind;
    e->resource.list_kind = &e->kind;
  }
  return e->resource;
}

DynamicResourceClient DynamicClient::Resource(const GroupVersionResource& gvr) {
  return DynamicResourceClient(this, gvr, &ResourceInfoFor(gvr), "");
}

StatusOr<ResourceMapping> DynamicClient::MapKind(std::string_view api_version,
                                                 std::string_view kind) {
  const objects::GroupVersion gv = objects::GroupVersion::Parse(api_version);
  const std::string no_match = "no matches for kind \"" + std::string(kind) +
                               "\" in version \"" + std::string(api_version) +
                               "\"";
  StatusOr<net::HttpResponse> resp =
      client_->Do(JsonRequest("GET", DiscoveryPath(gv)));
  if (IsNotFound(resp.status())) return NotFoundError(no_match);
  if (!resp.ok()) return resp.status();
  rapidjson::Document doc;
  json::Outcome parsed = json::ParseDom(resp->body, &doc);
  if (!parsed.ok() || !doc.IsObject()) {
    return InvalidArgumentError("discovery of " + std::string(api_version) +
                                ": not an APIResourceList");
  }
  auto resources = doc.FindMember("resources");
  if (resources == doc.MemberEnd() || !resources->value.IsArray()) {
    return NotFoundError(no_match);
  }
  for (const rapidjson::Value& r : resources->value.GetArray()) {
    if (!r.IsObject()) continue;
    auto name = r.FindMember("name");
    auto k = r.FindMember("kind");
    if (name == r.MemberEnd() || !name->value.IsString() ||
        k == r.MemberEnd() || !k->value.IsString()) {
      continue;
    }
    std::string_view resource(name->value.GetString(),
                              name->value.GetStringLength());
    // Subresources (pods/status) share their parent's kind or have their
    // own; only a top-level collection serves the kind.
    if (resource.find('/') != std::string_view::npos ||
        std::string_view(k->value.GetString(), k->value.GetStringLength()) !=
            kind) {
      continue;
    }
    ResourceMapping m{.gvr = {gv.group, gv.version, std::string(resource)},
                      .kind = std::string(kind)};
    auto namespaced = r.FindMember("namespaced");
    if (namespaced != r.MemberEnd() && namespaced->value.IsBool()) {
      m.namespaced = namespaced->value.GetBool();
    }
    return m;
  }
  return NotFoundError(no_match);
}

}  // namespace kplane::informer
