#include "objects/patch/json_patch.h"

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

Status ApplyOne(JsonValue& doc, const JsonValue& op_obj, JsonAllocator& alloc) {
  if (!op_obj.IsObject()) {
    return InvalidArgumentError("json patch operation must be an object");
  }
  const JsonValue* op = FindMember(op_obj, "op");
  const JsonValue* path_v = FindMember(op_obj, "path");
  if (op == nullptr || !op->IsString()) {
    return InvalidArgumentError("json patch operation is missing \"op\"");
  }
  if (path_v == nullptr || !path_v->IsString()) {
    return InvalidArgumentError("json patch " + std::string(StringOf(*op)) +
                                " operation is missing \"path\"");
  }
  std::string_view name = StringOf(*op);
  std::string_view path = StringOf(*path_v);
  ASSIGN_OR_RETURN(auto tokens, ParseJsonPointer(path));
  const JsonValue* value = FindMember(op_obj, "value");
  auto need_value = [&]() -> Status {
    if (value == nullptr) {
      return InvalidArgumentError("json patch " + std::string(name) +
                                  " operation is missing \"value\"");
    }
    return Status::Ok();
  };
  auto from_tokens = [&]() -> StatusOr<std::vector<std::string>> {
    const JsonValue* from = FindMember(op_obj, "from");
    if (from == nullptr || !from->IsString()) {
      return InvalidArgumentError("json patch " + std::string(name) +
                                  " operation is missing \"from\"");
    }
    return ParseJsonPointer(StringOf(*from));
  };

  if (name == "add") {
    RETURN_IF_ERROR(need_value());
    JsonValue v(*value, alloc);
    return Add(doc, tokens, path, v, alloc);
  }
  if (name == "remove") {
    return Remove(doc, tokens, path, nullptr);
  }
  if (name == "replace") {
    RETURN_IF_ERROR(need_value());
    JsonValue* target = Resolve(doc, tokens, tokens.size());
    if (target == nullptr) {
      return FailedPreconditionError(
          "replace operation does not apply: doc is missing key: " +
          std::string(path) + ": missing value");
    }
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
    JsonValue moved;
    RETURN_IF_ERROR(Remove(doc, from, path, &moved, "move"));
    return Add(doc, tokens, path, moved, alloc, "move");
  }
  if (name == "copy") {
    ASSIGN_OR_RETURN(auto from, from_tokens());
    JsonValue* src = Resolve(doc, from, from.size());
    if (src == nullptr) return NotApplicable("copy", path);
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
  return InvalidArgumentError("Unexpected kind: " + std::string(name));
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
                      JsonAllocator& alloc) {
  if (!patch.IsArray()) {
    return InvalidArgumentError(
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  }
  JsonValue work(doc, alloc);
  for (const auto& op : patch.GetArray()) {
    RETURN_IF_ERROR(ApplyOne(work, op, alloc));
  }
  doc = work;
  return Status::Ok();
}

}  // namespace kplane::patch
