// Watch events as a client sees them, the stream interface the reflector
// consumes, and the decoder that turns a watch response body into events.
//
// A watch body (GET ...?watch=1) is a sequence of events. With JSON each is
// one line (newline-framed; lines arrive split across reads and several per
// read):
//   {"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",...}}\n
//   {"type":"BOOKMARK","object":{"kind":"Pod",...,"metadata":
//       {"resourceVersion":"42"}}}\n
//   {"type":"ERROR","object":{"kind":"Status","code":410,"reason":
//       "Expired","message":"too old resource version: 5 (17)"}}\n
// With protobuf (application/vnd.kubernetes.protobuf;stream=watch) each is
// a 4-byte big-endian length followed by a metav1.WatchEvent whose
// object.raw holds the object in the "k8s\0" envelope (objects/envelope.h).
//
// Objects are decoded into the kind the watch is for (an ERROR event's
// object is a metav1.Status and becomes WatchEvent::error). A top-level
// kind/apiVersion naming another kind is an error. For an unstructured kind
// (unstructured.h: a dynamic client's resource) each object becomes an
// UnstructuredObject holding its JSON text, with no kind check (JSON
// framing only: the dynamic client never asks for protobuf).
//
// Thread-safety: WatchDecoder is used by one thread. WatchStream: Next()
// from one thread, Stop() from any.
#ifndef KPLANE_INFORMER_WATCH_H_
#define KPLANE_INFORMER_WATCH_H_

#include <google/protobuf/message.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "objects/scheme.h"
#include "base/statusor.h"

namespace kplane::informer {

// Objects are immutable once decoded: the store, listers and every handler
// share one copy; an update replaces the pointer, never the object.
using ObjectPtr = std::shared_ptr<const google::protobuf::Message>;

enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };
// "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR".
std::string_view EventTypeName(EventType type);
StatusOr<EventType> ParseEventType(std::string_view name);

struct WatchEvent {
  EventType type = EventType::kAdded;
  // The object after the change; for DELETED its last state (with the
  // deletion's resourceVersion); for BOOKMARK an object of the kind carrying
  // only metadata.resourceVersion. Null for ERROR.
  ObjectPtr object;
  // ERROR only: the metav1.Status as a Status (api_errors.h); a 410 is
  // kExpired.
  Status error;

  // metadata.resourceVersion of `object` ("" for ERROR).
  const std::string& ResourceVersion() const;
};

// A server-sent stream of events (client-go's watch.Interface).
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  // Blocks until the next event and returns true, or returns false when
  // the stream has ended; Result() then says why.
  virtual bool Next(WatchEvent* event) = 0;
  // Why the stream ended: OK when the server ended it normally (its
  // timeoutSeconds), kCancelled after Stop(), otherwise the transport or
  // decoding error. Valid after Next() returned false.
  virtual Status Result() const = 0;
  // Ends the stream: a blocked Next() returns false soon. Any thread;
  // idempotent.
  virtual void Stop() = 0;
};

enum class WatchFraming { kJsonLines, kProtobufFrames };

class WatchDecoder {
 public:
  // Objects decode into messages of `kind` (not owned; Scheme lives
  // forever). `max_event_bytes` bounds one event (a line or frame).
  explicit WatchDecoder(const objects::KindInfo* kind,
                        WatchFraming framing = WatchFraming::kJsonLines,
                        size_t max_event_bytes = 64 << 20);

  // Consumes `data` (any split) and appends every event it completes.
  // An error (malformed event, wrong kind, event too large) is sticky: the
  // stream cannot be resynchronised and must be abandoned.
  Status Feed(std::string_view data, std::vector<WatchEvent>* out);
  // At the end of the body: DataLoss if a partial event is left over.
  Status Finish() const;

  // Decodes one complete event (a JSON line without its newline, or one
  // protobuf frame's payload).
  StatusOr<WatchEvent> DecodeEvent(std::string_view payload) const;

 private:
  StatusOr<WatchEvent> DecodeJsonEvent(std::string_view line) const;
  StatusOr<WatchEvent> DecodeProtobufEvent(std::string_view frame) const;

  const objects::KindInfo* kind_;
  const bool unstructured_;  // IsUnstructuredKind(*kind_)
  WatchFraming framing_;
  size_t max_event_bytes_;
  std::string buffer_;
  size_t scanned_ = 0;  // JSON: bytes of buffer_ known to hold no newline
  Status error_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_WATCH_H_
