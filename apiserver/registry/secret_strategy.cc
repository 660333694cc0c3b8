// The secret strategy (core/v1 Secret; upstream:
// pkg/registry/core/secret/strategy.go of Kubernetes 1.32).
#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/defaults.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/json.h"
#include "base/strings.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using validation::Append;
using validation::Forbidden;
using validation::InvalidString;
using validation::kMaxSecretSize;
using validation::MapsEqual;
using validation::NameRule;
using validation::Path;
using validation::Required;
using validation::SortedKeys;

FieldErrors ValidateSecret(const Secret& s) {
  FieldErrors errs = validation::ValidateObjectMeta(
      s.metadata(), true, NameRule::kDNS1123Subdomain);
  Path dp("data");
  int64_t total = 0;
  for (const std::string& k : SortedKeys(s.data())) {
    for (auto& m : validation::IsConfigMapKey(k)) {
      errs.push_back(InvalidString(dp.Key(k), k, m));
    }
    total += s.data().at(k).size();
  }
  if (total > kMaxSecretSize)
    errs.push_back(validation::TooLong(dp, kMaxSecretSize));
  const std::string& type = s.type();
  auto has = [&](const char* k) { return s.data().contains(k); };
  // Iterative and depth-bounded (base/json.h): the bytes are the client's,
  // up to 1 MiB, and a recursive parse of 1 MiB of '[' overflows the stack.
  auto valid_json = [](const std::string& bytes) {
    rapidjson::Document d;
    return json::ParseDom(bytes, &d).ok() && d.IsObject();
  };
  if (type == "kubernetes.io/service-account-token") {
    auto it =
        s.metadata().annotations().find("kubernetes.io/service-account.name");
    if (it == s.metadata().annotations().end() || it->second.empty()) {
      errs.push_back(Required(Path("metadata")
                                  .Child("annotations")
                                  .Key("kubernetes.io/service-account.name")));
    }
  } else if (type == "kubernetes.io/dockercfg") {
    if (!has(".dockercfg")) {
      errs.push_back(Required(dp.Key(".dockercfg")));
    } else if (!valid_json(s.data().at(".dockercfg"))) {
      errs.push_back(InvalidString(
          dp.Key(".dockercfg"), "<secret contents redacted>", "invalid JSON"));
    }
  } else if (type == "kubernetes.io/dockerconfigjson") {
    if (!has(".dockerconfigjson")) {
      errs.push_back(Required(dp.Key(".dockerconfigjson")));
    } else if (!valid_json(s.data().at(".dockerconfigjson"))) {
      errs.push_back(InvalidString(dp.Key(".dockerconfigjson"),
                                   "<secret contents redacted>",
                                   "invalid JSON"));
    }
  } else if (type == "kubernetes.io/basic-auth") {
    if (!has("username") && !has("password")) {
      errs.push_back(Required(dp.Key("username")));
      errs.push_back(Required(dp.Key("password")));
    }
  } else if (type == "kubernetes.io/ssh-auth") {
    if (!has("ssh-privatekey") || s.data().at("ssh-privatekey").empty()) {
      errs.push_back(Required(dp.Key("ssh-privatekey")));
    }
  } else if (type == "kubernetes.io/tls") {
    if (!has("tls.crt")) errs.push_back(Required(dp.Key("tls.crt")));
    if (!has("tls.key")) errs.push_back(Required(dp.Key("tls.key")));
  }
  return errs;
}

class SecretStrategy : public TypedStrategy<Secret> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "metadata.namespace", "type"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::SecretColumns();
  }

 protected:
  void DefaultT(Secret* s) const override { defaults::DefaultSecret(s); }
  FieldErrors ValidateCreateT(const Secret& s) const override {
    return ValidateSecret(s);
  }
  FieldErrors ValidateUpdateT(const Secret& s,
                              const Secret& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(s.metadata(), old.metadata());
    Append(&errs, validation::ValidateImmutable(
                      s.type() == old.type(), GoQuote(s.type()), Path("type")));
    if (old.has_immutable() && old.immutable()) {
      constexpr char kMsg[] = "field is immutable when `immutable` is set";
      if (!s.has_immutable() || !s.immutable()) {
        errs.push_back(Forbidden(Path("immutable"), kMsg));
      }
      if (!MapsEqual(s.data(), old.data())) {
        errs.push_back(Forbidden(Path("data"), kMsg));
      }
    }
    Append(&errs, ValidateSecret(s));
    return errs;
  }
  std::optional<std::string> FieldValueT(const Secret& s,
                                         std::string_view f) const override {
    if (f == "type") return s.type();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Secret& s, WallTime now) const override {
    return printers::SecretRow(s, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewSecretStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<SecretStrategy>(r);
}

}  // namespace kplane::apiserver
