// A seeded simulation of a raft cluster: the real core (RawNode) over
// in-memory storage that loses unsynced state on crash, a fault network, a
// replicated KV state machine, clients issuing put/get/cas (reads through
// ReadIndex or through the log), and a fault schedule: message loss,
// duplication, delay and reordering, symmetric and asymmetric partitions,
// an isolated leader, crashes (including a leader crashing after sending but
// before persisting) and restarts, membership changes (learners, promotion,
// removal, joint consensus) and leadership transfers.
//
// After every step an InvariantChecker verifies Raft's safety properties;
// at the end the client history is checked for linearizability. Everything
// derives from SimOptions::seed, so a run replays exactly:
//   build/tests/sim/raft_sim --seed=N --nodes=3 --steps=K [--verbose]
//
// Thread-safety: a run is single-threaded; runs share nothing. Errors: the
// result's ok/failure fields.
#ifndef KPLANE_TESTS_SIM_CLUSTER_H_
#define KPLANE_TESTS_SIM_CLUSTER_H_

#include <cstdint>
#include <ostream>
#include <string>

namespace kplane::sim {

struct SimOptions {
  uint64_t seed = 1;
  int nodes = 3;
  int steps = 4000;
  bool verbose = false;

  // Network.
  double drop = 0.02;
  double duplicate = 0.02;
  int max_delay = 3;
  // Per-step probabilities of fault events.
  double p_partition = 0.004;
  double p_heal = 0.015;
  double p_crash = 0.003;
  double p_mid_ready_crash = 0.2;  // of a crash: leader sent, not persisted
  double p_restart = 0.03;
  double p_conf_change = 0.004;
  double p_transfer = 0.003;
  // Clients.
  int clients = 4;
  int keys = 3;
  double p_client_op = 0.4;
  double p_read_index = 0.6;  // of reads: via ReadIndex, else via the log
  int client_timeout = 80;
  // Node.
  int election_tick = 10;
  int heartbeat_tick = 1;
  // Turned off for every third (pre_vote) / fourth (check_quorum) seed.
  bool pre_vote = true;
  bool check_quorum = true;
  int snapshot_every = 40;  // applied entries between snapshots
  // Final phase: faults stop, everything heals and restarts, and the
  // cluster must elect a leader and commit a final write.
  int quiesce_steps = 300;
};

struct SimStats {
  uint64_t ops_ok = 0;
  uint64_t ops_unknown = 0;
  uint64_t reads_via_index = 0;
  uint64_t leaders = 0;
  uint64_t max_commit = 0;
  uint64_t crashes = 0;
  uint64_t conf_changes_applied = 0;
  uint64_t snapshots_sent = 0;
  uint64_t transfers = 0;
  uint64_t partitions = 0;
  uint64_t messages = 0;
};

struct SimResult {
  bool ok = true;
  std::string failure;
  SimStats stats;
};

SimResult RunSimulation(const SimOptions& options);
// The command line that replays this run.
std::string ReplayCommand(const SimOptions& options);
std::ostream& operator<<(std::ostream& os, const SimStats& s);

}  // namespace kplane::sim

#endif  // KPLANE_TESTS_SIM_CLUSTER_H_
