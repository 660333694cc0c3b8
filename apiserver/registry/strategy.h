// Strategy: what is specific to each resource when the apiserver creates,
// updates, validates, selects, prints and deletes its objects (the model is
// kube-apiserver's pkg/registry/<group>/<resource>/strategy.go, the
// validation in pkg/apis/<group>/validation and the printers in
// pkg/printers/internalversion).
//
// The apiserver's handlers are generic; for each request they call the
// resource's Strategy at fixed points:
//   create:   Default, PrepareForCreate, ValidateCreate
//   update:   Default, PrepareForUpdate(old), ValidateUpdate(old)
//   /status:  PrepareForStatusUpdate(old), ValidateStatusUpdate(old)
//   /finalize (namespaces): PrepareForFinalizeUpdate(old),
//             ValidateFinalizeUpdate(old)
//   list/watch with ?fieldSelector: FieldValue, SupportedFieldLabels
//   Table output: Columns, Row
//   delete:   DefaultGracePeriodSeconds (pods: 30 s when bound to a node)
//   /scale:   ToScale, ApplyScale (deployments, replicasets)
// Generic metadata rules (name/generateName, namespace, uid,
// creationTimestamp, resourceVersion, managedFields, finalizers) are the
// handlers', not the strategy's.
//
// Validation returns field errors with Kubernetes' types and texts; the
// handler turns them into a 422 Invalid Status whose message is
// `<Kind>.<group> "<name>" is invalid: [<field>: <detail>, ...]` and whose
// details.causes list each error (InvalidMessage below).
//
// Thread-safety: strategies are immutable singletons; all methods are const
// and safe to call concurrently.
#ifndef KPLANE_APISERVER_REGISTRY_STRATEGY_H_
#define KPLANE_APISERVER_REGISTRY_STRATEGY_H_

#include <google/protobuf/message.h>

#include <optional>
#include <string>
#include <vector>

#include "objects/scheme.h"
#include "objects/serviceaccount_types.h"
#include "objects/types.h"
#include "base/clock.h"
#include "base/status.h"

namespace kplane::apiserver {

// k8s.io/apimachinery/pkg/util/validation/field.Error.
struct FieldError {
  enum class Type {
    kRequired,      // "Required value", reason FieldValueRequired
    kInvalid,       // "Invalid value: <value>: <detail>", FieldValueInvalid
    kNotSupported,  // "Unsupported value: <value>: supported values: ..."
    kDuplicate,     // "Duplicate value: <value>", FieldValueDuplicate
    kForbidden,     // "Forbidden: <detail>", FieldValueForbidden
    kTooLong,       // "Too long: ...", FieldValueTooLong
    kTooMany,       // "Too many: ...", FieldValueTooMany
    kNotFound,      // "Not found: <value>", FieldValueNotFound
  };
  Type type;
  std::string field;   // "spec.template.spec.containers[0].image"
  std::string value;   // the bad value as Kubernetes prints it ("-1", "\"A\"")
  std::string detail;  // e.g. "must be greater than or equal to 0"

  std::string Reason() const;  // "FieldValueRequired", ...
  // "Invalid value: -1: must be greater than or equal to 0": the message of
  // a metav1.StatusCause (Kubernetes' ErrorBody(): Error() without the
  // field). Required, Forbidden and TooLong never print the value.
  std::string Body() const;
  // "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
  std::string Error() const;
};
using FieldErrors = std::vector<FieldError>;

// `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must
// be greater than or equal to 0` (one error), or with several errors
// `... is invalid: [a: ..., b: ...]`, as kube-apiserver words it. Identical
// messages are printed once (Go's utilerrors.Aggregate); an empty list gives
// `... is invalid`.
std::string InvalidMessage(std::string_view qualified_kind,
                           std::string_view name, const FieldErrors& errors);

// A Table column (meta/v1 TableColumnDefinition).
struct TableColumn {
  std::string name;         // "Name", "Ready", ...
  std::string type;         // "string", "integer", "date"
  std::string format;       // "name" for the name column, else ""
  std::string description;
  int priority = 0;         // 1 = shown only with -o wide
};

// One cell: a string or an integer, as the column's type says (or any JSON
// value, for custom resources' columns).
struct TableCell {
  bool is_int = false;
  std::string str;
  int64_t num = 0;
  // A cell of another JSON type (custom resources' printer columns: null,
  // a boolean, a number) as its JSON text; when set, the others are unused.
  std::string json;
  static TableCell Str(std::string s) { return {false, std::move(s), 0, {}}; }
  static TableCell Int(int64_t n) { return {true, "", n, {}}; }
  static TableCell Json(std::string text) {
    return {false, "", 0, std::move(text)};
  }
  static TableCell Null() { return Json("null"); }
};

class Strategy {
 public:
  virtual ~Strategy() = default;

  virtual const objects::ResourceInfo& resource() const = 0;

  // Kubernetes defaulting (SetDefaults_*): e.g. Deployment strategy
  // RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds
  // 600; Pod restartPolicy Always, dnsPolicy ClusterFirst,
  // terminationGracePeriodSeconds 30, container imagePullPolicy and
  // terminationMessagePath; Secret type Opaque; Service type ClusterIP.
  virtual void Default(google::protobuf::Message* obj) const {}

  // On create: reset what clients may not set (status for kinds with a
  // status subresource; generation = 1 for kinds that track it). Pods also
  // get what kube-apiserver's default admission plugins add without other
  // objects: serviceAccountName "default", priority 0 and
  // PreemptLowerPriority, 300 s not-ready/unreachable tolerations.
  virtual void PrepareForCreate(google::protobuf::Message* obj) const {}
  // On update of the main resource: keep `old`'s status (for kinds with a
  // status subresource); generation + 1 when the spec changed.
  virtual void PrepareForUpdate(google::protobuf::Message* obj,
                                const google::protobuf::Message& old) const {}
  // On update of /status: keep `old`'s spec and take the new status. The
  // metadata rules are kube's per kind: pods keep old ownerReferences and
  // deletionTimestamp (labels and annotations may change), deployments keep
  // old labels, the others take the new metadata. Generation never changes.
  virtual void PrepareForStatusUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const {}
  // On update of namespaces/finalize: keep `old`'s status and take the
  // new spec (its finalizers, which a plain update cannot change) and
  // metadata (kube's namespaceFinalizeStrategy).
  virtual void PrepareForFinalizeUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const {}

  // Validation includes the object's metadata (name rule per kind, labels,
  // annotations, owner references, finalizers). ValidateUpdate does not
  // check metadata.resourceVersion: for unconditional updates the handler
  // sets it to the stored one first, as kube's generic store does.
  virtual FieldErrors ValidateCreate(
      const google::protobuf::Message& obj) const {
    return {};
  }
  virtual FieldErrors ValidateUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const {
    return {};
  }
  virtual FieldErrors ValidateStatusUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const {
    return {};
  }
  virtual FieldErrors ValidateFinalizeUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const {
    return {};
  }

  // Field selectors: every kind supports metadata.name and
  // metadata.namespace; pods add spec.nodeName, spec.restartPolicy,
  // spec.schedulerName, spec.serviceAccountName, status.phase,
  // status.podIP, status.nominatedNodeName; events involvedObject.*,
  // reason, source, type; ... (as kube-apiserver). nullopt = not supported.
  virtual std::optional<std::string> FieldValue(
      const google::protobuf::Message& obj, std::string_view field) const;
  virtual std::vector<std::string> SupportedFieldLabels() const;

  // Server-side printing, with kube-apiserver's columns.
  virtual std::vector<TableColumn> Columns() const;
  virtual std::vector<TableCell> Row(const google::protobuf::Message& obj,
                                     WallTime now) const;

  // Seconds of grace a DELETE without gracePeriodSeconds gets; 0 deletes at
  // once. Pods: spec.terminationGracePeriodSeconds when bound to a node.
  virtual int64_t DefaultGracePeriodSeconds(
      const google::protobuf::Message& obj) const {
    return 0;
  }

  // The /scale subresource (deployments, replicasets): the object as an
  // autoscaling/v1 Scale, and a Scale's spec.replicas applied back.
  virtual bool HasScale() const { return false; }
  virtual objects::autoscalingv1::Scale ToScale(
      const google::protobuf::Message& obj) const {
    return {};
  }
  virtual void ApplyScale(const objects::autoscalingv1::Scale& scale,
                          google::protobuf::Message* obj) const {}
};

// The strategy of a served resource (never null for resources in
// objects::Scheme::Default()).
const Strategy& StrategyFor(const objects::ResourceInfo& resource);

// --- Helpers for what the generic handlers do around the strategies. ---

// The generic object-metadata pass kube-apiserver runs after a strategy's
// ValidateCreate succeeded (rest.BeforeCreate): the name and generateName
// must be valid path segments (not "." or "..", no "/" or "%"), the
// namespace present for namespaced kinds and absent otherwise, labels,
// annotations, ownerReferences, finalizers and managedFields well formed.
// Strategies already validate all of this more strictly for every kind but
// events, so it only ever reports something new for events.
FieldErrors ValidateGenericObjectMeta(const objects::metav1::ObjectMeta& meta,
                                      bool namespaced);

// A Scale sent to /scale (autoscaling ValidateScale): metadata as for
// Deployments and spec.replicas >= 0. The 422 names kind
// `Scale.autoscaling`.
FieldErrors ValidateScale(const objects::autoscalingv1::Scale& scale);

// A Binding posted to pods/binding or /bindings (ValidatePodBinding):
// target.kind empty or "Node", target.name required. The 422 names kind
// `Binding`.
FieldErrors ValidateBinding(const objects::corev1::Binding& binding);

// A TokenRequest posted to serviceaccounts/<name>/token, after defaulting
// (kube's ValidateTokenRequest): spec.expirationSeconds within
// [kMinTokenExpirationSeconds, kMaxTokenExpirationSeconds]. The 422 names
// kind `TokenRequest.authentication.k8s.io`.
inline constexpr int64_t kMinTokenExpirationSeconds = 10 * 60;
inline constexpr int64_t kMaxTokenExpirationSeconds = int64_t{1} << 32;
FieldErrors ValidateTokenRequest(
    const objects::authenticationv1::TokenRequest& request);

// Applies a valid Binding to the pod it names, as kube-apiserver's
// BindingREST does: sets spec.nodeName, merges the binding's annotations
// and sets the PodScheduled condition to True (lastTransitionTime `now`).
// Errors are kConflict (kube answers 409 `Operation cannot be fulfilled on
// pods/binding "<name>": <text>`), the text being one of
// `Precondition failed: UID in precondition: <b>, UID in object meta: <p>`
// (binding metadata.uid set and different from the pod's),
// `pod <name> is being deleted, cannot be assigned to a host`,
// `pod <name> is already assigned to node "<node>"`,
// `pod <name> has non-empty .spec.schedulingGates`.
Status ApplyBinding(const objects::corev1::Binding& binding, objects::corev1::Pod* pod,
                    WallTime now);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_REGISTRY_STRATEGY_H_
