// InteractionEnv: drives a set of RawNodes by text commands for the
// datadriven scenario tests in storage/raft/testdata/ (test-only). Each
// node has a MemoryStorage and a trivial state machine (the list of applied
// entries); messages wait in a mailbox per recipient until delivered.
//
// Commands (arguments in brackets are optional):
//   add-nodes N voters=(1,2,3) [learners=(4)] [index=I] [prevote=true]
//             [checkquorum=true] [max-inflight=K] [max-size=B]
//   campaign ID | propose ID DATA | read-index ID CTX
//   propose-conf-change ID [transition=auto|implicit|explicit] [v1=true]
//       with an input line of changes: v4 (voter) l4 (learner) r4 (remove)
//   tick-heartbeat ID | tick-election ID     (enough ticks to fire once)
//   process-ready [ID...]     handle one Ready per node (persist, apply)
//   deliver-msgs [ID...]      deliver mailboxes (all if no ids)
//   stabilize [ID...]         process-ready and deliver-msgs until quiet
//   partition (1,2) (3)       drop messages between groups; heal
//   transfer-leadership from=1 to=2 | report-unreachable ID PEER
//   compact ID INDEX | snapshot ID | restart ID
//   raft-log ID | raft-state | status ID | applied ID
//
// Thread-safety: none. Errors: a command's output says "error: ...".
#ifndef KPLANE_STORAGE_RAFT_INTERACTION_ENV_H_
#define KPLANE_STORAGE_RAFT_INTERACTION_ENV_H_

#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "storage/raft/datadriven.h"
#include "storage/raft/raw_node.h"
#include "storage/raft/storage.h"

namespace kplane::raft {

class InteractionEnv {
 public:
  std::string Handle(const datadriven::TestData& d);

 private:
  struct Node {
    Config config;
    std::unique_ptr<MemoryStorage> storage;
    std::unique_ptr<RawNode> raw;
    raftpb::ConfState conf;
    EntryVec applied;
  };

  void AddNodes(const datadriven::TestData& d, std::ostream& os);
  bool ProcessReady(uint64_t id, std::ostream& os);
  bool DeliverMsgs(uint64_t id, std::ostream& os);
  void Stabilize(const std::vector<uint64_t>& ids, std::ostream& os);
  void ProposeConfChange(const datadriven::TestData& d, std::ostream& os);
  void RaftState(std::ostream& os);
  std::vector<uint64_t> Ids(const datadriven::TestData& d) const;
  bool Blocked(uint64_t from, uint64_t to) const;
  void Restart(uint64_t id);

  std::map<uint64_t, Node> nodes_;
  std::map<uint64_t, std::vector<raftpb::Message>> mailbox_;
  std::vector<std::set<uint64_t>> partition_;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_INTERACTION_ENV_H_
