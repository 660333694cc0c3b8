#include "objects/time.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"

namespace kplane::objects {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date, and back. Eras of 400
// years (146097 days) make both directions branch-free for any year.
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;  // [0, 399]
  const int64_t doy =
      (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;         // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int* m, int* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

void PutDigits(char* out, int64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

// "YYYY-MM-DDTHH:MM:SS" for years 0..9999 (Kubernetes times live there; the
// codec never sees others). Hand-written: snprintf dominated encoding.
std::string FormatDateTime(int64_t unix_seconds) {
  const int64_t days = FloorDiv(unix_seconds, 86400);
  const int64_t secs = unix_seconds - days * 86400;
  int64_t y;
  int m, d;
  CivilFromDays(days, &y, &m, &d);
  if (y < 0 || y > 9999) {
    char buf[64];
    std::snprintf(
        buf, sizeof(buf), "%lld-%02d-%02dT%02d:%02d:%02d",
        static_cast<long long>(y), m, d, static_cast<int>(secs / 3600),
        static_cast<int>(secs / 60 % 60), static_cast<int>(secs % 60));
    return buf;
  }
  std::string out(19, ':');
  PutDigits(&out[0], y, 4);
  out[4] = '-';
  PutDigits(&out[5], m, 2);
  out[7] = '-';
  PutDigits(&out[8], d, 2);
  out[10] = 'T';
  PutDigits(&out[11], secs / 3600, 2);
  PutDigits(&out[14], secs / 60 % 60, 2);
  PutDigits(&out[17], secs % 60, 2);
  return out;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` decimal digits at s[*pos].
bool Digits(std::string_view s, size_t* pos, size_t n, int* out) {
  if (*pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

}  // namespace

std::string FormatRfc3339(int64_t unix_seconds) {
  return FormatDateTime(unix_seconds) + "Z";
}

std::string FormatRfc3339Micro(int64_t unix_seconds, int32_t nanos) {
  std::string out = FormatDateTime(unix_seconds);
  const size_t at = out.size();
  out.append(".000000Z");
  PutDigits(&out[at + 1], nanos / 1000, 6);
  return out;
}

StatusOr<Timestamp> ParseRfc3339(std::string_view text) {
  auto bad = [&] {
    return InvalidArgumentError("parsing time \"" + std::string(text) +
                                "\" as RFC 3339");
  };
  size_t pos = 0;
  int year, month, day, hour, minute, second;
  if (!Digits(text, &pos, 4, &year) || !Expect(text, &pos, '-') ||
      !Digits(text, &pos, 2, &month) || !Expect(text, &pos, '-') ||
      !Digits(text, &pos, 2, &day)) {
    return bad();
  }
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't')) {
    return bad();
  }
  ++pos;
  if (!Digits(text, &pos, 2, &hour) || !Expect(text, &pos, ':') ||
      !Digits(text, &pos, 2, &minute) || !Expect(text, &pos, ':') ||
      !Digits(text, &pos, 2, &second)) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) ||
      hour > 23 || minute > 59 || second > 59) {
    return bad();
  }
  int32_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    int32_t scale = 100000000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      nanos += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad();
  }
  int offset_seconds = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!Digits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') ||
        !Digits(text, &pos, 2, &om) || oh > 23 || om > 59) {
      return bad();
    }
    offset_seconds = sign * (oh * 3600 + om * 60);
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  Timestamp ts;
  ts.seconds = DaysFromCivil(year, month, day) * 86400 + hour * 3600 +
               minute * 60 + second - offset_seconds;
  ts.nanos = nanos;
  return ts;
}

std::string FormatGoDuration(int64_t nanos) {
  if (nanos == 0) return "0s";
  const bool negative = nanos < 0;
  // Work in unsigned so that the minimum int64 negates without overflow.
  uint64_t u = negative ? 0 - static_cast<uint64_t>(nanos)
                        : static_cast<uint64_t>(nanos);
  // Appends `v / 10^digits` with its fraction, trailing zeros removed.
  auto fixed = [](uint64_t v, int digits) {
    uint64_t pow = 1;
    for (int i = 0; i < digits; ++i) pow *= 10;
    std::string out = std::to_string(v / pow);
    uint64_t frac = v % pow;
    if (frac != 0) {
      std::string f = std::to_string(frac);
      f.insert(0, static_cast<size_t>(digits) - f.size(), '0');
      while (!f.empty() && f.back() == '0') f.pop_back();
      out += "." + f;
    }
    return out;
  };
  std::string out;
  if (u < 1000000000ULL) {
    // Below one second Go picks the largest unit that keeps a leading digit.
    if (u < 1000) {
      out = std::to_string(u) + "ns";
    } else if (u < 1000000) {
      out = fixed(u, 3) + "\xc2\xb5s";  // "µs", as Go writes it
    } else {
      out = fixed(u, 6) + "ms";
    }
  } else {
    const uint64_t total_seconds = u / 1000000000ULL;
    const uint64_t hours = total_seconds / 3600;
    const uint64_t minutes = total_seconds / 60 % 60;
    const uint64_t sec_nanos = u % 60000000000ULL;  // seconds part, in ns
    if (hours > 0) out += std::to_string(hours) + "h";
    if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
    out += fixed(sec_nanos, 9) + "s";
  }
  return negative ? "-" + out : out;
}

StatusOr<int64_t> ParseGoDurationNanos(std::string_view text) {
  std::optional<int64_t> v = ParseGoDuration(text);
  if (!v) {
    return InvalidArgumentError("invalid duration \"" + std::string(text) +
                                "\"");
  }
  return *v;
}

bool IsZero(const metav1::Time& t) {
  return !t.has_seconds() && !t.has_nanos();
}

void SetTime(metav1::Time* t, int64_t unix_seconds) {
  t->set_seconds(unix_seconds);
  t->set_nanos(0);
}

void SetTime(metav1::Time* t, WallTime when) {
  const auto s = std::chrono::floor<std::chrono::seconds>(when);
  SetTime(t, static_cast<int64_t>(s.time_since_epoch().count()));
}

int64_t UnixSeconds(const metav1::Time& t) { return t.seconds(); }

metav1::Time TimeNow(const Clock& clock) {
  metav1::Time t;
  SetTime(&t, clock.WallNow());
  return t;
}

bool IsZero(const metav1::MicroTime& t) {
  return !t.has_seconds() && !t.has_nanos();
}

void SetMicroTime(metav1::MicroTime* t, int64_t unix_seconds, int32_t nanos) {
  t->set_seconds(unix_seconds);
  t->set_nanos(nanos / 1000 * 1000);
}

void SetMicroTime(metav1::MicroTime* t, WallTime when) {
  const auto us = std::chrono::floor<std::chrono::microseconds>(when)
                      .time_since_epoch()
                      .count();
  const int64_t secs = FloorDiv(us, 1000000);
  SetMicroTime(t, secs, static_cast<int32_t>((us - secs * 1000000) * 1000));
}

namespace {

// A time's seconds as the clock can hold them: clamped to half the clock's
// range either side of 1970 (about 1824 to 2116), so that converting it and
// taking its difference with now cannot overflow. Kubernetes' times run
// from year 1 to 9999, past the nanosecond clock's 1678 to 2262, and the
// far ones (a client's "9999-12-31T23:59:59Z") are only ever compared.
std::chrono::seconds ClockSeconds(int64_t s) {
  constexpr int64_t kLimit =
      std::chrono::duration_cast<std::chrono::seconds>(
          WallTime::duration::max())
          .count() /
      2;
  return std::chrono::seconds(std::clamp(s, -kLimit, kLimit));
}

}  // namespace

WallTime ToWallTime(const metav1::MicroTime& t) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      ClockSeconds(t.seconds()) + std::chrono::nanoseconds(t.nanos())));
}

WallTime ToWallTime(const metav1::Time& t) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      ClockSeconds(t.seconds())));
}

metav1::MicroTime MicroTimeNow(const Clock& clock) {
  metav1::MicroTime t;
  SetMicroTime(&t, clock.WallNow());
  return t;
}

}  // namespace kplane::objects
