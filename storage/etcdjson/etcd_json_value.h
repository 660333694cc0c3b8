// ParseJson's second half, for callers that already hold a parsed JSON
// document (a streamed message's "result" member, say) and would otherwise
// print it back to text to parse it again.
//
// Thread-safety: pure.
#ifndef KPLANE_STORAGE_ETCDJSON_ETCD_JSON_VALUE_H_
#define KPLANE_STORAGE_ETCDJSON_ETCD_JSON_VALUE_H_

#include <google/protobuf/message.h>
#include <rapidjson/document.h>

#include "base/status.h"

namespace kplane::etcdjson {

// Fills `msg` from a JSON object with etcd's mapping (see ParseJson); on
// error `msg` is left empty.
Status ParseJsonValue(const rapidjson::Value& json,
                      google::protobuf::Message* msg);

}  // namespace kplane::etcdjson

#endif  // KPLANE_STORAGE_ETCDJSON_ETCD_JSON_VALUE_H_
