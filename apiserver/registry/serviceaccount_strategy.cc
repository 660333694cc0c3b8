// The serviceaccount strategy (core/v1 ServiceAccount; upstream:
// pkg/registry/core/serviceaccount/strategy.go and ValidateServiceAccount
// in pkg/apis/core/validation of Kubernetes 1.32).
//
// A name is a DNS-1123 subdomain; secret references keep only their name
// (kube's cleanSecretReferences), on create and on update. Nothing else of
// a ServiceAccount is validated by kube either. Also the TokenRequest
// validation of the token subresource (kube's
// pkg/apis/authentication/validation).
#include <memory>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"

namespace kplane::apiserver {

namespace {

using objects::corev1::ObjectReference;
using objects::corev1::ServiceAccount;

FieldErrors ValidateServiceAccount(const ServiceAccount& sa) {
  return validation::ValidateObjectMeta(
      sa.metadata(), true, validation::NameRule::kDNS1123Subdomain);
}

// kube's cleanSecretReferences: a ServiceAccount names Secrets of its own
// namespace; any other field of the reference is dropped.
void CleanSecretReferences(ServiceAccount* sa) {
  for (ObjectReference& ref : *sa->mutable_secrets()) {
    ObjectReference name_only;
    name_only.set_name(ref.name());
    ref = std::move(name_only);
  }
}

class ServiceAccountStrategy : public TypedStrategy<ServiceAccount> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::ServiceAccountColumns();
  }

 protected:
  void CreateT(ServiceAccount* sa) const override { CleanSecretReferences(sa); }
  void UpdateT(ServiceAccount* sa, const ServiceAccount&) const override {
    CleanSecretReferences(sa);
  }
  FieldErrors ValidateCreateT(const ServiceAccount& sa) const override {
    return ValidateServiceAccount(sa);
  }
  FieldErrors ValidateUpdateT(const ServiceAccount& sa,
                              const ServiceAccount& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(sa.metadata(), old.metadata());
    validation::Append(&errs, ValidateServiceAccount(sa));
    return errs;
  }
  std::vector<TableCell> RowT(const ServiceAccount& sa,
                              WallTime now) const override {
    return printers::ServiceAccountRow(sa, now);
  }
};

}  // namespace

FieldErrors ValidateTokenRequest(
    const objects::authenticationv1::TokenRequest& request) {
  FieldErrors errs;
  const validation::Path path =
      validation::Path("spec").Child("expirationSeconds");
  const int64_t seconds = request.spec().expirationseconds();
  if (seconds < kMinTokenExpirationSeconds) {
    errs.push_back(validation::InvalidInt(
        path, seconds, "may not specify a duration less than 10 minutes"));
  }
  if (seconds > kMaxTokenExpirationSeconds) {
    errs.push_back(validation::InvalidInt(
        path, seconds, "may not specify a duration larger than 2^32 seconds"));
  }
  return errs;
}

std::unique_ptr<Strategy> NewServiceAccountStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<ServiceAccountStrategy>(r);
}

}  // namespace kplane::apiserver
