// The generated types of core/v1 Endpoints
// (schemas/k8s/core_endpoints.proto, in corev1 as the other core types).
// Apart from types.h so that only the files that handle them include them.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_OBJECTS_ENDPOINTS_TYPES_H_
#define KPLANE_OBJECTS_ENDPOINTS_TYPES_H_

#include "objects/types.h"
#include "schemas/k8s/core_endpoints.pb.h"

#endif  // KPLANE_OBJECTS_ENDPOINTS_TYPES_H_
