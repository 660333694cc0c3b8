#include "storage/grpc/grpc_metrics.h"

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/interceptor.h>

#include <array>
#include <map>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "storage/etcdjson/go_codes.h"

namespace kplane::storage {
namespace {

namespace gx = grpc::experimental;

// One method's children, resolved at its first call (With() locks).
struct MethodCounters {
  metrics::Counter* started;
  metrics::Counter* received;
  metrics::Counter* sent;
  std::array<metrics::Counter*, etcdjson::kGoCodeNames.size()> handled;
};

struct Shared {
  metrics::Counter* received_bytes;
  metrics::Counter* sent_bytes;
};

class MetricsInterceptor final : public gx::Interceptor {
 public:
  MetricsInterceptor(const Shared* shared, const MethodCounters* m)
      : shared_(shared), m_(m) {
    m_->started->Inc();
  }

  void Intercept(gx::InterceptorBatchMethods* b) override {
    using H = gx::InterceptionHookPoints;
    if (b->QueryInterceptionHookPoint(H::POST_RECV_MESSAGE)) {
      // Null when the receive failed (the client half-closed).
      if (const void* msg = b->GetRecvMessage(); msg != nullptr) {
        m_->received->Inc();
        // Every request type is a generated protobuf message, whose
        // MessageLite base is at its address.
        shared_->received_bytes->Inc(static_cast<double>(
            static_cast<const google::protobuf::MessageLite*>(msg)
                ->ByteSizeLong()));
      }
    }
    if (b->QueryInterceptionHookPoint(H::PRE_SEND_MESSAGE)) {
      m_->sent->Inc();
      // Serializes now what gRPC would serialize next anyway.
      if (grpc::ByteBuffer* buf = b->GetSerializedSendMessage();
          buf != nullptr) {
        shared_->sent_bytes->Inc(static_cast<double>(buf->Length()));
      }
    }
    if (b->QueryInterceptionHookPoint(H::PRE_SEND_STATUS)) {
      const size_t code = static_cast<size_t>(b->GetSendStatus().error_code());
      m_->handled[code < etcdjson::kGoCodeNames.size() ? code : 2]
          ->Inc();  // Unknown
    }
    b->Proceed();
  }

 private:
  const Shared* const shared_;
  const MethodCounters* const m_;
};

class MetricsFactory final : public gx::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsFactory(metrics::Registry* reg) {
    // go-grpc-prometheus's names, help texts and label names (in the
    // order Prometheus renders them).
    started_ = reg->NewCounter("grpc_server_started_total",
                               "Total number of RPCs started on the server.",
                               {"grpc_method", "grpc_service", "grpc_type"});
    handled_ = reg->NewCounter(
        "grpc_server_handled_total",
        "Total number of RPCs completed on the server, regardless of "
        "success or failure.",
        {"grpc_code", "grpc_method", "grpc_service", "grpc_type"});
    received_ = reg->NewCounter(
        "grpc_server_msg_received_total",
        "Total number of RPC stream messages received on the server.",
        {"grpc_method", "grpc_service", "grpc_type"});
    sent_ = reg->NewCounter(
        "grpc_server_msg_sent_total",
        "Total number of gRPC stream messages sent by the server.",
        {"grpc_method", "grpc_service", "grpc_type"});
    shared_.received_bytes =
        reg->NewCounter("etcd_network_client_grpc_received_bytes_total",
                        "The total number of bytes received from grpc "
                        "clients.")
            ->With({});
    shared_.sent_bytes =
        reg->NewCounter("etcd_network_client_grpc_sent_bytes_total",
                        "The total number of bytes sent to grpc clients.")
            ->With({});
  }

  gx::Interceptor* CreateServerInterceptor(gx::ServerRpcInfo* info) override {
    const MethodCounters* m = Find(info->method(), info->type());
    if (m == nullptr) return nullptr;  // not a "/service/method" path
    return new MetricsInterceptor(&shared_, m);
  }

 private:
  // The method's counters, made (with all seventeen handled codes, as
  // go-grpc-prometheus does) at its first call.
  const MethodCounters* Find(std::string_view path, gx::ServerRpcInfo::Type t)
      EXCLUDES(mu_) {
    MutexLock l(&mu_);
    auto it = methods_.find(path);
    if (it != methods_.end()) return &it->second;
    // "/etcdserverpb.KV/Range"
    const size_t slash = path.rfind('/');
    if (path.size() < 4 || path[0] != '/' || slash == 0 ||
        slash + 1 >= path.size()) {
      return nullptr;
    }
    const std::string service(path.substr(1, slash - 1));
    const std::string method(path.substr(slash + 1));
    const char* type = "unary";
    switch (t) {
      case gx::ServerRpcInfo::Type::UNARY:
        break;
      case gx::ServerRpcInfo::Type::CLIENT_STREAMING:
        type = "client_stream";
        break;
      case gx::ServerRpcInfo::Type::SERVER_STREAMING:
        type = "server_stream";
        break;
      case gx::ServerRpcInfo::Type::BIDI_STREAMING:
        type = "bidi_stream";
        break;
    }
    const std::vector<std::string> lv = {method, service, type};
    MethodCounters m;
    m.started = started_->With(lv);
    m.received = received_->With(lv);
    m.sent = sent_->With(lv);
    for (size_t c = 0; c < etcdjson::kGoCodeNames.size(); ++c) {
      m.handled[c] =
          handled_->With({etcdjson::kGoCodeNames[c], method, service, type});
    }
    return &methods_.emplace(std::string(path), m).first->second;
  }

  Shared shared_;
  metrics::Family<metrics::Counter>* started_;
  metrics::Family<metrics::Counter>* handled_;
  metrics::Family<metrics::Counter>* received_;
  metrics::Family<metrics::Counter>* sent_;
  Mutex mu_;
  // Keyed by gRPC's method path (found by string_view: no allocation per
  // call). Entries are never removed, so their addresses are stable.
  std::map<std::string, MethodCounters, std::less<>> methods_ GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<gx::ServerInterceptorFactoryInterface> NewGrpcMetricsFactory(
    metrics::Registry* registry) {
  return std::make_unique<MetricsFactory>(registry);
}

}  // namespace kplane::storage
