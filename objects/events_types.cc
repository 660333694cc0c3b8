#include "objects/events_types.h"

namespace kplane::objects {

// Presence is kept field by field (has_*), so that a converted object
// encodes to the same JSON and bytes as one written in that version: the
// apiserver compares stored bytes to skip no-op updates.
corev1::Event ToCoreEvent(const eventsv1::Event& in) {
  corev1::Event out;
  if (in.has_metadata()) *out.mutable_metadata() = in.metadata();
  if (in.has_regarding()) *out.mutable_involvedobject() = in.regarding();
  if (in.has_reason()) out.set_reason(in.reason());
  if (in.has_note()) out.set_message(in.note());
  if (in.has_deprecatedsource()) *out.mutable_source() = in.deprecatedsource();
  if (in.has_deprecatedfirsttimestamp()) {
    *out.mutable_firsttimestamp() = in.deprecatedfirsttimestamp();
  }
  if (in.has_deprecatedlasttimestamp()) {
    *out.mutable_lasttimestamp() = in.deprecatedlasttimestamp();
  }
  if (in.has_deprecatedcount()) out.set_count(in.deprecatedcount());
  if (in.has_type()) out.set_type(in.type());
  if (in.has_eventtime()) *out.mutable_eventtime() = in.eventtime();
  if (in.has_series()) {
    corev1::EventSeries* s = out.mutable_series();
    if (in.series().has_count()) s->set_count(in.series().count());
    if (in.series().has_lastobservedtime()) {
      *s->mutable_lastobservedtime() = in.series().lastobservedtime();
    }
  }
  if (in.has_action()) out.set_action(in.action());
  if (in.has_related()) *out.mutable_related() = in.related();
  if (in.has_reportingcontroller()) {
    out.set_reportingcomponent(in.reportingcontroller());
  }
  if (in.has_reportinginstance()) {
    out.set_reportinginstance(in.reportinginstance());
  }
  return out;
}

eventsv1::Event ToEventsV1Event(const corev1::Event& in) {
  eventsv1::Event out;
  if (in.has_metadata()) *out.mutable_metadata() = in.metadata();
  if (in.has_eventtime()) *out.mutable_eventtime() = in.eventtime();
  if (in.has_series()) {
    eventsv1::EventSeries* s = out.mutable_series();
    if (in.series().has_count()) s->set_count(in.series().count());
    if (in.series().has_lastobservedtime()) {
      *s->mutable_lastobservedtime() = in.series().lastobservedtime();
    }
  }
  if (in.has_reportingcomponent()) {
    out.set_reportingcontroller(in.reportingcomponent());
  }
  if (in.has_reportinginstance()) {
    out.set_reportinginstance(in.reportinginstance());
  }
  if (in.has_action()) out.set_action(in.action());
  if (in.has_reason()) out.set_reason(in.reason());
  if (in.has_involvedobject()) *out.mutable_regarding() = in.involvedobject();
  if (in.has_related()) *out.mutable_related() = in.related();
  if (in.has_message()) out.set_note(in.message());
  if (in.has_type()) out.set_type(in.type());
  if (in.has_source()) *out.mutable_deprecatedsource() = in.source();
  if (in.has_firsttimestamp()) {
    *out.mutable_deprecatedfirsttimestamp() = in.firsttimestamp();
  }
  if (in.has_lasttimestamp()) {
    *out.mutable_deprecatedlasttimestamp() = in.lasttimestamp();
  }
  if (in.has_count()) out.set_deprecatedcount(in.count());
  return out;
}

}  // namespace kplane::objects
