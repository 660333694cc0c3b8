// Streamed LIST responses: the list envelope, then each item's encoding,
// produced piece by piece from the ListResult's shared objects (the watch
// cache's snapshot: pointers to its immutable objects, no copy) and written
// to the connection in bounded chunks (the model: kube-apiserver 1.33's
// streaming collection encoders, KEP-5116).
//
// ListEncoder turns a ListResult into the same bytes RenderList (encoding.h)
// returns, but incrementally: Next() appends the next piece of at least
// `min_bytes` (or the rest). Streamed forms:
//   - JSON lists (application/json, ResponseShape::kObject), also of custom
//     resources; an item whose JSON the watch cache kept
//     (ListResult::item_json) is copied, not encoded again;
//   - PartialObjectMetadataList (as=PartialObjectMetadataList);
//   - protobuf lists of built-in kinds: the length of the envelope's `raw`
//     (the whole list message) is computed first from each item's size, so
//     the bytes are those of serializing the whole PodList at once.
// Tables and YAML are not streamed (NewListEncoder returns nullptr; the
// caller renders them whole).
//
// StreamList sends a list: a list whose whole encoding fits in one chunk is
// answered with Respond() (Content-Length, as before); a larger one with
// StartStream() (Transfer-Encoding: chunked), the first chunk, and more
// chunks while fewer than `high_water` bytes wait unsent on the connection;
// otherwise it waits for the client to read (Responder::OnDrained). So a
// streamed list holds at most high_water + one chunk + one item of encoded
// bytes per connection, plus the snapshot's pointers (16 bytes an item).
// When the client goes away (or the server stops) the encoder and its
// snapshot are freed at once. Everything that can fail (authorization,
// selectors, limit, continue token) is decided before StreamList: once a
// byte is sent nothing can fail but the connection.
//
// Thread-safety: an encoder is used by one thread at a time; StreamList
// may be called from any thread and pumps on the server's worker threads.
#ifndef KPLANE_APISERVER_LIST_STREAM_H_
#define KPLANE_APISERVER_LIST_STREAM_H_

#include <functional>
#include <memory>
#include <string>

#include "apiserver/encoding.h"
#include "apiserver/storage/object_store.h"
#include "base/metrics.h"
#include "net/http_server.h"

namespace kplane::apiserver {

class ListEncoder {
 public:
  virtual ~ListEncoder() = default;
  // Appends the next piece (at least `min_bytes`, or everything left) to
  // `out`. Returns true once the whole list has been appended.
  virtual bool Next(size_t min_bytes, std::string* out) = 0;
};

// An encoder for `*list` in the form `opts` negotiated, or nullptr when that
// form is rendered whole (Table, YAML, a protobuf list of custom resources
// or whose items field is not its last). Moves `*list` into the encoder
// only when it returns one (the items are shared pointers, not copies).
std::unique_ptr<ListEncoder> NewListEncoder(const RenderOptions& opts,
                                            ListResult* list);

struct ListStreamOptions {
  size_t chunk_bytes = 64 * 1024;  // the size of one Write
  size_t high_water = 256 * 1024;  // encode more only below this backlog
  // A streamed list not all sent within this time of its first byte has
  // its connection closed (Responder::SetResponseDeadline): the client
  // sees the body end without its last chunk. Duration::zero(): none.
  Duration deadline = Duration::zero();
  // Counts the streamed lists alive (started and not yet freed); may be
  // null.
  metrics::Gauge* open_streams = nullptr;
};

// Sends `encoder`'s list as a 200 with `headers` (Content-Type, Warning),
// as described above. `on_started` runs once, just before the first byte
// can reach the client (the caller records metrics and frees its in-flight
// slot there, as for a whole response).
void StreamList(std::shared_ptr<net::Responder> responder,
                net::HttpHeaders headers, std::unique_ptr<ListEncoder> encoder,
                const ListStreamOptions& options,
                const std::function<void()>& on_started);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_LIST_STREAM_H_
