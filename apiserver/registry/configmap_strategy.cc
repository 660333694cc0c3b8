// The configmap strategy (core/v1 ConfigMap; upstream:
// pkg/registry/core/configmap/strategy.go of Kubernetes 1.32).
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"

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
using validation::SortedKeys;

FieldErrors ValidateConfigMap(const ConfigMap& cm) {
  FieldErrors errs = validation::ValidateObjectMeta(
      cm.metadata(), true, NameRule::kDNS1123Subdomain);
  int64_t total = 0;
  Path dp("data");
  for (const std::string& k : SortedKeys(cm.data())) {
    for (auto& m : validation::IsConfigMapKey(k)) {
      errs.push_back(InvalidString(dp.Key(k), k, m));
    }
    if (cm.binarydata().contains(k)) {
      errs.push_back(InvalidString(dp.Key(k), k,
                                   "duplicate of key present in binaryData"));
    }
    total += cm.data().at(k).size();
  }
  Path bp("binaryData");
  for (const std::string& k : SortedKeys(cm.binarydata())) {
    for (auto& m : validation::IsConfigMapKey(k)) {
      errs.push_back(InvalidString(bp.Key(k), k, m));
    }
    total += cm.binarydata().at(k).size();
  }
  if (total > kMaxSecretSize) {
    // field.NewPath("") prints as "[]".
    errs.push_back(validation::TooLong(Path("[]"), kMaxSecretSize));
  }
  return errs;
}

class ConfigMapStrategy : public TypedStrategy<ConfigMap> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::ConfigMapColumns();
  }

 protected:
  FieldErrors ValidateCreateT(const ConfigMap& cm) const override {
    return ValidateConfigMap(cm);
  }
  FieldErrors ValidateUpdateT(const ConfigMap& cm,
                              const ConfigMap& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(cm.metadata(), old.metadata());
    if (old.has_immutable() && old.immutable()) {
      constexpr char kMsg[] = "field is immutable when `immutable` is set";
      if (!cm.has_immutable() || !cm.immutable()) {
        errs.push_back(Forbidden(Path("immutable"), kMsg));
      }
      if (!MapsEqual(cm.data(), old.data())) {
        errs.push_back(Forbidden(Path("data"), kMsg));
      }
      if (!MapsEqual(cm.binarydata(), old.binarydata())) {
        errs.push_back(Forbidden(Path("binaryData"), kMsg));
      }
    }
    Append(&errs, ValidateConfigMap(cm));
    return errs;
  }
  std::vector<TableCell> RowT(const ConfigMap& cm,
                              WallTime now) const override {
    return printers::ConfigMapRow(cm, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewConfigMapStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<ConfigMapStrategy>(r);
}

}  // namespace kplane::apiserver
