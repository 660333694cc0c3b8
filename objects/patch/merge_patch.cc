#include "objects/patch/merge_patch.h"

#include <string>

namespace kplane::patch {

namespace {

// Merges an object patch into an object target (RFC 7386 section 2).
void MergeObject(JsonValue& target, const JsonValue& patch,
                 JsonAllocator& alloc) {
  IndexedMembers members(target, patch.MemberCount(), alloc);
  for (const auto& m : patch.GetObject()) {
    std::string_view key = StringOf(m.name);
    if (m.value.IsNull()) {
      members.Remove(key);
      continue;
    }
    JsonValue* existing = members.Find(key);
    if (m.value.IsObject()) {
      if (existing == nullptr) {
        JsonValue empty(rapidjson::kObjectType);
        members.Set(key, empty);
        existing = members.Find(key);
      } else if (!existing->IsObject()) {
        existing->SetObject();
      }
      MergeObject(*existing, m.value, alloc);
      continue;
    }
    JsonValue copy(m.value, alloc);
    members.Set(key, copy);
  }
  members.Compact();
}

// Drops null members recursively (keepNull=false) or keeps only the
// null-valued paths (keepNull=true): jsonmergepatch.keepOrDeleteNullInObj.
JsonValue KeepOrDeleteNull(const JsonValue& m, bool keep_null,
                           JsonAllocator& alloc) {
  JsonValue out(rapidjson::kObjectType);
  for (const auto& kv : m.GetObject()) {
    const JsonValue& v = kv.value;
    if (keep_null && v.IsNull()) {
      out.AddMember(JsonValue(kv.name, alloc), JsonValue(), alloc);
    } else if (!v.IsNull()) {
      if (v.IsObject()) {
        if (v.MemberCount() == 0) {
          if (!keep_null) {
            out.AddMember(JsonValue(kv.name, alloc), JsonValue(v, alloc),
                          alloc);
          }
          continue;
        }
        JsonValue sub = KeepOrDeleteNull(v, keep_null, alloc);
        if (sub.MemberCount() != 0) {
          out.AddMember(JsonValue(kv.name, alloc), sub, alloc);
        }
      } else if (!keep_null) {
        out.AddMember(JsonValue(kv.name, alloc), JsonValue(v, alloc), alloc);
      }
    }
  }
  return out;
}

}  // namespace

void ApplyMergePatch(JsonValue& target, const JsonValue& patch,
                     JsonAllocator& alloc) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, alloc);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  if (HasDuplicateMembers(patch)) {
    // Kubernetes decodes the patch into maps: the last of two members of
    // one name counts, the first is not merged in before it.
    JsonValue last(patch, alloc);
    KeepLastMembers(last);
    MergeObject(target, last, alloc);
    return;
  }
  MergeObject(target, patch, alloc);
}

JsonValue CreateMergePatch(const JsonValue& original, const JsonValue& modified,
                           JsonAllocator& alloc) {
  JsonValue patch(rapidjson::kObjectType);
  for (const auto& m : modified.GetObject()) {
    std::string_view key = StringOf(m.name);
    const JsonValue* old = FindMember(original, key);
    if (old == nullptr) {
      patch.AddMember(JsonValue(m.name, alloc), JsonValue(m.value, alloc),
                      alloc);
      continue;
    }
    if (old->IsObject() && m.value.IsObject()) {
      JsonValue sub = CreateMergePatch(*old, m.value, alloc);
      if (sub.MemberCount() > 0) {
        patch.AddMember(JsonValue(m.name, alloc), sub, alloc);
      }
      continue;
    }
    if (!JsonEqual(*old, m.value)) {
      patch.AddMember(JsonValue(m.name, alloc), JsonValue(m.value, alloc),
                      alloc);
    }
  }
  for (const auto& m : original.GetObject()) {
    if (FindMember(modified, StringOf(m.name)) == nullptr) {
      patch.AddMember(JsonValue(m.name, alloc), JsonValue(), alloc);
    }
  }
  return patch;
}

Precondition RequireKeyUnchanged(std::string key) {
  return [key](const JsonValue& patch) {
    return !patch.IsObject() || FindMember(patch, key) == nullptr;
  };
}

Precondition RequireMetadataKeyUnchanged(std::string key) {
  return [key](const JsonValue& patch) {
    const JsonValue* md = FindMember(patch, "metadata");
    if (md == nullptr || !md->IsObject()) return true;
    return FindMember(*md, key) == nullptr;
  };
}

bool JsonPatchesHaveConflicts(const JsonValue& left, const JsonValue& right) {
  switch (KindOf(left)) {
    case JsonKind::kObject:
      if (!right.IsObject()) return true;
      for (const auto& m : left.GetObject()) {
        const JsonValue* r = FindMember(right, StringOf(m.name));
        if (r != nullptr && JsonPatchesHaveConflicts(m.value, *r)) return true;
      }
      return false;
    case JsonKind::kArray:
      if (!right.IsArray() || left.Size() != right.Size()) return true;
      for (rapidjson::SizeType i = 0; i < left.Size(); ++i) {
        if (JsonPatchesHaveConflicts(left[i], right[i])) return true;
      }
      return false;
    default:
      return !JsonEqual(left, right);
  }
}

StatusOr<std::string> CreateThreeWayJsonMergePatch(
    const JsonValue& original, const JsonValue& modified,
    const JsonValue& current, const std::vector<Precondition>& preconditions) {
  rapidjson::Document doc;
  auto& alloc = doc.GetAllocator();
  JsonValue empty(rapidjson::kObjectType);
  const JsonValue& o = original.IsObject() ? original : empty;
  const JsonValue& m = modified.IsObject() ? modified : empty;
  const JsonValue& c = current.IsObject() ? current : empty;

  JsonValue add_and_change =
      KeepOrDeleteNull(CreateMergePatch(c, m, alloc), false, alloc);
  JsonValue deletions =
      KeepOrDeleteNull(CreateMergePatch(o, m, alloc), true, alloc);
  if (JsonPatchesHaveConflicts(add_and_change, deletions)) {
    return Status(StatusCode::kConflict,
                  "patch:\n" + CanonicalJson(add_and_change) +
                      "\nconflicts with changes made from original to "
                      "current:\n" +
                      CanonicalJson(deletions) + "\n");
  }
  ApplyMergePatch(deletions, add_and_change, alloc);
  // MergePatch(deletePatch, addAndChangePatch) keeps deletePatch's nulls:
  // they are members of the target, not of the patch.
  for (const auto& pre : preconditions) {
    if (!pre(deletions)) {
      return FailedPreconditionError("precondition failed for: " +
                                     GoString(deletions));
    }
  }
  return CanonicalJson(deletions);
}

}  // namespace kplane::patch
