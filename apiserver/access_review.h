// The review resources kubectl's `auth can-i` and `auth whoami` create
// (nothing is stored; the answer is computed and returned):
//
//   POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews
//     {"spec":{"resourceAttributes":{"verb":"create","resource":"pods",
//      "namespace":"default"}}}  ->  ... "status":{"allowed":true,...}
//   POST /apis/authorization.k8s.io/v1/subjectaccessreviews   (the same for
//     spec.user/spec.groups; RBAC decides who may ask: cluster-admin)
//   POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews
//     {"spec":{"namespace":"default"}} -> status.resourceRules, ...
//   POST /apis/authentication.k8s.io/v1/selfsubjectreviews   (and v1beta1)
//     -> {"status":{"userInfo":{"username":"alice","groups":[...]}}}
//
// As kube-apiserver (pkg/registry/authorization/*, pkg/registry/
// authentication/selfsubjectreview): the request's spec is answered back
// with a status; a review never changes anything. JSON only.
//
// Thread-safety: pure functions (the callbacks are called on the calling
// thread). Errors: ApiError 400 for a body that is not a JSON object, 422
// (Invalid, kube's field errors) for a spec without exactly one of
// resourceAttributes / nonResourceAttributes or, for a SubjectAccessReview,
// without a user or group.
#ifndef KPLANE_APISERVER_ACCESS_REVIEW_H_
#define KPLANE_APISERVER_ACCESS_REVIEW_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/auth/authorizer.h"
#include "apiserver/auth/rbac.h"
#include "apiserver/errors.h"
#include "apiserver/query_params.h"
#include "base/clock.h"

namespace kplane::apiserver {

// Whether (group, resource) of API version `version` is one of the review
// resources above.
bool IsReviewResource(std::string_view group, std::string_view version,
                      std::string_view resource);

struct ReviewContext {
  std::string group;     // "authorization.k8s.io" or "authentication.k8s.io"
  std::string version;   // "v1", "v1beta1"
  std::string resource;  // "selfsubjectaccessreviews", ...
  auth::UserInfo user;   // who asks
  // The server's authorizer.
  std::function<auth::Decision(const auth::Attributes&, std::string*)>
      authorize;
  // RBAC's rules for a user in a namespace (SelfSubjectRulesReview); null:
  // the answer is marked incomplete.
  std::function<std::vector<auth::PolicyRule>(
      const auth::UserInfo&, const std::string& ns, std::vector<std::string>*)>
      rules_for;
  WallTime now;
};

// The review's answer as a JSON object.
ApiResult<std::string> AnswerReview(const ReviewContext& ctx,
                                    std::string_view body);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_ACCESS_REVIEW_H_
