#include "base/logging.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/mutex.h"
#include "base/status.h"
#include "base/statusor.h"

namespace kplane {
namespace {

LogLevel LevelFromEnv() {
  const char* v = std::getenv("KPLANE_LOG_LEVEL");
  if (v == nullptr) return LogLevel::kInfo;
  if (strcasecmp(v, "DEBUG") == 0) return LogLevel::kDebug;
  if (strcasecmp(v, "WARNING") == 0) return LogLevel::kWarning;
  if (strcasecmp(v, "ERROR") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<int> g_min_level{static_cast<int>(LevelFromEnv())};
// Guards the tag and serializes the writes to stderr.
Mutex g_mu;
std::string* const g_tag PT_GUARDED_BY(g_mu) = new std::string();

const char kLevelLetters[] = "DIWEF";

}  // namespace

void SetMinLogLevel(LogLevel level) {
  g_min_level.store(static_cast<int>(level));
}
LogLevel MinLogLevel() { return static_cast<LogLevel>(g_min_level.load()); }
void SetLogTag(const std::string& tag) {
  MutexLock l(&g_mu);
  *g_tag = tag;
}

namespace internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  const char* base = std::strrchr(file_, '/');
  base = base ? base + 1 : file_;
  char prefix[128];
  std::snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06ld %ld ",
                kLevelLetters[static_cast<int>(level_)], tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(tv.tv_usec),
                static_cast<long>(syscall(SYS_gettid)));
  std::string line;
  {
    MutexLock l(&g_mu);
    line = prefix;
    if (!g_tag->empty()) line += "[" + *g_tag + "] ";
  }
  line += base;
  line += ":" + std::to_string(line_) + "] " + stream_.str() + "\n";
  {
    MutexLock l(&g_mu);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
  if (level_ == LogLevel::kFatal) std::abort();
}

[[noreturn]] void StatusOrAccessError(const Status& s) {
  LogMessage(LogLevel::kFatal, __FILE__, __LINE__).stream()
      << "value() on a StatusOr holding " << s.ToString();
  std::abort();
}

}  // namespace internal
}  // namespace kplane
