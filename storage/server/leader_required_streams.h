// LeaderRequiredStreams: the client watch and lease keep-alive streams
// opened with etcd's "hasleader" metadata (clientv3's WithRequireLeader, which
// kube-apiserver's watches use; over the JSON gateway the header
// `Grpc-Metadata-Hasleader: true`). As etcd's v3rpc interceptors, a member
// refuses such a stream while it has no leader, and ends the open ones once
// it has had none for three election timeouts (monitorLeader), both with
// "etcdserver: no leader" (gRPC UNAVAILABLE): a client of a member cut off
// in a minority then watches through another member instead of waiting on
// one that learns nothing new.
//
// The fronts register each such stream with the callback that ends it; the
// housekeeper calls EndAll (housekeeper.h). gRPC Watch and LeaseKeepAlive
// calls (clientv3's lessor asks for a leader too) and the JSON gateway's
// watches register; the gateway's /v3/lease/keepalive stream does not yet
// (etcd's gateway forwards the header, so etcd ends it too).
//
//   id = streams->Add([weak] { if (auto s = weak.lock()) s->EndNoLeader(); });
//   ... when the stream closes: streams->Remove(id);
//
// Thread-safety: every method from any thread. EndAll runs the callbacks on
// its caller's thread without the lock, so a callback may call Remove (and
// a stream may close meanwhile: callbacks should hold weak references).
#ifndef KPLANE_STORAGE_SERVER_LEADER_REQUIRED_STREAMS_H_
#define KPLANE_STORAGE_SERVER_LEADER_REQUIRED_STREAMS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string_view>

#include "base/mutex.h"

namespace kplane::storage {

// etcd's ErrGRPCNoLeader text.
inline constexpr std::string_view kNoLeader = "etcdserver: no leader";

// Whether a stream asks for a leader: etcd's metadata "hasleader" with the
// value "true" (rpctypes.MetadataRequireLeaderKey / MetadataHasLeader).
inline bool RequiresLeader(std::string_view hasleader_value) {
  return hasleader_value == "true";
}

class LeaderRequiredStreams {
 public:
  using Id = uint64_t;

  // Registers a stream; `end` ends it with kNoLeader. Never 0.
  Id Add(std::function<void()> end) EXCLUDES(mu_);
  // Forgets a stream (it closed). Unknown ids are ignored.
  void Remove(Id id) EXCLUDES(mu_);
  // Calls and forgets every registered stream's `end`; returns how many.
  size_t EndAll() EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  Id next_id_ GUARDED_BY(mu_) = 1;
  std::map<Id, std::function<void()>> ends_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_LEADER_REQUIRED_STREAMS_H_
