#include "objects/patch/json_patch.h"

#include <algorithm>

#include "base/strings.h"

namespace kplane::patch {

namespace {

// Index of `token` in an array of `size` elements; "-" means `size` when
// `allow_end`. nullopt when not a valid index.
std::optional<rapidjson::SizeType> ArrayIndex(const std::string& token,
                                              rapidjson::SizeType size,
                                              bool allow_end) {
  if (token == "-") {
    if (allow_end) return size;
    return std::nullopt;
  }
  if (token.empty() || (token.size() > 1 && token[0] == '0')) {
    return std::nullopt;
  }
  auto n = ParseUint64(token);
  if (!n) return std::nullopt;
  uint64_t limit = allow_end ? size : (size == 0 ? 0 : size - 1);
  if (*n > limit || (!allow_end && size == 0)) return std::nullopt;
  return static_cast<rapidjson::SizeType>(*n);
}

// Walks to the value at `tokens` (all of them). Null when absent.
JsonValue* Resolve(JsonValue& doc, const std::vector<std::string>& tokens,
                   size_t count) {
  JsonValue* cur = &doc;
  for (size_t i = 0; i < count; ++i) {
    if (cur->IsObject()) {
      cur = FindMember(*cur, tokens[i]);
    } else if (cur->IsArray()) {
      auto idx = ArrayIndex(tokens[i], cur->Size(), false);
      if (!idx) return nullptr;
      cur = &(*cur)[*idx];
    } else {
      return nullptr;
    }
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

Status NotApplicable(std::string_view op, std::string_view path) {
  return FailedPreconditionError(std::string(op) +
                                 " operation does not apply: doc is missing "
                                 "path: \"" +
                                 std::string(path) + "\": missing value");
}

// What the operations so far did to the document, against PatchLimits.
struct Budget {
  const PatchLimits& limits;
  size_t bytes;         // the document's size (json::Measure's estimate)
  size_t copied = 0;    // added by "copy" operations
  int64_t depth_bound;  // at least the document's depth
};

Status TooLarge(const Budget& b) {
  return Status(StatusCode::kTooLarge,
                "the patched object would be larger than " +
                    std::to_string(b.limits.max_bytes) + " bytes");
}

// Accounts for inserting a value of extent `e` at `tokens`; a member it
// replaces is measured and taken off. Where nothing can be inserted (no
// parent container) it accounts for nothing: Add then reports the path.
Status Insert(JsonValue& doc, const std::vector<std::string>& tokens,
              const json::Extent& e, Budget* b) {
  const JsonValue* parent =
      tokens.empty() ? nullptr : Resolve(doc, tokens, tokens.size() - 1);
  if (!tokens.empty() &&
      (parent == nullptr || !(parent->IsObject() || parent->IsArray()))) {
    return Status::Ok();
  }
  if (static_cast<int64_t>(tokens.size()) + e.depth > b->limits.max_depth) {
    return InvalidArgumentError(json::MaxDepthMessage(b->limits.max_depth));
  }
  b->depth_bound = std::max<int64_t>(
      b->depth_bound, static_cast<int64_t>(tokens.size()) + e.depth);
  // e.bytes <= max_bytes (measured with that cap), so this cannot overflow.
  b->bytes += e.bytes + (tokens.empty() ? 0 : tokens.back().size() + 4);
  if (!tokens.empty()) {
    if (parent->IsObject()) {
      if (const JsonValue* old = FindMember(*parent, tokens.back())) {
        const size_t gone = json::Measure(*old).bytes;
        b->bytes -= std::min(b->bytes, gone);
      }
    }
  } else {
    b->bytes = e.bytes;  // the whole document is replaced
  }
  if (b->bytes > b->limits.max_bytes) return TooLarge(*b);
  return Status::Ok();
}

void Removed(const JsonValue& v, Budget* b) {
  b->bytes -= std::min(b->bytes, json::Measure(v).bytes);
}

Status Add(JsonValue& doc, const std::vector<std::string>& tokens,
           std::string_view path, JsonValue& value, JsonAllocator& alloc,
           std::string_view op = "add") {
  if (tokens.empty()) {
    doc = value;
    return Status::Ok();
  }
  JsonValue* parent = Resolve(doc, tokens, tokens.size() - 1);
  if (parent == nullptr) return NotApplicable(op, path);
  const std::string& last = tokens.back();
  if (parent->IsObject()) {
    SetMember(*parent, last, value, alloc);
    return Status::Ok();
  }
  if (parent->IsArray()) {
    auto idx = ArrayIndex(last, parent->Size(), true);
    if (!idx) {
      return FailedPreconditionError("add operation does not apply: index " +
                                     last + " out of bounds in \"" +
                                     std::string(path) + "\"");
    }
    parent->PushBack(JsonValue(), alloc);
    for (rapidjson::SizeType i = parent->Size() - 1; i > *idx; --i) {
      (*parent)[i] = (*parent)[i - 1];
    }
    (*parent)[*idx] = value;
    return Status::Ok();
  }
  return NotApplicable(op, path);
}

Status Remove(JsonValue& doc, const std::vector<std::string>& tokens,
              std::string_view path, JsonValue* removed,
              std::string_view op = "remove") {
  if (tokens.empty()) {
    if (removed != nullptr) *removed = doc;
    doc.SetNull();
    return Status::Ok();
  }
  JsonValue* parent = Resolve(doc, tokens, tokens.size() - 1);
  if (parent == nullptr) return NotApplicable(op, path);
  const std::string& last = tokens.back();
  if (parent->IsObject()) {
    for (auto it = parent->MemberBegin(); it != parent->MemberEnd(); ++it) {
      if (StringOf(it->name) == last) {
        if (removed != nullptr) *removed = it->value;
        parent->EraseMember(it);
        return Status::Ok();
      }
    }
    return FailedPreconditionError(std::string(op) +
                                   " operation does not apply: doc is missing "
                                   "key: \"" +
                                   std::string(path) + "\"");
  }
  if (parent->IsArray()) {
    auto idx = ArrayIndex(last, parent->Size(), false);
    if (!idx) {
      return FailedPreconditionError(
          std::string(op) + " operation does not apply: index " + last +
          " out of bounds in \"" + std::string(path) + "\"");
    }
    if (removed != nullptr) *removed = (*parent)[*idx];
    parent->Erase(parent->Begin() + *idx);
    return Status::Ok();
  }
  return NotApplicable(op, path);
}

// An operation that cannot be carried out (no "op", an unknown one, a
// missing "path", "value" or "from", a malformed pointer) is the patch not
// applying, as Kubernetes answers every error of jsonpatch's Apply: 422,
// not 400 (FailedPrecondition here). Only a body that is not a list of
// objects is a bad request.
StatusOr<std::vector<std::string>> AsOperationError(
    StatusOr<std::vector<std::string>> tokens) {
  if (tokens.ok()) return tokens;
  return FailedPreconditionError(tokens.status().message());
}

// An operation's member: the last of a name given twice, as Go decodes
// evanphx/json-patch's Operation (a map).
const JsonValue* LastMember(const JsonValue& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  for (auto it = obj.MemberEnd(); it != obj.MemberBegin();) {
    --it;
    if (StringOf(it->name) == key) return &it->value;
  }
  return nullptr;
}

Status ApplyOne(JsonValue& doc, const JsonValue& op_obj, JsonAllocator& alloc,
                Budget* b) {
  // null decodes as an operation without members (Go's nil map).
  const JsonValue* op = LastMember(op_obj, "op");
  const JsonValue* path_v = LastMember(op_obj, "path");
  if (op == nullptr || !op->IsString()) {
    return FailedPreconditionError("json patch operation is missing \"op\"");
  }
  if (path_v == nullptr || !path_v->IsString()) {
    return FailedPreconditionError("json patch " + std::string(StringOf(*op)) +
                                   " operation is missing \"path\"");
  }
  std::string_view name = StringOf(*op);
  std::string_view path = StringOf(*path_v);
  ASSIGN_OR_RETURN(auto tokens, AsOperationError(ParseJsonPointer(path)));
  const JsonValue* value = LastMember(op_obj, "value");
  auto need_value = [&]() -> Status {
    if (value == nullptr) {
      return FailedPreconditionError("json patch " + std::string(name) +
                                     " operation is missing \"value\"");
    }
    return Status::Ok();
  };
  auto from_tokens = [&]() -> StatusOr<std::vector<std::string>> {
    const JsonValue* from = LastMember(op_obj, "from");
    if (from == nullptr || !from->IsString()) {
      return FailedPreconditionError("json patch " + std::string(name) +
                                     " operation is missing \"from\"");
    }
    return AsOperationError(ParseJsonPointer(StringOf(*from)));
  };

  if (name == "add") {
    RETURN_IF_ERROR(need_value());
    RETURN_IF_ERROR(Insert(doc, tokens, json::Measure(*value), b));
    JsonValue v(*value, alloc);
    return Add(doc, tokens, path, v, alloc);
  }
  if (name == "remove") {
    JsonValue removed;
    RETURN_IF_ERROR(Remove(doc, tokens, path, &removed));
    Removed(removed, b);
    return Status::Ok();
  }
  if (name == "replace") {
    RETURN_IF_ERROR(need_value());
    JsonValue* target = Resolve(doc, tokens, tokens.size());
    if (target == nullptr) {
      return FailedPreconditionError(
          "replace operation does not apply: doc is missing key: " +
          std::string(path) + ": missing value");
    }
    Removed(*target, b);
    json::Extent e = json::Measure(*value);
    if (static_cast<int64_t>(tokens.size()) + e.depth > b->limits.max_depth) {
      return InvalidArgumentError(json::MaxDepthMessage(b->limits.max_depth));
    }
    b->depth_bound = std::max<int64_t>(
        b->depth_bound, static_cast<int64_t>(tokens.size()) + e.depth);
    b->bytes += e.bytes;
    if (b->bytes > b->limits.max_bytes) return TooLarge(*b);
    target->CopyFrom(*value, alloc);
    return Status::Ok();
  }
  if (name == "move") {
    ASSIGN_OR_RETURN(auto from, from_tokens());
    if (tokens.size() > from.size() &&
        std::equal(from.begin(), from.end(), tokens.begin())) {
      return FailedPreconditionError(
          "move operation does not apply: \"from\" is a prefix of \"path\"");
    }
    // The size does not change. The moved value is at most
    // depth_bound - from.size() deep; it is measured only when that bound
    // would not fit at the new place, so that moving a large value back and
    // forth costs no walks over it.
    if (static_cast<int64_t>(tokens.size()) + b->depth_bound -
            static_cast<int64_t>(from.size()) >
        b->limits.max_depth) {
      const JsonValue* src = Resolve(doc, from, from.size());
      if (src != nullptr) {
        const int depth = json::Measure(*src).depth;
        if (static_cast<int64_t>(tokens.size()) + depth > b->limits.max_depth) {
          return InvalidArgumentError(
              json::MaxDepthMessage(b->limits.max_depth));
        }
        b->depth_bound = std::max<int64_t>(
            b->depth_bound, static_cast<int64_t>(tokens.size()) + depth);
      }
    }
    JsonValue moved;
    RETURN_IF_ERROR(Remove(doc, from, path, &moved, "move"));
    return Add(doc, tokens, path, moved, alloc, "move");
  }
  if (name == "copy") {
    ASSIGN_OR_RETURN(auto from, from_tokens());
    JsonValue* src = Resolve(doc, from, from.size());
    if (src == nullptr) return NotApplicable("copy", path);
    // Kubernetes caps what copies add in total (evanphx/json-patch's
    // AccumulatedCopySizeLimit): a value copied into itself doubles.
    // Measuring stops at the remaining allowance.
    const size_t allowance = b->limits.max_bytes - b->copied;
    json::Extent e = json::Measure(*src, allowance);
    if (e.bytes > allowance) {
      return FailedPreconditionError(
          "unable to copy, the accumulated size increase of copy is " +
          std::to_string(b->copied + e.bytes) + ", exceeding the limit " +
          std::to_string(b->limits.max_bytes));
    }
    b->copied += e.bytes;
    RETURN_IF_ERROR(Insert(doc, tokens, e, b));
    JsonValue v(*src, alloc);
    return Add(doc, tokens, path, v, alloc, "copy");
  }
  if (name == "test") {
    RETURN_IF_ERROR(need_value());
    JsonValue* target = Resolve(doc, tokens, tokens.size());
    if (target == nullptr) {
      if (value->IsNull() && !tokens.empty()) {
        // evanphx/json-patch: testing a missing member for null passes.
        JsonValue* parent = Resolve(doc, tokens, tokens.size() - 1);
        if (parent != nullptr && parent->IsObject()) return Status::Ok();
      }
      return FailedPreconditionError("testing value " + std::string(path) +
                                     " failed: test failed");
    }
    if (!JsonEqual(*target, *value)) {
      return FailedPreconditionError("testing value " + std::string(path) +
                                     " failed: test failed");
    }
    return Status::Ok();
  }
  return FailedPreconditionError("Unexpected kind: " + std::string(name));
}

}  // namespace

StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return InvalidArgumentError(
        "JSON pointer must be empty or start with a "
        "\"/\": \"" +
        std::string(pointer) + "\"");
  }
  std::string cur;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(cur);
      cur.clear();
      continue;
    }
    if (pointer[i] == '~') {
      if (i + 1 < pointer.size() && pointer[i + 1] == '0') {
        cur.push_back('~');
      } else if (i + 1 < pointer.size() && pointer[i + 1] == '1') {
        cur.push_back('/');
      } else {
        return InvalidArgumentError("invalid JSON pointer escape in \"" +
                                    std::string(pointer) + "\"");
      }
      ++i;
      continue;
    }
    cur.push_back(pointer[i]);
  }
  return tokens;
}

std::string EscapeJsonPointerToken(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Status ApplyJsonPatch(JsonValue& doc, const JsonValue& patch,
                      JsonAllocator& alloc, const PatchLimits& limits) {
  if (!patch.IsArray()) {
    return InvalidArgumentError(
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  }
  if (patch.Size() > limits.max_operations) {
    return Status(StatusCode::kTooLarge,
                  "The allowed maximum operations in a JSON patch is " +
                      std::to_string(limits.max_operations) + ", got " +
                      std::to_string(patch.Size()));
  }
  const json::Extent start = json::Measure(doc, limits.max_bytes);
  Budget budget{limits, start.bytes, 0, start.depth};
  if (budget.bytes > limits.max_bytes) return TooLarge(budget);
  // The whole body decodes before any operation runs (kube's DecodePatch),
  // so an element that is no operation is a bad request even after one
  // that would fail.
  for (const auto& op : patch.GetArray()) {
    if (!op.IsObject() && !op.IsNull()) {
      return InvalidArgumentError(
          "json patch operation must be an object: json: cannot unmarshal " +
          std::string(op.IsArray()    ? "array"
                      : op.IsString() ? "string"
                      : op.IsBool()   ? "bool"
                                      : "number") +
          " into Go value of type jsonpatch.Operation");
    }
  }
  JsonValue work(doc, alloc);
  for (const auto& op : patch.GetArray()) {
    RETURN_IF_ERROR(ApplyOne(work, op, alloc, &budget));
  }
  doc = work;
  return Status::Ok();
}

std::vector<std::string> JsonPatchStrictErrors(const JsonValue& patch) {
  StrictFindings f;
  if (!patch.IsArray()) return {};
  for (rapidjson::SizeType i = 0; i < patch.Size(); ++i) {
    const JsonValue& op = patch[i];
    if (!op.IsObject()) continue;
    const std::string at = "[" + std::to_string(i) + "].";
    // jsonPatchOp's fields, matched case-sensitively.
    static constexpr std::string_view kFields[] = {"op", "path", "from",
                                                   "value"};
    bool seen[4] = {};
    for (const auto& m : op.GetObject()) {
      const std::string_view key = StringOf(m.name);
      const std::string path = at + std::string(key);
      const auto* field =
          std::find(std::begin(kFields), std::end(kFields), key);
      if (field == std::end(kFields)) {
        f.Unknown(path);
        continue;
      }
      bool& was = seen[field - std::begin(kFields)];
      if (was) f.Duplicate(path);
      was = true;
      if (key == "value") f.DuplicatesIn(m.value, path);
    }
  }
  return f.Texts("json patch ");
}

}  // namespace kplane::patch
