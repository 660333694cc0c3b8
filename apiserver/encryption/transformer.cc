#include "apiserver/encryption/transformer.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <set>
#include <utility>

#include "apiserver/encryption/ciphers.h"
#include "base/base64.h"
#include "base/file_system.h"
#include "base/strings.h"
#include "objects/yaml.h"

namespace kplane::apiserver::encryption {
namespace {

constexpr std::string_view kApiVersion = "apiserver.config.k8s.io/v1";
constexpr std::string_view kKind = "EncryptionConfiguration";

// kube's field.ErrorList, printed as ToAggregate does.
class Errors {
 public:
  void Required(const std::string& path, std::string_view detail) {
    list_.push_back(path + ": Required value: " + std::string(detail));
  }
  void Invalid(const std::string& path, std::string_view value,
               std::string_view detail) {
    list_.push_back(path + ": Invalid value: " + GoQuote(value) + ": " +
                    std::string(detail));
  }
  void Other(std::string message) { list_.push_back(std::move(message)); }
  bool empty() const { return list_.empty(); }
  Status ToStatus() const {
    if (list_.size() == 1) return InvalidArgumentError(list_[0]);
    return InvalidArgumentError("[" + StrJoin(list_, ", ") + "]");
  }

 private:
  std::vector<std::string> list_;
};

// Strict decoding: every member of `obj` must be one of `known`.
void CheckFields(const rapidjson::Value& obj, const std::string& path,
                 std::initializer_list<std::string_view> known, Errors* errs) {
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      errs->Other(
          "strict decoding error: unknown field " +
          GoQuote((path.empty() ? "" : path + ".") + std::string(name)));
    }
  }
}

std::string Str(const rapidjson::Value& v) {
  return v.IsString() ? std::string(v.GetString(), v.GetStringLength()) : "";
}

// "deployments.apps" -> {"apps", "deployments"}; "secrets" -> {"", ...}
// (schema.ParseGroupResource: the group follows the first dot).
std::pair<std::string, std::string> ParseGroupResource(std::string_view s) {
  size_t dot = s.find('.');
  if (dot == std::string_view::npos) return {"", std::string(s)};
  return {std::string(s.substr(dot + 1)), std::string(s.substr(0, dot))};
}

void ValidateResourceNames(const std::vector<std::string>& resources,
                           const std::string& path, Errors* errs) {
  for (size_t j = 0; j < resources.size(); ++j) {
    const std::string& res = resources[j];
    std::string p = path + "[" + std::to_string(j) + "]";
    auto [group, resource] = ParseGroupResource(res);
    if (ToLower(res) != res) {
      errs->Invalid(p, res, "resource name should not contain capital letters");
    } else if (res == "*") {
      errs->Invalid(p, res,
                    "use '*.' to encrypt all the resources from core API "
                    "group or *.* to encrypt all resources");
    } else if (group == "events.k8s.io") {
      errs->Invalid(p, res,
                    "'*.events.k8s.io' objects are stored using the 'events' "
                    "API group in etcd. Use 'events' instead in the config "
                    "file");
    } else if (group == "extensions") {
      errs->Invalid(p, res,
                    "'extensions' group has been removed and cannot be used "
                    "for encryption");
    } else if (group == "*" && resource != "*") {
      errs->Invalid(p, res,
                    "encrypting the same resource across groups is not "
                    "supported");
    }
  }
  // Duplicates and overlaps within one list (kube's validateResourceOverlap).
  bool duplicate = false;
  bool overlap = false;
  for (size_t i = 0; i < resources.size(); ++i) {
    for (size_t j = 0; j < resources.size(); ++j) {
      if (i == j) continue;
      auto a = ParseGroupResource(resources[i]);
      auto b = ParseGroupResource(resources[j]);
      if (a == b) {
        duplicate = true;
      } else if ((a.first == "*" && a.second == "*") ||
                 (a.first == b.first && (a.second == "*" || b.second == "*"))) {
        overlap = true;
      }
    }
  }
  std::string listed = "[" + StrJoin(resources, " ") + "]";
  if (duplicate) {
    errs->Other(path + ": Invalid value: " + listed +
                ": the same resource cannot be specified multiple times");
  }
  if (overlap) {
    errs->Other(path + ": Invalid value: " + listed +
                ": using overlapping resources such as 'secrets' and '*.' in "
                "the same resource list is not allowed as they will be "
                "masked");
  }
}

void ParseKeys(const rapidjson::Value& provider, const std::string& path,
               const std::vector<size_t>& sizes, ProviderConfig* out,
               Errors* errs) {
  if (!provider.IsObject()) {
    errs->Invalid(path, "", "must be an object");
    return;
  }
  CheckFields(provider, path, {"keys"}, errs);
  std::string kp = path + ".keys";
  auto keys = provider.FindMember("keys");
  if (keys == provider.MemberEnd() || !keys->value.IsArray() ||
      keys->value.Empty()) {
    errs->Required(kp, "at least one keys is required");
    return;
  }
  std::string expected;
  for (size_t s : sizes) {
    expected += (expected.empty() ? "" : " ") + std::to_string(s);
  }
  for (rapidjson::SizeType i = 0; i < keys->value.Size(); ++i) {
    const rapidjson::Value& k = keys->value[i];
    std::string p = kp + "[" + std::to_string(i) + "]";
    if (!k.IsObject()) {
      errs->Invalid(p, "", "must be an object");
      continue;
    }
    CheckFields(k, p, {"name", "secret"}, errs);
    Key key;
    auto name = k.FindMember("name");
    auto secret = k.FindMember("secret");
    if (name != k.MemberEnd()) key.name = Str(name->value);
    std::string encoded = secret != k.MemberEnd() ? Str(secret->value) : "";
    if (key.name.empty()) {
      errs->Required(p + ".name", "name is a mandatory field for a key");
    }
    if (encoded.empty()) {
      errs->Required(p + ".secret", "secret is a mandatory field for a key");
      continue;
    }
    StatusOr<std::string> raw = Base64Decode(encoded);
    if (!raw.ok()) {
      errs->Invalid(p + ".secret", "REDACTED",
                    "secrets must be base64 encoded");
      continue;
    }
    if (std::find(sizes.begin(), sizes.end(), raw->size()) == sizes.end()) {
      errs->Invalid(p + ".secret", "REDACTED",
                    "secret is not of the expected length, got " +
                        std::to_string(raw->size()) + ", expected one of [" +
                        expected + "]");
      continue;
    }
    key.secret = std::move(*raw);
    out->keys.push_back(std::move(key));
  }
}

std::string ProviderPrefix(ProviderType type) {
  return std::string(kEncryptedPrefix) + std::string(ProviderName(type)) +
         ":v1:";
}

StatusOr<std::string> Seal(ProviderType type, const std::string& secret,
                           std::string_view plain, std::string_view aad) {
  switch (type) {
    case ProviderType::kAesGcm:
      return AesGcmSeal(secret, plain, aad);
    case ProviderType::kAesCbc:
      return AesCbcSeal(secret, plain);
    case ProviderType::kSecretbox:
      return SecretboxSeal(secret, plain);
    case ProviderType::kIdentity:
      break;
  }
  return std::string(plain);
}

StatusOr<std::string> Open(ProviderType type, const std::string& secret,
                           std::string_view sealed, std::string_view aad) {
  switch (type) {
    case ProviderType::kAesGcm:
      return AesGcmOpen(secret, sealed, aad);
    case ProviderType::kAesCbc:
      return AesCbcOpen(secret, sealed);
    case ProviderType::kSecretbox:
      return SecretboxOpen(secret, sealed);
    case ProviderType::kIdentity:
      break;
  }
  return std::string(sealed);
}

// kube's errors.Reduce(NewAggregate(errs)): one error as itself, several as
// "[a, b]".
Status Reduce(const std::vector<Status>& errs) {
  if (errs.size() == 1) return errs[0];
  std::vector<std::string> msgs;
  for (const Status& s : errs) msgs.push_back(s.message());
  return CorruptionError("[" + StrJoin(msgs, ", ") + "]");
}

}  // namespace

std::string_view ProviderName(ProviderType type) {
  switch (type) {
    case ProviderType::kAesGcm:
      return "aesgcm";
    case ProviderType::kAesCbc:
      return "aescbc";
    case ProviderType::kSecretbox:
      return "secretbox";
    case ProviderType::kIdentity:
      break;
  }
  return "identity";
}

StatusOr<EncryptionConfiguration> ParseEncryptionConfiguration(
    std::string_view text) {
  StatusOr<rapidjson::Document> doc = objects::ParseJsonOrYaml(text);
  if (!doc.ok()) return doc.status();
  if (!doc->IsObject()) {
    return InvalidArgumentError(
        "couldn't get version/kind; json parse error: not an object");
  }
  std::string api_version, kind;
  if (auto it = doc->FindMember("apiVersion"); it != doc->MemberEnd()) {
    api_version = Str(it->value);
  }
  if (auto it = doc->FindMember("kind"); it != doc->MemberEnd()) {
    kind = Str(it->value);
  }
  if (kind.empty()) {
    return InvalidArgumentError(
        "Object 'Kind' is missing in the encryption "
        "provider configuration");
  }
  if (api_version != kApiVersion || kind != kKind) {
    return InvalidArgumentError(
        "no kind " + GoQuote(kind) + " is registered for version " +
        GoQuote(api_version) + " (want " + std::string(kApiVersion) +
        ", Kind=" + std::string(kKind) + ")");
  }

  Errors errs;
  CheckFields(*doc, "", {"apiVersion", "kind", "resources"}, &errs);
  EncryptionConfiguration config;
  auto resources = doc->FindMember("resources");
  if (resources == doc->MemberEnd() || !resources->value.IsArray() ||
      resources->value.Empty()) {
    errs.Required("resources", "at least one resources is required");
    return errs.ToStatus();
  }
  for (rapidjson::SizeType i = 0; i < resources->value.Size(); ++i) {
    const rapidjson::Value& entry = resources->value[i];
    std::string base = "resources[" + std::to_string(i) + "]";
    if (!entry.IsObject()) {
      errs.Invalid(base, "", "must be an object");
      continue;
    }
    CheckFields(entry, base, {"resources", "providers"}, &errs);
    ResourceConfig rc;
    std::string rpath = base + ".resources";
    std::string ppath = base + ".providers";
    auto names = entry.FindMember("resources");
    if (names != entry.MemberEnd() && names->value.IsArray()) {
      for (const auto& n : names->value.GetArray()) {
        rc.resources.push_back(Str(n));
      }
    }
    if (rc.resources.empty()) {
      errs.Required(rpath, "at least one " + rpath + " is required");
    }
    ValidateResourceNames(rc.resources, rpath, &errs);

    auto providers = entry.FindMember("providers");
    if (providers == entry.MemberEnd() || !providers->value.IsArray() ||
        providers->value.Empty()) {
      errs.Required(ppath, "at least one " + ppath + " is required");
      config.resources.push_back(std::move(rc));
      continue;
    }
    for (rapidjson::SizeType j = 0; j < providers->value.Size(); ++j) {
      const rapidjson::Value& p = providers->value[j];
      std::string path = ppath + "[" + std::to_string(j) + "]";
      if (!p.IsObject() || p.MemberCount() == 0) {
        errs.Invalid(path, "",
                     "provider does not contain any of the expected "
                     "providers: KMS, AESGCM, AESCBC, Secretbox, Identity");
        continue;
      }
      CheckFields(p, path, {"aesgcm", "aescbc", "secretbox", "identity", "kms"},
                  &errs);
      if (p.MemberCount() > 1) {
        errs.Invalid(path, "",
                     "more than one provider specified in a single element, "
                     "should split into different list elements");
        continue;
      }
      std::string name(p.MemberBegin()->name.GetString());
      const rapidjson::Value& body = p.MemberBegin()->value;
      ProviderConfig pc;
      if (name == "aesgcm" || name == "aescbc") {
        pc.type =
            name == "aesgcm" ? ProviderType::kAesGcm : ProviderType::kAesCbc;
        ParseKeys(body, path + "." + name, {16, 24, 32}, &pc, &errs);
      } else if (name == "secretbox") {
        pc.type = ProviderType::kSecretbox;
        ParseKeys(body, path + "." + name, {kSecretboxKeySize}, &pc, &errs);
      } else if (name == "identity") {
        pc.type = ProviderType::kIdentity;
        if (body.IsObject()) CheckFields(body, path + ".identity", {}, &errs);
      } else if (name == "kms") {
        errs.Invalid(path + ".kms", "",
                     "kms providers are not supported by kplane (there is no "
                     "KMS plugin interface); use aesgcm, aescbc or secretbox");
        continue;
      } else {
        continue;  // reported by CheckFields
      }
      rc.providers.push_back(std::move(pc));
    }
    config.resources.push_back(std::move(rc));
  }
  if (!errs.empty()) return errs.ToStatus();
  return config;
}

StatusOr<EncryptionConfiguration> LoadEncryptionConfiguration(
    const std::string& path) {
  StatusOr<std::string> text = ReadFile(FileSystem::Default(), path);
  if (!text.ok()) {
    return InvalidArgumentError(
        "error while parsing file: error opening encryption provider "
        "configuration file " +
        GoQuote(path) + ": " + text.status().message());
  }
  if (text->empty()) {
    return InvalidArgumentError(
        "error while parsing file: encryption provider configuration file " +
        GoQuote(path) + " is empty");
  }
  StatusOr<EncryptionConfiguration> config =
      ParseEncryptionConfiguration(*text);
  if (!config.ok()) {
    return InvalidArgumentError("error while parsing file " + GoQuote(path) +
                                ": " + config.status().message());
  }
  return config;
}

// ---------------------------------------------------------------------------
// Transformer

Transformer::Transformer(std::vector<ProviderConfig> providers)
    : providers_(std::move(providers)) {}

std::string Transformer::Writer() const {
  const ProviderConfig& p = providers_.front();
  if (p.type == ProviderType::kIdentity) return "identity";
  return std::string(ProviderName(p.type)) + ":" + p.keys.front().name;
}

StatusOr<std::string> Transformer::ToStorage(std::string_view plain,
                                             std::string_view key) const {
  const ProviderConfig& p = providers_.front();
  if (p.type == ProviderType::kIdentity) return std::string(plain);
  const Key& k = p.keys.front();
  ASSIGN_OR_RETURN(std::string sealed, Seal(p.type, k.secret, plain, key));
  return ProviderPrefix(p.type) + k.name + ":" + sealed;
}

StatusOr<Transformer::Read> Transformer::FromStorage(
    std::string_view stored, std::string_view key) const {
  std::vector<Status> errs;
  for (size_t i = 0; i < providers_.size(); ++i) {
    const ProviderConfig& p = providers_[i];
    if (p.type == ProviderType::kIdentity) {
      // The identity reader matches everything but declines encrypted data
      // silently, so that a later provider can read it (decrypting away).
      if (!CheckNotEncrypted(stored).ok()) continue;
      return Read{std::string(stored), i != 0};
    }
    std::string prefix = ProviderPrefix(p.type);
    if (stored.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = stored.substr(prefix.size());
    std::vector<Status> key_errs;
    bool opened = false;
    Read read;
    for (size_t j = 0; j < p.keys.size() && !opened; ++j) {
      const Key& k = p.keys[j];
      if (rest.size() <= k.name.size() ||
          rest.substr(0, k.name.size()) != k.name ||
          rest[k.name.size()] != ':') {
        continue;
      }
      StatusOr<std::string> plain =
          Open(p.type, k.secret, rest.substr(k.name.size() + 1), key);
      if (!plain.ok()) {
        key_errs.push_back(plain.status());
        continue;
      }
      read = Read{std::move(*plain), i != 0 || j != 0};
      opened = true;
    }
    if (opened) return read;
    if (key_errs.empty()) {
      key_errs.push_back(CorruptionError(
          p.type == ProviderType::kSecretbox
              ? "no matching key was found for the provided Secretbox "
                "transformer"
              : "no matching key was found for the provided AES "
                "transformer"));
    }
    errs.push_back(Reduce(key_errs));
  }
  if (!errs.empty()) return Reduce(errs);
  return CorruptionError("no matching prefix found");
}

Status CheckNotEncrypted(std::string_view stored) {
  if (stored.substr(0, kEncryptedPrefix.size()) == kEncryptedPrefix) {
    return CorruptionError("identity transformer tried to read encrypted data");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// TransformerSet

TransformerSet::TransformerSet(const EncryptionConfiguration& config) {
  for (const ResourceConfig& rc : config.resources) {
    Entry e;
    for (const std::string& r : rc.resources) {
      e.patterns.push_back(ParseGroupResource(r));
    }
    e.transformer = std::make_shared<const Transformer>(rc.providers);
    entries_.push_back(std::move(e));
  }
}

std::shared_ptr<const Transformer> TransformerSet::For(
    std::string_view group, std::string_view resource) const {
  for (const Entry& e : entries_) {
    for (const auto& [g, r] : e.patterns) {
      bool all = g == "*" && r == "*";
      if (all || (g == group && (r == "*" || r == resource))) {
        return e.transformer;
      }
    }
  }
  return nullptr;
}

StatusOr<std::string> GenerateAesGcmConfig(std::string_view key_name) {
  ASSIGN_OR_RETURN(std::string key, RandomBytes(32));
  std::string out =
      "# Encryption at rest (kube-apiserver's --encryption-provider-config).\n"
      "# Keep this file secret: it holds the key. To rotate, add a new key\n"
      "# first, restart, rewrite every Secret, then drop the old key\n"
      "# (docs/security.md).\n"
      "apiVersion: apiserver.config.k8s.io/v1\n"
      "kind: EncryptionConfiguration\n"
      "resources:\n"
      "- resources:\n"
      "  - secrets\n"
      "  providers:\n"
      "  - aesgcm:\n"
      "      keys:\n"
      "      - name: " +
      std::string(key_name) +
      "\n"
      "        secret: " +
      Base64Encode(key) +
      "\n"
      "  - identity: {}\n";
  return out;
}

}  // namespace kplane::apiserver::encryption
