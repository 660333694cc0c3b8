#include "storage/client/endpoint.h"

#include "base/strings.h"
#include "net/url.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {

StatusOr<std::vector<Endpoint>> ParseEndpoints(
    const std::vector<std::string>& specs) {
  std::vector<Endpoint> out;
  for (const std::string& spec : specs) {
    for (const std::string& part : StrSplit(spec, ',')) {
      std::string s(StripWhitespace(part));
      if (s.empty()) continue;
      StatusOr<net::Url> u = net::ParseUrl(s);
      if (!u.ok()) {
        return InvalidArgumentError("bad endpoint \"" + s +
                                    "\": " + u.status().message());
      }
      if (s.find("://") == std::string::npos &&
          s.rfind(':') == std::string::npos) {
        return InvalidArgumentError("bad endpoint \"" + s +
                                    "\": missing port (host:port)");
      }
      Endpoint e;
      e.host = u->host;
      e.port = u->port;
      e.host_port = u->HostPort();
      e.url = "http://" + e.host_port;
      out.push_back(std::move(e));
    }
  }
  if (out.empty()) return InvalidArgumentError("no endpoints given");
  return out;
}

bool IsConnectFailure(const Status& s) {
  // net::ConnectTcp names the step in its messages ("connect 1.2.3.4:5:
  // Connection refused"); resolving fails with "cannot resolve". Nothing of
  // the request has been written at that point.
  const std::string& m = s.message();
  return m.rfind("connect ", 0) == 0 || m.rfind("cannot resolve", 0) == 0 ||
         m.rfind("no address for", 0) == 0;
}

PooledClient::~PooledClient() {
  if (pool_ != nullptr && client_ != nullptr) pool_->Return(std::move(client_));
}

ConnectionPool::ConnectionPool(Endpoint endpoint,
                               net::HttpClientOptions options, size_t max_idle)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      max_idle_(max_idle) {}

PooledClient ConnectionPool::Take() {
  {
    MutexLock l(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<net::HttpClient> c = std::move(idle_.back());
      idle_.pop_back();
      return PooledClient(this, std::move(c));
    }
  }
  return PooledClient(this, NewClient());
}

std::unique_ptr<net::HttpClient> ConnectionPool::NewClient() const {
  return std::make_unique<net::HttpClient>(endpoint_.host, endpoint_.port,
                                           options_);
}

void ConnectionPool::Return(std::unique_ptr<net::HttpClient> client) {
  MutexLock l(&mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(client));
}

const net::HttpHeaders& JsonHeaders() {
  static const net::HttpHeaders* h =
      new net::HttpHeaders{{"Content-Type", "application/json"}};
  return *h;
}

Status CallEndpointRaw(net::HttpClient* client, std::string_view path,
                       std::string_view body, google::protobuf::Message* resp) {
  ASSIGN_OR_RETURN(net::HttpResponse r,
                   client->Request("POST", path, JsonHeaders(), body));
  if (r.status != 200) return etcdjson::ErrorToStatus(r.status, r.body);
  return etcdjson::ParseJson(r.body, resp);
}

Status CallEndpoint(net::HttpClient* client, std::string_view path,
                    const google::protobuf::Message& req,
                    google::protobuf::Message* resp) {
  return CallEndpointRaw(client, path, etcdjson::ToJson(req), resp);
}

}  // namespace kplane::storage
