#include "storage/bolt/bolt_writer.h"

#include <algorithm>
#include <string_view>

#include "storage/bolt/page.h"

namespace kplane::bolt {
namespace {

using namespace internal;  // NOLINT(build/namespaces): the page layout

constexpr size_t kMaxKeySize = 32768;             // bbolt's MaxKeySize
constexpr size_t kMaxValueSize = (1u << 31) - 2;  // bbolt's MaxValueSize

struct Element {
  std::string_view key;
  std::string_view value;
  uint32_t flags = 0;
};

// Writes pages one after the other into one growing file.
class PageAllocator {
 public:
  explicit PageAllocator(uint32_t page_size) : ps_(page_size) {
    file_.resize(size_t{3} * ps_);  // meta 0, meta 1, freelist 2
  }

  // A leaf page (with overflow pages if needed) holding `elems`.
  uint64_t AddLeaf(const Element* elems, size_t n) {
    size_t size = LeafSize(elems, n);
    uint64_t id = Allocate(size);
    WriteLeaf(elems, n, kLeafPage, id, &file_, id * ps_);
    return id;
  }

  uint64_t AddBranch(const std::pair<std::string_view, uint64_t>* e, size_t n) {
    size_t size = kPageHeaderSize;
    for (size_t i = 0; i < n; ++i) size += kElementSize + e[i].first.size();
    uint64_t id = Allocate(size);
    size_t page = id * ps_;
    StoreHeader(page, id, kBranchPage, n);
    size_t data = page + kPageHeaderSize + n * kElementSize;
    for (size_t i = 0; i < n; ++i) {
      size_t el = page + kPageHeaderSize + i * kElementSize;
      internal::Store<uint32_t>(&file_, el, static_cast<uint32_t>(data - el));
      internal::Store<uint32_t>(&file_, el + 4,
                                static_cast<uint32_t>(e[i].first.size()));
      internal::Store<uint64_t>(&file_, el + 8, e[i].second);
      file_.replace(data, e[i].first.size(), e[i].first);
      data += e[i].first.size();
    }
    return id;
  }

  // The tree of `elems` (sorted): leaves, then branch levels until one page
  // remains. Returns the root page.
  uint64_t AddTree(const std::vector<Element>& elems) {
    std::vector<std::pair<std::string_view, uint64_t>> level;
    size_t start = 0, size = kPageHeaderSize;
    for (size_t i = 0; i < elems.size(); ++i) {
      size_t sz = kElementSize + elems[i].key.size() + elems[i].value.size();
      size_t count = i - start;
      if (count > 0 && (size + sz > ps_ || count == 0xFFFF)) {
        level.emplace_back(elems[start].key, AddLeaf(&elems[start], count));
        start = i;
        size = kPageHeaderSize;
      }
      size += sz;
    }
    if (elems.empty()) return AddLeaf(nullptr, 0);
    level.emplace_back(elems[start].key,
                       AddLeaf(&elems[start], elems.size() - start));
    while (level.size() > 1) {
      std::vector<std::pair<std::string_view, uint64_t>> up;
      size_t first = 0;
      size = kPageHeaderSize;
      for (size_t i = 0; i < level.size(); ++i) {
        size_t sz = kElementSize + level[i].first.size();
        size_t count = i - first;
        // At least two children per branch page, so every level shrinks.
        if (count >= 2 && (size + sz > ps_ || count == 0xFFFF)) {
          up.emplace_back(level[first].first, AddBranch(&level[first], count));
          first = i;
          size = kPageHeaderSize;
        }
        size += sz;
      }
      up.emplace_back(level[first].first,
                      AddBranch(&level[first], level.size() - first));
      level = std::move(up);
    }
    return level[0].second;
  }

  // Meta pages and the freelist; returns the file.
  std::string Finish(uint64_t root, uint64_t txid) {
    const uint64_t pgid = file_.size() / ps_;
    std::string meta(kMetaSize, '\0');
    internal::Store<uint32_t>(&meta, 0, kMagic);
    internal::Store<uint32_t>(&meta, 4, kVersion);
    internal::Store<uint32_t>(&meta, 8, ps_);
    internal::Store<uint32_t>(&meta, 12, 0);     // flags
    internal::Store<uint64_t>(&meta, 16, root);  // root bucket
    internal::Store<uint64_t>(&meta, 24, 0);     // its sequence
    internal::Store<uint64_t>(&meta, 32, 2);     // freelist page
    internal::Store<uint64_t>(&meta, 40, pgid);
    internal::Store<uint64_t>(&meta, 48, txid);
    internal::Store<uint64_t>(
        &meta, 56, Fnv1a64(std::string_view(meta).substr(0, kMetaChecksummed)));
    for (uint64_t id : {0, 1}) {
      StoreHeader(id * ps_, id, kMetaPage, 0);
      file_.replace(id * ps_ + kPageHeaderSize, kMetaSize, meta);
    }
    StoreHeader(2 * size_t{ps_}, 2, kFreelistPage, 0);
    return std::move(file_);
  }

  static size_t LeafSize(const Element* elems, size_t n) {
    size_t size = kPageHeaderSize;
    for (size_t i = 0; i < n; ++i) {
      size += kElementSize + elems[i].key.size() + elems[i].value.size();
    }
    return size;
  }

  // Writes a leaf page of `elems` at `out`[off] (which has room).
  static void WriteLeaf(const Element* elems, size_t n, uint16_t flags,
                        uint64_t id, std::string* out, size_t off) {
    internal::Store<uint64_t>(out, off, id);
    internal::Store<uint16_t>(out, off + 8, flags);
    internal::Store<uint16_t>(out, off + 10, static_cast<uint16_t>(n));
    size_t data = off + kPageHeaderSize + n * kElementSize;
    for (size_t i = 0; i < n; ++i) {
      size_t el = off + kPageHeaderSize + i * kElementSize;
      const Element& e = elems[i];
      internal::Store<uint32_t>(out, el, e.flags);
      internal::Store<uint32_t>(out, el + 4, static_cast<uint32_t>(data - el));
      internal::Store<uint32_t>(out, el + 8,
                                static_cast<uint32_t>(e.key.size()));
      internal::Store<uint32_t>(out, el + 12,
                                static_cast<uint32_t>(e.value.size()));
      out->replace(data, e.key.size(), e.key);
      data += e.key.size();
      out->replace(data, e.value.size(), e.value);
      data += e.value.size();
    }
  }

 private:
  // Reserves enough whole pages for `size` bytes; returns the first id.
  uint64_t Allocate(size_t size) {
    uint64_t id = file_.size() / ps_;
    size_t pages = (size + ps_ - 1) / ps_;
    file_.resize(file_.size() + pages * ps_);
    // overflow: the pages after the first.
    internal::Store<uint32_t>(&file_, id * ps_ + 12,
                              static_cast<uint32_t>(pages - 1));
    return id;
  }

  void StoreHeader(size_t off, uint64_t id, uint16_t flags, size_t count) {
    internal::Store<uint64_t>(&file_, off, id);
    internal::Store<uint16_t>(&file_, off + 8, flags);
    internal::Store<uint16_t>(&file_, off + 10, static_cast<uint16_t>(count));
  }

  const uint32_t ps_;
  std::string file_;
};

Status CheckKey(std::string_view key, std::string_view what) {
  if (key.empty())
    return InvalidArgumentError("bolt: empty " + std::string(what));
  if (key.size() > kMaxKeySize) {
    return InvalidArgumentError("bolt: " + std::string(what) + " too large");
  }
  return Status::Ok();
}

template <typename T, typename Key>
Status SortUnique(std::vector<T>* v, Key key, std::string_view what) {
  auto less = [&](const T& a, const T& b) { return key(a) < key(b); };
  if (!std::is_sorted(v->begin(), v->end(), less)) {
    std::sort(v->begin(), v->end(), less);
  }
  for (size_t i = 1; i < v->size(); ++i) {
    if (key((*v)[i - 1]) == key((*v)[i])) {
      return InvalidArgumentError("bolt: duplicate " + std::string(what));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> WriteBoltDb(std::vector<BoltBucket> buckets,
                                  const BoltWriteOptions& options) {
  const uint32_t ps = options.page_size;
  if (ps < 1024 || ps > 65536 || (ps & (ps - 1)) != 0) {
    return InvalidArgumentError("bolt: bad page size");
  }
  RETURN_IF_ERROR(SortUnique(
      &buckets,
      [](const BoltBucket& b) -> const std::string& { return b.name; },
      "bucket"));
  PageAllocator pages(ps);
  // The bucket headers (with inline pages) the root tree points into.
  std::vector<std::string> headers(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    BoltBucket& bucket = buckets[b];
    RETURN_IF_ERROR(CheckKey(bucket.name, "bucket name"));
    RETURN_IF_ERROR(SortUnique(
        &bucket.items,
        [](const std::pair<std::string, std::string>& kv)
            -> const std::string& { return kv.first; },
        "key"));
    std::vector<Element> elems;
    elems.reserve(bucket.items.size());
    for (const auto& [k, v] : bucket.items) {
      RETURN_IF_ERROR(CheckKey(k, "key"));
      if (v.size() > kMaxValueSize) {
        return InvalidArgumentError("bolt: value too large");
      }
      elems.push_back({k, v, 0});
    }
    std::string& h = headers[b];
    size_t leaf = PageAllocator::LeafSize(elems.data(), elems.size());
    if (leaf <= ps / 4) {                        // bbolt's inline bucket rule
      h.assign(kBucketHeaderSize + leaf, '\0');  // root 0: inline
      PageAllocator::WriteLeaf(elems.data(), elems.size(), kLeafPage, 0, &h,
                               kBucketHeaderSize);
    } else {
      h.assign(kBucketHeaderSize, '\0');
      internal::Store<uint64_t>(&h, 0, pages.AddTree(elems));
    }
  }
  std::vector<Element> root;
  for (size_t b = 0; b < buckets.size(); ++b) {
    root.push_back({buckets[b].name, headers[b], kBucketLeafFlag});
  }
  uint64_t root_page = pages.AddTree(root);
  return pages.Finish(root_page, options.txid);
}

}  // namespace kplane::bolt
