#include "storage/grpc/grpc_front.h"

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "schemas/grpc/election_services.grpc.pb.h"
#include "schemas/grpc/lock_services.grpc.pb.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/bolt/etcd_backend.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/grpc/grpc_metrics.h"
#include "storage/grpc/write_queue.h"
#include "storage/mvcc/watch.h"
#include "storage/server/auth_store.h"
#include "storage/server/election_lock.h"
#include "storage/server/etcd_snapshot.h"
#include "storage/server/kv_service.h"
#include "storage/server/leader_required_streams.h"
#include "storage/server/watch_fragment.h"
#include "storage/server/watch_requests.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;
using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

// etcd's error for `s`: the text its rpctypes use and their gRPC code, the
// same mapping the JSON gateway answers with.
grpc::Status ToGrpc(const Status& s) {
  etcdjson::HttpError e = etcdjson::StatusToError(s);
  return grpc::Status(static_cast<grpc::StatusCode>(e.grpc_code), e.message);
}

template <typename T>
void Reply(ServerUnaryReactor* r, T* out, StatusOr<T> v) {
  if (v.ok()) {
    *out = *std::move(v);
    r->Finish(grpc::Status::OK);
  } else {
    r->Finish(ToGrpc(v.status()));
  }
}

// A unary call answered from `f()` (which may block: a linearizable wait,
// a proposal, a defragmentation) on the store server's workers, not on
// gRPC's callback threads.
template <typename T, typename F>
ServerUnaryReactor* OnWorker(StoreServer* s, CallbackServerContext* ctx,
                             T* resp, F f) {
  ServerUnaryReactor* r = ctx->DefaultReactor();
  s->Submit([r, resp, f = std::move(f)]() mutable { Reply(r, resp, f()); });
  return r;
}

// A unary call answered through KvService's `done`.
template <typename T>
std::function<void(StatusOr<T>)> ReplyTo(ServerUnaryReactor* r, T* resp) {
  return [r, resp](StatusOr<T> v) { Reply(r, resp, std::move(v)); };
}

// The token a call carries: gRPC metadata "token" (etcdctl, clientv3), or
// "authorization" (etcd's gateway key), as etcd's AuthInfoFromCtx.
std::string_view TokenIn(
    const std::multimap<grpc::string_ref, grpc::string_ref>& md) {
  for (const char* key : {"token", "authorization"}) {
    auto it = md.find(key);
    if (it != md.end()) return {it->second.data(), it->second.size()};
  }
  return {};
}

std::string_view TokenOf(const grpc::ServerContextBase* ctx) {
  return TokenIn(ctx->client_metadata());
}

// etcd's "hasleader" metadata (clientv3's WithRequireLeader).
bool CallRequiresLeader(const grpc::ServerContextBase* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("hasleader");
  return it != md.end() &&
         RequiresLeader(std::string_view(it->second.data(), it->second.size()));
}

// How etcd ends a stream that requires a leader on a member without one.
grpc::Status NoLeaderStatus() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(kNoLeader));
}

// ---- the learner refusal ----------------------------------------------------

// A unary call this member refuses while it is a learner
// (StoreServer::RefuseIfLearner: etcd's unary interceptor, which runs before
// any handler): null while it serves the call; else the call, finished with
// etcd's error. Every handler asks first (it or RefusedStreamAsLearner), but
// Status and a serializable Range; a new one must too. Not a gRPC
// interceptor: the experimental server interceptors cannot finish a call
// with a status, and a Range's exception needs its decoded request.
ServerUnaryReactor* RefusedAsLearner(StoreServer* s,
                                     CallbackServerContext* ctx) {
  kplane::Status st = s->RefuseIfLearner();
  if (st.ok()) return nullptr;
  ServerUnaryReactor* r = ctx->DefaultReactor();
  r->Finish(ToGrpc(st));
  return r;
}

// A streaming call refused at its start: finished at once, deleted when
// gRPC is done with it.
template <typename Reactor>
class RefusedStream final : public Reactor {
 public:
  explicit RefusedStream(grpc::Status st) { this->Finish(std::move(st)); }
  void OnDone() override { delete this; }
};

// As RefusedAsLearner, for a streaming call: etcd's stream interceptor
// refuses every stream on a learner (Watch, LeaseKeepAlive, Snapshot,
// Observe).
template <typename Reactor>
Reactor* RefusedStreamAsLearner(StoreServer* s) {
  kplane::Status st = s->RefuseIfLearner();
  if (st.ok()) return nullptr;
  return new RefusedStream<Reactor>(ToGrpc(st));
}

namespace gx = grpc::experimental;

// Holds a call whose token names a raft index this member has not applied
// yet until the index is applied or the wait is over
// (AuthStore::DeferUntilTokenIndex), without holding a gRPC thread: the
// call's handler then runs on a worker, where the token resolves without
// a wait. Its metadata arrives before the handler is called; an
// interceptor may Proceed later, from any thread.
class TokenIndexInterceptor final : public gx::Interceptor {
 public:
  explicit TokenIndexInterceptor(StoreServer* s) : s_(s) {}
  void Intercept(gx::InterceptorBatchMethods* b) override {
    StoreServer* s = s_;
    if (b->QueryInterceptionHookPoint(
            gx::InterceptionHookPoints::POST_RECV_INITIAL_METADATA) &&
        s->auth()->enabled() &&
        s->auth()->DeferUntilTokenIndex(
            TokenIn(*b->GetRecvInitialMetadata()),
            [s, b] { s->Submit([b] { b->Proceed(); }); })) {
      return;
    }
    b->Proceed();
  }

 private:
  StoreServer* const s_;
};

class TokenIndexFactory final : public gx::ServerInterceptorFactoryInterface {
 public:
  explicit TokenIndexFactory(StoreServer* s) : s_(s) {}
  gx::Interceptor* CreateServerInterceptor(gx::ServerRpcInfo*) override {
    return new TokenIndexInterceptor(s_);
  }

 private:
  StoreServer* const s_;
};

// The common names of the verified client certificates of the connections
// handed to gRPC over TLS, by the peer string gRPC gives their calls
// ("fd:<n>" for AddInsecureChannelFromFd). Process-wide: descriptor
// numbers are, so several fronts in one process (tests) share it safely.
// A number reused by a later connection is overwritten at its Adopt,
// before gRPC reads a byte of it.
class CertUsers {
 public:
  static CertUsers& Get() {
    static CertUsers* users = new CertUsers();
    return *users;
  }
  void Set(int fd, std::string common_name) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (common_name.empty()) {
      by_peer_.erase(Peer(fd));
    } else {
      by_peer_[Peer(fd)] = std::move(common_name);
    }
  }
  std::string Find(const std::string& peer) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    auto it = by_peer_.find(peer);
    return it == by_peer_.end() ? std::string() : it->second;
  }

 private:
  static std::string Peer(int fd) { return "fd:" + std::to_string(fd); }

  Mutex mu_;
  std::unordered_map<std::string, std::string> by_peer_ GUARDED_BY(mu_);
};

// The user a call acts as, as etcd's AuthInfoFromCtx: its token's user;
// without a token, the CN of the client certificate its connection
// verified (etcd's AuthInfoFromTLS, used with --client-cert-auth; here a
// certificate is only verified when the client CA requires one); else "".
// "" while auth is disabled.
// The rule of UserOfCall, from the call's token and peer (auth enabled).
StatusOr<std::string> UserOf(AuthStore* auth, std::string_view token,
                             const std::string& peer) {
  if (!token.empty()) return auth->ResolveToken(token);
  return CertUsers::Get().Find(peer);
}

StatusOr<std::string> UserOfCall(AuthStore* auth,
                                 const grpc::ServerContextBase* ctx) {
  if (!auth->enabled()) return std::string();
  return UserOf(auth, TokenOf(ctx), ctx->peer());
}

// What UserOfCall reads of a call, kept by a stream that resolves its
// caller again for each request (as etcd's watch stream does per create).
struct CallIdentity {
  explicit CallIdentity(const grpc::ServerContextBase* ctx)
      : token(TokenOf(ctx)), peer(ctx->peer()) {}
  StatusOr<std::string> User(AuthStore* auth) const {
    if (!auth->enabled()) return std::string();
    return UserOf(auth, token, peer);
  }
  const std::string token;
  const std::string peer;
};

// CheckAdmin for the caller of `ctx`; OK while auth is disabled.
Status CheckAdminCaller(AuthStore* auth, const grpc::ServerContextBase* ctx) {
  if (!auth->enabled()) return Status::Ok();
  StatusOr<std::string> user = UserOfCall(auth, ctx);
  return user.ok() ? auth->CheckAdmin(*user) : user.status();
}

// Resolves the caller of `ctx`; on an invalid token finishes `r` with
// etcd's error and returns false.
bool Caller(KvService* kv, CallbackServerContext* ctx, ServerUnaryReactor* r,
            std::string* user) {
  // The hot path: no metadata lookup while auth is disabled.
  if (!kv->server()->auth()->enabled()) return true;
  StatusOr<std::string> u = UserOfCall(kv->server()->auth(), ctx);
  if (!u.ok()) {
    r->Finish(ToGrpc(u.status()));
    return false;
  }
  *user = *std::move(u);
  return true;
}

// etcd's authMaintenanceServer: defragment, snapshot, hash, hash-kv and
// move-leader need the root role when auth is enabled.
// Their errors are the auth package's, unconverted, as etcd's.
Status CheckAdmin(StoreServer* s, const grpc::ServerContextBase* ctx) {
  if (!s->auth()->enabled()) return Status::Ok();
  return AuthMaintenanceError(CheckAdminCaller(s->auth(), ctx));
}

// etcd's checkMembershipOperationPermission: member add, remove and promote
// need the root role when auth is enabled (member list needs nothing). The
// errors are converted as etcd's cluster server converts them
// (PERMISSION_DENIED "etcdserver: permission denied", ...).
Status CheckMembershipAdmin(StoreServer* s,
                            const grpc::ServerContextBase* ctx) {
  if (!s->auth()->enabled()) return Status::Ok();
  return CheckAdminCaller(s->auth(), ctx);
}

// ---- server streams -------------------------------------------------------

// How a stream past its WriteQueue's bound ends.
grpc::Status TooManyQueued() {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "etcdserver: too many queued responses");
}

// ---- bidirectional streams ---------------------------------------------

// A bidirectional stream: Send() queues from any thread (WriteQueue); End()
// finishes the call after the write in flight. The reactor owns itself
// through `self_` until gRPC calls OnDone, so producers holding a weak_ptr
// can outlive the call safely: once the call is ending, Send() is a no-op.
template <typename Req, typename Resp>
class BidiStream : public grpc::ServerBidiReactor<Req, Resp>,
                   public std::enable_shared_from_this<BidiStream<Req, Resp>> {
 public:
  // Past this many queued bytes the client is too slow: the call ends
  // (RESOURCE_EXHAUSTED) and the client re-watches, as the JSON watch is
  // cut off at the same size.
  static constexpr size_t kMaxQueuedBytes = 64 << 20;

  // Starts the call: the first read.
  void Begin(std::shared_ptr<BidiStream> self) {
    self_ = std::move(self);
    ReadNext();
  }

  void Send(Resp resp) { Apply(writes_.Push(std::move(resp))); }

  void End(grpc::Status st) {
    if (writes_.End(std::move(st))) this->Finish(writes_.status());
  }
  // Ends with `st` once the responses already sent are written.
  void EndAfterSent(grpc::Status st) {
    if (writes_.End(std::move(st), /*after_queued=*/true)) {
      this->Finish(writes_.status());
    }
  }

 protected:
  // Handles one request; may Send(). Returns false to hold the next read
  // until it calls ReadNext() itself.
  virtual bool Handle(const Req& req) = 0;
  // The call is over (no more Send()s will be written).
  virtual void Closed() {}
  // The client closed its side (or the call broke) and nothing is being
  // handled. etcd's Watch keeps answering until the client cancels, so by
  // default nothing happens.
  virtual void ClientClosed() {}

  void ReadNext() {
    // No new operation once the call is ending.
    if (!writes_.ending()) this->StartRead(&req_);
  }

  // Bytes sent and not yet written to the client.
  size_t QueuedBytes() const { return writes_.queued_bytes(); }
  // A write reached the client (QueuedBytes() went down).
  virtual void Written() {}

 private:
  void Apply(const typename WriteQueue<Resp>::Step& step) {
    if (step.over) {
      End(TooManyQueued());
      return;
    }
    if (step.write) this->StartWrite(step.write);
    if (step.finish) this->Finish(writes_.status());
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      ClientClosed();
      return;
    }
    if (Handle(req_)) ReadNext();
  }

  void OnWriteDone(bool ok) override {
    Apply(writes_.WriteDone(ok));
    if (ok) Written();
  }

  void OnCancel() override { End(grpc::Status::CANCELLED); }

  void OnDone() override {
    Closed();
    self_.reset();  // may delete this
  }

  std::shared_ptr<BidiStream> self_;
  Req req_;  // the read in flight
  WriteQueue<Resp> writes_{kMaxQueuedBytes};
};

// One Watch call: an MVCC watch stream with up to the member's
// --max-watchers-per-stream watchers, as the JSON gateway's /v3/watch
// session (same answers, protobuf framing).
class WatchCall : public BidiStream<pb::WatchRequest, pb::WatchResponse> {
 public:
  // `caller`: who opened the call, resolved again at each create (as
  // etcd's isWatchPermitted does): each watch needs READ on its range, and
  // a token that no longer resolves (expired, its user's password changed)
  // refuses the watch with that error while the stream stays open.
  // `require_leader`: the call came with etcd's "hasleader" metadata
  // (leader_required_streams.h).
  WatchCall(StoreServer* s, CallIdentity caller, bool require_leader)
      : server_(s),
        caller_(std::move(caller)),
        require_leader_(require_leader),
        requests_(s, StoreServer::WatchProtocol::kGrpc) {}

  // Creates the MVCC stream; false (and the call ended) if the member
  // serves no reads, or has no leader and the call requires one.
  bool Open() {
    StatusOr<StoreRef> store = server_->ReadStore();
    if (!store.ok()) {
      End(ToGrpc(store.status()));
      return false;
    }
    std::weak_ptr<WatchCall> weak =
        std::static_pointer_cast<WatchCall>(BidiStream::shared_from_this());
    if (require_leader_) {
      if (server_->leader_id() == 0) {
        End(NoLeaderStatus());
        return false;
      }
      // Before the stream exists: an end from here on finds it (or finds
      // it closed).
      MutexLock l(&stream_mu_);
      leader_stream_id_ = server_->leader_required_streams()->Add([weak] {
        if (auto self = weak.lock()) self->EndNoLeader();
      });
    }
    MutexLock l(&stream_mu_);
    stream_ = (*store)->NewWatchStream();
    *store = StoreRef();  // the stream does not pin the store
    // Runs on the writer's thread: only schedules a drain.
    stream_->SetNotify([weak] {
      if (auto self = weak.lock()) self->ScheduleDrain();
    });
    return true;
  }

 private:
  // Unsent bytes of the call past which Drain() leaves responses in the
  // MVCC stream's bounded queue (as the JSON gateway's /v3/watch): a
  // client that does not read holds about this much here, and once that
  // queue is full its watchers become victims and re-read the log when it
  // catches up, as etcd's do. Without it each stream buffered up to its
  // 64 MiB cut-off.
  static constexpr size_t kPaceBytes = 1 << 20;

  void ScheduleDrain() {
    if (drain_scheduled_.exchange(true)) return;
    auto self =
        std::static_pointer_cast<WatchCall>(BidiStream::shared_from_this());
    server_->Submit([self = std::move(self)] { self->Drain(); });
  }

  void Written() override {
    // Paused and the client took half of what waited: drain again.
    if (paused_.load() && QueuedBytes() < kPaceBytes / 2 &&
        paused_.exchange(false)) {
      ScheduleDrain();
    }
  }

  void Drain() EXCLUDES(stream_mu_) {
    // Cleared before popping: a response queued after this point schedules
    // another drain, so none is stranded.
    drain_scheduled_.store(false);
    if (QueuedBytes() >= kPaceBytes) {
      // Paused first, then looked again: a write finishing in between
      // either sees the pause (and schedules the drain) or left less
      // queued for this look.
      paused_.store(true);
      if (QueuedBytes() >= kPaceBytes || !paused_.exchange(false)) return;
    }
    std::vector<mvcc::WatchItem> items;
    MutexLock l(&stream_mu_);
    if (!stream_) return;
    // Read before popping: what was queued before the store closed goes
    // out before the end.
    const bool stopped = stream_->Stopped();
    stream_->PopAll(&items);
    for (const mvcc::WatchItem& item : items) {
      if (!requests_.Fragments(item)) {
        pb::WatchResponse w = mvcc::ToWatchResponse(item);
        server_->FillHeader(w.mutable_header());
        Send(std::move(w));
        continue;
      }
      // Created with fragment: cut as etcd's sendFragments; the pieces
      // queue back to back (the stream's queued-bytes bound counts them).
      pb::ResponseHeader header;
      server_->FillHeader(&header);
      for (WatchItemPiece& piece : FragmentWatchItem(
               item, header,
               WatchFragmentLimit(server_->config().max_request_bytes))) {
        pb::WatchResponse w = mvcc::ToWatchResponse(piece.item);
        server_->FillHeader(w.mutable_header());
        w.set_fragment(piece.fragment);
        Send(std::move(w));
      }
    }
    if (stopped) {
      stream_.reset();
      EndAfterSent(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string(kWatchStoreClosed)));
    }
  }

  bool Handle(const pb::WatchRequest& req) override EXCLUDES(stream_mu_) {
    // Answers are sent under stream_mu_, as Drain() sends events: a new
    // watcher's "created" goes out before any of its events.
    MutexLock l(&stream_mu_);
    if (!stream_) return true;
    std::vector<pb::WatchResponse> out;
    requests_.Handle(
        stream_.get(), req, [&] { return caller_.User(server_->auth()); },
        &out);
    for (auto& w : out) Send(std::move(w));
    return true;
  }

  void Closed() override EXCLUDES(stream_mu_) {
    MutexLock l(&stream_mu_);
    stream_.reset();
    if (leader_stream_id_ != 0) {
      server_->leader_required_streams()->Remove(leader_stream_id_);
    }
  }

  // The member has had no leader for three election timeouts (etcd's
  // monitorLeader cancels the stream): the client watches elsewhere.
  void EndNoLeader() EXCLUDES(stream_mu_) {
    {
      MutexLock l(&stream_mu_);
      stream_.reset();
    }
    End(NoLeaderStatus());
  }

  StoreServer* const server_;
  const CallIdentity caller_;
  const bool require_leader_;
  LeaderRequiredStreams::Id leader_stream_id_ GUARDED_BY(stream_mu_) = 0;
  std::atomic<bool> drain_scheduled_{false};
  std::atomic<bool> paused_{false};  // Drain() left responses for Written()
  // Taken before BidiStream's own lock (Send), never after.
  Mutex stream_mu_;
  std::unique_ptr<mvcc::WatchStream> stream_ GUARDED_BY(stream_mu_);
  WatchRequests requests_ GUARDED_BY(stream_mu_);
};

// One LeaseKeepAlive call: each request renews its lease (a proposal,
// so it runs on the server's workers, in order).
class KeepAliveCall
    : public BidiStream<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse> {
 public:
  // `require_leader`: the call came with etcd's "hasleader" metadata
  // (clientv3's lessor sends it): as a watch, it is refused while the
  // member has no leader and ends once it has had none for a while
  // (leader_required_streams.h), so the client renews through another.
  KeepAliveCall(KvService* kv, bool require_leader)
      : kv_(kv), require_leader_(require_leader) {}

  // False (and the call ended) if it requires a leader the member lacks.
  bool Open() EXCLUDES(mu_) {
    if (!require_leader_) return true;
    StoreServer* s = kv_->server();
    if (s->leader_id() == 0) {
      End(NoLeaderStatus());
      return false;
    }
    std::weak_ptr<KeepAliveCall> weak =
        std::static_pointer_cast<KeepAliveCall>(shared_from_this());
    MutexLock l(&mu_);
    leader_stream_id_ = s->leader_required_streams()->Add([weak] {
      if (auto self = weak.lock()) self->End(NoLeaderStatus());
    });
    return true;
  }

 private:
  void Closed() override EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (leader_stream_id_ != 0) {
      kv_->server()->leader_required_streams()->Remove(leader_stream_id_);
    }
  }

  bool Handle(const pb::LeaseKeepAliveRequest& req) override {
    // Renewing waits for the apply, which gRPC's callback threads must
    // not; the next read starts after the answer, so a stream's requests
    // are answered in order.
    auto self = std::static_pointer_cast<KeepAliveCall>(shared_from_this());
    kv_->server()->Submit([self, req] {
      StatusOr<pb::LeaseKeepAliveResponse> resp = self->kv_->KeepAlive(req);
      if (!resp.ok()) {
        // etcd's leaseKeepAlive returns the error, ending the stream (after
        // the answers it sent); the client opens another.
        self->EndAfterSent(ToGrpc(resp.status()));
        return;
      }
      self->Send(*std::move(resp));
      self->ReadNext();
    });
    return false;
  }

  // etcd's leaseKeepAlive returns at the client's end of stream: the call
  // ends OK once the answers sent so far are written. (The next read only
  // starts after the last answer was queued.)
  void ClientClosed() override { EndAfterSent(grpc::Status::OK); }

  KvService* const kv_;
  const bool require_leader_;
  Mutex mu_;
  LeaderRequiredStreams::Id leader_stream_id_ GUARDED_BY(mu_) = 0;
};

// ---- services -------------------------------------------------------------

// A call's request and response on one protobuf arena, freed with it when
// gRPC releases the call. For Range: a KeyValue and its two strings are
// carved from the arena's few blocks instead of three heap objects per row
// each freed on its own (a 1,000-key answer's destructor was ~15 % of the
// member's CPU for such ranges; the strings' character buffers stay on the
// heap, protobuf 3.21 allocates those with `new`).
template <typename Req, typename Resp>
class ArenaMessages final : public grpc::MessageAllocator<Req, Resp> {
 public:
  grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    return new Holder();
  }

 private:
  class Holder final : public grpc::MessageHolder<Req, Resp> {
   public:
    Holder() {
      this->set_request(google::protobuf::Arena::CreateMessage<Req>(&arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Resp>(&arena_));
    }
    void Release() override { delete this; }

   private:
    google::protobuf::Arena arena_;
  };
};

class KvImpl final : public pb::KV::CallbackService {
 public:
  explicit KvImpl(KvService* kv) : kv_(kv) {
    SetMessageAllocatorFor_Range(&range_messages_);
  }

  ServerUnaryReactor* Range(CallbackServerContext* ctx,
                            const pb::RangeRequest* req,
                            pb::RangeResponse* resp) override {
    // A learner serves serializable ranges only (etcd's
    // isRPCSupportedForLearner).
    if (!req->serializable()) {
      if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    }
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    // The answer is built in `resp`, on the call's arena (a move into it
    // from a heap message would copy every row).
    kv_->Range(
        *req, resp,
        [r](Status st) { r->Finish(st.ok() ? grpc::Status::OK : ToGrpc(st)); },
        std::move(user));
    return r;
  }
  ServerUnaryReactor* Put(CallbackServerContext* ctx, const pb::PutRequest* req,
                          pb::PutResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    kv_->Put(*req, ReplyTo(r, resp), std::move(user));
    return r;
  }
  ServerUnaryReactor* DeleteRange(CallbackServerContext* ctx,
                                  const pb::DeleteRangeRequest* req,
                                  pb::DeleteRangeResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    kv_->DeleteRange(*req, ReplyTo(r, resp), std::move(user));
    return r;
  }
  ServerUnaryReactor* Txn(CallbackServerContext* ctx, const pb::TxnRequest* req,
                          pb::TxnResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    kv_->Txn(*req, ReplyTo(r, resp), std::move(user));
    return r;
  }
  ServerUnaryReactor* Compact(CallbackServerContext* ctx,
                              const pb::CompactionRequest* req,
                              pb::CompactionResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    // No permission is needed, but a token that is sent must be valid (etcd
    // checks it on every proposal).
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    kv_->Compact(*req, ReplyTo(r, resp));
    return r;
  }

 private:
  KvService* const kv_;
  ArenaMessages<pb::RangeRequest, pb::RangeResponse> range_messages_;
};

class WatchImpl final : public pb::Watch::CallbackService {
 public:
  explicit WatchImpl(StoreServer* s) : server_(s) {}

  grpc::ServerBidiReactor<pb::WatchRequest, pb::WatchResponse>* Watch(
      CallbackServerContext* ctx) override {
    if (auto* refused = RefusedStreamAsLearner<
            grpc::ServerBidiReactor<pb::WatchRequest, pb::WatchResponse>>(
            server_)) {
      return refused;
    }
    // Sent with the first response: our progress answers are ordered.
    ctx->AddInitialMetadata(kOrderedProgressMetadata, "1");
    auto call = std::make_shared<WatchCall>(server_, CallIdentity(ctx),
                                            CallRequiresLeader(ctx));
    call->Open();  // on failure the call has ended; OnDone releases it
    call->Begin(call);
    return call.get();
  }

 private:
  StoreServer* const server_;
};

class LeaseImpl final : public pb::Lease::CallbackService {
 public:
  explicit LeaseImpl(KvService* kv) : kv_(kv), s_(kv->server()) {}

  ServerUnaryReactor* LeaseGrant(CallbackServerContext* ctx,
                                 const pb::LeaseGrantRequest* req,
                                 pb::LeaseGrantResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;  // as Compact: only the token's validity is checked
    if (!Caller(kv_, ctx, r, &user)) return r;
    kv_->LeaseGrant(*req, ReplyTo(r, resp));
    return r;
  }
  ServerUnaryReactor* LeaseRevoke(CallbackServerContext* ctx,
                                  const pb::LeaseRevokeRequest* req,
                                  pb::LeaseRevokeResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    kv_->LeaseRevoke(*req, ReplyTo(r, resp), std::move(user));
    return r;
  }
  grpc::ServerBidiReactor<pb::LeaseKeepAliveRequest,
                          pb::LeaseKeepAliveResponse>*
  LeaseKeepAlive(CallbackServerContext* ctx) override {
    if (auto* refused = RefusedStreamAsLearner<grpc::ServerBidiReactor<
            pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse>>(s_)) {
      return refused;
    }
    auto call = std::make_shared<KeepAliveCall>(kv_, CallRequiresLeader(ctx));
    call->Open();  // on failure the call has ended; OnDone releases it
    call->Begin(call);
    return call.get();
  }
  ServerUnaryReactor* LeaseTimeToLive(
      CallbackServerContext* ctx, const pb::LeaseTimeToLiveRequest* req,
      pb::LeaseTimeToLiveResponse* resp) override {
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused;
    ServerUnaryReactor* r = ctx->DefaultReactor();
    std::string user;
    if (!Caller(kv_, ctx, r, &user)) return r;
    KvService* kv = kv_;
    s_->Submit([r, resp, kv, req, user = std::move(user)] {
      Reply(r, resp, kv->LeaseTimeToLive(*req, user));
    });
    return r;
  }
  ServerUnaryReactor* LeaseLeases(CallbackServerContext* ctx,
                                  const pb::LeaseLeasesRequest* req,
                                  pb::LeaseLeasesResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    return OnWorker(s, ctx, resp, [s, req] { return s->LeaseLeases(*req); });
  }

 private:
  KvService* const kv_;
  StoreServer* const s_;
};

class ClusterImpl final : public pb::Cluster::CallbackService {
 public:
  explicit ClusterImpl(StoreServer* s) : s_(s) {}

  ServerUnaryReactor* MemberAdd(CallbackServerContext* ctx,
                                const pb::MemberAddRequest* req,
                                pb::MemberAddResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckMembershipAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, req, allowed]() -> StatusOr<pb::MemberAddResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->MemberAdd(*req);
                    });
  }
  ServerUnaryReactor* MemberRemove(CallbackServerContext* ctx,
                                   const pb::MemberRemoveRequest* req,
                                   pb::MemberRemoveResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckMembershipAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, req, allowed]() -> StatusOr<pb::MemberRemoveResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->MemberRemove(*req);
                    });
  }
  ServerUnaryReactor* MemberUpdate(CallbackServerContext* ctx,
                                   const pb::MemberUpdateRequest* req,
                                   pb::MemberUpdateResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckMembershipAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, req, allowed]() -> StatusOr<pb::MemberUpdateResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->MemberUpdate(*req);
                    });
  }
  ServerUnaryReactor* MemberList(CallbackServerContext* ctx,
                                 const pb::MemberListRequest*,
                                 pb::MemberListResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    return OnWorker(s, ctx, resp, [s] { return s->MemberList(); });
  }
  ServerUnaryReactor* MemberPromote(CallbackServerContext* ctx,
                                    const pb::MemberPromoteRequest* req,
                                    pb::MemberPromoteResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckMembershipAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, req, allowed]() -> StatusOr<pb::MemberPromoteResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->MemberPromote(*req);
                    });
  }

 private:
  StoreServer* const s_;
};

// Builds the snapshot on a worker, then writes it one blob at a time (gRPC
// allows one write in flight; each OnWriteDone starts the next). Owns
// itself until OnDone.
class SnapshotStream final
    : public grpc::ServerWriteReactor<pb::SnapshotResponse> {
 public:
  static constexpr size_t kBlobSize = 32 * 1024;  // etcd's send buffer

  SnapshotStream(StoreServer* s, Status allowed) {
    if (!allowed.ok()) {
      Finish(ToGrpc(allowed));
      return;
    }
    s->Submit([this, s] {
      StatusOr<std::string> db = EtcdSnapshotDb(s);
      if (!db.ok()) {
        Finish(ToGrpc(db.status()));
        return;
      }
      db_ = *std::move(db);
      sha_ = bolt::Sha256(db_);
      Next();
    });
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "snapshot cancelled"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (sent_ < db_.size()) {
      size_t n = std::min(kBlobSize, db_.size() - sent_);
      resp_.set_blob(db_.substr(sent_, n));
      sent_ += n;
      resp_.set_remaining_bytes(db_.size() - sent_);
      StartWrite(&resp_);
    } else if (!sha_sent_) {
      sha_sent_ = true;
      resp_.set_blob(sha_);
      resp_.set_remaining_bytes(0);
      StartWrite(&resp_);
    } else {
      Finish(grpc::Status::OK);
    }
  }

  // Touched by the worker, then only by the one write in flight's
  // OnWriteDone: never concurrently.
  std::string db_, sha_;
  size_t sent_ = 0;
  bool sha_sent_ = false;
  pb::SnapshotResponse resp_;
};

class MaintenanceImpl final : public pb::Maintenance::CallbackService {
 public:
  explicit MaintenanceImpl(StoreServer* s) : s_(s) {}

  ServerUnaryReactor* Alarm(CallbackServerContext* ctx,
                            const pb::AlarmRequest* req,
                            pb::AlarmResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    // A token that is sent must be valid; the error is the auth package's,
    // unconverted (etcd's maintenance server).
    StatusOr<std::string> user = UserOfCall(s->auth(), ctx);
    kplane::Status valid = AuthMaintenanceError(user.status());
    return OnWorker(s, ctx, resp,
                    [s, req, valid]() -> StatusOr<pb::AlarmResponse> {
                      RETURN_IF_ERROR(valid);
                      return s->Alarm(*req);
                    });
  }
  ServerUnaryReactor* Status(CallbackServerContext* ctx,
                             const pb::StatusRequest*,
                             pb::StatusResponse* resp) override {
    StoreServer* s = s_;
    return OnWorker(s, ctx, resp, [s] { return s->MemberStatus(); });
  }
  ServerUnaryReactor* Defragment(CallbackServerContext* ctx,
                                 const pb::DefragmentRequest*,
                                 pb::DefragmentResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, allowed]() -> StatusOr<pb::DefragmentResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->Defragment();
                    });
  }
  // See ClusterAdmin::Hash (the same answer as /v3/maintenance/hash).
  ServerUnaryReactor* Hash(CallbackServerContext* ctx, const pb::HashRequest*,
                           pb::HashResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckAdmin(s, ctx);
    return OnWorker(s, ctx, resp, [s, allowed]() -> StatusOr<pb::HashResponse> {
      RETURN_IF_ERROR(allowed);
      return s->Hash();
    });
  }
  ServerUnaryReactor* HashKV(CallbackServerContext* ctx,
                             const pb::HashKVRequest* req,
                             pb::HashKVResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, req, allowed]() -> StatusOr<pb::HashKVResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->HashKV(req->revision());
                    });
  }
  ServerUnaryReactor* MoveLeader(CallbackServerContext* ctx,
                                 const pb::MoveLeaderRequest* req,
                                 pb::MoveLeaderResponse* resp) override {
    if (auto* refused = RefusedAsLearner(s_, ctx)) return refused;
    StoreServer* s = s_;
    kplane::Status allowed = CheckAdmin(s, ctx);
    return OnWorker(s, ctx, resp,
                    [s, req, allowed]() -> StatusOr<pb::MoveLeaderResponse> {
                      RETURN_IF_ERROR(allowed);
                      return s->MoveLeader(*req);
                    });
  }
  // etcd's snapshot stream: the database in etcd 3.4's backend format
  // (etcd_snapshot.h) in 32 KiB blobs with the bytes still to come, then
  // its sha256 in a last message (remaining_bytes 0), as etcd's
  // maintenanceServer.Snapshot sends them; no header, as etcd.
  grpc::ServerWriteReactor<pb::SnapshotResponse>* Snapshot(
      CallbackServerContext* ctx, const pb::SnapshotRequest*) override {
    if (auto* refused = RefusedStreamAsLearner<
            grpc::ServerWriteReactor<pb::SnapshotResponse>>(s_)) {
      return refused;
    }
    return new SnapshotStream(s_, CheckAdmin(s_, ctx));
  }

 private:
  StoreServer* const s_;
};

// ---- election and lock ------------------------------------------------------

namespace epb = v3electionpb;
namespace lpb = v3lockpb;

// An error of the election and lock services, as etcd's servers return
// their embedded client's errors (code Unknown, etcd's text).
grpc::Status RecipeToGrpc(const Status& s) {
  etcdjson::HttpError e = RecipeErrorToHttp(s);
  return grpc::Status(static_cast<grpc::StatusCode>(e.grpc_code), e.message);
}

// The waiting call of a unary RPC, shared by the reactor and the handler:
// the client's cancel, or its deadline (gRPC cancels the call once it
// passes), ends the wait whether it comes before or after the wait began.
class CancelLink {
 public:
  void Attach(std::shared_ptr<PendingCall> p, Status if_cancelled)
      EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (!cancelled_) {
        pending_ = std::move(p);
        return;
      }
    }
    p->Cancel(std::move(if_cancelled));
  }
  void Cancel(Status why) EXCLUDES(mu_) {
    std::shared_ptr<PendingCall> p;
    {
      MutexLock l(&mu_);
      cancelled_ = true;
      p = std::move(pending_);
    }
    if (p) p->Cancel(std::move(why));
  }

 private:
  Mutex mu_;
  bool cancelled_ GUARDED_BY(mu_) = false;
  std::shared_ptr<PendingCall> pending_ GUARDED_BY(mu_);
};

// The caller of an election or lock call, whose permissions its KV calls
// are checked against ("" while auth is disabled: one atomic load).
StatusOr<std::string> RecipeCaller(ElectionLockService* el,
                                   const grpc::ServerContextBase* ctx) {
  if (!el->kv()->server()->auth()->enabled()) return std::string();
  return UserOfCall(el->kv()->server()->auth(), ctx);
}

// Why gRPC cancelled the call of `ctx`.
Status CancelReason(const grpc::ServerContextBase* ctx) {
  if (ctx->deadline() <= std::chrono::system_clock::now()) {
    return DeadlineExceededError("context deadline exceeded");
  }
  return CancelledError("context canceled");
}

// A unary call that waits (Lock, Campaign); deletes itself when done.
class WaitingCall final : public grpc::ServerUnaryReactor {
 public:
  explicit WaitingCall(CallbackServerContext* ctx)
      : ctx_(ctx), link_(std::make_shared<CancelLink>()) {}

  std::shared_ptr<CancelLink> link() const { return link_; }

  // `done` for the service: answers the call.
  template <typename T>
  Done<T> Answer(T* resp) {
    return [this, resp](StatusOr<T> v) {
      if (v.ok()) {
        *resp = *std::move(v);
        Finish(grpc::Status::OK);
      } else {
        Finish(RecipeToGrpc(v.status()));
      }
    };
  }

  // Starts `begin(done, user)` for the call's caller (RecipeCaller; an
  // invalid token answers at once) and links the PendingCall it returns.
  template <typename T, typename Begin>
  static WaitingCall* Run(ElectionLockService* el, CallbackServerContext* ctx,
                          T* resp, Begin begin) {
    auto* call = new WaitingCall(ctx);
    std::shared_ptr<CancelLink> link = call->link();
    StatusOr<std::string> user = RecipeCaller(el, ctx);
    if (!user.ok()) {
      call->Answer(resp)(user.status());
      return call;
    }
    // `call` may be gone once begin() answered: only `link` after it.
    link->Attach(begin(call->Answer(resp), *std::move(user)),
                 CancelReason(ctx));
    return call;
  }

 private:
  void OnCancel() override { link_->Cancel(CancelReason(ctx_)); }
  void OnDone() override { delete this; }

  const CallbackServerContext* const ctx_;
  const std::shared_ptr<CancelLink> link_;
};

// A unary call: `begin(done, user)` for the call's caller (RecipeCaller;
// an invalid token answers at once).
template <typename T>
ServerUnaryReactor* Unary(ElectionLockService* el, CallbackServerContext* ctx,
                          T* resp,
                          std::function<void(Done<T>, std::string)> begin) {
  ServerUnaryReactor* r = ctx->DefaultReactor();
  Done<T> done = [r, resp](StatusOr<T> v) {
    if (v.ok()) {
      *resp = *std::move(v);
      r->Finish(grpc::Status::OK);
    } else {
      r->Finish(RecipeToGrpc(v.status()));
    }
  };
  StatusOr<std::string> user = RecipeCaller(el, ctx);
  if (!user.ok()) {
    done(user.status());
  } else {
    begin(std::move(done), *std::move(user));
  }
  return r;
}

// One Observe call: Send() queues from the observer's callbacks
// (WriteQueue); End() finishes after the write in flight. Owns itself through
// `self_` until OnDone, so callbacks holding a weak_ptr may outlive the call:
// once it is ending, Send() is a no-op.
class ObserveCall final : public grpc::ServerWriteReactor<epb::LeaderResponse>,
                          public std::enable_shared_from_this<ObserveCall> {
 public:
  // Past this many queued bytes the client is too slow: the call ends.
  static constexpr size_t kMaxQueuedBytes = 4 << 20;

  static ObserveCall* Start(ElectionLockService* el, CallbackServerContext* ctx,
                            const epb::LeaderRequest& req) {
    auto call = std::shared_ptr<ObserveCall>(new ObserveCall(ctx));
    call->self_ = call;
    StatusOr<std::string> user = RecipeCaller(el, ctx);
    if (!user.ok()) {
      // etcd's observe ends its stream without an error when its first
      // read fails, an invalid token's included.
      call->End(grpc::Status::OK);
      return call.get();
    }
    std::weak_ptr<ObserveCall> weak = call;
    call->link_->Attach(
        el->Observe(
            req,
            [weak](const epb::LeaderResponse& resp) {
              if (auto c = weak.lock()) c->Send(resp);
            },
            [weak](Status st) {
              if (auto c = weak.lock()) {
                c->End(st.ok() ? grpc::Status::OK : RecipeToGrpc(st));
              }
            },
            *std::move(user)),
        CancelReason(ctx));
    return call.get();
  }

 private:
  explicit ObserveCall(CallbackServerContext* ctx)
      : ctx_(ctx), link_(std::make_shared<CancelLink>()) {}

  void Send(const epb::LeaderResponse& resp) { Apply(writes_.Push(resp)); }

  void End(grpc::Status st) {
    if (writes_.End(std::move(st))) Finish(writes_.status());
  }

  void Apply(const WriteQueue<epb::LeaderResponse>::Step& step) {
    if (step.over) {
      End(TooManyQueued());
      return;
    }
    if (step.write) StartWrite(step.write);
    if (step.finish) Finish(writes_.status());
  }

  void OnWriteDone(bool ok) override { Apply(writes_.WriteDone(ok)); }

  void OnCancel() override {
    link_->Cancel(CancelReason(ctx_));
    End(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    link_->Cancel(CancelledError("context canceled"));
    self_.reset();  // may delete this
  }

  const CallbackServerContext* const ctx_;
  const std::shared_ptr<CancelLink> link_;
  std::shared_ptr<ObserveCall> self_;
  WriteQueue<epb::LeaderResponse> writes_{kMaxQueuedBytes};
};

class ElectionImpl final : public epb::Election::CallbackService {
 public:
  explicit ElectionImpl(ElectionLockService* el) : el_(el) {}

  ServerUnaryReactor* Campaign(CallbackServerContext* ctx,
                               const epb::CampaignRequest* req,
                               epb::CampaignResponse* resp) override {
    if (auto* refused = RefusedAsLearner(el_->kv()->server(), ctx)) {
      return refused;
    }
    ElectionLockService* el = el_;
    return WaitingCall::Run(
        el, ctx, resp, [el, req](auto done, std::string user) {
          return el->Campaign(*req, std::move(done), std::move(user));
        });
  }
  ServerUnaryReactor* Proclaim(CallbackServerContext* ctx,
                               const epb::ProclaimRequest* req,
                               epb::ProclaimResponse* resp) override {
    if (auto* refused = RefusedAsLearner(el_->kv()->server(), ctx)) {
      return refused;
    }
    ElectionLockService* el = el_;
    return Unary<epb::ProclaimResponse>(
        el, ctx, resp, [el, req](auto done, std::string user) {
          el->Proclaim(*req, std::move(done), std::move(user));
        });
  }
  ServerUnaryReactor* Leader(CallbackServerContext* ctx,
                             const epb::LeaderRequest* req,
                             epb::LeaderResponse* resp) override {
    if (auto* refused = RefusedAsLearner(el_->kv()->server(), ctx)) {
      return refused;
    }
    ElectionLockService* el = el_;
    return Unary<epb::LeaderResponse>(
        el, ctx, resp, [el, req](auto done, std::string user) {
          el->Leader(*req, std::move(done), std::move(user));
        });
  }
  grpc::ServerWriteReactor<epb::LeaderResponse>* Observe(
      CallbackServerContext* ctx, const epb::LeaderRequest* req) override {
    if (auto* refused = RefusedStreamAsLearner<
            grpc::ServerWriteReactor<epb::LeaderResponse>>(
            el_->kv()->server())) {
      return refused;
    }
    return ObserveCall::Start(el_, ctx, *req);
  }
  ServerUnaryReactor* Resign(CallbackServerContext* ctx,
                             const epb::ResignRequest* req,
                             epb::ResignResponse* resp) override {
    if (auto* refused = RefusedAsLearner(el_->kv()->server(), ctx)) {
      return refused;
    }
    ElectionLockService* el = el_;
    return Unary<epb::ResignResponse>(
        el, ctx, resp, [el, req](auto done, std::string user) {
          el->Resign(*req, std::move(done), std::move(user));
        });
  }

 private:
  ElectionLockService* const el_;
};

class LockImpl final : public lpb::Lock::CallbackService {
 public:
  explicit LockImpl(ElectionLockService* el) : el_(el) {}

  ServerUnaryReactor* Lock(CallbackServerContext* ctx,
                           const lpb::LockRequest* req,
                           lpb::LockResponse* resp) override {
    if (auto* refused = RefusedAsLearner(el_->kv()->server(), ctx)) {
      return refused;
    }
    ElectionLockService* el = el_;
    return WaitingCall::Run(
        el, ctx, resp, [el, req](auto done, std::string user) {
          return el->Lock(*req, std::move(done), std::move(user));
        });
  }
  ServerUnaryReactor* Unlock(CallbackServerContext* ctx,
                             const lpb::UnlockRequest* req,
                             lpb::UnlockResponse* resp) override {
    if (auto* refused = RefusedAsLearner(el_->kv()->server(), ctx)) {
      return refused;
    }
    ElectionLockService* el = el_;
    return Unary<lpb::UnlockResponse>(
        el, ctx, resp, [el, req](auto done, std::string user) {
          el->Unlock(*req, std::move(done), std::move(user));
        });
  }

 private:
  ElectionLockService* const el_;
};

// etcd's Auth service: every request is proposed and applied by every
// member (KvService::Auth), as etcd's.
class AuthImpl final : public pb::Auth::CallbackService {
 public:
  explicit AuthImpl(KvService* kv) : kv_(kv) {}

#define KPLANE_AUTH_METHOD(Method, Req, Resp, field)                          \
  ServerUnaryReactor* Method(CallbackServerContext* ctx, const pb::Req* req,  \
                             pb::Resp* resp) override {                       \
    if (auto* refused = RefusedAsLearner(kv_->server(), ctx)) return refused; \
    ServerUnaryReactor* r = ctx->DefaultReactor();                            \
    std::string user;                                                         \
    if (!Caller(kv_, ctx, r, &user)) return r;                                \
    storagepb::AuthRequest ar;                                                \
    *ar.mutable_##field() = *req;                                             \
    kv_->Auth<pb::Resp>(std::move(ar), std::move(user), ReplyTo(r, resp));    \
    return r;                                                                 \
  }
  KPLANE_AUTH_METHOD(AuthEnable, AuthEnableRequest, AuthEnableResponse, enable)
  KPLANE_AUTH_METHOD(AuthDisable, AuthDisableRequest, AuthDisableResponse,
                     disable)
  KPLANE_AUTH_METHOD(Authenticate, AuthenticateRequest, AuthenticateResponse,
                     authenticate)
  KPLANE_AUTH_METHOD(UserAdd, AuthUserAddRequest, AuthUserAddResponse, user_add)
  KPLANE_AUTH_METHOD(UserGet, AuthUserGetRequest, AuthUserGetResponse, user_get)
  KPLANE_AUTH_METHOD(UserList, AuthUserListRequest, AuthUserListResponse,
                     user_list)
  KPLANE_AUTH_METHOD(UserDelete, AuthUserDeleteRequest, AuthUserDeleteResponse,
                     user_delete)
  KPLANE_AUTH_METHOD(UserChangePassword, AuthUserChangePasswordRequest,
                     AuthUserChangePasswordResponse, user_change_password)
  KPLANE_AUTH_METHOD(UserGrantRole, AuthUserGrantRoleRequest,
                     AuthUserGrantRoleResponse, user_grant_role)
  KPLANE_AUTH_METHOD(UserRevokeRole, AuthUserRevokeRoleRequest,
                     AuthUserRevokeRoleResponse, user_revoke_role)
  KPLANE_AUTH_METHOD(RoleAdd, AuthRoleAddRequest, AuthRoleAddResponse, role_add)
  KPLANE_AUTH_METHOD(RoleGet, AuthRoleGetRequest, AuthRoleGetResponse, role_get)
  KPLANE_AUTH_METHOD(RoleList, AuthRoleListRequest, AuthRoleListResponse,
                     role_list)
  KPLANE_AUTH_METHOD(RoleDelete, AuthRoleDeleteRequest, AuthRoleDeleteResponse,
                     role_delete)
  KPLANE_AUTH_METHOD(RoleGrantPermission, AuthRoleGrantPermissionRequest,
                     AuthRoleGrantPermissionResponse, role_grant_permission)
  KPLANE_AUTH_METHOD(RoleRevokePermission, AuthRoleRevokePermissionRequest,
                     AuthRoleRevokePermissionResponse, role_revoke_permission)
#undef KPLANE_AUTH_METHOD

 private:
  KvService* const kv_;
};

}  // namespace

GrpcFront::GrpcFront(StoreServer* server, GrpcFrontOptions options)
    : server_(server), options_(options) {}

GrpcFront::~GrpcFront() { Stop(); }

Status GrpcFront::Start() {
  kv_ = std::make_unique<KvService>(server_);
  services_.push_back(std::make_unique<KvImpl>(kv_.get()));
  services_.push_back(std::make_unique<WatchImpl>(server_));
  services_.push_back(std::make_unique<LeaseImpl>(kv_.get()));
  services_.push_back(std::make_unique<ClusterImpl>(server_));
  services_.push_back(std::make_unique<MaintenanceImpl>(server_));
  el_ = std::make_unique<ElectionLockService>(kv_.get());
  services_.push_back(std::make_unique<ElectionImpl>(el_.get()));
  services_.push_back(std::make_unique<LockImpl>(el_.get()));
  services_.push_back(std::make_unique<AuthImpl>(kv_.get()));
  grpc::ServerBuilder b;
  for (auto& svc : services_) b.RegisterService(svc.get());
  // etcd's gRPC series (grpc_metrics.h): an interceptor counts each call.
  // Another holds the calls whose tokens name an index not applied yet.
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(NewGrpcMetricsFactory(server_->config().metrics));
  interceptors.push_back(std::make_unique<TokenIndexFactory>(server_));
  b.experimental().SetInterceptorCreators(std::move(interceptors));
  // etcd: requests up to --max-request-bytes plus 512 KiB of framing room,
  // responses of any size (math.MaxInt32).
  b.SetMaxReceiveMessageSize(
      static_cast<int>(server_->config().max_request_bytes + 512 * 1024));
  b.SetMaxSendMessageSize(INT_MAX);
  // etcdctl and clientv3 ping every few seconds on idle connections (a
  // long watch); gRPC's C++ default would answer that with GOAWAY
  // "too_many_pings". etcd allows a ping every 5 s; be as lenient.
  auto ms = [](Duration d) {
    return static_cast<int>(std::min<int64_t>(
        INT_MAX,
        std::chrono::duration_cast<std::chrono::milliseconds>(d).count()));
  };
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                       options_.keepalive_min_time > Duration(0)
                           ? ms(options_.keepalive_min_time)
                           : 1000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  if (options_.keepalive_interval > Duration(0)) {
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                         ms(options_.keepalive_interval));
  }
  if (options_.keepalive_timeout > Duration(0)) {
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                         ms(options_.keepalive_timeout));
  }
  if (options_.max_concurrent_streams > 0) {
    b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                         static_cast<int>(std::min<uint32_t>(
                             options_.max_concurrent_streams, INT_MAX)));
  }
  grpc_ = b.BuildAndStart();
  if (!grpc_) return InternalError("grpc: cannot start the server");
  return Status::Ok();
}

void GrpcFront::Adopt(int fd, const net::TlsConnectionInfo* tls) {
  if (!grpc_) {
    ::close(fd);
    return;
  }
  // Set (or cleared, for a plaintext connection that got a number a TLS
  // one had) before gRPC can read a request on `fd`.
  CertUsers::Get().Set(
      fd, tls && tls->peer_verified ? tls->peer.common_name : std::string());
  grpc::AddInsecureChannelFromFd(grpc_.get(), fd);
}

void GrpcFront::InstallHandoff(net::HttpServerOptions* o) {
  o->handoff_preface = std::string(net::kHttp2Preface);
  o->handoff = [this](int fd,
                      std::shared_ptr<const net::TlsConnectionInfo> tls) {
    Adopt(fd, tls.get());
  };
}

void GrpcFront::Stop() {
  if (!grpc_) return;
  // The shutdown waits for every call, held ones included.
  server_->auth()->ReleaseTokenWaiters();
  grpc_->Shutdown(std::chrono::system_clock::now());
  grpc_->Wait();
  grpc_.reset();
}

}  // namespace kplane::storage
