#include "informer/runner.h"

#include "base/logging.h"

namespace kplane::informer {

Runner::Runner(RateLimitingQueue* queue, SyncFunc sync, RunnerOptions options)
    : queue_(queue), sync_(std::move(sync)), options_(std::move(options)) {}

Runner::~Runner() { Stop(); }

void Runner::Start() {
  CHECK(workers_.empty()) << options_.name << " started twice";
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

void Runner::Stop() {
  queue_->ShutDown();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

Runner::Stats Runner::stats() const {
  return Stats{.synced = synced_.load(),
               .failed = failed_.load(),
               .dropped = dropped_.load()};
}

void Runner::Work() {
  while (std::optional<std::string> key = queue_->Get()) {
    Status s = sync_(*key);
    if (s.ok()) {
      ++synced_;
      queue_->Forget(*key);
    } else {
      ++failed_;
      if (options_.max_retries > 0 &&
          queue_->NumRequeues(*key) >= options_.max_retries) {
        ++dropped_;
        LOG(WARNING) << options_.name << ": dropping " << *key << " after "
                     << options_.max_retries << " retries: " << s.ToString();
        queue_->Forget(*key);
      } else {
        LOG(DEBUG) << options_.name << ": sync " << *key
                   << " failed, requeueing: " << s.ToString();
        queue_->AddRateLimited(*key);
      }
    }
    queue_->Done(*key);
  }
}

}  // namespace kplane::informer
