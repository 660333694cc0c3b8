#include "objects/label_selector.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace kplane::objects {

StatusOr<machinery::LabelSelector> LabelSelectorAsSelector(
    const metav1::LabelSelector& selector) {
  // A protobuf map has no order; sorted keys make the first error reported
  // the same on every run.
  std::vector<std::pair<std::string_view, std::string_view>> labels(
      selector.matchlabels().begin(), selector.matchlabels().end());
  std::sort(labels.begin(), labels.end());
  std::vector<machinery::LabelSelectorExpression> exprs;
  exprs.reserve(selector.matchexpressions_size());
  for (const metav1::LabelSelectorRequirement& e :
       selector.matchexpressions()) {
    exprs.push_back({.key = e.key(),
                     .op = e.operator_(),
                     .values = {e.values().begin(), e.values().end()}});
  }
  return machinery::LabelSelector::FromMatch(labels, exprs);
}

}  // namespace kplane::objects
