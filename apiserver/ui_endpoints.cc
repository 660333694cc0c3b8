#include "apiserver/ui_endpoints.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <string_view>

#include "ui/assets.h"

namespace kplane::apiserver {
namespace {

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

net::HttpHeaders UiSecurityHeaders() {
  // Only the page's own files and requests to this origin (the API, its
  // watches): no inline script or style, so injected markup cannot run.
  return {{"Content-Security-Policy",
           "default-src 'none'; script-src 'self'; style-src 'self'; "
           "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
           "form-action 'none'; frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "no-referrer"}};
}

void ServeUiAsset(const net::HttpRequest& req,
                  std::shared_ptr<net::Responder> resp) {
  std::string_view path = req.path;
  if (path == "/ui") {
    resp->Respond(301, {{"Location", "/ui/"}, {"Content-Length", "0"}}, "");
    return;
  }
  constexpr std::string_view kPrefix = "/ui/";
  const ui::Asset* asset = path.starts_with(kPrefix)
                               ? ui::FindAsset(path.substr(kPrefix.size()))
                               : nullptr;
  if (asset == nullptr) {
    resp->Respond(404, {{"Content-Type", "text/plain; charset=utf-8"}},
                  "404 page not found\n");
    return;
  }
  net::HttpHeaders h = UiSecurityHeaders();
  h.Add("ETag", asset->etag);
  // Revalidate every time (a cheap 304): a rebuilt binary serves a new
  // page at once, and the token never sits in a cached response.
  h.Add("Cache-Control", "no-cache");
  if (req.headers.Get("If-None-Match") == asset->etag) {
    resp->Respond(304, std::move(h), "");
    return;
  }
  h.Add("Content-Type", asset->content_type);
  resp->Respond(200, std::move(h), std::string(asset->bytes));
}

std::string StoreStatusJson(const std::vector<StoreMemberReport>& members) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  const etcdserverpb::StatusResponse* newest = nullptr;
  w.StartObject();
  w.Key("members");
  w.StartArray();
  for (const StoreMemberReport& m : members) {
    w.StartObject();
    w.Key("endpoint");
    w.String(m.endpoint.c_str());
    if (!m.status.ok()) {
      w.Key("error");
      w.String(m.status.status().ToString().c_str());
      w.EndObject();
      continue;
    }
    const etcdserverpb::StatusResponse& s = *m.status;
    if (newest == nullptr || s.raftterm() > newest->raftterm()) newest = &s;
    w.Key("memberID");
    w.String(Hex(s.header().member_id()).c_str());
    w.Key("leader");
    w.Bool(s.leader() != 0 && s.leader() == s.header().member_id());
    w.Key("raftTerm");
    w.Uint64(s.raftterm());
    w.Key("revision");
    w.Int64(s.header().revision());
    w.Key("raftIndex");
    w.Uint64(s.raftindex());
    w.Key("raftAppliedIndex");
    w.Uint64(s.raftappliedindex());
    w.Key("dbSize");
    w.Int64(s.dbsize());
    w.Key("dbSizeInUse");
    w.Int64(s.dbsizeinuse());
    w.Key("version");
    w.String(s.version().c_str());
    w.Key("isLearner");
    w.Bool(s.islearner());
    w.Key("alarms");
    w.StartArray();
    for (const std::string& e : s.errors()) w.String(e.c_str());
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("leader");
  w.String(newest != nullptr && newest->leader() != 0
               ? Hex(newest->leader()).c_str()
               : "");
  w.Key("raftTerm");
  w.Uint64(newest != nullptr ? newest->raftterm() : 0);
  w.Key("revision");
  w.Int64(newest != nullptr ? newest->header().revision() : 0);
  w.EndObject();
  return buf.GetString();
}

}  // namespace kplane::apiserver
