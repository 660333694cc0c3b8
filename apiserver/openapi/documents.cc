#include "apiserver/openapi/documents.h"

#include <openssl/sha.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "apiserver/openapi/openapi_v2.pb.h"
#include "apiserver/openapi/v2_proto.h"
#include "base/strings.h"

namespace kplane::openapi {

namespace {

using Value = rapidjson::Value;
using Alloc = rapidjson::Document::AllocatorType;

constexpr char kMeta[] = "io.k8s.apimachinery.pkg.apis.meta.v1.";

Value Str(std::string_view s, Alloc& a) {
  return Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}
void Put(Value* obj, std::string_view key, Value v, Alloc& a) {
  obj->AddMember(Str(key, a), v, a);
}
Value StrArray(const std::vector<std::string>& items, Alloc& a) {
  Value arr(rapidjson::kArrayType);
  for (const std::string& s : items) arr.PushBack(Str(s, a), a);
  return arr;
}
std::string Serialize(const Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return std::string(b.GetString(), b.GetSize());
}

struct Param {
  std::string name;
  std::string in;  // "query", "path", "body"
  std::string type;
  bool required = false;
  bool unique_items = false;
  std::string body_ref;  // definition name of a body parameter
  std::string description;
};

struct Operation {
  std::string method;  // "get", "put", ...
  std::string id;
  std::string action;  // x-kubernetes-action
  std::string description;
  const objects::KindInfo* kind = nullptr;  // the GVK extension
  std::vector<Param> params;
  std::vector<std::string> consumes;  // empty: "*/*"
  std::string response_ref;
  bool created = false;  // answers 201 as well
};

struct PathEntry {
  std::string path;
  std::vector<Param> params;  // path-level
  std::vector<Operation> ops;
};

Param Query(std::string name, std::string type, std::string description) {
  return {std::move(name),       "query", std::move(type), false, true, "",
          std::move(description)};
}

const char kDryRun[] =
    "When present, indicates that modifications should not be persisted. "
    "Valid values are: - All: all dry run stages will be processed";
const char kFieldManager[] =
    "fieldManager is a name associated with the actor or entity that is "
    "making these changes.";
const char kFieldValidation[] =
    "fieldValidation instructs the server on how to handle objects in the "
    "request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid "
    "values are: - Ignore: ignore unknown and duplicate fields silently. - "
    "Warn: send a warning (`Warning: 299 - \"unknown field ...\"`) for each. "
    "- Strict: fail the request with a BadRequest error.";

std::vector<Param> WriteParams(bool patch) {
  std::vector<Param> p = {Query("dryRun", "string", kDryRun),
                          Query("fieldManager", "string", kFieldManager),
                          Query("fieldValidation", "string", kFieldValidation)};
  if (patch) {
    p.push_back(Query("force", "boolean",
                      "Force is going to \"force\" Apply requests."));
  }
  return p;
}

std::vector<Param> ListParams() {
  std::vector<Param> p;
  for (const char* name : {"continue", "fieldSelector", "labelSelector",
                           "resourceVersion", "resourceVersionMatch"}) {
    p.push_back(Query(name, "string", ""));
  }
  p.push_back(Query("allowWatchBookmarks", "boolean", ""));
  p.push_back(Query("limit", "integer", ""));
  p.push_back(Query("timeoutSeconds", "integer", ""));
  p.push_back(Query("watch", "boolean", ""));
  return p;
}

Param Body(std::string ref) {
  Param p;
  p.name = "body";
  p.in = "body";
  p.required = true;
  p.body_ref = std::move(ref);
  return p;
}

Param PathParam(std::string name, std::string description) {
  return {std::move(name),       "path", "string", true, true, "",
          std::move(description)};
}

// "apps" -> "AppsV1", "rbac.authorization.k8s.io" -> "RbacAuthorizationV1",
// "" -> "CoreV1", as kube's operationIds spell group-versions.
std::string OperationGroupVersion(const objects::GroupVersion& gv) {
  std::string group = gv.group.empty() ? "core" : gv.group;
  const std::string suffix = ".k8s.io";
  if (group.size() > suffix.size() &&
      group.compare(group.size() - suffix.size(), suffix.size(), suffix) == 0) {
    group.resize(group.size() - suffix.size());
  }
  std::string out;
  for (const std::string& part : StrSplit(group, '.')) {
    if (part.empty()) continue;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(part[0])));
    out += part.substr(1);
  }
  std::string version = gv.version;
  if (!version.empty()) {
    version[0] =
        static_cast<char>(std::toupper(static_cast<unsigned char>(version[0])));
  }
  return out + version;
}

bool HasVerb(const std::vector<std::string>& verbs, std::string_view v) {
  return std::find(verbs.begin(), verbs.end(), v) != verbs.end();
}

std::string BasePath(const objects::ResourceInfo& r) {
  std::string base = r.gv.group.empty()
                         ? "/api/" + r.gv.version
                         : "/apis/" + r.gv.group + "/" + r.gv.version;
  if (r.namespaced) base += "/namespaces/{namespace}";
  return base + "/" + r.resource;
}

std::string Def(const objects::KindInfo& k) {
  return SchemaModel::DefinitionName(k.descriptor);
}

// The paths of one resource: the collection, the item and its subresources.
std::vector<PathEntry> ResourcePaths(const objects::ResourceInfo& r) {
  std::vector<PathEntry> out;
  const std::string gv = OperationGroupVersion(r.gv);
  const std::string scope = r.namespaced ? "Namespaced" : "";
  const std::string kind = r.kind->kind;
  std::vector<Param> base_params;
  if (r.namespaced) {
    base_params.push_back(
        PathParam("namespace",
                  "object name and auth scope, such as for teams and "
                  "projects"));
  }
  base_params.push_back(Query("pretty", "string",
                              "If 'true', then the output is pretty printed."));
  const std::string status_ref = std::string(kMeta) + "Status";

  PathEntry collection{BasePath(r), base_params, {}};
  if (r.list_kind != nullptr && HasVerb(r.verbs, "list")) {
    collection.ops.push_back({"get",
                              "list" + gv + scope + kind,
                              "list",
                              "list or watch objects of kind " + kind,
                              r.kind,
                              ListParams(),
                              {},
                              Def(*r.list_kind),
                              false});
  }
  if (HasVerb(r.verbs, "create")) {
    std::vector<Param> p = {Body(Def(*r.kind))};
    for (Param& q : WriteParams(false)) p.push_back(std::move(q));
    collection.ops.push_back({"post",
                              "create" + gv + scope + kind,
                              "post",
                              "create " + (r.list_kind ? "a " + kind : kind),
                              r.kind,
                              std::move(p),
                              {},
                              Def(*r.kind),
                              true});
  }
  if (HasVerb(r.verbs, "deletecollection")) {
    std::vector<Param> p = ListParams();
    p.insert(p.begin(), Body(std::string(kMeta) + "DeleteOptions"));
    p.push_back(Query("dryRun", "string", kDryRun));
    p.push_back(Query("gracePeriodSeconds", "integer", ""));
    p.push_back(Query("propagationPolicy", "string", ""));
    collection.ops.push_back({"delete",
                              "deleteCollection" + gv + scope + kind,
                              "deletecollection",
                              "delete collection of " + kind,
                              r.kind,
                              std::move(p),
                              {},
                              status_ref,
                              false});
  }
  if (!collection.ops.empty()) out.push_back(std::move(collection));
  if (r.list_kind == nullptr) return out;  // create-only (bindings)

  std::vector<Param> item_params = base_params;
  item_params.insert(item_params.begin(),
                     PathParam("name", "name of the " + kind));
  PathEntry item{BasePath(r) + "/{name}", item_params, {}};
  auto add_item_ops = [&](PathEntry* e, const objects::KindInfo& k,
                          const std::vector<std::string>& verbs,
                          const std::string& suffix, const std::string& what) {
    const std::string id = gv + scope + kind + suffix;
    if (HasVerb(verbs, "get")) {
      e->ops.push_back({"get",
                        "read" + id,
                        "get",
                        "read " + what + " of the " + kind,
                        &k,
                        {},
                        {},
                        Def(k),
                        false});
    }
    if (HasVerb(verbs, "update")) {
      std::vector<Param> p = {Body(Def(k))};
      for (Param& q : WriteParams(false)) p.push_back(std::move(q));
      e->ops.push_back({"put",
                        "replace" + id,
                        "put",
                        "replace " + what + " of the " + kind,
                        &k,
                        std::move(p),
                        {},
                        Def(k),
                        true});
    }
    if (HasVerb(verbs, "patch")) {
      std::vector<Param> p = {Body(std::string(kMeta) + "Patch")};
      for (Param& q : WriteParams(true)) p.push_back(std::move(q));
      e->ops.push_back(
          {"patch",
           "patch" + id,
           "patch",
           "partially update " + what + " of the " + kind,
           &k,
           std::move(p),
           {"application/json-patch+json", "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml"},
           Def(k),
           true});
    }
  };
  add_item_ops(&item, *r.kind, r.verbs, "", "the specified");
  if (HasVerb(r.verbs, "delete")) {
    std::vector<Param> p = {Body(std::string(kMeta) + "DeleteOptions"),
                            Query("dryRun", "string", kDryRun),
                            Query("gracePeriodSeconds", "integer", ""),
                            Query("propagationPolicy", "string", "")};
    item.ops.push_back({"delete",
                        "delete" + gv + scope + kind,
                        "delete",
                        "delete a " + kind,
                        r.kind,
                        std::move(p),
                        {},
                        status_ref,
                        false});
  }
  out.push_back(std::move(item));
  for (const objects::SubresourceInfo& sub : r.subresources) {
    // pods/log answers text, not its kind: left out rather than described
    // as returning a Pod.
    if (sub.name == "log") continue;
    std::string suffix = sub.name;
    suffix[0] =
        static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    PathEntry e{BasePath(r) + "/{name}/" + sub.name, item_params, {}};
    add_item_ops(&e, *sub.kind, sub.verbs, suffix, sub.name);
    if (!e.ops.empty()) out.push_back(std::move(e));
  }
  return out;
}

const std::vector<std::string> kProduces = {
    "application/json", "application/yaml",
    "application/vnd.kubernetes.protobuf"};

Value ParamJson(const Param& p, Dialect d, Alloc& a) {
  Value v(rapidjson::kObjectType);
  Put(&v, "name", Str(p.name, a), a);
  Put(&v, "in", Str(p.in, a), a);
  if (!p.description.empty()) {
    Put(&v, "description", Str(p.description, a), a);
  }
  if (p.required) Put(&v, "required", Value(true), a);
  if (d == Dialect::kSwagger2) {
    if (p.in == "body") {
      Schema ref;
      ref.ref = p.body_ref;
      Put(&v, "schema", ToJsonValue(ref, d, a), a);
    } else {
      Put(&v, "type", Str(p.type, a), a);
      if (p.unique_items) Put(&v, "uniqueItems", Value(true), a);
    }
  } else {
    Value schema(rapidjson::kObjectType);
    Put(&schema, "type", Str(p.type, a), a);
    if (p.unique_items) Put(&schema, "uniqueItems", Value(true), a);
    Put(&v, "schema", std::move(schema), a);
  }
  return v;
}

Value GvkJson(const objects::KindInfo& k, Alloc& a) {
  Value v(rapidjson::kObjectType);
  Put(&v, "group", Str(k.gv.group, a), a);
  Put(&v, "kind", Str(k.kind, a), a);
  Put(&v, "version", Str(k.gv.version, a), a);
  return v;
}

Value OperationJson(const Operation& op, Dialect d, Alloc& a) {
  Value v(rapidjson::kObjectType);
  Put(&v, "description", Str(op.description, a), a);
  if (d == Dialect::kSwagger2) {
    Put(&v, "consumes",
        StrArray(
            op.consumes.empty() ? std::vector<std::string>{"*/*"} : op.consumes,
            a),
        a);
    Put(&v, "produces", StrArray(kProduces, a), a);
    Put(&v, "schemes", StrArray({"https"}, a), a);
  }
  Put(&v, "operationId", Str(op.id, a), a);
  Value params(rapidjson::kArrayType);
  const Param* body = nullptr;
  for (const Param& p : op.params) {
    if (p.in == "body" && d == Dialect::kOpenApi3) {
      body = &p;
      continue;
    }
    params.PushBack(ParamJson(p, d, a), a);
  }
  if (!params.Empty()) Put(&v, "parameters", std::move(params), a);
  if (body != nullptr) {
    Value content(rapidjson::kObjectType);
    for (const std::string& ct :
         op.consumes.empty() ? std::vector<std::string>{"*/*"} : op.consumes) {
      Schema ref;
      ref.ref = body->body_ref;
      Value media(rapidjson::kObjectType);
      Put(&media, "schema", ToJsonValue(ref, d, a), a);
      Put(&content, ct, std::move(media), a);
    }
    Value rb(rapidjson::kObjectType);
    Put(&rb, "content", std::move(content), a);
    Put(&rb, "required", Value(true), a);
    Put(&v, "requestBody", std::move(rb), a);
  }
  Value responses(rapidjson::kObjectType);
  std::vector<std::pair<std::string, std::string>> codes = {{"200", "OK"}};
  if (op.created) codes.push_back({"201", "Created"});
  for (const auto& [code, text] : codes) {
    Schema ref;
    ref.ref = op.response_ref;
    Value r(rapidjson::kObjectType);
    Put(&r, "description", Str(text, a), a);
    if (d == Dialect::kSwagger2) {
      Put(&r, "schema", ToJsonValue(ref, d, a), a);
    } else {
      Value content(rapidjson::kObjectType);
      for (const std::string& ct : kProduces) {
        Value media(rapidjson::kObjectType);
        Put(&media, "schema", ToJsonValue(ref, d, a), a);
        Put(&content, ct, std::move(media), a);
      }
      Put(&r, "content", std::move(content), a);
    }
    Put(&responses, code, std::move(r), a);
  }
  Value unauthorized(rapidjson::kObjectType);
  Put(&unauthorized, "description", Str("Unauthorized", a), a);
  Put(&responses, "401", std::move(unauthorized), a);
  Put(&v, "responses", std::move(responses), a);
  Put(&v, "x-kubernetes-action", Str(op.action, a), a);
  Put(&v, "x-kubernetes-group-version-kind", GvkJson(*op.kind, a), a);
  return v;
}

Value PathJson(const PathEntry& e, Dialect d, Alloc& a) {
  Value v(rapidjson::kObjectType);
  for (const Operation& op : e.ops) {
    Put(&v, op.method, OperationJson(op, d, a), a);
  }
  Value params(rapidjson::kArrayType);
  for (const Param& p : e.params) params.PushBack(ParamJson(p, d, a), a);
  Put(&v, "parameters", std::move(params), a);
  return v;
}

Value Info(Alloc& a) {
  Value info(rapidjson::kObjectType);
  Put(&info, "title", Str("Kubernetes", a), a);
  Put(&info, "version", Str("v1.32.4", a), a);
  return info;
}

// Resources of one group-version (or all with gv == nullptr), by name.
std::vector<const objects::ResourceInfo*> Resources(
    const objects::Scheme& scheme, const objects::GroupVersion* gv) {
  std::vector<const objects::ResourceInfo*> out;
  for (const auto& r : scheme.resources()) {
    if (gv == nullptr || r->gv == *gv) out.push_back(r.get());
  }
  std::sort(out.begin(), out.end(), [](const auto* x, const auto* y) {
    return BasePath(*x) < BasePath(*y);
  });
  return out;
}

Value Definitions(const SchemaModel& model, const std::set<std::string>& names,
                  Dialect d, Alloc& a) {
  Value defs(rapidjson::kObjectType);
  for (const std::string& name : names) {
    Put(&defs, name, ToJsonValue(*model.Find(name), d, a), a);
  }
  return defs;
}

std::string V3Document(const objects::Scheme& scheme, const SchemaModel& model,
                       const objects::GroupVersion& gv) {
  rapidjson::Document doc(rapidjson::kObjectType);
  Alloc& a = doc.GetAllocator();
  Put(&doc, "openapi", Str("3.0.0", a), a);
  Put(&doc, "info", Info(a), a);
  Value paths(rapidjson::kObjectType);
  std::vector<std::string> roots = {std::string(kMeta) + "Status",
                                    std::string(kMeta) + "DeleteOptions",
                                    std::string(kMeta) + "Patch"};
  for (const objects::ResourceInfo* r : Resources(scheme, &gv)) {
    for (const PathEntry& e : ResourcePaths(*r)) {
      for (const Operation& op : e.ops) {
        roots.push_back(op.response_ref);
        roots.push_back(Def(*op.kind));
      }
      Put(&paths, e.path, PathJson(e, Dialect::kOpenApi3, a), a);
    }
  }
  // Kinds of the group-version without a resource (review kinds, Scale...).
  for (const auto& k : scheme.kinds()) {
    if (k->gv == gv && model.Find(Def(*k)) != nullptr) {
      roots.push_back(Def(*k));
    }
  }
  Put(&doc, "paths", std::move(paths), a);
  Value components(rapidjson::kObjectType);
  Put(&components, "schemas",
      Definitions(model, model.Closure(roots), Dialect::kOpenApi3, a), a);
  Put(&doc, "components", std::move(components), a);
  return Serialize(doc);
}

}  // namespace

std::string OpenApiDocuments::Etag(std::string_view data) {
  unsigned char digest[SHA512_DIGEST_LENGTH];
  SHA512(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         digest);
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(2 * SHA512_DIGEST_LENGTH);
  for (unsigned char c : digest) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

OpenApiDocuments::OpenApiDocuments(const objects::Scheme& scheme,
                                   const SchemaModel& model) {
  {
    rapidjson::Document doc(rapidjson::kObjectType);
    Alloc& a = doc.GetAllocator();
    Put(&doc, "swagger", Str("2.0", a), a);
    Put(&doc, "info", Info(a), a);
    Value paths(rapidjson::kObjectType);
    for (const objects::ResourceInfo* r : Resources(scheme, nullptr)) {
      for (const PathEntry& e : ResourcePaths(*r)) {
        Put(&paths, e.path, PathJson(e, Dialect::kSwagger2, a), a);
      }
    }
    Put(&doc, "paths", std::move(paths), a);
    std::set<std::string> all;
    for (const auto& [name, schema] : model.definitions()) all.insert(name);
    Put(&doc, "definitions", Definitions(model, all, Dialect::kSwagger2, a), a);
    v2_.json = Serialize(doc);
    v2_.etag = Etag(v2_.json);
    v2_proto_ = SwaggerJsonToProto(doc).SerializeAsString();
    v2_proto_etag_ = Etag(v2_proto_);
  }
  rapidjson::Document index(rapidjson::kObjectType);
  Alloc& a = index.GetAllocator();
  Value paths(rapidjson::kObjectType);
  for (const objects::GroupVersion& gv : scheme.GroupVersions()) {
    const std::string path = gv.group.empty()
                                 ? "api/" + gv.version
                                 : "apis/" + gv.group + "/" + gv.version;
    ServedDocument doc;
    doc.json = V3Document(scheme, model, gv);
    doc.etag = Etag(doc.json);
    Value entry(rapidjson::kObjectType);
    Put(&entry, "serverRelativeURL",
        Str("/openapi/v3/" + path + "?hash=" + doc.etag, a), a);
    Put(&paths, path, std::move(entry), a);
    v3_[path] = std::move(doc);
  }
  index.AddMember("paths", paths, a);
  v3_index_.json = Serialize(index);
  v3_index_.etag = Etag(v3_index_.json);
}

const ServedDocument* OpenApiDocuments::V3(std::string_view path) const {
  auto it = v3_.find(path);
  return it == v3_.end() ? nullptr : &it->second;
}

}  // namespace kplane::openapi
