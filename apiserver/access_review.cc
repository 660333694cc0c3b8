#include "apiserver/access_review.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/strings.h"
#include "objects/time.h"

namespace kplane::apiserver {

namespace {

using rapidjson::Value;

constexpr char kAuthorization[] = "authorization.k8s.io";
constexpr char kAuthentication[] = "authentication.k8s.io";

std::string Str(const Value& obj, const char* member) {
  if (!obj.IsObject()) return "";
  auto it = obj.FindMember(member);
  if (it == obj.MemberEnd() || !it->value.IsString()) return "";
  return {it->value.GetString(), it->value.GetStringLength()};
}

const Value* Obj(const Value& obj, const char* member) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(member);
  if (it == obj.MemberEnd() || !it->value.IsObject()) return nullptr;
  return &it->value;
}

std::string KindOf(std::string_view resource) {
  if (resource == "selfsubjectaccessreviews") return "SelfSubjectAccessReview";
  if (resource == "subjectaccessreviews") return "SubjectAccessReview";
  if (resource == "selfsubjectrulesreviews") return "SelfSubjectRulesReview";
  return "SelfSubjectReview";
}

Value Strings(const std::vector<std::string>& v,
              rapidjson::Document::AllocatorType& a) {
  Value arr(rapidjson::kArrayType);
  for (const std::string& s : v) {
    arr.PushBack(Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a),
                 a);
  }
  return arr;
}

Value String(const std::string& s, rapidjson::Document::AllocatorType& a) {
  return Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a);
}

std::string Serialize(const rapidjson::Document& d) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

// The request's kind/apiVersion/metadata replaced by ours (nothing is
// stored: no name, uid or resourceVersion), its spec kept.
void SetTypeMeta(const ReviewContext& ctx, rapidjson::Document* d) {
  auto& a = d->GetAllocator();
  d->RemoveMember("kind");
  d->RemoveMember("apiVersion");
  d->RemoveMember("metadata");
  d->RemoveMember("status");
  d->AddMember("kind", String(KindOf(ctx.resource), a), a);
  d->AddMember("apiVersion", String(ctx.group + "/" + ctx.version, a), a);
  Value meta(rapidjson::kObjectType);
  if (ctx.group == kAuthentication) {
    // kube stamps a SelfSubjectReview with the time it was made.
    const int64_t secs =
        std::chrono::duration_cast<std::chrono::seconds>(
            ctx.now.time_since_epoch())
            .count();
    meta.AddMember("creationTimestamp", String(objects::FormatRfc3339(secs), a),
                   a);
  } else {
    meta.AddMember("creationTimestamp", Value(rapidjson::kNullType), a);
  }
  d->AddMember("metadata", meta, a);
}

ApiError InvalidReview(const ReviewContext& ctx, FieldError e) {
  return ApiError::Invalid(ctx.group, KindOf(ctx.resource), "", {std::move(e)});
}

ApiResult<std::string> AccessReview(const ReviewContext& ctx,
                                    rapidjson::Document* d) {
  const Value* spec = Obj(*d, "spec");
  static const Value kEmpty(rapidjson::kObjectType);
  if (spec == nullptr) spec = &kEmpty;
  const Value* res = Obj(*spec, "resourceAttributes");
  const Value* nonres = Obj(*spec, "nonResourceAttributes");
  if (res != nullptr && nonres != nullptr) {
    return InvalidReview(
        ctx, {FieldError::Type::kInvalid, "spec.nonResourceAttributes",
              "authorization.NonResourceAttributes{Path:" +
                  GoQuote(Str(*nonres, "path")) +
                  ", Verb:" + GoQuote(Str(*nonres, "verb")) + "}",
              "cannot be specified in combination with resourceAttributes"});
  }
  if (res == nullptr && nonres == nullptr) {
    return InvalidReview(
        ctx, {FieldError::Type::kInvalid, "spec.resourceAttributes",
              "\"null\"",
              "exactly one of nonResourceAttributes or resourceAttributes "
              "must be specified"});
  }
  auth::Attributes attrs;
  if (ctx.resource == "subjectaccessreviews") {
    attrs.user.name = Str(*spec, "user");
    attrs.user.uid = Str(*spec, "uid");
    auto g = spec->FindMember("groups");
    if (g != spec->MemberEnd() && g->value.IsArray()) {
      for (const Value& v : g->value.GetArray()) {
        if (v.IsString()) attrs.user.groups.push_back(v.GetString());
      }
    }
    if (attrs.user.name.empty() && attrs.user.groups.empty()) {
      return InvalidReview(ctx, {FieldError::Type::kInvalid, "spec.user",
                                 "\"\"",
                                 "at least one of user or group must be "
                                 "specified"});
    }
  } else {
    attrs.user = ctx.user;
  }
  if (res != nullptr) {
    attrs.resource_request = true;
    attrs.verb = Str(*res, "verb");
    attrs.api_group = Str(*res, "group");
    attrs.resource = Str(*res, "resource");
    attrs.subresource = Str(*res, "subresource");
    attrs.ns = Str(*res, "namespace");
    attrs.name = Str(*res, "name");
  } else {
    attrs.verb = Str(*nonres, "verb");
    attrs.path = Str(*nonres, "path");
  }
  std::string reason;
  const auth::Decision decision = ctx.authorize(attrs, &reason);
  SetTypeMeta(ctx, d);
  auto& a = d->GetAllocator();
  Value status(rapidjson::kObjectType);
  status.AddMember("allowed", decision == auth::Decision::kAllow, a);
  // kube sets denied only when an authorizer said no (AlwaysDeny); RBAC's
  // silence is allowed=false without denied.
  if (!reason.empty()) status.AddMember("reason", String(reason, a), a);
  d->AddMember("status", status, a);
  return Serialize(*d);
}

ApiResult<std::string> RulesReview(const ReviewContext& ctx,
                                   rapidjson::Document* d) {
  const Value* spec = Obj(*d, "spec");
  const std::string ns = spec != nullptr ? Str(*spec, "namespace") : "";
  std::vector<std::string> errors;
  std::vector<auth::PolicyRule> rules;
  const bool complete = ctx.rules_for != nullptr;
  if (complete) rules = ctx.rules_for(ctx.user, ns, &errors);
  SetTypeMeta(ctx, d);
  auto& a = d->GetAllocator();
  Value resource_rules(rapidjson::kArrayType);
  Value non_resource_rules(rapidjson::kArrayType);
  for (const auth::PolicyRule& r : rules) {
    Value o(rapidjson::kObjectType);
    o.AddMember("verbs", Strings(r.verbs, a), a);
    if (!r.non_resource_urls.empty()) {
      o.AddMember("nonResourceURLs", Strings(r.non_resource_urls, a), a);
      non_resource_rules.PushBack(o, a);
      continue;
    }
    if (!r.api_groups.empty()) {
      o.AddMember("apiGroups", Strings(r.api_groups, a), a);
    }
    if (!r.resources.empty()) {
      o.AddMember("resources", Strings(r.resources, a), a);
    }
    if (!r.resource_names.empty()) {
      o.AddMember("resourceNames", Strings(r.resource_names, a), a);
    }
    resource_rules.PushBack(o, a);
  }
  Value status(rapidjson::kObjectType);
  status.AddMember("resourceRules", resource_rules, a);
  status.AddMember("nonResourceRules", non_resource_rules, a);
  // Other authorizers (Node, system:masters) grant what RBAC's rules do not
  // show, as in kube.
  status.AddMember("incomplete", !complete || !errors.empty(), a);
  if (!errors.empty()) {
    std::string joined;
    for (const std::string& e : errors) {
      joined += (joined.empty() ? "" : ", ") + e;
    }
    status.AddMember("evaluationError", String(joined, a), a);
  }
  d->AddMember("status", status, a);
  return Serialize(*d);
}

ApiResult<std::string> SelfSubjectReview(const ReviewContext& ctx,
                                         rapidjson::Document* d) {
  SetTypeMeta(ctx, d);
  auto& a = d->GetAllocator();
  Value user(rapidjson::kObjectType);
  if (!ctx.user.name.empty()) {
    user.AddMember("username", String(ctx.user.name, a), a);
  }
  if (!ctx.user.uid.empty()) user.AddMember("uid", String(ctx.user.uid, a), a);
  if (!ctx.user.groups.empty()) {
    user.AddMember("groups", Strings(ctx.user.groups, a), a);
  }
  Value status(rapidjson::kObjectType);
  status.AddMember("userInfo", user, a);
  d->RemoveMember("spec");
  d->AddMember("status", status, a);
  return Serialize(*d);
}

}  // namespace

bool IsReviewResource(std::string_view group, std::string_view version,
                      std::string_view resource) {
  if (group == kAuthorization && version == "v1") {
    return resource == "selfsubjectaccessreviews" ||
           resource == "subjectaccessreviews" ||
           resource == "selfsubjectrulesreviews";
  }
  return group == kAuthentication &&
         (version == "v1" || version == "v1beta1") &&
         resource == "selfsubjectreviews";
}

ApiResult<std::string> AnswerReview(const ReviewContext& ctx,
                                    std::string_view body) {
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  if (d.HasParseError() || !d.IsObject()) {
    if (ctx.resource == "selfsubjectreviews" &&
        body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      d.SetObject();  // whoami's body is an empty object; none is fine too
    } else {
      return ApiError::BadRequest("the body of the request was in an "
                                  "unknown format - accepted media types "
                                  "include: application/json");
    }
  }
  if (ctx.resource == "selfsubjectreviews") return SelfSubjectReview(ctx, &d);
  if (ctx.resource == "selfsubjectrulesreviews") return RulesReview(ctx, &d);
  return AccessReview(ctx, &d);
}

}  // namespace kplane::apiserver
