// A subset of kubectl's JSONPath templates (`get -o jsonpath=...`), enough
// for scripts and demos:
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
// Thread-safety: a parsed JsonPath is immutable. Errors: InvalidArgument
// for a malformed template ("unclosed action", "unexpected end").
#ifndef KPLANE_KPCTL_KUBE_JSONPATH_H_
#define KPLANE_KPCTL_KUBE_JSONPATH_H_

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::kpctl::kube {

class JsonPath {
 public:
  static StatusOr<JsonPath> Parse(std::string_view templ);
  std::string Execute(const rapidjson::Value& root) const;

  struct Step;
  struct Node;

 private:
  std::vector<std::shared_ptr<const Node>> nodes_;
};

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_JSONPATH_H_
