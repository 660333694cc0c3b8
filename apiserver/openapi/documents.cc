#include "apiserver/openapi/documents.h"

#include <openssl/sha.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "apiserver/openapi/apiextensions_definitions.h"
#include "apiserver/openapi/openapi_v2.pb.h"
#include "apiserver/openapi/v2_proto.h"
#include "base/strings.h"
#include "objects/unstructured.h"

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

// Custom kinds (CustomResourceDefinitions') are Unstructured.
bool IsCustom(const objects::KindInfo& k) {
  return k.descriptor == objects::Unstructured::descriptor() ||
         k.descriptor == objects::UnstructuredList::descriptor();
}

std::string Def(const objects::KindInfo& k) {
  // apiextensions.k8s.io/v1 (the CRD type) is stored as Unstructured too,
  // but published under its Go package's name, as kube-apiserver does.
  if (IsCustom(k) && k.gv.group == "apiextensions.k8s.io" &&
      k.gv.version == "v1") {
    return kApiExtensionsV1 + k.kind;
  }
  if (IsCustom(k)) return CustomDefinitionName(k.gv, k.kind);
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
          {"patch", "patch" + id, "patch",
           "partially update " + what + " of the " + kind, &k, std::move(p),
           // Custom resources take no strategic merge patch (kubectl
           // reads this list to pick its patch type).
           IsCustom(k)
               ? std::vector<std::string>{"application/json-patch+json",
                                          "application/merge-patch+json",
                                          "application/apply-patch+yaml"}
               : std::vector<
                     std::string>{"application/json-patch+json",
                                  "application/merge-patch+json",
                                  "application/strategic-merge-patch+json",
                                  "application/apply-patch+yaml"},
           Def(k), true});
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
    // pods/log answers text and pods/exec a WebSocket, not their kind: left
    // out rather than described as returning a Pod.
    if (sub.name == "log" || sub.name == "exec") continue;
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

// Resources of one group-version (or all with gv == nullptr), the
// Scheme's and `extra`, by path.
std::vector<const objects::ResourceInfo*> Resources(
    const objects::Scheme& scheme,
    const std::vector<const objects::ResourceInfo*>& extra,
    const objects::GroupVersion* gv) {
  std::vector<const objects::ResourceInfo*> out;
  for (const auto& r : scheme.resources()) {
    if (gv == nullptr || r->gv == *gv) out.push_back(r.get());
  }
  for (const objects::ResourceInfo* r : extra) {
    if (gv == nullptr || r->gv == *gv) out.push_back(r);
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

std::string V3Document(const objects::Scheme& scheme,
                       const std::vector<const objects::ResourceInfo*>& extra,
                       const SchemaModel& model,
                       const objects::GroupVersion& gv) {
  rapidjson::Document doc(rapidjson::kObjectType);
  Alloc& a = doc.GetAllocator();
  Put(&doc, "openapi", Str("3.0.0", a), a);
  Put(&doc, "info", Info(a), a);
  Value paths(rapidjson::kObjectType);
  std::vector<std::string> roots = {std::string(kMeta) + "Status",
                                    std::string(kMeta) + "DeleteOptions",
                                    std::string(kMeta) + "Patch"};
  for (const objects::ResourceInfo* r : Resources(scheme, extra, &gv)) {
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

// --- Custom resources (apiextensions-apiserver's controller/openapi) ---

constexpr char kApiVersionDescription[] =
    "APIVersion defines the versioned schema of this representation of an "
    "object. Servers should convert recognized schemas to the latest "
    "internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources";
constexpr char kKindDescription[] =
    "Kind is a string value representing the REST resource this object "
    "represents. Servers may infer this from the endpoint the client submits "
    "requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";
constexpr char kMetadataDescription[] =
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";
constexpr char kListMetadataDescription[] =
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";

bool IsTrue(const Value& s, const char* key) {
  auto it = s.FindMember(key);
  return it != s.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

void RemoveMember(Value* s, const char* key) {
  if (s->IsObject()) s->RemoveMember(key);
}

// Sets (replacing) property `name` of object schema `s`.
void SetProperty(Value* s, std::string_view name, Value v, Alloc& a) {
  if (!s->HasMember("properties") || !(*s)["properties"].IsObject()) {
    RemoveMember(s, "properties");
    Put(s, "properties", Value(rapidjson::kObjectType), a);
  }
  Value& props = (*s)["properties"];
  const Value key(rapidjson::StringRef(
      name.data(), static_cast<rapidjson::SizeType>(name.size())));
  props.RemoveMember(key);
  Put(&props, name, std::move(v), a);
}

Value StringProperty(const char* description, Alloc& a) {
  Schema p;
  p.type = "string";
  p.description = description;
  return ToJsonValue(p, Dialect::kSwagger2, a);
}

Value RefProperty(std::string ref, const char* description, Dialect d,
                  Alloc& a) {
  Schema p;
  p.ref = std::move(ref);
  p.description = description;
  return ToJsonValue(p, d, a);
}

void AddRequired(Value* s, const char* name, Alloc& a) {
  if (!s->HasMember("required") || !(*s)["required"].IsArray()) {
    RemoveMember(s, "required");
    Put(s, "required", Value(rapidjson::kArrayType), a);
  }
  Value& req = (*s)["required"];
  for (const Value& r : req.GetArray()) {
    if (r.IsString() && std::string_view(r.GetString()) == name) return;
  }
  req.PushBack(rapidjson::StringRef(name), a);
}

// Visits every schema node of `s` below it: properties, items,
// additionalProperties (kube's structural schemas nest nothing else).
template <typename F>
void ForEachChild(Value* s, const F& f) {
  if (!s->IsObject()) return;
  if (auto it = s->FindMember("properties");
      it != s->MemberEnd() && it->value.IsObject()) {
    for (auto& p : it->value.GetObject()) f(&p.value);
  }
  if (auto it = s->FindMember("items"); it != s->MemberEnd()) {
    if (it->value.IsArray()) {
      for (Value& i : it->value.GetArray()) f(&i);
    } else {
      f(&it->value);
    }
  }
  if (auto it = s->FindMember("additionalProperties");
      it != s->MemberEnd() && it->value.IsObject()) {
    f(&it->value);
  }
}

// structural.Unfold: an int-or-string node states its two types (v3).
void UnfoldIntOrString(Value* s, Alloc& a) {
  if (!s->IsObject()) return;
  if (IsTrue(*s, "x-kubernetes-int-or-string") && !s->HasMember("anyOf") &&
      !s->HasMember("allOf")) {
    Value any_of(rapidjson::kArrayType);
    for (const char* t : {"integer", "string"}) {
      Value alt(rapidjson::kObjectType);
      Put(&alt, "type", Str(t, a), a);
      any_of.PushBack(alt, a);
    }
    Put(s, "anyOf", std::move(any_of), a);
  }
  ForEachChild(s, [&](Value* c) { UnfoldIntOrString(c, a); });
}

// openapi/v2.ToStructuralOpenAPIV2: what Swagger 2.0 and kubectl's v2
// validation cannot take.
void ToOpenApiV2(Value* s) {
  if (!s->IsObject()) return;
  for (const char* junctor : {"allOf", "oneOf", "anyOf", "not"}) {
    RemoveMember(s, junctor);
  }
  // A nullable property is not required (null is how it is left out).
  if (auto req = s->FindMember("required");
      req != s->MemberEnd() && req->value.IsArray()) {
    auto props = s->FindMember("properties");
    auto add = s->FindMember("additionalProperties");
    const bool nullable_values = add != s->MemberEnd() &&
                                 add->value.IsObject() &&
                                 IsTrue(add->value, "nullable");
    Value& list = req->value;
    for (rapidjson::SizeType i = list.Size(); i-- > 0;) {
      bool drop = nullable_values;
      if (!drop && list[i].IsString() && props != s->MemberEnd() &&
          props->value.IsObject()) {
        auto p = props->value.FindMember(list[i]);
        drop = p != props->value.MemberEnd() && p->value.IsObject() &&
               IsTrue(p->value, "nullable");
      }
      if (drop) list.Erase(list.Begin() + i);
    }
    if (list.Empty()) s->RemoveMember("required");
  }
  if (IsTrue(*s, "nullable")) {
    // Untyped: kubectl breaks on items or properties of an untyped value.
    RemoveMember(s, "type");
    RemoveMember(s, "items");
    RemoveMember(s, "properties");
  }
  RemoveMember(s, "nullable");  // not Swagger 2.0
  if (IsTrue(*s, "x-kubernetes-preserve-unknown-fields")) {
    RemoveMember(s, "items");
    RemoveMember(s, "properties");
  }
  if (auto t = s->FindMember("type");
      t != s->MemberEnd() && t->value == "array" && !s->HasMember("items")) {
    s->RemoveMember("type");
  }
  ForEachChild(s, [](Value* c) { ToOpenApiV2(c); });
}

// addEmbeddedProperties: an x-kubernetes-embedded-resource object is an
// object of its own (apiVersion, kind, metadata).
void AddEmbeddedProperties(Value* s, Dialect d, Alloc& a) {
  if (!s->IsObject()) return;
  ForEachChild(s, [&](Value* c) { AddEmbeddedProperties(c, d, a); });
  if (d == Dialect::kSwagger2 &&
      IsTrue(*s, "x-kubernetes-preserve-unknown-fields")) {
    return;  // kubectl would refuse the unknown fields
  }
  if (!IsTrue(*s, "x-kubernetes-embedded-resource")) return;
  SetProperty(s, "apiVersion", StringProperty(kApiVersionDescription, a), a);
  SetProperty(s, "kind", StringProperty(kKindDescription, a), a);
  SetProperty(s, "metadata",
              RefProperty(std::string(kMeta) + "ObjectMeta",
                          kMetadataDescription, d, a),
              a);
  AddRequired(s, "kind", a);
  AddRequired(s, "apiVersion", a);
}

Value CustomGvk(const objects::GroupVersion& gv, std::string_view kind,
                Alloc& a) {
  Value one(rapidjson::kObjectType);
  Put(&one, "group", Str(gv.group, a), a);
  Put(&one, "kind", Str(kind, a), a);
  Put(&one, "version", Str(gv.version, a), a);
  Value list(rapidjson::kArrayType);
  list.PushBack(one, a);
  return list;
}

// builder.buildKubeNative: the definition of a custom kind.
Value CustomKindSchema(const CustomResourceApi& api, Dialect d, Alloc& a) {
  const objects::KindInfo& kind = *api.resource->kind;
  Value s(rapidjson::kObjectType);
  if (!api.schema_json.empty()) {
    rapidjson::Document parsed;
    parsed.Parse(api.schema_json.data(), api.schema_json.size());
    if (!parsed.HasParseError() && parsed.IsObject()) s.CopyFrom(parsed, a);
  }
  const bool has_schema = s.IsObject() && s.MemberCount() > 0;
  if (!has_schema || (d == Dialect::kSwagger2 &&
                      IsTrue(s, "x-kubernetes-preserve-unknown-fields"))) {
    // No properties at all: kubectl would take any other field for an
    // unknown one.
    s.SetObject();
    Put(&s, "type", Str("object", a), a);
  } else {
    UnfoldIntOrString(&s, a);
    if (d == Dialect::kSwagger2) ToOpenApiV2(&s);
    SetProperty(&s, "metadata",
                RefProperty(std::string(kMeta) + "ObjectMeta",
                            kMetadataDescription, d, a),
                a);
    SetProperty(&s, "apiVersion", StringProperty(kApiVersionDescription, a), a);
    SetProperty(&s, "kind", StringProperty(kKindDescription, a), a);
    AddEmbeddedProperties(&s, d, a);
  }
  RemoveMember(&s, "x-kubernetes-group-version-kind");
  Put(&s, "x-kubernetes-group-version-kind", CustomGvk(kind.gv, kind.kind, a),
      a);
  return s;
}

// builder.buildListSchema.
Value CustomListSchema(const CustomResourceApi& api, Dialect d, Alloc& a) {
  const objects::KindInfo& kind = *api.resource->kind;
  const objects::KindInfo& list_kind = *api.resource->list_kind;
  Value s(rapidjson::kObjectType);
  Put(&s, "description", Str(list_kind.kind + " is a list of " + kind.kind, a),
      a);
  Put(&s, "type", Str("object", a), a);
  Put(&s, "required", StrArray({"items"}, a), a);
  Value props(rapidjson::kObjectType);
  Put(&props, "apiVersion", StringProperty(kApiVersionDescription, a), a);
  Value items(rapidjson::kObjectType);
  Put(&items, "description",
      Str("List of " + api.resource->resource +
              ". More info: https://git.k8s.io/community/contributors/devel/"
              "sig-architecture/api-conventions.md",
          a),
      a);
  Put(&items, "type", Str("array", a), a);
  Schema item;
  item.ref = Def(kind);
  Put(&items, "items", ToJsonValue(item, d, a), a);
  Put(&props, "items", std::move(items), a);
  Put(&props, "kind", StringProperty(kKindDescription, a), a);
  Put(&props, "metadata",
      RefProperty(std::string(kMeta) + "ListMeta", kListMetadataDescription, d,
                  a),
      a);
  Put(&s, "properties", std::move(props), a);
  Put(&s, "x-kubernetes-group-version-kind",
      CustomGvk(list_kind.gv, list_kind.kind, a), a);
  return s;
}

// The paths and definitions `custom` adds, in dialect `d`; `roots` gets
// the built-in definitions they reference.
void CustomPathsAndDefinitions(
    const std::vector<const CustomResourceApi*>& apis, Dialect d, Value* paths,
    Value* defs, std::vector<std::string>* roots, Alloc& a) {
  for (const CustomResourceApi* api : apis) {
    for (const PathEntry& e : ResourcePaths(*api->resource)) {
      for (const Operation& op : e.ops) {
        roots->push_back(op.response_ref);
        for (const Param& p : op.params) {
          if (!p.body_ref.empty()) roots->push_back(p.body_ref);
        }
      }
      Put(paths, e.path, PathJson(e, d, a), a);
    }
    Put(defs, Def(*api->resource->kind), CustomKindSchema(*api, d, a), a);
    Put(defs, Def(*api->resource->list_kind), CustomListSchema(*api, d, a), a);
  }
  roots->push_back(std::string(kMeta) + "ObjectMeta");
  roots->push_back(std::string(kMeta) + "ListMeta");
}

// `v`'s members as JSON text without the braces ("" when none).
std::string MembersJson(const Value& v) {
  if (v.MemberCount() == 0) return "";
  std::string json = Serialize(v);
  return json.substr(1, json.size() - 2);
}

std::string GroupVersionPath(const objects::GroupVersion& gv) {
  return gv.group.empty() ? "api/" + gv.version
                          : "apis/" + gv.group + "/" + gv.version;
}

}  // namespace

std::string CustomDefinitionName(const objects::GroupVersion& gv,
                                 std::string_view kind) {
  std::vector<std::string> parts = StrSplit(gv.group, '.');
  std::reverse(parts.begin(), parts.end());
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += ".";
    out += p;
  }
  return out + "." + gv.version + "." + std::string(kind);
}

OpenApiDocuments::OpenApiDocuments(
    std::shared_ptr<const OpenApiDocuments> builtin, const SchemaModel& model,
    const std::vector<CustomResourceApi>& custom)
    : builtin_(std::move(builtin)) {
  // /openapi/v2: the built-in document with the custom paths and
  // definitions spliced in; its protobuf likewise (concatenated protobuf
  // messages merge: the repeated paths and definitions append).
  {
    rapidjson::Document doc(rapidjson::kObjectType);
    Alloc& a = doc.GetAllocator();
    Value paths(rapidjson::kObjectType), defs(rapidjson::kObjectType);
    std::vector<const CustomResourceApi*> all;
    for (const CustomResourceApi& api : custom) all.push_back(&api);
    std::vector<std::string> roots;  // all built-in in v2 already
    CustomPathsAndDefinitions(all, Dialect::kSwagger2, &paths, &defs, &roots,
                              a);
    const std::string& base = builtin_->v2_.json;
    const size_t pe = builtin_->v2_paths_end_;
    const size_t de = builtin_->v2_definitions_end_;
    auto sep = [&](size_t end, const std::string& members) {
      if (members.empty()) return std::string();
      return (base[end - 1] == '{' ? "" : ",") + members;
    };
    v2_.json = base.substr(0, pe) + sep(pe, MembersJson(paths)) +
               base.substr(pe, de - pe) + sep(de, MembersJson(defs)) +
               base.substr(de);
    v2_paths_end_ = v2_.json.size();  // not spliced into again
    v2_definitions_end_ = v2_.json.size();
    v2_.etag = Etag(v2_.json);
    Put(&doc, "paths", std::move(paths), a);
    Put(&doc, "definitions", std::move(defs), a);
    v2_proto_ =
        builtin_->v2_proto_ + SwaggerJsonToProto(doc).SerializeAsString();
    v2_proto_etag_ = Etag(v2_proto_);
  }
  // /openapi/v3: a document per custom group-version; the built-in ones are
  // builtin_'s.
  std::map<std::string, std::vector<const CustomResourceApi*>> by_gv;
  for (const CustomResourceApi& api : custom) {
    const std::string path = GroupVersionPath(api.resource->gv);
    by_gv[path].push_back(&api);
  }
  for (auto& [path, apis] : by_gv) {
    std::sort(apis.begin(), apis.end(), [](const auto* x, const auto* y) {
      return BasePath(*x->resource) < BasePath(*y->resource);
    });
    rapidjson::Document doc(rapidjson::kObjectType);
    Alloc& a = doc.GetAllocator();
    Put(&doc, "openapi", Str("3.0.0", a), a);
    Put(&doc, "info", Info(a), a);
    Value paths(rapidjson::kObjectType), defs(rapidjson::kObjectType);
    std::vector<std::string> roots;
    CustomPathsAndDefinitions(apis, Dialect::kOpenApi3, &paths, &defs, &roots,
                              a);
    for (const std::string& name : model.Closure(roots)) {
      Put(&defs, name, ToJsonValue(*model.Find(name), Dialect::kOpenApi3, a),
          a);
    }
    Put(&doc, "paths", std::move(paths), a);
    Value components(rapidjson::kObjectType);
    Put(&components, "schemas", std::move(defs), a);
    Put(&doc, "components", std::move(components), a);
    ServedDocument served;
    served.json = Serialize(doc);
    served.etag = Etag(served.json);
    v3_[path] = std::move(served);
  }
  rapidjson::Document index;
  index.Parse(builtin_->v3_index_.json.data(), builtin_->v3_index_.json.size());
  Alloc& a = index.GetAllocator();
  Value& entries = index["paths"];
  for (const auto& [path, doc] : v3_) {
    entries.RemoveMember(Value(rapidjson::StringRef(path.data(), path.size())));
    Value entry(rapidjson::kObjectType);
    Put(&entry, "serverRelativeURL",
        Str("/openapi/v3/" + path + "?hash=" + doc.etag, a), a);
    Put(&entries, path, std::move(entry), a);
  }
  v3_index_.json = Serialize(index);
  v3_index_.etag = Etag(v3_index_.json);
}

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

OpenApiDocuments::OpenApiDocuments(
    const objects::Scheme& scheme, const SchemaModel& model,
    const std::vector<const objects::ResourceInfo*>& extra) {
  {
    rapidjson::Document doc(rapidjson::kObjectType);
    Alloc& a = doc.GetAllocator();
    Put(&doc, "swagger", Str("2.0", a), a);
    Put(&doc, "info", Info(a), a);
    Value paths(rapidjson::kObjectType);
    for (const objects::ResourceInfo* r : Resources(scheme, extra, nullptr)) {
      for (const PathEntry& e : ResourcePaths(*r)) {
        Put(&paths, e.path, PathJson(e, Dialect::kSwagger2, a), a);
      }
    }
    std::set<std::string> all;
    for (const auto& [name, schema] : model.definitions()) all.insert(name);
    Value defs = Definitions(model, all, Dialect::kSwagger2, a);
    // Serialize(doc), written in parts to note where custom resources'
    // paths and definitions go.
    v2_.json = R"({"swagger":"2.0","info":)" + Serialize(doc["info"]) +
               R"(,"paths":)" + Serialize(paths);
    v2_paths_end_ = v2_.json.size() - 1;
    v2_.json += R"(,"definitions":)" + Serialize(defs);
    v2_definitions_end_ = v2_.json.size() - 1;
    v2_.json += "}";
    Put(&doc, "paths", std::move(paths), a);
    Put(&doc, "definitions", std::move(defs), a);
    v2_.etag = Etag(v2_.json);
    v2_proto_ = SwaggerJsonToProto(doc).SerializeAsString();
    v2_proto_etag_ = Etag(v2_proto_);
  }
  rapidjson::Document index(rapidjson::kObjectType);
  Alloc& a = index.GetAllocator();
  Value paths(rapidjson::kObjectType);
  std::vector<objects::GroupVersion> gvs = scheme.GroupVersions();
  for (const objects::ResourceInfo* r : extra) {
    if (std::find(gvs.begin(), gvs.end(), r->gv) == gvs.end()) {
      gvs.push_back(r->gv);
    }
  }
  for (const objects::GroupVersion& gv : gvs) {
    const std::string path = gv.group.empty()
                                 ? "api/" + gv.version
                                 : "apis/" + gv.group + "/" + gv.version;
    ServedDocument doc;
    doc.json = V3Document(scheme, extra, model, gv);
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
  if (it != v3_.end()) return &it->second;
  return builtin_ != nullptr ? builtin_->V3(path) : nullptr;
}

}  // namespace kplane::openapi
