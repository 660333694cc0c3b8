#include "apiserver/access_review.h"

#include <chrono>

#include "base/strings.h"
#include "objects/meta.h"
#include "schemas/k8s/authentication.pb.h"
#include "schemas/k8s/authentication_v1beta1.pb.h"
#include "schemas/k8s/authorization.pb.h"

namespace kplane::apiserver {

namespace {

namespace authzv1 = ::k8s::io::api::authorization::v1;
namespace authnv1 = ::k8s::io::api::authentication::v1;
namespace authnv1beta1 = ::k8s::io::api::authentication::v1beta1;

constexpr char kAuthorization[] = "authorization.k8s.io";
constexpr char kAuthentication[] = "authentication.k8s.io";

ApiError InvalidReview(std::string_view group, std::string_view kind,
                       FieldError e) {
  return ApiError::Invalid(group, kind, "", {std::move(e)});
}

// kube's ValidateSelfSubjectAccessReviewSpec (and the SubjectAccessReview
// rules): exactly one kind of attributes; someone to ask about.
std::optional<ApiError> ValidateAttributes(
    std::string_view kind, bool has_resource,
    const authzv1::NonResourceAttributes* non_resource) {
  if (has_resource && non_resource != nullptr) {
    return InvalidReview(
        kAuthorization, kind,
        {FieldError::Type::kInvalid, "spec.nonResourceAttributes",
         "authorization.NonResourceAttributes{Path:" +
             GoQuote(non_resource->path()) +
             ", Verb:" + GoQuote(non_resource->verb()) + "}",
         "cannot be specified in combination with resourceAttributes"});
  }
  if (!has_resource && non_resource == nullptr) {
    // A nil pointer prints as "null" in field errors.
    return InvalidReview(
        kAuthorization, kind,
        {FieldError::Type::kInvalid, "spec.resourceAttributes", "\"null\"",
         "exactly one of nonResourceAttributes or "
         "resourceAttributes must be specified"});
  }
  return std::nullopt;
}

auth::Attributes AttributesOf(const authzv1::ResourceAttributes* res,
                              const authzv1::NonResourceAttributes* nonres) {
  auth::Attributes a;
  if (res != nullptr) {
    a.resource_request = true;
    a.verb = res->verb();
    a.api_group = res->group();
    a.resource = res->resource();
    a.subresource = res->subresource();
    a.ns = res->namespace_();
    a.name = res->name();
  } else {
    a.verb = nonres->verb();
    a.path = nonres->path();
  }
  return a;
}

void Decide(const ReviewContext& ctx, const auth::Attributes& a,
            authzv1::SubjectAccessReviewStatus* status) {
  std::string reason;
  const auth::Decision d = ctx.authorize(a, &reason);
  status->Clear();
  status->set_allowed(d == auth::Decision::kAllow);
  // kube's SAR REST: denied only when an authorizer denied. Node, RBAC
  // and AlwaysDeny never do (they allow or have no opinion, and so does
  // the chain of them), so a refusal is allowed=false without denied, its
  // reason kept (RBAC's `clusterrole ... not found`, the Node authorizer's
  // `node 'n1' cannot modify node 'n2'`).
  if (d == auth::Decision::kDeny) status->set_denied(true);
  if (!reason.empty()) status->set_reason(reason);
}

// Nothing is stored: no name, uid, resourceVersion or managed fields.
void ResetMeta(google::protobuf::Message* review) {
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(review);
  if (meta != nullptr) meta->Clear();
}

// A SubjectAccessReview's (or LocalSubjectAccessReview's) answer: what the
// authorizer says about spec.user/spec.groups.
std::optional<ApiError> DecideForSubject(
    const ReviewContext& ctx, std::string_view kind,
    const authzv1::SubjectAccessReviewSpec& spec,
    authzv1::SubjectAccessReviewStatus* status) {
  if (auto e = ValidateAttributes(kind, spec.has_resourceattributes(),
                                  spec.has_nonresourceattributes()
                                      ? &spec.nonresourceattributes()
                                      : nullptr)) {
    return e;
  }
  if (spec.user().empty() && spec.groups_size() == 0) {
    return InvalidReview(kAuthorization, kind,
                         {FieldError::Type::kInvalid, "spec.user", "\"\"",
                          "at least one of user or group must be specified"});
  }
  auth::Attributes a = AttributesOf(
      spec.has_resourceattributes() ? &spec.resourceattributes() : nullptr,
      &spec.nonresourceattributes());
  a.user = {.name = spec.user(),
            .uid = spec.uid(),
            .groups = {spec.groups().begin(), spec.groups().end()}};
  Decide(ctx, a, status);
  return std::nullopt;
}

}  // namespace

namespace {

struct ReviewResource {
  const char* group;
  const char* version;
  const char* resource;
  const char* singular;
  const char* kind;
  bool namespaced;
  bool listed;  // in discovery
};

// authentication.k8s.io/v1beta1 is off in kube 1.32 (its discovery lists
// v1 only); kplane still answers v1beta1 selfsubjectreviews, unlisted.
constexpr ReviewResource kReviewResources[] = {
    {kAuthorization, "v1", "selfsubjectaccessreviews",
     "selfsubjectaccessreview", "SelfSubjectAccessReview", false, true},
    {kAuthorization, "v1", "subjectaccessreviews", "subjectaccessreview",
     "SubjectAccessReview", false, true},
    {kAuthorization, "v1", "localsubjectaccessreviews",
     "localsubjectaccessreview", "LocalSubjectAccessReview", true, true},
    {kAuthorization, "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
     "SelfSubjectRulesReview", false, true},
    {kAuthentication, "v1", "selfsubjectreviews", "selfsubjectreview",
     "SelfSubjectReview", false, true},
    {kAuthentication, "v1beta1", "selfsubjectreviews", "selfsubjectreview",
     "SelfSubjectReview", false, false},
    {kAuthentication, "v1", "tokenreviews", "tokenreview", "TokenReview", false,
     true},
};

}  // namespace

const objects::KindInfo* ReviewKind(std::string_view group,
                                    std::string_view version,
                                    std::string_view resource) {
  for (const ReviewResource& r : kReviewResources) {
    if (group == r.group && version == r.version && resource == r.resource) {
      return objects::Scheme::Default().FindKind(
          std::string(group) + "/" + std::string(version), r.kind);
    }
  }
  return nullptr;
}

const std::vector<const objects::ResourceInfo*>& ListedReviewResources() {
  static const auto* const listed = [] {
    auto* out = new std::vector<const objects::ResourceInfo*>;
    for (const ReviewResource& r : kReviewResources) {
      if (!r.listed) continue;
      auto* info = new objects::ResourceInfo;
      info->gv = {r.group, r.version};
      info->resource = r.resource;
      info->singular = r.singular;
      info->namespaced = r.namespaced;
      info->kind = ReviewKind(r.group, r.version, r.resource);
      info->verbs = {"create"};
      out->push_back(info);
    }
    return out;
  }();
  return *listed;
}

std::optional<ApiError> AnswerReview(const ReviewContext& ctx,
                                     google::protobuf::Message* review) {
  const objects::metav1::ObjectMeta* meta_in = objects::GetObjectMeta(*review);
  const std::string namespace_in_body =
      meta_in != nullptr ? meta_in->namespace_() : "";
  ResetMeta(review);
  if (auto* r = dynamic_cast<authzv1::SelfSubjectAccessReview*>(review)) {
    const auto& spec = r->spec();
    if (auto e = ValidateAttributes(
            "SelfSubjectAccessReview", spec.has_resourceattributes(),
            spec.has_nonresourceattributes() ? &spec.nonresourceattributes()
                                             : nullptr)) {
      return e;
    }
    auth::Attributes a = AttributesOf(
        spec.has_resourceattributes() ? &spec.resourceattributes() : nullptr,
        &spec.nonresourceattributes());
    a.user = ctx.user;
    Decide(ctx, a, r->mutable_status());
    return std::nullopt;
  }
  if (auto* r = dynamic_cast<authzv1::SubjectAccessReview*>(review)) {
    return DecideForSubject(ctx, "SubjectAccessReview", r->spec(),
                            r->mutable_status());
  }
  if (auto* r = dynamic_cast<authzv1::LocalSubjectAccessReview*>(review)) {
    // kube's LocalSubjectAccessReview REST and validation: the object lives
    // in the request's namespace and asks about that namespace only.
    if (ctx.ns.empty()) {
      return ApiError::BadRequest("namespace is required on this type: ");
    }
    if (!namespace_in_body.empty() && namespace_in_body != ctx.ns) {
      return ApiError::BadRequest(
          "the namespace of the provided object does not match the "
          "namespace sent on the request");
    }
    r->mutable_metadata()->set_namespace_(ctx.ns);
    const auto& spec = r->spec();
    if (!spec.has_resourceattributes() && spec.has_nonresourceattributes()) {
      return InvalidReview(
          kAuthorization, "LocalSubjectAccessReview",
          {FieldError::Type::kInvalid, "spec.nonResourceAttributes",
           "authorization.NonResourceAttributes{Path:" +
               GoQuote(spec.nonresourceattributes().path()) +
               ", Verb:" + GoQuote(spec.nonresourceattributes().verb()) + "}",
           "disallowed on this kind of request"});
    }
    if (spec.has_resourceattributes() &&
        spec.resourceattributes().namespace_() != ctx.ns) {
      return InvalidReview(
          kAuthorization, "LocalSubjectAccessReview",
          {FieldError::Type::kInvalid, "spec.resourceAttributes.namespace",
           GoQuote(spec.resourceattributes().namespace_()),
           "must match metadata.namespace"});
    }
    return DecideForSubject(ctx, "LocalSubjectAccessReview", spec,
                            r->mutable_status());
  }
  if (auto* r = dynamic_cast<authnv1::TokenReview*>(review)) {
    // kube's TokenReview REST: a request with only the token goes through
    // the apiserver's authenticator; one it refuses is not authenticated.
    if (r->spec().token().empty()) {
      return ApiError::BadRequest(
          "token is required for TokenReview in authentication");
    }
    authnv1::TokenReviewStatus* status = r->mutable_status();
    status->Clear();
    if (!ctx.authenticate_token) return std::nullopt;
    const std::vector<std::string> wanted(r->spec().audiences().begin(),
                                          r->spec().audiences().end());
    std::vector<std::string> matched;
    StatusOr<auth::UserInfo> who =
        ctx.authenticate_token(r->spec().token(), wanted, &matched);
    if (!who.ok()) {
      status->set_error(who.status().message());
      return std::nullopt;
    }
    status->set_authenticated(true);
    for (const std::string& a : matched) status->add_audiences(a);
    const auth::UserInfo& u = *who;
    authnv1::UserInfo* out = status->mutable_user();
    if (!u.name.empty()) out->set_username(u.name);
    if (!u.uid.empty()) out->set_uid(u.uid);
    for (const std::string& g : u.groups) out->add_groups(g);
    return std::nullopt;
  }
  if (auto* r = dynamic_cast<authzv1::SelfSubjectRulesReview*>(review)) {
    std::vector<std::string> errors;
    std::vector<auth::PolicyRule> rules;
    if (ctx.rules_for) {
      rules = ctx.rules_for(ctx.user, r->spec().namespace_(), &errors);
    }
    authzv1::SubjectRulesReviewStatus* status = r->mutable_status();
    status->Clear();
    for (const auth::PolicyRule& rule : rules) {
      if (!rule.non_resource_urls.empty()) {
        authzv1::NonResourceRule* o = status->add_nonresourcerules();
        for (const auto& v : rule.verbs) o->add_verbs(v);
        for (const auto& u : rule.non_resource_urls) o->add_nonresourceurls(u);
        continue;
      }
      authzv1::ResourceRule* o = status->add_resourcerules();
      for (const auto& v : rule.verbs) o->add_verbs(v);
      for (const auto& g : rule.api_groups) o->add_apigroups(g);
      for (const auto& res : rule.resources) o->add_resources(res);
      for (const auto& n : rule.resource_names) o->add_resourcenames(n);
    }
    // Other authorizers (Node, system:masters) grant what RBAC's rules do
    // not show, as in kube.
    status->set_incomplete(!ctx.rules_for || !errors.empty());
    if (!errors.empty()) status->set_evaluationerror(StrJoin(errors, ", "));
    return std::nullopt;
  }
  authnv1::UserInfo* user = nullptr;
  if (auto* r = dynamic_cast<authnv1::SelfSubjectReview*>(review)) {
    user = r->mutable_status()->mutable_userinfo();
  } else if (auto* rb =
                 dynamic_cast<authnv1beta1::SelfSubjectReview*>(review)) {
    user = rb->mutable_status()->mutable_userinfo();
  } else {
    return ApiError::Internal("not a review");
  }
  // kube stamps a SelfSubjectReview with the time it was made.
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(review);
  const auto since_epoch = ctx.now.time_since_epoch();
  meta->mutable_creationtimestamp()->set_seconds(
      std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count());
  user->Clear();
  if (!ctx.user.name.empty()) user->set_username(ctx.user.name);
  if (!ctx.user.uid.empty()) user->set_uid(ctx.user.uid);
  for (const std::string& g : ctx.user.groups) user->add_groups(g);
  return std::nullopt;
}

}  // namespace kplane::apiserver
