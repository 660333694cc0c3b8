// The rollout history of StatefulSets and DaemonSets: apps/v1
// ControllerRevisions, as Kubernetes' pkg/controller/history and the
// history parts of pkg/controller/daemon (update.go) and
// pkg/controller/statefulset (stateful_set_control.go) keep it.
//
// A revision snapshots the owner's pod template as kube's getPatch does:
// data is {"spec":{"template":{"$patch":"replace",...}}} with object keys
// sorted (Go's json.Marshal of a map), so that `kubectl rollout undo`
// can send it back as a strategic merge patch. It is named
// "<owner>-<hash>", labelled with the template's labels plus
// controller-revision-hash=<hash>, and controlled by its owner (an
// ownerReference with controller=true).
//
//   std::string data = TemplatePatch(set.spec().template_());
//   std::string hash = HashRevisionData(data, set.status().collisioncount());
//
// Thread-safety: pure functions over the caller's writer and cache.
// Errors: as the ApiWriter; 404s on deletes are not errors.
#ifndef KPLANE_CONTROLLERS_CONTROLLER_HISTORY_H_
#define KPLANE_CONTROLLERS_CONTROLLER_HISTORY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/api_writer.h"
#include "informer/indexer.h"
#include "objects/apps_workloads_types.h"
#include "objects/machinery/labels.h"

namespace kplane::controllers {

using RevisionPtr = std::shared_ptr<const appsv1::ControllerRevision>;

const objects::ResourceInfo& ControllerRevisionsResource();

// kube's getPatch of a StatefulSet or DaemonSet with this template.
std::string TemplatePatch(const corev1::PodTemplateSpec& tmpl);

// The pod template a revision's data replaces the owner's with.
// InvalidArgument when data is not such a patch.
StatusOr<corev1::PodTemplateSpec> RevisionTemplate(
    const appsv1::ControllerRevision& revision);

// kube's HashControllerRevision: FNV-1 (32 bit) of the data and of the
// decimal collision count (kube's StatefulSet controller always passes
// one), rendered with rand.SafeEncodeString.
std::string HashRevisionData(std::string_view data, int32_t collision_count);

// Whether two revisions hold the same data (as JSON values: spacing and
// key order aside).
bool SameRevisionData(std::string_view a, std::string_view b);

// The revisions of `owner` (an apps/v1 `kind`) in its namespace, sorted by
// revision (then creation, then name): those it controls that match
// `selector`. Controlled ones that no longer match are released; orphans
// that match are adopted unless the owner is being deleted. Write errors go
// to `first_error`.
StatusOr<std::vector<RevisionPtr>> ClaimRevisions(
    ApiWriter* api, const informer::Indexer& revisions,
    const metav1::ObjectMeta& owner, std::string_view kind,
    const machinery::LabelSelector& selector, Status* first_error);

// A new revision of `owner` (not yet created): labels `template_labels`
// plus controller-revision-hash=`hash`, name "<owner>-<hash>" (the owner's
// name cut to 223 bytes), annotations the owner's.
appsv1::ControllerRevision NewRevision(const metav1::ObjectMeta& owner,
                                       std::string_view kind,
                                       const corev1::PodTemplateSpec& tmpl,
                                       const std::string& data,
                                       const std::string& hash,
                                       int64_t revision);

// Sets `revision`'s number to `number` (a no-op when it has it). A 409 (a
// cache behind) is retried once on the live object.
StatusOr<RevisionPtr> SetRevisionNumber(ApiWriter* api,
                                        const appsv1::ControllerRevision& rev,
                                        int64_t number);

// The highest revision number of `revisions` (0 when empty).
int64_t MaxRevision(const std::vector<RevisionPtr>& revisions);

// The value of the controller-revision-hash label ("" when absent).
std::string RevisionHashLabel(const metav1::ObjectMeta& meta);

// After the owner `key` ("ns/name") left the cache and a live GET confirmed
// it gone: deletes the revisions the cache shows it still controls, each
// with its cached uid and resourceVersion as preconditions, so that one
// changed since (orphaned by the garbage collector) is left alone.
Status DeleteRevisionsOfGoneOwner(ApiWriter* api,
                                  const informer::Indexer& revisions,
                                  const objects::ResourceInfo& owner_resource,
                                  std::string_view kind,
                                  const std::string& key);

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_CONTROLLER_HISTORY_H_
