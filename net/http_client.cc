#include "net/http_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <span>

#include "base/logging.h"
#include "net/http_parser.h"
#include "net/socket.h"
#include "net/url.h"

namespace kplane::net {

namespace {

constexpr size_t kReadChunk = 64 * 1024;

TimePoint DeadlineAfter(Clock* clock, Duration d) {
  if (d.count() < 0) return TimePoint::max();
  return clock->Now() + d;
}

Duration Remaining(Clock* clock, TimePoint deadline) {
  if (deadline == TimePoint::max()) return Duration(-1);
  Duration left = deadline - clock->Now();
  return left.count() < 0 ? Duration(0) : left;
}

// `timeout` (negative: none), shortened to what is left before `deadline`.
Duration CappedTimeout(Clock* clock, Duration timeout, TimePoint deadline) {
  const Duration left = Remaining(clock, deadline);
  if (left.count() < 0) return timeout;
  return timeout.count() < 0 ? left : std::min(timeout, left);
}

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" ||
         method == "DELETE" || method == "OPTIONS";
}

bool ResponseKeepsConnection(const HttpResponse& resp,
                             const BodyFraming& framing) {
  if (framing.kind == BodyFraming::kUntilClose) return false;
  if (resp.headers.HasToken("Connection", "close")) return false;
  if (resp.version_minor == 0) {
    return resp.headers.HasToken("Connection", "keep-alive");
  }
  return true;
}

std::string HostHeader(const std::string& host, uint16_t port) {
  Url u;
  u.host = host;
  u.port = port;
  return u.HostPort();
}

enum class BodyMode { kNone, kLength, kChunked };

std::string SerializeHead(std::string_view method, std::string_view target,
                          const std::string& host_header,
                          const HttpHeaders& defaults,
                          const HttpHeaders& headers, BodyMode mode,
                          size_t length) {
  std::string out;
  out.reserve(256);
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  if (!headers.Has("Host"))
    out.append("Host: ").append(host_header).append("\r\n");
  for (const auto& [name, value] : defaults) {
    if (!headers.Has(name))
      out.append(name).append(": ").append(value).append("\r\n");
  }
  for (const auto& [name, value] : headers) {
    if (EqualsIgnoreCase(name, "Content-Length") ||
        EqualsIgnoreCase(name, "Transfer-Encoding")) {
      continue;  // framing is ours
    }
    out.append(name).append(": ").append(value).append("\r\n");
  }
  switch (mode) {
    case BodyMode::kNone:
      break;
    case BodyMode::kLength:
      out.append("Content-Length: ")
          .append(std::to_string(length))
          .append("\r\n");
      break;
    case BodyMode::kChunked:
      out.append("Transfer-Encoding: chunked\r\n");
      break;
  }
  out.append("\r\n");
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// CancelToken

CancelToken::CancelToken() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  CHECK_GE(fd_, 0) << "eventfd failed";
}

CancelToken::~CancelToken() { ::close(fd_); }

void CancelToken::Cancel() {
  if (cancelled_.exchange(true)) return;
  uint64_t one = 1;
  ssize_t rc = ::write(fd_, &one, sizeof(one));
  (void)rc;
}

// ---------------------------------------------------------------------------
// ClientConnection: one socket plus its read buffer.

//
// With TLS the socket is non-blocking and every OpenSSL call is made under
// ssl_mu_ (an HttpStream reads on one thread while it sends on another;
// one SSL allows one caller at a time); waiting for the socket happens
// outside the lock.
class ClientConnection {
 public:
  ClientConnection(ScopedFd fd, Clock* clock)
      : fd_(std::move(fd)), clock_(clock) {}

  // Connecting and the TLS handshake end by `deadline` too.
  static StatusOr<std::unique_ptr<ClientConnection>> Connect(
      const std::string& host, uint16_t port, const HttpClientOptions& options,
      Clock* clock, TimePoint deadline = TimePoint::max()) {
    const Duration connect_timeout =
        CappedTimeout(clock, options.connect_timeout, deadline);
    if (connect_timeout.count() == 0) {
      return DeadlineExceededError("deadline passed before connecting");
    }
    ASSIGN_OR_RETURN(ScopedFd fd, options.unix_socket_path.empty()
                                      ? ConnectTcp(host, port, connect_timeout)
                                      : ConnectUnix(options.unix_socket_path,
                                                    connect_timeout));
    auto conn = std::make_unique<ClientConnection>(std::move(fd), clock);
    if (options.tls) {
      RETURN_IF_ERROR(conn->StartTls(
          options.tls, host,
          CappedTimeout(clock, options.tls_handshake_timeout, deadline)));
    }
    return conn;
  }

  Status StartTls(std::shared_ptr<const TlsContext> ctx,
                  const std::string& host, Duration timeout) {
    int flags = fcntl(fd_.get(), F_GETFL);
    if (flags < 0 || fcntl(fd_.get(), F_SETFL, flags | O_NONBLOCK) < 0) {
      return ErrnoToStatus(errno, "fcntl");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<TlsSession> session,
                     TlsSession::NewClient(std::move(ctx), fd_.get(), host));
    const TimePoint deadline = DeadlineAfter(clock_, timeout);
    for (;;) {
      TlsSession::Result r = session->Handshake();
      if (r == TlsSession::Result::kOk) break;
      if (r != TlsSession::Result::kWantRead &&
          r != TlsSession::Result::kWantWrite) {
        return session->error();
      }
      Status w = WaitFd(fd_.get(), r == TlsSession::Result::kWantWrite,
                        Remaining(clock_, deadline));
      if (w.code() == StatusCode::kDeadlineExceeded) {
        return DeadlineExceededError("TLS handshake with " + host +
                                     " did not finish in time");
      }
      RETURN_IF_ERROR(w);
    }
    MutexLock l(&ssl_mu_);
    tls_ = std::move(session);
    return Status::Ok();
  }

  // Sends every piece before `deadline`.
  Status WriteAll(std::initializer_list<std::string_view> pieces,
                  TimePoint deadline, int cancel_fd) {
    if (has_tls()) return WriteAllTls(pieces, deadline, cancel_fd);
    std::vector<std::string_view> left;
    for (std::string_view p : pieces) {
      if (!p.empty()) left.push_back(p);
    }
    std::span<std::string_view> rest(left);
    while (!rest.empty()) {
      ASSIGN_OR_RETURN(size_t sent, SendOnce(rest));
      if (sent == 0) {
        Status w = WaitFd(fd_.get(), /*for_write=*/true,
                          Remaining(clock_, deadline), cancel_fd);
        if (!w.ok()) return w.Annotate("writing request");
        continue;
      }
      while (!rest.empty() && sent >= rest.front().size()) {
        sent -= rest.front().size();
        rest = rest.subspan(1);
      }
      if (!rest.empty()) rest.front().remove_prefix(sent);
    }
    return Status::Ok();
  }

  // One write of the pieces without waiting. `taken`: the bytes the
  // connection took. `owed`: the rest must be written next, before anything
  // else, because the connection already holds the start of it: a socket
  // that took part of the pieces, or a TLS session that began a record it
  // could not finish (OpenSSL then needs at least the same bytes again).
  // Nothing taken and nothing owed: the plaintext socket is full; send the
  // pieces some other way or not at all. An error is returned only by a
  // plaintext socket that took nothing; otherwise the next write meets it.
  struct TryWriteResult {
    size_t taken = 0;
    bool owed = false;
  };
  StatusOr<TryWriteResult> TryWrite(
      std::initializer_list<std::string_view> pieces) {
    if (has_tls()) return TryWriteTls(pieces);
    size_t total = 0;
    for (std::string_view p : pieces) total += p.size();
    ASSIGN_OR_RETURN(size_t taken, SendOnce(std::span<const std::string_view>(
                                       pieces.begin(), pieces.size())));
    return TryWriteResult{taken, taken > 0 && taken < total};
  }

  // Reads what is available (waiting until `deadline`) into the buffer.
  // Returns false at EOF.
  StatusOr<bool> Fill(TimePoint deadline, int cancel_fd) {
    if (has_tls()) return FillTls(deadline, cancel_fd);
    for (;;) {
      Status w = WaitFd(fd_.get(), /*for_write=*/false,
                        Remaining(clock_, deadline), cancel_fd);
      if (!w.ok()) return w.Annotate("reading response");
      CompactBuffer();
      size_t old = buf_.size();
      buf_.resize(old + kReadChunk);
      ssize_t n =
          ::recv(fd_.get(), buf_.data() + old, kReadChunk, MSG_DONTWAIT);
      buf_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
      if (n > 0) {
        bytes_received_ += static_cast<size_t>(n);
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return ErrnoToStatus(errno, "recv");
    }
  }

  // True if the server has closed the connection (or sent something
  // unsolicited, which also makes it unusable) while it sat idle.
  bool LooksDead() {
    // Bytes past the last response's end (a 204's or a HEAD's body, say)
    // would be read as the next answer.
    if (!Pending().empty()) return true;
    pollfd p{fd_.get(), POLLIN, 0};
    if (has_tls()) {
      MutexLock l(&ssl_mu_);
      if (tls_->Pending() > 0) return true;  // unsolicited data
      if (::poll(&p, 1, 0) <= 0) return false;
      // TLS 1.3 servers send session tickets after the handshake: records
      // that are not data. Reading consumes them; only data, an end or an
      // error mean the connection cannot be reused.
      char c;
      size_t got = 0;
      return tls_->Read(&c, 1, &got) != TlsSession::Result::kWantRead;
    }
    if (::poll(&p, 1, 0) <= 0) return false;
    char c;
    ssize_t n = ::recv(fd_.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }

  std::string_view Pending() const {
    return std::string_view(buf_).substr(off_);
  }
  void Consume(size_t n) { off_ += n; }
  size_t bytes_received() const { return bytes_received_; }
  int fd() const { return fd_.get(); }

 private:
  void CompactBuffer() {
    if (off_ == 0) return;
    buf_.erase(0, off_);
    off_ = 0;
  }

  bool has_tls() {
    MutexLock l(&ssl_mu_);
    return tls_ != nullptr;
  }

  // One sendmsg of up to the first 8 non-empty pieces, without waiting: how
  // many bytes the kernel took, 0 when the socket is full. Plaintext only.
  StatusOr<size_t> SendOnce(std::span<const std::string_view> pieces) {
    iovec iov[8];
    size_t n = 0;
    for (std::string_view p : pieces) {
      if (p.empty()) continue;
      if (n == std::size(iov)) break;
      iov[n].iov_base = const_cast<char*>(p.data());
      iov[n].iov_len = p.size();
      ++n;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    for (;;) {
      ssize_t rc = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (rc >= 0) return static_cast<size_t>(rc);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
      return ErrnoToStatus(errno, "send");
    }
  }

  // Waits as OpenSSL asked (kWantRead / kWantWrite).
  Status WaitTls(TlsSession::Result r, TimePoint deadline, int cancel_fd,
                 std::string_view what) {
    Status w = WaitFd(fd_.get(), r == TlsSession::Result::kWantWrite,
                      Remaining(clock_, deadline), cancel_fd);
    return w.ok() ? w : w.Annotate(what);
  }

  // The pieces as one buffer, so that they share TLS records.
  static std::string Joined(std::initializer_list<std::string_view> pieces) {
    size_t total = 0;
    for (std::string_view p : pieces) total += p.size();
    std::string data;
    data.reserve(total);
    for (std::string_view p : pieces) data.append(p);
    return data;
  }

  // Writes `data` from *off on without waiting, moving *off past what
  // OpenSSL took, until all of it is written (kOk) or OpenSSL answers
  // anything else, which it returns (after kError, *error says why).
  TlsSession::Result WriteTlsFrom(std::string_view data, size_t* off,
                                  Status* error) {
    MutexLock l(&ssl_mu_);
    while (*off < data.size()) {
      size_t n = 0;
      const TlsSession::Result r =
          tls_->Write(data.data() + *off, data.size() - *off, &n);
      if (r == TlsSession::Result::kError) *error = tls_->error();
      if (r != TlsSession::Result::kOk) return r;
      *off += n;
    }
    return TlsSession::Result::kOk;
  }

  Status WriteAllTls(std::initializer_list<std::string_view> pieces,
                     TimePoint deadline, int cancel_fd) {
    const std::string data = Joined(pieces);
    size_t off = 0;
    for (;;) {
      Status error;
      const TlsSession::Result r = WriteTlsFrom(data, &off, &error);
      if (r == TlsSession::Result::kOk) return Status::Ok();
      if (r == TlsSession::Result::kError) return error;
      if (r == TlsSession::Result::kClosed) {
        return UnavailableError("connection closed while writing request");
      }
      RETURN_IF_ERROR(WaitTls(r, deadline, cancel_fd, "writing request"));
    }
  }

  TryWriteResult TryWriteTls(std::initializer_list<std::string_view> pieces) {
    const std::string data = Joined(pieces);
    TryWriteResult out;
    Status error;  // left for the next write to meet
    // Anything but kOk leaves the rest owed, even with nothing taken:
    // want-write (or -read) means OpenSSL encrypted the rest's first record
    // before the socket refused it; after an error the record may be left
    // in the session, which is not always marked failed (a transient errno
    // on a unix socket). The next write retries it or meets the error.
    out.owed =
        WriteTlsFrom(data, &out.taken, &error) != TlsSession::Result::kOk;
    return out;
  }

  StatusOr<bool> FillTls(TimePoint deadline, int cancel_fd) {
    for (;;) {
      // OpenSSL may hold decrypted bytes the socket no longer shows, so
      // read first and wait only when it asks.
      CompactBuffer();
      size_t old = buf_.size();
      buf_.resize(old + kReadChunk);
      TlsSession::Result r;
      size_t n = 0;
      Status error;
      {
        MutexLock l(&ssl_mu_);
        r = tls_->Read(buf_.data() + old, kReadChunk, &n);
        if (r == TlsSession::Result::kError) error = tls_->error();
      }
      buf_.resize(old + n);
      if (r == TlsSession::Result::kOk) {
        bytes_received_ += n;
        return true;
      }
      if (r == TlsSession::Result::kClosed) return false;
      if (r == TlsSession::Result::kError) return error;
      RETURN_IF_ERROR(WaitTls(r, deadline, cancel_fd, "reading response"));
    }
  }

  ScopedFd fd_;
  Clock* clock_;
  std::string buf_;
  size_t off_ = 0;
  size_t bytes_received_ = 0;
  Mutex ssl_mu_;
  std::unique_ptr<TlsSession> tls_ GUARDED_BY(ssl_mu_);
};

namespace {

// Reads a response head, skipping interim 1xx responses.
StatusOr<HttpResponse> ReadResponseHead(ClientConnection* conn,
                                        TimePoint deadline, int cancel_fd) {
  ParseLimits limits;
  limits.max_header_bytes = 1024 * 1024;
  limits.max_header_count = 1000;
  size_t scan = 0;
  for (;;) {
    HttpResponse resp;
    HeadResult r = ParseResponseHead(conn->Pending(), &scan, limits, &resp);
    if (r.kind == HeadResult::kError) {
      return InvalidArgumentError("malformed response: " + r.error);
    }
    if (r.kind == HeadResult::kComplete) {
      conn->Consume(r.head_length);
      scan = 0;
      if (resp.status >= 100 && resp.status < 200 && resp.status != 101) {
        continue;  // 100 Continue and friends
      }
      return resp;
    }
    ASSIGN_OR_RETURN(bool more, conn->Fill(deadline, cancel_fd));
    if (!more) {
      return UnavailableError("connection closed before the response");
    }
  }
}

// Decodes body bytes already buffered in `conn` into *out.
Status DecodeBuffered(ClientConnection* conn, BodyDecoder* decoder,
                      std::string* out) {
  StatusOr<size_t> used = decoder->Decode(conn->Pending(), out);
  if (!used.ok()) return used.status().Annotate("malformed response body");
  conn->Consume(*used);
  return Status::Ok();
}

// Handles EOF while reading a body: fine for close-delimited bodies.
Status BodyEof(BodyDecoder* decoder) {
  decoder->FinishAtEof();
  if (decoder->done()) return Status::Ok();
  return UnavailableError("connection closed in the middle of the body");
}

}  // namespace

// ---------------------------------------------------------------------------
// HttpStream

struct HttpStream::State {
  std::unique_ptr<ClientConnection> conn;
  std::string method;
  HttpClientOptions options;
  Clock* clock;
  CancelToken cancel;

  // The two halves of the connection are used independently: Send and
  // CloseSend under write_mu, the reads under read_mu; never both at once.
  Mutex write_mu;
  bool send_closed GUARDED_BY(write_mu) = false;
  // The tail of a chunk TrySend started and the connection did not take
  // (over TLS: perhaps all of it, already begun as a record): it goes out
  // before anything else.
  std::string unsent GUARDED_BY(write_mu);
  // A write failed: what reached the peer is unknown, so nothing more may
  // follow (a chunk may be cut off).
  bool write_failed GUARDED_BY(write_mu) = false;

  Mutex read_mu;
  bool head_read GUARDED_BY(read_mu) = false;
  BodyDecoder decoder GUARDED_BY(read_mu);
};

HttpStream::HttpStream(std::unique_ptr<ClientConnection> conn,
                       std::string method, HttpClientOptions options)
    : state_(std::make_unique<State>()) {
  state_->conn = std::move(conn);
  state_->method = std::move(method);
  state_->clock = options.clock ? options.clock : Clock::Real();
  state_->options = std::move(options);
}

HttpStream::~HttpStream() = default;

void HttpStream::Cancel() { state_->cancel.Cancel(); }

Status HttpStream::Send(std::string_view data) {
  State& s = *state_;
  MutexLock l(&s.write_mu);
  if (s.cancel.IsCancelled()) return CancelledError("stream cancelled");
  if (s.send_closed)
    return FailedPreconditionError("request body already ended");
  if (s.write_failed)
    return UnavailableError("stream broken by a failed write");
  const TimePoint deadline = DeadlineAfter(s.clock, s.options.write_timeout);
  std::string header = data.empty() ? "" : ChunkHeader(data.size());
  Status st =
      s.conn->WriteAll({s.unsent, header, data, data.empty() ? "" : "\r\n"},
                       deadline, s.cancel.fd());
  if (!st.ok()) {
    s.write_failed = true;
    return st;
  }
  s.unsent.clear();
  return Status::Ok();
}

HttpStream::TrySendResult HttpStream::TrySend(std::string_view data) {
  State& s = *state_;
  // Never waits for the lock either: a thread inside Send holds it.
  if (data.empty() || !s.write_mu.TryLock()) return TrySendResult::kNotSent;
  TrySendResult result = TrySendResult::kNotSent;
  if (!s.cancel.IsCancelled() && !s.send_closed && !s.write_failed &&
      s.unsent.empty()) {
    const std::string header = ChunkHeader(data.size());
    constexpr std::string_view kEnd = "\r\n";
    StatusOr<ClientConnection::TryWriteResult> took =
        s.conn->TryWrite({header, data, kEnd});
    // An error is left for the next Send to meet and report.
    if (took.ok() && !took->owed &&
        took->taken == header.size() + data.size() + kEnd.size()) {
      result = TrySendResult::kSent;
    } else if (took.ok() && took->owed) {
      // Keep what the connection did not take, in order.
      size_t skip = took->taken;
      for (std::string_view piece : {std::string_view(header), data, kEnd}) {
        const size_t cut = std::min(skip, piece.size());
        s.unsent.append(piece.substr(cut));
        skip -= cut;
      }
      result = TrySendResult::kPartial;
    }
  }
  s.write_mu.Unlock();
  return result;
}

Status HttpStream::CloseSend() {
  State& s = *state_;
  MutexLock l(&s.write_mu);
  if (s.cancel.IsCancelled()) return CancelledError("stream cancelled");
  if (s.send_closed) return Status::Ok();
  if (s.write_failed)
    return UnavailableError("stream broken by a failed write");
  s.send_closed = true;
  // The end of a chunk TrySend started goes first.
  Status st = s.conn->WriteAll({s.unsent, kLastChunk},
                               DeadlineAfter(s.clock, s.options.write_timeout),
                               s.cancel.fd());
  if (!st.ok()) s.write_failed = true;
  s.unsent.clear();
  return st;
}

StatusOr<HttpResponse> HttpStream::ReadHead(Duration timeout) {
  State& s = *state_;
  MutexLock l(&s.read_mu);
  if (s.head_read) return FailedPreconditionError("head already read");
  if (s.cancel.IsCancelled()) return CancelledError("stream cancelled");
  ASSIGN_OR_RETURN(
      HttpResponse resp,
      ReadResponseHead(s.conn.get(), DeadlineAfter(s.clock, timeout),
                       s.cancel.fd()));
  ASSIGN_OR_RETURN(BodyFraming framing, ResponseBodyFraming(s.method, resp));
  s.decoder.Reset(framing);
  s.head_read = true;
  return resp;
}

StatusOr<bool> HttpStream::Read(std::string* out, Duration timeout) {
  State& s = *state_;
  bool need_head;
  {
    MutexLock l(&s.read_mu);
    need_head = !s.head_read;
  }
  if (need_head) {
    StatusOr<HttpResponse> head = ReadHead(timeout);
    if (!head.ok()) return head.status();
  }
  MutexLock l(&s.read_mu);
  TimePoint deadline = DeadlineAfter(s.clock, timeout);
  for (;;) {
    if (s.cancel.IsCancelled()) return CancelledError("stream cancelled");
    size_t before = out->size();
    RETURN_IF_ERROR(DecodeBuffered(s.conn.get(), &s.decoder, out));
    if (out->size() > before) return true;
    if (s.decoder.done()) return false;
    ASSIGN_OR_RETURN(bool more, s.conn->Fill(deadline, s.cancel.fd()));
    if (!more) {
      RETURN_IF_ERROR(BodyEof(&s.decoder));
      return false;
    }
  }
}

// ---------------------------------------------------------------------------
// HttpClient

HttpClient::HttpClient(std::string host, uint16_t port,
                       HttpClientOptions options)
    : host_(std::move(host)),
      port_(port),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()) {}

HttpClient::~HttpClient() = default;

StatusOr<std::unique_ptr<HttpClient>> HttpClient::ForUrl(
    std::string_view url, HttpClientOptions options) {
  const bool unixs = url.starts_with("unixs://");
  if (unixs || url.starts_with("unix://")) {
    const std::string path(url.substr(unixs ? 8 : 7));
    if (path.empty()) {
      return InvalidArgumentError("unix socket URL without a path: " +
                                  std::string(url));
    }
    if (unixs != (options.tls != nullptr)) {
      return InvalidArgumentError(
          unixs ? "a unixs URL needs HttpClientOptions::tls"
                : "a unix URL with HttpClientOptions::tls set (use unixs://)");
    }
    // etcd's transport turns unix(s)://host:port into http(s)://host:port
    // dialed over the socket "host:port": Go names the server "host".
    const size_t colon = path.rfind(':');
    std::string host = path.find('/') == std::string::npos &&
                               colon != std::string::npos && colon > 0
                           ? path.substr(0, colon)
                           : "localhost";
    options.unix_socket_path = path;
    return std::make_unique<HttpClient>(std::move(host), 80,
                                        std::move(options));
  }
  ASSIGN_OR_RETURN(Url u, ParseUrl(url, UrlSchemes::kHttpOrHttps));
  if ((u.scheme == "https") != (options.tls != nullptr)) {
    return InvalidArgumentError(
        u.scheme == "https"
            ? "an https URL needs HttpClientOptions::tls"
            : "an http URL with HttpClientOptions::tls set (use https://)");
  }
  return std::make_unique<HttpClient>(u.host, u.port, std::move(options));
}

void HttpClient::CloseConnection() {
  MutexLock l(&mu_);
  conn_.reset();
}

StatusOr<HttpResponse> HttpClient::Request(std::string_view method,
                                           std::string_view target,
                                           const HttpHeaders& headers,
                                           std::string_view body,
                                           TimePoint deadline) {
  return Exchange(method, target, headers, body, nullptr, nullptr, deadline);
}

StatusOr<HttpResponse> HttpClient::Stream(
    std::string_view method, std::string_view target,
    const HttpHeaders& headers, std::string_view body,
    const std::function<bool(std::string_view)>& on_data,
    const CancelToken* cancel) {
  return Exchange(method, target, headers, body, &on_data, cancel,
                  TimePoint::max());
}

StatusOr<HttpResponse> HttpClient::Exchange(
    std::string_view method, std::string_view target,
    const HttpHeaders& headers, std::string_view body,
    const std::function<bool(std::string_view)>* on_data,
    const CancelToken* cancel, TimePoint deadline) {
  MutexLock l(&mu_);
  const int cancel_fd = cancel ? cancel->fd() : -1;
  const bool has_body =
      !body.empty() || method == "POST" || method == "PUT" || method == "PATCH";
  const std::string head = SerializeHead(
      method, target, HostHeader(host_, port_), options_.default_headers,
      headers, has_body ? BodyMode::kLength : BodyMode::kNone, body.size());

  for (int attempt = 0;; ++attempt) {
    if (cancel && cancel->IsCancelled()) return CancelledError("cancelled");
    if (conn_ && conn_->LooksDead()) conn_.reset();
    const bool reused = conn_ != nullptr;
    if (!conn_) {
      ASSIGN_OR_RETURN(conn_, ClientConnection::Connect(host_, port_, options_,
                                                        clock_, deadline));
    }
    ClientConnection* c = conn_.get();
    const size_t received_before = c->bytes_received();

    // The whole exchange; `keep` says whether the connection stays usable.
    bool keep = false;
    auto run = [&]() -> StatusOr<HttpResponse> {
      RETURN_IF_ERROR(c->WriteAll(
          {head, body},
          std::min(DeadlineAfter(clock_, options_.write_timeout), deadline),
          cancel_fd));
      const TimePoint read_deadline =
          std::min(DeadlineAfter(clock_, options_.read_timeout), deadline);
      ASSIGN_OR_RETURN(HttpResponse resp,
                       ReadResponseHead(c, read_deadline, cancel_fd));
      ASSIGN_OR_RETURN(BodyFraming framing, ResponseBodyFraming(method, resp));
      BodyDecoder decoder(framing);
      if (on_data == nullptr) {
        for (;;) {
          RETURN_IF_ERROR(DecodeBuffered(c, &decoder, &resp.body));
          if (resp.body.size() > options_.max_response_body_bytes) {
            return Status(StatusCode::kTooLarge, "response body too large");
          }
          if (decoder.done()) break;
          ASSIGN_OR_RETURN(bool more, c->Fill(read_deadline, cancel_fd));
          if (!more) {
            RETURN_IF_ERROR(BodyEof(&decoder));
            break;
          }
        }
      } else {
        std::string piece;
        for (;;) {
          piece.clear();
          RETURN_IF_ERROR(DecodeBuffered(c, &decoder, &piece));
          if (!piece.empty() && !(*on_data)(piece)) return resp;  // keep=false
          if (decoder.done()) break;
          ASSIGN_OR_RETURN(
              bool more,
              c->Fill(DeadlineAfter(clock_, options_.stream_idle_timeout),
                      cancel_fd));
          if (!more) {
            RETURN_IF_ERROR(BodyEof(&decoder));
            break;
          }
        }
      }
      keep = ResponseKeepsConnection(resp, framing);
      return resp;
    };
    StatusOr<HttpResponse> result = run();
    if (result.ok()) {
      if (!keep) conn_.reset();
      return result;
    }
    const bool nothing_received = c->bytes_received() == received_before;
    conn_.reset();
    if (reused && nothing_received && attempt == 0 && IsIdempotent(method) &&
        result.status().code() == StatusCode::kUnavailable) {
      continue;  // the server dropped our idle connection; try a fresh one
    }
    return result.status();
  }
}

StatusOr<std::unique_ptr<HttpStream>> HttpClient::OpenStream(
    std::string_view method, std::string_view target,
    const HttpHeaders& headers) {
  ASSIGN_OR_RETURN(std::unique_ptr<ClientConnection> conn,
                   ClientConnection::Connect(host_, port_, options_, clock_));
  std::string head =
      SerializeHead(method, target, HostHeader(host_, port_),
                    options_.default_headers, headers, BodyMode::kChunked, 0);
  RETURN_IF_ERROR(conn->WriteAll(
      {head}, DeadlineAfter(clock_, options_.write_timeout), -1));
  return std::unique_ptr<HttpStream>(
      new HttpStream(std::move(conn), std::string(method), options_));
}

}  // namespace kplane::net
