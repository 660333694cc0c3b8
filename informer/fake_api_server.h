// FakeApiServer: an in-process HTTP server that speaks enough of the
// Kubernetes REST API to test clients end to end (RestClient, informers,
// leader election) without the real API server: each resource is a
// FakeListerWatcher (fake_list_watcher.h) served over HTTP.
//
//   FakeApiServer server;                    // 127.0.0.1, ephemeral port
//   ASSERT_TRUE(server.Start().ok());
//   auto client = RestClient::New({.server = server.Url()});
//   server.Resource(*pods)->Create(pod);     // server-side writes
//   server.FailNext(2, 503);                 // the next 2 requests fail
//
// Served: GET/POST on collections (/api/v1/namespaces/ns/pods,
// /apis/apps/v1/deployments, ...), GET/PUT/DELETE on objects and their
// status subresource, LIST with limit/continue/resourceVersion, WATCH
// (?watch=true) as newline-delimited JSON with bookmarks and 410 ERROR
// events, errors as metav1.Status. Responses are JSON, or protobuf when
// the Accept header asks for it first. Not served: PATCH, selectors (the
// whole collection is returned), dry runs, discovery.
//
// Ownership: owns its HttpServer, its fakes and one pump thread per open
// watch; Stop() (also in the destructor) ends every watch and joins them.
// Thread-safety: all methods may be called from any thread.
#ifndef KPLANE_INFORMER_FAKE_API_SERVER_H_
#define KPLANE_INFORMER_FAKE_API_SERVER_H_

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "objects/scheme.h"
#include "informer/fake_list_watcher.h"
#include "net/http_server.h"

namespace kplane::informer {

class FakeApiServer {
 public:
  struct Options {
    // Write each watch event in three pieces, so clients must reassemble
    // events split across reads.
    bool split_watch_writes = false;
  };

  FakeApiServer();
  explicit FakeApiServer(Options options);
  ~FakeApiServer();

  Status Start();
  void Stop();
  uint16_t port() const { return server_.port(); }
  std::string Url() const;

  // The collection behind a resource (created on first use).
  FakeListerWatcher* Resource(const objects::ResourceInfo& resource);

  // The next `count` requests are answered `code` with a Status body (and
  // Retry-After when `retry_after_seconds` >= 0), whatever they ask.
  void FailNext(int count, int code, int retry_after_seconds = -1);
  // "GET /api/v1/namespaces/default/pods?limit=500" for every request.
  std::vector<std::string> Requests() const;
  // Remote addresses of the requests (one per client connection).
  std::vector<std::string> RemoteAddresses() const;

 private:
  struct Injected {
    int code;
    int retry_after;
  };
  void Serve(const net::HttpRequest& req, std::shared_ptr<net::Responder> resp);
  void ServeWatch(const objects::ResourceInfo& resource, const std::string& ns,
                  const ListOptions& options,
                  std::shared_ptr<net::Responder> resp);

  const Options options_;
  net::HttpServer server_;
  mutable Mutex mu_;
  std::map<const objects::ResourceInfo*, std::unique_ptr<FakeListerWatcher>>
      resources_ GUARDED_BY(mu_);
  std::deque<Injected> injected_ GUARDED_BY(mu_);
  std::vector<std::string> requests_ GUARDED_BY(mu_);
  std::vector<std::string> remotes_ GUARDED_BY(mu_);
  std::vector<std::thread> pumps_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_FAKE_API_SERVER_H_
