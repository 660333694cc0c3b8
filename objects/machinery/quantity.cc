#include "objects/machinery/quantity.h"

#include <algorithm>

#include "base/logging.h"
#include "base/strings.h"

namespace kplane::machinery {

namespace {

using int128 = __int128;

constexpr int128 kNanosPerUnit = 1000000000;

Status ErrFormatWrong() {
  return InvalidArgumentError(
      "quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}
Status ErrNumeric() {
  return InvalidArgumentError("unable to parse numeric part of quantity");
}
Status ErrSuffix() {
  return InvalidArgumentError("unable to parse quantity's suffix");
}
Status ErrRange() {
  return InvalidArgumentError("quantity is too large to represent");
}

std::string Int128ToString(int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  // Work on the negative side so the minimum value does not overflow.
  if (!neg) v = -v;
  std::string s;
  while (v != 0) {
    s.push_back(static_cast<char>('0' - static_cast<int>(v % 10)));
    v /= 10;
  }
  if (neg) s.push_back('-');
  std::reverse(s.begin(), s.end());
  return s;
}

bool MulOverflows(int128 a, int128 b, int128* out) {
  return __builtin_mul_overflow(a, b, out);
}

bool Pow10(int n, int128* out) {
  int128 r = 1;
  for (int i = 0; i < n; ++i) {
    if (MulOverflows(r, 10, &r)) return false;
  }
  *out = r;
  return true;
}

// Divides |n| by 10^k rounding away from zero.
int128 DivPow10RoundUp(int128 n, int k) {
  bool neg = n < 0;
  if (neg) n = -n;
  int128 p;
  if (!Pow10(k, &p)) return n == 0 ? 0 : (neg ? -1 : 1);
  int128 q = n / p + (n % p != 0 ? 1 : 0);
  return neg ? -q : q;
}

int64_t Saturate(int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

struct Parts {
  bool positive = true;
  std::string num, denom, suffix;
};

// parseQuantityString: sign, integer digits (leading zeros dropped), fraction
// digits and suffix.
Status SplitQuantity(std::string_view str, Parts* p) {
  size_t pos = 0, end = str.size();
  if (pos < end && (str[0] == '-' || str[0] == '+')) {
    p->positive = str[0] != '-';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;
  if (pos >= end) {
    p->num = "0";
    return Status::Ok();
  }
  size_t num_start = pos;
  while (pos < end && str[pos] >= '0' && str[pos] <= '9') ++pos;
  p->num = std::string(str.substr(num_start, pos - num_start));
  if (pos >= end) return Status::Ok();
  if (p->num.empty()) p->num = "0";
  if (str[pos] == '.') {
    ++pos;
    size_t d = pos;
    while (pos < end && str[pos] >= '0' && str[pos] <= '9') ++pos;
    p->denom = std::string(str.substr(d, pos - d));
    if (pos >= end) return Status::Ok();
  }
  size_t suffix_start = pos;
  static constexpr std::string_view kSuffixChars = "eEinumkKMGTP";
  while (pos < end && kSuffixChars.find(str[pos]) != std::string_view::npos) {
    ++pos;
  }
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && str[pos] >= '0' && str[pos] <= '9') ++pos;
  if (pos < end) return ErrFormatWrong();
  p->suffix = std::string(str.substr(suffix_start));
  return Status::Ok();
}

struct SuffixInfo {
  int base;
  int exponent;
  Quantity::Format format;
};

bool InterpretSuffix(std::string_view s, SuffixInfo* out) {
  static const struct {
    std::string_view s;
    int base, exp;
    Quantity::Format f;
  } kTable[] = {
      {"", 10, 0, Quantity::Format::kDecimalSI},
      {"n", 10, -9, Quantity::Format::kDecimalSI},
      {"u", 10, -6, Quantity::Format::kDecimalSI},
      {"m", 10, -3, Quantity::Format::kDecimalSI},
      {"k", 10, 3, Quantity::Format::kDecimalSI},
      {"M", 10, 6, Quantity::Format::kDecimalSI},
      {"G", 10, 9, Quantity::Format::kDecimalSI},
      {"T", 10, 12, Quantity::Format::kDecimalSI},
      {"P", 10, 15, Quantity::Format::kDecimalSI},
      {"E", 10, 18, Quantity::Format::kDecimalSI},
      {"Ki", 2, 10, Quantity::Format::kBinarySI},
      {"Mi", 2, 20, Quantity::Format::kBinarySI},
      {"Gi", 2, 30, Quantity::Format::kBinarySI},
      {"Ti", 2, 40, Quantity::Format::kBinarySI},
      {"Pi", 2, 50, Quantity::Format::kBinarySI},
      {"Ei", 2, 60, Quantity::Format::kBinarySI},
  };
  for (const auto& e : kTable) {
    if (e.s == s) {
      *out = {e.base, e.exp, e.f};
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    auto n = ParseInt64(s.substr(s[1] == '+' ? 2 : 1));
    if (!n || *n > 1000 || *n < -1000) return false;
    *out = {10, static_cast<int>(*n), Quantity::Format::kDecimalExponent};
    return true;
  }
  return false;
}

std::string_view DecimalSuffix(int exp) {
  switch (exp) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
  }
  return "?";
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(std::string_view str) {
  if (str.empty()) return ErrFormatWrong();
  Quantity q;
  if (str == "0") {
    q.cached_ = "0";
    return q;
  }
  Parts p;
  RETURN_IF_ERROR(SplitQuantity(str, &p));
  SuffixInfo sfx;
  if (!InterpretSuffix(p.suffix, &sfx)) return ErrSuffix();
  q.format_ = sfx.format;

  // Upstream's int64 fast path decides whether the text is kept verbatim.
  int precision = -1;
  int scale = 0;
  int64_t mantissa = 1;
  if (sfx.base == 10) {
    scale = sfx.exponent;
    precision = 18 - static_cast<int>(p.num.size() + p.denom.size());
  } else if (sfx.exponent >= 0 && p.denom.empty()) {
    mantissa = int64_t{1} << sfx.exponent;
    precision = 15 - static_cast<int>(p.num.size()) -
                static_cast<int>(static_cast<float>(sfx.exponent) * 3 / 10) - 1;
  }
  if (precision >= 0) {
    scale -= static_cast<int>(p.denom.size());
    if (scale >= -9) {
      std::string shifted = p.num + p.denom;
      auto value = ParseInt64(shifted);
      if (!value) return ErrNumeric();
      int128 result;
      if (!MulOverflows(*value, mantissa, &result) && result <= INT64_MAX) {
        if (!p.positive) result = -result;
        int128 factor;
        if (Pow10(scale + 9, &factor) &&
            !MulOverflows(result, factor, &q.nanos_)) {
          bool keep;
          if (sfx.base == 2) {
            keep = sfx.exponent % 10 == 0 && (*value & 0x07) != 0;
          } else {
            keep = scale % 3 == 0 &&
                   !(shifted.size() >= 3 &&
                     shifted.substr(shifted.size() - 3) == "000") &&
                   shifted[0] != '0';
          }
          if (keep) q.cached_ = std::string(str);
          return q;
        }
      }
    }
  }

  // Exact path: digits * 2^p * 10^s, rounded up to the nano.
  std::string digits = p.num + p.denom;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  // Up to the full int128 range, so that every value Add and Sub can reach
  // (they clamp at +-(2^127-1) nanos) prints as text that parses back.
  if (digits.size() > 39) return ErrRange();
  int128 n = 0;
  for (char c : digits) {
    if (MulOverflows(n, 10, &n) || __builtin_add_overflow(n, c - '0', &n)) {
      return ErrRange();
    }
  }
  int dec_scale = -static_cast<int>(p.denom.size()) +
                  (sfx.base == 10 ? sfx.exponent : 0) + 9;
  if (sfx.base == 2) {
    for (int i = 0; i < sfx.exponent; ++i) {
      if (MulOverflows(n, 2, &n)) return ErrRange();
    }
  }
  if (dec_scale >= 0) {
    int128 f;
    if (!Pow10(dec_scale, &f) || MulOverflows(n, f, &n)) return ErrRange();
  } else {
    n = DivPow10RoundUp(n, -dec_scale);
  }
  if (sfx.format == Format::kBinarySI) {
    const int128 max_allowed = int128{INT64_MAX} * kNanosPerUnit;
    if (n > max_allowed) n = max_allowed;
    if (n > 0 && n < kNanosPerUnit) q.format_ = Format::kDecimalSI;
  }
  q.nanos_ = p.positive ? n : -n;
  return q;
}

Quantity Quantity::MustParse(std::string_view s) {
  auto q = Parse(s);
  CHECK(q.ok()) << "bad quantity literal " << s << ": " << q.status();
  return *q;
}

Quantity Quantity::FromInt64(int64_t value, Format format) {
  Quantity q;
  q.nanos_ = int128{value} * kNanosPerUnit;
  q.format_ = format;
  return q;
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  Quantity q;
  q.nanos_ = int128{milli} * 1000000;
  q.format_ = format;
  return q;
}

int64_t Quantity::Value() const { return Saturate(DivPow10RoundUp(nanos_, 9)); }

int64_t Quantity::MilliValue() const {
  return Saturate(DivPow10RoundUp(nanos_, 6));
}

int Quantity::Cmp(const Quantity& other) const {
  return nanos_ < other.nanos_ ? -1 : (nanos_ > other.nanos_ ? 1 : 0);
}

// Sums and differences clamp to [-kMaxNanos, kMaxNanos], the range Parse
// produces: upstream's Quantity.Add is exact (big decimals), ours is bounded,
// and a clamped total still compares above any quantity a client can write,
// so a sum of requests cannot wrap around below a limit. The range is
// symmetric, so Neg and the rounding helpers never meet INT128_MIN.
namespace {

constexpr int128 kMaxNanos = ~(int128{1} << 127);

int128 Clamp(int128 v) {
  if (v > kMaxNanos) return kMaxNanos;
  if (v < -kMaxNanos) return -kMaxNanos;
  return v;
}

}  // namespace

void Quantity::Add(const Quantity& other) {
  cached_.clear();
  if (nanos_ == 0) format_ = other.format_;
  int128 sum;
  if (__builtin_add_overflow(nanos_, other.nanos_, &sum)) {
    sum = other.nanos_ > 0 ? kMaxNanos : -kMaxNanos;
  }
  nanos_ = Clamp(sum);
}

void Quantity::Sub(const Quantity& other) {
  cached_.clear();
  if (nanos_ == 0) format_ = other.format_;
  int128 diff;
  if (__builtin_sub_overflow(nanos_, other.nanos_, &diff)) {
    diff = other.nanos_ < 0 ? kMaxNanos : -kMaxNanos;
  }
  nanos_ = Clamp(diff);
}

void Quantity::Neg() {
  cached_.clear();
  nanos_ = -Clamp(nanos_);
}

double Quantity::AsApproximateDouble() const {
  return static_cast<double>(nanos_) / 1e9;
}

std::string Quantity::String() const {
  if (!cached_.empty()) return cached_;
  if (nanos_ == 0) return "0";
  Format f = format_;
  if (f == Format::kBinarySI) {
    const int128 limit = 1024 * kNanosPerUnit;
    if ((nanos_ > -limit && nanos_ < limit) || nanos_ % kNanosPerUnit != 0) {
      f = Format::kDecimalSI;
    } else {
      int128 v = nanos_ / kNanosPerUnit;
      int128 mag = v < 0 ? -v : v;
      int times = 0;
      while (mag >= 1024 && mag % 1024 == 0 && times < 6) {
        mag /= 1024;
        ++times;
      }
      static constexpr std::string_view kBin[] = {"",   "Ki", "Mi", "Gi",
                                                  "Ti", "Pi", "Ei"};
      return Int128ToString(v < 0 ? -mag : mag) + std::string(kBin[times]);
    }
  }
  int128 m = nanos_;
  int exp = -9;
  while (m % 10 == 0) {
    m /= 10;
    ++exp;
  }
  while (exp % 3 != 0) {
    m *= 10;
    --exp;
  }
  std::string out = Int128ToString(m);
  if (f == Format::kDecimalExponent) {
    return exp == 0 ? out : out + "e" + std::to_string(exp);
  }
  std::string_view sfx = DecimalSuffix(exp);
  // Beyond E upstream prints no suffix at all (a bug); we fall back to the
  // exponent form so the value survives a round trip.
  if (sfx == "?") return out + "e" + std::to_string(exp);
  return out + std::string(sfx);
}

}  // namespace kplane::machinery
