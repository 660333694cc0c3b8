#include "apiserver/custom_resources.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "apiserver/openapi/apiextensions_definitions.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/machinery/duration.h"
#include "objects/machinery/jsonpath.h"
#include "objects/machinery/validation.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/time.h"

namespace kplane::apiserver {
namespace {

using objects::Unstructured;
using validation::Path;

constexpr char kApiApprovedAnnotation[] = "api-approved.kubernetes.io";

// kube's IsProtectedCommunityGroup.
bool IsProtectedGroup(std::string_view group) {
  return group == "k8s.io" || group.ends_with(".k8s.io") ||
         group == "kubernetes.io" || group.ends_with(".kubernetes.io");
}

// A group and plural the API server serves itself, in any version (their
// store keys are /registry/<group>/<plural> too), or the groups it serves
// without a scheme entry (CRDs themselves, resource metrics).
bool IsBuiltInResource(std::string_view group, std::string_view plural) {
  if (group == "apiextensions.k8s.io" || group == "metrics.k8s.io") {
    return true;
  }
  for (const auto& r : objects::Scheme::Default().resources()) {
    if (r->gv.group == group && r->resource == plural) return true;
  }
  return false;
}

const Unstructured& AsUnstructured(const google::protobuf::Message& m) {
  return static_cast<const Unstructured&>(m);
}
Unstructured* AsUnstructured(google::protobuf::Message* m) {
  return static_cast<Unstructured*>(m);
}

const rapidjson::Value* Member(const rapidjson::Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() ? nullptr : &it->value;
}
std::string StrMember(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = Member(v, key);
  return m != nullptr && m->IsString()
             ? std::string(m->GetString(), m->GetStringLength())
             : "";
}
bool BoolMember(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = Member(v, key);
  return m != nullptr && m->IsBool() && m->GetBool();
}
std::vector<std::string> StrListMember(const rapidjson::Value& v,
                                       const char* key) {
  std::vector<std::string> out;
  const rapidjson::Value* m = Member(v, key);
  if (m == nullptr || !m->IsArray()) return out;
  for (const rapidjson::Value& e : m->GetArray()) {
    if (e.IsString()) out.emplace_back(e.GetString(), e.GetStringLength());
  }
  return out;
}
std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

void SetMember(rapidjson::Value* obj, const char* key, rapidjson::Value value,
               rapidjson::Document::AllocatorType& a) {
  auto it = obj->FindMember(key);
  if (it != obj->MemberEnd()) {
    it->value = std::move(value);
  } else {
    obj->AddMember(rapidjson::Value(key, a), std::move(value), a);
  }
}
// obj[key], made an empty object when absent or not an object.
rapidjson::Value& ObjectMember(rapidjson::Value* obj, const char* key,
                               rapidjson::Document::AllocatorType& a) {
  auto it = obj->FindMember(key);
  if (it == obj->MemberEnd()) {
    obj->AddMember(rapidjson::Value(key, a),
                   rapidjson::Value(rapidjson::kObjectType), a);
    it = obj->FindMember(key);
  }
  if (!it->value.IsObject()) it->value.SetObject();
  return it->value;
}

// The content without "status" (what generation tracks when /status is
// enabled), or all of it, as canonical JSON: kube compares with
// apiequality.Semantic.DeepEqual, to which member order is no change.
std::string SpecKey(const Unstructured& u, bool without_status) {
  rapidjson::Document c = objects::ContentOf(u);
  if (without_status) c.RemoveMember("status");
  return Canonical(c);
}

// Go's %v of a float64 (strconv's 'g' format, shortest digits: an exponent
// when it is below -4 or at least 6): "1.5", "2.147483648e+09".
std::string GoFloatV(double d) {
  char buf[64];
  auto sci =
      std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string_view s(buf, sci.ptr - buf);
  const size_t e = s.find('e');
  const int exp = e == std::string_view::npos ? 0 : std::atoi(buf + e + 1);
  if (exp < -4 || exp >= 6) return std::string(s);
  auto fixed =
      std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed);
  return std::string(buf, fixed.ptr - buf);
}

// Go's %v and %T of a JSON value as kube decodes a custom resource
// (integers that fit int64 as int64, other numbers as float64).
std::string GoV(const rapidjson::Value& v) {
  if (v.IsNull()) return "<nil>";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsNumber()) return GoFloatV(v.GetDouble());
  std::vector<std::string> parts;
  if (v.IsArray()) {
    for (const rapidjson::Value& e : v.GetArray()) parts.push_back(GoV(e));
    return "[" + StrJoin(parts, " ") + "]";
  }
  for (const auto& m : v.GetObject()) {
    parts.push_back(std::string(m.name.GetString(), m.name.GetStringLength()) +
                    ":" + GoV(m.value));
  }
  std::sort(parts.begin(), parts.end());  // Go prints maps by key
  return "map[" + StrJoin(parts, " ") + "]";
}
std::string GoT(const rapidjson::Value& v) {
  if (v.IsNull()) return "<nil>";
  if (v.IsBool()) return "bool";
  if (v.IsString()) return "string";
  if (v.IsInt64()) return "int64";
  if (v.IsNumber()) return "float64";
  return v.IsArray() ? "[]interface {}" : "map[string]interface {}";
}

// kube's unstructured.NestedInt64 (`want` "int64") or NestedString
// ("string") at a scale path of `content` (split at its dots, the leading
// one dropped): the value (null when absent), or the accessor error
// ("... accessor error: three is of the type string, expected int64").
const rapidjson::Value* NestedScaleValue(const rapidjson::Value& content,
                                         std::string_view path,
                                         std::string_view want,
                                         std::string* error) {
  if (!path.empty() && path[0] == '.') path.remove_prefix(1);
  std::string json_path;
  const rapidjson::Value* v = &content;
  for (const std::string& field : StrSplit(path, '.')) {
    json_path += "." + field;
    if (v->IsNull()) return nullptr;
    if (!v->IsObject()) {
      *error = json_path + " accessor error: " + GoV(*v) + " is of the type " +
               GoT(*v) + ", expected map[string]interface{}";
      return nullptr;
    }
    auto it = v->FindMember(rapidjson::StringRef(field.data(), field.size()));
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
  }
  if (want == "int64" ? !v->IsInt64() : !v->IsString()) {
    *error = json_path + " accessor error: " + GoV(*v) + " is of the type " +
             GoT(*v) + ", expected " + std::string(want);
    return nullptr;
  }
  return v;
}

// kube's validation of a scale path's replicas: an int64 within
// 0..MaxInt32 (absent is fine).
void ValidateScaleReplicas(const rapidjson::Value& content,
                           const std::string& path, FieldErrors* errs) {
  std::string error;
  const rapidjson::Value* v = NestedScaleValue(content, path, "int64", &error);
  const validation::Path p(path);
  if (!error.empty()) {
    errs->push_back(validation::InvalidInt(p, 0, error));
  } else if (v == nullptr) {
    return;
  } else if (v->GetInt64() < 0) {
    errs->push_back(validation::InvalidInt(p, v->GetInt64(),
                                           "should be a non-negative integer"));
  } else if (v->GetInt64() > std::numeric_limits<int32_t>::max()) {
    errs->push_back(validation::InvalidInt(
        p, v->GetInt64(), "should be less than or equal to 2147483647"));
  }
}

// The steps of a simple JSONPath (".spec.items[0].name"): member names,
// and array indexes as "[n]". Empty on syntax kplane does not evaluate.
std::vector<std::string> PathSteps(std::string_view path) {
  std::vector<std::string> steps;
  if (path.empty() || path[0] != '.') return {};
  size_t i = 1;
  while (i < path.size()) {
    if (path[i] == '[') {
      const size_t end = path.find(']', i);
      if (end == std::string_view::npos) return {};
      steps.emplace_back(path.substr(i, end - i + 1));
      i = end + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    size_t end = path.find_first_of(".[", i);
    if (end == std::string_view::npos) end = path.size();
    if (end == i) return {};
    steps.emplace_back(path.substr(i, end - i));
    i = end;
    if (i < path.size() && path[i] == '.') ++i;
  }
  return steps;
}

const rapidjson::Value* AtPath(const rapidjson::Value& root,
                               std::string_view path) {
  const std::vector<std::string> steps = PathSteps(path);
  if (steps.empty()) return nullptr;
  const rapidjson::Value* v = &root;
  for (const std::string& step : steps) {
    if (step[0] == '[') {
      std::optional<int64_t> index =
          ParseInt64(std::string_view(step).substr(1, step.size() - 2));
      if (!index || !v->IsArray() || *index < 0 ||
          *index >= static_cast<int64_t>(v->Size())) {
        return nullptr;
      }
      v = &(*v)[static_cast<rapidjson::SizeType>(*index)];
    } else {
      v = Member(*v, step.c_str());
      if (v == nullptr) return nullptr;
    }
  }
  return v;
}

// Sets the member a path of names names, making the objects on the way.
bool SetAtPath(rapidjson::Value* root, std::string_view path,
               rapidjson::Value value, rapidjson::Document::AllocatorType& a) {
  const std::vector<std::string> steps = PathSteps(path);
  if (steps.empty()) return false;
  rapidjson::Value* v = root;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    if (steps[i][0] == '[') return false;
    v = &ObjectMember(v, steps[i].c_str(), a);
  }
  if (steps.back()[0] == '[' || !v->IsObject()) return false;
  SetMember(v, steps.back().c_str(), std::move(value), a);
  return true;
}

// --- printer columns -------------------------------------------------------

// Go's encoding/json of a float64: plain digits below 1e21 (and from 1e-6),
// else an exponent ("1e+21", "1e-7").
std::string GoJsonFloat(double d) {
  char buf[64];
  const double a = std::fabs(d);
  const bool plain = a == 0 || (a >= 1e-6 && a < 1e21);
  auto [end, ec] = std::to_chars(
      buf, buf + sizeof(buf), d,
      plain ? std::chars_format::fixed : std::chars_format::scientific);
  if (ec != std::errc()) return "null";
  std::string out(buf, end - buf);
  if (!plain) {  // "1e+21" as Go; "1e-07" -> "1e-7"
    const size_t e = out.find('e');
    if (e + 2 < out.size() && out[e + 2] == '0' && out.size() - e == 4) {
      out.erase(e + 2, 1);
    }
  }
  return out;
}

// client-go's jsonpath PrintResults of one value, for a string column:
// a string raw, null "<no value>", numbers and booleans as Go prints them,
// objects and arrays as compact JSON.
std::string ColumnText(const rapidjson::Value& v) {
  if (v.IsNull()) return "<no value>";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsNumber()) return GoFloatV(v.GetDouble());
  return machinery::JsonPath::PrintValue(v);
}

// kube's tableconvertor cell of a column: the first value its JSONPath
// finds (null when none, or when the path did not parse); a string column
// prints it, other types take only a value of their JSON type
// (cellForJSONValue) and a date column shows the time's age as kubectl's
// AGE ("<unknown>" for the zero time, "<invalid>" when it is no RFC 3339
// time).
TableCell PrinterCell(const std::string& type,
                      const std::optional<machinery::JsonPath>& path,
                      const rapidjson::Value& obj, WallTime now) {
  if (!path) return TableCell::Null();
  const std::vector<const rapidjson::Value*> found = path->FindResults(obj);
  if (found.empty()) return TableCell::Null();
  const rapidjson::Value& v = *found[0];
  if (type == "string") return TableCell::Str(ColumnText(v));
  if (type == "integer" && v.IsNumber()) {
    if (v.IsInt64()) return TableCell::Int(v.GetInt64());
    const double d = v.GetDouble();  // Go's int64(float64): truncated
    if (d > -9.2e18 && d < 9.2e18) {
      return TableCell::Int(static_cast<int64_t>(d));
    }
  } else if (type == "number" && v.IsNumber()) {
    return TableCell::Json(GoJsonFloat(v.GetDouble()));
  } else if (type == "boolean" && v.IsBool()) {
    return TableCell::Json(v.GetBool() ? "true" : "false");
  } else if (type == "date" && v.IsString()) {
    // metav1.Time's UnmarshalQueryParameter: "" and "null" are the zero
    // time.
    const std::string_view s(v.GetString(), v.GetStringLength());
    if (s.empty() || s == "null") return TableCell::Str("<unknown>");
    StatusOr<objects::Timestamp> t = objects::ParseRfc3339(s);
    if (!t.ok()) return TableCell::Str("<invalid>");
    constexpr int64_t kZeroTime = -62135596800;  // 0001-01-01T00:00:00Z
    if (t->seconds == kZeroTime && t->nanos == 0) {
      return TableCell::Str("<unknown>");
    }
    const WallTime at{std::chrono::duration_cast<WallTime::duration>(
        std::chrono::seconds(t->seconds) + std::chrono::nanoseconds(t->nanos))};
    return TableCell::Str(machinery::HumanDuration(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - at)
            .count()));
  }
  return TableCell::Null();
}

// ValidateCustomResourceColumnDefinition of the column `c` at `p`.
void ValidatePrinterColumn(const rapidjson::Value& c, const Path& p,
                           FieldErrors* errs) {
  static const std::vector<std::string> kTypes = {"boolean", "date", "integer",
                                                  "number", "string"};
  static const std::vector<std::string> kFormats = {
      "byte",  "date",  "date-time", "double",
      "float", "int32", "int64",     "password"};
  const std::string name = StrMember(c, "name");
  const std::string type = StrMember(c, "type");
  const std::string format = StrMember(c, "format");
  const std::string json_path = StrMember(c, "jsonPath");
  if (name.empty()) errs->push_back(validation::Required(p.Child("name")));
  const std::string types = "must be one of " + StrJoin(kTypes, ",");
  if (type.empty()) {
    errs->push_back(validation::Required(p.Child("type"), types));
  } else if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end()) {
    errs->push_back(validation::InvalidString(p.Child("type"), type, types));
  }
  if (!format.empty() &&
      std::find(kFormats.begin(), kFormats.end(), format) == kFormats.end()) {
    errs->push_back(validation::InvalidString(
        p.Child("format"), format, "must be one of " + StrJoin(kFormats, ",")));
  }
  // kube's field name here is the Go one.
  if (json_path.empty()) {
    errs->push_back(validation::Required(p.Child("JSONPath")));
  } else if (json_path[0] != '.') {
    errs->push_back(validation::InvalidString(
        p.Child("JSONPath"), json_path,
        "must be a simple json path starting with ."));
  }
}

// The columns' fields kube's types keep, to compare versions' columns.
std::vector<std::string> ColumnKeys(const rapidjson::Value& version) {
  std::vector<std::string> keys;
  const rapidjson::Value* cols = Member(version, "additionalPrinterColumns");
  if (cols == nullptr || !cols->IsArray()) return keys;
  for (const rapidjson::Value& c : cols->GetArray()) {
    const rapidjson::Value* priority = Member(c, "priority");
    keys.push_back(
        StrMember(c, "name") + '\n' + StrMember(c, "type") + '\n' +
        StrMember(c, "format") + '\n' + StrMember(c, "description") + '\n' +
        std::to_string(
            priority != nullptr && priority->IsInt() ? priority->GetInt() : 0) +
        '\n' + StrMember(c, "jsonPath"));
  }
  return keys;
}

// The versions' additionalPrinterColumns, where kube reports them: its v1
// to internal conversion folds columns equal in every version to
// spec.additionalPrinterColumns, validated once there; others are
// validated per version.
void ValidatePrinterColumns(const rapidjson::Value* versions, const Path& sp,
                            FieldErrors* errs) {
  if (versions == nullptr || !versions->IsArray() || versions->Empty()) return;
  bool identical = true;
  const std::vector<std::string> first = ColumnKeys((*versions)[0]);
  for (const rapidjson::Value& v : versions->GetArray()) {
    identical = identical && ColumnKeys(v) == first;
  }
  int i = 0;
  for (const rapidjson::Value& v : versions->GetArray()) {
    const Path cp =
        identical
            ? sp.Child("additionalPrinterColumns")
            : sp.Child("versions").Index(i).Child("additionalPrinterColumns");
    ++i;
    const rapidjson::Value* cols = Member(v, "additionalPrinterColumns");
    if (cols == nullptr || !cols->IsArray()) continue;
    int j = 0;
    for (const rapidjson::Value& c : cols->GetArray()) {
      ValidatePrinterColumn(c, cp.Index(j++), errs);
    }
    if (identical) break;
  }
}

// --- the CRD resource ------------------------------------------------------

class CrdStrategyImpl : public Strategy {
 public:
  const objects::ResourceInfo& resource() const override {
    return CrdResource();
  }

  // SetDefaults_CustomResourceDefinition(Spec): singular and listKind from
  // the kind, conversion strategy None.
  void Default(google::protobuf::Message* obj) const override {
    Unstructured* u = AsUnstructured(obj);
    rapidjson::Document c = objects::ContentOf(*u);
    auto& a = c.GetAllocator();
    rapidjson::Value& spec = ObjectMember(&c, "spec", a);
    rapidjson::Value& names = ObjectMember(&spec, "names", a);
    const std::string kind = StrMember(names, "kind");
    if (StrMember(names, "singular").empty() && !kind.empty()) {
      SetMember(&names, "singular", rapidjson::Value(Lower(kind).c_str(), a),
                a);
    }
    if (StrMember(names, "listKind").empty() && !kind.empty()) {
      SetMember(&names, "listKind",
                rapidjson::Value((kind + "List").c_str(), a), a);
    }
    rapidjson::Value& conversion = ObjectMember(&spec, "conversion", a);
    if (StrMember(conversion, "strategy").empty()) {
      SetMember(&conversion, "strategy", rapidjson::Value("None", a), a);
    }
    objects::SetContent(u, c);
  }

  // Status is the apiserver's; generation 1; the storage version recorded
  // in status.storedVersions.
  void PrepareForCreate(google::protobuf::Message* obj) const override {
    Unstructured* u = AsUnstructured(obj);
    u->mutable_metadata()->set_generation(1);
    // Its custom resources go before it does (the apiserver's CRD
    // controller removes the finalizer once they are gone).
    auto* finalizers = u->mutable_metadata()->mutable_finalizers();
    if (std::find(finalizers->begin(), finalizers->end(),
                  kCrdCleanupFinalizer) == finalizers->end()) {
      finalizers->Add(kCrdCleanupFinalizer);
    }
    rapidjson::Document c = objects::ContentOf(*u);
    auto& a = c.GetAllocator();
    c.RemoveMember("status");
    rapidjson::Value& status = ObjectMember(&c, "status", a);
    AddStoredVersion(c, &status, a);
    objects::SetContent(u, c);
  }

  void PrepareForUpdate(google::protobuf::Message* obj,
                        const google::protobuf::Message& old) const override {
    Unstructured* u = AsUnstructured(obj);
    const Unstructured& o = AsUnstructured(old);
    rapidjson::Document c = objects::ContentOf(*u);
    rapidjson::Document oc = objects::ContentOf(o);
    auto& a = c.GetAllocator();
    c.RemoveMember("status");
    const rapidjson::Value* old_status = Member(oc, "status");
    c.AddMember("status",
                old_status != nullptr
                    ? rapidjson::Value(*old_status, a)
                    : rapidjson::Value(rapidjson::kObjectType),
                a);
    AddStoredVersion(c, &c["status"], a);
    const rapidjson::Value* spec = Member(c, "spec");
    const rapidjson::Value* old_spec = Member(oc, "spec");
    const bool changed =
        (spec == nullptr) != (old_spec == nullptr) ||
        (spec != nullptr && Canonical(*spec) != Canonical(*old_spec));
    u->mutable_metadata()->set_generation(o.metadata().generation() +
                                          (changed ? 1 : 0));
    objects::SetContent(u, c);
  }

  void PrepareForStatusUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const override {
    Unstructured* u = AsUnstructured(obj);
    rapidjson::Document c = objects::ContentOf(*u);
    rapidjson::Document oc = objects::ContentOf(AsUnstructured(old));
    auto& a = oc.GetAllocator();
    oc.RemoveMember("status");
    if (const rapidjson::Value* status = Member(c, "status")) {
      oc.AddMember("status", rapidjson::Value(*status, a), a);
    }
    objects::SetContent(u, oc);
  }

  FieldErrors ValidateCreate(
      const google::protobuf::Message& obj) const override {
    const Unstructured& u = AsUnstructured(obj);
    FieldErrors errs =
        validation::ValidateObjectMeta(WithoutCleanupFinalizer(u), false,
                                       validation::NameRule::kDNS1123Subdomain);
    const rapidjson::Document c = objects::ContentOf(u);
    validation::Append(&errs, ValidateSpec(u, c));
    validation::Append(&errs, ValidateStoredVersions(c));
    return errs;
  }

  FieldErrors ValidateUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    const Unstructured& u = AsUnstructured(obj);
    const Unstructured& o = AsUnstructured(old);
    FieldErrors errs = validation::ValidateObjectMetaUpdate(
        WithoutCleanupFinalizer(u), WithoutCleanupFinalizer(o));
    const rapidjson::Document c = objects::ContentOf(u);
    validation::Append(&errs, ValidateSpec(u, c));
    validation::Append(&errs, ValidateStoredVersions(c));
    // (Read from the JSON: ParseCrd would compile the schemas.)
    auto namespaced = [](const rapidjson::Value& content) {
      const rapidjson::Value* spec = Member(content, "spec");
      return spec == nullptr || StrMember(*spec, "scope") != "Cluster";
    };
    const bool now = namespaced(c);
    if (now != namespaced(objects::ContentOf(o))) {
      errs.push_back(validation::InvalidString(Path("spec").Child("scope"),
                                               now ? "Namespaced" : "Cluster",
                                               "field is immutable"));
    }
    return errs;
  }

  FieldErrors ValidateStatusUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    FieldErrors errs = validation::ValidateObjectMetaUpdate(
        WithoutCleanupFinalizer(AsUnstructured(obj)),
        WithoutCleanupFinalizer(AsUnstructured(old)));
    validation::Append(
        &errs, ValidateStoredVersions(objects::ContentOf(AsUnstructured(obj))));
    return errs;
  }

 private:
  // Kube validates a CRD's metadata with apimachinery's generic rules,
  // which do not ask finalizer names to be qualified; ours (core's) do, and
  // the apiserver's own finalizer is not.
  static objects::metav1::ObjectMeta WithoutCleanupFinalizer(
      const Unstructured& u) {
    objects::metav1::ObjectMeta meta = u.metadata();
    auto* f = meta.mutable_finalizers();
    f->erase(std::remove(f->begin(), f->end(), kCrdCleanupFinalizer), f->end());
    return meta;
  }

  // kube's ValidateCustomResourceDefinitionStoredVersions: objects may be
  // stored as any version in status.storedVersions, and each is read as
  // one of spec.versions, so none may leave spec.versions before the
  // status drops it (after the objects are rewritten), and the storage
  // version is always listed.
  static FieldErrors ValidateStoredVersions(const rapidjson::Value& c) {
    FieldErrors errs;
    const Path path = Path("status").Child("storedVersions");
    const rapidjson::Value* status = Member(c, "status");
    const std::vector<std::string> names =
        status != nullptr ? StrListMember(*status, "storedVersions")
                          : std::vector<std::string>();
    if (names.empty()) {
      errs.push_back(
          validation::Invalid(path, validation::GoStringSlice(names),
                              "must have at least one stored version"));
      return errs;
    }
    const rapidjson::Value* spec = Member(c, "spec");
    const rapidjson::Value* versions =
        spec != nullptr ? Member(*spec, "versions") : nullptr;
    std::vector<std::string> in_spec;
    if (versions != nullptr && versions->IsArray()) {
      for (const rapidjson::Value& v : versions->GetArray()) {
        const std::string name = StrMember(v, "name");
        in_spec.push_back(name);
        if (BoolMember(v, "storage") &&
            std::find(names.begin(), names.end(), name) == names.end()) {
          errs.push_back(validation::InvalidString(
              path, name, "must have the storage version " + name));
        }
      }
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (std::find(in_spec.begin(), in_spec.end(), names[i]) ==
          in_spec.end()) {
        errs.push_back(
            validation::InvalidString(path.Index(static_cast<int>(i)), names[i],
                                      "must appear in spec.versions"));
      }
    }
    return errs;
  }

  static void AddStoredVersion(const rapidjson::Value& content,
                               rapidjson::Value* status,
                               rapidjson::Document::AllocatorType& a) {
    const rapidjson::Value* spec = Member(content, "spec");
    const rapidjson::Value* versions =
        spec != nullptr ? Member(*spec, "versions") : nullptr;
    if (versions == nullptr || !versions->IsArray()) return;
    std::string storage;
    for (const rapidjson::Value& v : versions->GetArray()) {
      if (BoolMember(v, "storage")) {
        storage = StrMember(v, "name");
        break;
      }
    }
    if (storage.empty()) return;
    auto it = status->FindMember("storedVersions");
    if (it == status->MemberEnd() || !it->value.IsArray()) {
      SetMember(status, "storedVersions",
                rapidjson::Value(rapidjson::kArrayType), a);
      it = status->FindMember("storedVersions");
    }
    for (const rapidjson::Value& s : it->value.GetArray()) {
      if (s.IsString() && storage == s.GetString()) return;
    }
    it->value.PushBack(rapidjson::Value(storage.c_str(), a), a);
  }

  // validateCustomResourceDefinitionSpec and the names rules, for what
  // kplane serves (`c`: u's content).
  static FieldErrors ValidateSpec(const Unstructured& u,
                                  const rapidjson::Value& c) {
    FieldErrors errs;
    static const rapidjson::Value kEmpty(rapidjson::kObjectType);
    const rapidjson::Value* spec_v = Member(c, "spec");
    const rapidjson::Value& spec =
        spec_v != nullptr && spec_v->IsObject() ? *spec_v : kEmpty;
    const Path sp("spec");
    const std::string group = StrMember(spec, "group");
    const rapidjson::Value* names_v = Member(spec, "names");
    const rapidjson::Value& names =
        names_v != nullptr && names_v->IsObject() ? *names_v : kEmpty;
    const std::string plural = StrMember(names, "plural");

    if (u.metadata().name() != plural + "." + group) {
      errs.push_back(validation::InvalidString(
          Path("metadata").Child("name"), u.metadata().name(),
          "must be spec.names.plural+\".\"+spec.group"));
    }
    if (group.empty()) {
      errs.push_back(validation::Required(sp.Child("group")));
    } else if (std::vector<std::string> e =
                   machinery::IsDNS1123Subdomain(group);
               !e.empty()) {
      errs.push_back(
          validation::InvalidString(sp.Child("group"), group, StrJoin(e, ",")));
    } else if (group.find('.') == std::string::npos) {
      errs.push_back(validation::InvalidString(
          sp.Child("group"), group,
          "should be a domain with at least one dot"));
    }
    const std::string scope = StrMember(spec, "scope");
    if (scope.empty()) {
      errs.push_back(validation::Required(sp.Child("scope")));
    } else if (scope != "Cluster" && scope != "Namespaced") {
      errs.push_back(validation::NotSupportedString(sp.Child("scope"), scope,
                                                    {"Cluster", "Namespaced"}));
    }

    const rapidjson::Value* versions = Member(spec, "versions");
    int storage_count = 0;
    bool unique = true;
    std::vector<std::string> seen;
    if (versions != nullptr && versions->IsArray()) {
      int i = 0;
      for (const rapidjson::Value& v : versions->GetArray()) {
        const Path vp = sp.Child("versions").Index(i++);
        const std::string name = StrMember(v, "name");
        if (BoolMember(v, "storage")) ++storage_count;
        if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
          unique = false;
        }
        seen.push_back(name);
        if (std::vector<std::string> e = machinery::IsDNS1035Label(name);
            !e.empty()) {
          errs.push_back(validation::InvalidString(vp.Child("name"), name,
                                                   StrJoin(e, ",")));
        }
        const rapidjson::Value* schema = Member(v, "schema");
        const rapidjson::Value* root =
            schema != nullptr ? Member(*schema, "openAPIV3Schema") : nullptr;
        const Path rp = vp.Child("schema").Child("openAPIV3Schema");
        if (root == nullptr || !root->IsObject()) {
          errs.push_back(validation::Required(rp, "schemas are required"));
        } else {
          const std::string type = StrMember(*root, "type");
          if (type.empty()) {
            errs.push_back(validation::Required(
                rp.Child("type"), "must not be empty at the root"));
          } else if (type != "object") {
            errs.push_back(validation::InvalidString(
                rp.Child("type"), type, "must be object at the root"));
          }
          // The rest of the structural rules, defaults, patterns, limits.
          CrdSchema::Build(*root, rp, &errs);
        }
      }
    }
    if (!unique) {
      errs.push_back(validation::Invalid(sp.Child("versions"),
                                         GoVersions(versions),
                                         "must contain unique version names"));
    }
    if (storage_count != 1) {
      errs.push_back(validation::Invalid(
          sp.Child("versions"), GoVersions(versions),
          "must have exactly one version marked as storage version"));
    }

    const Path np = sp.Child("names");
    const std::string singular = StrMember(names, "singular");
    const std::string kind = StrMember(names, "kind");
    const std::string list_kind = StrMember(names, "listKind");
    if (plural.empty())
      errs.push_back(validation::Required(np.Child("plural")));
    if (singular.empty()) {
      errs.push_back(validation::Required(np.Child("singular")));
    }
    if (kind.empty()) errs.push_back(validation::Required(np.Child("kind")));
    if (list_kind.empty()) {
      errs.push_back(validation::Required(np.Child("listKind")));
    }
    // ValidateCustomResourceDefinitionNames.
    auto label = [&](const Path& p, const std::string& value) {
      if (value.empty()) return;
      if (std::vector<std::string> e = machinery::IsDNS1035Label(value);
          !e.empty()) {
        errs.push_back(validation::InvalidString(p, value, StrJoin(e, ",")));
      }
    };
    label(np.Child("plural"), plural);
    label(np.Child("singular"), singular);
    auto mixed = [&](const Path& p, const std::string& value) {
      if (value.empty()) return;
      if (std::vector<std::string> e = machinery::IsDNS1035Label(Lower(value));
          !e.empty()) {
        errs.push_back(validation::InvalidString(
            p, value,
            "may have mixed case, but should otherwise match: " +
                StrJoin(e, ",")));
      }
    };
    mixed(np.Child("kind"), kind);
    mixed(np.Child("listKind"), list_kind);
    int i = 0;
    for (const std::string& s : StrListMember(names, "shortNames")) {
      label(np.Child("shortNames").Index(i++), s);
    }
    i = 0;
    for (const std::string& s : StrListMember(names, "categories")) {
      label(np.Child("categories").Index(i++), s);
    }
    if (!kind.empty() && kind == list_kind) {
      errs.push_back(
          validation::InvalidString(np.Child("listKind"), list_kind,
                                    "kind and listKind may not be the same"));
    }
    // Kubernetes' own groups need the approval annotation, as kube asks.
    if (IsProtectedGroup(group) &&
        objects::Annotation(u.metadata(), kApiApprovedAnnotation).empty()) {
      errs.push_back(validation::Required(
          Path("metadata").Child("annotations").Key(kApiApprovedAnnotation),
          "protected groups must have approval annotation \"" +
              std::string(kApiApprovedAnnotation) +
              "\", see https://github.com/kubernetes/enhancements/pull/1111"));
    }
    // A resource the server serves itself keeps its keys: custom resources
    // are stored under /registry/<group>/<plural>, and a CRD named after
    // customresourcedefinitions.apiextensions.k8s.io held every CRD (and
    // deleting it deleted them all).
    if (!plural.empty() && IsBuiltInResource(group, plural)) {
      errs.push_back(validation::InvalidString(
          np.Child("plural"), plural,
          "is a resource the API server serves itself in group \"" + group +
              "\""));
    }
    ValidatePrinterColumns(versions, sp, &errs);
    // Conversion: only None (kplane has no conversion webhooks).
    const rapidjson::Value* conv = Member(spec, "conversion");
    const std::string strategy =
        conv != nullptr ? StrMember(*conv, "strategy") : "None";
    if (strategy == "Webhook") {
      errs.push_back(validation::InvalidString(
          sp.Child("conversion").Child("strategy"), strategy,
          "conversion webhooks are not supported by this server"));
    } else if (strategy != "None") {
      errs.push_back(validation::NotSupportedString(
          sp.Child("conversion").Child("strategy"), strategy,
          {"None", "Webhook"}));
    }
    ValidateScalePaths(versions, sp, &errs);
    return errs;
  }

  // kube's scale subresource paths: specReplicasPath under .spec,
  // statusReplicasPath under .status, labelSelectorPath under either, each
  // a JSONPath of field names only (no array index).
  static void ValidateScalePaths(const rapidjson::Value* versions,
                                 const Path& sp, FieldErrors* errs) {
    if (versions == nullptr || !versions->IsArray()) return;
    int i = 0;
    for (const rapidjson::Value& v : versions->GetArray()) {
      const Path vp = sp.Child("versions").Index(i++);
      const rapidjson::Value* sub = Member(v, "subresources");
      const rapidjson::Value* scale =
          sub != nullptr ? Member(*sub, "scale") : nullptr;
      if (scale == nullptr || !scale->IsObject()) continue;
      const Path scp = vp.Child("subresources").Child("scale");
      auto check = [&](const char* field, bool required,
                       std::initializer_list<std::string_view> under) {
        const std::string path = StrMember(*scale, field);
        if (path.empty()) {
          if (required) errs->push_back(validation::Required(scp.Child(field)));
          return;
        }
        bool ok = path.find('[') == std::string::npos && path.back() != '.' &&
                  path.find("..") == std::string::npos;
        bool placed = false;
        for (std::string_view prefix : under) {
          placed |= path.starts_with(prefix) && path.size() > prefix.size();
        }
        if (!ok || !placed) {
          std::string where;
          for (std::string_view prefix : under) {
            where += where.empty() ? "" : " or ";
            where += std::string(prefix.substr(0, prefix.size() - 1));
          }
          errs->push_back(validation::InvalidString(
              scp.Child(field), path,
              "should be a json path under " + where + " of field names only"));
        }
      };
      check("specReplicasPath", true, {".spec."});
      check("statusReplicasPath", true, {".status."});
      check("labelSelectorPath", false, {".spec.", ".status."});
    }
  }

  // How kube prints spec.versions in these errors is Go's %#v of the
  // slice; kplane prints the version names (null when there are none).
  static std::string GoVersions(const rapidjson::Value* versions) {
    if (versions == nullptr || !versions->IsArray() || versions->Empty()) {
      return "null";
    }
    std::vector<std::string> names;
    for (const rapidjson::Value& v : versions->GetArray()) {
      names.push_back(StrMember(v, "name"));
    }
    return validation::GoStringSlice(names);
  }
};

// --- custom resources ------------------------------------------------------

class CustomResourceStrategy : public Strategy {
 public:
  CustomResourceStrategy(const objects::ResourceInfo* resource,
                         objects::TypeMeta storage, const CrdVersion& version)
      : resource_(resource),
        storage_(std::move(storage)),
        status_(version.status_subresource),
        version_(version) {
    // kube's tableconvertor.New: each column's path as the template
    // "{<jsonPath>}"; one that does not parse gives null cells.
    for (const CrdPrinterColumn& c : PrinterColumns()) {
      StatusOr<machinery::JsonPath> p =
          machinery::JsonPath::Parse("{" + c.json_path + "}");
      column_paths_.push_back(p.ok() ? std::make_optional(std::move(*p))
                                     : std::nullopt);
    }
  }

  const objects::ResourceInfo& resource() const override { return *resource_; }

  // kube's decoding of custom resources: unknown fields pruned (the
  // handlers report them first, for fieldValidation), schema defaults set.
  void Default(google::protobuf::Message* obj) const override {
    if (version_.schema != nullptr) {
      version_.schema->PruneAndDefault(AsUnstructured(obj));
    }
  }

  // Objects are stored as the storage version (conversion None: only
  // apiVersion changes); with /status, status is the subresource's.
  void PrepareForCreate(google::protobuf::Message* obj) const override {
    Unstructured* u = AsUnstructured(obj);
    u->set_apiversion(storage_.api_version);
    u->set_kind(storage_.kind);
    u->mutable_metadata()->set_generation(1);
    if (status_) {
      rapidjson::Document c = objects::ContentOf(*u);
      if (c.RemoveMember("status")) objects::SetContent(u, c);
    }
  }

  void PrepareForUpdate(google::protobuf::Message* obj,
                        const google::protobuf::Message& old) const override {
    Unstructured* u = AsUnstructured(obj);
    const Unstructured& o = AsUnstructured(old);
    u->set_apiversion(storage_.api_version);
    u->set_kind(storage_.kind);
    if (status_) {
      rapidjson::Document c = objects::ContentOf(*u);
      rapidjson::Document oc = objects::ContentOf(o);
      c.RemoveMember("status");
      if (const rapidjson::Value* s = Member(oc, "status")) {
        c.AddMember("status", rapidjson::Value(*s, c.GetAllocator()),
                    c.GetAllocator());
      }
      objects::SetContent(u, c);
    }
    const bool changed = SpecKey(*u, status_) != SpecKey(o, status_);
    u->mutable_metadata()->set_generation(o.metadata().generation() +
                                          (changed ? 1 : 0));
  }

  // kube's customresource statusStrategy: everything but status (and the
  // managedFields that track it) stays as stored.
  void PrepareForStatusUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const override {
    Unstructured* u = AsUnstructured(obj);
    rapidjson::Document c = objects::ContentOf(*u);
    Unstructured next = AsUnstructured(old);
    *next.mutable_metadata()->mutable_managedfields() =
        u->metadata().managedfields();
    next.mutable_metadata()->set_resourceversion(
        u->metadata().resourceversion());
    rapidjson::Document oc = objects::ContentOf(next);
    oc.RemoveMember("status");
    if (const rapidjson::Value* s = Member(c, "status")) {
      oc.AddMember("status", rapidjson::Value(*s, oc.GetAllocator()),
                   oc.GetAllocator());
    }
    objects::SetContent(&next, oc);
    *u = std::move(next);
  }

  // The metadata, the object against the version's schema, then the
  // scale subresource's values (kube's customResourceValidator).
  FieldErrors ValidateCreate(
      const google::protobuf::Message& obj) const override {
    return ValidateObject(obj, /*scale_spec=*/true);
  }
  FieldErrors ValidateUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    FieldErrors errs = validation::ValidateObjectMetaUpdate(
        AsUnstructured(obj).metadata(), AsUnstructured(old).metadata());
    validation::Append(&errs, ValidateObject(obj, /*scale_spec=*/true));
    return errs;
  }
  // As an update, but of the scale values only the status's (kube's
  // ValidateStatusUpdate leaves out ValidateScaleSpec).
  FieldErrors ValidateStatusUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    FieldErrors errs = validation::ValidateObjectMetaUpdate(
        AsUnstructured(obj).metadata(), AsUnstructured(old).metadata());
    validation::Append(&errs, ValidateObject(obj, /*scale_spec=*/false));
    return errs;
  }
  FieldErrors ValidateObject(const google::protobuf::Message& obj,
                             bool scale_spec) const {
    const Unstructured& u = AsUnstructured(obj);
    FieldErrors errs =
        validation::ValidateObjectMeta(u.metadata(), resource_->namespaced,
                                       validation::NameRule::kDNS1123Subdomain);
    if (version_.schema != nullptr) {
      validation::Append(&errs, version_.schema->Validate(u));
    }
    if (version_.scale_subresource) {
      // kube's ValidateScaleSpec and ValidateScaleStatus: what /scale
      // reads must be an int64 within 0..MaxInt32, the selector a string.
      const rapidjson::Document c = objects::ContentOf(u);
      if (scale_spec) {
        ValidateScaleReplicas(c, version_.spec_replicas_path, &errs);
      }
      ValidateScaleReplicas(c, version_.status_replicas_path, &errs);
      if (!version_.label_selector_path.empty()) {
        std::string error;
        NestedScaleValue(c, version_.label_selector_path, "string", &error);
        if (!error.empty()) {
          errs.push_back(validation::InvalidString(
              validation::Path(version_.label_selector_path), "", error));
        }
      }
    }
    return errs;
  }

  // Name, then the version's additionalPrinterColumns (kube's default:
  // Age, .metadata.creationTimestamp).
  std::vector<TableColumn> Columns() const override {
    std::vector<TableColumn> cols = printers::DefaultColumns();
    cols.resize(1);
    for (const CrdPrinterColumn& c : PrinterColumns()) {
      cols.push_back({c.name, c.type, c.format, c.description, c.priority});
    }
    return cols;
  }
  std::vector<TableCell> Row(const google::protobuf::Message& obj,
                             WallTime now) const override {
    const Unstructured& u = AsUnstructured(obj);
    std::vector<TableCell> row = {TableCell::Str(u.metadata().name())};
    rapidjson::Document doc;
    const rapidjson::Value whole = objects::ToJsonValue(u, doc.GetAllocator());
    const std::vector<CrdPrinterColumn>& columns = PrinterColumns();
    for (size_t i = 0; i < columns.size(); ++i) {
      row.push_back(PrinterCell(columns[i].type, column_paths_[i], whole, now));
    }
    return row;
  }

  bool HasScale() const override { return version_.scale_subresource; }
  // kube's scale subresource over the CRD's paths (a missing
  // spec.replicas reads as 0).
  objects::autoscalingv1::Scale ToScale(
      const google::protobuf::Message& obj) const override {
    const Unstructured& u = AsUnstructured(obj);
    objects::autoscalingv1::Scale scale;
    auto* m = scale.mutable_metadata();
    m->set_name(u.metadata().name());
    m->set_namespace_(u.metadata().namespace_());
    m->set_uid(u.metadata().uid());
    m->set_resourceversion(u.metadata().resourceversion());
    *m->mutable_creationtimestamp() = u.metadata().creationtimestamp();
    const rapidjson::Document c = objects::ContentOf(u);
    if (const rapidjson::Value* v = AtPath(c, version_.spec_replicas_path);
        v != nullptr && v->IsInt()) {
      scale.mutable_spec()->set_replicas(v->GetInt());
    }
    if (const rapidjson::Value* v = AtPath(c, version_.status_replicas_path);
        v != nullptr && v->IsInt()) {
      scale.mutable_status()->set_replicas(v->GetInt());
    }
    if (const rapidjson::Value* v = AtPath(c, version_.label_selector_path);
        v != nullptr && v->IsString()) {
      scale.mutable_status()->set_selector(v->GetString());
    }
    return scale;
  }
  void ApplyScale(const objects::autoscalingv1::Scale& scale,
                  google::protobuf::Message* obj) const override {
    Unstructured* u = AsUnstructured(obj);
    rapidjson::Document c = objects::ContentOf(*u);
    if (SetAtPath(&c, version_.spec_replicas_path,
                  rapidjson::Value(scale.spec().replicas()),
                  c.GetAllocator())) {
      objects::SetContent(u, c);
    }
  }

 private:
  const std::vector<CrdPrinterColumn>& PrinterColumns() const {
    static const std::vector<CrdPrinterColumn> kAge = {
        {"Age", "date", "", "", ".metadata.creationTimestamp", 0}};
    return version_.printer_columns.empty() ? kAge : version_.printer_columns;
  }

  const objects::ResourceInfo* resource_;
  const objects::TypeMeta storage_;
  const bool status_;
  const CrdVersion version_;
  // PrinterColumns()' paths, parsed.
  std::vector<std::optional<machinery::JsonPath>> column_paths_;
};

}  // namespace

const objects::ResourceInfo& CrdResource() {
  static const objects::ResourceInfo* info = [] {
    static objects::KindInfo kind;
    kind.gv = {kApiExtensionsGroup, "v1"};
    kind.kind = "CustomResourceDefinition";
    kind.descriptor = Unstructured::descriptor();
    kind.prototype = &Unstructured::default_instance();
    static objects::KindInfo list_kind;
    list_kind.gv = kind.gv;
    list_kind.kind = "CustomResourceDefinitionList";
    list_kind.descriptor = objects::UnstructuredList::descriptor();
    list_kind.prototype = &objects::UnstructuredList::default_instance();
    auto* r = new objects::ResourceInfo;
    r->gv = kind.gv;
    r->resource = "customresourcedefinitions";
    r->singular = "customresourcedefinition";
    r->namespaced = false;
    r->kind = &kind;
    r->list_kind = &list_kind;
    r->short_names = {"crd", "crds"};
    r->categories = {"api-extensions"};
    r->verbs = {"create", "delete", "deletecollection", "get",
                "list",   "patch",  "update",           "watch"};
    r->subresources.push_back({"status", &kind, {"get", "patch", "update"}});
    return r;
  }();
  return *info;
}

namespace {

using CrdDefinitions = std::map<std::string, openapi::Schema, std::less<>>;

const CrdDefinitions& CrdTypeDefinitions() {
  static const CrdDefinitions* defs =
      new CrdDefinitions(openapi::ApiExtensionsDefinitions());
  return *defs;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

// Removes what `schema` does not define from `v` (at `path`), adding the
// paths to `unknown`. Recursion follows the value, whose depth the
// request parser bounds.
void PruneCrdValue(const openapi::Schema& schema, rapidjson::Value* v,
                   const std::string& path, std::vector<std::string>* unknown) {
  const openapi::Schema* s = &schema;
  if (!s->ref.empty()) {
    const CrdDefinitions& defs = CrdTypeDefinitions();
    auto it = defs.find(s->ref);
    if (it == defs.end()) return;  // meta/v1 (Time): not walked
    // The JSONSchemaPropsOr* unions are untyped in the documents (any
    // value); their object (and OrArray's array) forms are schemas.
    if (EndsWith(it->first, "JSONSchemaPropsOrArray") ||
        EndsWith(it->first, "JSONSchemaPropsOrBool") ||
        EndsWith(it->first, "JSONSchemaPropsOrStringArray")) {
      const openapi::Schema& props =
          defs.find(std::string(openapi::kApiExtensionsV1) + "JSONSchemaProps")
              ->second;
      if (v->IsObject()) {
        PruneCrdValue(props, v, path, unknown);
      } else if (v->IsArray() && EndsWith(it->first, "OrArray")) {
        for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
          PruneCrdValue(props, &(*v)[i], path + "[" + std::to_string(i) + "]",
                        unknown);
        }
      }
      return;
    }
    s = &it->second;
  }
  if (v->IsArray()) {
    if (s->items == nullptr) return;
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      PruneCrdValue(*s->items, &(*v)[i], path + "[" + std::to_string(i) + "]",
                    unknown);
    }
    return;
  }
  if (!v->IsObject()) return;
  auto child = [&](std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  };
  if (!s->properties.empty()) {
    for (auto m = v->MemberBegin(); m != v->MemberEnd();) {
      const std::string_view key(m->name.GetString(),
                                 m->name.GetStringLength());
      const openapi::Schema* p = s->Property(key);
      if (p == nullptr) {
        unknown->push_back(child(key));
        m = v->EraseMember(m);
        continue;
      }
      PruneCrdValue(*p, &m->value, child(key), unknown);
      ++m;
    }
  } else if (s->additional_properties != nullptr) {
    for (auto& m : v->GetObject()) {
      PruneCrdValue(
          *s->additional_properties, &m.value,
          child(std::string_view(m.name.GetString(), m.name.GetStringLength())),
          unknown);
    }
  }
}

}  // namespace

std::vector<std::string> PruneUnknownCrdFields(objects::Unstructured* crd) {
  rapidjson::Document c = objects::ContentOf(*crd);
  std::vector<std::string> unknown;
  const CrdDefinitions& defs = CrdTypeDefinitions();
  PruneCrdValue(defs.find(std::string(openapi::kApiExtensionsV1) +
                          "CustomResourceDefinition")
                    ->second,
                &c, "", &unknown);
  if (!unknown.empty()) objects::SetContent(crd, c);
  return unknown;
}

const Strategy& CrdStrategy() {
  static const Strategy* s = new CrdStrategyImpl;
  return *s;
}

std::vector<CrdNameClaims::Name> CrdNameClaims::NamesOf(
    const std::string& group, const std::string& plural,
    const std::string& singular, const std::vector<std::string>& short_names,
    const std::string& kind, const std::string& list_kind) {
  std::vector<Name> names;
  auto add = [&](std::map<std::string, std::string>* held,
                 const std::string& name, const char* conflict) {
    if (!name.empty()) names.push_back({held, group + "/" + name, conflict});
  };
  add(&resources_, plural, "PluralConflict");
  add(&resources_, singular, "SingularConflict");
  for (const std::string& s : short_names) {
    add(&resources_, s, "ShortNamesConflict");
  }
  add(&kinds_, kind, "KindConflict");
  add(&kinds_, list_kind, "ListKindConflict");
  return names;
}

void CrdNameClaims::Hold(const Unstructured& crd) {
  if (objects::IsBeingDeleted(crd.metadata())) return;
  const rapidjson::Document c = objects::ContentOf(crd);
  const rapidjson::Value* spec = Member(c, "spec");
  const rapidjson::Value* status = Member(c, "status");
  const rapidjson::Value* names =
      status != nullptr ? Member(*status, "acceptedNames") : nullptr;
  if (spec == nullptr || names == nullptr) return;
  for (const Name& n : NamesOf(
           StrMember(*spec, "group"), StrMember(*names, "plural"),
           StrMember(*names, "singular"), StrListMember(*names, "shortNames"),
           StrMember(*names, "kind"), StrMember(*names, "listKind"))) {
    n.held->emplace(n.key, crd.metadata().name());
  }
}

std::optional<CrdNameClaims::Conflict> CrdNameClaims::Claim(
    const CrdDefinition& d) {
  const std::vector<Name> names = NamesOf(d.group, d.plural, d.singular,
                                          d.short_names, d.kind, d.list_kind);
  std::optional<Conflict> conflict;
  for (const Name& n : names) {
    auto it = n.held->find(n.key);
    if (it != n.held->end() && it->second != d.name) {
      conflict =
          Conflict{n.conflict, GoQuote(n.key.substr(d.group.size() + 1)) +
                                   " is already in use"};
    }
  }
  if (conflict) return conflict;
  for (const Name& n : names) (*n.held)[n.key] = d.name;
  return std::nullopt;
}

const CrdVersion* CrdDefinition::StorageVersion() const {
  for (const CrdVersion& v : versions) {
    if (v.storage) return &v;
  }
  return nullptr;
}

CrdDefinition ParseCrd(const Unstructured& crd) {
  CrdDefinition d;
  d.name = crd.metadata().name();
  const rapidjson::Document c = objects::ContentOf(crd);
  const rapidjson::Value* spec = Member(c, "spec");
  if (spec == nullptr || !spec->IsObject()) return d;
  d.group = StrMember(*spec, "group");
  d.namespaced = StrMember(*spec, "scope") != "Cluster";
  if (const rapidjson::Value* names = Member(*spec, "names")) {
    d.plural = StrMember(*names, "plural");
    d.singular = StrMember(*names, "singular");
    d.kind = StrMember(*names, "kind");
    d.list_kind = StrMember(*names, "listKind");
    d.short_names = StrListMember(*names, "shortNames");
    d.categories = StrListMember(*names, "categories");
  }
  if (d.singular.empty()) d.singular = Lower(d.kind);
  if (d.list_kind.empty()) d.list_kind = d.kind + "List";
  if (const rapidjson::Value* versions = Member(*spec, "versions");
      versions != nullptr && versions->IsArray()) {
    for (const rapidjson::Value& v : versions->GetArray()) {
      CrdVersion cv;
      cv.name = StrMember(v, "name");
      cv.served = BoolMember(v, "served");
      cv.storage = BoolMember(v, "storage");
      if (const rapidjson::Value* sub = Member(v, "subresources")) {
        cv.status_subresource = Member(*sub, "status") != nullptr;
        if (const rapidjson::Value* scale = Member(*sub, "scale")) {
          cv.scale_subresource = true;
          cv.spec_replicas_path = StrMember(*scale, "specReplicasPath");
          cv.status_replicas_path = StrMember(*scale, "statusReplicasPath");
          cv.label_selector_path = StrMember(*scale, "labelSelectorPath");
        }
      }
      if (const rapidjson::Value* schema = Member(v, "schema")) {
        if (const rapidjson::Value* s = Member(*schema, "openAPIV3Schema")) {
          cv.openapi_schema_json = Compact(*s);
        }
      }
      if (const rapidjson::Value* cols = Member(v, "additionalPrinterColumns");
          cols != nullptr && cols->IsArray()) {
        for (const rapidjson::Value& c : cols->GetArray()) {
          CrdPrinterColumn pc;
          pc.name = StrMember(c, "name");
          pc.type = StrMember(c, "type");
          pc.format = StrMember(c, "format");
          pc.description = StrMember(c, "description");
          pc.json_path = StrMember(c, "jsonPath");
          if (const rapidjson::Value* p = Member(c, "priority");
              p != nullptr && p->IsInt()) {
            pc.priority = p->GetInt();
          }
          cv.printer_columns.push_back(std::move(pc));
        }
      }
      if (const rapidjson::Value* schema = Member(v, "schema")) {
        if (const rapidjson::Value* root = Member(*schema, "openAPIV3Schema");
            root != nullptr && root->IsObject()) {
          cv.schema = CrdSchema::Build(*root, Path("openAPIV3Schema"), nullptr);
        }
      }
      d.versions.push_back(std::move(cv));
    }
  }
  rapidjson::Document key;
  key.SetObject();
  auto& a = key.GetAllocator();
  for (const char* m : {"group", "names", "scope", "versions"}) {
    if (const rapidjson::Value* v = Member(*spec, m)) {
      key.AddMember(rapidjson::StringRef(m), rapidjson::Value(*v, a), a);
    }
  }
  d.serving_key = Canonical(key);
  return d;
}

std::unique_ptr<CustomResourceType> CustomResourceType::Build(
    const CrdDefinition& def) {
  const CrdVersion* storage = def.StorageVersion();
  if (storage == nullptr) return nullptr;
  std::unique_ptr<CustomResourceType> t(new CustomResourceType);
  t->def_ = def;
  const objects::TypeMeta storage_tm{
      objects::GroupVersion{def.group, storage->name}.ApiVersion(), def.kind};
  for (const CrdVersion& cv : def.versions) {
    auto v = std::make_unique<Version>();
    v->served = cv.served;
    v->kind.gv = {def.group, cv.name};
    v->kind.kind = def.kind;
    v->kind.descriptor = Unstructured::descriptor();
    v->kind.prototype = &Unstructured::default_instance();
    v->list_kind.gv = v->kind.gv;
    v->list_kind.kind = def.list_kind;
    v->list_kind.descriptor = objects::UnstructuredList::descriptor();
    v->list_kind.prototype = &objects::UnstructuredList::default_instance();
    v->status_kind = v->kind;
    objects::ResourceInfo& r = v->resource;
    r.gv = v->kind.gv;
    r.resource = def.plural;
    r.singular = def.singular;
    r.namespaced = def.namespaced;
    r.kind = &v->kind;
    r.list_kind = &v->list_kind;
    r.short_names = def.short_names;
    r.categories = def.categories;
    r.verbs = {"create", "delete", "deletecollection", "get",
               "list",   "patch",  "update",           "watch"};
    if (cv.status_subresource) {
      r.subresources.push_back(
          {"status", &v->status_kind, {"get", "patch", "update"}});
    }
    if (cv.scale_subresource) {
      v->scale_kind =
          objects::Scheme::Default().FindKind("autoscaling/v1", "Scale");
      r.subresources.push_back(
          {"scale", v->scale_kind, {"get", "patch", "update"}});
    }
    v->strategy =
        std::make_unique<CustomResourceStrategy>(&v->resource, storage_tm, cv);
    if (&cv == storage) t->storage_index_ = t->versions_.size();
    t->versions_.push_back(std::move(v));
  }
  return t;
}

}  // namespace kplane::apiserver
