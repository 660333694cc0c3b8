#include "kubeletsim/control/control_client.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/json.h"
#include "net/http_client.h"
#include "net/url.h"

namespace kplane::kubeletsim {

std::string NodesToJson(const std::vector<NodeInfo>& nodes) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.StartObject();
  w.Key("nodes");
  w.StartArray();
  for (const NodeInfo& n : nodes) {
    w.StartObject();
    w.Key("name");
    w.String(n.name.c_str());
    w.Key("state");
    w.String(n.stopped ? "Stopped" : n.registered ? "Running" : "Registering");
    w.Key("pods");
    w.Int(n.pods);
    w.Key("leaseRenewals");
    w.Int64(n.lease_renewals);
    w.Key("statusUpdates");
    w.Int64(n.status_updates);
    w.Key("lastLagSeconds");
    w.Double(n.last_lag_seconds);
    w.Key("podCIDR");
    w.String(n.pod_cidr.c_str());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(b.GetString(), b.GetSize()) + "\n";
}

StatusOr<std::vector<NodeInfo>> NodesFromJson(std::string_view text) {
  rapidjson::Document d;
  if (!json::ParseDom(text, &d).ok() || !d.IsObject() ||
      !d.HasMember("nodes") || !d["nodes"].IsArray()) {
    return InvalidArgumentError("not a /nodes answer");
  }
  std::vector<NodeInfo> out;
  for (const auto& v : d["nodes"].GetArray()) {
    if (!v.IsObject()) return InvalidArgumentError("not a /nodes answer");
    NodeInfo n;
    auto str = [&](const char* k) -> std::string {
      return v.HasMember(k) && v[k].IsString() ? v[k].GetString() : "";
    };
    auto num = [&](const char* k) -> double {
      return v.HasMember(k) && v[k].IsNumber() ? v[k].GetDouble() : 0;
    };
    n.name = str("name");
    std::string state = str("state");
    n.stopped = state == "Stopped";
    n.registered = state != "Registering";
    n.pods = static_cast<int>(num("pods"));
    n.lease_renewals = static_cast<int64_t>(num("leaseRenewals"));
    n.status_updates = static_cast<int64_t>(num("statusUpdates"));
    n.last_lag_seconds = num("lastLagSeconds");
    n.pod_cidr = str("podCIDR");
    out.push_back(std::move(n));
  }
  return out;
}

StatusOr<ControlClient> ControlClient::New(
    const std::string& endpoint, std::shared_ptr<const net::TlsContext> tls) {
  ASSIGN_OR_RETURN(net::Url u,
                   net::ParseUrl(endpoint, net::UrlSchemes::kHttpOrHttps));
  if ((u.scheme == "https") != (tls != nullptr)) {
    return InvalidArgumentError(
        u.scheme == "https"
            ? "endpoint " + endpoint + ": https needs a CA to trust"
            : "endpoint " + endpoint + ": TLS settings given for http://");
  }
  return ControlClient(u.host, u.port, std::move(tls));
}

net::HttpClientOptions ControlClient::Options() const {
  net::HttpClientOptions o;
  o.tls = tls_;
  return o;
}

namespace {
Status FromAnswer(const StatusOr<net::HttpResponse>& r) {
  if (!r.ok()) return r.status();
  if (r->status / 100 == 2) return Status::Ok();
  rapidjson::Document d;
  const bool parsed = json::ParseDom(r->body, &d).ok();
  std::string msg =
      parsed && d.IsObject() && d.HasMember("error") && d["error"].IsString()
          ? d["error"].GetString()
          : r->body;
  return r->status == 404
             ? NotFoundError(msg)
             : InternalError("HTTP " + std::to_string(r->status) + ": " + msg);
}
}  // namespace

StatusOr<std::vector<NodeInfo>> ControlClient::List() {
  net::HttpClient c(host_, port_, Options());
  auto r = c.Request("GET", "/nodes");
  RETURN_IF_ERROR(FromAnswer(r));
  return NodesFromJson(r->body);
}

Status ControlClient::Post(const std::string& path) {
  net::HttpClient c(host_, port_, Options());
  return FromAnswer(c.Request("POST", path));
}

Status ControlClient::StopNode(const std::string& name) {
  return Post("/nodes/" + name + "/stop");
}
Status ControlClient::ResumeNode(const std::string& name) {
  return Post("/nodes/" + name + "/resume");
}
Status ControlClient::StopAll() { return Post("/fleet/stop"); }
Status ControlClient::ResumeAll() { return Post("/fleet/resume"); }

}  // namespace kplane::kubeletsim
