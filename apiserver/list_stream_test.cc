// Streamed LIST responses (list_stream.h): the streamed bytes are those of
// the whole-body encoding (RenderList) for JSON, PartialObjectMetadata and
// protobuf; a client that does not read holds a bounded backlog; a client
// that goes away frees the stream and its snapshot; and end to end through
// an ApiServer.
#include "apiserver/list_stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/test_server.h"
#include "base/mutex.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "objects/envelope.h"
#include "objects/scheme.h"
#include "objects/types.h"

namespace kplane::apiserver {
namespace {

using net::testing::Latch;
using net::testing::RawConnection;

// Pods with the fields that make encodings differ: labels and annotations
// (maps), containers, a status, one with characters JSON escapes.
ListResult Pods(int n) {
  ListResult list;
  for (int i = 0; i < n; ++i) {
    auto pod = std::make_shared<objects::corev1::Pod>();
    auto* m = pod->mutable_metadata();
    m->set_name("pod-" + std::to_string(i));
    m->set_namespace_("ns");
    m->set_uid("uid-" + std::to_string(i));
    m->set_resourceversion(std::to_string(100 + i));
    (*m->mutable_labels())["app"] = "web";
    (*m->mutable_labels())["z-index"] = std::to_string(i % 7);
    (*m->mutable_annotations())["note"] =
        i % 13 == 0 ? "quote \" backslash \\ tab \t é" : "plain";
    auto* c = pod->mutable_spec()->add_containers();
    c->set_name("c");
    c->set_image("nginx:1." + std::to_string(i % 30));
    pod->mutable_spec()->set_nodename("node-" + std::to_string(i % 50));
    pod->mutable_status()->set_phase(i % 2 ? "Running" : "Pending");
    pod->mutable_status()->set_podip("10.0." + std::to_string(i % 250) + ".1");
    list.items.push_back(std::move(pod));
  }
  list.revision = 100 + n;
  return list;
}

RenderOptions Render(objects::MediaType media, ResponseShape shape) {
  RenderOptions o;
  o.negotiated.media = media;
  o.negotiated.shape = shape;
  o.resource = objects::Scheme::Default().FindResource("", "v1", "pods");
  CHECK(o.resource != nullptr);
  return o;
}

// The encoder's pieces joined, asking for `min_bytes` a piece.
std::string Streamed(const RenderOptions& o, ListResult list, size_t min_bytes,
                     int* pieces) {
  std::unique_ptr<ListEncoder> enc = NewListEncoder(o, &list);
  EXPECT_NE(enc, nullptr);
  if (enc == nullptr) return "";
  std::string out;
  *pieces = 0;
  for (bool done = false; !done;) {
    const size_t before = out.size();
    done = enc->Next(min_bytes, &out);
    EXPECT_GT(out.size(), before);
    ++*pieces;
  }
  return out;
}

struct Form {
  const char* name;
  objects::MediaType media;
  ResponseShape shape;
};
constexpr Form kForms[] = {
    {"json", objects::MediaType::kJson, ResponseShape::kObject},
    {"metadata", objects::MediaType::kJson, ResponseShape::kMetadata},
    {"protobuf", objects::MediaType::kProtobuf, ResponseShape::kObject},
};

TEST(ListEncoderTest, StreamedBytesEqualTheWholeBody) {
  struct Case {
    const char* name;
    int items;
    std::string continue_token;
    std::optional<int64_t> remaining;
  };
  const Case cases[] = {
      {"empty", 0, "", std::nullopt},
      {"one", 1, "", std::nullopt},
      {"many", 3000, "", std::nullopt},
      {"page", 500, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ", 2500},
      {"page, no count", 20, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", std::nullopt},
  };
  for (const Form& f : kForms) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(f.name) + ", " + c.name);
      ListResult list = Pods(c.items);
      list.continue_token = c.continue_token;
      list.remaining_items = c.remaining;
      const RenderOptions o = Render(f.media, f.shape);
      const std::string whole = RenderList(o, list);
      for (size_t min_bytes : {size_t{1}, size_t{1000}, size_t{64 * 1024}}) {
        SCOPED_TRACE(min_bytes);
        int pieces = 0;
        const std::string streamed = Streamed(o, list, min_bytes, &pieces);
        // Not EXPECT_EQ: a failure would print megabytes.
        EXPECT_EQ(streamed.size(), whole.size());
        EXPECT_TRUE(streamed == whole)
            << "first difference at byte "
            << std::mismatch(
                   streamed.begin(),
                   streamed.begin() + std::min(streamed.size(), whole.size()),
                   whole.begin())
                       .first -
                   streamed.begin();
        if (min_bytes == 1) {
          // The envelope, then one item a piece (the last with the end).
          EXPECT_EQ(pieces, c.items + 1);
        }
      }
    }
  }
}

TEST(ListEncoderTest, ProtobufBodyDecodesToTheList) {
  ListResult list = Pods(50);
  list.continue_token = "tok";
  list.remaining_items = 7;
  int pieces = 0;
  const std::string body =
      Streamed(Render(objects::MediaType::kProtobuf, ResponseShape::kObject),
               list, 4096, &pieces);
  StatusOr<objects::Envelope> env = objects::DecodeEnvelope(body);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->type_meta.kind, "PodList");
  objects::corev1::PodList pods;
  ASSERT_TRUE(pods.ParseFromString(env->raw));
  ASSERT_EQ(pods.items_size(), 50);
  EXPECT_EQ(pods.items(49).metadata().name(), "pod-49");
  EXPECT_EQ(pods.metadata().resourceversion(), "150");
  EXPECT_EQ(pods.metadata().continue_(), "tok");
  EXPECT_EQ(pods.metadata().remainingitemcount(), 7);
}

TEST(ListEncoderTest, TablesAndYamlAreRenderedWhole) {
  ListResult list = Pods(3);
  EXPECT_EQ(
      NewListEncoder(Render(objects::MediaType::kJson, ResponseShape::kTable),
                     &list),
      nullptr);
  EXPECT_EQ(
      NewListEncoder(Render(objects::MediaType::kYaml, ResponseShape::kObject),
                     &list),
      nullptr);
  EXPECT_EQ(list.items.size(), 3u);  // left to the caller
}

TEST(ListEncoderTest, ItemsAreReleasedAsTheyAreEncoded) {
  ListResult list = Pods(3);
  std::weak_ptr<const google::protobuf::Message> first = list.items[0];
  std::weak_ptr<const google::protobuf::Message> last = list.items[2];
  std::unique_ptr<ListEncoder> enc = NewListEncoder(
      Render(objects::MediaType::kJson, ResponseShape::kObject), &list);
  list = ListResult();
  std::string out;
  ASSERT_FALSE(enc->Next(1, &out));  // the envelope
  EXPECT_FALSE(first.expired());
  ASSERT_FALSE(enc->Next(1, &out));  // the first item
  EXPECT_TRUE(first.expired());
  EXPECT_FALSE(last.expired());
  enc.reset();
  EXPECT_TRUE(last.expired());
}

// --- StreamList over a real HTTP server, with a synthetic list -------------

constexpr size_t kChunk = 16 * 1024;
constexpr size_t kHighWater = 64 * 1024;
constexpr size_t kItem = 1000;

// A list of `total` bytes in items of kItem bytes.
struct Synthetic {
  size_t total = 0;
  Latch destroyed;
  Mutex mu;
  size_t produced GUARDED_BY(mu) = 0;
  std::shared_ptr<net::Responder> responder GUARDED_BY(mu);
};

class SyntheticEncoder : public ListEncoder {
 public:
  explicit SyntheticEncoder(std::shared_ptr<Synthetic> s) : s_(std::move(s)) {}
  ~SyntheticEncoder() override { s_->destroyed.CountDown(); }
  bool Next(size_t min_bytes, std::string* out) override {
    size_t added = 0;
    while (left() > 0 && added < min_bytes) {
      const size_t n = std::min(kItem, left());
      out->append(n, 'x');
      added += n;
      MutexLock l(&s_->mu);
      s_->produced += n;
    }
    return left() == 0;
  }

 private:
  size_t left() {
    MutexLock l(&s_->mu);
    return s_->total - s_->produced;
  }
  std::shared_ptr<Synthetic> s_;
};

// Waits (up to the test deadline) for `cond`, a state the server reaches
// on its own threads and announces nowhere else.
bool Await(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

class StreamListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The fake clock moves only when a test advances it: no timeout fires
    // in the other tests.
    server_ = std::make_unique<net::HttpServer>(net::HttpServerOptions{
        .timer_tick = seconds(1), .clock = &clock_, .metrics = &registry_});
    server_->Handle(
        "GET", "/list",
        [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
          std::shared_ptr<Synthetic> s = next_;
          {
            MutexLock l(&s->mu);
            s->responder = r;
          }
          ListStreamOptions o;
          o.chunk_bytes = kChunk;
          o.high_water = kHighWater;
          o.open_streams = &open_;
          o.deadline = deadline_;
          StreamList(r, {{"Content-Type", "application/json"}},
                     std::make_unique<SyntheticEncoder>(s), o, [] {});
        });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Stop(); }

  std::shared_ptr<Synthetic> Next(size_t total) {
    next_ = std::make_shared<Synthetic>();
    next_->total = total;
    return next_;
  }
  metrics::Registry registry_;
  metrics::Gauge open_;
  FakeClock clock_;  // outlives server_, whose timer thread uses it
  Duration deadline_ = Duration::zero();  // read by the handler
  std::unique_ptr<net::HttpServer> server_;
  std::shared_ptr<Synthetic> next_;
};

TEST_F(StreamListTest, SmallListIsOneWholeResponse) {
  Next(3 * kItem);
  net::HttpClient client("127.0.0.1", server_->port());
  StatusOr<net::HttpResponse> r = client.Request("GET", "/list", {}, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, std::string(3 * kItem, 'x'));
  EXPECT_EQ(r->headers.Get("Content-Length"), std::to_string(3 * kItem));
  EXPECT_FALSE(r->headers.Has("Transfer-Encoding"));
}

TEST_F(StreamListTest, LargeListIsChunkedAndComplete) {
  std::shared_ptr<Synthetic> s = Next(5 * 1024 * 1024);
  net::HttpClient client("127.0.0.1", server_->port());
  StatusOr<net::HttpResponse> r = client.Request("GET", "/list", {}, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body.size(), s->total);
  EXPECT_EQ(r->body.find_first_not_of('x'), std::string::npos);
  EXPECT_EQ(r->headers.Get("Transfer-Encoding"), "chunked");
  EXPECT_FALSE(r->headers.Has("Content-Length"));
  EXPECT_TRUE(s->destroyed.Wait());
  EXPECT_TRUE(Await([&] { return open_.Value() == 0; }));
}

// A client that sends its LIST and reads nothing: the server encodes only
// while less than high water waits unsent, so it holds at most high water +
// one chunk + one item, however large the list; when the client goes, the
// encoder (the snapshot) is freed.
TEST_F(StreamListTest, SlowReaderIsBoundedAndDisconnectFreesTheStream) {
  constexpr size_t kTotal = 256 * 1024 * 1024;  // far past kernel buffers
  std::shared_ptr<Synthetic> s = Next(kTotal);
  auto c = std::make_unique<RawConnection>(server_->port());
  int small = 4096;
  setsockopt(c->fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  c->Send("GET /list HTTP/1.1\r\nHost: x\r\n\r\n");
  // The socket is full and the backlog reached high water: the pump stopped.
  ASSERT_TRUE(Await([&] {
    MutexLock l(&s->mu);
    return s->responder != nullptr &&
           s->responder->BufferedBytes() >= kHighWater;
  }));
  {
    MutexLock l(&s->mu);
    EXPECT_LE(s->responder->BufferedBytes(), kHighWater + kChunk + kItem);
    EXPECT_LT(s->produced, size_t{64} * 1024 * 1024);
  }
  EXPECT_EQ(open_.Value(), 1);
  EXPECT_FALSE(s->destroyed.Done());

  c->Close();
  EXPECT_TRUE(s->destroyed.Wait()) << "the encoder outlived its client";
  {
    MutexLock l(&s->mu);
    EXPECT_LT(s->produced, size_t{64} * 1024 * 1024)
        << "the rest of the list was encoded for nobody";
  }
  EXPECT_TRUE(Await([&] { return open_.Value() == 0; }))
      << "the stream outlived its client";
  {
    MutexLock l(&s->mu);
    s->responder.reset();
  }
}

// A client that stops reading holds its list only until the deadline
// (kube-apiserver's request timeout): then the connection closes without
// the last chunk, and the encoder and its snapshot are freed.
TEST_F(StreamListTest, ClientThatStopsReadingIsCutAtTheDeadline) {
  deadline_ = seconds(60);
  constexpr size_t kTotal = 256 * 1024 * 1024;
  std::shared_ptr<Synthetic> s = Next(kTotal);
  RawConnection c(server_->port());
  int small = 4096;
  setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  c.Send("GET /list HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(Await([&] {
    MutexLock l(&s->mu);
    return s->responder != nullptr &&
           s->responder->BufferedBytes() >= kHighWater;
  }));
  clock_.WaitForWaiters(1);  // the server's timer sleeps
  clock_.Advance(seconds(59));
  EXPECT_EQ(open_.Value(), 1);
  clock_.Advance(seconds(2));
  EXPECT_TRUE(s->destroyed.Wait()) << "the stream outlived its deadline";
  EXPECT_TRUE(Await([&] { return open_.Value() == 0; }));
  // (Reading the socket to its end would take long: the kernel still sends
  // what was queued before the close through the client's 4 KiB window.)
  {
    MutexLock l(&s->mu);
    EXPECT_TRUE(s->responder->IsClosed());
    EXPECT_LT(s->produced, kTotal);
    s->responder.reset();
  }
}

// --- End to end: an ApiServer's LIST ------------------------------------

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

double Metric(testing::TestServer& s, const std::string& name) {
  std::string text = "\n" + s.metrics()->Render();
  size_t pos = text.find("\n" + name + " ");
  if (pos == std::string::npos) return -1;
  return std::stod(text.substr(pos + name.size() + 2));
}

TEST(ApiListStreamTest, LargeListsStreamSmallOnesDoNot) {
  testing::TestServer s;
  // 100 x 64 KiB: 6.5 MB, more than the kernel's socket buffers take
  // (tcp_wmem's 4 MiB at most), so a client that does not read stops it.
  constexpr int kItems = 100;
  std::string last_rv;
  for (int i = 0; i < kItems; ++i) {
    testing::Response created =
        s.Post(kConfigMaps, R"({"metadata":{"name":"cm-)" + std::to_string(i) +
                                R"("},"data":{"k":")" +
                                std::string(64 * 1024, 'v') + "\"}}");
    ASSERT_EQ(created.code, 201);
    last_rv = created.Str({"metadata", "resourceVersion"});
  }
  // From the watch cache once it holds the last create (resourceVersion=0
  // may be served before the cache has seen it); later reads find it there.
  testing::Response json =
      s.Get(std::string(kConfigMaps) + "?resourceVersion=" + last_rv +
            "&resourceVersionMatch=NotOlderThan");
  ASSERT_EQ(json.code, 200);
  EXPECT_EQ(json.headers.Get("Transfer-Encoding"), "chunked");
  ASSERT_TRUE(json.json.IsObject());
  EXPECT_EQ(json.Str({"kind"}), "ConfigMapList");
  EXPECT_FALSE(json.Str({"metadata", "resourceVersion"}).empty());
  ASSERT_EQ(json.At({"items"})->Size(), static_cast<unsigned>(kItems));

  testing::Response proto =
      s.Get(std::string(kConfigMaps) + "?resourceVersion=0",
            "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(proto.code, 200);
  EXPECT_EQ(proto.headers.Get("Transfer-Encoding"), "chunked");
  StatusOr<objects::Envelope> env = objects::DecodeEnvelope(proto.body);
  ASSERT_TRUE(env.ok()) << env.status();
  objects::corev1::ConfigMapList list;
  ASSERT_TRUE(list.ParseFromString(env->raw));
  ASSERT_EQ(list.items_size(), kItems);
  EXPECT_EQ(list.metadata().resourceversion(),
            json.Str({"metadata", "resourceVersion"}));

  testing::Response small = s.Get(std::string(kConfigMaps) +
                                  "?resourceVersion=0&labelSelector=none%3D1");
  ASSERT_EQ(small.code, 200);
  EXPECT_FALSE(small.headers.Has("Transfer-Encoding"));
  EXPECT_EQ(small.headers.Get("Content-Length"),
            std::to_string(small.body.size()));
  EXPECT_EQ(Metric(s, "apiserver_list_streams_open"), 0);

  // A client that asks for the list and leaves without reading it.
  auto c = std::make_unique<RawConnection>(s.port());
  int tiny = 4096;
  setsockopt(c->fd(), SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny));
  c->Send("GET " + std::string(kConfigMaps) +
          "?resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(c->ReadUntilContains("\r\n\r\n"));  // the stream started
  EXPECT_TRUE(
      Await([&] { return Metric(s, "apiserver_list_streams_open") == 1; }));
  c->Close();
  EXPECT_TRUE(
      Await([&] { return Metric(s, "apiserver_list_streams_open") == 0; }));
}

}  // namespace
}  // namespace kplane::apiserver
