// Label selectors (k8s.io/apimachinery/pkg/labels): the `-l` / labelSelector
// syntax, matching, canonical String(), and conversion from meta/v1
// LabelSelector JSON (matchLabels + matchExpressions).
//
// Grammar (comma = AND, whitespace ignored around tokens):
//   k=v  k==v  k!=v  k in (a,b)  k notin (a,b)  k  !k  k>5  k<5
// Requirements are sorted by key; values of in/notin are a sorted set, so
//   Parse("x in (b,a), app=web").String() == "app=web,x in (a,b)"
// Errors carry Kubernetes' text, e.g.
//   unable to parse requirement: <nil>: Invalid value: "a b": name part ...
//   found ',', expected: identifier after ','
//
// A LabelSelector is an immutable value; safe to share between threads.
#ifndef KPLANE_OBJECTS_MACHINERY_LABELS_H_
#define KPLANE_OBJECTS_MACHINERY_LABELS_H_

#include <rapidjson/document.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/statusor.h"

namespace kplane::machinery {

using Labels = std::map<std::string, std::string, std::less<>>;

// "a=1,b=2" (sorted), as labels.Set.String() prints a label map.
std::string LabelsString(const Labels& labels);

enum class LabelOperator {
  kIn,
  kNotIn,
  kEquals,
  kDoubleEquals,
  kNotEquals,
  kExists,
  kDoesNotExist,
  kGreaterThan,
  kLessThan,
};

struct LabelRequirement {
  std::string key;
  LabelOperator op;
  std::vector<std::string> values;

  bool Matches(const Labels& labels) const;
  // "k in (a,b)", "!k", "k!=v", ...
  std::string String() const;
  friend bool operator==(const LabelRequirement&,
                         const LabelRequirement&) = default;
};

// Validates like labels.NewRequirement; InvalidArgument with Kubernetes'
// field-error text on failure.
StatusOr<LabelRequirement> NewLabelRequirement(std::string key,
                                               LabelOperator op,
                                               std::vector<std::string> values);

// One matchExpressions entry of a meta/v1 LabelSelector, as written
// (`op` is "In", "NotIn", "Exists" or "DoesNotExist" when valid).
struct LabelSelectorExpression {
  std::string_view key;
  std::string_view op;
  std::vector<std::string> values;
};

class LabelSelector {
 public:
  // Matches everything (the empty selector).
  LabelSelector() = default;
  static LabelSelector Everything() { return LabelSelector(); }
  // Matches nothing (a nil meta/v1 LabelSelector).
  static LabelSelector Nothing();
  // k1=v1,k2=v2 requirements for a label map (SelectorFromSet).
  static LabelSelector FromSet(const Labels& labels);
  // Parses the string syntax (labels.Parse).
  static StatusOr<LabelSelector> Parse(std::string_view selector);
  // metav1.LabelSelectorAsSelector on the parts of a meta/v1 LabelSelector
  // (the one conversion; the JSON form below and the protobuf form in
  // objects/label_selector.h feed it): matchLabels become k=v requirements
  // and matchExpressions In/NotIn/Exists/DoesNotExist ones, checked in the
  // order given. No parts give Everything(). InvalidArgument for an unknown
  // operator (`"Foo" is not a valid label selector operator`) or a key or
  // value NewLabelRequirement rejects.
  static StatusOr<LabelSelector> FromMatch(
      const std::vector<std::pair<std::string_view, std::string_view>>&
          match_labels,
      const std::vector<LabelSelectorExpression>& match_expressions);
  // meta/v1 LabelSelector JSON ({"matchLabels":{...},"matchExpressions":
  // [{"key":..,"operator":"In|NotIn|Exists|DoesNotExist","values":[..]}]})
  // -> selector (FromMatch). A JSON null gives Nothing(), an empty object
  // Everything().
  static StatusOr<LabelSelector> FromLabelSelectorJson(
      const rapidjson::Value& json);

  bool Matches(const Labels& labels) const;
  // True for Everything() (no requirements); false for Nothing().
  bool Empty() const { return !nothing_ && requirements_.empty(); }
  bool MatchesNothing() const { return nothing_; }
  std::string String() const;
  const std::vector<LabelRequirement>& requirements() const {
    return requirements_;
  }
  // The value a matching object must have for `key`, if the selector pins
  // one (k=v, k==v, or k in (v)).
  std::optional<std::string> RequiresExactMatch(std::string_view key) const;
  // Adds requirements, keeping them sorted by key.
  LabelSelector Add(std::vector<LabelRequirement> reqs) const;

 private:
  std::vector<LabelRequirement> requirements_;
  bool nothing_ = false;
};

// metav1.FormatLabelSelector: String() of the converted selector, "<none>"
// when empty, "<error>" when it does not convert.
std::string FormatLabelSelector(const rapidjson::Value& json);

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_LABELS_H_
