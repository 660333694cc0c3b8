// etcd's streamed JSON bodies: a sequence of top-level JSON objects arriving
// in arbitrary pieces. Both directions use it: the client decodes the
// responses of /v3/watch, /v3/lease/keepalive and /v3/maintenance/snapshot
// (`{"result":{...}}` objects, each followed by "\n" in etcd 3.4;
// storage/client), and the server reads the request streams of /v3/watch and
// /v3/lease/keepalive (storage/server/client_api.cc).
//
// JsonObjectSplitter cuts such a byte stream into complete top-level JSON
// objects. It does not rely on the newline: it tracks brace depth outside
// strings, so it also copes with a server that omits the separator, with
// one object split over many reads and with many objects in one read.
//
// Worked example (| marks read boundaries):
//
//   Feed(`{"result":{"a":"}"`)   depth 2, inside no string: nothing complete
//   Feed(`}}\n{"resu`)           `{"result":{"a":"}"}}` complete (the "}"
//                                inside the string did not count); the
//                                "\n" is skipped; `{"resu` stays buffered
//   Feed(`lt":{}}\n{"result":{}}\n`)  two more objects complete
//
// ParseStreamMessage turns one such object into a protobuf message: the
// "result" member is decoded with etcd's JSON mapping; an "error" member
// (grpc-gateway's in-stream error, {"error":{"grpc_code":14,"message":...}})
// becomes the corresponding Status, as ErrorToStatus would map it.
//
// Thread-safety: a JsonObjectSplitter is used by one thread at a time.
// Errors: kInvalidArgument for bytes that cannot start an object (the
// splitter) or a message that does not decode (ParseStreamMessage);
// kResourceExhausted for an object over the splitter's size bound.
#ifndef KPLANE_STORAGE_ETCDJSON_JSON_STREAM_H_
#define KPLANE_STORAGE_ETCDJSON_JSON_STREAM_H_

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace kplane::etcdjson {

class JsonObjectSplitter {
 public:
  // `max_object_bytes` bounds one object (0: no bound): once an object
  // being scanned grows past it, Next fails with kResourceExhausted and
  // the splitter keeps failing; what it buffered is dropped. A stream
  // reader passes its request size limit, so an unterminated object costs
  // at most that plus one read.
  explicit JsonObjectSplitter(size_t max_object_bytes = 0)
      : max_object_bytes_(max_object_bytes) {}

  // Appends more bytes of the stream (nothing once it failed).
  void Feed(std::string_view data);
  // Moves the next complete object into *object. Returns false when none is
  // complete yet, or with *error set when the stream is not a sequence of
  // objects (e.g. a plain-text error body).
  bool Next(std::string* object, Status* error);
  // Next has failed for good (an oversized object).
  bool failed() const { return !failure_.ok(); }
  // Bytes received but not yet returned as objects.
  size_t buffered() const { return buf_.size() - start_; }

 private:
  const size_t max_object_bytes_;
  Status failure_;
  std::string buf_;
  size_t start_ = 0;  // first byte of the object being scanned
  size_t scan_ = 0;   // next byte to examine
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

// Decodes `{"result":M}` into *msg, or returns the Status of
// `{"error":{...}}`.
Status ParseStreamMessage(std::string_view object,
                          google::protobuf::Message* msg);

}  // namespace kplane::etcdjson

#endif  // KPLANE_STORAGE_ETCDJSON_JSON_STREAM_H_
