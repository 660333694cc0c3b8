// The generated types of apps/v1 StatefulSet and DaemonSet
// (schemas/k8s/apps_workloads.proto, in appsv1 as Deployment and
// ReplicaSet). Apart from types.h so that only the files that handle them
// include them.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_OBJECTS_APPS_WORKLOADS_TYPES_H_
#define KPLANE_OBJECTS_APPS_WORKLOADS_TYPES_H_

#include "objects/types.h"
#include "schemas/k8s/apps_workloads.pb.h"

#endif  // KPLANE_OBJECTS_APPS_WORKLOADS_TYPES_H_
