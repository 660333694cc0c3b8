#include "objects/yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include "objects/time.h"
#include "base/base64.h"

namespace kplane::objects {
namespace {

using rapidjson::Document;
using rapidjson::Value;
using Allocator = rapidjson::MemoryPoolAllocator<>;

// Aliases can make a small document expand enormously ("billion laughs");
// go-yaml refuses excessive aliasing too.
constexpr size_t kMaxNodes = 1 << 20;

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// A plain scalar typed by go-yaml v2's rules.
struct Resolved {
  enum Kind { kNull, kBool, kInt, kUint, kFloat, kString } kind = kString;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;  // kString: the (possibly rewritten) text
};

bool OneOf(std::string_view s, std::initializer_list<std::string_view> set) {
  for (std::string_view x : set) {
    if (s == x) return true;
  }
  return false;
}

bool AllDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return false;
    }
    if (v >= base) return false;
  }
  return true;
}

// Go's strconv.ParseInt/ParseUint with base 0 (prefixes 0x, 0o, 0b, and a
// leading 0 for octal). Returns false when the text is not such an integer;
// sets *overflow when it is one but does not fit.
bool ParseGoInteger(std::string_view s, bool* negative, uint64_t* magnitude) {
  *negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    *negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (!AllDigits(s, base)) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *magnitude, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool IsYamlFloat(std::string_view s) {
  // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// "2024-1-2" style dates (go-yaml's timestamp form without a time).
std::optional<std::string> DateOnly(std::string_view s) {
  int y = 0, m = 0, d = 0;
  size_t i = 0;
  auto num = [&](int min_len, int max_len, int* out) {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' &&
           static_cast<int>(i - start) < max_len) {
      *out = *out * 10 + (s[i] - '0');
      ++i;
    }
    return static_cast<int>(i - start) >= min_len;
  };
  if (!num(4, 4, &y) || i >= s.size() || s[i++] != '-' || !num(1, 2, &m) ||
      i >= s.size() || s[i++] != '-' || !num(1, 2, &d) || i != s.size()) {
    return std::nullopt;
  }
  if (m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT00:00:00Z", y, m, d);
  return std::string(buf);
}

Resolved ResolvePlain(std::string_view s) {
  Resolved r;
  if (OneOf(s, {"", "~", "null", "Null", "NULL"})) {
    r.kind = Resolved::kNull;
    return r;
  }
  if (OneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on",
                "On", "ON"})) {
    r.kind = Resolved::kBool;
    r.b = true;
    return r;
  }
  if (OneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off",
                "Off", "OFF"})) {
    r.kind = Resolved::kBool;
    return r;
  }
  if (OneOf(s, {".nan", ".NaN", ".NAN"})) {
    r.kind = Resolved::kFloat;
    r.d = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  if (OneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    r.kind = Resolved::kFloat;
    r.d = std::numeric_limits<double>::infinity();
    return r;
  }
  if (OneOf(s, {"-.inf", "-.Inf", "-.INF"})) {
    r.kind = Resolved::kFloat;
    r.d = -std::numeric_limits<double>::infinity();
    return r;
  }
  const char c = s[0];
  if (c == '.' || c == '+' || c == '-' || (c >= '0' && c <= '9')) {
    if (c >= '0' && c <= '9') {
      if (auto date = DateOnly(s)) {
        r.kind = Resolved::kString;
        r.s = *date;
        return r;
      }
    }
    std::string plain;
    plain.reserve(s.size());
    for (char ch : s) {
      if (ch != '_') plain += ch;
    }
    bool negative;
    uint64_t mag;
    if (c != '.' && ParseGoInteger(plain, &negative, &mag)) {
      if (!negative &&
          mag <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        r.kind = Resolved::kInt;
        r.i = static_cast<int64_t>(mag);
        return r;
      }
      if (negative && mag <= uint64_t{1} << 63) {
        r.kind = Resolved::kInt;
        r.i = static_cast<int64_t>(0 - mag);
        return r;
      }
      if (!negative) {
        r.kind = Resolved::kUint;
        r.u = mag;
        return r;
      }
    }
    if (IsYamlFloat(plain)) {
      double d = 0;
      auto res = std::from_chars(plain.data() + (plain[0] == '+' ? 1 : 0),
                                 plain.data() + plain.size(), d);
      if (res.ec == std::errc() || res.ec == std::errc::result_out_of_range) {
        r.kind = Resolved::kFloat;
        r.d = d;
        return r;
      }
    }
  }
  r.kind = Resolved::kString;
  r.s = std::string(s);
  return r;
}

class Converter {
 public:
  explicit Converter(Allocator* alloc) : alloc_(*alloc) {}

  Status Convert(const YAML::Node& node, Value* out) {
    if (++nodes_ > kMaxNodes) {
      return InvalidArgumentError(
          "yaml: document too large after expanding aliases");
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out->SetNull();
        return Status::Ok();
      case YAML::NodeType::Scalar:
        return Scalar(node, out);
      case YAML::NodeType::Sequence: {
        out->SetArray();
        for (const YAML::Node& item : node) {
          Value v;
          RETURN_IF_ERROR(Convert(item, &v));
          out->PushBack(v, alloc_);
        }
        return Status::Ok();
      }
      case YAML::NodeType::Map:
        return Map(node, out);
    }
    return InvalidArgumentError("yaml: unsupported node");
  }

 private:
  static bool IsMergeKey(const YAML::Node& key) {
    return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<";
  }

  Status KeyString(const YAML::Node& key, std::string* out) {
    if (!key.IsScalar()) {
      return InvalidArgumentError(
          "yaml: only scalar map keys have a JSON form");
    }
    if (key.Tag() != "?") {
      *out = key.Scalar();
      return Status::Ok();
    }
    Resolved r = ResolvePlain(key.Scalar());
    switch (r.kind) {
      case Resolved::kNull:
        return InvalidArgumentError("yaml: a null map key has no JSON form");
      case Resolved::kBool:
        *out = r.b ? "true" : "false";
        return Status::Ok();
      case Resolved::kInt:
        *out = std::to_string(r.i);
        return Status::Ok();
      case Resolved::kUint:
        *out = std::to_string(r.u);
        return Status::Ok();
      case Resolved::kFloat:
      case Resolved::kString:
        *out = key.Scalar();
        return Status::Ok();
    }
    return Status::Ok();
  }

  // Explicit keys win over merged ones; among merged maps the first wins.
  Status Map(const YAML::Node& node, Value* out) {
    out->SetObject();
    std::set<std::string> explicit_keys;
    for (const auto& kv : node) {
      if (IsMergeKey(kv.first)) continue;
      std::string key;
      RETURN_IF_ERROR(KeyString(kv.first, &key));
      explicit_keys.insert(key);
      Value v;
      RETURN_IF_ERROR(Convert(kv.second, &v));
      out->AddMember(
          Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()),
                alloc_),
          v, alloc_);
    }
    std::set<std::string> merged;
    for (const auto& kv : node) {
      if (!IsMergeKey(kv.first)) continue;
      std::vector<YAML::Node> sources;
      if (kv.second.IsMap()) {
        sources.push_back(kv.second);
      } else if (kv.second.IsSequence()) {
        for (const YAML::Node& s : kv.second) sources.push_back(s);
      }
      for (const YAML::Node& src : sources) {
        if (!src.IsMap()) {
          return InvalidArgumentError(
              "yaml: map merge requires map or sequence of maps");
        }
        for (const auto& m : src) {
          std::string key;
          RETURN_IF_ERROR(KeyString(m.first, &key));
          if (explicit_keys.count(key) || !merged.insert(key).second) continue;
          Value v;
          RETURN_IF_ERROR(Convert(m.second, &v));
          out->AddMember(
              Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()),
                    alloc_),
              v, alloc_);
        }
      }
    }
    return Status::Ok();
  }

  void SetString(std::string_view s, Value* out) {
    out->SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()),
                   alloc_);
  }

  Status Float(double d, Value* out) {
    if (!std::isfinite(d)) {
      return InvalidArgumentError("yaml: NaN and infinity have no JSON form");
    }
    // Go's json.Marshal writes integral floats below 1e21 without a
    // fraction, so they reach the decoder as integers.
    if (std::trunc(d) == d && std::fabs(d) < 1e21) {
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
        out->SetInt64(static_cast<int64_t>(d));
        return Status::Ok();
      }
      if (d >= 0 && d < 18446744073709551616.0) {
        out->SetUint64(static_cast<uint64_t>(d));
        return Status::Ok();
      }
    }
    out->SetDouble(d);
    return Status::Ok();
  }

  Status Resolve(const Resolved& r, Value* out) {
    switch (r.kind) {
      case Resolved::kNull:
        out->SetNull();
        return Status::Ok();
      case Resolved::kBool:
        out->SetBool(r.b);
        return Status::Ok();
      case Resolved::kInt:
        out->SetInt64(r.i);
        return Status::Ok();
      case Resolved::kUint:
        out->SetUint64(r.u);
        return Status::Ok();
      case Resolved::kFloat:
        return Float(r.d, out);
      case Resolved::kString:
        SetString(r.s, out);
        return Status::Ok();
    }
    return Status::Ok();
  }

  Status Scalar(const YAML::Node& node, Value* out) {
    const std::string& tag = node.Tag();
    const std::string& text = node.Scalar();
    if (tag == "?") return Resolve(ResolvePlain(text), out);
    if (tag.rfind(kTagPrefix, 0) == 0) {
      std::string_view kind = std::string_view(tag).substr(kTagPrefix.size());
      if (kind == "binary") {
        std::string compact;
        for (char c : text) {
          if (c != '\n' && c != '\r' && c != ' ') compact += c;
        }
        StatusOr<std::string> bytes = Base64Decode(compact);
        if (!bytes.ok()) {
          return InvalidArgumentError("yaml: !!binary value is not base64");
        }
        SetString(*bytes, out);
        return Status::Ok();
      }
      if (kind == "int" || kind == "float" || kind == "bool" ||
          kind == "null") {
        Resolved r = ResolvePlain(text);
        const bool ok = (kind == "int" && (r.kind == Resolved::kInt ||
                                           r.kind == Resolved::kUint)) ||
                        (kind == "float" && (r.kind == Resolved::kFloat ||
                                             r.kind == Resolved::kInt ||
                                             r.kind == Resolved::kUint)) ||
                        (kind == "bool" && r.kind == Resolved::kBool) ||
                        (kind == "null" && r.kind == Resolved::kNull);
        if (!ok) {
          return InvalidArgumentError("yaml: cannot decode \"" + text +
                                      "\" as !!" + std::string(kind));
        }
        return Resolve(r, out);
      }
    }
    // Quoted scalars ("!"), !!str and unknown tags are strings.
    SetString(text, out);
    return Status::Ok();
  }

  Allocator& alloc_;
  size_t nodes_ = 0;
};

Status YamlError(const YAML::Exception& e) {
  return InvalidArgumentError("yaml: line " + std::to_string(e.mark.line + 1) +
                              ", column " + std::to_string(e.mark.column + 1) +
                              ": " + e.msg);
}

// ---------------------------------------------------------------------------
// Output

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  if (ResolvePlain(s).kind != Resolved::kString || s == "<<") return true;
  // Timestamps: go-yaml would read them back as times (and a date-only one
  // as a different string); kubectl prints them quoted.
  if (DateOnly(s) || ParseRfc3339(s).ok()) return true;
  const char first = s.front();
  if (first == ' ' || s.back() == ' ' || s.back() == ':') return true;
  if (std::string_view("?:,[]{}#&*!|>'\"%@`").find(first) !=
      std::string_view::npos) {
    return true;
  }
  if (first == '-' && (s.size() == 1 || s[1] == ' ')) return true;  // "- x"
  if (s.rfind("---", 0) == 0 || s.rfind("...", 0) == 0) return true;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == ':' && i + 1 < s.size() && s[i + 1] == ' ') return true;
    if (c == '#' && i > 0 && s[i - 1] == ' ') return true;
  }
  return false;
}

void AppendQuoted(std::string_view s, std::string* out) {
  *out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02X", c);
          *out += buf;
        } else {
          *out += ch;
        }
    }
  }
  *out += '"';
}

void AppendString(std::string_view s, std::string* out) {
  if (NeedsQuotes(s)) {
    AppendQuoted(s, out);
  } else {
    *out += s;
  }
}

void AppendScalar(const Value& v, std::string* out) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      *out += "null";
      return;
    case rapidjson::kFalseType:
      *out += "false";
      return;
    case rapidjson::kTrueType:
      *out += "true";
      return;
    case rapidjson::kObjectType:
      *out += "{}";
      return;
    case rapidjson::kArrayType:
      *out += "[]";
      return;
    case rapidjson::kStringType:
      AppendString(std::string_view(v.GetString(), v.GetStringLength()), out);
      return;
    case rapidjson::kNumberType:
      if (v.IsInt64()) {
        *out += std::to_string(v.GetInt64());
      } else if (v.IsUint64()) {
        *out += std::to_string(v.GetUint64());
      } else {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof(buf), v.GetDouble());
        out->append(buf, r.ptr);
      }
      return;
  }
}

void Indent(int n, std::string* out) {
  out->append(static_cast<size_t>(n), ' ');
}

void AppendSequence(const Value& arr, int indent, bool first_inline,
                    std::string* out);

void AppendMapping(const Value& obj, int indent, bool first_inline,
                   std::string* out) {
  std::vector<const Value::Member*> members;
  members.reserve(obj.MemberCount());
  for (const auto& m : obj.GetObject()) members.push_back(&m);
  std::stable_sort(members.begin(), members.end(), [](auto* a, auto* b) {
    return std::string_view(a->name.GetString(), a->name.GetStringLength()) <
           std::string_view(b->name.GetString(), b->name.GetStringLength());
  });
  bool first = true;
  for (const Value::Member* m : members) {
    if (!(first && first_inline)) Indent(indent, out);
    first = false;
    AppendString(
        std::string_view(m->name.GetString(), m->name.GetStringLength()), out);
    *out += ':';
    const Value& v = m->value;
    if (v.IsObject() && v.MemberCount() > 0) {
      *out += '\n';
      AppendMapping(v, indent + 2, false, out);
    } else if (v.IsArray() && !v.Empty()) {
      *out += '\n';
      AppendSequence(v, indent, false, out);  // go-yaml: not indented
    } else {
      *out += ' ';
      AppendScalar(v, out);
      *out += '\n';
    }
  }
}

void AppendSequence(const Value& arr, int indent, bool first_inline,
                    std::string* out) {
  bool first = true;
  for (const Value& item : arr.GetArray()) {
    if (!(first && first_inline)) Indent(indent, out);
    first = false;
    *out += "- ";
    if (item.IsObject() && item.MemberCount() > 0) {
      AppendMapping(item, indent + 2, true, out);
    } else if (item.IsArray() && !item.Empty()) {
      AppendSequence(item, indent + 2, true, out);
    } else {
      AppendScalar(item, out);
      *out += '\n';
    }
  }
}

}  // namespace

StatusOr<std::vector<rapidjson::Document>> ParseYamlStream(
    std::string_view yaml) {
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return YamlError(e);
  }
  std::vector<Document> docs;
  for (const YAML::Node& node : nodes) {
    if (node.IsNull() || !node.IsDefined()) continue;
    Document doc;
    try {
      Converter conv(&doc.GetAllocator());
      RETURN_IF_ERROR(conv.Convert(node, &doc));
    } catch (const YAML::Exception& e) {
      return YamlError(e);
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

StatusOr<rapidjson::Document> ParseYamlDocument(std::string_view yaml) {
  ASSIGN_OR_RETURN(std::vector<Document> docs, ParseYamlStream(yaml));
  if (docs.size() != 1) {
    return InvalidArgumentError(docs.empty()
                                    ? "yaml: empty document"
                                    : "yaml: expected one document, got " +
                                          std::to_string(docs.size()));
  }
  return std::move(docs.front());
}

std::string JsonToYaml(const rapidjson::Value& value) {
  std::string out;
  if (value.IsObject() && value.MemberCount() > 0) {
    AppendMapping(value, 0, false, &out);
  } else if (value.IsArray() && !value.Empty()) {
    AppendSequence(value, 0, false, &out);
  } else {
    AppendScalar(value, &out);
    out += '\n';
  }
  return out;
}

StatusOr<DecodeResult> DecodeYaml(std::string_view yaml,
                                  google::protobuf::Message* msg) {
  ASSIGN_OR_RETURN(Document doc, ParseYamlDocument(yaml));
  return DecodeJsonValue(doc, msg);
}

std::string EncodeYaml(const google::protobuf::Message& msg,
                       const TypeMeta& type_meta) {
  Document doc;
  Value v = ToJsonValue(msg, doc.GetAllocator(), type_meta);
  return JsonToYaml(v);
}

}  // namespace kplane::objects
