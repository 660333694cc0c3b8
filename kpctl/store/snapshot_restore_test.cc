// `kpctl store snapshot restore` of etcd (bbolt) snapshots: one written by
// the real etcd 3.4 (testdata/etcd/make_snapshot.sh) and one kplane wrote;
// damaged, truncated and foreign files are refused and leave nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kpctl/store/snapshot_file.h"
#include "schemas/storage.pb.h"
#include "storage/bolt/etcd_backend.h"
#include "storage/mvcc/store.h"
#include "testdata/etcd/fixture_data.h"

namespace kplane::kpctl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEtcdSnapshot = KPLANE_ETCD_TESTDATA "/etcd34.snapshot";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

class SnapshotRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kpctl-restore-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  RestoreOptions Options() {
    RestoreOptions o;
    o.data_dir = dir_ + "/restored";
    o.name = "n1";
    o.initial_cluster = "n1=http://127.0.0.1:2380";
    o.initial_advertise_peer_urls = "http://127.0.0.1:2380";
    return o;
  }
  // The restore failed and left neither the data dir nor its staging copy.
  void ExpectNothingWritten() {
    EXPECT_FALSE(fs::exists(dir_ + "/restored"));
    EXPECT_FALSE(fs::exists(dir_ + "/restored.part"));
  }
  std::unique_ptr<mvcc::Store> OpenRestored() {
    mvcc::Options o;
    o.dir = dir_ + "/restored/member/db";
    auto s = mvcc::Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static std::string Value(mvcc::Store* s, const std::string& key,
                           int64_t rev = 0) {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    r.set_revision(rev);
    auto got = s->Range(r);
    if (!got.ok()) return "<" + got.status().ToString() + ">";
    return got->kvs_size() == 0 ? "<none>" : got->kvs(0).value();
  }

  std::string dir_;
};

// The real etcd's file: the same history (every kept revision, the
// compaction), the lease with its key, and the new membership.
TEST_F(SnapshotRestoreTest, EtcdSnapshotKeepsHistoryLeasesAndCompaction) {
  ASSERT_TRUE(fs::exists(kEtcdSnapshot)) << kEtcdSnapshot;
  Status st = RestoreSnapshot(kEtcdSnapshot, Options());
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_FALSE(fs::exists(dir_ + "/restored.part"));
  auto s = OpenRestored();
  ASSERT_NE(s, nullptr);
  ASSERT_NO_FATAL_FAILURE(testdata::ExpectEtcdFixtureData(s.get()));
  EXPECT_EQ(s->FinishedCompactRevision(), 4);
  EXPECT_EQ(Value(s.get(), "foo", 6), "v2");
  EXPECT_EQ(Value(s.get(), "bar", 4), "b");
  EXPECT_EQ(Value(s.get(), "bar"), "<none>");
  EXPECT_EQ(Value(s.get(), "zed"), "z");
  EXPECT_EQ(Value(s.get(), "foo", 3).find("<Compacted"), 0u)
      << Value(s.get(), "foo", 3);
  s->Close();

  storagepb::ClusterRecord record;
  ASSERT_TRUE(
      record.ParseFromString(ReadFile(dir_ + "/restored/member/cluster.pb")));
  ASSERT_EQ(record.members_size(), 1);
  EXPECT_EQ(record.members(0).name(), "n1");
  EXPECT_EQ(record.members(0).peer_urls(0), "http://127.0.0.1:2380");

  // A second restore into the same dir is refused.
  EXPECT_EQ(RestoreSnapshot(kEtcdSnapshot, Options()).code(),
            StatusCode::kAlreadyExists);
}

// A bbolt snapshot kplane wrote (what etcdctl snapshot save gets from
// kplane store), with users and roles, restores too.
TEST_F(SnapshotRestoreTest, KplaneWrittenEtcdSnapshotKeepsAuth) {
  bolt::EtcdBackend b;
  b.consistent_index = 42;
  mvccpb::KeyValue kv;
  kv.set_key("a");
  kv.set_create_revision(2);
  kv.set_mod_revision(2);
  kv.set_version(1);
  kv.set_value("1");
  b.versions.push_back({2, 0, false, kv});
  authpb::User u;
  u.set_name("alice");
  u.set_password("pbkdf2-sha256$1$c2FsdA==$aGFzaA==");
  b.auth_users.push_back(u);
  b.auth_revision = 3;
  b.auth_enabled_key = true;
  b.auth_enabled = true;
  auto db = bolt::WriteEtcdBackend(b);
  ASSERT_TRUE(db.ok()) << db.status();
  const std::string file = dir_ + "/kplane.db";
  WriteFile(file, *db + bolt::Sha256(*db));
  Status st = RestoreSnapshot(file, Options());
  ASSERT_TRUE(st.ok()) << st;
  auto s = OpenRestored();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->CurrentRevision(), 2);
  EXPECT_EQ(Value(s.get(), "a"), "1");
  s->Close();
  storagepb::ClusterRecord record;
  ASSERT_TRUE(
      record.ParseFromString(ReadFile(dir_ + "/restored/member/cluster.pb")));
  EXPECT_TRUE(record.auth().enabled());
  EXPECT_EQ(record.auth().revision(), 2u);
  ASSERT_EQ(record.auth().users_size(), 1);
  EXPECT_EQ(record.auth().users(0).password(), u.password());
}

// One changed byte in the database: its SHA-256 no longer matches, as
// etcdctl reports; --skip-hash-check reads it anyway.
TEST_F(SnapshotRestoreTest, HashMismatchIsRefused) {
  std::string data = ReadFile(kEtcdSnapshot);
  ASSERT_GT(data.size(), 8192u);
  data[data.size() - 32 - 1] ^= 1;  // the last page's unused tail
  const std::string file = dir_ + "/bad.db";
  WriteFile(file, data);
  Status st = RestoreSnapshot(file, Options());
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.message().find("expected sha256"), std::string::npos) << st;
  ExpectNothingWritten();

  RestoreOptions skip = Options();
  skip.skip_hash_check = true;
  st = RestoreSnapshot(file, skip);
  EXPECT_TRUE(st.ok()) << st;
}

// A file cut short has no trailing hash (etcdctl's check); with
// --skip-hash-check the pages it lost are missing.
TEST_F(SnapshotRestoreTest, TruncatedFileIsRefused) {
  const std::string data = ReadFile(kEtcdSnapshot);
  const std::string file = dir_ + "/short.db";
  // Half the pages, and not on a 512-byte boundary.
  WriteFile(file, data.substr(0, data.size() / 2 + 100));
  Status st = RestoreSnapshot(file, Options());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("snapshot missing hash"), std::string::npos)
      << st;
  ExpectNothingWritten();

  RestoreOptions skip = Options();
  skip.skip_hash_check = true;
  st = RestoreSnapshot(file, skip);
  EXPECT_FALSE(st.ok());
  ExpectNothingWritten();
}

// A file that is neither kind is named as such.
TEST_F(SnapshotRestoreTest, NotASnapshotIsRefused) {
  const std::string file = dir_ + "/notes.txt";
  WriteFile(file, std::string(4096 + 32, 'x'));
  Status st = RestoreSnapshot(file, Options());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("is not a snapshot file"), std::string::npos)
      << st;
  ExpectNothingWritten();
}

// A file header whose size is near 2^64 must not wrap the parser's offset:
// here off + size wraps to the first header again, which made the parser
// loop forever, collecting the same file.
TEST_F(SnapshotRestoreTest, HugeFileSizeInHeaderIsRefusedAtOnce) {
  storagepb::SnapshotFile h;
  h.set_name("a");
  h.set_size(~uint64_t{0});  // the varint length of any size >= 2^63
  const size_t n = h.ByteSizeLong();
  // The parser is at magic + 4 + n after the header; wrap back to magic.
  h.set_size(uint64_t{0} - 4 - n);
  ASSERT_EQ(h.ByteSizeLong(), n);
  std::string data(kPackedSnapshotMagic);
  for (int shift = 24; shift >= 0; shift -= 8) {
    data += static_cast<char>((n >> shift) & 0xff);
  }
  data += h.SerializeAsString();

  StatusOr<std::vector<PackedFile>> files = ParsePackedSnapshot(data);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kInvalidArgument)
      << files.status();
  EXPECT_EQ(files.status().message(), "truncated snapshot (a)");

  const std::string file = dir_ + "/huge.snap";
  WriteFile(file, data);
  Status st = RestoreSnapshot(file, Options());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  ExpectNothingWritten();
}

}  // namespace
}  // namespace kplane::kpctl
