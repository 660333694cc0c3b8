// Switching an HTTP/1.1 exchange to another protocol (RFC 9110 7.8): the
// WebSocket handshake of pods/exec (net/websocket.h) answers 101 and then
// speaks frames on the same connection.
//
//   HttpServer server(...);   // a route's handler:
//   int fd = -1;
//   bool ok = UpgradeConnection(responder,
//       {{"Upgrade", "websocket"}, {"Sec-WebSocket-Accept", accept}},
//       [&](int pair_fd) { fd = pair_fd; });
//   ... read and write `fd` (blocking or not), then close(fd) ...
//
// After the 101 the connection no longer speaks HTTP: its byte stream goes
// to `on_upgraded(fd)`, one end of a non-blocking AF_UNIX socket pair that
// the server's I/O loop pumps to and from the client (decrypting and
// encrypting on a TLS connection), exactly as HttpServerOptions::handoff
// does for gRPC. The owner closes `fd` when done; the server then flushes
// what was written and closes the client connection (close_notify on TLS).
// The client closing its end shows as EOF on `fd`. The server's idle and
// header timeouts stop applying (the owner keeps its own); the connection
// keeps counting in NumConnections() and NumHandedOff() until it closes.
//
// Thread-safety: UpgradeConnection may be called from any thread, once,
// instead of Respond/StartStream. `on_upgraded` runs on an I/O thread and
// must not block; the exchange's OnClose callbacks run at the switch. If
// the client left between the 101 and the switch, on_upgraded(-1) runs.
// Errors: false (and on_upgraded never called) when the response has
// already started, the connection is closed, the request is HTTP/1.0 or has
// a body, or the responder is not one of HttpServer's.
#ifndef KPLANE_NET_HTTP_UPGRADE_H_
#define KPLANE_NET_HTTP_UPGRADE_H_

#include <functional>
#include <memory>

#include "net/http_message.h"
#include "net/http_server.h"

namespace kplane::net {

// Sends "HTTP/1.1 101 Switching Protocols" with `headers` (plus
// "Connection: Upgrade") and hands the connection over (see above).
bool UpgradeConnection(const std::shared_ptr<Responder>& responder,
                       const HttpHeaders& headers,
                       std::function<void(int fd)> on_upgraded);

}  // namespace kplane::net

#endif  // KPLANE_NET_HTTP_UPGRADE_H_
