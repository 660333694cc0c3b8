// The namespace strategy (core/v1 Namespace; upstream:
// pkg/registry/core/namespace/strategy.go of Kubernetes 1.32).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/defaults.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "objects/meta.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using validation::Append;
using validation::InvalidString;
using validation::NameRule;
using validation::Path;

void EnsureNameLabel(Namespace* ns) {
  (*ns->mutable_metadata()->mutable_labels())["kubernetes.io/metadata.name"] =
      ns->metadata().name();
}

FieldErrors ValidateNamespace(const Namespace& ns) {
  FieldErrors errs = validation::ValidateObjectMeta(ns.metadata(), false,
                                                    NameRule::kDNS1123Label);
  for (const std::string& f : ns.spec().finalizers()) {
    Append(&errs, validation::ValidateFinalizerName(
                      f, Path("spec").Child("finalizers")));
  }
  return errs;
}

class NamespaceStrategy : public TypedStrategy<Namespace> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "status.phase"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::NamespaceColumns();
  }
  void PrepareForFinalizeUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const override {
    auto* ns = static_cast<Namespace*>(obj);
    const auto& prev = static_cast<const Namespace&>(old);
    ns->mutable_metadata()->set_generation(prev.metadata().generation());
    *ns->mutable_status() = prev.status();
    EnsureNameLabel(ns);
  }
  FieldErrors ValidateFinalizeUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    return ValidateUpdateT(static_cast<const Namespace&>(obj),
                           static_cast<const Namespace&>(old));
  }

 protected:
  void DefaultT(Namespace* ns) const override {
    defaults::DefaultNamespace(ns);
  }
  void CreateT(Namespace* ns) const override {
    ns->mutable_status()->Clear();
    ns->mutable_status()->set_phase("Active");
    auto* fin = ns->mutable_spec()->mutable_finalizers();
    if (std::find(fin->begin(), fin->end(), "kubernetes") == fin->end()) {
      fin->Add("kubernetes");
    }
    // Canonicalize: names from generateName get their label here.
    EnsureNameLabel(ns);
  }
  void UpdateT(Namespace* ns, const Namespace& old) const override {
    *ns->mutable_spec()->mutable_finalizers() = old.spec().finalizers();
    *ns->mutable_status() = old.status();
    EnsureNameLabel(ns);
  }
  void StatusUpdateT(Namespace* ns, const Namespace& old) const override {
    *ns->mutable_spec() = old.spec();
  }
  FieldErrors ValidateCreateT(const Namespace& ns) const override {
    return ValidateNamespace(ns);
  }
  FieldErrors ValidateUpdateT(const Namespace& ns,
                              const Namespace& old) const override {
    FieldErrors errs = ValidateNamespace(ns);
    Append(&errs,
           validation::ValidateObjectMetaUpdate(ns.metadata(), old.metadata()));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const Namespace& ns,
                                    const Namespace& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(ns.metadata(), old.metadata());
    Path pp = Path("status").Child("Phase");
    if (!objects::IsBeingDeleted(ns.metadata())) {
      if (ns.status().phase() != "Active") {
        errs.push_back(InvalidString(pp, ns.status().phase(),
                                     "may only be 'Active' if "
                                     "`deletionTimestamp` is empty"));
      }
    } else if (ns.status().phase() != "Terminating") {
      errs.push_back(InvalidString(pp, ns.status().phase(),
                                   "may only be 'Terminating' if "
                                   "`deletionTimestamp` is not empty"));
    }
    return errs;
  }
  std::optional<std::string> FieldValueT(const Namespace& ns,
                                         std::string_view f) const override {
    if (f == "status.phase") return ns.status().phase();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Namespace& ns,
                              WallTime now) const override {
    return printers::NamespaceRow(ns, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewNamespaceStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<NamespaceStrategy>(r);
}

}  // namespace kplane::apiserver
