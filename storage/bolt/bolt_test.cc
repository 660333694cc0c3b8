#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "storage/bolt/bolt_reader.h"
#include "storage/bolt/bolt_writer.h"
#include "storage/bolt/etcd_backend.h"
#include "storage/bolt/page.h"

namespace kplane::bolt {
namespace {

using Contents = std::map<std::string, std::map<std::string, std::string>>;

// Everything a reader sees: bucket -> key -> value (one read, its walks
// sharing one visited set).
Contents ReadAll(const BoltReader& db) {
  Contents out;
  BoltReader::Visited seen;
  Status st = db.ForEachBucket(
      [&](std::string_view name, std::string_view header) {
        auto& bucket = out[std::string(name)];
        return db.ForEachInBucket(
            header,
            [&](std::string_view k, std::string_view v, bool) {
              bucket[std::string(k)] = std::string(v);
              return Status::Ok();
            },
            &seen);
      },
      &seen);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

std::vector<BoltBucket> ToBuckets(const Contents& c) {
  std::vector<BoltBucket> b;
  for (const auto& [name, items] : c) {
    b.push_back({name, {items.begin(), items.end()}});
  }
  return b;
}

std::string Hex(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h.push_back(kHex[c >> 4]);
    h.push_back(kHex[c & 15]);
  }
  return h;
}

// Levels of the tree of bucket `bucket` (1: one leaf), following first
// children down from its root page.
int Depth(const BoltReader& db, std::string_view file,
          std::string_view bucket) {
  using namespace internal;  // NOLINT(build/namespaces)
  uint64_t root = 0;
  Status st =
      db.ForEachBucket([&](std::string_view name, std::string_view header) {
        if (name == bucket) root = Load<uint64_t>(header, 0);
        return Status::Ok();
      });
  EXPECT_TRUE(st.ok());
  if (root == 0) return 0;  // inline
  int depth = 1;
  size_t page = root * db.page_size();
  while (Load<uint16_t>(file, page + 8) & kBranchPage) {
    ++depth;
    page = Load<uint64_t>(file, page + kPageHeaderSize + 8) * db.page_size();
  }
  return depth;
}

// Rewrites both meta pages with `pgid` (and a valid checksum).
void SetPgid(std::string* file, uint64_t pgid) {
  using namespace internal;  // NOLINT(build/namespaces)
  for (size_t m : {kPageHeaderSize, 4096 + kPageHeaderSize}) {
    Store<uint64_t>(file, m + 40, pgid);
    Store<uint64_t>(
        file, m + 56,
        Fnv1a64(std::string_view(*file).substr(m, kMetaChecksummed)));
  }
}

// A hand-built bbolt file of `pgid` pages of 512 bytes: both meta pages
// (root bucket at page 3, freelist at page 2, txids 0 and 1) and an empty
// freelist; the caller writes pages 3 and up with PageHeader and Store.
constexpr size_t kTinyPs = 512;

void PageHeader(std::string* f, uint64_t id, uint16_t flags, uint16_t count) {
  using namespace internal;  // NOLINT(build/namespaces)
  Store<uint64_t>(f, id * kTinyPs, id);
  Store<uint16_t>(f, id * kTinyPs + 8, flags);
  Store<uint16_t>(f, id * kTinyPs + 10, count);
}

std::string TinyDb(uint64_t pgid) {
  using namespace internal;  // NOLINT(build/namespaces)
  std::string f(pgid * kTinyPs, '\0');
  for (uint64_t m : {0, 1}) {
    PageHeader(&f, m, kMetaPage, 0);
    const size_t o = m * kTinyPs + kPageHeaderSize;
    Store<uint32_t>(&f, o, kMagic);
    Store<uint32_t>(&f, o + 4, kVersion);
    Store<uint32_t>(&f, o + 8, kTinyPs);
    Store<uint64_t>(&f, o + 16, 3);  // root bucket's page
    Store<uint64_t>(&f, o + 32, 2);  // freelist
    Store<uint64_t>(&f, o + 40, pgid);
    Store<uint64_t>(&f, o + 48, m);  // txid
    Store<uint64_t>(&f, o + 56,
                    Fnv1a64(std::string_view(f).substr(o, kMetaChecksummed)));
  }
  PageHeader(&f, 2, kFreelistPage, 0);
  return f;
}

// Writes leaf page `id` holding `items` (key, value, is_bucket) in order.
void LeafPage(
    std::string* f, uint64_t id,
    const std::vector<std::tuple<std::string, std::string, bool>>& items) {
  using namespace internal;  // NOLINT(build/namespaces)
  PageHeader(f, id, kLeafPage, static_cast<uint16_t>(items.size()));
  size_t data = id * kTinyPs + kPageHeaderSize + items.size() * kElementSize;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& [k, v, bucket] = items[i];
    const size_t e = id * kTinyPs + kPageHeaderSize + i * kElementSize;
    Store<uint32_t>(f, e, bucket ? kBucketLeafFlag : 0);
    Store<uint32_t>(f, e + 4, static_cast<uint32_t>(data - e));
    Store<uint32_t>(f, e + 8, static_cast<uint32_t>(k.size()));
    Store<uint32_t>(f, e + 12, static_cast<uint32_t>(v.size()));
    f->replace(data, k.size() + v.size(), k + v);
    data += k.size() + v.size();
  }
  EXPECT_LE(data, (id + 1) * kTinyPs);
}

// A bucket header (bbolt's bucket struct) for a bucket rooted at `root`.
std::string BucketHeader(uint64_t root) {
  using namespace internal;  // NOLINT(build/namespaces)
  std::string h(kBucketHeaderSize, '\0');
  Store<uint64_t>(&h, 0, root);
  return h;
}

// A bbolt file whose one bucket "b" is a chain of `levels` branch pages,
// each with two elements that both lead to the next page, above one leaf
// holding "a" -> "v": 2^levels paths to that leaf.
std::string SharedChainDb(int levels) {
  using namespace internal;  // NOLINT(build/namespaces)
  const uint64_t leaf = 4 + levels;
  std::string f = TinyDb(leaf + 1);
  LeafPage(&f, 3, {{"b", BucketHeader(4), true}});
  for (uint64_t p = 4; p < leaf; ++p) {
    PageHeader(&f, p, kBranchPage, 2);
    for (size_t i = 0; i < 2; ++i) {  // keys "a", "b" after both elements
      const size_t e = p * kTinyPs + kPageHeaderSize + i * kElementSize;
      Store<uint32_t>(&f, e, (2 - i) * kElementSize + i);
      Store<uint32_t>(&f, e + 4, 1);
      Store<uint64_t>(&f, e + 8, p + 1);
      f[p * kTinyPs + kPageHeaderSize + 2 * kElementSize + i] =
          static_cast<char>('a' + i);
    }
  }
  LeafPage(&f, leaf, {{"a", "v", false}});
  return f;
}

// A bbolt file whose root leaf (page 3) holds `buckets` entries named "key"
// that all name page 4 as their bucket's root: a leaf of `elements`
// elements that all point at one stored etcd revision key (element offsets
// are relative) with an empty (valid) mvccpb.KeyValue. Read one bucket at
// a time, every walk is linear, yet the file costs buckets x elements
// visits: about 2 MiB of it (a 64 KiB root page, pages of 65,535
// elements) made 4e9 versions.
std::string SharedBucketRootDb(int buckets, int elements) {
  using namespace internal;  // NOLINT(build/namespaces)
  std::string f = TinyDb(5);
  LeafPage(&f, 3,
           std::vector<std::tuple<std::string, std::string, bool>>(
               buckets, {"key", BucketHeader(4), true}));
  std::string rev(17, '\0');  // main 2, sub 0: "\0..\2_\0..\0"
  rev[7] = 2;
  rev[8] = '_';
  PageHeader(&f, 4, kLeafPage, static_cast<uint16_t>(elements));
  const size_t data = 4 * kTinyPs + kPageHeaderSize + elements * kElementSize;
  for (int i = 0; i < elements; ++i) {
    const size_t e = 4 * kTinyPs + kPageHeaderSize + i * kElementSize;
    Store<uint32_t>(&f, e + 4, static_cast<uint32_t>(data - e));
    Store<uint32_t>(&f, e + 8, static_cast<uint32_t>(rev.size()));
  }
  f.replace(data, rev.size(), rev);
  return f;
}

TEST(BoltWriter, EmptyDatabase) {
  auto db = WriteBoltDb({});
  ASSERT_TRUE(db.ok()) << db.status();
  // meta, meta, freelist, root leaf
  EXPECT_EQ(db->size(), 4u * 4096);
  auto r = BoltReader::Open(*db);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->page_count(), 4u);
  EXPECT_EQ(r->page_size(), 4096u);
  EXPECT_TRUE(r->Check().ok()) << r->Check();
  EXPECT_TRUE(ReadAll(*r).empty());
}

TEST(BoltWriter, SmallBucketsAreInlineAndReadBack) {
  Contents c = {
      {"b", {{"k1", "v1"}, {"k2", ""}}}, {"a", {}}, {"c", {{"x", "y"}}}};
  auto db = WriteBoltDb(ToBuckets(c));
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(db->size(), 4u * 4096);  // all three inline in the root leaf
  auto r = BoltReader::Open(*db);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->Check().ok()) << r->Check();
  EXPECT_EQ(ReadAll(*r), c);
}

// Many keys: leaves, two branch levels, overflow pages for a big value and
// the largest key bbolt allows; read back whole, structure checked, at
// page sizes 4 KiB and 1 KiB.
TEST(BoltWriter, MultiLevelTreesWithOverflow) {
  for (uint32_t ps : {4096u, 1024u}) {
    Contents c;
    for (int i = 0; i < 20000; ++i) {
      char k[32];
      std::snprintf(k, sizeof(k), "key/%08d", i * 7);
      c["big"][k] = std::string(i % 97, static_cast<char>('a' + i % 26));
    }
    c["big"]["key/huge"] = std::string(3 * ps + 17, 'h');
    c["big"][std::string(32768, 'z')] = "max key";
    for (int i = 0; i < 300; ++i) c["mid"]["m" + std::to_string(i)] = "v";
    c["small"]["s"] = "t";
    auto db = WriteBoltDb(ToBuckets(c), {.page_size = ps});
    ASSERT_TRUE(db.ok()) << db.status();
    auto r = BoltReader::Open(*db);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(db->size(), r->page_count() * ps);
    EXPECT_GT(r->page_count(), 400u);
    Status check = r->Check();
    EXPECT_TRUE(check.ok()) << check;
    EXPECT_EQ(ReadAll(*r), c) << "page size " << ps;
    EXPECT_GE(Depth(*r, *db, "big"), 3) << "page size " << ps;
    EXPECT_EQ(Depth(*r, *db, "mid"), 2);
    EXPECT_EQ(Depth(*r, *db, "small"), 0);
  }
}

TEST(BoltWriter, UnsortedInputIsSortedDuplicatesRefused) {
  std::vector<BoltBucket> b = {{"z", {{"b", "2"}, {"a", "1"}}}, {"y", {}}};
  auto db = WriteBoltDb(b);
  ASSERT_TRUE(db.ok());
  auto r = BoltReader::Open(*db);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadAll(*r),
            (Contents{{"y", {}}, {"z", {{"a", "1"}, {"b", "2"}}}}));

  EXPECT_EQ(WriteBoltDb({{"x", {{"a", "1"}, {"a", "2"}}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteBoltDb({{"x", {}}, {"x", {}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteBoltDb({{"x", {{"", "1"}}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteBoltDb({{"", {}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      WriteBoltDb({{"x", {{std::string(32769, 'k'), "1"}}}}).status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteBoltDb({}, {.page_size = 3000}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(BoltReader, DetectsDamage) {
  Contents c;
  for (int i = 0; i < 2000; ++i) c["b"]["k" + std::to_string(i)] = "value";
  auto db = WriteBoltDb(ToBuckets(c));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(BoltReader::Open(*db)->Check().ok());

  // One broken meta page: the other is used.
  std::string one = *db;
  one[16 + 20] ^= 1;  // inside meta 0's checksummed bytes
  auto r = BoltReader::Open(one);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ReadAll(*r), c);
  // Both broken: not a database.
  one[4096 + 16 + 20] ^= 1;
  EXPECT_EQ(BoltReader::Open(one).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BoltReader::Open("junk").status().code(),
            StatusCode::kInvalidArgument);

  // A page whose header names another page.
  std::string moved = *db;
  moved[3 * 4096] ^= 1;  // page 3 is the first leaf of bucket "b"
  r = BoltReader::Open(moved);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Check().code(), StatusCode::kCorruption);
  // A truncated file.
  r = BoltReader::Open(std::string_view(*db).substr(0, db->size() - 4096));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Check().code(), StatusCode::kCorruption);
  // Keys out of order in a leaf: the second key of page 3 ("k1") made
  // "k/", below the first ("k0").
  {
    using namespace internal;  // NOLINT(build/namespaces)
    std::string order = *db;
    size_t el = 3 * 4096 + kPageHeaderSize + kElementSize;
    size_t key = el + Load<uint32_t>(order, el + 4);
    ASSERT_EQ(order.substr(key, 2), "k1");
    order[key + 1] = '/';
    r = BoltReader::Open(order);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->Check().code(), StatusCode::kCorruption);
  }
  // A page that nothing references and the freelist does not list.
  {
    std::string extra = *db + std::string(4096, '\0');
    uint64_t last = extra.size() / 4096 - 1;
    std::memcpy(extra.data() + last * 4096, &last, 8);
    SetPgid(&extra, last + 1);
    r = BoltReader::Open(extra);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ReadAll(*r), c);
    Status st = r->Check();
    EXPECT_EQ(st.code(), StatusCode::kCorruption);
    EXPECT_NE(st.ToString().find("unreachable"), std::string::npos) << st;
  }
}

// A meta page with a valid checksum whose pgid and root are far beyond
// the file: root * page_size wraps to just below the data, so an offset
// check after the multiplication passes. Walks and Check must refuse the
// page (kCorruption), neither reading outside the data nor throwing nor
// allocating pgid marks. The file sits 4096 bytes into `buf` so that a
// read before it stays inside our allocation; that page before it looks
// like the root leaf, so only the bounds check can refuse it.
TEST(BoltReader, PageIdsBeyondTheFileAreRefusedWithoutWrapping) {
  using namespace internal;  // NOLINT(build/namespaces)
  auto db = WriteBoltDb({});
  ASSERT_TRUE(db.ok()) << db.status();
  std::string file = *db;
  constexpr uint64_t kRoot = (uint64_t{1} << 52) - 1;
  for (size_t m : {kPageHeaderSize, 4096 + kPageHeaderSize}) {
    Store<uint64_t>(&file, m + 16, kRoot);
  }
  SetPgid(&file, uint64_t{1} << 52);
  std::string buf = std::string(4096, '\0') + file;
  Store<uint64_t>(&buf, 0, kRoot);
  Store<uint16_t>(&buf, 8, kLeafPage);
  const std::string_view data = std::string_view(buf).substr(4096);

  auto r = BoltReader::Open(data);
  ASSERT_TRUE(r.ok()) << r.status();
  Status st;
  EXPECT_NO_THROW(st = r->ForEachRoot([](std::string_view, std::string_view,
                                         bool) { return Status::Ok(); }));
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.ToString().find("page " + std::to_string(kRoot)),
            std::string::npos)
      << st;
  std::string header(kBucketHeaderSize, '\0');
  Store<uint64_t>(&header, 0, kRoot);
  EXPECT_NO_THROW(
      st = r->ForEachInBucket(header, [](std::string_view, std::string_view,
                                         bool) { return Status::Ok(); }));
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  StatusOr<EtcdBackend> backend = InternalError("not read");
  EXPECT_NO_THROW(backend = ReadEtcdBackend(data));
  EXPECT_EQ(backend.status().code(), StatusCode::kCorruption)
      << backend.status();
  // Check refuses the high-water mark before sizing its page marks by it.
  EXPECT_NO_THROW(st = r->Check());
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.ToString().find("16384 bytes"), std::string::npos) << st;
}

// Shared children repeated over levels: without a bound a walk of this
// 12.5 KB file visits its one leaf 2^20 times (2^40 for 40 levels: it
// never ends). The walk stops where the leaf is reached the second time.
TEST(BoltReader, SharedChildrenDoNotMakeWalksExponential) {
  const std::string file = SharedChainDb(20);
  auto r = BoltReader::Open(file);
  ASSERT_TRUE(r.ok()) << r.status();
  int visited = 0;
  Status st =
      r->ForEachBucket([&](std::string_view name, std::string_view header) {
        EXPECT_EQ(name, "b");
        return r->ForEachInBucket(
            header, [&](std::string_view k, std::string_view v, bool) {
              EXPECT_EQ(k, "a");
              EXPECT_EQ(v, "v");
              ++visited;
              return Status::Ok();
            });
      });
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.ToString().find("page 24: reached twice"), std::string::npos)
      << st;
  EXPECT_EQ(visited, 1);
  EXPECT_EQ(r->Check().code(), StatusCode::kCorruption);
}

// Walks that share one Visited refuse a page reached twice across them:
// bucket headers naming one root page, or the root's own page. Each walk
// alone is linear; without the shared set N headers naming one page of M
// elements cost N x M visits.
TEST(BoltReader, OneVisitedSetSpansTheWalksOfARead) {
  const std::string file = SharedBucketRootDb(3, 4);
  auto r = BoltReader::Open(file);
  ASSERT_TRUE(r.ok()) << r.status();
  auto read = [&](BoltReader::Visited* seen, int* visited) {
    return r->ForEachRoot(
        [&](std::string_view, std::string_view header, bool) {
          return r->ForEachInBucket(
              header,
              [&](std::string_view, std::string_view, bool) {
                ++*visited;
                return Status::Ok();
              },
              seen);
        },
        seen);
  };
  int visited = 0;
  BoltReader::Visited seen;
  Status st = read(&seen, &visited);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.ToString().find("page 4: reached twice"), std::string::npos)
      << st;
  EXPECT_EQ(visited, 4);
  visited = 0;
  EXPECT_TRUE(read(nullptr, &visited).ok());  // a set per walk
  EXPECT_EQ(visited, 12);

  // A bucket rooted at the root bucket's own page.
  std::string self = TinyDb(4);
  LeafPage(&self, 3, {{"b", BucketHeader(3), true}});
  r = BoltReader::Open(self);
  ASSERT_TRUE(r.ok()) << r.status();
  visited = 0;
  BoltReader::Visited seen_self;
  st = read(&seen_self, &visited);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.ToString().find("page 3: reached twice"), std::string::npos)
      << st;
  EXPECT_EQ(visited, 0);
}

TEST(EtcdBackend, RecordsAsEtcdWritesThem) {
  // Bytes taken from a real etcd 3.4.23 snapshot (put foo v1 at 2, put bar
  // b at 3, delete bar at 5, lease 6978a238b4614909 TTL 100).
  EtcdBackend c;
  c.consistent_index = 10;
  mvccpb::KeyValue foo;
  foo.set_key("foo");
  foo.set_create_revision(2);
  foo.set_mod_revision(2);
  foo.set_version(1);
  foo.set_value("v1");
  c.versions.push_back({2, 0, false, foo});
  mvccpb::KeyValue bar;
  bar.set_key("bar");
  c.versions.push_back({5, 0, true, bar});
  c.leases.push_back({0x6978a238b4614909, 100});
  etcdserverpb::Member m;
  m.set_id(2809699647161690488ULL);
  m.set_name("e1");
  m.add_peerurls("http://127.0.0.1:44229");
  m.add_clienturls("http://127.0.0.1:43723");
  c.members.push_back(m);
  c.removed_members.push_back(0xabc);
  c.scheduled_compact_revision = 4;
  c.finished_compact_revision = 4;
  auto db = WriteEtcdBackend(std::move(c));
  ASSERT_TRUE(db.ok()) << db.status();
  auto r = BoltReader::Open(*db);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->Check().ok()) << r->Check();
  Contents got = ReadAll(*r);
  std::vector<std::string> names;
  for (const auto& [name, items] : got) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "alarm", "auth", "authRoles", "authUsers", "cluster",
                       "key", "lease", "members", "members_removed", "meta"}));
  std::map<std::string, std::string> key;
  for (const auto& [k, v] : got["key"]) key[Hex(k)] = Hex(v);
  EXPECT_EQ(key, (std::map<std::string, std::string>{
                     {"00000000000000025f0000000000000000",
                      "0a03666f6f1002180220012a027631"},
                     {"00000000000000055f000000000000000074", "0a03626172"}}));
  EXPECT_EQ(
      Hex(got["lease"][std::string("\x69\x78\xa2\x38\xb4\x61\x49\x09", 8)]),
      "08899285a38bc7a8bc691064");
  EXPECT_EQ(got["members"]["26fe0ef1529ce978"],
            "{\"id\":2809699647161690488,\"peerURLs\":[\"http://"
            "127.0.0.1:44229\"],\"name\":\"e1\",\"clientURLs\":[\"http://"
            "127.0.0.1:43723\"]}");
  EXPECT_EQ(got["members_removed"]["abc"], "removed");
  EXPECT_EQ(got["cluster"]["clusterVersion"], "3.4.0");
  EXPECT_EQ(Hex(got["auth"]["authRevision"]), "0000000000000001");
  EXPECT_EQ(Hex(got["meta"]["consistent_index"]), "000000000000000a");
  EXPECT_EQ(Hex(got["meta"]["scheduledCompactRev"]),
            "00000000000000045f0000000000000000");
  EXPECT_EQ(Hex(got["meta"]["finishedCompactRev"]),
            "00000000000000045f0000000000000000");
}

TEST(EtcdBackend, AuthBuckets) {
  EtcdBackend c;
  c.auth_revision = 7;
  c.auth_enabled_key = true;
  c.auth_enabled = true;
  authpb::User u;
  u.set_name("alice");
  u.set_password("pbkdf2-sha256$1$c2FsdA==$aGFzaA==");
  u.add_roles("app");
  c.auth_users.push_back(u);
  authpb::Role r;
  r.set_name("app");
  authpb::Permission* p = r.add_keypermission();
  p->set_permtype(authpb::Permission::READWRITE);
  p->set_key("/app/");
  p->set_range_end("/app0");
  c.auth_roles.push_back(r);
  auto db = WriteEtcdBackend(std::move(c));
  ASSERT_TRUE(db.ok()) << db.status();
  auto reader = BoltReader::Open(*db);
  ASSERT_TRUE(reader.ok());
  Contents got = ReadAll(*reader);
  EXPECT_EQ(Hex(got["auth"]["authRevision"]), "0000000000000007");
  EXPECT_EQ(Hex(got["auth"]["authEnabled"]), "01");
  EXPECT_EQ(got["authUsers"]["alice"], u.SerializeAsString());
  EXPECT_EQ(got["authRoles"]["app"], r.SerializeAsString());
  // etcd's authpb wire form: name 1, keyPermission 2 {permType 1, key 2,
  // range_end 3}.
  EXPECT_EQ(Hex(got["authRoles"]["app"]),
            "0a03617070121008021205"
            "2f6170702f1a052f61707030");
}

TEST(EtcdBackend, MemberJsonEscapesAsGo) {
  etcdserverpb::Member m;
  m.set_id(1);
  m.set_islearner(true);
  m.set_name("a\"<b>&\n");
  EXPECT_EQ(EtcdMemberJson(m),
            "{\"id\":1,\"peerURLs\":null,\"isLearner\":true,\"name\":"
            "\"a\\\"\\u003cb\\u003e\\u0026\\n\"}");
}

// ReadEtcdBackend gives back every record WriteEtcdBackend wrote.
TEST(EtcdBackend, ReadIsTheInverseOfWrite) {
  EtcdBackend c;
  c.consistent_index = 10;
  c.scheduled_compact_revision = 4;
  c.finished_compact_revision = 3;
  mvccpb::KeyValue foo;
  foo.set_key("foo");
  foo.set_create_revision(2);
  foo.set_mod_revision(6);
  foo.set_version(3);
  foo.set_value(std::string("v\0\xff", 3));
  foo.set_lease(0x6978a238b4614909);
  c.versions.push_back({6, 1, false, foo});
  mvccpb::KeyValue bar;
  bar.set_key("bar");
  c.versions.push_back({5, 0, true, bar});
  c.leases.push_back({0x6978a238b4614909, 100});
  c.leases.push_back({1, 0});
  etcdserverpb::Member m;
  m.set_id(0xfedcba9876543210ULL);  // above int64's range
  m.set_name("e1");
  m.set_islearner(true);
  m.add_peerurls("http://127.0.0.1:2380");
  m.add_peerurls("http://10.0.0.1:2380");
  c.members.push_back(m);
  c.removed_members.push_back(0xabc);
  etcdserverpb::AlarmMember a;
  a.set_memberid(3);
  a.set_alarm(etcdserverpb::NOSPACE);
  c.alarms.push_back(a);
  c.auth_revision = 7;
  c.auth_enabled_key = true;
  c.auth_enabled = true;
  authpb::User u;
  u.set_name("alice");
  u.add_roles("app");
  c.auth_users.push_back(u);
  authpb::Role r;
  r.set_name("app");
  c.auth_roles.push_back(r);
  const EtcdBackend want = c;

  auto db = WriteEtcdBackend(std::move(c));
  ASSERT_TRUE(db.ok()) << db.status();
  auto got = ReadEtcdBackend(*db);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->consistent_index, 10u);
  EXPECT_EQ(got->scheduled_compact_revision, 4);
  EXPECT_EQ(got->finished_compact_revision, 3);
  ASSERT_EQ(got->versions.size(), 2u);  // in key (revision) order
  EXPECT_EQ(got->versions[0].main, 5);
  EXPECT_TRUE(got->versions[0].tombstone);
  EXPECT_EQ(got->versions[0].kv.ShortDebugString(), bar.ShortDebugString());
  EXPECT_EQ(got->versions[1].main, 6);
  EXPECT_EQ(got->versions[1].sub, 1);
  EXPECT_FALSE(got->versions[1].tombstone);
  EXPECT_EQ(got->versions[1].kv.SerializeAsString(), foo.SerializeAsString());
  ASSERT_EQ(got->leases.size(), 2u);  // by id
  EXPECT_EQ(got->leases[0].id, 1);
  EXPECT_EQ(got->leases[0].ttl, 0);
  EXPECT_EQ(got->leases[1].id, 0x6978a238b4614909);
  EXPECT_EQ(got->leases[1].ttl, 100);
  ASSERT_EQ(got->members.size(), 1u);
  EXPECT_EQ(got->members[0].ShortDebugString(), m.ShortDebugString());
  EXPECT_EQ(got->removed_members, want.removed_members);
  ASSERT_EQ(got->alarms.size(), 1u);
  EXPECT_EQ(got->alarms[0].ShortDebugString(), a.ShortDebugString());
  EXPECT_EQ(got->cluster_version, "3.4.0");
  EXPECT_EQ(got->auth_revision, 7u);
  EXPECT_TRUE(got->auth_enabled_key);
  EXPECT_TRUE(got->auth_enabled);
  ASSERT_EQ(got->auth_users.size(), 1u);
  EXPECT_EQ(got->auth_users[0].ShortDebugString(), u.ShortDebugString());
  ASSERT_EQ(got->auth_roles.size(), 1u);
  EXPECT_EQ(got->auth_roles[0].ShortDebugString(), r.ShortDebugString());
}

// Records that are not etcd's are refused, naming bucket and key; a file
// that is no bbolt database gets etcdctl's "invalid database".
TEST(EtcdBackend, ReadRefusesMalformedRecords) {
  struct Case {
    std::string bucket, key, value, error;
  };
  const std::vector<Case> cases = {
      {"key", "short", "", "bucket key, key \"short\": not a revision"},
      {"key", EtcdRevisionKey(2, 0, false), "\xff", "no mvccpb.KeyValue"},
      {"meta", "consistent_index", "1234", "not 8 bytes"},
      {"lease", std::string(8, '\1'), "\x08", "no leasepb.Lease"},
      {"members", "1", "{\"id\":\"x\"}", "not etcd's JSON"},
      {"members_removed", "xyz", "removed", "not a hex member id"},
  };
  for (const Case& c : cases) {
    std::vector<BoltBucket> b = {{c.bucket, {{c.key, c.value}}}};
    auto db = WriteBoltDb(std::move(b));
    ASSERT_TRUE(db.ok()) << db.status();
    auto got = ReadEtcdBackend(*db);
    ASSERT_FALSE(got.ok()) << c.bucket << "/" << c.key;
    EXPECT_EQ(got.status().code(), StatusCode::kCorruption);
    EXPECT_NE(got.status().message().find(c.error), std::string::npos)
        << got.status();
  }
  auto junk = ReadEtcdBackend(std::string(8192, 'x'));
  EXPECT_EQ(junk.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(junk.status().message().find("invalid database"), std::string::npos)
      << junk.status();
}

// A branch page whose elements share a child: repeated over a few levels
// that makes a walk exponential in the file's size, so a walk refuses a
// page it reaches twice. Here the "key" bucket's root branch points its
// second element at its first element's leaf.
TEST(EtcdBackend, ReadRefusesAPageReachedTwice) {
  using namespace internal;  // NOLINT(build/namespaces)
  EtcdBackend c;
  for (int i = 0; i < 200; ++i) {
    mvccpb::KeyValue kv;
    kv.set_key("key" + std::to_string(i));
    kv.set_create_revision(i + 2);
    kv.set_mod_revision(i + 2);
    kv.set_version(1);
    kv.set_value("value");
    c.versions.push_back({i + 2, 0, false, kv});
  }
  auto db = WriteEtcdBackend(std::move(c));
  ASSERT_TRUE(db.ok()) << db.status();
  auto r = BoltReader::Open(*db);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(Depth(*r, *db, "key"), 2);
  std::string key_header;
  ASSERT_TRUE(
      r->ForEachBucket([&](std::string_view name, std::string_view header) {
         if (name == "key") key_header = std::string(header);
         return Status::Ok();
       }).ok());
  const size_t root = Load<uint64_t>(key_header, 0) * r->page_size();
  ASSERT_GE(Load<uint16_t>(*db, root + 10), 2);
  const uint64_t child = Load<uint64_t>(*db, root + kPageHeaderSize + 8);
  std::string shared = *db;
  Store<uint64_t>(&shared, root + kPageHeaderSize + kElementSize + 8, child);

  auto got = ReadEtcdBackend(shared);
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption)
      << (got.ok() ? std::to_string(got->versions.size()) + " versions"
                   : got.status().ToString());
  EXPECT_NE(got.status().ToString().find("page " + std::to_string(child)),
            std::string::npos)
      << got.status();
  r = BoltReader::Open(shared);
  ASSERT_TRUE(r.ok()) << r.status();
  int visited = 0;
  Status st = r->ForEachInBucket(key_header,
                                 [&](std::string_view, std::string_view, bool) {
                                   ++visited;
                                   return Status::Ok();
                                 });
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << visited << " elements";
  EXPECT_EQ(r->Check().code(), StatusCode::kCorruption);
}

// Bucket entries that share a bucket root page: each bucket's walk is
// linear, but N entries naming one page of M elements cost N x M visits
// unless one read refuses a page it reaches twice across its walks.
TEST(EtcdBackend, ReadRefusesBucketsSharingARootPage) {
  const std::string file = SharedBucketRootDb(3, 4);
  // Each bucket alone is well formed: a walk of it sees 4 versions.
  auto r = BoltReader::Open(file);
  ASSERT_TRUE(r.ok()) << r.status();
  int visited = 0;
  Status st = r->ForEachInBucket(BucketHeader(4),
                                 [&](std::string_view, std::string_view, bool) {
                                   ++visited;
                                   return Status::Ok();
                                 });
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(visited, 4);

  auto got = ReadEtcdBackend(file);
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption)
      << (got.ok() ? std::to_string(got->versions.size()) + " versions"
                   : got.status().ToString());
  EXPECT_NE(got.status().ToString().find("page 4: reached twice"),
            std::string::npos)
      << got.status();
  EXPECT_EQ(r->Check().code(), StatusCode::kCorruption);
}

TEST(EtcdBackend, Sha256) {
  EXPECT_EQ(Hex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace kplane::bolt
