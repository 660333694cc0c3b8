#include "storage/bolt/bolt_reader.h"

#include <optional>
#include <string>
#include <vector>

#include "storage/bolt/page.h"

namespace kplane::bolt {

using namespace internal;  // NOLINT(build/namespaces): the page layout

namespace {

constexpr int kMaxDepth = 64;
constexpr uint64_t kNoFreelist = ~uint64_t{0};  // bbolt's pgidNoFreelist

Status Corrupt(uint64_t page, const std::string& what) {
  return CorruptionError("bolt: page " + std::to_string(page) + ": " + what);
}

struct Meta {
  uint32_t page_size;
  uint64_t root, freelist, pgid, txid;
};

std::optional<Meta> ReadMeta(std::string_view d, size_t off) {
  if (off + kPageHeaderSize + kMetaSize > d.size()) return std::nullopt;
  size_t m = off + kPageHeaderSize;
  if (Load<uint32_t>(d, m) != kMagic || Load<uint32_t>(d, m + 4) != kVersion) {
    return std::nullopt;
  }
  if (Fnv1a64(d.substr(m, kMetaChecksummed)) != Load<uint64_t>(d, m + 56)) {
    return std::nullopt;
  }
  return Meta{Load<uint32_t>(d, m + 8), Load<uint64_t>(d, m + 16),
              Load<uint64_t>(d, m + 32), Load<uint64_t>(d, m + 40),
              Load<uint64_t>(d, m + 48)};
}

}  // namespace

// What Check() carries through a walk: page marks for the whole file and,
// per bucket, the last key seen and the key a branch expects first below.
struct BoltReader::CheckState {
  std::vector<uint8_t>* marks;
  std::optional<std::string_view> last;
  std::optional<std::string_view> want_first;
};

StatusOr<BoltReader> BoltReader::Open(std::string_view data) {
  const Status invalid = InvalidArgumentError("invalid database");
  // bbolt takes the page size from meta page 0, or else assumes the OS's.
  std::optional<Meta> m0 = ReadMeta(data, 0);
  uint32_t ps = m0 ? m0->page_size : 4096;
  if (ps < 512 || ps > (1u << 20) || (ps & (ps - 1)) != 0) return invalid;
  std::optional<Meta> m1 = ReadMeta(data, ps);
  const Meta* m = nullptr;
  if (m0 && m1) {
    m = m0->txid >= m1->txid ? &*m0 : &*m1;
  } else if (m0) {
    m = &*m0;
  } else if (m1) {
    m = &*m1;
  } else {
    return invalid;
  }
  if (m->page_size != ps || m->pgid < 2 || m->root >= m->pgid ||
      (m->freelist >= m->pgid && m->freelist != kNoFreelist)) {
    return invalid;
  }
  return BoltReader(data, ps, m->root, m->freelist, m->pgid, m->txid);
}

StatusOr<std::string_view> BoltReader::Page(uint64_t id) const {
  if (id >= pgid_) return Corrupt(id, "beyond the high-water mark");
  // Ids are compared in pages, before any multiplication: a hostile id
  // times page_size_ wraps around 2^64 to an offset that looks in range.
  if (id >= pages_) {
    return Corrupt(id, "beyond the end of the file (" +
                           std::to_string(d_.size()) + " bytes)");
  }
  const uint64_t off = id * page_size_;
  if (Load<uint64_t>(d_, off) != id) return Corrupt(id, "wrong id in header");
  const uint64_t overflow = Load<uint32_t>(d_, off + 12);
  if (overflow >= pages_ - id) {
    return Corrupt(id, std::to_string(overflow) +
                           " overflow pages run past the high-water mark or "
                           "the end of the file (" +
                           std::to_string(d_.size()) + " bytes)");
  }
  return d_.substr(off, (overflow + 1) * page_size_);
}

Status BoltReader::MarkSeen(uint64_t id, uint64_t n, Visited* seen) const {
  std::vector<bool>& marks = seen->pages_;
  if (marks.size() < pages_) marks.resize(pages_);
  for (uint64_t p = id; p < id + n; ++p) {
    if (marks[p]) {
      return Corrupt(p,
                     "reached twice in one read (two branch elements or "
                     "bucket headers, or one and an overflow run, lead to "
                     "it)");
    }
    marks[p] = true;
  }
  return Status::Ok();
}

Status BoltReader::WalkTree(uint64_t id, const Visitor& fn, int depth,
                            CheckState* check, Visited* seen) const {
  if (depth > kMaxDepth) return Corrupt(id, "tree too deep");
  ASSIGN_OR_RETURN(std::string_view page, Page(id));
  if (check) {
    for (uint64_t p = id; p < id + page.size() / page_size_; ++p) {
      if ((*check->marks)[p]) return Corrupt(p, "multiple references");
      (*check->marks)[p] = 1;
    }
  } else {
    // Without this a page shared by the elements of a branch, repeated
    // over a few levels, makes a walk exponential in the file's size, and
    // bucket headers sharing a root page multiply the walks of a read.
    RETURN_IF_ERROR(MarkSeen(id, page.size() / page_size_, seen));
  }
  return WalkPage(page, id, fn, depth, check, seen);
}

Status BoltReader::WalkPage(std::string_view page, uint64_t id,
                            const Visitor& fn, int depth, CheckState* check,
                            Visited* seen) const {
  if (page.size() < kPageHeaderSize) return Corrupt(id, "truncated");
  const uint16_t flags = Load<uint16_t>(page, 8);
  const size_t count = Load<uint16_t>(page, 10);
  if (kPageHeaderSize + count * kElementSize > page.size()) {
    return Corrupt(id, "elements beyond the page");
  }
  if (!(flags & (kBranchPage | kLeafPage))) {
    return Corrupt(id, "not a branch or leaf page");
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t e = kPageHeaderSize + i * kElementSize;
    const bool branch = flags & kBranchPage;
    const size_t pos = Load<uint32_t>(page, e + (branch ? 0 : 4));
    const size_t ksize = Load<uint32_t>(page, e + (branch ? 4 : 8));
    const size_t vsize = branch ? 0 : Load<uint32_t>(page, e + 12);
    if (e + pos + ksize + vsize > page.size()) {
      return Corrupt(id, "element beyond the page");
    }
    std::string_view key = page.substr(e + pos, ksize);
    if (check && check->want_first) {
      if (key != *check->want_first) {
        return Corrupt(id, "first key differs from its branch key");
      }
      check->want_first.reset();
    }
    if (branch) {
      if (check) check->want_first = key;
      RETURN_IF_ERROR(
          WalkTree(Load<uint64_t>(page, e + 8), fn, depth + 1, check, seen));
      if (check && check->want_first) return Corrupt(id, "empty child");
      continue;
    }
    if (check) {
      if (check->last && !(*check->last < key)) {
        return Corrupt(id, "keys out of order");
      }
      check->last = key;
    }
    RETURN_IF_ERROR(fn(key, page.substr(e + pos + ksize, vsize),
                       (Load<uint32_t>(page, e) & kBucketLeafFlag) != 0));
  }
  return Status::Ok();
}

Status BoltReader::WalkBucket(std::string_view header, const Visitor& fn,
                              CheckState* check, Visited* seen) const {
  if (header.size() < kBucketHeaderSize) {
    return CorruptionError("bolt: truncated bucket header");
  }
  CheckState inner;
  if (check) inner.marks = check->marks;
  CheckState* c = check ? &inner : nullptr;
  const uint64_t root = Load<uint64_t>(header, 0);
  if (root != 0) return WalkTree(root, fn, 1, c, seen);
  std::string_view page = header.substr(kBucketHeaderSize);  // inline
  if (page.size() < kPageHeaderSize || Load<uint16_t>(page, 8) != kLeafPage) {
    return CorruptionError("bolt: bad inline bucket");
  }
  return WalkPage(page, 0, fn, 1, c, seen);
}

Status BoltReader::ForEachBucket(
    const std::function<Status(std::string_view, std::string_view)>& fn,
    Visited* visited) const {
  Visited own;
  return WalkTree(
      root_,
      [&](std::string_view k, std::string_view v, bool is_bucket) -> Status {
        if (!is_bucket) return CorruptionError("bolt: top-level key");
        return fn(k, v);
      },
      0, nullptr, visited ? visited : &own);
}

Status BoltReader::ForEachRoot(const Visitor& fn, Visited* visited) const {
  Visited own;
  return WalkTree(root_, fn, 0, nullptr, visited ? visited : &own);
}

Status BoltReader::ForEachInBucket(std::string_view header, const Visitor& fn,
                                   Visited* visited) const {
  Visited own;
  return WalkBucket(header, fn, nullptr, visited ? visited : &own);
}

Status BoltReader::Check() const {
  // Before the marks are sized by pgid_: a meta's pgid is not held against
  // the data's size by Open, and a hostile one (2^52, checksum and all)
  // would otherwise allocate petabytes.
  if (pgid_ > pages_) {
    return Corrupt(pages_, "beyond the end of the file (" +
                               std::to_string(d_.size()) +
                               " bytes) but below the meta's high-water "
                               "mark of " +
                               std::to_string(pgid_) + " pages of " +
                               std::to_string(page_size_) + " bytes");
  }
  std::vector<uint8_t> marks(pgid_, 0);
  marks[0] = marks[1] = 1;
  if (freelist_ != kNoFreelist) {
    ASSIGN_OR_RETURN(std::string_view page, Page(freelist_));
    if (Load<uint16_t>(page, 8) != kFreelistPage) {
      return Corrupt(freelist_, "not a freelist page");
    }
    for (uint64_t p = freelist_; p < freelist_ + page.size() / page_size_;
         ++p) {
      if (marks[p]) return Corrupt(p, "multiple references");
      marks[p] = 1;
    }
    uint64_t count = Load<uint16_t>(page, 10);
    size_t ids = kPageHeaderSize;
    if (count == kFreelistCountOverflow) {
      count = Load<uint64_t>(page, ids);
      ids += 8;
    }
    if (count > (page.size() - ids) / 8) {
      return Corrupt(freelist_, "ids beyond the page");
    }
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t free = Load<uint64_t>(page, ids + 8 * i);
      if (free < 2 || free >= pgid_ || marks[free]) {
        return Corrupt(free, "bad or repeated free page");
      }
      marks[free] = 1;
    }
  }
  CheckState root{&marks, std::nullopt, std::nullopt};
  std::function<Status(std::string_view, std::string_view, bool)> nested =
      [&](std::string_view, std::string_view v, bool is_bucket) -> Status {
    if (!is_bucket) return Status::Ok();
    return WalkBucket(v, nested, &root, nullptr);  // fresh key order inside
  };
  RETURN_IF_ERROR(WalkTree(
      root_,
      [&](std::string_view, std::string_view v, bool is_bucket) -> Status {
        if (!is_bucket) return CorruptionError("bolt: top-level key");
        return WalkBucket(v, nested, &root, nullptr);
      },
      0, &root, nullptr));
  // Without a synced freelist (bbolt's NoFreelistSync) the free pages are
  // exactly the unreachable ones.
  for (uint64_t p = 0; p < pgid_ && freelist_ != kNoFreelist; ++p) {
    if (!marks[p]) return Corrupt(p, "unreachable and not free");
  }
  return Status::Ok();
}

}  // namespace kplane::bolt
