// WatchRequests: the requests of one client watch stream (create, cancel,
// progress) answered as etcd's serverWatchStream.recvLoop, for both fronts
// (the gRPC Watch call, the JSON gateway's /v3/watch): the caller's read
// permission and the stream's watcher bound checked on a create, ids a
// client chooses (any, up to INT64_MAX), a compacted start revision, and
// the watchers created with `fragment`.
//
//   WatchRequests requests(server, StoreServer::WatchProtocol::kGrpc);
//   std::vector<etcdserverpb::WatchResponse> out;
//   requests.Handle(stream, req, [&] { return caller.User(auth); }, &out);
//   ... send `out` in order ...
//   for (const mvcc::WatchItem& item : drained) {
//     if (requests.Fragments(item)) ... cut it (watch_fragment.h) ...
//   }
//
// Ownership: borrows the StoreServer. Thread-safety: none; a front keeps
// one per stream under the lock it sends that stream's answers under (a
// watcher's "created" then goes out before any of its events).
#ifndef KPLANE_STORAGE_SERVER_WATCH_REQUESTS_H_
#define KPLANE_STORAGE_SERVER_WATCH_REQUESTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/statusor.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/watch.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

// Why a watch stream ends when the store under it closed (mvcc::WatchStream
// ::Stopped): gRPC UNAVAILABLE, the gateway's 503 code 14, an embedded
// watch's cancel reason. etcd clients watch again from their last revision.
inline constexpr std::string_view kWatchStoreClosed =
    "etcdserver: the store under this watch closed (a snapshot replaced it, "
    "or the member stops); watch again from the last revision";

class WatchRequests {
 public:
  WatchRequests(StoreServer* server, StoreServer::WatchProtocol protocol)
      : server_(server), protocol_(protocol) {}

  // Appends the answers to `req` on `stream` to `out`: for a create, a
  // "created" response (with -1 and "canceled" and etcd's reason when
  // refused; followed by a cancel with the compaction revision when its
  // start revision is compacted); for a cancel of a known watcher, a
  // "canceled" response; nothing for an unknown cancel, a progress
  // request (the stream answers it) or `{}`, as etcd. `user` resolves the
  // caller; it is called for a create while auth is enabled.
  void Handle(mvcc::WatchStream* stream, const etcdserverpb::WatchRequest& req,
              const std::function<StatusOr<std::string>()>& user,
              std::vector<etcdserverpb::WatchResponse>* out);

  // Whether `item`'s watcher was created with `fragment` (etcd's
  // serverWatchStream.fragment); forgotten when `item` cancels it.
  bool Fragments(const mvcc::WatchItem& item);

 private:
  etcdserverpb::WatchResponse NewResponse(bool with_revision) const;

  StoreServer* const server_;
  const StoreServer::WatchProtocol protocol_;
  // The id of the next watcher created without one.
  int64_t next_id_ = 0;
  std::unordered_set<int64_t> fragment_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_WATCH_REQUESTS_H_
