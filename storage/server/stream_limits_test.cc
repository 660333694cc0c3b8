// Bounded memory on the store's streaming routes (issue 15): an
// unterminated JSON object streamed into /v3/watch grew the store by
// 816 MiB; the request splitters of /v3/watch and /v3/lease/keepalive now
// refuse an object past etcd's gRPC message limit, and a watch stream whose
// client does not read is paced (its watchers become victims, as etcd's).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/base64.h"
#include "base/crc32c.h"
#include "base/metrics.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "storage/etcdjson/json_stream.h"
#include "storage/server/client_api.h"
#include "storage/server/store_server.h"

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;
using net::testing::RawConnection;

class StreamLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-streams-XXXXXX";
    dir_ = mkdtemp(tmpl);
    StoreConfig c;
    c.name = "m1";
    c.data_dir = dir_ + "/m1";
    c.peer_urls = {"http://m1:2380"};
    c.heartbeat_interval = milliseconds(10);
    c.election_timeout = milliseconds(100);
    c.corrupt_check_interval = Duration(0);
    auto s = StoreServer::Open(c);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    ASSERT_TRUE(server_->Start(nullptr).ok());
    ASSERT_TRUE(server_->WaitReady(seconds(10)));
    net::HttpServerOptions o;
    o.port = 0;
    o.metrics = &metrics_;
    http_ = std::make_unique<net::HttpServer>(o);
    api_ = std::make_unique<ClientApi>(server_.get(), &metrics_);
    api_->RegisterHandlers(http_.get());
    ASSERT_TRUE(http_->Start().ok());
  }
  void TearDown() override {
    if (http_) http_->Stop();
    if (server_) server_->Stop();
    fs::remove_all(dir_);
  }

  static std::string Chunk(const std::string& data) {
    char size[32];
    snprintf(size, sizeof(size), "%zx\r\n", data.size());
    return size + data + "\r\n";
  }
  // Sends without failing when the server has already closed.
  static void SendAll(RawConnection* c, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n =
          ::send(c->fd(), data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  // Streams `opening` and then 3 MiB of one never-ending string into a
  // streaming route: the store answers 429 with etcd's gRPC limit error
  // and closes the connection.
  void ExpectUnterminatedObjectRefused(const std::string& path) {
    RawConnection c(http_->port());
    SendAll(&c, "POST " + path +
                    " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                    "\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    Chunk(R"({"create_request":{"key":")"));
    const std::string piece(64 * 1024, 'A');
    for (int i = 0; i < 48; ++i) SendAll(&c, Chunk(piece));
    StatusOr<net::HttpResponse> resp = c.ReadResponse("POST");
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->status, 429);
    EXPECT_NE(resp->body.find("\"code\":8"), std::string::npos) << resp->body;
    EXPECT_NE(resp->body.find("grpc: received message larger than max"),
              std::string::npos)
        << resp->body;
    EXPECT_TRUE(c.WaitForClose());
  }

  // Polls `done` every few milliseconds until it holds or 20 s pass.
  static bool WaitFor(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  double SnapshotUnsentBytes() {
    return metrics_.NewGauge("kplane_store_snapshot_unsent_bytes", "")
        ->With({})
        ->Value();
  }

  // Opens POST /v3/maintenance/snapshot, with a 4 KiB receive buffer if
  // `small_buffer`.
  std::unique_ptr<RawConnection> OpenSnapshot(bool small_buffer = false) {
    auto c = std::make_unique<RawConnection>(http_->port());
    int small = 4096;
    if (small_buffer) {
      setsockopt(c->fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    }
    c->Send(
        "POST /v3/maintenance/snapshot HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    return c;
  }

  std::string dir_;
  metrics::Registry metrics_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<ClientApi> api_;
};

TEST_F(StreamLimitsTest, WatchRequestLargerThanTheMessageLimitIsRefused) {
  ExpectUnterminatedObjectRefused("/v3/watch");
}

TEST_F(StreamLimitsTest, KeepAliveRequestLargerThanTheMessageLimitIsRefused) {
  ExpectUnterminatedObjectRefused("/v3/lease/keepalive");
}

// A watch stream whose client never reads holds about a megabyte of
// output; the rest waits in the MVCC stream's bounded queue and, once that
// is full, nowhere: its watcher becomes a victim that re-reads the log
// when the client catches up.
TEST_F(StreamLimitsTest, WatchStreamThatIsNotReadIsPaced) {
  RawConnection c(http_->port());
  int small = 4096;
  setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  // Key "/s/", range_end "/s0" (base64).
  SendAll(&c,
          "POST /v3/watch HTTP/1.1\r\nHost: x\r\nContent-Type: "
          "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
              Chunk(R"({"create_request":{"key":"L3Mv","range_end":"L3Mw"}})"));
  ASSERT_TRUE(c.ReadUntilContains("\"created\":true"));
  const std::string value(64 * 1024, 'v');
  for (int i = 0; i < 400; ++i) {  // 25 MiB of events
    etcdserverpb::PutRequest put;
    put.set_key("/s/" + std::to_string(i));
    put.set_value(value);
    ASSERT_TRUE(server_->Put(put).ok());
  }
  StatusOr<StoreRef> store = server_->ReadStore();
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->GetWatchStats().victims, 1u)
      << "the stream's responses were all moved into its output buffer";
}

// Issue 17: one watch response per HTTP chunk, as etcd's gateway flushes
// each message; OpenStack's etcd3gw parses one JSON object per chunk. Five
// watchers of one key on one stream get their events from one write, so
// one drain writes all five responses (in one send, each its own chunk).
TEST_F(StreamLimitsTest, WatchSendsEachResponseInItsOwnChunk) {
  constexpr int kWatchers = 5;
  RawConnection c(http_->port());
  std::string creates;
  for (int i = 0; i < kWatchers; ++i) {
    creates += Chunk(R"({"create_request":{"key":"Yw=="}})");
  }
  c.Send(
      "POST /v3/watch HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
      creates);
  etcdserverpb::PutRequest put;
  put.set_key("c");
  put.set_value("v");
  // The chunks' payloads, parsed off the raw stream after the head.
  std::vector<std::string> payloads;
  size_t events = 0, created = 0;
  auto parse = [&](std::string_view buf) {
    payloads.clear();
    events = created = 0;
    size_t p = buf.find("\r\n\r\n");
    if (p == std::string_view::npos) return;
    p += 4;
    for (;;) {
      size_t eol = buf.find("\r\n", p);
      if (eol == std::string_view::npos) return;
      const size_t n =
          std::stoul(std::string(buf.substr(p, eol - p)), nullptr, 16);
      if (buf.size() < eol + 2 + n + 2) return;
      std::string payload(buf.substr(eol + 2, n));
      if (payload.find("\"created\":true") != std::string::npos) ++created;
      if (payload.find("\"events\"") != std::string::npos) ++events;
      payloads.push_back(std::move(payload));
      p = eol + 2 + n + 2;
    }
  };
  ASSERT_TRUE(c.ReadUntil([&](std::string_view b) {
    parse(b);
    return created >= kWatchers;
  })) << c.buffer();
  ASSERT_TRUE(server_->Put(put).ok());
  ASSERT_TRUE(c.ReadUntil([&](std::string_view b) {
    parse(b);
    return events >= kWatchers;
  })) << c.buffer();
  EXPECT_EQ(created, kWatchers);
  EXPECT_EQ(events, kWatchers);
  for (const std::string& payload : payloads) {
    // Exactly one `{"result":...}` line per chunk.
    EXPECT_EQ(payload.rfind("{\"result\":", 0), 0u) << payload;
    EXPECT_EQ(payload.find('\n'), payload.size() - 1) << payload;
  }
}

// /v3/maintenance/snapshot streams the checkpoint as its client takes it:
// a client that does not read holds about a megabyte of output, not the
// whole (base64) snapshot. Before: every request read all files into one
// string and queued every blob at once, uncapped (4 stalled requests on a
// 30 MB store took the member from 117 to 508 MB).
TEST_F(StreamLimitsTest, SnapshotThatIsNotReadIsPaced) {
  constexpr int kValues = 16;
  std::mt19937_64 rng(7);
  std::string value(1 << 20, '\0');
  for (int i = 0; i < kValues; ++i) {
    for (char& ch : value) ch = static_cast<char>(rng());  // incompressible
    etcdserverpb::PutRequest put;
    put.set_key("/big/" + std::to_string(i));
    put.set_value(value);
    ASSERT_TRUE(server_->Put(put).ok());
  }
  constexpr int kStalled = 4;
  std::vector<std::unique_ptr<RawConnection>> conns;
  // The first with the kernel's buffers (it is read to the end below; a
  // 4 KiB window reads at delayed-ACK pace), the others with 4 KiB ones.
  for (int i = 0; i < kStalled; ++i) conns.push_back(OpenSnapshot(i > 0));
  // Each paused stream leaves at least kPaceBytes (1 MiB) unsent.
  ASSERT_TRUE(WaitFor([&] { return SnapshotUnsentBytes() >= kStalled << 20; }))
      << SnapshotUnsentBytes();
  // Nothing more is queued while the clients do not read.
  double most = 0;
  for (int i = 0; i < 50; ++i) {
    most = std::max(most, SnapshotUnsentBytes());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LE(most, kStalled * (2 << 20))
      << "unsent snapshot bytes of " << kStalled << " stalled requests";

  // A stalled stream read to the end is a whole, valid snapshot.
  StatusOr<net::HttpResponse> resp = conns[0]->ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->status, 200);
  std::string packed;
  size_t messages = 0;
  size_t pos = 0;
  uint64_t last_remaining = 0;
  while (pos < resp->body.size()) {
    size_t eol = resp->body.find('\n', pos);
    if (eol == std::string::npos) eol = resp->body.size();
    std::string line = resp->body.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) continue;
    etcdserverpb::SnapshotResponse m;
    ASSERT_TRUE(etcdjson::ParseStreamMessage(line, &m).ok())
        << line.substr(0, 200);
    if (messages == 0) {
      EXPECT_GT(m.header().revision(), 0);
    }
    // 64 KiB blobs, each telling what is left.
    if (m.remaining_bytes() > 0) {
      EXPECT_EQ(m.blob().size(), 64u << 10);
    }
    packed += m.blob();
    last_remaining = m.remaining_bytes();
    ++messages;
  }
  EXPECT_EQ(last_remaining, 0u);
  ASSERT_GT(packed.size(), size_t{kValues} << 20);
  ASSERT_EQ(packed.substr(0, 8), "KPSNAP1\n");
  size_t off = 8;
  bool current = false;
  while (off < packed.size()) {
    ASSERT_LE(off + 4, packed.size());
    const auto* b = reinterpret_cast<const unsigned char*>(packed.data() + off);
    uint32_t n = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                 (uint32_t{b[2]} << 8) | b[3];
    off += 4;
    storagepb::SnapshotFile h;
    ASSERT_TRUE(h.ParseFromArray(packed.data() + off, static_cast<int>(n)));
    off += n;
    ASSERT_LE(off + h.size(), packed.size()) << h.name();
    EXPECT_EQ(crc32c::Value(packed.data() + off, h.size()), h.crc32c())
        << h.name();
    off += h.size();
    if (h.name().ends_with("CURRENT")) current = true;
  }
  EXPECT_EQ(off, packed.size());
  EXPECT_TRUE(current) << "no RocksDB CURRENT file in the snapshot";

  // The clients gone, nothing is held, nor left on disk.
  conns.clear();
  EXPECT_TRUE(WaitFor([&] { return SnapshotUnsentBytes() == 0; }))
      << SnapshotUnsentBytes();
  const std::string snap = dir_ + "/m1/member/snap";
  EXPECT_TRUE(WaitFor([&] {
    for (const auto& e : fs::directory_iterator(snap)) {
      if (e.path().filename().string().starts_with("save-")) return false;
    }
    return true;
  }));
}

// A snapshot directory that a crash left behind (save-N, hard links to
// the database's files) is removed when the gateway starts, and does not
// stand in the way of the next snapshot of the same name.
TEST_F(StreamLimitsTest, StaleSnapshotDirectoriesAreRemovedAtStartup) {
  http_->Stop();
  api_.reset();
  const std::string stale = dir_ + "/m1/member/snap/save-1";
  fs::create_directories(stale + "/db");
  std::ofstream(stale + "/db/000001.sst") << "left by a crash";
  api_ = std::make_unique<ClientApi>(server_.get(), &metrics_);
  EXPECT_FALSE(fs::exists(stale));
  net::HttpServerOptions o;
  o.port = 0;
  o.metrics = &metrics_;
  http_ = std::make_unique<net::HttpServer>(o);
  api_->RegisterHandlers(http_.get());
  ASSERT_TRUE(http_->Start().ok());
  std::unique_ptr<RawConnection> c = OpenSnapshot();
  StatusOr<net::HttpResponse> resp = c->ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200) << resp->body.substr(0, 300);
}

// /v3/lease/keepalive renews on the store's workers, not the HTTP
// server's: before, each body piece was handled on an HTTP worker that
// waited for every renewal's proposal in turn, so a few busy keepalive
// streams held every worker and a serializable range waited seconds (16
// streams of 3,000 requests: 5-6 s; etcd 3.4.23: 0.2 s).
TEST_F(StreamLimitsTest, KeepAliveStreamsDoNotStallOtherRequests) {
  net::HttpServerOptions o;
  o.port = 0;
  o.metrics = &metrics_;
  o.worker_threads = 2;
  net::HttpServer http(o);
  api_->RegisterHandlers(&http);
  ASSERT_TRUE(http.Start().ok());
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(600);
  StatusOr<etcdserverpb::LeaseGrantResponse> lease = server_->LeaseGrant(grant);
  ASSERT_TRUE(lease.ok()) << lease.status();
  std::string body;
  for (int i = 0; i < 3000; ++i) {
    body += "{\"ID\":\"" + std::to_string(lease->id()) + "\"}";
  }
  constexpr int kStreams = 8;
  std::vector<std::unique_ptr<RawConnection>> streams;
  for (int i = 0; i < kStreams; ++i) {
    auto c = std::make_unique<RawConnection>(http.port());
    c->Send(
        "POST /v3/lease/keepalive HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
        Chunk(body));
    streams.push_back(std::move(c));
  }
  // Renewals are under way.
  ASSERT_TRUE(streams[0]->ReadUntilContains("\"TTL\""));
  RawConnection range(http.port());
  const std::string q = R"({"key":"YQ==","serializable":true})";
  range.Send(
      "POST /v3/kv/range HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(q.size()) + "\r\n\r\n" + q);
  std::future<StatusOr<net::HttpResponse>> answer = std::async(
      std::launch::async, [&range] { return range.ReadResponse("POST"); });
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(2)), std::future_status::ready)
      << "a serializable range waited behind " << kStreams
      << " keepalive streams";
  StatusOr<net::HttpResponse> resp = answer.get();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200) << resp->body;
  streams.clear();
  http.Stop();
}

// A keepalive of a lease that does not exist proposes nothing (it needs no
// token: each one was a raft entry); etcd 3.4.23 answers it from its
// lessor with the ID and no TTL, raftIndex unchanged (measured):
//   {"result":{"header":{...},"ID":"12345"}}
TEST_F(StreamLimitsTest, KeepAliveOfUnknownLeaseProposesNothing) {
  StatusOr<etcdserverpb::StatusResponse> before = server_->MemberStatus();
  ASSERT_TRUE(before.ok()) << before.status();
  constexpr int kRequests = 1000;
  std::string body;
  for (int i = 0; i < kRequests; ++i) body += R"({"ID":"12345"})";
  RawConnection c(http_->port());
  c.Send(
      "POST /v3/lease/keepalive HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
      Chunk(body) + "0\r\n\r\n");
  StatusOr<net::HttpResponse> resp = c.ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->status, 200) << resp->body;
  size_t answers = 0;
  for (size_t p = 0;
       (p = resp->body.find("{\"result\":", p)) != std::string::npos; ++p) {
    ++answers;
  }
  EXPECT_EQ(answers, size_t{kRequests});
  const std::string first = resp->body.substr(0, resp->body.find('\n'));
  EXPECT_NE(first.find("\"ID\":\"12345\""), std::string::npos) << first;
  EXPECT_EQ(first.find("TTL"), std::string::npos) << first;
  StatusOr<etcdserverpb::StatusResponse> after = server_->MemberStatus();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->raftindex(), before->raftindex());
}

}  // namespace
}  // namespace kplane::storage
