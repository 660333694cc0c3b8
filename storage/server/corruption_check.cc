#include "storage/server/corruption_check.h"

#include <map>

#include "storage/server/cluster.h"

namespace kplane::storage {

HashVerdict JudgeHashes(uint64_t self, uint32_t own,
                        const std::vector<MemberHash>& others, size_t members) {
  std::map<uint32_t, std::vector<uint64_t>> groups;
  groups[own].push_back(self);
  HashVerdict v;
  v.compared = 1;
  for (const MemberHash& m : others) {
    if (!m.hash.ok()) continue;  // behind, compacted past, or silent
    groups[m.hash->hash()].push_back(m.id);
    ++v.compared;
  }
  for (const auto& [hash, ids] : groups) {
    v.detail += (v.detail.empty() ? "" : "; ") + std::string("hash ") +
                std::to_string(hash) + ":";
    for (uint64_t id : ids) v.detail += " " + IdToHex(id);
  }
  if (groups.size() == 1) return v;
  v.consistent = false;
  const size_t quorum = members / 2 + 1;
  const std::vector<uint64_t>* majority = nullptr;
  for (const auto& [hash, ids] : groups) {
    if (ids.size() >= quorum) majority = &ids;
  }
  if (majority == nullptr) {
    v.corrupt = {0};
    return v;
  }
  for (const auto& [hash, ids] : groups) {
    if (&ids == majority) continue;
    v.corrupt.insert(v.corrupt.end(), ids.begin(), ids.end());
  }
  return v;
}

}  // namespace kplane::storage
