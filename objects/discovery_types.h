// The generated types of discovery.k8s.io/v1 EndpointSlice
// (schemas/k8s/discovery.proto, as discoveryv1) and of policy/v1
// PodDisruptionBudget and Eviction (schemas/k8s/policy.proto, as policyv1).
// Apart from types.h so that only the files that handle them include them.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_OBJECTS_DISCOVERY_TYPES_H_
#define KPLANE_OBJECTS_DISCOVERY_TYPES_H_

#include "objects/types.h"
#include "schemas/k8s/discovery.pb.h"
#include "schemas/k8s/policy.pb.h"

namespace kplane::objects {

namespace discoveryv1 = ::k8s::io::api::discovery::v1;
namespace policyv1 = ::k8s::io::api::policy::v1;

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_DISCOVERY_TYPES_H_
