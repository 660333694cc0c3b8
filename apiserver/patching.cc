#include "apiserver/patching.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "base/deep_stack.h"
#include "base/json.h"
#include "objects/codec.h"
#include "objects/meta.h"
#include "objects/patch/apply.h"
#include "objects/patch/json_patch.h"
#include "objects/patch/json_value.h"
#include "objects/patch/merge_patch.h"
#include "objects/patch/patch_meta.h"
#include "objects/patch/strategic.h"
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
// and kind and reporting unknown fields.
ApiResult<MutableMessage> DecodePatched(const rapidjson::Value& dom,
                                        const objects::KindInfo& kind,
                                        FieldValidation validation,
                                        std::vector<std::string>* warnings) {
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
  if (!r->strict_ok()) {
    if (validation == FieldValidation::kStrict) {
      return ApiError::BadRequest(r->StrictErrorMessage());
    }
    if (validation == FieldValidation::kWarn && warnings != nullptr) {
      for (std::string& w : r->Warnings()) warnings->push_back(std::move(w));
    }
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
    return DecodePatched(target, kind, validation, warnings);
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

}  // namespace

Status TrackManagedFields(
    const google::protobuf::Message* old, google::protobuf::Message* obj,
    const objects::KindInfo& kind, const std::string& manager,
    const std::string& time,
    const std::vector<std::vector<std::string>>& ignored) {
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj);
  const objects::metav1::ObjectMeta* old_meta =
      old != nullptr ? objects::GetObjectMeta(*old) : nullptr;
  rapidjson::Document doc;
  auto& alloc = doc.GetAllocator();
  rapidjson::Value new_dom = objects::ToJsonValue(*obj, alloc);
  rapidjson::Value old_dom;
  if (old != nullptr) {
    old_dom = objects::ToJsonValue(*old, alloc);
    if (meta->managedfields_size() > 0 && old_meta != nullptr &&
        !SameManagedFields(*meta, *old_meta)) {
      // The client rewrote managedFields: start from its version.
      rapidjson::Value* nm = patch::FindMember(new_dom, "metadata");
      rapidjson::Value* om = patch::FindMember(old_dom, "metadata");
      const rapidjson::Value* mf =
          nm != nullptr ? patch::FindMember(*nm, "managedFields") : nullptr;
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
  // Stored raw JSON (fieldsV1, RawExtension) may be deep.
  const int depth = std::max(DepthOf(new_dom), DepthOf(old_dom));
  Status updated;
  RETURN_IF_ERROR(kplane::RunForDepth(depth, [&] {
    updated = patch::UpdateManagedFields(old != nullptr ? &old_dom : nullptr,
                                         new_dom, opts, alloc);
  }));
  RETURN_IF_ERROR(updated);
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
