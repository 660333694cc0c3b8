#include "objects/machinery/duration.h"

#include "base/strings.h"

namespace kplane::machinery {

namespace {

std::string Fmt(int64_t a, const char* ua) { return std::to_string(a) + ua; }
std::string Fmt(int64_t a, const char* ua, int64_t b, const char* ub) {
  return std::to_string(a) + ua + std::to_string(b) + ub;
}

// Go's int(d.Seconds()): truncation toward zero of a float division.
int64_t TruncSeconds(int64_t nanos) { return nanos / kSecond; }

}  // namespace

std::string HumanDuration(int64_t d) {
  int64_t seconds = TruncSeconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return Fmt(seconds, "s");
  int64_t minutes = d / kMinute;
  if (minutes < 10) {
    int64_t s = (d / kSecond) % 60;
    return s == 0 ? Fmt(minutes, "m") : Fmt(minutes, "m", s, "s");
  }
  if (minutes < 60 * 3) return Fmt(minutes, "m");
  int64_t hours = d / kHour;
  if (hours < 8) {
    int64_t m = (d / kMinute) % 60;
    return m == 0 ? Fmt(hours, "h") : Fmt(hours, "h", m, "m");
  }
  if (hours < 48) return Fmt(hours, "h");
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    return h == 0 ? Fmt(hours / 24, "d") : Fmt(hours / 24, "d", h, "h");
  }
  if (hours < 24 * 365 * 2) return Fmt(hours / 24, "d");
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    return dy == 0 ? Fmt(hours / 24 / 365, "y")
                   : Fmt(hours / 24 / 365, "y", dy, "d");
  }
  return Fmt(hours / 24 / 365, "y");
}

std::string ShortHumanDuration(int64_t d) {
  int64_t seconds = TruncSeconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60) return Fmt(seconds, "s");
  int64_t minutes = d / kMinute;
  if (minutes < 60) return Fmt(minutes, "m");
  int64_t hours = d / kHour;
  if (hours < 24) return Fmt(hours, "h");
  if (hours < 24 * 365) return Fmt(hours / 24, "d");
  return Fmt(hours / 24 / 365, "y");
}

std::string GoDurationString(int64_t d) {
  if (d == 0) return "0s";
  bool neg = d < 0;
  uint64_t u = neg ? static_cast<uint64_t>(0) - static_cast<uint64_t>(d)
                   : static_cast<uint64_t>(d);
  // "<int>.<frac without trailing zeros>" of u / 10^prec.
  auto frac = [](uint64_t v, int prec, uint64_t* whole) {
    std::string digits;
    bool print = false;
    for (int i = 0; i < prec; ++i) {
      int digit = static_cast<int>(v % 10);
      print = print || digit != 0;
      if (print) digits.insert(digits.begin(), static_cast<char>('0' + digit));
      v /= 10;
    }
    *whole = v;
    return print ? "." + digits : std::string();
  };
  std::string out;
  if (u < static_cast<uint64_t>(kSecond)) {
    int prec;
    std::string unit;
    if (u < static_cast<uint64_t>(kMicrosecond)) {
      prec = 0;
      unit = "ns";
    } else if (u < static_cast<uint64_t>(kMillisecond)) {
      prec = 3;
      unit = "\xC2\xB5s";  // µs
    } else {
      prec = 6;
      unit = "ms";
    }
    uint64_t whole;
    std::string f = frac(u, prec, &whole);
    out = std::to_string(whole) + f + unit;
  } else {
    uint64_t secs;
    std::string f = frac(u, 9, &secs);
    out = std::to_string(secs % 60) + f + "s";
    uint64_t mins = secs / 60;
    if (mins > 0) {
      out = std::to_string(mins % 60) + "m" + out;
      uint64_t hours = mins / 60;
      if (hours > 0) out = std::to_string(hours) + "h" + out;
    }
  }
  return neg ? "-" + out : out;
}

StatusOr<int64_t> ParseDuration(std::string_view s) {
  auto d = ParseGoDuration(s);
  if (!d) {
    return InvalidArgumentError("time: invalid duration \"" + std::string(s) +
                                "\"");
  }
  return *d;
}

}  // namespace kplane::machinery
