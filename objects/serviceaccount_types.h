// The generated types of ServiceAccounts and their tokens: core/v1
// ServiceAccount (schemas/k8s/core_serviceaccount.proto, in corev1 as the
// other core types) and authentication.k8s.io/v1 TokenRequest
// (schemas/k8s/authentication.proto, as authenticationv1). Apart from
// types.h so that only the files that handle them include them.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_OBJECTS_SERVICEACCOUNT_TYPES_H_
#define KPLANE_OBJECTS_SERVICEACCOUNT_TYPES_H_

#include "objects/types.h"
#include "schemas/k8s/authentication.pb.h"
#include "schemas/k8s/core_serviceaccount.pb.h"

namespace kplane::objects {

namespace authenticationv1 = ::k8s::io::api::authentication::v1;

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_SERVICEACCOUNT_TYPES_H_
