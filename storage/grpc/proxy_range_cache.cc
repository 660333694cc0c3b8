#include "storage/grpc/proxy_range_cache.h"

#include <utility>
#include <vector>

namespace kplane::storage {
namespace {

// A key interval [begin, end) as etcd's requests give it: end "" is the
// single key begin, end "\0" is everything from begin on. An end at or
// before begin (an empty range for the member) is taken as the single key:
// wider than needed, never narrower.
struct Interval {
  std::string begin;
  std::string end;  // exclusive; unused when unbounded
  bool unbounded = false;
};

Interval MakeInterval(const std::string& key, const std::string& end) {
  Interval i;
  i.begin = key;
  if (end.size() == 1 && end[0] == '\0') {
    i.unbounded = true;
  } else if (end.empty() || end <= key) {
    i.end = key;
    i.end.push_back('\0');  // the key's immediate successor
  } else {
    i.end = end;
  }
  return i;
}

// Per-entry bookkeeping counted against max_bytes besides the strings.
constexpr size_t kEntryOverhead = 160;

}  // namespace

ProxyRangeCache::ProxyRangeCache(size_t max_entries, size_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

ProxyRangeCache::Result ProxyRangeCache::Get(
    const std::string& key, int64_t revision,
    std::shared_ptr<const std::string>* answer) {
  MutexLock l(&mu_);
  auto it = by_key_.find(key);
  if (revision > 0 && revision < compacted_) {
    if (it != by_key_.end()) RemoveLocked(it->second);
    return Result::kCompacted;
  }
  if (it == by_key_.end()) return Result::kMiss;
  lru_.splice(lru_.begin(), lru_, it->second);
  *answer = it->second->answer;
  return Result::kHit;
}

uint64_t ProxyRangeCache::generation() const {
  MutexLock l(&mu_);
  return generation_;
}

void ProxyRangeCache::Add(const std::string& key, const std::string& range_key,
                          const std::string& range_end, int64_t revision,
                          std::shared_ptr<const std::string> answer,
                          uint64_t generation) {
  const size_t bytes = answer->size() + key.size() + range_key.size() +
                       range_end.size() + kEntryOverhead;
  if (max_entries_ == 0 || bytes > max_bytes_) return;
  MutexLock l(&mu_);
  if (generation != generation_) return;  // a write may have raced
  if (revision > 0 && revision < compacted_) return;
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    RemoveLocked(it->second);
  }
  while (!lru_.empty() &&
         (lru_.size() >= max_entries_ || bytes_ + bytes > max_bytes_)) {
    RemoveLocked(std::prev(lru_.end()));
  }
  lru_.push_front(
      Entry{key, range_key, range_end, revision, bytes, std::move(answer)});
  const Lru::iterator e = lru_.begin();
  by_key_.emplace(key, e);
  bytes_ += bytes;
  if (revision != 0) return;  // never invalidated by writes
  if (range_end.empty()) {
    points_.emplace(range_key, e);
  } else {
    ranges_.emplace(range_key, e);
  }
}

void ProxyRangeCache::Invalidate(const std::string& key,
                                 const std::string& end) {
  const Interval w = MakeInterval(key, end);
  MutexLock l(&mu_);
  ++generation_;
  std::vector<Lru::iterator> drop;
  // Single keys inside the written interval.
  auto p = points_.lower_bound(w.begin);
  const auto p_end = w.unbounded ? points_.end() : points_.lower_bound(w.end);
  for (; p != p_end; ++p) drop.push_back(p->second);
  // Ranges that start before the written interval ends and end after it
  // starts.
  const auto r_end = w.unbounded ? ranges_.end() : ranges_.lower_bound(w.end);
  for (auto r = ranges_.begin(); r != r_end; ++r) {
    const Interval c = MakeInterval(r->second->begin, r->second->end);
    if (c.unbounded || c.end > w.begin) drop.push_back(r->second);
  }
  for (Lru::iterator it : drop) RemoveLocked(it);
}

void ProxyRangeCache::Clear() {
  MutexLock l(&mu_);
  ++generation_;
  lru_.clear();
  by_key_.clear();
  points_.clear();
  ranges_.clear();
  bytes_ = 0;
}

void ProxyRangeCache::Compact(int64_t revision) {
  MutexLock l(&mu_);
  if (revision <= compacted_) return;
  compacted_ = revision;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->revision > 0 && it->revision < compacted_) RemoveLocked(it);
    it = next;
  }
}

size_t ProxyRangeCache::size() const {
  MutexLock l(&mu_);
  return lru_.size();
}

void ProxyRangeCache::UnindexLocked(Lru::iterator it) {
  if (it->revision != 0) return;
  auto& index = it->end.empty() ? points_ : ranges_;
  auto [b, e] = index.equal_range(it->begin);
  for (; b != e; ++b) {
    if (b->second == it) {
      index.erase(b);
      return;
    }
  }
}

void ProxyRangeCache::RemoveLocked(Lru::iterator it) {
  UnindexLocked(it);
  by_key_.erase(it->key);
  bytes_ -= it->bytes;
  lru_.erase(it);
}

}  // namespace kplane::storage
