#include "apiserver/openapi/schema_model.h"

#include <algorithm>

#include "base/strings.h"
#include "objects/field_table.h"
#include "objects/patch/patch_meta.h"

namespace kplane::openapi {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using objects::internal::FieldEntry;
using objects::internal::MessageTable;
using objects::internal::Special;
using objects::internal::TableFor;

// The schema of a message with a JSON form of its own (Time, Quantity...),
// as kube-openapi defines it for the Go type.
Schema SpecialSchema(Special special) {
  Schema s;
  switch (special) {
    case Special::kTime:
    case Special::kMicroTime:
      s.type = "string";
      s.format = "date-time";
      break;
    case Special::kDuration:
      s.type = "string";
      break;
    case Special::kIntOrString:
      s.type = "string";
      s.format = "int-or-string";
      s.one_of_types = {"integer", "string"};
      s.int_or_string = true;
      break;
    case Special::kQuantity:
      s.type = "string";
      s.one_of_types = {"string", "number"};
      break;
    case Special::kRawJson:
      s.type = "object";
      break;
    case Special::kNone:
      break;
  }
  return s;
}

// The schema of one value (an element for repeated fields, the value for
// maps) of `f`.
Schema ValueSchema(const FieldEntry& f) {
  Schema s;
  switch (f.value->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_UINT32:
      s.type = "integer";
      s.format = "int32";
      break;
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT64:
      s.type = "integer";
      s.format = "int64";
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      s.type = "number";
      s.format = "double";
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      s.type = "boolean";
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      s.type = "string";
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      s.type = "string";
      if (f.value->type() == FieldDescriptor::TYPE_BYTES) s.format = "byte";
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      s.ref = SchemaModel::DefinitionName(f.value->message_type());
      break;
  }
  return s;
}

// Go writes the member even when empty (no omitempty) and it is not a
// struct: kube's openapi-gen marks such members required. Structs, Time
// included, are never required: `creationTimestamp` is written (as null)
// on every object, yet optional.
bool IsRequired(const FieldEntry& f) {
  if (f.emit != objects::internal::Emit::kAlways) return false;
  return f.repeated || f.field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE;
}

Schema FieldSchema(const FieldEntry& f, const patch::PatchMeta* meta) {
  Schema s;
  if (f.is_map) {
    s.type = "object";
    s.additional_properties = std::make_shared<Schema>(ValueSchema(f));
  } else if (f.repeated) {
    s.type = "array";
    s.items = std::make_shared<Schema>(ValueSchema(f));
  } else {
    s = ValueSchema(f);
  }
  if (meta != nullptr && !meta->empty()) {
    s.patch_strategy = StrJoin(meta->strategies, ",");
    s.patch_merge_key = meta->merge_key;
    if (f.repeated && !f.is_map && meta->IsMerge()) {
      if (!meta->merge_key.empty()) {
        s.list_type = "map";
        s.list_map_keys = meta->MapKeys();
      } else if (f.value->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
        s.list_type = "set";
      }
    }
  }
  return s;
}

void AddProperty(Schema* parent, const MessageTable& owner,
                 const FieldEntry& f) {
  const patch::PatchMeta* meta = patch::KubernetesPatchMetaTable().Find(
      owner.descriptor->full_name(), f.name);
  parent->properties.push_back({std::string(f.name), FieldSchema(f, meta)});
  if (IsRequired(f)) parent->required.emplace_back(f.name);
}

void CollectRefs(const Schema& s, std::vector<std::string>* out) {
  if (!s.ref.empty()) out->push_back(s.ref);
  if (s.items) CollectRefs(*s.items, out);
  if (s.additional_properties) CollectRefs(*s.additional_properties, out);
  for (const auto& [name, p] : s.properties) CollectRefs(p, out);
}

using Value = rapidjson::Value;
using Alloc = rapidjson::Document::AllocatorType;

Value Str(std::string_view s, Alloc& a) {
  return Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}
void Put(Value* obj, std::string_view key, Value v, Alloc& a) {
  obj->AddMember(Str(key, a), v, a);
}

}  // namespace

const Schema* Schema::Property(std::string_view name) const {
  for (const auto& [n, s] : properties) {
    if (n == name) return &s;
  }
  return nullptr;
}

std::string SchemaModel::DefinitionName(const Descriptor* d) {
  // Go package paths reversed the Java way, as kube-openapi names them.
  const std::string& full = d->full_name();
  if (full.rfind("k8s.io.", 0) == 0) return "io.k8s." + full.substr(7);
  return full;
}

const SchemaModel& SchemaModel::Default() {
  static const SchemaModel* model = new SchemaModel(objects::Scheme::Default());
  return *model;
}

SchemaModel::SchemaModel(const objects::Scheme& scheme) {
  std::map<const Descriptor*, std::vector<GroupVersionKind>> gvks;
  for (const auto& k : scheme.kinds()) {
    // v1 List is a client-side kind: kube publishes no schema for it
    // (kubectl validates its items one by one).
    if (k->gv.group.empty() && k->kind == "List") continue;
    gvks[k->descriptor].push_back({k->gv.group, k->gv.version, k->kind});
    AddMessage(k->descriptor);
  }
  for (auto& [d, list] : gvks) {
    definitions_[DefinitionName(d)].gvks = std::move(list);
  }
  // The body of every PATCH (any of the four patch content types).
  Schema patch;
  patch.type = "object";
  definitions_["io.k8s.apimachinery.pkg.apis.meta.v1.Patch"] = patch;
}

SchemaModel::SchemaModel(const objects::Scheme& scheme,
                         std::map<std::string, Schema, std::less<>> extra)
    : SchemaModel(scheme) {
  definitions_.merge(extra);
}

void SchemaModel::AddMessage(const Descriptor* d) {
  const std::string name = DefinitionName(d);
  if (definitions_.count(name) != 0) return;
  const MessageTable* table = TableFor(d);
  if (table->special != Special::kNone) {
    definitions_[name] = SpecialSchema(table->special);
    return;
  }
  Schema& s = definitions_[name];  // placed first: recursion stops here
  Schema built;
  built.type = "object";
  if (table->type_meta) {
    Schema str;
    str.type = "string";
    built.properties.push_back({"apiVersion", str});
    built.properties.push_back({"kind", str});
  }
  std::vector<const Descriptor*> referenced;
  for (const FieldEntry& f : table->fields) {
    if (f.is_inline) {
      for (const FieldEntry& inner : f.table->fields) {
        AddProperty(&built, *f.table, inner);
        if (inner.table != nullptr)
          referenced.push_back(inner.table->descriptor);
      }
      continue;
    }
    AddProperty(&built, *table, f);
    if (f.table != nullptr) referenced.push_back(f.table->descriptor);
  }
  s = std::move(built);
  for (const Descriptor* r : referenced) AddMessage(r);
}

const Schema* SchemaModel::Find(std::string_view name) const {
  auto it = definitions_.find(name);
  return it == definitions_.end() ? nullptr : &it->second;
}

std::set<std::string> SchemaModel::Closure(
    const std::vector<std::string>& roots) const {
  std::set<std::string> seen;
  std::vector<std::string> todo = roots;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    const Schema* s = Find(name);
    if (s == nullptr || !seen.insert(name).second) continue;
    CollectRefs(*s, &todo);
  }
  return seen;
}

std::string RefPath(std::string_view name, Dialect dialect) {
  std::string out = dialect == Dialect::kSwagger2 ? "#/definitions/"
                                                  : "#/components/schemas/";
  out += name;
  return out;
}

Value ToJsonValue(const Schema& s, Dialect dialect, Alloc& a) {
  Value v(rapidjson::kObjectType);
  if (!s.ref.empty()) {
    Value ref(rapidjson::kObjectType);
    Put(&ref, "$ref", Str(RefPath(s.ref, dialect), a), a);
    const bool siblings = !s.description.empty() || !s.patch_strategy.empty();
    if (dialect == Dialect::kOpenApi3 && siblings) {
      // OpenAPI 3.0 ignores the siblings of a $ref: kube-openapi wraps it.
      Value all_of(rapidjson::kArrayType);
      all_of.PushBack(ref, a);
      Put(&v, "allOf", std::move(all_of), a);
    } else {
      v = std::move(ref);
    }
  }
  if (!s.description.empty()) {
    Put(&v, "description", Str(s.description, a), a);
  }
  if (dialect == Dialect::kOpenApi3 && !s.one_of_types.empty()) {
    Value one_of(rapidjson::kArrayType);
    for (const std::string& t : s.one_of_types) {
      Value alt(rapidjson::kObjectType);
      Put(&alt, "type", Str(t, a), a);
      one_of.PushBack(alt, a);
    }
    Put(&v, "oneOf", std::move(one_of), a);
  } else {
    if (!s.type.empty()) Put(&v, "type", Str(s.type, a), a);
    if (!s.format.empty()) Put(&v, "format", Str(s.format, a), a);
  }
  if (s.items) {
    Put(&v, "items", ToJsonValue(*s.items, dialect, a), a);
  }
  if (s.additional_properties) {
    Put(&v, "additionalProperties",
        ToJsonValue(*s.additional_properties, dialect, a), a);
  }
  if (!s.properties.empty()) {
    Value props(rapidjson::kObjectType);
    for (const auto& [name, p] : s.properties) {
      Put(&props, name, ToJsonValue(p, dialect, a), a);
    }
    Put(&v, "properties", std::move(props), a);
  }
  if (!s.required.empty()) {
    Value req(rapidjson::kArrayType);
    for (const std::string& r : s.required) req.PushBack(Str(r, a), a);
    Put(&v, "required", std::move(req), a);
  }
  if (!s.gvks.empty()) {
    Value list(rapidjson::kArrayType);
    for (const GroupVersionKind& g : s.gvks) {
      Value gvk(rapidjson::kObjectType);
      Put(&gvk, "group", Str(g.group, a), a);
      Put(&gvk, "kind", Str(g.kind, a), a);
      Put(&gvk, "version", Str(g.version, a), a);
      list.PushBack(gvk, a);
    }
    Put(&v, "x-kubernetes-group-version-kind", std::move(list), a);
  }
  if (s.int_or_string) {
    Put(&v, "x-kubernetes-int-or-string", Value(true), a);
  }
  if (!s.list_type.empty()) {
    if (!s.list_map_keys.empty()) {
      Value keys(rapidjson::kArrayType);
      for (const std::string& k : s.list_map_keys) keys.PushBack(Str(k, a), a);
      Put(&v, "x-kubernetes-list-map-keys", std::move(keys), a);
    }
    Put(&v, "x-kubernetes-list-type", Str(s.list_type, a), a);
  }
  if (!s.patch_merge_key.empty()) {
    Put(&v, "x-kubernetes-patch-merge-key", Str(s.patch_merge_key, a), a);
  }
  if (!s.patch_strategy.empty()) {
    Put(&v, "x-kubernetes-patch-strategy", Str(s.patch_strategy, a), a);
  }
  return v;
}

}  // namespace kplane::openapi
