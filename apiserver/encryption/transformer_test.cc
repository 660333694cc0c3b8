#include "apiserver/encryption/transformer.h"

#include <gtest/gtest.h>

#include <string>

#include "base/base64.h"

namespace kplane::apiserver::encryption {
namespace {

const std::string kKey32a = Base64Encode(std::string(32, 'a'));
const std::string kKey32b = Base64Encode(std::string(32, 'b'));
const std::string kKey16 = Base64Encode(std::string(16, 'c'));
constexpr std::string_view kStoreKey = "/registry/secrets/default/db";
const std::string kPlain("k8s\0 the secret bytes", 21);

std::string Provider(std::string_view type, std::string_view name,
                     const std::string& secret) {
  return "  - " + std::string(type) +
         ":\n      keys:\n      - name: " + std::string(name) +
         "\n        secret: " + secret + "\n";
}

std::string Config(const std::string& providers,
                   std::string_view resources = "[secrets]") {
  return "apiVersion: apiserver.config.k8s.io/v1\n"
         "kind: EncryptionConfiguration\n"
         "resources:\n"
         "- resources: " +
         std::string(resources) + "\n  providers:\n" + providers;
}

std::shared_ptr<const Transformer> MustTransformer(const std::string& yaml) {
  auto config = ParseEncryptionConfiguration(yaml);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return nullptr;
  return TransformerSet(*config).For("", "secrets");
}

std::string ErrorOf(const std::string& yaml) {
  auto config = ParseEncryptionConfiguration(yaml);
  EXPECT_FALSE(config.ok());
  return config.ok() ? "" : config.status().message();
}

// ---- round trips, one per provider ----------------------------------------

struct ProviderCase {
  std::string type;
  std::string secret;
};

class RoundTripTest : public testing::TestWithParam<ProviderCase> {};

TEST_P(RoundTripTest, WritesKubePrefixAndReadsBack) {
  auto t = MustTransformer(
      Config(Provider(GetParam().type, "k1", GetParam().secret)));
  ASSERT_NE(t, nullptr);
  auto stored = t->ToStorage(kPlain, kStoreKey);
  ASSERT_TRUE(stored.ok()) << stored.status();
  std::string prefix = "k8s:enc:" + GetParam().type + ":v1:k1:";
  EXPECT_EQ(stored->substr(0, prefix.size()), prefix);
  EXPECT_EQ(stored->find("the secret"), std::string::npos);
  auto read = t->FromStorage(*stored, kStoreKey);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->plain, kPlain);
  EXPECT_FALSE(read->stale);

  // An altered byte is an error, never other bytes. aescbc notices only
  // through the padding: flipping the last byte of the next-to-last block
  // flips the last plaintext byte, the pad length, every time.
  std::string bad = *stored;
  bad[bad.size() - 17] ^= 0x01;
  auto tampered = t->FromStorage(bad, kStoreKey);
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.status().code(), StatusCode::kCorruption);
}

INSTANTIATE_TEST_SUITE_P(Providers, RoundTripTest,
                         testing::Values(ProviderCase{"aesgcm", kKey32a},
                                         ProviderCase{"aesgcm", kKey16},
                                         ProviderCase{"aescbc", kKey32a},
                                         ProviderCase{"secretbox", kKey32a}),
                         [](const auto& info) {
                           return info.param.type + std::to_string(info.index);
                         });

TEST(TransformerTest, GcmTamperHasKubesMessage) {
  auto t = MustTransformer(Config(Provider("aesgcm", "k1", kKey32a)));
  auto stored = t->ToStorage(kPlain, kStoreKey);
  ASSERT_TRUE(stored.ok());
  std::string bad = *stored;
  bad[30] ^= 0x40;  // inside the nonce / ciphertext
  auto r = t->FromStorage(bad, kStoreKey);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cipher: message authentication failed");
}

TEST(TransformerTest, GcmBindsTheValueToItsKey) {
  auto t = MustTransformer(Config(Provider("aesgcm", "k1", kKey32a)));
  auto stored = t->ToStorage(kPlain, "/registry/secrets/a/one");
  ASSERT_TRUE(stored.ok());
  // Copied under another key by someone with store access: refused.
  EXPECT_FALSE(t->FromStorage(*stored, "/registry/secrets/a/two").ok());
}

TEST(TransformerTest, IdentityWritesPlainAndDeclinesEncrypted) {
  auto t = MustTransformer(Config("  - identity: {}\n"));
  auto stored = t->ToStorage(kPlain, kStoreKey);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, kPlain);
  auto r = t->FromStorage("k8s:enc:aesgcm:v1:k1:xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                          kStoreKey);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no matching prefix found");
  EXPECT_FALSE(CheckNotEncrypted("k8s:enc:secretbox:v1:x:").ok());
  EXPECT_TRUE(CheckNotEncrypted(kPlain).ok());
}

TEST(TransformerTest, PlainValueNeedsIdentity) {
  auto enc_only = MustTransformer(Config(Provider("aesgcm", "k1", kKey32a)));
  auto r = enc_only->FromStorage(kPlain, kStoreKey);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no matching prefix found");

  auto with_identity = MustTransformer(
      Config(Provider("aesgcm", "k1", kKey32a) + "  - identity: {}\n"));
  auto ok = with_identity->FromStorage(kPlain, kStoreKey);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->plain, kPlain);
  EXPECT_TRUE(ok->stale);  // the next write encrypts it
}

TEST(TransformerTest, UnknownKeyNameFails) {
  auto writer = MustTransformer(Config(Provider("aesgcm", "old", kKey32a)));
  auto reader = MustTransformer(Config(Provider("aesgcm", "new", kKey32b)));
  auto stored = writer->ToStorage(kPlain, kStoreKey);
  ASSERT_TRUE(stored.ok());
  auto r = reader->FromStorage(*stored, kStoreKey);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "no matching key was found for the provided AES transformer");

  auto sb_writer =
      MustTransformer(Config(Provider("secretbox", "old", kKey32a)));
  auto sb_reader =
      MustTransformer(Config(Provider("secretbox", "new", kKey32a)));
  auto sb = sb_writer->ToStorage(kPlain, kStoreKey);
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb_reader->FromStorage(*sb, kStoreKey).status().message(),
            "no matching key was found for the provided Secretbox transformer");
}

TEST(TransformerTest, SameKeyNameWrongSecretFails) {
  auto writer = MustTransformer(Config(Provider("aesgcm", "k1", kKey32a)));
  auto reader = MustTransformer(Config(Provider("aesgcm", "k1", kKey32b)));
  auto stored = writer->ToStorage(kPlain, kStoreKey);
  auto r = reader->FromStorage(*stored, kStoreKey);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cipher: message authentication failed");
}

TEST(TransformerTest, RotationReadsOldWritesNew) {
  auto before = MustTransformer(Config(Provider("aesgcm", "key1", kKey32a)));
  auto old_value = before->ToStorage(kPlain, kStoreKey);
  ASSERT_TRUE(old_value.ok());

  // Step 1: the new key first, the old one after.
  auto during = MustTransformer(Config(Provider("aesgcm", "key2", kKey32b) +
                                       Provider("aesgcm", "key1", kKey32a)));
  auto read_old = during->FromStorage(*old_value, kStoreKey);
  ASSERT_TRUE(read_old.ok()) << read_old.status();
  EXPECT_EQ(read_old->plain, kPlain);
  EXPECT_TRUE(read_old->stale);
  auto new_value = during->ToStorage(read_old->plain, kStoreKey);
  ASSERT_TRUE(new_value.ok());
  EXPECT_EQ(new_value->rfind("k8s:enc:aesgcm:v1:key2:", 0), 0u);
  auto read_new = during->FromStorage(*new_value, kStoreKey);
  ASSERT_TRUE(read_new.ok());
  EXPECT_FALSE(read_new->stale);

  // Step 3: the old key removed: rewritten values read, old ones do not.
  auto after = MustTransformer(Config(Provider("aesgcm", "key2", kKey32b)));
  EXPECT_TRUE(after->FromStorage(*new_value, kStoreKey).ok());
  EXPECT_FALSE(after->FromStorage(*old_value, kStoreKey).ok());

  // Keys of one provider rotate the same way.
  auto two_keys = MustTransformer(Config(
      "  - aesgcm:\n      keys:\n      - name: key2\n        secret: " +
      kKey32b + "\n      - name: key1\n        secret: " + kKey32a + "\n"));
  auto r = two_keys->FromStorage(*old_value, kStoreKey);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stale);
}

TEST(TransformerTest, MovingBetweenProviders) {
  auto cbc = MustTransformer(Config(Provider("aescbc", "k", kKey32a)));
  auto cbc_value = cbc->ToStorage(kPlain, kStoreKey);
  auto mixed = MustTransformer(Config(Provider("secretbox", "s", kKey32b) +
                                      Provider("aescbc", "k", kKey32a) +
                                      "  - identity: {}\n"));
  auto r = mixed->FromStorage(*cbc_value, kStoreKey);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plain, kPlain);
  EXPECT_TRUE(r->stale);
  EXPECT_EQ(mixed->Writer(), "secretbox:s");
  // Decrypting away: identity first still reads encrypted values.
  auto away = MustTransformer(
      Config("  - identity: {}\n" + Provider("aescbc", "k", kKey32a)));
  auto plain = away->FromStorage(*cbc_value, kStoreKey);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->plain, kPlain);
  EXPECT_EQ(*away->ToStorage(kPlain, kStoreKey), kPlain);
}

// ---- resources ------------------------------------------------------------

TEST(TransformerSetTest, MatchesInOrderWithWildcards) {
  auto config = ParseEncryptionConfiguration(
      "apiVersion: apiserver.config.k8s.io/v1\n"
      "kind: EncryptionConfiguration\n"
      "resources:\n"
      "- resources: [events]\n"
      "  providers: [{identity: {}}]\n"
      "- resources: [secrets, configmaps]\n"
      "  providers:\n" +
      Provider("aesgcm", "a", kKey32a) +
      "- resources: ['*.apps']\n"
      "  providers:\n" +
      Provider("aescbc", "b", kKey32a) +
      "- resources: ['*.*']\n"
      "  providers:\n" +
      Provider("secretbox", "c", kKey32a));
  ASSERT_TRUE(config.ok()) << config.status();
  TransformerSet set(*config);
  EXPECT_EQ(set.For("", "events")->Writer(), "identity");
  EXPECT_EQ(set.For("", "secrets")->Writer(), "aesgcm:a");
  EXPECT_EQ(set.For("", "configmaps")->Writer(), "aesgcm:a");
  EXPECT_EQ(set.For("apps", "deployments")->Writer(), "aescbc:b");
  EXPECT_EQ(set.For("", "pods")->Writer(), "secretbox:c");
  EXPECT_EQ(set.For("coordination.k8s.io", "leases")->Writer(), "secretbox:c");

  auto only_secrets =
      ParseEncryptionConfiguration(Config(Provider("aesgcm", "a", kKey32a)));
  ASSERT_TRUE(only_secrets.ok());
  TransformerSet s2(*only_secrets);
  EXPECT_EQ(s2.For("", "pods"), nullptr);
  EXPECT_EQ(s2.For("apps", "secrets"), nullptr);

  auto core = ParseEncryptionConfiguration(
      Config(Provider("aesgcm", "a", kKey32a), "['*.']"));
  ASSERT_TRUE(core.ok()) << core.status();
  TransformerSet s3(*core);
  EXPECT_NE(s3.For("", "pods"), nullptr);
  EXPECT_EQ(s3.For("apps", "deployments"), nullptr);
}

// ---- the file -------------------------------------------------------------

TEST(ConfigTest, JsonWorksToo) {
  auto config = ParseEncryptionConfiguration(
      R"({"apiVersion":"apiserver.config.k8s.io/v1",)"
      R"("kind":"EncryptionConfiguration","resources":[{"resources":)"
      R"(["secrets"],"providers":[{"secretbox":{"keys":[{"name":"k",)"
      R"("secret":")" +
      kKey32a + R"("}]}},{"identity":{}}]}]})");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->resources.size(), 1u);
  EXPECT_EQ(config->resources[0].providers.size(), 2u);
  EXPECT_EQ(config->resources[0].providers[0].keys[0].secret,
            std::string(32, 'a'));
}

TEST(ConfigTest, KubesValidationMessages) {
  EXPECT_EQ(ErrorOf(Config(Provider("aesgcm", "k", Base64Encode("short")))),
            "resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "
            "\"REDACTED\": secret is not of the expected length, got 5, "
            "expected one of [16 24 32]");
  EXPECT_EQ(ErrorOf(Config(Provider("secretbox", "k", kKey16))),
            "resources[0].providers[0].secretbox.keys[0].secret: Invalid "
            "value: \"REDACTED\": secret is not of the expected length, got "
            "16, expected one of [32]");
  EXPECT_EQ(ErrorOf(Config(Provider("aescbc", "k", "not base64!"))),
            "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "
            "\"REDACTED\": secrets must be base64 encoded");
  EXPECT_EQ(ErrorOf(Config(Provider("aesgcm", "", kKey32a))),
            "resources[0].providers[0].aesgcm.keys[0].name: Required value: "
            "name is a mandatory field for a key");
  EXPECT_EQ(ErrorOf(Config("  - aesgcm: {keys: []}\n")),
            "resources[0].providers[0].aesgcm.keys: Required value: at least "
            "one keys is required");
  EXPECT_EQ(ErrorOf(Config("  - {identity: {}, aesgcm: {keys: []}}\n")),
            "resources[0].providers[0]: Invalid value: \"\": more than one "
            "provider specified in a single element, should split into "
            "different list elements");
  EXPECT_EQ(ErrorOf(Config("  - identity: {}\n", "[Secrets]")),
            "resources[0].resources[0]: Invalid value: \"Secrets\": resource "
            "name should not contain capital letters");
  EXPECT_EQ(ErrorOf(Config("  - identity: {}\n", "[secrets, '*.']")),
            "resources[0].resources: Invalid value: [secrets *.]: using "
            "overlapping resources such as 'secrets' and '*.' in the same "
            "resource list is not allowed as they will be masked");
  EXPECT_EQ(ErrorOf(Config("  - identity: {}\n", "[secrets, secrets]")),
            "resources[0].resources: Invalid value: [secrets secrets]: the "
            "same resource cannot be specified multiple times");
  EXPECT_EQ(ErrorOf(Config("  - identity: {}\n", "['secrets.*']")),
            "resources[0].resources[0]: Invalid value: \"secrets.*\": "
            "encrypting the same resource across groups is not supported");
  EXPECT_EQ(ErrorOf("apiVersion: apiserver.config.k8s.io/v1\n"
                    "kind: EncryptionConfiguration\nresources: []\n"),
            "resources: Required value: at least one resources is required");
  // Two problems: kube's aggregate.
  EXPECT_EQ(ErrorOf(Config(Provider("aesgcm", "", "x"))),
            "[resources[0].providers[0].aesgcm.keys[0].name: Required value: "
            "name is a mandatory field for a key, "
            "resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "
            "\"REDACTED\": secrets must be base64 encoded]");
}

TEST(ConfigTest, RefusesWhatKplaneCannotHonour) {
  // A typo must not silently turn encryption off.
  EXPECT_EQ(ErrorOf(Config("  - aesgmc: {}\n")),
            "strict decoding error: unknown field "
            "\"resources[0].providers[0].aesgmc\"");
  EXPECT_NE(ErrorOf(Config("  - kms: {name: x, endpoint: unix:///k.sock}\n"))
                .find("kms providers are not supported by kplane"),
            std::string::npos);
  EXPECT_NE(ErrorOf("apiVersion: v1\nkind: EncryptionConfig\n")
                .find("no kind \"EncryptionConfig\" is registered"),
            std::string::npos);
  EXPECT_NE(ErrorOf("resources: []\n").find("Kind"), std::string::npos);
}

TEST(ConfigTest, LoadNamesTheFile) {
  auto missing = LoadEncryptionConfiguration("/nonexistent/enc.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(
                "error opening encryption provider configuration file "
                "\"/nonexistent/enc.yaml\""),
            std::string::npos);
}

TEST(ConfigTest, GeneratedConfigParses) {
  auto a = GenerateAesGcmConfig("key1");
  auto b = GenerateAesGcmConfig("key1");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);  // a fresh key each time
  auto config = ParseEncryptionConfiguration(*a);
  ASSERT_TRUE(config.ok()) << config.status() << "\n" << *a;
  TransformerSet set(*config);
  auto t = set.For("", "secrets");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Writer(), "aesgcm:key1");
  EXPECT_EQ(config->resources[0].providers[0].keys[0].secret.size(), 32u);
  // Plain Secrets from before encryption was on stay readable.
  EXPECT_TRUE(t->FromStorage(kPlain, kStoreKey).ok());
}

}  // namespace
}  // namespace kplane::apiserver::encryption
