// RunLoad: a closed-loop HTTP/1.1 load generator. N clients each run a
// script of sequential requests (send, wait for the answer, send the next)
// over keep-alive connections, from a few epoll threads, for a fixed time or
// number of operations. It measures what a client sees: operations per
// second and latency percentiles (bench/histogram.h), plus its own CPU time,
// so results can be compared like for like between servers (our store and a
// real etcd through the same JSON API, or the apiserver).
//
// An *operation* may take several requests (the apiserver's update pattern
// is a read then a compare-and-swap): the script says when one is done, and
// the operation's latency runs from its first request to its last answer.
//
// Each client owns one connection (the servers handle a connection's
// requests one at a time, so sharing a connection would only serialize
// clients). Connections go to the endpoints round-robin.
//
// https:// endpoints are served over TLS (net/tls.h) with the ClientTls the
// endpoints were parsed with (etcdctl's --cacert/--cert/--key); the
// handshake is part of connecting, which happens before the measured window
// unless a connection breaks.
//
// Thread-safety: RunLoad blocks the caller; scripts are called on the loop
// threads, each client's script always from the same thread.
#ifndef KPLANE_BENCH_LOAD_H_
#define KPLANE_BENCH_LOAD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "bench/histogram.h"
#include "net/http_message.h"
#include "net/tls.h"

namespace kplane::bench {

// What a benchmark client presents and trusts on https:// endpoints: the
// PEM texts (gRPC's SslCredentials takes them) and the context built from
// them for HTTP/1.1 (bench/load.cc).
struct ClientTls {
  std::string ca_pem;  // empty: the system's trust store
  std::string cert_pem;
  std::string key_pem;
  std::shared_ptr<const net::TlsContext> context;
};
// Reads the files (any may be empty, a certificate needs its key) and builds
// the context. kNotFound / kInvalidArgument as net::TlsContext::NewClient.
StatusOr<std::shared_ptr<const ClientTls>> LoadClientTls(
    const std::string& ca_file, const std::string& cert_file,
    const std::string& key_file);

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  // Set for an https:// endpoint: connections to it speak TLS.
  std::shared_ptr<const ClientTls> tls;
};
// "http://127.0.0.1:2379,https://..." -> endpoints. An https:// endpoint
// gets `tls`, or, when it is null, a ClientTls trusting the system's CAs.
StatusOr<std::vector<Endpoint>> ParseEndpoints(
    std::string_view list, std::shared_ptr<const ClientTls> tls = nullptr);

struct Request {
  std::string method = "POST";
  std::string path;
  std::string body;
  std::string content_type = "application/json";
};

// What the script says about an answer.
enum class Step {
  kContinue,  // the operation goes on: call Next() again
  kDone,      // the operation completed successfully
  kFailed,    // the operation failed (counted as an error)
};

class ClientScript {
 public:
  virtual ~ClientScript() = default;
  // The next request of the current (or a new) operation. A request with
  // an empty method means this client has no more work: it stays idle, and
  // the run ends early once every client is idle.
  virtual Request Next() = 0;
  // The answer to the last request.
  virtual Step OnResponse(const net::HttpResponse& response) = 0;
};

struct LoadOptions {
  std::vector<Endpoint> endpoints;
  int clients = 1;
  int threads = 1;  // event-loop threads driving the clients
  Duration duration = seconds(10);
  int64_t max_operations = 0;  // 0: run for `duration`
  // With max_operations: give up after this long even if the count was not
  // reached (failed operations do not count towards it). 0: no limit.
  Duration time_limit = Duration(0);
  Duration warmup = Duration(0);  // operations in this time are not counted
  Duration request_timeout = seconds(10);
  // Builds client i's script.
  std::function<std::unique_ptr<ClientScript>(int client)> make_script;
};

struct LoadResult {
  int64_t operations = 0;  // successful operations counted
  int64_t errors = 0;
  double seconds = 0;  // measured window
  LatencyHistogram latency;
  double client_cpu_seconds = 0;  // this process, during the window
  // The run ended because every client's script ran out of work (not on
  // its duration, count or time limit).
  bool all_idle = false;
  std::vector<std::string> sample_errors;  // a few, for the report

  double ops_per_second() const {
    return seconds > 0 ? operations / seconds : 0;
  }
};

StatusOr<LoadResult> RunLoad(const LoadOptions& options);

// Monotonic clock in nanoseconds (latency samples and run lengths).
int64_t NowNs();
// CPU seconds (user + system) this process has used so far.
double SelfCpuSeconds();

// CPU seconds (user + system) a process has used so far (/proc/<pid>/stat).
StatusOr<double> ProcessCpuSeconds(int pid);
// Resident set size in bytes (/proc/<pid>/status VmRSS).
StatusOr<int64_t> ProcessRssBytes(int pid);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_LOAD_H_
