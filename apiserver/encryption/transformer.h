// Encryption at rest: kube-apiserver's EncryptionConfiguration
// (apiserver.config.k8s.io/v1, --encryption-provider-config) and the value
// transformers it describes (k8s.io/apiserver/pkg/storage/value).
//
//   apiVersion: apiserver.config.k8s.io/v1
//   kind: EncryptionConfiguration
//   resources:
//   - resources: [secrets, "*.apps"]
//     providers:
//     - aesgcm: {keys: [{name: key2, secret: <base64 of 16, 24 or 32 bytes>}]}
//     - aesgcm: {keys: [{name: key1, secret: ...}]}
//     - identity: {}
//
// Every value written for a listed resource is `k8s:enc:<provider>:v1:<key
// name>:` + the cipher's bytes (ciphers.h) from the FIRST provider (and its
// first key). A value is read by the first provider whose prefix it carries
// and, within it, the first key whose name it carries; a failure there falls
// through to the next match (several providers of one kind share a prefix),
// so a config listing the new key first and the old key after reads both:
// that is key rotation. `identity` writes plain bytes and, as a reader, takes
// any value not starting with "k8s:enc:"; without it in the list, a plain
// value is unreadable. Whatever no provider can read is an error, never
// garbage.
//
// Resource names are kube's group-resources: "secrets" (core group),
// "deployments.apps", "*.apps" (a whole group), "*." (the core group),
// "*.*" (everything). Entries are matched in order; the first entry naming a
// resource decides for it. A resource no entry names is stored as plain
// bytes (TransformerSet::For returns null).
//
// The file is YAML or JSON. Validation follows kube's (field paths and
// words, e.g. `resources[0].providers[0].aesgcm.keys[0].secret: Invalid
// value: "REDACTED": secret is not of the expected length, got 8, expected
// one of [16 24 32]`); unknown fields are refused (strict decoding), and so
// is `kms` (kplane has no KMS plugin interface).
//
// The authenticated data of a value is its store key
// ("/registry/secrets/default/db"): aesgcm binds the value to it (a value
// copied under another key does not open); aescbc and secretbox ignore it,
// as in kube.
//
// Errors: the config: kInvalidArgument with every problem found (kube's
// aggregate "[a, b]" when there are several); a value that cannot be read:
// kCorruption with kube's words ("no matching prefix found", "no matching key
// was found for the provided AES transformer", "cipher: message
// authentication failed", ...).
//
// Thread-safety: a Transformer and a TransformerSet are immutable after
// construction; use them from any thread.
#ifndef KPLANE_APISERVER_ENCRYPTION_TRANSFORMER_H_
#define KPLANE_APISERVER_ENCRYPTION_TRANSFORMER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::apiserver::encryption {

// "k8s:enc:": every encrypted value starts with it.
inline constexpr std::string_view kEncryptedPrefix = "k8s:enc:";

enum class ProviderType { kIdentity, kAesGcm, kAesCbc, kSecretbox };

struct Key {
  std::string name;
  std::string secret;  // raw key bytes (the config holds them base64)
};

struct ProviderConfig {
  ProviderType type = ProviderType::kIdentity;
  std::vector<Key> keys;  // empty for identity
};

struct ResourceConfig {
  std::vector<std::string> resources;  // "secrets", "*.apps", "*.*"
  std::vector<ProviderConfig> providers;
};

struct EncryptionConfiguration {
  std::vector<ResourceConfig> resources;
};

// Parses and validates the file's text (YAML or JSON).
StatusOr<EncryptionConfiguration> ParseEncryptionConfiguration(
    std::string_view text);
// Reads `path` and parses it; errors name the file ("error while parsing
// file: ...", as kube-apiserver).
StatusOr<EncryptionConfiguration> LoadEncryptionConfiguration(
    const std::string& path);

// "aesgcm", "aescbc", "secretbox", "identity".
std::string_view ProviderName(ProviderType type);

// One resource entry's providers, in order.
class Transformer {
 public:
  // `providers` must be valid (as ParseEncryptionConfiguration leaves them).
  explicit Transformer(std::vector<ProviderConfig> providers);

  // The bytes to store for `plain` under store key `key`.
  StatusOr<std::string> ToStorage(std::string_view plain,
                                  std::string_view key) const;

  struct Read {
    std::string plain;
    // Read by another provider or key than the writer: the next write of
    // the object must happen even if its bytes are unchanged (kube's
    // "stale"; that is how `kubectl replace` rewrites under a new key).
    bool stale = false;
  };
  StatusOr<Read> FromStorage(std::string_view stored,
                             std::string_view key) const;

  // The writer, for logs: "aesgcm:key2" or "identity".
  std::string Writer() const;

 private:
  std::vector<ProviderConfig> providers_;
};

// A plain value as kube's identity reader checks it: an error if it is
// encrypted (a resource that is no longer configured for encryption).
Status CheckNotEncrypted(std::string_view stored);

// The transformers of a whole configuration, by group-resource.
class TransformerSet {
 public:
  explicit TransformerSet(const EncryptionConfiguration& config);

  // The transformer of `group` ("" for core) / `resource` ("secrets"), or
  // null when no entry names the resource (store plain bytes).
  std::shared_ptr<const Transformer> For(std::string_view group,
                                         std::string_view resource) const;

 private:
  struct Entry {
    std::vector<std::pair<std::string, std::string>> patterns;  // group, res
    std::shared_ptr<const Transformer> transformer;
  };
  std::vector<Entry> entries_;
};

// A new configuration that encrypts Secrets with aesgcm under one fresh
// random 32-byte key named `key_name`, as `kplane up` writes it (YAML).
StatusOr<std::string> GenerateAesGcmConfig(std::string_view key_name);

}  // namespace kplane::apiserver::encryption

#endif  // KPLANE_APISERVER_ENCRYPTION_TRANSFORMER_H_
