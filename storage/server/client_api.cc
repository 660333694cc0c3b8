#include "storage/server/client_api.h"

#include <atomic>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <utility>

#include "base/base64.h"
#include "base/crc32c.h"
#include "base/log_throttle.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/prometheus_text.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/go_json_syntax.h"
#include "storage/etcdjson/json_stream.h"
#include "storage/mvcc/watch.h"
#include "storage/server/call_deadlines.h"
#include "storage/server/election_lock.h"
#include "storage/server/etcd_health.h"
#include "storage/server/gateway_content_type.h"
#include "storage/server/gateway_streams.h"
#include "storage/server/kv_service.h"
#include "storage/server/version.h"
#include "storage/server/watch_fragment.h"
#include "storage/server/watch_json.h"
#include "storage/server/watch_requests.h"

namespace kplane::storage {
namespace fs = std::filesystem;

namespace {

using net::HttpRequest;
using net::Responder;
using ResponderPtr = std::shared_ptr<Responder>;

const net::HttpHeaders& JsonHeaders() {
  static const net::HttpHeaders* h =
      new net::HttpHeaders{{"Content-Type", "application/json"}};
  return *h;
}

void RespondJson(Responder* r, const google::protobuf::Message& m) {
  r->Respond(200, JsonHeaders(), etcdjson::ToJson(m));
}

void RespondError(Responder* r, const Status& s) {
  etcdjson::HttpError e = etcdjson::StatusToError(s);
  r->Respond(e.http_status, JsonHeaders(), e.Body());
}

template <typename T>
void RespondResult(Responder* r, const StatusOr<T>& v) {
  if (v.ok()) {
    RespondJson(r, *v);
  } else {
    RespondError(r, v.status());
  }
}

// A KvService callback answering on `r`.
template <typename T>
Done<T> Answer(ResponderPtr r) {
  return [r = std::move(r)](StatusOr<T> v) { RespondResult(r.get(), v); };
}

// An error of the election and lock services: etcd's text as is, code
// Unknown (HTTP 500) but for the client's own cancel and deadline.
void RespondRecipeError(Responder* r, const Status& s) {
  etcdjson::HttpError e = RecipeErrorToHttp(s);
  r->Respond(e.http_status, JsonHeaders(), e.Body());
}

template <typename T>
Done<T> RecipeAnswer(ResponderPtr r) {
  return [r = std::move(r)](StatusOr<T> v) {
    if (v.ok()) {
      RespondJson(r.get(), *v);
    } else {
      RespondRecipeError(r.get(), v.status());
    }
  };
}

// The caller of an election or lock request (its Authorization header's
// token; "" while auth is disabled): false if the token is invalid,
// answered with etcd's recipe error (code Unknown) -- or, for Observe
// (`observe`), with an empty 200: etcd's observe ends its stream without
// an error when its first read fails.
bool RecipeCallerOf(ElectionLockService* el, const HttpRequest& req,
                    Responder* r, std::string* user, bool observe = false) {
  StatusOr<std::string> u = el->kv()->UserOf(req.headers.Get("Authorization"));
  if (!u.ok()) {
    if (observe) {
      r->Respond(200, JsonHeaders(), "");
    } else {
      RespondRecipeError(r, u.status());
    }
    return false;
  }
  *user = *std::move(u);
  return true;
}

// A waiting call ends when its client goes away (grpc-gateway cancels the
// call's context when the HTTP request's does).
void CancelOnClose(Responder* r, std::shared_ptr<PendingCall> p) {
  r->OnClose(
      [p = std::move(p)] { p->Cancel(CancelledError("context canceled")); });
}

// The client's deadline from grpc-gateway's `Grpc-Timeout` header: false
// (answered 400, as the gateway) if the header is there but malformed.
bool ReadDeadline(const HttpRequest& req, Responder* r, Clock* clock,
                  std::optional<TimePoint>* deadline) {
  std::string_view v = req.headers.Get("Grpc-Timeout");
  if (v.empty()) return true;
  std::optional<Duration> t = ParseGrpcTimeout(v);
  if (!t) {
    etcdjson::HttpError e{400, etcdjson::kGrpcInvalidArgument,
                          "invalid grpc-timeout: " + std::string(v)};
    r->Respond(400, JsonHeaders(), e.Body());
    return false;
  }
  *deadline = clock->Now() + *t;
  return true;
}

// Ends `p` when its client goes away or its deadline passes.
void BoundWait(Responder* r, const std::shared_ptr<PendingCall>& p,
               std::optional<TimePoint> deadline, CallDeadlines* deadlines) {
  if (deadline) deadlines->Add(*deadline, p);
  CancelOnClose(r, p);
}

// The caller of a gateway request: the token in its Authorization header
// (etcd's gateway passes it on as gRPC metadata). With auth disabled, or
// no header, "" at the cost of one atomic load. Answers etcd's error and
// returns false if the token is invalid.
bool CallerOf(StoreServer* s, const HttpRequest& req, Responder* r,
              std::string* user) {
  if (!s->auth()->enabled()) return true;  // the hot path: no header lookup
  StatusOr<std::string> u =
      s->auth()->ResolveToken(req.headers.Get("Authorization"));
  if (!u.ok()) {
    RespondError(r, u.status());
    return false;
  }
  *user = *std::move(u);
  return true;
}

// etcd's authMaintenanceServer: these need the root role; its errors are
// the auth package's, unconverted (code 2, "auth: permission denied").
bool AdminOf(StoreServer* s, const HttpRequest& req, Responder* r) {
  if (!s->auth()->enabled()) return true;
  Status st = s->auth()->CheckAdminToken(req.headers.Get("Authorization"));
  if (!st.ok()) RespondError(r, AuthMaintenanceError(st));
  return st.ok();
}

// etcd's checkMembershipOperationPermission: member add, remove and promote
// need the root role; the errors converted as etcd's cluster server does
// (403 code 7 "etcdserver: permission denied", 400 "user name is empty",
// 401 "invalid auth token").
bool MembershipAdminOf(StoreServer* s, const HttpRequest& req, Responder* r) {
  if (!s->auth()->enabled()) return true;
  Status st = s->auth()->CheckAdminToken(req.headers.Get("Authorization"));
  if (!st.ok()) RespondError(r, st);
  return st.ok();
}

// etcd accepts gRPC messages up to --max-request-bytes plus this much
// framing room (its grpcOverheadBytes); past that its gateway answers 429.
constexpr size_t kGrpcOverheadBytes = 512 * 1024;
size_t g_max_grpc_message_bytes = 1536 * 1024 + kGrpcOverheadBytes;

// Ends a streamed response with `s`: etcd's error answer if the response
// has not started, else grpc-gateway's in-stream error; then the connection
// closes (the rest of the request body is not read).
void RespondStreamError(Responder* r, bool started,
                        const etcdjson::HttpError& e) {
  if (!started) {
    r->Respond(e.http_status,
               {{"Content-Type", "application/json"}, {"Connection", "close"}},
               e.Body());
    return;
  }
  r->Write(e.StreamBody());
  r->Close();
}

// The request half of /v3/watch and /v3/lease/keepalive, read as etcd's
// gateway reads it: grpc-gateway runs one Go json.Decoder over the body,
// one Decode per request. The first request is decoded before the
// response starts; if it does not decode (or the body ends inside it),
// etcd answers HTTP 500, code 2, in the decoder's words. A later request
// that does not decode, or that the body's end cuts off, ends the request
// stream just as the body's end does: the gateway reads no further and
// closes its sending side, and the response stream goes on (a watch keeps
// delivering events; a keepalive stream ends cleanly). Measured with curl
// against etcd 3.4.23:
//
//   `xyz`                              500 "invalid character 'x' looking
//                                      for beginning of value"
//   `{"create_request":{"key":5}}`     500 "json: cannot unmarshal number
//                                      into Go value of type []uint8"
//   `{"create_request":{"key":"d2s="}` 500 "unexpected EOF"
//   `{"create_request":{"key":"d2s="}} xyz {...}`
//                                      the watch is created and delivers
//                                      events; `{...}` is never read
//
// The requests are JSON objects cut by etcdjson::JsonObjectSplitter, each
// decoded by etcdjson::ParseJson (the decoder of every other route). Where
// that differs from Go's decoder: a first value that is not an object is
// refused at its first byte (Go reads it whole: "json: cannot unmarshal
// array into Go value of type map[string]json.RawMessage" for a well-formed
// `[1]`, which is what this answers, but "unexpected EOF" for `[1`), and
// `null`, which etcd takes as an empty request, is refused in kplane's
// words.
//
// Not thread-safe: body callbacks run one at a time.
class StreamRequestReader {
 public:
  enum class Outcome {
    kReading,  // nothing for the caller to do (or done already)
    kEnded,    // the request stream ended; the response goes on
    kRefused,  // answer error() and end the response
  };

  StreamRequestReader() : splitter_(std::in_place, g_max_grpc_message_bytes) {}

  // Feeds one piece of the body. `handle` gets each decoded request in
  // order; returning false (it ended the response itself) stops the
  // reading. kEnded and kRefused are returned once; later calls read
  // nothing and return kReading.
  template <typename Req>
  Outcome Feed(std::string_view data, bool eof,
               const std::function<bool(const Req&)>& handle) {
    if (!splitter_) return Outcome::kReading;
    if (first_ && first_byte_ < 0) {
      for (char c : data) {
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
          first_byte_ = static_cast<unsigned char>(c);
          break;
        }
      }
    }
    splitter_->Feed(data);
    std::string obj;
    Status framing;
    while (splitter_->Next(&obj, &framing)) {
      Req req;
      Status s = etcdjson::ParseJson(obj, &req);
      if (!s.ok()) return Stop(s.message());
      first_ = false;
      if (!handle(req)) {
        splitter_.reset();
        return Outcome::kReading;
      }
    }
    // A request larger than g_max_grpc_message_bytes: etcd's 429 (code 8).
    if (framing.Is(StatusCode::kResourceExhausted)) {
      splitter_.reset();
      error_ = etcdjson::HttpError{429, etcdjson::kGrpcResourceExhausted,
                                   framing.message()};
      return Outcome::kRefused;
    }
    // Not an object where a request must start: only the first byte of
    // the body can be that while no request has been decoded.
    if (!framing.ok()) {
      return Stop(first_ ? FirstValueError(framing) : framing.message());
    }
    if (!eof) return Outcome::kReading;
    // Go's io.ErrUnexpectedEOF: the body ended inside an object.
    if (splitter_->buffered() > 0) return Stop("unexpected EOF");
    splitter_.reset();
    return Outcome::kEnded;
  }

  const etcdjson::HttpError& error() const { return error_; }

 private:
  // Reading stops at a request that does not decode: the first one is
  // refused with `message`, a later one ends the request stream.
  Outcome Stop(const std::string& message) {
    splitter_.reset();
    if (!first_) return Outcome::kEnded;
    error_ = etcdjson::HttpError{500, etcdjson::kGrpcUnknown, message};
    return Outcome::kRefused;
  }

  // Go's words for a body whose first value does not start with '{'.
  std::string FirstValueError(const Status& framing) const {
    const unsigned char c = static_cast<unsigned char>(first_byte_);
    const char* kind = nullptr;
    if (c == '[') {
      kind = "array";
    } else if (c == '"') {
      kind = "string";
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      kind = "number";
    } else if (c == 't' || c == 'f') {
      kind = "bool";
    } else if (c == 'n') {
      return framing.message();  // `null`: see the class comment
    }
    if (kind == nullptr) {
      return "invalid character " + etcdjson::GoQuoteChar(c) +
             " looking for beginning of value";
    }
    return std::string("json: cannot unmarshal ") + kind +
           " into Go value of type map[string]json.RawMessage";
  }

  // Reset once reading stops (what it buffered is dropped).
  std::optional<etcdjson::JsonObjectSplitter> splitter_;
  bool first_ = true;    // no request decoded yet
  int first_byte_ = -1;  // the body's first byte that is not white space
  etcdjson::HttpError error_;
};

// How etcd's gateway relays a call's error: a unary call's, or that of a
// stream refused at its start ({"error":{"grpc_code":...}}, grpc-gateway's
// stream error; etcd 3.4.23 answers a learner's refusal of /v3/watch,
// /v3/lease/keepalive, /v3/election/observe and /v3/maintenance/snapshot
// so, with 503).
enum class CallKind { kUnary, kStream };

// While this member is a learner, answers the learner refusal
// (StoreServer::RefuseIfLearner) and returns true; else answers nothing and
// returns false.
bool RefusedAsLearner(StoreServer* s, Responder* r, CallKind kind) {
  Status st = s->RefuseIfLearner();
  if (st.ok()) return false;
  etcdjson::HttpError e = etcdjson::StatusToError(st);
  if (kind == CallKind::kUnary) {
    r->Respond(e.http_status, JsonHeaders(), e.Body());
  } else {
    // The request body may still be coming (a watch's): the connection
    // is not reused.
    r->Respond(e.http_status,
               {{"Content-Type", "application/json"}, {"Connection", "close"}},
               e.StreamBody());
  }
  return true;
}

// Whether a learner serves `msg` (etcd's isRPCSupportedForLearner): a
// status request, or a serializable range.
bool IsRpcSupportedForLearner(const google::protobuf::Message& msg) {
  if (msg.GetDescriptor() == etcdserverpb::RangeRequest::descriptor()) {
    return static_cast<const etcdserverpb::RangeRequest&>(msg).serializable();
  }
  return msg.GetDescriptor() == etcdserverpb::StatusRequest::descriptor();
}

// Parses the request body; answers 400 (code 3) and returns false if it is
// not a valid message, or 429 (code 8) if it is larger than etcd's gRPC
// layer would accept. Then, as etcd's gateway makes its gRPC call only
// with a request it decoded, refuses it on a learner (RefusedAsLearner)
// unless a learner serves it.
bool ParseBody(StoreServer* s, const HttpRequest& req, Responder* r,
               google::protobuf::Message* msg,
               CallKind kind = CallKind::kUnary) {
  Status parsed = etcdjson::ParseJson(req.body, msg);
  if (!parsed.ok()) {
    etcdjson::HttpError e{400, etcdjson::kGrpcInvalidArgument,
                          parsed.message()};
    r->Respond(400, JsonHeaders(), e.Body());
    return false;
  }
  size_t size = msg->ByteSizeLong();
  if (size > g_max_grpc_message_bytes) {
    etcdjson::HttpError e{429, etcdjson::kGrpcResourceExhausted,
                          "grpc: received message larger than max (" +
                              std::to_string(size) + " vs. " +
                              std::to_string(g_max_grpc_message_bytes) + ")"};
    r->Respond(429, JsonHeaders(), e.Body());
    return false;
  }
  // On a voter, is_learner() is one atomic load (LocalMember).
  return !s->is_learner() || IsRpcSupportedForLearner(*msg) ||
         !RefusedAsLearner(s, r, kind);
}

// etcd's gateway answers unknown paths and wrong methods in plain text.
void RespondPlain(Responder* r, int status, const std::string& text) {
  r->Respond(status, {{"Content-Type", "text/plain; charset=utf-8"}},
             text + "\n");
}

class WatchSession;

// Runs the drains of watch sessions that have queued responses, on the
// server's workers. Ready sessions wait in one FIFO; at most kMaxTasks pool
// tasks take them kBatch at a time, and a task that finds more waiting after
// its batch re-submits itself behind the pool's other work (linearizable
// reads share the pool). So one put under a prefix that 1,000 streams watch
// costs the apply thread 1,000 FIFO appends and at most kMaxTasks task
// submissions, instead of 1,000 tasks.
//
// Example: sessions A, B, C become ready while no task runs: Schedule(A)
// starts task 1, Schedule(B) starts task 2 (kMaxTasks 2), Schedule(C) only
// appends. Task 1 takes [A B C] (a batch of up to kBatch), drains them,
// finds the FIFO empty and ends; task 2 finds it empty and ends.
//
// Thread-safety: Schedule may be called from any thread.
class WatchDrainer : public std::enable_shared_from_this<WatchDrainer> {
 public:
  static constexpr int kMaxTasks = 2;
  static constexpr size_t kBatch = 64;

  explicit WatchDrainer(StoreServer* server) : server_(server) {}

  WatchJsonEncoder* encoder() { return &encoder_; }

  // Queues `session` for one Drain(). The caller ensures a session is
  // queued at most once at a time (WatchSession::drain_scheduled_).
  void Schedule(std::shared_ptr<WatchSession> session);

 private:
  void Run();

  StoreServer* const server_;
  WatchJsonEncoder encoder_;
  // A leaf: sessions are drained after it is released.
  Mutex mu_;
  std::deque<std::shared_ptr<WatchSession>> ready_ GUARDED_BY(mu_);
  int tasks_ GUARDED_BY(mu_) = 0;
};

// One /v3/watch connection: its MVCC watch stream (up to the member's
// --max-watchers-per-stream watchers) and response writer.
class WatchSession : public std::enable_shared_from_this<WatchSession> {
 public:
  // `token`: the Authorization header, resolved again at each create (as
  // etcd's isWatchPermitted does behind its gateway): each watch needs READ
  // on its range, and a token that does not resolve (invalid, expired)
  // refuses the watch with that error while the session stays open.
  // `require_leader`: the request came with `Grpc-Metadata-Hasleader:
  // true` (etcd's "hasleader" metadata; leader_required_streams.h).
  WatchSession(StoreServer* server, std::shared_ptr<WatchDrainer> drainer,
               ResponderPtr r, std::string token, bool require_leader)
      : server_(server),
        drainer_(std::move(drainer)),
        r_(std::move(r)),
        token_(std::move(token)),
        require_leader_(require_leader),
        requests_(server, StoreServer::WatchProtocol::kJson) {}

  void Start() EXCLUDES(mu_) {
    std::weak_ptr<WatchSession> weak = shared_from_this();
    // A member whose data is suspect serves no watch either.
    StatusOr<StoreRef> store = server_->ReadStore();
    if (!store.ok()) {
      RespondError(r_.get(), store.status());
      return;
    }
    if (require_leader_ && server_->leader_id() == 0) {
      RespondStreamError(r_.get(), false, NoLeaderError());
      return;
    }
    {
      // Released before the responder's callbacks are set: they may run at
      // once (a closed connection, a body already read) and take it.
      MutexLock l(&mu_);
      if (require_leader_) {
        leader_stream_id_ = server_->leader_required_streams()->Add([weak] {
          if (auto self = weak.lock()) self->EndNoLeader();
        });
      }
      stream_ = (*store)->NewWatchStream();
      *store = StoreRef();  // the stream does not pin the store
      // Runs on the writer's thread for every write that queued responses
      // for this stream: it must stay cheap. While a drain is scheduled and
      // has not started, further notifications add nothing: that drain will
      // pop everything queued by then.
      stream_->SetNotify([weak] {
        if (auto self = weak.lock()) {
          if (!self->drain_scheduled_.exchange(true)) {
            WatchDrainer* d = self->drainer_.get();
            d->Schedule(std::move(self));
          }
        }
      });
    }
    // Drain() paces the stream to kPaceBytes of unsent output (plus one
    // drain's responses); this cap only backs that up. A client over it is
    // cut off and re-watches from its last revision.
    r_->SetMaxBufferedBytes(64 << 20);
    auto self = shared_from_this();
    r_->OnClose([self] {
      MutexLock l(&self->mu_);
      self->stream_.reset();
      if (self->leader_stream_id_ != 0) {
        self->server_->leader_required_streams()->Remove(
            self->leader_stream_id_);
      }
    });
    r_->OnBodyData(
        [self](std::string_view data, bool eof) { self->OnData(data, eof); });
  }

  // Writes every queued response, each its own chunk, with one
  // Responder::WriteChunks.
  // Unsent bytes of a watch stream past which Drain() leaves responses in
  // the MVCC stream's queue.
  static constexpr size_t kPaceBytes = 1 << 20;

  void Drain() EXCLUDES(mu_) {
    // Cleared before popping: a response queued after this point schedules
    // another drain (which may find nothing left), so none is stranded.
    drain_scheduled_.store(false);
    MutexLock l(&mu_);
    if (!stream_) return;
    if (r_->BufferedBytes() >= kPaceBytes) {
      // The client is behind: leave the responses in the stream's bounded
      // queue (once it is full its watchers become victims and re-read
      // from the log later, as etcd's do) and drain again once the client
      // has read half of what waits.
      std::weak_ptr<WatchSession> weak = weak_from_this();
      r_->OnDrained(kPaceBytes / 2, [weak] {
        if (auto self = weak.lock()) {
          if (!self->drain_scheduled_.exchange(true)) {
            WatchDrainer* d = self->drainer_.get();
            d->Schedule(std::move(self));
          }
        }
      });
      return;
    }
    // Read before popping: what was queued before the store closed goes
    // out before the end.
    const bool stopped = stream_->Stopped();
    items_.clear();
    if (stream_->PopAll(&items_) == 0) {
      if (stopped) EndStoreClosed();
      return;
    }
    etcdserverpb::ResponseHeader header;
    server_->FillHeader(&header);
    // One response per HTTP chunk, as etcd's gateway flushes each message
    // (clients such as OpenStack's etcd3gw parse one object per chunk and
    // lose the rest), all chunks in one send.
    std::string out;
    ends_.clear();
    for (const mvcc::WatchItem& item : items_) {
      if (!requests_.Fragments(item)) {
        drainer_->encoder()->Append(header, item, &out);
        ends_.push_back(out.size());
        continue;
      }
      // Created with fragment: each piece its own message (etcd's gateway
      // relays the gRPC stream's pieces one by one).
      for (const WatchItemPiece& piece : FragmentWatchItem(
               item, header,
               WatchFragmentLimit(server_->config().max_request_bytes))) {
        drainer_->encoder()->Append(header, piece.item, &out, piece.fragment);
        ends_.push_back(out.size());
      }
    }
    items_.clear();
    chunks_.clear();
    size_t begin = 0;
    for (size_t end : ends_) {
      chunks_.emplace_back(out.data() + begin, end - begin);
      begin = end;
    }
    StartIfNeeded();
    r_->WriteChunks(chunks_);
    if (stopped) EndStoreClosed();
  }

  static etcdjson::HttpError NoLeaderError() {
    return etcdjson::HttpError{503, etcdjson::kGrpcUnavailable,
                               std::string(kNoLeader)};
  }

  // The member has had no leader for three election timeouts (etcd's
  // monitorLeader cancels the stream): the client watches elsewhere.
  void EndNoLeader() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (!stream_) return;
    RespondStreamError(r_.get(), started_, NoLeaderError());
    started_ = true;
    stream_.reset();
  }

  // The store under the stream closed: grpc-gateway's in-stream error, and
  // the client watches again.
  void EndStoreClosed() REQUIRES(mu_) {
    RespondStreamError(r_.get(), started_,
                       etcdjson::HttpError{503, etcdjson::kGrpcUnavailable,
                                           std::string(kWatchStoreClosed)});
    started_ = true;
    stream_.reset();
  }

 private:
  void OnData(std::string_view data, bool eof) {
    StreamRequestReader::Outcome o = reader_.Feed<etcdserverpb::WatchRequest>(
        data, eof, [this](const etcdserverpb::WatchRequest& req) {
          Handle(req);
          return true;
        });
    // kEnded: the watch stream stays open after the requests end, as
    // etcd's (its gateway only stops reading the body).
    if (o == StreamRequestReader::Outcome::kRefused) {
      MutexLock l(&mu_);
      if (!stream_) return;  // ended already
      RespondStreamError(r_.get(), started_, reader_.error());
      started_ = true;
      stream_.reset();
    }
  }

  void StartIfNeeded() REQUIRES(mu_) {
    if (!started_) {
      r_->StartStream(200, JsonHeaders());
      started_ = true;
    }
  }

  // Writes one encoded response as one chunk.
  void WriteEncoded(std::string_view out) REQUIRES(mu_) {
    StartIfNeeded();
    r_->Write(out);
  }

  void Write(const etcdserverpb::WatchResponse& resp) REQUIRES(mu_) {
    std::string out;
    etcdjson::AppendStreamResult(resp, &out);
    WriteEncoded(out);
  }

  void Handle(const etcdserverpb::WatchRequest& req) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (!stream_) return;
    std::vector<etcdserverpb::WatchResponse> out;
    requests_.Handle(
        stream_.get(), req,
        [&] { return server_->auth()->ResolveToken(token_); }, &out);
    for (const auto& w : out) Write(w);
  }

  StoreServer* const server_;
  const std::shared_ptr<WatchDrainer> drainer_;
  ResponderPtr r_;
  const std::string token_;
  const bool require_leader_;
  StreamRequestReader reader_;  // body callbacks run one at a time
  std::atomic<bool> drain_scheduled_{false};
  // Held while reading the MVCC watch stream and writing the response;
  // taken before the stream's and the responder's own locks, never after.
  Mutex mu_;
  std::unique_ptr<mvcc::WatchStream> stream_ GUARDED_BY(mu_);
  std::vector<mvcc::WatchItem> items_ GUARDED_BY(mu_);    // reused
  std::vector<size_t> ends_ GUARDED_BY(mu_);              // reused
  std::vector<std::string_view> chunks_ GUARDED_BY(mu_);  // reused
  bool started_ GUARDED_BY(mu_) = false;
  LeaderRequiredStreams::Id leader_stream_id_ GUARDED_BY(mu_) = 0;
  WatchRequests requests_ GUARDED_BY(mu_);
};

void WatchDrainer::Schedule(std::shared_ptr<WatchSession> session) {
  bool submit = false;
  {
    MutexLock l(&mu_);
    ready_.push_back(std::move(session));
    if (tasks_ < kMaxTasks) {
      ++tasks_;
      submit = true;
    }
  }
  if (submit) server_->Submit([self = shared_from_this()] { self->Run(); });
}

void WatchDrainer::Run() {
  std::vector<std::shared_ptr<WatchSession>> batch;
  {
    MutexLock l(&mu_);
    while (!ready_.empty() && batch.size() < kBatch) {
      batch.push_back(std::move(ready_.front()));
      ready_.pop_front();
    }
    if (batch.empty()) {
      --tasks_;
      return;
    }
  }
  for (const auto& session : batch) session->Drain();
  batch.clear();
  {
    MutexLock l(&mu_);
    if (ready_.empty()) {
      --tasks_;
      return;
    }
  }
  server_->Submit([self = shared_from_this()] { self->Run(); });
}

// One /v3/lease/keepalive stream. Each request renews its lease, which
// waits for a proposal to apply: that runs on the store's workers
// (StoreServer::Submit, as the gRPC front's LeaseKeepAlive), one request
// per task and one task at a time per stream, so a stream's answers keep
// their order, its renewals queue behind other work fairly, and the HTTP
// workers only decode the body. Bounds: at most kPaceBytes of answers wait
// unsent (then renewing waits for the client to read, Responder::
// OnDrained); at most kMaxQueued decoded requests wait (the body is read
// as it arrives): past that the stream ends with etcd's 429 "etcdserver:
// too many requests".
//
// Thread-safety: body callbacks run one at a time; the renewals on the
// store's workers; mu_ orders them.
class KeepAliveSession : public std::enable_shared_from_this<KeepAliveSession> {
 public:
  static constexpr size_t kPaceBytes = 1 << 20;
  static constexpr size_t kMaxQueued = 16 * 1024;
  static constexpr int kRenewalsPerTask = 64;

  KeepAliveSession(StoreServer* server, std::shared_ptr<KvService> kv,
                   ResponderPtr r)
      : server_(server), kv_(std::move(kv)), r_(std::move(r)) {}

  void Start() {
    auto self = shared_from_this();
    // No lock: it may run inside a responder call made under mu_ (once
    // the server's pool has stopped).
    r_->OnClose([self] { self->closed_.store(true); });
    r_->OnBodyData(
        [self](std::string_view data, bool eof) { self->OnData(data, eof); });
  }

 private:
  void OnData(std::string_view data, bool eof) EXCLUDES(mu_) {
    StreamRequestReader::Outcome o =
        reader_.Feed<etcdserverpb::LeaseKeepAliveRequest>(
            data, eof, [this](const etcdserverpb::LeaseKeepAliveRequest& q) {
              bool submit;
              {
                MutexLock l(&mu_);
                if (EndedLocked()) return false;
                if (queue_.size() >= kMaxQueued) {
                  EndLocked(
                      etcdjson::HttpError{429, etcdjson::kGrpcResourceExhausted,
                                          "etcdserver: too many requests"});
                  return false;
                }
                queue_.push_back(q);
                submit = ScheduleLocked();
              }
              if (submit) SubmitRenewal();
              return true;
            });
    if (o == StreamRequestReader::Outcome::kReading) return;
    MutexLock l(&mu_);
    if (EndedLocked()) return;
    // After the answers to the requests before it.
    input_done_ = true;
    if (o == StreamRequestReader::Outcome::kRefused) error_ = reader_.error();
    if (!running_ && queue_.empty()) FinishLocked();
  }

  // True if the caller is to SubmitRenewal(), after releasing mu_ (Submit
  // runs the task inline when the pool refuses it).
  bool ScheduleLocked() REQUIRES(mu_) {
    if (running_ || paused_) return false;
    running_ = true;
    return true;
  }

  bool EndedLocked() const REQUIRES(mu_) { return ended_ || closed_.load(); }

  void SubmitRenewal() EXCLUDES(mu_) {
    server_->Submit([self = shared_from_this()] { self->RenewNext(); });
  }

  // Renews the queued requests in order and writes their answers, at most
  // kRenewalsPerTask of them, then hands the rest to another task: fair to
  // the pool's other work, and, once the pool has stopped and Submit runs
  // tasks inline, a bounded depth (kMaxQueued / kRenewalsPerTask).
  void RenewNext() EXCLUDES(mu_) {
    for (int renewed = 0; renewed < kRenewalsPerTask; ++renewed) {
      etcdserverpb::LeaseKeepAliveRequest q;
      bool pause;
      {
        MutexLock l(&mu_);
        if (EndedLocked()) return;
        if (queue_.empty()) {
          running_ = false;
          if (input_done_) FinishLocked();
          return;
        }
        pause = paused_ = r_->BufferedBytes() >= kPaceBytes;
        if (pause) {
          running_ = false;
        } else {
          q = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      if (pause) {
        // Registered without mu_: the callback may run inline once the
        // server's pool has stopped.
        r_->OnDrained(kPaceBytes / 2, [self = shared_from_this()] {
          bool submit = false;
          {
            MutexLock l(&self->mu_);
            self->paused_ = false;
            if (!self->EndedLocked()) submit = self->ScheduleLocked();
          }
          if (submit) self->SubmitRenewal();
        });
        return;
      }
      StatusOr<etcdserverpb::LeaseKeepAliveResponse> resp = kv_->KeepAlive(q);
      MutexLock l(&mu_);
      if (EndedLocked()) return;
      if (!resp.ok()) {
        // etcd ends the stream with the error (a lease that is merely
        // unreachable is not reported as gone).
        EndLocked(etcdjson::StatusToError(resp.status()));
        return;
      }
      out_.clear();
      etcdjson::AppendStreamResult(*resp, &out_);
      if (!started_) {
        r_->StartStream(200, JsonHeaders());
        started_ = true;
      }
      r_->Write(out_);
      if (queue_.empty()) {
        running_ = false;
        if (input_done_) FinishLocked();
        return;
      }
    }
    SubmitRenewal();  // behind the pool's other work
  }

  // The requests ended and every answer is written: etcd's keepalive
  // stream ends with its requests (the body's end, or a later request
  // that does not decode), or with the reader's refusal.
  void FinishLocked() REQUIRES(mu_) {
    if (error_) {
      EndLocked(*error_);
      return;
    }
    ended_ = true;
    if (started_) {
      r_->Finish();
    } else {
      r_->Respond(200, JsonHeaders(), "");
    }
  }

  void EndLocked(const etcdjson::HttpError& e) REQUIRES(mu_) {
    ended_ = true;
    queue_.clear();
    RespondStreamError(r_.get(), started_, e);
    started_ = true;
  }

  StoreServer* const server_;
  const std::shared_ptr<KvService> kv_;
  const ResponderPtr r_;
  StreamRequestReader reader_;  // body callbacks run one at a time
  Mutex mu_;  // taken before the responder's own locks, never after
  std::deque<etcdserverpb::LeaseKeepAliveRequest> queue_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;     // a RenewNext is scheduled
  bool paused_ GUARDED_BY(mu_) = false;      // waiting for OnDrained
  bool input_done_ GUARDED_BY(mu_) = false;  // no more requests
  bool started_ GUARDED_BY(mu_) = false;     // the response head is out
  bool ended_ GUARDED_BY(mu_) = false;       // answered
  std::atomic<bool> closed_{false};          // the exchange is over
  std::optional<etcdjson::HttpError> error_ GUARDED_BY(mu_);
  std::string out_ GUARDED_BY(mu_);  // reused
};

// The snapshot /v3/maintenance/snapshot streams, read from a checkpoint
// directory piece by piece (docs/store.md): "KPSNAP1\n", then for each file
// a 4-byte big-endian length, a storagepb.SnapshotFile header (name, size,
// CRC-32C) and the file's bytes. Open reads each file once for its header;
// Read then hands out the packed bytes in order, so what is in memory is one
// piece, not the snapshot. The checkpoint's files do not change (hard links
// to immutable SSTs, and copies); a file that did anyway fails Read.
//
// Example: a checkpoint with CURRENT (16 bytes) and 000005.sst (N bytes) is
// the segments ["KPSNAP1\n"] [len, header of CURRENT] [CURRENT's bytes]
// [len, header of 000005.sst] [000005.sst's bytes]; Read(64 KiB) walks them.
//
// Not thread-safe.
class PackedSnapshotReader {
 public:
  static StatusOr<std::unique_ptr<PackedSnapshotReader>> Open(
      const std::string& dir) {
    auto r = std::unique_ptr<PackedSnapshotReader>(new PackedSnapshotReader);
    r->segments_.push_back({.bytes = "KPSNAP1\n"});
    std::error_code ec;
    std::string buf(kReadBytes, '\0');
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      std::ifstream in(it->path(), std::ios::binary);
      if (!in) return InternalError("cannot read " + it->path().string());
      uint64_t size = 0;
      uint32_t crc = 0;
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const size_t n = static_cast<size_t>(in.gcount());
        crc = crc32c::Extend(crc, buf.data(), n);
        size += n;
      }
      storagepb::SnapshotFile h;
      h.set_name(fs::relative(it->path(), dir).string());
      h.set_size(size);
      h.set_crc32c(crc);
      std::string hb = h.SerializeAsString();
      const uint32_t n = static_cast<uint32_t>(hb.size());
      std::string head = {static_cast<char>(n >> 24),
                          static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                          static_cast<char>(n)};
      head += hb;
      r->segments_.push_back({.bytes = std::move(head)});
      r->segments_.push_back({.path = it->path(), .size = size});
    }
    if (ec) {
      return InternalError("cannot list snapshot " + dir + ": " + ec.message());
    }
    for (const Segment& seg : r->segments_) {
      r->size_ += seg.path.empty() ? seg.bytes.size() : seg.size;
    }
    return r;
  }

  uint64_t size() const { return size_; }

  // Appends the next min(n, what is left) bytes to *out.
  Status Read(size_t n, std::string* out) {
    while (n > 0 && index_ < segments_.size()) {
      const Segment& seg = segments_[index_];
      const uint64_t len = seg.path.empty() ? seg.bytes.size() : seg.size;
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(n, len - off_));
      if (seg.path.empty()) {
        out->append(seg.bytes, off_, take);
      } else {
        if (!in_.is_open()) {
          in_.open(seg.path, std::ios::binary);
          if (!in_) return InternalError("cannot read " + seg.path.string());
        }
        const size_t at = out->size();
        out->resize(at + take);
        in_.read(out->data() + at, static_cast<std::streamsize>(take));
        if (static_cast<size_t>(in_.gcount()) != take) {
          return InternalError("snapshot file " + seg.path.string() +
                               " changed while it was sent");
        }
      }
      off_ += take;
      n -= take;
      if (off_ == len) {
        if (in_.is_open()) in_.close();
        ++index_;
        off_ = 0;
      }
    }
    return Status::Ok();
  }

 private:
  static constexpr size_t kReadBytes = 1 << 20;
  // Bytes of the stream (`path` empty), or a file of `size` bytes.
  struct Segment {
    std::string bytes;
    fs::path path;
    uint64_t size = 0;
  };

  PackedSnapshotReader() = default;

  std::vector<Segment> segments_;
  uint64_t size_ = 0;
  size_t index_ = 0;  // the segment being read
  uint64_t off_ = 0;  // bytes of it read
  std::ifstream in_;  // the file of segments_[index_], once opened
};

// One /v3/maintenance/snapshot response: the packed snapshot as etcd's
// SnapshotResponse stream, one 64 KiB blob per message (the first with the
// header), each written only while the client keeps up: at most kPaceBytes
// wait unsent (plus one message), then the next blob waits for the client
// to take half of them (Responder::OnDrained), as /v3/watch paces itself.
// The checkpoint directory is removed when the exchange ends, however it
// ends. Owned by the responder's callbacks until then.
class SnapshotSender : public std::enable_shared_from_this<SnapshotSender> {
 public:
  static constexpr size_t kBlobBytes = 64 << 10;
  static constexpr size_t kPaceBytes = 1 << 20;

  SnapshotSender(StoreServer* server, ResponderPtr r, std::string dir,
                 std::unique_ptr<PackedSnapshotReader> reader,
                 metrics::Gauge* unsent)
      : server_(server),
        r_(std::move(r)),
        dir_(std::move(dir)),
        reader_(std::move(reader)),
        unsent_(unsent) {}

  void Start() EXCLUDES(mu_) {
    auto self = shared_from_this();
    r_->OnClose([self] { self->End(); });
    r_->StartStream(200, JsonHeaders());
    Pump();
  }

 private:
  void Pump() EXCLUDES(mu_) {
    // The responder's calls that may end the exchange (and run End, inline
    // once the server's pool has stopped) are made after mu_ is released.
    enum class Next { kWait, kFinish, kClose, kNothing } next = Next::kWait;
    {
      MutexLock l(&mu_);
      const uint64_t total = reader_->size();
      while (r_->BufferedBytes() < kPaceBytes) {
        if (closed_.load()) {
          next = Next::kNothing;
          break;
        }
        if (sent_ == total) {
          next = Next::kFinish;  // OnClose follows
          break;
        }
        etcdserverpb::SnapshotResponse resp;
        if (sent_ == 0) {
          server_->FillHeader(resp.mutable_header());
          resp.mutable_header()->set_revision(server_->CurrentRevision());
        }
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(kBlobBytes, total - sent_));
        if (Status st = reader_->Read(n, resp.mutable_blob()); !st.ok()) {
          LOG(WARNING) << "/v3/maintenance/snapshot cut short: " << st;
          next = Next::kClose;
          break;
        }
        sent_ += n;
        resp.set_remaining_bytes(total - sent_);
        out_.clear();
        etcdjson::AppendStreamResult(resp, &out_);
        if (!r_->Write(out_)) {
          next = Next::kNothing;  // closed: OnClose cleans up
          break;
        }
        Sample(r_->BufferedBytes());
      }
    }
    switch (next) {
      case Next::kWait:
        r_->OnDrained(kPaceBytes / 2,
                      [self = shared_from_this()] { self->Pump(); });
        break;
      case Next::kFinish:
        r_->Finish();
        break;
      case Next::kClose:
        r_->Close();
        break;
      case Next::kNothing:
        break;
    }
  }

  // Counts `unsent` in kplane_store_snapshot_unsent_bytes instead of the
  // last sample; after End, nothing.
  void Sample(size_t unsent) {
    const size_t before = sampled_.exchange(unsent);
    unsent_->Inc(static_cast<double>(unsent) - static_cast<double>(before));
    // End's exchange took either this sample or none: one of the two
    // takes it back.
    if (closed_.load()) unsent_->Dec(static_cast<double>(sampled_.exchange(0)));
  }

  // Takes no lock: it may run inside a responder call (see Pump). The
  // reader's open file stays readable after the directory is gone; a
  // Pump still running finds closed_ or a refused Write.
  void End() {
    closed_.store(true);
    unsent_->Dec(static_cast<double>(sampled_.exchange(0)));
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  StoreServer* const server_;
  const ResponderPtr r_;
  const std::string dir_;
  Mutex mu_;  // serializes Pump; taken before the responder's own locks
  const std::unique_ptr<PackedSnapshotReader> reader_ GUARDED_BY(mu_);
  metrics::Gauge* const unsent_;
  std::atomic<bool> closed_{false};    // the exchange is over
  std::atomic<size_t> sampled_{0};     // unsent at the last write
  uint64_t sent_ GUARDED_BY(mu_) = 0;  // bytes of the packed snapshot
  std::string out_ GUARDED_BY(mu_);    // reused
};

// Where /v3/maintenance/snapshot checks out its copies (save-N).
std::string SnapshotSaveRoot(StoreServer* s) {
  return s->config().data_dir + "/member/snap";
}

}  // namespace

ClientApi::ClientApi(StoreServer* server, metrics::Registry* metrics,
                     ClientApiOptions options)
    : server_(server),
      metrics_(metrics),
      options_(options),
      snapshot_unsent_(
          metrics
              ->NewGauge("kplane_store_snapshot_unsent_bytes",
                         "Bytes of /v3/maintenance/snapshot responses queued "
                         "for their clients and not yet sent (as each stream "
                         "saw it at its last write)")
              ->With({})) {
  // A crash during a snapshot leaves its copy behind (hard links that pin
  // deleted SSTs, and a name the next snapshot after a restart reuses).
  std::error_code ec;
  for (fs::directory_iterator it(SnapshotSaveRoot(server), ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with("save-")) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (rm) {
      LOG(WARNING) << "cannot remove the stale snapshot copy " << it->path()
                   << ": " << rm.message();
    } else {
      LOG(INFO) << "removed the stale snapshot copy " << it->path();
    }
  }
}

ClientApi::~ClientApi() {
  for (const auto& s : streams_) s->Shutdown();
}

void ClientApi::RegisterHandlers(net::HttpServer* http) {
  StoreServer* s = server_;
  g_max_grpc_message_bytes =
      static_cast<size_t>(s->config().max_request_bytes) + kGrpcOverheadBytes;
  // etcd's gateway reaches its member over one gRPC connection per
  // listener: --max-concurrent-streams bounds its requests in flight.
  std::shared_ptr<GatewayStreams> streams;
  if (options_.max_concurrent_streams > 0) {
    streams = std::make_shared<GatewayStreams>(
        GatewayStreams::Options{.limit = options_.max_concurrent_streams,
                                .max_wait = options_.max_stream_wait},
        s->config().clock,
        [s](std::function<void()> fn) { s->Submit(std::move(fn)); });
    streams_.push_back(streams);
  }
  // Every API path takes POST only; other methods get etcd's plain 405.
  auto both = [s, http, streams](const std::string& path, net::HttpHandler h,
                                 net::RouteOptions o = {}) {
    // Runs `h`, after waiting for a gateway stream if they are bounded.
    auto admit = [h, streams](ResponderPtr r) {
      const HttpRequest& req = r->request();  // before r moves
      if (!streams) {
        h(req, std::move(r));
        return;
      }
      // The wait for a stream ends at the client's deadline too.
      std::optional<TimePoint> deadline;
      if (std::optional<Duration> t =
              ParseGrpcTimeout(req.headers.Get("Grpc-Timeout"))) {
        deadline = streams->clock()->Now() + *t;
      }
      streams->Run(std::move(r), deadline, [h](ResponderPtr r) {
        const HttpRequest& req = r->request();
        h(req, std::move(r));
      });
    };
    net::HttpHandler post_only = [s, admit](const HttpRequest& req,
                                            ResponderPtr r) {
      if (req.method != "POST") {
        RespondPlain(r.get(), 405, "Method Not Allowed");
        return;
      }
      // No body a browser can send cross-site without a preflight
      // (gateway_content_type.h).
      if (Status st = CheckGatewayContentType(req.headers); !st.ok()) {
        etcdjson::HttpError e{415, etcdjson::kGrpcInvalidArgument,
                              st.message()};
        r->Respond(415, JsonHeaders(), e.Body());
        return;
      }
      // A token naming a raft index not applied here yet is waited for
      // without holding this thread (the I/O thread, for writes): the
      // request goes on on a worker once the index is applied or the wait
      // is over.
      if (s->auth()->enabled() &&
          s->auth()->DeferUntilTokenIndex(
              req.headers.Get("Authorization"),
              [s, admit, r] { s->Submit([admit, r] { admit(r); }); })) {
        return;
      }
      admit(std::move(r));
    };
    http->Handle("", "/v3" + path, post_only, o);
    http->Handle("", "/v3beta" + path, post_only, o);
  };
  for (const char* prefix : {"/v3/", "/v3beta/"}) {
    http->HandlePrefix("", prefix, [](const HttpRequest&, ResponderPtr r) {
      RespondPlain(r.get(), 404, "Not Found");
    });
  }

  // ---- KV ------------------------------------------------------------------
  // The requests take KvService, the path the gRPC front takes too.
  auto kv = std::make_shared<KvService>(s);
  both("/kv/range", [s, kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::RangeRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    std::string user;
    if (!CallerOf(s, req, r.get(), &user)) return;
    // The answer on an arena of its own, as the gRPC front's: its rows are
    // not freed one by one after the JSON is written.
    auto arena = std::make_shared<google::protobuf::Arena>();
    auto* resp =
        google::protobuf::Arena::CreateMessage<etcdserverpb::RangeResponse>(
            arena.get());
    kv->Range(
        std::move(q), resp,
        [r = std::move(r), arena = std::move(arena), resp](Status st) {
          if (st.ok()) {
            RespondJson(r.get(), *resp);
          } else {
            RespondError(r.get(), st);
          }
        },
        std::move(user));
  });
  // Writes run on the I/O thread (RouteOptions::run_on_io_thread): parsing
  // a small body and queueing the proposal never block, and a hop to a
  // worker would cost each request a thread wake-up. A large body is parsed
  // on the server's workers instead, so it does not hold up the other
  // connections of the I/O thread.
  auto write_route = [s, &both](const std::string& path, net::HttpHandler h) {
    constexpr size_t kInlineBodyBytes = 64 * 1024;
    both(path,
         [s, h](const HttpRequest& req, ResponderPtr r) {
           if (req.body.size() <= kInlineBodyBytes) {
             h(req, std::move(r));
           } else {
             s->Submit([h, r] { h(r->request(), r); });
           }
         },
         {.run_on_io_thread = true});
  };
  write_route("/kv/put", [s, kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::PutRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    std::string user;
    if (!CallerOf(s, req, r.get(), &user)) return;
    kv->Put(std::move(q), Answer<etcdserverpb::PutResponse>(r),
            std::move(user));
  });
  write_route("/kv/deleterange", [s, kv](const HttpRequest& req,
                                         ResponderPtr r) {
    etcdserverpb::DeleteRangeRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    std::string user;
    if (!CallerOf(s, req, r.get(), &user)) return;
    kv->DeleteRange(std::move(q), Answer<etcdserverpb::DeleteRangeResponse>(r),
                    std::move(user));
  });
  write_route("/kv/txn", [s, kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::TxnRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    std::string user;
    if (!CallerOf(s, req, r.get(), &user)) return;
    kv->Txn(std::move(q), Answer<etcdserverpb::TxnResponse>(r),
            std::move(user));
  });
  both("/kv/compaction", [kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::CompactionRequest q;
    std::string user;  // a token sent must be valid (etcd), none is needed
    if (!ParseBody(kv->server(), req, r.get(), &q) ||
        !CallerOf(kv->server(), req, r.get(), &user)) {
      return;
    }
    kv->Compact(std::move(q), Answer<etcdserverpb::CompactionResponse>(r));
  });

  // ---- watch ---------------------------------------------------------------
  auto drainer = std::make_shared<WatchDrainer>(s);
  both("/watch",
       [s, drainer](const HttpRequest& req, ResponderPtr r) {
         if (RefusedAsLearner(s, r.get(), CallKind::kStream)) return;
         std::make_shared<WatchSession>(
             s, drainer, std::move(r),
             std::string(req.headers.Get("Authorization")),
             RequiresLeader(req.headers.Get("Grpc-Metadata-Hasleader")))
             ->Start();
       },
       // The body is the watch's open-ended request stream: no deadline.
       {.stream_request_body = true, .body_timeout = Duration::zero()});

  // ---- leases --------------------------------------------------------------
  both("/lease/grant", [kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::LeaseGrantRequest q;
    std::string user;  // as compaction
    if (!ParseBody(kv->server(), req, r.get(), &q) ||
        !CallerOf(kv->server(), req, r.get(), &user)) {
      return;
    }
    kv->LeaseGrant(std::move(q), Answer<etcdserverpb::LeaseGrantResponse>(r));
  });
  auto revoke = [s, kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::LeaseRevokeRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    std::string user;
    if (!CallerOf(s, req, r.get(), &user)) return;
    kv->LeaseRevoke(std::move(q), Answer<etcdserverpb::LeaseRevokeResponse>(r),
                    std::move(user));
  };
  both("/lease/revoke", revoke);
  both("/kv/lease/revoke", revoke);
  auto ttl = [s, kv](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::LeaseTimeToLiveRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    std::string user;
    if (!CallerOf(s, req, r.get(), &user)) return;
    // It may wait for a linearizable read or ask the leader: on the
    // store's workers, not the HTTP server's.
    s->Submit([kv, q = std::move(q), user = std::move(user), r] {
      RespondResult(r.get(), kv->LeaseTimeToLive(q, user));
    });
  };
  both("/lease/timetolive", ttl);
  both("/kv/lease/timetolive", ttl);
  auto leases = [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::LeaseLeasesRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    RespondResult(r.get(), s->LeaseLeases(q));
  };
  both("/lease/leases", leases);
  both("/kv/lease/leases", leases);
  both("/lease/keepalive",
       [s, kv](const HttpRequest&, ResponderPtr r) {
         if (RefusedAsLearner(s, r.get(), CallKind::kStream)) return;
         std::make_shared<KeepAliveSession>(s, kv, std::move(r))->Start();
       },
       // An open-ended stream of keepalive requests: no body deadline.
       {.stream_request_body = true, .body_timeout = Duration::zero()});

  // ---- election and lock (etcd's v3election, v3lock) ------------------------
  // ElectionLockService runs them on KvService and the watch hub; a waiting
  // Lock or Campaign holds an MVCC watcher, no thread, until it is granted
  // or its client goes away.
  auto deadlines = std::make_shared<CallDeadlines>(s->config().clock);
  Clock* clock = s->config().clock;
  auto el = std::shared_ptr<ElectionLockService>(
      new ElectionLockService(kv.get()), [kv](ElectionLockService* p) {
        delete p;  // after the KvService it borrows (captured)
      });
  both("/lock/lock", [el, clock, deadlines](const HttpRequest& req,
                                            ResponderPtr r) {
    v3lockpb::LockRequest q;
    std::optional<TimePoint> deadline;
    std::string user;
    if (!ParseBody(el->kv()->server(), req, r.get(), &q) ||
        !ReadDeadline(req, r.get(), clock, &deadline) ||
        !RecipeCallerOf(el.get(), req, r.get(), &user)) {
      return;
    }
    auto p = el->Lock(std::move(q), RecipeAnswer<v3lockpb::LockResponse>(r),
                      std::move(user));
    BoundWait(r.get(), p, deadline, deadlines.get());
  });
  both("/lock/unlock", [el](const HttpRequest& req, ResponderPtr r) {
    v3lockpb::UnlockRequest q;
    std::string user;
    if (!ParseBody(el->kv()->server(), req, r.get(), &q) ||
        !RecipeCallerOf(el.get(), req, r.get(), &user)) {
      return;
    }
    el->Unlock(std::move(q), RecipeAnswer<v3lockpb::UnlockResponse>(r),
               std::move(user));
  });
  both("/election/campaign",
       [el, clock, deadlines](const HttpRequest& req, ResponderPtr r) {
         v3electionpb::CampaignRequest q;
         std::optional<TimePoint> deadline;
         std::string user;
         if (!ParseBody(el->kv()->server(), req, r.get(), &q) ||
             !ReadDeadline(req, r.get(), clock, &deadline) ||
             !RecipeCallerOf(el.get(), req, r.get(), &user)) {
           return;
         }
         auto p = el->Campaign(std::move(q),
                               RecipeAnswer<v3electionpb::CampaignResponse>(r),
                               std::move(user));
         BoundWait(r.get(), p, deadline, deadlines.get());
       });
  both("/election/proclaim", [el](const HttpRequest& req, ResponderPtr r) {
    v3electionpb::ProclaimRequest q;
    std::string user;
    if (!ParseBody(el->kv()->server(), req, r.get(), &q) ||
        !RecipeCallerOf(el.get(), req, r.get(), &user)) {
      return;
    }
    el->Proclaim(std::move(q), RecipeAnswer<v3electionpb::ProclaimResponse>(r),
                 std::move(user));
  });
  both("/election/leader", [el](const HttpRequest& req, ResponderPtr r) {
    v3electionpb::LeaderRequest q;
    std::string user;
    if (!ParseBody(el->kv()->server(), req, r.get(), &q) ||
        !RecipeCallerOf(el.get(), req, r.get(), &user)) {
      return;
    }
    el->Leader(std::move(q), RecipeAnswer<v3electionpb::LeaderResponse>(r),
               std::move(user));
  });
  both("/election/resign", [el](const HttpRequest& req, ResponderPtr r) {
    v3electionpb::ResignRequest q;
    std::string user;
    if (!ParseBody(el->kv()->server(), req, r.get(), &q) ||
        !RecipeCallerOf(el.get(), req, r.get(), &user)) {
      return;
    }
    el->Resign(std::move(q), RecipeAnswer<v3electionpb::ResignResponse>(r),
               std::move(user));
  });
  both("/election/observe",
       [el, clock, deadlines](const HttpRequest& req, ResponderPtr r) {
         v3electionpb::LeaderRequest q;
         std::optional<TimePoint> deadline;
         std::string user;
         if (!ParseBody(el->kv()->server(), req, r.get(), &q,
                        CallKind::kStream) ||
             !ReadDeadline(req, r.get(), clock, &deadline) ||
             !RecipeCallerOf(el.get(), req, r.get(), &user, /*observe=*/true)) {
           return;
         }
         // Touched only by the observer's callbacks, which run one at a time.
         auto started = std::make_shared<bool>(false);
         auto p = el->Observe(
             std::move(q),
             [r, started](const v3electionpb::LeaderResponse& resp) {
               std::string out;
               etcdjson::AppendStreamResult(resp, &out);
               // etcd's gateway sends the status line with the first message.
               if (!*started) {
                 r->StartStream(200, JsonHeaders());
                 *started = true;
               }
               r->Write(out);
             },
             [r, started](Status st) {
               if (!st.ok() && !*started) {
                 RespondRecipeError(r.get(), st);
               } else if (!st.ok()) {
                 r->Close();
               } else if (*started) {
                 r->Finish();
               } else {
                 r->Respond(200, JsonHeaders(), "");
               }
             },
             std::move(user));
         BoundWait(r.get(), p, deadline, deadlines.get());
       });

  // ---- maintenance ---------------------------------------------------------
  // The requests with no fields are decoded too: etcd's gateway refuses a
  // body that does not decode (400, code 3) before the call runs.
  both("/maintenance/status", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::StatusRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    RespondResult(r.get(), s->MemberStatus());
  });
  both("/maintenance/defragment", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::DefragmentRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    if (!AdminOf(s, req, r.get())) return;
    RespondResult(r.get(), s->Defragment());
  });
  // etcd's HashResponse, {header, hash}; etcd 3.4's gateway has no
  // /v3/maintenance/hashkv.
  both("/maintenance/hash", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::HashRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    if (!AdminOf(s, req, r.get())) return;
    RespondResult(r.get(), s->Hash());
  });
  both("/maintenance/alarm", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::AlarmRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    // A token sent must be valid: the auth package's error, unconverted.
    StatusOr<std::string> user =
        s->auth()->ResolveToken(req.headers.Get("Authorization"));
    if (!user.ok()) {
      RespondError(r.get(), AuthMaintenanceError(user.status()));
      return;
    }
    // No header, whatever the action (ClusterAdmin::Alarm): `{}` when no
    // alarm is raised, as etcd's.
    RespondResult(r.get(), s->Alarm(q));
  });
  both("/maintenance/transfer-leadership",
       [s](const HttpRequest& req, ResponderPtr r) {
         etcdserverpb::MoveLeaderRequest q;
         if (!ParseBody(s, req, r.get(), &q)) return;
         if (!AdminOf(s, req, r.get())) return;
         RespondResult(r.get(), s->MoveLeader(q));
       });
  metrics::Gauge* snapshot_unsent = snapshot_unsent_;
  both("/maintenance/snapshot", [s, snapshot_unsent](const HttpRequest& req,
                                                     ResponderPtr r) {
    etcdserverpb::SnapshotRequest q;
    if (!ParseBody(s, req, r.get(), &q, CallKind::kStream)) return;
    if (!AdminOf(s, req, r.get())) return;
    // A consistent copy of the store, packed as the peer snapshot stream
    // packs it (docs/store.md), sent as base64 blobs like etcd's, as fast
    // as the client takes them (SnapshotSender).
    static std::atomic<uint64_t> seq{0};
    std::string dir = SnapshotSaveRoot(s) + "/save-" + std::to_string(++seq);
    auto st = s->SaveSnapshot(dir);
    std::error_code ec;
    if (!st.ok()) {
      fs::remove_all(dir, ec);
      RespondError(r.get(), st.status());
      return;
    }
    StatusOr<std::unique_ptr<PackedSnapshotReader>> reader =
        PackedSnapshotReader::Open(dir);
    if (!reader.ok()) {
      fs::remove_all(dir, ec);
      RespondError(r.get(), reader.status());
      return;
    }
    std::make_shared<SnapshotSender>(s, std::move(r), std::move(dir),
                                     *std::move(reader), snapshot_unsent)
        ->Start();
  });

  // ---- auth ----------------------------------------------------------------
  // etcd's Auth service under grpc-gateway's paths; every request is
  // proposed and applied by every member (KvService::Auth).
  auto auth_route = [s, kv, &both]<typename Req, typename Resp>(
                        const std::string& path,
                        Req* (storagepb::AuthRequest::*field)()) {
    both(path, [s, kv, field](const HttpRequest& req, ResponderPtr r) {
      Req q;
      if (!ParseBody(s, req, r.get(), &q)) return;
      std::string user;
      if (!CallerOf(s, req, r.get(), &user)) return;
      storagepb::AuthRequest ar;
      *(ar.*field)() = std::move(q);
      kv->Auth<Resp>(std::move(ar), std::move(user), Answer<Resp>(r));
    });
  };
  namespace pb = etcdserverpb;
  using AR = storagepb::AuthRequest;
  auth_route.operator()<pb::AuthEnableRequest, pb::AuthEnableResponse>(
      "/auth/enable", &AR::mutable_enable);
  auth_route.operator()<pb::AuthDisableRequest, pb::AuthDisableResponse>(
      "/auth/disable", &AR::mutable_disable);
  auth_route.operator()<pb::AuthenticateRequest, pb::AuthenticateResponse>(
      "/auth/authenticate", &AR::mutable_authenticate);
  auth_route.operator()<pb::AuthUserAddRequest, pb::AuthUserAddResponse>(
      "/auth/user/add", &AR::mutable_user_add);
  auth_route.operator()<pb::AuthUserGetRequest, pb::AuthUserGetResponse>(
      "/auth/user/get", &AR::mutable_user_get);
  auth_route.operator()<pb::AuthUserListRequest, pb::AuthUserListResponse>(
      "/auth/user/list", &AR::mutable_user_list);
  auth_route.operator()<pb::AuthUserDeleteRequest, pb::AuthUserDeleteResponse>(
      "/auth/user/delete", &AR::mutable_user_delete);
  auth_route.operator()<pb::AuthUserChangePasswordRequest,
                        pb::AuthUserChangePasswordResponse>(
      "/auth/user/changepw", &AR::mutable_user_change_password);
  auth_route.
  operator()<pb::AuthUserGrantRoleRequest, pb::AuthUserGrantRoleResponse>(
      "/auth/user/grant", &AR::mutable_user_grant_role);
  auth_route.
  operator()<pb::AuthUserRevokeRoleRequest, pb::AuthUserRevokeRoleResponse>(
      "/auth/user/revoke", &AR::mutable_user_revoke_role);
  auth_route.operator()<pb::AuthRoleAddRequest, pb::AuthRoleAddResponse>(
      "/auth/role/add", &AR::mutable_role_add);
  auth_route.operator()<pb::AuthRoleGetRequest, pb::AuthRoleGetResponse>(
      "/auth/role/get", &AR::mutable_role_get);
  auth_route.operator()<pb::AuthRoleListRequest, pb::AuthRoleListResponse>(
      "/auth/role/list", &AR::mutable_role_list);
  auth_route.operator()<pb::AuthRoleDeleteRequest, pb::AuthRoleDeleteResponse>(
      "/auth/role/delete", &AR::mutable_role_delete);
  auth_route.operator()<pb::AuthRoleGrantPermissionRequest,
                        pb::AuthRoleGrantPermissionResponse>(
      "/auth/role/grant", &AR::mutable_role_grant_permission);
  auth_route.operator()<pb::AuthRoleRevokePermissionRequest,
                        pb::AuthRoleRevokePermissionResponse>(
      "/auth/role/revoke", &AR::mutable_role_revoke_permission);

  // ---- cluster -------------------------------------------------------------
  both("/cluster/member/list", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::MemberListRequest q;
    if (!ParseBody(s, req, r.get(), &q)) return;
    RespondResult(r.get(), s->MemberList());
  });
  both("/cluster/member/add", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::MemberAddRequest q;
    if (!ParseBody(s, req, r.get(), &q) ||
        !MembershipAdminOf(s, req, r.get())) {
      return;
    }
    RespondResult(r.get(), s->MemberAdd(q));
  });
  both("/cluster/member/remove", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::MemberRemoveRequest q;
    if (!ParseBody(s, req, r.get(), &q) ||
        !MembershipAdminOf(s, req, r.get())) {
      return;
    }
    RespondResult(r.get(), s->MemberRemove(q));
  });
  both("/cluster/member/update", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::MemberUpdateRequest q;
    if (!ParseBody(s, req, r.get(), &q) ||
        !MembershipAdminOf(s, req, r.get())) {
      return;
    }
    RespondResult(r.get(), s->MemberUpdate(q));
  });
  both("/cluster/member/promote", [s](const HttpRequest& req, ResponderPtr r) {
    etcdserverpb::MemberPromoteRequest q;
    if (!ParseBody(s, req, r.get(), &q) ||
        !MembershipAdminOf(s, req, r.get())) {
      return;
    }
    RespondResult(r.get(), s->MemberPromote(q));
  });

  // ---- health, version, metrics -------------------------------------------
  RegisterMetricsHandlers(http);
  // etcd's two fields, parseable as etcd's (version.h), then kplane's own.
  http->Handle("GET", "/version",
               [](const HttpRequest&, ResponderPtr r) {
                 r->Respond(200, JsonHeaders(),
                            std::string("{\"etcdserver\":\"") +
                                kEtcdServerVersion + "\",\"etcdcluster\":\"" +
                                kEtcdClusterVersion + "\",\"kplane\":\"" +
                                kKplaneVersion + "\"}");
               },
               {.run_on_io_thread = true});
}

void ClientApi::RegisterMetricsHandlers(net::HttpServer* http) {
  StoreServer* s = server_;
  // etcd 3.4's /health (checkHealth): {"health":"true"} with 200 or
  // {"health":"false"} with 503, byte for byte (etcd's e2e suite and
  // monitoring scripts match the body). Why it is unhealthy goes in a
  // header, X-Kplane-Health-Reason, and the log. The checks are in
  // StoreServer::CheckHealth; it waits up to a second for a linearizable
  // read, so it runs on a worker. ?exclude=NOSPACE (repeatable; etcd's
  // alarm names, others ignored) leaves those alarms out, as etcd's
  // getExcludedAlarms. Each answer counts in etcd's
  // etcd_server_health_success / _failures (etcd 3.4 does not count a
  // failure for an alarm; these do: a failed check is a failed check).
  // Anyone who can reach the port can ask, so the warning is logged at
  // most once per 10 s (etcd logs each).
  metrics::Counter* ok_count =
      metrics_
          ->NewCounter("etcd_server_health_success",
                       "The total number of successful "
                       "health checks")
          ->With({});
  metrics::Counter* failed_count =
      metrics_
          ->NewCounter("etcd_server_health_failures",
                       "The total number of failed "
                       "health checks")
          ->With({});
  std::shared_ptr<LogThrottle> warnings = health_warnings_;
  http->Handle(
      "", "/health",
      [s, ok_count, failed_count, warnings](const HttpRequest& req,
                                            ResponderPtr r) {
        if (RespondEtcdHealthToOtherMethods(req, *r)) return;
        std::vector<etcdserverpb::AlarmType> excluded;
        for (auto [it, end] = req.query.equal_range("exclude"); it != end;
             ++it) {
          etcdserverpb::AlarmType type;
          if (etcdserverpb::AlarmType_Parse(it->second, &type)) {
            excluded.push_back(type);
          }
        }
        StoreServer::Health h = s->CheckHealth(seconds(1), excluded);
        if (h.healthy) {
          ok_count->Inc();
          RespondEtcdHealth(*r, true);
          return;
        }
        failed_count->Inc();
        uint64_t more = 0;
        if (warnings->Allow(s->config().clock->Now(), &more)) {
          LOG(WARNING) << "/health false: " << h.reason
                       << LogThrottle::LeftOut(more, "failed checks");
        }
        RespondEtcdHealth(*r, false, h.reason);
      });
  metrics::Registry* reg = metrics_;
  http->Handle("GET", "/metrics", [reg](const HttpRequest&, ResponderPtr r) {
    r->Respond(200, {{"Content-Type", metrics::kTextFormatContentType}},
               reg->Render());
  });
}

}  // namespace kplane::storage
