#include "storage/client/endpoint.h"

#include "base/strings.h"
#include "net/url.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {

StatusOr<std::vector<Endpoint>> ParseEndpoints(
    const std::vector<std::string>& specs, bool tls_by_default) {
  std::vector<Endpoint> out;
  for (const std::string& spec : specs) {
    for (const std::string& part : StrSplit(spec, ',')) {
      std::string s(StripWhitespace(part));
      if (s.empty()) continue;
      StatusOr<net::Url> u = net::ParseUrl(s, net::UrlSchemes::kHttpOrHttps);
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
      const bool bare = s.find("://") == std::string::npos;
      e.tls = u->scheme == "https" || (bare && tls_by_default);
      e.url = (e.tls ? "https://" : "http://") + e.host_port;
      out.push_back(std::move(e));
    }
  }
  if (out.empty()) return InvalidArgumentError("no endpoints given");
  return out;
}

StatusOr<std::shared_ptr<const net::TlsContext>> NewStoreClientTls(
    const StoreClientTlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    // etcd's transport.TLSInfo words (etcdctl prints them).
    return InvalidArgumentError(
        "KeyFile and CertFile must both be present[key: " + files.key_file +
        ", cert: " + files.cert_file + "]");
  }
  net::TlsClientConfig cc;
  cc.ca_file = files.ca_file;
  cc.cert_file = files.cert_file;
  cc.key_file = files.key_file;
  cc.insecure_skip_verify = files.insecure_skip_verify;
  cc.alpn = {"http/1.1"};
  return net::TlsContext::NewClient(cc);
}

bool IsConnectFailure(const Status& s) {
  // net::ConnectTcp names the step in its messages ("connect 1.2.3.4:5:
  // Connection refused"); resolving fails with "cannot resolve". Nothing of
  // the request has been written at that point.
  // A failed TLS handshake (net/http_client.h: "TLS handshake with <host>
  // failed: ...") also comes before the request is written.
  const std::string& m = s.message();
  return m.rfind("connect ", 0) == 0 || m.rfind("cannot resolve", 0) == 0 ||
         m.rfind("no address for", 0) == 0 ||
         m.rfind("TLS handshake with ", 0) == 0;
}

namespace {

// A plain endpoint's clients must not speak TLS even when the client has a
// context for its https endpoints.
net::HttpClientOptions OptionsFor(const Endpoint& e, net::HttpClientOptions o) {
  if (!e.tls) o.tls = nullptr;
  return o;
}

}  // namespace

PooledClient::~PooledClient() {
  if (pool_ != nullptr && client_ != nullptr) pool_->Return(std::move(client_));
}

ConnectionPool::ConnectionPool(Endpoint endpoint,
                               net::HttpClientOptions options, size_t max_idle)
    : endpoint_(std::move(endpoint)),
      options_(OptionsFor(endpoint_, std::move(options))),
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
