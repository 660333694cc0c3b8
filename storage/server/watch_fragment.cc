#include "storage/server/watch_fragment.h"

#include <google/protobuf/io/coded_stream.h>

#include <memory>
#include <utility>

namespace kplane::storage {
namespace {

// etcd's grpcOverheadBytes: the framing room added to --max-request-bytes.
constexpr size_t kGrpcOverheadBytes = 512 * 1024;

// A length-delimited field of `len` bytes with a one-byte tag (field
// numbers below 16: WatchResponse.events is 11, Event.prev_kv 3).
size_t FieldBytes(size_t len) {
  return 1 +
         google::protobuf::io::CodedOutputStream::VarintSize64(
             static_cast<uint64_t>(len)) +
         len;
}

}  // namespace

size_t WatchFragmentLimit(int64_t max_request_bytes) {
  return static_cast<size_t>(max_request_bytes > 0 ? max_request_bytes : 0) +
         kGrpcOverheadBytes;
}

std::vector<size_t> FragmentEnds(size_t envelope_bytes,
                                 const std::vector<size_t>& event_bytes,
                                 size_t limit) {
  const size_t n = event_bytes.size();
  size_t whole = envelope_bytes;
  for (size_t b : event_bytes) whole += b;
  // etcd compares the response as it stands (fragment false, two bytes
  // fewer than the envelope says); cut only what has two events or more.
  if (n < 2 || whole - 2 < limit) return {n};
  std::vector<size_t> ends;
  size_t i = 0;
  while (i < n) {
    size_t size = envelope_bytes + event_bytes[i];
    size_t count = 1;
    ++i;
    while (i < n && size + event_bytes[i] < limit) {
      size += event_bytes[i];
      ++count;
      ++i;
    }
    ends.push_back(i);
  }
  return ends;
}

std::vector<etcdserverpb::WatchResponse> FragmentWatchResponse(
    etcdserverpb::WatchResponse resp, size_t limit) {
  resp.set_fragment(false);
  std::vector<size_t> event_bytes;
  event_bytes.reserve(static_cast<size_t>(resp.events_size()));
  for (const mvccpb::Event& ev : resp.events()) {
    event_bytes.push_back(FieldBytes(ev.ByteSizeLong()));
  }
  std::vector<etcdserverpb::WatchResponse> out;
  if (event_bytes.size() < 2) {
    out.push_back(std::move(resp));
    return out;
  }
  etcdserverpb::WatchResponse envelope = resp;  // no events, fragment true
  envelope.clear_events();
  envelope.set_fragment(true);
  std::vector<size_t> ends =
      FragmentEnds(envelope.ByteSizeLong(), event_bytes, limit);
  if (ends.size() == 1) {
    out.push_back(std::move(resp));
    return out;
  }
  out.reserve(ends.size());
  int begin = 0;
  for (size_t end : ends) {
    etcdserverpb::WatchResponse piece = envelope;
    piece.set_fragment(end != event_bytes.size());
    for (int i = begin; i < static_cast<int>(end); ++i) {
      piece.mutable_events()->Add(std::move(*resp.mutable_events(i)));
    }
    begin = static_cast<int>(end);
    out.push_back(std::move(piece));
  }
  return out;
}

std::vector<WatchItemPiece> FragmentWatchItem(
    const mvcc::WatchItem& item, const etcdserverpb::ResponseHeader& header,
    size_t limit) {
  std::vector<WatchItemPiece> out;
  if (!item.events || item.events->size() < 2) {
    out.push_back({item, false});
    return out;
  }
  const std::vector<mvccpb::Event>& events = *item.events;
  std::vector<size_t> event_bytes;
  event_bytes.reserve(events.size());
  for (const mvccpb::Event& ev : events) {
    size_t b = ev.ByteSizeLong();
    // The prev_kv a watcher did not ask for is not sent.
    if (!item.keep_prev_kv && ev.has_prev_kv()) {
      b -= FieldBytes(ev.prev_kv().ByteSizeLong());
    }
    event_bytes.push_back(FieldBytes(b));
  }
  // The envelope as the fronts send it (mvcc::ToWatchResponse plus the
  // server's header).
  mvcc::WatchItem bare = item;
  bare.events.reset();
  etcdserverpb::WatchResponse envelope = mvcc::ToWatchResponse(bare);
  etcdserverpb::ResponseHeader* h = envelope.mutable_header();
  int64_t revision = h->revision();
  *h = header;
  h->set_revision(revision);
  envelope.set_fragment(true);
  std::vector<size_t> ends =
      FragmentEnds(envelope.ByteSizeLong(), event_bytes, limit);
  if (ends.size() == 1) {
    out.push_back({item, false});
    return out;
  }
  out.reserve(ends.size());
  size_t begin = 0;
  for (size_t end : ends) {
    WatchItemPiece piece{bare, end != events.size()};
    piece.item.events = std::make_shared<const std::vector<mvccpb::Event>>(
        events.begin() + static_cast<std::ptrdiff_t>(begin),
        events.begin() + static_cast<std::ptrdiff_t>(end));
    begin = end;
    out.push_back(std::move(piece));
  }
  return out;
}

}  // namespace kplane::storage
