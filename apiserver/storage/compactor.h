// Compactor: compacts the store's history every interval, as kube-apiserver
// does for etcd (--etcd-compaction-interval, k8s.io/apiserver
// pkg/storage/etcd3/compact.go). Used with --storage-backend=remote: a real
// etcd or a `kplane store` keeps every revision until a client compacts it,
// and without this the store grows until its space quota raises NOSPACE.
// (The embedded backend compacts itself through the store's periodic
// auto-compaction instead.)
//
// Protocol (kube's, so kplane and kube API servers sharing one store
// cooperate): the key `compact_rev_key` (outside --etcd-prefix, exactly the
// key kube writes) holds the revision the last round recorded, and its
// version counts rounds. Every interval, one Txn:
//   if version(compact_rev_key) == the version this compactor last saw:
//     put compact_rev_key = the revision recorded in our previous round,
//     then compact the store to that revision;
//   else (another API server did this round): read the key and adopt its
//     version.
// The Txn's header revision becomes "the revision recorded" for the next
// round. So:
//   - the first round compacts nothing (there is no previous revision), and
//     at least one interval of history is always kept;
//   - N API servers on one store compact once per interval between them,
//     not N times: only one Txn per round can match the version.
// If the key is deleted, its version reads 0 and the protocol restarts.
//
// Errors: a failed round (store unavailable, timeout, ...) is logged and
// the next round tries again; it never stops the API server. kCompacted
// from compacting to an already compacted revision (someone compacted
// further meanwhile, e.g. `etcdctl compact`) counts as done.
//
// Ownership: `kv` and the clock must outlive the compactor.
// Thread-safety: all methods may be called from any thread; the rounds run
// on the compactor's own thread.
#ifndef KPLANE_APISERVER_STORAGE_COMPACTOR_H_
#define KPLANE_APISERVER_STORAGE_COMPACTOR_H_

#include <condition_variable>
#include <cstdint>
#include <string_view>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "storage/kv.h"

namespace kplane::apiserver {

// The key kube-apiserver's compactor uses; written without --etcd-prefix.
inline constexpr std::string_view kCompactRevKey = "compact_rev_key";

struct CompactorOptions {
  // Time between rounds; the first round runs one interval after start.
  // 0 (or negative) disables the compactor: no thread, no writes.
  Duration interval = minutes(5);
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

class Compactor {
 public:
  // Starts the loop (unless options.interval <= 0).
  Compactor(storage::KV* kv, CompactorOptions options);
  ~Compactor();  // Stop()
  Compactor(const Compactor&) = delete;
  Compactor& operator=(const Compactor&) = delete;

  // Ends the loop and waits for a running round; idempotent.
  void Stop() EXCLUDES(mu_);

  struct Stats {
    int64_t rounds = 0;              // rounds ended, successful or not
    int64_t failures = 0;            // rounds that returned an error
    int64_t compactions = 0;         // rounds that compacted the store
    int64_t compacted_revision = 0;  // the last revision compacted to
  };
  Stats stats() const EXCLUDES(mu_);

  // Blocks until at least `n` rounds have ended or Stop() was called;
  // returns whether `n` rounds ended (tests await a round with it instead
  // of sleeping).
  bool WaitForRounds(int64_t n) const EXCLUDES(mu_);

 private:
  void Run();
  // One round; updates version_ and recorded_revision_.
  Status Round();

  storage::KV* const kv_;
  const Duration interval_;
  Clock* const clock_;
  // Only the loop thread touches these two (no lock needed).
  int64_t version_ = 0;            // compact_rev_key's version last seen
  int64_t recorded_revision_ = 0;  // revision to compact to next round

  mutable Mutex mu_;  // a leaf: KV calls run without it
  mutable std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  Stats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_STORAGE_COMPACTOR_H_
