// Housekeeper: the periodic duties of a store member, on a thread of their
// own that wakes every heartbeat interval.
//
// Every member:
//   - fails proposals and linearizable reads whose deadline passed;
//   - publishes its attributes (name, client URLs) through the log once a
//     leader is known (etcd's publish; the member serves clients after);
//   - after three election timeouts without a leader, asks its peers for
//     their membership: a member removed while cut off never applies its
//     own removal, so it learns it this way; and from then on ends the
//     streams that require a leader (leader_required_streams.h);
//   - proposes this member's NOSPACE alarm once its raft log takes writes
//     again after a full disk (StoreApplier::ProposeNoSpaceAlarmIfDue);
//   - watches the apply: ApplyStalled() turns true when the applied index
//     stayed behind the commit index without moving for a request timeout
//     (GET /health reports it).
// The leader only (etcd's leader duties):
//   - revokes expired leases through the log (at most one revoke per lease
//     in flight), so every replica deletes their keys at the same revision;
//   - compares every member's HashKV at one revision (corruption_check.h)
//     and raises a CORRUPT alarm through the log for each member outside
//     the quorum that agrees (member 0, the cluster, when none agrees).
// And on every leader change (OnLeaderChange, from the node loop): a new
// leader restarts every lease's countdown (etcd's lessor Promote), a
// follower stops counting (Demote).
//
// Ownership: borrows everything it is given; all must outlive it.
// Thread-safety: Start/Stop from the controlling thread; OnLeaderChange
// from the node loop. Lock: mu_ is a leaf; it guards the stop flag and
// the pending leader change.
#ifndef KPLANE_STORAGE_SERVER_HOUSEKEEPER_H_
#define KPLANE_STORAGE_SERVER_HOUSEKEEPER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "storage/server/cluster.h"
#include "storage/server/leader_required_streams.h"
#include "storage/server/local_member.h"
#include "storage/server/peer.h"
#include "storage/server/proposer.h"
#include "storage/server/store_applier.h"

namespace kplane::storage {

struct HousekeeperOptions {
  // This member's attributes, published through the log.
  std::string name;
  std::vector<std::string> client_urls;
  Duration heartbeat_interval = milliseconds(100);
  Duration election_timeout = seconds(1);
  Duration request_timeout = seconds(7);
  // See StoreConfig::corrupt_check_interval.
  Duration corrupt_check_interval = minutes(1);
  Clock* clock = Clock::Real();
  // Borrowed; null: none to end.
  LeaderRequiredStreams* leader_required_streams = nullptr;
};

class Housekeeper {
 public:
  Housekeeper(HousekeeperOptions options, LocalMember* self,
              Membership* membership, Proposer* proposer, StoreApplier* applier,
              PeerTransport* transport);
  ~Housekeeper();
  Housekeeper(const Housekeeper&) = delete;
  Housekeeper& operator=(const Housekeeper&) = delete;

  void Start();
  // Stops and joins the thread. Idempotent.
  void Stop() EXCLUDES(mu_);

  // The node loop saw a leader change. Quick; never blocks: the lessor is
  // promoted or demoted on the housekeeping thread right after.
  void OnLeaderChange(uint64_t leader, uint64_t term) EXCLUDES(mu_);

  // Whether the apply is stuck behind the commit index (above).
  bool ApplyStalled() const { return apply_stalled_.load(); }

 private:
  void Loop() EXCLUDES(mu_);
  void FailExpiredRequests();
  void PublishAttributes();
  // Tracks leaderless_since_.
  void TrackLeader();
  void CheckRemovedByPeers();
  void EndLeaderRequiredStreams();
  void ExpireLeases();
  void CheckCorruption();
  void WatchApply();
  void ApplyLeaderChange(uint64_t leader);

  const HousekeeperOptions options_;
  Clock* const clock_;
  LocalMember* const self_;
  Membership* const membership_;
  Proposer* const proposer_;
  StoreApplier* const applier_;
  PeerTransport* const transport_;

  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  // The latest leader the node loop reported, not yet told to the lessor.
  std::optional<uint64_t> leader_change_ GUARDED_BY(mu_);
  std::thread thread_;

  // Housekeeping thread only.
  TimePoint next_publish_;
  std::map<int64_t, TimePoint> revokes_in_flight_;  // lease id -> expiry
  TimePoint next_corrupt_check_;
  TimePoint leaderless_since_;  // epoch: there is a leader
  TimePoint next_removed_check_;
  uint64_t last_applied_ = 0;
  TimePoint behind_since_;  // epoch: not behind
  std::atomic<bool> apply_stalled_{false};
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_HOUSEKEEPER_H_
