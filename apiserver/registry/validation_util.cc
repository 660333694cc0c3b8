#include "apiserver/registry/validation_util.h"

#include <arpa/inet.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "base/strings.h"
#include "objects/envelope.h"
#include "objects/label_selector.h"
#include "objects/machinery/validation.h"
#include "objects/time.h"

namespace kplane::apiserver::validation {

namespace {

using objects::metav1::ObjectMeta;
using objects::metav1::OwnerReference;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || IsDigit(c); }
bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Go's time.Time.String() of a whole-second UTC time:
// "2026-11-29 08:37:42 +0000 UTC".
std::string GoTime(const objects::metav1::Time& t) {
  if (objects::IsZero(t)) return "0001-01-01 00:00:00 +0000 UTC";
  std::string rfc = objects::FormatRfc3339(objects::UnixSeconds(t));  // ...T..Z
  rfc[10] = ' ';
  rfc.pop_back();
  return rfc + " +0000 UTC";
}

std::string GoBoolPtr(bool has, bool v) {
  return has ? std::string("(*bool)(") + (v ? "true" : "false") + ")"
             : "(*bool)(nil)";
}

std::string GoOwnerReference(const OwnerReference& r) {
  return "v1.OwnerReference{APIVersion:" + GoQuote(r.apiversion()) +
         ", Kind:" + GoQuote(r.kind()) + ", Name:" + GoQuote(r.name()) +
         ", UID:" + GoQuote(r.uid()) +
         ", Controller:" + GoBoolPtr(r.has_controller(), r.controller()) +
         ", BlockOwnerDeletion:" +
         GoBoolPtr(r.has_blockownerdeletion(), r.blockownerdeletion()) + "}";
}

// Parses "a.b.c.d" with 1-3 digit parts, leading zeros allowed (Go's
// ParseIPSloppy).
bool ParseIPv4Sloppy(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (true) {
    size_t start = i;
    int value = 0;
    while (i < s.size() && IsDigit(s[i]) && i - start < 3) {
      value = value * 10 + (s[i] - '0');
      ++i;
    }
    if (i == start || value > 255) return false;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return false;
    ++i;
  }
  return parts == 4;
}

}  // namespace

// --- Path ---

Path Path::Child(std::string_view name) const {
  Path p;
  p.s_ = s_.empty() ? std::string(name) : s_ + "." + std::string(name);
  return p;
}

Path Path::Index(int i) const {
  Path p;
  p.s_ = s_ + "[" + std::to_string(i) + "]";
  return p;
}

Path Path::Key(std::string_view key) const {
  Path p;
  p.s_ = s_ + "[" + std::string(key) + "]";
  return p;
}

// --- Go renderings ---

std::string GoInt(int64_t v) { return std::to_string(v); }
std::string GoBool(bool v) { return v ? "true" : "false"; }

std::string GoStringMap(const StringMap& m) {
  if (m.empty()) return "map[string]string(nil)";
  std::string out = "map[string]string{";
  bool first = true;
  for (const std::string& k : SortedKeys(m)) {
    if (!first) out += ", ";
    first = false;
    out += GoQuote(k) + ":" + GoQuote(m.at(k));
  }
  return out + "}";
}

std::string GoStringSlice(const StringList& v) {
  return GoStringSlice(std::vector<std::string>(v.begin(), v.end()));
}

std::string GoStringSlice(const std::vector<std::string>& v) {
  if (v.empty()) return "[]string(nil)";
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += GoQuote(v[i]);
  }
  return out + "}";
}

std::string GoIntOrString(const objects::intstr::IntOrString& v) {
  return "intstr.IntOrString{Type:" + std::to_string(v.type()) +
         ", IntVal:" + std::to_string(v.intval()) +
         ", StrVal:" + GoQuote(v.strval()) + "}";
}

std::string GoLabelSelector(const objects::metav1::LabelSelector& s) {
  std::string out =
      "v1.LabelSelector{MatchLabels:" + GoStringMap(s.matchlabels()) +
      ", MatchExpressions:";
  if (s.matchexpressions().empty()) {
    out += "[]v1.LabelSelectorRequirement(nil)";
  } else {
    out += "[]v1.LabelSelectorRequirement{";
    for (int i = 0; i < s.matchexpressions_size(); ++i) {
      const auto& r = s.matchexpressions(i);
      if (i > 0) out += ", ";
      out += "v1.LabelSelectorRequirement{Key:" + GoQuote(r.key()) +
             ", Operator:" + GoQuote(r.operator_()) +
             ", Values:" + GoStringSlice(r.values()) + "}";
    }
    out += "}";
  }
  return out + "}";
}

// --- constructors ---

FieldError Required(const Path& p, std::string detail) {
  return {FieldError::Type::kRequired, p.str(), "", std::move(detail)};
}
FieldError Invalid(const Path& p, std::string go_value, std::string detail) {
  return {FieldError::Type::kInvalid, p.str(), std::move(go_value),
          std::move(detail)};
}
FieldError InvalidString(const Path& p, std::string_view value,
                         std::string detail) {
  return Invalid(p, GoQuote(value), std::move(detail));
}
FieldError InvalidInt(const Path& p, int64_t value, std::string detail) {
  return Invalid(p, GoInt(value), std::move(detail));
}
FieldError NotSupported(const Path& p, std::string go_value,
                        const std::vector<std::string>& supported) {
  std::string detail;
  if (!supported.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += GoQuote(supported[i]);
    }
  }
  return {FieldError::Type::kNotSupported, p.str(), std::move(go_value),
          std::move(detail)};
}
FieldError NotSupportedString(const Path& p, std::string_view value,
                              const std::vector<std::string>& supported) {
  return NotSupported(p, GoQuote(value), supported);
}
FieldError Duplicate(const Path& p, std::string go_value) {
  return {FieldError::Type::kDuplicate, p.str(), std::move(go_value), ""};
}
FieldError Forbidden(const Path& p, std::string detail) {
  return {FieldError::Type::kForbidden, p.str(), "", std::move(detail)};
}
FieldError TooLong(const Path& p, int max_bytes) {
  return {FieldError::Type::kTooLong, p.str(), "",
          "may not be more than " + std::to_string(max_bytes) + " bytes"};
}
FieldError TooMany(const Path& p, int actual, int max) {
  return {FieldError::Type::kTooMany, p.str(), std::to_string(actual),
          "must have at most " + std::to_string(max) + " items"};
}
FieldError NotFound(const Path& p, std::string go_value) {
  return {FieldError::Type::kNotFound, p.str(), std::move(go_value), ""};
}

// --- syntax checks ---

std::string InclusiveRangeError(int64_t lo, int64_t hi) {
  return "must be between " + std::to_string(lo) + " and " +
         std::to_string(hi) + ", inclusive";
}

std::vector<std::string> IsValidPortNum(int64_t port) {
  if (port >= 1 && port <= 65535) return {};
  return {InclusiveRangeError(1, 65535)};
}

std::vector<std::string> IsValidPortName(std::string_view port) {
  std::vector<std::string> errs;
  if (port.size() > 15) errs.push_back(machinery::MaxLenError(15));
  bool charset_ok = !port.empty();
  bool has_letter = false;
  for (char c : port) {
    if (!IsLowerAlnum(c) && c != '-') charset_ok = false;
    if (c >= 'a' && c <= 'z') has_letter = true;
  }
  if (!charset_ok) {
    errs.push_back(
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens "
        "(-)");
  }
  if (!has_letter) errs.push_back("must contain at least one letter (a-z)");
  if (port.find("--") != std::string_view::npos) {
    errs.push_back("must not contain consecutive hyphens");
  }
  if (!port.empty() && (port.front() == '-' || port.back() == '-')) {
    errs.push_back("must not begin or end with a hyphen");
  }
  return errs;
}

namespace {
std::vector<std::string> HasChDirPrefix(std::string_view v) {
  if (v == ".") return {"must not be '.'"};
  if (v == "..") return {"must not be '..'"};
  if (v.substr(0, 2) == "..") return {"must not start with '..'"};
  return {};
}
}  // namespace

std::vector<std::string> IsEnvVarName(std::string_view v) {
  std::vector<std::string> errs;
  // [-._a-zA-Z][-._a-zA-Z0-9]*
  bool ok = !v.empty() &&
            (IsAlpha(v[0]) || v[0] == '-' || v[0] == '.' || v[0] == '_');
  for (char c : v) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '-' || c == '.' || c == '_')) {
      ok = false;
    }
  }
  if (!ok) {
    errs.push_back(machinery::RegexError(
        "a valid environment variable name must consist of alphabetic "
        "characters, digits, '_', '-', or '.', and must not start with a "
        "digit",
        "[-._a-zA-Z][-._a-zA-Z0-9]*",
        {"my.env-name", "MY_ENV.NAME", "MyEnvName1"}));
  }
  for (auto& m : HasChDirPrefix(v)) errs.push_back(m);
  return errs;
}

std::vector<std::string> IsRelaxedEnvVarName(std::string_view v) {
  std::vector<std::string> errs;
  if (v.empty()) errs.push_back("environment variable name must be non-empty");
  for (unsigned char c : v) {
    if (c > 0x7e || c < 0x20 || c == '=') {
      errs.push_back(
          "a valid environment variable name must consist only of printable "
          "ASCII characters other than '='");
      break;
    }
  }
  return errs;
}

std::vector<std::string> IsConfigMapKey(std::string_view v) {
  std::vector<std::string> errs;
  if (v.size() > machinery::kDNS1123SubdomainMaxLength) {
    errs.push_back(
        machinery::MaxLenError(machinery::kDNS1123SubdomainMaxLength));
  }
  bool ok = !v.empty();
  for (char c : v) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '-' || c == '.' || c == '_')) {
      ok = false;
    }
  }
  if (!ok) {
    errs.push_back(machinery::RegexError(
        "a valid config key must consist of alphanumeric characters, '-', "
        "'_' or '.'",
        "[-._a-zA-Z0-9]+", {"key.name", "KEY_NAME", "key-name"}));
  }
  for (auto& m : HasChDirPrefix(v)) errs.push_back(m);
  return errs;
}

std::vector<std::string> IsValidPercent(std::string_view s) {
  bool ok = s.size() >= 2 && s.back() == '%';
  for (size_t i = 0; ok && i + 1 < s.size(); ++i) ok = IsDigit(s[i]);
  if (ok) return {};
  return {machinery::RegexError(
      "a valid percent string must be a numeric string followed by an "
      "ending '%'",
      "[0-9]+%", {"1%", "93%"})};
}

std::vector<std::string> IsHTTPHeaderName(std::string_view s) {
  bool ok = !s.empty();
  for (char c : s) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '-')) ok = false;
  }
  if (ok) return {};
  return {machinery::RegexError(
      "a valid HTTP header must consist of alphanumeric characters or '-'",
      "[-A-Za-z0-9]+", {"X-Header-Name"})};
}

std::vector<std::string> IsValidGroupOrUserID(int64_t id) {
  if (id >= 0 && id <= 2147483647) return {};
  return {InclusiveRangeError(0, 2147483647)};
}

bool IsIPv4(std::string_view s) { return ParseIPv4Sloppy(s); }

bool IsIPv6(std::string_view s) {
  if (s.find(':') == std::string_view::npos) return false;
  std::string str(s);
  unsigned char buf[16];
  return inet_pton(AF_INET6, str.c_str(), buf) == 1;
}

bool IsIP(std::string_view s) { return IsIPv4(s) || IsIPv6(s); }

bool IsCIDR(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view ip = s.substr(0, slash);
  std::optional<int64_t> bits = ParseInt64(s.substr(slash + 1));
  if (!bits || *bits < 0 || s.substr(slash + 1).empty() ||
      s[slash + 1] == '+' || s[slash + 1] == '-') {
    return false;
  }
  if (IsIPv4(ip)) return *bits <= 32;
  if (IsIPv6(ip)) return *bits <= 128;
  return false;
}

// --- field-level validators ---

FieldErrors ValidateNonnegative(int64_t value, const Path& p) {
  if (value >= 0) return {};
  return {InvalidInt(p, value, std::string(kIsNegativeErrorMsg))};
}

FieldErrors ValidateDNS1123Label(std::string_view value, const Path& p) {
  FieldErrors errs;
  for (auto& m : machinery::IsDNS1123Label(value)) {
    errs.push_back(InvalidString(p, value, m));
  }
  return errs;
}

FieldErrors ValidateDNS1123Subdomain(std::string_view value, const Path& p) {
  FieldErrors errs;
  for (auto& m : machinery::IsDNS1123Subdomain(value)) {
    errs.push_back(InvalidString(p, value, m));
  }
  return errs;
}

FieldErrors ValidateQualifiedName(std::string_view value, const Path& p) {
  FieldErrors errs;
  for (auto& m : machinery::IsQualifiedName(value)) {
    errs.push_back(InvalidString(p, value, m));
  }
  return errs;
}

FieldErrors ValidateLabelName(std::string_view value, const Path& p) {
  return ValidateQualifiedName(value, p);
}

FieldErrors ValidateLabels(const StringMap& labels, const Path& p) {
  FieldErrors errs;
  for (const std::string& k : SortedKeys(labels)) {
    Append(&errs, ValidateLabelName(k, p));
    for (auto& m : machinery::IsValidLabelValue(labels.at(k))) {
      errs.push_back(InvalidString(p, labels.at(k), m));
    }
  }
  return errs;
}

FieldErrors ValidateAnnotations(const StringMap& annotations, const Path& p) {
  constexpr int kTotalAnnotationSizeLimit = 256 * 1024;
  FieldErrors errs;
  int64_t total = 0;
  for (const std::string& k : SortedKeys(annotations)) {
    for (auto& m : machinery::IsQualifiedName(ToLower(k))) {
      errs.push_back(InvalidString(p, k, m));
    }
    total += k.size() + annotations.at(k).size();
  }
  if (total > kTotalAnnotationSizeLimit) {
    errs.push_back(TooLong(p, kTotalAnnotationSizeLimit));
  }
  return errs;
}

FieldErrors ValidateLabelSelector(const objects::metav1::LabelSelector& s,
                                  const Path& p) {
  FieldErrors errs = ValidateLabels(s.matchlabels(), p.Child("matchLabels"));
  for (int i = 0; i < s.matchexpressions_size(); ++i) {
    const auto& r = s.matchexpressions(i);
    Path rp = p.Child("matchExpressions").Index(i);
    const std::string& op = r.operator_();
    if (op == "In" || op == "NotIn") {
      if (r.values().empty()) {
        errs.push_back(
            Required(rp.Child("values"),
                     "must be specified when `operator` is 'In' or 'NotIn'"));
      }
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (!r.values().empty()) {
        errs.push_back(
            Forbidden(rp.Child("values"),
                      "may not be specified when `operator` is 'Exists' or "
                      "'DoesNotExist'"));
      }
    } else {
      errs.push_back(InvalidString(rp.Child("operator"), op,
                                   "not a valid selector operator"));
    }
    Append(&errs, ValidateLabelName(r.key(), rp.Child("key")));
    for (int j = 0; j < r.values_size(); ++j) {
      for (auto& m : machinery::IsValidLabelValue(r.values(j))) {
        errs.push_back(
            InvalidString(rp.Child("values").Index(j), r.values(j), m));
      }
    }
  }
  return errs;
}

FieldErrors ValidateValidIP(std::string_view ip, const Path& p) {
  if (IsIP(ip)) return {};
  return {InvalidString(p, ip,
                        "must be a valid IP address, (e.g. 10.9.8.7 or "
                        "2001:db8::ffff)")};
}

FieldErrors ValidateCIDR(std::string_view cidr, const Path& p) {
  if (IsCIDR(cidr)) return {};
  return {InvalidString(p, cidr,
                        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                        "2001:db8::/64)")};
}

std::vector<std::string> ValidateName(NameRule rule, std::string_view name,
                                      bool prefix) {
  std::string masked(name);
  // maskTrailingDash: upstream replaces the last *two* characters by "a".
  if (prefix && masked.size() > 1 && masked.back() == '-') {
    masked = masked.substr(0, masked.size() - 2) + "a";
  }
  switch (rule) {
    case NameRule::kDNS1123Subdomain:
      return machinery::IsDNS1123Subdomain(masked);
    case NameRule::kDNS1123Label:
      return machinery::IsDNS1123Label(masked);
    case NameRule::kDNS1035Label:
      return machinery::IsDNS1035Label(masked);
    case NameRule::kPathSegment: {
      std::vector<std::string> errs;
      if (!prefix && (name == "." || name == "..")) {
        return {"may not be '" + std::string(name) + "'"};
      }
      if (name.find('/') != std::string_view::npos) {
        errs.push_back("may not contain '/'");
      }
      if (name.find('%') != std::string_view::npos) {
        errs.push_back("may not contain '%'");
      }
      return errs;
    }
  }
  return {};
}

FieldErrors ValidateFinalizerName(std::string_view name, const Path& p) {
  FieldErrors errs = ValidateQualifiedName(name, p);
  if (name.find('/') == std::string_view::npos && name != "kubernetes" &&
      name != "orphan" && name != "foregroundDeletion") {
    errs.push_back(InvalidString(
        p, name,
        "name is neither a standard finalizer name nor is it fully "
        "qualified"));
  }
  return errs;
}

namespace {

FieldErrors ValidateOwnerReferences(
    const google::protobuf::RepeatedPtrField<OwnerReference>& refs,
    const Path& p) {
  FieldErrors errs;
  std::string first_controller;
  for (const auto& r : refs) {
    // schema.FromAPIVersionAndKind: "v1" and "g/v" parse; "" or "a/b/c"
    // give an empty version.
    std::vector<std::string> parts = StrSplit(r.apiversion(), '/');
    std::string version;
    std::string group;
    if (r.apiversion().empty() || parts.size() > 2) {
      version = "";
    } else if (parts.size() == 1) {
      version = parts[0];
    } else {
      group = parts[0];
      version = parts[1];
    }
    if (version.empty()) {
      errs.push_back(InvalidString(p.Child("apiVersion"), r.apiversion(),
                                   "version must not be empty"));
    }
    if (r.kind().empty()) {
      errs.push_back(
          InvalidString(p.Child("kind"), r.kind(), "kind must not be empty"));
    }
    if (r.name().empty()) {
      errs.push_back(
          InvalidString(p.Child("name"), r.name(), "name must not be empty"));
    }
    if (r.uid().empty()) {
      errs.push_back(
          InvalidString(p.Child("uid"), r.uid(), "uid must not be empty"));
    }
    if (group.empty() && version == "v1" && r.kind() == "Event") {
      errs.push_back(Invalid(p, GoOwnerReference(r),
                             "/v1, Kind=Event is disallowed from being an "
                             "owner"));
    }
    if (r.has_controller() && r.controller()) {
      std::string name = r.kind() + "/" + r.name();
      if (!first_controller.empty()) {
        std::string all = "[]v1.OwnerReference{";
        for (int i = 0; i < refs.size(); ++i) {
          if (i > 0) all += ", ";
          all += GoOwnerReference(refs[i]);
        }
        all += "}";
        errs.push_back(
            Invalid(p, all,
                    "Only one reference can have Controller set to true. Found "
                    "\"true\" in references for " +
                        first_controller + " and " + name));
      } else {
        first_controller = name;
      }
    }
  }
  return errs;
}

FieldErrors ValidateFinalizersGeneric(const StringList& finalizers,
                                      const Path& p) {
  FieldErrors errs;
  bool orphan = false;
  bool foreground = false;
  for (const std::string& f : finalizers) {
    Append(&errs, ValidateQualifiedName(f, p));
    if (f == "orphan") orphan = true;
    if (f == "foregroundDeletion") foreground = true;
  }
  if (orphan && foreground) {
    errs.push_back(Invalid(p, GoStringSlice(finalizers),
                           "finalizer orphan and foregroundDeletion cannot be "
                           "both set"));
  }
  return errs;
}

bool IsPrintable(unsigned char c) { return c >= 0x20 && c != 0x7f; }

FieldErrors ValidateFieldManager(const std::string& manager, const Path& p) {
  FieldErrors errs;
  if (manager.size() > 128) errs.push_back(TooLong(p, 128));
  for (size_t i = 0; i < manager.size(); ++i) {
    unsigned char c = manager[i];
    if (c < 0x80 && !IsPrintable(c)) {
      char buf[64];
      std::snprintf(buf, sizeof buf,
                    "invalid character U+%04X (at position %zu)", c, i);
      errs.push_back(InvalidString(p, manager, buf));
    }
  }
  return errs;
}

FieldErrors ValidateManagedFields(
    const google::protobuf::RepeatedPtrField<
        objects::metav1::ManagedFieldsEntry>& entries,
    const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    Path ip = p.Index(i);
    if (e.operation() != "Apply" && e.operation() != "Update") {
      errs.push_back(InvalidString(ip.Child("operation"), e.operation(),
                                   "must be `Apply` or `Update`"));
    }
    if (!e.fieldstype().empty() && e.fieldstype() != "FieldsV1") {
      errs.push_back(InvalidString(ip.Child("fieldsType"), e.fieldstype(),
                                   "must be `FieldsV1`"));
    }
    Append(&errs, ValidateFieldManager(e.manager(), ip.Child("manager")));
    if (e.subresource().size() > 256) {
      errs.push_back(TooLong(ip.Child("subresource"), 256));
    }
  }
  return errs;
}

FieldErrors KubeFinalizerNames(const StringList& finalizers, const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < finalizers.size(); ++i) {
    const std::string& f = finalizers[i];
    if (f.find('/') == std::string::npos && f != "kubernetes" &&
        f != "orphan" && f != "foregroundDeletion") {
      errs.push_back(InvalidString(p.Index(i), f,
                                   "name is neither a standard finalizer name "
                                   "nor is it fully qualified"));
    }
  }
  return errs;
}

std::string GoTimePtr(const ObjectMeta& m) {
  return m.has_deletiontimestamp() && !objects::IsZero(m.deletiontimestamp())
             ? GoTime(m.deletiontimestamp())
             : "null";
}

}  // namespace

FieldErrors ValidateObjectMeta(const ObjectMeta& meta, bool namespaced,
                               NameRule rule, const Path& p) {
  FieldErrors errs;
  if (!meta.generatename().empty()) {
    for (auto& m : ValidateName(rule, meta.generatename(), true)) {
      errs.push_back(
          InvalidString(p.Child("generateName"), meta.generatename(), m));
    }
  }
  if (meta.name().empty()) {
    errs.push_back(
        Required(p.Child("name"), "name or generateName is required"));
  } else {
    for (auto& m : ValidateName(rule, meta.name(), false)) {
      errs.push_back(InvalidString(p.Child("name"), meta.name(), m));
    }
  }
  if (namespaced) {
    if (meta.namespace_().empty()) {
      errs.push_back(Required(p.Child("namespace")));
    } else {
      for (auto& m :
           ValidateName(NameRule::kDNS1123Label, meta.namespace_(), false)) {
        errs.push_back(
            InvalidString(p.Child("namespace"), meta.namespace_(), m));
      }
    }
  } else if (!meta.namespace_().empty()) {
    errs.push_back(Forbidden(p.Child("namespace"), "not allowed on this type"));
  }
  Append(&errs, ValidateNonnegative(meta.generation(), p.Child("generation")));
  Append(&errs, ValidateLabels(meta.labels(), p.Child("labels")));
  Append(&errs,
         ValidateAnnotations(meta.annotations(), p.Child("annotations")));
  Append(&errs, ValidateOwnerReferences(meta.ownerreferences(),
                                        p.Child("ownerReferences")));
  Append(&errs,
         ValidateFinalizersGeneric(meta.finalizers(), p.Child("finalizers")));
  Append(&errs,
         ValidateManagedFields(meta.managedfields(), p.Child("managedFields")));
  if (rule != NameRule::kPathSegment) {
    Append(&errs, KubeFinalizerNames(meta.finalizers(), p.Child("finalizers")));
  }
  return errs;
}

FieldErrors ValidateObjectMetaUpdate(const ObjectMeta& meta,
                                     const ObjectMeta& old, const Path& p) {
  FieldErrors errs;
  if (old.has_deletiontimestamp() &&
      !objects::IsZero(old.deletiontimestamp())) {
    std::set<std::string> olds(old.finalizers().begin(),
                               old.finalizers().end());
    std::set<std::string> extra;
    for (const auto& f : meta.finalizers()) {
      if (!olds.count(f)) extra.insert(f);
    }
    if (!extra.empty()) {
      errs.push_back(Forbidden(
          p.Child("finalizers"),
          "no new finalizers can be added if the object is being deleted, "
          "found new finalizers " +
              GoStringSlice(
                  std::vector<std::string>(extra.begin(), extra.end()))));
    }
  }
  if (meta.generation() < old.generation()) {
    errs.push_back(InvalidInt(p.Child("generation"), meta.generation(),
                              "must not be decremented"));
  }
  Append(&errs, ValidateImmutable(meta.name() == old.name(),
                                  GoQuote(meta.name()), p.Child("name")));
  Append(&errs,
         ValidateImmutable(meta.namespace_() == old.namespace_(),
                           GoQuote(meta.namespace_()), p.Child("namespace")));
  Append(&errs, ValidateImmutable(meta.uid() == old.uid(), GoQuote(meta.uid()),
                                  p.Child("uid")));
  Append(&errs,
         ValidateImmutable(objects::UnixSeconds(meta.creationtimestamp()) ==
                               objects::UnixSeconds(old.creationtimestamp()),
                           GoTime(meta.creationtimestamp()),
                           p.Child("creationTimestamp")));
  Append(&errs,
         ValidateImmutable(GoTimePtr(meta) == GoTimePtr(old), GoTimePtr(meta),
                           p.Child("deletionTimestamp")));
  bool grace_equal =
      meta.has_deletiongraceperiodseconds() ==
          old.has_deletiongraceperiodseconds() &&
      meta.deletiongraceperiodseconds() == old.deletiongraceperiodseconds();
  Append(&errs, ValidateImmutable(grace_equal,
                                  meta.has_deletiongraceperiodseconds()
                                      ? GoInt(meta.deletiongraceperiodseconds())
                                      : "null",
                                  p.Child("deletionGracePeriodSeconds")));
  Append(&errs, ValidateLabels(meta.labels(), p.Child("labels")));
  Append(&errs,
         ValidateAnnotations(meta.annotations(), p.Child("annotations")));
  Append(&errs, ValidateOwnerReferences(meta.ownerreferences(),
                                        p.Child("ownerReferences")));
  Append(&errs,
         ValidateManagedFields(meta.managedfields(), p.Child("managedFields")));
  Append(&errs, KubeFinalizerNames(meta.finalizers(), p.Child("finalizers")));
  return errs;
}

FieldErrors ValidateImmutable(bool equal, std::string go_new_value,
                              const Path& p) {
  if (equal) return {};
  return {Invalid(p, std::move(go_new_value),
                  std::string(kFieldImmutableErrorMsg))};
}

std::optional<machinery::LabelSelector> AsSelector(
    const objects::metav1::LabelSelector* s) {
  if (s == nullptr) return machinery::LabelSelector::Nothing();
  StatusOr<machinery::LabelSelector> sel = objects::LabelSelectorAsSelector(*s);
  if (!sel.ok()) return std::nullopt;
  return *std::move(sel);
}

machinery::Labels ToLabels(const StringMap& m) {
  machinery::Labels out;
  for (const auto& [k, v] : m) out.emplace(k, v);
  return out;
}

bool Equal(const google::protobuf::Message& a,
           const google::protobuf::Message& b) {
  // Update validation compares specs that are nearly always unchanged, and
  // the differencer walks them by reflection; equal canonical bytes mean
  // the same fields set to the same values (and so equivalent). Different
  // bytes may still be equivalent (a field set to its default against one
  // left unset): the differencer decides those.
  if (a.GetDescriptor() == b.GetDescriptor() &&
      objects::SerializeDeterministic(a) ==
          objects::SerializeDeterministic(b)) {
    return true;
  }
  return google::protobuf::util::MessageDifferencer::Equivalent(a, b);
}

// --- int-or-percent (pkg/apis/apps/validation) ---

// The percentage of a valid "N%" string.
std::optional<int64_t> PercentValue(const objects::intstr::IntOrString& v) {
  if (v.type() != 1 || !IsValidPercent(v.strval()).empty()) {
    return std::nullopt;
  }
  return ParseInt64(v.strval().substr(0, v.strval().size() - 1));
}

FieldErrors ValidatePositiveIntOrPercent(const objects::intstr::IntOrString& v,
                                         const Path& p) {
  FieldErrors errs;
  if (v.type() == 1) {
    for (auto& m : IsValidPercent(v.strval())) {
      errs.push_back(Invalid(p, GoIntOrString(v), m));
    }
  } else {
    Append(&errs, ValidateNonnegative(v.intval(), p));
  }
  return errs;
}

FieldErrors IsNotMoreThan100Percent(const objects::intstr::IntOrString& v,
                                    const Path& p) {
  auto pct = PercentValue(v);
  if (!pct || *pct <= 100) return {};
  return {Invalid(p, GoIntOrString(v), "must not be greater than 100%")};
}

// kube's ValidateNonSpecialIP for an IP that parsed.
FieldErrors ValidateNonSpecialIP(const std::string& ip, const Path& p) {
  FieldErrors errs;
  in_addr v4{};
  in6_addr v6{};
  bool unspecified = false, loopback = false, link_local = false,
       link_local_multicast = false;
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) {
    const uint32_t a = ntohl(v4.s_addr);
    unspecified = a == 0;
    loopback = (a >> 24) == 127;
    link_local = (a >> 16) == ((169u << 8) | 254u);
    link_local_multicast = (a >> 8) == (224u << 16);
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    static const in6_addr kAny = IN6ADDR_ANY_INIT;
    unspecified = memcmp(&v6, &kAny, sizeof v6) == 0;
    loopback = memcmp(&v6, &kLoopback, sizeof v6) == 0;
    link_local = v6.s6_addr[0] == 0xfe && (v6.s6_addr[1] & 0xc0) == 0x80;
    link_local_multicast =
        v6.s6_addr[0] == 0xff && (v6.s6_addr[1] & 0x0f) == 0x02;
  } else {
    return {InvalidString(p, ip, "must be a valid IP address")};
  }
  if (unspecified) {
    errs.push_back(InvalidString(p, ip, "may not be unspecified (" + ip + ")"));
  }
  if (loopback) {
    errs.push_back(InvalidString(
        p, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"));
  }
  if (link_local) {
    errs.push_back(InvalidString(
        p, ip,
        "may not be in the link-local range (169.254.0.0/16, fe80::/10)"));
  }
  if (link_local_multicast) {
    errs.push_back(InvalidString(p, ip,
                                 "may not be in the link-local multicast "
                                 "range (224.0.0.0/24, ff02::/10)"));
  }
  return errs;
}

}  // namespace kplane::apiserver::validation
