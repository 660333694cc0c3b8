// The HTTP answers of /openapi/v2, /openapi/v3 and /openapi/v3/<group-version>
// (the model is k8s.io/kube-openapi/pkg/handler and pkg/handler3):
//
//   /openapi/v2   Accept negotiated in order: application/json (JSON), the
//                 protobuf kubectl asks for (application/com.github.proto-
//                 openapi.spec.v2@v1.0+protobuf, or the same with .v1.0),
//                 answered as application/com.github.proto-openapi.spec.
//                 v2.v1.0+protobuf; */* and application/* mean JSON; else 406.
//   /openapi/v3   the index, JSON.
//   /openapi/v3/apis/apps/v1[?hash=H]
//                 application/json (or */*, absent); else 406; unknown
//                 group-version 404. With ?hash= equal to the document's
//                 ETag: Cache-Control "public, immutable" and Expires a year
//                 ahead; a stale hash: 301 to the current URL.
// Every answer carries a quoted ETag (uppercase hex SHA-512) and honours
// If-None-Match (304, no body); v2 and the v3 documents send Vary: Accept.
//
// Thread-safety: stateless. Errors: as HTTP statuses in the response.
#ifndef KPLANE_APISERVER_OPENAPI_HANDLER_H_
#define KPLANE_APISERVER_OPENAPI_HANDLER_H_

#include "apiserver/openapi/documents.h"
#include "base/clock.h"
#include "net/http_message.h"

namespace kplane::apiserver {

// `req.path` starts with "/openapi/"; `now` dates the Expires header.
net::HttpResponse ServeOpenApi(const openapi::OpenApiDocuments& docs,
                               const net::HttpRequest& req, WallTime now);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_OPENAPI_HANDLER_H_
