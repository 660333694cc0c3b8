// FakeListerWatcher: an in-memory collection with the API server's
// list-watch semantics, for tests of reflectors, informers and controllers
// without HTTP (client-go's fake clientset + FakeWatcher, in one).
//
// Every write gets the next revision, which becomes the object's
// metadata.resourceVersion, is kept in a history and is sent to the open
// watches. History can be compacted, after which the server's 410 answers
// appear exactly where kube-apiserver gives them:
//
//   FakeListerWatcher fake(pods_kind);
//   fake.Create(pod_a);                 // rev 1
//   fake.Create(pod_b);                 // rev 2
//   fake.Update(pod_a_v2);              // rev 3
//   fake.Compact();                     // compacted at 3
//   List(rv "")            -> a@3, b@2, list RV "3"
//   List(rv "2", limit 10) -> 410 (an exact paged read below 3)
//   Watch(rv "2")          -> one ERROR event (410 "too old resource
//                             version: 2 (3)"), then the stream ends
//   Watch(rv "3")          -> later events only
//   Watch(rv "0")          -> ADDED for a and b, then later events
//
// LIST: resource_version "" or "0" reads the current state; "N" without
// limit reads the current state if N <= current ("not older than"); "N"
// with a limit (and every continue token) reads exactly at N, 410 when
// N is below the compaction point; N above the current revision is a 504
// Timeout. Paging: `limit` items per page in key order, continue tokens
// name the snapshot revision and the last key. Selectors are not
// evaluated (the fake serves the whole collection).
//
// Test hooks: FailNextLists/FailNextWatches inject errors; CloseWatches
// ends open watches (normally, or as a broken connection); SendWatchError
// sends an ERROR event; SendBookmark sends BOOKMARK; calls are recorded and
// can be awaited (WaitForWatchCalls) instead of sleeping.
//
// Thread-safety: all methods are safe from any thread. Streams outlive the
// fake safely (the fake ends them when destroyed).
#ifndef KPLANE_INFORMER_FAKE_LIST_WATCHER_H_
#define KPLANE_INFORMER_FAKE_LIST_WATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "informer/list_watch.h"

namespace kplane::informer {

class FakeListerWatcher : public ListerWatcher {
 public:
  explicit FakeListerWatcher(const objects::KindInfo* kind);
  ~FakeListerWatcher() override;

  // ---- ListerWatcher
  StatusOr<ListResult> List(const ListOptions& options) override;
  StatusOr<std::unique_ptr<WatchStream>> Watch(
      const ListOptions& options) override;
  const objects::KindInfo& Kind() const override { return *kind_; }

  // ---- The server side. Each returns the stored object (resourceVersion
  // set; uid assigned on create when empty).
  StatusOr<ObjectPtr> Create(const google::protobuf::Message& obj);
  // kNotFound if absent; kConflict if obj carries a resourceVersion that
  // is not the current one.
  StatusOr<ObjectPtr> Update(const google::protobuf::Message& obj);
  // Returns the object as deleted (resourceVersion = the deletion's).
  StatusOr<ObjectPtr> Delete(const std::string& ns, const std::string& name);
  // The current object, or kNotFound.
  StatusOr<ObjectPtr> Get(const std::string& ns, const std::string& name) const;
  // Forgets history at and below `revision` (0: the current revision).
  void Compact(int64_t revision = 0);
  int64_t Revision() const;
  int64_t CompactedRevision() const;
  // Moves the revision on by `n` as writes to other collections would (the
  // store's revision is global); only bookmarks reveal it.
  void AdvanceRevision(int64_t n);

  // ---- Test hooks.
  // A BOOKMARK at the current revision to every watch that allows them.
  void SendBookmark();
  // Ends every open watch. With OK the server ended it (timeout); with an
  // error the connection broke (the stream's Result()).
  void CloseWatches(Status result = Status::Ok());
  // An ERROR event carrying `error` to every open watch, which then ends.
  void SendWatchError(const Status& error);
  void FailNextLists(Status error, int count = 1);
  void FailNextWatches(Status error, int count = 1);

  std::vector<ListOptions> ListCalls() const;
  std::vector<ListOptions> WatchCalls() const;
  int OpenWatches() const;
  // Block (for real, on a condition variable) until that many calls have
  // been made in total.
  void WaitForListCalls(int n) const;
  void WaitForWatchCalls(int n) const;

 private:
  struct Version {
    int64_t revision;
    ObjectPtr object;  // null: deleted
  };
  struct HistoryEvent {
    int64_t revision;
    EventType type;
    ObjectPtr object;
  };
  class Stream;
  struct StreamState;

  static std::string KeyOf(const std::string& ns, const std::string& name);
  void Broadcast(const HistoryEvent& e) REQUIRES(mu_);
  ObjectPtr Bookmark(int64_t revision) const;
  // Objects as of `revision` in key order, from key `after` (exclusive).
  std::vector<ObjectPtr> SnapshotAt(int64_t revision,
                                    const std::string& after) const
      REQUIRES(mu_);

  const objects::KindInfo* const kind_;
  mutable Mutex mu_;
  mutable std::condition_variable calls_cv_;
  int64_t revision_ GUARDED_BY(mu_) = 0;
  int64_t compacted_ GUARDED_BY(mu_) = 0;
  int64_t next_uid_ GUARDED_BY(mu_) = 1;
  // Oldest first
  std::map<std::string, std::vector<Version>> versions_ GUARDED_BY(mu_);
  std::deque<HistoryEvent> history_ GUARDED_BY(mu_);  // after compacted_
  // Open watches
  std::vector<std::shared_ptr<StreamState>> streams_ GUARDED_BY(mu_);
  std::vector<ListOptions> list_calls_ GUARDED_BY(mu_);
  std::vector<ListOptions> watch_calls_;
  std::deque<Status> list_failures_;
  std::deque<Status> watch_failures_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_FAKE_LIST_WATCHER_H_
