#include "storage/server/watch_json.h"

#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {
namespace {

// `"name":"<decimal>"`, as protobuf's JSON mapping prints 64-bit integers.
template <typename Int>
void AppendQuoted(std::string* out, std::string_view name, Int v, bool* first) {
  if (!*first) out->push_back(',');
  *first = false;
  out->push_back('"');
  out->append(name);
  out->append("\":\"");
  out->append(std::to_string(v));
  out->push_back('"');
}

}  // namespace

std::shared_ptr<const std::string> WatchJsonEncoder::EventsJson(
    const mvcc::WatchItem& item) {
  const EventList* list = item.events.get();
  {
    MutexLock l(&mu_);
    for (const Entry& e : cache_) {
      // A live list's address is not reused, so pointer equality is
      // identity while the entry's list is alive.
      if (e.list == list && e.keep_prev_kv == item.keep_prev_kv &&
          !e.alive.expired()) {
        ++hits_;
        return e.json;
      }
    }
    ++misses_;
  }
  auto json = std::make_shared<std::string>();
  json->push_back('[');
  bool first = true;
  for (const mvccpb::Event& ev : *list) {
    if (!first) json->push_back(',');
    first = false;
    if (!item.keep_prev_kv && ev.has_prev_kv()) {
      mvccpb::Event copy = ev;
      copy.clear_prev_kv();
      json->append(etcdjson::ToJson(copy));
    } else {
      json->append(etcdjson::ToJson(ev));
    }
  }
  json->push_back(']');
  MutexLock l(&mu_);
  Entry e{list, item.keep_prev_kv, item.events, json};
  if (cache_.size() < kCacheEntries) {
    cache_.push_back(std::move(e));
  } else {
    cache_[next_slot_] = std::move(e);
    next_slot_ = (next_slot_ + 1) % kCacheEntries;
  }
  return json;
}

void WatchJsonEncoder::Append(const etcdserverpb::ResponseHeader& header,
                              const mvcc::WatchItem& item, std::string* out,
                              bool fragment) {
  // Fields in field-number order, zero values omitted (rpc.proto:
  // WatchResponse header=1 watch_id=2 canceled=4 compact_revision=5
  // fragment=7 events=11; ResponseHeader cluster_id=1 member_id=2 revision=3
  // raft_term=4).
  out->append("{\"result\":{");
  // The header is always present (the server fills it), so it prints even
  // when every field in it is zero.
  out->append("\"header\":{");
  bool hfirst = true;
  if (header.cluster_id() != 0) {
    AppendQuoted(out, "cluster_id", header.cluster_id(), &hfirst);
  }
  if (header.member_id() != 0) {
    AppendQuoted(out, "member_id", header.member_id(), &hfirst);
  }
  // A compacted (canceled) response carries no header revision, as etcd's.
  if (item.revision != 0 && item.compact_revision == 0) {
    AppendQuoted(out, "revision", item.revision, &hfirst);
  }
  if (header.raft_term() != 0) {
    AppendQuoted(out, "raft_term", header.raft_term(), &hfirst);
  }
  out->push_back('}');
  // The header came first, so every later field starts with a comma.
  bool first = false;
  if (item.watch_id != 0) AppendQuoted(out, "watch_id", item.watch_id, &first);
  if (item.canceled) out->append(",\"canceled\":true");
  if (item.compact_revision != 0) {
    AppendQuoted(out, "compact_revision", item.compact_revision, &first);
  }
  if (fragment) out->append(",\"fragment\":true");
  if (item.events && !item.events->empty()) {
    out->append(",\"events\":");
    out->append(*EventsJson(item));
  }
  out->append("}}\n");
}

uint64_t WatchJsonEncoder::hits() const {
  MutexLock l(&mu_);
  return hits_;
}

uint64_t WatchJsonEncoder::misses() const {
  MutexLock l(&mu_);
  return misses_;
}

}  // namespace kplane::storage
