// Fuzzes snapshot files as `kpctl store snapshot status|restore` reads them
// (kpctl/store/snapshot_file.h, bolt_status.h): kplane's packed format
// ("KPSNAP1\n", then length-prefixed SnapshotFile headers and file bytes,
// each file CRC-32C checked) and etcd's bbolt file with its trailing
// sha256 (pages, meta pages, buckets walked to count keys).
//
// Input: a snapshot file. The packed format is read twice: with its
// checksums checked, and with them skipped (so the fuzzer reaches what
// follows a checksum).
//
// Checked: no crash or sanitizer report; every file ParsePackedSnapshot
// returns lies inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "kpctl/store/bolt_status.h"
#include "kpctl/store/snapshot_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view file(reinterpret_cast<const char*>(data), size);
  for (bool skip_crc : {false, true}) {
    auto files = kplane::kpctl::ParsePackedSnapshot(file, skip_crc);
    if (!files.ok()) continue;
    for (const kplane::kpctl::PackedFile& f : *files) {
      if (f.data.data() < file.data() ||
          f.data.data() + f.data.size() > file.data() + file.size()) {
        kplane::fuzz::Fail("a packed file points outside the snapshot");
      }
    }
  }
  (void)kplane::kpctl::BoltSnapshotStatus(file);
  return 0;
}
