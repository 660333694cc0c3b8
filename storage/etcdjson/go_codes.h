// Go's codes.Code.String() for gRPC status codes, indexed by the numeric
// code (the same in C++ and Go): the words etcd's Go programs print, and
// the grpc_code label Go's go-grpc-prometheus exports.
#ifndef KPLANE_STORAGE_ETCDJSON_GO_CODES_H_
#define KPLANE_STORAGE_ETCDJSON_GO_CODES_H_

#include <array>

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

}  // namespace kplane::etcdjson

#endif  // KPLANE_STORAGE_ETCDJSON_GO_CODES_H_
