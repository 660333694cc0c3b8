#include "apiserver/crd_schema.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#include "base/base64.h"
#include "base/strings.h"
#include "base/utf8.h"
#include "objects/machinery/validation.h"
#include "objects/time.h"

namespace kplane::apiserver {
namespace {

using validation::Path;
using Alloc = rapidjson::Document::AllocatorType;

const rapidjson::Value* Member(const rapidjson::Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() ? nullptr : &it->value;
}
std::string Str(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}
std::string_view Name(const rapidjson::Value& name) {
  return std::string_view(name.GetString(), name.GetStringLength());
}

// Go's %v of a float64 (shortest representation, as strconv 'g' -1).
std::string GoFloat(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

// The canonical JSON of a value: object members sorted by name, integral
// numbers written as integers (1 and 1.0 are one value).
void WriteCanonical(const rapidjson::Value& v,
                    rapidjson::Writer<rapidjson::StringBuffer>* w) {
  if (v.IsObject()) {
    std::vector<const rapidjson::Value::Member*> members;
    for (const auto& m : v.GetObject()) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      return Name(a->name) < Name(b->name);
    });
    w->StartObject();
    for (const auto* m : members) {
      w->Key(m->name.GetString(), m->name.GetStringLength());
      WriteCanonical(m->value, w);
    }
    w->EndObject();
  } else if (v.IsArray()) {
    w->StartArray();
    for (const rapidjson::Value& e : v.GetArray()) WriteCanonical(e, w);
    w->EndArray();
  } else if (v.IsDouble() && std::isfinite(v.GetDouble()) &&
             std::trunc(v.GetDouble()) == v.GetDouble() &&
             std::fabs(v.GetDouble()) < 9.2e18) {
    w->Int64(static_cast<int64_t>(v.GetDouble()));
  } else {
    v.Accept(*w);
  }
}

}  // namespace

std::string Canonical(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  WriteCanonical(v, &w);
  return std::string(buf.GetString(), buf.GetSize());
}

namespace {

// How kube prints a bad value: strings quoted, numbers and booleans as Go's
// %v, null as "null", objects and arrays as JSON.
std::string GoValue(const rapidjson::Value& v) {
  if (v.IsString()) return GoQuote(Name(v));
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsNull()) return "null";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsDouble()) return GoFloat(v.GetDouble());
  return Canonical(v);
}

// kube-openapi's name of a JSON value's type.
std::string TypeName(const rapidjson::Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "boolean";
  if (v.IsString()) return "string";
  if (v.IsObject()) return "object";
  if (v.IsArray()) return "array";
  if (v.IsInt64() || v.IsUint64()) return "integer";
  return "number";
}

bool IsInteger(const rapidjson::Value& v) {
  if (v.IsInt64() || v.IsUint64()) return true;
  return v.IsDouble() && std::isfinite(v.GetDouble()) &&
         std::trunc(v.GetDouble()) == v.GetDouble();
}

bool HasType(const rapidjson::Value& v, std::string_view type) {
  if (type == "object") return v.IsObject();
  if (type == "array") return v.IsArray();
  if (type == "string") return v.IsString();
  if (type == "boolean") return v.IsBool();
  if (type == "integer") return IsInteger(v);
  if (type == "number") return v.IsNumber();
  return true;
}

double AsDouble(const rapidjson::Value& v) {
  if (v.IsInt64()) return static_cast<double>(v.GetInt64());
  if (v.IsUint64()) return static_cast<double>(v.GetUint64());
  return v.GetDouble();
}

// A limit for the int-taking field.Error constructors.
int ClampInt(int64_t v) {
  return static_cast<int>(std::clamp<int64_t>(
      v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

bool IsHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isxdigit(c) != 0; });
}

bool IsDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  const int year = std::stoi(std::string(s.substr(0, 4)));
  const int month = std::stoi(std::string(s.substr(5, 2)));
  const int day = std::stoi(std::string(s.substr(8, 2)));
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1]) {
    return false;
  }
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return !(month == 2 && day == 29 && !leap);
}

// Whether a string has the schema's format; formats kplane does not know
// pass, as unknown formats do in kube.
bool HasStringFormat(std::string_view format, std::string_view s) {
  if (format == "date-time" || format == "datetime") {
    return objects::ParseRfc3339(s).ok();
  }
  if (format == "date") return IsDate(s);
  if (format == "byte") return Base64Decode(s).ok();
  if (format == "uuid") {
    if (s.size() != 36) return false;
    for (size_t i : {8, 13, 18, 23}) {
      if (s[i] != '-') return false;
    }
    return IsHex(s.substr(0, 8)) && IsHex(s.substr(9, 4)) &&
           IsHex(s.substr(14, 4)) && IsHex(s.substr(19, 4)) &&
           IsHex(s.substr(24));
  }
  if (format == "ipv4") return validation::IsIPv4(s);
  if (format == "ipv6") return validation::IsIPv6(s);
  if (format == "cidr") return validation::IsCIDR(s);
  if (format == "hostname") {
    std::string lower(s);
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    return s.size() <= 255 && machinery::IsDNS1123Subdomain(lower).empty();
  }
  return true;
}

// kube-openapi's type error: `<p>: Invalid value: "string": <p> in body
// must be of type integer: "string"`.
FieldError TypeError(const Path& p, std::string_view type,
                     const std::string& actual) {
  return validation::Invalid(p, GoQuote(actual),
                             p.str() + " in body must be of type " +
                                 std::string(type) + ": " + GoQuote(actual));
}

// --- building ---------------------------------------------------------------

struct BuildState {
  FieldErrors* errs;
  int nodes = 0;
  bool too_many_reported = false;
  int64_t pattern_bytes = 0;  // kMaxCrdPatternBytes' count so far
  bool patterns_reported = false;
  // Each distinct valid pattern compiled once (a name pattern is often
  // repeated on every field that holds a name).
  std::map<std::string, std::shared_ptr<const re2::RE2>, std::less<>>
      compiled_patterns;
  void Add(FieldError e) {
    if (errs != nullptr) errs->push_back(std::move(e));
  }
};

enum class Level { kRoot, kProperty, kItems, kAdditional };

std::optional<int64_t> IntMember(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = Member(v, key);
  if (m == nullptr || !IsInteger(*m)) return std::nullopt;
  if (m->IsInt64()) return m->GetInt64();
  // Beyond int64 (a uint64 or a huge integral double): as good as no limit
  // for maxima, and the converse for minima; clamped, never overflowed.
  const double d = AsDouble(*m);
  if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}
std::optional<double> NumMember(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = Member(v, key);
  if (m == nullptr || !m->IsNumber()) return std::nullopt;
  return AsDouble(*m);
}
bool BoolMember(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = Member(v, key);
  return m != nullptr && m->IsBool() && m->GetBool();
}
std::string StrMember(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = Member(v, key);
  return m != nullptr && m->IsString() ? Str(*m) : "";
}

void ValidateNode(const CrdSchemaNode& n, const rapidjson::Value& v,
                  const Path& p, bool root, FieldErrors* errs);
void PruneNode(const CrdSchemaNode& n, rapidjson::Value* v, const Path& p,
               bool root, std::vector<std::string>* unknown);

// Root metadata may only constrain name and generateName (kube's
// structural schema rule).
bool MetadataSchemaAllowed(const rapidjson::Value& meta) {
  if (!meta.IsObject()) return false;
  for (const auto& m : meta.GetObject()) {
    const std::string_view key = Name(m.name);
    if (key == "type") {
      if (!m.value.IsString() || Name(m.value) != "object") return false;
      continue;
    }
    if (key == "description") continue;
    if (key != "properties" || !m.value.IsObject()) return false;
    for (const auto& prop : m.value.GetObject()) {
      const std::string_view name = Name(prop.name);
      if (name != "name" && name != "generateName") return false;
    }
  }
  return true;
}

// `pattern` compiled within the memory it is counted at, and counted
// against the schema's kMaxCrdPatternBytes; null (and an error added) when
// it is not a valid RE2 or the schema's patterns already took their bound.
std::shared_ptr<const re2::RE2> CompilePattern(const std::string& pattern,
                                               const Path& p, BuildState* st) {
  re2::RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_max_mem(kMaxPatternProgramBytes);
  auto re = std::make_shared<re2::RE2>(pattern, opts);
  // RE2 keeps a compiled pattern (its programs and the DFA caches they
  // grow while matching) within max_mem: give each what its program
  // needs plus kPatternDfaBytes, count that, and compile again with it
  // (the first compile, at the most a pattern may take, told the size).
  int64_t mem = kMaxPatternProgramBytes;
  if (re->ok()) {
    mem = std::min<int64_t>(
        kMaxPatternProgramBytes,
        kPatternBytesPerInstruction * re->ProgramSize() + kPatternDfaBytes);
    if (mem < kMaxPatternProgramBytes) {
      opts.set_max_mem(mem);
      auto bounded = std::make_shared<re2::RE2>(pattern, opts);
      if (bounded->ok()) {
        re = std::move(bounded);
      } else {
        mem = kMaxPatternProgramBytes;
      }
    }
  }
  if (!re->ok()) {
    st->Add(validation::InvalidString(
        p.Child("pattern"), pattern,
        "must be a valid regular expression, but isn't: " + re->error()));
    return nullptr;
  }
  if ((st->pattern_bytes += mem) > kMaxCrdPatternBytes) {
    if (!st->patterns_reported) {
      st->patterns_reported = true;
      st->Add(validation::Forbidden(
          p.Child("pattern"), "the schema's patterns would take more than " +
                                  std::to_string(kMaxCrdPatternBytes >> 20) +
                                  " MiB once compiled (kplane's limit)"));
    }
    return nullptr;
  }
  return re;
}

// Reports the first name listed twice in `names` (at its second index).
void RefuseFirstDuplicate(const std::vector<std::string>& names, const Path& p,
                          BuildState* st) {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!seen.insert(names[i]).second) {
      st->Add(validation::Duplicate(p.Index(static_cast<int>(i)),
                                    GoQuote(names[i])));
      return;
    }
  }
}

std::unique_ptr<CrdSchemaNode> BuildNode(const rapidjson::Value& v,
                                         const Path& p, Level level, int depth,
                                         BuildState* st) {
  auto n = std::make_unique<CrdSchemaNode>();
  if (++st->nodes > kMaxCrdSchemaNodes) {
    if (!st->too_many_reported) {
      st->too_many_reported = true;
      st->Add(validation::Forbidden(p, "the schema has more than " +
                                           std::to_string(kMaxCrdSchemaNodes) +
                                           " nested schemas (kplane's limit)"));
    }
    return n;
  }
  if (depth > kMaxCrdSchemaDepth) {
    st->Add(validation::Forbidden(p, "must not be nested deeper than " +
                                         std::to_string(kMaxCrdSchemaDepth) +
                                         " levels (kplane's limit)"));
    return n;
  }
  if (!v.IsObject()) {
    st->Add(validation::Invalid(p, GoValue(v), "must be an object"));
    return n;
  }
  n->type = StrMember(v, "type");
  n->format = StrMember(v, "format");
  n->nullable = BoolMember(v, "nullable");
  n->preserve_unknown_fields =
      BoolMember(v, "x-kubernetes-preserve-unknown-fields");
  n->int_or_string = BoolMember(v, "x-kubernetes-int-or-string");
  n->embedded_resource = BoolMember(v, "x-kubernetes-embedded-resource");
  n->list_type = StrMember(v, "x-kubernetes-list-type");
  n->minimum = NumMember(v, "minimum");
  n->maximum = NumMember(v, "maximum");
  n->multiple_of = NumMember(v, "multipleOf");
  n->exclusive_minimum = BoolMember(v, "exclusiveMinimum");
  n->exclusive_maximum = BoolMember(v, "exclusiveMaximum");
  n->min_length = IntMember(v, "minLength");
  n->max_length = IntMember(v, "maxLength");
  n->min_items = IntMember(v, "minItems");
  n->max_items = IntMember(v, "maxItems");
  n->min_properties = IntMember(v, "minProperties");
  n->max_properties = IntMember(v, "maxProperties");
  if (const rapidjson::Value* r = Member(v, "required");
      r != nullptr && r->IsArray()) {
    for (const rapidjson::Value& e : r->GetArray()) {
      if (e.IsString()) n->required.push_back(Str(e));
    }
  }
  if (const rapidjson::Value* k = Member(v, "x-kubernetes-list-map-keys");
      k != nullptr && k->IsArray()) {
    for (const rapidjson::Value& e : k->GetArray()) {
      if (e.IsString()) n->list_map_keys.push_back(Str(e));
    }
  }
  if (const rapidjson::Value* e = Member(v, "enum");
      e != nullptr && e->IsArray()) {
    n->enum_values.CopyFrom(*e, n->enum_values.GetAllocator());
    for (const rapidjson::Value& x : e->GetArray()) {
      n->enum_keys.push_back(Canonical(x));
    }
  }

  // Structural rules (apiextensions' structural/validation.go).
  static const std::vector<std::string> kTypes = {
      "array", "boolean", "integer", "number", "object", "string"};
  if (n->type.empty()) {
    const bool allowed = n->int_or_string || n->embedded_resource ||
                         (level != Level::kRoot && n->preserve_unknown_fields);
    if (!allowed && level != Level::kRoot) {
      st->Add(validation::Required(
          p.Child("type"), level == Level::kItems
                               ? "must not be empty for specified array items"
                               : "must not be empty for specified object "
                                 "fields"));
    }
  } else if (std::find(kTypes.begin(), kTypes.end(), n->type) == kTypes.end()) {
    st->Add(validation::NotSupportedString(p.Child("type"), n->type, kTypes));
  }
  if (n->int_or_string && !n->type.empty()) {
    st->Add(validation::InvalidString(
        p.Child("type"), n->type,
        "must be empty if x-kubernetes-int-or-string is true"));
  }
  if (const rapidjson::Value* pu =
          Member(v, "x-kubernetes-preserve-unknown-fields");
      pu != nullptr && pu->IsBool() && !pu->GetBool()) {
    st->Add(validation::Invalid(p.Child("x-kubernetes-preserve-unknown-fields"),
                                "false", "must be true or undefined"));
  }
  if (BoolMember(v, "uniqueItems")) {
    st->Add(validation::Forbidden(
        p.Child("uniqueItems"),
        "uniqueItems cannot be set to true since the runtime complexity "
        "becomes quadratic"));
  }
  if (Member(v, "$ref") != nullptr) {
    st->Add(validation::Forbidden(p.Child("$ref"), "$ref is not supported"));
  }
  if (n->embedded_resource && !n->type.empty() && n->type != "object") {
    st->Add(validation::InvalidString(
        p.Child("type"), n->type,
        "must be object if x-kubernetes-embedded-resource is true"));
  }
  if (!n->list_type.empty()) {
    if (n->list_type != "atomic" && n->list_type != "set" &&
        n->list_type != "map") {
      st->Add(validation::NotSupportedString(p.Child("x-kubernetes-list-type"),
                                             n->list_type,
                                             {"atomic", "set", "map"}));
    } else if (n->type != "array") {
      st->Add(validation::InvalidString(p.Child("x-kubernetes-list-type"),
                                        n->list_type,
                                        "must only be used on type array"));
    }
    if (n->list_type == "map" && n->list_map_keys.empty()) {
      st->Add(validation::Required(
          p.Child("x-kubernetes-list-map-keys"),
          "must not be empty if x-kubernetes-list-type is map"));
    }
  }
  if (n->list_type != "map" && !n->list_map_keys.empty()) {
    st->Add(validation::Forbidden(
        p.Child("x-kubernetes-list-map-keys"),
        "must not be set if x-kubernetes-list-type is not map"));
  }
  if (const rapidjson::Value* pat = Member(v, "pattern");
      pat != nullptr && pat->IsString()) {
    n->pattern = Str(*pat);
    if (auto it = st->compiled_patterns.find(n->pattern);
        it != st->compiled_patterns.end()) {
      n->pattern_re = it->second;
    } else {
      n->pattern_re = CompilePattern(n->pattern, p, st);
      if (n->pattern_re != nullptr) {
        st->compiled_patterns.emplace(n->pattern, n->pattern_re);
      }
    }
  }

  const rapidjson::Value* props = Member(v, "properties");
  if (props != nullptr && props->IsObject()) {
    for (const auto& m : props->GetObject()) {
      const std::string key(Name(m.name));
      const Path pp = p.Child("properties").Key(key);
      if (level == Level::kRoot && key == "metadata" &&
          !MetadataSchemaAllowed(m.value)) {
        st->Add(validation::Forbidden(
            pp,
            "must not specify anything other than name and generateName, but "
            "metadata is implicitly specified"));
      }
      n->properties[key] =
          BuildNode(m.value, pp, Level::kProperty, depth + 1, st);
    }
  }
  if (const rapidjson::Value* ap = Member(v, "additionalProperties")) {
    if (ap->IsBool()) {
      if (ap->GetBool()) {
        n->additional_properties_any = true;
      } else {
        st->Add(validation::Forbidden(
            p.Child("additionalProperties"),
            "additionalProperties cannot be set to false"));
      }
    } else {
      n->additional_properties = BuildNode(*ap, p.Child("additionalProperties"),
                                           Level::kAdditional, depth + 1, st);
    }
    if (!n->properties.empty()) {
      st->Add(validation::Forbidden(
          p.Child("additionalProperties"),
          "additionalProperties and properties are mutual exclusive"));
    }
  }
  if (const rapidjson::Value* items = Member(v, "items")) {
    if (items->IsArray()) {
      st->Add(validation::Forbidden(p.Child("items"),
                                    "items must be a schema object and not an "
                                    "array"));
    } else {
      n->items =
          BuildNode(*items, p.Child("items"), Level::kItems, depth + 1, st);
    }
  } else if (n->type == "array") {
    st->Add(validation::Required(p.Child("items"),
                                 "must be specified if type is array"));
  }
  if (n->embedded_resource && n->properties.empty() &&
      !n->preserve_unknown_fields) {
    st->Add(validation::Required(
        p.Child("properties"),
        "must not be empty if x-kubernetes-embedded-resource is true without "
        "x-kubernetes-preserve-unknown-fields"));
  }
  // Each listed once (kube refuses duplicates): every item's check walks
  // the keys, and a key listed 100,000 times made one item cost gigabytes.
  RefuseFirstDuplicate(n->list_map_keys, p.Child("x-kubernetes-list-map-keys"),
                       st);
  RefuseFirstDuplicate(n->required, p.Child("required"), st);
  if (n->list_type == "map" && n->items != nullptr) {
    for (const std::string& key : n->list_map_keys) {
      if (n->items->properties.count(key) == 0) {
        st->Add(validation::InvalidString(
            p.Child("x-kubernetes-list-map-keys"), key,
            "entries must all be names of item properties"));
      }
    }
  }

  // The default: pruned as a value of this schema, then it must be valid.
  if (const rapidjson::Value* d = Member(v, "default")) {
    if (level == Level::kRoot) {
      st->Add(validation::Forbidden(p.Child("default"),
                                    "must not be set at the root"));
    } else {
      rapidjson::Document def;
      def.CopyFrom(*d, def.GetAllocator());
      std::vector<std::string> dropped;
      PruneNode(*n, &def, Path(), false, &dropped);
      FieldErrors invalid;
      ValidateNode(*n, def, p.Child("default"), false, &invalid);
      if (!dropped.empty()) {
        st->Add(validation::Invalid(
            p.Child("default"), GoValue(*d),
            "must not have unknown fields, got: " + StrJoin(dropped, ", ")));
      }
      for (FieldError& e : invalid) st->Add(std::move(e));
      if (invalid.empty() && dropped.empty()) n->default_value = std::move(def);
    }
  }
  return n;
}

// --- validation -------------------------------------------------------------

void ValidateNode(const CrdSchemaNode& n, const rapidjson::Value& v,
                  const Path& p, bool root, FieldErrors* errs) {
  const std::string& name = p.str();
  if (v.IsNull()) {
    if (!n.nullable && !n.type.empty()) {
      errs->push_back(TypeError(p, n.type, "null"));
    }
    return;
  }
  if (n.int_or_string) {
    if (!v.IsString() && !IsInteger(v)) {
      errs->push_back(TypeError(p, "integer or string", TypeName(v)));
      return;
    }
  } else if (!n.type.empty() && !HasType(v, n.type)) {
    errs->push_back(TypeError(p, n.type, TypeName(v)));
    return;
  }

  if (v.IsString()) {
    const std::string_view s = Name(v);
    // kube-openapi counts runes.
    const auto len = static_cast<int64_t>(Utf8RuneCount(s));
    if (n.max_length && len > *n.max_length) {
      errs->push_back(validation::TooLong(p, ClampInt(*n.max_length)));
    }
    if (n.min_length && len < *n.min_length) {
      errs->push_back(validation::Invalid(
          p, GoQuote(s),
          name + " in body should be at least " +
              std::to_string(*n.min_length) + " chars long"));
    }
    if (n.pattern_re != nullptr && !re2::RE2::PartialMatch(s, *n.pattern_re)) {
      errs->push_back(validation::Invalid(
          p, GoQuote(s), name + " in body should match '" + n.pattern + "'"));
    }
    if (!n.format.empty() && !HasStringFormat(n.format, s)) {
      errs->push_back(TypeError(p, n.format, std::string(s)));
    }
  }

  if (v.IsNumber()) {
    const double d = AsDouble(v);
    const std::string shown = GoValue(v);
    if (n.format == "int32" && IsInteger(v) &&
        (d < -2147483648.0 || d > 2147483647.0)) {
      errs->push_back(validation::Invalid(
          p, shown,
          name + " in body must be of type int32: " + GoQuote(shown)));
    }
    if (n.format == "int64" && v.IsUint64() && !v.IsInt64()) {
      errs->push_back(validation::Invalid(
          p, shown,
          name + " in body must be of type int64: " + GoQuote(shown)));
    }
    if (n.maximum) {
      if (n.exclusive_maximum ? d >= *n.maximum : d > *n.maximum) {
        errs->push_back(validation::Invalid(
            p, shown,
            name + " in body should be less than " +
                (n.exclusive_maximum ? "" : "or equal to ") +
                GoFloat(*n.maximum)));
      }
    }
    if (n.minimum) {
      if (n.exclusive_minimum ? d <= *n.minimum : d < *n.minimum) {
        errs->push_back(validation::Invalid(
            p, shown,
            name + " in body should be greater than " +
                (n.exclusive_minimum ? "" : "or equal to ") +
                GoFloat(*n.minimum)));
      }
    }
    if (n.multiple_of && *n.multiple_of > 0) {
      const double q = d / *n.multiple_of;
      if (std::fabs(q - std::round(q)) > 1e-9 * std::max(1.0, std::fabs(q))) {
        errs->push_back(
            validation::Invalid(p, shown,
                                name + " in body should be a multiple of " +
                                    GoFloat(*n.multiple_of)));
      }
    }
  }

  if (!n.enum_keys.empty()) {
    const std::string key = Canonical(v);
    if (std::find(n.enum_keys.begin(), n.enum_keys.end(), key) ==
        n.enum_keys.end()) {
      std::vector<std::string> supported;
      for (const rapidjson::Value& e : n.enum_values.GetArray()) {
        supported.push_back(e.IsString() ? Str(e) : Canonical(e));
      }
      errs->push_back(validation::NotSupported(p, GoValue(v), supported));
    }
  }

  if (v.IsArray()) {
    const int64_t size = v.Size();
    if (n.max_items && size > *n.max_items) {
      errs->push_back(validation::TooMany(p, static_cast<int>(size),
                                          ClampInt(*n.max_items)));
    }
    if (n.min_items && size < *n.min_items) {
      errs->push_back(
          validation::Invalid(p, std::to_string(size),
                              name + " in body should have at least " +
                                  std::to_string(*n.min_items) + " items"));
    }
    if (n.items != nullptr) {
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        ValidateNode(*n.items, v[i], p.Index(static_cast<int>(i)), false, errs);
      }
    }
    // x-kubernetes-list-type: set items, and map keys, are unique.
    if (n.list_type == "set" || n.list_type == "map") {
      std::set<std::string> seen;
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        const rapidjson::Value& item = v[i];
        std::string key;
        std::string shown;
        if (n.list_type == "set") {
          key = Canonical(item);
          shown = GoValue(item);
        } else {
          if (!item.IsObject()) continue;
          rapidjson::Document keys;
          keys.SetObject();
          std::vector<std::string> parts;
          for (const std::string& k : n.list_map_keys) {
            const rapidjson::Value* kv = Member(item, k.c_str());
            if (kv == nullptr) continue;
            keys.AddMember(rapidjson::Value(k.c_str(), keys.GetAllocator()),
                           rapidjson::Value(*kv, keys.GetAllocator()),
                           keys.GetAllocator());
            parts.push_back(GoQuote(k) + ":" + GoValue(*kv));
          }
          key = Canonical(keys);
          shown = "map[string]interface {}{" + StrJoin(parts, ", ") + "}";
        }
        if (!seen.insert(key).second) {
          errs->push_back(
              validation::Duplicate(p.Index(static_cast<int>(i)), shown));
        }
      }
    }
  }

  if (v.IsObject()) {
    const int64_t count = v.MemberCount();
    if (n.max_properties && count > *n.max_properties) {
      errs->push_back(validation::TooMany(p, static_cast<int>(count),
                                          ClampInt(*n.max_properties)));
    }
    if (n.min_properties && count < *n.min_properties) {
      errs->push_back(validation::Invalid(
          p, std::to_string(count),
          name + " in body should have at least " +
              std::to_string(*n.min_properties) + " properties"));
    }
    for (const std::string& r : n.required) {
      if (root && (r == "apiVersion" || r == "kind" || r == "metadata")) {
        continue;
      }
      if (Member(v, r.c_str()) == nullptr) {
        errs->push_back(validation::Required(p.Child(r)));
      }
    }
    for (const auto& m : v.GetObject()) {
      const std::string_view key = Name(m.name);
      auto it = n.properties.find(std::string(key));
      if (it != n.properties.end()) {
        ValidateNode(*it->second, m.value, p.Child(key), false, errs);
      } else if (n.additional_properties != nullptr) {
        ValidateNode(*n.additional_properties, m.value, p.Child(key), false,
                     errs);
      }
    }
    if (n.embedded_resource) {
      const rapidjson::Value* kind = Member(v, "kind");
      if (kind == nullptr || !kind->IsString() ||
          kind->GetStringLength() == 0) {
        errs->push_back(
            validation::Required(p.Child("kind"), "must not be empty"));
      }
      const rapidjson::Value* av = Member(v, "apiVersion");
      if (av == nullptr || !av->IsString() || av->GetStringLength() == 0) {
        errs->push_back(
            validation::Required(p.Child("apiVersion"), "must not be empty"));
      }
      if (const rapidjson::Value* meta = Member(v, "metadata");
          meta != nullptr && !meta->IsObject()) {
        errs->push_back(
            TypeError(p.Child("metadata"), "object", TypeName(*meta)));
      }
    }
  }
}

// --- pruning and defaulting -------------------------------------------------

void PruneNode(const CrdSchemaNode& n, rapidjson::Value* v, const Path& p,
               bool root, std::vector<std::string>* unknown) {
  if (v->IsArray()) {
    if (n.items == nullptr) return;
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      PruneNode(*n.items, &(*v)[i], p.Index(static_cast<int>(i)), false,
                unknown);
    }
    return;
  }
  if (!v->IsObject()) return;
  // The members kept move to the front, in order, and the rest go in one
  // erase at the end: erasing each in place shifted all after it, and an
  // object of 280,000 unknown members took minutes.
  auto kept = v->MemberBegin();
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
    const std::string_view key = Name(it->name);
    auto prop = n.properties.find(std::string(key));
    if (prop != n.properties.end()) {
      PruneNode(*prop->second, &it->value, p.Child(key), false, unknown);
    } else if (n.additional_properties != nullptr) {
      PruneNode(*n.additional_properties, &it->value, p.Child(key), false,
                unknown);
    } else if ((root || n.embedded_resource) &&
               (key == "apiVersion" || key == "kind" || key == "metadata")) {
      // The object's own; metadata is the apiserver's.
    } else if (!n.preserve_unknown_fields && !n.additional_properties_any) {
      unknown->push_back(p.Child(key).str());
      continue;
    }
    if (kept != it) {
      kept->name.Swap(it->name);
      kept->value.Swap(it->value);
    }
    ++kept;
  }
  if (kept != v->MemberEnd()) v->EraseMember(kept, v->MemberEnd());
}

void DefaultNode(const CrdSchemaNode& n, rapidjson::Value* v, Alloc& a) {
  if (v->IsArray()) {
    if (n.items == nullptr) return;
    for (rapidjson::Value& e : v->GetArray()) DefaultNode(*n.items, &e, a);
    return;
  }
  if (!v->IsObject()) return;
  // Defaults for absent members, and for null ones that may not be null;
  // other nulls that may not be null are dropped (kube's defaulting).
  for (const auto& [key, prop] : n.properties) {
    auto it = v->FindMember(key.c_str());
    const bool absent = it == v->MemberEnd();
    const bool bad_null = !absent && it->value.IsNull() && !prop->nullable;
    if (!absent && !bad_null) continue;
    if (prop->default_value.has_value()) {
      rapidjson::Value copy(*prop->default_value, a);
      if (absent) {
        v->AddMember(rapidjson::Value(key.c_str(), a), std::move(copy), a);
      } else {
        it->value = std::move(copy);
      }
    } else if (bad_null) {
      v->EraseMember(it);
    }
  }
  for (auto& m : v->GetObject()) {
    auto prop = n.properties.find(std::string(Name(m.name)));
    if (prop != n.properties.end()) {
      DefaultNode(*prop->second, &m.value, a);
    } else if (n.additional_properties != nullptr) {
      DefaultNode(*n.additional_properties, &m.value, a);
    }
  }
}

}  // namespace

CrdSchemaNode::CrdSchemaNode() = default;
CrdSchemaNode::~CrdSchemaNode() = default;

std::shared_ptr<const CrdSchema> CrdSchema::Build(const rapidjson::Value& props,
                                                  const Path& path,
                                                  FieldErrors* errs) {
  BuildState st{errs};
  std::shared_ptr<CrdSchema> s(new CrdSchema);
  s->root_ = BuildNode(props, path, Level::kRoot, 0, &st);
  return s;
}

std::vector<std::string> CrdSchema::PruneAndDefault(
    rapidjson::Value* obj, rapidjson::Document::AllocatorType& a) const {
  std::vector<std::string> unknown;
  PruneNode(*root_, obj, Path(), true, &unknown);
  DefaultNode(*root_, obj, a);
  return unknown;
}

std::vector<std::string> CrdSchema::PruneAndDefault(
    objects::Unstructured* u) const {
  rapidjson::Document c = objects::ContentOf(*u);
  std::vector<std::string> unknown = PruneAndDefault(&c, c.GetAllocator());
  objects::SetContent(u, c);
  return unknown;
}

FieldErrors CrdSchema::Validate(const rapidjson::Value& obj) const {
  FieldErrors errs;
  ValidateNode(*root_, obj, Path(), true, &errs);
  return errs;
}

FieldErrors CrdSchema::Validate(const objects::Unstructured& u) const {
  // kube validates the whole object. Of metadata a schema may constrain
  // only name and generateName (MetadataSchemaAllowed): those are what is
  // validated of it, ahead of the content.
  FieldErrors errs;
  if (auto it = root_->properties.find("metadata");
      it != root_->properties.end()) {
    const objects::metav1::ObjectMeta& m = u.metadata();
    rapidjson::Document meta(rapidjson::kObjectType);
    if (!m.name().empty()) {
      meta.AddMember("name",
                     rapidjson::StringRef(m.name().data(), m.name().size()),
                     meta.GetAllocator());
    }
    if (!m.generatename().empty()) {
      meta.AddMember("generateName",
                     rapidjson::StringRef(m.generatename().data(),
                                          m.generatename().size()),
                     meta.GetAllocator());
    }
    ValidateNode(*it->second, meta, Path("metadata"), false, &errs);
  }
  validation::Append(&errs, Validate(objects::ContentOf(u)));
  return errs;
}

}  // namespace kplane::apiserver
