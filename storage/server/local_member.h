// LocalMember: this member of the store as the other parts of the server
// see it: its id and cluster, its raft node's view of leader and term, and
// two facts learned while it runs (it published its attributes, it was
// removed from the cluster), with waits for leader changes.
//
// Every part of a StoreServer (proposer, applier, housekeeper, cluster
// admin) shares one LocalMember; it stamps the response headers (etcd's
// ResponseHeader) and answers "am I the leader?" the same way for all.
//
// The raft node is attached once, when the server starts; before that
// there is no leader, term 0, and node() is null.
//
// Ownership: holds pointers to the Membership and the RaftNode; both must
// outlive it (the StoreServer owns all three).
// Thread-safety: every method may be called from any thread.
#ifndef KPLANE_STORAGE_SERVER_LOCAL_MEMBER_H_
#define KPLANE_STORAGE_SERVER_LOCAL_MEMBER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"
#include "schemas/rpc.pb.h"
#include "storage/server/cluster.h"
#include "storage/server/raft_node.h"

namespace kplane::storage {

class LocalMember {
 public:
  LocalMember(uint64_t id, const Membership* membership, Clock* clock);
  LocalMember(const LocalMember&) = delete;
  LocalMember& operator=(const LocalMember&) = delete;

  // Publishes the node loop (once, before it runs).
  void AttachNode(RaftNode* node);
  // The node loop, or null before the server started.
  RaftNode* node() const { return node_.load(std::memory_order_acquire); }

  uint64_t id() const { return id_; }
  uint64_t cluster_id() const { return membership_->cluster_id(); }
  uint64_t leader_id() const;
  bool is_leader() const;
  uint64_t term() const;
  // Fills header.cluster_id/member_id/raft_term (revision is the store's).
  void FillHeader(etcdserverpb::ResponseHeader* h) const;
  // etcd's IsMemberExist(self) && IsLearner(): this member is in the
  // membership, as a learner. Asked by every client call (the learner
  // refusal, StoreServer::RefuseIfLearner), so a voter answers with one
  // atomic load: a voter never becomes a learner again (etcd 3.4 has no
  // demotion, and a removed id is never added back), so once seen as one
  // the membership is not looked up again. A learner (or a member not yet
  // in its membership) looks it up each time, under its short lock.
  bool is_learner() const;

  // The node loop saw a new leader (or none): wakes the waiters below.
  void NotifyLeaderChange() EXCLUDES(mu_);
  // Blocks until `pred(leader id)` holds (0 = no leader). False on timeout.
  bool WaitForLeaderMatching(const std::function<bool(uint64_t)>& pred,
                             Duration timeout) EXCLUDES(mu_);

  // This member's attributes (name, client URLs) went through the log:
  // etcd's ready point, after which it serves clients.
  void MarkPublished() EXCLUDES(mu_);
  bool published() const { return published_.load(); }
  // Blocks until published. False on timeout.
  bool WaitPublished(Duration timeout) EXCLUDES(mu_);

  // This member was removed from the cluster (`how` says how it learned);
  // logged once. It serves no purpose from then on.
  void MarkRemoved(const std::string& how);
  bool removed() const { return removed_.load(); }

  // A durable write failed (the WAL's, the store's, the membership's):
  // errors on disk are sticky (leveldb's bg_error_, etcd's Fatal), so the
  // member stops; `kplane store` exits with an error. Logged once; the
  // first reason is kept.
  void MarkFailed(const Status& why) EXCLUDES(mu_);
  bool failed() const { return failed_.load(); }
  // OK, or the reason given to MarkFailed.
  Status failure() const EXCLUDES(mu_);

 private:
  const uint64_t id_;
  const Membership* const membership_;
  Clock* const clock_;
  std::atomic<RaftNode*> node_{nullptr};
  std::atomic<bool> published_{false};
  std::atomic<bool> removed_{false};
  std::atomic<bool> failed_{false};
  // Seen as a voter in the membership (is_learner): final once set.
  mutable std::atomic<bool> known_voter_{false};

  // Guards failure_; what the waiters wait for is atomic (the node's
  // leader, published_). Notifiers take it before notifying, so a waiter
  // cannot miss a change between checking and sleeping.
  mutable Mutex mu_;
  std::condition_variable cv_;
  Status failure_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_LOCAL_MEMBER_H_
