#include "kubeletsim/pod_logs.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/mutex.h"
#include "base/saturating.h"
#include "base/strings.h"
#include "objects/time.h"

namespace kplane::kubeletsim {
namespace {

StatusOr<std::optional<int64_t>> IntParam(const net::HttpRequest& req,
                                          std::string_view name) {
  if (!req.HasQueryParam(name)) return std::optional<int64_t>();
  std::optional<int64_t> v = ParseInt64(req.QueryParam(name));
  if (!v) {
    return InvalidArgumentError(std::string(name) + ": invalid value " +
                                GoQuote(req.QueryParam(name)));
  }
  return v;
}

bool BoolParam(const net::HttpRequest& req, std::string_view name) {
  std::optional<bool> v = ParseBool(req.QueryParam(name));
  return v.value_or(false);
}

// Go's RFC3339NanoFixed, as the kubelet writes log timestamps.
std::string FormatNanoFixed(WallTime t) {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
          .count();
  int64_t sec = ns / 1000000000;
  int64_t frac = ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    --sec;
  }
  std::string base = objects::FormatRfc3339(sec);  // "...:SSZ"
  base.pop_back();
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%09lldZ", static_cast<long long>(frac));
  return base + buf;
}

}  // namespace

StatusOr<LogQuery> ParseLogQuery(const net::HttpRequest& req) {
  LogQuery q;
  q.follow = BoolParam(req, "follow");
  q.previous = BoolParam(req, "previous");
  q.timestamps = BoolParam(req, "timestamps");
  ASSIGN_OR_RETURN(q.tail_lines, IntParam(req, "tailLines"));
  ASSIGN_OR_RETURN(q.limit_bytes, IntParam(req, "limitBytes"));
  ASSIGN_OR_RETURN(q.since_seconds, IntParam(req, "sinceSeconds"));
  if (req.HasQueryParam("sinceTime")) {
    StatusOr<objects::Timestamp> t =
        objects::ParseRfc3339(req.QueryParam("sinceTime"));
    if (!t.ok())
      return InvalidArgumentError("sinceTime: " + t.status().message());
    q.since_time = WallTime(SaturatingSeconds(t->seconds));
  }
  return q;
}

Duration LogIntervalFromAnnotation(std::string_view annotation) {
  if (annotation.empty()) return kDefaultLogInterval;
  StatusOr<int64_t> ns = objects::ParseGoDurationNanos(annotation);
  if (!ns.ok() || *ns <= 0) return kDefaultLogInterval;
  return std::clamp<Duration>(std::chrono::nanoseconds(*ns), kMinLogInterval,
                              kMaxLogInterval);
}

WallTime LineTime(const LogSource& s, int64_t i) {
  return s.started_at + s.interval * i;
}

int64_t LinesWritten(const LogSource& s, WallTime now) {
  WallTime end = s.finished_at ? std::min(now, *s.finished_at) : now;
  if (end < s.started_at) return 0;
  if (s.interval <= Duration(0)) return 1;
  return (end - s.started_at) / s.interval + 1;
}

int64_t FirstLine(const LogSource& s, const LogQuery& q, int64_t written,
                  WallTime now) {
  int64_t first = 0;
  std::optional<WallTime> since = q.since_time;
  if (q.since_seconds) {
    const int64_t back = std::max<int64_t>(*q.since_seconds, 0);
    WallTime t = SaturatingAdd(now, -SaturatingSeconds(back));
    if (!since || t > *since) since = t;
  }
  if (since && *since > s.started_at && s.interval > Duration(0)) {
    // The first line written at or after `since`.
    const Duration d = *since - s.started_at;
    first = d / s.interval + (d % s.interval != Duration(0) ? 1 : 0);
  }
  if (q.tail_lines && *q.tail_lines >= 0) {
    first = std::max(first, written - std::min(*q.tail_lines, written));
  }
  first = std::max(first, written - kRetainedLogLines);
  return std::min(std::max<int64_t>(first, 0), written);
}

std::string LogLine(const LogSource& s, int64_t i, bool timestamps) {
  std::string line;
  if (timestamps) line = FormatNanoFixed(LineTime(s, i)) + " ";
  const std::string pod = s.ns + "/" + s.pod;
  if (i == 0) {
    line += "kubeletsim: container " + s.container + " of pod " + pod +
            " started\n";
  } else {
    line += s.container + ": log line " + std::to_string(i) + " of pod " + pod +
            "\n";
  }
  return line;
}

namespace {

const net::HttpHeaders kText = {{"Content-Type", "text/plain"}};

// Appends lines [from, to) to *out, at most *bytes_left bytes of them (the
// last line cut); returns false once the limit is used up.
bool AppendLines(const LogSource& s, bool timestamps, int64_t from, int64_t to,
                 std::optional<int64_t>* bytes_left, std::string* out) {
  for (int64_t i = from; i < to; ++i) {
    std::string line = LogLine(s, i, timestamps);
    if (*bytes_left) {
      if (**bytes_left <= 0) return false;
      if (static_cast<int64_t>(line.size()) >= **bytes_left) {
        out->append(line, 0, static_cast<size_t>(**bytes_left));
        **bytes_left = 0;
        return false;
      }
      **bytes_left -= static_cast<int64_t>(line.size());
    }
    out->append(line);
  }
  return true;
}

// One `follow` stream: a timer per next line, on the fleet's timer queue.
class LogFollower : public std::enable_shared_from_this<LogFollower> {
 public:
  LogFollower(const LogQuery& q, std::function<StatusOr<LogSource>()> lookup,
              Clock* clock, TimerQueue* timers,
              std::shared_ptr<net::Responder> r)
      : timestamps_(q.timestamps),
        lookup_(std::move(lookup)),
        clock_(clock),
        timers_(timers),
        r_(std::move(r)),
        bytes_left_(q.limit_bytes) {}

  // Streams the lines from `next` on, starting with those already written.
  void Start(const LogSource& s, int64_t next) {
    r_->StartStream(200, kText);
    // Strong references: the exchange and the pending timer keep the
    // follower alive; OnClose always runs once the exchange is over, which
    // drops the responder's reference.
    r_->OnClose([self = shared_from_this()] { self->Close(); });
    MutexLock l(&mu_);
    next_ = next;
    Advance(s);
  }

 private:
  void Tick() {
    StatusOr<LogSource> s = lookup_();
    MutexLock l(&mu_);
    timer_ = 0;
    if (done_) return;
    if (!s.ok()) {  // the pod is gone
      Finish();
      return;
    }
    Advance(*s);
  }

  void Close() {
    MutexLock l(&mu_);
    done_ = true;
    timers_->Cancel(timer_);
    timer_ = 0;
  }

  // Writes what is due by now; then finishes or waits for the next line.
  void Advance(const LogSource& s) REQUIRES(mu_) {
    if (done_) return;
    // Both clocks read once, before the write: a clock that moves while
    // the lines are written (a test's fake clock advanced as soon as it
    // reads them) must not push the next line's timer later by as much.
    const WallTime now = clock_->WallNow();
    const TimePoint mono_now = clock_->Now();
    const int64_t written = LinesWritten(s, now);
    // A follower whose timer ran late skips what was rotated away since.
    next_ = std::max(next_, written - kRetainedLogLines);
    std::string out;
    const bool more =
        AppendLines(s, timestamps_, next_, written, &bytes_left_, &out);
    next_ = std::max(next_, written);
    if (!out.empty() && !r_->Write(out)) {
      done_ = true;  // the client went away
      return;
    }
    if (!more || (s.finished_at && now >= *s.finished_at)) {
      Finish();
      return;
    }
    const Duration wait = LineTime(s, next_) - now;
    timer_ = timers_->Schedule(
        mono_now + std::max(wait, Duration(0)),
        [self = shared_from_this()](TimePoint) { self->Tick(); });
    if (timer_ == 0) Finish();  // the fleet is stopping
  }

  void Finish() REQUIRES(mu_) {
    done_ = true;
    r_->Finish();
  }

  const bool timestamps_;
  const std::function<StatusOr<LogSource>()> lookup_;
  Clock* const clock_;
  TimerQueue* const timers_;
  const std::shared_ptr<net::Responder> r_;
  Mutex mu_;
  std::optional<int64_t> bytes_left_ GUARDED_BY(mu_);
  int64_t next_ GUARDED_BY(mu_) = 0;
  TimerId timer_ GUARDED_BY(mu_) = 0;
  bool done_ GUARDED_BY(mu_) = false;
};

}  // namespace

void ServeContainerLog(const LogQuery& q,
                       std::function<StatusOr<LogSource>()> lookup,
                       Clock* clock, TimerQueue* timers,
                       std::shared_ptr<net::Responder> r) {
  StatusOr<LogSource> s = lookup();
  if (!s.ok()) {
    const int code = s.status().code() == StatusCode::kNotFound ? 404 : 400;
    r->Respond(code, kText, s.status().message());
    return;
  }
  const WallTime now = clock->WallNow();
  const int64_t written = LinesWritten(*s, now);
  const int64_t first = FirstLine(*s, q, written, now);
  if (q.follow) {
    auto f =
        std::make_shared<LogFollower>(q, std::move(lookup), clock, timers, r);
    f->Start(*s, first);
    return;
  }
  std::optional<int64_t> bytes_left = q.limit_bytes;
  std::string out;
  AppendLines(*s, q.timestamps, first, written, &bytes_left, &out);
  r->Respond(200, kText, std::move(out));
}

}  // namespace kplane::kubeletsim
