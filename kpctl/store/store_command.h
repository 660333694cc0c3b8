// `kpctl store`: an etcdctl 3.4 work-alike for etcd-v3-JSON stores (a real
// etcd 3.4 or `kplane store`), built on storage/client.
//
//   kpctl store --endpoints 127.0.0.1:2379 put foo bar
//   kpctl store get --prefix "" -w json
//   kpctl store endpoint status --cluster -w table
//
// Commands: get, put, del, watch, txn, compaction (alias compact), defrag,
// endpoint health|status, member list|add|remove|update|promote,
// lease grant|revoke|timetolive|list|keep-alive, snapshot
// save|status|restore, move-leader, alarm list|disarm, and bench (when the
// binary plugs it in: StoreIo::bench). Global flags:
// --endpoints, --dial-timeout, --command-timeout, -w/--write-out
// (simple|json|table), --hex; ETCDCTL_ENDPOINTS, ETCDCTL_DIAL_TIMEOUT,
// ETCDCTL_COMMAND_TIMEOUT, ETCDCTL_WRITE_OUT and ETCDCTL_HEX give defaults.
// docs/kpctl-store.md is the user's manual.
//
// Output and exit codes follow etcdctl 3.4: results on stdout, errors as
// "Error: <message>" on stderr with the server's message (e.g. "Error:
// etcdserver: mvcc: required revision has been compacted"), exit 1 for a
// failed request, 128 for bad arguments, 3 for bad txn input, 4 for an
// unsupported output format, 5 when a watch is canceled.
//
// RunStore is the whole command (main() only forwards argv): tests run it
// in-process with string streams.
//
// Thread-safety: RunStore may run concurrently with itself on distinct
// streams. StopSignal: any thread.
#ifndef KPLANE_KPCTL_STORE_STORE_COMMAND_H_
#define KPLANE_KPCTL_STORE_STORE_COMMAND_H_

#include <condition_variable>
#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace kplane::kpctl {

// Ends a long-running command (watch, lease keep-alive) from another
// thread, as Ctrl-C does for the binary.
class StopSignal {
 public:
  void Stop();
  bool stopped() const;
  // Runs `fn` on Stop() (at once if already stopped); nullptr unregisters.
  void OnStop(std::function<void()> fn);

 private:
  mutable Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::function<void()> fn_ GUARDED_BY(mu_);
};

struct StoreIo {
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // nullptr: watch and keep-alive run until the process is killed.
  StopSignal* stop = nullptr;
  // Environment lookup for ETCDCTL_* defaults; nullptr: getenv.
  std::function<const char*(const char*)> getenv;
  // `kpctl store bench <workload> [flags]`, plugged in by the binary
  // (cmd/kpctl: bench::RunStoreBenchCommand) so that this library does not
  // link the benchmarks. Gets the flags plus "--workload=<workload>" and
  // returns the exit code. nullptr: the command fails (exit 1) saying the
  // benchmarks are not built in.
  std::function<int(const std::vector<std::string>& args)> bench;
};

// Runs `kpctl store <args...>`; returns the exit code.
int RunStore(const std::vector<std::string>& args, const StoreIo& io);

// The command list shown by `kpctl store --help`.
std::string StoreUsage();

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_STORE_STORE_COMMAND_H_
