// ControlServer: the fleet's small HTTP control endpoint.
//
//   GET  /healthz                  200 "ok"
//   GET  /metrics                  Prometheus text (the fleet's registry)
//   GET  /nodes                    {"nodes":[{"name":"node-0","state":"Ready",
//                                   "pods":3,"leaseRenewals":12,
//                                   "statusUpdates":1,"lastLagSeconds":0.004}]}
//   POST /nodes/<name>/stop        crash one node's heartbeats   200 / 404
//   POST /nodes/<name>/resume      bring it back                 200 / 404
//   POST /fleet/stop               every node
//   POST /fleet/resume
//   GET  /containerLogs/<ns>/<pod>/<container>   the kubelet's log endpoint
//                                  (kubeletsim/pod_logs.h), which
//                                  kube-apiserver's pods/log proxies to
//   POST /exec/<ns>/<pod>/<container>?command=..&stdin=&tty=
//                                  the simulated shell (kubeletsim/
//                                  pod_exec.h) that pods/exec proxies to
//
// Answers other than 2xx carry {"error": "..."}. ControlClient
// (control/control_client.h, its own small target for kpctl sim) is the
// matching client.
//
// Ownership: owns its HttpServer; the handlers are borrowed callbacks that
// must stay valid until Stop(). Thread-safety: handlers run on the
// server's worker threads; Start/Stop from one thread.
#ifndef KPLANE_KUBELETSIM_CONTROL_SERVER_H_
#define KPLANE_KUBELETSIM_CONTROL_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "base/statusor.h"
#include "kubeletsim/control/control_client.h"
#include "net/http_server.h"

namespace kplane::kubeletsim {

class ControlServer {
 public:
  struct Handlers {
    std::function<Status(const std::string&)> stop_node;
    std::function<Status(const std::string&)> resume_node;
    std::function<void()> stop_all;
    std::function<void()> resume_all;
    std::function<std::vector<NodeInfo>()> list;
    metrics::Registry* metrics = nullptr;
    // GET /containerLogs/...; unset: 404.
    net::HttpHandler container_logs;
    // POST /exec/... (streamed stdin body); unset: 404.
    net::HttpHandler exec;
  };
  explicit ControlServer(Handlers h);
  ~ControlServer();

  // `tls`: serve HTTPS with this server context (null: HTTP).
  Status Start(const std::string& host, uint16_t port,
               std::shared_ptr<const net::TlsContext> tls = nullptr);
  uint16_t port() const;
  void Stop();

 private:
  Handlers h_;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_CONTROL_SERVER_H_
