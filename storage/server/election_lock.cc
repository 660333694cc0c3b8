#include "storage/server/election_lock.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "storage/mvcc/watch.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;
namespace epb = v3electionpb;
namespace lpb = v3lockpb;

Status Unknown(std::string_view msg) {
  return Status(StatusCode::kUnknown, msg);
}

// An error of the KV layer as etcd's v3election/v3lock return it: etcd's
// text (as its client reports it), code Unknown.
Status Recipe(const Status& s) {
  if (s.ok() || s.Is(StatusCode::kUnknown)) return s;
  return Unknown(etcdjson::StatusToError(s).message);
}

Status NoLeaderField() { return Unknown("\"leader\" field must be provided"); }

// etcd's clientv3.GetPrefixRangeEnd: the first key after every key that
// starts with `p` ("\0", every key, if there is none).
std::string PrefixEnd(std::string p) {
  while (!p.empty()) {
    unsigned char last = static_cast<unsigned char>(p.back());
    if (last < 0xff) {
      p.back() = static_cast<char>(last + 1);
      return p;
    }
    p.pop_back();
  }
  return std::string(1, '\0');
}

// "<name>/<lease in hex>", concurrency's key of a session in a prefix.
std::string SessionKey(const std::string& prefix, int64_t lease) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%llx",
                static_cast<unsigned long long>(lease));
  return prefix + buf;
}

// clientv3.WithFirstCreate on `prefix`: the key created first.
pb::RangeRequest FirstCreate(const std::string& prefix) {
  pb::RangeRequest r;
  r.set_key(prefix);
  r.set_range_end(PrefixEnd(prefix));
  r.set_sort_target(pb::RangeRequest::CREATE);
  r.set_sort_order(pb::RangeRequest::ASCEND);
  r.set_limit(1);
  return r;
}

// A txn that runs `op` if `key`'s create revision is `rev`.
pb::TxnRequest IfCreated(const std::string& key, int64_t rev) {
  pb::TxnRequest t;
  pb::Compare* c = t.add_compare();
  c->set_key(key);
  c->set_target(pb::Compare::CREATE);
  c->set_result(pb::Compare::EQUAL);
  c->set_create_revision(rev);
  return t;
}

// A lock or a leadership once held.
struct Held {
  pb::ResponseHeader header;
  std::string key;
  int64_t rev = 0;
  int64_t lease = 0;
};

// One waiting Lock or Campaign (see the header comment for the recipe).
// Owns itself through the callbacks in flight; the front holds it to
// Cancel().
class Acquire final : public PendingCall,
                      public std::enable_shared_from_this<Acquire> {
 public:
  using Finish = std::function<void(StatusOr<Held>)>;

  Acquire(KvService* kv, std::string user, bool campaign,
          const std::string& name, int64_t lease, std::string value,
          Finish finish)
      : kv_(kv),
        user_(std::move(user)),
        campaign_(campaign),
        prefix_(name + "/"),
        value_(std::move(value)),
        lease_(lease),
        finish_(std::move(finish)) {}

  void Start() {
    if (lease_ != 0) {
      Enter();
      return;
    }
    // No lease named: a session lease of its own, as concurrency.NewSession
    // grants one (and the server orphans it at once).
    pb::LeaseGrantRequest g;
    g.set_ttl(ElectionLockService::kDefaultSessionTtl);
    auto self = shared_from_this();
    kv_->LeaseGrant(std::move(g), [self](StatusOr<pb::LeaseGrantResponse> r) {
      if (!r.ok()) {
        self->End(Recipe(r.status()), false);
        return;
      }
      self->lease_ = r->id();
      self->Enter();
    });
  }

  void Cancel(Status why) override { End(std::move(why), true); }

 private:
  // Puts our key unless our lease has it already.
  void Enter() EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (ended_) return;  // cancelled while the lease was granted
    }
    key_ = SessionKey(prefix_, lease_);
    pb::TxnRequest t = IfCreated(key_, 0);
    pb::PutRequest* put = t.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_value(campaign_ ? value_ : "");
    put->set_lease(lease_);
    t.add_failure()->mutable_request_range()->set_key(key_);
    auto self = shared_from_this();
    kv_->Txn(
        std::move(t),
        [self](StatusOr<pb::TxnResponse> r) { self->Entered(std::move(r)); },
        user_);
  }

  void Entered(StatusOr<pb::TxnResponse> r) EXCLUDES(mu_) {
    if (!r.ok()) {
      End(Recipe(r.status()), false);
      return;
    }
    int64_t rev = r->header().revision();
    bool proclaim = false;
    if (!r->succeeded()) {
      const auto& kvs = r->responses(0).response_range().kvs();
      if (kvs.empty()) {  // cannot happen: the txn saw the key
        End(Unknown("session expired"), false);
        return;
      }
      rev = kvs[0].create_revision();
      proclaim = campaign_ && kvs[0].value() != value_;
    }
    bool ended;
    {
      MutexLock l(&mu_);
      rev_ = rev;
      txn_header_ = r->header();
      entered_ = true;
      ended = ended_;
    }
    if (ended) {  // cancelled while the txn was in flight
      RemoveKey();
      return;
    }
    if (!proclaim) {
      Wait();
      return;
    }
    // Campaigning again with another value: proclaim it first (etcd).
    pb::TxnRequest t = IfCreated(key_, rev);
    pb::PutRequest* put = t.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_value(value_);
    put->set_lease(lease_);
    auto self = shared_from_this();
    kv_->Txn(
        std::move(t),
        [self](StatusOr<pb::TxnResponse> p) {
          if (!p.ok()) {
            self->End(Recipe(p.status()), true);
          } else if (!p->succeeded()) {
            self->End(Unknown("election: not leader"), false);
          } else {
            self->Wait();
          }
        },
        user_);
  }

  // Watches the prefix for deletions, then checks.
  void Wait() EXCLUDES(mu_) {
    StatusOr<StoreRef> store = kv_->server()->ReadStore();
    if (!store.ok()) {
      End(Recipe(store.status()), !campaign_);
      return;
    }
    std::weak_ptr<Acquire> weak = weak_from_this();
    {
      MutexLock l(&mu_);
      if (ended_) return;
      stream_ = (*store)->NewWatchStream();
      *store = StoreRef();  // the stream does not pin the store
      // Runs on the writer's thread: only schedules a drain.
      stream_->SetNotify([weak] {
        auto self = weak.lock();
        if (!self || self->drain_scheduled_.exchange(true)) return;
        StoreServer* s = self->kv_->server();
        s->Submit([self = std::move(self)] { self->Drain(); });
      });
      // From the member's current revision on; the check below reads at
      // that revision or later, so no deletion falls between the two.
      pb::WatchCreateRequest w;
      w.set_key(prefix_);
      w.set_range_end(PrefixEnd(prefix_));
      w.add_filters(pb::WatchCreateRequest::NOPUT);
      StatusOr<int64_t> id = stream_->Watch(w);
      if (!id.ok()) {
        stream_.reset();
        l.Unlock();
        End(Recipe(id.status()), !campaign_);
        return;
      }
    }
    Check();
  }

  void Drain() EXCLUDES(mu_) {
    drain_scheduled_.store(false);
    std::vector<mvcc::WatchItem> items;
    {
      MutexLock l(&mu_);
      if (!stream_) return;
      stream_->PopAll(&items);
    }
    bool deleted = false;
    for (const mvcc::WatchItem& item : items) {
      if (item.canceled) {
        End(Unknown("lost watcher waiting for delete"), !campaign_);
        return;
      }
      if (item.events && !item.events->empty()) deleted = true;
    }
    if (deleted) Check();
  }

  // One linearizable read of the first-created key under the prefix and of
  // our key: held if ours is first, failed if ours is gone.
  void Check() {
    pb::TxnRequest t;
    *t.add_success()->mutable_request_range() = FirstCreate(prefix_);
    t.add_success()->mutable_request_range()->set_key(key_);
    auto self = shared_from_this();
    kv_->Txn(
        std::move(t),
        [self](StatusOr<pb::TxnResponse> r) { self->Checked(std::move(r)); },
        user_);
  }

  void Checked(StatusOr<pb::TxnResponse> r) {
    if (!r.ok()) {
      End(Recipe(r.status()), !campaign_);
      return;
    }
    const auto& owner = r->responses(0).response_range().kvs();
    const auto& mine = r->responses(1).response_range().kvs();
    if (mine.empty() || mine[0].create_revision() != rev_) {
      KeyLost();
      return;
    }
    if (!owner.empty() && owner[0].create_revision() != rev_) return;
    Held h;
    h.header = campaign_ ? txn_header_ : r->header();
    h.key = key_;
    h.rev = rev_;
    h.lease = lease_;
    End(std::move(h), false);
  }

  // Our key is gone while we waited: say why (the lease lookup may wait
  // for a linearizable read: on a worker).
  void KeyLost() {
    auto self = shared_from_this();
    kv_->server()->Submit([self] {
      pb::LeaseTimeToLiveRequest q;
      q.set_id(self->lease_);
      auto ttl = self->kv_->server()->LeaseTimeToLive(q);
      self->End(ttl.ok() && ttl->ttl() > 0
                    ? Unknown("session expired")
                    : Unknown("etcdserver: requested lease not found"),
                false);
    });
  }

  // Delete our key if it is still ours (etcd: Mutex.Unlock after a failed
  // wait, Election.Resign after a cancelled campaign), then run `then`.
  void RemoveKey(std::function<void()> then = [] {}) {
    pb::TxnRequest t = IfCreated(key_, rev_);
    t.add_success()->mutable_request_delete_range()->set_key(key_);
    kv_->Txn(
        std::move(t),
        [then = std::move(then)](StatusOr<pb::TxnResponse>) { then(); }, user_);
  }

  // Finishes once with `r`; `cleanup`: also remove our key if entered.
  void End(StatusOr<Held> r, bool cleanup) EXCLUDES(mu_) {
    Finish f;
    bool remove;
    std::unique_ptr<mvcc::WatchStream> stream;
    {
      MutexLock l(&mu_);
      if (ended_) return;
      ended_ = true;
      f = std::move(finish_);
      finish_ = nullptr;
      remove = cleanup && entered_;
      stream = std::move(stream_);
    }
    stream.reset();
    if (!remove) {
      f(std::move(r));
      return;
    }
    // Answered once the key is gone, as etcd's recipes delete it before
    // they return the error.
    auto shared = std::make_shared<StatusOr<Held>>(std::move(r));
    RemoveKey([f = std::move(f), shared] { f(std::move(*shared)); });
  }

  KvService* const kv_;
  // The caller, whose permissions every KV call is checked against (etcd
  // runs its recipes with the caller's token).
  const std::string user_;
  const bool campaign_;
  const std::string prefix_, value_;
  // Written before the first txn and read only after it.
  int64_t lease_;
  std::string key_;
  std::atomic<bool> drain_scheduled_{false};
  Mutex mu_;
  Finish finish_ GUARDED_BY(mu_);
  bool ended_ GUARDED_BY(mu_) = false;
  bool entered_ GUARDED_BY(mu_) = false;
  // Set with entered_ (and read after it, under mu_ or after Entered).
  int64_t rev_ = 0;
  pb::ResponseHeader txn_header_;
  std::unique_ptr<mvcc::WatchStream> stream_ GUARDED_BY(mu_);
};

// One Observe call: etcd's Election.observe as a state machine over one
// MVCC watch stream (one watcher at a time).
class Observer final : public PendingCall,
                       public std::enable_shared_from_this<Observer> {
 public:
  Observer(KvService* kv, std::string user, const std::string& name,
           std::function<void(const epb::LeaderResponse&)> on_leader,
           std::function<void(Status)> on_end)
      : kv_(kv),
        user_(std::move(user)),
        prefix_(name + "/"),
        on_leader_(std::move(on_leader)),
        on_end_(std::move(on_end)) {}

  void Start() EXCLUDES(mu_) {
    StatusOr<StoreRef> store = kv_->server()->ReadStore();
    if (!store.ok()) {
      End(Recipe(store.status()));
      return;
    }
    std::weak_ptr<Observer> weak = weak_from_this();
    {
      MutexLock l(&mu_);
      stream_ = (*store)->NewWatchStream();
      *store = StoreRef();
      stream_->SetNotify([weak] {
        auto self = weak.lock();
        if (!self || self->drain_scheduled_.exchange(true)) return;
        StoreServer* s = self->kv_->server();
        s->Submit([self = std::move(self)] { self->Drain(); });
      });
    }
    Get();
  }

  // On a worker: on_leader may be running under mu_ on this thread.
  void Cancel(Status why) override {
    auto self = shared_from_this();
    kv_->server()->Submit([self, why] { self->End(why); });
  }

 private:
  enum class Phase { kGet, kAwaitPut, kFollow };

  // The leader now, or a watch for the first candidate.
  void Get() {
    auto self = shared_from_this();
    kv_->Range(
        FirstCreate(prefix_),
        [self](StatusOr<pb::RangeResponse> r) {
          // The read is checked for the caller; the watch that follows it
          // serves only what the read was allowed to see (as etcd checks a
          // watch once, when it is created).
          if (!r.ok()) {
            // etcd's observe ends its stream without an error when a read
            // fails (a permission denied included).
            self->End(Status::Ok());
            return;
          }
          MutexLock l(&self->mu_);
          if (self->ended_) return;
          if (r->kvs().empty()) {
            // etcd watches from the read's own revision, puts only. (An empty
            // store is at revision 0, which a watch reads as "from now": 1.)
            self->WatchLocked(self->prefix_, PrefixEnd(self->prefix_),
                              std::max<int64_t>(r->header().revision(), 1),
                              Phase::kAwaitPut);
            return;
          }
          self->EmitLocked(r->header(), r->kvs(0));
          self->WatchLocked(r->kvs(0).key(), "", r->header().revision() + 1,
                            Phase::kFollow);
        },
        user_);
  }

  void WatchLocked(const std::string& key, const std::string& end, int64_t from,
                   Phase phase) REQUIRES(mu_) {
    pb::WatchCreateRequest w;
    w.set_key(key);
    w.set_range_end(end);
    w.set_start_revision(from);
    StatusOr<int64_t> id = stream_->Watch(w);
    if (!id.ok()) {  // e.g. compacted past `from`: etcd's observe ends
      EndLocked(Status::Ok());
      return;
    }
    watch_id_ = *id;
    phase_ = phase;
  }

  void EmitLocked(const pb::ResponseHeader& h, const mvccpb::KeyValue& kv)
      REQUIRES(mu_) {
    epb::LeaderResponse resp;
    *resp.mutable_header() = h;
    *resp.mutable_kv() = kv;
    on_leader_(resp);
  }

  void Drain() EXCLUDES(mu_) {
    drain_scheduled_.store(false);
    std::vector<mvcc::WatchItem> items;
    MutexLock l(&mu_);
    if (ended_ || !stream_) return;
    stream_->PopAll(&items);
    for (const mvcc::WatchItem& item : items) {
      if (ended_ || phase_ == Phase::kGet) return;
      if (item.watch_id != watch_id_) continue;  // an earlier watcher's
      if (item.canceled) {
        EndLocked(Status::Ok());
        return;
      }
      if (!item.events) continue;
      pb::ResponseHeader h;
      kv_->server()->FillHeader(&h);
      for (const mvccpb::Event& ev : *item.events) {
        if (phase_ == Phase::kAwaitPut) {
          if (ev.type() != mvccpb::Event::PUT) continue;
          h.set_revision(ev.kv().mod_revision());
          EmitLocked(h, ev.kv());
          (void)stream_->Cancel(watch_id_);
          WatchLocked(ev.kv().key(), "", ev.kv().mod_revision() + 1,
                      Phase::kFollow);
          break;
        }
        if (ev.type() == mvccpb::Event::DELETE) {
          // The leader is gone: read who leads now.
          (void)stream_->Cancel(watch_id_);
          phase_ = Phase::kGet;
          l.Unlock();
          Get();
          return;
        }
        h.set_revision(item.revision);
        EmitLocked(h, ev.kv());
      }
    }
  }

  void End(Status st) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    EndLocked(std::move(st));
  }

  void EndLocked(Status st) REQUIRES(mu_) {
    if (ended_) return;
    ended_ = true;
    stream_.reset();
    on_leader_ = nullptr;
    auto on_end = std::move(on_end_);
    on_end_ = nullptr;
    on_end(std::move(st));
  }

  KvService* const kv_;
  const std::string user_;  // the caller (see Acquire::user_)
  const std::string prefix_;
  std::atomic<bool> drain_scheduled_{false};
  Mutex mu_;
  std::function<void(const epb::LeaderResponse&)> on_leader_ GUARDED_BY(mu_);
  std::function<void(Status)> on_end_ GUARDED_BY(mu_);
  bool ended_ GUARDED_BY(mu_) = false;
  Phase phase_ GUARDED_BY(mu_) = Phase::kGet;
  int64_t watch_id_ GUARDED_BY(mu_) = -1;
  std::unique_ptr<mvcc::WatchStream> stream_ GUARDED_BY(mu_);
};

}  // namespace

std::shared_ptr<PendingCall> ElectionLockService::Lock(
    lpb::LockRequest req, Done<lpb::LockResponse> done, std::string user) {
  auto a = std::make_shared<Acquire>(
      kv_, std::move(user), false, req.name(), req.lease(), "",
      [done = std::move(done)](StatusOr<Held> h) {
        if (!h.ok()) {
          done(h.status());
          return;
        }
        lpb::LockResponse resp;
        *resp.mutable_header() = h->header;
        resp.set_key(h->key);
        done(std::move(resp));
      });
  a->Start();
  return a;
}

void ElectionLockService::Unlock(lpb::UnlockRequest req,
                                 Done<lpb::UnlockResponse> done,
                                 std::string user) {
  pb::DeleteRangeRequest d;
  d.set_key(req.key());
  kv_->DeleteRange(
      std::move(d),
      [done = std::move(done)](StatusOr<pb::DeleteRangeResponse> r) {
        if (!r.ok()) {
          done(Recipe(r.status()));
          return;
        }
        lpb::UnlockResponse resp;
        *resp.mutable_header() = r->header();
        done(std::move(resp));
      },
      std::move(user));
}

std::shared_ptr<PendingCall> ElectionLockService::Campaign(
    epb::CampaignRequest req, Done<epb::CampaignResponse> done,
    std::string user) {
  std::string name = req.name();
  auto a = std::make_shared<Acquire>(
      kv_, std::move(user), true, name, req.lease(), req.value(),
      [name, done = std::move(done)](StatusOr<Held> h) {
        if (!h.ok()) {
          done(h.status());
          return;
        }
        epb::CampaignResponse resp;
        *resp.mutable_header() = h->header;
        epb::LeaderKey* k = resp.mutable_leader();
        k->set_name(name);
        k->set_key(h->key);
        k->set_rev(h->rev);
        k->set_lease(h->lease);
        done(std::move(resp));
      });
  a->Start();
  return a;
}

void ElectionLockService::Proclaim(epb::ProclaimRequest req,
                                   Done<epb::ProclaimResponse> done,
                                   std::string user) {
  if (!req.has_leader()) {
    done(NoLeaderField());
    return;
  }
  const epb::LeaderKey& leader = req.leader();
  pb::TxnRequest t = IfCreated(leader.key(), leader.rev());
  pb::PutRequest* put = t.add_success()->mutable_request_put();
  put->set_key(leader.key());
  put->set_value(req.value());
  put->set_lease(leader.lease());
  kv_->Txn(
      std::move(t),
      [done = std::move(done)](StatusOr<pb::TxnResponse> r) {
        if (!r.ok()) {
          done(Recipe(r.status()));
        } else if (!r->succeeded()) {
          done(Unknown("election: not leader"));
        } else {
          epb::ProclaimResponse resp;
          *resp.mutable_header() = r->header();
          done(std::move(resp));
        }
      },
      std::move(user));
}

void ElectionLockService::Leader(epb::LeaderRequest req,
                                 Done<epb::LeaderResponse> done,
                                 std::string user) {
  kv_->Range(
      FirstCreate(req.name() + "/"),
      [done = std::move(done)](StatusOr<pb::RangeResponse> r) {
        if (!r.ok()) {
          done(Recipe(r.status()));
        } else if (r->kvs().empty()) {
          done(Unknown("election: no leader"));
        } else {
          epb::LeaderResponse resp;
          *resp.mutable_header() = r->header();
          *resp.mutable_kv() = r->kvs(0);
          done(std::move(resp));
        }
      },
      std::move(user));
}

void ElectionLockService::Resign(epb::ResignRequest req,
                                 Done<epb::ResignResponse> done,
                                 std::string user) {
  if (!req.has_leader()) {
    done(NoLeaderField());
    return;
  }
  pb::TxnRequest t = IfCreated(req.leader().key(), req.leader().rev());
  t.add_success()->mutable_request_delete_range()->set_key(req.leader().key());
  kv_->Txn(
      std::move(t),
      [done = std::move(done)](StatusOr<pb::TxnResponse> r) {
        if (!r.ok()) {
          done(Recipe(r.status()));
          return;
        }
        epb::ResignResponse resp;
        *resp.mutable_header() = r->header();
        done(std::move(resp));
      },
      std::move(user));
}

std::shared_ptr<PendingCall> ElectionLockService::Observe(
    epb::LeaderRequest req,
    std::function<void(const epb::LeaderResponse&)> on_leader,
    std::function<void(Status)> on_end, std::string user) {
  auto o = std::make_shared<Observer>(kv_, std::move(user), req.name(),
                                      std::move(on_leader), std::move(on_end));
  o->Start();
  return o;
}

etcdjson::HttpError RecipeErrorToHttp(const Status& s) {
  int code = etcdjson::kGrpcUnknown;
  if (s.Is(StatusCode::kCancelled)) code = etcdjson::kGrpcCanceled;
  if (s.Is(StatusCode::kDeadlineExceeded)) {
    code = etcdjson::kGrpcDeadlineExceeded;
  }
  return etcdjson::HttpError{etcdjson::HttpStatusForGrpcCode(code), code,
                             s.message()};
}

}  // namespace kplane::storage
