// Simulated container logs: what `kubectl logs` shows for a pod on a
// simulated node, generated from the container's start time alone, so a
// fleet of thousands of pods stores no log bytes at all.
//
// A container that started at T writes line 0 at T and line i at
// T + i * interval (the pod's kubeletsim.kplane.io/log-interval annotation,
// a Go duration, default 10s), and no line after it finished:
//
//   2026-12-03T17:00:00.000000000Z kubeletsim: container app of pod default/web
//   started 2026-12-03T17:00:10.000000000Z app: log line 1 of pod default/web
//   2026-12-03T17:00:20.000000000Z app: log line 2 of pod default/web
//
// (the timestamp prefix only with timestamps=true). The interval is held
// between 1 ms and 24 h, and only the last kRetainedLogLines lines exist
// (about 10 MB, the kubelet's default containerLogMaxSize: it rotates the
// older ones away), so no answer grows with the container's age. The
// kubelet's query parameters select lines as it does: sinceSeconds/
// sinceTime drop lines written before, tailLines keeps the last n of
// those, limitBytes cuts the answer (mid-line, as the kubelet does).
//
// Thread-safety: pure functions. Errors: ParseLogQuery returns
// kInvalidArgument naming the bad parameter.
#ifndef KPLANE_KUBELETSIM_POD_LOGS_H_
#define KPLANE_KUBELETSIM_POD_LOGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/statusor.h"
#include "kubeletsim/timer_queue.h"
#include "net/http_message.h"
#include "net/http_server.h"

namespace kplane::kubeletsim {

inline constexpr char kLogIntervalAnnotation[] =
    "kubeletsim.kplane.io/log-interval";
inline constexpr Duration kDefaultLogInterval = std::chrono::seconds(10);
inline constexpr Duration kMinLogInterval = std::chrono::milliseconds(1);
inline constexpr Duration kMaxLogInterval = std::chrono::hours(24);
inline constexpr int64_t kRetainedLogLines = 100000;

// The annotation's interval: a Go duration held in [kMinLogInterval,
// kMaxLogInterval]; the default when empty, unparsable or not positive.
Duration LogIntervalFromAnnotation(std::string_view annotation);

// One run of one container.
struct LogSource {
  std::string ns, pod, container;
  WallTime started_at;
  std::optional<WallTime> finished_at;  // terminated: its last line is due
                                        // no later than this
  Duration interval = kDefaultLogInterval;
};

// The kubelet's /containerLogs query parameters.
struct LogQuery {
  bool follow = false;
  bool previous = false;
  bool timestamps = false;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
  std::optional<int64_t> since_seconds;
  std::optional<WallTime> since_time;
};
StatusOr<LogQuery> ParseLogQuery(const net::HttpRequest& req);

// Line i, newline-terminated.
std::string LogLine(const LogSource& s, int64_t i, bool timestamps);
// When line i is written.
WallTime LineTime(const LogSource& s, int64_t i);
// The number of lines written by `now` (0 before the start).
int64_t LinesWritten(const LogSource& s, WallTime now);
// The first line the query shows, of the `written` lines so far (never
// one of those rotated away: older than the last kRetainedLogLines).
int64_t FirstLine(const LogSource& s, const LogQuery& q, int64_t written,
                  WallTime now);

// Serves one /containerLogs request: `lookup` says where the container's
// log stands now (kNotFound -> 404; other errors -> 400 with the message
// as a plain-text body, as the kubelet answers). Without follow the lines
// written so far are answered at once. With follow they are streamed and
// each further line is written when it is due, from a timer on `timers`
// (no thread per follower); `lookup` is asked again at every line, so the
// stream ends when the container finishes or the pod goes away, and the
// timer is cancelled when the client goes.
void ServeContainerLog(const LogQuery& q,
                       std::function<StatusOr<LogSource>()> lookup,
                       Clock* clock, TimerQueue* timers,
                       std::shared_ptr<net::Responder> r);

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_POD_LOGS_H_
