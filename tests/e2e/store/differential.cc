#include "tests/e2e/store/differential.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "base/base64.h"
#include "storage/etcdjson/json_stream.h"

namespace kplane::e2e {

namespace {

bool IsRevisionField(std::string_view name) {
  // "rev": an election's LeaderKey (its key's create revision).
  return name == "revision" || name == "create_revision" ||
         name == "mod_revision" || name == "compact_revision" || name == "rev";
}

void Walk(rapidjson::Value& v, int offset,
          rapidjson::Document::AllocatorType& a) {
  if (v.IsArray()) {
    for (auto& e : v.GetArray()) Walk(e, offset, a);
    return;
  }
  if (!v.IsObject()) return;
  for (const char* drop : {"cluster_id", "member_id", "raft_term"}) {
    if (v.HasMember(drop)) v.RemoveMember(drop);
  }
  if (v.HasMember("leases") && v["leases"].IsArray()) {
    auto arr = v["leases"].GetArray();
    std::vector<rapidjson::Value*> items;
    for (auto& e : arr) items.push_back(&e);
    auto id = [](const rapidjson::Value* e) -> int64_t {
      if (!e->IsObject() || !e->HasMember("ID")) return 0;
      const auto& x = (*e)["ID"];
      return x.IsString() ? std::stoll(x.GetString())
                          : (x.IsInt64() ? x.GetInt64() : 0);
    };
    // Bubble sort by swapping values in place (lists are short).
    for (size_t i = 0; i < items.size(); ++i) {
      for (size_t j = 0; j + 1 < items.size() - i; ++j) {
        if (id(items[j]) > id(items[j + 1])) items[j]->Swap(*items[j + 1]);
      }
    }
  }
  if (v.HasMember("keys") && v["keys"].IsArray()) {
    // Lease time-to-live keys: etcd lists them in map order too.
    auto arr = v["keys"].GetArray();
    std::vector<rapidjson::Value*> items;
    for (auto& e : arr) items.push_back(&e);
    auto str = [](const rapidjson::Value* e) {
      return e->IsString() ? std::string(e->GetString()) : std::string();
    };
    for (size_t i = 0; i < items.size(); ++i) {
      for (size_t j = 0; j + 1 < items.size() - i; ++j) {
        if (str(items[j]) > str(items[j + 1])) items[j]->Swap(*items[j + 1]);
      }
    }
  }
  for (auto& m : v.GetObject()) {
    std::string_view name(m.name.GetString(), m.name.GetStringLength());
    if (offset != 0 && IsRevisionField(name)) {
      if (m.value.IsString()) {
        int64_t r = std::stoll(m.value.GetString()) + offset;
        std::string s = std::to_string(r);
        m.value.SetString(s.c_str(), static_cast<rapidjson::SizeType>(s.size()),
                          a);
      } else if (m.value.IsInt64()) {
        m.value.SetInt64(m.value.GetInt64() + offset);
      }
      continue;
    }
    Walk(m.value, offset, a);
  }
}

}  // namespace

std::string B64(const std::string& s) { return Base64Encode(s); }

Side::~Side() { cluster_.reset(); }

Status Side::Start(const storage::LocalClusterTls& tls) {
  storage::LocalClusterOptions co{.kind = kind_, .members = 1, .tls = tls};
  auto c = storage::LocalCluster::Start(co);
  if (!c.ok()) return c.status();
  cluster_ = std::move(*c);
  // Never a silent plaintext run of the TLS suite.
  if (tls.enabled() && cluster_->client_url(0).rfind("https://", 0) != 0) {
    return InternalError("asked for TLS, got " + cluster_->client_url(0));
  }
  net::HttpClientOptions o;
  o.read_timeout = seconds(15);
  ASSIGN_OR_RETURN(http_, NewClient(o));
  return Status::Ok();
}

StatusOr<std::unique_ptr<net::HttpClient>> Side::NewClient(
    net::HttpClientOptions options) const {
  options.tls = cluster_->client_tls();
  return net::HttpClient::ForUrl(cluster_->client_url(0), options);
}

std::string Side::Translate(const std::string& body) const {
  static const std::regex re(R"(\{R:(-?\d+)\})");
  std::string out;
  auto begin = std::sregex_iterator(body.begin(), body.end(), re);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += body.substr(last, it->position() - last);
    out += std::to_string(std::stoll((*it)[1]) - offset_);
    last = it->position() + it->length();
  }
  return out + body.substr(last);
}

std::string Side::Normalize(const std::string& body) const {
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  if (d.HasParseError()) return body;
  Walk(d, offset_, d.GetAllocator());
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  d.Accept(w);
  return sb.GetString();
}

Answer Side::Do(const std::string& method, const std::string& path,
                const std::string& body) {
  Answer a;
  net::HttpHeaders h;
  if (method != "GET") h.Add("Content-Type", "application/json");
  auto r = http_->Request(method, path, h,
                          method == "GET" ? std::string() : Translate(body));
  if (!r.ok()) {
    a.status = -1;
    a.body = r.status().ToString();
    return a;
  }
  a.status = r->status;
  a.content_type = std::string(r->headers.Get("Content-Type"));
  a.body = r->body;
  return a;
}

std::vector<std::string> Side::Watch(const std::string& body, size_t n,
                                     const std::function<void()>& between,
                                     size_t before, Duration timeout,
                                     const std::string& path) {
  std::vector<std::string> out;
  auto client = NewClient();
  if (!client.ok()) return {"<no client>"};
  auto stream = (*client)->OpenStream("POST", path,
                                      {{"Content-Type", "application/json"}});
  if (!stream.ok()) return {"<" + stream.status().ToString() + ">"};
  net::HttpStream* s = stream->get();
  if (!s->Send(Translate(body)).ok() || !s->CloseSend().ok()) {
    return {"<send failed>"};
  }
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  auto head = s->ReadHead(timeout);
  if (!head.ok()) return {"<" + head.status().ToString() + ">"};
  if (head->status != 200) {
    std::string b;
    for (;;) {
      auto more = s->Read(&b, seconds(2));
      if (!more.ok() || !*more) break;
    }
    return {"HTTP " + std::to_string(head->status) + " " + Normalize(b)};
  }
  etcdjson::JsonObjectSplitter split;
  std::string chunk, object;
  bool ran = between == nullptr;
  while (out.size() < n) {
    Duration left = deadline - Clock::Real()->Now();
    if (left.count() <= 0) {
      out.push_back("<timeout>");
      break;
    }
    chunk.clear();
    auto more = s->Read(&chunk, left);
    if (!more.ok()) {
      out.push_back("<" + more.status().ToString() + ">");
      break;
    }
    if (!*more) {
      out.push_back("<end of stream>");
      break;
    }
    split.Feed(chunk);
    Status err;
    while (out.size() < n && split.Next(&object, &err)) {
      out.push_back(Normalize(object));
      if (!ran && out.size() >= before) {
        ran = true;
        between();
      }
    }
    if (!err.ok()) {
      out.push_back("<" + err.ToString() + ">");
      break;
    }
  }
  s->Cancel();
  return out;
}

void DiffTest::SetUp() {
  if (storage::FindKplaneBinary().empty()) {
    GTEST_SKIP() << "build/kplane is absent: the differential suite needs "
                    "`kplane store` (build target kplane, or set KPLANE_BIN)";
  }
  storage::LocalClusterTls tls;
  const char* over_tls = std::getenv("KPLANE_STORE_DIFF_TLS");
  if (over_tls != nullptr && std::string_view(over_tls) == "1") {
    char tmpl[] = "/tmp/kplane-diff-pki-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    pki_dir_ = tmpl;
    auto pki = storage::WriteTestPki(pki_dir_, "diff");
    ASSERT_TRUE(pki.ok()) << pki.status();
    tls = *pki;
  }
  etcd_ = std::make_unique<Side>(storage::StoreKind::kEtcd, 0);
  kplane_ = std::make_unique<Side>(storage::StoreKind::kKplane, 0);
  Status s = etcd_->Start(tls);
  ASSERT_TRUE(s.ok()) << "etcd: " << s;
  s = kplane_->Start(tls);
  ASSERT_TRUE(s.ok()) << "kplane: " << s;
}

void DiffTest::TearDown() {
  etcd_.reset();
  kplane_.reset();
  if (!pki_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(pki_dir_, ec);
  }
}

std::string DiffTest::Same(const std::string& method, const std::string& path,
                           const std::string& body) {
  Answer e = etcd_->Do(method, path, body);
  Answer k = kplane_->Do(method, path, body);
  const std::string what = method + " " + path + " " + body;
  EXPECT_EQ(k.status, e.status)
      << what << "\netcd:   " << e.body << "\nkplane: " << k.body;
  EXPECT_EQ(k.content_type, e.content_type) << what;
  std::string en = etcd_->Normalize(e.body), kn = kplane_->Normalize(k.body);
  EXPECT_EQ(kn, en) << what;
  return en;
}

void DiffTest::SameWatch(const std::string& body, size_t n,
                         const std::function<void(Side*)>& between,
                         size_t before, bool unordered) {
  auto run = [&](Side* s) {
    return s->Watch(body, n,
                    between ? std::function<void()>([&] { between(s); })
                            : std::function<void()>(),
                    before);
  };
  std::vector<std::string> e = run(etcd_.get());
  std::vector<std::string> k = run(kplane_.get());
  if (unordered) {
    std::sort(e.begin(), e.end());
    std::sort(k.begin(), k.end());
  }
  EXPECT_EQ(k, e) << "watch " << body;
}

void DiffTest::KnownWatchDiff(const std::string& body, size_t n,
                              const std::vector<std::string>& etcd_expected,
                              const std::vector<std::string>& kplane_expected) {
  EXPECT_EQ(etcd_->Watch(body, n, nullptr), etcd_expected) << "watch " << body;
  EXPECT_EQ(kplane_->Watch(body, n, nullptr), kplane_expected)
      << "watch " << body << " (a known difference changed: update the record)";
}

void DiffTest::KnownDiff(const std::string& method, const std::string& path,
                         const std::string& body, const Answer& etcd_expected,
                         const Answer& kplane_expected) {
  Answer e = etcd_->Do(method, path, body);
  Answer k = kplane_->Do(method, path, body);
  const std::string what = method + " " + path + " " + body;
  EXPECT_EQ(e.status, etcd_expected.status) << what;
  EXPECT_EQ(etcd_->Normalize(e.body), etcd_expected.body) << what;
  EXPECT_EQ(k.status, kplane_expected.status)
      << what << " (a known difference changed: update the record)";
  EXPECT_EQ(kplane_->Normalize(k.body), kplane_expected.body)
      << what << " (a known difference changed: update the record)";
  if (!etcd_expected.content_type.empty()) {
    EXPECT_EQ(e.content_type, etcd_expected.content_type) << what;
    EXPECT_EQ(k.content_type, kplane_expected.content_type) << what;
  }
}

void DiffTest::Both(const std::string& method, const std::string& path,
                    const std::string& body) {
  Answer e = etcd_->Do(method, path, body);
  Answer k = kplane_->Do(method, path, body);
  ASSERT_EQ(e.status, 200) << "etcd " << path << " " << body << ": " << e.body;
  ASSERT_EQ(k.status, 200) << "kplane " << path << " " << body << ": "
                           << k.body;
}

}  // namespace kplane::e2e
