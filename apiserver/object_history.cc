#include "apiserver/object_history.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <condition_variable>
#include <memory>

#include "apiserver/encoding.h"
#include "base/mutex.h"
#include "base/strings.h"

namespace kplane::apiserver {
namespace {

// What a replay of one key's retained events found.
struct Replay {
  Mutex mu;
  std::condition_variable cv;
  bool done GUARDED_BY(mu) = false;
  int64_t compacted GUARDED_BY(mu) = 0;    // the start was compacted: here
  int64_t last_delete GUARDED_BY(mu) = 0;  // the newest DELETE's revision
  int64_t delivered GUARDED_BY(mu) = 0;    // events delivered up to here
};

// The revision of the key's newest deletion at or before `up_to`, from a
// watch of the key started at `start` (the store replays its retained event
// log, then answers a progress request once it has caught up); 0 when none
// is retained. kCompacted (detail: the compact revision) when `start` is.
StatusOr<int64_t> LastDeletion(storage::KV& kv, const std::string& key,
                               int64_t start, int64_t up_to, Clock* clock) {
  auto replay = std::make_shared<Replay>();
  etcdserverpb::WatchCreateRequest req;
  req.set_key(key);
  req.set_start_revision(start);
  StatusOr<std::unique_ptr<storage::Watch>> watch = kv.StartWatch(
      req, [replay, up_to](const etcdserverpb::WatchResponse& resp) {
        MutexLock l(&replay->mu);
        if (resp.canceled()) {
          replay->compacted = resp.compact_revision();
          replay->done = true;
        }
        for (const mvccpb::Event& ev : resp.events()) {
          if (ev.kv().mod_revision() > up_to) continue;
          if (ev.type() == mvccpb::Event::DELETE) {
            replay->last_delete = ev.kv().mod_revision();
          }
        }
        // A response without events and not the creation is the answer to
        // the progress request: every event up to its revision is in.
        if (!resp.created() && resp.events_size() == 0 &&
            resp.header().revision() >= up_to) {
          replay->done = true;
        }
        if (replay->done) replay->cv.notify_all();
      });
  if (!watch.ok()) return watch.status();
  (*watch)->RequestProgress();
  MutexLock l(&replay->mu);
  if (!clock->WaitFor(l.native(), replay->cv, kHistoryReplayTimeout,
                      [&]() REQUIRES(replay->mu) { return replay->done; })) {
    return DeadlineExceededError("the store did not replay the history of " +
                                 key + " in time");
  }
  if (replay->compacted > 0) {
    return Status(StatusCode::kCompacted,
                  "mvcc: required revision has been compacted",
                  replay->compacted);
  }
  return replay->last_delete;
}

}  // namespace

StatusOr<ObjectHistory> ReadObjectHistory(const ObjectStore& store,
                                          std::string_view ns,
                                          std::string_view name,
                                          int max_versions, Clock* clock) {
  max_versions = std::clamp(max_versions, 1, kMaxHistoryVersions);
  ObjectHistory h;
  h.key = store.Key(ns, name);
  int64_t at = 0;  // the newest first
  while (true) {
    etcdserverpb::RangeRequest req;
    req.set_key(h.key);
    req.set_revision(at);
    StatusOr<etcdserverpb::RangeResponse> resp = store.kv()->Range(req);
    if (!resp.ok() && resp.status().Is(StatusCode::kCompacted) &&
        !h.versions.empty()) {
      h.end = ObjectHistory::End::kCompacted;
      h.compact_revision = resp.status().detail();
      return h;
    }
    if (!resp.ok() && resp.status().Is(StatusCode::kCompacted) &&
        h.deleted_revision > 0) {
      // The deletion is retained but every version before it compacted.
      return NotFoundError(store.resource().GroupResource() + " " +
                           GoQuote(name) + " not found");
    }
    if (!resp.ok()) return resp.status();
    if (at == 0) h.read_revision = resp->header().revision();
    if (resp->kvs_size() == 0 && at == 0 && h.deleted_revision == 0) {
      // Not there now: deleted? Its versions before the deletion are still
      // in the store until compaction; the deletion's revision comes from
      // a replay of the key's events (from revision 1, or from the
      // compaction point when older ones are gone).
      StatusOr<int64_t> deleted =
          LastDeletion(*store.kv(), h.key, 1, h.read_revision, clock);
      if (!deleted.ok() && deleted.status().Is(StatusCode::kCompacted)) {
        deleted = LastDeletion(*store.kv(), h.key, deleted.status().detail(),
                               h.read_revision, clock);
      }
      if (!deleted.ok()) return deleted.status();
      if (*deleted > 0) {
        h.deleted_revision = *deleted;
        at = *deleted - 1;
        continue;
      }
    }
    if (resp->kvs_size() == 0) {
      // Only possible for the first read (a key that exists at
      // mod_revision with version > 1 existed at every revision since its
      // creation), or when no deletion of it is retained.
      return NotFoundError(store.resource().GroupResource() + " " +
                           GoQuote(name) + " not found");
    }
    const mvccpb::KeyValue& kv = resp->kvs(0);
    ObjectVersion v{.revision = kv.mod_revision(), .version = kv.version()};
    StatusOr<MutableObject> obj =
        store.Decode(kv.key(), kv.value(), kv.mod_revision());
    if (obj.ok()) {
      v.object = std::move(*obj);
    } else {
      v.error = obj.status().ToString();
    }
    h.versions.push_back(std::move(v));
    h.create_revision = kv.create_revision();
    if (kv.mod_revision() <= kv.create_revision()) {
      h.end = ObjectHistory::End::kCreated;
      return h;
    }
    if (static_cast<int>(h.versions.size()) >= max_versions) {
      h.end = ObjectHistory::End::kLimit;
      return h;
    }
    at = kv.mod_revision() - 1;
  }
}

std::string ObjectHistoryJson(const ObjectHistory& history) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("key");
  w.String(history.key.data(), history.key.size());
  w.Key("createRevision");
  w.Int64(history.create_revision);
  w.Key("readRevision");
  w.Int64(history.read_revision);
  if (history.deleted_revision > 0) {
    w.Key("deletedRevision");
    w.Int64(history.deleted_revision);
  }
  w.Key("end");
  switch (history.end) {
    case ObjectHistory::End::kCreated:
      w.String("created");
      break;
    case ObjectHistory::End::kCompacted:
      w.String("compacted");
      w.Key("compactRevision");
      w.Int64(history.compact_revision);
      break;
    case ObjectHistory::End::kLimit:
      w.String("limit");
      break;
  }
  w.Key("versions");
  w.StartArray();
  for (const ObjectVersion& v : history.versions) {
    w.StartObject();
    w.Key("revision");
    w.Int64(v.revision);
    w.Key("version");
    w.Int64(v.version);
    if (v.object != nullptr) {
      const std::string json = RenderObject(RenderOptions{}, *v.object);
      w.Key("object");
      w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
    } else {
      w.Key("error");
      w.String(v.error.data(), v.error.size());
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

}  // namespace kplane::apiserver
