// Leader election through a coordination.k8s.io/v1 Lease (client-go's
// tools/leaderelection), so that several controller managers can run and
// exactly one acts.
//
// The lease records holderIdentity, leaseDurationSeconds, acquireTime,
// renewTime and leaseTransitions. Every candidate, every retry_period
// (jittered up to x2.2 while not leading):
//   - no lease: create it naming itself (the create races; one wins);
//   - a lease held by another that this candidate has seen change within
//     the last lease_duration: wait. Expiry is judged by when *we*
//     observed the record change on our own monotonic clock, never by the
//     renewTime written by another machine's clock;
//   - otherwise (ours, expired, or released): update it naming itself, as
//     an optimistic-locking PUT carrying the resourceVersion read (409
//     Conflict: someone else won this round). A change of holder adds one
//     to leaseTransitions.
// The leader renews every retry_period; if it cannot renew for
// renew_deadline (retrying every retry_period meanwhile), it stops
// leading. Every lock call carries a timeout (ResourceLock): while
// leading, what is left of the renew deadline, so a call that hangs (an API
// server that stopped answering, a connection pool held by others) cannot keep
// a leader in place: it stops leading renew_deadline + retry_period after its
// last renewal at the latest. renew_deadline < lease_duration leaves the old
// leader time to notice before anyone else may take over. Defaults are
// client-go's controller-manager values: 15 s / 10 s / 2 s.
//
// Callbacks run in order on a callback thread of their own (they may
// block; the renew loop does not wait for them):
//   on_new_leader(identity)      the observed holder changed;
//   on_started_leading(leadership)  this candidate leads; it may run until
//                                   leadership.Lost() (or return at once);
//   on_stopped_leading()         after on_started_leading returned, once
//                                leadership is lost or the elector stops.
//
//   LeaseLock lock(client, "kube-system", "kplane-controller-manager", id);
//   auto elector = LeaderElector::New({.lock = &lock, .on_started_leading =
//       [&](const Leadership& l) { RunControllers(); l.WaitUntilLost(); },
//       .on_stopped_leading = [] { LOG(FATAL) << "leadership lost"; }});
//   (*elector)->Run();   // or Start() / Stop()
//
// Ownership: the elector borrows the lock. Thread-safety: Start/Stop/Run
// from the owner; IsLeader/GetLeader from any thread. Errors: New()
// rejects inconsistent durations (kInvalidArgument); lock errors are
// retried and logged.
#ifndef KPLANE_INFORMER_LEADER_ELECTION_H_
#define KPLANE_INFORMER_LEADER_ELECTION_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "objects/types.h"
#include "base/clock.h"
#include "base/statusor.h"
#include "informer/rest_client.h"

namespace kplane::informer {

// client-go's LeaderElectionRecord.
struct LeaderElectionRecord {
  std::string holder_identity;  // "" = released
  Duration lease_duration{0};
  WallTime acquire_time{};
  WallTime renew_time{};
  int32_t leader_transitions = 0;
  friend bool operator==(const LeaderElectionRecord&,
                         const LeaderElectionRecord&) = default;
};

// A ResourceLock call's timeout that sets no bound (tests).
inline constexpr Duration kNoLockTimeout = Duration::max();

// Where the record lives. Get() must precede Update(): the lock remembers
// the version it read and Update() is conditional on it. Each call returns
// within `timeout`, kDeadlineExceeded if it could not finish by then (a
// duration, not a time point: the lock's client may keep time on another
// Clock than the elector): the elector counts on it to step down in time.
// kNoLockTimeout: no bound.
class ResourceLock {
 public:
  virtual ~ResourceLock() = default;
  // kNotFound when there is no record yet.
  virtual StatusOr<LeaderElectionRecord> Get(Duration timeout) = 0;
  // kAlreadyExists if another candidate created it first.
  virtual Status Create(const LeaderElectionRecord& record,
                        Duration timeout) = 0;
  // kConflict if the record changed since our Get().
  virtual Status Update(const LeaderElectionRecord& record,
                        Duration timeout) = 0;
  virtual const std::string& Identity() const = 0;
  virtual std::string Describe() const = 0;  // "kube-system/name"
};

// The record in a coordination.k8s.io/v1 Lease through the REST client
// (each request's deadline, GetOptions/WriteOptions, is the timeout from
// now on the client's Clock). The
// client should be the lock's own, so that the elector's calls never wait
// behind other users of a shared connection pool.
class LeaseLock : public ResourceLock {
 public:
  LeaseLock(RestClient* client, std::string ns, std::string name,
            std::string identity);
  StatusOr<LeaderElectionRecord> Get(Duration timeout) override;
  Status Create(const LeaderElectionRecord& record, Duration timeout) override;
  Status Update(const LeaderElectionRecord& record, Duration timeout) override;
  const std::string& Identity() const override { return identity_; }
  std::string Describe() const override { return ns_ + "/" + name_; }

  static void RecordToSpec(const LeaderElectionRecord& record,
                           objects::coordinationv1::LeaseSpec* spec);
  static LeaderElectionRecord SpecToRecord(
      const objects::coordinationv1::LeaseSpec& spec);

 private:
  // `timeout` from now on the client's Clock.
  CallDeadline DeadlineIn(Duration timeout) const;

  RestClient* const client_;
  const std::string ns_, name_, identity_;
  Mutex mu_;
  // As last read/written
  std::unique_ptr<objects::coordinationv1::Lease> lease_ GUARDED_BY(mu_);
};

// Handed to on_started_leading.
class Leadership {
 public:
  bool Lost() const;
  // Blocks until leadership is lost (or the elector stops).
  void WaitUntilLost() const;

 private:
  friend class LeaderElector;
  void MarkLost();
  mutable Mutex mu_;
  mutable std::condition_variable cv_;
  bool lost_ GUARDED_BY(mu_) = false;
};

struct LeaderElectionConfig {
  ResourceLock* lock = nullptr;
  Duration lease_duration = seconds(15);
  Duration renew_deadline = seconds(10);
  Duration retry_period = seconds(2);
  std::function<void(const Leadership&)> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;
  // On Stop() while leading, write an empty holder so a successor need
  // not wait out the lease.
  bool release_on_cancel = false;
  std::string name = "leader-election";  // for logs
  Clock* clock = nullptr;
  uint64_t seed = 0;  // jitter; 0: random
};

class LeaderElector {
 public:
  static StatusOr<std::unique_ptr<LeaderElector>> New(
      LeaderElectionConfig config);
  ~LeaderElector();  // Stop()s
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Campaigns, leads while it can renew, then returns (after queueing
  // on_stopped_leading). Returns early if Stop() is called.
  void Run();
  // Run() on a thread of its own.
  void Start();
  // Ends Run() (releasing the lease with release_on_cancel) and waits for
  // it, on whichever thread it runs, and for the callbacks to finish.
  void Stop();

  // True while this candidate leads: from acquiring the lease until a
  // renewal fails (or Stop()).
  bool IsLeader() const;
  // The holder we last observed ("" if none).
  std::string GetLeader() const;

 private:
  explicit LeaderElector(LeaderElectionConfig config);
  void RunOnce();
  bool Acquire();  // false if stopped first
  void Renew();    // returns when leadership is lost or stopping
  // The lock's calls end by `deadline` (on clock_).
  bool TryAcquireOrRenew(TimePoint deadline);
  // What is left until `deadline` on clock_ (zero once it passed).
  Duration Left(TimePoint deadline) const;
  void Release();
  // Waits `d` on the clock; false if stopping.
  bool Sleep(Duration d);
  void Post(std::function<void()> callback);
  void CallbackLoop();

  const LeaderElectionConfig config_;
  Clock* const clock_;
  std::mt19937_64 rng_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool running_ GUARDED_BY(mu_) = false;  // inside Run(), on whichever thread
  bool leading_ GUARDED_BY(mu_) = false;
  std::optional<LeaderElectionRecord> observed_ GUARDED_BY(mu_);
  TimePoint observed_time_ GUARDED_BY(mu_) = {};
  std::shared_ptr<Leadership> leadership_ GUARDED_BY(mu_);
  std::thread run_thread_;

  Mutex cb_mu_;
  std::condition_variable cb_cv_;
  std::deque<std::function<void()>> callbacks_ GUARDED_BY(cb_mu_);
  bool cb_done_ GUARDED_BY(cb_mu_) = false;
  std::thread cb_thread_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_LEADER_ELECTION_H_
