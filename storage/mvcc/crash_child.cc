// The process the crash tests kill with SIGKILL (crash_test.cc).
//
//   mvcc_crash_child write   <dir> <sync 0|1>
//   mvcc_crash_child compact <dir> <target revision>
//
// Both continue the deterministic workload (crash_workload.h) from the
// store's current revision and print "ack <revision>" after each write
// returns. "compact" first schedules a compaction with tiny batches and
// prints "scheduled", then "compacted" once it has finished.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "storage/mvcc/crash_workload.h"

using kplane::mvcc::Options;
using kplane::mvcc::Store;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s write|compact <dir> <arg>\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  Options o;
  o.dir = argv[2];
  o.sync_writes = mode == "write" && std::strcmp(argv[3], "1") == 0;
  o.compaction_batch_records = 20;
  auto store = Store::Open(o);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  Store* s = store->get();
  std::thread waiter;
  if (mode == "compact") {
    const int64_t target = std::atoll(argv[3]);
    kplane::Status st = s->Compact(target);
    if (!st.ok()) {
      std::fprintf(stderr, "compact: %s\n", st.ToString().c_str());
      return 1;
    }
    std::printf("scheduled\n");
    std::fflush(stdout);
    waiter = std::thread([s, target] {
      if (s->WaitForCompaction(target).ok()) {
        std::printf("compacted\n");
        std::fflush(stdout);
      }
    });
  }
  if (waiter.joinable()) waiter.detach();
  for (int64_t i = s->CurrentRevision() + 1;; ++i) {
    kplane::Status st = kplane::mvcc::crash::Apply(s, i);
    if (!st.ok()) {
      std::fprintf(stderr, "op %lld: %s\n", static_cast<long long>(i),
                   st.ToString().c_str());
      return 1;
    }
    std::printf("ack %lld\n", static_cast<long long>(i));
    std::fflush(stdout);
  }
}
