#include "apiserver/patching.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>

#include "base/deep_stack.h"
#include "base/json.h"
#include "base/strings.h"
#include "objects/codec.h"
#include "objects/field_table.h"
#include "objects/meta.h"
#include "objects/patch/apply.h"
#include "objects/patch/json_patch.h"
#include "objects/patch/json_value.h"
#include "objects/patch/merge_patch.h"
#include "objects/patch/patch_meta.h"
#include "objects/patch/strategic.h"
#include "objects/time.h"
#include "objects/unstructured.h"
#include "objects/yaml.h"

namespace kplane::apiserver {

namespace {

patch::PatchSchema SchemaOf(const objects::KindInfo& kind) {
  return patch::PatchSchema(kind.descriptor,
                            &patch::KubernetesPatchMetaTable());
}

ApiError FromPatchStatus(const Status& s) {
  if (s.Is(StatusCode::kFailedPrecondition)) {
    ApiError e;
    e.code = 422;
    e.reason = "Invalid";
    e.message = s.message();
    return e;
  }
  if (s.Is(StatusCode::kConflict)) {
    ApiError e;
    e.code = 409;
    e.reason = "Conflict";
    e.message = s.message();
    return e;
  }
  if (s.Is(StatusCode::kTooLarge) || s.Is(StatusCode::kResourceExhausted)) {
    return ApiError::FromStatus(s);  // 413, 429
  }
  return ApiError::BadRequest(s.message());
}

int DepthOf(const rapidjson::Value& v) { return json::Measure(v).depth; }

// Runs `work` where its recursion fits: the patch algorithms recurse once
// per level of the documents, and a body or stored object may be 10,000
// levels deep (base/deep_stack.h).
template <typename T>
ApiResult<T> RunForDepth(int depth, const std::function<ApiResult<T>()>& work) {
  std::optional<ApiResult<T>> out;
  Status ran = kplane::RunForDepth(depth, [&] { out.emplace(work()); });
  if (!ran.ok()) return FromPatchStatus(ran);
  return std::move(*out);
}

// Decodes a patched DOM into a new object of `kind`, checking apiVersion
// and kind and reporting unknown fields, after `body_findings` (what strict
// decoding found in the patch body itself), as kube-apiserver lists them.
ApiResult<MutableMessage> DecodePatched(
    const rapidjson::Value& dom, const objects::KindInfo& kind,
    FieldValidation validation, std::vector<std::string>* warnings,
    std::vector<std::string> body_findings = {}) {
  MutableMessage obj = kind.New();
  StatusOr<objects::DecodeResult> r = objects::DecodeJsonValue(dom, obj.get());
  if (!r.ok()) return ApiError::BadRequest(r.status().message());
  const objects::TypeMeta& tm = r->type_meta;
  if ((!tm.api_version.empty() && tm.api_version != kind.gv.ApiVersion()) ||
      (!tm.kind.empty() && tm.kind != kind.kind)) {
    return ApiError::BadRequest("the API version in the data (" +
                                tm.api_version +
                                ") does not match the expected API version (" +
                                kind.gv.ApiVersion() + ")");
  }
  std::vector<std::string> findings = std::move(body_findings);
  if (!r->strict_ok()) {
    for (std::string& w : r->Warnings()) findings.push_back(std::move(w));
  }
  if (findings.empty()) return obj;
  if (validation == FieldValidation::kStrict) {
    // DecodeResult::StrictErrorMessage's form, over both lists.
    return ApiError::BadRequest("strict decoding error: " +
                                StrJoin(findings, ", "));
  }
  if (validation == FieldValidation::kWarn && warnings != nullptr) {
    for (std::string& w : findings) warnings->push_back(std::move(w));
  }
  return obj;
}

}  // namespace

ApiResult<MutableMessage> ApplyPatch(
    const google::protobuf::Message& current, const objects::KindInfo& kind,
    PatchType type, std::string_view patch_body, FieldValidation validation,
    std::vector<std::string>* warnings, const patch::PatchLimits& limits) {
  rapidjson::Document patch_doc;
  Status parsed = patch::ParseJson(patch_body, &patch_doc);
  if (!parsed.ok()) return ApiError::BadRequest(parsed.message());
  rapidjson::Document doc;
  auto& alloc = doc.GetAllocator();
  rapidjson::Value target =
      objects::ToJsonValue(current, alloc, kind.type_meta());
  const int depth = std::max(DepthOf(target), DepthOf(patch_doc));
  return RunForDepth<MutableMessage>(depth, [&]() -> ApiResult<MutableMessage> {
    // kube-apiserver decodes the body strictly too, under Warn and Strict:
    // a JSON patch into its []jsonPatchOp, the others into
    // map[string]interface{} (members given twice; the last counts).
    std::vector<std::string> body_findings;
    if (validation != FieldValidation::kIgnore) {
      body_findings = type == PatchType::kJsonPatch
                          ? patch::JsonPatchStrictErrors(patch_doc)
                          : patch::DuplicateFieldErrors(patch_doc);
    }
    switch (type) {
      case PatchType::kJsonPatch: {
        if (!patch_doc.IsArray()) {
          return ApiError::BadRequest(
              "json: cannot unmarshal object into Go value of type "
              "jsonpatch.Patch");
        }
        // Operation count, size and depth are checked as it applies.
        Status s = patch::ApplyJsonPatch(target, patch_doc, alloc, limits);
        if (!s.ok()) return FromPatchStatus(s);
        break;
      }
      case PatchType::kMergePatch:
        patch::ApplyMergePatch(target, patch_doc, alloc);
        break;
      case PatchType::kStrategicMergePatch: {
        if (!patch_doc.IsObject()) {
          return ApiError::BadRequest(
              "json: cannot unmarshal array into Go value of type "
              "map[string]interface {}");
        }
        Status s = patch::StrategicMergePatch(target, patch_doc, SchemaOf(kind),
                                              alloc);
        if (!s.ok()) return FromPatchStatus(s);
        break;
      }
      case PatchType::kApply:
        return ApiError::Internal("apply patch through ApplyPatch");
    }
    if (!target.IsObject()) {
      return ApiError::BadRequest("the patch does not result in an object");
    }
    // A merge grows the object by at most the patch, but the result must
    // fit the same bounds as any body.
    Status bounded = patch::CheckBounds(target, limits, "the patched object");
    if (!bounded.ok()) return FromPatchStatus(bounded);
    return DecodePatched(target, kind, validation, warnings,
                         std::move(body_findings));
  });
}

ApiResult<MutableMessage> ServerSideApplyObject(
    const google::protobuf::Message* live, const objects::KindInfo& kind,
    std::string_view body, const ApplyParams& params,
    std::vector<std::string>* warnings, const patch::PatchLimits& limits) {
  rapidjson::Document doc;
  auto& alloc = doc.GetAllocator();
  // The one YAML converter (aliases, depth and expansion bounded).
  StatusOr<rapidjson::Document> parsed = objects::ParseJsonOrYaml(body);
  if (!parsed.ok()) return ApiError::BadRequest(parsed.status().message());
  rapidjson::Document& applied = *parsed;
  if (!applied.IsObject()) {
    return ApiError::BadRequest("apply patch must be a JSON or YAML object");
  }
  const rapidjson::Value* av = patch::FindMember(applied, "apiVersion");
  const rapidjson::Value* k = patch::FindMember(applied, "kind");
  if (av == nullptr || !av->IsString() || k == nullptr || !k->IsString()) {
    return ApiError::BadRequest(
        "apply patches must specify apiVersion and kind");
  }
  if (av->GetString() != kind.gv.ApiVersion() || k->GetString() != kind.kind) {
    return ApiError::BadRequest("the API version in the data (" +
                                std::string(av->GetString()) +
                                ") does not match the expected API version (" +
                                kind.gv.ApiVersion() + ")");
  }
  rapidjson::Value live_dom;
  if (live != nullptr)
    live_dom = objects::ToJsonValue(*live, alloc, kind.type_meta());
  const int depth = std::max(DepthOf(live_dom), DepthOf(applied));
  return RunForDepth<MutableMessage>(depth, [&]() -> ApiResult<MutableMessage> {
    // Type errors and unknown fields of the configuration itself.
    {
      MutableMessage scratch = kind.New();
      StatusOr<objects::DecodeResult> r =
          objects::DecodeJsonValue(applied, scratch.get());
      if (!r.ok()) return ApiError::BadRequest(r.status().message());
      if (!r->strict_ok()) {
        if (params.validation == FieldValidation::kStrict) {
          return ApiError::BadRequest(r->StrictErrorMessage());
        }
        if (params.validation == FieldValidation::kWarn &&
            warnings != nullptr) {
          for (std::string& w : r->Warnings())
            warnings->push_back(std::move(w));
        }
      }
    }
    patch::ApplyOptions opts;
    opts.manager = params.manager;
    opts.api_version = kind.gv.ApiVersion();
    opts.time = params.time;
    opts.force = params.force;
    opts.schema = SchemaOf(kind);
    opts.ignored = params.ignored;
    opts.subresource = params.subresource;
    rapidjson::Value result;
    std::vector<patch::FieldConflict> conflicts;
    Status s =
        patch::ServerSideApply(live != nullptr ? &live_dom : nullptr, applied,
                               opts, &result, alloc, &conflicts);
    if (s.Is(StatusCode::kConflict)) {
      ApiError e;
      e.code = 409;
      e.reason = "Conflict";
      e.message = s.message();
      for (const patch::FieldConflict& c : conflicts) {
        e.causes.push_back(
            {"FieldManagerConflict", "conflict with " + c.manager, c.field});
      }
      return e;
    }
    if (!s.ok()) return FromPatchStatus(s);
    Status bounded = patch::CheckBounds(result, limits, "the applied object");
    if (!bounded.ok()) return FromPatchStatus(bounded);
    // Unknown fields were reported above; the merged object decodes quietly.
    return DecodePatched(result, kind, FieldValidation::kIgnore, nullptr);
  });
}

namespace {

bool SameManagedFields(const objects::metav1::ObjectMeta& a,
                       const objects::metav1::ObjectMeta& b) {
  if (a.managedfields_size() != b.managedfields_size()) return false;
  for (int i = 0; i < a.managedfields_size(); ++i) {
    if (a.managedfields(i).SerializeAsString() !=
        b.managedfields(i).SerializeAsString()) {
      return false;
    }
  }
  return true;
}

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using objects::internal::FieldEntry;
using objects::internal::MessageTable;
using objects::internal::Special;
using FieldPath = std::vector<std::string>;

bool IsZeroScalar(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->GetInt32(m, f) == 0;
    case FieldDescriptor::CPPTYPE_INT64:
      return r->GetInt64(m, f) == 0;
    case FieldDescriptor::CPPTYPE_UINT32:
      return r->GetUInt32(m, f) == 0;
    case FieldDescriptor::CPPTYPE_UINT64:
      return r->GetUInt64(m, f) == 0;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r->GetDouble(m, f) == 0;
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r->GetFloat(m, f) == 0;
    case FieldDescriptor::CPPTYPE_BOOL:
      return !r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return r->GetEnumValue(m, f) == 0;
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      return r->GetStringReference(m, f, &scratch).empty();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return false;
  }
  return false;
}

bool SameScalar(const Message& a, const Message& b, const FieldDescriptor* f) {
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return ra->GetInt32(a, f) == rb->GetInt32(b, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return ra->GetInt64(a, f) == rb->GetInt64(b, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return ra->GetUInt32(a, f) == rb->GetUInt32(b, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return ra->GetUInt64(a, f) == rb->GetUInt64(b, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return ra->GetDouble(a, f) == rb->GetDouble(b, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return ra->GetFloat(a, f) == rb->GetFloat(b, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return ra->GetBool(a, f) == rb->GetBool(b, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return ra->GetEnumValue(a, f) == rb->GetEnumValue(b, f);
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string sa, sb;
      return ra->GetStringReference(a, f, &sa) ==
             rb->GetStringReference(b, f, &sb);
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ra->GetMessage(a, f).SerializeAsString() ==
             rb->GetMessage(b, f).SerializeAsString();
  }
  return false;
}

// Every singular scalar of `m` is zero: a Time or Quantity that encodes as
// null or is left out.
bool AllZero(const Message& m) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      return false;  // not a special message's shape: treat as non-zero
    }
    if (!IsZeroScalar(m, f)) return false;
  }
  return true;
}

bool SameRepeated(const Message& a, const Message& b,
                  const FieldDescriptor* f) {
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  const int n = ra->FieldSize(a, f);
  if (n != rb->FieldSize(b, f)) return false;
  for (int i = 0; i < n; ++i) {
    bool same = false;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string sa, sb;
        same = ra->GetRepeatedStringReference(a, f, i, &sa) ==
               rb->GetRepeatedStringReference(b, f, i, &sb);
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        same = ra->GetRepeatedMessage(a, f, i).SerializeAsString() ==
               rb->GetRepeatedMessage(b, f, i).SerializeAsString();
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        same = ra->GetRepeatedInt32(a, f, i) == rb->GetRepeatedInt32(b, f, i);
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        same = ra->GetRepeatedInt64(a, f, i) == rb->GetRepeatedInt64(b, f, i);
        break;
      default:
        return false;  // no such lists in the built-in kinds; take the slow way
    }
    if (!same) return false;
  }
  return true;
}

bool IsIgnoredPath(const FieldPath& path,
                   const std::vector<FieldPath>& ignored) {
  for (const FieldPath& p : ignored) {
    if (p == path) return true;
  }
  for (const FieldPath& p : patch::AlwaysIgnored()) {
    if (p == path) return true;
  }
  return false;
}

// Walks `a` (the stored object) and `b` (the update) field by field as the
// JSON codec encodes them. True when both have the same JSON shape -- the
// same members present, every list and map equal -- so that their field
// sets are equal; then `changed` holds the leaf paths whose values differ.
// False (give up) on anything else.
bool SameShape(const Message& a, const Message& b, const MessageTable& table,
               const std::vector<FieldPath>& ignored, FieldPath& path,
               std::vector<FieldPath>* changed) {
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  for (const FieldEntry& fe : table.fields) {
    const FieldDescriptor* f = fe.field;
    if (fe.is_inline) {  // its members are the parent's
      const bool ha = ra->HasField(a, f);
      if (ha != rb->HasField(b, f) || fe.table == nullptr) return false;
      if (ha && !SameShape(ra->GetMessage(a, f), rb->GetMessage(b, f),
                           *fe.table, ignored, path, changed)) {
        return false;
      }
      continue;
    }
    path.push_back("f:" + std::string(fe.name));
    bool same_shape = true;
    if (IsIgnoredPath(path, ignored)) {
      // Not in the field sets: neither its presence nor its value counts.
    } else if (fe.repeated) {
      same_shape = SameRepeated(a, b, f);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const bool ha = ra->HasField(a, f);
      if (ha != rb->HasField(b, f)) {
        same_shape = false;
      } else if (ha) {
        const Message& ma = ra->GetMessage(a, f);
        const Message& mb = rb->GetMessage(b, f);
        if (fe.special == Special::kRawJson) {
          same_shape = SameScalar(a, b, f);  // raw JSON has a shape of its own
        } else if (fe.special != Special::kNone) {
          if (!SameScalar(a, b, f)) {
            same_shape = !AllZero(ma) && !AllZero(mb);
            if (same_shape) changed->push_back(path);
          }
        } else {
          same_shape = fe.table != nullptr &&
                       SameShape(ma, mb, *fe.table, ignored, path, changed);
        }
      }
    } else {
      if ((f->has_presence() && ra->HasField(a, f) != rb->HasField(b, f)) ||
          IsZeroScalar(a, f) != IsZeroScalar(b, f)) {
        same_shape = false;
      } else if (!SameScalar(a, b, f)) {
        changed->push_back(path);
      }
    }
    path.pop_back();
    if (!same_shape) return false;
  }
  return true;
}

// A strict reader of canonical fieldsV1 (ParseCanonicalFieldsV1).
class CanonicalFieldsV1Reader {
 public:
  explicit CanonicalFieldsV1Reader(std::string_view raw) : raw_(raw) {}

  std::optional<patch::FieldSet> Read() {
    patch::FieldSet top;
    if (!Object(&top, 0) || pos_ != raw_.size()) return std::nullopt;
    return top;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool Eat(char c) {
    if (pos_ >= raw_.size() || raw_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  // A key as the JSON writer writes it: printable ASCII, `"` and `\`
  // escaped with a backslash, nothing else escaped.
  bool Key(std::string* out) {
    if (!Eat('"')) return false;
    while (pos_ < raw_.size()) {
      const unsigned char c = static_cast<unsigned char>(raw_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20 || c >= 0x7f) return false;
      if (c == '\\') {
        if (pos_ >= raw_.size()) return false;
        const char e = raw_[pos_++];
        if (e != '"' && e != '\\') return false;
        out->push_back(e);
      } else {
        out->push_back(static_cast<char>(c));
      }
    }
    return false;
  }
  // One object: {} is a member leaf; otherwise "." first (only with other
  // keys, value {}), then keys of the fkvi kinds in strictly increasing
  // order, each an object.
  bool Object(patch::FieldSet* set, int depth) {
    if (depth > kMaxDepth || !Eat('{')) return false;
    if (Eat('}')) {
      set->member = true;
      return true;
    }
    const std::string* last = nullptr;
    for (bool first = true;; first = false) {
      if (!first && !Eat(',')) return false;
      std::string key;
      if (!Key(&key) || !Eat(':')) return false;
      if (key == ".") {
        if (!first || !Eat('{') || !Eat('}')) return false;
        set->member = true;
      } else {
        if (!patch::FieldSet::IsPathElement(key) ||
            (last != nullptr && !(*last < key))) {
          return false;
        }
        auto [it, inserted] =
            set->children.emplace(std::move(key), patch::FieldSet{});
        if (!inserted || !Object(&it->second, depth + 1)) return false;
        last = &it->first;
      }
      if (Eat('}')) break;
    }
    // {".":{}} alone is written {}.
    return !set->children.empty();
  }

  const std::string_view raw_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<patch::FieldSet> ParseCanonicalFieldsV1(std::string_view raw) {
  return CanonicalFieldsV1Reader(raw).Read();
}

bool TrackOwnedValueChanges(
    const google::protobuf::Message* old, google::protobuf::Message* obj,
    const objects::KindInfo& kind, const std::string& manager,
    const std::string& time,
    const std::vector<std::vector<std::string>>& ignored,
    const std::string& subresource) {
  if (old == nullptr || manager.empty() ||
      old->GetDescriptor() != obj->GetDescriptor() ||
      kind.descriptor == objects::Unstructured::descriptor()) {
    return false;
  }
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj);
  const objects::metav1::ObjectMeta* old_meta = objects::GetObjectMeta(*old);
  if (meta == nullptr || old_meta == nullptr ||
      old_meta->managedfields_size() == 0 ||
      (meta->managedfields_size() > 0 &&
       !SameManagedFields(*meta, *old_meta))) {
    return false;
  }
  const MessageTable* table = objects::internal::TableFor(obj->GetDescriptor());
  if (table == nullptr) return false;
  std::vector<FieldPath> changed;
  FieldPath path;
  if (!SameShape(*old, *obj, *table, ignored, path, &changed)) return false;

  // Ownership must stay as it is: the writer's Update entry already owns
  // every changed leaf and no other entry owns any. Each entry must also
  // read back as the JSON round trip would write it (fieldsV1 canonical).
  bool found = false;
  for (const objects::metav1::ManagedFieldsEntry& e :
       old_meta->managedfields()) {
    // (The round trip keeps seconds of a time, and drops nothing else.)
    if (e.manager().empty() || e.operation().empty() ||
        e.fieldstype() != "FieldsV1" || !e.has_fieldsv1() ||
        e.time().nanos() != 0) {
      return false;
    }
    std::optional<patch::FieldSet> fields =
        ParseCanonicalFieldsV1(e.fieldsv1().raw());
    if (!fields.has_value() || fields->Empty()) return false;
    const bool writer = e.manager() == manager && e.operation() == "Update" &&
                        e.subresource() == subresource;
    for (const FieldPath& p : changed) {
      if (fields->Has(p) != writer) return false;
    }
    if (writer) {
      if (found) return false;  // two entries of one writer: the slow way
      found = true;
    }
  }
  if (changed.empty()) {
    // No value changed: kube's "current-operation" set is empty, so no
    // entry moves (no time stamped, none added) and the store, finding
    // the same bytes, writes nothing.
    *meta->mutable_managedfields() = old_meta->managedfields();
    return true;
  }
  if (!found) return false;
  // The writer's new time as the round trip decodes it: whole seconds.
  StatusOr<objects::Timestamp> stamped = objects::ParseRfc3339(time);
  if (!stamped.ok()) return false;
  *meta->mutable_managedfields() = old_meta->managedfields();
  for (objects::metav1::ManagedFieldsEntry& e :
       *meta->mutable_managedfields()) {
    if (e.manager() == manager && e.operation() == "Update" &&
        e.subresource() == subresource) {
      e.set_apiversion(kind.gv.ApiVersion());
      objects::SetTime(e.mutable_time(), stamped->seconds);
    }
  }
  return true;
}

bool TrackWithoutManager(const google::protobuf::Message* old,
                         const google::protobuf::Message* obj,
                         const std::string& manager) {
  if (!manager.empty()) return false;
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(*obj);
  if (meta == nullptr || meta->managedfields_size() > 0) return false;
  if (old != nullptr) {
    const objects::metav1::ObjectMeta* old_meta = objects::GetObjectMeta(*old);
    if (old_meta == nullptr || old_meta->managedfields_size() > 0) {
      return false;
    }
  }
  // The general path writes back the old object's entries (or the body's,
  // when it sends its own): here there are none, so `obj` stays as it is.
  return true;
}

Status TrackManagedFields(const google::protobuf::Message* old,
                          google::protobuf::Message* obj,
                          const objects::KindInfo& kind,
                          const std::string& manager, const std::string& time,
                          const std::vector<std::vector<std::string>>& ignored,
                          const std::string& subresource) {
  if (TrackOwnedValueChanges(old, obj, kind, manager, time, ignored,
                             subresource)) {
    return Status::Ok();
  }
  if (TrackWithoutManager(old, obj, manager)) return Status::Ok();
  return TrackManagedFieldsThroughJson(old, obj, kind, manager, time, ignored,
                                       subresource);
}

Status TrackManagedFieldsThroughJson(
    const google::protobuf::Message* old, google::protobuf::Message* obj,
    const objects::KindInfo& kind, const std::string& manager,
    const std::string& time,
    const std::vector<std::vector<std::string>>& ignored,
    const std::string& subresource) {
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj);
  const objects::metav1::ObjectMeta* old_meta =
      old != nullptr ? objects::GetObjectMeta(*old) : nullptr;
  rapidjson::Document doc;
  auto& alloc = doc.GetAllocator();
  rapidjson::Value new_dom = objects::ToJsonValue(*obj, alloc);
  rapidjson::Value old_dom;
  // The old object with the managedFields the client wrote, when it
  // rewrote them: the starting point, if they can be read.
  std::optional<rapidjson::Value> client_old;
  if (old != nullptr) {
    old_dom = objects::ToJsonValue(*old, alloc);
    if (meta->managedfields_size() > 0 && old_meta != nullptr &&
        !SameManagedFields(*meta, *old_meta)) {
      rapidjson::Value* nm = patch::FindMember(new_dom, "metadata");
      const rapidjson::Value* mf =
          nm != nullptr ? patch::FindMember(*nm, "managedFields") : nullptr;
      client_old.emplace(old_dom, alloc);
      rapidjson::Value* om = patch::FindMember(*client_old, "metadata");
      if (om != nullptr && mf != nullptr) {
        patch::SetMember(*om, "managedFields", rapidjson::Value(*mf, alloc),
                         alloc);
      }
    }
  }
  patch::ApplyOptions opts;
  opts.manager = manager;
  opts.api_version = kind.gv.ApiVersion();
  opts.time = time;
  opts.schema = SchemaOf(kind);
  opts.ignored = ignored;
  opts.subresource = subresource;
  // Stored raw JSON (fieldsV1, RawExtension) may be deep.
  const int depth = std::max(DepthOf(new_dom), DepthOf(old_dom));
  auto update = [&](const rapidjson::Value* from,
                    rapidjson::Value& target) -> Status {
    Status updated;
    RETURN_IF_ERROR(kplane::RunForDepth(depth, [&] {
      updated = patch::UpdateManagedFields(from, target, opts, alloc);
    }));
    return updated;
  };
  Status updated = Status::Ok();
  if (client_old.has_value()) {
    // kube's FieldManager: managedFields the client sent that cannot be
    // decoded (a fieldsV1 that is no field set) are ignored and the live
    // object's are the starting point, rather than failing the write.
    rapidjson::Value attempt(new_dom, alloc);
    updated = update(&*client_old, attempt);
    if (updated.ok()) new_dom = std::move(attempt);
  }
  if (!client_old.has_value() || !updated.ok()) {
    RETURN_IF_ERROR(update(old != nullptr ? &old_dom : nullptr, new_dom));
  }
  meta->clear_managedfields();
  const rapidjson::Value* nm = patch::FindMember(new_dom, "metadata");
  const rapidjson::Value* mf =
      nm != nullptr ? patch::FindMember(*nm, "managedFields") : nullptr;
  if (mf != nullptr && mf->IsArray()) {
    for (const rapidjson::Value& e : mf->GetArray()) {
      objects::metav1::ManagedFieldsEntry* entry = meta->add_managedfields();
      StatusOr<objects::DecodeResult> r = objects::DecodeJsonValue(e, entry);
      if (!r.ok()) return r.status();
    }
  }
  return Status::Ok();
}

}  // namespace kplane::apiserver
