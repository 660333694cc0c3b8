#include "kpctl/store/bolt_status.h"

#include <cstring>
#include <functional>
#include <optional>

#include "base/crc32c.h"

namespace kplane::kpctl {

namespace {

constexpr uint32_t kMagic = 0xED0CDAED;
constexpr uint16_t kBranch = 0x01;
constexpr uint16_t kLeaf = 0x02;
constexpr uint32_t kBucketLeafFlag = 0x01;
constexpr size_t kPageHeader = 16;
constexpr size_t kElement = 16;
constexpr int kMaxDepth = 64;

template <typename T>
T Load(std::string_view d, size_t off) {
  T v;
  std::memcpy(&v, d.data() + off, sizeof(T));
  return v;  // bbolt writes host order; etcd runs little-endian hosts
}

Status Invalid() { return InvalidArgumentError("invalid database"); }

uint64_t Fnv1a64(std::string_view d) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : d) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

struct Meta {
  uint32_t page_size = 0;
  uint64_t root = 0;
  uint64_t pgid = 0;
  uint64_t txid = 0;
};

// A meta page at byte offset `off`, if valid.
std::optional<Meta> ReadMeta(std::string_view d, size_t off) {
  constexpr size_t kMetaSize = 4 + 4 + 4 + 4 + 16 + 8 + 8 + 8 + 8;
  if (off + kPageHeader + kMetaSize > d.size()) return std::nullopt;
  size_t m = off + kPageHeader;
  if (Load<uint32_t>(d, m) != kMagic || Load<uint32_t>(d, m + 4) != 2) {
    return std::nullopt;
  }
  if (Fnv1a64(d.substr(m, 56)) != Load<uint64_t>(d, m + 56)) {
    return std::nullopt;
  }
  Meta meta;
  meta.page_size = Load<uint32_t>(d, m + 8);
  meta.root = Load<uint64_t>(d, m + 16);
  meta.pgid = Load<uint64_t>(d, m + 40);
  meta.txid = Load<uint64_t>(d, m + 48);
  return meta;
}

class Reader {
 public:
  Reader(std::string_view d, uint32_t page_size) : d_(d), ps_(page_size) {}

  // Calls fn(key, value, is_bucket) for every element of the tree rooted
  // at page `pgid`, in key order.
  Status Walk(
      uint64_t pgid,
      const std::function<Status(std::string_view, std::string_view, bool)>& fn,
      int depth = 0) {
    if (depth > kMaxDepth) return Invalid();
    if (pgid > (d_.size() / ps_)) return Invalid();
    size_t off = static_cast<size_t>(pgid) * ps_;
    if (off + kPageHeader > d_.size()) return Invalid();
    return WalkPage(d_.substr(off), fn, depth);
  }

  // A page in memory (a file page or an inline bucket's page).
  Status WalkPage(
      std::string_view page,
      const std::function<Status(std::string_view, std::string_view, bool)>& fn,
      int depth) {
    if (page.size() < kPageHeader) return Invalid();
    uint16_t flags = Load<uint16_t>(page, 8);
    uint16_t count = Load<uint16_t>(page, 10);
    if (kPageHeader + size_t{count} * kElement > page.size()) return Invalid();
    for (uint16_t i = 0; i < count; ++i) {
      size_t e = kPageHeader + size_t{i} * kElement;
      if (flags & kBranch) {
        uint64_t child = Load<uint64_t>(page, e + 8);
        RETURN_IF_ERROR(Walk(child, fn, depth + 1));
      } else if (flags & kLeaf) {
        uint32_t eflags = Load<uint32_t>(page, e);
        uint32_t pos = Load<uint32_t>(page, e + 4);
        uint32_t ksize = Load<uint32_t>(page, e + 8);
        uint32_t vsize = Load<uint32_t>(page, e + 12);
        size_t k = e + pos;
        if (k + ksize + vsize > page.size()) return Invalid();
        RETURN_IF_ERROR(fn(page.substr(k, ksize), page.substr(k + ksize, vsize),
                           (eflags & kBucketLeafFlag) != 0));
      } else {
        return Invalid();
      }
    }
    return Status::Ok();
  }

  // Walks the key/values of a bucket whose header is `value`.
  Status WalkBucket(std::string_view value,
                    const std::function<Status(std::string_view,
                                               std::string_view, bool)>& fn) {
    if (value.size() < 16) return Invalid();
    uint64_t root = Load<uint64_t>(value, 0);
    if (root == 0) return WalkPage(value.substr(16), fn, 1);  // inline
    return Walk(root, fn, 1);
  }

 private:
  std::string_view d_;
  uint32_t ps_;
};

}  // namespace

StatusOr<SnapshotStatus> BoltSnapshotStatus(std::string_view data) {
  std::optional<Meta> m0 = ReadMeta(data, 0);
  std::optional<Meta> m1;
  uint32_t ps = m0 ? m0->page_size : 4096;
  if (ps < 512 || ps > (1u << 20)) return Invalid();
  m1 = ReadMeta(data, ps);
  const Meta* meta = nullptr;
  if (m0 && m1) {
    meta = m0->txid >= m1->txid ? &*m0 : &*m1;
  } else if (m0) {
    meta = &*m0;
  } else if (m1) {
    meta = &*m1;
  } else {
    return Invalid();
  }
  if (meta->page_size != ps) return Invalid();
  Reader r(data, ps);
  SnapshotStatus st;
  st.total_size = static_cast<int64_t>(meta->pgid * ps);
  uint32_t crc = 0;
  RETURN_IF_ERROR(r.Walk(
      meta->root,
      [&](std::string_view name, std::string_view value,
          bool is_bucket) -> Status {
        if (!is_bucket)
          return InvalidArgumentError("cannot get hash of bucket " +
                                      std::string(name));
        crc = crc32c::Extend(crc, name.data(), name.size());
        const bool key_bucket = name == "key";
        return r.WalkBucket(
            value, [&](std::string_view k, std::string_view v, bool) -> Status {
              crc = crc32c::Extend(crc, k.data(), k.size());
              crc = crc32c::Extend(crc, v.data(), v.size());
              if (key_bucket && k.size() >= 8) {
                uint64_t main = 0;
                for (int i = 0; i < 8; ++i) {
                  main = (main << 8) | static_cast<unsigned char>(k[i]);
                }
                st.revision = static_cast<int64_t>(main);
              }
              ++st.total_keys;
              return Status::Ok();
            });
      }));
  st.hash = crc;
  return st;
}

}  // namespace kplane::kpctl
