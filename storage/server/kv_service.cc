#include "storage/server/kv_service.h"

#include <memory>
#include <optional>
#include <utility>

#include "storage/mvcc/txn_rules.h"
#include "storage/server/auth_store.h"
#include "storage/server/proposer.h"

namespace kplane::storage {

namespace {

Status KeyNotProvided() {
  return InvalidArgumentError("etcdserver: key is not provided");
}

template <typename T>
void Propose(StoreServer* s, storagepb::InternalRaftRequest ir, Done<T> done) {
  s->ProposeAsync(std::move(ir),
                  [done = std::move(done)](StatusOr<ApplyResponse> res) {
                    done(ResponseAs<T>(std::move(res)));
                  });
}

// Who asks, and the auth revision their request was admitted at (etcd's
// RequestHeader.username and auth_revision, set where etcd sets them: just
// before the proposal).
void SetCaller(StoreServer* s, std::string user,
               storagepb::InternalRaftRequest* ir) {
  if (!user.empty()) ir->set_auth_revision(s->auth()->revision());
  ir->set_user(std::move(user));
}

// With auth enabled, the auth revision a read is checked at (nullopt
// while auth is disabled: nothing is checked).
std::optional<uint64_t> AuthRevisionOf(StoreServer* s) {
  if (!s->auth()->enabled()) return std::nullopt;
  return s->auth()->revision();
}

// etcd's doSerialize: if users, roles or permissions changed while a read
// was served, the permission it was checked with may no longer hold, and
// the read answers ErrAuthOldRevision instead of what it read (clientv3
// then fetches a new token and retries). `checked_at` from AuthRevisionOf
// before the check.
Status CheckAuthUnchanged(StoreServer* s, std::optional<uint64_t> checked_at) {
  if (checked_at && s->auth()->revision() != *checked_at) {
    return autherr::AuthOldRevision();
  }
  return Status::Ok();
}

}  // namespace

void KvService::Range(etcdserverpb::RangeRequest req,
                      Done<etcdserverpb::RangeResponse> done,
                      std::string user) {
  auto resp = std::make_shared<etcdserverpb::RangeResponse>();
  etcdserverpb::RangeResponse* out = resp.get();
  Range(
      std::move(req), out,
      [resp = std::move(resp), done = std::move(done)](Status st) {
        if (st.ok()) {
          done(std::move(*resp));
        } else {
          done(st);
        }
      },
      std::move(user));
}

void KvService::Range(etcdserverpb::RangeRequest req,
                      etcdserverpb::RangeResponse* out,
                      std::function<void(Status)> done, std::string user) {
  if (req.key().empty()) {
    done(KeyNotProvided());
    return;
  }
  StoreServer* s = server_;
  auto rr = std::make_shared<etcdserverpb::RangeRequest>(std::move(req));
  auto serve = [s, rr, out, done, user = std::move(user),
                hook = after_read_hook_] {
    const std::optional<uint64_t> auth_revision = AuthRevisionOf(s);
    if (auth_revision) {
      if (Status p = s->auth()->CheckRange(user, rr->key(), rr->range_end());
          !p.ok()) {
        done(p);
        return;
      }
    }
    StatusOr<StoreRef> store = s->ReadStore();
    if (!store.ok()) {
      done(store.status());
      return;
    }
    Status st = (*store)->Range(*rr, out);
    *store = StoreRef();
    if (hook) hook();
    if (Status a = CheckAuthUnchanged(s, auth_revision); !a.ok()) {
      done(a);
      return;
    }
    if (st.ok()) s->FillHeader(out->mutable_header());
    done(st);
  };
  if (rr->serializable()) {
    serve();
    return;
  }
  s->LinearizableReadAsync([serve, done](Status st) {
    if (!st.ok()) {
      done(st);
    } else {
      serve();
    }
  });
}

void KvService::Put(etcdserverpb::PutRequest req,
                    Done<etcdserverpb::PutResponse> done, std::string user) {
  // etcd's checkPutRequest, before a raft entry is spent (the store checks
  // again when it applies one).
  if (Status st = mvcc::CheckPutRequest(req); !st.ok()) {
    done(std::move(st));
    return;
  }
  storagepb::InternalRaftRequest ir;
  SetCaller(server_, std::move(user), &ir);
  *ir.mutable_put() = std::move(req);
  Propose(server_, std::move(ir), std::move(done));
}

void KvService::DeleteRange(etcdserverpb::DeleteRangeRequest req,
                            Done<etcdserverpb::DeleteRangeResponse> done,
                            std::string user) {
  if (req.key().empty()) {
    done(KeyNotProvided());
    return;
  }
  storagepb::InternalRaftRequest ir;
  SetCaller(server_, std::move(user), &ir);
  *ir.mutable_delete_range() = std::move(req);
  Propose(server_, std::move(ir), std::move(done));
}

void KvService::Txn(etcdserverpb::TxnRequest req,
                    Done<etcdserverpb::TxnResponse> done, std::string user) {
  StoreServer* s = server_;
  // etcd's checkTxnRequest, where etcd runs it: before the permission
  // check and the proposal, so that a txn the store would refuse costs no
  // raft entry. (The store checks again when it applies one.)
  Status valid = mvcc::CheckTxnNesting(req);
  if (valid.ok()) valid = mvcc::CheckTxnRequest(req, s->config().max_txn_ops);
  if (!valid.ok()) {
    done(std::move(valid));
    return;
  }
  if (!mvcc::IsTxnReadOnly(req)) {
    storagepb::InternalRaftRequest ir;
    SetCaller(s, std::move(user), &ir);
    *ir.mutable_txn() = std::move(req);
    Propose(s, std::move(ir), std::move(done));
    return;
  }
  auto txn = std::make_shared<etcdserverpb::TxnRequest>(std::move(req));
  s->LinearizableReadAsync([s, txn, done, user = std::move(user),
                            hook = after_read_hook_](Status st) {
    if (!st.ok()) {
      done(st);
      return;
    }
    const std::optional<uint64_t> auth_revision = AuthRevisionOf(s);
    if (auth_revision) {
      if (Status p = s->auth()->CheckTxn(user, *txn); !p.ok()) {
        done(p);
        return;
      }
    }
    StatusOr<StoreRef> store = s->ReadStore();
    if (!store.ok()) {
      done(store.status());
      return;
    }
    auto resp = (*store)->Txn(*txn);
    *store = StoreRef();
    if (hook) hook();
    if (Status st = CheckAuthUnchanged(s, auth_revision); !st.ok()) {
      done(st);
      return;
    }
    if (resp.ok()) s->FillHeader(resp->mutable_header());
    done(std::move(resp));
  });
}

void KvService::Compact(etcdserverpb::CompactionRequest req,
                        Done<etcdserverpb::CompactionResponse> done) {
  StoreServer* s = server_;
  bool physical = req.physical();
  int64_t rev = req.revision();
  storagepb::InternalRaftRequest ir;
  *ir.mutable_compaction() = std::move(req);
  s->ProposeAsync(std::move(ir), [s, done, physical,
                                  rev](StatusOr<ApplyResponse> res) {
    auto resp = ResponseAs<etcdserverpb::CompactionResponse>(std::move(res));
    if (!resp.ok() || !physical) {
      done(std::move(resp));
      return;
    }
    // Waiting for the physical compaction must not hold the apply thread.
    s->Submit([s, done, rev, resp = std::move(*resp)] {
      StoreRef store = s->mvcc();
      Status w = store ? store->WaitForCompaction(rev)
                       : UnavailableError("etcdserver: no store");
      store = StoreRef();
      if (!w.ok()) {
        done(w);
      } else {
        done(resp);
      }
    });
  });
}

void KvService::LeaseGrant(etcdserverpb::LeaseGrantRequest req,
                           Done<etcdserverpb::LeaseGrantResponse> done) {
  storagepb::InternalRaftRequest ir;
  *ir.mutable_lease_grant() = std::move(req);
  Propose(server_, std::move(ir), std::move(done));
}

void KvService::LeaseRevoke(etcdserverpb::LeaseRevokeRequest req,
                            Done<etcdserverpb::LeaseRevokeResponse> done,
                            std::string user) {
  storagepb::InternalRaftRequest ir;
  ir.set_user(std::move(user));
  *ir.mutable_lease_revoke() = std::move(req);
  Propose(server_, std::move(ir), std::move(done));
}

void KvService::AuthApply(storagepb::AuthRequest req, std::string user,
                          ApplyCallback done) {
  StoreServer* s = server_;
  // The requests whose Prepare hashes a password go to the password
  // thread; the others (roles, grants, enable) do not queue behind them.
  const bool hashes = AuthStore::PrepareHashes(req);
  auto submit = [s, hashes](std::function<void()> fn) {
    if (!hashes) {
      s->Submit(std::move(fn));
      return true;
    }
    return s->SubmitPasswordWork(std::move(fn));
  };
  // The job owns `done` until it runs; a refused job never runs, so the
  // refusal answers through the same shared `done`.
  auto answer = std::make_shared<ApplyCallback>(std::move(done));
  const bool queued = submit([s, req = std::move(req), user = std::move(user),
                              answer]() mutable {
    ApplyCallback& done = *answer;
    StatusOr<storagepb::AuthRequest> prepared =
        s->auth()->Prepare(std::move(req));
    if (!prepared.ok()) {
      done(prepared.status());
      return;
    }
    storagepb::InternalRaftRequest ir;
    ir.set_user(std::move(user));
    *ir.mutable_auth() = *std::move(prepared);
    s->ProposeAsync(std::move(ir), std::move(done));
  });
  if (!queued) {
    // etcd's ErrTooManyRequests (gRPC RESOURCE_EXHAUSTED; the gateway's 429).
    (*answer)(ResourceExhaustedError("etcdserver: too many requests"));
  }
}

void KvService::FillAuthHeader(StoreServer* s,
                               etcdserverpb::ResponseHeader* h) {
  s->FillHeader(h);
  h->set_revision(s->CurrentRevision());
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse> KvService::LeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req, const std::string& user) {
  StoreServer* s = server_;
  if (AuthRevisionOf(s)) {
    if (user.empty()) return autherr::UserEmpty();
    // The keys as this member applied them (every member tracks them; only
    // the leader counts the time down).
    etcdserverpb::LeaseTimeToLiveRequest with_keys = req;
    with_keys.set_keys(true);
    ASSIGN_OR_RETURN(StoreRef store, s->ReadStore());
    ASSIGN_OR_RETURN(etcdserverpb::LeaseTimeToLiveResponse attached,
                     store->LeaseTimeToLive(with_keys));
    store = StoreRef();
    for (const std::string& key : attached.keys()) {
      RETURN_IF_ERROR(s->auth()->CheckRange(user, key, ""));
    }
  }
  return s->LeaseTimeToLive(req);
}

StatusOr<etcdserverpb::LeaseKeepAliveResponse> KvService::KeepAlive(
    const etcdserverpb::LeaseKeepAliveRequest& req) {
  etcdserverpb::LeaseKeepAliveResponse resp;
  if (req.id() != 0) {
    auto k = server_->LeaseKeepAlive(req);
    if (k.ok()) return k;
    if (!k.status().Is(StatusCode::kNotFound)) return k.status();
    // etcd answers an unknown lease with its ID and no TTL.
    resp.set_id(req.id());
  }
  server_->FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(server_->CurrentRevision());
  return resp;
}

}  // namespace kplane::storage
