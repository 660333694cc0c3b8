// The controllerrevision strategy (apps/v1 ControllerRevision; upstream:
// pkg/registry/apps/controllerrevision/strategy.go and
// ValidateControllerRevision{,Update} in pkg/apis/apps/validation of
// Kubernetes 1.32).
//
// A name is a DNS-1123 subdomain, data is required, revision is
// non-negative; on update data is immutable (revision and metadata may
// change: the DaemonSet and StatefulSet controllers bump the revision of an
// old snapshot on a rollback). There is no status.
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/json.h"
#include "objects/apps_workloads_types.h"

namespace kplane::apiserver {

namespace {

using objects::appsv1::ControllerRevision;

FieldErrors ValidateControllerRevision(const ControllerRevision& cr) {
  FieldErrors errs = validation::ValidateObjectMeta(
      cr.metadata(), true, validation::NameRule::kDNS1123Subdomain);
  if (!cr.has_data() || cr.data().raw().empty()) {
    errs.push_back(
        validation::Required(validation::Path("data"), "data is mandatory"));
  }
  validation::Append(&errs, validation::ValidateNonnegative(
                                cr.revision(), validation::Path("revision")));
  return errs;
}

// Kube compares the decoded objects; raw JSON that differs only in spacing
// or key order is the same data.
bool SameData(const std::string& a, const std::string& b) {
  if (a == b) return true;
  rapidjson::Document da, db;
  if (!json::ParseDom(a, &da).ok() || !json::ParseDom(b, &db).ok()) {
    return false;
  }
  return da == db;  // RapidJSON: members compared by name, not by order
}

class ControllerRevisionStrategy : public TypedStrategy<ControllerRevision> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::ControllerRevisionColumns();
  }

 protected:
  FieldErrors ValidateCreateT(const ControllerRevision& cr) const override {
    return ValidateControllerRevision(cr);
  }
  FieldErrors ValidateUpdateT(const ControllerRevision& cr,
                              const ControllerRevision& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(cr.metadata(), old.metadata());
    validation::Append(&errs, ValidateControllerRevision(cr));
    // kube prints the Go value of the decoded object; the raw JSON here.
    validation::Append(&errs, validation::ValidateImmutable(
                                  SameData(cr.data().raw(), old.data().raw()),
                                  cr.data().raw(), validation::Path("data")));
    return errs;
  }
  std::vector<TableCell> RowT(const ControllerRevision& cr,
                              WallTime now) const override {
    return printers::ControllerRevisionRow(cr, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewControllerRevisionStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<ControllerRevisionStrategy>(r);
}

}  // namespace kplane::apiserver
