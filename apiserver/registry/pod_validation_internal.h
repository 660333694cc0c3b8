// Internal to the pod validation files (pod_validation.cc and the
// pod_validation_<topic>.cc files it is split into, by topic as upstream's
// pkg/apis/core/validation): the pieces one topic uses from another, and
// the names they all use. Callers outside apiserver/registry use
// pod_validation.h.
//
// Thread-safety: pure functions. Errors: field errors, as pod_validation.h.
#ifndef KPLANE_APISERVER_REGISTRY_POD_VALIDATION_INTERNAL_H_
#define KPLANE_APISERVER_REGISTRY_POD_VALIDATION_INTERNAL_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/registry/strategy.h"
#include "apiserver/registry/validation_util.h"
#include "objects/machinery/quantity.h"
#include "objects/types.h"

namespace kplane::apiserver::podvalidation::internal {

using namespace objects::corev1;  // NOLINT: the files are about these types
using machinery::Quantity;
using validation::Append;
using validation::Duplicate;
using validation::Forbidden;
using validation::GoInt;
using validation::Invalid;
using validation::InvalidInt;
using validation::InvalidString;
using validation::NotFound;
using validation::NotSupportedString;
using validation::Path;
using validation::Required;
using validation::SortedKeys;

constexpr int64_t kMaxInt32 = 2147483647;

inline std::vector<std::string> NameIsDNSSubdomain(std::string_view name) {
  return validation::ValidateName(validation::NameRule::kDNS1123Subdomain, name,
                                  false);
}

// pod_validation_volumes.cc: volumes, paths, downward-API fields.
FieldErrors ValidatePathNoBacksteps(std::string_view target, const Path& p);
FieldErrors ValidateLocalDescendingPath(std::string_view target, const Path& p);
const std::set<std::string>& EnvFieldPaths();
FieldErrors ValidateObjectFieldSelector(const ObjectFieldSelector& fs,
                                        const std::set<std::string>& allowed,
                                        const Path& p);
FieldErrors ValidateResourceFieldSelector(const ResourceFieldSelector& fs,
                                          const Path& p, bool volume);
std::map<std::string, const VolumeSource*> ValidateVolumes(
    const google::protobuf::RepeatedPtrField<Volume>& volumes, const Path& p,
    FieldErrors* errs);

// pod_validation_resources.cc: resource requirements.
FieldErrors ValidateResourceRequirements(const ResourceRequirements& r,
                                         const Path& p);

// pod_validation_security.cc: security contexts.
FieldErrors ValidateContainerSecurityContext(const Container& c, const Path& p);
FieldErrors ValidatePodSecurityContext(const PodSpec& spec, const Path& p);

// pod_validation_scheduling.cc: tolerations, affinity, topology spread.
FieldErrors ValidateTolerations(
    const google::protobuf::RepeatedPtrField<Toleration>& tolerations,
    const Path& p);
FieldErrors ValidateAffinity(const PodSpec& spec, const Path& p);
FieldErrors ValidateTopologySpread(const PodSpec& spec, const Path& p);

// pod_validation_containers.cc: containers and init containers.
FieldErrors ValidateContainers(
    const PodSpec& spec,
    const std::map<std::string, const VolumeSource*>& volumes, const Path& p);
FieldErrors ValidateInitContainers(
    const PodSpec& spec,
    const std::map<std::string, const VolumeSource*>& volumes, const Path& p);

}  // namespace kplane::apiserver::podvalidation::internal

#endif  // KPLANE_APISERVER_REGISTRY_POD_VALIDATION_INTERNAL_H_
