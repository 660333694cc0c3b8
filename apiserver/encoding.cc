#include "apiserver/encoding.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/logging.h"
#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "objects/serializer.h"
#include "objects/unstructured.h"
#include "objects/yaml.h"

namespace kplane::apiserver {

namespace {

// The apiVersion/kind an object is written with: a custom resource's is the
// served version's (CRD conversion None), any other's its message's.
objects::TypeMeta ObjectTypeMeta(const RenderOptions& o,
                                 const google::protobuf::Message& obj) {
  if (objects::IsUnstructured(obj) && o.resource != nullptr) {
    return o.resource->kind->type_meta();
  }
  return TypeMetaOf(obj);
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(JsonWriter* w, std::string_view s) {
  w->String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
void KeyStr(JsonWriter* w, std::string_view k) {
  w->Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}

std::string MetaApiVersion(const Negotiated& n) {
  return "meta.k8s.io/" + n.meta_version;
}

// {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
//  "metadata":{…}}
void WritePartial(JsonWriter* w, const Negotiated& n,
                  const google::protobuf::Message& obj) {
  w->StartObject();
  KeyStr(w, "kind");
  Str(w, "PartialObjectMetadata");
  KeyStr(w, "apiVersion");
  Str(w, MetaApiVersion(n));
  KeyStr(w, "metadata");
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  if (meta != nullptr) {
    objects::WriteJson(*meta, w);
  } else {
    w->StartObject();
    w->EndObject();
  }
  w->EndObject();
}

objects::metav1::PartialObjectMetadata PartialOf(
    const google::protobuf::Message& obj) {
  objects::metav1::PartialObjectMetadata partial;
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  if (meta != nullptr) {
    *partial.mutable_metadata() = *meta;
  } else {
    partial.mutable_metadata();
  }
  return partial;
}

// The enveloped protobuf of obj's PartialObjectMetadata.
std::string PartialProto(const Negotiated& n,
                         const google::protobuf::Message& obj) {
  return objects::EncodeEnvelope(PartialOf(obj),
                                 {MetaApiVersion(n), "PartialObjectMetadata"});
}

void WriteColumns(JsonWriter* w, const Strategy& strategy) {
  w->StartArray();
  for (const TableColumn& c : strategy.Columns()) {
    w->StartObject();
    KeyStr(w, "name");
    Str(w, c.name);
    KeyStr(w, "type");
    Str(w, c.type);
    KeyStr(w, "format");
    Str(w, c.format);
    KeyStr(w, "description");
    Str(w, c.description);
    KeyStr(w, "priority");
    w->Int(c.priority);
    w->EndObject();
  }
  w->EndArray();
}

void WriteRow(JsonWriter* w, const RenderOptions& o,
              const google::protobuf::Message& obj) {
  w->StartObject();
  KeyStr(w, "cells");
  w->StartArray();
  for (const TableCell& cell : o.strategy->Row(obj, o.now)) {
    if (!cell.json.empty()) {
      w->RawValue(cell.json.data(), cell.json.size(), rapidjson::kNullType);
    } else if (cell.is_int) {
      w->Int64(cell.num);
    } else {
      Str(w, cell.str);
    }
  }
  w->EndArray();
  if (o.include_object == "Object") {
    KeyStr(w, "object");
    objects::WriteJson(obj, w, ObjectTypeMeta(o, obj));
  } else if (o.include_object != "None") {
    KeyStr(w, "object");
    WritePartial(w, o.negotiated, obj);
  }
  w->EndObject();
}

// A Table of `objects`, with column definitions unless `columns` is false
// (later watch events: null).
template <typename Objects>
std::string TableJson(const RenderOptions& o,
                      const objects::metav1::ListMeta& list_meta,
                      const Objects& objects, bool columns) {
  CHECK(o.strategy != nullptr);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  KeyStr(&w, "kind");
  Str(&w, "Table");
  KeyStr(&w, "apiVersion");
  Str(&w, MetaApiVersion(o.negotiated));
  KeyStr(&w, "metadata");
  objects::WriteJson(list_meta, &w);
  KeyStr(&w, "columnDefinitions");
  if (columns) {
    WriteColumns(&w, *o.strategy);
  } else {
    w.Null();
  }
  KeyStr(&w, "rows");
  w.StartArray();
  for (const google::protobuf::Message* obj : objects) WriteRow(&w, o, *obj);
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::unique_ptr<google::protobuf::Message> BuildList(
    const RenderOptions& o, const std::vector<ObjectPtr>& items,
    const objects::metav1::ListMeta& meta) {
  CHECK(o.resource != nullptr && o.resource->list_kind != nullptr);
  std::unique_ptr<google::protobuf::Message> list =
      o.resource->list_kind->New();
  *objects::MutableListMeta(list.get()) = meta;
  for (const ObjectPtr& item : items) {
    objects::AddListItem(list.get())->CopyFrom(*item);
  }
  return list;
}

// A JSON list, item by item into one string reserved from the first item's
// size: a 10,000-pod list is ~17 MB, and growing one buffer geometrically
// would copy it several times over (and fault in fresh pages each time).
std::string ItemsJson(const RenderOptions& o,
                      const std::vector<ObjectPtr>& items,
                      const objects::metav1::ListMeta& meta) {
  const bool partial = o.negotiated.shape == ResponseShape::kMetadata;
  auto item_json = [&](const google::protobuf::Message& item) {
    return ListItemJson(o, item);
  };
  std::string out = "{\"kind\":\"";
  out += partial ? "PartialObjectMetadataList" : o.resource->list_kind->kind;
  out += "\",\"apiVersion\":\"";
  out += partial ? MetaApiVersion(o.negotiated)
                 : o.resource->list_kind->gv.ApiVersion();
  out += "\",\"metadata\":";
  out += objects::EncodeJson(meta);
  out += ",\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    std::string one = item_json(*items[i]);
    if (i == 0) {
      out.reserve(out.size() + (one.size() + 1) * items.size() * 5 / 4 + 16);
    } else {
      out.push_back(',');
    }
    out += one;
  }
  out += "]}";
  return out;
}

std::string ListBody(const RenderOptions& o,
                     const std::vector<ObjectPtr>& items,
                     const objects::metav1::ListMeta& meta) {
  if (o.negotiated.shape == ResponseShape::kTable) {
    std::vector<const google::protobuf::Message*> ptrs;
    ptrs.reserve(items.size());
    for (const ObjectPtr& p : items) ptrs.push_back(p.get());
    return TableJson(o, meta, ptrs, true);
  }
  switch (o.negotiated.media) {
    case objects::MediaType::kJson:
      return ItemsJson(o, items, meta);
    case objects::MediaType::kYaml: {
      std::unique_ptr<google::protobuf::Message> list =
          BuildList(o, items, meta);
      return objects::EncodeYaml(*list, o.resource->list_kind->type_meta());
    }
    case objects::MediaType::kProtobuf: {
      if (o.negotiated.shape == ResponseShape::kMetadata) {
        objects::metav1::PartialObjectMetadataList list;
        *list.mutable_metadata() = meta;
        list.mutable_items()->Reserve(static_cast<int>(items.size()));
        for (const ObjectPtr& item : items) {
          *list.add_items() = PartialOf(*item);
        }
        return objects::EncodeEnvelope(
            list, {MetaApiVersion(o.negotiated), "PartialObjectMetadataList"});
      }
      std::unique_ptr<google::protobuf::Message> list =
          BuildList(o, items, meta);
      return objects::EncodeEnvelope(*list, o.resource->list_kind->type_meta());
    }
  }
  return ItemsJson(o, items, meta);
}

// The object a BOOKMARK carries: the kind with only metadata.resourceVersion
// (and the initial-events-end annotation when it ends the initial events).
std::unique_ptr<google::protobuf::Message> BookmarkObject(
    const RenderOptions& o, const WatchEvent& e) {
  std::unique_ptr<google::protobuf::Message> obj = o.resource->kind->New();
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj.get());
  meta->set_resourceversion(Versioner::ToResourceVersion(e.revision));
  if (e.initial_events_end) {
    (*meta->mutable_annotations())["k8s.io/initial-events-end"] = "true";
  }
  return obj;
}

void AppendFrame(std::string* out, std::string_view payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  out->push_back(static_cast<char>((n >> 24) & 0xff));
  out->push_back(static_cast<char>((n >> 16) & 0xff));
  out->push_back(static_cast<char>((n >> 8) & 0xff));
  out->push_back(static_cast<char>(n & 0xff));
  out->append(payload);
}

std::string ProtoWatchFrame(std::string_view type, std::string raw_object) {
  objects::metav1::WatchEvent ev;
  ev.set_type(std::string(type));
  ev.mutable_object()->set_raw(std::move(raw_object));
  std::string payload = objects::SerializeDeterministic(ev);
  std::string out;
  AppendFrame(&out, payload);
  return out;
}

}  // namespace

objects::TypeMeta TypeMetaOf(const google::protobuf::Message& obj) {
  const objects::KindInfo* k =
      objects::Scheme::Default().KindFor(obj.GetDescriptor());
  return k != nullptr ? k->type_meta() : objects::TypeMeta{};
}

std::string RenderObject(const RenderOptions& o,
                         const google::protobuf::Message& obj) {
  switch (o.negotiated.shape) {
    case ResponseShape::kTable: {
      objects::metav1::ListMeta meta;
      const objects::metav1::ObjectMeta* om = objects::GetObjectMeta(obj);
      if (om != nullptr) meta.set_resourceversion(om->resourceversion());
      std::vector<const google::protobuf::Message*> one = {&obj};
      return TableJson(o, meta, one, true);
    }
    case ResponseShape::kMetadata: {
      if (o.negotiated.media == objects::MediaType::kProtobuf) {
        return PartialProto(o.negotiated, obj);
      }
      rapidjson::StringBuffer buf;
      JsonWriter w(buf);
      WritePartial(&w, o.negotiated, obj);
      return std::string(buf.GetString(), buf.GetSize());
    }
    case ResponseShape::kObject:
      break;
  }
  return objects::EncodeBody(o.negotiated.media, obj, ObjectTypeMeta(o, obj));
}

objects::metav1::ListMeta ListMetaOf(const ListResult& list) {
  objects::metav1::ListMeta m;
  m.set_resourceversion(Versioner::ToResourceVersion(list.revision));
  if (!list.continue_token.empty()) m.set_continue_(list.continue_token);
  if (list.remaining_items.has_value() && !list.continue_token.empty()) {
    m.set_remainingitemcount(*list.remaining_items);
  }
  return m;
}

void WriteListItemJson(const RenderOptions& o,
                       const google::protobuf::Message& item,
                       rapidjson::Writer<rapidjson::StringBuffer>* w) {
  if (o.negotiated.shape != ResponseShape::kMetadata) {
    if (objects::IsUnstructured(item)) {
      objects::WriteJson(item, w, ObjectTypeMeta(o, item));
    } else {
      objects::WriteJson(item, w);
    }
    return;
  }
  WritePartial(w, o.negotiated, item);
}

std::string ListItemJson(const RenderOptions& o,
                         const google::protobuf::Message& item) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  WriteListItemJson(o, item, &w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::string RenderList(const RenderOptions& o, const ListResult& list) {
  return ListBody(o, list.items, ListMetaOf(list));
}

std::string RenderItems(const RenderOptions& o,
                        const std::vector<ObjectPtr>& items, int64_t revision) {
  objects::metav1::ListMeta meta;
  meta.set_resourceversion(Versioner::ToResourceVersion(revision));
  RenderOptions plain = o;
  if (plain.negotiated.shape == ResponseShape::kTable) {
    plain.negotiated.shape = ResponseShape::kObject;
  }
  return ListBody(plain, items, meta);
}

std::string RenderError(objects::MediaType media, const ApiError& error) {
  objects::metav1::Status s = error.ToStatus();
  return objects::EncodeBody(media, s, {"v1", "Status"});
}

std::string RenderSuccessStatus(objects::MediaType media, std::string_view name,
                                std::string_view group, std::string_view kind,
                                std::string_view uid) {
  objects::metav1::Status s;
  s.mutable_metadata();
  s.set_status("Success");
  auto* d = s.mutable_details();
  d->set_name(std::string(name));
  if (!group.empty()) d->set_group(std::string(group));
  d->set_kind(std::string(kind));
  if (!uid.empty()) d->set_uid(std::string(uid));
  return objects::EncodeBody(media, s, {"v1", "Status"});
}

std::string WatchContentType(const Negotiated& n) {
  if (n.media == objects::MediaType::kProtobuf) {
    return "application/vnd.kubernetes.protobuf;stream=watch";
  }
  return "application/json";
}

std::string WatchFormatKey(const RenderOptions& o, bool first) {
  const Negotiated& n = o.negotiated;
  if (n.media == objects::MediaType::kProtobuf) {
    return n.shape == ResponseShape::kMetadata ? "proto/meta/" + n.meta_version
                                               : "proto";
  }
  switch (n.shape) {
    case ResponseShape::kObject:
      return "json";
    case ResponseShape::kMetadata:
      return "meta/" + n.meta_version;
    case ResponseShape::kTable:
      return "table/" + n.meta_version + "/" +
             (o.include_object.empty() ? "Metadata" : o.include_object) +
             (first ? "/first" : "");
  }
  return "json";
}

std::string RenderWatchEvent(const RenderOptions& o, const WatchEvent& e,
                             bool first) {
  const std::string_view type = WatchEventTypeName(e.type);
  const bool bookmark = e.type == WatchEventType::kBookmark;
  std::unique_ptr<google::protobuf::Message> bookmark_obj;
  const google::protobuf::Message* obj = e.object.get();
  if (bookmark || obj == nullptr) {
    bookmark_obj = BookmarkObject(o, e);
    obj = bookmark_obj.get();
  }
  const objects::TypeMeta tm = o.resource->kind->type_meta();

  if (o.negotiated.media == objects::MediaType::kProtobuf) {
    if (o.negotiated.shape == ResponseShape::kMetadata) {
      return ProtoWatchFrame(type, PartialProto(o.negotiated, *obj));
    }
    return ProtoWatchFrame(type, objects::EncodeEnvelope(*obj, tm));
  }

  if (o.negotiated.shape == ResponseShape::kTable && !bookmark) {
    objects::metav1::ListMeta meta;
    meta.set_resourceversion(Versioner::ToResourceVersion(e.revision));
    std::vector<const google::protobuf::Message*> one = {obj};
    std::string out = "{\"type\":\"";
    out.append(type);
    out.append("\",\"object\":");
    out.append(TableJson(o, meta, one, first));
    out.append("}\n");
    return out;
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  KeyStr(&w, "type");
  Str(&w, type);
  KeyStr(&w, "object");
  if (o.negotiated.shape == ResponseShape::kObject && !bookmark &&
      e.object_json != nullptr && e.object_json->size() >= 2 &&
      e.object_json->front() == '{' && !objects::IsUnstructured(*obj)) {
    // The cache's bytes of this version, with kind and apiVersion put in
    // front as objects::WriteJson(*obj, &w, tm) writes them: {"kind":…,
    // "apiVersion":… then the object's own members.
    const std::string& json = *e.object_json;
    w.StartObject();
    if (!tm.kind.empty()) {
      KeyStr(&w, "kind");
      Str(&w, tm.kind);
    }
    if (!tm.api_version.empty()) {
      KeyStr(&w, "apiVersion");
      Str(&w, tm.api_version);
    }
    std::string out(buf.GetString(), buf.GetSize());
    const bool has_type = out.back() != '{';
    const bool has_members = json.size() > 2;  // not "{}"
    if (has_type && has_members) out.push_back(',');
    out.append(json, 1, std::string::npos);  // members and the closing }
    out.append("}\n");
    return out;
  }
  if (o.negotiated.shape == ResponseShape::kMetadata) {
    WritePartial(&w, o.negotiated, *obj);
  } else {
    objects::WriteJson(*obj, &w, tm);
  }
  w.EndObject();
  std::string out(buf.GetString(), buf.GetSize());
  out.push_back('\n');
  return out;
}

std::string RenderWatchError(const RenderOptions& o, const ApiError& error) {
  objects::metav1::Status s = error.ToStatus();
  if (o.negotiated.media == objects::MediaType::kProtobuf) {
    return ProtoWatchFrame("ERROR",
                           objects::EncodeEnvelope(s, {"v1", "Status"}));
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  KeyStr(&w, "type");
  Str(&w, "ERROR");
  KeyStr(&w, "object");
  objects::WriteJson(s, &w, {"v1", "Status"});
  w.EndObject();
  std::string out(buf.GetString(), buf.GetSize());
  out.push_back('\n');
  return out;
}

}  // namespace kplane::apiserver
