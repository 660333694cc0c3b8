#include "apiserver/background.h"

#include "objects/meta.h"
#include "objects/time.h"
#include "base/logging.h"

namespace kplane::apiserver {

namespace {

constexpr Duration kRewatchDelay = seconds(1);
constexpr Duration kIdleWait = minutes(1);

bool GracefullyTerminating(const google::protobuf::Message& obj) {
  const objects::metav1::ObjectMeta* m = objects::GetObjectMeta(obj);
  return m != nullptr && objects::IsBeingDeleted(*m) &&
         m->has_deletiongraceperiodseconds() &&
         m->deletiongraceperiodseconds() > 0;
}

bool Terminating(const google::protobuf::Message& obj) {
  const objects::metav1::ObjectMeta* m = objects::GetObjectMeta(obj);
  return m != nullptr && objects::IsBeingDeleted(*m);
}

}  // namespace

// --- PodReaper ---------------------------------------------------------------

class PodReaper::Sink : public WatchSink {
 public:
  explicit Sink(PodReaper* r) : r_(r) {}
  bool Send(const WatchEventPtr& e) override {
    r_->OnEvent(*e);
    return true;
  }
  void Close(const Status&) override { r_->OnClosed(); }

 private:
  PodReaper* r_;
};

PodReaper::PodReaper(ResourceStore* pods, Clock* clock)
    : pods_(pods), clock_(clock) {}

PodReaper::~PodReaper() { Stop(); }

void PodReaper::Start() {
  thread_ = std::thread([this] { Run(); });
}

void PodReaper::Stop() {
  std::unique_ptr<WatchHandle> handle;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    handle = std::move(handle_);
  }
  cv_.notify_all();
  handle.reset();
  if (thread_.joinable()) thread_.join();
}

size_t PodReaper::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

void PodReaper::OnEvent(const WatchEvent& e) {
  if (e.type == WatchEventType::kBookmark || e.object == nullptr) return;
  const objects::metav1::ObjectMeta& m = *objects::GetObjectMeta(*e.object);
  const std::string key = m.namespace_() + "/" + m.name();
  std::lock_guard<std::mutex> l(mu_);
  if (e.type == WatchEventType::kDeleted || !GracefullyTerminating(*e.object)) {
    entries_.erase(key);
  } else {
    const WallTime when = objects::ToWallTime(m.deletiontimestamp());
    const Duration left =
        std::chrono::duration_cast<Duration>(when - clock_->WallNow());
    entries_[key] =
        Entry{m.namespace_(), m.name(), m.uid(), clock_->Now() + left};
  }
  ++generation_;
  cv_.notify_all();
}

void PodReaper::OnClosed() {
  std::lock_guard<std::mutex> l(mu_);
  watching_ = false;
  ++generation_;
  cv_.notify_all();
}

void PodReaper::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!watching_) {
      // (Re)start the watch: initial events list every pod already
      // terminating, so nothing is missed across a restart.
      std::unique_ptr<WatchHandle> old = std::move(handle_);
      entries_.clear();
      watching_ = true;
      lock.unlock();
      old.reset();
      WatchOptions wo;
      wo.send_initial_events = true;
      wo.predicate = GracefullyTerminating;
      auto sink = std::make_shared<Sink>(this);
      StatusOr<std::unique_ptr<WatchHandle>> h =
          pods_->cacher()->Watch(wo, sink);
      lock.lock();
      if (!h.ok()) {
        watching_ = false;
        clock_->WaitFor(lock, cv_, kRewatchDelay, [&] { return stop_; });
        continue;
      }
      if (stop_) {
        std::unique_ptr<WatchHandle> drop = std::move(*h);
        lock.unlock();
        drop.reset();
        lock.lock();
        break;
      }
      handle_ = std::move(*h);
      continue;
    }
    const TimePoint now = clock_->Now();
    std::vector<Entry> due;
    TimePoint next = now + kIdleWait;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.deadline <= now) {
        due.push_back(it->second);
        it = entries_.erase(it);
      } else {
        next = std::min(next, it->second.deadline);
        ++it;
      }
    }
    if (due.empty()) {
      const uint64_t gen = generation_;
      clock_->WaitUntil(lock, cv_, next,
                        [&] { return stop_ || generation_ != gen; });
      continue;
    }
    lock.unlock();
    for (const Entry& e : due) {
      objects::metav1::DeleteOptions opts;
      opts.set_graceperiodseconds(0);
      opts.mutable_preconditions()->set_uid(e.uid);
      ApiResult<DeleteResult> r = pods_->Delete(e.ns, e.name, opts);
      if (std::holds_alternative<ApiError>(r)) {
        const ApiError& err = std::get<ApiError>(r);
        if (err.code != 404 && err.code != 409) {
          LOG(WARNING) << "pod reaper: deleting " << e.ns << "/" << e.name
                       << ": " << err.message;
        }
      }
    }
    lock.lock();
  }
}

// --- NamespaceFinalizer
// --------------------------------------------------------

class NamespaceFinalizer::Sink : public WatchSink {
 public:
  explicit Sink(NamespaceFinalizer* f) : f_(f) {}
  bool Send(const WatchEventPtr& e) override {
    f_->OnEvent(*e);
    return true;
  }
  void Close(const Status&) override { f_->OnClosed(); }

 private:
  NamespaceFinalizer* f_;
};

NamespaceFinalizer::NamespaceFinalizer(ResourceStore* namespaces,
                                       std::vector<ResourceStore*> contents,
                                       Clock* clock, Duration retry_interval)
    : namespaces_(namespaces),
      contents_(std::move(contents)),
      clock_(clock),
      retry_interval_(retry_interval) {}

NamespaceFinalizer::~NamespaceFinalizer() { Stop(); }

void NamespaceFinalizer::Start() {
  thread_ = std::thread([this] { Run(); });
}

void NamespaceFinalizer::Stop() {
  std::unique_ptr<WatchHandle> handle;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    handle = std::move(handle_);
  }
  cv_.notify_all();
  handle.reset();
  if (thread_.joinable()) thread_.join();
}

void NamespaceFinalizer::OnEvent(const WatchEvent& e) {
  if (e.type == WatchEventType::kBookmark || e.object == nullptr) return;
  const std::string& name = objects::Name(*e.object);
  std::lock_guard<std::mutex> l(mu_);
  if (e.type == WatchEventType::kDeleted) {
    due_.erase(name);
  } else if (due_.find(name) == due_.end()) {
    due_[name] = clock_->Now();
  }
  changed_ = true;
  cv_.notify_all();
}

void NamespaceFinalizer::OnClosed() {
  std::lock_guard<std::mutex> l(mu_);
  watching_ = false;
  changed_ = true;
  cv_.notify_all();
}

bool NamespaceFinalizer::Finalize(const std::string& name) {
  StatusOr<ObjectPtr> cur = namespaces_->object_store()->Get("", name, 0);
  if (!cur.ok()) return cur.status().Is(StatusCode::kNotFound);
  if (!Terminating(**cur)) return true;
  int64_t remaining = 0;
  for (ResourceStore* store : contents_) {
    StatusOr<ListResult> list =
        store->object_store()->List(name, ListOptions{});
    if (!list.ok()) {
      ++remaining;
      continue;
    }
    for (const ObjectPtr& item : list->items) {
      ++remaining;
      if (Terminating(*item)) continue;
      ApiResult<DeleteResult> r =
          store->Delete(name, objects::Name(*item), objects::metav1::DeleteOptions{});
      if (std::holds_alternative<ApiError>(r) &&
          std::get<ApiError>(r).code != 404) {
        LOG(WARNING) << "namespace " << name << ": deleting "
                     << store->resource().resource << "/" << objects::Name(*item)
                     << ": " << std::get<ApiError>(r).message;
      }
    }
  }
  if (remaining > 0) return false;
  // Empty: drop the "kubernetes" finalizer, then delete the namespace.
  StatusOr<ObjectPtr> updated = namespaces_->object_store()->GuaranteedUpdate(
      "", name, Preconditions{},
      [](const google::protobuf::Message* c)
          -> StatusOr<std::unique_ptr<google::protobuf::Message>> {
        if (c == nullptr) return NotFoundError("gone");
        std::unique_ptr<google::protobuf::Message> n(c->New());
        n->CopyFrom(*c);
        auto* ns = dynamic_cast<objects::corev1::Namespace*>(n.get());
        CHECK(ns != nullptr);
        auto* fin = ns->mutable_spec()->mutable_finalizers();
        for (int i = fin->size() - 1; i >= 0; --i) {
          if (fin->Get(i) == "kubernetes") fin->DeleteSubrange(i, 1);
        }
        return n;
      });
  if (!updated.ok()) return updated.status().Is(StatusCode::kNotFound);
  ApiResult<DeleteResult> r =
      namespaces_->Delete("", name, objects::metav1::DeleteOptions{});
  if (std::holds_alternative<ApiError>(r)) {
    return std::get<ApiError>(r).code == 404;
  }
  // Deleted, or waiting for metadata finalizers (someone else's to remove).
  return true;
}

void NamespaceFinalizer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!watching_) {
      std::unique_ptr<WatchHandle> old = std::move(handle_);
      watching_ = true;
      lock.unlock();
      old.reset();
      WatchOptions wo;
      wo.send_initial_events = true;
      wo.predicate = Terminating;
      auto sink = std::make_shared<Sink>(this);
      StatusOr<std::unique_ptr<WatchHandle>> h =
          namespaces_->cacher()->Watch(wo, sink);
      lock.lock();
      if (!h.ok()) {
        watching_ = false;
        clock_->WaitFor(lock, cv_, kRewatchDelay, [&] { return stop_; });
        continue;
      }
      if (stop_) {
        std::unique_ptr<WatchHandle> drop = std::move(*h);
        lock.unlock();
        drop.reset();
        lock.lock();
        break;
      }
      handle_ = std::move(*h);
      continue;
    }
    const TimePoint now = clock_->Now();
    std::vector<std::string> due;
    TimePoint next = now + kIdleWait;
    for (const auto& [name, when] : due_) {
      if (when <= now) {
        due.push_back(name);
      } else {
        next = std::min(next, when);
      }
    }
    if (due.empty()) {
      changed_ = false;
      clock_->WaitUntil(lock, cv_, next, [&] { return stop_ || changed_; });
      continue;
    }
    lock.unlock();
    std::vector<std::pair<std::string, bool>> results;
    for (const std::string& name : due) {
      results.emplace_back(name, Finalize(name));
    }
    lock.lock();
    for (const auto& [name, done] : results) {
      if (done) {
        due_.erase(name);
      } else {
        due_[name] = clock_->Now() + retry_interval_;
      }
    }
  }
}

}  // namespace kplane::apiserver
