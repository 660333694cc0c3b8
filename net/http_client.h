// HttpClient: a blocking HTTP/1.1 client on our own parser (net/http_parser.h,
// shared with the server), for kplane's HTTP clients: the etcd-v3 JSON
// client, raft peer transport, the informers' REST client, tests and tools.
//
//   HttpClient c("127.0.0.1", 2379);
//   StatusOr<HttpResponse> r = c.Request("POST", "/v3/kv/range",
//       {{"Content-Type", "application/json"}}, R"({"key":"Zm9v"})");
//
//   // A streamed response (a Kubernetes watch): chunks as they arrive.
//   c.Stream("GET", "/api/v1/pods?watch=1", {}, "",
//            [&](std::string_view data) { decoder.Feed(data); return true; },
//            &cancel);
//
//   // Both directions streaming (etcd /v3/watch, /v3/lease/keepalive):
//   auto s = c.OpenStream("POST", "/v3/watch", {});
//   (*s)->Send(R"({"create_request":{"key":"YQ=="}})");
//   (*s)->ReadHead();  (*s)->Read(&data); ...  (*s)->Send(second_request);
//
// Connection handling: Request() and Stream() share one keep-alive
// connection, reconnecting when it is gone. A reused connection the server
// has closed meanwhile (its idle timeout) is detected before sending; if a
// request on a reused connection still fails before any response byte
// arrives, an idempotent request (GET, HEAD, PUT, DELETE, OPTIONS) is
// retried once on a new connection. Other requests are not retried: the
// server may have executed them. OpenStream() uses a connection of its own.
//
// TLS (HttpClientOptions::tls): every connection does a TLS handshake
// before its first request, verifying the server's certificate (chain and
// name, net/tls.h) and presenting the client certificate if the context
// has one. ForUrl() takes "https://" URLs and then needs a TLS context.
// A failed handshake is kUnavailable with the reason ("certificate signed
// by an unknown authority", "certificate is not valid for <host>", a
// refused client certificate) and is never retried.
//
// Timeouts (real time, deadlines computed on the injected Clock):
// connect_timeout for connecting; tls_handshake_timeout for the TLS
// handshake; write_timeout for sending a request;
// read_timeout for the complete response of Request(), and for the
// response head of Stream(). A streamed body has no timeout unless
// stream_idle_timeout is set; cancel it with a CancelToken instead.
//
// Thread-safety: HttpClient serializes its calls (one exchange at a time;
// use several clients for concurrency). HttpStream: Send/TrySend/CloseSend
// from any thread (they take the stream's write lock; TrySend only tries it)
// and ReadHead/Read from another may run concurrently; Cancel from any
// thread. After a failed Send or CloseSend every later one fails
// (kUnavailable: a chunk may have been cut off). CancelToken: any thread.
// Errors: kUnavailable when the server cannot be reached or the connection
// is refused, reset or closed early; kDeadlineExceeded on timeouts;
// kCancelled after a CancelToken fired; kInvalidArgument for a malformed
// response; kTooLarge for a body over max_response_body_bytes.
// HTTP error statuses (404, 500) are not errors: they are responses.
#ifndef KPLANE_NET_HTTP_CLIENT_H_
#define KPLANE_NET_HTTP_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "net/http_message.h"
#include "net/tls.h"

namespace kplane::net {

// Cancels a blocking Stream() or HttpStream read from another thread.
class CancelToken {
 public:
  CancelToken();
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  void Cancel();
  bool IsCancelled() const { return cancelled_.load(); }
  // A descriptor that becomes readable once cancelled (for poll()).
  int fd() const { return fd_; }

 private:
  int fd_;
  std::atomic<bool> cancelled_{false};
};

struct HttpClientOptions {
  Duration connect_timeout = seconds(5);
  Duration read_timeout = seconds(60);
  Duration write_timeout = seconds(60);
  // Idle time allowed between pieces of a streamed response body; negative
  // means no limit.
  Duration stream_idle_timeout = Duration(-1);
  size_t max_response_body_bytes = 256 * 1024 * 1024;
  // Added to every request unless the request sets the same field.
  HttpHeaders default_headers = {{"User-Agent", "kplane-net/1"}};
  Clock* clock = nullptr;  // nullptr: Clock::Real()
  // Speak HTTPS with this client TlsContext (net/tls.h). nullptr: HTTP.
  std::shared_ptr<const TlsContext> tls;
  // Go's http.Transport default.
  Duration tls_handshake_timeout = seconds(10);
  // Non-empty: connect to this unix-domain socket instead of host:port
  // (the host still names the server in the Host header and, with `tls`,
  // is the name its certificate must carry).
  std::string unix_socket_path;
};

class ClientConnection;  // internal

// A request whose body is sent as a chunked stream while the response is
// read as a stream. Created by HttpClient::OpenStream.
class HttpStream {
 public:
  ~HttpStream();
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  // Sends `data` as one chunk of the request body, after whatever an
  // earlier TrySend left unsent (empty `data`: only that).
  Status Send(std::string_view data);
  // Sends `data` as one chunk without waiting, for a caller that must not
  // block (a raft loop). kSent: all of it went to the kernel. kPartial: the
  // connection took part of it; the rest stays in the stream, and the
  // caller must call Send (with more data or none) to push it out before
  // the stream is any use (and to learn of an error that stopped it). Over
  // TLS a full socket or a failed write is always kPartial, even with
  // nothing taken: OpenSSL began a record with the data and needs the same
  // bytes again. kNotSent: nothing was written, because a plaintext socket
  // is full or reported an error (the next Send reports it), another thread
  // is inside Send, an earlier remainder is still waiting, or the stream is
  // cancelled or has failed; send `data` with Send instead.
  enum class TrySendResult { kSent, kPartial, kNotSent };
  TrySendResult TrySend(std::string_view data);
  // Ends the request body. The response may continue.
  Status CloseSend();

  // Waits for the response head (negative timeout: no limit). The returned
  // response has no body; read it with Read().
  StatusOr<HttpResponse> ReadHead(Duration timeout = Duration(-1));
  // Waits for more of the response body and appends it to *out. Returns
  // false at the end of the body (the server finished). Calls ReadHead()
  // first if needed.
  StatusOr<bool> Read(std::string* out, Duration timeout = Duration(-1));

  // Makes blocked and future calls return kCancelled. Any thread.
  void Cancel();

 private:
  friend class HttpClient;
  HttpStream(std::unique_ptr<ClientConnection> conn, std::string method,
             HttpClientOptions options);

  struct State;
  std::unique_ptr<State> state_;
};

class HttpClient {
 public:
  HttpClient(std::string host, uint16_t port, HttpClientOptions options = {});
  // From "http://host:port" or "https://host:port" (any path in the URL is
  // ignored). https needs options.tls and http must not have it
  // (kInvalidArgument), so a URL never silently downgrades. Also etcd's
  // "unix://<path>" and "unixs://<path>" (TLS over the socket; same rule for
  // options.tls): the socket is the file named by everything after "//"
  // ("unix://localhost:2380" is the file "localhost:2380"), and, as Go's
  // transport does for etcd, the part before the last ':' of a path
  // without '/' names the server ("localhost" there; for "/run/x.sock" too).
  static StatusOr<std::unique_ptr<HttpClient>> ForUrl(
      std::string_view url, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request (body with Content-Length) and reads the whole
  // response. `target` is the path plus optional "?query". `deadline` (on
  // the options' Clock) bounds the whole call, connecting included, below
  // whatever the per-phase timeouts allow: kDeadlineExceeded once it has
  // passed (a caller's overall budget, as a Go context's deadline).
  StatusOr<HttpResponse> Request(std::string_view method,
                                 std::string_view target,
                                 const HttpHeaders& headers = {},
                                 std::string_view body = {},
                                 TimePoint deadline = TimePoint::max());

  // Like Request(), but hands the response body to `on_data` as it arrives
  // (chunk framing removed; piece boundaries are arbitrary) until the
  // server ends the body, `on_data` returns false, or `cancel` fires. The
  // returned response carries the status and headers and an empty body.
  // Returns kCancelled if `cancel` fired.
  StatusOr<HttpResponse> Stream(
      std::string_view method, std::string_view target,
      const HttpHeaders& headers, std::string_view body,
      const std::function<bool(std::string_view data)>& on_data,
      const CancelToken* cancel = nullptr);

  // Opens a new connection and sends the head of a request whose body is
  // streamed (Transfer-Encoding: chunked). See HttpStream.
  StatusOr<std::unique_ptr<HttpStream>> OpenStream(
      std::string_view method, std::string_view target,
      const HttpHeaders& headers = {});

  // Drops the keep-alive connection (the next call reconnects).
  void CloseConnection() EXCLUDES(mu_);

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }

 private:
  StatusOr<HttpResponse> Exchange(
      std::string_view method, std::string_view target,
      const HttpHeaders& headers, std::string_view body,
      const std::function<bool(std::string_view)>* on_data,
      const CancelToken* cancel, TimePoint deadline) EXCLUDES(mu_);

  const std::string host_;
  const uint16_t port_;
  const HttpClientOptions options_;
  Clock* const clock_;
  // Held for a whole exchange: one request at a time per client.
  Mutex mu_;
  std::unique_ptr<ClientConnection> conn_ GUARDED_BY(mu_);
};

}  // namespace kplane::net

#endif  // KPLANE_NET_HTTP_CLIENT_H_
