// Encryption at rest end to end: Secrets posted over HTTP to an ApiServer
// over a real store, then the raw files of the store's data directory (the
// raft WAL, RocksDB's WAL and SST files, raft snapshots, a `snapshot save`
// copy) searched for the Secret's bytes. With encryption off the same search
// finds them, so the search can fail. Plus key rotation over HTTP, the way
// kube's docs do it (new key first, replace every Secret, old key dropped).
#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "apiserver/encryption/transformer.h"
#include "apiserver/test_server.h"
#include "base/base64.h"
#include "base/strings.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;

constexpr std::string_view kMarker = "kplane-plaintext-marker-8c2e41";

// 48 bytes that no compressor shortens: RocksDB compresses its SST files
// with Snappy, which breaks a readable marker into literals and
// back-references (the SST of a plain store then does not show it, and the
// search would prove nothing for SST files). Fixed seed: the same bytes
// every run.
std::string IncompressibleMarker() {
  std::mt19937 rng(20261203);
  std::string out;
  for (int i = 0; i < 48; ++i) out.push_back(static_cast<char>(rng() & 0xff));
  return out;
}

std::shared_ptr<const encryption::TransformerSet> Config(
    const std::vector<std::pair<std::string, char>>& keys) {
  if (keys.empty()) return nullptr;
  std::string yaml =
      "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
      "resources:\n- resources: [secrets]\n  providers:\n";
  for (const auto& [name, fill] : keys) {
    yaml += "  - aesgcm: {keys: [{name: " + name +
            ", secret: " + Base64Encode(std::string(32, fill)) + "}]}\n";
  }
  auto config = encryption::ParseEncryptionConfiguration(yaml);
  EXPECT_TRUE(config.ok()) << config.status();
  return std::make_shared<const encryption::TransformerSet>(*config);
}

std::string SecretJson(const std::string& name, std::string_view value) {
  return R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + name +
         R"(","namespace":"default"},"data":{"password":")" +
         Base64Encode(value) + R"("}})";
}

// A single-member store in a temporary directory that outlives the API
// servers started over it, and is stopped before its files are read.
class StoreDir {
 public:
  StoreDir() {
    char tmpl[] = "/tmp/kplane-encrypt-XXXXXX";
    char* dir = mkdtemp(tmpl);
    CHECK(dir != nullptr);
    dir_ = dir;
    storage::StoreConfig config;
    config.data_dir = dir_ + "/data";
    config.peer_urls = {"http://127.0.0.1:2380"};
    config.heartbeat_interval = milliseconds(10);
    config.election_timeout = milliseconds(100);
    config.corrupt_check_interval = Duration(0);
    // Raft snapshots every few entries, so there are snapshot files too.
    config.snapshot_count = 5;
    config.snapshot_catch_up_entries = 2;
    config.metrics = &metrics_;
    auto server = storage::StoreServer::Open(config);
    CHECK(server.ok()) << server.status();
    store_ = std::move(*server);
    CHECK(store_->Start(nullptr).ok());
    CHECK(store_->WaitForLeader(seconds(10)));
  }
  ~StoreDir() {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  storage::StoreServer* store() { return store_.get(); }
  const std::string& dir() const { return dir_; }
  // Flushes RocksDB's memtables into SST files on the way down.
  void Stop() {
    if (store_) store_->Stop();
    store_.reset();
  }
  std::string RawValue(const std::string& key) {
    etcdserverpb::RangeRequest req;
    req.set_key(key);
    auto resp = store_->Range(req);
    EXPECT_TRUE(resp.ok() && resp->kvs_size() == 1) << key;
    return resp.ok() && resp->kvs_size() == 1 ? resp->kvs(0).value() : "";
  }

 private:
  std::string dir_;
  metrics::Registry metrics_;
  std::unique_ptr<storage::StoreServer> store_;
};

// Every regular file under `dir` holding `needle`, and how many files were
// searched.
std::vector<std::string> FilesContaining(const std::string& dir,
                                         std::string_view needle,
                                         int* searched) {
  std::vector<std::string> hits;
  *searched = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    ++*searched;
    if (getenv("KPLANE_DEBUG_FILES"))
      LOG(INFO) << "searching " << entry.path() << " " << entry.file_size();
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (bytes.find(needle) != std::string::npos) {
      hits.push_back(entry.path().string());
    }
  }
  return hits;
}

class PlaintextOnDiskTest : public ::testing::TestWithParam<bool> {};

TEST_P(PlaintextOnDiskTest, SecretBytesAppearOnDiskOnlyWithoutEncryption) {
  const bool encrypt = GetParam();
  StoreDir db;
  {
    TestServer api(db.store(), [&](ApiServerOptions* o) {
      o->encryption = encrypt ? Config({{"key1", 'a'}}) : nullptr;
    });
    Response created = api.Post("/api/v1/namespaces/default/secrets",
                                SecretJson("db", kMarker));
    ASSERT_EQ(created.code, 201) << created.body;
    Response binary = api.Post("/api/v1/namespaces/default/secrets",
                               SecretJson("bin", IncompressibleMarker()));
    ASSERT_EQ(binary.code, 201) << binary.body;
    // An update goes through GuaranteedUpdate's write path too.
    Response patched = api.Patch("/api/v1/namespaces/default/secrets/db",
                                 R"({"metadata":{"labels":{"rotated":"no"}}})",
                                 "application/merge-patch+json");
    ASSERT_EQ(patched.code, 200) << patched.body;
    // Read back through the store and through the watch cache (fed by the
    // store watch, decoded with the key).
    Response got = api.Get("/api/v1/namespaces/default/secrets/db");
    ASSERT_EQ(got.code, 200) << got.body;
    EXPECT_EQ(got.Str({"data", "password"}), Base64Encode(kMarker));
    Response cached =
        api.Get("/api/v1/namespaces/default/secrets?resourceVersion=0");
    ASSERT_EQ(cached.code, 200) << cached.body;
    EXPECT_NE(cached.body.find(Base64Encode(kMarker)), std::string::npos);
    // More writes than snapshot_count: the raft log is snapshotted.
    for (int i = 0; i < 12; ++i) {
      Response cm = api.Post(
          "/api/v1/namespaces/default/configmaps",
          R"({"metadata":{"name":"cm-)" + std::to_string(i) + R"("}})");
      ASSERT_EQ(cm.code, 201) << cm.body;
    }
  }
  std::string stored = db.RawValue("/registry/secrets/default/db");
  EXPECT_EQ(stored.rfind("k8s:enc:aesgcm:v1:key1:", 0) == 0, encrypt);
  // `etcdctl snapshot save` into the data directory as well.
  ASSERT_TRUE(db.store()->SaveSnapshot(db.dir() + "/data/backup").ok());
  db.Stop();

  int searched = 0;
  std::vector<std::string> hits = FilesContaining(db.dir(), kMarker, &searched);
  std::vector<std::string> binary_hits =
      FilesContaining(db.dir(), IncompressibleMarker(), &searched);
  EXPECT_GT(searched, 5);
  if (encrypt) {
    EXPECT_TRUE(hits.empty()) << "plaintext in " << StrJoin(hits, ", ");
    EXPECT_TRUE(binary_hits.empty())
        << "plaintext in " << StrJoin(binary_hits, ", ");
  } else {
    // The control: the same search finds the bytes when they are plain:
    // the readable marker in the raft WAL, the incompressible one also in
    // RocksDB's SST files and in the saved snapshot.
    EXPECT_FALSE(hits.empty()) << "searched " << searched << " files";
    auto any = [&](std::string_view part) {
      return std::any_of(binary_hits.begin(), binary_hits.end(),
                         [&](const std::string& h) {
                           return h.find(part) != std::string::npos;
                         });
    };
    EXPECT_TRUE(any("/member/wal/")) << StrJoin(binary_hits, ", ");
    EXPECT_TRUE(any("/member/db/")) << StrJoin(binary_hits, ", ");
    EXPECT_TRUE(any("/backup/")) << StrJoin(binary_hits, ", ");
    for (const auto& h : hits) LOG(INFO) << "readable marker found in " << h;
    for (const auto& h : binary_hits) {
      LOG(INFO) << "binary marker found in " << h;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EncryptionOnOff, PlaintextOnDiskTest,
                         ::testing::Values(true, false), [](const auto& info) {
                           return info.param ? "Encrypted" : "Plain";
                         });

TEST(KeyRotationTest, AddRewriteRemoveOverHttp) {
  StoreDir db;
  const std::vector<std::string> names = {"a", "b", "c"};
  {
    TestServer api(db.store(), [&](ApiServerOptions* o) {
      o->encryption = Config({{"key1", 'a'}});
    });
    for (const auto& n : names) {
      ASSERT_EQ(
          api.Post("/api/v1/namespaces/default/secrets", SecretJson(n, kMarker))
              .code,
          201);
    }
  }
  // 1. The new key first, the old key second; restart the apiserver.
  {
    TestServer api(db.store(), [&](ApiServerOptions* o) {
      o->encryption = Config({{"key2", 'b'}, {"key1", 'a'}});
    });
    for (const auto& n : names) {
      EXPECT_EQ(db.RawValue("/registry/secrets/default/" + n)
                    .rfind("k8s:enc:aesgcm:v1:key1:", 0),
                0u);
    }
    // 2. kubectl get secrets -A -o json | kubectl replace -f -
    Response list = api.Get("/api/v1/secrets");
    ASSERT_EQ(list.code, 200) << list.body;
    const rapidjson::Value* items = list.At({"items"});
    ASSERT_TRUE(items != nullptr && items->IsArray());
    ASSERT_EQ(items->Size(), 3u);
    for (const auto& item : items->GetArray()) {
      rapidjson::StringBuffer buf;
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      item.Accept(w);
      std::string name = item["metadata"]["name"].GetString();
      Response replaced = api.Put("/api/v1/namespaces/default/secrets/" + name,
                                  buf.GetString());
      ASSERT_EQ(replaced.code, 200) << replaced.body;
      EXPECT_EQ(db.RawValue("/registry/secrets/default/" + name)
                    .rfind("k8s:enc:aesgcm:v1:key2:", 0),
                0u)
          << "an unchanged replace must still rewrite under the new key";
    }
  }
  // 3. The old key removed: every Secret still reads.
  {
    TestServer api(db.store(), [&](ApiServerOptions* o) {
      o->encryption = Config({{"key2", 'b'}});
    });
    for (const auto& n : names) {
      Response got = api.Get("/api/v1/namespaces/default/secrets/" + n);
      ASSERT_EQ(got.code, 200) << got.body;
      EXPECT_EQ(got.Str({"data", "password"}), Base64Encode(kMarker));
    }
  }
}

TEST(EncryptionErrorTest, UndecryptableSecretIsA500NotGarbage) {
  StoreDir db;
  {
    TestServer api(db.store(), [&](ApiServerOptions* o) {
      o->encryption = Config({{"key1", 'a'}});
    });
    ASSERT_EQ(api.Post("/api/v1/namespaces/default/secrets",
                       SecretJson("db", kMarker))
                  .code,
              201);
    // Someone with access to the store flips a byte of the ciphertext.
    std::string value = db.RawValue("/registry/secrets/default/db");
    value[value.size() - 3] ^= 0x10;
    etcdserverpb::PutRequest put;
    put.set_key("/registry/secrets/default/db");
    put.set_value(value);
    ASSERT_TRUE(db.store()->Put(put).ok());
    // The store path (a consistent GET reads the store, not the cache).
    Response got = api.Get("/api/v1/namespaces/default/secrets/db");
    EXPECT_EQ(got.code, 500) << got.body;
    EXPECT_NE(got.body.find("cipher: message authentication failed"),
              std::string::npos)
        << got.body;
    EXPECT_EQ(got.body.find(Base64Encode(kMarker)), std::string::npos);
  }
}

}  // namespace
}  // namespace kplane::apiserver
