#include "informer/leader_election.h"

#include "objects/time.h"
#include "base/logging.h"
#include "informer/api_errors.h"

namespace kplane::informer {

namespace {

// client-go's JitterFactor for the acquire loop.
constexpr double kJitterFactor = 1.2;

}  // namespace

// ---------------------------------------------------------------------------
// LeaseLock

LeaseLock::LeaseLock(RestClient* client, std::string ns, std::string name,
                     std::string identity)
    : client_(client),
      ns_(std::move(ns)),
      name_(std::move(name)),
      identity_(std::move(identity)) {}

void LeaseLock::RecordToSpec(const LeaderElectionRecord& record,
                             objects::coordinationv1::LeaseSpec* spec) {
  spec->set_holderidentity(record.holder_identity);
  spec->set_leasedurationseconds(static_cast<int32_t>(
      std::chrono::duration_cast<seconds>(record.lease_duration).count()));
  objects::SetMicroTime(spec->mutable_acquiretime(), record.acquire_time);
  objects::SetMicroTime(spec->mutable_renewtime(), record.renew_time);
  spec->set_leasetransitions(record.leader_transitions);
}

LeaderElectionRecord LeaseLock::SpecToRecord(
    const objects::coordinationv1::LeaseSpec& spec) {
  LeaderElectionRecord r;
  r.holder_identity = spec.holderidentity();
  r.lease_duration = seconds(spec.leasedurationseconds());
  if (!objects::IsZero(spec.acquiretime())) {
    r.acquire_time = objects::ToWallTime(spec.acquiretime());
  }
  if (!objects::IsZero(spec.renewtime())) {
    r.renew_time = objects::ToWallTime(spec.renewtime());
  }
  r.leader_transitions = spec.leasetransitions();
  return r;
}

CallDeadline LeaseLock::DeadlineIn(Duration timeout) const {
  if (timeout == kNoLockTimeout) return CallDeadline::max();
  return client_->clock()->Now() + timeout;
}

StatusOr<LeaderElectionRecord> LeaseLock::Get(Duration timeout) {
  ASSIGN_OR_RETURN(std::unique_ptr<objects::coordinationv1::Lease> lease,
                   client_->Get<objects::coordinationv1::Lease>(
                       ns_, name_, {.deadline = DeadlineIn(timeout)}));
  LeaderElectionRecord r = SpecToRecord(lease->spec());
  MutexLock l(&mu_);
  lease_ = std::move(lease);
  return r;
}

Status LeaseLock::Create(const LeaderElectionRecord& record, Duration timeout) {
  objects::coordinationv1::Lease lease;
  lease.mutable_metadata()->set_name(name_);
  lease.mutable_metadata()->set_namespace_(ns_);
  RecordToSpec(record, lease.mutable_spec());
  ASSIGN_OR_RETURN(std::unique_ptr<objects::coordinationv1::Lease> created,
                   client_->Create(lease, {.deadline = DeadlineIn(timeout)}));
  MutexLock l(&mu_);
  lease_ = std::move(created);
  return Status::Ok();
}

Status LeaseLock::Update(const LeaderElectionRecord& record, Duration timeout) {
  objects::coordinationv1::Lease lease;
  {
    MutexLock l(&mu_);
    if (lease_ == nullptr) {
      return FailedPreconditionError("lease not read yet: Get() first");
    }
    lease = *lease_;  // keeps metadata.resourceVersion: a compare-and-swap
  }
  RecordToSpec(record, lease.mutable_spec());
  ASSIGN_OR_RETURN(std::unique_ptr<objects::coordinationv1::Lease> updated,
                   client_->Update(lease, {.deadline = DeadlineIn(timeout)}));
  MutexLock l(&mu_);
  lease_ = std::move(updated);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Leadership

bool Leadership::Lost() const {
  MutexLock l(&mu_);
  return lost_;
}

void Leadership::WaitUntilLost() const {
  MutexLock l(&mu_);
  cv_.wait(l.native(), [&]() REQUIRES(mu_) { return lost_; });
}

void Leadership::MarkLost() {
  MutexLock l(&mu_);
  lost_ = true;
  cv_.notify_all();
}

// ---------------------------------------------------------------------------
// LeaderElector

StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::New(
    LeaderElectionConfig config) {
  if (config.lock == nullptr) return InvalidArgumentError("lock is required");
  if (!config.on_started_leading || !config.on_stopped_leading) {
    return InvalidArgumentError(
        "on_started_leading and on_stopped_leading are required");
  }
  if (config.retry_period.count() <= 0) {
    return InvalidArgumentError("retry_period must be positive");
  }
  if (config.lease_duration <= config.renew_deadline) {
    return InvalidArgumentError(
        "lease_duration must be greater than renew_deadline");
  }
  if (config.renew_deadline.count() <=
      static_cast<int64_t>(kJitterFactor *
                           static_cast<double>(config.retry_period.count()))) {
    return InvalidArgumentError(
        "renew_deadline must be greater than retry_period*1.2");
  }
  if (config.lock->Identity().empty()) {
    return InvalidArgumentError("the lock's identity must not be empty");
  }
  return std::unique_ptr<LeaderElector>(new LeaderElector(std::move(config)));
}

LeaderElector::LeaderElector(LeaderElectionConfig config)
    : config_(std::move(config)),
      clock_(config_.clock != nullptr ? config_.clock : Clock::Real()),
      rng_(config_.seed != 0 ? config_.seed : std::random_device{}()) {
  cb_thread_ = std::thread([this] { CallbackLoop(); });
}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  MutexLock l(&mu_);
  CHECK(!run_thread_.joinable()) << config_.name << " started twice";
  run_thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (run_thread_.joinable()) run_thread_.join();
  {
    // Run() may be on the owner's thread rather than run_thread_.
    MutexLock l(&mu_);
    cv_.wait(l.native(), [&]() REQUIRES(mu_) { return !running_; });
  }
  {
    MutexLock l(&cb_mu_);
    cb_done_ = true;
  }
  cb_cv_.notify_all();
  if (cb_thread_.joinable()) cb_thread_.join();
}

bool LeaderElector::IsLeader() const {
  MutexLock l(&mu_);
  return leading_;
}

std::string LeaderElector::GetLeader() const {
  MutexLock l(&mu_);
  return observed_.has_value() ? observed_->holder_identity : "";
}

void LeaderElector::Post(std::function<void()> callback) {
  {
    MutexLock l(&cb_mu_);
    callbacks_.push_back(std::move(callback));
  }
  cb_cv_.notify_all();
}

void LeaderElector::CallbackLoop() {
  MutexLock l(&cb_mu_);
  for (;;) {
    cb_cv_.wait(l.native(), [&]() REQUIRES(cb_mu_) {
      return cb_done_ || !callbacks_.empty();
    });
    if (callbacks_.empty()) return;  // done and drained
    std::function<void()> cb = std::move(callbacks_.front());
    callbacks_.pop_front();
    l.Unlock();
    cb();
    l.Lock();
  }
}

bool LeaderElector::Sleep(Duration d) {
  MutexLock l(&mu_);
  clock_->WaitUntil(l.native(), cv_, clock_->Now() + d,
                    [&]() REQUIRES(mu_) { return stopping_; });
  return !stopping_;
}

void LeaderElector::Run() {
  {
    MutexLock l(&mu_);
    if (stopping_ || running_) return;
    running_ = true;
  }
  RunOnce();
  {
    MutexLock l(&mu_);
    running_ = false;
  }
  cv_.notify_all();
}

void LeaderElector::RunOnce() {
  if (!Acquire()) return;
  auto leadership = std::make_shared<Leadership>();
  {
    MutexLock l(&mu_);
    leadership_ = leadership;
    leading_ = true;
  }
  Post([this, leadership] { config_.on_started_leading(*leadership); });
  Renew();
  bool stopping;
  {
    MutexLock l(&mu_);
    leading_ = false;
    stopping = stopping_;
  }
  leadership->MarkLost();
  if (stopping && config_.release_on_cancel) Release();
  Post([this] { config_.on_stopped_leading(); });
}

bool LeaderElector::Acquire() {
  LOG(INFO) << config_.name << ": attempting to acquire lease "
            << config_.lock->Describe() << " as " << config_.lock->Identity();
  for (;;) {
    {
      MutexLock l(&mu_);
      if (stopping_) return false;
    }
    // Not leading yet, so nothing is at stake but Stop() waiting: the
    // renew deadline bounds a call here too.
    if (TryAcquireOrRenew(clock_->Now() + config_.renew_deadline)) {
      LOG(INFO) << config_.name << ": acquired lease "
                << config_.lock->Describe();
      return true;
    }
    double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    Duration wait = config_.retry_period +
                    Duration(static_cast<int64_t>(
                        static_cast<double>(config_.retry_period.count()) *
                        kJitterFactor * r));
    if (!Sleep(wait)) return false;
  }
}

void LeaderElector::Renew() {
  for (;;) {
    const TimePoint deadline = clock_->Now() + config_.renew_deadline;
    bool renewed = false;
    for (;;) {
      if (TryAcquireOrRenew(deadline)) {
        renewed = true;
        break;
      }
      TimePoint now = clock_->Now();
      if (now >= deadline) break;
      if (!Sleep(std::min(config_.retry_period, deadline - now))) return;
      if (clock_->Now() >= deadline) break;
    }
    if (!renewed) {
      LOG(WARNING) << config_.name << ": failed to renew lease "
                   << config_.lock->Describe() << " within the renew deadline";
      return;
    }
    if (!Sleep(config_.retry_period)) return;
  }
}

Duration LeaderElector::Left(TimePoint deadline) const {
  return std::max(Duration(0), deadline - clock_->Now());
}

bool LeaderElector::TryAcquireOrRenew(TimePoint deadline) {
  // Microseconds: what a Lease's MicroTime keeps, so a record read back
  // equals the one written.
  const WallTime now_wall = std::chrono::floor<microseconds>(clock_->WallNow());
  const TimePoint now = clock_->Now();
  const std::string& me = config_.lock->Identity();
  LeaderElectionRecord record{.holder_identity = me,
                              .lease_duration = config_.lease_duration,
                              .acquire_time = now_wall,
                              .renew_time = now_wall};

  auto set_observed = [&](const LeaderElectionRecord& r) {
    std::string new_holder;
    {
      MutexLock l(&mu_);
      const bool holder_changed =
          !observed_.has_value() ||
          observed_->holder_identity != r.holder_identity;
      observed_ = r;
      observed_time_ = now;
      if (!holder_changed) return;
      new_holder = r.holder_identity;
    }
    if (config_.on_new_leader && !new_holder.empty()) {
      Post([this, new_holder] { config_.on_new_leader(new_holder); });
    }
  };

  StatusOr<LeaderElectionRecord> old = config_.lock->Get(Left(deadline));
  if (!old.ok()) {
    if (!IsNotFound(old.status())) {
      LOG(WARNING) << config_.name << ": error retrieving lease "
                   << config_.lock->Describe() << ": " << old.status();
      return false;
    }
    Status s = config_.lock->Create(record, Left(deadline));
    if (!s.ok()) {
      LOG(WARNING) << config_.name << ": error creating lease "
                   << config_.lock->Describe() << ": " << s;
      return false;
    }
    set_observed(record);
    return true;
  }

  // Only a change of the record restarts its expiry clock: a holder that
  // stopped renewing leaves the record exactly as it was.
  bool leader;
  bool valid;
  std::string new_holder;
  {
    MutexLock l(&mu_);
    if (!observed_.has_value() || *observed_ != *old) {
      if (!observed_.has_value() ||
          observed_->holder_identity != old->holder_identity) {
        new_holder = old->holder_identity;
      }
      observed_ = *old;
      observed_time_ = now;
    }
    leader = observed_->holder_identity == me;
    valid = observed_time_ + observed_->lease_duration > now;
  }
  if (config_.on_new_leader && !new_holder.empty()) {
    Post([this, new_holder] { config_.on_new_leader(new_holder); });
  }
  if (!old->holder_identity.empty() && valid && !leader) return false;

  if (leader) {
    record.acquire_time = old->acquire_time;
    record.leader_transitions = old->leader_transitions;
  } else {
    record.leader_transitions = old->leader_transitions + 1;
  }
  Status s = config_.lock->Update(record, Left(deadline));
  if (!s.ok()) {
    LOG(WARNING) << config_.name << ": failed to update lease "
                 << config_.lock->Describe() << ": " << s;
    return false;
  }
  set_observed(record);
  return true;
}

void LeaderElector::Release() {
  const TimePoint deadline = clock_->Now() + config_.renew_deadline;
  StatusOr<LeaderElectionRecord> old = config_.lock->Get(Left(deadline));
  if (!old.ok() || old->holder_identity != config_.lock->Identity()) return;
  const WallTime now_wall = std::chrono::floor<microseconds>(clock_->WallNow());
  LeaderElectionRecord record{.holder_identity = "",
                              .lease_duration = seconds(1),
                              .acquire_time = now_wall,
                              .renew_time = now_wall,
                              .leader_transitions = old->leader_transitions};
  Status s = config_.lock->Update(record, Left(deadline));
  if (!s.ok()) {
    LOG(WARNING) << config_.name << ": failed to release lease "
                 << config_.lock->Describe() << ": " << s;
    return;
  }
  MutexLock l(&mu_);
  observed_ = record;
  observed_time_ = clock_->Now();
}

}  // namespace kplane::informer
