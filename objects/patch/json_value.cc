#include "objects/patch/json_value.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
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

JsonValue YamlToJson(const YAML::Node& node, JsonAllocator& alloc) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return JsonValue(rapidjson::kNullType);
    case YAML::NodeType::Sequence: {
      JsonValue arr(rapidjson::kArrayType);
      for (const auto& e : node) arr.PushBack(YamlToJson(e, alloc), alloc);
      return arr;
    }
    case YAML::NodeType::Map: {
      JsonValue obj(rapidjson::kObjectType);
      for (const auto& kv : node) {
        JsonValue v = YamlToJson(kv.second, alloc);
        SetMember(obj, kv.first.Scalar(), v, alloc);
      }
      return obj;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() == "?") {  // plain (unquoted) scalar: resolve its type
    if (s == "~" || s == "null" || s == "Null" || s == "NULL" || s.empty()) {
      return JsonValue(rapidjson::kNullType);
    }
    if (s == "true" || s == "True" || s == "TRUE") return JsonValue(true);
    if (s == "false" || s == "False" || s == "FALSE") return JsonValue(false);
    if (auto i = ParseInt64(s)) return JsonValue(static_cast<int64_t>(*i));
    bool numeric = !s.empty() &&
                   s.find_first_not_of("0123456789+-.eE") == std::string::npos;
    if (numeric) {
      if (auto d = ParseDouble(s)) return JsonValue(*d);
    }
  }
  return MakeString(s, alloc);
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
      for (const auto& m : a.GetObject()) {
        const JsonValue* other = FindMember(b, StringOf(m.name));
        if (other == nullptr || !JsonEqual(m.value, *other)) return false;
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
std::string CompactJson(const JsonValue& v) { return Serialize(v, false); }

Status ParseJson(std::string_view text, rapidjson::Document* out) {
  out->Parse(text.data(), text.size());
  if (out->HasParseError()) {
    return InvalidArgumentError("invalid JSON document");
  }
  return Status::Ok();
}

Status ParseJsonOrYaml(std::string_view text, rapidjson::Document* out) {
  std::string_view trimmed = StripWhitespace(text);
  if (!trimmed.empty() && (trimmed[0] == '{' || trimmed[0] == '[')) {
    out->Parse(text.data(), text.size());
    if (!out->HasParseError()) return Status::Ok();
  }
  // yaml-cpp reports malformed input by throwing; this is the boundary.
  try {
    YAML::Node node = YAML::Load(std::string(text));
    out->SetNull();
    JsonValue v = YamlToJson(node, out->GetAllocator());
    static_cast<JsonValue&>(*out) = v;
    return Status::Ok();
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("error converting YAML to JSON: ") +
                                e.what());
  }
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

}  // namespace kplane::patch
