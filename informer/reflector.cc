#include "informer/reflector.h"

#include "base/logging.h"
#include "informer/api_errors.h"

namespace kplane::informer {

namespace {

// The server cannot serve the resourceVersion we asked a LIST for: too old
// (compacted, 410) or newer than it has seen (504 "Too large resource
// version", another API server was ahead).
bool IsUnservableResourceVersion(const Status& s) {
  return IsExpired(s) ||
         (s.code() == StatusCode::kDeadlineExceeded &&
          s.message().find("Too large resource version") != std::string::npos);
}

// Failures after which the watch is simply reopened from the last RV: the
// connection broke or was refused (no HTTP status), or the server asked us
// to slow down.
bool IsRewatchable(const Status& s) {
  if (IsTooManyRequests(s)) return true;
  if (HttpCodeOf(s) != 0) return false;
  switch (s.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kCorruption:
      return true;
    default:
      return false;
  }
}

}  // namespace

Reflector::Reflector(ListerWatcher* lw, ReflectorStore* store,
                     ReflectorOptions options)
    : lw_(lw),
      store_(store),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      backoff_(options_.backoff, clock_),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  MutexLock l(&mu_);
  CHECK(!thread_.joinable()) << options_.name << " started twice";
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Reflector::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    if (current_watch_ != nullptr) current_watch_->Stop();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Reflector::Stopping() const {
  MutexLock l(&mu_);
  return stopping_;
}

std::string Reflector::LastSyncResourceVersion() const {
  MutexLock l(&mu_);
  return last_sync_rv_;
}

Reflector::Stats Reflector::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

void Reflector::SetLastSync(const std::string& rv) {
  MutexLock l(&mu_);
  last_sync_rv_ = rv;
}

std::string Reflector::RelistResourceVersion() const {
  MutexLock l(&mu_);
  if (last_sync_rv_unavailable_) return "";
  if (last_sync_rv_.empty()) return "0";
  return last_sync_rv_;
}

bool Reflector::WaitBackoff() {
  Duration d = backoff_.Next();
  if (options_.on_backoff) options_.on_backoff(d);
  MutexLock l(&mu_);
  ++stats_.backoffs;
  stats_.last_backoff = d;
  clock_->WaitUntil(l.native(), cv_, clock_->Now() + d,
                    [&]() REQUIRES(mu_) { return stopping_; });
  return !stopping_;
}

void Reflector::Run() {
  while (!Stopping()) {
    Status s = ListAndWatch();
    if (Stopping()) break;
    if (!s.ok()) {
      {
        MutexLock l(&mu_);
        ++stats_.errors;
        if (IsExpired(s)) ++stats_.expired;
      }
      if (IsExpired(s)) {
        LOG(INFO) << options_.name << ": " << s.message() << "; relisting";
      } else {
        LOG(WARNING) << options_.name << ": " << s.ToString();
      }
      if (options_.on_error) options_.on_error(s);
    }
    if (!WaitBackoff()) break;
  }
}

Status Reflector::ListAndWatch() {
  RETURN_IF_ERROR(List());
  return WatchLoop();
}

Status Reflector::List() {
  ListOptions options;
  options.resource_version = RelistResourceVersion();
  options.limit = options_.page_size;
  std::vector<ObjectPtr> items;
  std::string list_rv;
  bool retried = false;
  for (;;) {
    StatusOr<ListResult> page = lw_->List(options);
    if (Stopping()) return CancelledError("stopped");
    if (!page.ok()) {
      if (!retried && IsUnservableResourceVersion(page.status())) {
        // Start over as a consistent read, as client-go does.
        LOG(INFO) << options_.name << ": list at resourceVersion \""
                  << options.resource_version
                  << "\" failed: " << page.status().message()
                  << "; listing the latest";
        {
          MutexLock l(&mu_);
          last_sync_rv_unavailable_ = true;
        }
        retried = true;
        options.resource_version = "";
        options.continue_token.clear();
        items.clear();
        list_rv.clear();
        continue;
      }
      return page.status().Annotate("list");
    }
    {
      MutexLock l(&mu_);
      ++stats_.list_pages;
    }
    if (list_rv.empty()) list_rv = page->resource_version;
    for (ObjectPtr& o : page->items) {
      if (o->GetDescriptor() != lw_->Kind().descriptor) {
        return InternalError("list returned " +
                             o->GetDescriptor()->full_name() + ", expected " +
                             lw_->Kind().descriptor->full_name());
      }
      items.push_back(std::move(o));
    }
    if (page->continue_token.empty()) break;
    options.continue_token = page->continue_token;
    // The continue token carries the snapshot's revision.
    options.resource_version.clear();
  }
  store_->Replace(std::move(items), list_rv);
  MutexLock l(&mu_);
  last_sync_rv_ = list_rv;
  last_sync_rv_unavailable_ = false;
  ++stats_.lists;
  return Status::Ok();
}

Status Reflector::WatchLoop() {
  const int64_t min_timeout = std::max<int64_t>(
      1,
      std::chrono::duration_cast<seconds>(options_.min_watch_timeout).count());
  for (;;) {
    if (Stopping()) return Status::Ok();
    ListOptions options;
    options.resource_version = LastSyncResourceVersion();
    options.allow_watch_bookmarks = true;
    options.timeout_seconds = std::uniform_int_distribution<int64_t>(
        min_timeout, 2 * min_timeout - 1)(rng_);
    StatusOr<std::unique_ptr<WatchStream>> stream = lw_->Watch(options);
    if (!stream.ok()) {
      const Status& s = stream.status();
      if (IsRewatchable(s)) {
        LOG(WARNING) << options_.name << ": watch: " << s.ToString()
                     << "; retrying from resourceVersion "
                     << options.resource_version;
        if (options_.on_error) options_.on_error(s);
        if (!WaitBackoff()) return Status::Ok();
        continue;
      }
      return s.Annotate("watch");
    }
    {
      MutexLock l(&mu_);
      ++stats_.watches;
      if (stopping_) return Status::Ok();
      current_watch_ = stream->get();
    }
    Status s = HandleWatch(stream->get());
    {
      MutexLock l(&mu_);
      current_watch_ = nullptr;
      if (stopping_) return Status::Ok();
    }
    if (s.ok()) continue;  // the server ended it: watch again at once
    if (IsRewatchable(s)) {
      LOG(INFO) << options_.name << ": watch ended: " << s.ToString()
                << "; retrying from resourceVersion "
                << LastSyncResourceVersion();
      if (options_.on_error) options_.on_error(s);
      if (!WaitBackoff()) return Status::Ok();
      continue;
    }
    return s;  // 410 and everything else: relist
  }
}

Status Reflector::HandleWatch(WatchStream* stream) {
  const TimePoint start = clock_->Now();
  int64_t events = 0;
  WatchEvent ev;
  while (stream->Next(&ev)) {
    if (ev.type == EventType::kError) return ev.error;
    if (ev.object == nullptr ||
        ev.object->GetDescriptor() != lw_->Kind().descriptor) {
      return InternalError(
          "watch event of the wrong type: " +
          (ev.object ? ev.object->GetDescriptor()->full_name() : "null") +
          ", expected " + lw_->Kind().descriptor->full_name());
    }
    const std::string rv = ev.ResourceVersion();
    switch (ev.type) {
      case EventType::kAdded:
        store_->Add(std::move(ev.object));
        break;
      case EventType::kModified:
        store_->Update(std::move(ev.object));
        break;
      case EventType::kDeleted:
        store_->Delete(std::move(ev.object));
        break;
      case EventType::kBookmark:
      case EventType::kError:
        break;
    }
    ++events;
    MutexLock l(&mu_);
    if (!rv.empty()) last_sync_rv_ = rv;
    if (ev.type == EventType::kBookmark) {
      ++stats_.bookmarks;
    } else {
      ++stats_.events;
    }
  }
  Status result = stream->Result();
  if (!result.ok()) return result;
  if (events == 0 && clock_->Now() - start < options_.min_healthy_watch) {
    return UnavailableError(
        "very short watch: the server closed it at once with no events");
  }
  return Status::Ok();
}

}  // namespace kplane::informer
