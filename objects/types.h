// Short namespace aliases for the generated Kubernetes API types
// (schemas/k8s/*.proto), so code can say corev1::Pod instead of
// k8s::io::api::core::v1::Pod.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_OBJECTS_TYPES_H_
#define KPLANE_OBJECTS_TYPES_H_

#include "schemas/k8s/apps.pb.h"
#include "schemas/k8s/autoscaling.pb.h"
#include "schemas/k8s/coordination.pb.h"
#include "schemas/k8s/core.pb.h"
#include "schemas/k8s/intstr.pb.h"
#include "schemas/k8s/meta.pb.h"
#include "schemas/k8s/resource.pb.h"
#include "schemas/k8s/runtime.pb.h"

namespace kplane::objects {

namespace corev1 = ::k8s::io::api::core::v1;
namespace appsv1 = ::k8s::io::api::apps::v1;
namespace coordinationv1 = ::k8s::io::api::coordination::v1;
namespace autoscalingv1 = ::k8s::io::api::autoscaling::v1;
namespace metav1 = ::k8s::io::apimachinery::pkg::apis::meta::v1;
namespace runtimepb = ::k8s::io::apimachinery::pkg::runtime;
namespace intstr = ::k8s::io::apimachinery::pkg::util::intstr;
namespace resourcepb = ::k8s::io::apimachinery::pkg::api::resource;

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_TYPES_H_
