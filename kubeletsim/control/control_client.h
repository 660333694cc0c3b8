// The client side of a kubeletsim fleet's control endpoint (the server is
// kubeletsim/control_server.h, which lists the routes): the NodeInfo record
// GET /nodes reports, its JSON form both sides share, and ControlClient,
// which `kpctl sim` uses. A target of its own (kplane_kubeletsim_control)
// so that a client of the endpoint does not link the fleet, its informers
// and the objects it simulates.
//
//   ASSIGN_OR_RETURN(ControlClient c,
//                    ControlClient::New("http://127.0.0.1:10250"));
//   ASSIGN_OR_RETURN(std::vector<NodeInfo> nodes, c.List());
//   RETURN_IF_ERROR(c.StopNode("node-3"));
//
// Thread-safety: a ControlClient opens a connection per call and keeps no
// other state, so its methods may be called from any thread. Errors: the
// transport's, kNotFound for an unknown node (HTTP 404), kInternal for any
// other non-2xx answer, kInvalidArgument for an unparsable /nodes answer.
#ifndef KPLANE_KUBELETSIM_CONTROL_CONTROL_CLIENT_H_
#define KPLANE_KUBELETSIM_CONTROL_CONTROL_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"
#include "net/http_client.h"
#include "net/tls.h"

namespace kplane::kubeletsim {

// One node as GET /nodes and List() report it.
struct NodeInfo {
  std::string name;
  bool stopped = false;
  bool registered = false;
  int pods = 0;
  int64_t lease_renewals = 0;
  int64_t status_updates = 0;
  double last_lag_seconds = 0;  // last renewal's lag behind its due time
  std::string pod_cidr;  // the one pod IPs come from; "" = none yet
};

// GET /nodes as JSON, and its parse (for kpctl and tests).
std::string NodesToJson(const std::vector<NodeInfo>& nodes);
StatusOr<std::vector<NodeInfo>> NodesFromJson(std::string_view json);

// Calls a fleet's control endpoint at "https://host:port" (with `tls`: the
// CA that signed the endpoint's certificate and a client certificate it
// accepts) or "http://host:port" (tls null).
class ControlClient {
 public:
  static StatusOr<ControlClient> New(
      const std::string& endpoint,
      std::shared_ptr<const net::TlsContext> tls = nullptr);
  StatusOr<std::vector<NodeInfo>> List();
  Status StopNode(const std::string& name);
  Status ResumeNode(const std::string& name);
  Status StopAll();
  Status ResumeAll();

 private:
  ControlClient(std::string host, uint16_t port,
                std::shared_ptr<const net::TlsContext> tls)
      : host_(std::move(host)), port_(port), tls_(std::move(tls)) {}
  Status Post(const std::string& path);
  net::HttpClientOptions Options() const;
  std::string host_;
  uint16_t port_;
  std::shared_ptr<const net::TlsContext> tls_;
};

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_CONTROL_CONTROL_CLIENT_H_
