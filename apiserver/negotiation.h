// Content negotiation: which representation a response takes, from the
// request's Accept header, and what a request body is, from its
// Content-Type (the model is k8s.io/apiserver/pkg/endpoints/handlers/
// negotiation).
//
// Accept is a list of media ranges with parameters and q-values; the first
// (by q, then concrete before wildcard, then by order) that we can produce
// wins:
//   application/json                                   JSON
//   application/json;as=Table;v=v1;g=meta.k8s.io       a meta/v1 Table
//   application/json;as=PartialObjectMetadata[List];v=v1;g=meta.k8s.io
//   application/vnd.kubernetes.protobuf;as=PartialObjectMetadata[List];…
//                                                      metadata only
//   application/yaml                                   YAML (not for watch)
//   application/vnd.kubernetes.protobuf                the protobuf envelope
//   */*, application/*, absent                         JSON
// Anything else makes the request fail with 406 NotAcceptable. Table and
// metadata forms exist in v1 and v1beta1 (same shape, different apiVersion).
//
// Thread-safety: pure functions. Errors: NotAcceptable as nullopt (the
// caller answers 406); unknown body types as nullopt (415).
#ifndef KPLANE_APISERVER_NEGOTIATION_H_
#define KPLANE_APISERVER_NEGOTIATION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "objects/scheme.h"
#include "objects/serializer.h"

namespace kplane::apiserver {

// One media range of an Accept header.
struct MediaRange {
  std::string type;     // "application", "*"
  std::string subtype;  // "json", "*"
  // Lower-cased names; values as sent ("as" -> "Table").
  std::vector<std::pair<std::string, std::string>> params;
  double q = 1.0;
  std::string_view Param(std::string_view name) const;
};
// Parses "a/b;x=y;q=0.5, c/d" into ranges sorted by q, then concrete types
// before wildcards (type, then subtype), then as written.
std::vector<MediaRange> ParseAccept(std::string_view accept);

enum class ResponseShape {
  kObject,   // the resource's own kind (or its list kind)
  kTable,    // meta.k8s.io Table
  kMetadata  // PartialObjectMetadata / PartialObjectMetadataList
};

struct Negotiated {
  objects::MediaType media = objects::MediaType::kJson;
  ResponseShape shape = ResponseShape::kObject;
  std::string meta_version = "v1";  // of Table / PartialObjectMetadata
  // kMetadata only: the client asked for PartialObjectMetadataList (else
  // PartialObjectMetadata). Which one fits depends on the verb, which
  // negotiation does not know; the caller answers 406 when it does not fit
  // (MetadataFormMismatch), as Kubernetes does.
  bool metadata_list = false;
  // The response Content-Type ("application/json", ...).
  std::string ContentType() const;
};

struct NegotiateOptions {
  bool allow_table = true;
  bool allow_metadata = true;
  bool allow_yaml = true;
  bool allow_protobuf = true;
};

// nullopt: nothing acceptable (406).
std::optional<Negotiated> NegotiateResponse(std::string_view accept,
                                            const NegotiateOptions& opts);

// For a metadata-shaped answer (`n.shape == kMetadata`): empty when the
// form asked for fits, else Kubernetes' 406 message. A list (`list`: LIST
// and DELETECOLLECTION) needs PartialObjectMetadataList; one object (GET,
// the writes, and each WATCH event) needs PartialObjectMetadata.
// `go_type` names the answer as kube's message does (GoTypeName).
std::string MetadataFormMismatch(const Negotiated& n, bool list,
                                 std::string_view go_type);
// The Go type kube-apiserver's messages name for an object (or list) of
// `resource`: its internal type, "*core.Pod", "*apps.DeploymentList",
// "*core.Event" (also for events.k8s.io), or "*unstructured.Unstructured"
// for a custom resource.
std::string GoTypeName(const objects::ResourceInfo& resource, bool custom,
                       bool list);

// Media types we can produce, for the 406 message; for a custom resource
// (`protobuf` false) without protobuf, which kube serves CRs in JSON and
// YAML only.
std::vector<std::string> SupportedResponseTypes(bool protobuf = true);
// Media types we accept in bodies (415 message); likewise.
std::vector<std::string> SupportedBodyTypes(bool protobuf = true);

// True only when the Accept header asks for aggregated discovery v2
// exactly (application/json;g=apidiscovery.k8s.io;v=v2;
// as=APIGroupDiscoveryList) before anything else it would accept.
bool WantsAggregatedDiscovery(std::string_view accept);
inline constexpr std::string_view kAggregatedDiscoveryContentType =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

enum class PatchType { kJsonPatch, kMergePatch, kStrategicMergePatch, kApply };
// From a PATCH request's Content-Type; nullopt -> 415.
std::optional<PatchType> ParsePatchType(std::string_view content_type);
std::vector<std::string> SupportedPatchTypes();

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_NEGOTIATION_H_
