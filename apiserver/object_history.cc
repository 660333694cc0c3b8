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

// etcd sends a watcher's catch-up in batches of at most this many
// revisions (mvcc watchBatchMaxRevs).
constexpr int kEtcdWatchBatchMaxRevs = 1000;

// What a replay of one key's retained events found.
struct Replay {
  Mutex mu;
  std::condition_variable cv;
  bool canceled GUARDED_BY(mu) = false;
  int64_t compacted GUARDED_BY(mu) = 0;    // the start was compacted: here
  int64_t last_delete GUARDED_BY(mu) = 0;  // the newest DELETE's revision
  // A progress answer at or past `up_to` arrived.
  bool progressed GUARDED_BY(mu) = false;
  // A batch of events sent at a revision at or past `up_to`, which held
  // every event up to it (fewer revisions than a batch can hold).
  bool whole_batch GUARDED_BY(mu) = false;
  int64_t responses GUARDED_BY(mu) = 0;  // after the creation
};

// The revision of the key's newest deletion at or before `up_to`, from a
// watch of the key started at `start`, which the store answers by replaying
// its retained event log; 0 when none is retained. kCompacted (detail: the
// compact revision) when `start` is.
//
// When is the replay over? Our store answers a progress request once it has
// sent every event before its revision. etcd 3.4.23 answers at once
// (storage::Watch::ProgressOrdered() false) and sends the replay on its next
// sync of catching-up watchers, every 100 ms, in one batch that holds every
// event up to its revision unless it spans more than 1000 revisions. So
// there the replay is over at such a batch; a key without retained events
// gets none, and is taken to have none once nothing has come for
// kUnorderedReplayQuiet after the progress answer.
StatusOr<int64_t> LastDeletion(storage::KV& kv, const std::string& key,
                               int64_t start, int64_t up_to, Clock* clock) {
  auto replay = std::make_shared<Replay>();
  etcdserverpb::WatchCreateRequest req;
  req.set_key(key);
  req.set_start_revision(start);
  StatusOr<std::unique_ptr<storage::Watch>> watch = kv.StartWatch(
      req, [replay, up_to](const etcdserverpb::WatchResponse& resp) {
        MutexLock l(&replay->mu);
        if (resp.created()) return;
        ++replay->responses;
        if (resp.canceled()) {
          replay->compacted = resp.compact_revision();
          replay->canceled = true;
        }
        int revisions = 0;
        int64_t previous = 0;
        for (const mvccpb::Event& ev : resp.events()) {
          const int64_t rev = ev.kv().mod_revision();
          if (rev != previous) ++revisions;
          previous = rev;
          if (rev > up_to) continue;
          if (ev.type() == mvccpb::Event::DELETE) replay->last_delete = rev;
        }
        if (resp.header().revision() >= up_to) {
          if (resp.events_size() == 0) {
            replay->progressed = true;
          } else if (revisions < kEtcdWatchBatchMaxRevs) {
            replay->whole_batch = true;
          }
        }
        replay->cv.notify_all();
      });
  if (!watch.ok()) return watch.status();
  const bool ordered = (*watch)->ProgressOrdered();
  (*watch)->RequestProgress();
  MutexLock l(&replay->mu);
  auto over = [&]() REQUIRES(replay->mu) {
    return replay->canceled ||
           (ordered ? replay->progressed : replay->whole_batch);
  };
  const TimePoint deadline = clock->Now() + kHistoryReplayTimeout;
  auto timed_out = [&] {
    return DeadlineExceededError("the store did not replay the history of " +
                                 key + " in time");
  };
  if (ordered) {
    if (!clock->WaitUntil(l.native(), replay->cv, deadline, over)) {
      return timed_out();
    }
  } else {
    // Unordered: over at a whole batch, or when the store has said nothing
    // more for a while after its progress answer (or after a full batch).
    while (!over()) {
      const int64_t seen = replay->responses;
      const bool quiet_counts = replay->progressed || seen > 0;
      const TimePoint until =
          quiet_counts
              ? std::min(deadline, clock->Now() + kUnorderedReplayQuiet)
              : deadline;
      const bool woke = clock->WaitUntil(
          l.native(), replay->cv, until, [&]() REQUIRES(replay->mu) {
            return over() || replay->responses != seen;
          });
      if (woke) continue;
      if (clock->Now() >= deadline) return timed_out();
      break;  // quiet: every retained event has come
    }
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
