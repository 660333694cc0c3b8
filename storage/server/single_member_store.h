// SingleMemberStore: one store member in this process (StoreServer, no
// peers) serving the etcd JSON API (ClientApi) on an HttpServer at
// 127.0.0.1:<ephemeral port>, with a fresh data dir under /tmp. For tests of
// the store's client routes that need neither child processes (LocalCluster)
// nor a raft cluster: the hostile-body, stream-limit and watch fan-out tests.
//
//   ASSIGN_OR_RETURN(auto store, SingleMemberStore::Start());
//   net::HttpClient client("127.0.0.1", store->port());
//
// Test support (target kplane_server_testing); production code never links
// it. Ownership: owns the member, the HTTP server and the data dir; the
// destructor stops the server, then the member, and removes the dir.
// Thread-safety: the accessors may be called from any thread.
// Errors: Start returns the member's open/start errors, kUnavailable when it
// does not become ready within ten seconds, and the HTTP server's errors.
#ifndef KPLANE_STORAGE_SERVER_SINGLE_MEMBER_STORE_H_
#define KPLANE_STORAGE_SERVER_SINGLE_MEMBER_STORE_H_

#include <memory>
#include <string>

#include "base/metrics.h"
#include "base/statusor.h"
#include "net/http_server.h"
#include "storage/server/client_api.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

class SingleMemberStore {
 public:
  // `http` is used as given except for its port (0: ephemeral) and its
  // metrics registry (the store's). `tweak`, if set, adjusts the member's
  // configuration (at every start).
  static StatusOr<std::unique_ptr<SingleMemberStore>> Start(
      net::HttpServerOptions http = {},
      std::function<void(StoreConfig*)> tweak = nullptr);
  ~SingleMemberStore();

  // Stops the member and its HTTP server and starts them again on the same
  // data dir (a new ephemeral port): a restart.
  Status Restart();

  int port() const { return http_->port(); }
  StoreServer* server() const { return server_.get(); }
  metrics::Registry* metrics() { return &metrics_; }
  const std::string& data_dir() const { return dir_; }

 private:
  SingleMemberStore() = default;

  Status Open();

  std::string dir_;
  net::HttpServerOptions http_options_;
  std::function<void(StoreConfig*)> tweak_;
  metrics::Registry metrics_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<ClientApi> api_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_SINGLE_MEMBER_STORE_H_
