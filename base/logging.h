// Minimal glog-style logging to stderr.
//
//   LOG(INFO) << "applied " << n << " entries";
//   CHECK(ok) << "broken invariant";          // aborts with the message
//   CHECK_EQ(a, b);  DCHECK(x);
//
// A line looks like "I1129 10:20:18.123456 4242 raft.cc:88] message".
// The minimum level comes from SetMinLogLevel() or the environment variable
// KPLANE_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR). FATAL always logs and then
// aborts: a broken invariant or a failed durable write must crash the
// process loudly (etcd's lg.Panic, leveldb's sticky bg_error_).
//
// Thread-safety: logging from any thread is safe; lines never interleave.
#ifndef KPLANE_BASE_LOGGING_H_
#define KPLANE_BASE_LOGGING_H_

#include <sstream>
#include <string>

namespace kplane {

enum class LogLevel : int { kDebug = 0, kInfo, kWarning, kError, kFatal };

void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
// Optional process tag printed after the level letter, e.g. the member name.
void SetLogTag(const std::string& tag);

namespace internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Swallows the stream when a log statement is disabled.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace kplane

#define KP_LOG_LEVEL_DEBUG ::kplane::LogLevel::kDebug
#define KP_LOG_LEVEL_INFO ::kplane::LogLevel::kInfo
#define KP_LOG_LEVEL_WARNING ::kplane::LogLevel::kWarning
#define KP_LOG_LEVEL_ERROR ::kplane::LogLevel::kError
#define KP_LOG_LEVEL_FATAL ::kplane::LogLevel::kFatal

#define LOG(level)                                                     \
  !(KP_LOG_LEVEL_##level >= ::kplane::MinLogLevel())                   \
      ? (void)0                                                        \
      : ::kplane::internal::LogVoidify() &                             \
            ::kplane::internal::LogMessage(KP_LOG_LEVEL_##level,       \
                                           __FILE__, __LINE__)         \
                .stream()

#define CHECK(cond)                                                    \
  (cond) ? (void)0                                                     \
         : ::kplane::internal::LogVoidify() &                          \
               ::kplane::internal::LogMessage(::kplane::LogLevel::kFatal, \
                                              __FILE__, __LINE__)      \
                       .stream()                                       \
                   << "Check failed: " #cond " "

#define KP_CHECK_OP(a, b, op)                                          \
  ((a)op(b)) ? (void)0                                                 \
             : ::kplane::internal::LogVoidify() &                      \
                   ::kplane::internal::LogMessage(                     \
                       ::kplane::LogLevel::kFatal, __FILE__, __LINE__) \
                           .stream()                                   \
                       << "Check failed: " #a " " #op " " #b " ("      \
                       << (a) << " vs " << (b) << ") "

#define CHECK_EQ(a, b) KP_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) KP_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) KP_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) KP_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) KP_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) KP_CHECK_OP(a, b, >=)
#define CHECK_OK(expr)                                                 \
  do {                                                                 \
    ::kplane::Status _kp_s = (expr);                                   \
    CHECK(_kp_s.ok()) << _kp_s.ToString();                             \
  } while (0)

#ifdef NDEBUG
#define DCHECK(cond) \
  while (false) CHECK(cond)
#else
#define DCHECK(cond) CHECK(cond)
#endif

#endif  // KPLANE_BASE_LOGGING_H_
