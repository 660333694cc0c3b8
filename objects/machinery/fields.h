// Field selectors (k8s.io/apimachinery/pkg/fields): `fieldSelector=` terms
// `a=b`, `a==b`, `a!=b` joined by commas (AND). In values, `\`, `,` and `=`
// are escaped with a backslash:
//   Parse("metadata.name=a\\,b,status.phase!=Failed")
//     -> {metadata.name == "a,b"} AND {status.phase != "Failed"}
// Terms are sorted by their text before parsing, so String() is canonical:
//   Parse("b=1,a=2").String() == "a=2,b=1"
//
// Which fields exist is the caller's business: Validate() checks the field
// names against a list and reports Kubernetes' `field label not supported:
// <name>`. Matching reads values through a caller-supplied getter.
//
// A FieldSelector is an immutable value; safe to share between threads.
// Errors: InvalidArgument with Kubernetes' messages.
#ifndef KPLANE_OBJECTS_MACHINERY_FIELDS_H_
#define KPLANE_OBJECTS_MACHINERY_FIELDS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::machinery {

struct FieldRequirement {
  std::string field;
  bool not_equals = false;  // "!=" (otherwise "=" or "==")
  std::string value;
  friend bool operator==(const FieldRequirement&,
                         const FieldRequirement&) = default;
};

// Returns the value of a field of the object being matched ("" if unset,
// as Kubernetes' field sets do).
using FieldGetter = std::function<std::string(std::string_view field)>;

class FieldSelector {
 public:
  FieldSelector() = default;  // Everything()
  static FieldSelector Everything() { return FieldSelector(); }
  static StatusOr<FieldSelector> Parse(std::string_view selector);
  static FieldSelector OneTermEqual(std::string field, std::string value);

  bool Matches(const FieldGetter& get) const;
  bool Empty() const { return requirements_.empty(); }
  // "a=b,c!=d" with values escaped.
  std::string String() const;
  const std::vector<FieldRequirement>& requirements() const {
    return requirements_;
  }
  // The value an "=" term pins for `field` (e.g. metadata.name for a watch
  // of one object).
  std::optional<std::string> RequiresExactMatch(std::string_view field) const;
  // InvalidArgument("field label not supported: <f>") for the first field
  // not in `supported`.
  Status Validate(const std::vector<std::string>& supported) const;

 private:
  std::vector<FieldRequirement> requirements_;
};

// `\` -> `\\`, `,` -> `\,`, `=` -> `\=`.
std::string EscapeFieldValue(std::string_view value);
// Inverse of EscapeFieldValue; InvalidArgument on a bad escape or an
// unescaped ',' or '='.
StatusOr<std::string> UnescapeFieldValue(std::string_view value);

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_FIELDS_H_
