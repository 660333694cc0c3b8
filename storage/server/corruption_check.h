// Corruption checks across members (etcd's corrupt.go): every member's
// HashKV at one revision must be the same. HashKV covers the key-values live
// at the revision, so members that compacted at different points agree; a
// member that has not reached the revision (FutureRevision) or compacted
// past it (Compacted), or does not answer, is left out of that round.
//
// Who is corrupt when hashes differ (etcd 3.6's rule): the members are
// grouped by hash; if one group holds a quorum of the membership
// (members/2 + 1), every member outside it is corrupt; if none does, nobody
// can tell which data is right, and the verdict names member 0, the whole
// cluster (etcd raises its CORRUPT alarm for member 0 then).
//
//   3 members, hashes {a: 7, b: 7, c: 9}       -> c is corrupt
//   3 members, hashes {a: 7, c: 9} (b silent)  -> no quorum: member 0
//   3 members, hashes {a: 7, b: 7} (c silent)  -> consistent
//
// Used twice: the leader's periodic check (Housekeeper, every
// --experimental-corrupt-check-time) raises a CORRUPT alarm through the log for
// each corrupt member; the initial check (--experimental-initial-corrupt-check,
// StoreServer::CheckInitialHashKV) refuses to start a member whose data is
// not on the quorum's side.
//
// Thread-safety: functions of their arguments only.
#ifndef KPLANE_STORAGE_SERVER_CORRUPTION_CHECK_H_
#define KPLANE_STORAGE_SERVER_CORRUPTION_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/statusor.h"
#include "schemas/rpc.pb.h"

namespace kplane::storage {

// One member's answer for the round's revision.
struct MemberHash {
  uint64_t id = 0;
  StatusOr<etcdserverpb::HashKVResponse> hash;
};

struct HashVerdict {
  // Every member that answered has the same hash.
  bool consistent = true;
  // The members found corrupt ({0} when no group holds a quorum).
  std::vector<uint64_t> corrupt;
  // How many members' hashes were compared (the caller's included).
  int compared = 0;
  // One line per group of equal hashes, for the log.
  std::string detail;
};

// `self` is the checking member with hash `own`; `others` the other
// members' answers; `members` the size of the membership.
HashVerdict JudgeHashes(uint64_t self, uint32_t own,
                        const std::vector<MemberHash>& others, size_t members);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_CORRUPTION_CHECK_H_
