// CRC-32C (Castagnoli), the checksum etcd's HashKV uses. Software,
// table-driven; fast enough for hashing a store now and then.
//
// Thread-safety: pure functions.
#ifndef KPLANE_STORAGE_MVCC_CRC32C_H_
#define KPLANE_STORAGE_MVCC_CRC32C_H_

#include <cstdint>
#include <string_view>

namespace kplane::mvcc {

// Extends `crc` (0 to start) with `data`. Crc32cExtend(0, "123456789") is
// 0xe3069283.
uint32_t Crc32cExtend(uint32_t crc, std::string_view data);

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_CRC32C_H_
