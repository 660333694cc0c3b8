// HttpServer: the event-driven HTTP/1.1 server every kplane process uses
// (etcd-v3 JSON API, raft peer traffic, the Kubernetes API, /metrics).
//
// Design (net/README.md has the long version): non-blocking sockets and
// epoll on one or more I/O loop threads; handlers run on a worker pool (or,
// if a route asks, directly on the I/O thread). A handler receives the
// request and a shared Responder, and may answer at once or keep the
// Responder and answer later from any thread: a raft commit, a watch event.
// Writing never blocks: bytes go to the connection's output buffer (written
// straight to the socket when it is empty) and the loop drains the rest. An
// idle streaming connection costs a few KiB and no thread.
//
//   HttpServer server(HttpServerOptions{.port = 0});
//   server.Handle("GET", "/healthz",
//                 [](const HttpRequest&, std::shared_ptr<Responder> r) {
//                   r->Respond(200, {{"Content-Type", "text/plain"}}, "ok");
//                 },
//                 {.run_on_io_thread = true});
//   server.HandlePrefix("POST", "/v3/watch", WatchHandler,
//                       {.stream_request_body = true});
//   CHECK_OK(server.Start());
//   ... server.port() ...
//   server.Stop();
//
// Requests on one connection are handled strictly in order: the next
// pipelined request is parsed only after the previous exchange completed
// (its response finished and its body fully read).
//
// Ownership: HttpServer owns its threads and sockets. Responders are shared
// with handlers and may outlive Stop() and the server itself; once their
// connection is closed every call on them is a harmless no-op.
// Thread-safety: Handle*/Start/Stop from one controlling thread; routes
// must be registered before Start(). Responder methods are safe from any
// thread. Stop() must not be called from a handler or callback.
// Errors: Start() returns the bind/listen failure. Malformed requests are
// answered by the server itself (400, 413, 414, 431, 404, 405, 417, 505),
// a request body that does not arrive in time with 408, a connection over
// the cap with 503 (see HttpServerOptions).
//
// TLS (HttpServerOptions::tls): every connection starts with a TLS
// handshake, done by the I/O loop without blocking it (no thread per
// connection); requests carry the connection's TLS state and the client
// certificate's verified identity in HttpRequest::tls. See the options for
// the handshake deadline and plaintext clients. With a handoff (same-port
// gRPC) the server terminates TLS and pumps the decrypted HTTP/2 stream to
// the handoff's owner through a socket pair (HttpServerOptions::handoff).
//
// Hostile clients (docs/limits.md, "Connections"): a body must arrive
// within body_timeout; at most max_connections are open per listener; the
// next pipelined request is not parsed while more than 64 KiB of earlier
// responses wait for the client to read them; output queued beyond
// max_output_buffer_bytes closes the connection; a header value (or name)
// with CR, LF or NUL is never written (the field is dropped and logged).
#ifndef KPLANE_NET_HTTP_SERVER_H_
#define KPLANE_NET_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/status.h"
#include "net/http_message.h"
#include "net/tls.h"

namespace kplane::net {

// One request/response exchange, handed to the handler. All methods are
// thread-safe and never block on the network.
//
// Exactly one of:
//   Respond(status, headers, body)                     a whole response
//   StartStream(status, headers), Write()..., Finish() a chunked stream
// The server adds Content-Length / Transfer-Encoding / Connection itself.
// To an HTTP/1.0 client a stream is sent unframed and the connection is
// closed at Finish(); a HEAD request gets the head only.
class Responder {
 public:
  virtual ~Responder() = default;

  virtual const HttpRequest& request() const = 0;

  // Sends a complete response. Returns false if a response was already
  // started or the connection is closed.
  virtual bool Respond(int status, HttpHeaders headers, std::string body) = 0;

  // Sends the head of a streamed (chunked) response. Returns false if a
  // response was already started or the connection is closed.
  virtual bool StartStream(int status, HttpHeaders headers) = 0;
  // Queues one chunk; it is written promptly (no batching delay). An empty
  // chunk is ignored. Returns false once the stream is finished or the
  // connection is closed (client gone, buffer cap exceeded, server stopped).
  virtual bool Write(std::string_view chunk) = 0;
  // Queues each of `chunks` as a chunk of its own, all in one send (one
  // write() when the socket takes them): a stream of messages whose client
  // reads one message per chunk (etcd's gateway flushes each watch response
  // as its own chunk) keeps the throughput of one large Write. Empty
  // entries are skipped. Returns as Write.
  virtual bool WriteChunks(std::span<const std::string_view> chunks) = 0;
  // Ends the stream. Returns false if it was not streaming or is closed.
  virtual bool Finish() = 0;

  // Bytes queued on this connection but not yet accepted by the kernel; a
  // producer uses it to spot a client that does not keep up.
  virtual size_t BufferedBytes() const = 0;
  // Closes the connection when BufferedBytes() would exceed `max_bytes`
  // (0 = no cap). Overrides HttpServerOptions::max_output_buffer_bytes for
  // this exchange. The cap bounds what is queued *before* a Respond(): a
  // whole response is never cut by it (it is in memory already); a stream's
  // Write() is refused, and the connection closed, once the backlog would
  // pass it.
  virtual void SetMaxBufferedBytes(size_t max_bytes) = 0;

  // Closes the connection if this exchange's response has not finished
  // within `timeout` of now (the server's clock, checked at every
  // timer_tick, so up to a tick late): for a producer whose response may
  // outlast a client that stopped reading (a streamed LIST; kube-apiserver
  // ends a request at its --request-timeout). The client sees the
  // connection close without the response's end. A second call replaces
  // the first; Duration::zero(): none (the default).
  virtual void SetResponseDeadline(Duration timeout) = 0;

  // Pacing for a producer that keeps the buffer small: `callback` runs
  // once, on a worker thread (never inside a Responder call), when
  // BufferedBytes() is at most `low_water` (at once if it already is).
  // It is dropped unrun if the exchange ends first (OnClose fires instead).
  // A second OnDrained replaces an unfired first callback.
  virtual void OnDrained(size_t low_water, std::function<void()> callback) = 0;

  // `callback` runs exactly once when this exchange is over: the response
  // finished (Respond/Finish), or the connection closed first (the client
  // went away, the buffer cap was exceeded, Close(), or Stop()). It runs on
  // a worker thread, never inside a Responder call, so it may take the
  // producer's locks; if the exchange is already over it is scheduled at
  // once. After the server has stopped it runs inline on the caller's
  // thread. A second OnClose replaces an unfired first callback.
  virtual void OnClose(std::function<void()> callback) = 0;
  // True once the connection is closed (the client cannot get more data).
  virtual bool IsClosed() const = 0;

  // Streaming request bodies (routes with stream_request_body): `fn`
  // receives the body in pieces as they arrive, then once with eof = true
  // (a request without a body gets just the eof call). Pieces that arrived
  // before registration are delivered first. Callbacks run on a worker
  // thread (on the I/O thread for run_on_io_thread routes; pieces queued
  // before registration then arrive inside OnBodyData), one at a time and
  // in order, and stop after the response is finished or the connection is
  // closed. Register at most once.
  virtual void OnBodyData(
      std::function<void(std::string_view data, bool eof)> fn) = 0;

  // Drops the connection (e.g. the producer gave up on a slow watcher).
  virtual void Close() = 0;
};

using HttpHandler =
    std::function<void(const HttpRequest&, std::shared_ptr<Responder>)>;

struct RouteOptions {
  // Call the handler once the head arrives and deliver the body through
  // Responder::OnBodyData (no body size limit applies).
  bool stream_request_body = false;
  // Run the handler on the I/O thread instead of the worker pool. Only for
  // handlers that answer at once or hand the work on, and never block
  // (/healthz, /metrics, store writes). With stream_request_body the body
  // pieces are delivered on the I/O thread too (raft peer streams).
  bool run_on_io_thread = false;
  // The whole request body must arrive within this time of the end of its
  // head, or the client gets 408 and the connection closes (for a streaming
  // body: 408 if no response has started, else just the close).
  // Unset: HttpServerOptions::body_timeout. Duration::zero(): none, for
  // routes whose body is an open-ended stream (etcd's /v3/watch and
  // /v3/lease/keepalive, raft peer streams).
  std::optional<Duration> body_timeout;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // "" or "0.0.0.0" or "::" for all
  uint16_t port = 0;               // 0: ephemeral; see HttpServer::port()
  // A socket already bound and listening (net::ListenTcp) to serve instead
  // of binding host:port; Start() takes ownership (closed on failure too).
  // Lets a caller learn an ephemeral port before it sets up the handlers.
  int listen_fd = -1;
  int io_threads = 1;
  int worker_threads = 4;
  int listen_backlog = 4096;

  // Request limits. Over the body limit: 413; head too large or too many
  // fields: 431; request line too long: 414.
  size_t max_request_line_bytes = 8 * 1024;
  size_t max_header_bytes = 64 * 1024;
  size_t max_header_count = 100;
  size_t max_body_bytes = 4 * 1024 * 1024;
  // A streaming request body is not read from the socket while this many
  // bytes wait for the handler's OnBodyData callbacks (back-pressure).
  size_t max_pending_body_bytes = 1024 * 1024;

  // A request body must arrive completely within body_timeout of the end
  // of its head (kube-apiserver's request timeout is 60 s); otherwise 408
  // and the connection closes. RouteOptions::body_timeout overrides it.
  // Duration::zero(): none.
  Duration body_timeout = seconds(60);

  // Open connections on this listener. A connection accepted beyond the cap
  // is answered with a canned 503 (best effort: one non-blocking write) and
  // closed at once, without reading a request; it costs no buffer and no
  // timer. Connections handed to `handoff` (below) count too, while their
  // new owner keeps them open. 0 = no cap.
  size_t max_connections = 10000;

  // Per-connection output buffer cap; exceeding it closes the connection.
  // It bounds what a client that does not read makes us queue: a whole
  // response (Respond) is never cut, since it is counted against the cap
  // only with what was queued before it; stream Write()s are. 0 = none.
  // Responder::SetMaxBufferedBytes overrides it per exchange.
  size_t max_output_buffer_bytes = 16 * 1024 * 1024;

  // A keep-alive connection with no request in progress is closed after
  // idle_timeout; a request head must arrive completely within
  // header_timeout of its first byte (or of the accept).
  Duration idle_timeout = seconds(120);
  Duration header_timeout = seconds(30);
  // How long a connection being closed after an error keeps discarding
  // input, so the client reads our response instead of a reset.
  Duration linger_timeout = seconds(2);
  // Timeouts are checked every timer_tick (on `clock`).
  Duration timer_tick = milliseconds(500);
  Clock* clock = nullptr;  // nullptr: Clock::Real()

  // Metrics go to this registry (nullptr: Registry::Default()) with label
  // server=<name>: kplane_http_connections_accepted_total,
  // kplane_http_connections_open, kplane_http_connections_rejected_total
  // (over max_connections), kplane_http_connections_handed_off (see
  // handoff), kplane_http_requests_total{code}.
  metrics::Registry* metrics = nullptr;
  std::string name = "http";

  // Another protocol on the same port (the store's gRPC, as etcd's cmux):
  // a connection whose first bytes are `handoff_preface` (compared as far
  // as they have arrived, at least 4 bytes) is not served here. Its socket,
  // still unread, is removed from the server and passed to `handoff`, which
  // owns it from then on; it is called on an I/O thread and must not
  // block. An empty preface disables this. `tls` is nullptr (plaintext).
  // The connection keeps counting against max_connections until `handoff`'s
  // owner closes the descriptor: the server checks that the descriptor
  // still names that socket, up to 256 handed-off connections per timer
  // tick (round robin: a slot comes back within ceil(N / 256) ticks of the
  // close), and all of them when an accept finds the cap full (at most
  // once per tick per I/O loop, for the connections that loop handed off).
  // (The owner must close the descriptor it was given when it is done, not
  // a dup of it; gRPC does.)
  //
  // With TLS (below) the server terminates TLS and hands over a decrypted
  // stream: a connection that negotiated ALPN "h2", or no ALPN, and whose
  // first decrypted bytes are `handoff_preface`, goes to `handoff` as one
  // end of a non-blocking AF_UNIX socket pair (the preface still unread in
  // it), with `tls` = the handshake's TlsConnectionInfo (the verified
  // client identity). The I/O loop keeps the TLS session and pumps bytes
  // both ways (no thread per connection; each direction buffers at most
  // ~256 KiB, then stops reading its source until the other end catches
  // up). Ends propagate: the client's close_notify or EOF shuts down the
  // pair's write side; the owner closing its end flushes what it wrote,
  // sends close_notify and closes the TCP connection; a broken client
  // connection closes the pair. The connection stays open here, counted in
  // NumConnections(), kplane_http_connections_open and NumHandedOff()/
  // kplane_http_connections_handed_off, and against max_connections, until
  // then; the idle and header timeouts stop applying once it is handed
  // over (the owner's keepalive decides), but the preface itself must
  // arrive within header_timeout of the accept (the whole preface is
  // awaited). ALPN "h2" followed by anything but the preface is closed;
  // ALPN "http/1.1" is always served here. The server's TlsContext should
  // offer {"h2", "http/1.1"}: gRPC clients offer only "h2", and a context
  // offering only "http/1.1" refuses them in the handshake.
  std::string handoff_preface;
  std::function<void(int fd, std::shared_ptr<const TlsConnectionInfo> tls)>
      handoff;

  // Serve HTTPS: a server TlsContext (net/tls.h; TLS 1.2+, client
  // certificate policy, ALPN). nullptr: plaintext HTTP.
  //  - This server speaks HTTP/1.1 only: give the context no ALPN list or
  //    {"http/1.1"}; a connection that negotiates another protocol ("h2")
  //    is closed as a failed handshake -- unless `handoff` is set, which
  //    takes "h2" connections (above).
  //  - A handshake must complete within tls_handshake_timeout of the
  //    accept, or the connection is closed (Go's net/http bounds it by its
  //    read-header timeout; kube-apiserver's is 32 s).
  //  - A client that sends plaintext HTTP gets Go's answer, written
  //    unencrypted, and the connection closes: "HTTP/1.0 400 Bad
  //    Request ... Client sent an HTTP request to an HTTPS server."
  //    (kube-apiserver and etcd, both Go, answer the same.) Anything else
  //    that is not TLS is just closed.
  //  - Failed handshakes (errors, timeouts, plaintext) are counted in
  //    kplane_http_tls_handshake_failures_total{server,reason} with reason
  //    "error", "timeout", "plaintext_http" or "alpn", and logged at most
  //    once per 10 s (with the number left out).
  //  - A connection over max_connections is closed without the canned 503
  //    (it would be plaintext on a TLS port).
  // Everything else (limits, timeouts, output caps, streaming) works the
  // same over TLS; the header timeout of the first request still counts
  // from the accept, so it covers the handshake too.
  std::shared_ptr<const TlsContext> tls;
  Duration tls_handshake_timeout = seconds(10);
};

// HTTP/2's client connection preface (RFC 9113 3.4).
inline constexpr std::string_view kHttp2Preface =
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes `method` ("" = any) on exactly `path` (percent-decoded), or on
  // every path starting with `prefix`. An exact route wins over prefixes;
  // the longest prefix wins among prefixes. A GET route also serves HEAD.
  // A path with routes but none for the method gets 405 with Allow;
  // no route at all: 404.
  void Handle(std::string method, std::string path, HttpHandler handler,
              RouteOptions options = {});
  void HandlePrefix(std::string method, std::string prefix, HttpHandler handler,
                    RouteOptions options = {});

  // Raises the open-file limit, binds, listens and starts the threads.
  Status Start();
  // The bound port (valid after Start()).
  uint16_t port() const { return port_; }
  // Closes the listener and every connection (OnClose callbacks run),
  // finishes queued handler tasks and joins all threads. Idempotent.
  void Stop();

  // Open connections right now: adopted by a loop, with their timers
  // counting from a clock reading taken before they were counted, and not
  // yet closed. (A socket just accepted but not yet adopted is not counted
  // here, though it does count against max_connections.)
  size_t NumConnections() const;
  // Connections given to HttpServerOptions::handoff whose descriptors the
  // server has not yet seen closed; they count against max_connections.
  size_t NumHandedOff() const;

  class Impl;  // internal; public only so the .cc's helpers can name it

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_HTTP_SERVER_H_
