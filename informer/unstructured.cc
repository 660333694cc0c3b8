#include "informer/unstructured.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <utility>

#include "base/json.h"
#include "objects/codec.h"

namespace kplane::informer {

namespace {

using rapidjson::Value;

std::string_view StringOf(const Value& v) {
  return std::string_view(v.GetString(), v.GetStringLength());
}

const Value* Member(const Value& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(Value(rapidjson::StringRef(
      key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

Value* Member(Value& obj, std::string_view key) {
  return const_cast<Value*>(Member(static_cast<const Value&>(obj), key));
}

Value MakeString(std::string_view s,
                 rapidjson::Document::AllocatorType& alloc) {
  return Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

// Compact JSON without recursion (base/json.h's Accept).
std::string Compact(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buf);
  json::Accept(v, writer);
  return std::string(buf.GetString(), buf.GetSize());
}

StatusOr<rapidjson::Document> ParseObject(std::string_view text) {
  rapidjson::Document doc;
  json::Outcome r = json::ParseDom(text, &doc);
  if (!r.ok()) {
    return InvalidArgumentError("invalid JSON object: " + r.Message() +
                                " at offset " + std::to_string(r.offset));
  }
  if (!doc.IsObject()) return InvalidArgumentError("JSON is not an object");
  return doc;
}

// The metadata member decoded as ObjectMeta, into `out`.
Status DecodeMetadata(const Value& object, UnstructuredObject* out) {
  const Value* meta = Member(object, "metadata");
  if (meta == nullptr || meta->IsNull()) return Status::Ok();
  StatusOr<objects::DecodeResult> r =
      objects::DecodeJsonValue(*meta, out->mutable_metadata());
  if (!r.ok()) return r.status().Annotate("metadata");
  return Status::Ok();
}

}  // namespace

Unstructured::Unstructured() { doc_.SetObject(); }

Unstructured::Unstructured(const Unstructured& other) {
  doc_.CopyFrom(other.doc_, doc_.GetAllocator());
}

Unstructured& Unstructured::operator=(const Unstructured& other) {
  if (this != &other) {
    rapidjson::Document copy;
    copy.CopyFrom(other.doc_, copy.GetAllocator());
    doc_ = std::move(copy);
  }
  return *this;
}

StatusOr<Unstructured> Unstructured::Parse(std::string_view json) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(json));
  return Unstructured(std::move(doc));
}

StatusOr<Unstructured> Unstructured::FromValue(const rapidjson::Value& value) {
  if (!value.IsObject()) return InvalidArgumentError("JSON is not an object");
  rapidjson::Document doc;
  doc.CopyFrom(value, doc.GetAllocator());
  return Unstructured(std::move(doc));
}

StatusOr<Unstructured> Unstructured::FromObject(
    const google::protobuf::Message& obj) {
  const auto* u =
      google::protobuf::DynamicCastToGenerated<UnstructuredObject>(&obj);
  if (u == nullptr) {
    return InvalidArgumentError(obj.GetDescriptor()->full_name() +
                                " is not an unstructured object");
  }
  return Parse(u->json());
}

std::string Unstructured::ApiVersion() const {
  return NestedString({"apiVersion"}).value_or("");
}
std::string Unstructured::Kind() const {
  return NestedString({"kind"}).value_or("");
}
std::string Unstructured::MetadataString(std::string_view field) const {
  const Value* meta = Member(doc_, "metadata");
  const Value* v = meta != nullptr ? Member(*meta, field) : nullptr;
  return v != nullptr && v->IsString() ? std::string(StringOf(*v)) : "";
}
std::string Unstructured::Name() const { return MetadataString("name"); }
std::string Unstructured::Namespace() const {
  return MetadataString("namespace");
}
std::string Unstructured::ResourceVersion() const {
  return MetadataString("resourceVersion");
}
std::string Unstructured::Uid() const { return MetadataString("uid"); }

void Unstructured::SetApiVersion(std::string_view v) {
  SetNestedString({"apiVersion"}, v);
}
void Unstructured::SetKind(std::string_view v) { SetNestedString({"kind"}, v); }
void Unstructured::SetName(std::string_view v) {
  SetNestedString({"metadata", "name"}, v);
}
void Unstructured::SetNamespace(std::string_view v) {
  SetNestedString({"metadata", "namespace"}, v);
}
void Unstructured::SetResourceVersion(std::string_view v) {
  SetNestedString({"metadata", "resourceVersion"}, v);
}

std::map<std::string, std::string> Unstructured::Labels() const {
  return NestedStringMap({"metadata", "labels"})
      .value_or(std::map<std::string, std::string>{});
}
std::map<std::string, std::string> Unstructured::Annotations() const {
  return NestedStringMap({"metadata", "annotations"})
      .value_or(std::map<std::string, std::string>{});
}

const rapidjson::Value* Unstructured::Nested(FieldPath path) const {
  const Value* v = &doc_;
  for (std::string_view p : path) {
    v = Member(*v, p);
    if (v == nullptr) return nullptr;
  }
  return v;
}

std::optional<std::string> Unstructured::NestedString(FieldPath path) const {
  const Value* v = Nested(path);
  if (v == nullptr || !v->IsString()) return std::nullopt;
  return std::string(StringOf(*v));
}

std::optional<int64_t> Unstructured::NestedInt64(FieldPath path) const {
  const Value* v = Nested(path);
  if (v == nullptr || !v->IsInt64()) return std::nullopt;
  return v->GetInt64();
}

std::optional<bool> Unstructured::NestedBool(FieldPath path) const {
  const Value* v = Nested(path);
  if (v == nullptr || !v->IsBool()) return std::nullopt;
  return v->GetBool();
}

std::optional<std::map<std::string, std::string>> Unstructured::NestedStringMap(
    FieldPath path) const {
  const Value* v = Nested(path);
  if (v == nullptr || !v->IsObject()) return std::nullopt;
  std::map<std::string, std::string> out;
  for (const auto& m : v->GetObject()) {
    if (!m.value.IsString()) return std::nullopt;
    out.emplace(StringOf(m.name), StringOf(m.value));
  }
  return out;
}

void Unstructured::SetNested(FieldPath path, rapidjson::Value& value) {
  if (path.size() == 0) return;
  auto& alloc = doc_.GetAllocator();
  Value* v = &doc_;
  size_t i = 0;
  for (std::string_view p : path) {
    const bool last = ++i == path.size();
    Value* next = Member(*v, p);
    if (last) {
      if (next != nullptr) {
        *next = std::move(value);
      } else {
        v->AddMember(MakeString(p, alloc), std::move(value), alloc);
      }
      return;
    }
    if (next == nullptr) {
      v->AddMember(MakeString(p, alloc), Value(rapidjson::kObjectType), alloc);
      next = &(v->MemberEnd() - 1)->value;
    } else if (!next->IsObject()) {
      next->SetObject();
    }
    v = next;
  }
}

void Unstructured::SetNestedString(FieldPath path, std::string_view s) {
  Value v = MakeString(s, doc_.GetAllocator());
  SetNested(path, v);
}

void Unstructured::SetNestedInt64(FieldPath path, int64_t n) {
  Value v(static_cast<int64_t>(n));
  SetNested(path, v);
}

void Unstructured::SetNestedStringMap(
    FieldPath path, const std::map<std::string, std::string>& m) {
  auto& alloc = doc_.GetAllocator();
  Value obj(rapidjson::kObjectType);
  for (const auto& [k, val] : m) {
    obj.AddMember(MakeString(k, alloc), MakeString(val, alloc), alloc);
  }
  SetNested(path, obj);
}

bool Unstructured::RemoveNested(FieldPath path) {
  if (path.size() == 0) return false;
  Value* v = &doc_;
  size_t i = 0;
  for (std::string_view p : path) {
    if (!v->IsObject()) return false;
    if (++i == path.size()) {
      auto it = v->FindMember(MakeString(p, doc_.GetAllocator()));
      if (it == v->MemberEnd()) return false;
      v->EraseMember(it);  // keeps the other members' order
      return true;
    }
    v = Member(*v, p);
    if (v == nullptr) return false;
  }
  return false;
}

std::string Unstructured::ToJson() const { return Compact(doc_); }

StatusOr<UnstructuredList> ParseUnstructuredList(std::string_view json) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(json));
  UnstructuredList list;
  auto str = [](const Value* v) {
    return v != nullptr && v->IsString() ? std::string(StringOf(*v)) : "";
  };
  list.api_version = str(Member(doc, "apiVersion"));
  list.kind = str(Member(doc, "kind"));
  if (const Value* meta = Member(doc, "metadata")) {
    list.resource_version = str(Member(*meta, "resourceVersion"));
    list.continue_token = str(Member(*meta, "continue"));
    const Value* remaining = Member(*meta, "remainingItemCount");
    if (remaining != nullptr && remaining->IsInt64()) {
      list.remaining_item_count = remaining->GetInt64();
    }
  }
  const Value* items = Member(doc, "items");
  if (items == nullptr || items->IsNull()) return list;
  if (!items->IsArray()) return InvalidArgumentError("items is not an array");
  list.items.reserve(items->Size());
  for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
    StatusOr<Unstructured> item = Unstructured::FromValue((*items)[i]);
    if (!item.ok()) {
      return item.status().Annotate("items[" + std::to_string(i) + "]");
    }
    list.items.push_back(std::move(*item));
  }
  return list;
}

StatusOr<std::shared_ptr<const UnstructuredObject>> NewUnstructuredObject(
    std::string json) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(json));
  auto out = std::make_shared<UnstructuredObject>();
  RETURN_IF_ERROR(DecodeMetadata(doc, out.get()));
  out->set_json(std::move(json));
  return std::shared_ptr<const UnstructuredObject>(std::move(out));
}

StatusOr<std::shared_ptr<const UnstructuredObject>> NewUnstructuredObject(
    const rapidjson::Value& object) {
  if (!object.IsObject()) return InvalidArgumentError("JSON is not an object");
  auto out = std::make_shared<UnstructuredObject>();
  RETURN_IF_ERROR(DecodeMetadata(object, out.get()));
  out->set_json(Compact(object));
  return std::shared_ptr<const UnstructuredObject>(std::move(out));
}

objects::KindInfo MakeUnstructuredKind(objects::GroupVersion gv,
                                       std::string kind) {
  objects::KindInfo k;
  k.gv = std::move(gv);
  k.kind = std::move(kind);
  k.descriptor = UnstructuredObject::descriptor();
  k.prototype = &UnstructuredObject::default_instance();
  return k;
}

bool IsUnstructuredKind(const objects::KindInfo& kind) {
  return kind.descriptor == UnstructuredObject::descriptor();
}

}  // namespace kplane::informer
