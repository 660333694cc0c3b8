// GrpcMetrics: the gRPC server series etcd exports through
// go-grpc-prometheus, counted by a gRPC server interceptor so that the
// services themselves do not change:
//
//   grpc_server_started_total{grpc_method,grpc_service,grpc_type}
//   grpc_server_handled_total{grpc_code,grpc_method,grpc_service,grpc_type}
//   grpc_server_msg_received_total{grpc_method,grpc_service,grpc_type}
//   grpc_server_msg_sent_total{grpc_method,grpc_service,grpc_type}
//   etcd_network_client_grpc_received_bytes_total / _sent_bytes_total
//
// grpc_type is "unary", "client_stream", "server_stream" or "bidi_stream";
// grpc_code is Go's name of the status code ("OK", "NotFound", "Canceled",
// ...), the code the call finished with. A method's series appear at its
// first call, all seventeen handled codes at 0 but the one counted
// (go-grpc-prometheus's Register makes every method's at start; the
// service descriptors that would take are not linked into kplane). Bytes
// are the messages' protobuf encodings (etcd counts its codec's output),
// not the HTTP/2 framing.
//
//   std::vector<std::unique_ptr<
//       grpc::experimental::ServerInterceptorFactoryInterface>> f;
//   f.push_back(NewGrpcMetricsFactory(registry));
//   builder.experimental().SetInterceptorCreators(std::move(f));
//
// Ownership: the factory borrows the registry, which must outlive the
// gRPC server that owns the factory. Thread-safety: a call takes the
// factory's mutex once, to find its method's counters (a map lookup);
// the counts are relaxed atomic adds.
#ifndef KPLANE_STORAGE_GRPC_GRPC_METRICS_H_
#define KPLANE_STORAGE_GRPC_GRPC_METRICS_H_

// First, as in grpc_front.h: base/thread_annotations.h (via metrics.h)
// must come before absl's (included by grpcpp), which defines the same
// macros only if unset.
// clang-format off
#include "base/metrics.h"
// clang-format on

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>
#include <vector>

namespace kplane::storage {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewGrpcMetricsFactory(metrics::Registry* registry);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_GRPC_METRICS_H_
