// Endpoints of an etcd-v3-JSON server and a small pool of keep-alive HTTP
// connections to each, shared by RemoteKV, Maintenance and their watches.
//
//   ASSIGN_OR_RETURN(auto eps, ParseEndpoints({"127.0.0.1:2379",
//                                              "http://10.0.0.2:2379"}));
//   ConnectionPool pool(eps[0], http_options, /*max_idle=*/8);
//   {
//     PooledClient c = pool.Take();      // an idle client or a new one
//     c->Request("POST", "/v3/kv/range", ...);
//   }                                    // back to the pool
//
// A net::HttpClient serializes its calls, so concurrent callers each take
// their own client from the pool and none waits for another's exchange.
//
// Unary calls: CallEndpoint() POSTs one JSON message and decodes the answer,
// mapping etcd's error bodies through etcdjson::ErrorToStatus.
//
// TLS, as etcd's clientv3 picks it per endpoint: "https://host:port" speaks
// TLS (the context given, or the system's roots), "http://host:port" plain
// HTTP, and a bare "host:port" TLS exactly when the client was given TLS
// settings (etcdctl with --cacert). NewStoreClientTls builds the context
// from etcdctl's and kube-apiserver's files.
//
// Thread-safety: ConnectionPool is safe to use from any thread.
// Errors: ParseEndpoints gives kInvalidArgument for a malformed URL;
// NewStoreClientTls etcd's "KeyFile and CertFile must both be present" and
// net/tls.h's errors; CallEndpoint gives the transport's status (see
// net/http_client.h; a refused certificate is kUnavailable "TLS handshake
// with ... failed: ...") or the server's error.
#ifndef KPLANE_STORAGE_CLIENT_ENDPOINT_H_
#define KPLANE_STORAGE_CLIENT_ENDPOINT_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/statusor.h"
#include "net/http_client.h"

namespace kplane::storage {

struct Endpoint {
  std::string url;        // "http://127.0.0.1:2379", as normalized
  std::string host;       // "127.0.0.1"
  uint16_t port = 0;      // 2379
  std::string host_port;  // "127.0.0.1:2379"
  bool tls = false;       // speak HTTPS (url is then "https://...")
};

// Accepts "host:port" (etcdctl's form), "http://host:port" and
// "https://host:port"; a list entry may itself be comma-separated. A bare
// "host:port" speaks TLS when `tls_by_default`.
StatusOr<std::vector<Endpoint>> ParseEndpoints(
    const std::vector<std::string>& specs, bool tls_by_default = false);

// A store client's TLS files: etcdctl's --cacert, --cert, --key and
// --insecure-skip-tls-verify; kube-apiserver's --etcd-cafile,
// --etcd-certfile and --etcd-keyfile.
struct StoreClientTlsFiles {
  std::string ca_file;    // empty: the system's roots
  std::string cert_file;  // the client certificate (with key_file)
  std::string key_file;
  bool insecure_skip_verify = false;
  bool empty() const {
    return ca_file.empty() && cert_file.empty() && key_file.empty();
  }
};

// The client context for `files` (ALPN http/1.1).
StatusOr<std::shared_ptr<const net::TlsContext>> NewStoreClientTls(
    const StoreClientTlsFiles& files);

// True if `s` is a transport failure that happened before any byte of the
// request could reach a server (resolving or connecting failed). Only such
// failures make retrying a write on another endpoint safe.
bool IsConnectFailure(const Status& s);

class ConnectionPool;

// A client borrowed from a pool; returns itself when destroyed.
class PooledClient {
 public:
  PooledClient(ConnectionPool* pool, std::unique_ptr<net::HttpClient> client)
      : pool_(pool), client_(std::move(client)) {}
  PooledClient(PooledClient&&) = default;
  ~PooledClient();
  net::HttpClient* operator->() const { return client_.get(); }
  net::HttpClient* get() const { return client_.get(); }

 private:
  ConnectionPool* pool_;
  std::unique_ptr<net::HttpClient> client_;
};

class ConnectionPool {
 public:
  // options.tls is used only if the endpoint speaks TLS (and must then be
  // set).
  ConnectionPool(Endpoint endpoint, net::HttpClientOptions options,
                 size_t max_idle);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  PooledClient Take() EXCLUDES(mu_);
  // A new client of its own (for long-lived streams).
  std::unique_ptr<net::HttpClient> NewClient() const;

  const Endpoint& endpoint() const { return endpoint_; }
  const net::HttpClientOptions& options() const { return options_; }

 private:
  friend class PooledClient;
  void Return(std::unique_ptr<net::HttpClient> client) EXCLUDES(mu_);

  const Endpoint endpoint_;
  const net::HttpClientOptions options_;
  const size_t max_idle_;
  Mutex mu_;  // a leaf
  std::vector<std::unique_ptr<net::HttpClient>> idle_ GUARDED_BY(mu_);
};

// The headers of every JSON request.
const net::HttpHeaders& JsonHeaders();

// POSTs `req` as JSON to `path` and decodes a 200 answer into *resp.
// A non-200 answer becomes the server's error (ErrorToStatus); a transport
// failure is returned as is (use IsConnectFailure to tell whether the
// request could have reached the server).
Status CallEndpoint(net::HttpClient* client, std::string_view path,
                    const google::protobuf::Message& req,
                    google::protobuf::Message* resp);

// The same for an already encoded body.
Status CallEndpointRaw(net::HttpClient* client, std::string_view path,
                       std::string_view body, google::protobuf::Message* resp);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_ENDPOINT_H_
