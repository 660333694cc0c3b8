// The generated types of events.k8s.io/v1 Event (schemas/k8s/events.proto,
// as eventsv1) and the conversion between them and the core/v1 Events the
// apiserver stores (the model is kubernetes' pkg/apis/events/v1
// conversion.go; both directions are lossless):
//
//   events.k8s.io/v1          core/v1
//   regarding                 involvedObject
//   note                      message
//   reportingController       reportingComponent
//   reportingInstance         reportingInstance
//   deprecatedSource          source
//   deprecatedFirstTimestamp  firstTimestamp
//   deprecatedLastTimestamp   lastTimestamp
//   deprecatedCount           count
//   series{count,lastObservedTime}, eventTime, action, reason, type,
//   related, metadata: the same.
//
// Example: corev1::Event stored = objects::ToCoreEvent(v1_event);
// Thread-safety: pure functions. Errors: none (every field has a place).
#ifndef KPLANE_OBJECTS_EVENTS_TYPES_H_
#define KPLANE_OBJECTS_EVENTS_TYPES_H_

#include "objects/types.h"
#include "schemas/k8s/events.pb.h"

namespace kplane::objects {

namespace eventsv1 = ::k8s::io::api::events::v1;

corev1::Event ToCoreEvent(const eventsv1::Event& in);
eventsv1::Event ToEventsV1Event(const corev1::Event& in);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_EVENTS_TYPES_H_
