// Name and label validation with kube-apiserver's exact messages
// (k8s.io/apimachinery/pkg/util/validation as of Kubernetes 1.32), the
// field.Error rendering they appear in, and generateName suffixes.
//
//   IsDNS1123Subdomain("Foo") ->
//     {"a lowercase RFC 1123 subdomain must consist of lower case
//       alphanumeric characters, '-' or '.', and must start and end with an
//       alphanumeric character (e.g. 'example.com', regex used for
//       validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*
//       [a-z0-9])?)*')"}
//   InvalidError("metadata.name", "Foo", msgs) ->
//     "metadata.name: Invalid value: \"Foo\": a lowercase RFC 1123 ..."
//
// Each Is* function returns the list of problems (empty = valid), as
// upstream does. Thread-safety: pure functions; GenerateNameSuffix takes the
// caller's random source.
#ifndef KPLANE_OBJECTS_MACHINERY_VALIDATION_H_
#define KPLANE_OBJECTS_MACHINERY_VALIDATION_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kplane::machinery {

inline constexpr int kDNS1123LabelMaxLength = 63;
inline constexpr int kDNS1123SubdomainMaxLength = 253;
inline constexpr int kDNS1035LabelMaxLength = 63;
inline constexpr int kLabelValueMaxLength = 63;
inline constexpr int kQualifiedNameMaxLength = 63;

std::vector<std::string> IsDNS1123Label(std::string_view value);
std::vector<std::string> IsDNS1123Subdomain(std::string_view value);
std::vector<std::string> IsDNS1035Label(std::string_view value);
// A label key / annotation key: [prefix/]name.
std::vector<std::string> IsQualifiedName(std::string_view value);
std::vector<std::string> IsValidLabelValue(std::string_view value);

// "must be no more than 63 characters"
std::string MaxLenError(int length);
// msg + " (e.g. 'a' or 'b', regex used for validation is 're')".
std::string RegexError(std::string_view msg, std::string_view re,
                       const std::vector<std::string>& examples = {});

// field.Error renderings: `<path>: Invalid value: "<v>": <detail>`,
// `<path>: Required value: <detail>`, ... The value is Go-%q quoted.
std::string InvalidError(std::string_view path, std::string_view value,
                         std::string_view detail);
// As InvalidError, with the value already rendered (e.g. []string{"a"}).
std::string InvalidErrorRaw(std::string_view path, std::string_view raw_value,
                            std::string_view detail);
std::string RequiredError(std::string_view path, std::string_view detail);
std::string ForbiddenError(std::string_view path, std::string_view detail);

// Object name validation as kube-apiserver's ValidateObjectMeta does it:
// name (or generateName, validated with a placeholder suffix) must be a
// DNS-1123 subdomain (most kinds) or label (namespaces, services). Returns
// field errors like
//   metadata.name: Required value: name or generateName is required
//   metadata.name: Invalid value: "Foo": a lowercase RFC 1123 subdomain ...
enum class NameRule { kDNS1123Subdomain, kDNS1123Label, kDNS1035Label };
std::vector<std::string> ValidateObjectName(std::string_view name,
                                            std::string_view generate_name,
                                            NameRule rule);

// Joins field errors the way an Invalid status message does:
// `<Kind> "<name>" is invalid: <err>` or `... is invalid: [<e1>, <e2>]`.
std::string InvalidObjectMessage(std::string_view kind, std::string_view name,
                                 const std::vector<std::string>& errors);

// The 5-character suffix of generateName, from Kubernetes' alphabet
// "bcdfghjklmnpqrstvwxz2456789" (no vowels, no confusable 0/1/3).
// `next_index(n)` returns a uniform integer in [0, n).
inline constexpr std::string_view kGenerateNameAlphabet =
    "bcdfghjklmnpqrstvwxz2456789";
inline constexpr int kGenerateNameSuffixLength = 5;
inline constexpr int kMaxGeneratedNameLength = 63 - kGenerateNameSuffixLength;
std::string GenerateNameSuffix(const std::function<int(int)>& next_index);
// base (truncated to 58 bytes, as upstream's SimpleNameGenerator) + suffix.
std::string GenerateName(std::string_view base,
                         const std::function<int(int)>& next_index);

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_VALIDATION_H_
