// pods/exec: kube-apiserver's GET/POST
// /api/v1/namespaces/<ns>/pods/<name>/exec?command=..&container=..
// &stdin=&stdout=&stderr=&tty=, upgraded either to a WebSocket as kube 1.30+
// serves kubectl exec (subprotocol v5.channel.k8s.io, or v4) or to SPDY/3.1
// as older kubectls ask (X-Stream-Protocol-Version v4, v3 or
// v2.channel.k8s.io; net/spdy.h), proxied to the simulated kubelet of the
// pod's node (kubeletsim/pod_exec.h). Both transports drive the same
// session: one kubelet stream, the same limits, the same errors.
//
//   ApiResult<PodExecRequest> er = ParsePodExecRequest(req, pod);
//   ApiResult<ExecUpgrade> up = ParseExecUpgrade(req);
//   PodExecProxy proxy({.tls = kubelet_client_context});
//   proxy.Exec(*ep, er->KubeletTarget(pod), *up, responder, on_error,
//              on_start);
//
// The WebSocket channel protocol (k8s.io/apimachinery/pkg/util/
// remotecommand): each binary WebSocket message starts with its channel: 0
// stdin (client to server), 1 stdout, 2 stderr, 3 error (a metav1.Status
// JSON; a non-zero exit is reason NonZeroExitCode with the code in
// details.causes[] {reason: ExitCode}), 4 resize (ignored: the simulated
// shell has no terminal size), and in v5 255 close (payload: the channel,
// 0 = stdin ends). After the error channel's Status the server sends a
// close frame (1000) and ends the connection.
//
// SPDY (kube's remotecommand v2-v4 over httpstream/spdy): after the 101
// the client opens one stream per channel, named by its `streamtype`
// header (error always; stdin, stdout, stderr as asked, stderr not with a
// TTY; resize with a TTY from v3); each gets a SYN_REPLY. The kubelet's
// output flows once all are open (within stream_creation_timeout, else the
// session ends with GOAWAY). stdin's DATA goes to the kubelet and its FIN
// ends stdin; stdout, stderr and error carry the kubelet's records as DATA;
// v4's error stream carries the Status JSON as above, v3 and v2 only a
// failure's message text. At the end every server-written stream gets its
// FIN, then GOAWAY, then the connection closes. An unexpected or repeated
// stream type is reset (RST_STREAM PROTOCOL_ERROR); hostile framing ends
// the session with GOAWAY (net/spdy.h).
//
// Kube's checks, in its order: the pod (404), no command (400 "you must
// specify at least one command for the container"), no stream (400 "you
// must specify at least 1 of stdin, stdout, stderr"), the container (400,
// ChoosePodContainer), no node (400 "pod web does not have a host
// assigned"), then the upgrade: a request with neither a WebSocket nor a
// SPDY/3.1 upgrade gets 400 "Upgrade request required", no common
// protocol 400 "unable to upgrade: unable to negotiate protocol: ...",
// then the kubelet's answer (its 400/404 text, 503 when it cannot be
// reached), all before the 101. Authorization is the caller's: a SPDY POST
// is `create` on pods/exec, a WebSocket GET `get` plus the `create` check
// (api_server.cc).
//
// Bounds: at most max_streams execs at once, both transports together
// (429 beyond); a client WebSocket message or SPDY frame over
// max_frame_bytes ends the session (close 1009, GOAWAY); a malformed frame
// likewise (1002, GOAWAY PROTOCOL_ERROR); idle_timeout without a byte
// either way ends it (close 1000, GOAWAY OK), and so does a write to the
// client that it takes nothing of for idle_timeout (a client that stops
// reading, whatever it sends). kube's kubelet default
// --streaming-connection-idle-timeout is 4h.
//
// Thread-safety: the parsers are pure; PodExecProxy's methods may be
// called from any thread. Each exec runs on two threads of its own (client
// to kubelet, kubelet to client).
#ifndef KPLANE_APISERVER_POD_EXEC_H_
#define KPLANE_APISERVER_POD_EXEC_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apiserver/errors.h"
#include "apiserver/pod_logs.h"
#include "base/clock.h"
#include "net/http_message.h"
#include "net/http_server.h"
#include "net/tls.h"
#include "objects/types.h"

namespace kplane::apiserver {

inline constexpr char kExecProtocolV5[] = "v5.channel.k8s.io";
inline constexpr char kExecProtocolV4[] = "v4.channel.k8s.io";
inline constexpr char kExecProtocolV3[] = "v3.channel.k8s.io";
inline constexpr char kExecProtocolV2[] = "v2.channel.k8s.io";

struct PodExecRequest {
  std::string container;  // resolved
  std::vector<std::string> command;
  bool stdin = false;
  bool stdout = false;
  bool stderr = false;
  bool tty = false;
  // "/exec/<ns>/<pod>/<container>?command=..&stdin=1&tty=0"
  std::string KubeletTarget(const objects::corev1::Pod& pod) const;
};
ApiResult<PodExecRequest> ParsePodExecRequest(const net::HttpRequest& req,
                                              const objects::corev1::Pod& pod);

// The client's upgrade: a WebSocket handshake (the accept key and the
// subprotocol chosen, v5 before v4) or SPDY/3.1 (the first of the client's
// X-Stream-Protocol-Versions that is v4, v3 or v2, and the streams it will
// open, from the query).
struct ExecUpgrade {
  enum class Transport { kWebSocket, kSpdy };
  Transport transport = Transport::kWebSocket;
  std::string accept;    // Sec-WebSocket-Accept (WebSocket)
  std::string protocol;  // kExecProtocolV5..V2
  // SPDY: the query's streams.
  bool stdin = false;
  bool stdout = false;
  bool stderr = false;
  bool tty = false;
};
ApiResult<ExecUpgrade> ParseExecUpgrade(const net::HttpRequest& req);

struct PodExecOptions {
  std::shared_ptr<const net::TlsContext> tls;  // as KubeletClientOptions
  int max_streams = 256;
  // Sessions of one user at once (KubeletStreamThreads).
  int max_streams_per_user = 64;
  Duration idle_timeout = std::chrono::minutes(30);
  size_t max_frame_bytes = 256 * 1024;
  // SPDY: the client must open its streams within this (kube's
  // DefaultStreamCreationTimeout).
  Duration stream_creation_timeout = seconds(30);
  Duration connect_timeout = seconds(5);
  Duration response_timeout = seconds(30);
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

class PodExecProxy {
 public:
  explicit PodExecProxy(PodExecOptions options);
  ~PodExecProxy();  // Stop()s
  PodExecProxy(const PodExecProxy&) = delete;
  PodExecProxy& operator=(const PodExecProxy&) = delete;

  // Starts the exec at the kubelet `ep` (POST `target`) on a thread of its
  // own; on its 200, on_start() and the client's upgrade (101), then the
  // streams both ways until either side ends. Anything before the 101 that
  // fails ends in one on_error (429 over max_streams or over
  // max_streams_per_user of `user`, called before Exec returns; the
  // kubelet's error; 503 unreachable) and nothing written to `r`.
  void Exec(const KubeletEndpoint& ep, std::string target, ExecUpgrade upgrade,
            const std::string& user, std::shared_ptr<net::Responder> r,
            std::function<void(const ApiError&)> on_error,
            std::function<void()> on_start);

  // Execs running now.
  int Active() { return threads_.Active(); }
  // Ends every exec and joins the threads. Idempotent.
  void Stop() { threads_.Stop(); }

 private:
  struct Session;
  void Run(uint64_t id, KubeletEndpoint ep, std::string target,
           ExecUpgrade upgrade, std::shared_ptr<net::Responder> r,
           std::function<void(const ApiError&)> on_error,
           std::function<void()> on_start);

  const PodExecOptions options_;
  Clock* const clock_;
  KubeletStreamThreads threads_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_POD_EXEC_H_
