#include "apiserver/storage_health.h"

#include <pthread.h>

#include <chrono>

namespace kplane::apiserver {

StorageHealth::StorageHealth(StorageHealthOptions options)
    : options_(std::move(options)) {}

StorageHealth::~StorageHealth() { Stop(); }

Status StorageHealth::ProbeOnce() {
  etcdserverpb::RangeRequest req;
  req.set_key(options_.storage_prefix + "/health");
  req.set_limit(1);
  req.set_keys_only(true);
  StatusOr<etcdserverpb::RangeResponse> r = options_.kv->Range(req);
  if (!r.ok()) return r.status().Annotate("error getting data from etcd");
  StatusOr<etcdserverpb::StatusResponse> s = options_.kv->MemberStatus();
  if (!s.ok()) return s.status().Annotate("etcd status");
  if (s->errors_size() > 0) {
    std::string errors;
    for (const auto& e : s->errors()) {
      errors += (errors.empty() ? "" : "; ") + e;
    }
    return UnavailableError("etcd reports: " + errors);
  }
  return Status::Ok();
}

void StorageHealth::Start() {
  Status first = ProbeOnce();
  {
    MutexLock l(&mu_);
    last_ = first;
    last_at_ = options_.clock->Now();
    probed_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
}

void StorageHealth::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StorageHealth::Loop() {
  pthread_setname_np(pthread_self(), "etcd-health");
  while (true) {
    {
      MutexLock l(&mu_);
      if (options_.clock->WaitFor(l.native(), cv_, options_.interval,
                                  [&]() REQUIRES(mu_) { return stop_; })) {
        return;
      }
    }
    Status s = ProbeOnce();
    MutexLock l(&mu_);
    last_ = s;
    last_at_ = options_.clock->Now();
  }
}

Status StorageHealth::Check() const {
  MutexLock l(&mu_);
  if (!probed_) return UnavailableError("not checked yet");
  const Duration age = options_.clock->Now() - last_at_;
  if (age > options_.stale_after) {
    return Status(
        StatusCode::kDeadlineExceeded,
        "no answer from etcd for " +
            std::to_string(
                std::chrono::duration_cast<milliseconds>(age).count()) +
            " ms");
  }
  return last_;
}

}  // namespace kplane::apiserver
