#include "informer/fake_list_watcher.h"

#include <algorithm>

#include "objects/meta.h"
#include "base/logging.h"
#include "base/strings.h"

namespace kplane::informer {

struct FakeListerWatcher::StreamState {
  Mutex mu;
  std::condition_variable cv;
  std::deque<WatchEvent> events GUARDED_BY(mu);
  bool ended GUARDED_BY(mu) = false;
  Status result GUARDED_BY(mu);
  bool allow_bookmarks = false;  // set before the stream is shared

  void Push(WatchEvent e) {
    MutexLock l(&mu);
    if (ended) return;
    events.push_back(std::move(e));
    cv.notify_all();
  }
  // Events already queued are still delivered, as bytes the server wrote
  // before closing still arrive; Stop() drops them.
  void End(Status s, bool drop_queued = false) {
    MutexLock l(&mu);
    if (drop_queued) events.clear();
    if (ended) return;
    ended = true;
    result = std::move(s);
    cv.notify_all();
  }
  bool Ended() {
    MutexLock l(&mu);
    return ended;
  }
};

class FakeListerWatcher::Stream : public WatchStream {
 public:
  explicit Stream(std::shared_ptr<StreamState> state)
      : state_(std::move(state)) {}
  ~Stream() override { Stop(); }

  bool Next(WatchEvent* event) override {
    MutexLock l(&state_->mu);
    state_->cv.wait(l.native(), [&]() REQUIRES(state_->mu) {
      return !state_->events.empty() || state_->ended;
    });
    if (state_->events.empty()) return false;
    *event = std::move(state_->events.front());
    state_->events.pop_front();
    return true;
  }
  Status Result() const override {
    MutexLock l(&state_->mu);
    return state_->result;
  }
  void Stop() override {
    state_->End(CancelledError("watch stopped"), /*drop_queued=*/true);
  }

 private:
  std::shared_ptr<StreamState> state_;
};

FakeListerWatcher::FakeListerWatcher(const objects::KindInfo* kind) : kind_(kind) {}

FakeListerWatcher::~FakeListerWatcher() {
  CloseWatches(UnavailableError("fake server gone"));
}

std::string FakeListerWatcher::KeyOf(const std::string& ns,
                                     const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

ObjectPtr FakeListerWatcher::Bookmark(int64_t revision) const {
  std::unique_ptr<google::protobuf::Message> obj = kind_->New();
  objects::SetResourceVersion(obj.get(), std::to_string(revision));
  return obj;
}

void FakeListerWatcher::Broadcast(const HistoryEvent& e) {
  history_.push_back(e);
  std::erase_if(streams_, [](const std::shared_ptr<StreamState>& s) {
    return s->Ended();
  });
  for (const auto& s : streams_) {
    s->Push(WatchEvent{.type = e.type, .object = e.object});
  }
}

StatusOr<ObjectPtr> FakeListerWatcher::Create(
    const google::protobuf::Message& obj) {
  MutexLock l(&mu_);
  const std::string key = KeyOf(objects::Namespace(obj), objects::Name(obj));
  auto it = versions_.find(key);
  if (it != versions_.end() && it->second.back().object != nullptr) {
    return AlreadyExistsError("\"" + key + "\" already exists");
  }
  std::unique_ptr<google::protobuf::Message> stored(obj.New());
  stored->CopyFrom(obj);
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(stored.get());
  if (meta->uid().empty()) meta->set_uid("uid-" + std::to_string(next_uid_++));
  meta->set_resourceversion(std::to_string(++revision_));
  ObjectPtr ptr(std::move(stored));
  versions_[key].push_back({revision_, ptr});
  Broadcast({revision_, EventType::kAdded, ptr});
  return ptr;
}

StatusOr<ObjectPtr> FakeListerWatcher::Update(
    const google::protobuf::Message& obj) {
  MutexLock l(&mu_);
  const std::string key = KeyOf(objects::Namespace(obj), objects::Name(obj));
  auto it = versions_.find(key);
  if (it == versions_.end() || it->second.back().object == nullptr) {
    return NotFoundError("\"" + key + "\" not found");
  }
  const ObjectPtr& current = it->second.back().object;
  const std::string& rv = objects::ResourceVersion(obj);
  if (!rv.empty() && rv != objects::ResourceVersion(*current)) {
    return ConflictError("the object has been modified");
  }
  std::unique_ptr<google::protobuf::Message> stored(obj.New());
  stored->CopyFrom(obj);
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(stored.get());
  meta->set_uid(objects::Uid(*current));
  meta->set_resourceversion(std::to_string(++revision_));
  ObjectPtr ptr(std::move(stored));
  it->second.push_back({revision_, ptr});
  Broadcast({revision_, EventType::kModified, ptr});
  return ptr;
}

StatusOr<ObjectPtr> FakeListerWatcher::Delete(const std::string& ns,
                                              const std::string& name) {
  MutexLock l(&mu_);
  const std::string key = KeyOf(ns, name);
  auto it = versions_.find(key);
  if (it == versions_.end() || it->second.back().object == nullptr) {
    return NotFoundError("\"" + key + "\" not found");
  }
  std::unique_ptr<google::protobuf::Message> last(
      it->second.back().object->New());
  last->CopyFrom(*it->second.back().object);
  objects::SetResourceVersion(last.get(), std::to_string(++revision_));
  ObjectPtr ptr(std::move(last));
  it->second.push_back({revision_, nullptr});
  Broadcast({revision_, EventType::kDeleted, ptr});
  return ptr;
}

StatusOr<ObjectPtr> FakeListerWatcher::Get(const std::string& ns,
                                           const std::string& name) const {
  MutexLock l(&mu_);
  auto it = versions_.find(KeyOf(ns, name));
  if (it == versions_.end() || it->second.back().object == nullptr) {
    return NotFoundError("\"" + KeyOf(ns, name) + "\" not found");
  }
  return it->second.back().object;
}

void FakeListerWatcher::Compact(int64_t revision) {
  MutexLock l(&mu_);
  if (revision <= 0 || revision > revision_) revision = revision_;
  if (revision <= compacted_) return;
  compacted_ = revision;
  while (!history_.empty() && history_.front().revision <= compacted_) {
    history_.pop_front();
  }
  // Keep, per key, the versions after the compaction point plus the one
  // visible at it (unless that one is a deletion).
  for (auto it = versions_.begin(); it != versions_.end();) {
    std::vector<Version>& v = it->second;
    auto first_after =
        std::find_if(v.begin(), v.end(), [&](const Version& x) REQUIRES(mu_) {
          return x.revision > compacted_;
        });
    if (first_after != v.begin()) {
      auto visible = std::prev(first_after);
      if (visible->object == nullptr) ++visible;
      v.erase(v.begin(), visible);
    }
    it = v.empty() ? versions_.erase(it) : std::next(it);
  }
}

int64_t FakeListerWatcher::Revision() const {
  MutexLock l(&mu_);
  return revision_;
}

void FakeListerWatcher::AdvanceRevision(int64_t n) {
  MutexLock l(&mu_);
  revision_ += n;
}

int64_t FakeListerWatcher::CompactedRevision() const {
  MutexLock l(&mu_);
  return compacted_;
}

std::vector<ObjectPtr> FakeListerWatcher::SnapshotAt(
    int64_t revision, const std::string& after) const {
  std::vector<ObjectPtr> out;
  for (auto it = after.empty() ? versions_.begin()
                               : versions_.upper_bound(after);
       it != versions_.end(); ++it) {
    const Version* visible = nullptr;
    for (const Version& v : it->second) {
      if (v.revision > revision) break;
      visible = &v;
    }
    if (visible != nullptr && visible->object != nullptr) {
      out.push_back(visible->object);
    }
  }
  return out;
}

StatusOr<ListResult> FakeListerWatcher::List(const ListOptions& options) {
  MutexLock l(&mu_);
  list_calls_.push_back(options);
  calls_cv_.notify_all();
  if (!list_failures_.empty()) {
    Status s = list_failures_.front();
    list_failures_.pop_front();
    return s;
  }
  int64_t at = revision_;
  std::string after;
  bool exact = false;
  if (!options.continue_token.empty()) {
    size_t slash = options.continue_token.find('/');
    std::optional<int64_t> rev =
        ParseInt64(options.continue_token.substr(0, slash));
    if (slash == std::string::npos || !rev.has_value()) {
      return Status(StatusCode::kInvalidArgument, "invalid continue token",
                    400);
    }
    at = *rev;
    after = options.continue_token.substr(slash + 1);
    if (at < compacted_) {
      return Status(StatusCode::kExpired,
                    "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without "
                    "the continue parameter.",
                    410);
    }
  } else if (!options.resource_version.empty() &&
             options.resource_version != "0") {
    std::optional<int64_t> rev = ParseInt64(options.resource_version);
    if (!rev.has_value() || *rev < 0) {
      return Status(
          StatusCode::kInvalidArgument,
          "invalid resource version \"" + options.resource_version + "\"", 400);
    }
    if (*rev > revision_) {
      return Status(StatusCode::kDeadlineExceeded,
                    "Too large resource version: " + std::to_string(*rev) +
                        ", current: " + std::to_string(revision_),
                    504);
    }
    exact = options.limit > 0 || options.resource_version_match == "Exact";
    if (exact) {
      if (*rev < compacted_) {
        return Status(StatusCode::kExpired,
                      "too old resource version: " + std::to_string(*rev) +
                          " (" + std::to_string(compacted_) + ")",
                      410);
      }
      at = *rev;
    }
  }
  std::vector<ObjectPtr> all = SnapshotAt(at, after);
  ListResult result;
  result.resource_version = std::to_string(at);
  if (options.limit > 0 && static_cast<int64_t>(all.size()) > options.limit) {
    result.items.assign(all.begin(), all.begin() + options.limit);
    const ObjectPtr& last = result.items.back();
    result.continue_token = std::to_string(at) + "/" +
                            KeyOf(objects::Namespace(*last), objects::Name(*last));
    result.remaining_item_count =
        static_cast<int64_t>(all.size()) - options.limit;
  } else {
    result.items = std::move(all);
  }
  return result;
}

StatusOr<std::unique_ptr<WatchStream>> FakeListerWatcher::Watch(
    const ListOptions& options) {
  MutexLock l(&mu_);
  watch_calls_.push_back(options);
  calls_cv_.notify_all();
  if (!watch_failures_.empty()) {
    Status s = watch_failures_.front();
    watch_failures_.pop_front();
    return s;
  }
  auto state = std::make_shared<StreamState>();
  state->allow_bookmarks = options.allow_watch_bookmarks;
  auto stream = std::make_unique<Stream>(state);
  const std::string& rv = options.resource_version;
  if (rv.empty()) {
    // From now on.
  } else if (rv == "0") {
    for (const ObjectPtr& obj : SnapshotAt(revision_, "")) {
      state->Push(WatchEvent{.type = EventType::kAdded, .object = obj});
    }
  } else {
    std::optional<int64_t> from = ParseInt64(rv);
    if (!from.has_value() || *from < 0) {
      return Status(StatusCode::kInvalidArgument,
                    "invalid resource version \"" + rv + "\"", 400);
    }
    if (*from < compacted_) {
      // As the watch cache does: the watch starts, then says 410.
      state->Push(
          WatchEvent{.type = EventType::kError,
                     .error = Status(StatusCode::kExpired,
                                     "too old resource version: " + rv + " (" +
                                         std::to_string(compacted_) + ")",
                                     410)});
      state->End(Status::Ok());
      return std::unique_ptr<WatchStream>(std::move(stream));
    }
    for (const HistoryEvent& e : history_) {
      if (e.revision > *from) {
        state->Push(WatchEvent{.type = e.type, .object = e.object});
      }
    }
  }
  streams_.push_back(state);
  return std::unique_ptr<WatchStream>(std::move(stream));
}

void FakeListerWatcher::SendBookmark() {
  MutexLock l(&mu_);
  ObjectPtr bookmark = Bookmark(revision_);
  for (const auto& s : streams_) {
    if (s->allow_bookmarks) {
      s->Push(WatchEvent{.type = EventType::kBookmark, .object = bookmark});
    }
  }
}

void FakeListerWatcher::CloseWatches(Status result) {
  MutexLock l(&mu_);
  for (const auto& s : streams_) s->End(result);
  streams_.clear();
}

void FakeListerWatcher::SendWatchError(const Status& error) {
  MutexLock l(&mu_);
  for (const auto& s : streams_) {
    s->Push(WatchEvent{.type = EventType::kError, .error = error});
    s->End(Status::Ok());
  }
  streams_.clear();
}

void FakeListerWatcher::FailNextLists(Status error, int count) {
  MutexLock l(&mu_);
  for (int i = 0; i < count; ++i) list_failures_.push_back(error);
}

void FakeListerWatcher::FailNextWatches(Status error, int count) {
  MutexLock l(&mu_);
  for (int i = 0; i < count; ++i) watch_failures_.push_back(error);
}

std::vector<ListOptions> FakeListerWatcher::ListCalls() const {
  MutexLock l(&mu_);
  return list_calls_;
}

std::vector<ListOptions> FakeListerWatcher::WatchCalls() const {
  MutexLock l(&mu_);
  return watch_calls_;
}

int FakeListerWatcher::OpenWatches() const {
  MutexLock l(&mu_);
  int n = 0;
  for (const auto& s : streams_) n += s->Ended() ? 0 : 1;
  return n;
}

void FakeListerWatcher::WaitForListCalls(int n) const {
  MutexLock l(&mu_);
  calls_cv_.wait(l.native(), [&]() REQUIRES(mu_) {
    return static_cast<int>(list_calls_.size()) >= n;
  });
}

void FakeListerWatcher::WaitForWatchCalls(int n) const {
  MutexLock l(&mu_);
  calls_cv_.wait(l.native(), [&]() REQUIRES(mu_) {
    return static_cast<int>(watch_calls_.size()) >= n;
  });
}

}  // namespace kplane::informer
