#include "apiserver/storage/compactor.h"

#include <string>

#include "base/logging.h"

namespace kplane::apiserver {

Compactor::Compactor(storage::KV* kv, CompactorOptions options)
    : kv_(kv),
      interval_(options.interval),
      clock_(options.clock ? options.clock : Clock::Real()) {
  if (interval_ > Duration(0)) thread_ = std::thread([this] { Run(); });
}

Compactor::~Compactor() { Stop(); }

void Compactor::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
    thread_.join();
  }
}

Compactor::Stats Compactor::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

bool Compactor::WaitForRounds(int64_t n) const {
  MutexLock l(&mu_);
  cv_.wait(l.native(),
           [&]() REQUIRES(mu_) { return stats_.rounds >= n || stop_; });
  return stats_.rounds >= n;
}

void Compactor::Run() {
  for (;;) {
    {
      MutexLock l(&mu_);
      if (clock_->WaitFor(l.native(), cv_, interval_,
                          [&]() REQUIRES(mu_) { return stop_; })) {
        return;
      }
    }
    Status st = Round();
    if (!st.ok()) {
      // Retried at the next tick, as kube does; the API server keeps going.
      LOG(WARNING) << "store compaction failed (retrying in "
                   << std::chrono::duration_cast<seconds>(interval_).count()
                   << "s): " << st;
    }
    MutexLock l(&mu_);
    ++stats_.rounds;
    if (!st.ok()) ++stats_.failures;
    cv_.notify_all();
  }
}

Status Compactor::Round() {
  const std::string key(kCompactRevKey);
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* cmp = txn.add_compare();
  cmp->set_key(key);
  cmp->set_target(etcdserverpb::Compare::VERSION);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_version(version_);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(std::to_string(recorded_revision_));
  txn.add_failure()->mutable_request_range()->set_key(key);

  StatusOr<etcdserverpb::TxnResponse> resp = kv_->Txn(txn);
  if (!resp.ok()) return resp.status().Annotate("compaction round Txn");
  const int64_t compact_to = recorded_revision_;
  recorded_revision_ = resp->header().revision();

  if (!resp->succeeded()) {
    // Another API server ran this round: adopt its count. A missing key
    // (deleted by hand) reads as version 0, which restarts the protocol.
    int64_t seen = 0;
    if (resp->responses_size() > 0) {
      const auto& range = resp->responses(0).response_range();
      if (range.kvs_size() > 0) seen = range.kvs(0).version();
    }
    version_ = seen;
    return Status();
  }
  ++version_;
  if (compact_to == 0) return Status();  // first round: nothing to keep

  etcdserverpb::CompactionRequest req;
  req.set_revision(compact_to);
  StatusOr<etcdserverpb::CompactionResponse> done = kv_->Compact(req);
  if (!done.ok() && done.status().code() != StatusCode::kCompacted) {
    // The CAS already counted this round; the next one compacts further.
    return done.status().Annotate("compact to revision " +
                                  std::to_string(compact_to));
  }
  LOG(INFO) << "compacted the store to revision " << compact_to;
  MutexLock l(&mu_);
  ++stats_.compactions;
  stats_.compacted_revision = compact_to;
  return Status();
}

}  // namespace kplane::apiserver
