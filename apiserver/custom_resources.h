// CustomResourceDefinitions (apiextensions.k8s.io/v1): the CRD resource
// itself and what one CRD serves (the model is kube's
// apiextensions-apiserver: pkg/registry/customresourcedefinition,
// pkg/registry/customresource, pkg/apis/apiextensions/validation).
//
// CRDs and custom resources are objects::Unstructured (the typed metadata
// plus the rest of the JSON object as text, objects/unstructured.h), so the
// generic ResourceStore, ObjectStore, watch cache, selectors, finalizers,
// owner references and JSON/merge patches work on them unchanged.
//
//   const objects::ResourceInfo& crds = CrdResource();       // served always
//   CrdDefinition def = ParseCrd(crd_object);
//   std::unique_ptr<CustomResourceType> t = CustomResourceType::Build(def);
//   for (const auto& v : t->versions()) ... v->resource, *v->strategy ...
//
// The apiserver (api_server.cc) serves the CRD resource at start and, from a
// watch of CRDs, registers a backend per served version of each CRD
// (docs/api.md "CustomResourceDefinitions").
//
// Thread-safety: CrdResource()/CrdStrategy() are immutable singletons; a
// built CustomResourceType is immutable. Errors: validation returns field
// errors with kube's texts; ParseCrd is lenient (missing members read as
// empty) because it only reads objects that passed validation.
#ifndef KPLANE_APISERVER_CUSTOM_RESOURCES_H_
#define KPLANE_APISERVER_CUSTOM_RESOURCES_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/crd_schema.h"
#include "apiserver/registry/strategy.h"
#include "objects/scheme.h"
#include "objects/unstructured.h"

namespace kplane::apiserver {

inline constexpr char kApiExtensionsGroup[] = "apiextensions.k8s.io";
// The finalizer the apiserver puts on every CRD: its custom resources are
// deleted before the CRD goes.
inline constexpr char kCrdCleanupFinalizer[] =
    "customresourcecleanup.apiextensions.k8s.io";

// apiextensions.k8s.io/v1 customresourcedefinitions (cluster-scoped, short
// names crd and crds, category api-extensions, /status).
const objects::ResourceInfo& CrdResource();
// Its strategy: kube's defaulting (singular, listKind, conversion None),
// status.storedVersions, generation, validation of the spec (names
// <plural>.<group>, versions with exactly one storage version, a schema
// with type object at the root), the Name / Created At table.
const Strategy& CrdStrategy();
// kube decodes a CRD into apiextensions' Go types, which drops members they
// do not define (and, under fieldValidation=Strict, refuses them). This
// drops the members of `crd` (outside metadata) that apiextensions.k8s.io/v1
// does not define, per openapi/apiextensions_definitions.h, down through
// the schemas in spec.versions[].schema.openAPIV3Schema (their
// JSONSchemaProps; default, enum and example values are any JSON), and
// returns their paths for fieldValidation: "spec.scopee",
// "spec.versions[0].schema.openAPIV3Schema.propertiez".
std::vector<std::string> PruneUnknownCrdFields(objects::Unstructured* crd);

// The parts of a CRD the apiserver serves from.
// An additionalPrinterColumns entry.
struct CrdPrinterColumn {
  std::string name, type, format, description, json_path;
  int priority = 0;
};
struct CrdVersion {
  std::string name;
  bool served = false;
  bool storage = false;
  bool status_subresource = false;
  // The scale subresource (its paths; kplane evaluates simple paths:
  // ".spec.replicas", ".a.b[0].c").
  bool scale_subresource = false;
  std::string spec_replicas_path, status_replicas_path, label_selector_path;
  // Empty: kube's default, Age (.metadata.creationTimestamp).
  std::vector<CrdPrinterColumn> printer_columns;
  // schema.openAPIV3Schema as a model (apiserver/crd_schema.h); null when
  // the version has none. Custom resources are pruned, defaulted and
  // validated with it.
  std::shared_ptr<const CrdSchema> schema;
  // schema.openAPIV3Schema as compact JSON ("" when absent), for the
  // OpenAPI documents.
  std::string openapi_schema_json;
};
struct CrdDefinition {
  std::string name;  // metadata.name, "<plural>.<group>"
  std::string group;
  bool namespaced = true;  // spec.scope
  std::string plural, singular, kind, list_kind;
  std::vector<std::string> short_names, categories;
  std::vector<CrdVersion> versions;
  // What is served, for change detection: group, names, scope, versions,
  // as canonical JSON (member order is no change).
  std::string serving_key;

  const CrdVersion* StorageVersion() const;
};
CrdDefinition ParseCrd(const objects::Unstructured& crd);

// The names the CRDs of each group hold, as kube's naming controller judges
// them: among resources the plural, singular and short names; among kinds
// the kind and listKind. A CRD keeps the names its status.acceptedNames
// hold, so a newer CRD cannot take an established one's names (and its
// objects) away; the rest are first come, first served.
//
//   CrdNameClaims claims;
//   for (crd : crds) claims.Hold(crd);            // acceptedNames first
//   for (crd : crds in name order)
//     if (auto c = claims.Claim(ParseCrd(crd))) ... c->reason, c->message
//
// Not thread-safe; one per reconcile.
class CrdNameClaims {
 public:
  struct Conflict {
    std::string reason;   // "PluralConflict", ... "ListKindConflict"
    std::string message;  // "\"wd\" is already in use"
  };
  // Records the names `crd`'s status.acceptedNames hold.
  void Hold(const objects::Unstructured& crd);
  // Whether `d`'s names are free of every other CRD's; when they are, they
  // become d's. Kube reports the last conflict found, checking plural,
  // singular, short names, kind, listKind in that order.
  std::optional<Conflict> Claim(const CrdDefinition& d);

 private:
  // One name a CRD holds: its key in `held`, and the condition reason
  // when another CRD holds it.
  struct Name {
    std::map<std::string, std::string>* held;
    std::string key;  // "<group>/<name>"
    const char* conflict;
  };
  // The non-empty names, in the order kube checks them.
  std::vector<Name> NamesOf(const std::string& group, const std::string& plural,
                            const std::string& singular,
                            const std::vector<std::string>& short_names,
                            const std::string& kind,
                            const std::string& list_kind);

  // "<group>/<name>" -> CRD name.
  std::map<std::string, std::string> resources_, kinds_;
};

// Everything one CRD serves: per version a kind, a list kind, a resource
// and a strategy (the storage version always, served or not, because its
// objects are stored as it).
class CustomResourceType {
 public:
  struct Version {
    objects::KindInfo kind;
    objects::KindInfo list_kind;
    objects::KindInfo status_kind;  // == kind; for the /status entry
    const objects::KindInfo* scale_kind = nullptr;  // autoscaling/v1 Scale
    objects::ResourceInfo resource;
    std::unique_ptr<Strategy> strategy;
    bool served = false;
  };
  // Null when the definition has no storage version.
  static std::unique_ptr<CustomResourceType> Build(const CrdDefinition& def);

  const CrdDefinition& definition() const { return def_; }
  const Version& storage() const { return *versions_[storage_index_]; }
  size_t storage_index() const { return storage_index_; }
  const std::vector<std::unique_ptr<Version>>& versions() const {
    return versions_;
  }

 private:
  CustomResourceType() = default;
  CrdDefinition def_;
  std::vector<std::unique_ptr<Version>> versions_;  // the CRD's order
  size_t storage_index_ = 0;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_CUSTOM_RESOURCES_H_
