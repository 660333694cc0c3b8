// etcd's answer to GET /health, byte for byte, for the member's client
// port and metrics listener and for the gRPC proxy's listeners:
// etcdhttp.NewHealthHandler on Go's net/http.
//  - healthy: 200, body {"health":"true"}, Content-Type
//    "text/plain; charset=utf-8" (what Go sniffs from that body);
//  - not: 503 through http.Error: body {"health":"false"} and a newline,
//    the same Content-Type and X-Content-Type-Options: nosniff.
// Monitors that match the body or the type (etcd's e2e suite, kubeadm's
// probes, Patroni) see etcd's bytes. `reason`, when not empty, is kplane's:
// why the check failed, in the X-Kplane-Health-Reason header of a 503
// (control characters made spaces so it cannot end the header).
//
// A method other than GET (HEAD too) gets etcd's 405: `Allow: GET` and Go's
// http.Error body "Method Not Allowed" with a newline; route /health for
// every method and call RespondEtcdHealthToOtherMethods first.
//
// Thread-safety: pure functions of their arguments.
#ifndef KPLANE_STORAGE_SERVER_ETCD_HEALTH_H_
#define KPLANE_STORAGE_SERVER_ETCD_HEALTH_H_

#include <string_view>

#include "net/http_server.h"

namespace kplane::storage {

void RespondEtcdHealth(net::Responder& r, bool healthy,
                       std::string_view reason = {});

// True when `req` is not a GET and was answered with etcd's 405.
bool RespondEtcdHealthToOtherMethods(const net::HttpRequest& req,
                                     net::Responder& r);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_ETCD_HEALTH_H_
