#include "kubeletsim/control_server.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/prometheus_text.h"

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

Status ControlServer::Start(const std::string& host, uint16_t port,
                            std::shared_ptr<const net::TlsContext> tls) {
  net::HttpServerOptions o;
  o.tls = std::move(tls);
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
        r->Respond(200, {{"Content-Type", metrics::kTextFormatContentTypeUtf8}},
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
  if (h_.container_logs) {
    server_->HandlePrefix("GET", "/containerLogs/", h_.container_logs);
  }
  if (h_.exec) {
    // stdin streams in the body for as long as the exec runs.
    server_->HandlePrefix(
        "POST", "/exec/", h_.exec,
        {.stream_request_body = true, .body_timeout = Duration::zero()});
  }
  return server_->Start();
}

uint16_t ControlServer::port() const { return server_ ? server_->port() : 0; }

void ControlServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace kplane::kubeletsim
