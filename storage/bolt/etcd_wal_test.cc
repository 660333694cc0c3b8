// etcd_wal.h on the WAL the real `etcdctl snapshot restore` 3.4.23 wrote
// (testdata/etcd/restored, make_restored_dir.sh), and on damaged copies.
#include "storage/bolt/etcd_wal.h"

#include <gtest/gtest.h>

#include <string>

#include "base/crc32c.h"
#include "schemas/etcdwal.pb.h"

namespace kplane::bolt {
namespace {

constexpr const char* kWalDir = KPLANE_ETCD_TESTDATA "/restored/member/wal";
constexpr const char* kWalFile = "0000000000000000-0000000000000000.wal";

std::string FixtureWal() {
  StatusOr<std::string> data =
      ReadFile(FileSystem::Default(), std::string(kWalDir) + "/" + kWalFile);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? *data : "";
}

StatusOr<EtcdWal> Read(std::string_view data) {
  EtcdWal wal;
  uint32_t crc = 0;
  RETURN_IF_ERROR(ReadEtcdWalFile("test.wal", data, &crc, &wal));
  return wal;
}

// One frame as etcd's encoder writes it, continuing the running *crc.
std::string Frame(int64_t type, std::string_view data, uint32_t* crc) {
  walpb::Record rec;
  rec.set_type(type);
  if (type == 4) {
    rec.set_crc(*crc);
  } else {
    *crc = crc32c::Extend(*crc, data.data(), data.size());
    rec.set_crc(*crc);
    rec.set_data(std::string(data));
  }
  std::string body = rec.SerializeAsString();
  const uint64_t pad = (8 - body.size() % 8) % 8;
  uint64_t word = body.size();
  if (pad != 0) word |= (0x80 | pad) << 56;
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(word >> (8 * i)));
  return out + body + std::string(pad, '\0');
}

std::string Metadata(uint64_t node, uint64_t cluster) {
  walpb::Metadata md;
  md.set_nodeid(node);
  md.set_clusterid(cluster);
  return md.SerializeAsString();
}

TEST(EtcdWal, ReadsWhatEtcdctlRestoreWrites) {
  StatusOr<EtcdWal> wal = ReadEtcdWal(FileSystem::Default(), kWalDir);
  ASSERT_TRUE(wal.ok()) << wal.status();
  EXPECT_EQ(wal->first_index, 0u);
  ASSERT_EQ(wal->entries.size(), 3u);  // one ConfChangeAddNode per member
  EXPECT_EQ(wal->LastIndex(), 3u);
  EXPECT_EQ(wal->hard_state.commit(), 3u);
  EXPECT_EQ(wal->hard_state.term(), 1u);
  EXPECT_EQ(wal->snapshot_index, 3u);
  EXPECT_EQ(wal->snapshot_term, 1u);
  EXPECT_NE(wal->cluster_id, 0u);

  StatusOr<EtcdWalMembership> m = MembershipFromEtcdWal(*wal);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->members.size(), 3u);
  EXPECT_TRUE(m->removed.empty());
  bool found_self = false;
  for (const auto& member : m->members) {
    ASSERT_EQ(member.peerurls_size(), 1);
    const std::string n = member.name();
    ASSERT_TRUE(n == "n1" || n == "n2" || n == "n3") << n;
    EXPECT_EQ(member.peerurls(0), "http://10.0.0." + n.substr(1) + ":2380");
    if (member.id() == wal->node_id) {
      EXPECT_EQ(n, "n1");
      found_self = true;
    }
  }
  EXPECT_TRUE(found_self);
}

TEST(EtcdWal, PreallocatedZerosEndTheFile) {
  const std::string data = FixtureWal();
  StatusOr<EtcdWal> a = Read(data);
  StatusOr<EtcdWal> b = Read(data + std::string(1 << 16, '\0'));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->entries.size(), b->entries.size());
  EXPECT_EQ(a->node_id, b->node_id);
}

TEST(EtcdWal, AFlippedByteIsACrcMismatch) {
  const std::string data = FixtureWal();
  // A byte of member n2's JSON inside the first entry record's data.
  const size_t at = data.find("\"n2\"");
  ASSERT_NE(at, std::string::npos);
  std::string bad = data;
  bad[at + 1] = 'x';
  StatusOr<EtcdWal> wal = Read(bad);
  ASSERT_FALSE(wal.ok());
  EXPECT_EQ(wal.status().code(), StatusCode::kCorruption);
  EXPECT_NE(wal.status().message().find("CRC mismatch"), std::string::npos)
      << wal.status();
}

TEST(EtcdWal, ATruncatedFileIsRefused) {
  const std::string data = FixtureWal();
  for (size_t cut : {data.size() - 1, data.size() - 20, size_t{30}}) {
    StatusOr<EtcdWal> wal = Read(data.substr(0, cut));
    ASSERT_FALSE(wal.ok()) << cut << " of " << data.size();
    EXPECT_EQ(wal.status().code(), StatusCode::kCorruption);
    EXPECT_NE(wal.status().message().find("truncated"), std::string::npos)
        << wal.status();
  }
}

TEST(EtcdWal, DamagedLengthWordAndUnknownTypes) {
  uint32_t crc = 0;
  const std::string head = Frame(4, "", &crc);
  std::string big = head + Frame(1, Metadata(1, 2), &crc);
  big[head.size() + 6] = 0x7f;  // the metadata frame's size: past 10 MiB
  StatusOr<EtcdWal> wal = Read(big);
  ASSERT_FALSE(wal.ok());
  EXPECT_EQ(wal.status().code(), StatusCode::kCorruption);
  EXPECT_NE(wal.status().message().find("10 MiB"), std::string::npos)
      << wal.status();

  crc = 0;
  std::string odd = Frame(4, "", &crc);
  odd += Frame(1, Metadata(1, 2), &crc);
  odd += Frame(9, "x", &crc);
  wal = Read(odd);
  ASSERT_FALSE(wal.ok());
  EXPECT_EQ(wal.status().code(), StatusCode::kInvalidArgument) << wal.status();
  EXPECT_NE(wal.status().message().find("unknown record type 9"),
            std::string::npos)
      << wal.status();
}

TEST(EtcdWal, TheCrcChainsAcrossFiles) {
  uint32_t crc = 0;
  // (One frame a statement: each continues the CRC of the one before.)
  std::string first = Frame(4, "", &crc);
  first += Frame(1, Metadata(1, 2), &crc);
  const uint32_t end_of_first = crc;
  std::string second = Frame(4, "", &crc);
  second += Frame(1, Metadata(1, 2), &crc);
  EtcdWal wal;
  uint32_t running = 0;
  Status a = ReadEtcdWalFile("a.wal", first, &running, &wal);
  ASSERT_TRUE(a.ok()) << a;
  EXPECT_EQ(running, end_of_first);
  ASSERT_TRUE(ReadEtcdWalFile("b.wal", second, &running, &wal).ok());

  // A second file that does not continue the first one's CRC.
  uint32_t other = 12345;
  std::string stray = Frame(4, "", &other);
  stray += Frame(1, Metadata(1, 2), &other);
  running = end_of_first;
  Status st = ReadEtcdWalFile("c.wal", stray, &running, &wal);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st;
}

TEST(EtcdWal, APurgedLogHasNoMembership) {
  EtcdWal wal;
  wal.first_index = 1000;
  StatusOr<EtcdWalMembership> m = MembershipFromEtcdWal(wal);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kFailedPrecondition);
}

TEST(EtcdWal, RemoveAndUpdateNode) {
  auto conf = [](raftpb::ConfChangeType t, uint64_t id, std::string ctx,
                 uint64_t index) {
    raftpb::ConfChange cc;
    cc.set_type(t);
    cc.set_node_id(id);
    cc.set_context(ctx);
    raftpb::Entry e;
    e.set_type(raftpb::EntryConfChange);
    e.set_index(index);
    e.set_data(cc.SerializeAsString());
    return e;
  };
  EtcdWal wal;
  wal.entries.push_back(conf(raftpb::ConfChangeAddNode, 5,
                             R"({"id":5,"peerURLs":["http://a"],"name":"a"})",
                             1));
  wal.entries.push_back(conf(raftpb::ConfChangeAddNode, 6,
                             R"({"id":6,"peerURLs":["http://b"]})", 2));
  wal.entries.push_back(conf(raftpb::ConfChangeUpdateNode, 6,
                             R"({"id":6,"peerURLs":["http://b2"],"name":"b"})",
                             3));
  wal.entries.push_back(conf(raftpb::ConfChangeRemoveNode, 5, "", 4));
  StatusOr<EtcdWalMembership> m = MembershipFromEtcdWal(wal);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->members.size(), 1u);
  EXPECT_EQ(m->members[0].id(), 6u);
  EXPECT_EQ(m->members[0].peerurls(0), "http://b2");
  ASSERT_EQ(m->removed.size(), 1u);
  EXPECT_EQ(m->removed[0], 5u);

  // A context naming another member is refused.
  wal.entries.push_back(
      conf(raftpb::ConfChangeAddNode, 7, R"({"id":8,"peerURLs":[]})", 5));
  m = MembershipFromEtcdWal(wal);
  EXPECT_EQ(m.status().code(), StatusCode::kCorruption) << m.status();
}

}  // namespace
}  // namespace kplane::bolt
