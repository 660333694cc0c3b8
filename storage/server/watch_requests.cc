#include "storage/server/watch_requests.h"

#include <algorithm>
#include <utility>

#include "base/saturating.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/server/auth_store.h"

namespace kplane::storage {

void WatchRequests::Handle(mvcc::WatchStream* stream,
                           const etcdserverpb::WatchRequest& req,
                           const std::function<StatusOr<std::string>()>& user,
                           std::vector<etcdserverpb::WatchResponse>* out) {
  if (req.has_create_request()) {
    const etcdserverpb::WatchCreateRequest& create = req.create_request();
    Status refused;
    if (server_->auth()->enabled()) {
      StatusOr<std::string> u = user();
      refused = !u.ok() ? u.status()
                        : server_->auth()->CheckRange(*u, create.key(),
                                                      create.range_end());
      // etcd: the reason is the gRPC error's text ("rpc error: code =
      // Unauthenticated desc = etcdserver: invalid auth token", ...).
      if (!refused.ok()) {
        refused = Status(refused.code(), etcdjson::GoRpcErrorText(refused));
      }
    }
    // The stream's bound on its watchers, the limit's text as the reason
    // (the gRPC proxy says the same).
    if (refused.ok()) {
      refused = server_->AdmitWatchCreate(stream->WatcherCount(), protocol_);
    }
    // One reading of the revision for the header and for "from now"
    // (start_revision 0): read apart, a revision applied in between was
    // after the header's and before the watch's start, and a client that
    // resumes from the header's (clientv3 does) never saw it.
    etcdserverpb::WatchResponse w = NewResponse(true);
    const int64_t now = w.header().revision();
    w.set_created(true);
    if (!refused.ok()) {
      // etcd: created and canceled at once.
      w.set_watch_id(-1);
      w.set_canceled(true);
      w.set_cancel_reason(std::string(refused.message()));
      out->push_back(std::move(w));
      return;
    }
    etcdserverpb::WatchCreateRequest from = create;
    if (from.start_revision() == 0 && now > 0) {
      from.set_start_revision(now + 1);
    }
    StatusOr<int64_t> id = stream->Watch(from);
    if (id.ok()) {
      w.set_watch_id(*id);
      next_id_ = std::max(next_id_, SaturatingAdd(*id, 1));
      if (create.fragment()) fragment_.insert(*id);
      out->push_back(std::move(w));
    } else if (id.status().Is(StatusCode::kCompacted)) {
      // etcd creates the watch, then cancels it with the compaction
      // revision (and no header revision).
      const int64_t wid =
          create.watch_id() != 0
              ? create.watch_id()
              : std::exchange(next_id_, SaturatingAdd(next_id_, 1));
      w.set_watch_id(wid);
      out->push_back(std::move(w));
      etcdserverpb::WatchResponse c = NewResponse(false);
      c.set_watch_id(wid);
      c.set_canceled(true);
      c.set_compact_revision(id.status().detail());
      out->push_back(std::move(c));
    } else {
      w.set_watch_id(-1);
      w.set_canceled(true);
      w.set_cancel_reason(std::string(id.status().message()));
      out->push_back(std::move(w));
    }
  } else if (req.has_cancel_request()) {
    const int64_t id = req.cancel_request().watch_id();
    if (stream->Cancel(id).ok()) {
      fragment_.erase(id);
      etcdserverpb::WatchResponse w = NewResponse(true);
      w.set_watch_id(id);
      w.set_canceled(true);
      out->push_back(std::move(w));
    }
  } else if (req.has_progress_request()) {
    stream->RequestProgress();
  }
}

bool WatchRequests::Fragments(const mvcc::WatchItem& item) {
  auto it = fragment_.find(item.watch_id);
  if (it == fragment_.end()) return false;
  if (item.canceled) fragment_.erase(it);
  return true;
}

etcdserverpb::WatchResponse WatchRequests::NewResponse(
    bool with_revision) const {
  etcdserverpb::WatchResponse w;
  server_->FillHeader(w.mutable_header());
  if (with_revision)
    w.mutable_header()->set_revision(server_->CurrentRevision());
  return w;
}

}  // namespace kplane::storage
