// metav1.LabelSelectorAsSelector for the protobuf meta/v1 LabelSelector
// (Deployment and ReplicaSet spec.selector, ...): the selector's parts go
// through machinery::LabelSelector::FromMatch, the one conversion that the
// JSON form (machinery::LabelSelector::FromLabelSelectorJson) shares.
//
//   StatusOr<machinery::LabelSelector> s =
//       LabelSelectorAsSelector(deployment.spec().selector());
//   if (s.ok() && s->Matches(labels)) ...
//
// Thread-safety: a pure function. Errors: InvalidArgument for an unknown
// operator or a key or value labels.NewRequirement rejects (checked in key
// order for matchLabels, then matchExpressions in order). A selector with no
// parts matches everything; callers that model a missing selector as
// "matches nothing" use machinery::LabelSelector::Nothing() themselves.
#ifndef KPLANE_OBJECTS_LABEL_SELECTOR_H_
#define KPLANE_OBJECTS_LABEL_SELECTOR_H_

#include "base/statusor.h"
#include "objects/machinery/labels.h"
#include "objects/types.h"

namespace kplane::objects {

StatusOr<machinery::LabelSelector> LabelSelectorAsSelector(
    const metav1::LabelSelector& selector);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_LABEL_SELECTOR_H_
