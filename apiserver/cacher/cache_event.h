// Internal to the watch cache: one change as the cache recorded it, and one
// object as the cache's store holds it. Both are immutable once published
// (shared between the store, the event window and every watcher), except
// the lazily made per-view events, which only the dispatch thread touches.
#ifndef KPLANE_APISERVER_CACHER_CACHE_EVENT_H_
#define KPLANE_APISERVER_CACHER_CACHE_EVENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "apiserver/cacher/cacher.h"

namespace kplane::apiserver::internal {

// The current state of one key.
struct StoreEntry {
  ObjectPtr object;  // resourceVersion = its mod revision
  int64_t revision = 0;
  std::string ns;
  std::string index_value;  // CacherOptions::index_func(object), or ""
  // The size of the object as the store holds it (its encoded value): what
  // keeping this state costs, roughly.
  size_t bytes = 0;
  // objects::EncodeJson(*object), made when the cache took in this version
  // (CacherOptions::keep_json; null without it, and for custom resources,
  // whose list items carry kind/apiVersion). Replaced with the entry: a
  // new version never sees the old bytes.
  std::shared_ptr<const std::string> json;
  // The synthetic ADDED that initial events send for this state, shared by
  // every watcher that lists it (and so is its encoding). Set at birth for
  // an object that was just added (it is the live ADDED event); otherwise
  // made on first use by the dispatch thread, which alone touches it.
  mutable WatchEventPtr added;  // with `json` as its object_json
};
using StoreEntryPtr = std::shared_ptr<const StoreEntry>;

// One change of one key. A DELETED event's `object` is the last state with
// resourceVersion = the deletion's revision; `prev` is the state before the
// change (null for ADDED). Watchers with selectors need both (a MODIFIED
// that leaves a selector is a DELETED for that watcher).
struct CacheEvent {
  WatchEventType type = WatchEventType::kAdded;
  int64_t revision = 0;
  // When the cache received it (CacherOptions::clock): what the window's
  // age bound (CacherOptions::window_max_age) measures.
  TimePoint recorded{};
  std::string ns;
  ObjectPtr object;
  ObjectPtr prev;
  std::string index_value;       // of object
  std::string prev_index_value;  // of prev
  // The stored size of `object` (DELETED: of the last state), what a
  // watcher's queue is charged for holding this event
  // (CacherOptions::max_pending_bytes). `prev` is not counted: it is the
  // previous event's object, shared with it.
  size_t bytes = 0;
  // What a watcher without a selector receives: {type, object, revision}.
  WatchEventPtr event;
  // Selector transitions of a MODIFIED, shared by all watchers that see the
  // same transition; made on first use by the dispatch thread only.
  mutable WatchEventPtr as_added;    // ADDED with `object` (and its JSON)
  mutable WatchEventPtr as_deleted;  // DELETED with `prev` at `revision`
};
using CacheEventPtr = std::shared_ptr<const CacheEvent>;

// `object_json`: objects::EncodeJson(*object), or null (WatchEvent).
inline WatchEventPtr MakeWatchEvent(
    WatchEventType type, ObjectPtr object, int64_t revision,
    bool initial_events_end = false,
    std::shared_ptr<const std::string> object_json = nullptr) {
  auto e = std::make_shared<WatchEvent>();
  e->type = type;
  e->object = std::move(object);
  e->revision = revision;
  e->initial_events_end = initial_events_end;
  e->object_json = std::move(object_json);
  return e;
}

}  // namespace kplane::apiserver::internal

#endif  // KPLANE_APISERVER_CACHER_CACHE_EVENT_H_
