// HttpPeerTransport against fake members: the transport knows a member only
// through PeerHandler, so two transports on loopback with fake handlers
// exercise its whole wire protocol without a raft node or a store.
#include "storage/server/peer_transport.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "base/testing/fault_injection_file_system.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/pki.h"
#include "storage/server/cluster.h"
#include "storage/server/member_tls.h"

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kCluster = 0xc1;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A member as the transport sees it: records what arrives and waits for it.
class FakeMember : public PeerHandler {
 public:
  FakeMember(uint64_t id, std::string dir) : id_(id), dir_(std::move(dir)) {
    fs::create_directories(dir_);
  }

  uint64_t cluster_id() const override { return kCluster; }
  uint64_t member_id() const override { return id_; }
  bool IsRemovedMember(uint64_t id) const override {
    std::lock_guard<std::mutex> l(mu_);
    return removed_.count(id) > 0;
  }
  // Members 1, 2 and 3 (a removed one is still listed: the transport must
  // check removal first).
  bool IsMember(uint64_t id) const override {
    return (id >= 1 && id <= 3) || IsRemovedMember(id);
  }
  storagepb::ClusterRecord RecordForJoiners() const override {
    storagepb::ClusterRecord r;
    r.set_cluster_id(kCluster);
    r.add_members()->set_id(id_);
    r.add_removed(0x99);
    return r;
  }
  void Process(std::vector<raftpb::Message> msgs) override {
    std::unique_lock<std::mutex> l(mu_);
    // Held: the receiving I/O thread stops here, so the sender's socket
    // fills up.
    cv_.wait(l, [&] { return !hold_; });
    for (auto& m : msgs) received_.push_back(std::move(m));
    cv_.notify_all();
  }
  void ReportUnreachable(uint64_t id) override {
    std::lock_guard<std::mutex> l(mu_);
    unreachable_.insert(id);
    cv_.notify_all();
  }
  void ReportSnapshot(uint64_t id, raft::SnapshotStatus status) override {
    std::lock_guard<std::mutex> l(mu_);
    snapshot_reports_[id] = status;
    cv_.notify_all();
  }
  std::string SnapshotStagingDir() const override { return dir_; }
  StatusOr<raftpb::SnapshotMetadata> SnapshotTo(
      const std::string& dir) override {
    fs::create_directories(dir + "/db");
    std::ofstream(dir + "/db/000001.sst", std::ios::binary) << snapshot_data;
    std::ofstream(dir + "/cluster.pb", std::ios::binary) << "members";
    raftpb::SnapshotMetadata meta;
    meta.set_index(42);
    meta.set_term(3);
    meta.mutable_conf_state()->add_voters(id_);
    return meta;
  }
  Status ReceiveSnapshot(const std::string& received_dir,
                         raftpb::Message msg) override {
    std::lock_guard<std::mutex> l(mu_);
    ++snapshots_received_;
    // Take the directory over, as a member does (or leave it where it
    // arrived, for a test that cuts the power under it).
    std::string kept = received_dir;
    if (!keep_in_place) {
      kept = dir_ + "/received";
      fs::rename(received_dir, kept);
    }
    received_snapshot_dir_ = kept;
    received_snapshot_ = std::move(msg);
    cv_.notify_all();
    return Status::Ok();
  }
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int64_t revision) override {
    etcdserverpb::HashKVResponse h;
    h.set_hash(static_cast<uint32_t>(1000 + revision));
    h.set_compact_revision(revision - 1);
    return h;
  }
  // Leader of leases below 100 (their TTL is 10 times the id), "not
  // leader" for the others.
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaderLeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) override {
    if (req.id() >= 100) return NotLeaderError(3);
    etcdserverpb::LeaseTimeToLiveResponse r;
    r.set_id(req.id());
    r.set_ttl(10 * req.id());
    if (req.keys()) r.add_keys("/k");
    return r;
  }

  // Promotes learner 5, refuses 6 as the leader refuses a lagging one,
  // "not leader" for the others.
  StatusOr<etcdserverpb::MemberPromoteResponse> LeaderMemberPromote(
      const etcdserverpb::MemberPromoteRequest& req) override {
    if (req.id() == 6) {
      return FailedPreconditionError(
          "etcdserver: can only promote a learner member which is in sync "
          "with leader");
    }
    if (req.id() != 5) return NotLeaderError(3);
    etcdserverpb::MemberPromoteResponse r;
    r.add_members()->set_id(5);
    return r;
  }

  void Hold(bool hold) {
    std::lock_guard<std::mutex> l(mu_);
    hold_ = hold;
    cv_.notify_all();
  }
  void Remove(uint64_t id) {
    std::lock_guard<std::mutex> l(mu_);
    removed_.insert(id);
  }
  // Waits for `n` messages (no timeout: ctest's bounds a hang).
  std::vector<raftpb::Message> WaitReceived(size_t n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return received_.size() >= n; });
    return received_;
  }
  // The same, giving up after `timeout` (what arrived by then).
  std::vector<raftpb::Message> WaitReceivedFor(
      size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, timeout, [&] { return received_.size() >= n; });
    return received_;
  }
  void WaitUnreachable(uint64_t id) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return unreachable_.count(id) > 0; });
  }
  size_t received_count() const {
    std::lock_guard<std::mutex> l(mu_);
    return received_.size();
  }
  bool WaitUnreachableFor(uint64_t id, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return unreachable_.count(id) > 0; });
  }
  raft::SnapshotStatus WaitSnapshotReport(uint64_t id) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return snapshot_reports_.count(id) > 0; });
    return snapshot_reports_[id];
  }
  // The report for `id`, waited for and then forgotten (the next send to
  // it reports again).
  raft::SnapshotStatus TakeSnapshotReport(uint64_t id) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return snapshot_reports_.count(id) > 0; });
    raft::SnapshotStatus s = snapshot_reports_[id];
    snapshot_reports_.erase(id);
    return s;
  }
  int snapshots_received() const {
    std::lock_guard<std::mutex> l(mu_);
    return snapshots_received_;
  }
  std::pair<raftpb::Message, std::string> WaitSnapshot() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !received_snapshot_dir_.empty(); });
    return {received_snapshot_, received_snapshot_dir_};
  }

  std::string snapshot_data;
  bool keep_in_place = false;

 private:
  bool hold_ = false;
  int snapshots_received_ = 0;
  const uint64_t id_;
  const std::string dir_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<uint64_t> removed_;
  std::vector<raftpb::Message> received_;
  std::set<uint64_t> unreachable_;
  std::map<uint64_t, raft::SnapshotStatus> snapshot_reports_;
  raftpb::Message received_snapshot_;
  std::string received_snapshot_dir_;
};

// One fake member with its transport and peer listener.
struct Node {
  Node(uint64_t id, const std::string& dir, FileSystem* disk = nullptr)
      : Node(id, dir, PeerTransportOptions{.file_system = disk}) {}
  Node(uint64_t id, const std::string& dir, PeerTransportOptions options)
      : member(id, dir), transport(&member, std::move(options)) {
    transport.RegisterHandlers(&http);
    EXPECT_TRUE(http.Start().ok());
  }
  ~Node() {
    transport.Stop();
    http.Stop();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(http.port());
  }

  FakeMember member;
  HttpPeerTransport transport;
  net::HttpServer http{net::HttpServerOptions{.port = 0}};
};

// A member whose peer listener and dialer speak TLS with `files`, as
// `kplane store --peer-*` sets them up (member_tls.h).
struct TlsNode {
  TlsNode(uint64_t id, const std::string& dir, const MemberTlsFiles& files,
          PeerTransportOptions options = {})
      : member(id, dir),
        transport(&member, WithClientTls(std::move(options), files)),
        http(net::HttpServerOptions{.port = 0,
                                    .tls = NewMemberServerTls(files).value()}) {
    transport.RegisterHandlers(&http);
    EXPECT_TRUE(http.Start().ok());
  }
  ~TlsNode() {
    transport.Stop();
    http.Stop();
  }
  std::string url() const {
    return "https://127.0.0.1:" + std::to_string(http.port());
  }
  static PeerTransportOptions WithClientTls(PeerTransportOptions options,
                                            const MemberTlsFiles& files) {
    options.client_tls = NewMemberPeerClientTls(files).value();
    return options;
  }

  FakeMember member;
  HttpPeerTransport transport;
  net::HttpServer http;
};

raftpb::Message Msg(uint64_t from, uint64_t to, uint64_t index) {
  raftpb::Message m;
  m.set_type(raftpb::MsgApp);
  m.set_from(from);
  m.set_to(to);
  m.set_index(index);
  return m;
}

class PeerTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-peer-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_;
};

TEST_F(PeerTransportTest, MessagesReachThePeersHandlerInOrder) {
  Node a(1, dir_ + "/a"), b(2, dir_ + "/b");
  a.transport.AddPeer(2, {b.url()});
  a.transport.Send({Msg(1, 2, 10), Msg(1, 2, 11)});
  a.transport.Send({Msg(1, 2, 12)});
  std::vector<raftpb::Message> got = b.member.WaitReceived(3);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].from(), 1u);
    EXPECT_EQ(got[i].to(), 2u);
    EXPECT_EQ(got[i].index(), 10u + i);
  }
}

// Send writes a Ready's messages from the calling thread while the peer's
// sender is idle, and queues them for the sender when the socket is full or
// the sender busy; a chunk the kernel took only part of is finished by the
// sender before anything queued after it. Whichever way each batch goes,
// the peer gets every message once, in the order of the Send calls. `a`
// sends to `b` (its peer 2) with `reg` for its metrics and a write timeout
// long enough for the held receiver (a timeout drops the batch, as it
// should for a dead peer). Plaintext here, TLS in PeerTlsTest; over TLS a
// full socket always leaves a partial send (`expect_partial`), over
// plaintext the kernel decides.
void ExpectDirectAndQueuedSendsKeepTheOrder(HttpPeerTransport& a, FakeMember& b,
                                            metrics::Registry& reg,
                                            bool expect_partial) {
  auto counter = [&](const char* name) {
    return reg.NewCounter(name, "")->With({});
  };
  metrics::Counter* direct =
      counter("kplane_network_peer_sent_direct_messages_total");
  metrics::Counter* partial =
      counter("kplane_network_peer_sent_direct_partial_total");
  metrics::Counter* dropped =
      counter("etcd_network_peer_dropped_messages_total");
  // A Ready's worth for the peer: 4 messages of 4 KiB.
  auto batch = [](uint64_t first) {
    std::vector<raftpb::Message> msgs;
    for (uint64_t i = first; i < first + 4; ++i) {
      raftpb::Message m = Msg(1, 2, i);
      m.add_entries()->set_data(std::string(4 << 10, 'x'));
      msgs.push_back(std::move(m));
    }
    return msgs;
  };
  // Until a batch went the direct way (the first opens the stream through
  // the sender); each waits for the one before to arrive.
  uint64_t next = 0;
  while (direct->Value() == 0 && next < 4000) {
    a.Send(batch(next));
    next += 4;
    ASSERT_EQ(b.WaitReceivedFor(next, std::chrono::seconds(60)).size(), next);
  }
  ASSERT_GT(direct->Value(), 0);
  // The receiver stops reading, so the sockets' buffers fill up (a few MiB
  // on loopback) until a direct send finds room for only part of its chunk
  // (the batches after it find the sender busy and queue, unless the
  // buffers grow and the sender finishes the chunk first). At most 32 MiB,
  // within the queue's 8,192 messages. Whether a partial write happens
  // depends on the kernel; HttpClientTest.TrySendLeavesTheRestForTheNext-
  // Send tests that path on its own.
  b.Hold(true);
  const uint64_t limit = next + 8000;
  while (partial->Value() == 0 && next < limit) {
    a.Send(batch(next));
    next += 4;
  }
  if (expect_partial) {
    EXPECT_GT(partial->Value(), 0);
  }
  for (int i = 0; i < 20; ++i, next += 4) a.Send(batch(next));
  b.Hold(false);
  // A stream corrupted by a chunk out of place loses messages: fail, not
  // hang.
  std::vector<raftpb::Message> got =
      b.WaitReceivedFor(next, std::chrono::seconds(60));
  ASSERT_EQ(got.size(), next);
  for (uint64_t i = 0; i < next; ++i) {
    ASSERT_EQ(got[i].index(), i) << "message " << i << " out of order";
    ASSERT_EQ(got[i].entries(0).data().size(), 4u << 10);
  }
  EXPECT_EQ(dropped->Value(), 0);
}

TEST_F(PeerTransportTest, DirectAndQueuedSendsKeepTheOrder) {
  metrics::Registry reg;
  Node a(1, dir_ + "/a",
         PeerTransportOptions{.write_timeout = seconds(120), .metrics = &reg});
  Node b(2, dir_ + "/b");
  a.transport.AddPeer(2, {b.url()});
  ExpectDirectAndQueuedSendsKeepTheOrder(a.transport, b.member, reg,
                                         /*expect_partial=*/false);
}

// MemberUpdate: new URLs for a peer. The sender leaves its open stream to
// the old address (which still answers here) and sends the next message to
// the new one; before, it kept streaming to the old one as long as that
// stream held.
TEST_F(PeerTransportTest, NewUrlsMoveTheStream) {
  Node a(1, dir_ + "/a"), old_b(2, dir_ + "/b"), new_b(2, dir_ + "/b2");
  a.transport.AddPeer(2, {old_b.url()});
  a.transport.Send({Msg(1, 2, 10)});
  ASSERT_EQ(old_b.member.WaitReceived(1).size(), 1u);
  a.transport.AddPeer(2, {new_b.url()});
  a.transport.Send({Msg(1, 2, 11)});
  std::vector<raftpb::Message> got = new_b.member.WaitReceived(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].index(), 11u);
  EXPECT_EQ(old_b.member.WaitReceived(1).size(), 1u);
}

TEST_F(PeerTransportTest, RefusesOtherClustersRemovedMembersAndStrangers) {
  Node b(2, dir_ + "/b");
  b.member.Remove(7);
  auto client = net::HttpClient::ForUrl(b.url());
  ASSERT_TRUE(client.ok());
  auto post = [&](std::string cluster, std::string from) {
    return (*client)->Request(
        "POST", "/raft/stream",
        {{"X-Kplane-Cluster-Id", cluster}, {"X-Kplane-From", from}}, "");
  };
  auto other_cluster = post(IdToHex(kCluster + 1), IdToHex(1));
  ASSERT_TRUE(other_cluster.ok()) << other_cluster.status();
  EXPECT_EQ(other_cluster->status, 412);
  auto removed = post(IdToHex(kCluster), IdToHex(7));
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->status, 412);
  // Knowing the cluster id (it is in every client response) is not enough:
  // the sender must be a member, as etcd's rafthttp answers.
  auto stranger = post(IdToHex(kCluster), IdToHex(0x77));
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_EQ(stranger->status, 404);
  EXPECT_EQ(stranger->body, "error sender not found\n");
  auto self = post(IdToHex(kCluster), IdToHex(2));
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_EQ(self->status, 404);
  auto member = post(IdToHex(kCluster), IdToHex(1));
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_EQ(member->status, 204);
  // A stranger's stream whose body never ends: refused, and closed under
  // it (a stream has no body deadline to do it).
  net::testing::RawConnection raw(b.http.port());
  raw.Send(
      "POST /raft/stream HTTP/1.1\r\nHost: x\r\n"
      "X-Kplane-Cluster-Id: " +
      IdToHex(kCluster) +
      "\r\n"
      "X-Kplane-From: " +
      IdToHex(0x77) +
      "\r\n"
      "Transfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n");
  StatusOr<net::HttpResponse> open = raw.ReadResponse("POST");
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(open->status, 404);
  EXPECT_TRUE(raw.WaitForClose());
}

// A member's stream carries that member's messages only: one that claims
// another sender is dropped and counted, the rest go through in order.
TEST_F(PeerTransportTest, DropsMessagesThatClaimAnotherSender) {
  metrics::Registry reg;
  FakeMember b(2, dir_ + "/b");
  HttpPeerTransport t(&b, {.metrics = &reg});
  net::HttpServer http{net::HttpServerOptions{.port = 0}};
  t.RegisterHandlers(&http);
  ASSERT_TRUE(http.Start().ok());
  std::string body;
  for (const raftpb::Message& m :
       {Msg(1, 2, 10), Msg(3, 2, 11), Msg(1, 2, 12)}) {
    std::string frame = m.SerializeAsString();
    uint32_t n = static_cast<uint32_t>(frame.size());
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                   static_cast<char>(n >> 8), static_cast<char>(n)};
    body.append(len, 4);
    body += frame;
  }
  auto client = net::HttpClient::ForUrl("http://127.0.0.1:" +
                                        std::to_string(http.port()));
  ASSERT_TRUE(client.ok());
  auto resp = (*client)->Request("POST", "/raft/stream",
                                 {{"X-Kplane-Cluster-Id", IdToHex(kCluster)},
                                  {"X-Kplane-From", IdToHex(1)}},
                                 body);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 204);
  std::vector<raftpb::Message> got = b.WaitReceived(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].index(), 10u);
  EXPECT_EQ(got[1].index(), 12u);
  EXPECT_NE(
      reg.Render().find(
          "kplane_network_peer_refused_total{reason=\"sender_mismatch\"} 1"),
      std::string::npos)
      << reg.Render();
  t.Stop();
  http.Stop();
}

// A forged length prefix past kMaxPeerFrameBytes drops the stream at once,
// before any of the promised bytes are buffered; what came before it is
// delivered.
TEST_F(PeerTransportTest, OversizedFrameLengthDropsTheStream) {
  metrics::Registry reg;
  FakeMember b(2, dir_ + "/b");
  HttpPeerTransport t(&b, {.metrics = &reg});
  net::HttpServer http{net::HttpServerOptions{.port = 0}};
  t.RegisterHandlers(&http);
  ASSERT_TRUE(http.Start().ok());
  auto frame = [](uint32_t n, const std::string& payload) {
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                   static_cast<char>(n >> 8), static_cast<char>(n)};
    return std::string(len, 4) + payload;
  };
  const std::string ok = Msg(1, 2, 10).SerializeAsString();
  auto client = net::HttpClient::ForUrl("http://127.0.0.1:" +
                                        std::to_string(http.port()));
  ASSERT_TRUE(client.ok());
  const net::HttpHeaders headers{{"X-Kplane-Cluster-Id", IdToHex(kCluster)},
                                 {"X-Kplane-From", IdToHex(1)}};
  // Just past the cap: refused with no payload sent (a reader that trusted
  // the length would wait for 256 MiB, then answer 204 at the body's end).
  auto resp = (*client)->Request("POST", "/raft/stream", headers,
                                 frame(static_cast<uint32_t>(ok.size()), ok) +
                                     frame(kMaxPeerFrameBytes + 1, ""));
  EXPECT_FALSE(resp.ok() && resp->status == 204)
      << "the oversized frame was not refused";
  std::vector<raftpb::Message> got = b.WaitReceived(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].index(), 10u);
  EXPECT_NE(
      reg.Render().find(
          "kplane_network_peer_refused_total{reason=\"corrupt_frame\"} 1"),
      std::string::npos)
      << reg.Render();
  // At the cap: a frame that may still arrive; the stream ends cleanly
  // when the body does (the partial frame is dropped, nothing allocated
  // beyond the bytes received).
  auto at_cap = (*client)->Request("POST", "/raft/stream", headers,
                                   frame(kMaxPeerFrameBytes, "x"));
  ASSERT_TRUE(at_cap.ok()) << at_cap.status();
  EXPECT_EQ(at_cap->status, 204);
  t.Stop();
  http.Stop();
}

TEST_F(PeerTransportTest, UnreachablePeerIsReportedToTheHandler) {
  Node a(1, dir_ + "/a");
  std::string gone_url;
  {
    // A port that was just listening and is closed now.
    net::HttpServer gone(net::HttpServerOptions{.port = 0});
    ASSERT_TRUE(gone.Start().ok());
    gone_url = "http://127.0.0.1:" + std::to_string(gone.port());
    gone.Stop();
  }
  a.transport.AddPeer(3, {gone_url});
  a.transport.Send({Msg(1, 3, 1)});
  a.member.WaitUnreachable(3);
}

TEST_F(PeerTransportTest, AsksPeersForHashKVAndMembership) {
  Node a(1, dir_ + "/a"), b(2, dir_ + "/b");
  a.transport.AddPeer(2, {b.url()});
  auto h = a.transport.PeerHashKV(2, 5);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->hash(), 1005u);
  EXPECT_EQ(h->compact_revision(), 4);
  auto rec = a.transport.PeerMembership(2);
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->cluster_id(), kCluster);
  ASSERT_EQ(rec->members_size(), 1);
  EXPECT_EQ(rec->members(0).id(), 2u);
  ASSERT_EQ(rec->removed_size(), 1);
  EXPECT_EQ(rec->removed(0), 0x99u);
  EXPECT_EQ(a.transport.PeerHashKV(9, 5).status().code(),
            StatusCode::kNotFound);
  // Only members may ask for a hash (it reads every key).
  auto stranger = net::HttpClient::ForUrl(b.url());
  ASSERT_TRUE(stranger.ok());
  auto refused = (*stranger)->Request("GET", "/raft/hashkv?revision=5");
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->status, 412) << refused->body;
  auto fetched = HttpPeerTransport::FetchMembership(b.url(), seconds(5));
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->cluster_id(), kCluster);
}

// A follower asks the leader for a lease's time to live over the peer
// port; the leader's errors arrive as they were, and only members ask.
TEST_F(PeerTransportTest, AsksTheLeaderForALeasesTimeToLive) {
  Node a(1, dir_ + "/a"), b(2, dir_ + "/b");
  a.transport.AddPeer(2, {b.url()});
  etcdserverpb::LeaseTimeToLiveRequest q;
  q.set_id(7);
  q.set_keys(true);
  auto ttl = a.transport.PeerLeaseTimeToLive(2, q, seconds(5));
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(ttl->id(), 7);
  EXPECT_EQ(ttl->ttl(), 70);
  ASSERT_EQ(ttl->keys_size(), 1);
  q.set_id(100);
  auto not_leader = a.transport.PeerLeaseTimeToLive(2, q, seconds(5));
  EXPECT_EQ(not_leader.status().code(), StatusCode::kNotLeader)
      << not_leader.status();
  EXPECT_EQ(a.transport.PeerLeaseTimeToLive(9, q, seconds(5)).status().code(),
            StatusCode::kNotFound);
  // Not from a member (9 is none): refused by the peer port, which is
  // no answer about the lease.
  Node stranger(9, dir_ + "/s");
  stranger.transport.AddPeer(2, {b.url()});
  q.set_id(7);
  EXPECT_EQ(
      stranger.transport.PeerLeaseTimeToLive(2, q, seconds(5)).status().code(),
      StatusCode::kUnavailable);
  // An undecodable request is refused.
  auto client = net::HttpClient::ForUrl(b.url(), {});
  ASSERT_TRUE(client.ok());
  auto raw = (*client)->Request(
      "POST", "/raft/leasettl",
      {{"X-Kplane-Cluster-Id", IdToHex(kCluster)}, {"X-Kplane-From", "1"}},
      "\xff\xff\xff");
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->status, 400) << raw->body;
}

// A follower forwards a promotion to the leader over the peer port; the
// leader's errors arrive as they were.
TEST_F(PeerTransportTest, ForwardsAPromotionToTheLeader) {
  Node a(1, dir_ + "/a"), b(2, dir_ + "/b");
  a.transport.AddPeer(2, {b.url()});
  etcdserverpb::MemberPromoteRequest q;
  q.set_id(5);
  auto promoted = a.transport.PeerMemberPromote(2, q, seconds(5));
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  ASSERT_EQ(promoted->members_size(), 1);
  EXPECT_EQ(promoted->members(0).id(), 5u);
  q.set_id(6);
  auto lagging = a.transport.PeerMemberPromote(2, q, seconds(5));
  EXPECT_TRUE(lagging.status().Is(StatusCode::kFailedPrecondition))
      << lagging.status();
  EXPECT_EQ(lagging.status().message(),
            "etcdserver: can only promote a learner member which is in sync "
            "with leader");
  q.set_id(7);
  EXPECT_EQ(a.transport.PeerMemberPromote(2, q, seconds(5)).status().code(),
            StatusCode::kNotLeader);
}

// A MsgSnap goes out with the metadata of the copy the sender's handler
// made, its files arrive intact in the receiver's staging directory, and
// the sender hears that it finished.
TEST_F(PeerTransportTest, SnapshotIsCopiedSentAndReported) {
  Node a(1, dir_ + "/a"), b(2, dir_ + "/b");
  // Bigger than one 1 MiB send, so the file goes in several pieces.
  a.member.snapshot_data = std::string(3 << 20, 'x');
  for (size_t i = 0; i < a.member.snapshot_data.size(); i += 4097) {
    a.member.snapshot_data[i] = static_cast<char>('a' + i % 26);
  }
  a.transport.AddPeer(2, {b.url()});
  raftpb::Message snap;
  snap.set_type(raftpb::MsgSnap);
  snap.set_term(3);
  snap.set_from(1);
  snap.set_to(2);
  snap.mutable_snapshot()->mutable_metadata()->set_index(7);  // stale
  a.transport.Send({snap});

  auto [msg, dir] = b.member.WaitSnapshot();
  EXPECT_EQ(msg.type(), raftpb::MsgSnap);
  EXPECT_EQ(msg.snapshot().metadata().index(), 42u);
  EXPECT_EQ(msg.snapshot().metadata().term(), 3u);
  EXPECT_EQ(ReadFile(dir + "/db/000001.sst"), a.member.snapshot_data);
  EXPECT_EQ(ReadFile(dir + "/cluster.pb"), "members");
  EXPECT_EQ(a.member.WaitSnapshotReport(2), raft::SnapshotStatus::kFinish);
  // The sender's staged copy is gone.
  for (const auto& e : fs::directory_iterator(dir_ + "/a")) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

// A peer that refuses every snapshot gets a new one after each failure
// (raft probes, then needs one again): the finished sending threads are
// joined as the next starts, where each stayed until the transport
// stopped (one more a heartbeat, without end).
TEST_F(PeerTransportTest, FinishedSnapshotSendsAreJoined) {
  Node a(1, dir_ + "/a");
  a.transport.AddPeer(2, {"http://127.0.0.1:1"});  // nobody listens
  raftpb::Message snap;
  snap.set_type(raftpb::MsgSnap);
  snap.set_term(3);
  snap.set_from(1);
  snap.set_to(2);
  for (int i = 0; i < 5; ++i) {
    a.transport.Send({snap});
    EXPECT_EQ(a.member.TakeSnapshotReport(2), raft::SnapshotStatus::kFailure);
    // The new one, and the one that just reported, which may not have
    // returned yet (it reports, then marks itself done): never more.
    EXPECT_LE(a.transport.SnapshotThreads(), 2u) << i;
  }
}

// A snapshot message the raft core would mistake (no term: taken for a
// local message, a candidate stepped down to term 0) is refused before its
// files are read, answered 400 and counted; the member never sees it.
TEST_F(PeerTransportTest, ASnapshotMessageWithoutATermIsRefused) {
  metrics::Registry reg;
  Node a(1, dir_ + "/a"),
      b(2, dir_ + "/b", PeerTransportOptions{.metrics = &reg});
  a.transport.AddPeer(2, {b.url()});
  raftpb::Message snap;
  snap.set_type(raftpb::MsgSnap);
  snap.set_from(1);
  snap.set_to(2);
  a.transport.Send({snap});
  EXPECT_EQ(a.member.TakeSnapshotReport(2), raft::SnapshotStatus::kFailure);
  EXPECT_EQ(b.member.snapshots_received(), 0);
  EXPECT_NE(
      reg.Render().find(
          "kplane_network_peer_refused_total{reason=\"invalid_snapshot\"} 1"),
      std::string::npos)
      << reg.Render();
}

// The receiver writes a snapshot's files through its member's FileSystem:
// created private, every write checked, every file and name synced before
// the handler takes the directory over -- so a power cut right after the
// hand-over keeps all of it, and a full disk fails the transfer (reported
// to the sender) and leaves nothing behind.
TEST_F(PeerTransportTest, ReceivedSnapshotGoesThroughTheFileSystem) {
  FaultInjectionFileSystem disk(FileSystem::Default(), dir_ + "/scratch");
  Node a(1, dir_ + "/a"), b(2, dir_ + "/b", &disk);
  b.member.keep_in_place = true;
  a.member.snapshot_data = std::string(1 << 20, 's');
  a.transport.AddPeer(2, {b.url()});
  raftpb::Message snap;
  snap.set_type(raftpb::MsgSnap);
  snap.set_term(3);
  snap.set_from(1);
  snap.set_to(2);

  // A full disk: the transfer fails, the sender hears it, nothing stays.
  disk.SetNoSpace(true);
  a.transport.Send({snap});
  EXPECT_EQ(a.member.TakeSnapshotReport(2), raft::SnapshotStatus::kFailure);
  EXPECT_EQ(b.member.snapshots_received(), 0);
  EXPECT_GT(disk.injected_failures(), 0);
  for (const auto& e : fs::directory_iterator(dir_ + "/b")) {
    ADD_FAILURE() << "left behind: " << e.path();
  }

  // Space again: it arrives, private, and survives a power cut at once.
  disk.SetNoSpace(false);
  a.transport.Send({snap});
  EXPECT_EQ(a.member.TakeSnapshotReport(2), raft::SnapshotStatus::kFinish);
  auto [msg, dir] = b.member.WaitSnapshot();
  EXPECT_EQ(fs::status(dir + "/db/000001.sst").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(dir + "/db").permissions() & fs::perms::all,
            fs::perms::owner_all);
  std::set<std::string> written = disk.WrittenPaths();
  EXPECT_EQ(written.count(dir + "/db/000001.sst"), 1u);
  EXPECT_EQ(written.count(dir + "/cluster.pb"), 1u);
  ASSERT_TRUE(disk.PowerCut().ok());
  EXPECT_EQ(ReadFile(dir + "/db/000001.sst"), a.member.snapshot_data);
  EXPECT_EQ(ReadFile(dir + "/cluster.pb"), "members");
}

// A snapshot transfer that does not end (the sender's connection cut in
// the middle of a file, or its stream ending early) leaves nothing in the
// staging directory: partial copies stayed there until the member
// restarted.
TEST_F(PeerTransportTest, BrokenSnapshotTransfersLeaveNothingBehind) {
  Node b(2, dir_ + "/b");
  auto frame = [](const std::string& payload) {
    uint32_t n = static_cast<uint32_t>(payload.size());
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                   static_cast<char>(n >> 8), static_cast<char>(n)};
    return std::string(len, 4) + payload;
  };
  raftpb::Message snap;
  snap.set_type(raftpb::MsgSnap);
  snap.set_term(3);
  snap.set_from(1);
  snap.set_to(2);
  snap.mutable_snapshot()->mutable_metadata()->set_index(42);
  snap.mutable_snapshot()->mutable_metadata()->set_term(3);
  snap.mutable_snapshot()->mutable_metadata()->mutable_conf_state()->add_voters(
      1);
  storagepb::SnapshotFile file;
  file.set_name("db/000001.sst");
  file.set_size(1 << 20);
  const std::string start = frame(snap.SerializeAsString()) +
                            frame(file.SerializeAsString()) +
                            std::string(1000, 'x');
  auto staged = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_ + "/b")) {
      n += e.path().filename().string().starts_with("incoming-");
    }
    return n;
  };
  const std::string head =
      "POST /raft/snapshot HTTP/1.1\r\nHost: x\r\n"
      "X-Kplane-Cluster-Id: " +
      IdToHex(kCluster) +
      "\r\n"
      "X-Kplane-From: " +
      IdToHex(1) + "\r\n";
  {
    // Cut in the middle of its first file.
    net::testing::RawConnection c(b.http.port());
    c.Send(head + "Transfer-Encoding: chunked\r\n\r\n" +
           [&] {
             char size[16];
             std::snprintf(size, sizeof size, "%zx\r\n", start.size());
             return std::string(size);
           }() +
           start + "\r\n");
    ASSERT_TRUE(net::testing::PollUntil([&] { return staged() == 1; }));
  }
  EXPECT_TRUE(net::testing::PollUntil([&] { return staged() == 0; }));
  // A whole request whose snapshot ends early.
  net::testing::RawConnection c(b.http.port());
  c.Send(head + "Content-Length: " + std::to_string(start.size()) + "\r\n\r\n" +
         start);
  StatusOr<net::HttpResponse> early = c.ReadResponse("POST");
  ASSERT_TRUE(early.ok()) << early.status();
  EXPECT_EQ(early->status, 400);
  EXPECT_EQ(early->body, "snapshot stream ended early\n");
  EXPECT_TRUE(net::testing::PollUntil([&] { return staged() == 0; }));
  EXPECT_EQ(b.member.snapshots_received(), 0);
}

// ---- peer TLS (etcd's --peer-cert-file, --peer-key-file,
// --peer-trusted-ca-file, --peer-client-cert-auth) ----------------------------

class PeerTlsTest : public PeerTransportTest {
 protected:
  void SetUp() override {
    PeerTransportTest::SetUp();
    // Two CAs: the cluster's and a stranger's. Each member certificate is
    // a server and a client certificate for 127.0.0.1, as etcd's peer
    // certificates are.
    cluster_ = Issue("cluster", "member");
    stranger_ = Issue("stranger", "member");
  }
  MemberTlsFiles Issue(const std::string& ca, const std::string& name) {
    net::Pki pki({.dir = dir_ + "/pki-" + ca, .ca_common_name = ca + "-ca"});
    EXPECT_TRUE(pki.EnsureCertificate(name, {.common_name = name,
                                             .ip_addresses = {"127.0.0.1"},
                                             .server_auth = true,
                                             .client_auth = true})
                    .ok());
    return {.cert_file = pki.CertPath(name),
            .key_file = pki.KeyPath(name),
            .trusted_ca_file = pki.CertPath("ca"),
            .client_cert_auth = true};
  }
  MemberTlsFiles cluster_;
  MemberTlsFiles stranger_;
};

TEST_F(PeerTlsTest, MembersOfOneCaExchangeMessagesAndSnapshots) {
  TlsNode a(1, dir_ + "/a", cluster_), b(2, dir_ + "/b", cluster_);
  a.transport.AddPeer(2, {b.url()});
  a.transport.Send({Msg(1, 2, 10), Msg(1, 2, 11)});
  EXPECT_EQ(b.member.WaitReceived(2).size(), 2u);
  auto h = a.transport.PeerHashKV(2, 5);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->hash(), 1005u);
  auto rec = HttpPeerTransport::FetchMembership(
      b.url(), seconds(5), NewMemberPeerClientTls(cluster_).value());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->cluster_id(), kCluster);
  // A snapshot travels over TLS too.
  a.member.snapshot_data = "state";
  raftpb::Message snap;
  snap.set_type(raftpb::MsgSnap);
  snap.set_term(3);
  snap.set_from(1);
  snap.set_to(2);
  a.transport.Send({snap});
  EXPECT_EQ(a.member.WaitSnapshotReport(2), raft::SnapshotStatus::kFinish);
  EXPECT_EQ(ReadFile(b.member.WaitSnapshot().second + "/db/000001.sst"),
            "state");
}

// Direct sends over TLS: a chunk whose record the socket refused is owed
// to OpenSSL, and the sender finishes it before anything queued after it.
TEST_F(PeerTlsTest, DirectAndQueuedSendsKeepTheOrder) {
  metrics::Registry reg;
  TlsNode a(1, dir_ + "/a", cluster_,
            {.write_timeout = seconds(120), .metrics = &reg});
  TlsNode b(2, dir_ + "/b", cluster_);
  a.transport.AddPeer(2, {b.url()});
  ExpectDirectAndQueuedSendsKeepTheOrder(a.transport, b.member, reg,
                                         /*expect_partial=*/true);
}

// A member whose certificate another CA signed cannot send raft messages,
// snapshots or ask for the membership: the peer listener refuses its
// handshake, so nothing reaches the handler.
TEST_F(PeerTlsTest, CertificateFromAnotherCaIsRefused) {
  TlsNode b(2, dir_ + "/b", cluster_);
  // The stranger trusts the cluster's CA (so it would accept b) but shows
  // its own CA's certificate.
  MemberTlsFiles intruder = stranger_;
  intruder.trusted_ca_file = cluster_.trusted_ca_file;
  TlsNode c(3, dir_ + "/c", intruder);
  c.transport.AddPeer(2, {b.url()});
  // In TLS 1.3 the client learns of the refusal only when it next uses the
  // connection: keep sending, as raft's heartbeats do.
  for (uint64_t i = 10;; ++i) {
    c.transport.Send({Msg(3, 2, i)});
    if (c.member.WaitUnreachableFor(2, std::chrono::milliseconds(50))) break;
    ASSERT_EQ(b.member.received_count(), 0u)
        << "the stranger's message arrived";
  }
  auto rec = HttpPeerTransport::FetchMembership(
      b.url(), seconds(5), NewMemberPeerClientTls(intruder).value());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), StatusCode::kUnavailable) << rec.status();
  EXPECT_EQ(c.transport.PeerHashKV(2, 5).status().code(),
            StatusCode::kUnavailable);
  // Without any certificate: refused too.
  MemberTlsFiles anonymous{.trusted_ca_file = cluster_.trusted_ca_file};
  rec = HttpPeerTransport::FetchMembership(
      b.url(), seconds(5), NewMemberPeerClientTls(anonymous).value());
  ASSERT_FALSE(rec.ok());
  // And in plain HTTP: Go's 400, no membership.
  rec = HttpPeerTransport::FetchMembership(
      "http://127.0.0.1:" + std::to_string(b.http.port()), seconds(5));
  ASSERT_FALSE(rec.ok());
  // The control: a member of the cluster is served by the same b.
  TlsNode a(1, dir_ + "/a", cluster_);
  a.transport.AddPeer(2, {b.url()});
  a.transport.Send({Msg(1, 2, 20)});
  std::vector<raftpb::Message> got = b.member.WaitReceived(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].from(), 1u);  // nothing of the stranger's arrived
}

// The dialing side verifies the member it reaches against its peer CA: a
// listener with another CA's certificate gets nothing.
TEST_F(PeerTlsTest, PeerServingAnotherCasCertificateIsNotSentTo) {
  TlsNode a(1, dir_ + "/a", cluster_);
  MemberTlsFiles impostor = stranger_;
  impostor.trusted_ca_file = cluster_.trusted_ca_file;  // accepts a
  TlsNode d(2, dir_ + "/d", impostor);
  a.transport.AddPeer(2, {d.url()});
  for (uint64_t i = 10;; ++i) {
    a.transport.Send({Msg(1, 2, i)});
    if (a.member.WaitUnreachableFor(2, std::chrono::milliseconds(50))) break;
    ASSERT_EQ(d.member.received_count(), 0u) << "sent to the impostor";
  }
  auto rec = a.transport.PeerMembership(2);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("unknown authority"), std::string::npos)
      << rec.status();
  EXPECT_EQ(d.member.snapshots_received(), 0);
  EXPECT_EQ(d.member.received_count(), 0u);
}

TEST(MemberTlsTest, FilesAsEtcdReadsThem) {
  auto half = NewMemberServerTls({.cert_file = "a.crt"});
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().message(),
            "KeyFile and CertFile must both be present[key: , cert: a.crt]");
  auto no_ca = NewMemberServerTls(
      {.cert_file = "a.crt", .key_file = "a.key", .client_cert_auth = true});
  ASSERT_FALSE(no_ca.ok());
  EXPECT_NE(no_ca.status().message().find("needs a trusted CA file"),
            std::string::npos);
  EXPECT_EQ(NewMemberServerTls({.cert_file = "/nonexistent/a.crt",
                                .key_file = "/nonexistent/a.key"})
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(MemberTlsFiles{.trusted_ca_file = "ca"}.requires_client_certs());
  EXPECT_FALSE(MemberTlsFiles{.cert_file = "c"}.requires_client_certs());
  auto none = NewMemberTls({}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->client_server, nullptr);
  EXPECT_EQ(none->peer_server, nullptr);
  EXPECT_EQ(none->peer_client, nullptr);
}

}  // namespace
}  // namespace kplane::storage
