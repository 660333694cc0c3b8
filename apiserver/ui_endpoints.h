// The web view's HTTP endpoints on the API server (issue 21, docs/ui.md):
//
//   GET /ui             301 to /ui/
//   GET /ui/<file>      the embedded page (ui/assets.h): its content type,
//                       an ETag (If-None-Match answers 304), Cache-Control
//                       no-cache (revalidate: a new binary is a new page),
//                       a Content-Security-Policy that allows only the
//                       page's own scripts, styles and requests to this
//                       origin, nosniff, no framing, no referrer.
//   GET /ui/api/store   the store panel's JSON (StoreStatusJson below).
//   GET /ui/api/history?group=&version=&resource=&namespace=&name=[&limit=]
//                       every stored version of one object from MVCC
//                       (apiserver/object_history.h), authorized as a `get`
//                       of that object.
//   POST /ui/api/nodes/<name>/stop | /resume
//                       stops / resumes a simulated node through the
//                       fleet's control endpoint (NodeControl below; by
//                       default at the Node's kubelet endpoint),
//                       authorized as `create` on `nodes/proxy` <name>.
//
// These are plain handlers; the API server wraps each in its
// authentication and authorization (non-resource URLs: the static files
// are allowed to everyone by system:public-info-viewer, /ui/api/store only
// to whom RBAC lets `get` that path; cluster-admin can).
//
// Thread-safety: the handlers are stateless apart from the store-status
// provider, which must be safe to call from several threads.
// Errors: a provider failing for a member is reported in that member's
// entry ("error"), not as an HTTP error.
#ifndef KPLANE_APISERVER_UI_ENDPOINTS_H_
#define KPLANE_APISERVER_UI_ENDPOINTS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/statusor.h"
#include "net/http_message.h"
#include "net/http_server.h"
#include "schemas/rpc.pb.h"

namespace kplane::apiserver {

// One store member as the panel shows it: the endpoint it was asked at and
// its etcd StatusResponse (members, leader, raft term, revision, applied
// index, db size vs in use, alarms as `errors`), or why it did not answer.
struct StoreMemberReport {
  std::string endpoint;
  StatusOr<etcdserverpb::StatusResponse> status;
};
// Asks every member it knows about. Called on a worker thread per request.
using StoreStatusProvider = std::function<std::vector<StoreMemberReport>()>;

// Stops (`stop` true) or resumes one simulated node's heartbeats (the
// fleet's POST /nodes/<name>/stop|resume, kubeletsim/control_server.h).
// kNotFound for a node the fleet does not simulate; other errors are the
// transport's. Called on a worker thread per request.
using NodeControl = std::function<Status(const std::string& node, bool stop)>;

// {"members":[{"endpoint":..,"memberID":"<hex>","leader":bool,
//   "raftTerm":N,"revision":N,"raftIndex":N,"raftAppliedIndex":N,
//   "dbSize":N,"dbSizeInUse":N,"version":"..","isLearner":bool,
//   "alarms":[..]} | {"endpoint":..,"error":".."}],
//  "leader":"<hex>"|"" ,"raftTerm":N,"revision":N}
// The top-level leader/term/revision come from the answering member with
// the highest raft term (a deposed leader's stale view loses).
std::string StoreStatusJson(const std::vector<StoreMemberReport>& members);

// Serves GET /ui and /ui/<file> (see above); 404 (plain text) otherwise.
void ServeUiAsset(const net::HttpRequest& req,
                  std::shared_ptr<net::Responder> resp);

// The security headers every /ui answer carries (also the JSON ones).
net::HttpHeaders UiSecurityHeaders();

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_UI_ENDPOINTS_H_
