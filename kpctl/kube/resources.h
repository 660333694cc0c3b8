// Resource arguments as kubectl reads them, resolved against the API's
// type registry (objects::Scheme, the same table the API server serves):
//
//   get pods                   -> {pods: []}               every pod
//   get deploy web api         -> {deployments: [web, api]}
//   get pods,svc               -> {pods: [], services: []}
//   get deploy/web pod/web-0   -> {deployments: [web]}, {pods: [web-0]}
//   get all                    -> pods, services, deployments, replicasets
//                                 (the "all" category)
//
// Object names in output follow kubectl: "deployment.apps/web",
// "pod/web-0" (-o name, apply/delete/scale messages), and error texts name
// the group resource ("deployments.apps \"web\" not found").
//
// Thread-safety: pure functions over the immutable default Scheme.
// Errors: InvalidArgument with kubectl's texts ("the server doesn't have a
// resource type \"foo\"", "there is no need to specify a resource type as a
// separate argument when passing arguments in resource/name form").
#ifndef KPLANE_KPCTL_KUBE_RESOURCES_H_
#define KPLANE_KPCTL_KUBE_RESOURCES_H_

#include <string>
#include <string_view>
#include <vector>

#include "objects/scheme.h"
#include "base/statusor.h"

namespace kplane::kpctl::kube {

struct ResourceSelection {
  const objects::ResourceInfo* resource = nullptr;
  std::vector<std::string> names;  // empty: all (subject to selectors)
};

// The resource named by one word ("po", "deployments.apps", "Lease").
StatusOr<const objects::ResourceInfo*> ResolveResource(std::string_view word);

// Parses positional arguments in either kubectl form (above). Selections of
// the same resource are merged, order of first appearance kept.
StatusOr<std::vector<ResourceSelection>> ParseResourceArgs(
    const std::vector<std::string>& args);

// "deployment.apps" / "pod": the lower-case kind plus group.
std::string KindGroup(const objects::ResourceInfo& r);
// "deployment.apps/web".
std::string ObjectRef(const objects::ResourceInfo& r, std::string_view name);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_RESOURCES_H_
