#include "apiserver/openapi_handler.h"

#include <time.h>

#include <string>
#include <string_view>

#include "apiserver/negotiation.h"

namespace kplane::apiserver {

namespace {

constexpr std::string_view kV2ProtoAccept =
    "com.github.proto-openapi.spec.v2@v1.0+protobuf";
constexpr std::string_view kV2ProtoSubtype =
    "com.github.proto-openapi.spec.v2.v1.0+protobuf";

std::string Quoted(std::string_view etag) {
  std::string out = "\"";
  out += etag;
  out += '"';
  return out;
}

// Go's time.RFC1123 in UTC: "Mon, 02 Jan 2006 15:04:05 UTC".
std::string Rfc1123(WallTime t) {
  const time_t secs = std::chrono::system_clock::to_time_t(t);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S UTC", &tm);
  return buf;
}

net::HttpResponse Status(int code, std::string body = "") {
  net::HttpResponse r;
  r.status = code;
  if (!body.empty()) {
    r.headers.Set("Content-Type", "text/plain; charset=utf-8");
    r.body = std::move(body);
  }
  return r;
}

// http.ServeContent's If-None-Match: a match (or "*") answers 304.
bool NotModified(const net::HttpRequest& req, std::string_view quoted_etag) {
  for (std::string_view v : req.headers.GetAll("If-None-Match")) {
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      if (comma == std::string_view::npos) comma = v.size();
      std::string_view tag = v.substr(start, comma - start);
      while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
      while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
      if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
      if (tag == "*" || tag == quoted_etag) return true;
      start = comma + 1;
    }
  }
  return false;
}

net::HttpResponse Content(const net::HttpRequest& req, net::HttpHeaders h,
                          std::string_view content_type, std::string_view etag,
                          const std::string& body) {
  net::HttpResponse r;
  const std::string quoted = Quoted(etag);
  h.Set("Etag", quoted);
  r.headers = std::move(h);
  if (NotModified(req, quoted)) {
    r.status = 304;
    return r;
  }
  r.status = 200;
  r.headers.Set("Content-Type", std::string(content_type));
  r.body = body;
  return r;
}

bool Matches(const MediaRange& m, std::string_view type,
             std::string_view subtype) {
  return (m.type == type || m.type == "*") &&
         (m.subtype == subtype || m.subtype == "*");
}

net::HttpResponse ServeV2(const openapi::OpenApiDocuments& docs,
                          const net::HttpRequest& req) {
  std::string_view accept = req.headers.Get("Accept");
  if (accept.empty()) accept = "*/*";
  net::HttpHeaders h;
  h.Add("Vary", "Accept");
  h.Set("Cache-Control", "no-cache, private");
  for (const MediaRange& m : ParseAccept(accept)) {
    if (Matches(m, "application", "json")) {
      return Content(req, std::move(h), "application/json", docs.V2().etag,
                     docs.V2().json);
    }
    if (Matches(m, "application", kV2ProtoAccept) ||
        Matches(m, "application", kV2ProtoSubtype)) {
      return Content(req, std::move(h),
                     "application/" + std::string(kV2ProtoSubtype),
                     docs.V2ProtoEtag(), docs.V2Proto());
    }
  }
  net::HttpResponse r = Status(406);
  r.headers.Add("Vary", "Accept");
  return r;
}

net::HttpResponse ServeV3(const openapi::OpenApiDocuments& docs,
                          const net::HttpRequest& req, WallTime now) {
  if (req.path == "/openapi/v3" || req.path == "/openapi/v3/") {
    return Content(req, {}, "application/json", docs.V3Index().etag,
                   docs.V3Index().json);
  }
  const std::string_view gv = std::string_view(req.path).substr(
      std::string_view("/openapi/v3/").size());
  std::string_view accept = req.headers.Get("Accept");
  if (accept.empty()) accept = "*/*";
  bool json = false;
  for (const MediaRange& m : ParseAccept(accept)) {
    json |= Matches(m, "application", "json");
  }
  if (!json) {
    net::HttpResponse r = Status(406);
    r.headers.Add("Vary", "Accept");
    return r;
  }
  const openapi::ServedDocument* doc = docs.V3(gv);
  if (doc == nullptr) {
    return Status(404, "openapi v3 document not found: " + std::string(gv));
  }
  net::HttpHeaders h;
  h.Add("Vary", "Accept");
  if (req.HasQueryParam("hash")) {
    if (req.QueryParam("hash") != doc->etag) {
      net::HttpResponse r;
      r.status = 301;
      r.headers.Set("Location",
                    "/openapi/v3/" + std::string(gv) + "?hash=" + doc->etag);
      return r;
    }
    h.Set("Cache-Control", "public, immutable");
    h.Set("Expires", Rfc1123(now + std::chrono::hours(24 * 365)));
  }
  return Content(req, std::move(h), "application/json", doc->etag, doc->json);
}

}  // namespace

net::HttpResponse ServeOpenApi(const openapi::OpenApiDocuments& docs,
                               const net::HttpRequest& req, WallTime now) {
  if (req.path == "/openapi/v2") return ServeV2(docs, req);
  if (req.path.rfind("/openapi/v3", 0) == 0) return ServeV3(docs, req, now);
  return Status(404);
}

}  // namespace kplane::apiserver
