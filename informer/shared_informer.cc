#include "informer/shared_informer.h"

#include <deque>
#include <map>

#include "objects/meta.h"
#include "base/logging.h"

namespace kplane::informer {

namespace {

struct Notification {
  enum class Kind { kAdd, kUpdate, kDelete };
  Kind kind = Kind::kAdd;
  ObjectPtr obj;      // add: the object; update: the new object
  ObjectPtr old_obj;  // update only
  bool initial = false;
  DeletedObject deleted;  // delete only
};

Notification AddNotification(ObjectPtr obj, bool initial) {
  return Notification{.kind = Notification::Kind::kAdd,
                      .obj = std::move(obj),
                      .initial = initial};
}

Notification UpdateNotification(ObjectPtr old_obj, ObjectPtr new_obj) {
  return Notification{.kind = Notification::Kind::kUpdate,
                      .obj = std::move(new_obj),
                      .old_obj = std::move(old_obj)};
}

Notification DeleteNotification(DeletedObject deleted) {
  return Notification{.kind = Notification::Kind::kDelete,
                      .deleted = std::move(deleted)};
}

class FuncsHandler : public ResourceEventHandler {
 public:
  explicit FuncsHandler(EventHandlerFuncs f) : f_(std::move(f)) {}
  void OnAdd(const ObjectPtr& obj, bool initial) override {
    if (f_.on_add) f_.on_add(obj, initial);
  }
  void OnUpdate(const ObjectPtr& o, const ObjectPtr& n) override {
    if (f_.on_update) f_.on_update(o, n);
  }
  void OnDelete(const DeletedObject& d) override {
    if (f_.on_delete) f_.on_delete(d);
  }

 private:
  EventHandlerFuncs f_;
};

}  // namespace

std::shared_ptr<ResourceEventHandler> MakeHandler(EventHandlerFuncs funcs) {
  return std::make_shared<FuncsHandler>(std::move(funcs));
}

// One handler: an unbounded queue drained by a thread of its own.
class SharedIndexInformer::Listener : public HandlerRegistration {
 public:
  Listener(std::shared_ptr<ResourceEventHandler> handler, Duration resync)
      : resync_period(resync), handler_(std::move(handler)) {}

  ~Listener() override { Stop(); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }

  void Push(Notification n) {
    MutexLock l(&mu_);
    if (stopping_) return;
    if (n.initial) ++initial_pending_;
    queue_.push_back(std::move(n));
    cv_.notify_one();
  }

  void MarkUpstreamSynced() {
    MutexLock l(&mu_);
    upstream_synced_ = true;
  }

  bool HasSynced() const override {
    MutexLock l(&mu_);
    return upstream_synced_ && initial_pending_ == 0;
  }

  void Stop() {
    {
      MutexLock l(&mu_);
      stopping_ = true;
      queue_.clear();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Guarded by the informer's apply_mu_.
  const Duration resync_period;
  TimePoint next_resync;

 private:
  void Run() {
    MutexLock l(&mu_);
    for (;;) {
      cv_.wait(l.native(),
               [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      Notification n = std::move(queue_.front());
      queue_.pop_front();
      l.Unlock();
      switch (n.kind) {
        case Notification::Kind::kAdd:
          handler_->OnAdd(n.obj, n.initial);
          break;
        case Notification::Kind::kUpdate:
          handler_->OnUpdate(n.old_obj, n.obj);
          break;
        case Notification::Kind::kDelete:
          handler_->OnDelete(n.deleted);
          break;
      }
      l.Lock();
      if (n.initial) --initial_pending_;
    }
  }

  std::shared_ptr<ResourceEventHandler> handler_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Notification> queue_ GUARDED_BY(mu_);
  int64_t initial_pending_ GUARDED_BY(mu_) = 0;
  bool upstream_synced_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class SharedIndexInformer::Store : public ReflectorStore {
 public:
  explicit Store(SharedIndexInformer* informer) : informer_(informer) {}
  void Add(ObjectPtr obj) override { informer_->Add(std::move(obj)); }
  void Update(ObjectPtr obj) override { informer_->Add(std::move(obj)); }
  void Delete(ObjectPtr obj) override { informer_->Delete(std::move(obj)); }
  void Replace(std::vector<ObjectPtr> objects, const std::string&) override {
    informer_->Replace(std::move(objects));
  }

 private:
  SharedIndexInformer* informer_;
};

SharedIndexInformer::SharedIndexInformer(std::shared_ptr<ListerWatcher> lw,
                                         SharedInformerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      lw_(std::move(lw)),
      resource_(objects::Scheme::Default().ResourceForKind(lw_->Kind())),
      indexer_(options_.indexers),
      store_(std::make_unique<Store>(this)) {
  ReflectorOptions ro = options_.reflector;
  if (ro.clock == nullptr) ro.clock = clock_;
  if (ro.name == ReflectorOptions().name) ro.name = options_.name;
  reflector_ = std::make_unique<Reflector>(lw_.get(), store_.get(), ro);
}

SharedIndexInformer::~SharedIndexInformer() { Stop(); }

HandlerRegistration* SharedIndexInformer::AddEventHandler(
    std::shared_ptr<ResourceEventHandler> handler,
    std::optional<Duration> resync) {
  auto listener = std::make_unique<Listener>(
      std::move(handler), resync.value_or(options_.resync_period));
  Listener* raw = listener.get();
  MutexLock l(&apply_mu_);
  if (stopped_) {
    listeners_.push_back(std::move(listener));  // inert
    return raw;
  }
  raw->next_resync = clock_->Now() + raw->resync_period;
  raw->Start();
  if (synced_) {
    for (ObjectPtr& obj : indexer_.List()) {
      raw->Push(AddNotification(std::move(obj), /*initial=*/true));
    }
    raw->MarkUpstreamSynced();
  }
  listeners_.push_back(std::move(listener));
  resync_changed_ = true;
  apply_cv_.notify_all();
  return raw;
}

Status SharedIndexInformer::RemoveEventHandler(
    HandlerRegistration* registration) {
  std::unique_ptr<Listener> removed;
  {
    MutexLock l(&apply_mu_);
    for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
      if (it->get() == registration) {
        removed = std::move(*it);
        listeners_.erase(it);
        break;
      }
    }
    resync_changed_ = true;
  }
  apply_cv_.notify_all();
  if (removed == nullptr) return NotFoundError("no such handler");
  removed->Stop();  // outside apply_mu_: the handler may be mid-call
  return Status::Ok();
}

void SharedIndexInformer::Start() {
  MutexLock l(&apply_mu_);
  if (started_ || stopped_) return;
  started_ = true;
  reflector_->Start();
  resync_thread_ = std::thread([this] { ResyncLoop(); });
}

void SharedIndexInformer::Stop() {
  {
    MutexLock l(&apply_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  apply_cv_.notify_all();
  reflector_->Stop();
  if (resync_thread_.joinable()) resync_thread_.join();
  std::vector<std::unique_ptr<Listener>> listeners;
  {
    MutexLock l(&apply_mu_);
    listeners.swap(listeners_);
  }
  for (auto& listener : listeners) listener->Stop();
}

bool SharedIndexInformer::HasSynced() const {
  MutexLock l(&apply_mu_);
  return synced_;
}

bool SharedIndexInformer::WaitForCacheSync(Duration timeout) {
  MutexLock l(&apply_mu_);
  auto done = [&]() REQUIRES(apply_mu_) { return synced_ || stopped_; };
  if (timeout.count() < 0) {
    apply_cv_.wait(l.native(), done);
  } else {
    clock_->WaitUntil(l.native(), apply_cv_, clock_->Now() + timeout, done);
  }
  return synced_;
}

std::string SharedIndexInformer::LastSyncResourceVersion() const {
  return reflector_->LastSyncResourceVersion();
}

template <typename F>
void SharedIndexInformer::Distribute(const F& make_notification) {
  for (const auto& listener : listeners_) listener->Push(make_notification());
}

void SharedIndexInformer::Add(ObjectPtr obj) {
  MutexLock l(&apply_mu_);
  ObjectPtr old = indexer_.Upsert(obj);
  if (old != nullptr) {
    Distribute([&] { return UpdateNotification(old, obj); });
  } else {
    Distribute([&] { return AddNotification(obj, /*initial=*/false); });
  }
}

void SharedIndexInformer::Delete(ObjectPtr obj) {
  MutexLock l(&apply_mu_);
  std::string key = ObjectKey(*obj);
  if (indexer_.Delete(key) == nullptr) return;  // never cached
  Distribute([&] {
    return DeleteNotification(DeletedObject{.object = obj, .key = key});
  });
}

void SharedIndexInformer::Replace(std::vector<ObjectPtr> objects) {
  MutexLock l(&apply_mu_);
  const bool initial = !synced_;
  // Diff the new list against the cache (worked example in the header).
  std::vector<Notification> notes;
  std::map<std::string, bool> listed;  // key -> seen in the list
  for (ObjectPtr& obj : objects) {
    std::string key = ObjectKey(*obj);
    listed[key] = true;
    ObjectPtr old = indexer_.Get(key);
    if (old == nullptr) {
      notes.push_back(AddNotification(obj, initial));
    } else if (objects::ResourceVersion(*old) != objects::ResourceVersion(*obj)) {
      notes.push_back(UpdateNotification(old, obj));
    } else {
      obj = std::move(old);  // unchanged: keep the object handlers saw
    }
  }
  for (ObjectPtr& old : indexer_.List()) {
    std::string key = ObjectKey(*old);
    if (listed.count(key) != 0) continue;
    notes.push_back(DeleteNotification(DeletedObject{
        .object = std::move(old), .final_state_unknown = true, .key = key}));
  }
  indexer_.Replace(std::move(objects));
  for (const Notification& n : notes) {
    Distribute([&] { return n; });
  }
  if (!synced_) {
    synced_ = true;
    for (const auto& listener : listeners_) listener->MarkUpstreamSynced();
    resync_changed_ = true;
    apply_cv_.notify_all();
  }
}

void SharedIndexInformer::ResyncLoop() {
  MutexLock l(&apply_mu_);
  auto wake = [&]() REQUIRES(apply_mu_) { return stopped_ || resync_changed_; };
  while (!stopped_) {
    resync_changed_ = false;
    std::optional<TimePoint> next;
    if (synced_) {
      for (const auto& listener : listeners_) {
        if (listener->resync_period.count() <= 0) continue;
        if (!next.has_value() || listener->next_resync < *next) {
          next = listener->next_resync;
        }
      }
    }
    if (!next.has_value()) {
      apply_cv_.wait(l.native(), wake);
      continue;
    }
    if (clock_->Now() < *next) {
      clock_->WaitUntil(l.native(), apply_cv_, *next, wake);
      continue;
    }
    const TimePoint now = clock_->Now();
    std::vector<ObjectPtr> objects = indexer_.List();
    for (const auto& listener : listeners_) {
      if (listener->resync_period.count() <= 0 || listener->next_resync > now) {
        continue;
      }
      for (const ObjectPtr& obj : objects) {
        listener->Push(UpdateNotification(obj, obj));
      }
      listener->next_resync = now + listener->resync_period;
    }
  }
}

}  // namespace kplane::informer
