// A subset of client-go's JSONPath templates (k8s.io/client-go/util/jsonpath),
// shared by kpctl's `get -o jsonpath=...` and the API server's custom
// resource printer columns (additionalPrinterColumns):
//
//   {.metadata.name}                         a field
//   {.items[*].metadata.name}                every element (printed
//                                            space-separated)
//   {.items[0].status.phase}  {.items[-1]}   one element
//   {.metadata.annotations['a.b/c']}         a key with dots
//   {.status.conditions[?(@.type=="Ready")].status}   a filter (== or !=
//                                            against a quoted string, a
//                                            number, true/false)
//   {range .items[*]}{.metadata.name}{"\n"}{end}       iteration
//   text outside braces, and {"\t"} literals, are printed as is
//
// Values print as kubectl prints them: strings raw, numbers and booleans as
// JSON, objects and arrays as compact JSON. A missing field prints nothing
// (kubectl's default --allow-missing-template-keys).
//
//   ASSIGN_OR_RETURN(JsonPath p, JsonPath::Parse("{.status.phase}"));
//   std::string text = p.Execute(pod);                 // "Running"
//   std::vector<const rapidjson::Value*> v = p.FindResults(pod);
//
// Thread-safety: a parsed JsonPath is immutable. Errors: InvalidArgument
// for a malformed template ("unclosed action", "unexpected end").
#ifndef KPLANE_OBJECTS_MACHINERY_JSONPATH_H_
#define KPLANE_OBJECTS_MACHINERY_JSONPATH_H_

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::machinery {

class JsonPath {
 public:
  static StatusOr<JsonPath> Parse(std::string_view templ);
  std::string Execute(const rapidjson::Value& root) const;
  // What the template's first element selects in `root`, in order (client-go's
  // FindResults(root)[0]): for "{.items[*].name}" every name; empty when
  // nothing matches or the first element is not a path ("{range}", text).
  // The pointers are into `root`.
  std::vector<const rapidjson::Value*> FindResults(
      const rapidjson::Value& root) const;
  // One value as Execute prints it: a string raw, other values as compact
  // JSON.
  static std::string PrintValue(const rapidjson::Value& v);

  struct Step;
  struct Node;

 private:
  std::vector<std::shared_ptr<const Node>> nodes_;
};

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_JSONPATH_H_
