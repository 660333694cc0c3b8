// Internal to apiserver/registry: the building blocks of Kubernetes-style
// validation shared by the per-resource strategies.
//
//  - Path: field.Path ("spec.template.spec.containers[0].ports[1].name",
//    map keys as "data[key]").
//  - Go renderings of bad values: a field error prints its value with Go's
//    fmt (%q for strings, %v for numbers, %#v for everything else), so the
//    texts clients see contain `map[string]string{"app":"web"}` or
//    `intstr.IntOrString{Type:0, IntVal:0, StrVal:""}`. GoValue* produce
//    exactly those strings.
//  - Constructors for each field.Error type.
//  - The apimachinery validators kube-apiserver builds every resource's
//    rules from: object metadata (create and update), labels, annotations,
//    owner references, finalizers, label selectors, and the small syntax
//    checks (port names and numbers, env var names, config keys, IPs,
//    CIDRs, percentages, qualified names).
//
// Texts are Kubernetes 1.32's (k8s.io/apimachinery/pkg/util/validation,
// pkg/api/validation, pkg/apis/meta/v1/validation).
//
// Thread-safety: pure functions. Errors: returned as FieldErrors, never
// thrown.
#ifndef KPLANE_APISERVER_REGISTRY_VALIDATION_UTIL_H_
#define KPLANE_APISERVER_REGISTRY_VALIDATION_UTIL_H_

#include <google/protobuf/map.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/registry/strategy.h"
#include "objects/machinery/labels.h"
#include "objects/types.h"

namespace kplane::apiserver::validation {

using StringMap = google::protobuf::Map<std::string, std::string>;
using StringList = google::protobuf::RepeatedPtrField<std::string>;

// The keys of a map (protobuf or std), sorted: validation walks maps in key
// order so that its messages come out the same every time.
template <typename M>
std::vector<std::string> SortedKeys(const M& m) {
  std::vector<std::string> keys;
  keys.reserve(m.size());
  for (const auto& [k, v] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Maps with the same keys and the same value for each.
template <typename M>
bool MapsEqual(const M& a, const M& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) return false;
  }
  return true;
}

// core.MaxSecretSize: the most bytes the data of a Secret, or of a
// ConfigMap, may hold.
constexpr int kMaxSecretSize = 1024 * 1024;

// field.Path: Child("a").Index(0).Key("k") -> "a[0][k]".
class Path {
 public:
  Path() = default;
  explicit Path(std::string root) : s_(std::move(root)) {}
  Path Child(std::string_view name) const;
  Path Child(std::string_view a, std::string_view b) const {
    return Child(a).Child(b);
  }
  Path Index(int i) const;
  Path Key(std::string_view key) const;
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

// --- Go renderings of bad values ---
std::string GoInt(int64_t v);  // %v
std::string GoBool(bool v);    // %v
// %#v of map[string]string: keys sorted, `map[string]string{"a":"1",
// "b":"2"}`; an empty map prints `map[string]string(nil)` (a Go map decoded
// from an absent member is nil, and protobuf cannot tell empty from absent).
std::string GoStringMap(const StringMap& m);
// %#v of []string: `[]string{"a", "b"}`, empty `[]string(nil)`.
std::string GoStringSlice(const StringList& v);
std::string GoStringSlice(const std::vector<std::string>& v);
// %#v of intstr.IntOrString.
std::string GoIntOrString(const objects::intstr::IntOrString& v);
// %#v of a meta/v1 LabelSelector (the value, not the pointer).
std::string GoLabelSelector(const objects::metav1::LabelSelector& s);

// --- field.Error constructors ---
FieldError Required(const Path& p, std::string detail = "");
FieldError Invalid(const Path& p, std::string go_value, std::string detail);
FieldError InvalidString(const Path& p, std::string_view value,
                         std::string detail);
FieldError InvalidInt(const Path& p, int64_t value, std::string detail);
// "Unsupported value: <v>: supported values: "a", "b"".
FieldError NotSupported(const Path& p, std::string go_value,
                        const std::vector<std::string>& supported);
FieldError NotSupportedString(const Path& p, std::string_view value,
                              const std::vector<std::string>& supported);
FieldError Duplicate(const Path& p, std::string go_value);
FieldError Forbidden(const Path& p, std::string detail);
FieldError TooLong(const Path& p, int max_bytes);
FieldError TooMany(const Path& p, int actual, int max);
FieldError NotFound(const Path& p, std::string go_value);

inline void Append(FieldErrors* to, FieldErrors from) {
  for (auto& e : from) to->push_back(std::move(e));
}

// --- util/validation syntax checks (each returns problem messages) ---
std::vector<std::string> IsValidPortNum(int64_t port);
std::vector<std::string> IsValidPortName(std::string_view name);
std::vector<std::string> IsEnvVarName(std::string_view name);
// RelaxedEnvironmentVariableValidation (beta, on by default in 1.32).
std::vector<std::string> IsRelaxedEnvVarName(std::string_view name);
std::vector<std::string> IsConfigMapKey(std::string_view key);
std::vector<std::string> IsValidPercent(std::string_view s);
std::vector<std::string> IsHTTPHeaderName(std::string_view s);
std::vector<std::string> IsValidGroupOrUserID(int64_t id);
bool IsIPv4(std::string_view s);
bool IsIPv6(std::string_view s);
bool IsIP(std::string_view s);
bool IsCIDR(std::string_view s);
std::string InclusiveRangeError(int64_t lo, int64_t hi);
inline constexpr std::string_view kIsNegativeErrorMsg =
    "must be greater than or equal to 0";
inline constexpr std::string_view kFieldImmutableErrorMsg =
    "field is immutable";

// --- field-level validators ---
FieldErrors ValidateNonnegative(int64_t value, const Path& p);
FieldErrors ValidateDNS1123Label(std::string_view value, const Path& p);
FieldErrors ValidateDNS1123Subdomain(std::string_view value, const Path& p);
FieldErrors ValidateQualifiedName(std::string_view value, const Path& p);
FieldErrors ValidateLabelName(std::string_view value, const Path& p);
// Keys and values, in key order (Go iterates randomly; we are stable).
FieldErrors ValidateLabels(const StringMap& labels, const Path& p);
FieldErrors ValidateAnnotations(const StringMap& annotations, const Path& p);
FieldErrors ValidateLabelSelector(const objects::metav1::LabelSelector& s,
                                  const Path& p);
FieldErrors ValidateValidIP(std::string_view ip, const Path& p);
FieldErrors ValidateCIDR(std::string_view cidr, const Path& p);
// kube's ValidateNonSpecialIP: not unspecified, loopback, link-local or
// link-local multicast (an IP that does not parse is "must be a valid IP
// address").
FieldErrors ValidateNonSpecialIP(const std::string& ip, const Path& p);

// --- int-or-percent (pkg/apis/apps/validation) ---
// The percentage of a valid "N%" string, nullopt otherwise.
std::optional<int64_t> PercentValue(const objects::intstr::IntOrString& v);
// A valid percentage or a non-negative integer.
FieldErrors ValidatePositiveIntOrPercent(const objects::intstr::IntOrString& v,
                                         const Path& p);
FieldErrors IsNotMoreThan100Percent(const objects::intstr::IntOrString& v,
                                    const Path& p);

// The name rules of ValidateObjectMeta (pkg/api/validation names.go).
// `prefix` is true for generateName (a trailing '-' is allowed).
enum class NameRule {
  kDNS1123Subdomain,
  kDNS1123Label,
  kDNS1035Label,
  kPathSegment,
};
std::vector<std::string> ValidateName(NameRule rule, std::string_view name,
                                      bool prefix);

// ValidateObjectMeta as pkg/apis/core/validation wraps it (plus the
// "kubernetes.io" finalizer-name rule).
FieldErrors ValidateObjectMeta(const objects::metav1::ObjectMeta& meta,
                               bool namespaced, NameRule rule,
                               const Path& p = Path("metadata"));
// ValidateObjectMetaUpdate without the resourceVersion rule (handlers set
// metadata.resourceVersion to the stored one for unconditional updates
// before calling the strategy, as kube's generic store does).
FieldErrors ValidateObjectMetaUpdate(const objects::metav1::ObjectMeta& meta,
                                     const objects::metav1::ObjectMeta& old,
                                     const Path& p = Path("metadata"));
FieldErrors ValidateFinalizerName(std::string_view name, const Path& p);

// ValidateImmutableField for values already rendered with GoValue*.
FieldErrors ValidateImmutable(bool equal, std::string go_new_value,
                              const Path& p);

// --- selectors ---
// objects::LabelSelectorAsSelector for an optional selector: nullopt when
// the selector is invalid (unknown operator, bad key/value). A missing
// selector matches nothing.
std::optional<machinery::LabelSelector> AsSelector(
    const objects::metav1::LabelSelector* s);
machinery::Labels ToLabels(const StringMap& m);

// Protobuf messages compared field by field (unknown fields ignored); maps
// compare as maps, so key order does not matter.
bool Equal(const google::protobuf::Message& a,
           const google::protobuf::Message& b);

}  // namespace kplane::apiserver::validation

#endif  // KPLANE_APISERVER_REGISTRY_VALIDATION_UTIL_H_
