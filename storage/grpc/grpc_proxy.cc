// clang-format off
#include "storage/grpc/grpc_proxy.h"
#include "base/thread_annotations.h"  // before absl's (grpcpp)
// clang-format on

#include <grpc/grpc.h>
#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "net/url.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/client/grpc_kv.h"
#include "storage/client/remote_kv.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/go_codes.h"
#include "storage/grpc/grpc_proxy_http.h"
#include "storage/grpc/proxy_range_cache.h"
#include "storage/server/member_tls.h"

namespace kplane::storage {

void PrefixInterval(const std::string& prefix, std::string* key,
                    std::string* range_end) {
  *key = prefix + *key;
  if (range_end->size() == 1 && (*range_end)[0] == '\0') {
    // To the end of the keyspace: to the end of the prefix instead, the
    // first key greater than every key that starts with it.
    std::string end = prefix;
    while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) {
      end.pop_back();
    }
    if (end.empty()) {
      *range_end = std::string(1, '\0');  // 0xff..ff: the whole keyspace
    } else {
      end.back() =
          static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      *range_end = end;
    }
  } else if (!range_end->empty()) {
    *range_end = prefix + *range_end;
  }
}

namespace {

namespace pb = etcdserverpb;

// ---- namespace rewriting (etcd's clientv3/namespace) ----

void Strip(const std::string& prefix, std::string* key) {
  if (key->compare(0, prefix.size(), prefix) == 0) key->erase(0, prefix.size());
}
void StripKv(const std::string& p, mvccpb::KeyValue* kv) {
  Strip(p, kv->mutable_key());
}

grpc::Status EmptyKey() {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "etcdserver: key is not provided");
}

grpc::Status PrefixRange(const std::string& p, pb::RangeRequest* r) {
  if (r->key().empty()) return EmptyKey();
  PrefixInterval(p, r->mutable_key(), r->mutable_range_end());
  return grpc::Status::OK;
}
grpc::Status PrefixPut(const std::string& p, pb::PutRequest* r) {
  if (r->key().empty()) return EmptyKey();
  r->set_key(p + r->key());
  return grpc::Status::OK;
}
grpc::Status PrefixDelete(const std::string& p, pb::DeleteRangeRequest* r) {
  if (r->key().empty()) return EmptyKey();
  PrefixInterval(p, r->mutable_key(), r->mutable_range_end());
  return grpc::Status::OK;
}
grpc::Status PrefixTxn(const std::string& p, pb::TxnRequest* r);
grpc::Status PrefixOps(const std::string& p,
                       google::protobuf::RepeatedPtrField<pb::RequestOp>* ops) {
  for (pb::RequestOp& op : *ops) {
    grpc::Status st;
    switch (op.request_case()) {
      case pb::RequestOp::kRequestRange:
        st = PrefixRange(p, op.mutable_request_range());
        break;
      case pb::RequestOp::kRequestPut:
        st = PrefixPut(p, op.mutable_request_put());
        break;
      case pb::RequestOp::kRequestDeleteRange:
        st = PrefixDelete(p, op.mutable_request_delete_range());
        break;
      case pb::RequestOp::kRequestTxn:
        st = PrefixTxn(p, op.mutable_request_txn());
        break;
      default:
        break;
    }
    if (!st.ok()) return st;
  }
  return grpc::Status::OK;
}
grpc::Status PrefixTxn(const std::string& p, pb::TxnRequest* r) {
  for (pb::Compare& c : *r->mutable_compare()) {
    if (c.key().empty()) return EmptyKey();
    PrefixInterval(p, c.mutable_key(), c.mutable_range_end());
  }
  if (auto st = PrefixOps(p, r->mutable_success()); !st.ok()) return st;
  return PrefixOps(p, r->mutable_failure());
}

void StripRange(const std::string& p, pb::RangeResponse* r) {
  for (auto& kv : *r->mutable_kvs()) StripKv(p, &kv);
}
void StripPut(const std::string& p, pb::PutResponse* r) {
  if (r->has_prev_kv()) StripKv(p, r->mutable_prev_kv());
}
void StripDelete(const std::string& p, pb::DeleteRangeResponse* r) {
  for (auto& kv : *r->mutable_prev_kvs()) StripKv(p, &kv);
}
void StripTxn(const std::string& p, pb::TxnResponse* r) {
  for (pb::ResponseOp& op : *r->mutable_responses()) {
    switch (op.response_case()) {
      case pb::ResponseOp::kResponseRange:
        StripRange(p, op.mutable_response_range());
        break;
      case pb::ResponseOp::kResponsePut:
        StripPut(p, op.mutable_response_put());
        break;
      case pb::ResponseOp::kResponseDeleteRange:
        StripDelete(p, op.mutable_response_delete_range());
        break;
      case pb::ResponseOp::kResponseTxn:
        StripTxn(p, op.mutable_response_txn());
        break;
      default:
        break;
    }
  }
}
// A lease is not namespaced: it may hold keys outside the namespace too,
// which are left out (etcd's clientv3/namespace leasePrefix.TimeToLive),
// not shown with their full names.
void StripTtl(const std::string& p, pb::LeaseTimeToLiveResponse* r) {
  auto* keys = r->mutable_keys();
  int kept = 0;
  for (int i = 0; i < keys->size(); ++i) {
    std::string* k = keys->Mutable(i);
    if (k->compare(0, p.size(), p) != 0) continue;
    k->erase(0, p.size());
    if (kept != i) keys->Mutable(kept)->swap(*k);
    ++kept;
  }
  keys->DeleteSubrange(kept, keys->size() - kept);
}

template <typename T>
bool FromBuffer(grpc::ByteBuffer* b, T* msg) {
  return grpc::SerializationTraits<T>::Deserialize(b, msg).ok();
}
// Parses without consuming `b` (Deserialize empties the buffer it reads).
template <typename T>
bool Peek(const grpc::ByteBuffer& b, T* msg) {
  grpc::ByteBuffer copy(b);  // shares the slices
  return FromBuffer(&copy, msg);
}
template <typename T>
void ToBuffer(const T& msg, grpc::ByteBuffer* b) {
  bool own = false;
  grpc::SerializationTraits<T>::Serialize(msg, b, &own);
}

// Rewrites one message of `method` in place (request or response) for the
// namespace. Methods without keys are left alone.
template <typename T, typename F>
grpc::Status Rewrite(grpc::ByteBuffer* b, F f) {
  T msg;
  if (!FromBuffer(b, &msg)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "grpc-proxy: cannot parse the message");
  }
  grpc::Status st = f(&msg);
  if (st.ok()) ToBuffer(msg, b);
  return st;
}

grpc::Status RewriteRequest(const std::string& m, const std::string& p,
                            grpc::ByteBuffer* b) {
  if (m == "/etcdserverpb.KV/Range") {
    return Rewrite<pb::RangeRequest>(
        b, [&](pb::RangeRequest* r) { return PrefixRange(p, r); });
  }
  if (m == "/etcdserverpb.KV/Put") {
    return Rewrite<pb::PutRequest>(
        b, [&](pb::PutRequest* r) { return PrefixPut(p, r); });
  }
  if (m == "/etcdserverpb.KV/DeleteRange") {
    return Rewrite<pb::DeleteRangeRequest>(
        b, [&](pb::DeleteRangeRequest* r) { return PrefixDelete(p, r); });
  }
  if (m == "/etcdserverpb.KV/Txn") {
    return Rewrite<pb::TxnRequest>(
        b, [&](pb::TxnRequest* r) { return PrefixTxn(p, r); });
  }
  return grpc::Status::OK;
}

void RewriteResponse(const std::string& m, const std::string& p,
                     grpc::ByteBuffer* b) {
  auto ok = [](auto f) {
    return [f](auto* r) {
      f(r);
      return grpc::Status::OK;
    };
  };
  if (m == "/etcdserverpb.KV/Range") {
    Rewrite<pb::RangeResponse>(
        b, ok([&](pb::RangeResponse* r) { StripRange(p, r); }));
  } else if (m == "/etcdserverpb.KV/Put") {
    Rewrite<pb::PutResponse>(b,
                             ok([&](pb::PutResponse* r) { StripPut(p, r); }));
  } else if (m == "/etcdserverpb.KV/DeleteRange") {
    Rewrite<pb::DeleteRangeResponse>(
        b, ok([&](pb::DeleteRangeResponse* r) { StripDelete(p, r); }));
  } else if (m == "/etcdserverpb.KV/Txn") {
    Rewrite<pb::TxnResponse>(b,
                             ok([&](pb::TxnResponse* r) { StripTxn(p, r); }));
  } else if (m == "/etcdserverpb.Lease/LeaseTimeToLive") {
    Rewrite<pb::LeaseTimeToLiveResponse>(
        b, ok([&](pb::LeaseTimeToLiveResponse* r) { StripTtl(p, r); }));
  }
}

// The caller's metadata a member needs: its auth token (simple or JWT,
// etcd's "token" key; "authorization" for newer clients) and whether it
// insists on a leader.
void CopyCallerMetadata(const grpc::ServerContextBase& from,
                        grpc::ClientContext* to) {
  for (const auto& [k, v] : from.client_metadata()) {
    const std::string key(k.data(), k.size());
    if (key == "token" || key == "authorization" || key == "hasleader") {
      to->AddMetadata(key, std::string(v.data(), v.size()));
    }
  }
  if (from.deadline() != std::chrono::system_clock::time_point::max()) {
    to->set_deadline(from.deadline());
  }
}

// ---- the members ----

struct Backends {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  std::atomic<size_t> preferred{0};

  // The member for the next call: the first READY one from the preferred
  // (which becomes the preferred); else the first not in
  // TRANSIENT_FAILURE; else the preferred. Asking for the state also makes
  // idle channels connect, so a member that is back is found again.
  size_t Pick() {
    const size_t n = channels.size();
    const size_t start = preferred.load();
    size_t fallback = n;
    for (size_t i = 0; i < n; ++i) {
      const size_t k = (start + i) % n;
      const grpc_connectivity_state s = channels[k]->GetState(true);
      if (s == GRPC_CHANNEL_READY) {
        if (k != start) {
          LOG(INFO) << "grpc-proxy: using member " << names[k];
          preferred.store(k);
        }
        return k;
      }
      if (fallback == n && s != GRPC_CHANNEL_TRANSIENT_FAILURE) fallback = k;
    }
    return fallback == n ? start : fallback;
  }
};

StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgumentError(std::string(flag) + ": cannot read \"" + path +
                                "\"");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- one forwarded call: a byte pump between a server stream and a
// client stream to one member. Unary, server-streaming and bidi calls look
// the same as raw messages. ----

class ForwardCall : public grpc::ServerGenericBidiReactor {
 public:
  // clear_cache: non-null for a call that changes what cached reads would
  // answer (ClearsRangeCache); cleared before it is sent and again when
  // the member has answered or the call ended.
  ForwardCall(grpc::GenericCallbackServerContext* sctx, Backends* b,
              const std::string* prefix, ProxyRangeCache* clear_cache)
      : sctx_(sctx),
        prefix_(*prefix),
        clear_cache_(clear_cache),
        client_(this) {
    // Before it is sent (as KvCall's writes): a read answered from now on
    // may be the member's old answer and is not kept.
    if (clear_cache_ != nullptr) clear_cache_->Clear();
    CopyCallerMetadata(*sctx, &cctx_);
    const size_t k = b->Pick();
    b->stubs[k]->PrepareBidiStreamingCall(&cctx_, sctx->method(), {}, &client_);
    // Writes to the member come from the caller's reactions, outside the
    // client's own: the hold keeps the call open for them.
    client_.AddHold();
    client_.StartRead(&from_member_);
    client_.StartCall();
    StartRead(&from_caller_);
  }

 private:
  class Client
      : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    explicit Client(ForwardCall* c) : c_(c) {}
    void OnWriteDone(bool ok) override { c_->ClientWriteDone(ok); }
    void OnReadDone(bool ok) override { c_->ClientReadDone(ok); }
    void OnDone(const grpc::Status& s) override { c_->ClientDone(s); }

   private:
    ForwardCall* const c_;
  };

  // The caller sent a message (or closed its side).
  void OnReadDone(bool ok) override EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (!hold_) return;  // the member's side is over
    if (!ok) {
      // The hold stays until the member's side ends (ClientReadDone): the
      // client call must not complete while its answer is being written.
      client_.StartWritesDone();
      return;
    }
    if (!prefix_.empty()) {
      grpc::Status st = RewriteRequest(sctx_->method(), prefix_, &from_caller_);
      if (!st.ok()) {
        // Refused here: end the member's call; ClientDone finishes with
        // this status instead of its CANCELLED.
        override_ = st;
        cctx_.TryCancel();
        ReleaseHold();
        return;
      }
    }
    client_.StartWrite(&from_caller_);
  }

  void ClientWriteDone(bool ok) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (!ok) {
      ReleaseHold();  // the member's call broke; ClientDone says how
      return;
    }
    if (hold_ && !finished_) StartRead(&from_caller_);
  }

  // The member sent a message (or its side ended).
  void ClientReadDone(bool ok) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (!ok) {
      // The status comes in ClientDone, which waits for the hold.
      ReleaseHold();
      return;
    }
    // The change is applied: reads answered before it (since the Clear
    // before the call) must not be served once the caller has the answer.
    if (clear_cache_ != nullptr) clear_cache_->Clear();
    if (!prefix_.empty())
      RewriteResponse(sctx_->method(), prefix_, &from_member_);
    writing_ = true;
    StartWrite(&from_member_);
  }

  // The caller took the member's message.
  void OnWriteDone(bool ok) override EXCLUDES(mu_) {
    MutexLock l(&mu_);
    writing_ = false;
    if (finish_pending_) {
      finish_pending_ = false;
      finished_ = true;
      Finish(status_);
      return;
    }
    if (ok && hold_) {
      client_.StartRead(&from_member_);
    } else {
      cctx_.TryCancel();
      ReleaseHold();
    }
  }

  void ClientDone(const grpc::Status& s) EXCLUDES(mu_) {
    // A call that failed may still have been applied.
    if (clear_cache_ != nullptr) clear_cache_->Clear();
    {
      MutexLock l(&mu_);
      status_ = override_.ok() ? s : override_;
      if (writing_) {
        finish_pending_ = true;  // after the last message is written
      } else if (!finished_) {
        finished_ = true;
        Finish(status_);
      }
    }
    Done();
  }

  void OnCancel() override { cctx_.TryCancel(); }
  void OnDone() override { Done(); }

  void ReleaseHold() REQUIRES(mu_) {
    if (!hold_) return;
    hold_ = false;
    client_.RemoveHold();
  }

  // Both sides are over: the server's OnDone and the client's OnDone.
  void Done() {
    if (done_.fetch_add(1) == 1) delete this;
  }

  grpc::GenericCallbackServerContext* const sctx_;
  const std::string prefix_;
  ProxyRangeCache* const clear_cache_;  // null: leaves the cache alone
  grpc::ClientContext cctx_;
  Client client_;
  grpc::ByteBuffer from_caller_;  // the caller's message in flight
  grpc::ByteBuffer from_member_;  // the member's message in flight
  Mutex mu_;
  bool hold_ GUARDED_BY(mu_) = true;
  bool writing_ GUARDED_BY(mu_) = false;
  bool finish_pending_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  grpc::Status status_ GUARDED_BY(mu_);
  grpc::Status override_ GUARDED_BY(mu_);
  std::atomic<int> done_{0};
};

// ---- KV calls: unary, each request and answer seen whole, which the
// serializable-range cache needs (etcd's kvProxy). ----

// What the proxy counts, shared by its calls.
struct Counters {
  std::atomic<int64_t> upstreams{0}, watchers{0}, slow{0}, calls{0};
  std::atomic<int64_t> cache_hits{0}, cache_misses{0};
  std::atomic<int64_t> watch_creates_refused{0};  // at the stream's bound
  // etcd's events_coalescing: per upstream response, the members it went
  // to beyond the first.
  std::atomic<int64_t> coalesced{0};
  // Watch permission checks asked again after a transport failure.
  std::atomic<int64_t> check_retries{0};
};

enum class KvMethod { kRange, kPut, kDeleteRange, kTxn, kCompact, kOther };

KvMethod KvMethodOf(const std::string& m) {
  if (m == "/etcdserverpb.KV/Range") return KvMethod::kRange;
  if (m == "/etcdserverpb.KV/Put") return KvMethod::kPut;
  if (m == "/etcdserverpb.KV/DeleteRange") return KvMethod::kDeleteRange;
  if (m == "/etcdserverpb.KV/Txn") return KvMethod::kTxn;
  if (m == "/etcdserverpb.KV/Compact") return KvMethod::kCompact;
  return KvMethod::kOther;
}

using KeyRange = std::pair<std::string, std::string>;  // key, range_end

// Every key range a Txn may write or whose compare may have read an
// outdated value: its compares and the writes of both branches, nested
// Txns included (etcd invalidates the compares and the taken branch's
// top-level writes only; wider is never wrong).
void TxnRanges(const pb::TxnRequest& t, std::vector<KeyRange>* out) {
  for (const pb::Compare& c : t.compare()) {
    out->emplace_back(c.key(), c.range_end());
  }
  for (const auto* ops : {&t.success(), &t.failure()}) {
    for (const pb::RequestOp& op : *ops) {
      switch (op.request_case()) {
        case pb::RequestOp::kRequestPut:
          out->emplace_back(op.request_put().key(), std::string());
          break;
        case pb::RequestOp::kRequestDeleteRange:
          out->emplace_back(op.request_delete_range().key(),
                            op.request_delete_range().range_end());
          break;
        case pb::RequestOp::kRequestTxn:
          TxnRanges(op.request_txn(), out);
          break;
        default:
          break;
      }
    }
  }
}

// The cache key of a Range: the request as serializable (a linearizable
// answer is cached for later serializable reads, as etcd); "" for a call
// that carries a token, which is never cached: only the member can tell
// whether the token still holds and its user may still read (etcd's key is
// the request alone, so one user's answer could be served to another).
std::string RangeCacheKey(const grpc::ServerContextBase& ctx,
                          pb::RangeRequest r) {
  for (const auto& [k, v] : ctx.client_metadata()) {
    const std::string name(k.data(), k.size());
    if (name == "token" || name == "authorization") return std::string();
  }
  r.set_serializable(true);
  return r.SerializeAsString();
}

void UnrefAnswer(void* p) {
  delete static_cast<std::shared_ptr<const std::string>*>(p);
}

// A cached answer as a message, without copying it.
grpc::ByteBuffer AnswerBuffer(std::shared_ptr<const std::string> s) {
  auto* hold = new std::shared_ptr<const std::string>(std::move(s));
  grpc::Slice slice(const_cast<char*>((*hold)->data()), (*hold)->size(),
                    &UnrefAnswer, hold);
  return grpc::ByteBuffer(&slice, 1);
}

std::string BufferBytes(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!b.Dump(&slices).ok()) return out;
  out.reserve(b.Length());
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

class KvCall : public grpc::ServerGenericBidiReactor {
 public:
  KvCall(grpc::GenericCallbackServerContext* sctx, KvMethod m, Backends* b,
         const std::string* prefix, ProxyRangeCache* cache, Counters* n)
      : sctx_(sctx), m_(m), b_(b), prefix_(*prefix), cache_(cache), n_(n) {
    StartRead(&req_);
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "grpc-proxy: the call sent no request"));
      return;
    }
    if (cache_ == nullptr) {
      Forward();
      return;
    }
    switch (m_) {
      case KvMethod::kRange: {
        pb::RangeRequest r;
        if (!Peek(req_, &r)) return Unparsable();
        cache_key_ = RangeCacheKey(*sctx_, r);
        if (cache_key_.empty()) break;  // carries a token: never cached
        if (r.serializable()) {
          std::shared_ptr<const std::string> answer;
          switch (cache_->Get(cache_key_, r.revision(), &answer)) {
            case ProxyRangeCache::Result::kHit:
              n_->cache_hits.fetch_add(1);
              resp_ = AnswerBuffer(std::move(answer));
              StartWriteAndFinish(&resp_, grpc::WriteOptions(),
                                  grpc::Status::OK);
              return;
            case ProxyRangeCache::Result::kCompacted:
              n_->cache_hits.fetch_add(1);
              Finish(grpc::Status(
                  grpc::StatusCode::OUT_OF_RANGE,
                  "etcdserver: mvcc: required revision has been compacted"));
              return;
            case ProxyRangeCache::Result::kMiss:
              n_->cache_misses.fetch_add(1);
              break;
          }
        }
        range_key_ = r.key();
        range_end_ = r.range_end();
        revision_ = r.revision();
        // Taken before the member is asked: a write through the proxy
        // from now on keeps this answer out of the cache.
        generation_ = cache_->generation();
        break;
      }
      case KvMethod::kPut: {
        pb::PutRequest r;
        if (!Peek(req_, &r)) return Unparsable();
        writes_.emplace_back(r.key(), std::string());
        break;
      }
      case KvMethod::kDeleteRange: {
        pb::DeleteRangeRequest r;
        if (!Peek(req_, &r)) return Unparsable();
        writes_.emplace_back(r.key(), r.range_end());
        break;
      }
      case KvMethod::kTxn: {
        pb::TxnRequest r;
        if (!Peek(req_, &r)) return Unparsable();
        TxnRanges(r, &writes_);
        break;
      }
      case KvMethod::kCompact: {
        pb::CompactionRequest r;
        if (!Peek(req_, &r)) return Unparsable();
        revision_ = r.revision();
        break;
      }
      case KvMethod::kOther:
        break;
    }
    // Before the write (etcd's order) and again when it is over (below):
    // a read answered in between may carry the old value.
    for (const KeyRange& w : writes_) cache_->Invalidate(w.first, w.second);
    Forward();
  }

  void Unparsable() {
    Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "grpc-proxy: cannot parse the message"));
  }

  void Forward() {
    if (!prefix_.empty()) {
      grpc::Status st = RewriteRequest(sctx_->method(), prefix_, &req_);
      if (!st.ok()) {
        Finish(st);
        return;
      }
    }
    CopyCallerMetadata(*sctx_, &cctx_);
    const size_t k = b_->Pick();
    n_->calls.fetch_add(1);
    b_->stubs[k]->UnaryCall(&cctx_, sctx_->method(), grpc::StubOptions(), &req_,
                            &resp_, [this](grpc::Status st) { Answered(st); });
  }

  void Answered(grpc::Status st) {
    if (cache_ != nullptr) {
      // Whatever the outcome: a failed write may still have been applied.
      for (const KeyRange& w : writes_) cache_->Invalidate(w.first, w.second);
    }
    if (!st.ok()) {
      Finish(st);
      return;
    }
    if (!prefix_.empty()) RewriteResponse(sctx_->method(), prefix_, &resp_);
    if (cache_ != nullptr && m_ == KvMethod::kRange && !cache_key_.empty()) {
      cache_->Add(cache_key_, range_key_, range_end_, revision_,
                  std::make_shared<const std::string>(BufferBytes(resp_)),
                  generation_);
    } else if (cache_ != nullptr && m_ == KvMethod::kCompact) {
      cache_->Compact(revision_);
    }
    StartWriteAndFinish(&resp_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnCancel() override { cctx_.TryCancel(); }
  void OnDone() override { delete this; }

  grpc::GenericCallbackServerContext* const sctx_;
  const KvMethod m_;
  Backends* const b_;
  const std::string prefix_;
  ProxyRangeCache* const cache_;  // null: no cache
  Counters* const n_;
  grpc::ClientContext cctx_;
  grpc::ByteBuffer req_;
  grpc::ByteBuffer resp_;
  // Set in OnReadDone, read in Answered (ordered by the call).
  std::string cache_key_, range_key_, range_end_;
  int64_t revision_ = 0;
  uint64_t generation_ = 0;
  std::vector<KeyRange> writes_;
};

// Whether a forwarded (non-KV) call may change what a cached Range would
// answer, so the whole cache goes around it: a lease revoke deletes the
// lease's keys, which only the member knows; an auth change may end what
// tokenless callers (whose answers are the cached ones) may read, AuthEnable
// above all; Lock, Unlock and Election's writes put and delete keys. etcd's
// proxy invalidates on none of them. Reads, logins and keep-alives do not
// clear, or every login would empty the cache.
bool ClearsRangeCache(const std::string& m) {
  static constexpr std::string_view kAuth = "/etcdserverpb.Auth/";
  if (m.rfind(kAuth, 0) == 0) {
    const std::string_view call = std::string_view(m).substr(kAuth.size());
    return call != "Authenticate" && call != "AuthStatus" &&
           call != "UserGet" && call != "UserList" && call != "RoleGet" &&
           call != "RoleList";
  }
  return m == "/etcdserverpb.Lease/LeaseRevoke" || m == "/v3lockpb.Lock/Lock" ||
         m == "/v3lockpb.Lock/Unlock" ||
         m == "/v3electionpb.Election/Campaign" ||
         m == "/v3electionpb.Election/Proclaim" ||
         m == "/v3electionpb.Election/Resign";
}

// MemberList answered by the proxy (etcd's clusterProxy with an advertise
// address): one member, the proxy, named after the host.
class SelfMemberList : public grpc::ServerGenericBidiReactor {
 public:
  SelfMemberList(const std::string& url) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    pb::MemberListResponse resp;
    pb::Member* m = resp.add_members();
    m->set_name(host);
    m->add_clienturls(url);
    ToBuffer(resp, &out_);
    StartRead(&in_);
  }
  void OnReadDone(bool) override {
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer in_;
  grpc::ByteBuffer out_;
};

class Forwarder : public grpc::CallbackGenericService {
 public:
  Forwarder(Backends* b, const GrpcProxyOptions* o, ProxyRangeCache* cache,
            Counters* n)
      : b_(b), o_(o), cache_(cache), n_(n) {}
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* ctx) override {
    if (ctx->method() == "/etcdserverpb.Cluster/MemberList" &&
        !o_->advertise_client_url.empty()) {
      return new SelfMemberList(o_->advertise_client_url);
    }
    if (const KvMethod m = KvMethodOf(ctx->method()); m != KvMethod::kOther) {
      return new KvCall(ctx, m, b_, &o_->key_prefix, cache_, n_);
    }
    n_->calls.fetch_add(1);
    ProxyRangeCache* clear =
        cache_ != nullptr && ClearsRangeCache(ctx->method()) ? cache_ : nullptr;
    return new ForwardCall(ctx, b_, &o_->key_prefix, clear);
  }

 private:
  Backends* const b_;
  const GrpcProxyOptions* const o_;
  ProxyRangeCache* const cache_;  // null: no cache
  Counters* const n_;
};

// ---- watches ----

class WatchHub;

// A client's "token" / "authorization" metadata (name, value).
using Metadata = std::vector<std::pair<std::string, std::string>>;

Metadata CallerAuth(const grpc::ServerContextBase& ctx) {
  Metadata out;
  for (const auto& [k, v] : ctx.client_metadata()) {
    const std::string key(k.data(), k.size());
    if (key == "token" || key == "authorization") {
      out.emplace_back(key, std::string(v.data(), v.size()));
    }
  }
  return out;
}

// What clientv3's err.Error() says for a failed call, which etcd's proxy
// puts in a refused watcher's cancel_reason: etcd's own errors
// ("etcdserver: ...") by their text alone, others as gRPC's Go status.
std::string GoErrorText(const grpc::Status& st) {
  const std::string& m = st.error_message();
  if (m.rfind("etcdserver: ", 0) == 0) return m;
  return etcdjson::GoRpcErrorText(static_cast<int>(st.error_code()), m);
}

// The sending side of one client Watch stream, shared by the stream and
// the broadcasts that feed it; outlives the stream's reactor.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Queues `r` for the client; false if the stream is over.
  virtual bool Send(pb::WatchResponse r) = 0;
  // Watcher `id` was ended by the proxy's side, not by a cancel of the
  // client's (its upstream watch was canceled, e.g. its start revision
  // compacted, or could not open): its place on the stream is free again.
  // Called before the canceled response is sent.
  virtual void Ended(int64_t id) = 0;
};

// One upstream watch and the client watchers it feeds.
struct Broadcast {
  std::string group;  // "" for a watch that is never shared
  pb::WatchCreateRequest upstream_req;
  std::unique_ptr<Watch> upstream;
  Mutex mu;
  // Every response up to this revision has been delivered to members.
  int64_t revision GUARDED_BY(mu) = 0;
  // The header of the newest response (its member, term and cluster), for
  // the answers the proxy makes up: a joiner's created, a cancel's.
  pb::ResponseHeader header GUARDED_BY(mu);
  struct Member {
    std::shared_ptr<WatchSink> sink;
    Metadata auth;    // the client's token, checked when it joined
    uint64_t joined;  // order of joining
    // A joiner's created revision: events at or below it are not its own
    // (etcd's watcher.send and its nextrev); 0 for the watcher that opened
    // the upstream watch.
    int64_t start = 0;
  };
  std::map<std::pair<WatchSink*, int64_t>, Member> members GUARDED_BY(mu);
  uint64_t joins GUARDED_BY(mu) = 0;
  bool over GUARDED_BY(mu) = false;

  // The token each stream of the upstream watch presents (asked when one
  // opens, not per event): that of the member that joined last -- of the
  // tokens checked for this range, the most recently used, so the least
  // likely to have expired (a simple token lives --auth-token-ttl after
  // its last use). Every member passed its own permission check on the
  // range; one that left no longer vouches for it.
  Metadata UpstreamAuth() REQUIRES(mu) {
    const Member* last = nullptr;
    for (const auto& [key, m] : members) {
      if (last == nullptr || m.joined > last->joined) last = &m;
    }
    return last != nullptr ? last->auth : Metadata();
  }
};

// Creates, shares and closes upstream watches on one control thread
// (creating one blocks until the member confirms it).
class WatchHub {
 public:
  WatchHub(GrpcKV* kv, std::string prefix, Counters* n)
      : kv_(kv),
        prefix_(std::move(prefix)),
        n_(n),
        thread_([this] { Run(); }) {}
  ~WatchHub() { Stop(); }

  void Stop() EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    // No member is left to feed; the upstream watches go.
    std::map<std::string, std::shared_ptr<Broadcast>> all;
    std::vector<std::shared_ptr<Broadcast>> solo;
    {
      MutexLock l(&mu_);
      all.swap(shared_);
      solo.swap(solo_);
    }
    for (auto& [g, b] : all) b->upstream.reset();
    for (auto& b : solo) b->upstream.reset();
  }

  // Requests from client streams, handled in order on the control thread.
  // `auth` is the client's "token"/"authorization" metadata: an upstream
  // watch this watcher creates is opened with it (etcd's proxy opens a
  // broadcast's watch with its first watcher's token).
  // `store_revision` is the store's revision when the watcher's permission
  // was checked (0: unknown): a watcher that joins a shared watch starts
  // there if the shared watch is behind it.
  void Create(std::shared_ptr<WatchSink> sink, int64_t id,
              pb::WatchCreateRequest req, Metadata auth,
              int64_t store_revision) {
    Post([this, sink, id, req = std::move(req), auth = std::move(auth),
          store_revision]() mutable {
      DoCreate(std::move(sink), id, std::move(req), std::move(auth),
               store_revision);
    });
  }
  // Removes watcher `id` of `sink`; then `after` (the canceled answer) with
  // the header of its last response: its upstream watch's newest, at the
  // revision the watcher has seen up to.
  void Cancel(WatchSink* sink, int64_t id,
              std::function<void(const pb::ResponseHeader&)> after) {
    Post([this, sink, id, after = std::move(after)] {
      const pb::ResponseHeader header = Remove(sink, id);
      if (after) after(header);
    });
  }
  void CancelAll(WatchSink* sink) {
    Post([this, sink] { Remove(sink, -1); });
  }

 private:
  void Post(std::function<void()> f) EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (stopping_) return;
      queue_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

  void Run() EXCLUDES(mu_) {
    for (;;) {
      std::function<void()> f;
      {
        // Checked and waited for under mu_, which Post holds to queue:
        // no wake-up is lost between the check and the wait.
        MutexLock l(&mu_);
        while (!stopping_ && queue_.empty()) cv_.wait(l.native());
        if (stopping_) return;
        f = std::move(queue_.front());
        queue_.pop_front();
      }
      f();
    }
  }

  // Watchers that start "now" with the same range and options share.
  static std::string GroupKey(const pb::WatchCreateRequest& r) {
    if (r.start_revision() != 0) return "";
    std::string g = std::to_string(r.key().size()) + ":" + r.key() +
                    std::to_string(r.range_end().size()) + ":" + r.range_end() +
                    (r.prev_kv() ? "P" : "p") +
                    (r.progress_notify() ? "N" : "n");
    for (int f : r.filters()) g += "f" + std::to_string(f);
    return g;
  }

  void DoCreate(std::shared_ptr<WatchSink> sink, int64_t id,
                pb::WatchCreateRequest req, Metadata auth,
                int64_t store_revision) {
    if (!prefix_.empty()) {
      PrefixInterval(prefix_, req.mutable_key(), req.mutable_range_end());
    }
    const std::string group = GroupKey(req);
    std::shared_ptr<Broadcast> b;
    if (!group.empty()) {
      MutexLock l(&mu_);
      auto it = shared_.find(group);
      if (it != shared_.end()) b = it->second;
    }
    if (b) {
      MutexLock l(&b->mu);
      if (!b->over) {
        // Created "now", as etcd's proxy's joiner is (at the store's
        // revision): what the shared watch last delivered may be far
        // behind, even compacted, and clientv3 resumes a broken stream
        // from the created revision.
        const int64_t start = std::max(b->revision, store_revision);
        pb::WatchResponse created;
        *created.mutable_header() = b->header;
        created.mutable_header()->set_revision(start);
        created.set_watch_id(id);
        created.set_created(true);
        // Under b->mu: no event can slip between `created` and the join.
        if (sink->Send(std::move(created))) {
          b->members[{sink.get(), id}] = {sink, std::move(auth), ++b->joins,
                                          start};
          n_->watchers.fetch_add(1);
        }
        return;
      }
    }
    b = std::make_shared<Broadcast>();
    b->group = group;
    b->upstream_req = req;
    b->upstream_req.set_watch_id(0);
    b->upstream_req.set_fragment(false);
    {
      MutexLock l(&b->mu);
      b->members[{sink.get(), id}] = {sink, std::move(auth), ++b->joins};
    }
    std::weak_ptr<Broadcast> weak = b;
    const std::string prefix = prefix_;
    Counters* n = n_;
    auto w = kv_->StartWatchWithMetadata(
        b->upstream_req,
        [weak, prefix, n](const pb::WatchResponse& r) {
          if (auto bb = weak.lock()) Deliver(*bb, prefix, n, r);
        },
        [weak]() -> Metadata {
          auto bb = weak.lock();
          if (!bb) return {};
          MutexLock l(&bb->mu);
          return bb->UpstreamAuth();
        });
    if (!w.ok()) {
      pb::WatchResponse refused;
      refused.set_watch_id(id);
      refused.set_created(true);
      refused.set_canceled(true);
      refused.set_cancel_reason(w.status().message());
      sink->Ended(id);
      sink->Send(std::move(refused));
      return;
    }
    {
      MutexLock l(&b->mu);
      if (b->over) return;  // canceled at once (e.g. compacted)
      n_->watchers.fetch_add(1);
    }
    b->upstream = std::move(*w);
    n_->upstreams.fetch_add(1);
    MutexLock l(&mu_);
    if (group.empty()) {
      solo_.push_back(b);
    } else {
      shared_[group] = b;
    }
  }

  // One upstream response, to every member with its own watch id.
  static void Deliver(Broadcast& b, const std::string& prefix, Counters* n,
                      const pb::WatchResponse& r) {
    MutexLock l(&b.mu);
    if (r.header().revision() >= b.revision) {
      b.revision = r.header().revision();
      b.header = r.header();
    }
    pb::WatchResponse out = r;
    for (mvccpb::Event& e : *out.mutable_events()) {
      if (!prefix.empty()) {
        Strip(prefix, e.mutable_kv()->mutable_key());
        if (e.has_prev_kv()) Strip(prefix, e.mutable_prev_kv()->mutable_key());
      }
    }
    if (r.canceled()) b.over = true;
    if (b.members.size() > 1) {
      n->coalesced.fetch_add(static_cast<int64_t>(b.members.size()) - 1);
    }
    for (auto it = b.members.begin(); it != b.members.end();) {
      pb::WatchResponse mine;
      pb::WatchResponse* send = Since(it->second.start, &out, &mine);
      if (send == nullptr) {
        ++it;  // nothing after the joiner's start
        continue;
      }
      send->set_watch_id(it->first.second);
      if (r.canceled()) it->second.sink->Ended(it->first.second);
      if (!it->second.sink->Send(*send) || r.canceled()) {
        it = b.members.erase(it);
        if (!r.created()) n->watchers.fetch_sub(1);
      } else {
        ++it;
      }
    }
  }

  // What of `r` goes to a member that joined at `start`: `r`, or `*mine`,
  // a copy without the events at or below `start`; null if nothing does.
  // Responses the shared watch had in flight when a watcher joined at the
  // store's newer revision carry such events; a progress notification
  // below its start would have the client resume from before it.
  static pb::WatchResponse* Since(int64_t start, pb::WatchResponse* r,
                                  pb::WatchResponse* mine) {
    if (start == 0 || r->canceled() || r->compact_revision() != 0) return r;
    if (r->events_size() == 0) {
      return r->header().revision() >= start ? r : nullptr;
    }
    if (r->events(0).kv().mod_revision() > start) return r;  // in order
    *mine = *r;
    auto* events = mine->mutable_events();
    int kept = 0;
    for (int i = 0; i < events->size(); ++i) {
      if (events->Get(i).kv().mod_revision() <= start) continue;
      if (kept != i) events->Mutable(kept)->Swap(events->Mutable(i));
      ++kept;
    }
    if (kept == 0) return nullptr;
    events->DeleteSubrange(kept, events->size() - kept);
    return mine;
  }

  // Removes watcher `id` of `sink` (-1: all of them) from every broadcast
  // and closes the upstream watches left without members. Returns the
  // header of the last response of watcher `id` (empty if not found).
  pb::ResponseHeader Remove(WatchSink* sink, int64_t id) {
    pb::ResponseHeader found;
    std::vector<std::shared_ptr<Broadcast>> all;
    {
      MutexLock l(&mu_);
      for (auto& [g, b] : shared_) all.push_back(b);
      for (auto& b : solo_) all.push_back(b);
    }
    for (auto& b : all) {
      bool empty;
      {
        MutexLock l(&b->mu);
        for (auto it = b->members.begin(); it != b->members.end();) {
          if (it->first.first == sink && (id < 0 || it->first.second == id)) {
            found = b->header;
            found.set_revision(std::max(b->revision, it->second.start));
            it = b->members.erase(it);
            n_->watchers.fetch_sub(1);
          } else {
            ++it;
          }
        }
        empty = b->members.empty();
        if (empty) b->over = true;
      }
      if (!empty) continue;
      {
        MutexLock l(&mu_);
        if (!b->group.empty()) {
          auto it = shared_.find(b->group);
          if (it != shared_.end() && it->second == b) shared_.erase(it);
        } else {
          solo_.erase(std::remove(solo_.begin(), solo_.end(), b), solo_.end());
        }
      }
      // Not under any lock: the destructor waits for the callback.
      if (b->upstream) {
        b->upstream.reset();
        n_->upstreams.fetch_sub(1);
      }
    }
    return found;
  }

  GrpcKV* const kv_;
  const std::string prefix_;
  Counters* const n_;
  Mutex mu_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Broadcast>> shared_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Broadcast>> solo_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::condition_variable cv_;  // queue_ or stopping_ changed
  std::thread thread_;
};

// One client Watch stream.
class WatchStream
    : public grpc::ServerBidiReactor<pb::WatchRequest, pb::WatchResponse> {
 public:
  // The shared sending state: it outlives the reactor while a broadcast
  // still holds it.
  class Sink : public WatchSink {
   public:
    Sink(WatchStream* s, size_t max_bytes, std::atomic<int64_t>* slow)
        : s_(s), max_bytes_(max_bytes), slow_(slow) {}
    bool Send(pb::WatchResponse r) override EXCLUDES(mu_) {
      MutexLock l(&mu_);
      if (s_ == nullptr || ending_) return false;
      // The bound is on the backlog before this response, behind the one
      // being written: a response larger than the bound (a catch-up of
      // many large values) still reaches a client that reads, while one
      // that does not read holds at most the bound plus two responses.
      if (queued_ > max_bytes_) {
        // A client that does not read must not hold the others back, nor
        // grow the proxy's memory: it is cut off, as etcd's proxy cancels a
        // watcher whose channel stays full.
        slow_->fetch_add(1);
        const size_t backlog = queued_;
        queue_.clear();
        queued_ = 0;
        EndLocked(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                               "grpc-proxy: watch stream too slow (" +
                                   std::to_string(backlog) +
                                   " bytes queued; the limit is " +
                                   std::to_string(max_bytes_) + ")"));
        return false;
      }
      const size_t bytes = r.ByteSizeLong();
      queue_.push_back({std::move(r), bytes});
      if (!writing_) {
        StartWriteLocked();
      } else {
        queued_ += bytes;
      }
      return true;
    }
    void Ended(int64_t id) override EXCLUDES(mu_) {
      MutexLock l(&mu_);
      ended_.push_back(id);
    }
    // The watchers ended since the last call (see WatchSink::Ended).
    std::vector<int64_t> TakeEnded() EXCLUDES(mu_) {
      MutexLock l(&mu_);
      return std::exchange(ended_, {});
    }
    void End(grpc::Status st) EXCLUDES(mu_) {
      MutexLock l(&mu_);
      EndLocked(std::move(st));
    }
    void WriteDone(bool ok) EXCLUDES(mu_) {
      MutexLock l(&mu_);
      writing_ = false;
      if (!queue_.empty()) queue_.pop_front();
      if (!ok && !ending_) {
        ending_ = true;
        status_ = grpc::Status::CANCELLED;
      }
      if (ending_) {
        queue_.clear();
        queued_ = 0;
        if (!finished_ && s_ != nullptr && holds_ == 0) {
          finished_ = true;
          s_->Finish(status_);
        }
      } else if (!queue_.empty()) {
        queued_ -= std::min(queued_, queue_.front().bytes);
        StartWriteLocked();
      }
    }
    void Detach() EXCLUDES(mu_) {
      MutexLock l(&mu_);
      s_ = nullptr;
    }
    // While held, the stream is not finished (its end waits for Release):
    // a permission check in flight will still start a read on it. False,
    // and not held, if the stream is already ending.
    bool Hold() EXCLUDES(mu_) {
      MutexLock l(&mu_);
      if (ending_ || s_ == nullptr) return false;
      ++holds_;
      return true;
    }
    bool Ending() EXCLUDES(mu_) {
      MutexLock l(&mu_);
      return ending_ || s_ == nullptr;
    }
    void Release() EXCLUDES(mu_) {
      MutexLock l(&mu_);
      --holds_;
      if (ending_ && !writing_ && holds_ == 0 && !finished_ && s_ != nullptr) {
        queue_.clear();
        finished_ = true;
        s_->Finish(status_);
      }
    }

   private:
    // A response and its size, counted once.
    struct Queued {
      pb::WatchResponse r;
      size_t bytes;
    };

    // Writes the front of the queue, which is no longer backlog.
    void StartWriteLocked() REQUIRES(mu_) {
      writing_ = true;
      s_->StartWrite(&queue_.front().r);
    }

    void EndLocked(grpc::Status st) REQUIRES(mu_) {
      if (ending_ || s_ == nullptr) return;
      ending_ = true;
      status_ = std::move(st);
      if (writing_ || holds_ > 0) return;  // WriteDone or Release finishes
      finished_ = true;
      s_->Finish(status_);
    }

    Mutex mu_;
    WatchStream* s_ GUARDED_BY(mu_);
    const size_t max_bytes_;
    std::atomic<int64_t>* const slow_;
    // The front is being written while writing_; deque: push_back and
    // pop_front leave the front in place.
    std::deque<Queued> queue_ GUARDED_BY(mu_);
    // The backlog: bytes of the queued responses behind the one being
    // written.
    size_t queued_ GUARDED_BY(mu_) = 0;
    bool writing_ GUARDED_BY(mu_) = false;
    bool ending_ GUARDED_BY(mu_) = false;
    bool finished_ GUARDED_BY(mu_) = false;
    int holds_ GUARDED_BY(mu_) = 0;
    grpc::Status status_ GUARDED_BY(mu_);
    std::vector<int64_t> ended_ GUARDED_BY(mu_);
  };

  WatchStream(grpc::CallbackServerContext* ctx, WatchHub* hub,
              Backends* backends, const GrpcProxyOptions* o, Counters* n)
      : ctx_(ctx),
        hub_(hub),
        b_(backends),
        o_(o),
        n_(n),
        auth_(CallerAuth(*ctx)),
        sink_(
            std::make_shared<Sink>(this, o->max_queued_watch_bytes, &n->slow)) {
    StartRead(&req_);
  }

 private:
  void OnReadDone(bool ok) override {
    // The client closed its side: as etcd, the stream ends.
    if (!ok) {
      sink_->End(grpc::Status::OK);
      return;
    }
    // Watchers the member side ended no longer count, nor hold their ids.
    // (A watcher the client cancels is erased below, at once; a cancel
    // of the member's racing a client's cancel and the reuse of its id
    // could erase the new watcher's id: the bound then counts one less.)
    for (int64_t gone : sink_->TakeEnded()) ids_.erase(gone);
    if (req_.has_create_request()) {
      // An empty key is the first key, "\0", as a member takes it (etcd's
      // v3rpc watch) and etcd's proxy passes it on.
      if (req_.create_request().key().empty()) {
        req_.mutable_create_request()->set_key(std::string(1, '\0'));
      }
      const pb::WatchCreateRequest& c = req_.create_request();
      int64_t id = c.watch_id() != 0 ? c.watch_id() : next_id_;
      // The members' bound and text (etcdjson::CheckWatcherLimit).
      Status full =
          etcdjson::CheckWatcherLimit(ids_.size(), o_->max_watchers_per_stream);
      if (!full.ok()) n_->watch_creates_refused.fetch_add(1);
      if (!full.ok() || ids_.count(id) > 0) {
        pb::WatchResponse r;
        r.mutable_header();
        r.set_watch_id(-1);
        r.set_created(true);
        r.set_canceled(true);
        r.set_cancel_reason(
            ids_.count(id) > 0
                ? "mvcc: duplicate watch ID provided on the WatchStream"
                : full.message());
        sink_->Send(std::move(r));
      } else {
        ids_.insert(id);
        while (ids_.count(next_id_) > 0) ++next_id_;
        CheckPermission(id, c);
        return;  // reading resumes when the member has answered
      }
    } else if (req_.has_cancel_request()) {
      const int64_t id = req_.cancel_request().watch_id();
      if (ids_.erase(id) > 0) {
        std::shared_ptr<Sink> sink = sink_;
        hub_->Cancel(sink.get(), id,
                     [sink, id](const pb::ResponseHeader& header) {
                       // With a header, as etcd's proxy's answer.
                       pb::WatchResponse r;
                       *r.mutable_header() = header;
                       r.set_watch_id(id);
                       r.set_canceled(true);
                       sink->Send(std::move(r));
                     });
      }
    }
    // progress requests: not forwarded (the upstream watches are shared).
    StartRead(&req_);
  }

  // One permission check's call (shared with its callback).
  struct PermissionCheck {
    grpc::ClientContext ctx;
    grpc::ByteBuffer req, resp;
  };

  // A check attempt's own bound (within the client's deadline, if any) and
  // the backoff between attempts, doubling (clientv3 retries etcd's
  // proxy's check every 25 ms; the members need not be asked that often).
  static constexpr std::chrono::milliseconds kCheckAttemptTimeout{5000};
  static constexpr std::chrono::milliseconds kCheckRetryFirst{100};
  static constexpr std::chrono::milliseconds kCheckRetryMax{2000};

  // etcd's checkPermissionForWatch: before a watcher joins or opens an
  // upstream watch (which may be another user's), a member is asked, with
  // this client's token, for a serializable count-only Range of the
  // watched range; a refusal refuses the watcher with etcd's answer. No
  // further request is read meanwhile, so the stream's requests keep
  // their order (etcd's recvLoop waits the same way), and the stream is
  // held so that it is not finished under the check.
  //
  // A check that does not reach a member (UNAVAILABLE, DEADLINE_EXCEEDED)
  // is no answer: it is asked again after a backoff, reading still paused,
  // until a member answers or the stream ends (the client goes, the proxy
  // stops). etcd's proxy waits the same way (clientv3 retries its check);
  // refused, the watch would be over for good, as clientv3 does not retry
  // a canceled create.
  void CheckPermission(int64_t id, pb::WatchCreateRequest c) {
    if (!sink_->Hold()) return;  // ending: no more reads
    check_range_.Clear();
    check_range_.set_key(c.key());
    check_range_.set_range_end(c.range_end());
    if (!o_->key_prefix.empty()) {
      PrefixInterval(o_->key_prefix, check_range_.mutable_key(),
                     check_range_.mutable_range_end());
    }
    check_range_.set_serializable(true);
    check_range_.set_count_only(true);
    check_range_.set_limit(1);
    check_id_ = id;
    check_create_ = std::move(c);
    check_backoff_ = kCheckRetryFirst;
    SendCheck();
  }

  // One attempt of the check of check_create_.
  void SendCheck() EXCLUDES(check_mu_) {
    auto check = std::make_shared<PermissionCheck>();
    ToBuffer(check_range_, &check->req);
    CopyCallerMetadata(*ctx_, &check->ctx);
    // A member that stopped answering on an open connection is given up on
    // and asked again, as one that refused the connection.
    const auto attempt_end =
        std::chrono::system_clock::now() + kCheckAttemptTimeout;
    if (check->ctx.deadline() > attempt_end) {
      check->ctx.set_deadline(attempt_end);
    }
    {
      MutexLock l(&check_mu_);
      check_ = check;
      // Canceled before it starts: gRPC cancels it when it does.
      if (cancelled_) check->ctx.TryCancel();
    }
    // Not under check_mu_: the callback may take it (ScheduleRetry).
    b_->stubs[b_->Pick()]->UnaryCall(
        &check->ctx, "/etcdserverpb.KV/Range", grpc::StubOptions(), &check->req,
        &check->resp,
        [this, check](grpc::Status st) { Checked(check.get(), st); });
  }

  void Checked(PermissionCheck* check, const grpc::Status& st) {
    // Held: nothing below can finish the stream before Release.
    std::shared_ptr<Sink> sink = sink_;
    if (!sink->Ending()) {
      if (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
          st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        if (ScheduleRetry()) return;  // still held, reading still paused
      } else {
        if (st.ok()) {
          // The store's revision when the watcher was checked: where a
          // watcher that joins a shared watch starts.
          pb::RangeResponse answer;
          const int64_t store_revision = FromBuffer(&check->resp, &answer)
                                             ? answer.header().revision()
                                             : 0;
          hub_->Create(sink, check_id_, std::move(check_create_), auth_,
                       store_revision);
        } else {
          // As etcd's proxy: created and canceled, watch id -1, an empty
          // header and clientv3's text of the member's error.
          ids_.erase(check_id_);
          if (check_create_.watch_id() == 0) {
            next_id_ = std::min(next_id_, check_id_);
          }
          pb::WatchResponse r;
          r.mutable_header();
          r.set_watch_id(-1);
          r.set_created(true);
          r.set_canceled(true);
          r.set_cancel_reason(GoErrorText(st));
          sink->Send(std::move(r));
        }
        StartRead(&req_);
      }
    }
    sink->Release();  // `this` may be gone after it
  }

  // Asks the check again after the backoff; false if the stream is being
  // canceled (then nothing is scheduled).
  bool ScheduleRetry() EXCLUDES(alarm_mu_) {
    const auto delay = check_backoff_;
    check_backoff_ = std::min(check_backoff_ * 2, kCheckRetryMax);
    MutexLock l(&alarm_mu_);
    if (alarm_cancelled_) return false;
    n_->check_retries.fetch_add(1);
    // The previous alarm, if any, has fired: dropping it calls nothing.
    retry_ = std::make_unique<grpc::Alarm>();
    retry_->Set(std::chrono::system_clock::now() + delay,
                [this](bool fired) { RetryDue(fired); });
    return true;
  }

  // On gRPC's executor: the backoff is over (fired) or was canceled.
  void RetryDue(bool fired) {
    std::shared_ptr<Sink> sink = sink_;
    if (fired && !sink->Ending()) {
      SendCheck();  // still held
      return;
    }
    sink->Release();  // `this` may be gone after it
  }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnCancel() override {
    sink_->End(grpc::Status::CANCELLED);
    {
      MutexLock l(&check_mu_);
      cancelled_ = true;
      if (check_) check_->ctx.TryCancel();
    }
    // Its callback (RetryDue) runs on gRPC's executor and takes neither
    // lock.
    MutexLock l(&alarm_mu_);
    alarm_cancelled_ = true;
    if (retry_) retry_->Cancel();
  }
  void OnDone() override {
    sink_->Detach();
    hub_->CancelAll(sink_.get());
    delete this;
  }

  grpc::CallbackServerContext* const ctx_;
  WatchHub* const hub_;
  Backends* const b_;
  const GrpcProxyOptions* const o_;
  Counters* const n_;
  const Metadata auth_;  // the client's token, for its upstream watches
  std::shared_ptr<Sink> sink_;
  pb::WatchRequest req_;
  // Touched only by reads and permission checks, one at a time.
  std::set<int64_t> ids_;
  int64_t next_id_ = 0;
  // The create being checked, its Range and the next backoff: touched by
  // the check's steps only, one at a time (reading is paused meanwhile).
  int64_t check_id_ = 0;
  pb::WatchCreateRequest check_create_;
  pb::RangeRequest check_range_;
  std::chrono::milliseconds check_backoff_{0};
  Mutex check_mu_;
  std::shared_ptr<PermissionCheck> check_ GUARDED_BY(check_mu_);
  bool cancelled_ GUARDED_BY(check_mu_) = false;
  // Set and Cancel of one alarm must not race: both under alarm_mu_.
  Mutex alarm_mu_;
  std::unique_ptr<grpc::Alarm> retry_ GUARDED_BY(alarm_mu_);
  bool alarm_cancelled_ GUARDED_BY(alarm_mu_) = false;
};

class WatchService final : public pb::Watch::CallbackService {
 public:
  WatchService(WatchHub* hub, Backends* backends, const GrpcProxyOptions* o,
               Counters* n)
      : hub_(hub), b_(backends), o_(o), n_(n) {}
  grpc::ServerBidiReactor<pb::WatchRequest, pb::WatchResponse>* Watch(
      grpc::CallbackServerContext* ctx) override {
    return new WatchStream(ctx, hub_, b_, o_, n_);
  }

 private:
  WatchHub* const hub_;
  Backends* const b_;
  const GrpcProxyOptions* const o_;
  Counters* const n_;
};

}  // namespace

// ---- the proxy ----

struct GrpcProxy::Impl {
  GrpcProxyOptions o;
  Backends backends;
  std::unique_ptr<GrpcKV> watch_kv;
  std::unique_ptr<GrpcKV> health_kv;  // CheckHealth's, with etcd's 1 s
  Counters n;
  std::unique_ptr<ProxyRangeCache> cache;  // null: disabled
  std::unique_ptr<WatchHub> hub;
  std::unique_ptr<WatchService> watch_service;
  std::unique_ptr<Forwarder> forwarder;
  std::unique_ptr<grpc::Server> server;
  metrics::Registry registry;
  std::unique_ptr<GrpcProxyHttp> http_routes;
  // The client port: HTTP/1.1 here, HTTP/2 connections handed to `server`.
  std::unique_ptr<net::HttpServer> listener;
  int port = 0;
  bool stopped = false;
};

StatusOr<std::unique_ptr<GrpcProxy>> GrpcProxy::Start(GrpcProxyOptions o) {
  if (o.endpoints.empty()) {
    return InvalidArgumentError("--endpoints: no endpoint given");
  }
  if (o.client_tls.insecure_skip_verify) {
    return InvalidArgumentError(
        "--insecure-skip-tls-verify is not supported by kplane's grpc-proxy "
        "(gRPC C++ always verifies the members' certificates; give --cacert)");
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    return InvalidArgumentError(
        "--cert-file and --key-file must be given together");
  }
  const bool client_tls = !o.client_tls.empty();
  ASSIGN_OR_RETURN(std::vector<Endpoint> eps,
                   ParseEndpoints(o.endpoints, client_tls));
  auto impl = std::make_unique<Impl>();
  impl->o = o;

  ASSIGN_OR_RETURN(std::string ca, ReadPem(o.client_tls.ca_file, "--cacert"));
  ASSIGN_OR_RETURN(std::string cert, ReadPem(o.client_tls.cert_file, "--cert"));
  ASSIGN_OR_RETURN(std::string key, ReadPem(o.client_tls.key_file, "--key"));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(o.max_recv_bytes);
  args.SetMaxSendMessageSize(o.max_send_bytes);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // writes must not be resent
  SetGrpcReconnect(&args, milliseconds(100), seconds(1));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  for (const Endpoint& e : eps) {
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (e.tls) {
      grpc::SslCredentialsOptions so;
      so.pem_root_certs = ca;
      so.pem_cert_chain = cert;
      so.pem_private_key = key;
      creds = grpc::SslCredentials(so);
    } else {
      creds = grpc::InsecureChannelCredentials();
    }
    auto ch = grpc::CreateCustomChannel(e.host_port, creds, args);
    ch->GetState(true);  // connect now: the first call finds it READY
    impl->backends.names.push_back(e.url);
    impl->backends.stubs.push_back(std::make_unique<grpc::GenericStub>(ch));
    impl->backends.channels.push_back(std::move(ch));
  }

  RemoteKVOptions ko;
  ko.endpoints = o.endpoints;
  ko.tls_files = o.client_tls;
  if (client_tls) {
    ASSIGN_OR_RETURN(ko.tls, NewStoreClientTls(o.client_tls));
  }
  // The health check's client: etcd's proxy gives its Get one second.
  RemoteKVOptions health = ko;
  health.dial_timeout = health.request_timeout = health.call_timeout =
      seconds(1);
  ASSIGN_OR_RETURN(impl->health_kv, GrpcKV::Create(health));
  ASSIGN_OR_RETURN(impl->watch_kv, GrpcKV::Create(std::move(ko)));
  impl->hub =
      std::make_unique<WatchHub>(impl->watch_kv.get(), o.key_prefix, &impl->n);
  impl->watch_service = std::make_unique<WatchService>(
      impl->hub.get(), &impl->backends, &impl->o, &impl->n);
  if (o.range_cache_entries > 0) {
    impl->cache = std::make_unique<ProxyRangeCache>(o.range_cache_entries,
                                                    o.range_cache_bytes);
  }
  impl->forwarder = std::make_unique<Forwarder>(&impl->backends, &impl->o,
                                                impl->cache.get(), &impl->n);

  // /metrics asks the members over HTTP: https:// ones need a context even
  // without TLS files (then the system's roots, as gRPC's channels use).
  std::shared_ptr<const net::TlsContext> member_http_tls = health.tls;
  if (!member_http_tls &&
      std::any_of(eps.begin(), eps.end(),
                  [](const Endpoint& e) { return e.tls; })) {
    ASSIGN_OR_RETURN(member_http_tls, NewStoreClientTls(o.client_tls));
  }
  std::shared_ptr<const net::TlsContext> serving_tls;
  if (!o.cert_file.empty()) {
    // etcd's TLSInfo.ServerConfig: a trusted CA file makes client
    // certificates required and verified against it.
    MemberTlsFiles files{.cert_file = o.cert_file,
                         .key_file = o.key_file,
                         .trusted_ca_file = o.trusted_ca_file,
                         .cipher_suites = o.cipher_suites};
    StatusOr<std::shared_ptr<const net::TlsContext>> tls =
        NewMemberServerTls(files, {"h2", "http/1.1"});
    if (!tls.ok()) {
      return tls.status().Annotate(
          "--cert-file/--key-file/--trusted-ca-file/--listen-cipher-suites");
    }
    serving_tls = *std::move(tls);
  }  // without TLS the cipher suites have nothing to restrict (etcd's too)
  std::string host;
  uint16_t listen_port = 0;
  if (Status st = net::SplitHostPort(o.listen_addr, /*allow_zero=*/true, &host,
                                     &listen_port);
      !st.ok()) {
    return InvalidArgumentError("--listen-addr: \"" + o.listen_addr +
                                "\": " + st.message());
  }

  grpc::ServerBuilder b;
  // No listening port: the client port's HttpServer hands gRPC its
  // connections (as a member's, storage/grpc/grpc_front.h).
  b.RegisterService(impl->watch_service.get());
  b.RegisterCallbackGenericService(impl->forwarder.get());
  b.SetMaxReceiveMessageSize(o.max_send_bytes);
  b.SetMaxSendMessageSize(-1);
  if (o.max_concurrent_streams > 0) {
    b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                         static_cast<int>(std::min<uint32_t>(
                             o.max_concurrent_streams, INT32_MAX)));
  }
  // etcdctl pings long watches every few seconds.
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                       1000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  impl->server = b.BuildAndStart();
  if (impl->server == nullptr) {
    impl->hub->Stop();
    return InternalError("grpc-proxy: cannot start the gRPC server");
  }
  auto proxy = std::unique_ptr<GrpcProxy>(new GrpcProxy(std::move(impl)));
  Impl* in = proxy->impl_.get();
  RegisterGrpcProxyMetrics(proxy.get(), &in->registry);
  in->http_routes = std::make_unique<GrpcProxyHttp>(
      proxy.get(), &in->registry,
      GrpcProxyHttpOptions{.members = eps, .member_tls = member_http_tls});
  net::HttpServerOptions ho;
  ho.name = "client";
  ho.host = host;
  ho.port = listen_port;
  ho.metrics = &in->registry;
  ho.worker_threads = 4;  // /health and /metrics may wait on the members
  ho.max_connections = o.max_connections;
  ho.tls = serving_tls;
  ho.handoff_preface = std::string(net::kHttp2Preface);
  ho.handoff = [server = in->server.get()](
                   int fd, std::shared_ptr<const net::TlsConnectionInfo>) {
    grpc::AddInsecureChannelFromFd(server, fd);
  };
  in->listener = std::make_unique<net::HttpServer>(ho);
  in->http_routes->AddRoutes(in->listener.get());
  Status listening = in->listener->Start();
  if (!listening.ok()) {
    return UnavailableError("listen " + o.listen_addr + ": " +
                            listening.message());
  }
  in->port = in->listener->port();
  return proxy;
}

GrpcProxy::GrpcProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcProxy::~GrpcProxy() { Stop(); }

int GrpcProxy::port() const { return impl_->port; }

metrics::Registry* GrpcProxy::metrics() { return &impl_->registry; }

void GrpcProxy::AddHttpRoutes(net::HttpServer* server) {
  impl_->http_routes->AddRoutes(server);
}

GrpcProxyStats GrpcProxy::stats() const {
  GrpcProxyStats s;
  s.upstream_watches = impl_->n.upstreams.load();
  s.watchers = impl_->n.watchers.load();
  s.slow_streams_ended = impl_->n.slow.load();
  s.forwarded_calls = impl_->n.calls.load();
  s.range_cache_hits = impl_->n.cache_hits.load();
  s.range_cache_misses = impl_->n.cache_misses.load();
  s.watch_creates_refused = impl_->n.watch_creates_refused.load();
  s.events_coalescing = impl_->n.coalesced.load();
  s.watch_checks_retried = impl_->n.check_retries.load();
  s.range_cache_entries =
      impl_->cache ? static_cast<int64_t>(impl_->cache->size()) : 0;
  return s;
}

Status GrpcProxy::CheckHealth() {
  etcdserverpb::RangeRequest req;
  // etcd's proxy asks through its namespaced client: "a" under --namespace.
  req.set_key(impl_->o.key_prefix + "a");
  StatusOr<etcdserverpb::RangeResponse> r = impl_->health_kv->Range(req);
  if (r.ok() || r.status().code() == StatusCode::kPermissionDenied) {
    return Status::Ok();
  }
  return r.status();
}

void GrpcProxy::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  // No new connection reaches gRPC once the listener has stopped; then the
  // calls (their reactors use the hub), then the upstream watches.
  if (impl_->listener) impl_->listener->Stop();
  impl_->server->Shutdown(std::chrono::system_clock::now());
  impl_->server->Wait();
  impl_->hub->Stop();
}

}  // namespace kplane::storage
