#include "apiserver/discovery.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "apiserver/access_review.h"
#include "apiserver/custom_resources.h"
#include "apiserver/openapi/apiextensions_definitions.h"
#include "base/base64.h"
#include "base/mutex.h"

namespace kplane::apiserver {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void S(Writer* w, std::string_view s) {
  w->String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
void K(Writer* w, std::string_view k) {
  w->Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}
void StrArray(Writer* w, const std::vector<std::string>& v) {
  w->StartArray();
  for (const std::string& s : v) S(w, s);
  w->EndArray();
}
std::string Done(const rapidjson::StringBuffer& b) {
  return std::string(b.GetString(), b.GetSize());
}

// kube's version priority (CompareKubeAwareVersionStrings): released
// versions by major, newest first (v10, v2, v1), then betas (v11beta2,
// v10beta3, v3beta1), then alphas, then anything else alphabetically.
struct KubeVersion {
  int stage = -1;  // 2 GA, 1 beta, 0 alpha, -1 not kube-like
  long major = 0, minor = 0;
};
KubeVersion ParseKubeVersion(std::string_view v) {
  KubeVersion out;
  // Digits (kube's [\d]+; at most 9 here, more is no kube version).
  auto number = [](std::string_view* s, long* n) {
    size_t i = 0;
    while (i < s->size() && std::isdigit(static_cast<unsigned char>((*s)[i]))) {
      ++i;
    }
    if (i == 0 || i > 9) return false;
    *n = std::stol(std::string(s->substr(0, i)));
    s->remove_prefix(i);
    return true;
  };
  if (!v.starts_with("v")) return out;
  v.remove_prefix(1);
  long major = 0, minor = 0;
  if (!number(&v, &major)) return out;
  int stage = 2;
  if (v.starts_with("alpha") || v.starts_with("beta")) {
    stage = v.starts_with("beta") ? 1 : 0;
    v.remove_prefix(stage == 1 ? 4 : 5);
    if (!number(&v, &minor)) return out;
  }
  if (!v.empty()) return out;
  return {stage, major, minor};
}
bool HigherKubePriority(std::string_view a, std::string_view b) {
  const KubeVersion x = ParseKubeVersion(a), y = ParseKubeVersion(b);
  if (x.stage != y.stage) return x.stage > y.stage;
  if (x.stage < 0) return a < b;
  if (x.major != y.major) return x.major > y.major;
  return x.minor > y.minor;
}

// What discovery lists: the scheme's resources and group-versions, then the
// extra (custom) ones, each custom group's versions in kube's priority
// order (its first, the preferred version, is what kubectl uses).
struct Served {
  std::vector<const objects::ResourceInfo*> resources;
  std::vector<objects::GroupVersion> group_versions;

  Served(const objects::Scheme& scheme,
         const std::vector<const objects::ResourceInfo*>& extra) {
    for (const auto& r : scheme.resources()) resources.push_back(r.get());
    group_versions = scheme.GroupVersions();
    const size_t builtin = group_versions.size();
    for (const objects::ResourceInfo* r : extra) {
      resources.push_back(r);
      if (std::find(group_versions.begin(), group_versions.end(), r->gv) ==
          group_versions.end()) {
        group_versions.push_back(r->gv);
      }
    }
    // Groups in the order they came, versions by priority within each.
    std::vector<std::string> order;
    for (size_t i = builtin; i < group_versions.size(); ++i) {
      const std::string& g = group_versions[i].group;
      if (std::find(order.begin(), order.end(), g) == order.end()) {
        order.push_back(g);
      }
    }
    std::stable_sort(
        group_versions.begin() + static_cast<std::ptrdiff_t>(builtin),
        group_versions.end(),
        [&](const objects::GroupVersion& a, const objects::GroupVersion& b) {
          if (a.group != b.group) {
            return std::find(order.begin(), order.end(), a.group) <
                   std::find(order.begin(), order.end(), b.group);
          }
          return HigherKubePriority(a.version, b.version);
        });
  }
};

// Resources of one group-version, sorted by name as kube-apiserver lists
// them.
std::vector<const objects::ResourceInfo*> ResourcesOf(
    const Served& scheme, const objects::GroupVersion& gv) {
  std::vector<const objects::ResourceInfo*> out;
  for (const objects::ResourceInfo* r : scheme.resources) {
    if (r->gv == gv) out.push_back(r);
  }
  std::sort(out.begin(), out.end(),
            [](const objects::ResourceInfo* a, const objects::ResourceInfo* b) {
              return a->resource < b->resource;
            });
  return out;
}

std::vector<std::string> SortedVerbs(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void WriteGroupVersion(Writer* w, const objects::GroupVersion& gv) {
  w->StartObject();
  K(w, "groupVersion");
  S(w, gv.ApiVersion());
  K(w, "version");
  S(w, gv.version);
  w->EndObject();
}

std::vector<std::string> GroupsOf(const Served& scheme) {
  std::vector<std::string> groups;
  for (const objects::GroupVersion& gv : scheme.group_versions) {
    if (gv.group.empty()) continue;
    if (std::find(groups.begin(), groups.end(), gv.group) == groups.end()) {
      groups.push_back(gv.group);
    }
  }
  return groups;
}

std::vector<objects::GroupVersion> VersionsOf(const Served& scheme,
                                              std::string_view group) {
  std::vector<objects::GroupVersion> out;
  for (const objects::GroupVersion& gv : scheme.group_versions) {
    if (gv.group == group) out.push_back(gv);
  }
  return out;
}

void WriteApiGroup(Writer* w, const Served& scheme, const std::string& group,
                   bool with_type_meta) {
  std::vector<objects::GroupVersion> versions = VersionsOf(scheme, group);
  w->StartObject();
  if (with_type_meta) {
    K(w, "kind");
    S(w, "APIGroup");
    K(w, "apiVersion");
    S(w, "v1");
  }
  K(w, "name");
  S(w, group);
  K(w, "versions");
  w->StartArray();
  for (const objects::GroupVersion& gv : versions) WriteGroupVersion(w, gv);
  w->EndArray();
  K(w, "preferredVersion");
  WriteGroupVersion(w, versions.front());
  w->EndObject();
}

std::string StorageVersionHash(const objects::ResourceInfo& r) {
  return Discovery::Hash64(r.gv.group + "/" + r.gv.version + "/" +
                           r.kind->kind);
}

std::string ResourceListJson(const Served& scheme,
                             const objects::GroupVersion& gv) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.StartObject();
  K(&w, "kind");
  S(&w, "APIResourceList");
  K(&w, "apiVersion");
  S(&w, "v1");
  K(&w, "groupVersion");
  S(&w, gv.ApiVersion());
  K(&w, "resources");
  w.StartArray();
  for (const objects::ResourceInfo* r : ResourcesOf(scheme, gv)) {
    w.StartObject();
    K(&w, "name");
    S(&w, r->resource);
    K(&w, "singularName");
    S(&w, r->singular);
    K(&w, "namespaced");
    w.Bool(r->namespaced);
    K(&w, "kind");
    S(&w, r->kind->kind);
    K(&w, "verbs");
    StrArray(&w, SortedVerbs(r->verbs));
    if (!r->short_names.empty()) {
      K(&w, "shortNames");
      StrArray(&w, r->short_names);
    }
    if (!r->categories.empty()) {
      K(&w, "categories");
      StrArray(&w, r->categories);
    }
    if (r->list_kind != nullptr) {
      K(&w, "storageVersionHash");
      S(&w, StorageVersionHash(*r));
    }
    w.EndObject();
    for (const objects::SubresourceInfo& sub : r->subresources) {
      w.StartObject();
      K(&w, "name");
      S(&w, r->resource + "/" + sub.name);
      K(&w, "singularName");
      S(&w, "");
      K(&w, "namespaced");
      w.Bool(r->namespaced);
      if (!(sub.kind->gv == r->gv)) {
        K(&w, "group");
        S(&w, sub.kind->gv.group);
        K(&w, "version");
        S(&w, sub.kind->gv.version);
      }
      K(&w, "kind");
      S(&w, sub.kind->kind);
      K(&w, "verbs");
      StrArray(&w, SortedVerbs(sub.verbs));
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return Done(b);
}

void WriteResponseKind(Writer* w, const objects::KindInfo& k) {
  w->StartObject();
  K(w, "group");
  S(w, k.gv.group);
  K(w, "version");
  S(w, k.gv.version);
  K(w, "kind");
  S(w, k.kind);
  w->EndObject();
}

// One item of an APIGroupDiscoveryList.
void WriteAggregatedGroup(Writer* w, const Served& scheme,
                          const std::string& group) {
  w->StartObject();
  K(w, "metadata");
  w->StartObject();
  if (!group.empty()) {
    K(w, "name");
    S(w, group);
  }
  K(w, "creationTimestamp");
  w->Null();
  w->EndObject();
  K(w, "versions");
  w->StartArray();
  for (const objects::GroupVersion& gv : VersionsOf(scheme, group)) {
    w->StartObject();
    K(w, "version");
    S(w, gv.version);
    K(w, "resources");
    w->StartArray();
    for (const objects::ResourceInfo* r : ResourcesOf(scheme, gv)) {
      w->StartObject();
      K(w, "resource");
      S(w, r->resource);
      K(w, "responseKind");
      WriteResponseKind(w, *r->kind);
      K(w, "scope");
      S(w, r->namespaced ? "Namespaced" : "Cluster");
      K(w, "singularResource");
      S(w, r->singular);
      K(w, "verbs");
      StrArray(w, SortedVerbs(r->verbs));
      if (!r->short_names.empty()) {
        K(w, "shortNames");
        StrArray(w, r->short_names);
      }
      if (!r->categories.empty()) {
        K(w, "categories");
        StrArray(w, r->categories);
      }
      if (!r->subresources.empty()) {
        K(w, "subresources");
        w->StartArray();
        for (const objects::SubresourceInfo& sub : r->subresources) {
          w->StartObject();
          K(w, "subresource");
          S(w, sub.name);
          K(w, "responseKind");
          WriteResponseKind(w, *sub.kind);
          K(w, "verbs");
          StrArray(w, SortedVerbs(sub.verbs));
          w->EndObject();
        }
        w->EndArray();
      }
      w->EndObject();
    }
    w->EndArray();
    K(w, "freshness");
    S(w, "Current");
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

std::string AggregatedList(const Served& scheme,
                           const std::vector<std::string>& groups) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.StartObject();
  K(&w, "kind");
  S(&w, "APIGroupDiscoveryList");
  K(&w, "apiVersion");
  S(&w, "apidiscovery.k8s.io/v2");
  K(&w, "metadata");
  w.StartObject();
  w.EndObject();
  K(&w, "items");
  w.StartArray();
  for (const std::string& g : groups) WriteAggregatedGroup(&w, scheme, g);
  w.EndArray();
  w.EndObject();
  return Done(b);
}

}  // namespace

std::string Discovery::Hash64(std::string_view data) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(h >> (56 - 8 * i));
  return Base64Encode(bytes);
}

Discovery::Discovery(const objects::Scheme& builtin, std::string server_address,
                     std::vector<const objects::ResourceInfo*> extra,
                     std::vector<openapi::CustomResourceApi> custom_openapi,
                     std::shared_ptr<const void> keep_alive)
    : scheme_(&builtin),
      custom_openapi_(std::move(custom_openapi)),
      keep_alive_(std::move(keep_alive)) {
  // The reviews the apiserver answers are listed like resources, before
  // the custom ones.
  std::vector<const objects::ResourceInfo*> listed = ListedReviewResources();
  listed.insert(listed.end(), extra.begin(), extra.end());
  const Served scheme(builtin, listed);
  {
    rapidjson::StringBuffer b;
    Writer w(b);
    w.StartObject();
    K(&w, "kind");
    S(&w, "APIVersions");
    K(&w, "versions");
    w.StartArray();
    for (const objects::GroupVersion& gv : VersionsOf(scheme, ""))
      S(&w, gv.version);
    w.EndArray();
    K(&w, "serverAddressByClientCIDRs");
    w.StartArray();
    w.StartObject();
    K(&w, "clientCIDR");
    S(&w, "0.0.0.0/0");
    K(&w, "serverAddress");
    S(&w, server_address);
    w.EndObject();
    w.EndArray();
    w.EndObject();
    api_versions_ = Done(b);
  }
  const std::vector<std::string> groups = GroupsOf(scheme);
  {
    rapidjson::StringBuffer b;
    Writer w(b);
    w.StartObject();
    K(&w, "kind");
    S(&w, "APIGroupList");
    K(&w, "apiVersion");
    S(&w, "v1");
    K(&w, "groups");
    w.StartArray();
    for (const std::string& g : groups) WriteApiGroup(&w, scheme, g, false);
    w.EndArray();
    w.EndObject();
    api_group_list_ = Done(b);
  }
  for (const std::string& g : groups) {
    rapidjson::StringBuffer b;
    Writer w(b);
    WriteApiGroup(&w, scheme, g, true);
    groups_[g] = Done(b);
  }
  aggregated_core_ = AggregatedList(scheme, {""});
  aggregated_groups_ = AggregatedList(scheme, groups);

  std::vector<std::string> paths = {"/api", "/apis"};
  for (const objects::GroupVersion& gv : scheme.group_versions) {
    resource_lists_[gv.group + "/" + gv.version] = ResourceListJson(scheme, gv);
    paths.push_back(gv.group.empty() ? "/api/" + gv.version
                                     : "/apis/" + gv.group + "/" + gv.version);
  }
  for (const std::string& g : groups) paths.push_back("/apis/" + g);

  for (const char* p : {"/healthz", "/livez", "/metrics", "/openapi/v2",
                        "/openapi/v3", "/readyz", "/version"}) {
    paths.push_back(p);
  }
  std::sort(paths.begin(), paths.end());
  {
    rapidjson::StringBuffer b;
    Writer w(b);
    w.StartObject();
    K(&w, "paths");
    StrArray(&w, paths);
    w.EndObject();
    root_paths_ = Done(b);
  }
  {
    rapidjson::StringBuffer b;
    Writer w(b);
    w.StartObject();
    K(&w, "major");
    S(&w, "1");
    K(&w, "minor");
    S(&w, "32");
    K(&w, "gitVersion");
    S(&w, "v1.32.4");
    K(&w, "gitCommit");
    S(&w, "kplane");
    K(&w, "gitTreeState");
    S(&w, "clean");
    K(&w, "buildDate");
    S(&w, "2025-04-22T00:00:00Z");
    K(&w, "goVersion");
    S(&w, "go1.23.8");
    K(&w, "compiler");
    S(&w, "gc");
    K(&w, "platform");
    S(&w, "linux/amd64");
    w.EndObject();
    version_ = Done(b);
  }
}

const std::string* Discovery::ApiGroup(std::string_view group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? nullptr : &it->second;
}

const std::string* Discovery::ResourceList(std::string_view group,
                                           std::string_view version) const {
  std::string key(group);
  key += "/";
  key += version;
  auto it = resource_lists_.find(key);
  return it == resource_lists_.end() ? nullptr : &it->second;
}

namespace {

// The built-in documents of a scheme and their model, built once per
// process: every Discovery (one per CRD change) shares them.
struct BuiltinOpenApi {
  std::unique_ptr<const openapi::SchemaModel> model;
  std::shared_ptr<const openapi::OpenApiDocuments> documents;
};

const BuiltinOpenApi& BuiltinOpenApiOf(const objects::Scheme& scheme) {
  static Mutex mu;
  static auto* built =
      new std::map<const objects::Scheme*, std::unique_ptr<BuiltinOpenApi>>;
  MutexLock l(&mu);
  std::unique_ptr<BuiltinOpenApi>& b = (*built)[&scheme];
  if (b == nullptr) {
    b = std::make_unique<BuiltinOpenApi>();
    // The CustomResourceDefinition type is served by every apiserver but
    // is not in the Scheme (CRDs are Unstructured): its definitions and
    // paths are added here, so `kubectl explain crd` and kubectl 1.20's
    // client-side validation of CRD manifests find them.
    b->model = std::make_unique<const openapi::SchemaModel>(
        scheme, openapi::ApiExtensionsDefinitions());
    b->documents = std::make_shared<const openapi::OpenApiDocuments>(
        scheme, *b->model,
        std::vector<const objects::ResourceInfo*>{&CrdResource()});
  }
  return *b;
}

}  // namespace

const openapi::OpenApiDocuments& Discovery::OpenApi() const {
  std::call_once(openapi_once_, [this] {
    const BuiltinOpenApi& builtin = BuiltinOpenApiOf(*scheme_);
    if (custom_openapi_.empty()) {
      openapi_ = builtin.documents;
    } else {
      openapi_ = std::make_shared<const openapi::OpenApiDocuments>(
          builtin.documents, *builtin.model, custom_openapi_);
    }
  });
  return *openapi_;
}

const std::string* Discovery::OpenApiDocument(std::string_view path) const {
  const openapi::ServedDocument* doc = OpenApi().V3(path);
  return doc == nullptr ? nullptr : &doc->json;
}

}  // namespace kplane::apiserver
