// Fuzzes what a store member reads from disk at startup: a WAL segment
// (storage/wal, format in storage/wal/FORMAT.md) replayed into the raft log
// (storage/server/raft_log.h: entries, hard states, snapshot markers, the
// member identity). A damaged or hostile data directory must give
// kCorruption, never a crash.
//
// Input: byte 0 even: the rest is the segment file's bytes as they are
// (framing, checksums, torn tails). Odd: the rest is a list of records,
// [type][index: 1 byte][payload length: 1 byte][payload], written with
// valid checksums by wal::EncodeRecord, so the fuzzer reaches the replay
// rules behind the checksum.
//
// Each run writes one segment into a fresh directory under $TMPDIR (or
// /tmp) and opens it there.
//
// Checked: no crash or sanitizer report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "storage/server/raft_log.h"
#include "storage/wal/wal.h"

namespace {

namespace fs = std::filesystem;

const std::string& Dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
           "/kplane-wal-fuzz-" + std::to_string(::getpid());
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const bool structured = in.TakeByte() & 1;
  std::string segment;
  if (structured) {
    while (!in.rest().empty()) {
      kplane::wal::Record r;
      r.type = in.TakeByte() % 8;
      r.index = in.TakeByte();
      r.payload = std::string(in.TakeBytes(in.TakeByte()));
      kplane::wal::EncodeRecord(r, &segment);
    }
  } else {
    segment = std::string(in.rest());
  }
  std::error_code ec;
  fs::remove_all(Dir(), ec);
  fs::create_directories(Dir(), ec);
  {
    std::ofstream f(Dir() + "/" + kplane::wal::SegmentName(0, 0),
                    std::ios::binary);
    f.write(segment.data(), static_cast<std::streamsize>(segment.size()));
  }
  {
    kplane::storage::RaftLogOptions options;
    options.wal.preallocate_bytes = 0;
    auto log = kplane::storage::RaftLog::Open(Dir(), options);
    if (log.ok()) {
      (void)(*log)->LastIndex();
      (void)(*log)->hard_state().commit();
      (void)(*log)->WalBytes();
    }
  }
  fs::remove_all(Dir(), ec);
  return 0;
}
