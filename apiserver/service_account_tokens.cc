#include "apiserver/service_account_tokens.h"

#include <optional>
#include <utility>

#include "apiserver/registry/strategy.h"
#include "apiserver/registry/validation_util.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/time.h"

namespace kplane::apiserver {

namespace {

using objects::authenticationv1::TokenRequest;

// The object's uid from the watch cache, or from the store when the cache
// misses (an object created a moment ago) or is not loaded; nullopt when it
// does not exist or cannot be read (a token is then refused: fail closed).
ObjectPtr ReadObject(const ResourceStore& rest, const std::string& ns,
                     const std::string& name) {
  StatusOr<ObjectPtr> got = NotFoundError("");
  Cacher* cache = rest.cacher();
  if (cache != nullptr && cache->ready()) got = cache->Get(ns, name);
  if (!got.ok()) got = rest.object_store()->Get(ns, name, 0);
  return got.ok() ? *got : nullptr;
}

std::optional<std::string> ReadUid(const ResourceStore& rest,
                                   const std::string& ns,
                                   const std::string& name) {
  ObjectPtr o = ReadObject(rest, ns, name);
  if (o == nullptr) return std::nullopt;
  return objects::Uid(*o);
}

// Its deletionTimestamp (Unix seconds), if it is being deleted.
std::optional<int64_t> ReadDeletionStarted(const ResourceStore& rest,
                                           const std::string& ns,
                                           const std::string& name) {
  ObjectPtr o = ReadObject(rest, ns, name);
  if (o == nullptr) return std::nullopt;
  const objects::metav1::ObjectMeta* m = objects::GetObjectMeta(*o);
  if (m == nullptr || !objects::IsBeingDeleted(*m)) return std::nullopt;
  return objects::UnixSeconds(m->deletiontimestamp());
}

ApiError InvalidTokenRequest(std::string_view name, FieldErrors errors) {
  return ApiError::Invalid("authentication.k8s.io", "TokenRequest", name,
                           errors);
}

}  // namespace

class ServiceAccountTokens::CacheLookup final
    : public auth::ServiceAccountLookup {
 public:
  explicit CacheLookup(const ServiceAccountTokensOptions& o) : o_(o) {}

  std::optional<std::string> Uid(const std::string& ns,
                                 const std::string& name) const override {
    return ReadUid(*o_.serviceaccounts, ns, name);
  }
  std::optional<std::string> BoundObjectUid(
      const std::string& ns, const std::string& kind,
      const std::string& name) const override {
    if (kind == "Pod") return ReadUid(*o_.pods, ns, name);
    if (kind == "Secret") return ReadUid(*o_.secrets, ns, name);
    return std::nullopt;
  }
  std::optional<int64_t> DeletionStarted(
      const std::string& ns, const std::string& kind,
      const std::string& name) const override {
    if (kind == "ServiceAccount") {
      return ReadDeletionStarted(*o_.serviceaccounts, ns, name);
    }
    if (kind == "Pod") return ReadDeletionStarted(*o_.pods, ns, name);
    if (kind == "Secret") return ReadDeletionStarted(*o_.secrets, ns, name);
    return std::nullopt;
  }

 private:
  const ServiceAccountTokensOptions& o_;
};

ServiceAccountTokens::ServiceAccountTokens(ServiceAccountTokensOptions options)
    : options_(std::move(options)) {}

ServiceAccountTokens::~ServiceAccountTokens() = default;

StatusOr<std::unique_ptr<ServiceAccountTokens>> ServiceAccountTokens::Create(
    ServiceAccountTokensOptions options) {
  if (options.serviceaccounts == nullptr || options.pods == nullptr ||
      options.secrets == nullptr || options.clock == nullptr) {
    return InvalidArgumentError(
        "ServiceAccountTokens: the resource stores and clock are required");
  }
  const bool has_keys = !options.signing_key_pem.empty() ||
                        !options.verification_key_pems.empty();
  if (has_keys && options.issuers.empty()) {
    return InvalidArgumentError(
        "service account keys need an issuer (--service-account-issuer)");
  }
  if (options.audiences.empty()) options.audiences = options.issuers;
  auto out = std::unique_ptr<ServiceAccountTokens>(
      new ServiceAccountTokens(std::move(options)));
  const ServiceAccountTokensOptions& o = out->options_;
  out->lookup_ = std::make_unique<CacheLookup>(o);
  if (!o.signing_key_pem.empty()) {
    ASSIGN_OR_RETURN(out->issuer_, auth::ServiceAccountTokenIssuer::Create(
                                       o.signing_key_pem, o.issuers.front()));
  }
  if (has_keys) {
    std::vector<std::string> keys = o.verification_key_pems;
    if (!o.signing_key_pem.empty()) keys.push_back(o.signing_key_pem);
    ASSIGN_OR_RETURN(out->authenticator_,
                     auth::ServiceAccountTokenAuthenticator::Create(
                         {.key_pems = std::move(keys),
                          .issuers = o.issuers,
                          .audiences = o.audiences,
                          .lookup = out->lookup_.get(),
                          .clock = o.clock}));
  }
  return out;
}

ApiResult<TokenRequestPtr> ServiceAccountTokens::CreateToken(
    std::string_view ns, std::string_view name, TokenRequestPtr req) const {
  if (issuer_ == nullptr) return ApiError::NotFoundPath();
  auto* meta = req->mutable_metadata();
  // The body may name the account, but only the one of the URL.
  if (!meta->name().empty() && meta->name() != name) {
    return InvalidTokenRequest(
        name, {validation::InvalidString(
                  validation::Path("metadata").Child("name"), meta->name(),
                  "must match the service account name if specified")});
  }
  if (!meta->namespace_().empty() && meta->namespace_() != ns) {
    return InvalidTokenRequest(
        name,
        {validation::InvalidString(
            validation::Path("metadata").Child("namespace"), meta->namespace_(),
            "must match the service account namespace if specified")});
  }
  ApiResult<ObjectPtr> account = options_.serviceaccounts->Get(ns, name, "");
  if (std::holds_alternative<ApiError>(account)) {
    return std::get<ApiError>(std::move(account));
  }
  const auto& sa = static_cast<const objects::corev1::ServiceAccount&>(
      *std::get<ObjectPtr>(account));

  auto* spec = req->mutable_spec();
  if (spec->audiences().empty()) {
    for (const std::string& a : options_.audiences) spec->add_audiences(a);
  }
  if (!spec->has_expirationseconds()) {
    spec->set_expirationseconds(kDefaultTokenExpirationSeconds);
  }
  meta->set_name(sa.metadata().name());
  meta->set_namespace_(sa.metadata().namespace_());
  // Taken before the token is made, so that status.expirationTimestamp is
  // never later than the token's "exp".
  const WallTime now = options_.clock->WallNow();
  objects::SetTime(meta->mutable_creationtimestamp(), now);
  req->clear_status();
  if (FieldErrors errs = ValidateTokenRequest(*req); !errs.empty()) {
    return InvalidTokenRequest("", errs);
  }

  std::optional<auth::BoundObjectRef> bound;
  if (spec->has_boundobjectref()) {
    const auto& ref = spec->boundobjectref();
    const objects::GroupVersion gv =
        objects::GroupVersion::Parse(ref.apiversion());
    ResourceStore* store = nullptr;
    if (gv.group.empty() && ref.kind() == "Pod") store = options_.pods;
    if (gv.group.empty() && ref.kind() == "Secret") store = options_.secrets;
    if (store == nullptr) {
      // Go's GroupVersionKind.String().
      return ApiError::BadRequest("cannot bind token to object of type " +
                                  gv.group + "/" + gv.version +
                                  ", Kind=" + ref.kind());
    }
    ApiResult<ObjectPtr> target = store->Get(ns, ref.name(), "");
    if (std::holds_alternative<ApiError>(target)) {
      return std::get<ApiError>(std::move(target));
    }
    const ObjectPtr& object = std::get<ObjectPtr>(target);
    if (ref.kind() == "Pod" && static_cast<const objects::corev1::Pod&>(*object)
                                       .spec()
                                       .serviceaccountname() != name) {
      return ApiError::BadRequest(
          "cannot bind token for serviceaccount \"" + std::string(name) +
          "\" to pod running with different serviceaccount name.");
    }
    const std::string& uid = objects::Uid(*object);
    if (!ref.uid().empty() && ref.uid() != uid) {
      // kube names the group resource by the kind here: `on Pod "web"`.
      objects::ResourceInfo by_kind = store->resource();
      by_kind.resource = ref.kind();
      return ApiError::Conflict(
          by_kind, ref.name(),
          "the UID in the bound object reference (" + ref.uid() +
              ") does not match the UID in record. The object might have "
              "been deleted and then recreated");
    }
    bound = auth::BoundObjectRef{ref.kind(), ref.name(), uid};
  }

  const std::vector<std::string> audiences(spec->audiences().begin(),
                                           spec->audiences().end());
  const Duration ttl = seconds(spec->expirationseconds());
  StatusOr<std::string> token = issuer_->Issue(
      {sa.metadata().namespace_(), sa.metadata().name(), sa.metadata().uid()},
      audiences, now, ttl, bound);
  if (!token.ok()) return ApiError::Internal(token.status().message());
  req->mutable_status()->set_token(*std::move(token));
  objects::SetTime(req->mutable_status()->mutable_expirationtimestamp(),
                   now + ttl);
  return ApiResult<TokenRequestPtr>(std::move(req));
}

}  // namespace kplane::apiserver
