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
#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/meta.h"
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

// Where two bodies first differ (a failure message that does not print
// megabytes).
size_t FirstDifference(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  return std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin();
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
    {"protobuf metadata", objects::MediaType::kProtobuf,
     ResponseShape::kMetadata},
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
            << "first difference at byte " << FirstDifference(streamed, whole);
        if (min_bytes == 1) {
          // The envelope, then one item a piece (the last with the end).
          EXPECT_EQ(pieces, c.items + 1);
        }
      }
    }
  }
}

// Strings that take the encoder's every path: escapes, control
// characters, multi-byte UTF-8 (2, 3 and 4 bytes, U+2028), invalid UTF-8
// (replaced), and the empty string.
const char* const kAwkward[] = {
    "quote \" backslash \\ slash / tab \t newline \n",
    "control \x01\x1f del \x7f",
    "é ß 日本語 😀 \u2028 \u2029",
    "invalid \xff\xfe utf-8 \xc3",
    "",
    "</script>&<>'",
};

// Pods that differ in what their encoding must get right: the fields
// above in labels, annotations, env and status; empty maps, lists and
// messages; a pod with nothing but a name.
ListResult VariedPods(int n) {
  ListResult list;
  constexpr int kAwkwardCount = sizeof(kAwkward) / sizeof(kAwkward[0]);
  for (int i = 0; i < n; ++i) {
    auto pod = std::make_shared<objects::corev1::Pod>();
    auto* m = pod->mutable_metadata();
    m->set_name("pod-" + std::to_string(i));
    m->set_resourceversion(std::to_string(100 + i));
    const std::string odd = kAwkward[i % kAwkwardCount];
    switch (i % 4) {
      case 0:  // only a name and a resourceVersion
        break;
      case 1:
        m->set_namespace_("ns");
        (*m->mutable_annotations())["note"] = odd;
        (*m->mutable_annotations())[odd] = "as a key";
        (*m->mutable_labels())["empty"] = "";
        pod->mutable_spec();  // present but empty
        break;
      case 2: {
        m->set_namespace_("ns");
        auto* c = pod->mutable_spec()->add_containers();
        c->set_name("c");
        c->set_image(odd);
        c->add_args(odd);
        c->add_args("");
        auto* env = c->add_env();
        env->set_name("E");
        env->set_value(odd);
        pod->mutable_spec()->set_terminationgraceperiodseconds(i);
        pod->mutable_spec()->set_hostnetwork(i % 8 == 2);
        break;
      }
      case 3:
        m->set_namespace_("ns");
        m->set_generation(i);
        pod->mutable_status()->set_phase("Running");
        pod->mutable_status()->set_message(odd);
        pod->mutable_status()->add_conditions()->set_type("Ready");
        break;
    }
    list.items.push_back(std::move(pod));
  }
  list.revision = 100 + n;
  return list;
}

// What the watch cache puts next to its objects (cacher.h, keep_json).
void KeepJson(ListResult* list) {
  list->item_json.clear();
  for (const ObjectPtr& item : list->items) {
    list->item_json.push_back(
        std::make_shared<const std::string>(objects::EncodeJson(*item)));
  }
}

// A list whose items carry the JSON the watch cache keeps streams the
// bytes the encoder writes for the objects (RenderList ignores item_json:
// the reference), in every form; PartialObjectMetadata lists do not use
// the cached JSON (their items are another form).
TEST(ListEncoderTest, CachedItemJsonGivesTheSameBytes) {
  for (const Form& f : kForms) {
    for (int n : {1, 7, 400}) {
      SCOPED_TRACE(std::string(f.name) + ", " + std::to_string(n));
      ListResult list = VariedPods(n);
      const RenderOptions o = Render(f.media, f.shape);
      const std::string whole = RenderList(o, list);
      KeepJson(&list);
      for (size_t min_bytes : {size_t{1}, size_t{64 * 1024}}) {
        int pieces = 0;
        const std::string streamed = Streamed(o, list, min_bytes, &pieces);
        EXPECT_EQ(streamed.size(), whole.size());
        EXPECT_TRUE(streamed == whole)
            << "first difference at byte " << FirstDifference(streamed, whole);
      }
    }
  }
}

// The cached JSON is what is sent (so the test above compares the cache's
// bytes, not a second encoding): a marked entry shows up in a JSON list,
// a null one is encoded, and neither touches a metadata list.
TEST(ListEncoderTest, CachedItemJsonIsWhatIsSent) {
  ListResult list = VariedPods(3);
  KeepJson(&list);
  list.item_json[1] = std::make_shared<const std::string>("{\"marked\":1}");
  list.item_json[2] = nullptr;
  const std::string third = objects::EncodeJson(*list.items[2]);
  int pieces = 0;
  const std::string json =
      Streamed(Render(objects::MediaType::kJson, ResponseShape::kObject), list,
               1, &pieces);
  EXPECT_NE(json.find(",{\"marked\":1},"), std::string::npos) << json;
  EXPECT_NE(json.find("," + third + "]}"), std::string::npos) << json;
  const std::string meta =
      Streamed(Render(objects::MediaType::kJson, ResponseShape::kMetadata),
               list, 1, &pieces);
  EXPECT_EQ(meta.find("marked"), std::string::npos);
  EXPECT_EQ(meta, RenderList(Render(objects::MediaType::kJson,
                                    ResponseShape::kMetadata),
                             list));
}

// --- Watch frames from the cache's JSON (encoding.h, WatchEvent) --------

// A watch frame made from the JSON the cache kept (kind and apiVersion put
// in front) is the frame encoded from the object, for every event type and
// awkward pod; metadata and protobuf frames do not use it.
TEST(WatchFrameTest, FrameFromCachedJsonIsTheEncodedFrame) {
  ListResult list = VariedPods(40);
  for (const Form& f : kForms) {
    const RenderOptions o = Render(f.media, f.shape);
    for (const ObjectPtr& pod : list.items) {
      for (WatchEventType type :
           {WatchEventType::kAdded, WatchEventType::kModified,
            WatchEventType::kDeleted}) {
        WatchEvent plain;
        plain.type = type;
        plain.object = pod;
        plain.revision = 7;
        WatchEvent cached;
        cached.type = type;
        cached.object = pod;
        cached.revision = 7;
        cached.object_json =
            std::make_shared<const std::string>(objects::EncodeJson(*pod));
        SCOPED_TRACE(std::string(f.name) + " " + objects::Name(*pod));
        EXPECT_EQ(RenderWatchEvent(o, cached, true),
                  RenderWatchEvent(o, plain, true));
      }
    }
  }
}

// The cached bytes are what the frame carries (so the test above compares
// them), also when the object has no members.
TEST(WatchFrameTest, FrameCarriesTheCachedBytes) {
  WatchEvent e;
  e.type = WatchEventType::kModified;
  e.object = VariedPods(1).items[0];
  e.object_json = std::make_shared<const std::string>("{\"marked\":1}");
  const RenderOptions json =
      Render(objects::MediaType::kJson, ResponseShape::kObject);
  EXPECT_EQ(RenderWatchEvent(json, e, true),
            "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\","
            "\"apiVersion\":\"v1\",\"marked\":1}}\n");
  e.object_json = std::make_shared<const std::string>("{}");
  EXPECT_EQ(RenderWatchEvent(json, e, true),
            "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\","
            "\"apiVersion\":\"v1\"}}\n");
  EXPECT_EQ(
      RenderWatchEvent(
          Render(objects::MediaType::kJson, ResponseShape::kMetadata), e, true)
          .find("marked"),
      std::string::npos);
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

// With the kept JSON's budget full (--watch-cache-json-max-bytes), later
// versions keep none and a LIST from the cache encodes them: the same
// items, the metrics showing the bound at work.
TEST(ApiListStreamTest, ListIsWholeWhenTheKeptJsonBudgetIsFull) {
  auto budget = std::make_shared<KeptJsonBudget>(8 * 1024);
  testing::TestServer s(
      [&](ApiServerOptions* o) { o->cacher.json_budget = budget; });
  constexpr int kItems = 20;  // ~1 KiB of JSON each: the budget holds ~7
  std::string last_rv;
  for (int i = 0; i < kItems; ++i) {
    testing::Response created =
        s.Post(kConfigMaps, R"({"metadata":{"name":"cm-)" + std::to_string(i) +
                                R"("},"data":{"k":")" + std::string(1000, 'v') +
                                "\"}}");
    ASSERT_EQ(created.code, 201);
    last_rv = created.Str({"metadata", "resourceVersion"});
  }
  testing::Response list =
      s.Get(std::string(kConfigMaps) + "?resourceVersion=" + last_rv +
            "&resourceVersionMatch=NotOlderThan");
  ASSERT_EQ(list.code, 200);
  ASSERT_EQ(list.At({"items"})->Size(), static_cast<unsigned>(kItems));
  for (int i = 0; i < kItems; ++i) {
    EXPECT_EQ(
        (*list.At({"items"}))[static_cast<rapidjson::SizeType>(i)]["data"]["k"]
            .GetString(),
        std::string(1000, 'v'));
  }
  EXPECT_GT(Metric(s, "apiserver_watch_cache_json_bytes"), 0);
  EXPECT_LE(Metric(s, "apiserver_watch_cache_json_bytes"), 8 * 1024);
  EXPECT_GE(Metric(s, "apiserver_watch_cache_json_refused_total"), 10);
}

// A LIST from the watch cache (whose items are the JSON it kept) is byte
// for byte the LIST of the same revision from the store (encoded from the
// objects), for pods with awkward content; and after every pod changed, the
// cache serves the new versions' bytes, not the ones it kept before.
TEST(ApiListStreamTest, CachedListBodyEqualsTheStoreEncoding) {
  testing::TestServer s;
  constexpr char kPods[] = "/api/v1/namespaces/default/pods";
  // JSON-escaped forms of the strings VariedPods uses (JSON cannot carry
  // invalid UTF-8).
  const std::string odd[] = {
      R"(quote \" backslash \\ slash \/ tab \t newline \n)",
      R"(control \u0001\u001f del \u007f)",
      "é ß 日本語 😀 \\u2028 \\u2029",
      "",
      "</script>&<>'",
  };
  constexpr int kItems = 60;  // big enough to stream (> 64 KiB)
  std::string last_rv;
  for (int i = 0; i < kItems; ++i) {
    const std::string& o = odd[i % 5];
    const std::string pad(i % 3 == 0 ? 3000 : 0, 'p');
    testing::Response created = s.Post(
        kPods, R"({"metadata":{"name":"p-)" + std::to_string(i) +
                   R"(","labels":{"app":"web"},"annotations":{"note":")" + o +
                   R"(","pad":")" + pad +
                   R"("}},"spec":{"containers":[{"name":"c","image":"nginx",)"
                   R"("args":[")" +
                   o + R"(",""],"env":[{"name":"E","value":")" + o +
                   R"("}]}]}})");
    ASSERT_EQ(created.code, 201) << created.body;
    last_rv = created.Str({"metadata", "resourceVersion"});
  }
  auto compare = [&](const std::string& rv) {
    // From the cache, once it has `rv`; then the store at the list's own
    // revision.
    testing::Response cached =
        s.Get(std::string(kPods) + "?resourceVersion=" + rv +
              "&resourceVersionMatch=NotOlderThan");
    ASSERT_EQ(cached.code, 200);
    EXPECT_EQ(cached.headers.Get("Transfer-Encoding"), "chunked");
    const std::string list_rv = cached.Str({"metadata", "resourceVersion"});
    ASSERT_FALSE(list_rv.empty());
    testing::Response stored =
        s.Get(std::string(kPods) + "?resourceVersionMatch=Exact&" +
              "resourceVersion=" + list_rv);
    ASSERT_EQ(stored.code, 200);
    ASSERT_EQ(stored.At({"items"})->Size(), static_cast<unsigned>(kItems));
    EXPECT_EQ(cached.body.size(), stored.body.size());
    EXPECT_TRUE(cached.body == stored.body)
        << "first difference at byte "
        << FirstDifference(cached.body, stored.body);
  };
  compare(last_rv);

  for (int i = 0; i < kItems; ++i) {
    testing::Response patched = s.Patch(
        std::string(kPods) + "/p-" + std::to_string(i),
        R"({"metadata":{"labels":{"v":"2"},"annotations":{"note":"new ☃ \")" +
            std::to_string(i) + R"(\""}}})",
        "application/merge-patch+json");
    ASSERT_EQ(patched.code, 200) << patched.body;
    last_rv = patched.Str({"metadata", "resourceVersion"});
  }
  compare(last_rv);
  testing::Response after = s.Get(std::string(kPods) + "?resourceVersion=0");
  ASSERT_EQ(after.code, 200);
  const rapidjson::Value* items = after.At({"items"});
  ASSERT_TRUE(items != nullptr && items->IsArray());
  ASSERT_EQ(items->Size(), static_cast<unsigned>(kItems));
  for (const rapidjson::Value& item : items->GetArray()) {
    EXPECT_STREQ(item["metadata"]["labels"]["v"].GetString(), "2");
  }
}

// Paginated LISTs (limit, resourceVersion ""): the first page comes from
// the watch cache at the revision it caught up to, and is byte for byte the
// store's first page at that revision (resourceVersionMatch=Exact):
// items, metadata.resourceVersion, continue, remainingItemCount (only
// without selectors). Every later page follows the continue token of each
// path and again compares the bytes, with writes between pages; and
// the pages together are the whole list at the first page's revision.
TEST(ApiListStreamTest, PaginatedListFirstPageFromTheCacheEqualsTheStores) {
  testing::TestServer s;
  constexpr char kPods[] = "/api/v1/namespaces/default/pods";
  const std::string from_cache =
      R"(apiserver_cache_list_total{group="",resource="pods",index=""})";
  const std::string odd[] = {
      R"(quote \" backslash \\ tab \t newline \n)",
      "é ß 日本語 😀",
      "",
      "</script>&<>'",
  };
  constexpr int kItems = 23;
  for (int i = 0; i < kItems; ++i) {
    testing::Response created = s.Post(
        kPods, R"({"metadata":{"name":"p-)" + std::to_string(i) +
                   R"(","labels":{"app":")" + (i % 3 == 0 ? "db" : "web") +
                   R"("},"annotations":{"note":")" + odd[i % 4] +
                   R"("}},"spec":{"containers":[{"name":"c","image":"nginx",)"
                   R"("args":[")" +
                   odd[i % 4] + R"("]}]}})");
    ASSERT_EQ(created.code, 201) << created.body;
  }
  int writes = 0;
  // Changes the list between two pages: a new pod (after every key so far,
  // and before some) and a changed one.
  auto write = [&] {
    const int n = writes++;
    testing::Response created =
        s.Post(kPods, R"({"metadata":{"name":"p-1)" + std::to_string(n) +
                          R"(x","labels":{"app":"db"}},"spec":{"containers":)"
                          R"([{"name":"c","image":"nginx"}]}})");
    ASSERT_EQ(created.code, 201) << created.body;
    testing::Response patched = s.Patch(
        std::string(kPods) + "/p-" + std::to_string(n % kItems),
        R"({"metadata":{"annotations":{"w":")" + std::to_string(n) + R"("}}})",
        "application/merge-patch+json");
    ASSERT_EQ(patched.code, 200) << patched.body;
  };
  auto names = [](const testing::Response& r) {
    std::vector<std::string> out;
    const rapidjson::Value* items = r.At({"items"});
    if (items == nullptr || !items->IsArray()) return out;
    for (const rapidjson::Value& item : items->GetArray()) {
      out.push_back(std::string(item["metadata"]["name"].GetString()) + "@" +
                    item["metadata"]["resourceVersion"].GetString());
    }
    return out;
  };
  const std::string selectors[] = {"", "&labelSelector=app%3Ddb",
                                   "&fieldSelector=metadata.name%21%3Dp-4"};
  for (const std::string& sel : selectors) {
    for (int limit : {1, 5, 8, 23, 40}) {
      SCOPED_TRACE("selector '" + sel + "' limit " + std::to_string(limit));
      const std::string query =
          std::string(kPods) + "?limit=" + std::to_string(limit) + sel;
      const double cached_lists = Metric(s, from_cache);
      testing::Response cached = s.Get(query);
      ASSERT_EQ(cached.code, 200) << cached.body;
      EXPECT_EQ(Metric(s, from_cache), cached_lists + 1)
          << "the first page did not come from the watch cache";
      const std::string rv = cached.Str({"metadata", "resourceVersion"});
      ASSERT_FALSE(rv.empty());
      testing::Response stored =
          s.Get(query + "&resourceVersionMatch=Exact&resourceVersion=" + rv);
      ASSERT_EQ(stored.code, 200) << stored.body;
      EXPECT_TRUE(cached.body == stored.body)
          << "first page: first difference at byte "
          << FirstDifference(cached.body, stored.body)
          << "\ncache: " << cached.body.substr(0, 300)
          << "\nstore: " << stored.body.substr(0, 300);
      const bool more = !cached.Str({"metadata", "continue"}).empty();
      const rapidjson::Value* remaining =
          cached.At({"metadata", "remainingItemCount"});
      EXPECT_EQ(remaining != nullptr, more && sel.empty());

      std::vector<std::string> all = names(cached);
      std::string token_c = cached.Str({"metadata", "continue"});
      std::string token_s = stored.Str({"metadata", "continue"});
      int pages = 1;
      while (!token_c.empty() || !token_s.empty()) {
        if (pages <= 3)
          write();  // (a bound: a page a write would grow
                    // the list as fast as limit=1 reads it)
        testing::Response next_c = s.Get(query + "&continue=" + token_c);
        testing::Response next_s = s.Get(query + "&continue=" + token_s);
        ASSERT_EQ(next_c.code, 200) << next_c.body;
        ASSERT_EQ(next_s.code, 200) << next_s.body;
        EXPECT_TRUE(next_c.body == next_s.body)
            << "page " << pages + 1 << ": first difference at byte "
            << FirstDifference(next_c.body, next_s.body);
        EXPECT_EQ(next_c.Str({"metadata", "resourceVersion"}), rv);
        for (std::string& n : names(next_c)) all.push_back(std::move(n));
        token_c = next_c.Str({"metadata", "continue"});
        token_s = next_s.Str({"metadata", "continue"});
        ASSERT_LT(++pages, 100);
      }
      // Every page together: the list at the first page's revision.
      testing::Response whole = s.Get(std::string(kPods) +
                                      "?resourceVersionMatch=Exact&"
                                      "resourceVersion=" +
                                      rv + sel);
      ASSERT_EQ(whole.code, 200);
      EXPECT_EQ(all, names(whole));
      write();
    }
  }
}

}  // namespace
}  // namespace kplane::apiserver
