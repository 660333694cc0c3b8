#include "base/json.h"

#include <rapidjson/error/en.h>

namespace kplane::json {

namespace {

size_t Digits(uint64_t u) {
  size_t n = 1;
  while (u >= 10) {
    u /= 10;
    ++n;
  }
  return n;
}

size_t ScalarBytes(const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
    case rapidjson::kTrueType:
      return 4;
    case rapidjson::kFalseType:
      return 5;
    case rapidjson::kStringType:
      return size_t{v.GetStringLength()} + 2;
    case rapidjson::kNumberType:
      if (v.IsUint64()) return Digits(v.GetUint64());
      if (v.IsInt64()) {
        // -(i + 1) + 1 avoids negating INT64_MIN.
        return 1 + Digits(static_cast<uint64_t>(-(v.GetInt64() + 1)) + 1);
      }
      return 24;  // the longest shortest-round-trip double
    default:
      return 0;
  }
}

}  // namespace

std::string MaxDepthMessage(int max_depth) {
  return "exceeded max depth of " + std::to_string(max_depth);
}

std::string Outcome::Message() const {
  if (too_deep) return MaxDepthMessage(max_depth);
  return rapidjson::GetParseError_En(code);
}

Extent Measure(const rapidjson::Value& root, size_t max_bytes) {
  Extent e;
  // Saturating: no overflow whatever the DOM.
  auto add = [&](size_t n) {
    e.bytes = n > std::numeric_limits<size_t>::max() - e.bytes
                  ? std::numeric_limits<size_t>::max()
                  : e.bytes + n;
    return e.bytes <= max_bytes;
  };
  struct Frame {
    const rapidjson::Value* container;
    rapidjson::SizeType next;
  };
  std::vector<Frame> stack;
  const rapidjson::Value* v = &root;
  for (;;) {
    if (v->IsObject() || v->IsArray()) {
      const size_t n = v->IsObject() ? v->MemberCount() : v->Size();
      // Brackets and the commas between the n children.
      if (!add(2 + (n > 0 ? n - 1 : 0))) return e;
      stack.push_back({v, 0});
      if (static_cast<int>(stack.size()) > e.depth) {
        e.depth = static_cast<int>(stack.size());
      }
    } else if (!add(ScalarBytes(*v))) {
      return e;
    }
    v = nullptr;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.container->IsObject()) {
        if (f.next < f.container->MemberCount()) {
          const auto& m = f.container->MemberBegin()[f.next++];
          if (!add(size_t{m.name.GetStringLength()} + 3)) return e;
          v = &m.value;
          break;
        }
      } else if (f.next < f.container->Size()) {
        v = &(*f.container)[f.next++];
        break;
      }
      stack.pop_back();
    }
    if (v == nullptr) return e;
  }
}

}  // namespace kplane::json
