// ObjectStore with an encryption transformer (object_store.h, "Encryption at
// rest"): what reaches the store is ciphertext, every verb reads it back,
// and a value that does not decrypt is an error.
#include <gtest/gtest.h>

#include "apiserver/encryption/transformer.h"
#include "apiserver/storage/object_store.h"
#include "apiserver/storage/test_store.h"
#include "base/base64.h"

namespace kplane::apiserver {
namespace {

using encryption::ParseEncryptionConfiguration;
using encryption::Transformer;
using encryption::TransformerSet;
using objects::corev1::Secret;
using testing::EmbeddedStore;
using testing::Resource;

constexpr std::string_view kMarker = "plaintext-marker-5d1f";

// secrets encrypted with aesgcm under the named keys, in order (the first
// writes), plus identity as a reader when `identity`.
std::shared_ptr<const Transformer> Keys(
    std::vector<std::pair<std::string, char>> keys, bool identity = false) {
  std::string yaml =
      "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
      "resources:\n- resources: [secrets]\n  providers:\n";
  for (const auto& [name, fill] : keys) {
    yaml += "  - aesgcm: {keys: [{name: " + name +
            ", secret: " + Base64Encode(std::string(32, fill)) + "}]}\n";
  }
  if (identity) yaml += "  - identity: {}\n";
  auto config = ParseEncryptionConfiguration(yaml);
  EXPECT_TRUE(config.ok()) << config.status();
  return TransformerSet(*config).For("", "secrets");
}

Secret MakeSecret(const std::string& name, std::string_view value) {
  Secret s;
  s.mutable_metadata()->set_namespace_("default");
  s.mutable_metadata()->set_name(name);
  (*s.mutable_data())["password"] = std::string(value);
  return s;
}

class EncryptedStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<ObjectStore> Store(std::shared_ptr<const Transformer> t) {
    return std::make_unique<ObjectStore>(
        db_.server(), Resource("", "secrets"),
        ObjectStoreOptions{.metrics = &metrics_, .transformer = std::move(t)});
  }
  mvccpb::KeyValue Raw(const std::string& key) {
    etcdserverpb::RangeRequest req;
    req.set_key(key);
    auto resp = db_.server()->Range(req);
    EXPECT_TRUE(resp.ok() && resp->kvs_size() == 1);
    return resp.ok() && resp->kvs_size() == 1 ? resp->kvs(0)
                                              : mvccpb::KeyValue();
  }
  void PutRaw(const std::string& key, const std::string& value) {
    etcdserverpb::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    ASSERT_TRUE(db_.server()->Put(req).ok());
  }
  static std::string Password(const ObjectPtr& p) {
    return static_cast<const Secret&>(*p).data().at("password");
  }

  EmbeddedStore db_;
  metrics::Registry metrics_;
};

TEST_F(EncryptedStoreTest, EveryVerbSeesPlainObjectsTheStoreOnlyCiphertext) {
  auto store = Store(Keys({{"key1", 'a'}}));
  const std::string key = "/registry/secrets/default/db";
  ASSERT_TRUE(store->Create(MakeSecret("db", kMarker)).ok());
  mvccpb::KeyValue raw = Raw(key);
  EXPECT_EQ(raw.value().rfind("k8s:enc:aesgcm:v1:key1:", 0), 0u);
  EXPECT_EQ(raw.value().find(kMarker), std::string::npos);

  auto got = store->Get("default", "db");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Password(*got), kMarker);
  auto list = store->List("default", {});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(Password(list->items[0]), kMarker);
  auto decoded = store->Decode(key, raw.value(), raw.mod_revision());
  ASSERT_TRUE(decoded.ok()) << decoded.status();

  auto updated = store->GuaranteedUpdate(
      "default", "db", {},
      [](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
        MutableObject next(cur->New());
        next->CopyFrom(*cur);
        (*static_cast<Secret*>(next.get())->mutable_data())["password"] =
            "second-marker";
        return next;
      });
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(Raw(key).value().find("second-marker"), std::string::npos);
  EXPECT_EQ(Password(*store->Get("default", "db")), "second-marker");

  // Nothing changed and the value is current: no write.
  const int64_t rev = Raw(key).mod_revision();
  auto same = store->GuaranteedUpdate(
      "default", "db", {},
      [](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
        MutableObject next(cur->New());
        next->CopyFrom(*cur);
        return next;
      });
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(Raw(key).mod_revision(), rev);

  auto deleted = store->Delete("default", "db", {});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(Password(*deleted), "second-marker");
}

TEST_F(EncryptedStoreTest, TamperedWrongKeyAndUnencryptedReaderFail) {
  auto store = Store(Keys({{"key1", 'a'}}));
  const std::string key = "/registry/secrets/default/db";
  ASSERT_TRUE(store->Create(MakeSecret("db", kMarker)).ok());
  std::string value = Raw(key).value();

  // Another key name only: kube's message, with the object's key.
  auto other = Store(Keys({{"key2", 'b'}}));
  auto r = other->Get("default", "db");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.status().message(),
            "cannot decrypt " + key +
                ": no matching key was found for the provided AES "
                "transformer");
  EXPECT_FALSE(other->List("default", {}).ok());

  // No transformer at all (encryption turned off): refused, not garbage.
  auto plain = Store(nullptr);
  auto p = plain->Get("default", "db");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "identity transformer tried to read encrypted data");

  // A flipped bit in the ciphertext.
  std::string bad = value;
  bad[bad.size() - 5] ^= 0x04;
  PutRaw(key, bad);
  auto t = store->Get("default", "db");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(
      t.status().message(),
      "cannot decrypt " + key + ": cipher: message authentication failed");
  // The value of another key copied over this one: aesgcm authenticates
  // the key, so it does not open either.
  ASSERT_TRUE(store->Create(MakeSecret("other", "x")).ok());
  PutRaw(key, Raw("/registry/secrets/default/other").value());
  EXPECT_FALSE(store->Get("default", "db").ok());
}

TEST_F(EncryptedStoreTest, RotationRewritesStaleValuesEvenWhenUnchanged) {
  auto before = Store(Keys({{"key1", 'a'}}));
  for (std::string name : {"a", "b", "c"}) {
    ASSERT_TRUE(before->Create(MakeSecret(name, kMarker)).ok());
  }
  // Step 1: the new key first, the old one second.
  auto during = Store(Keys({{"key2", 'b'}, {"key1", 'a'}}));
  auto list = during->List("default", {});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 3u);
  // Step 2: rewrite every Secret unchanged (kubectl get -o json | kubectl
  // replace -f -): each stale value is written again, under key2.
  for (const ObjectPtr& item : list->items) {
    const auto& meta = static_cast<const Secret&>(*item).metadata();
    std::string old_rev = meta.resourceversion();
    ObjectPtr copy = item;
    auto r = during->GuaranteedUpdate(
        "default", meta.name(), {.resource_version = old_rev},
        [copy](const google::protobuf::Message*) -> StatusOr<MutableObject> {
          MutableObject next(copy->New());
          next->CopyFrom(*copy);
          return next;
        });
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_NE(objects::ResourceVersion(**r), old_rev);  // it was written
    EXPECT_EQ(Raw("/registry/secrets/default/" + meta.name())
                  .value()
                  .rfind("k8s:enc:aesgcm:v1:key2:", 0),
              0u);
  }
  // Step 3: the old key removed: everything still reads.
  auto after = Store(Keys({{"key2", 'b'}}));
  auto all = after->List("default", {});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->items.size(), 3u);
  for (const ObjectPtr& item : all->items) EXPECT_EQ(Password(item), kMarker);
}

TEST_F(EncryptedStoreTest, TurningEncryptionOnKeepsPlainSecretsReadable) {
  auto plain = Store(nullptr);
  ASSERT_TRUE(plain->Create(MakeSecret("old", kMarker)).ok());
  EXPECT_NE(Raw("/registry/secrets/default/old").value().find(kMarker),
            std::string::npos);
  auto enc = Store(Keys({{"key1", 'a'}}, /*identity=*/true));
  auto got = enc->Get("default", "old");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Password(*got), kMarker);
  // Without identity among the readers the plain value is refused.
  auto strict = Store(Keys({{"key1", 'a'}}));
  EXPECT_EQ(strict->Get("default", "old").status().message(),
            "cannot decrypt /registry/secrets/default/old: no matching "
            "prefix found");
}

}  // namespace
}  // namespace kplane::apiserver
