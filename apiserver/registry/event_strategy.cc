// The event strategy (core/v1 Event; upstream:
// pkg/registry/core/event/strategy.go of Kubernetes 1.32).
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "objects/machinery/validation.h"
#include "objects/time.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using validation::Append;
using validation::InvalidString;
using validation::Path;
using validation::Required;

// legacyValidateEvent for requests to the core/v1 API.
FieldErrors ValidateEventV1(const Event& ev) {
  FieldErrors errs;
  const std::string& ns = ev.metadata().namespace_();
  const auto& io = ev.involvedobject();
  Path ionp = Path("involvedObject").Child("namespace");
  if (objects::IsZero(ev.eventtime())) {
    if (io.namespace_().empty()) {
      if (!ns.empty() && ns != "default") {
        errs.push_back(InvalidString(ionp, io.namespace_(),
                                     "does not match event.namespace"));
      }
    } else if (ns != io.namespace_()) {
      errs.push_back(InvalidString(ionp, io.namespace_(),
                                   "does not match event.namespace"));
    }
  } else {
    if (io.namespace_().empty() && ns != "default" && ns != "kube-system") {
      errs.push_back(InvalidString(ionp, io.namespace_(),
                                   "does not match event.namespace"));
    }
    Path rc("reportingComponent");
    if (ev.reportingcomponent().empty()) errs.push_back(Required(rc));
    Append(&errs,
           validation::ValidateQualifiedName(ev.reportingcomponent(), rc));
    if (ev.reportinginstance().empty()) {
      errs.push_back(Required(Path("reportingInstance")));
    }
    if (ev.reportinginstance().size() > 128) {
      errs.push_back(InvalidString(Path("reportingInstance"), "",
                                   "can have at most 128 characters"));
    }
    if (ev.action().empty()) errs.push_back(Required(Path("action")));
    if (ev.action().size() > 128) {
      errs.push_back(
          InvalidString(Path("action"), "", "can have at most 128 characters"));
    }
    if (ev.reason().empty()) errs.push_back(Required(Path("reason")));
    if (ev.reason().size() > 128) {
      errs.push_back(
          InvalidString(Path("reason"), "", "can have at most 128 characters"));
    }
    if (ev.message().size() > 1024) {
      errs.push_back(InvalidString(Path("message"), "",
                                   "can have at most 1024 characters"));
    }
  }
  for (auto& m : machinery::IsDNS1123Subdomain(ns)) {
    errs.push_back(InvalidString(Path("namespace"), ns, m));
  }
  return errs;
}

class EventStrategy : public TypedStrategy<Event> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::EventColumns();
  }

 protected:
  // Core/v1 events get only the legacy checks; the generic metadata pass
  // (path-segment names, labels, ...) follows when they pass, as in
  // rest.BeforeCreate.
  FieldErrors ValidateCreateT(const Event& ev) const override {
    FieldErrors errs = ValidateEventV1(ev);
    if (!errs.empty()) return errs;
    return ValidateGenericObjectMeta(ev.metadata(), true);
  }
  FieldErrors ValidateUpdateT(const Event& ev,
                              const Event& old) const override {
    FieldErrors errs = ValidateEventV1(ev);
    if (!errs.empty()) return errs;
    errs = validation::ValidateObjectMetaUpdate(ev.metadata(), old.metadata());
    Append(&errs, ValidateGenericObjectMeta(ev.metadata(), true));
    return errs;
  }
  std::optional<std::string> FieldValueT(const Event& ev,
                                         std::string_view f) const override {
    const auto& io = ev.involvedobject();
    if (f == "involvedObject.kind") return io.kind();
    if (f == "involvedObject.namespace") return io.namespace_();
    if (f == "involvedObject.name") return io.name();
    if (f == "involvedObject.uid") return io.uid();
    if (f == "involvedObject.apiVersion") return io.apiversion();
    if (f == "involvedObject.resourceVersion") return io.resourceversion();
    if (f == "involvedObject.fieldPath") return io.fieldpath();
    if (f == "reason") return ev.reason();
    if (f == "reportingComponent") return ev.reportingcomponent();
    if (f == "source") {
      return ev.source().component().empty() ? ev.reportingcomponent()
                                             : ev.source().component();
    }
    if (f == "type") return ev.type();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Event& ev, WallTime now) const override {
    return printers::EventRow(ev, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewEventStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<EventStrategy>(r);
}

}  // namespace kplane::apiserver
