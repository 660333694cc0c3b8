// Short namespace aliases for the generated Kubernetes API types
// (schemas/api/*.proto), so code can say corev1::Pod instead of
// k8s::io::api::core::v1::Pod.
//
// Thread-safety and errors: n/a (declarations only).
#ifndef KPLANE_API_TYPES_H_
#define KPLANE_API_TYPES_H_

#include "schemas/api/apps.pb.h"
#include "schemas/api/autoscaling.pb.h"
#include "schemas/api/coordination.pb.h"
#include "schemas/api/core.pb.h"
#include "schemas/api/intstr.pb.h"
#include "schemas/api/meta.pb.h"
#include "schemas/api/resource.pb.h"
#include "schemas/api/runtime.pb.h"

namespace kplane::api {

namespace corev1 = ::k8s::io::api::core::v1;
namespace appsv1 = ::k8s::io::api::apps::v1;
namespace coordinationv1 = ::k8s::io::api::coordination::v1;
namespace autoscalingv1 = ::k8s::io::api::autoscaling::v1;
namespace metav1 = ::k8s::io::apimachinery::pkg::apis::meta::v1;
namespace runtimepb = ::k8s::io::apimachinery::pkg::runtime;
namespace intstr = ::k8s::io::apimachinery::pkg::util::intstr;
namespace resourcepb = ::k8s::io::apimachinery::pkg::api::resource;

}  // namespace kplane::api

#endif  // KPLANE_API_TYPES_H_
