// The MVCC history of one object, for the web view (issue 21, docs/ui.md):
// every version of it the store still holds, newest first, decoded as the
// normal read path decodes (ObjectStore::Decode: decrypted through the
// resource's encryption-at-rest transformer, resourceVersion set to the
// version's mod_revision).
//
// How it walks: read the key now; then, while older versions exist, read it
// again at revision = (the version's mod_revision - 1), which the store
// answers with the version before. It stops, and says why
// (ObjectHistory::end), when
//   kCreated    the version read is the key's first (mod_revision ==
//               create_revision): that is where this object began (an
//               earlier object deleted under the same name is another one);
//   kCompacted  the next read is below the store's compaction point (the
//               revision is in `compact_revision`): older versions are gone;
//   kLimit      `max_versions` versions were read and older ones remain.
//
//   ASSIGN_OR_RETURN(ObjectHistory h,
//                    ReadObjectHistory(store, "default", "web", 100));
//   std::string json = ObjectHistoryJson(h);
//
// An object deleted since (not in the store now): its history is the one
// before its newest deletion still in the store's event log, found by a
// watch of its key from revision 1 (or from the compaction point) that the
// store answers by replaying the retained events; `deleted_revision` says
// when. (Over etcd 3.4.23, whose progress answers do not wait for that
// replay, the end of the replay is etcd's catch-up batch or, for a key
// without retained events, kUnorderedReplayQuiet without news.) That replay
// reads the store's event log since the compaction (at most
// kHistoryReplayTimeout): the versions of a deleted object are kept exactly as
// long as any other old version, until the next compaction
// (`kplane up`/`kplane apiserver` compact every --etcd-compaction-interval,
// 5 minutes by default, keeping the last interval's revisions).
//
// Thread-safety: ReadObjectHistory only reads (ObjectStore is thread-safe);
// a write between two reads makes no difference to the older versions.
// Errors: kNotFound when the object does not exist now and no deletion of it
// is retained (the ObjectStore's `<group-resource> "<name>" not found`),
// kDeadlineExceeded when the replay takes longer than
// kHistoryReplayTimeout, anything else the KV returns (a
// compaction met after the first version is the kCompacted end, not an
// error). A version that does not
// decode (e.g. encrypted under a key no longer configured) is kept with its
// error in ObjectVersion::error, not failed.
#ifndef KPLANE_APISERVER_OBJECT_HISTORY_H_
#define KPLANE_APISERVER_OBJECT_HISTORY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/storage/object_store.h"
#include "base/clock.h"
#include "base/statusor.h"

namespace kplane::apiserver {

// Versions one request reads at most (and the page shows): each is one
// store read, and objects of tens of KB make 100 versions a few MB.
inline constexpr int kMaxHistoryVersions = 100;
// How long the store may take to replay a deleted object's events.
inline constexpr Duration kHistoryReplayTimeout = seconds(10);
// Over a store whose progress answers may precede its replay (etcd 3.4.23,
// storage::Watch::ProgressOrdered()): how long nothing more must come before
// the replay counts as over. etcd sends a replay on its next sync of
// catching-up watchers, every 100 ms.
inline constexpr Duration kUnorderedReplayQuiet = seconds(1);

struct ObjectVersion {
  int64_t revision = 0;  // the version's mod_revision (its resourceVersion)
  int64_t version = 0;   // the key's write count (1 = created)
  ObjectPtr object;      // null when it did not decode
  std::string error;     // why it did not decode
};

struct ObjectHistory {
  enum class End { kCreated, kCompacted, kLimit };
  std::string key;               // "/registry/pods/default/web"
  int64_t create_revision = 0;   // the object's creation
  int64_t read_revision = 0;     // the store's revision at the first read
  int64_t deleted_revision = 0;  // > 0: not in the store now; deleted here
  std::vector<ObjectVersion> versions;  // newest first, at least one
  End end = End::kCreated;
  int64_t compact_revision = 0;  // with kCompacted
};

// `max_versions` in [1, kMaxHistoryVersions] (clamped).
StatusOr<ObjectHistory> ReadObjectHistory(const ObjectStore& store,
                                          std::string_view ns,
                                          std::string_view name,
                                          int max_versions,
                                          Clock* clock = Clock::Real());

// {"key":"..","createRevision":N,"readRevision":N,"deletedRevision":N
// (deleted),
//  "end":"created"|"compacted"|"limit","compactRevision":N (compacted),
//  "versions":[{"revision":N,"version":N,"object":{..kind,apiVersion..}}
//              | {"revision":N,"version":N,"error":".."}]}
std::string ObjectHistoryJson(const ObjectHistory& history);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_OBJECT_HISTORY_H_
