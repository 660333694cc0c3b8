#include "objects/machinery/cron.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>
#include <vector>

#include "base/strings.h"

namespace kplane::machinery {

namespace {

struct Field {
  uint64_t min, max;
  const char* const* names;  // indexed from `min`, or null
  int name_count;
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr",
                                       "may", "jun", "jul", "aug",
                                       "sep", "oct", "nov", "dec"};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed",
                                     "thu", "fri", "sat"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

// The length of the whitespace character at the start of `s` (Go's
// unicode.IsSpace: ASCII \t \n \v \f \r and space, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, in UTF-8), else 0.
size_t SpaceAt(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  if (s.empty()) return 0;
  if (b(0) == ' ' || (b(0) >= '\t' && b(0) <= '\r')) return 1;
  if (s.size() >= 2 && b(0) == 0xC2 && (b(1) == 0x85 || b(1) == 0xA0)) return 2;
  if (s.size() < 3) return 0;
  const uint32_t c = b(0) << 16 | b(1) << 8 | b(2);
  const bool space = c == 0xE19A80 || (c >= 0xE28080 && c <= 0xE2808A) ||
                     c == 0xE280A8 || c == 0xE280A9 || c == 0xE280AF ||
                     c == 0xE2819F || c == 0xE38080;
  return space ? 3 : 0;
}

// Go's strings.Fields: the non-empty runs between whitespace.
std::vector<std::string> Fields(std::string_view s) {
  std::vector<std::string> out;
  size_t begin = 0, i = 0;
  while (i < s.size()) {
    if (size_t n = SpaceAt(s.substr(i)); n != 0) {
      if (i > begin) out.emplace_back(s.substr(begin, i - begin));
      i += n;
      begin = i;
    } else {
      ++i;
    }
  }
  if (s.size() > begin) out.emplace_back(s.substr(begin));
  return out;
}

// robfig's mustParseInt: Go's strconv.Atoi (64-bit), then no negatives.
StatusOr<uint64_t> MustParseInt(std::string_view expr) {
  std::string_view digits = expr;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    digits.remove_prefix(1);
  }
  const std::string prefix = "failed to parse int from " + std::string(expr) +
                             ": strconv.Atoi: parsing " + GoQuote(expr) + ": ";
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return InvalidArgumentError(prefix + "invalid syntax");
  }
  uint64_t v = 0;
  auto [p, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), v);
  const uint64_t limit = uint64_t{1} << 63;  // |INT64_MIN|
  if (ec != std::errc() || v > limit || (!negative && v == limit)) {
    return InvalidArgumentError(prefix + "value out of range");
  }
  if (negative && v != 0) {
    return InvalidArgumentError("negative number (" +
                                (v == limit
                                     ? std::string("-9223372036854775808")
                                     : "-" + std::to_string(v)) +
                                ") not allowed: " + std::string(expr));
  }
  return v;
}

// robfig's parseIntOrName.
StatusOr<uint64_t> ParseIntOrName(std::string_view expr, const Field& f) {
  if (f.names != nullptr) {
    std::string lower = Lower(expr);
    for (int i = 0; i < f.name_count; ++i) {
      if (lower == f.names[i]) return f.min + i;
    }
  }
  return MustParseInt(expr);
}

// robfig's getRange: one comma-separated part of a field into `bits`
// (bit i = value i), number | number "-" number [ "/" number ], `*` or `?`
// for the whole field, and "a/n" from a to the field's maximum. `star`
// (robfig's starBit) is set by `*` or `?` without a step above 1.
template <size_t N>
Status ParseRange(std::string_view expr, const Field& f, std::bitset<N>* bits,
                  bool* star) {
  const std::vector<std::string> range_and_step = StrSplit(expr, '/');
  const std::vector<std::string> low_and_high =
      StrSplit(range_and_step[0], '-');
  const bool single_digit = low_and_high.size() == 1;
  uint64_t start, end, step = 1;
  bool extra = false;
  if (low_and_high[0] == "*" || low_and_high[0] == "?") {
    start = f.min;
    end = f.max;
    extra = true;
  } else {
    ASSIGN_OR_RETURN(start, ParseIntOrName(low_and_high[0], f));
    if (low_and_high.size() == 1) {
      end = start;
    } else if (low_and_high.size() == 2) {
      ASSIGN_OR_RETURN(end, ParseIntOrName(low_and_high[1], f));
    } else {
      return InvalidArgumentError("too many hyphens: " + std::string(expr));
    }
  }
  if (range_and_step.size() == 2) {
    ASSIGN_OR_RETURN(step, MustParseInt(range_and_step[1]));
    if (single_digit) end = f.max;  // "N/step" means "N-max/step"
    if (step > 1) extra = false;
  } else if (range_and_step.size() > 2) {
    return InvalidArgumentError("too many slashes: " + std::string(expr));
  }
  if (start < f.min) {
    return InvalidArgumentError("beginning of range (" + std::to_string(start) +
                                ") below minimum (" + std::to_string(f.min) +
                                "): " + std::string(expr));
  }
  if (end > f.max) {
    return InvalidArgumentError("end of range (" + std::to_string(end) +
                                ") above maximum (" + std::to_string(f.max) +
                                "): " + std::string(expr));
  }
  if (start > end) {
    return InvalidArgumentError("beginning of range (" + std::to_string(start) +
                                ") beyond end of range (" +
                                std::to_string(end) +
                                "): " + std::string(expr));
  }
  if (step == 0) {
    return InvalidArgumentError("step of range should be a positive number: " +
                                std::string(expr));
  }
  // end <= 59: no overflow for any step below 2^63.
  for (uint64_t v = start; v <= end; v += step) bits->set(v);
  if (extra) *star = true;
  return Status::Ok();
}

// robfig's getField: the comma-separated parts, empty ones dropped
// (strings.FieldsFunc), so ",," is a field that never matches.
template <size_t N>
Status ParseField(std::string_view expr, const Field& f, std::bitset<N>* bits,
                  bool* star) {
  *star = false;
  for (const std::string& part : StrSplit(expr, ',')) {
    if (part.empty()) continue;
    RETURN_IF_ERROR(ParseRange(part, f, bits, star));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<CronSchedule> CronSchedule::Parse(std::string_view spec) {
  std::string text(spec);
  if (text.empty()) return InvalidArgumentError("empty spec string");
  if (text.rfind("TZ=", 0) == 0 || text.rfind("CRON_TZ=", 0) == 0) {
    return InvalidArgumentError(
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
  }
  static const std::pair<const char*, const char*> kMacros[] = {
      {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
      {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}};
  if (text[0] == '@') {
    for (const auto& [name, expansion] : kMacros) {
      if (text == name) return Parse(expansion);
    }
    return InvalidArgumentError("unrecognized descriptor: " + text);
  }
  const std::vector<std::string> fields = Fields(text);
  if (fields.size() != 5) {
    return InvalidArgumentError("expected exactly 5 fields, found " +
                                std::to_string(fields.size()) + ": [" +
                                StrJoin(fields, " ") + "]");
  }
  CronSchedule s;
  bool star;
  RETURN_IF_ERROR(
      ParseField(fields[0], {0, 59, nullptr, 0}, &s.minutes_, &star));
  RETURN_IF_ERROR(ParseField(fields[1], {0, 23, nullptr, 0}, &s.hours_, &star));
  RETURN_IF_ERROR(
      ParseField(fields[2], {1, 31, nullptr, 0}, &s.days_, &s.any_day_));
  RETURN_IF_ERROR(
      ParseField(fields[3], {1, 12, kMonthNames, 12}, &s.months_, &star));
  RETURN_IF_ERROR(ParseField(fields[4], {0, 6, kDayNames, 7}, &s.weekdays_,
                             &s.any_weekday_));
  return s;
}

WallTime CronSchedule::Next(WallTime t) const {
  using namespace std::chrono;
  // A field with no value (",") never matches: do not walk 5 years of
  // minutes to find that out.
  if (minutes_.none() || hours_.none() || months_.none()) {
    return WallTime::max();
  }
  auto minute = floor<minutes>(t) + minutes(1);
  const auto limit = minute + days(5 * 366);
  while (minute < limit) {
    const auto day = floor<days>(minute);
    const year_month_day ymd{day};
    const unsigned month = static_cast<unsigned>(ymd.month());
    if (!months_[month]) {
      // The first day of the next month.
      minute = sys_days{(ymd.year() / ymd.month() / 1) + months(1)};
      continue;
    }
    const bool dom = days_[static_cast<unsigned>(ymd.day())];
    const bool dow = weekdays_[weekday{day}.c_encoding()];
    // Cron's rule: with both day fields restricted either may match.
    const bool day_ok = any_day_ || any_weekday_ ? (dom && dow) : (dom || dow);
    if (!day_ok) {
      minute = day + days(1);
      continue;
    }
    const hh_mm_ss hms{minute - day};
    if (!hours_[hms.hours().count()]) {
      minute = floor<hours>(minute) + hours(1);
      continue;
    }
    if (!minutes_[hms.minutes().count()]) {
      minute += minutes(1);
      continue;
    }
    return time_point_cast<WallTime::duration>(minute);
  }
  return WallTime::max();
}

}  // namespace kplane::machinery
