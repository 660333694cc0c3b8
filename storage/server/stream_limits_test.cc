// Bounded memory on the store's streaming routes (issue 15): an
// unterminated JSON object streamed into /v3/watch grew the store by
// 816 MiB; the request splitters of /v3/watch and /v3/lease/keepalive now
// refuse an object past etcd's gRPC message limit, and a watch stream whose
// client does not read is paced (its watchers become victims, as etcd's).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <filesystem>
#include <memory>
#include <string>

#include "base/metrics.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
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

}  // namespace
}  // namespace kplane::storage
