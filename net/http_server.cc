// HttpServer internals. Read net/README.md ("Server design") first.
//
// Threads and ownership:
//   IoLoop       one thread each; owns an epoll set and its Connections
//                (fd -> shared_ptr). Only the loop reads from, shuts down or
//                closes a connection's fd.
//   Connection   one TCP connection. Loop-only fields (input buffer,
//                parser state) are touched by its loop thread alone; the
//                fields under `mu_` (output buffer, the active Exchange,
//                flags) are shared with whichever thread responds.
//   Exchange     one request/response; the Responder handed to handlers.
//                Its state is guarded by its connection's `mu_` (one lock
//                per connection keeps the reasoning simple; there is only
//                one exchange at a time per connection).
//   timer thread wakes every timer_tick on the injected Clock and asks each
//                loop to sweep its connections for timeouts.
//
// Output: any thread appends under `mu_`. When the buffer is empty the
// bytes are sent straight away from the calling thread (a non-blocking
// sendmsg), so a small response costs no loop wake-up; what the kernel does
// not take stays in the buffer and EPOLLOUT makes the loop drain it.
//
// User callbacks (handlers, OnBodyData, OnClose) never run under `mu_`;
// they go through the connection's SerialExecutor on the worker pool.
//
// TLS (opts.tls): a connection's TlsSession is guarded by `mu_` like the
// output buffer, because a responder on any thread encrypts and sends
// while the loop decrypts; OpenSSL allows one caller per SSL at a time.
// Until the handshake is done the loop only drives it (OnEvents ->
// ContinueHandshake). Output is always copied into `out_` first and
// encrypted from there (one record for head + body instead of one per
// piece). Reads take whole records (a 16 KiB plaintext maximum, and at
// least that much room per SSL_read), so nothing decrypted waits inside
// OpenSSL where epoll cannot see it.
#include "net/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <thread>
#include <unordered_map>

#include "base/log_throttle.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "net/http_parser.h"
#include "net/http_upgrade.h"
#include "net/router.h"
#include "net/socket.h"
#include "net/worker_pool.h"

namespace kplane::net {

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Output buffers above this are released once drained, so a burst does not
// pin memory on an idle stream.
constexpr size_t kKeepOutputCapacity = 16 * 1024;

// Drops what was sent from the front of an output buffer (`*off` bytes of
// `*buf`): all of it once nothing waits (its memory too, past
// kKeepOutputCapacity); else the sent part once it is 64 KiB or more and
// no shorter than what waits (the move then costs no more than the sends
// it follows). Without this a buffer grew by every byte sent while it
// never emptied (a list streamed to a slower client; every TLS write that
// went out whole, which never waits for EPOLLOUT).
void DropSent(std::string* buf, size_t* off) {
  const size_t pending = buf->size() - *off;
  if (pending == 0) {
    buf->clear();
    *off = 0;
    if (buf->capacity() > kKeepOutputCapacity) std::string().swap(*buf);
  } else if (*off >= 64 * 1024 && *off >= pending) {
    buf->erase(0, *off);
    *off = 0;
  }
}
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// The next pipelined request is parsed only once the responses queued
// before it are down to this many bytes, so a client that pipelines
// requests and never reads makes us hold one response, not one per request.
constexpr size_t kPipelineOutputBytes = 64 * 1024;
// Sent to a connection accepted over HttpServerOptions::max_connections.
// The largest TLS record's plaintext (RFC 8446 5.1): an SSL_read with this
// much room takes a whole record.
constexpr size_t kMaxTlsRecord = 16 * 1024;
// At most one failed-handshake log line per this much time.
constexpr Duration kTlsLogInterval = seconds(10);
// TLS + handoff: each direction of a pumped connection buffers at most
// about this much (plus one read) before it stops reading its source.
constexpr size_t kPumpBufferBytes = 256 * 1024;
// Reads per direction per event, so one busy pump does not starve the
// loop's other connections (epoll is level-triggered: the rest waits).
constexpr int kPumpReadsPerEvent = 4;
constexpr std::string_view kTooManyConnections =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    "Content-Length: 21\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    "too many connections\n";

class IoLoop;
class Connection;
class Exchange;

// What an epoll event's data.ptr names on an I/O loop (besides the
// listener and the wake-up fd): a connection's socket, or the loop's end
// of a pumped connection's socket pair.
class EpollTarget {
 public:
  virtual void OnEvents(uint32_t events) = 0;

 protected:
  ~EpollTarget() = default;
};

// Work collected under a connection's lock and done after releasing it
// (user callbacks, loop tasks), so no callback ever runs under `mu_`.
struct Deferred {
  std::vector<std::function<void()>> serial;  // to the SerialExecutor
  // Run on the calling thread once the lock is released, before `serial`
  // is posted (body delivery of run_on_io_thread routes).
  std::vector<std::function<void()>> inline_calls;
  bool close_now = false;       // ask the loop to close the connection
  bool shutdown_write = false;  // ask the loop to finish and linger
  bool resume_input = false;    // ask the loop to parse buffered input
  // Objects (user callbacks) to destroy after the lock is released: their
  // captures may run arbitrary destructors.
  std::vector<std::shared_ptr<void>> release;
};

bool KeepAliveRequested(const HttpRequest& req) {
  if (req.version_minor >= 1) {
    return !req.headers.HasToken("Connection", "close");
  }
  return req.headers.HasToken("Connection", "keep-alive");
}

bool StatusHasBody(int status) {
  return !(status < 200 || status == 204 || status == 304);
}

// A field that may be written to the wire: a non-empty name without
// separators or controls, a value without CR, LF or NUL (RFC 9110 5.5).
// Anything else could end the field early and inject another one.
bool SafeField(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f || c == ':') return false;
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) ==
         std::string_view::npos;
}

// `s` for a log line: at most 64 bytes, controls shown as '?'.
std::string Printable(std::string_view s) {
  std::string out(s.substr(0, 64));
  for (char& ch : out) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) ch = '?';
  }
  return out;
}

// Framing of a response body, for BuildHead.
enum class Framing { kLength, kChunked, kCloseDelimited };

std::string BuildHead(int status, const HttpHeaders& headers, Framing framing,
                      size_t length, bool keep_alive, int request_minor) {
  std::string out;
  out.reserve(128 + headers.size() * 48);
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += StatusReason(status);
  out += "\r\n";
  for (const auto& [name, value] : headers) {
    // The server owns the framing and connection management fields.
    if (EqualsIgnoreCase(name, "Content-Length") ||
        EqualsIgnoreCase(name, "Transfer-Encoding") ||
        EqualsIgnoreCase(name, "Connection")) {
      continue;
    }
    if (!SafeField(name, value)) {
      // Dropped rather than answered with a 500: the request may already
      // have taken effect (a create whose Warning carried a user's field
      // name), and the client must learn that; the field is a caller's bug.
      LOG(ERROR) << "HTTP response field dropped: name or value has CR, LF, "
                    "NUL or a separator (name: \""
                 << Printable(name) << "\")";
      continue;
    }
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (StatusHasBody(status)) {
    switch (framing) {
      case Framing::kLength:
        out += "Content-Length: ";
        out += std::to_string(length);
        out += "\r\n";
        break;
      case Framing::kChunked:
        out += "Transfer-Encoding: chunked\r\n";
        break;
      case Framing::kCloseDelimited:
        break;
    }
  }
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (request_minor == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions o);
  ~Impl();

  Status Start(uint16_t* port);
  void Stop();

  void CountRequest(int status);
  // Counts a failed TLS handshake under `reason` and logs it, at most once
  // per kTlsLogInterval (the lines left out are counted in the next one).
  void TlsHandshakeFailed(std::string_view reason, const std::string& remote,
                          std::string_view detail);

  HttpServerOptions opts;
  Clock* clock;
  ParseLimits limits;
  Router router;
  Route not_found_route;
  Route method_not_allowed_route;
  std::shared_ptr<WorkerPool> pool;
  std::vector<std::unique_ptr<IoLoop>> loops;
  // Accepted sockets not yet closed, including those still being handed to
  // another loop: the connection cap counts these (checked and raised on
  // the single accepting thread, so the cap holds across loops).
  std::atomic<size_t> reserved_connections{0};
  // Adopted connections (registered, header timer started) not yet closed:
  // what NumConnections() reports. Raised only once the connection's
  // deadlines count from a clock reading, so a caller that sees it may move
  // a fake clock and rely on the timers seeing the move.
  std::atomic<size_t> num_connections{0};
  // Sockets given to opts.handoff whose descriptors are still open: each
  // keeps its reservation (see IoLoop::handed_off_).
  std::atomic<size_t> num_handed_off{0};
  std::atomic<bool> stopping{false};

  metrics::Counter* accepted_metric = nullptr;
  metrics::Gauge* open_metric = nullptr;
  metrics::Counter* rejected_metric = nullptr;
  metrics::Gauge* handed_off_metric = nullptr;
  metrics::Counter* bodies_paused_metric = nullptr;
  metrics::Family<metrics::Counter>* requests_family = nullptr;
  std::array<std::atomic<metrics::Counter*>, 600> requests_by_code{};
  metrics::Family<metrics::Counter>* tls_failures_family = nullptr;
  LogThrottle tls_log{kTlsLogInterval};

 private:
  void TimerLoop();

  bool started_ = false;
  bool stopped_ = false;
  std::thread timer_;
  Mutex timer_mu_;
  std::condition_variable timer_cv_;
  bool timer_stop_ GUARDED_BY(timer_mu_) = false;
};

namespace {

// ---------------------------------------------------------------------------
// IoLoop

// An accepted socket on its way to another loop. It holds one of the
// server's connection reservations until Adopt() takes the descriptor; if
// it is destroyed still holding it (the loop stopped first), the socket
// closes and the reservation is given back.
struct PendingSocket {
  PendingSocket(HttpServer::Impl* s, int f) : srv(s), fd(f) {}
  PendingSocket(const PendingSocket&) = delete;
  PendingSocket& operator=(const PendingSocket&) = delete;
  ~PendingSocket() {
    if (fd.valid()) srv->reserved_connections.fetch_sub(1);
  }

  HttpServer::Impl* srv;
  ScopedFd fd;
};

class IoLoop {
 public:
  IoLoop(HttpServer::Impl* server, int index)
      : server_(server), index_(index) {}
  ~IoLoop();

  Status Init();
  void SetListener(ScopedFd fd) { listener_ = std::move(fd); }
  void StartThread();
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  // Runs `task` on the loop thread (after the current event batch).
  void Post(std::function<void()> task) EXCLUDES(task_mu_);

  void Adopt(ScopedFd fd);
  void Remove(Connection* conn);
  // `fd`, about to be given to opts.handoff, keeps its connection
  // reservation until it is closed (loop thread).
  void TrackHandedOff(int fd);
  // Stops accepting: closes the listener (loop thread).
  void CloseListener();
  // Closes every connection and ends the loop (loop thread).
  void StopAll();
  void Sweep();

  int epoll_fd() const { return epoll_fd_; }
  HttpServer::Impl* server() const { return server_; }
  char* scratch() { return scratch_.data(); }

 private:
  void Run();
  void RunTasks();
  void Accept();
  void RejectConnection(int fd);

  HttpServer::Impl* server_;
  int index_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  ScopedFd listener_;
  bool listener_paused_ = false;
  bool running_ = true;
  std::thread thread_;
  std::vector<char> scratch_ = std::vector<char>(kReadChunk);

  // A leaf: tasks run after it is released.
  Mutex task_mu_;
  std::vector<std::function<void()>> tasks_ GUARDED_BY(task_mu_);
  bool wake_pending_ GUARDED_BY(task_mu_) = false;

  std::unordered_map<Connection*, std::shared_ptr<Connection>> conns_;
  // Closed connections live until the end of the event batch, because a
  // later event of the same batch may still point at them.
  std::vector<std::shared_ptr<Connection>> graveyard_;
  size_t next_loop_ = 0;

  // Sockets handed to opts.handoff that still hold a reservation. The other
  // server tells us nothing when it closes one (gRPC has no such hook), so
  // we check that the descriptor still names the same socket (device and
  // inode: a reused number names a new file); once it does not, the socket
  // is closed and its reservation is given back. This keeps the cap honest
  // for connections held elsewhere. Each Sweep checks at most
  // kHandedOffChecksPerTick of them, round robin (an fstat is ~1 µs here:
  // 10,000 gRPC connections checked every tick would cost 2 % of a core),
  // so a slot comes back within ceil(N / 256) ticks; and an accept that
  // finds the cap full checks them all first, at most once per tick, so a
  // closed one never costs a client its place.
  struct HandedOff {
    int fd;
    dev_t dev;
    ino_t ino;
  };
  static constexpr size_t kHandedOffChecksPerTick = 256;
  std::vector<HandedOff> handed_off_;
  size_t handed_off_cursor_ = 0;
  bool handed_off_checked_at_cap_ = false;  // this tick
  void ReleaseHandedOff(size_t n);
  // Checks up to `limit` entries from the cursor; releases the closed ones.
  void CheckHandedOff(size_t limit);
};

// ---------------------------------------------------------------------------
// Connection

class Connection final : public EpollTarget,
                         public std::enable_shared_from_this<Connection> {
 public:
  Connection(IoLoop* loop, ScopedFd fd, std::string remote,
             std::unique_ptr<TlsSession> tls);
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  // --- loop thread ---
  void Register();
  void OnEvents(uint32_t events) override;
  void ProcessInput();
  void CloseNow();
  void StartLinger();
  void Sweep(TimePoint now);
  void ResumeInput();
  // net/http_upgrade.h: after the 101 of the active exchange, pumps the
  // connection (TLS or not) to a socket pair given to `on_upgraded`.
  void StartUpgradePump(std::function<void(int fd)> on_upgraded);

  // --- any thread, with mu_ held ---
  // Queues (and if possible sends) `pieces`. Returns false if the
  // connection no longer accepts output. `cap` is the buffer cap (0 none).
  bool SendLocked(std::initializer_list<std::string_view> pieces, size_t cap,
                  Deferred* d) REQUIRES(mu_);
  // The connection is broken or abandoned: refuse output, let the loop
  // close it.
  void BreakLocked(Deferred* d) REQUIRES(mu_);
  // Finish after the queued output: no more output, then shut down.
  void CloseAfterFlushLocked(Deferred* d) REQUIRES(mu_);
  // If `ex` is active and both halves are done, retire it; the connection
  // counts as idle from `now`.
  void MaybeCompleteLocked(Exchange* ex, Deferred* d, TimePoint now)
      REQUIRES(mu_);
  void UpdateEventsLocked() REQUIRES(mu_);
  size_t PendingLocked() const REQUIRES(mu_) { return out_.size() - out_off_; }

  // Runs deferred work; call without mu_.
  void Run(Deferred* d) EXCLUDES(mu_);

  Mutex& mu() RETURN_CAPABILITY(mu_) { return mu_; }
  bool closed_locked() const REQUIRES(mu_) { return closed_; }
  bool close_after_flush_locked() const REQUIRES(mu_) {
    return close_after_flush_;
  }
  IoLoop* loop() const { return loop_; }
  HttpServer::Impl* server() const { return loop_->server(); }
  const std::shared_ptr<SerialExecutor>& serial() const { return serial_; }

  // Read-pause reasons (bits of pause_).
  static constexpr int kPauseBody = 1;        // OnBodyData consumer is behind
  static constexpr int kPausePipeline = 2;    // too much pipelined input
  static constexpr int kPauseSniff = 4;       // a partial handoff preface
  static constexpr int kPausePump = 8;        // the pump's buffer to the pair
                                              // is full
  static constexpr int kPauseClientEof = 16;  // the client's stream ended
                                              // (pump): no more EPOLLRDHUP

  bool PausedLocked(int reason) const REQUIRES(mu_) {
    return (pause_ & reason) != 0;
  }
  void SetPauseLocked(int reason, bool on) REQUIRES(mu_) {
    int before = pause_;
    pause_ = on ? (pause_ | reason) : (pause_ & ~reason);
    if (pause_ != before) UpdateEventsLocked();
  }

 private:
  enum class ReadState { kHead, kBody };

  void HandleReadable();
  // TLS: one step of the server handshake (loop thread).
  void ContinueHandshake();
  // TLS: decrypts into `buf` (kReadChunk bytes); returns as recv(2).
  ssize_t ReadTls(char* buf);
  // TLS: encrypts and sends buffered output until the socket is full.
  // Returns false when the connection broke.
  bool FlushTlsLocked() REQUIRES(mu_);
  // HttpServerOptions::handoff: peeks at the first bytes; returns true if
  // the caller must not read (handed off, closed, or waiting for more).
  bool SniffHandoff();
  // TLS + handoff: looks at the first decrypted bytes (in_); returns true
  // if the caller must not parse them as HTTP (pumping, closed, or
  // waiting for the rest of the preface).
  bool SniffTlsHandoff();
  // TLS + handoff: hands the decrypted stream to opts.handoff through a
  // socket pair and starts pumping between it and the TLS session.
  void StartPump();
  // Pump: makes the socket pair and starts pumping; returns the other end
  // (-1 after closing the connection if the pair cannot be made).
  int OpenPump(const char* why);
  // Pump, client to handoff: decrypts what the client sent into to_pair_.
  void PumpFromClient();
  // Pump: writes to_pair_ to the pair; pauses or resumes the TLS side.
  void FlushToPair();
  // Pump, handoff to client: encrypts what the other server wrote.
  void PumpFromPair();
  // Pump: events on our end of the socket pair.
  void OnPairEvents(uint32_t events);
  void UpdatePairEvents();
  // Pump: closes our end of the pair (the other server sees EOF).
  void ClosePair();
  // Pump: the other server closed its end (EOF, or a reset when it left
  // bytes unread): send what it wrote, then close_notify, then close.
  void PairClosed();
  void HandleWritable();
  bool ParseOneHead();
  bool ReadBody();
  void Dispatch(const std::shared_ptr<Exchange>& ex, const Route* route);
  // Answers `status` (if no response has started) and closes.
  void Fail(int status, std::string_view message);

  IoLoop* const loop_;
  const std::string remote_;
  std::shared_ptr<SerialExecutor> serial_;

  // Loop-thread state.
  std::string in_;
  size_t in_off_ = 0;
  size_t head_scan_ = 0;
  ReadState read_state_ = ReadState::kHead;
  BodyDecoder body_decoder_;
  std::shared_ptr<Exchange> body_exchange_;  // whose body is being read
  const Route* body_route_ = nullptr;
  bool body_streaming_ = false;
  bool fd_closed_ = false;
  bool lingering_ = false;
  TimePoint linger_deadline_;
  TimePoint head_started_;  // first byte of the pending head (or accept)
  bool first_head_ = true;  // no head parsed yet on this connection
  bool sniffed_ = false;    // the handoff preface check is done
  // While read_state_ is kBody: the body must be read by body_deadline_
  // (if has_body_deadline_), else 408.
  bool has_body_deadline_ = false;
  TimePoint body_deadline_;
  // TLS: set once at construction; the handshake state is loop-only.
  const bool use_tls_;
  bool tls_ready_ = false;  // the handshake is done
  // ReadTls returned data that came with the stream's end or an error:
  // the next call reports it.
  enum class TlsReadEnd { kNone, kClosed, kFailed };
  TlsReadEnd tls_read_end_ = TlsReadEnd::kNone;
  TimePoint accepted_at_;
  // What the handshake agreed on; given to every request (HttpRequest::tls).
  std::shared_ptr<const TlsConnectionInfo> tls_info_;

  // TLS + handoff (loop-thread state): the decrypted stream goes to the
  // other server through a socket pair; see StartPump. Output to the client
  // uses out_ like a response.
  struct PairEnd final : EpollTarget {
    explicit PairEnd(Connection* c) : conn(c) {}
    void OnEvents(uint32_t events) override { conn->OnPairEvents(events); }
    Connection* conn;
  };
  PairEnd pair_end_{this};
  bool pumping_ = false;
  ScopedFd pair_;                  // our end; the other went to handoff
  uint32_t pair_events_ = 0;       // registered for pair_
  bool pair_read_paused_ = false;  // out_ is full: not reading pair_
  bool pair_write_shut_ = false;   // the client's EOF was passed on
  bool client_eof_ = false;        // the client ended its stream
  std::string to_pair_;            // decrypted, not yet taken by the pair
  size_t to_pair_off_ = 0;

  // Shared state. mu_ also guards the state of this connection's exchanges.
  // Lock order: mu_ is taken before the metrics' locks (CountRequest) and
  // never held while posting to the loop or the serial executor: work that
  // needs either is collected in a Deferred and run after mu_ is released.
  mutable Mutex mu_;
  // Closed and set to -1 by the loop thread under mu_; the loop thread reads
  // it without mu_, other threads with it.
  int fd_;
  // No more output; loop will close the fd.
  bool closed_ GUARDED_BY(mu_) = false;
  bool close_after_flush_ GUARDED_BY(mu_) = false;  // last response queued
  bool close_posted_ GUARDED_BY(mu_) = false;
  std::string out_ GUARDED_BY(mu_);
  size_t out_off_ GUARDED_BY(mu_) = 0;
  bool want_write_ GUARDED_BY(mu_) = false;
  int pause_ GUARDED_BY(mu_) = 0;
  uint32_t registered_events_ GUARDED_BY(mu_) = 0;
  std::shared_ptr<Exchange> active_ GUARDED_BY(mu_);
  // Input waits for active_ to complete.
  bool loop_waiting_ GUARDED_BY(mu_) = false;
  // Input waits for the output to drain to kPipelineOutputBytes.
  bool output_waiting_ GUARDED_BY(mu_) = false;
  // At least one exchange completed.
  bool served_ GUARDED_BY(mu_) = false;
  TimePoint idle_since_ GUARDED_BY(mu_);
  // TLS: the session (released at close); see the file comment.
  std::unique_ptr<TlsSession> tls_ GUARDED_BY(mu_);
  // An SSL_read needed to write (TLS 1.3 post-handshake messages) and the
  // socket was full: read again once it is writable.
  bool tls_read_wants_write_ GUARDED_BY(mu_) = false;
};

// ---------------------------------------------------------------------------
// Exchange

class Exchange : public Responder,
                 public std::enable_shared_from_this<Exchange> {
 public:
  explicit Exchange(std::shared_ptr<Connection> conn)
      : conn_(std::move(conn)) {}

  const HttpRequest& request() const override { return request_; }
  HttpRequest& mutable_request() { return request_; }

  bool Respond(int status, HttpHeaders headers, std::string body) override;
  bool StartStream(int status, HttpHeaders headers) override;
  bool Write(std::string_view chunk) override;
  bool WriteChunks(std::span<const std::string_view> chunks) override;
  bool Finish() override;
  size_t BufferedBytes() const override;
  void SetMaxBufferedBytes(size_t max_bytes) override;
  void SetResponseDeadline(Duration timeout) override;
  void OnDrained(size_t low_water, std::function<void()> callback) override;
  void OnClose(std::function<void()> callback) override;
  bool IsClosed() const override;
  void OnBodyData(std::function<void(std::string_view, bool)> fn) override;
  void Close() override;
  // net/http_upgrade.h.
  bool Upgrade(const HttpHeaders& headers,
               std::function<void(int fd)> on_upgraded);

  // Tells the analysis that the lock `conn` holds (its mu_) is this
  // exchange's lock: an exchange belongs to the one connection that made it,
  // which the analysis cannot see through `ex->conn_`.
  void AssertHeldBy(const Connection* conn) const
      ASSERT_CAPABILITY(conn_->mu()) {
    DCHECK(conn == conn_.get());
  }

  // --- used by Connection, under conn mu_ unless noted ---
  // `inline_body`: deliver OnBodyData pieces on the thread that queues
  // them (the I/O thread) instead of the worker pool.
  void InitLocked(size_t cap, bool keep_alive, bool inline_body)
      REQUIRES(conn_->mu()) {
    max_buffered_ = cap;
    keep_alive_ = keep_alive;
    inline_body_ = inline_body;
    head_only_ = request_.method == "HEAD";
  }
  bool response_done() const REQUIRES(conn_->mu()) {
    return phase_ == Phase::kDone;
  }
  bool response_started() const REQUIRES(conn_->mu()) {
    return phase_ != Phase::kNew;
  }
  bool body_done() const REQUIRES(conn_->mu()) { return body_done_; }
  // SetResponseDeadline's deadline has passed with the response unfinished.
  bool DeadlinePassedLocked(TimePoint now) const REQUIRES(conn_->mu()) {
    return has_deadline_ && phase_ != Phase::kDone && now >= deadline_;
  }
  void SetBodyDoneLocked() REQUIRES(conn_->mu()) { body_done_ = true; }
  // The exchange is over (response finished or connection closed):
  // schedules OnClose and stops body delivery.
  void EndLocked(Deferred* d) REQUIRES(conn_->mu());
  // The output buffer shrank: schedules an OnDrained callback whose low
  // water mark it reached.
  void DrainedLocked(Deferred* d) REQUIRES(conn_->mu());
  // Abandons the response side (error path): nothing more may be sent.
  void AbandonLocked() REQUIRES(conn_->mu()) { phase_ = Phase::kDone; }
  // After a body callback threw: a 500, or Close() once responding.
  void FailAfterThrow() EXCLUDES(conn_->mu());
  // Queues streamed body bytes for OnBodyData (loop thread).
  void QueueBodyLocked(std::string_view data, bool eof, Deferred* d)
      REQUIRES(conn_->mu());

 private:
  enum class Phase { kNew, kStreaming, kDone };

  void ScheduleDeliveryLocked(Deferred* d) REQUIRES(conn_->mu());
  void DeliverBody();  // on the serial executor
  // The response is complete. `now` is read before the last bytes are
  // sent, so a client that sees the response also sees its bookkeeping.
  void ResponseDoneLocked(Deferred* d, TimePoint now) REQUIRES(conn_->mu());
  // The server's clock; only valid while the connection is open (the
  // server outlives every open connection).
  TimePoint NowLocked() const REQUIRES(conn_->mu()) {
    return conn_->server()->clock->Now();
  }

  const std::shared_ptr<Connection> conn_;
  HttpRequest request_;

  Phase phase_ GUARDED_BY(conn_->mu()) = Phase::kNew;
  bool keep_alive_ GUARDED_BY(conn_->mu()) = true;
  bool head_only_ GUARDED_BY(conn_->mu()) = false;
  bool chunked_ GUARDED_BY(conn_->mu()) = false;
  bool body_done_ GUARDED_BY(conn_->mu()) = false;
  bool ended_ GUARDED_BY(conn_->mu()) = false;
  size_t max_buffered_ GUARDED_BY(conn_->mu()) = 0;
  bool has_deadline_ GUARDED_BY(conn_->mu()) = false;
  TimePoint deadline_ GUARDED_BY(conn_->mu());
  std::function<void()> on_close_ GUARDED_BY(conn_->mu());
  std::function<void()> on_drained_ GUARDED_BY(conn_->mu());
  size_t drain_low_water_ GUARDED_BY(conn_->mu()) = 0;
  std::shared_ptr<std::function<void(std::string_view, bool)>> on_body_
      GUARDED_BY(conn_->mu());
  std::string body_queue_ GUARDED_BY(conn_->mu());
  bool eof_queued_ GUARDED_BY(conn_->mu()) = false;
  bool delivery_scheduled_ GUARDED_BY(conn_->mu()) = false;
  bool body_registered_ GUARDED_BY(conn_->mu()) = false;
  bool inline_body_ GUARDED_BY(conn_->mu()) = false;
};

// ----- Connection implementation -------------------------------------------

Connection::Connection(IoLoop* loop, ScopedFd fd, std::string remote,
                       std::unique_ptr<TlsSession> tls)
    : loop_(loop),
      remote_(std::move(remote)),
      serial_(std::make_shared<SerialExecutor>(loop->server()->pool)),
      use_tls_(tls != nullptr),
      fd_(fd.Release()),
      tls_(std::move(tls)) {
  head_started_ = loop->server()->clock->Now();
  accepted_at_ = head_started_;
  idle_since_ = head_started_;
}

void Connection::Register() {
  MutexLock l(&mu_);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = static_cast<EpollTarget*>(this);
  registered_events_ = ev.events;
  CHECK_EQ(epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_ADD, fd_, &ev), 0)
      << std::strerror(errno);
}

void Connection::UpdateEventsLocked() {
  if (fd_ < 0) return;
  // After a pumped client's EOF its socket stays readable: EPOLLRDHUP
  // would fire forever.
  uint32_t events =
      (pause_ & kPauseClientEof) ? 0u : static_cast<uint32_t>(EPOLLRDHUP);
  if (pause_ == 0) events |= EPOLLIN;
  if (want_write_) events |= EPOLLOUT;
  if (events == registered_events_) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = static_cast<EpollTarget*>(this);
  if (epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_MOD, fd_, &ev) == 0) {
    registered_events_ = events;
  }
}

void Connection::Run(Deferred* d) {
  d->release.clear();
  for (auto& call : d->inline_calls) call();
  d->inline_calls.clear();
  for (auto& task : d->serial) serial_->Post(std::move(task));
  d->serial.clear();
  if (d->close_now || d->shutdown_write || d->resume_input) {
    std::weak_ptr<Connection> weak = weak_from_this();
    bool close_now = d->close_now;
    bool shutdown_write = d->shutdown_write;
    loop_->Post([weak, close_now, shutdown_write] {
      std::shared_ptr<Connection> c = weak.lock();
      if (!c) return;
      if (close_now) {
        c->CloseNow();
      } else if (shutdown_write) {
        c->StartLinger();
      } else {
        c->ResumeInput();
      }
    });
  }
}

bool Connection::SendLocked(std::initializer_list<std::string_view> pieces,
                            size_t cap, Deferred* d) {
  if (closed_ || close_after_flush_) return false;
  if (use_tls_) {
    for (std::string_view p : pieces) out_.append(p);
    // Before the handshake is done nothing is sent (nothing is queued
    // then either: requests are parsed only afterwards).
    if (tls_ && tls_->handshake_done() && !FlushTlsLocked()) {
      BreakLocked(d);
      return false;
    }
    if (cap != 0 && PendingLocked() > cap) {
      BreakLocked(d);
      return false;
    }
    if (PendingLocked() > 0 && !want_write_) {
      want_write_ = true;
      UpdateEventsLocked();
    }
    return true;
  }
  size_t written = 0;
  if (PendingLocked() == 0) {
    iovec iov[8];
    size_t n = 0;
    for (std::string_view p : pieces) {
      if (p.empty()) continue;
      CHECK_LT(n, 8u);
      iov[n].iov_base = const_cast<char*>(p.data());
      iov[n].iov_len = p.size();
      ++n;
    }
    if (n == 0) return true;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t rc = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        BreakLocked(d);
        return false;
      }
    } else {
      written = static_cast<size_t>(rc);
    }
  }
  for (std::string_view p : pieces) {
    if (written >= p.size()) {
      written -= p.size();
      continue;
    }
    out_.append(p.data() + written, p.size() - written);
    written = 0;
  }
  if (cap != 0 && PendingLocked() > cap) {
    BreakLocked(d);
    return false;
  }
  if (PendingLocked() > 0 && !want_write_) {
    want_write_ = true;
    UpdateEventsLocked();
  }
  return true;
}

bool Connection::FlushTlsLocked() {
  while (PendingLocked() > 0) {
    size_t n = 0;
    // OpenSSL's retry rule: after kWantWrite the next call passes at least
    // the same bytes; ours only ever grow at the end (the buffer may move:
    // SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
    TlsSession::Result r =
        tls_->Write(out_.data() + out_off_, PendingLocked(), &n);
    if (r == TlsSession::Result::kOk) {
      out_off_ += n;
      continue;
    }
    if (r == TlsSession::Result::kWantWrite ||
        r == TlsSession::Result::kWantRead) {
      DropSent(&out_, &out_off_);
      return true;
    }
    LOG(DEBUG) << "TLS write to " << remote_ << ": " << tls_->error();
    return false;
  }
  DropSent(&out_, &out_off_);
  return true;
}

void Connection::BreakLocked(Deferred* d) {
  closed_ = true;
  if (!close_posted_) {
    close_posted_ = true;
    d->close_now = true;
  }
}

void Connection::CloseAfterFlushLocked(Deferred* d) {
  if (closed_ || close_after_flush_) return;
  close_after_flush_ = true;
  if (PendingLocked() == 0) d->shutdown_write = true;
  // Otherwise HandleWritable starts the linger once the buffer drains.
}

void Connection::MaybeCompleteLocked(Exchange* ex, Deferred* d, TimePoint now) {
  ex->AssertHeldBy(this);
  if (active_.get() != ex || !ex->response_done() || !ex->body_done()) return;
  // The caller holds a reference to `ex`, so dropping ours here is safe.
  active_.reset();
  served_ = true;
  idle_since_ = now;
  SetPauseLocked(kPauseBody, false);
  if (loop_waiting_) {
    loop_waiting_ = false;
    d->resume_input = true;
  }
}

void Connection::OnEvents(uint32_t events) {
  std::shared_ptr<Connection> self = shared_from_this();
  if (fd_closed_) return;
  if (events & EPOLLERR) {
    CloseNow();
    return;
  }
  if (use_tls_ && !tls_ready_ && !lingering_) {
    ContinueHandshake();
    return;
  }
  if (client_eof_ && (events & EPOLLHUP)) {
    // A pumped client that ended its stream is gone both ways now.
    CloseNow();
    return;
  }
  if (events & EPOLLOUT) {
    HandleWritable();
    if (fd_closed_) return;
    if (use_tls_) {
      bool read_again;
      {
        MutexLock l(&mu_);
        read_again = tls_read_wants_write_;
        tls_read_wants_write_ = false;
      }
      if (read_again) HandleReadable();
      if (fd_closed_) return;
    }
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) HandleReadable();
}

void Connection::ContinueHandshake() {
  HttpServer::Impl* srv = server();
  TlsSession::Result r;
  std::string error;
  bool plain_http = false;
  {
    MutexLock l(&mu_);
    if (closed_ || !tls_) return;
    r = tls_->Handshake();
    want_write_ = r == TlsSession::Result::kWantWrite;
    UpdateEventsLocked();
    if (r == TlsSession::Result::kOk) {
      tls_info_ = std::make_shared<const TlsConnectionInfo>(tls_->Info());
    } else if (r == TlsSession::Result::kError) {
      error = std::string(tls_->error().message());
      plain_http = tls_->peer_sent_http();
    }
  }
  switch (r) {
    case TlsSession::Result::kWantRead:
    case TlsSession::Result::kWantWrite:
      return;
    case TlsSession::Result::kOk:
      if (!tls_info_->alpn.empty() && tls_info_->alpn != "http/1.1" &&
          !(tls_info_->alpn == "h2" && srv->opts.handoff &&
            !srv->opts.handoff_preface.empty())) {
        srv->TlsHandshakeFailed("alpn", remote_,
                                "negotiated \"" + tls_info_->alpn +
                                    "\"; this server speaks http/1.1 only");
        CloseNow();
        return;
      }
      tls_ready_ = true;
      // The first request may already be waiting in the socket.
      HandleReadable();
      return;
    default:
      break;
  }
  if (plain_http) {
    // As Go's net/http: the answer goes out unencrypted, then we close,
    // lingering so that the client reads it rather than a reset.
    srv->TlsHandshakeFailed("plaintext_http", remote_, error);
    ssize_t rc =
        ::send(fd_, kPlainHttpToTlsResponse.data(),
               kPlainHttpToTlsResponse.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)rc;  // best effort, as Go's
  } else {
    srv->TlsHandshakeFailed("error", remote_, error);
  }
  // OpenSSL has queued its alert (unknown CA, certificate required...) on
  // the socket; lingering lets the client read it instead of a reset.
  StartLinger();
}

void Connection::HandleWritable() {
  bool linger = false;
  bool resume = false;
  Deferred d;
  {
    MutexLock l(&mu_);
    if (closed_) return;
    if (use_tls_) {
      if (!tls_ || !FlushTlsLocked()) closed_ = true;
    }
    while (!use_tls_ && PendingLocked() > 0) {
      ssize_t rc = ::send(fd_, out_.data() + out_off_, PendingLocked(),
                          MSG_NOSIGNAL | MSG_DONTWAIT);
      if (rc < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        closed_ = true;
        break;
      }
      out_off_ += static_cast<size_t>(rc);
    }
    if (!closed_) DropSent(&out_, &out_off_);
    if (!closed_ && active_) {
      active_->AssertHeldBy(this);
      active_->DrainedLocked(&d);
    }
    if (!closed_ && PendingLocked() == 0) {
      want_write_ = false;
      UpdateEventsLocked();
      linger = close_after_flush_;
    }
    if (!closed_ && output_waiting_ &&
        PendingLocked() <= kPipelineOutputBytes) {
      output_waiting_ = false;
      resume = true;
    }
  }
  Run(&d);
  bool broken;
  size_t pending;
  {
    MutexLock l(&mu_);
    broken = closed_;
    pending = PendingLocked();
  }
  if (!broken && pair_read_paused_ && pending <= kPumpBufferBytes / 2) {
    // The client took most of what the other server wrote: read more.
    pair_read_paused_ = false;
    UpdatePairEvents();
  }
  if (broken) {
    CloseNow();
  } else if (linger) {
    StartLinger();
  } else if (resume) {
    ResumeInput();
  }
}

bool Connection::SniffHandoff() {
  const HttpServerOptions& o = server()->opts;
  const std::string& preface = o.handoff_preface;
  char buf[64];
  size_t want = std::min(preface.size(), sizeof(buf));
  ssize_t n;
  do {
    n = ::recv(fd_, buf, want, MSG_PEEK);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    sniffed_ = true;
    return false;  // the read reports the error
  }
  size_t got = static_cast<size_t>(n);
  if (got == 0 || std::string_view(buf, got) != preface.substr(0, got)) {
    sniffed_ = true;
    return false;
  }
  if (got < std::min<size_t>(4, want)) {
    // Too few bytes to tell "PRI " from "POST"/"PUT": stop polling (the
    // bytes stay readable) and look again at the next timer tick.
    MutexLock l(&mu_);
    SetPauseLocked(kPauseSniff, true);
    return true;
  }
  sniffed_ = true;
  int fd;
  {
    MutexLock l(&mu_);
    closed_ = true;
    epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_DEL, fd_, nullptr);
    fd = fd_;
    fd_ = -1;
  }
  fd_closed_ = true;
  std::shared_ptr<Connection> self = shared_from_this();
  HttpServer::Impl* srv = server();
  srv->num_connections.fetch_sub(1);
  srv->open_metric->Dec();
  loop_->Remove(this);
  // Its reservation goes with it: the other server's connection still
  // counts against max_connections until it closes the socket.
  loop_->TrackHandedOff(fd);
  o.handoff(fd, nullptr);
  return true;
}

bool Connection::SniffTlsHandoff() {
  const std::string& preface = server()->opts.handoff_preface;
  const bool h2 = tls_info_ && tls_info_->alpn == "h2";
  if (!h2 && tls_info_ && tls_info_->alpn == "http/1.1") {
    sniffed_ = true;  // the client said it speaks HTTP/1.1
    return false;
  }
  std::string_view got(in_.data() + in_off_,
                       std::min(in_.size() - in_off_, preface.size()));
  if (got != std::string_view(preface).substr(0, got.size())) {
    sniffed_ = true;
    if (!h2) return false;  // no ALPN: an HTTP/1.1 client
    LOG(DEBUG) << "TLS connection from " << remote_
               << " negotiated h2 but did not send the HTTP/2 preface";
    CloseNow();
    return true;
  }
  // Wait for the whole preface (the header timeout bounds the wait).
  if (got.size() < preface.size()) return true;
  StartPump();
  return true;
}

// The other server gets a plaintext stream: one end of a socket pair. The
// loop keeps the TLS session and copies decrypted bytes to the pair and the
// pair's bytes, encrypted, to the client, each direction through a bounded
// buffer (to_pair_, out_) whose fill stops reading from its source. Ends
// propagate: the client's EOF (or close_notify) becomes a shutdown of the
// pair's write side; the other server closing its end finishes the output,
// sends close_notify and closes; an error on either side closes both.
void Connection::StartPump() {
  HttpServer::Impl* srv = server();
  sniffed_ = true;
  const int theirs = OpenPump("handoff");
  if (theirs < 0) return;
  srv->opts.handoff(theirs, tls_info_);
  FlushToPair();
  // The read that brought the preface may have seen the end of the stream
  // too, which the socket will not report again.
  if (!fd_closed_ && pair_.valid()) PumpFromClient();
}

int Connection::OpenPump(const char* why) {
  HttpServer::Impl* srv = server();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0) {
    LOG(ERROR) << "socketpair for the " << why << " of " << remote_ << ": "
               << std::strerror(errno);
    CloseNow();
    return -1;
  }
  pair_ = ScopedFd(sv[0]);
  pumping_ = true;
  // What the client sent already goes first.
  to_pair_.assign(in_, in_off_, std::string::npos);
  to_pair_off_ = 0;
  std::string().swap(in_);
  in_off_ = 0;
  UpdatePairEvents();
  srv->num_handed_off.fetch_add(1);
  srv->handed_off_metric->Inc();
  return sv[1];
}

void Connection::StartUpgradePump(std::function<void(int fd)> on_upgraded) {
  std::shared_ptr<Connection> self = shared_from_this();
  if (fd_closed_ || lingering_) {
    on_upgraded(-1);  // the client left before the switch
    return;
  }
  {
    MutexLock l(&mu_);
    // The upgraded exchange was the last one: no request is parsed again.
    active_.reset();
    served_ = true;
    loop_waiting_ = false;
    output_waiting_ = false;
    SetPauseLocked(kPausePipeline | kPauseBody | kPauseSniff, false);
  }
  sniffed_ = true;
  read_state_ = ReadState::kHead;
  body_exchange_.reset();
  // What the client sent after the request (it may not wait for the 101)
  // goes to the pair first.
  const int theirs = OpenPump("upgrade");
  on_upgraded(theirs);
  if (theirs < 0) return;
  FlushToPair();
  if (!fd_closed_ && pair_.valid()) PumpFromClient();
}

void Connection::UpdatePairEvents() {
  if (!pair_.valid()) return;
  uint32_t events = 0;
  if (!pair_read_paused_) events |= EPOLLIN | EPOLLRDHUP;
  if (to_pair_off_ < to_pair_.size()) events |= EPOLLOUT;
  if (events == pair_events_) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = static_cast<EpollTarget*>(&pair_end_);
  const int op = pair_events_ == 0 && events != 0 ? EPOLL_CTL_ADD
                 : events == 0                    ? EPOLL_CTL_DEL
                                                  : EPOLL_CTL_MOD;
  if (epoll_ctl(loop_->epoll_fd(), op, pair_.get(), &ev) == 0) {
    pair_events_ = events;
  } else {
    LOG(ERROR) << "epoll_ctl on the handoff pair of " << remote_ << ": "
               << std::strerror(errno);
  }
}

void Connection::ClosePair() {
  if (!pair_.valid()) return;
  if (pair_events_ != 0) {
    epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_DEL, pair_.get(), nullptr);
  }
  pair_events_ = 0;
  pair_.Reset();
  std::string().swap(to_pair_);
  to_pair_off_ = 0;
  HttpServer::Impl* srv = server();
  srv->num_handed_off.fetch_sub(1);
  srv->handed_off_metric->Dec();
}

void Connection::PairClosed() {
  // What it wrote before closing may still wait in our end (a send to it
  // fails with EPIPE as soon as it has closed): take it all. It is bounded
  // by the socket's buffer.
  Deferred d;
  if (pair_.valid()) {
    char* buf = loop_->scratch();
    for (;;) {
      ssize_t n = ::recv(pair_.get(), buf, kReadChunk, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      MutexLock l(&mu_);
      if (!SendLocked({std::string_view(buf, static_cast<size_t>(n))}, 0, &d)) {
        break;
      }
    }
  }
  ClosePair();
  {
    MutexLock l(&mu_);
    // Finishes in HandleWritable, or at once if nothing is queued
    // (StartLinger sends close_notify).
    CloseAfterFlushLocked(&d);
  }
  Run(&d);
}

void Connection::OnPairEvents(uint32_t events) {
  std::shared_ptr<Connection> self = shared_from_this();
  if (fd_closed_ || !pair_.valid()) return;  // a stale event of this batch
  if (events & EPOLLOUT) {
    FlushToPair();
    if (fd_closed_ || !pair_.valid()) return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) PumpFromPair();
}

void Connection::PumpFromClient() {
  if (client_eof_) return;
  for (int i = 0; i < kPumpReadsPerEvent; ++i) {
    if (to_pair_.size() - to_pair_off_ >= kPumpBufferBytes) return;
    char* buf = loop_->scratch();
    ssize_t n;
    if (use_tls_) {
      n = ReadTls(buf);
    } else {
      do {
        n = ::recv(fd_, buf, kReadChunk, 0);  // an upgraded plain connection
      } while (n < 0 && errno == EINTR);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      CloseNow();
      return;
    }
    if (n == 0) {
      // close_notify or a TCP FIN: nothing more will come; the other
      // server learns it once it has read everything before it.
      client_eof_ = true;
      {
        MutexLock l(&mu_);
        SetPauseLocked(kPauseClientEof, true);
      }
      FlushToPair();
      return;
    }
    to_pair_.append(buf, static_cast<size_t>(n));
    FlushToPair();
    if (fd_closed_ || !pair_.valid()) return;
  }
}

void Connection::FlushToPair() {
  if (!pair_.valid()) return;
  while (to_pair_off_ < to_pair_.size()) {
    ssize_t n =
        ::send(pair_.get(), to_pair_.data() + to_pair_off_,
               to_pair_.size() - to_pair_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      PairClosed();  // EPIPE: the other server closed its end
      return;
    }
    to_pair_off_ += static_cast<size_t>(n);
  }
  DropSent(&to_pair_, &to_pair_off_);
  const size_t pending = to_pair_.size() - to_pair_off_;
  if (pending == 0) {
    if (client_eof_ && !pair_write_shut_) {
      pair_write_shut_ = true;
      ::shutdown(pair_.get(), SHUT_WR);
    }
  }
  UpdatePairEvents();
  const bool full = pending >= kPumpBufferBytes;
  bool resume = false;
  {
    MutexLock l(&mu_);
    resume = !full && (pause_ & kPausePump) != 0;
    SetPauseLocked(kPausePump, full);
  }
  // Level-triggered epoll sees the socket again; records OpenSSL already
  // holds are read at once (ReadTls takes whole records, so there are none
  // in practice, but reading costs nothing here).
  if (resume) PumpFromClient();
}

void Connection::PumpFromPair() {
  char* buf = loop_->scratch();
  for (int i = 0; i < kPumpReadsPerEvent; ++i) {
    {
      MutexLock l(&mu_);
      if (closed_ || close_after_flush_) return;
      if (PendingLocked() >= kPumpBufferBytes) {
        // HandleWritable resumes once the client has read half of it.
        pair_read_paused_ = true;
        UpdatePairEvents();
        return;
      }
    }
    ssize_t n = ::recv(pair_.get(), buf, kReadChunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      // EOF, or ECONNRESET when it closed with our bytes unread: either
      // way the other server is done.
      PairClosed();
      return;
    }
    Deferred d;
    bool ok;
    {
      MutexLock l(&mu_);
      ok = SendLocked({std::string_view(buf, static_cast<size_t>(n))}, 0, &d);
    }
    Run(&d);
    if (!ok) return;
  }
}

void Connection::HandleReadable() {
  if (pumping_ && !lingering_) {
    PumpFromClient();
    return;
  }
  if (!use_tls_ && !sniffed_ && !server()->opts.handoff_preface.empty()) {
    if (SniffHandoff()) return;
  }
  char* buf = loop_->scratch();
  ssize_t n;
  if (use_tls_ && !lingering_) {
    n = ReadTls(buf);
  } else {
    do {
      n = ::recv(fd_, buf, kReadChunk, 0);
    } while (n < 0 && errno == EINTR);
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    CloseNow();
    return;
  }
  if (n == 0) {
    // The client closed (or half-closed) its side. kplane treats that as
    // "client gone" even mid-request: streams end and OnClose fires. See
    // README "Limits" for half-closing clients.
    CloseNow();
    return;
  }
  if (lingering_) return;  // discard: we are only waiting for the EOF
  if (read_state_ == ReadState::kHead && in_off_ == in_.size() &&
      !first_head_) {
    // A new head after keep-alive idling; the first head's time counts
    // from the accept.
    head_started_ = server()->clock->Now();
  }
  in_.append(buf, static_cast<size_t>(n));
  if (use_tls_ && !sniffed_ && !server()->opts.handoff_preface.empty()) {
    if (SniffTlsHandoff()) return;
  }
  ProcessInput();
}

ssize_t Connection::ReadTls(char* buf) {
  if (tls_read_end_ != TlsReadEnd::kNone) {
    // Seen with the last data; the socket may not report anything again
    // (a close_notify without a TCP close).
    if (tls_read_end_ == TlsReadEnd::kClosed) return 0;
    errno = ECONNRESET;
    return -1;
  }
  size_t total = 0;
  bool eof = false;
  bool failed = false;
  {
    MutexLock l(&mu_);
    if (closed_ || !tls_) {
      errno = EAGAIN;  // closing already; the loop closes the socket
      return -1;
    }
    while (kReadChunk - total >= kMaxTlsRecord) {
      size_t got = 0;
      TlsSession::Result r = tls_->Read(buf + total, kReadChunk - total, &got);
      if (r == TlsSession::Result::kOk) {
        total += got;
        continue;
      }
      if (r == TlsSession::Result::kWantWrite) {
        tls_read_wants_write_ = true;
        if (!want_write_) {
          want_write_ = true;
          UpdateEventsLocked();
        }
      } else if (r == TlsSession::Result::kClosed) {
        eof = true;
      } else if (r == TlsSession::Result::kError) {
        LOG(DEBUG) << "TLS read from " << remote_ << ": " << tls_->error();
        failed = true;
      }
      break;
    }
  }
  // Data first; an end or error that came with it is reported at the next
  // call.
  if (total > 0) {
    if (eof) tls_read_end_ = TlsReadEnd::kClosed;
    if (failed) tls_read_end_ = TlsReadEnd::kFailed;
    return static_cast<ssize_t>(total);
  }
  if (eof) return 0;
  errno = failed ? ECONNRESET : EAGAIN;
  return -1;
}

void Connection::ResumeInput() {
  if (fd_closed_ || lingering_) return;
  {
    MutexLock l(&mu_);
    SetPauseLocked(kPausePipeline, false);
  }
  if (read_state_ == ReadState::kHead && in_off_ < in_.size()) {
    // The pipelined head's header timeout starts now, not when it arrived.
    head_started_ = server()->clock->Now();
  }
  ProcessInput();
}

void Connection::ProcessInput() {
  std::shared_ptr<Connection> self = shared_from_this();
  while (!fd_closed_ && !lingering_) {
    if (read_state_ == ReadState::kBody) {
      if (!ReadBody()) break;
    } else {
      if (in_off_ == in_.size()) break;
      if (!ParseOneHead()) break;
    }
  }
  // Release consumed input; an idle connection keeps no buffer.
  if (in_off_ == in_.size()) {
    std::string().swap(in_);
    in_off_ = 0;
  } else if (in_off_ > 0 && in_off_ * 2 >= in_.size()) {
    in_.erase(0, in_off_);
    in_off_ = 0;
  }
}

// Parses and dispatches one request head. Returns false when it cannot
// make progress (incomplete head, waiting for the active exchange, error).
bool Connection::ParseOneHead() {
  HttpServer::Impl* srv = server();
  {
    MutexLock l(&mu_);
    if (closed_ || close_after_flush_) return false;
    // A pipelined request waits for the current exchange, and then for the
    // client to read most of the responses before it: it is not even
    // parsed, so its answer cannot pile up on the others.
    const bool wait_exchange = active_ != nullptr;
    const bool wait_output =
        !wait_exchange && PendingLocked() > kPipelineOutputBytes;
    if (wait_exchange || wait_output) {
      if (wait_exchange) {
        loop_waiting_ = true;
      } else {
        output_waiting_ = true;  // HandleWritable resumes
      }
      if (in_.size() - in_off_ > srv->opts.max_header_bytes + kReadChunk) {
        SetPauseLocked(kPausePipeline, true);
      }
      return false;
    }
  }
  std::string_view data(in_.data() + in_off_, in_.size() - in_off_);
  HttpRequest parsed;
  HeadResult head = ParseRequestHead(data, &head_scan_, srv->limits, &parsed);
  if (head.kind == HeadResult::kIncomplete) return false;
  head_scan_ = 0;
  if (head.kind == HeadResult::kError) {
    Fail(head.error_status, head.error);
    return false;
  }
  auto ex = std::make_shared<Exchange>(shared_from_this());
  HttpRequest& req = ex->mutable_request();
  req = std::move(parsed);
  in_off_ += head.head_length;
  first_head_ = false;
  req.remote_address = remote_;
  req.tls = tls_info_;

  StatusOr<BodyFraming> framing = RequestBodyFraming(req);
  if (!framing.ok()) {
    Fail(framing.status().code() == StatusCode::kUnimplemented ? 501 : 400,
         framing.status().message());
    return false;
  }
  bool expect_continue = false;
  if (const std::string* expect = req.headers.Find("Expect")) {
    if (EqualsIgnoreCase(*expect, "100-continue")) {
      expect_continue = req.version_minor >= 1;
    } else {
      Fail(417, "unsupported Expect");
      return false;
    }
  }
  RouteMatch match = srv->router.Find(req.method, req.path);
  const Route* route = match.route;
  if (route == nullptr) {
    route = match.allow.empty() ? &srv->not_found_route
                                : &srv->method_not_allowed_route;
  }
  const bool streaming = route->options.stream_request_body;
  if (!streaming && framing->kind == BodyFraming::kContentLength &&
      framing->length > srv->opts.max_body_bytes) {
    Fail(413, "request body too large");
    return false;
  }

  Deferred d;
  {
    MutexLock l(&mu_);
    ex->AssertHeldBy(this);
    active_ = ex;
    ex->InitLocked(srv->opts.max_output_buffer_bytes,
                   KeepAliveRequested(req) && !srv->stopping.load(),
                   streaming && route->options.run_on_io_thread);
    if (expect_continue && framing->kind != BodyFraming::kNone &&
        in_off_ == in_.size()) {
      SendLocked({kContinue}, 0, &d);
    }
    if (framing->kind == BodyFraming::kNone) ex->SetBodyDoneLocked();
  }
  Run(&d);

  if (framing->kind == BodyFraming::kNone) {
    Dispatch(ex, route);
    if (streaming) {
      Deferred d2;
      {
        MutexLock l(&mu_);
        ex->AssertHeldBy(this);
        ex->QueueBodyLocked({}, /*eof=*/true, &d2);
      }
      Run(&d2);
    }
    return true;
  }
  read_state_ = ReadState::kBody;
  const Duration body_timeout =
      route->options.body_timeout.value_or(srv->opts.body_timeout);
  has_body_deadline_ = body_timeout > Duration::zero();
  if (has_body_deadline_) body_deadline_ = srv->clock->Now() + body_timeout;
  body_decoder_.Reset(*framing);
  body_exchange_ = ex;
  body_streaming_ = streaming;
  body_route_ = route;
  if (streaming) Dispatch(ex, route);
  return true;
}

// Decodes buffered body bytes. Returns true when the body is complete (the
// caller continues with the next head), false when more input is needed or
// the connection failed.
bool Connection::ReadBody() {
  HttpServer::Impl* srv = server();
  std::string_view data(in_.data() + in_off_, in_.size() - in_off_);
  std::string decoded;
  std::string* sink =
      body_streaming_ ? &decoded : &body_exchange_->mutable_request().body;
  StatusOr<size_t> used = body_decoder_.Decode(data, sink);
  if (!used.ok()) {
    Fail(400, used.status().message());
    return false;
  }
  in_off_ += *used;
  const bool done = body_decoder_.done();
  if (!body_streaming_ && sink->size() > srv->opts.max_body_bytes) {
    Fail(413, "request body too large");
    return false;
  }
  if (!body_streaming_) {
    if (!done) return false;
    std::shared_ptr<Exchange> ex = std::move(body_exchange_);
    read_state_ = ReadState::kHead;
    {
      MutexLock l(&mu_);
      ex->AssertHeldBy(this);
      ex->SetBodyDoneLocked();
    }
    Dispatch(ex, body_route_);
    return true;
  }
  if (decoded.empty() && !done) return false;
  Deferred d;
  {
    MutexLock l(&mu_);
    body_exchange_->AssertHeldBy(this);
    body_exchange_->QueueBodyLocked(decoded, done, &d);
    if (done) {
      body_exchange_->SetBodyDoneLocked();
      MaybeCompleteLocked(body_exchange_.get(), &d, srv->clock->Now());
    }
  }
  if (done) {
    body_exchange_.reset();
    read_state_ = ReadState::kHead;
  }
  Run(&d);
  return done;
}

void Connection::Dispatch(const std::shared_ptr<Exchange>& ex,
                          const Route* route) {
  auto run = [route, ex] {
    try {
      route->handler(ex->request(), ex);
    } catch (const std::exception& e) {
      LOG(ERROR) << "HTTP handler for " << ex->request().method << " "
                 << ex->request().path << " threw: " << e.what();
      ex->Respond(500, {{"Content-Type", "text/plain"}},
                  "Internal Server Error");
    } catch (...) {
      LOG(ERROR) << "HTTP handler for " << ex->request().path
                 << " threw a non-exception";
      ex->Respond(500, {{"Content-Type", "text/plain"}},
                  "Internal Server Error");
    }
  };
  if (route->options.run_on_io_thread) {
    run();
  } else {
    serial_->Post(std::move(run));
  }
}

void Connection::Fail(int status, std::string_view message) {
  HttpServer::Impl* srv = server();
  LOG(DEBUG) << "HTTP " << status << " to " << remote_ << ": " << message;
  std::shared_ptr<Exchange> ex;
  Deferred d;
  bool respond = true;
  {
    MutexLock l(&mu_);
    ex = active_;
    if (ex) {
      ex->AssertHeldBy(this);
      respond = !ex->response_started();
      ex->AbandonLocked();
      ex->EndLocked(&d);
      active_.reset();
    }
    if (respond && !closed_ && !close_after_flush_) {
      std::string body = std::string(StatusReason(status)) + ": " +
                         std::string(message) + "\n";
      std::string head = BuildHead(status, {{"Content-Type", "text/plain"}},
                                   Framing::kLength, body.size(),
                                   /*keep_alive=*/false, 1);
      srv->CountRequest(status);
      SendLocked({head, body}, 0, &d);
    } else {
      respond = false;
    }
    if (respond) CloseAfterFlushLocked(&d);
  }
  body_exchange_.reset();
  read_state_ = ReadState::kHead;
  Run(&d);
  if (!respond) CloseNow();
}

void Connection::StartLinger() {
  if (fd_closed_ || lingering_) return;
  lingering_ = true;
  ClosePair();
  linger_deadline_ = server()->clock->Now() + server()->opts.linger_timeout;
  MutexLock l(&mu_);
  if (tls_ && !closed_) tls_->SendCloseNotify();  // no-op before a handshake
  closed_ = true;                                 // nothing more may be written
  ::shutdown(fd_, SHUT_WR);
  pause_ = 0;
  want_write_ = false;
  UpdateEventsLocked();
}

void Connection::Sweep(TimePoint now) {
  if (fd_closed_) return;
  if (lingering_) {
    if (now >= linger_deadline_) CloseNow();
    return;
  }
  // A pumped connection belongs to the other server's timeouts (gRPC's
  // keepalive); until the preface is complete the header timeout holds.
  if (pumping_) return;
  const HttpServerOptions& o = server()->opts;
  if (use_tls_ && !tls_ready_) {
    if (now - accepted_at_ >= o.tls_handshake_timeout) {
      server()->TlsHandshakeFailed("timeout", remote_,
                                   "no complete handshake in time");
      CloseNow();
    }
    return;
  }
  if (read_state_ == ReadState::kBody) {
    if (has_body_deadline_ && now >= body_deadline_) {
      Fail(408, "the request body did not arrive in time");
    }
    return;
  }
  bool expired = false;
  {
    MutexLock l(&mu_);
    SetPauseLocked(kPauseSniff, false);  // look at the first bytes again
    if (closed_) return;
    if (active_) {
      // An exchange in progress is the handler's to time, unless it set a
      // response deadline.
      active_->AssertHeldBy(this);
      if (!active_->DeadlinePassedLocked(now)) return;
      expired = true;
    } else if (output_waiting_) {
      // A pipelined request waits for the client to read our answers:
      // that counts as idle since the last exchange, not as a slow head.
      expired = now - idle_since_ >= o.idle_timeout;
    } else if (in_off_ < in_.size() || !served_) {
      expired = now - head_started_ >= o.header_timeout;
    } else {
      expired = now - idle_since_ >= o.idle_timeout;
    }
  }
  if (expired) CloseNow();
}

void Connection::CloseNow() {
  if (fd_closed_) return;
  fd_closed_ = true;
  std::shared_ptr<Connection> self = shared_from_this();
  ClosePair();
  std::shared_ptr<Exchange> ex;
  Deferred d;
  {
    MutexLock l(&mu_);
    closed_ = true;
    ex = std::move(active_);
    if (ex) {
      ex->AssertHeldBy(this);
      ex->EndLocked(&d);
    }
    epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_DEL, fd_, nullptr);
    tls_.reset();  // before the close: it must not outlive its socket
    ::close(fd_);
    fd_ = -1;
    std::string().swap(out_);
    out_off_ = 0;
  }
  std::string().swap(in_);
  in_off_ = 0;
  body_exchange_.reset();
  d.close_now = d.shutdown_write = d.resume_input = false;
  Run(&d);
  HttpServer::Impl* srv = server();
  // The slot first: a caller that sees NumConnections() drop may connect
  // again at once and must not find the cap still full.
  srv->reserved_connections.fetch_sub(1);
  srv->num_connections.fetch_sub(1);
  srv->open_metric->Dec();
  loop_->Remove(this);
}

// ----- Exchange implementation ---------------------------------------------

void Exchange::EndLocked(Deferred* d) {
  if (ended_) return;
  ended_ = true;
  body_queue_.clear();
  // The rest of the body is read and dropped (QueueBodyLocked), so that a
  // response given before the body was read (an early 403) still leaves
  // the connection for the next request. A pause for the consumer that is
  // no more would stall the connection until its body timeout instead.
  if (!conn_->closed_locked()) {
    conn_->SetPauseLocked(Connection::kPauseBody, false);
  }
  // Callbacks usually capture the Responder itself; dropping them here
  // breaks that reference cycle (a running delivery keeps its own copy).
  if (on_body_) d->release.push_back(std::move(on_body_));
  on_body_.reset();
  if (on_close_) d->serial.push_back(std::move(on_close_));
  on_close_ = nullptr;
  if (on_drained_) {
    d->release.push_back(
        std::make_shared<std::function<void()>>(std::move(on_drained_)));
  }
  on_drained_ = nullptr;
}

void Exchange::DrainedLocked(Deferred* d) {
  if (!on_drained_ || conn_->PendingLocked() > drain_low_water_) return;
  d->serial.push_back(std::move(on_drained_));
  on_drained_ = nullptr;
}

void Exchange::ResponseDoneLocked(Deferred* d, TimePoint now) {
  phase_ = Phase::kDone;
  if (!keep_alive_) conn_->CloseAfterFlushLocked(d);
  EndLocked(d);
  conn_->MaybeCompleteLocked(this, d, now);
}

bool Exchange::Respond(int status, HttpHeaders headers, std::string body) {
  std::shared_ptr<Exchange> self = shared_from_this();
  bool keep_alive;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kNew || conn_->closed_locked()) return false;
    keep_alive = keep_alive_;
  }
  if (headers.HasToken("Connection", "close")) keep_alive = false;
  if (!StatusHasBody(status)) body.clear();
  std::string head = BuildHead(status, headers, Framing::kLength, body.size(),
                               keep_alive, request_.version_minor);
  Deferred d;
  bool ok;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kNew || conn_->closed_locked()) return false;
    keep_alive_ = keep_alive;
    conn_->server()->CountRequest(status);
    const TimePoint now = NowLocked();
    // The cap bounds the backlog before this response, not the response
    // itself: a big list is in memory already, and is not cut.
    const size_t cap =
        max_buffered_ == 0 ? 0 : max_buffered_ + head.size() + body.size();
    ok = conn_->SendLocked(
        {head, head_only_ ? std::string_view() : std::string_view(body)}, cap,
        &d);
    ResponseDoneLocked(&d, now);
  }
  conn_->Run(&d);
  return ok;
}

bool Exchange::StartStream(int status, HttpHeaders headers) {
  std::shared_ptr<Exchange> self = shared_from_this();
  bool keep_alive;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kNew || conn_->closed_locked()) return false;
    keep_alive = keep_alive_;
  }
  if (headers.HasToken("Connection", "close")) keep_alive = false;
  // HTTP/1.0 has no chunked coding: the body runs until the connection
  // closes.
  const bool chunked = request_.version_minor >= 1;
  if (!chunked) keep_alive = false;
  std::string head = BuildHead(
      status, headers, chunked ? Framing::kChunked : Framing::kCloseDelimited,
      0, keep_alive, request_.version_minor);
  Deferred d;
  bool ok;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kNew || conn_->closed_locked()) return false;
    keep_alive_ = keep_alive;
    chunked_ = chunked && StatusHasBody(status);
    conn_->server()->CountRequest(status);
    const TimePoint now = NowLocked();
    phase_ = Phase::kStreaming;
    ok = conn_->SendLocked({head}, max_buffered_, &d);
    if (!ok || !StatusHasBody(status)) ResponseDoneLocked(&d, now);
  }
  conn_->Run(&d);
  return ok;
}

bool Exchange::Write(std::string_view chunk) {
  const std::string header = ChunkHeader(chunk.size());
  Deferred d;
  bool ok;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kStreaming || conn_->closed_locked()) {
      if (phase_ == Phase::kNew) {
        LOG(ERROR) << "Responder::Write before StartStream for "
                   << request_.path;
      }
      return false;
    }
    if (chunk.empty() || head_only_) return true;
    if (chunked_) {
      ok = conn_->SendLocked({header, chunk, "\r\n"}, max_buffered_, &d);
    } else {
      ok = conn_->SendLocked({chunk}, max_buffered_, &d);
    }
  }
  conn_->Run(&d);
  return ok;
}

bool Exchange::WriteChunks(std::span<const std::string_view> chunks) {
  // Framed under the lock (which holds whether the stream is chunked), as
  // one piece for SendLocked: a memcpy of what was just encoded.
  std::string framed;
  size_t total = 0;
  for (std::string_view c : chunks) total += c.size() + 16;
  framed.reserve(total);
  Deferred d;
  bool ok;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kStreaming || conn_->closed_locked()) {
      if (phase_ == Phase::kNew) {
        LOG(ERROR) << "Responder::WriteChunks before StartStream for "
                   << request_.path;
      }
      return false;
    }
    if (head_only_) return true;
    for (std::string_view c : chunks) {
      if (c.empty()) continue;
      if (chunked_) framed += ChunkHeader(c.size());
      framed.append(c);
      if (chunked_) framed += "\r\n";
    }
    if (framed.empty()) return true;
    ok = conn_->SendLocked({framed}, max_buffered_, &d);
  }
  conn_->Run(&d);
  return ok;
}

bool Exchange::Upgrade(const HttpHeaders& headers,
                       std::function<void(int fd)> on_upgraded) {
  std::shared_ptr<Exchange> self = shared_from_this();
  if (request_.version_minor < 1 || request_.method == "HEAD") return false;
  std::string head = "HTTP/1.1 101 Switching Protocols\r\n";
  for (const auto& [name, value] : headers) {
    if (EqualsIgnoreCase(name, "Content-Length") ||
        EqualsIgnoreCase(name, "Transfer-Encoding") ||
        EqualsIgnoreCase(name, "Connection") || !SafeField(name, value)) {
      continue;
    }
    head += name + ": " + value + "\r\n";
  }
  head += "Connection: Upgrade\r\n\r\n";
  Deferred d;
  bool ok;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kNew || conn_->closed_locked() ||
        conn_->close_after_flush_locked() || !body_done_) {
      return false;
    }
    conn_->server()->CountRequest(101);
    ok = conn_->SendLocked({head}, 0, &d);
    // Over without MaybeCompleteLocked: the connection stays busy with this
    // exchange (no request is parsed) until StartUpgradePump takes it.
    phase_ = Phase::kDone;
    EndLocked(&d);
  }
  conn_->Run(&d);
  if (!ok) return false;
  std::weak_ptr<Connection> weak = conn_;
  conn_->loop()->Post([weak, fn = std::move(on_upgraded)]() mutable {
    std::shared_ptr<Connection> c = weak.lock();
    if (c) {
      c->StartUpgradePump(std::move(fn));
    } else {
      fn(-1);
    }
  });
  return true;
}

bool Exchange::Finish() {
  std::shared_ptr<Exchange> self = shared_from_this();
  Deferred d;
  bool ok = true;
  {
    MutexLock l(&conn_->mu());
    if (phase_ != Phase::kStreaming) return false;
    if (conn_->closed_locked()) {
      phase_ = Phase::kDone;  // CloseNow already ended the exchange
      return false;
    }
    const TimePoint now = NowLocked();
    if (chunked_ && !head_only_) ok = conn_->SendLocked({kLastChunk}, 0, &d);
    ResponseDoneLocked(&d, now);
  }
  conn_->Run(&d);
  return ok;
}

size_t Exchange::BufferedBytes() const {
  MutexLock l(&conn_->mu());
  return conn_->PendingLocked();
}

void Exchange::SetMaxBufferedBytes(size_t max_bytes) {
  MutexLock l(&conn_->mu());
  max_buffered_ = max_bytes;
}

void Exchange::SetResponseDeadline(Duration timeout) {
  MutexLock l(&conn_->mu());
  if (ended_ || conn_->closed_locked()) return;  // NowLocked needs it open
  has_deadline_ = timeout > Duration::zero();
  if (has_deadline_) deadline_ = NowLocked() + timeout;
}

void Exchange::OnDrained(size_t low_water, std::function<void()> callback) {
  Deferred d;
  {
    MutexLock l(&conn_->mu());
    if (ended_ || conn_->closed_locked()) {
      d.release.push_back(
          std::make_shared<std::function<void()>>(std::move(callback)));
    } else {
      on_drained_ = std::move(callback);
      drain_low_water_ = low_water;
      DrainedLocked(&d);
    }
  }
  conn_->Run(&d);
}

void Exchange::OnClose(std::function<void()> callback) {
  Deferred d;
  {
    MutexLock l(&conn_->mu());
    if (ended_) {
      d.serial.push_back(std::move(callback));
    } else {
      on_close_ = std::move(callback);
    }
  }
  conn_->Run(&d);
}

bool Exchange::IsClosed() const {
  MutexLock l(&conn_->mu());
  return conn_->closed_locked();
}

void Exchange::Close() {
  Deferred d;
  {
    MutexLock l(&conn_->mu());
    if (conn_->closed_locked()) return;
    conn_->BreakLocked(&d);
  }
  conn_->Run(&d);
}

void Exchange::OnBodyData(std::function<void(std::string_view, bool)> fn) {
  Deferred d;
  {
    MutexLock l(&conn_->mu());
    CHECK(!body_registered_) << "OnBodyData registered twice";
    body_registered_ = true;
    if (ended_) return;  // too late: nothing more will be delivered
    on_body_ = std::make_shared<std::function<void(std::string_view, bool)>>(
        std::move(fn));
    if (!body_queue_.empty() || eof_queued_) ScheduleDeliveryLocked(&d);
  }
  conn_->Run(&d);
}

void Exchange::QueueBodyLocked(std::string_view data, bool eof, Deferred* d) {
  if (ended_) return;
  body_queue_.append(data);
  if (eof) eof_queued_ = true;
  if (on_body_) ScheduleDeliveryLocked(d);
  if (body_queue_.size() > conn_->server()->opts.max_pending_body_bytes &&
      !conn_->PausedLocked(Connection::kPauseBody)) {
    conn_->server()->bodies_paused_metric->Inc();
    conn_->SetPauseLocked(Connection::kPauseBody, true);
  }
}

void Exchange::ScheduleDeliveryLocked(Deferred* d) {
  if (delivery_scheduled_) return;
  delivery_scheduled_ = true;
  std::shared_ptr<Exchange> self = shared_from_this();
  if (inline_body_) {
    d->inline_calls.push_back([self] { self->DeliverBody(); });
  } else {
    d->serial.push_back([self] { self->DeliverBody(); });
  }
}

void Exchange::DeliverBody() {
  // Takes whatever is queued when it runs, so pieces are delivered in
  // arrival order no matter which thread scheduled the delivery.
  for (;;) {
    std::string data;
    bool eof;
    std::shared_ptr<std::function<void(std::string_view, bool)>> fn;
    {
      MutexLock l(&conn_->mu());
      if (ended_ || (body_queue_.empty() && !eof_queued_)) {
        delivery_scheduled_ = false;
        body_queue_.clear();
        if (!conn_->closed_locked()) {
          conn_->SetPauseLocked(Connection::kPauseBody, false);
        }
        return;
      }
      data.swap(body_queue_);
      eof = eof_queued_;
      eof_queued_ = false;
      fn = on_body_;
      if (!conn_->closed_locked()) {
        conn_->SetPauseLocked(Connection::kPauseBody, false);
      }
    }
    // As with handlers (Connection::Dispatch), an exception must not leave
    // the callback: the client gets a 500, or loses the connection once a
    // response has started.
    try {
      (*fn)(data, eof);
    } catch (const std::exception& e) {
      LOG(ERROR) << "HTTP body callback for " << request().path
                 << " threw: " << e.what();
      FailAfterThrow();
      return;
    } catch (...) {
      LOG(ERROR) << "HTTP body callback for " << request().path
                 << " threw a non-exception";
      FailAfterThrow();
      return;
    }
  }
}

void Exchange::FailAfterThrow() {
  if (!Respond(500, {{"Content-Type", "text/plain"}},
               "Internal Server Error")) {
    Close();
  }
}

// ----- IoLoop implementation -----------------------------------------------

IoLoop::~IoLoop() {
  Join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status IoLoop::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return ErrnoToStatus(errno, "epoll_create1");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return ErrnoToStatus(errno, "eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &wake_fd_;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    return ErrnoToStatus(errno, "epoll_ctl");
  }
  return Status::Ok();
}

void IoLoop::StartThread() {
  if (listener_.valid()) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listener_;
    CHECK_EQ(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener_.get(), &ev), 0);
  }
  thread_ = std::thread([this] {
    std::string name =
        server_->opts.name.substr(0, 10) + "-io" + std::to_string(index_);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    Run();
  });
}

void IoLoop::Post(std::function<void()> task) {
  bool wake;
  {
    MutexLock l(&task_mu_);
    tasks_.push_back(std::move(task));
    wake = !wake_pending_;
    wake_pending_ = true;
  }
  if (wake) {
    uint64_t one = 1;
    ssize_t rc = ::write(wake_fd_, &one, sizeof(one));
    (void)rc;  // a full counter already means "wake up"
  }
}

void IoLoop::RunTasks() {
  std::vector<std::function<void()>> tasks;
  {
    MutexLock l(&task_mu_);
    tasks.swap(tasks_);
    wake_pending_ = false;
  }
  for (auto& t : tasks) t();
}

void IoLoop::Run() {
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  while (running_) {
    int n = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      LOG(FATAL) << "epoll_wait: " << std::strerror(errno);
    }
    for (int i = 0; i < n; ++i) {
      void* p = events[i].data.ptr;
      if (p == &wake_fd_) {
        uint64_t v;
        ssize_t rc = ::read(wake_fd_, &v, sizeof(v));
        (void)rc;
      } else if (p == &listener_) {
        Accept();
      } else {
        static_cast<EpollTarget*>(p)->OnEvents(events[i].events);
      }
    }
    RunTasks();
    graveyard_.clear();
  }
  // Tasks posted after the stop (e.g. handing over a just-accepted socket)
  // are dropped; their captures close what they own.
  MutexLock l(&task_mu_);
  tasks_.clear();
}

void IoLoop::Accept() {
  HttpServer::Impl* srv = server_;
  for (;;) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        // Out of descriptors: stop accepting until the next sweep rather
        // than spinning on a listener that stays readable.
        LOG(WARNING) << "accept: " << std::strerror(errno)
                     << "; pausing accepts";
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listener_.get(), nullptr);
        listener_paused_ = true;
        return;
      }
      LOG(ERROR) << "accept: " << std::strerror(errno);
      return;
    }
    srv->accepted_metric->Inc();
    if (srv->opts.max_connections != 0 &&
        srv->reserved_connections.load() >= srv->opts.max_connections) {
      // At the cap: a handed-off socket its user closed since its last
      // check may hold the slot this connection needs (once per tick).
      if (!handed_off_.empty() && !handed_off_checked_at_cap_) {
        handed_off_checked_at_cap_ = true;
        CheckHandedOff(handed_off_.size());
      }
      if (srv->reserved_connections.load() >= srv->opts.max_connections) {
        srv->rejected_metric->Inc();  // before the client can see the close
        RejectConnection(fd);
        continue;
      }
    }
    // Reserved here, not in Adopt, so the cap holds across loops.
    srv->reserved_connections.fetch_add(1);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    IoLoop* target = srv->loops[next_loop_++ % srv->loops.size()].get();
    if (target == this) {
      Adopt(ScopedFd(fd));
    } else {
      // If the target loop stops before running the task, the task is
      // dropped and the holder gives the reservation back.
      auto holder = std::make_shared<PendingSocket>(srv, fd);
      target->Post([target, holder] { target->Adopt(std::move(holder->fd)); });
    }
  }
}

// Over the connection cap: what the client sent so far is read (so the
// close is less likely to be a reset that destroys our answer), a canned
// 503 is written without waiting, and the socket is closed. A client whose
// request arrives after the close sees a reset instead.
void IoLoop::RejectConnection(int fd) {
  if (server_->opts.tls) {  // a plaintext 503 means nothing to a TLS client
    ::close(fd);
    return;
  }
  ssize_t rc = ::recv(fd, scratch_.data(), scratch_.size(), MSG_DONTWAIT);
  rc = ::send(fd, kTooManyConnections.data(), kTooManyConnections.size(),
              MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)rc;  // best effort
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

void IoLoop::Adopt(ScopedFd fd) {
  std::string remote = PeerAddress(fd.get());
  std::unique_ptr<TlsSession> tls;
  if (server_->opts.tls) {
    StatusOr<std::unique_ptr<TlsSession>> s =
        TlsSession::NewServer(server_->opts.tls, fd.get());
    if (!s.ok()) {
      LOG(ERROR) << "TLS session for " << remote << ": " << s.status();
      server_->reserved_connections.fetch_sub(1);
      return;  // `fd` closes
    }
    tls = std::move(*s);
  }
  auto conn = std::make_shared<Connection>(this, std::move(fd),
                                           std::move(remote), std::move(tls));
  conn->Register();
  conns_.emplace(conn.get(), conn);
  server_->open_metric->Inc();
  // Last: the connection's timers are armed before anyone can count it.
  server_->num_connections.fetch_add(1);
}

void IoLoop::Remove(Connection* conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  graveyard_.push_back(std::move(it->second));
  conns_.erase(it);
}

void IoLoop::TrackHandedOff(int fd) {
  struct stat st {};
  server_->num_handed_off.fetch_add(1);
  server_->handed_off_metric->Inc();
  if (::fstat(fd, &st) != 0) {
    ReleaseHandedOff(1);
    return;
  }
  handed_off_.push_back({fd, st.st_dev, st.st_ino});
}

void IoLoop::CheckHandedOff(size_t limit) {
  limit = std::min(limit, handed_off_.size());
  size_t closed = 0;
  for (size_t checked = 0; checked < limit; ++checked) {
    if (handed_off_cursor_ >= handed_off_.size()) handed_off_cursor_ = 0;
    const HandedOff& h = handed_off_[handed_off_cursor_];
    struct stat st {};
    if (::fstat(h.fd, &st) == 0 && st.st_dev == h.dev && st.st_ino == h.ino) {
      ++handed_off_cursor_;
      continue;
    }
    // Closed: the last entry takes its place (checked in a later turn).
    handed_off_[handed_off_cursor_] = handed_off_.back();
    handed_off_.pop_back();
    ++closed;
  }
  if (closed > 0) ReleaseHandedOff(closed);
}

void IoLoop::ReleaseHandedOff(size_t n) {
  server_->reserved_connections.fetch_sub(n);
  server_->num_handed_off.fetch_sub(n);
  server_->handed_off_metric->Dec(static_cast<double>(n));
}

void IoLoop::CloseListener() {
  if (!listener_.valid()) return;
  if (!listener_paused_) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listener_.get(), nullptr);
  }
  listener_.Reset();
}

void IoLoop::StopAll() {
  CloseListener();
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(conns_.size());
  for (auto& [p, c] : conns_) all.push_back(c);
  for (auto& c : all) c->CloseNow();
  // The other server keeps the handed-off sockets; they no longer count.
  ReleaseHandedOff(handed_off_.size());
  handed_off_.clear();
  running_ = false;
}

void IoLoop::Sweep() {
  if (listener_paused_ && listener_.valid()) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listener_;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener_.get(), &ev) == 0) {
      listener_paused_ = false;
    }
  }
  handed_off_checked_at_cap_ = false;
  CheckHandedOff(kHandedOffChecksPerTick);
  TimePoint now = server_->clock->Now();
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(conns_.size());
  for (auto& [p, c] : conns_) all.push_back(c);
  for (auto& c : all) c->Sweep(now);
}

}  // namespace

// ----- HttpServer::Impl ----------------------------------------------------

HttpServer::Impl::Impl(HttpServerOptions o) : opts(std::move(o)) {
  clock = opts.clock ? opts.clock : Clock::Real();
  limits.max_start_line_bytes = opts.max_request_line_bytes;
  limits.max_header_bytes = opts.max_header_bytes;
  limits.max_header_count = opts.max_header_count;
  not_found_route.options.run_on_io_thread = true;
  not_found_route.handler = [](const HttpRequest&,
                               std::shared_ptr<Responder> r) {
    r->Respond(404, {{"Content-Type", "text/plain"}}, "Not Found");
  };
  method_not_allowed_route.options.run_on_io_thread = true;
  method_not_allowed_route.handler = [this](const HttpRequest& req,
                                            std::shared_ptr<Responder> r) {
    RouteMatch m = router.Find(req.method, req.path);
    r->Respond(405, {{"Content-Type", "text/plain"}, {"Allow", m.allow}},
               "Method Not Allowed");
  };
  metrics::Registry* reg =
      opts.metrics ? opts.metrics : metrics::Registry::Default();
  accepted_metric =
      reg->NewCounter("kplane_http_connections_accepted_total",
                      "TCP connections accepted by the HTTP server.",
                      {"server"})
          ->With({opts.name});
  open_metric = reg->NewGauge("kplane_http_connections_open",
                              "Open HTTP server connections.", {"server"})
                    ->With({opts.name});
  rejected_metric =
      reg->NewCounter("kplane_http_connections_rejected_total",
                      "TCP connections refused (503 and closed) because "
                      "max_connections were open.",
                      {"server"})
          ->With({opts.name});
  handed_off_metric =
      reg->NewGauge("kplane_http_connections_handed_off",
                    "Connections handed to another server on the same port "
                    "(HTTP/2: the store's gRPC) and not yet closed by it; "
                    "they count against max_connections.",
                    {"server"})
          ->With({opts.name});
  bodies_paused_metric =
      reg->NewCounter("kplane_http_request_bodies_paused_total",
                      "Times reading a streamed request body paused because "
                      "its handler had max_pending_body_bytes still to take "
                      "(back-pressure).",
                      {"server"})
          ->With({opts.name});
  tls_failures_family = reg->NewCounter(
      "kplane_http_tls_handshake_failures_total",
      "TLS handshakes that failed (reason: error, timeout, plaintext_http, "
      "alpn).",
      {"server", "reason"});
  requests_family = reg->NewCounter("kplane_http_requests_total",
                                    "HTTP responses started, by status code.",
                                    {"server", "code"});
}

HttpServer::Impl::~Impl() { Stop(); }

void HttpServer::Impl::CountRequest(int status) {
  if (status < 0 || status >= static_cast<int>(requests_by_code.size())) {
    requests_family->With({opts.name, std::to_string(status)})->Inc();
    return;
  }
  metrics::Counter* c =
      requests_by_code[status].load(std::memory_order_acquire);
  if (c == nullptr) {
    c = requests_family->With({opts.name, std::to_string(status)});
    requests_by_code[status].store(c, std::memory_order_release);
  }
  c->Inc();
}

void HttpServer::Impl::TlsHandshakeFailed(std::string_view reason,
                                          const std::string& remote,
                                          std::string_view detail) {
  tls_failures_family->With({opts.name, std::string(reason)})->Inc();
  uint64_t more = 0;
  if (!tls_log.Allow(clock->Now(), &more)) return;
  LOG(WARNING) << opts.name << ": TLS handshake from " << remote << " failed ("
               << reason << "): " << detail
               << LogThrottle::LeftOut(more, "failures");
}

Status HttpServer::Impl::Start(uint16_t* port) {
  CHECK(!started_) << "HttpServer::Start called twice";
  started_ = true;
  ScopedFd given(opts.listen_fd);
  opts.listen_fd = -1;
  if (opts.tls) {
    if (!opts.tls->is_server()) {
      return InvalidArgumentError(opts.name +
                                  ": HttpServerOptions::tls needs a server "
                                  "TlsContext");
    }
  }
  StatusOr<uint64_t> limit = RaiseFileDescriptorLimit();
  if (!limit.ok()) LOG(WARNING) << "RLIMIT_NOFILE: " << limit.status();
  ScopedFd listener;
  if (given.valid()) {
    listener = std::move(given);
  } else {
    ASSIGN_OR_RETURN(listener,
                     ListenTcp(opts.host, opts.port, opts.listen_backlog));
  }
  ASSIGN_OR_RETURN(*port, LocalPort(listener.get()));
  pool =
      std::make_shared<WorkerPool>(std::max(1, opts.worker_threads), opts.name);
  int n = std::max(1, opts.io_threads);
  for (int i = 0; i < n; ++i) {
    auto loop = std::make_unique<IoLoop>(this, i);
    RETURN_IF_ERROR(loop->Init());
    loops.push_back(std::move(loop));
  }
  loops[0]->SetListener(std::move(listener));
  for (auto& loop : loops) loop->StartThread();
  timer_ = std::thread([this] { TimerLoop(); });
  return Status::Ok();
}

void HttpServer::Impl::TimerLoop() {
  pthread_setname_np(pthread_self(), "http-timer");
  MutexLock l(&timer_mu_);
  TimePoint deadline = clock->Now() + opts.timer_tick;
  for (;;) {
    clock->WaitUntil(l.native(), timer_cv_, deadline,
                     [&]() REQUIRES(timer_mu_) { return timer_stop_; });
    if (timer_stop_) return;
    // The next deadline is taken before the sweep is posted: if the clock
    // jumps (a FakeClock advanced by a test) after this point, the wait
    // above returns at once and another sweep sees the new time.
    deadline = clock->Now() + opts.timer_tick;
    for (auto& loop : loops) {
      IoLoop* lp = loop.get();
      lp->Post([lp] { lp->Sweep(); });
    }
  }
}

void HttpServer::Impl::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping = true;
  {
    MutexLock l(&timer_mu_);
    timer_stop_ = true;
  }
  timer_cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  if (!loops.empty()) {
    // First stop accepting, so no socket is handed to a loop that has
    // already stopped; then close everything.
    std::promise<void> closed;
    IoLoop* first = loops[0].get();
    first->Post([first, &closed] {
      first->CloseListener();
      closed.set_value();
    });
    closed.get_future().wait();
    for (auto& loop : loops) {
      IoLoop* lp = loop.get();
      lp->Post([lp] { lp->StopAll(); });
    }
    for (auto& loop : loops) loop->Join();
  }
  // Handlers already queued still run (their Responders are closed), and
  // every OnClose callback fires before Stop() returns.
  if (pool) pool->Shutdown();
}

// ----- HttpServer ----------------------------------------------------------

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string method, std::string path,
                        HttpHandler handler, RouteOptions options) {
  impl_->router.Add(Route{std::move(method), std::move(path), false,
                          std::move(handler), options});
}

void HttpServer::HandlePrefix(std::string method, std::string prefix,
                              HttpHandler handler, RouteOptions options) {
  impl_->router.Add(Route{std::move(method), std::move(prefix), true,
                          std::move(handler), options});
}

Status HttpServer::Start() { return impl_->Start(&port_); }

void HttpServer::Stop() { impl_->Stop(); }

size_t HttpServer::NumConnections() const {
  return impl_->num_connections.load();
}

size_t HttpServer::NumHandedOff() const { return impl_->num_handed_off.load(); }

bool UpgradeConnection(const std::shared_ptr<Responder>& responder,
                       const HttpHeaders& headers,
                       std::function<void(int fd)> on_upgraded) {
  auto* ex = dynamic_cast<Exchange*>(responder.get());
  if (ex == nullptr) return false;
  return ex->Upgrade(headers, std::move(on_upgraded));
}

}  // namespace kplane::net
