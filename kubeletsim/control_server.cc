#include "kubeletsim/control_server.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "net/http_client.h"
#include "net/url.h"

namespace kplane::kubeletsim {
namespace {

const net::HttpHeaders kJson = {{"Content-Type", "application/json"}};

std::string ErrorJson(const std::string& msg) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.StartObject();
  w.Key("error");
  w.String(msg.c_str(), static_cast<rapidjson::SizeType>(msg.size()));
  w.EndObject();
  return std::string(b.GetString(), b.GetSize()) + "\n";
}

void Answer(const std::shared_ptr<net::Responder>& r, const Status& s) {
  if (s.ok()) {
    r->Respond(200, kJson, "{}\n");
  } else {
    r->Respond(s.code() == StatusCode::kNotFound ? 404 : 500, kJson,
               ErrorJson(s.message()));
  }
}

}  // namespace

ControlServer::ControlServer(Handlers h) : h_(std::move(h)) {}
ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start(const std::string& host, uint16_t port) {
  net::HttpServerOptions o;
  o.host = host;
  o.port = port;
  o.worker_threads = 2;
  o.name = "kubeletsim";
  o.metrics = h_.metrics;
  server_ = std::make_unique<net::HttpServer>(o);
  server_->Handle(
      "GET", "/healthz",
      [](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->Respond(200, {{"Content-Type", "text/plain"}}, "ok");
      },
      {.run_on_io_thread = true});
  server_->Handle(
      "GET", "/metrics",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->Respond(
            200, {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
            h_.metrics->Render());
      });
  server_->Handle(
      "GET", "/nodes",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->Respond(200, kJson, NodesToJson(h_.list()));
      });
  server_->Handle(
      "POST", "/fleet/stop",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        h_.stop_all();
        Answer(r, Status::Ok());
      });
  server_->Handle(
      "POST", "/fleet/resume",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        h_.resume_all();
        Answer(r, Status::Ok());
      });
  server_->HandlePrefix(
      "POST", "/nodes/",
      [this](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        // /nodes/<name>/<action>
        std::string rest = req.path.substr(std::string("/nodes/").size());
        size_t slash = rest.rfind('/');
        if (slash == std::string::npos || slash == 0) {
          r->Respond(404, kJson, ErrorJson("want /nodes/<name>/stop|resume"));
          return;
        }
        std::string name = rest.substr(0, slash);
        std::string action = rest.substr(slash + 1);
        if (action == "stop") {
          Answer(r, h_.stop_node(name));
        } else if (action == "resume") {
          Answer(r, h_.resume_node(name));
        } else {
          r->Respond(404, kJson, ErrorJson("unknown action " + action));
        }
      });
  return server_->Start();
}

uint16_t ControlServer::port() const { return server_ ? server_->port() : 0; }

void ControlServer::Stop() {
  if (server_) server_->Stop();
}

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
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(b.GetString(), b.GetSize()) + "\n";
}

StatusOr<std::vector<NodeInfo>> NodesFromJson(std::string_view json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("nodes") ||
      !d["nodes"].IsArray()) {
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
    out.push_back(std::move(n));
  }
  return out;
}

StatusOr<ControlClient> ControlClient::New(const std::string& endpoint) {
  ASSIGN_OR_RETURN(net::Url u, net::ParseUrl(endpoint));
  return ControlClient(u.host, u.port);
}

namespace {
Status FromAnswer(const StatusOr<net::HttpResponse>& r) {
  if (!r.ok()) return r.status();
  if (r->status / 100 == 2) return Status::Ok();
  rapidjson::Document d;
  d.Parse(r->body.data(), r->body.size());
  std::string msg = !d.HasParseError() && d.IsObject() &&
                            d.HasMember("error") && d["error"].IsString()
                        ? d["error"].GetString()
                        : r->body;
  return r->status == 404
             ? NotFoundError(msg)
             : InternalError("HTTP " + std::to_string(r->status) + ": " + msg);
}
}  // namespace

StatusOr<std::vector<NodeInfo>> ControlClient::List() {
  net::HttpClient c(host_, port_);
  auto r = c.Request("GET", "/nodes");
  RETURN_IF_ERROR(FromAnswer(r));
  return NodesFromJson(r->body);
}

Status ControlClient::Post(const std::string& path) {
  net::HttpClient c(host_, port_);
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
