#include "storage/client/remote_kv.h"

#include <condition_variable>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/json_stream.h"

namespace kplane::storage {

namespace {

Attempt RunUnary(net::HttpClient* client, std::string_view path,
                 std::string_view body, google::protobuf::Message* resp,
                 bool streamed_result) {
  StatusOr<net::HttpResponse> r =
      client->Request("POST", path, JsonHeaders(), body);
  if (!r.ok()) return {r.status(), true};
  if (r->status != 200) {
    return {etcdjson::ErrorToStatus(r->status, r->body), false};
  }
  if (!streamed_result) return {etcdjson::ParseJson(r->body, resp), false};
  // A streaming endpoint called with one request: the answer is one
  // {"result":...} object (or an in-stream error).
  etcdjson::JsonObjectSplitter split;
  split.Feed(r->body);
  std::string object;
  Status err;
  if (!split.Next(&object, &err)) {
    if (!err.ok()) return {err, false};
    return {UnavailableError("empty answer from " + std::string(path)), true};
  }
  return {etcdjson::ParseStreamMessage(object, resp), false};
}

}  // namespace

bool IsReadOnlyTxn(const etcdserverpb::TxnRequest& req) {
  auto ops_read_only = [](const auto& ops) {
    for (const etcdserverpb::RequestOp& op : ops) {
      switch (op.request_case()) {
        case etcdserverpb::RequestOp::kRequestRange:
        case etcdserverpb::RequestOp::REQUEST_NOT_SET:
          break;
        case etcdserverpb::RequestOp::kRequestTxn:
          if (!IsReadOnlyTxn(op.request_txn())) return false;
          break;
        default:
          return false;
      }
    }
    return true;
  };
  return ops_read_only(req.success()) && ops_read_only(req.failure());
}

StatusOr<std::unique_ptr<RemoteKV>> RemoteKV::Create(RemoteKVOptions options) {
  ASSIGN_OR_RETURN(std::vector<Endpoint> eps,
                   ParseEndpoints(options.endpoints, options.tls != nullptr));
  for (const Endpoint& e : eps) {
    if (e.tls && options.tls == nullptr) {
      ASSIGN_OR_RETURN(options.tls, NewStoreClientTls({}));
    }
  }
  return std::unique_ptr<RemoteKV>(
      new RemoteKV(std::move(options), std::move(eps)));
}

RemoteKV::RemoteKV(RemoteKVOptions options, std::vector<Endpoint> endpoints)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()),
      endpoints_(std::move(endpoints)),
      duplex_(new std::atomic<int>[endpoints_.size()]) {
  for (size_t i = 0; i < endpoints_.size(); ++i) duplex_[i].store(0);
  net::HttpClientOptions http;
  http.connect_timeout = options_.dial_timeout;
  http.read_timeout = options_.request_timeout;
  http.write_timeout = options_.request_timeout;
  http.clock = clock_;
  http.tls = options_.tls;
  http.default_headers = {{"User-Agent", "kplane-storage-client/1"}};
  for (const Endpoint& e : endpoints_) {
    pools_.push_back(std::make_unique<ConnectionPool>(
        e, http, options_.max_idle_connections));
  }
}

RemoteKV::~RemoteKV() = default;

namespace {

// The failover loop of failover.h over one endpoint's pooled connections.
// `attempt` runs the call on one endpoint.
template <typename AttemptFn>
Status WithFailover(RemoteKV* kv, std::atomic<size_t>* preferred,
                    std::string_view what, CallKind kind,
                    const AttemptFn& attempt) {
  const RemoteKVOptions& o = kv->options();
  const FailoverTiming timing{kv->clock(), o.call_timeout, o.retry_backoff,
                              o.max_retry_backoff};
  return storage::WithFailover(
      timing, kv->endpoints(), preferred, what, kind,
      [&](size_t ep, TimePoint /*deadline: request_timeout bounds each read*/) {
        Attempt a;
        {
          PooledClient c = kv->pool(ep)->Take();
          a = attempt(c.get());
        }
        a.unsent = a.transport && IsConnectFailure(a.status);
        return a;
      });
}

}  // namespace

Status RemoteKV::Call(std::string_view path,
                      const google::protobuf::Message& req,
                      google::protobuf::Message* resp, CallKind kind) {
  const std::string body = etcdjson::ToJson(req);
  return WithFailover(this, &preferred_, path, kind, [&](net::HttpClient* c) {
    resp->Clear();
    return RunUnary(c, path, body, resp, false);
  });
}

StatusOr<etcdserverpb::RangeResponse> RemoteKV::Range(
    const etcdserverpb::RangeRequest& req) {
  return Unary<etcdserverpb::RangeResponse>("/v3/kv/range", req,
                                            CallKind::kRead);
}

StatusOr<etcdserverpb::PutResponse> RemoteKV::Put(
    const etcdserverpb::PutRequest& req) {
  return Unary<etcdserverpb::PutResponse>("/v3/kv/put", req, CallKind::kWrite);
}

StatusOr<etcdserverpb::DeleteRangeResponse> RemoteKV::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& req) {
  return Unary<etcdserverpb::DeleteRangeResponse>("/v3/kv/deleterange", req,
                                                  CallKind::kWrite);
}

StatusOr<etcdserverpb::TxnResponse> RemoteKV::Txn(
    const etcdserverpb::TxnRequest& req) {
  return Unary<etcdserverpb::TxnResponse>(
      "/v3/kv/txn", req,
      IsReadOnlyTxn(req) ? CallKind::kRead : CallKind::kWrite);
}

StatusOr<etcdserverpb::CompactionResponse> RemoteKV::Compact(
    const etcdserverpb::CompactionRequest& req) {
  return Unary<etcdserverpb::CompactionResponse>("/v3/kv/compaction", req,
                                                 CallKind::kWrite);
}

StatusOr<etcdserverpb::LeaseGrantResponse> RemoteKV::LeaseGrant(
    const etcdserverpb::LeaseGrantRequest& req) {
  etcdserverpb::LeaseGrantResponse resp;
  RETURN_IF_ERROR(Call("/v3/lease/grant", req, &resp, CallKind::kWrite));
  // etcd reports some grant failures in the message body.
  if (!resp.error().empty()) return InternalError(resp.error());
  return resp;
}

StatusOr<etcdserverpb::LeaseRevokeResponse> RemoteKV::LeaseRevoke(
    const etcdserverpb::LeaseRevokeRequest& req) {
  return Unary<etcdserverpb::LeaseRevokeResponse>("/v3/lease/revoke", req,
                                                  CallKind::kWrite);
}

StatusOr<etcdserverpb::LeaseKeepAliveResponse> RemoteKV::LeaseKeepAlive(
    const etcdserverpb::LeaseKeepAliveRequest& req) {
  // Renewing twice is harmless, so a keepalive is retried like a read.
  const std::string body = etcdjson::ToJson(req);
  etcdserverpb::LeaseKeepAliveResponse resp;
  RETURN_IF_ERROR(WithFailover(this, &preferred_, "/v3/lease/keepalive",
                               CallKind::kRead, [&](net::HttpClient* c) {
                                 resp.Clear();
                                 return RunUnary(c, "/v3/lease/keepalive", body,
                                                 &resp, true);
                               }));
  if (resp.ttl() <= 0) {
    return Status(StatusCode::kNotFound,
                  "etcdserver: requested lease not found");
  }
  return resp;
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse> RemoteKV::LeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req) {
  return Unary<etcdserverpb::LeaseTimeToLiveResponse>("/v3/lease/timetolive",
                                                      req, CallKind::kRead);
}

StatusOr<etcdserverpb::LeaseLeasesResponse> RemoteKV::LeaseLeases(
    const etcdserverpb::LeaseLeasesRequest& req) {
  return Unary<etcdserverpb::LeaseLeasesResponse>("/v3/lease/leases", req,
                                                  CallKind::kRead);
}

StatusOr<etcdserverpb::StatusResponse> RemoteKV::MemberStatus() {
  return Unary<etcdserverpb::StatusResponse>(
      "/v3/maintenance/status", etcdserverpb::StatusRequest(), CallKind::kRead);
}

// ---------------------------------------------------------------------------
// RemoteWatch
//
// One thread per watch runs a /v3/watch stream to one endpoint at a time,
// and resumes it on the next endpoint when it breaks, by failover.h's
// WatchResumer (next_rev, dropped duplicates, compacted resume points).
//
// Duplex. A server that reads further requests while it streams answers
// (ours) gets progress requests on the watch stream itself. etcd 3.4's
// gateway is half-duplex over HTTP/1.1: Go's server writes the response
// head only after the request body has ended, and discards the rest of the
// body. The first stream to an endpoint therefore keeps its body open and
// waits duplex_probe for the `created` answer; if none comes, it ends the
// body (the answer then follows) and the endpoint is remembered as
// half-duplex: later streams end their body at once, and RequestProgress
// asks on a short side stream ({"progress_request":{}}), whose answer is
// delivered with etcd 3.4's own meaning (the member's current revision).

namespace {

class RemoteWatch : public Watch {
 public:
  RemoteWatch(RemoteKV* kv, etcdserverpb::WatchCreateRequest req,
              WatchCallback callback)
      : state_(std::make_shared<State>(std::move(req))) {
    state_->kv = kv;
    state_->callback = std::move(callback);
  }

  ~RemoteWatch() override {
    std::shared_ptr<net::HttpStream> stream, side;
    std::thread helper;
    {
      MutexLock l(&state_->mu);
      state_->stop = true;
      stream = state_->stream;
      side = state_->side_stream;
      helper = std::move(state_->helper);
    }
    if (stream) stream->Cancel();
    if (side) side->Cancel();
    state_->cv.notify_all();
    const auto self = std::this_thread::get_id();
    // Destroyed from its own callback: the thread sees `stop` as soon as the
    // callback returns and touches only the shared state.
    for (std::thread* t : {&thread_, &helper}) {
      if (!t->joinable()) continue;
      if (t->get_id() == self) {
        t->detach();
      } else {
        t->join();
      }
    }
  }

  void RequestProgress() override {
    std::shared_ptr<net::HttpStream> stream;
    size_t ep;
    {
      MutexLock l(&state_->mu);
      if (state_->stop) return;
      // Else asked on the next stream once it is created. (A ready stream
      // is set: both change together under `mu`.)
      if (!state_->progress.SendNow()) return;
      stream = state_->stream;
      ep = state_->stream_endpoint;
    }
    AskProgress(state_.get(), stream.get(), ep);
  }

  // Only a duplex endpoint (ours) answers on the watch stream itself, after
  // the events before its revision; etcd's half-duplex gateway answers on a
  // side stream, with its revision of the moment.
  bool ProgressOrdered() const override {
    MutexLock l(&state_->mu);
    return state_->kv->watch_duplex(state_->stream_endpoint) ==
           WatchDuplex::kFull;
  }

  Status Start() {
    std::shared_ptr<State> st = state_;
    thread_ = std::thread([st] { Run(st.get()); });
    return st->WaitStarted();
  }

 private:
  // The watch thread and the progress helper both deliver (one at a time:
  // WatchState::Deliver).
  struct State : WatchState {
    explicit State(etcdserverpb::WatchCreateRequest req)
        : WatchState(std::move(req)) {}

    RemoteKV* kv = nullptr;
    std::shared_ptr<net::HttpStream> stream GUARDED_BY(mu);
    size_t stream_endpoint GUARDED_BY(mu) = 0;
    // The side-stream progress request (half-duplex).
    std::thread helper GUARDED_BY(mu);
    bool helper_running GUARDED_BY(mu) = false;
    std::shared_ptr<net::HttpStream> side_stream GUARDED_BY(mu);
  };

  static void AskProgress(State* st, net::HttpStream* stream, size_t ep) {
    RemoteKV* kv = st->kv;
    if (kv->watch_duplex(ep) == WatchDuplex::kFull) {
      etcdserverpb::WatchRequest wr;
      wr.mutable_progress_request();
      if (!stream->Send(etcdjson::ToJson(wr)).ok()) {
        // The stream is breaking; ask again on the next one.
        MutexLock l(&st->mu);
        st->progress.SendFailed();
      }
      return;
    }
    MutexLock l(&st->mu);
    if (st->stop || st->helper_running) return;
    if (st->helper.joinable()) st->helper.join();  // finished earlier
    st->helper_running = true;
    st->helper = std::thread([st, ep] { SideProgress(st, ep); });
  }

  // Half-duplex endpoints: a progress request on a stream of its own.
  static void SideProgress(State* st, size_t ep) {
    RemoteKV* kv = st->kv;
    auto done = [st] {
      MutexLock l(&st->mu);
      st->helper_running = false;
      st->side_stream.reset();
    };
    std::unique_ptr<net::HttpClient> client = kv->pool(ep)->NewClient();
    auto opened = client->OpenStream("POST", "/v3/watch", JsonHeaders());
    if (!opened.ok()) return done();
    std::shared_ptr<net::HttpStream> stream(std::move(*opened));
    {
      MutexLock l(&st->mu);
      if (st->stop) {
        st->helper_running = false;
        return;
      }
      st->side_stream = stream;
    }
    etcdserverpb::WatchRequest wr;
    wr.mutable_progress_request();
    etcdserverpb::WatchResponse resp;
    bool got = false;
    if (stream->Send(etcdjson::ToJson(wr)).ok() && stream->CloseSend().ok()) {
      auto head = stream->ReadHead(kv->options().request_timeout);
      if (head.ok() && head->status == 200) {
        etcdjson::JsonObjectSplitter split;
        std::string chunk, object;
        Status err;
        while (!got) {
          chunk.clear();
          auto more = stream->Read(&chunk, kv->options().request_timeout);
          if (!more.ok() || !*more) break;
          split.Feed(chunk);
          if (split.Next(&object, &err)) {
            got = etcdjson::ParseStreamMessage(object, &resp).ok();
            break;
          }
          if (!err.ok()) break;
        }
      }
    }
    stream->Cancel();
    if (got) st->Deliver(resp);
    done();
  }

  static void Run(State* st) {
    RemoteKV* kv = st->kv;
    const RemoteKVOptions& o = kv->options();
    st->RunStreams(
        FailoverTiming{kv->clock(), o.call_timeout, o.retry_backoff,
                       o.max_retry_backoff},
        kv->endpoints(), kv->preferred_endpoint(),
        [](const Status& s) {
          return s.code() == StatusCode::kUnavailable ||
                 s.code() == StatusCode::kDeadlineExceeded ||
                 s.code() == StatusCode::kInternal ||
                 IsRetriableServerError(s) || IsConnectFailure(s);
        },
        [st](size_t ep, bool* progressed) {
          return RunStream(st, ep, progressed);
        });
  }

  // Runs one stream until it breaks. Returns why it ended.
  static Status RunStream(State* st, size_t ep, bool* progressed) {
    RemoteKV* kv = st->kv;
    std::unique_ptr<net::HttpClient> client = kv->pool(ep)->NewClient();
    net::HttpHeaders headers = JsonHeaders();
    // etcd's gateway passes this on as gRPC metadata: a member that loses
    // its leader then ends the stream instead of going silent.
    headers.Add("Grpc-Metadata-Hasleader", "true");
    StatusOr<std::unique_ptr<net::HttpStream>> opened =
        client->OpenStream("POST", "/v3/watch", headers);
    if (!opened.ok()) return opened.status();
    std::shared_ptr<net::HttpStream> stream(std::move(*opened));
    {
      MutexLock l(&st->mu);
      if (st->stop) return CancelledError("watch stopped");
      st->stream = stream;
      st->stream_endpoint = ep;
      st->progress.StreamChanged();
    }
    Status s = ReadStream(st, ep, stream.get(), progressed);
    {
      MutexLock l(&st->mu);
      st->stream.reset();
      st->progress.StreamChanged();
    }
    return s;
  }

  static Status ReadStream(State* st, size_t ep, net::HttpStream* stream,
                           bool* progressed) {
    RemoteKV* kv = st->kv;
    etcdserverpb::WatchRequest wr;
    *wr.mutable_create_request() = st->resumer.NextCreateRequest();
    RETURN_IF_ERROR(stream->Send(etcdjson::ToJson(wr)));
    StatusOr<net::HttpResponse> head = UnavailableError("no head");
    switch (kv->watch_duplex(ep)) {
      case WatchDuplex::kHalf:
        RETURN_IF_ERROR(stream->CloseSend());
        head = stream->ReadHead(kv->options().request_timeout);
        break;
      case WatchDuplex::kFull:
        head = stream->ReadHead(kv->options().request_timeout);
        break;
      case WatchDuplex::kUnknown:
        head = stream->ReadHead(kv->options().duplex_probe);
        if (head.ok()) {
          kv->set_watch_duplex(ep, WatchDuplex::kFull);
        } else if (head.status().code() == StatusCode::kDeadlineExceeded) {
          RETURN_IF_ERROR(stream->CloseSend());
          head = stream->ReadHead(kv->options().request_timeout);
          if (head.ok()) kv->set_watch_duplex(ep, WatchDuplex::kHalf);
        }
        break;
    }
    if (!head.ok()) return head.status();
    if (head->status != 200) {
      std::string body;
      for (;;) {
        StatusOr<bool> more = stream->Read(&body, seconds(5));
        if (!more.ok() || !*more) break;
      }
      return etcdjson::ErrorToStatus(head->status, body);
    }
    etcdjson::JsonObjectSplitter split;
    std::string chunk;
    std::string object;
    for (;;) {
      chunk.clear();
      StatusOr<bool> more = stream->Read(&chunk);
      if (!more.ok()) return more.status();
      if (!*more) return UnavailableError("watch stream ended by the server");
      split.Feed(chunk);
      Status err;
      while (split.Next(&object, &err)) {
        etcdserverpb::WatchResponse resp;
        RETURN_IF_ERROR(etcdjson::ParseStreamMessage(object, &resp));
        RETURN_IF_ERROR(st->HandleResponse(
            resp, progressed, [&] { AskProgress(st, stream, ep); }));
        if (st->resumer.finished()) return Status::Ok();
      }
      RETURN_IF_ERROR(err);
    }
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace

StatusOr<std::unique_ptr<Watch>> RemoteKV::StartWatch(
    const etcdserverpb::WatchCreateRequest& req, WatchCallback callback) {
  auto w = std::make_unique<RemoteWatch>(this, req, std::move(callback));
  RETURN_IF_ERROR(w->Start());
  return std::unique_ptr<Watch>(std::move(w));
}

}  // namespace kplane::storage
