// pods/log: kube-apiserver's GET /api/v1/namespaces/<ns>/pods/<name>/log,
// proxied to the kubelet of the pod's node as kube does
// (pkg/registry/core/pod/rest/log.go, LogLocation in pod/strategy.go).
//
//   ApiResult<PodLogRequest> lr = ParsePodLogRequest(req, pod);
//   ApiResult<KubeletEndpoint> ep = KubeletEndpointFor(node, {"ExternalIP"});
//   KubeletLogProxy proxy({.tls = kubelet_client_context});
//   proxy.Stream(*ep, lr->KubeletTarget(pod), responder, on_error, on_start);
//
// The query (PodLogOptions): container, follow, previous, timestamps,
// tailLines, sinceSeconds, sinceTime, limitBytes, validated as kube does
// (422 `PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must
// be greater than or equal to 0`). The container defaults to the only one;
// with several, 400 "a container name must be specified for pod web,
// choose one of: [a b]"; an unknown one, 400 "container x is not valid for
// pod web". The kubelet is reached at the node's first address of the
// preferred types (--kubelet-preferred-address-types) and its
// status.daemonEndpoints.kubeletEndpoint.Port; its answer is passed through
// (a 400 from it, e.g. "container "app" in pod "web" is waiting to start:
// ContainerCreating", becomes a 400 Status with that message, as kube's
// GenericHttpResponseChecker does).
//
// Thread-safety: the parsers are pure; KubeletLogProxy's methods may be
// called from any thread. Each stream runs on a thread of its own (a
// follower holds it until the client or the kubelet ends the stream); at
// most max_streams at once, more get 429.
#ifndef KPLANE_APISERVER_POD_LOGS_H_
#define KPLANE_APISERVER_POD_LOGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apiserver/errors.h"
#include "apiserver/query_params.h"
#include "apiserver/registry/strategy.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "net/http_message.h"
#include "net/http_server.h"
#include "net/tls.h"
#include "objects/types.h"

namespace kplane::apiserver {

struct PodLogRequest {
  std::string container;  // resolved (never empty)
  bool follow = false;
  // The kubelet's query string: the options the client set, validated.
  std::string kubelet_query;
  // "/containerLogs/<ns>/<pod>/<container>?<query>"
  std::string KubeletTarget(const objects::corev1::Pod& pod) const;
};
ApiResult<PodLogRequest> ParsePodLogRequest(const net::HttpRequest& req,
                                            const objects::corev1::Pod& pod);

// kube's ValidateContainer (shared with pods/exec): the requested
// container, or the only one; 400 "a container name must be specified for
// pod web, choose one of: [a b]" / "container x is not valid for pod web".
ApiResult<std::string> ChoosePodContainer(const objects::corev1::Pod& pod,
                                          std::string_view requested);

// A kubelet's non-200 answer as kube's GenericHttpResponseChecker words it:
// 400 and 404 keep the kubelet's text, others are 500s naming the status.
ApiError KubeletAnswerError(int status, std::string_view text);

struct KubeletEndpoint {
  std::string host;
  uint16_t port = 0;
};
// 400 "node <name> has no address of the preferred types" / no port.
ApiResult<KubeletEndpoint> KubeletEndpointFor(
    const objects::corev1::Node& node,
    const std::vector<std::string>& preferred_types);

struct KubeletClientOptions {
  // --kubelet-client-certificate/--kubelet-client-key and
  // --kubelet-certificate-authority as one client context; null: plain
  // HTTP to the kubelet.
  std::shared_ptr<const net::TlsContext> tls;
  int max_streams = 256;
  // Streams of one user at once (KubeletStreamThreads).
  int max_streams_per_user = 64;
  Duration connect_timeout = seconds(5);
  // The kubelet's answer head must arrive within this time.
  Duration response_timeout = seconds(30);
  // A log stream reads no more from the kubelet while more than this many
  // bytes wait for its client, until the client took them down to half:
  // a slow reader slows the kubelet's stream, and each stream holds at
  // most about this much (not the connection's 16 MiB cap, past which the
  // connection closed and the log was cut).
  size_t log_high_water_bytes = 256 << 10;
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

// The threads of streams to the kubelets (pods/log, pods/exec): each runs
// on a thread of its own, at most `max_streams` at once and at most
// `max_per_user` of one user (so one user cannot take every slot), and may
// register how to end it early; finished threads are joined at the next
// Start and at Stop. Thread-safe.
class KubeletStreamThreads {
 public:
  KubeletStreamThreads(int max_streams, int max_per_user)
      : max_(max_streams), max_per_user_(max_per_user) {}
  ~KubeletStreamThreads();  // Stop()s
  KubeletStreamThreads(const KubeletStreamThreads&) = delete;
  KubeletStreamThreads& operator=(const KubeletStreamThreads&) = delete;

  // Runs fn(id) on a new thread for `user` ("": nobody's, only the total
  // counts); fn must call Finished(id) last. Returns the refusal instead:
  // 503 while stopping; 429 when full ("too many <what>, please try again
  // later") or when the user has max_per_user ("too many <what> for user
  // "alice" (at most 64 at once), please try again later").
  std::optional<ApiError> Start(std::string_view what, const std::string& user,
                                std::function<void(uint64_t id)> fn)
      EXCLUDES(mu_);
  // How to end stream `id` early (Cancel, Stop); false when stopping.
  bool SetCancel(uint64_t id, std::function<void()> cancel) EXCLUDES(mu_);
  // Runs stream `id`'s cancel function, if it is still registered.
  void Cancel(uint64_t id) EXCLUDES(mu_);
  void Finished(uint64_t id) EXCLUDES(mu_);
  int Active() EXCLUDES(mu_);
  // Cancels every stream and joins the threads. Idempotent.
  void Stop() EXCLUDES(mu_);

 private:
  void JoinFinished() EXCLUDES(mu_);

  const int max_;
  const int max_per_user_;
  Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::thread> threads_ GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ GUARDED_BY(mu_);
  std::map<uint64_t, std::function<void()>> cancels_ GUARDED_BY(mu_);
  std::map<uint64_t, std::string> user_of_ GUARDED_BY(mu_);  // running
  std::map<std::string, int> per_user_ GUARDED_BY(mu_);
};

class KubeletLogProxy {
 public:
  explicit KubeletLogProxy(KubeletClientOptions options);
  ~KubeletLogProxy();  // Stop()s
  KubeletLogProxy(const KubeletLogProxy&) = delete;
  KubeletLogProxy& operator=(const KubeletLogProxy&) = delete;

  // GETs `target` from the kubelet at `ep` on a thread of its own. A 200
  // is streamed to `r` (on_start first, then StartStream and the body as
  // it arrives, then Finish); anything else ends in exactly one
  // on_error(...) and nothing written to `r`: the kubelet unreachable (503
  // naming it), a non-200 answer (its status and text), too many streams
  // in all or of `user` (429, called before Stream returns; "": only the
  // total counts). The client going away cancels the kubelet request.
  void Stream(const KubeletEndpoint& ep, std::string target,
              const std::string& user, std::shared_ptr<net::Responder> r,
              std::function<void(const ApiError&)> on_error,
              std::function<void()> on_start);

  // Ends every stream (their clients' connections see the end) and joins
  // the threads. Idempotent.
  void Stop();

 private:
  void Run(uint64_t id, KubeletEndpoint ep, std::string target,
           std::shared_ptr<net::Responder> r,
           std::function<void(const ApiError&)> on_error,
           std::function<void()> on_start);

  const KubeletClientOptions options_;
  KubeletStreamThreads threads_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_POD_LOGS_H_
