#include "storage/mvcc/key_index.h"

#include <algorithm>

#include "base/logging.h"

namespace kplane::mvcc {
namespace {

bool Newer(const KeyIndex::Version& a, int64_t main, uint32_t sub) {
  return a.main > main || (a.main == main && a.sub >= sub);
}

// The newest version at or below `rev`, or null.
const KeyIndex::Version* AtRevision(const std::vector<KeyIndex::Version>& vs,
                                    int64_t rev) {
  for (auto it = vs.rbegin(); it != vs.rend(); ++it) {
    if (it->main <= rev) return &*it;
  }
  return nullptr;
}

}  // namespace

template <typename Visit>
void KeyIndex::ForRangeLocked(std::string_view key, std::string_view range_end,
                              Visit visit) const {
  if (range_end.empty()) {
    auto it = keys_.find(key);
    if (it != keys_.end()) visit(it->first, it->second);
    return;
  }
  const bool to_end = range_end == std::string_view("\0", 1);
  if (!to_end && range_end <= key) return;
  for (auto it = keys_.lower_bound(key);
       it != keys_.end() && (to_end || std::string_view(it->first) < range_end);
       ++it) {
    visit(it->first, it->second);
  }
}

void KeyIndex::AppendLocked(std::string_view key, const Version& v) {
  auto it = keys_.find(key);
  if (it == keys_.end()) it = keys_.emplace(std::string(key), 0).first;
  std::vector<Version>& vs = it->second;
  CHECK(vs.empty() || !Newer(vs.back(), v.main, v.sub))
      << "mvcc: key index: version " << v.main << "." << v.sub
      << " is not the newest of its key";
  vs.push_back(v);
}

void KeyIndex::Put(std::string_view key, int64_t main, uint32_t sub,
                   int64_t create_revision, int64_t version, int64_t lease) {
  WriterLock l(&mu_);
  AppendLocked(key, Version{main, sub, false, create_revision, version, lease});
}

void KeyIndex::Tombstone(std::string_view key, int64_t main, uint32_t sub) {
  WriterLock l(&mu_);
  AppendLocked(key, Version{main, sub, true, 0, 0, 0});
}

std::optional<KeyIndex::Version> KeyIndex::Latest(std::string_view key) const {
  ReaderLock l(&mu_);
  auto it = keys_.find(key);
  if (it == keys_.end() || it->second.empty() || it->second.back().tombstone) {
    return std::nullopt;
  }
  return it->second.back();
}

std::optional<mvccpb::KeyValue> KeyIndex::LatestKeyValue(
    std::string_view key) const {
  std::optional<Version> v = Latest(key);
  if (!v) return std::nullopt;
  mvccpb::KeyValue kv;
  kv.set_key(std::string(key));
  kv.set_create_revision(v->create_revision);
  kv.set_mod_revision(v->main);
  kv.set_version(v->version);
  kv.set_lease(v->lease);
  return kv;
}

std::vector<std::pair<std::string, KeyIndex::Version>> KeyIndex::LatestLive(
    std::string_view key, std::string_view range_end) const {
  std::vector<std::pair<std::string, Version>> out;
  ReaderLock l(&mu_);
  ForRangeLocked(key, range_end,
                 [&](const std::string& k, const std::vector<Version>& vs) {
                   if (!vs.empty() && !vs.back().tombstone) {
                     out.emplace_back(k, vs.back());
                   }
                 });
  return out;
}

int64_t KeyIndex::Count(std::string_view key, std::string_view range_end,
                        int64_t rev) const {
  return *CountIf(key, range_end, rev, [] { return true; });
}

std::optional<int64_t> KeyIndex::CountIf(
    std::string_view key, std::string_view range_end, int64_t rev,
    const std::function<bool()>& still_valid) const {
  ReaderLock l(&mu_);
  if (!still_valid()) return std::nullopt;
  int64_t n = 0;
  ForRangeLocked(key, range_end,
                 [&](const std::string&, const std::vector<Version>& vs) {
                   const Version* v = AtRevision(vs, rev);
                   if (v != nullptr && !v->tombstone) ++n;
                 });
  return n;
}

void KeyIndex::RemoveAbove(const std::vector<std::string>& keys, int64_t rev) {
  WriterLock l(&mu_);
  for (const std::string& key : keys) {
    auto it = keys_.find(key);
    if (it == keys_.end()) continue;
    std::vector<Version>& vs = it->second;
    while (!vs.empty() && vs.back().main > rev) vs.pop_back();
    if (vs.empty()) keys_.erase(it);
  }
}

void KeyIndex::Compact(int64_t target) {
  WriterLock l(&mu_);
  for (auto it = keys_.begin(); it != keys_.end();) {
    std::vector<Version>& vs = it->second;
    // The newest version <= target survives (unless a tombstone below the
    // target); everything older goes.
    auto keep = std::find_if(vs.rbegin(), vs.rend(), [&](const Version& v) {
      return v.main <= target;
    });
    if (keep != vs.rend()) {
      auto first_kept = std::prev(keep.base());  // forward iterator to *keep
      if (first_kept->tombstone && first_kept->main < target) ++first_kept;
      vs.erase(vs.begin(), first_kept);
    }
    if (vs.empty()) {
      it = keys_.erase(it);
    } else {
      if (vs.capacity() > 2 * vs.size() + 4) vs.shrink_to_fit();
      ++it;
    }
  }
}

void KeyIndex::Reset(
    std::map<std::string, std::vector<Version>, std::less<>> keys) {
  WriterLock l(&mu_);
  keys_ = std::move(keys);
}

size_t KeyIndex::KeyCount() const {
  ReaderLock l(&mu_);
  return keys_.size();
}

size_t KeyIndex::VersionCount() const {
  ReaderLock l(&mu_);
  size_t n = 0;
  for (const auto& [k, vs] : keys_) n += vs.size();
  return n;
}

}  // namespace kplane::mvcc
