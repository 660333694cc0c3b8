#include "apiserver/query_params.h"

#include <algorithm>

#include "objects/serializer.h"
#include "apiserver/negotiation.h"
#include "base/strings.h"

namespace kplane::apiserver {

namespace {

constexpr std::string_view kMetaGroup = "meta.k8s.io";

// Go's ParseBool on a query parameter; absent -> `fallback`.
std::optional<ApiError> ParseBoolParam(const net::HttpRequest& req,
                                       std::string_view key, bool* out) {
  if (!req.HasQueryParam(key)) return std::nullopt;
  std::string_view v = req.QueryParam(key);
  std::optional<bool> b = ParseBool(v);
  if (!b) {
    return ApiError::BadRequest("invalid value for " + std::string(key) +
                                ": strconv.ParseBool: parsing \"" +
                                std::string(v) + "\": invalid syntax");
  }
  *out = *b;
  return std::nullopt;
}

std::optional<ApiError> ParseIntParam(const net::HttpRequest& req,
                                      std::string_view key, int64_t* out,
                                      bool* present = nullptr) {
  if (!req.HasQueryParam(key)) return std::nullopt;
  std::string_view v = req.QueryParam(key);
  std::optional<int64_t> n = ParseInt64(v);
  if (!n) {
    return ApiError::BadRequest("invalid value for " + std::string(key) +
                                ": strconv.ParseInt: parsing \"" +
                                std::string(v) + "\": invalid syntax");
  }
  *out = *n;
  if (present != nullptr) *present = true;
  return std::nullopt;
}

FieldError Forbidden(std::string field, std::string detail) {
  return FieldError{FieldError::Type::kForbidden, std::move(field), "",
                    std::move(detail)};
}

FieldError NotSupported(std::string field, std::string_view value,
                        const std::vector<std::string>& supported) {
  std::vector<std::string> quoted;
  for (const std::string& s : supported) quoted.push_back("\"" + s + "\"");
  return FieldError{FieldError::Type::kNotSupported, std::move(field),
                    "\"" + std::string(value) + "\"",
                    "supported values: " + StrJoin(quoted, ", ")};
}

}  // namespace

ApiResult<ListParams> ParseListParams(const net::HttpRequest& req,
                                      bool is_watch) {
  ListParams p;
  p.watch = is_watch;
  p.label_selector = std::string(req.QueryParam("labelSelector"));
  p.field_selector = std::string(req.QueryParam("fieldSelector"));
  p.resource_version = std::string(req.QueryParam("resourceVersion"));
  p.resource_version_match =
      std::string(req.QueryParam("resourceVersionMatch"));
  p.continue_token = std::string(req.QueryParam("continue"));
  p.include_object = std::string(req.QueryParam("includeObject"));
  if (auto e = ParseBoolParam(req, "allowWatchBookmarks",
                              &p.allow_watch_bookmarks)) {
    return *e;
  }
  if (auto e = ParseIntParam(req, "limit", &p.limit)) return *e;
  if (p.limit < 0) p.limit = 0;
  int64_t timeout = 0;
  bool has_timeout = false;
  if (auto e = ParseIntParam(req, "timeoutSeconds", &timeout, &has_timeout)) {
    return *e;
  }
  if (has_timeout) {
    p.timeout_seconds = std::min(timeout, kMaxRequestDurationSeconds);
  }
  if (req.HasQueryParam("sendInitialEvents")) {
    bool b = false;
    if (auto e = ParseBoolParam(req, "sendInitialEvents", &b)) return *e;
    p.send_initial_events = b;
  }
  if (!p.include_object.empty() && p.include_object != "None" &&
      p.include_object != "Metadata" && p.include_object != "Object") {
    return ApiError::BadRequest("invalid value for includeObject: \"" +
                                p.include_object + "\"");
  }

  // ValidateListOptions (meta/internalversion/validation).
  FieldErrors errs;
  const std::string& match = p.resource_version_match;
  if (is_watch) {
    if (p.send_initial_events.has_value() && match != "NotOlderThan") {
      errs.push_back(Forbidden("resourceVersionMatch",
                               "sendInitialEvents requires setting "
                               "resourceVersionMatch to NotOlderThan"));
    }
    if (!match.empty()) {
      if (!p.send_initial_events.has_value()) {
        errs.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch is forbidden for watch "
                                 "unless sendInitialEvents is provided"));
      }
      if (match != "NotOlderThan") {
        errs.push_back(
            NotSupported("resourceVersionMatch", match, {"NotOlderThan"}));
      }
      if (!p.continue_token.empty()) {
        errs.push_back(Forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden when continue is provided"));
      }
    }
  } else {
    if (!match.empty()) {
      if (p.resource_version.empty()) {
        errs.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch is forbidden unless "
                                 "resourceVersion is provided"));
      }
      if (!p.continue_token.empty()) {
        errs.push_back(Forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden when continue is provided"));
      }
      if (match != "Exact" && match != "NotOlderThan") {
        errs.push_back(NotSupported("resourceVersionMatch", match,
                                    {"Exact", "NotOlderThan", ""}));
      }
      if (match == "Exact" && p.resource_version == "0") {
        errs.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch \"exact\" is forbidden "
                                 "for resourceVersion \"0\""));
      }
    }
    if (p.send_initial_events.has_value()) {
      errs.push_back(Forbidden("sendInitialEvents",
                               "sendInitialEvents is forbidden for list"));
    }
  }
  if (!errs.empty()) {
    return ApiError::Invalid(kMetaGroup, "ListOptions", "", errs);
  }
  return p;
}

ApiResult<WriteParams> ParseWriteParams(const net::HttpRequest& req,
                                        bool is_apply_patch) {
  WriteParams p;
  p.field_manager = std::string(req.QueryParam("fieldManager"));
  const std::string_view kind = req.method == "POST"  ? "CreateOptions"
                                : req.method == "PUT" ? "UpdateOptions"
                                                      : "PatchOptions";
  FieldErrors errs;
  for (auto [it, end] = req.query.equal_range("dryRun"); it != end; ++it) {
    if (it->second == "All") {
      p.dry_run = true;
    } else {
      errs.push_back(NotSupported("dryRun", it->second, {"All"}));
    }
  }
  if (req.HasQueryParam("fieldValidation")) {
    std::string_view v = req.QueryParam("fieldValidation");
    if (v == "Ignore") {
      p.field_validation = FieldValidation::kIgnore;
    } else if (v == "Warn") {
      p.field_validation = FieldValidation::kWarn;
    } else if (v == "Strict") {
      p.field_validation = FieldValidation::kStrict;
    } else {
      errs.push_back(
          NotSupported("fieldValidation", v, {"Ignore", "Strict", "Warn"}));
    }
  }
  if (req.HasQueryParam("force")) {
    if (auto e = ParseBoolParam(req, "force", &p.force)) return *e;
    if (!is_apply_patch) {
      errs.push_back(
          Forbidden("force", "may not be specified for non-apply patch"));
    }
  }
  if (p.field_manager.size() > 128) {
    errs.push_back(FieldError{FieldError::Type::kTooLong, "fieldManager", "",
                              "may not be more than 128 bytes"});
  }
  if (is_apply_patch && p.field_manager.empty()) {
    errs.push_back(FieldError{FieldError::Type::kRequired, "fieldManager", "",
                              "is required for apply patch"});
  }
  if (!errs.empty()) return ApiError::Invalid(kMetaGroup, kind, "", errs);
  return p;
}

ApiResult<objects::metav1::DeleteOptions> ParseDeleteOptions(
    const net::HttpRequest& req, std::string_view body) {
  objects::metav1::DeleteOptions opts;
  if (!StripWhitespace(body).empty()) {
    StatusOr<objects::MediaType> type =
        objects::ParseMediaType(req.headers.Get("Content-Type"));
    if (!type.ok()) {
      return ApiError::UnsupportedMediaType(req.headers.Get("Content-Type"),
                                            SupportedBodyTypes());
    }
    StatusOr<objects::DecodeResult> r = objects::DecodeBody(*type, body, &opts);
    if (!r.ok()) return ApiError::BadRequest(r.status().message());
  }
  int64_t grace = 0;
  bool has_grace = false;
  if (auto e = ParseIntParam(req, "gracePeriodSeconds", &grace, &has_grace)) {
    return *e;
  }
  if (has_grace) opts.set_graceperiodseconds(grace);
  if (req.HasQueryParam("propagationPolicy")) {
    opts.set_propagationpolicy(
        std::string(req.QueryParam("propagationPolicy")));
  }
  if (req.HasQueryParam("orphanDependents")) {
    bool b = false;
    if (auto e = ParseBoolParam(req, "orphanDependents", &b)) return *e;
    opts.set_orphandependents(b);
  }
  for (auto [it, end] = req.query.equal_range("dryRun"); it != end; ++it) {
    opts.add_dryrun(it->second);
  }
  if (auto e = ValidateDeleteOptions(&opts)) return *e;
  return opts;
}

std::optional<ApiError> ValidateDeleteOptions(
    objects::metav1::DeleteOptions* options) {
  objects::metav1::DeleteOptions& opts = *options;
  FieldErrors errs;
  if (opts.has_orphandependents() && opts.has_propagationpolicy()) {
    errs.push_back(FieldError{FieldError::Type::kInvalid, "propagationPolicy",
                              "\"" + opts.propagationpolicy() + "\"",
                              "orphanDependents and deletionPropagation "
                              "cannot be both set"});
  }
  if (opts.has_propagationpolicy()) {
    const std::string& pp = opts.propagationpolicy();
    if (pp != "Orphan" && pp != "Background" && pp != "Foreground") {
      errs.push_back(NotSupported("propagationPolicy", pp,
                                  {"Background", "Foreground", "Orphan"}));
    }
  }
  for (const std::string& d : opts.dryrun()) {
    if (d != "All") errs.push_back(NotSupported("dryRun", d, {"All"}));
  }
  if (opts.has_graceperiodseconds() && opts.graceperiodseconds() < 0) {
    // kube-apiserver treats a negative grace period as "1 second" through
    // its defaulting of the kubectl --grace-period=-1 convention; the API
    // itself calls for a non-negative value.
    opts.set_graceperiodseconds(1);
  }
  if (opts.graceperiodseconds() > kMaxRequestDurationSeconds) {
    // "Now + grace" must stay a time we can write and compare.
    opts.set_graceperiodseconds(kMaxRequestDurationSeconds);
  }
  if (!errs.empty()) {
    return ApiError::Invalid(kMetaGroup, "DeleteOptions", "", errs);
  }
  return std::nullopt;
}

std::string DefaultFieldManager(const net::HttpRequest& req) {
  std::string_view ua = req.headers.Get("User-Agent");
  const size_t slash = ua.find('/');
  std::string_view prefix = ua.substr(0, slash);
  if (prefix.size() > 128) prefix = prefix.substr(0, 128);
  return std::string(prefix);
}

}  // namespace kplane::apiserver
