// Watch response fragmenting, as etcd 3.4's watch server does it for a
// watcher created with `fragment: true` (etcdserver/api/v3rpc/watch.go,
// sendFragments). Both fronts use it: the gRPC Watch stream and the JSON
// gateway's /v3/watch (etcd's gateway relays its gRPC stream, so it shows
// the same pieces, one JSON message each).
//
// The rule, in protobuf bytes of the whole WatchResponse (header included):
//  - a response smaller than the limit, or with fewer than two events, is
//    sent whole (fragment false): one event larger than the limit still
//    goes out, alone;
//  - otherwise it is cut into pieces, in event order. A piece takes events
//    while it holds only one or stays below the limit, so every piece is
//    smaller than the limit unless it is a single event. Every piece has
//    the original's header, watch_id, canceled and compact_revision; every
//    piece but the last has fragment = true. A client (clientv3's watch
//    loop) concatenates the events of a run of fragment = true pieces and
//    the following fragment = false piece into one response.
//
// Worked example (limit 100 bytes, an envelope of 20 bytes, events of 30,
// 30, 30 and 120 bytes with their framing): the whole is 230 bytes, so it
// is cut: [30 30] (80 bytes; a third event would make 110 >= 100),
// [30] (a 120-byte event would make 170), [120] (alone, over the limit, the
// last piece): three pieces, fragment true, true, false.
//
// The limit is etcd's: the server's --max-request-bytes plus gRPC's
// 512 KiB of framing room (the size of the largest request the server
// accepts), see WatchFragmentLimit.
//
// Thread-safety: pure functions; the events of a shared item are only read
// (protobuf's cached sizes are atomics). Errors: none.
#ifndef KPLANE_STORAGE_SERVER_WATCH_FRAGMENT_H_
#define KPLANE_STORAGE_SERVER_WATCH_FRAGMENT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schemas/rpc.pb.h"
#include "storage/mvcc/watch.h"

namespace kplane::storage {

// The size limit of a fragmented watch response for a server whose
// --max-request-bytes is `max_request_bytes` (etcd's watchServer
// maxRequestBytes).
size_t WatchFragmentLimit(int64_t max_request_bytes);

// Where a response is cut. `envelope_bytes`: the response's size with no
// events and fragment = true; `event_bytes[i]`: event i's size inside the
// response (its tag and length prefix included). Returns the end index of
// each piece (the last is event_bytes.size()); a single element means "send
// whole". An empty event list gives {0}.
std::vector<size_t> FragmentEnds(size_t envelope_bytes,
                                 const std::vector<size_t>& event_bytes,
                                 size_t limit);

// `resp` split by the rule above (a single element, `resp` itself with
// fragment false, when it is not cut).
std::vector<etcdserverpb::WatchResponse> FragmentWatchResponse(
    etcdserverpb::WatchResponse resp, size_t limit);

// One piece of a queued item: the item (its events a new list when it was
// cut, else shared with the original) and its fragment flag.
struct WatchItemPiece {
  mvcc::WatchItem item;
  bool fragment = false;
};

// `item` split by the rule above, measuring the response it stands for
// with `header` (cluster, member, term; the item's revision replaces the
// header's, as the fronts send it) and without the prev_kv the item does
// not keep. The pieces keep keep_prev_kv. Uncut items are not copied.
std::vector<WatchItemPiece> FragmentWatchItem(
    const mvcc::WatchItem& item, const etcdserverpb::ResponseHeader& header,
    size_t limit);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_WATCH_FRAGMENT_H_
