// The binding strategy (core/v1 Binding; upstream:
// pkg/registry/core/pod/storage/storage.go's BindingREST of Kubernetes 1.32).
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/strategies.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types

class BindingStrategy : public TypedStrategy<Binding> {
 public:
  using TypedStrategy::TypedStrategy;

 protected:
  FieldErrors ValidateCreateT(const Binding& b) const override {
    return ValidateBinding(b);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewBindingStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<BindingStrategy>(r);
}

}  // namespace kplane::apiserver
