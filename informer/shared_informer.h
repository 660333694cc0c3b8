// SharedIndexInformer: one reflector and one indexed cache per collection,
// shared by any number of event handlers (client-go's
// cache.SharedIndexInformer).
//
//   auto inf = std::make_shared<SharedIndexInformer>(lw, options);
//   inf->AddEventHandler(EventHandlerFuncs{
//       .on_add = [&](const ObjectPtr& o, bool initial) { queue.Add(...); },
//       .on_delete = [&](const DeletedObject& d) { ... d.object ... }});
//   inf->Start();
//   inf->WaitForCacheSync(seconds(30));
//   Lister pods = inf->GetLister();
//
// Data flow: the reflector's thread applies each change to the Indexer
// first, then appends a notification to every handler's own queue. Each
// handler has a thread of its own that drains its unbounded queue in
// order, so a slow handler delays only itself; the reflector and the other
// handlers never wait for it. A handler therefore always sees the cache at
// least as new as the notification it is handling.
//
// Notifications:
//   OnAdd(obj, is_in_initial_list)  an object appeared; is_in_initial_list
//       is true for the contents of the first LIST, and for the existing
//       objects replayed to a handler added after the informer synced.
//   OnUpdate(old, new)  the object changed; also every `resync_period` for
//       every cached object with old == new (a periodic resync that lets
//       controllers re-check the world; handlers compare resourceVersions
//       to tell the two apart).
//   OnDelete(deleted)  the object is gone. deleted.final_state_unknown
//       (client-go's DeletedFinalStateUnknown tombstone) when the deletion
//       was missed while the watch was down and only a relist revealed it:
//       deleted.object is then the last state we knew, not the final one.
// A relist (after a 410) delivers only the difference between the cache
// and the new list: OnAdd for new keys, OnUpdate for changed
// resourceVersions, OnDelete tombstones for keys no longer listed.
// Deletes of objects the cache never held are not delivered.
//
// HasSynced(): the first LIST has been applied to the cache. A
// registration's HasSynced(): additionally, that handler has finished
// every is_in_initial_list notification.
//
// Ownership: the informer owns its reflector, cache and handler threads and
// shares the ListerWatcher and the handlers. Stop() (also in the
// destructor) stops the reflector, then every handler thread (pending
// notifications are dropped); an informer is not restarted after Stop().
// Thread-safety: all methods may be called from any thread, including
// from handlers (except Stop()/RemoveEventHandler of the calling handler).
#ifndef KPLANE_INFORMER_SHARED_INFORMER_H_
#define KPLANE_INFORMER_SHARED_INFORMER_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "informer/indexer.h"
#include "informer/list_watch.h"
#include "informer/lister.h"
#include "informer/reflector.h"

namespace kplane::informer {

struct DeletedObject {
  // The final state, or (final_state_unknown) the last state we knew.
  ObjectPtr object;
  bool final_state_unknown = false;
  std::string key;  // "namespace/name"
};

class ResourceEventHandler {
 public:
  virtual ~ResourceEventHandler() = default;
  virtual void OnAdd(const ObjectPtr& obj, bool is_in_initial_list) {}
  virtual void OnUpdate(const ObjectPtr& old_obj, const ObjectPtr& new_obj) {}
  virtual void OnDelete(const DeletedObject& deleted) {}
};

// A handler from functions; unset ones ignore their notification.
//   inf->AddEventHandler(EventHandlerFuncs{.on_add = ..., .on_delete = ...});
struct EventHandlerFuncs {
  std::function<void(const ObjectPtr&, bool)> on_add;
  std::function<void(const ObjectPtr&, const ObjectPtr&)> on_update;
  std::function<void(const DeletedObject&)> on_delete;
};
std::shared_ptr<ResourceEventHandler> MakeHandler(EventHandlerFuncs funcs);

// What AddEventHandler returns; valid until removed or the informer dies.
class HandlerRegistration {
 public:
  virtual ~HandlerRegistration() = default;
  virtual bool HasSynced() const = 0;
};

struct SharedInformerOptions {
  std::string name = "informer";
  // Resync period of handlers added without one (0: no resync).
  Duration resync_period{0};
  Indexers indexers = DefaultIndexers();
  ReflectorOptions reflector;  // its clock defaults to `clock`
  Clock* clock = nullptr;      // nullptr: Clock::Real()
};

class SharedIndexInformer {
 public:
  SharedIndexInformer(std::shared_ptr<ListerWatcher> lw,
                      SharedInformerOptions options = {});
  ~SharedIndexInformer();
  SharedIndexInformer(const SharedIndexInformer&) = delete;
  SharedIndexInformer& operator=(const SharedIndexInformer&) = delete;

  // Adds a handler (before or after Start). `resync` overrides the
  // default period for this handler (0: none).
  HandlerRegistration* AddEventHandler(
      std::shared_ptr<ResourceEventHandler> handler,
      std::optional<Duration> resync = std::nullopt);
  HandlerRegistration* AddEventHandler(
      EventHandlerFuncs funcs, std::optional<Duration> resync = std::nullopt) {
    return AddEventHandler(MakeHandler(std::move(funcs)), resync);
  }
  // Stops the handler's thread (waiting for a running notification) and
  // drops its queue. kNotFound if not registered here.
  Status RemoveEventHandler(HandlerRegistration* registration);

  // Starts the reflector (idempotent).
  void Start();
  void Stop();

  bool HasSynced() const;
  // Waits until HasSynced(), Stop(), or `timeout` on the clock (negative:
  // no limit). Returns HasSynced().
  bool WaitForCacheSync(Duration timeout = Duration(-1));

  const Indexer& GetIndexer() const { return indexer_; }
  Lister GetLister() const { return Lister(&indexer_, resource_); }
  Status AddIndexers(Indexers indexers) {
    return indexer_.AddIndexers(std::move(indexers));
  }
  const objects::KindInfo& Kind() const { return lw_->Kind(); }
  std::string LastSyncResourceVersion() const;
  Reflector::Stats ReflectorStats() const { return reflector_->stats(); }

 private:
  class Listener;
  class Store;
  friend class Store;

  // ReflectorStore, applied under apply_mu_.
  void Add(ObjectPtr obj);
  void Delete(ObjectPtr obj);
  void Replace(std::vector<ObjectPtr> objects);
  template <typename F>
  void Distribute(const F& make_notification)
      REQUIRES(apply_mu_);  // apply_mu_ held
  void ResyncLoop();

  const SharedInformerOptions options_;
  Clock* const clock_;
  std::shared_ptr<ListerWatcher> lw_;
  const objects::ResourceInfo* resource_;
  Indexer indexer_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Reflector> reflector_;

  // Serialises cache changes, handler (de)registration and resyncs, so
  // every handler's queue is in cache order.
  mutable Mutex apply_mu_;
  std::condition_variable apply_cv_;  // synced_, stopped_, resync changes
  std::vector<std::unique_ptr<Listener>> listeners_ GUARDED_BY(apply_mu_);
  bool synced_ GUARDED_BY(apply_mu_) = false;
  bool started_ GUARDED_BY(apply_mu_) = false;
  bool stopped_ GUARDED_BY(apply_mu_) = false;
  bool resync_changed_ GUARDED_BY(apply_mu_) =
      false;  // wakes the resync loop to re-plan
  std::thread resync_thread_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_SHARED_INFORMER_H_
