// A linearizability checker for client histories of a key/value register
// store (Knossos / Porcupine style), reusable by any test that records a
// history of put/get/cas operations.
//
// Algorithm: the history is partitioned by key (linearizability is
// compositional), then each key's history is searched with the Wing & Gong
// algorithm improved by Lowe: walk the time-ordered list of call and return
// events, tentatively linearize any operation whose call comes before the
// first pending return, backtrack when a return is reached whose operation is
// not yet linearized, and memoize (set of linearized ops, register value)
// pairs already explored.
//
// Operations that timed out ("unknown": may or may not have taken effect)
// have no return event: they may be linearized anywhere after their call,
// including never (at the end). Unknown writes whose value nobody observed
// are pruned first: they can always be linearized at the end, and this keeps
// the search small. Every write must carry a unique non-zero value.
//
// Worked example (one key, initial 0):
//   A: put(1)  |----|
//   B: get()=1      |--|      legal: put(1) then get()=1
//   C: get()=0         |---|  illegal: C starts after A returned, so A is
//                             before C; no put(0) follows.
//
// Thread-safety: pure function. No errors: the result says why not.
#ifndef KPLANE_TESTS_SIM_LINEARIZABILITY_H_
#define KPLANE_TESTS_SIM_LINEARIZABILITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/kv_model.h"

namespace kplane::sim {

struct KvOp {
  uint64_t client = 0;
  OpKind kind = OpKind::kGet;
  std::string key;
  int64_t a = 0;  // put: value; cas: expected
  int64_t b = 0;  // cas: new value
  // Event times: unique, increasing across the whole history.
  uint64_t call = 0;
  uint64_t ret = 0;      // ignored when unknown
  bool unknown = false;  // no answer: may or may not have happened
  int64_t value = 0;     // get: result; cas: observed value
  bool ok = true;        // cas: swapped
};

std::string DescribeOp(const KvOp& op);

struct LinearizabilityResult {
  bool ok = true;
  // The search hit its step budget: neither proven nor refuted.
  bool inconclusive = false;
  std::string key;     // the first key that failed
  std::string detail;  // its history, for the failure message
};

// max_steps bounds the search per key.
LinearizabilityResult CheckLinearizable(const std::vector<KvOp>& history,
                                        uint64_t max_steps = 50'000'000);

// Records a history as a test runs: Invoke when a client sends, then exactly
// one of Complete / MarkUnknown / Discard (the request certainly had no
// effect, e.g. rejected before reaching the log).
class HistoryRecorder {
 public:
  size_t Invoke(uint64_t client, OpKind kind, const std::string& key, int64_t a,
                int64_t b);
  void Complete(size_t op, int64_t value, bool ok);
  void MarkUnknown(size_t op);
  void Discard(size_t op);
  // The ops that were not discarded; pending ones count as unknown.
  std::vector<KvOp> Ops() const;
  size_t completed() const { return completed_; }
  size_t unknown() const { return unknown_; }

 private:
  uint64_t now_ = 0;
  std::vector<KvOp> ops_;
  std::vector<uint8_t> state_;  // 0 pending, 1 done, 2 unknown, 3 discarded
  size_t completed_ = 0;
  size_t unknown_ = 0;
};

}  // namespace kplane::sim

#endif  // KPLANE_TESTS_SIM_LINEARIZABILITY_H_
