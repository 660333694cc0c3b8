// The bbolt page layout shared by the writer and the reader (internal to
// kplane_bolt). FORMAT is in docs/store.md ("etcd snapshot files"); bbolt
// writes host byte order and every etcd host we meet is little-endian, so
// this file fixes little-endian.
//
//   page header (16 B)   id u64 | flags u16 | count u16 | overflow u32
//   meta (after header)  magic u32 | version u32 | page_size u32 | flags u32
//                        | root bucket {root u64, sequence u64} | freelist
//                        u64 | pgid u64 | txid u64 | checksum u64
//   branch element (16)  pos u32 | ksize u32 | pgid u64
//   leaf element (16)    flags u32 | pos u32 | ksize u32 | vsize u32
//   bucket header (16)   root u64 | sequence u64
//
// Thread-safety: constants and pure functions.
#ifndef KPLANE_STORAGE_BOLT_PAGE_H_
#define KPLANE_STORAGE_BOLT_PAGE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kplane::bolt::internal {

static_assert(std::endian::native == std::endian::little,
              "bbolt files are written in host order; we write little-endian");

inline constexpr uint32_t kMagic = 0xED0CDAED;
inline constexpr uint32_t kVersion = 2;
inline constexpr uint16_t kBranchPage = 0x01;
inline constexpr uint16_t kLeafPage = 0x02;
inline constexpr uint16_t kMetaPage = 0x04;
inline constexpr uint16_t kFreelistPage = 0x10;
inline constexpr uint32_t kBucketLeafFlag = 0x01;
inline constexpr size_t kPageHeaderSize = 16;
inline constexpr size_t kElementSize = 16;  // branch and leaf alike
inline constexpr size_t kBucketHeaderSize = 16;
// Bytes of the meta covered by its checksum (everything before it).
inline constexpr size_t kMetaChecksummed = 56;
inline constexpr size_t kMetaSize = 64;
// A freelist with this many ids or more keeps its count in its first u64.
inline constexpr uint16_t kFreelistCountOverflow = 0xFFFF;

template <typename T>
T Load(std::string_view d, size_t off) {
  T v;
  std::memcpy(&v, d.data() + off, sizeof(T));
  return v;
}

template <typename T>
void Store(std::string* d, size_t off, T v) {
  std::memcpy(d->data() + off, &v, sizeof(T));
}

// FNV-1a 64, the meta page checksum.
inline uint64_t Fnv1a64(std::string_view d) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : d) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace kplane::bolt::internal

#endif  // KPLANE_STORAGE_BOLT_PAGE_H_
