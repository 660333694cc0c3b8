// CRC-32C (Castagnoli), the checksum of our on-disk records (WAL, snapshots).
// Uses the SSE4.2 instruction when the CPU has it, a table otherwise; both
// give identical results.
//
//   uint32_t c = crc32c::Value(data, n);
//   c = crc32c::Extend(c, more, m);   // == Value(data+more)
#ifndef KPLANE_BASE_CRC32C_H_
#define KPLANE_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kplane::crc32c {

uint32_t Extend(uint32_t crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Value(s.data(), s.size()); }

}  // namespace kplane::crc32c

#endif  // KPLANE_BASE_CRC32C_H_
