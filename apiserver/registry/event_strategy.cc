// The event strategies: core/v1 Event and events.k8s.io/v1 Event, two forms
// of the same stored objects (upstream: pkg/registry/core/event/strategy.go
// and pkg/apis/core/validation/events.go of Kubernetes 1.32, which validate
// the internal form with the request's version; here the events.k8s.io/v1
// object is converted to core/v1 first, objects/events_types.h).
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/events_types.h"
#include "objects/machinery/validation.h"
#include "objects/time.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using validation::Append;
using validation::InvalidString;
using validation::Path;
using validation::Required;

// legacyValidateEvent; `reporting_field` names reportingComponent as the
// request's version does ("reportingComponent" for core/v1,
// "reportingController" for events.k8s.io/v1).
FieldErrors ValidateLegacyEvent(const Event& ev,
                                std::string_view reporting_field) {
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
    Path rc{std::string(reporting_field)};
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
    FieldErrors errs = ValidateLegacyEvent(ev, "reportingComponent");
    if (!errs.empty()) return errs;
    return ValidateGenericObjectMeta(ev.metadata(), true);
  }
  FieldErrors ValidateUpdateT(const Event& ev,
                              const Event& old) const override {
    FieldErrors errs = ValidateLegacyEvent(ev, "reportingComponent");
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

// validateV1EventSeries.
FieldErrors ValidateSeries(const Event& ev) {
  FieldErrors errs;
  if (!ev.has_series()) return errs;
  if (ev.series().count() < 2) {
    errs.push_back(
        InvalidString(Path("series.count"), "", "should be at least 2"));
  }
  if (objects::IsZero(ev.series().lastobservedtime())) {
    errs.push_back(Required(Path("series.lastObservedTime")));
  }
  return errs;
}

// ValidateEventCreate for events.k8s.io/v1: the legacy checks and the
// strict ones. Field paths are the internal (core) names, as kube's.
FieldErrors ValidateEventCreateV1(const Event& ev) {
  FieldErrors errs = ValidateLegacyEvent(ev, "reportingController");
  Append(&errs,
         validation::ValidateObjectMeta(
             ev.metadata(), true, validation::NameRule::kDNS1123Subdomain));
  Append(&errs, ValidateSeries(ev));
  if (objects::IsZero(ev.eventtime())) {
    errs.push_back(Required(Path("eventTime")));
  }
  if (ev.type() != "Normal" && ev.type() != "Warning") {
    errs.push_back(
        InvalidString(Path("type"), "", "has invalid value: " + ev.type()));
  }
  if (!objects::IsZero(ev.firsttimestamp())) {
    errs.push_back(
        InvalidString(Path("firstTimestamp"), "", "needs to be unset"));
  }
  if (!objects::IsZero(ev.lasttimestamp())) {
    errs.push_back(
        InvalidString(Path("lastTimestamp"), "", "needs to be unset"));
  }
  if (ev.count() != 0) {
    errs.push_back(InvalidString(Path("count"), "", "needs to be unset"));
  }
  if (!ev.source().component().empty() || !ev.source().host().empty()) {
    errs.push_back(InvalidString(Path("source"), "", "needs to be unset"));
  }
  return errs;
}

// The %#v and String() forms kube's field.Invalid prints for the struct
// values of immutable-field errors.
std::string GoObjectReference(const ObjectReference& r) {
  return "core.ObjectReference{Kind:" + GoQuote(r.kind()) +
         ", Namespace:" + GoQuote(r.namespace_()) +
         ", Name:" + GoQuote(r.name()) + ", UID:" + GoQuote(r.uid()) +
         ", APIVersion:" + GoQuote(r.apiversion()) +
         ", ResourceVersion:" + GoQuote(r.resourceversion()) +
         ", FieldPath:" + GoQuote(r.fieldpath()) + "}";
}
std::string GoEventSource(const EventSource& s) {
  return "core.EventSource{Component:" + GoQuote(s.component()) +
         ", Host:" + GoQuote(s.host()) + "}";
}
// time.Time.String() in UTC: "2026-11-29 08:37:42.5 +0000 UTC".
template <typename T>
std::string GoTimeString(const T& t) {
  if (objects::IsZero(t)) return "0001-01-01 00:00:00 +0000 UTC";
  std::string rfc = objects::FormatRfc3339(t.seconds());  // ...T...Z
  rfc[10] = ' ';
  rfc.pop_back();
  if (t.nanos() != 0) {
    std::string frac = std::to_string(1000000000 + t.nanos()).substr(1);
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    rfc += "." + frac;
  }
  return rfc + " +0000 UTC";
}

// Times compare as Go's: every zero form is the same zero.
template <typename T>
bool SameTime(const T& a, const T& b) {
  if (objects::IsZero(a) || objects::IsZero(b)) {
    return objects::IsZero(a) && objects::IsZero(b);
  }
  return validation::Equal(a, b);
}

// ValidateEventUpdate for events.k8s.io/v1: an event is immutable but for
// its metadata and series.
FieldErrors ValidateEventUpdateV1(const Event& ev, const Event& old) {
  FieldErrors errs = ValidateLegacyEvent(ev, "reportingController");
  Append(&errs,
         validation::ValidateObjectMetaUpdate(ev.metadata(), old.metadata()));
  if (ev.has_series() != old.has_series() ||
      !validation::Equal(ev.series(), old.series())) {
    Append(&errs, ValidateSeries(ev));
  }
  auto same = [](const google::protobuf::Message& a, bool has_a,
                 const google::protobuf::Message& b, bool has_b) {
    return has_a == has_b && validation::Equal(a, b);
  };
  auto immutable_string = [&](const std::string& now, const std::string& was,
                              const char* field) {
    Append(&errs, validation::ValidateImmutable(now == was, GoQuote(now),
                                                Path(field)));
  };
  auto immutable = [&](bool equal, std::string go_value, const char* field) {
    Append(&errs, validation::ValidateImmutable(equal, std::move(go_value),
                                                Path(field)));
  };
  immutable(validation::Equal(ev.involvedobject(), old.involvedobject()),
            GoObjectReference(ev.involvedobject()), "involvedObject");
  immutable_string(ev.reason(), old.reason(), "reason");
  immutable_string(ev.message(), old.message(), "message");
  immutable(validation::Equal(ev.source(), old.source()),
            GoEventSource(ev.source()), "source");
  immutable(SameTime(ev.firsttimestamp(), old.firsttimestamp()),
            GoTimeString(ev.firsttimestamp()), "firstTimestamp");
  immutable(SameTime(ev.lasttimestamp(), old.lasttimestamp()),
            GoTimeString(ev.lasttimestamp()), "lastTimestamp");
  Append(&errs, validation::ValidateImmutable(ev.count() == old.count(),
                                              validation::GoInt(ev.count()),
                                              Path("count")));
  // kube checks reason twice; the 422's message prints it once.
  immutable_string(ev.reason(), old.reason(), "reason");
  immutable_string(ev.type(), old.type(), "type");
  immutable(SameTime(ev.eventtime(), old.eventtime()),
            GoTimeString(ev.eventtime()), "eventTime");
  immutable_string(ev.action(), old.action(), "action");
  immutable(
      same(ev.related(), ev.has_related(), old.related(), old.has_related()),
      ev.has_related() ? "&" + GoObjectReference(ev.related())
                       : "(*core.ObjectReference)(nil)",
      "related");
  immutable_string(ev.reportingcomponent(), old.reportingcomponent(),
                   "reportingController");
  immutable_string(ev.reportinginstance(), old.reportinginstance(),
                   "reportingInstance");
  return errs;
}

// events.k8s.io/v1 Events: validated as their core/v1 form, selected by
// kube's field labels for this version (AddFieldLabelConversionsForEvent:
// regarding.*, reportingController, reason, source, type), printed as
// core/v1 events are.
class EventsV1Strategy : public TypedStrategy<objects::eventsv1::Event> {
 public:
  using TypedStrategy::TypedStrategy;
  using V1Event = objects::eventsv1::Event;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name",
            "metadata.namespace",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "source",
            "type"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::EventColumns();
  }

 protected:
  FieldErrors ValidateCreateT(const V1Event& ev) const override {
    return ValidateEventCreateV1(objects::ToCoreEvent(ev));
  }
  FieldErrors ValidateUpdateT(const V1Event& ev,
                              const V1Event& old) const override {
    return ValidateEventUpdateV1(objects::ToCoreEvent(ev),
                                 objects::ToCoreEvent(old));
  }
  std::optional<std::string> FieldValueT(const V1Event& ev,
                                         std::string_view f) const override {
    const auto& r = ev.regarding();
    if (f == "regarding.kind") return r.kind();
    if (f == "regarding.namespace") return r.namespace_();
    if (f == "regarding.name") return r.name();
    if (f == "regarding.uid") return r.uid();
    if (f == "regarding.apiVersion") return r.apiversion();
    if (f == "regarding.resourceVersion") return r.resourceversion();
    if (f == "regarding.fieldPath") return r.fieldpath();
    if (f == "reason") return ev.reason();
    if (f == "reportingController") return ev.reportingcontroller();
    if (f == "source") {
      return ev.deprecatedsource().component().empty()
                 ? ev.reportingcontroller()
                 : ev.deprecatedsource().component();
    }
    if (f == "type") return ev.type();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const V1Event& ev, WallTime now) const override {
    return printers::EventRow(objects::ToCoreEvent(ev), now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewEventsV1Strategy(const objects::ResourceInfo* r) {
  return std::make_unique<EventsV1Strategy>(r);
}

std::unique_ptr<Strategy> NewEventStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<EventStrategy>(r);
}

}  // namespace kplane::apiserver
