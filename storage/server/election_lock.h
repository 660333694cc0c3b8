// ElectionLockService: etcd 3.4's Election and Lock services (v3election,
// v3lock) for both client fronts (the JSON gateway's /v3/election/* and
// /v3/lock/*, the gRPC services v3electionpb.Election and v3lockpb.Lock).
// As etcd builds them on clientv3/concurrency's recipes, they are built on
// the store's own KV, leases and watch (KvService, mvcc::WatchStream):
//
//  - a waiter (Lock, Campaign) puts "<name>/<lease in hex>" with its lease
//    if absent (txn on create_revision == 0), or reuses the key its lease
//    already has; its create revision is its place in the queue;
//  - it holds the lock / leads once no key under "<name>/" has a smaller
//    create revision: a linearizable read checks that, and a watch on the
//    prefix (deletes only) re-checks on every deletion, so a waiter costs
//    one MVCC watcher and no thread;
//  - the leader is the key with the smallest create revision; Proclaim and
//    Resign act only while the leader key still has the create revision in
//    the LeaderKey (a txn compare), so a stale LeaderKey cannot act.
//
// Worked example (lock "l", leases 0x64 and 0xc8): A puts l/64 at rev 5 and
// holds the lock (nothing under "l/" created before 5). B puts l/c8 at rev
// 6, finds l/64 (create 5 < 6) and waits. A unlocks (delete l/64, rev 7):
// B's watch sees the delete, re-checks, finds nothing created before 6 and
// holds the lock with header revision 7.
//
// Differences from etcd 3.4, on purpose: a waiter whose own key disappears
// (its lease expired or was revoked, or someone deleted the key) fails at
// once -- "etcdserver: requested lease not found" if the lease is gone,
// else "session expired" (etcd 3.5's text) -- where etcd 3.4 keeps waiting
// and may then report a lock it does not hold.
//
// Errors: as etcd's servers return the errors of their embedded client,
// every error of these calls is kUnknown (gRPC code 2, HTTP 500) with
// etcd's text ("election: no leader", "election: not leader",
// "\"leader\" field must be provided", "etcdserver: requested lease not
// found", ...), except the status a caller gives Cancel() (kCancelled
// "context canceled", kDeadlineExceeded "context deadline exceeded").
// Fronts answer them with the message as is (RecipeErrorToHttp).
//
// Auth: each call takes its caller's user name (KvService::UserOf of the
// request's token) and runs every KV call of the recipe as that user, as
// etcd's servers pass the caller's token on; with auth enabled a call
// without a user fails with "etcdserver: user name is empty", one without
// the permission with "etcdserver: permission denied" (both kUnknown, as
// the other errors here). A session lease granted for a call that names
// none needs no permission (etcd's LeaseGrant).
//
// Ownership: borrows the KvService (and its StoreServer), which must
// outlive every call. Thread-safety: every method may be called from any
// thread; `done` runs exactly once, on any thread, never inside a call of
// this class made by the front; keep it short.
#ifndef KPLANE_STORAGE_SERVER_ELECTION_LOCK_H_
#define KPLANE_STORAGE_SERVER_ELECTION_LOCK_H_

#include <functional>
#include <memory>

#include "schemas/v3election.pb.h"
#include "schemas/v3lock.pb.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/server/kv_service.h"

namespace kplane::storage {

// A call that waits (Lock, Campaign, Observe).
class PendingCall {
 public:
  virtual ~PendingCall() = default;
  // Ends the call with `why` unless it has ended already: the client
  // cancelled (kCancelled) or its deadline passed (kDeadlineExceeded). A
  // waiting Lock deletes its key, a waiting Campaign resigns (as etcd does
  // on a cancelled context). Idempotent; any thread.
  virtual void Cancel(Status why) = 0;
};

class ElectionLockService {
 public:
  // etcd's session TTL when a request names no lease (concurrency's
  // defaultSessionTTL): the granted lease is never renewed.
  static constexpr int64_t kDefaultSessionTtl = 60;

  explicit ElectionLockService(KvService* kv) : kv_(kv) {}

  // Waits until the lock is held; answers the holding key.
  std::shared_ptr<PendingCall> Lock(v3lockpb::LockRequest req,
                                    Done<v3lockpb::LockResponse> done,
                                    std::string user = {});
  // Deletes the key (whoever holds it).
  void Unlock(v3lockpb::UnlockRequest req, Done<v3lockpb::UnlockResponse> done,
              std::string user = {});

  // Waits until the caller leads; answers its LeaderKey and the header of
  // the write that entered the election.
  std::shared_ptr<PendingCall> Campaign(
      v3electionpb::CampaignRequest req,
      Done<v3electionpb::CampaignResponse> done, std::string user = {});
  // Sets the leader's value; "election: not leader" if `leader` no longer
  // leads (its key is gone or was re-created).
  void Proclaim(v3electionpb::ProclaimRequest req,
                Done<v3electionpb::ProclaimResponse> done,
                std::string user = {});
  // The current leader's key-value; "election: no leader" if none.
  void Leader(v3electionpb::LeaderRequest req,
              Done<v3electionpb::LeaderResponse> done, std::string user = {});
  // Deletes the leader key if it is still this leadership's (no error
  // otherwise, as etcd).
  void Resign(v3electionpb::ResignRequest req,
              Done<v3electionpb::ResignResponse> done, std::string user = {});
  // Calls `on_leader` with the current leader (once there is one), then with
  // every proclamation and every later leader, in order (etcd's Observe:
  // each leader's value changes, not necessarily every intermediate
  // leader). `on_leader` runs under the observer's lock, one at a time: it
  // must not block or call Cancel. `on_end` runs once when the observation
  // ends: OK when its watch was lost or a read failed (permission denied
  // included), as etcd's observe ends the stream without an error; the
  // Cancel status when cancelled.
  std::shared_ptr<PendingCall> Observe(
      v3electionpb::LeaderRequest req,
      std::function<void(const v3electionpb::LeaderResponse&)> on_leader,
      std::function<void(Status)> on_end, std::string user = {});

  KvService* kv() const { return kv_; }

 private:
  KvService* const kv_;
};

// The HTTP status, gRPC code and text a front answers an error of these
// services with: the message as is (no "etcdserver: " added).
etcdjson::HttpError RecipeErrorToHttp(const Status& s);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_ELECTION_LOCK_H_
