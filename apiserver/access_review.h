// The review resources kubectl's `auth can-i` and `auth whoami` create
// (nothing is stored; the answer is computed and returned):
//
//   POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews
//     {"spec":{"resourceAttributes":{"verb":"create","resource":"pods",
//      "namespace":"default"}}}  ->  ... "status":{"allowed":true,...}
//   POST /apis/authorization.k8s.io/v1/subjectaccessreviews   (the same for
//     spec.user/spec.groups; RBAC decides who may ask: cluster-admin)
//   POST /apis/authorization.k8s.io/v1/namespaces/<ns>/
//        localsubjectaccessreviews
//     (a SubjectAccessReview about <ns> only: spec.resourceAttributes.
//     namespace must be <ns>; no nonResourceAttributes)
//   POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews
//     {"spec":{"namespace":"default"}} -> status.resourceRules, ...
//   POST /apis/authentication.k8s.io/v1/selfsubjectreviews   (and v1beta1)
//     -> {"status":{"userInfo":{"username":"alice","groups":[...]}}}
//   POST /apis/authentication.k8s.io/v1/tokenreviews
//     {"spec":{"token":"..."}} -> {"status":{"authenticated":true,
//      "user":{"username":...,"groups":[...]}}}: the token checked by the
//     apiserver's bearer-token authenticators (the token file,
//     ServiceAccount tokens) for spec.audiences (empty: the API server's
//     own), status.audiences those it is for; a token of the static token
//     file is for the API server's audiences only (kube's audience-
//     agnostic tokens).
//
// As kube-apiserver (pkg/registry/authorization/*, pkg/registry/
// authentication/selfsubjectreview): the request's spec is answered back
// with a status; a review never changes anything. Bodies and answers in
// JSON, YAML or protobuf (kubectl sends protobuf).
//
// Thread-safety: pure functions (the callbacks are called on the calling
// thread). Errors: ApiError 422
// (Invalid, kube's field errors) for a spec without exactly one of
// resourceAttributes / nonResourceAttributes or, for a (Local)
// SubjectAccessReview, without a user or group; 400 (BadRequest, kube's
// messages) for a TokenReview without a token and a
// LocalSubjectAccessReview whose metadata.namespace is not the request's.
#ifndef KPLANE_APISERVER_ACCESS_REVIEW_H_
#define KPLANE_APISERVER_ACCESS_REVIEW_H_

#include <google/protobuf/message.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/auth/authorizer.h"
#include "apiserver/auth/rbac.h"
#include "apiserver/errors.h"
#include "base/clock.h"
#include "base/statusor.h"
#include "objects/scheme.h"

namespace kplane::apiserver {

// The kind of a review resource's requests and answers (e.g.
// authorization.k8s.io/v1 SelfSubjectAccessReview), or null when
// (group, version, resource) is not one of the review resources above.
const objects::KindInfo* ReviewKind(std::string_view group,
                                    std::string_view version,
                                    std::string_view resource);

// The review resources as kube's discovery lists them: create-only, no
// storageVersionHash (never stored), authentication.k8s.io/v1 and
// authorization.k8s.io/v1 (v1beta1 selfsubjectreviews is answered but, as
// in kube 1.32, not listed). Built once; never freed.
const std::vector<const objects::ResourceInfo*>& ListedReviewResources();

struct ReviewContext {
  auth::UserInfo user;  // who asks
  // The server's authorizer.
  std::function<auth::Decision(const auth::Attributes&, std::string*)>
      authorize;
  // RBAC's rules for a user in a namespace (SelfSubjectRulesReview); null:
  // the answer is marked incomplete.
  std::function<std::vector<auth::PolicyRule>(
      const auth::UserInfo&, const std::string& ns, std::vector<std::string>*)>
      rules_for;
  WallTime now;
  // The request's namespace (LocalSubjectAccessReview; "" for the others).
  std::string ns;
  // The apiserver's authentication of a bearer token for `audiences`
  // (TokenReview; empty: the API server's own): the user, with *matched
  // the audiences the token is for, or the error. Null: every TokenReview
  // answers authenticated=false.
  std::function<StatusOr<auth::UserInfo>(
      std::string_view token, const std::vector<std::string>& audiences,
      std::vector<std::string>* matched)>
      authenticate_token;
};

// Answers `review` (a decoded request of ReviewKind's type) in place: its
// status is set, its metadata replaced (nothing is stored).
std::optional<ApiError> AnswerReview(const ReviewContext& ctx,
                                     google::protobuf::Message* review);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_ACCESS_REVIEW_H_
