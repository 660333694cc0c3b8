// First, as in storage/grpc/grpc_front.cc: base/thread_annotations.h must
// come before absl's (included by grpcpp), which defines the same macros
// only if unset.
// clang-format off
#include "storage/client/grpc_kv.h"
// clang-format on

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "base/abseil_mutex_mode.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {

namespace pb = etcdserverpb;

StatusOr<StoreProtocol> ParseStoreProtocol(std::string_view name) {
  if (name == "json") return StoreProtocol::kJson;
  if (name == "grpc") return StoreProtocol::kGrpc;
  return InvalidArgumentError("unknown store protocol \"" + std::string(name) +
                              "\" (want \"grpc\" or \"json\")");
}

const char* StoreProtocolName(StoreProtocol p) {
  return p == StoreProtocol::kGrpc ? "grpc" : "json";
}

StatusOr<std::unique_ptr<KV>> NewStoreClient(RemoteKVOptions options,
                                             StoreProtocol protocol) {
  if (protocol == StoreProtocol::kGrpc) {
    ASSIGN_OR_RETURN(std::unique_ptr<GrpcKV> kv,
                     GrpcKV::Create(std::move(options)));
    return std::unique_ptr<KV>(std::move(kv));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RemoteKV> kv,
                   RemoteKV::Create(std::move(options)));
  return std::unique_ptr<KV>(std::move(kv));
}

struct GrpcKV::Channels {
  RemoteKVOptions options;
  Clock* clock = nullptr;
  std::vector<Endpoint> endpoints;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<pb::KV::Stub>> kv;
  std::vector<std::unique_ptr<pb::Lease::Stub>> lease;
  std::vector<std::unique_ptr<pb::Watch::Stub>> watch;
  std::vector<std::unique_ptr<pb::Maintenance::Stub>> maintenance;
  // The endpoint calls go to first: the last one that answered.
  std::atomic<size_t> preferred{0};
};

namespace {

using Channels = GrpcKV::Channels;

int Millis(Duration d) {
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgumentError(std::string("cannot read the ") + what + " " +
                                path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const RemoteKVOptions& o, const Endpoint& e) {
  if (!e.tls) return grpc::InsecureChannelCredentials();
  const StoreClientTlsFiles& f = o.tls_files;
  if (f.insecure_skip_verify) {
    return InvalidArgumentError(
        "the grpc store protocol cannot skip TLS verification "
        "(--insecure-skip-tls-verify); use the json protocol");
  }
  if (f.cert_file.empty() != f.key_file.empty()) {
    return InvalidArgumentError("KeyFile and CertFile must both be present");
  }
  grpc::SslCredentialsOptions s;
  ASSIGN_OR_RETURN(s.pem_root_certs, ReadPem(f.ca_file, "CA file"));
  ASSIGN_OR_RETURN(s.pem_cert_chain, ReadPem(f.cert_file, "certificate"));
  ASSIGN_OR_RETURN(s.pem_private_key, ReadPem(f.key_file, "key"));
  return grpc::SslCredentials(s);
}

// etcd's errors all carry its "etcdserver: " prefix (rpctypes); gRPC's own
// (a broken connection, a passed deadline) do not.
bool IsEtcdText(const std::string& m) { return m.rfind("etcdserver:", 0) == 0; }

Attempt FromGrpc(const grpc::Status& g, const Endpoint& e) {
  if (g.ok()) return {};
  const std::string& m = g.error_message();
  if (!IsEtcdText(m)) {
    switch (g.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return {Status(StatusCode::kDeadlineExceeded, e.host_port + ": " + m),
                true};
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::CANCELLED:
      case grpc::StatusCode::INTERNAL:
      case grpc::StatusCode::UNKNOWN:
        return {Status(StatusCode::kUnavailable, e.host_port + ": " + m), true};
      default:
        break;
    }
  }
  return {etcdjson::GrpcErrorToStatus(static_cast<int>(g.error_code()), m)};
}

std::chrono::system_clock::time_point GrpcDeadline(Clock* clock,
                                                   TimePoint deadline) {
  return std::chrono::system_clock::now() +
         std::max<Duration>(deadline - clock->Now(), Duration(0));
}

// Makes sure endpoint `ep`'s channel is connected, waiting at most
// dial_timeout (and not past `deadline`). False: it is not, and nothing
// sent now could reach the server. A channel whose connection attempt
// failed (TRANSIENT_FAILURE: refused, unreachable, TLS handshake refused;
// gRPC retries it in the background after a backoff) answers false at
// once, so a dead member costs a call no wait.
bool EnsureConnected(Channels* c, size_t ep, TimePoint deadline) {
  grpc::Channel* ch = c->channels[ep].get();
  const auto until = GrpcDeadline(
      c->clock,
      std::min<TimePoint>(deadline, c->clock->Now() + c->options.dial_timeout));
  grpc_connectivity_state st = ch->GetState(/*try_to_connect=*/true);
  while (st != GRPC_CHANNEL_READY) {
    if (st == GRPC_CHANNEL_TRANSIENT_FAILURE || st == GRPC_CHANNEL_SHUTDOWN) {
      return false;
    }
    if (!ch->WaitForStateChange(st, until)) return false;  // timed out
    st = ch->GetState(/*try_to_connect=*/true);
  }
  return true;
}

Attempt NotConnected(const Channels* c, size_t ep) {
  return {Status(StatusCode::kUnavailable,
                 "connect " + c->endpoints[ep].host_port + ": not connected"),
          /*transport=*/true, /*unsent=*/true};
}

// The failover loop of failover.h over the channels. `attempt` runs the
// call on one endpoint: (ep, context) -> Attempt.
template <typename AttemptFn>
Status WithFailover(Channels* c, std::string_view what, CallKind kind,
                    const AttemptFn& attempt) {
  const RemoteKVOptions& o = c->options;
  Clock* clock = c->clock;
  const FailoverTiming timing{clock, o.call_timeout, o.retry_backoff,
                              o.max_retry_backoff};
  return storage::WithFailover(
      timing, c->endpoints, &c->preferred, what, kind,
      [&](size_t ep, TimePoint deadline) {
        if (!EnsureConnected(c, ep, deadline)) return NotConnected(c, ep);
        grpc::ClientContext ctx;
        ctx.set_deadline(GrpcDeadline(
            clock,
            std::min<TimePoint>(deadline, clock->Now() + o.request_timeout)));
        return attempt(ep, &ctx);
      });
}

// A unary RPC of a stub: `rpc(ep, ctx, resp)` returns the grpc::Status.
template <typename Resp, typename RpcFn>
StatusOr<Resp> Unary(Channels* c, std::string_view what, CallKind kind,
                     const RpcFn& rpc) {
  Resp resp;
  Status s =
      WithFailover(c, what, kind, [&](size_t ep, grpc::ClientContext* ctx) {
        resp.Clear();
        return FromGrpc(rpc(ep, ctx, &resp), c->endpoints[ep]);
      });
  if (!s.ok()) return s;
  return resp;
}

}  // namespace

void SetGrpcReconnect(grpc::ChannelArguments* args, Duration initial_backoff,
                      Duration max_backoff) {
  args->SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, Millis(initial_backoff));
  args->SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, Millis(max_backoff));
  // gRPC's MIN_CONNECT_TIMEOUT (TCP, TLS and HTTP/2 settings).
  args->SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, Millis(kGrpcConnectAttempt));
}

StatusOr<std::unique_ptr<GrpcKV>> GrpcKV::Create(RemoteKVOptions options) {
  ASSIGN_OR_RETURN(std::vector<Endpoint> eps,
                   ParseEndpoints(options.endpoints, options.tls != nullptr));
  // Debian's abseil runs its deadlock detector on every lock gRPC takes:
  // ~2 % of the apiserver's CPU at 64 concurrent pod creates
  // (docs/performance.md, "The gRPC store client profiled"). Off before our
  // first channel exists, for processes whose main did not turn it off
  // (base/abseil_mutex_mode.h). A lock taken while it was on and released
  // after leaves only a stale entry that nothing reads any more.
  StopAbseilDeadlockDetection();
  auto c = std::make_unique<Channels>();
  c->clock = options.clock ? options.clock : Clock::Real();
  grpc::ChannelArguments args;
  // Retries are ours (the rules above); gRPC's would resend writes.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // Reconnect to a restarted member on our backoff, not gRPC's (1 s
  // doubling to 2 min).
  SetGrpcReconnect(&args, options.retry_backoff, options.max_retry_backoff);
  // A list may be large; etcd's clientv3 accepts any size too.
  args.SetMaxReceiveMessageSize(-1);
  // Notice a member that vanished without closing the connection (a
  // partition) under a quiet watch: kube-apiserver's 30 s / 10 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, "kplane-storage-client/1");
  // One connection per endpoint and client, not shared with other
  // clients in this process (tests run several against one member).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  for (const Endpoint& e : eps) {
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> creds,
                     Credentials(options, e));
    auto ch = grpc::CreateCustomChannel(e.host_port, creds, args);
    c->kv.push_back(pb::KV::NewStub(ch));
    c->lease.push_back(pb::Lease::NewStub(ch));
    c->watch.push_back(pb::Watch::NewStub(ch));
    c->maintenance.push_back(pb::Maintenance::NewStub(ch));
    c->channels.push_back(std::move(ch));
  }
  c->endpoints = std::move(eps);
  c->options = std::move(options);
  return std::unique_ptr<GrpcKV>(new GrpcKV(std::move(c)));
}

GrpcKV::GrpcKV(std::unique_ptr<Channels> channels)
    : channels_(std::move(channels)) {}

GrpcKV::~GrpcKV() = default;

StatusOr<pb::RangeResponse> GrpcKV::Range(const pb::RangeRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::RangeResponse>(
      c, "Range", CallKind::kRead,
      [&](size_t ep, grpc::ClientContext* ctx, pb::RangeResponse* r) {
        return c->kv[ep]->Range(ctx, req, r);
      });
}

StatusOr<pb::PutResponse> GrpcKV::Put(const pb::PutRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::PutResponse>(
      c, "Put", CallKind::kWrite,
      [&](size_t ep, grpc::ClientContext* ctx, pb::PutResponse* r) {
        return c->kv[ep]->Put(ctx, req, r);
      });
}

StatusOr<pb::DeleteRangeResponse> GrpcKV::DeleteRange(
    const pb::DeleteRangeRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::DeleteRangeResponse>(
      c, "DeleteRange", CallKind::kWrite,
      [&](size_t ep, grpc::ClientContext* ctx, pb::DeleteRangeResponse* r) {
        return c->kv[ep]->DeleteRange(ctx, req, r);
      });
}

StatusOr<pb::TxnResponse> GrpcKV::Txn(const pb::TxnRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::TxnResponse>(
      c, "Txn", IsReadOnlyTxn(req) ? CallKind::kRead : CallKind::kWrite,
      [&](size_t ep, grpc::ClientContext* ctx, pb::TxnResponse* r) {
        return c->kv[ep]->Txn(ctx, req, r);
      });
}

StatusOr<pb::CompactionResponse> GrpcKV::Compact(
    const pb::CompactionRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::CompactionResponse>(
      c, "Compact", CallKind::kWrite,
      [&](size_t ep, grpc::ClientContext* ctx, pb::CompactionResponse* r) {
        return c->kv[ep]->Compact(ctx, req, r);
      });
}

StatusOr<pb::LeaseGrantResponse> GrpcKV::LeaseGrant(
    const pb::LeaseGrantRequest& req) {
  Channels* c = channels_.get();
  ASSIGN_OR_RETURN(
      pb::LeaseGrantResponse resp,
      Unary<pb::LeaseGrantResponse>(
          c, "LeaseGrant", CallKind::kWrite,
          [&](size_t ep, grpc::ClientContext* ctx, pb::LeaseGrantResponse* r) {
            return c->lease[ep]->LeaseGrant(ctx, req, r);
          }));
  // etcd reports some grant failures in the message body.
  if (!resp.error().empty()) return InternalError(resp.error());
  return resp;
}

StatusOr<pb::LeaseRevokeResponse> GrpcKV::LeaseRevoke(
    const pb::LeaseRevokeRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::LeaseRevokeResponse>(
      c, "LeaseRevoke", CallKind::kWrite,
      [&](size_t ep, grpc::ClientContext* ctx, pb::LeaseRevokeResponse* r) {
        return c->lease[ep]->LeaseRevoke(ctx, req, r);
      });
}

StatusOr<pb::LeaseKeepAliveResponse> GrpcKV::LeaseKeepAlive(
    const pb::LeaseKeepAliveRequest& req) {
  Channels* c = channels_.get();
  // One round on a stream of its own. Renewing twice is harmless, so a
  // keepalive is retried like a read.
  ASSIGN_OR_RETURN(pb::LeaseKeepAliveResponse resp,
                   Unary<pb::LeaseKeepAliveResponse>(
                       c, "LeaseKeepAlive", CallKind::kRead,
                       [&](size_t ep, grpc::ClientContext* ctx,
                           pb::LeaseKeepAliveResponse* r) {
                         auto stream = c->lease[ep]->LeaseKeepAlive(ctx);
                         if (stream->Write(req) && stream->Read(r)) {
                           // Answered: end the stream without waiting for the
                           // server to see our half-close.
                           ctx->TryCancel();
                           stream->Finish().ok();  // CANCELLED, by us
                           return grpc::Status::OK;
                         }
                         grpc::Status st = stream->Finish();
                         if (st.ok()) {
                           return grpc::Status(
                               grpc::StatusCode::UNAVAILABLE,
                               "keepalive stream ended without an answer");
                         }
                         return st;
                       }));
  if (resp.ttl() <= 0) {
    return Status(StatusCode::kNotFound,
                  "etcdserver: requested lease not found");
  }
  return resp;
}

StatusOr<pb::LeaseTimeToLiveResponse> GrpcKV::LeaseTimeToLive(
    const pb::LeaseTimeToLiveRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::LeaseTimeToLiveResponse>(
      c, "LeaseTimeToLive", CallKind::kRead,
      [&](size_t ep, grpc::ClientContext* ctx, pb::LeaseTimeToLiveResponse* r) {
        return c->lease[ep]->LeaseTimeToLive(ctx, req, r);
      });
}

StatusOr<pb::LeaseLeasesResponse> GrpcKV::LeaseLeases(
    const pb::LeaseLeasesRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::LeaseLeasesResponse>(
      c, "LeaseLeases", CallKind::kRead,
      [&](size_t ep, grpc::ClientContext* ctx, pb::LeaseLeasesResponse* r) {
        return c->lease[ep]->LeaseLeases(ctx, req, r);
      });
}

StatusOr<pb::StatusResponse> GrpcKV::MemberStatus() {
  Channels* c = channels_.get();
  return Unary<pb::StatusResponse>(
      c, "Status", CallKind::kRead,
      [&](size_t ep, grpc::ClientContext* ctx, pb::StatusResponse* r) {
        return c->maintenance[ep]->Status(ctx, pb::StatusRequest(), r);
      });
}

StatusOr<pb::HashKVResponse> GrpcKV::HashKV(const pb::HashKVRequest& req) {
  Channels* c = channels_.get();
  return Unary<pb::HashKVResponse>(
      c, "HashKV", CallKind::kRead,
      [&](size_t ep, grpc::ClientContext* ctx, pb::HashKVResponse* r) {
        return c->maintenance[ep]->HashKV(ctx, req, r);
      });
}

// ---------------------------------------------------------------------------
// GrpcWatch
//
// One thread per watch runs a Watch stream to one endpoint at a time, and
// resumes it on the next endpoint when it breaks, by failover.h's
// WatchResumer, as remote_kv.cc's RemoteWatch does.

namespace {

class GrpcWatch : public Watch {
 public:
  GrpcWatch(Channels* c, pb::WatchCreateRequest req, WatchCallback callback,
            GrpcKV::WatchMetadataSource metadata)
      : state_(std::make_shared<State>(std::move(req))) {
    state_->c = c;
    state_->callback = std::move(callback);
    state_->metadata = std::move(metadata);
  }

  ~GrpcWatch() override {
    std::shared_ptr<grpc::ClientContext> ctx;
    {
      MutexLock l(&state_->mu);
      state_->stop = true;
      ctx = state_->ctx;
    }
    // Ends a blocked Read (and Write) on the current stream.
    if (ctx) ctx->TryCancel();
    state_->cv.notify_all();
    if (thread_.joinable()) {
      // Destroyed from its own callback: the thread sees `stop` as soon as
      // the callback returns and touches only the shared state.
      if (thread_.get_id() == std::this_thread::get_id()) {
        thread_.detach();
      } else {
        thread_.join();
      }
    }
  }

  void RequestProgress() override {
    State* st = state_.get();
    {
      MutexLock l(&st->mu);
      if (st->stop) return;
      // Else asked on the next stream once it is created.
      if (!st->progress.SendNow()) return;
    }
    SendProgress(st);
  }

  bool ProgressOrdered() const override {
    return state_->progress_ordered.load();
  }

  Status Start() {
    std::shared_ptr<State> st = state_;
    thread_ = std::thread([st] { Run(st.get()); });
    return st->WaitStarted();
  }

 private:
  using Stream = grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>;

  // Lock order: WatchState's deliver_mu, then mu. write_mu is a leaf.
  struct State : WatchState {
    explicit State(pb::WatchCreateRequest req) : WatchState(std::move(req)) {}

    Channels* c = nullptr;
    // Asked for the metadata of each stream (set before the thread
    // starts; may be empty).
    GrpcKV::WatchMetadataSource metadata;
    // The current stream's context (cancelled by the destructor).
    std::shared_ptr<grpc::ClientContext> ctx GUARDED_BY(mu);

    // Writes to the current stream (a create request from the watch
    // thread, progress requests from any thread): gRPC allows one writer
    // at a time. Held while writing, which cancelling the context ends.
    Mutex write_mu;
    Stream* stream GUARDED_BY(write_mu) = nullptr;

    // The current stream's server marked its progress answers ordered
    // (kOrderedProgressMetadata); set at its first response.
    std::atomic<bool> progress_ordered{false};
  };

  static void SendProgress(State* st) {
    pb::WatchRequest wr;
    wr.mutable_progress_request();
    MutexLock w(&st->write_mu);
    if (st->stream == nullptr || !st->stream->Write(wr)) {
      // The stream is breaking; ask again on the next one.
      MutexLock l(&st->mu);
      st->progress.SendFailed();
    }
  }

  static void Run(State* st) {
    Channels* c = st->c;
    const RemoteKVOptions& o = c->options;
    st->RunStreams(
        FailoverTiming{c->clock, o.call_timeout, o.retry_backoff,
                       o.max_retry_backoff},
        c->endpoints, c->preferred.load(),
        [](const Status& s) {
          return s.code() == StatusCode::kUnavailable ||
                 s.code() == StatusCode::kDeadlineExceeded ||
                 IsRetriableServerError(s);
        },
        [st](size_t ep, bool* progressed) {
          return RunStream(st, ep, progressed);
        });
  }

  // Runs one stream until it breaks. Returns why it ended.
  static Status RunStream(State* st, size_t ep, bool* progressed) {
    Channels* c = st->c;
    const Endpoint& e = c->endpoints[ep];
    if (!EnsureConnected(c, ep, c->clock->Now() + c->options.dial_timeout)) {
      return NotConnected(c, ep).status;
    }
    auto ctx = std::make_shared<grpc::ClientContext>();
    // etcd's clientv3.WithRequireLeader: a member that loses its leader
    // ends the stream instead of going silent.
    ctx->AddMetadata("hasleader", "true");
    if (st->metadata) {
      for (const auto& [k, v] : st->metadata()) ctx->AddMetadata(k, v);
    }
    {
      MutexLock l(&st->mu);
      if (st->stop) return CancelledError("watch stopped");
      st->ctx = ctx;
      st->progress.StreamChanged();
    }
    std::unique_ptr<Stream> stream = c->watch[ep]->Watch(ctx.get());
    pb::WatchRequest wr;
    *wr.mutable_create_request() = st->resumer.NextCreateRequest();
    bool wrote;
    {
      MutexLock w(&st->write_mu);
      st->stream = stream.get();
      wrote = stream->Write(wr);
    }
    Status s;
    bool read_failed = false;
    if (wrote) {
      pb::WatchResponse resp;
      for (bool first = true;; first = false) {
        if (!stream->Read(&resp)) {
          read_failed = true;
          break;
        }
        if (first) {
          // Before the `created` is delivered (and StartWatch returns).
          const auto& md = ctx->GetServerInitialMetadata();
          st->progress_ordered.store(md.find(kOrderedProgressMetadata) !=
                                     md.end());
        }
        s = st->HandleResponse(resp, progressed, [st] { SendProgress(st); });
        if (!s.ok() || st->resumer.finished()) break;
      }
    }
    {
      MutexLock w(&st->write_mu);
      st->stream = nullptr;
    }
    {
      MutexLock l(&st->mu);
      st->ctx.reset();
      st->progress.StreamChanged();
    }
    if (!wrote || !read_failed) ctx->TryCancel();
    grpc::Status fin = stream->Finish();
    if (!s.ok() || st->resumer.finished()) return s;
    Attempt a = FromGrpc(fin, e);
    if (a.status.ok()) {
      return UnavailableError("watch stream to " + e.host_port +
                              " ended by the server");
    }
    return a.status;
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace

StatusOr<std::unique_ptr<Watch>> GrpcKV::StartWatch(
    const pb::WatchCreateRequest& req, WatchCallback callback) {
  return StartWatchWithMetadata(req, std::move(callback), nullptr);
}

StatusOr<std::unique_ptr<Watch>> GrpcKV::StartWatchWithMetadata(
    const pb::WatchCreateRequest& req, WatchCallback callback,
    WatchMetadataSource metadata) {
  auto w = std::make_unique<GrpcWatch>(
      channels_.get(), req, std::move(callback), std::move(metadata));
  RETURN_IF_ERROR(w->Start());
  return std::unique_ptr<Watch>(std::move(w));
}

}  // namespace kplane::storage
