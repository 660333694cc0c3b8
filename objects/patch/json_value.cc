#include "objects/patch/json_value.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <unordered_set>
#include <vector>

#include "base/strings.h"

namespace kplane::patch {

namespace {

bool IsIntegralDouble(double d) {
  return std::isfinite(d) && std::floor(d) == d &&
         d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

// Writes `v` through `w`, sorting object keys when `sorted`.
template <typename Writer>
void WriteValue(const JsonValue& v, bool sorted, Writer& w) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      w.Null();
      return;
    case rapidjson::kFalseType:
      w.Bool(false);
      return;
    case rapidjson::kTrueType:
      w.Bool(true);
      return;
    case rapidjson::kStringType:
      w.String(v.GetString(), v.GetStringLength());
      return;
    case rapidjson::kNumberType:
      if (v.IsInt64()) {
        w.Int64(v.GetInt64());
      } else if (v.IsUint64()) {
        w.Uint64(v.GetUint64());
      } else if (IsIntegralDouble(v.GetDouble())) {
        w.Int64(static_cast<int64_t>(v.GetDouble()));
      } else {
        w.Double(v.GetDouble());
      }
      return;
    case rapidjson::kArrayType:
      w.StartArray();
      for (const auto& e : v.GetArray()) WriteValue(e, sorted, w);
      w.EndArray();
      return;
    case rapidjson::kObjectType: {
      w.StartObject();
      std::vector<const JsonValue::Member*> members;
      for (const auto& m : v.GetObject()) members.push_back(&m);
      if (sorted) {
        std::stable_sort(
            members.begin(), members.end(),
            [](const JsonValue::Member* a, const JsonValue::Member* b) {
              return StringOf(a->name) < StringOf(b->name);
            });
      }
      for (const auto* m : members) {
        w.Key(m->name.GetString(), m->name.GetStringLength());
        WriteValue(m->value, sorted, w);
      }
      w.EndObject();
      return;
    }
  }
}

std::string Serialize(const JsonValue& v, bool sorted) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  WriteValue(v, sorted, w);
  return std::string(buf.GetString(), buf.GetSize());
}

// Go's fmt "%v" of a float64, i.e. strconv.FormatFloat(f, 'g', -1, 64):
// shortest round-trip digits; with shortest precision Go switches to the %e
// form when the decimal exponent is < -4 or >= 6 (fmt.Println(1e6) prints
// "1e+06").
std::string GoFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf holds d.ddde±XX with the shortest digits.
  std::string s(buf);
  size_t epos = s.find('e');
  int exp = std::atoi(s.c_str() + epos + 1);
  std::string mant = s.substr(0, epos);
  bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + e;
  }
  if (exp < 0) {
    return out + "0." + std::string(-exp - 1, '0') + digits;
  }
  if (static_cast<int>(digits.size()) <= exp + 1) {
    return out + digits + std::string(exp + 1 - digits.size(), '0');
  }
  return out + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

}  // namespace

JsonKind KindOf(const JsonValue& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      return JsonKind::kNull;
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return JsonKind::kBool;
    case rapidjson::kStringType:
      return JsonKind::kString;
    case rapidjson::kArrayType:
      return JsonKind::kArray;
    case rapidjson::kObjectType:
      return JsonKind::kObject;
    case rapidjson::kNumberType:
      if (v.IsInt64() || v.IsUint64()) return JsonKind::kInt;
      return IsIntegralDouble(v.GetDouble()) ? JsonKind::kInt
                                             : JsonKind::kFloat;
  }
  return JsonKind::kNull;
}

std::string_view KindName(JsonKind k) {
  switch (k) {
    case JsonKind::kNull:
      return "nil";
    case JsonKind::kBool:
      return "bool";
    case JsonKind::kInt:
      return "int64";
    case JsonKind::kFloat:
      return "float64";
    case JsonKind::kString:
      return "string";
    case JsonKind::kObject:
      return "map[string]interface {}";
    case JsonKind::kArray:
      return "[]interface {}";
  }
  return "?";
}

bool JsonEqual(const JsonValue& a, const JsonValue& b) {
  JsonKind ka = KindOf(a);
  if (ka != KindOf(b)) return false;
  switch (ka) {
    case JsonKind::kNull:
      return true;
    case JsonKind::kBool:
      return a.GetBool() == b.GetBool();
    case JsonKind::kInt:
      if (a.IsUint64() && !a.IsInt64()) {
        return b.IsUint64() && a.GetUint64() == b.GetUint64();
      }
      if (b.IsUint64() && !b.IsInt64()) return false;
      {
        auto as_int = [](const JsonValue& v) -> int64_t {
          return v.IsInt64() ? v.GetInt64()
                             : static_cast<int64_t>(v.GetDouble());
        };
        return as_int(a) == as_int(b);
      }
    case JsonKind::kFloat:
      return a.GetDouble() == b.GetDouble();
    case JsonKind::kString:
      return StringOf(a) == StringOf(b);
    case JsonKind::kArray: {
      if (a.Size() != b.Size()) return false;
      for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
        if (!JsonEqual(a[i], b[i])) return false;
      }
      return true;
    }
    case JsonKind::kObject: {
      if (a.MemberCount() != b.MemberCount()) return false;
      if (a.MemberCount() <= 16) {
        for (const auto& m : a.GetObject()) {
          const JsonValue* other = FindMember(b, StringOf(m.name));
          if (other == nullptr || !JsonEqual(m.value, *other)) return false;
        }
        return true;
      }
      // Wide objects: compare sorted members, n log n rather than the n^2
      // of a lookup per member (a patch's "test" value may be huge).
      auto sorted = [](const JsonValue& v) {
        std::vector<const JsonValue::Member*> ms;
        ms.reserve(v.MemberCount());
        for (const auto& m : v.GetObject()) ms.push_back(&m);
        std::stable_sort(ms.begin(), ms.end(),
                         [](const auto* x, const auto* y) {
                           return StringOf(x->name) < StringOf(y->name);
                         });
        return ms;
      };
      const auto ma = sorted(a), mb = sorted(b);
      for (size_t i = 0; i < ma.size(); ++i) {
        if (StringOf(ma[i]->name) != StringOf(mb[i]->name) ||
            !JsonEqual(ma[i]->value, mb[i]->value)) {
          return false;
        }
      }
      return true;
    }
  }
  return false;
}

std::string GoString(const JsonValue& v) {
  switch (KindOf(v)) {
    case JsonKind::kNull:
      return "<nil>";
    case JsonKind::kBool:
      return v.GetBool() ? "true" : "false";
    case JsonKind::kInt:
      if (v.IsInt64()) return std::to_string(v.GetInt64());
      if (v.IsUint64()) return std::to_string(v.GetUint64());
      return std::to_string(static_cast<int64_t>(v.GetDouble()));
    case JsonKind::kFloat:
      return GoFloat(v.GetDouble());
    case JsonKind::kString:
      return std::string(StringOf(v));
    case JsonKind::kArray: {
      std::string s = "[";
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        if (i > 0) s += " ";
        s += GoString(v[i]);
      }
      return s + "]";
    }
    case JsonKind::kObject: {
      // Go prints maps with sorted keys.
      std::vector<std::pair<std::string, const JsonValue*>> kv;
      for (const auto& m : v.GetObject()) {
        kv.emplace_back(std::string(StringOf(m.name)), &m.value);
      }
      std::sort(kv.begin(), kv.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string s = "map[";
      for (size_t i = 0; i < kv.size(); ++i) {
        if (i > 0) s += " ";
        s += kv[i].first + ":" + GoString(*kv[i].second);
      }
      return s + "]";
    }
  }
  return "";
}

std::string CanonicalJson(const JsonValue& v) { return Serialize(v, true); }

std::string GoCanonicalJson(const JsonValue& v) {
  // Outside strings JSON has none of these characters, so replacing them
  // in the whole text is exact.
  const std::string plain = CanonicalJson(v);
  std::string out;
  out.reserve(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    const char c = plain[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < plain.size() && plain[i + 1] == '\x80' &&
               (plain[i + 2] == '\xa8' || plain[i + 2] == '\xa9')) {
      out += plain[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}
std::string CompactJson(const JsonValue& v) { return Serialize(v, false); }

Status ParseJson(std::string_view text, rapidjson::Document* out) {
  json::Outcome r = json::ParseDom(text, out);
  if (r.too_deep) return InvalidArgumentError(r.Message());
  if (!r.ok()) return InvalidArgumentError("invalid JSON document");
  return Status::Ok();
}

Status CheckBounds(const JsonValue& v, const PatchLimits& limits,
                   std::string_view what) {
  json::Extent e = json::Measure(v, limits.max_bytes);
  if (e.bytes > limits.max_bytes) {
    return Status(StatusCode::kTooLarge,
                  std::string(what) + " is larger than " +
                      std::to_string(limits.max_bytes) + " bytes");
  }
  if (e.depth > limits.max_depth) {
    return InvalidArgumentError(std::string(what) + ": " +
                                json::MaxDepthMessage(limits.max_depth));
  }
  return Status::Ok();
}

const JsonValue* FindMember(const JsonValue& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  for (const auto& m : obj.GetObject()) {
    if (StringOf(m.name) == key) return &m.value;
  }
  return nullptr;
}

JsonValue* FindMember(JsonValue& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  for (auto& m : obj.GetObject()) {
    if (StringOf(m.name) == key) return &m.value;
  }
  return nullptr;
}

bool RemoveMember(JsonValue& obj, std::string_view key) {
  if (!obj.IsObject()) return false;
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    if (StringOf(it->name) == key) {
      obj.EraseMember(it);  // keeps order (RemoveMember would not)
      return true;
    }
  }
  return false;
}

void SetMember(JsonValue& obj, std::string_view key, JsonValue& value,
               JsonAllocator& alloc) {
  if (JsonValue* existing = FindMember(obj, key)) {
    *existing = value;  // rapidjson assignment moves
    return;
  }
  obj.AddMember(MakeString(key, alloc), value, alloc);
}

void SetMember(JsonValue& obj, std::string_view key, JsonValue&& value,
               JsonAllocator& alloc) {
  JsonValue v(std::move(value));
  SetMember(obj, key, v, alloc);
}

namespace {

// Below this many members an object is searched for a repeated name pair
// by pair, above through a set.
constexpr rapidjson::SizeType kScanMembers = 16;

// Marks in `last` (one flag per member of `obj`) the members whose name
// does not come again later; returns whether any does.
bool MarkLastMembers(const JsonValue& obj, std::vector<bool>* last) {
  const rapidjson::SizeType n = obj.MemberCount();
  if (last != nullptr) last->assign(n, true);
  bool repeated = false;
  auto name = [&](rapidjson::SizeType i) {
    return StringOf((obj.MemberBegin() + i)->name);
  };
  if (n <= kScanMembers) {
    for (rapidjson::SizeType i = 0; i < n; ++i) {
      for (rapidjson::SizeType j = i + 1; j < n; ++j) {
        if (name(i) != name(j)) continue;
        repeated = true;
        if (last == nullptr) return true;
        (*last)[i] = false;
        break;
      }
    }
    return repeated;
  }
  std::unordered_set<std::string_view> later;
  later.reserve(n);
  for (rapidjson::SizeType i = n; i-- > 0;) {
    if (later.insert(name(i)).second) continue;
    repeated = true;
    if (last == nullptr) return true;
    (*last)[i] = false;
  }
  return repeated;
}

}  // namespace

bool HasDuplicateMembers(const JsonValue& v) {
  if (v.IsArray()) {
    for (const auto& e : v.GetArray()) {
      if (HasDuplicateMembers(e)) return true;
    }
    return false;
  }
  if (!v.IsObject()) return false;
  if (MarkLastMembers(v, nullptr)) return true;
  for (const auto& m : v.GetObject()) {
    if (HasDuplicateMembers(m.value)) return true;
  }
  return false;
}

void KeepLastMembers(JsonValue& v) {
  if (v.IsArray()) {
    for (auto& e : v.GetArray()) KeepLastMembers(e);
    return;
  }
  if (!v.IsObject()) return;
  std::vector<bool> last;
  if (MarkLastMembers(v, &last)) {
    // Moves the kept members down in place, then drops the tail.
    const auto begin = v.MemberBegin();
    rapidjson::SizeType kept = 0;
    for (rapidjson::SizeType i = 0; i < v.MemberCount(); ++i) {
      if (!last[i]) continue;
      if (kept != i) {
        (begin + kept)->name = (begin + i)->name;  // rapidjson moves
        (begin + kept)->value = (begin + i)->value;
      }
      ++kept;
    }
    v.EraseMember(v.MemberBegin() + kept, v.MemberEnd());
  }
  for (auto& m : v.GetObject()) KeepLastMembers(m.value);
}

void StrictFindings::Add(std::string_view what, std::string_view path) {
  // sigs.k8s.io/json saves at most 100 and each (kind, path) once.
  if (texts_.size() >= 100) return;
  std::string text = std::string(what) + " " + GoQuote(path);
  if (std::find(texts_.begin(), texts_.end(), text) != texts_.end()) return;
  texts_.push_back(std::move(text));
}

void StrictFindings::Unknown(std::string_view path) {
  Add("unknown field", path);
}

void StrictFindings::Duplicate(std::string_view path) {
  Add("duplicate field", path);
}

void StrictFindings::DuplicatesIn(const JsonValue& v, std::string_view path) {
  std::string p(path);
  Walk(v, p, !p.empty());
}

// As sigs.k8s.io/json's objectInterface/arrayInterface: a repeated member
// is reported (by the path of the member) before its value is walked; a
// member's path joins with "." once anything precedes it, an index is
// "[i]".
void StrictFindings::Walk(const JsonValue& v, std::string& path, bool nested) {
  if (texts_.size() >= 100) return;
  const size_t at = path.size();
  if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      path += '[';
      path += std::to_string(i);
      path += ']';
      Walk(v[i], path, true);
      path.resize(at);
    }
    return;
  }
  if (!v.IsObject()) return;
  const bool repeated = MarkLastMembers(v, nullptr);
  std::unordered_set<std::string_view> seen;
  for (const auto& m : v.GetObject()) {
    const std::string_view key = StringOf(m.name);
    if (nested) path += '.';
    path += key;
    if (repeated && !seen.insert(key).second) Duplicate(path);
    Walk(m.value, path, true);
    path.resize(at);
  }
}

std::vector<std::string> StrictFindings::Texts(std::string_view prefix) const {
  std::vector<std::string> out;
  out.reserve(texts_.size());
  for (const std::string& t : texts_) out.push_back(std::string(prefix) + t);
  return out;
}

std::vector<std::string> DuplicateFieldErrors(const JsonValue& body) {
  StrictFindings f;
  f.DuplicatesIn(body, "");
  return f.Texts();
}

IndexedMembers::IndexedMembers(JsonValue& obj, size_t patch_members,
                               JsonAllocator& a)
    : obj_(obj), a_(a) {
  indexed_ = obj.IsObject() && obj.MemberCount() + patch_members > 32;
  if (!indexed_) return;
  at_.reserve(obj.MemberCount() + patch_members);
  for (rapidjson::SizeType i = 0; i < obj.MemberCount(); ++i) {
    at_.emplace(std::string(StringOf((obj.MemberBegin() + i)->name)), i);
  }
  removed_.assign(obj.MemberCount(), false);
}

JsonValue* IndexedMembers::Find(std::string_view k) {
  if (!indexed_) return FindMember(obj_, k);
  auto it = at_.find(std::string(k));
  return it == at_.end() ? nullptr : &(obj_.MemberBegin() + it->second)->value;
}

void IndexedMembers::Remove(std::string_view k) {
  if (!indexed_) {
    RemoveMember(obj_, k);
    return;
  }
  auto it = at_.find(std::string(k));
  if (it == at_.end()) return;
  removed_[it->second] = true;
  at_.erase(it);
}

void IndexedMembers::Set(std::string_view k, JsonValue& v) {
  if (!indexed_) {
    SetMember(obj_, k, v, a_);
    return;
  }
  if (JsonValue* existing = Find(k)) {
    *existing = v;
    return;
  }
  obj_.AddMember(MakeString(k, a_), v, a_);
  at_.emplace(std::string(k), obj_.MemberCount() - 1);
  removed_.push_back(false);
}

void IndexedMembers::Compact() {
  if (!indexed_ ||
      std::find(removed_.begin(), removed_.end(), true) == removed_.end()) {
    return;
  }
  JsonValue kept(rapidjson::kObjectType);
  for (rapidjson::SizeType i = 0; i < obj_.MemberCount(); ++i) {
    if (removed_[i]) continue;
    auto& m = *(obj_.MemberBegin() + i);
    kept.AddMember(m.name, m.value, a_);  // moves
  }
  obj_ = kept;  // moves
  indexed_ = false;
}

}  // namespace kplane::patch
