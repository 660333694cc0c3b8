// Throughput of the consensus core alone: a 3-node cluster in one thread,
// messages delivered directly, the Ready loop persisting to MemoryStorage.
// Measures proposals committed and applied on all nodes per second.
//   build/storage/raft/raft_bench --benchmark_min_time=2
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "storage/raft/raw_node.h"

namespace kplane::raft {
namespace {

struct Cluster {
  std::vector<std::unique_ptr<MemoryStorage>> storages;
  std::vector<std::unique_ptr<RawNode>> nodes;
  std::vector<raftpb::Message> inflight;
  uint64_t applied = 0;

  explicit Cluster(int n) {
    raftpb::ConfState cs;
    for (int i = 1; i <= n; ++i) cs.add_voters(i);
    for (int i = 1; i <= n; ++i) {
      auto s = std::make_unique<MemoryStorage>();
      s->SetInitialConfState(cs);
      Config c;
      c.id = i;
      c.max_inflight_msgs = 512;
      c.pre_vote = true;
      c.check_quorum = true;
      nodes.push_back(std::move(RawNode::Create(c, s.get())).value());
      storages.push_back(std::move(s));
    }
    (void)nodes[0]->Campaign();
    Pump();
  }

  void Pump() {
    bool any = true;
    while (any) {
      any = false;
      for (size_t i = 0; i < nodes.size(); ++i) {
        while (nodes[i]->HasReady()) {
          any = true;
          Ready rd = nodes[i]->GetReady();
          if (!IsEmptyHardState(rd.hard_state)) {
            storages[i]->SetHardState(rd.hard_state);
          }
          (void)storages[i]->Append(rd.entries.data(),
                                    rd.entries.data() + rd.entries.size());
          for (auto& m : rd.messages) inflight.push_back(std::move(m));
          applied += rd.committed_entries.size();
          nodes[i]->Advance();
        }
      }
      std::vector<raftpb::Message> msgs;
      msgs.swap(inflight);
      for (auto& m : msgs) {
        any = true;
        (void)nodes[m.to() - 1]->Step(std::move(m));
      }
    }
  }
};

void BM_ProposeCommitApply(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  Cluster c(3);
  std::string payload(128, 'x');
  uint64_t proposals = 0;
  uint64_t since_compact = 0;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) (void)c.nodes[0]->Propose(payload);
    c.Pump();
    proposals += batch;
    since_compact += batch;
    if (since_compact > 10000) {
      // Keep memory bounded as a server would.
      for (size_t i = 0; i < c.storages.size(); ++i) {
        uint64_t applied = c.nodes[i]->GetBasicStatus().applied;
        (void)c.storages[i]->CreateSnapshot(applied, nullptr, "");
        (void)c.storages[i]->Compact(applied);
      }
      since_compact = 0;
    }
  }
  state.counters["proposals/s"] =
      benchmark::Counter(proposals, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ProposeCommitApply)->Arg(1)->Arg(16)->Arg(128);

}  // namespace
}  // namespace kplane::raft

BENCHMARK_MAIN();
