// Go's codes.Code.String() for gRPC status codes, indexed by the numeric
// code (the same in C++ and Go): the words etcd's Go programs print, and
// the grpc_code label Go's go-grpc-prometheus exports.
#ifndef KPLANE_STORAGE_ETCDJSON_GO_CODES_H_
#define KPLANE_STORAGE_ETCDJSON_GO_CODES_H_

#include <array>
#include <string>
#include <string_view>

namespace kplane::etcdjson {

inline constexpr std::array<const char*, 17> kGoCodeNames = {
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated"};

// What a Go client's err.Error() says for a gRPC status: "rpc error: code
// = <name> desc = <message>", with Go's "Code(<n>)" for a code it does not
// name.
inline std::string GoRpcErrorText(int code, std::string_view message) {
  std::string name = code >= 0 && code < int{kGoCodeNames.size()}
                         ? kGoCodeNames[code]
                         : "Code(" + std::to_string(code) + ")";
  std::string out = "rpc error: code = " + name + " desc = ";
  out.append(message);
  return out;
}

}  // namespace kplane::etcdjson

#endif  // KPLANE_STORAGE_ETCDJSON_GO_CODES_H_
