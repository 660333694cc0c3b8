// CheckGatewayContentType: which POSTs the store's JSON gateway (/v3/...)
// reads, so that a web page cannot write to the store through a visitor's
// browser (issue 18).
//
// A browser sends a cross-site POST without asking first (no CORS
// preflight) only with a "simple" content type -- text/plain,
// multipart/form-data or application/x-www-form-urlencoded -- or with none
// (fetch() of a Blob or ArrayBuffer); any other type makes it ask the
// server with an OPTIONS preflight, which the store never grants (it sends
// no CORS headers), so the POST is never sent. etcd 3.4's grpc-gateway
// reads every body as JSON whatever its type, which lets such a page put,
// delete or defragment. The rule:
//
//   Content-Type                        Origin absent   Origin present
//   application/json, */*+json          read            read
//   application/x-www-form-urlencoded   read (curl -d)  refused
//   none                                read            refused
//   text/plain, multipart/form-data,
//   anything else                       refused         refused
//
// `curl -d '{json}'` (what etcd's e2e suite and the seeds' curl lines use)
// sends application/x-www-form-urlencoded and no Origin, and stays
// working; browsers always send Origin on a cross-origin POST.
//
//   if (Status st = CheckGatewayContentType(req.headers); !st.ok()) ...
//
// Thread-safety: a pure function. Errors: kInvalidArgument naming the
// type; the gateway answers it with HTTP 415 and etcd's error body
// {"error":...,"message":...,"code":3}.
#ifndef KPLANE_STORAGE_SERVER_GATEWAY_CONTENT_TYPE_H_
#define KPLANE_STORAGE_SERVER_GATEWAY_CONTENT_TYPE_H_

#include "base/status.h"
#include "net/http_message.h"

namespace kplane::storage {

Status CheckGatewayContentType(const net::HttpHeaders& headers);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_GATEWAY_CONTENT_TYPE_H_
