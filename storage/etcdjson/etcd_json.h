// The etcd v3 JSON API's encoding, shared by our store's HTTP server and by
// our clients of it (and of a real etcd 3.4).
//
// etcd 3.4 serves its gRPC API as JSON through grpc-gateway with the
// original proto field names, int64 as strings, bytes as base64, enums by
// name, and zero values omitted. Protobuf's own JSON mapping with
// preserve_proto_field_names produces exactly that, so messages from
// schemas/rpc.proto go through it unchanged; ToJson and ParseJson do the
// same mapping by reflection, without protobuf's slow converter.
//
// Errors are `{"error":M,"message":M,"code":N}` with N the gRPC code and the
// HTTP status derived from it (reference/etcd-json-api.md §4). StatusToError
// is the one table from our Status codes to that shape; ErrorToStatus is its
// inverse for clients.
//
// Thread-safety: all functions are pure.
#ifndef KPLANE_STORAGE_ETCDJSON_ETCD_JSON_H_
#define KPLANE_STORAGE_ETCDJSON_ETCD_JSON_H_

#include <google/protobuf/message.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kplane::etcdjson {

// Parses a request body; an empty or blank body, or `null`, means `{}`.
// Only the body's first JSON value is read (etcd's gateway decodes one
// value and ignores what follows: `{...} xyz` is `{...}`), and a syntax
// error in it is reported in Go's words (go_json_syntax.h). Unknown fields
// are ignored, int64 may be a string or a number, enums a name or a number.
// The rest as etcd 3.4's gateway reads a body, errors in its words
// (etcd_json.cc, "decoding"): of a key given twice the last counts, bytes
// are padded standard base64, an integer in float form (1.0) is refused.
// On error `msg` is left empty.
Status ParseJson(std::string_view json, google::protobuf::Message* msg);

// Encodes a message on one line, as etcd's gateway does: byte for byte what
// protobuf's JSON printer writes with preserve_proto_field_names, but by a
// direct walk of the message (several times faster).
std::string ToJson(const google::protobuf::Message& msg);
// The same through protobuf's printer: the reference ToJson is tested
// against.
std::string ToJsonWithProtobuf(const google::protobuf::Message& msg);
// Appends `{"result":<msg>}\n`, one message of a streaming response.
void AppendStreamResult(const google::protobuf::Message& msg, std::string* out);

// gRPC status codes used by etcd.
enum GrpcCode : int {
  kGrpcOk = 0,
  kGrpcCanceled = 1,
  kGrpcUnknown = 2,
  kGrpcInvalidArgument = 3,
  kGrpcDeadlineExceeded = 4,
  kGrpcNotFound = 5,
  kGrpcAlreadyExists = 6,
  kGrpcPermissionDenied = 7,
  kGrpcResourceExhausted = 8,
  kGrpcFailedPrecondition = 9,
  kGrpcAborted = 10,
  kGrpcOutOfRange = 11,
  kGrpcUnimplemented = 12,
  kGrpcInternal = 13,
  kGrpcUnavailable = 14,
  kGrpcDataLoss = 15,
  kGrpcUnauthenticated = 16,
};

struct HttpError {
  int http_status;
  int grpc_code;
  std::string message;
  // {"error":...,"message":...,"code":...}
  std::string Body() const;
  // grpc-gateway's error inside a streamed response (after a 200 has
  // started it), newline-terminated: {"error":{"grpc_code":N,
  // "http_code":H,"message":M,"http_status":"<reason>"}}
  std::string StreamBody() const;
};

// Our Status -> etcd's error (message prefixed "etcdserver: " when the
// status text lacks it, as etcd's errors all carry it).
HttpError StatusToError(const Status& s);
// What clientv3's err.Error() prints for our status sent as a gRPC error:
// "rpc error: code = <Go code name> desc = <StatusToError's message>". It
// is the cancel_reason of a watch a member refuses (etcd's
// serverWatchStream: "rpc error: code = Unauthenticated desc = etcdserver:
// invalid auth token", ... PermissionDenied, InvalidArgument).
std::string GoRpcErrorText(const Status& s);

// The bound on the watchers of one Watch stream, the same for a member
// (`kplane store --max-watchers-per-stream`, StoreConfig) and the gRPC
// proxy (GrpcProxyOptions::max_watchers_per_stream); 0: no bound. etcd's
// members have none; its clients put every watch of one context on one
// stream, and a client that opens millions there makes the server hold
// that many watchers (and queue one response per watcher).
inline constexpr size_t kDefaultMaxWatchersPerStream = 10000;
// A watch create on a stream with `open` watchers: OK, or, when `limit`
// is not 0 and open >= limit, kResourceExhausted "etcdserver: too many
// watchers on this stream (limit N)". Both servers answer such a create
// as etcd answers one it refuses (created and canceled at once, watch id
// -1, that message as cancel_reason: clientv3's watch channel then
// reports it as the watch's error) and keep the stream and its other
// watchers; a create after one of them is canceled succeeds.
Status CheckWatcherLimit(size_t open, size_t limit);
// The HTTP status grpc-gateway (etcd 3.4) uses for a gRPC code.
int HttpStatusForGrpcCode(int code);
// An error body from an etcd server (ours or real) -> Status, recovering
// our domain codes from etcd's texts (compacted, future revision, lease
// not found, no leader, ...). `http_status` is used when the body is not
// an etcd error.
Status ErrorToStatus(int http_status, std::string_view body);
// The same from a gRPC status (etcd's gRPC API: the code and etcd's
// rpctypes text), so the JSON and the gRPC clients agree: the domain code
// from the text when etcd's text names one (compacted, future revision,
// no space, too large, no/not leader, timed out), else the code's own.
Status GrpcErrorToStatus(int grpc_code, std::string message);

}  // namespace kplane::etcdjson

#endif  // KPLANE_STORAGE_ETCDJSON_ETCD_JSON_H_
