#include "objects/machinery/cron.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "base/strings.h"

namespace kplane::machinery {

namespace {

struct Field {
  int min, max;
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

StatusOr<int> ParseValue(std::string_view expr, const Field& f) {
  if (f.names != nullptr) {
    std::string lower = Lower(expr);
    for (int i = 0; i < f.name_count; ++i) {
      if (lower == f.names[i]) return f.min + i;
    }
  }
  std::optional<int64_t> v = ParseInt64(expr);
  if (!v || *v < 0 || *v > 1000) {
    return InvalidArgumentError("failed to parse int from " +
                                std::string(expr));
  }
  return static_cast<int>(*v);
}

// One comma-separated part of a field into `bits` (bit i = value i).
template <size_t N>
Status ParseRange(std::string_view expr, const Field& f, std::bitset<N>* bits,
                  bool* star) {
  std::string_view range = expr;
  int step = 1;
  size_t slash = expr.find('/');
  if (slash != std::string_view::npos) {
    range = expr.substr(0, slash);
    std::optional<int64_t> s = ParseInt64(expr.substr(slash + 1));
    if (!s || *s <= 0) {
      return InvalidArgumentError(
          "step of range should be a positive number: " + std::string(expr));
    }
    // A step past the field's span selects only the start, as any larger
    // one does: clamp before narrowing (a step from the request must not
    // wrap to a negative int and index outside the bitset).
    step = static_cast<int>(std::min<int64_t>(*s, 1000));
  }
  int lo, hi;
  if (range == "*" || range == "?") {
    lo = f.min;
    hi = f.max;
    if (step == 1) *star = true;  // "*/2" restricts, "*/1" does not
  } else {
    size_t dash = range.find('-');
    ASSIGN_OR_RETURN(lo, ParseValue(range.substr(0, dash), f));
    if (dash != std::string_view::npos) {
      ASSIGN_OR_RETURN(hi, ParseValue(range.substr(dash + 1), f));
    } else {
      hi = slash != std::string_view::npos ? f.max : lo;
    }
  }
  if (lo < f.min) {
    return InvalidArgumentError("beginning of range (" + std::to_string(lo) +
                                ") below minimum (" + std::to_string(f.min) +
                                "): " + std::string(expr));
  }
  if (hi > f.max) {
    return InvalidArgumentError("end of range (" + std::to_string(hi) +
                                ") above maximum (" + std::to_string(f.max) +
                                "): " + std::string(expr));
  }
  if (lo > hi) {
    return InvalidArgumentError("beginning of range (" + std::to_string(lo) +
                                ") beyond end of range (" + std::to_string(hi) +
                                "): " + std::string(expr));
  }
  for (int v = lo; v <= hi; v += step) bits->set(static_cast<size_t>(v));
  return Status::Ok();
}

template <size_t N>
Status ParseField(std::string_view expr, const Field& f, std::bitset<N>* bits,
                  bool* star) {
  *star = false;
  for (const std::string& part : StrSplit(expr, ',')) {
    RETURN_IF_ERROR(ParseRange(part, f, bits, star));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<CronSchedule> CronSchedule::Parse(std::string_view spec) {
  std::string text(spec);
  if (text.rfind("TZ=", 0) == 0 || text.rfind("CRON_TZ=", 0) == 0) {
    return InvalidArgumentError(
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
  }
  static const std::pair<const char*, const char*> kMacros[] = {
      {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
      {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}};
  if (!text.empty() && text[0] == '@') {
    for (const auto& [name, expansion] : kMacros) {
      if (text == name) return Parse(expansion);
    }
    return InvalidArgumentError("unrecognized descriptor: " + text);
  }
  std::vector<std::string> fields;
  for (std::string_view f : StrSplit(text, ' ')) {
    if (!f.empty()) fields.emplace_back(f);
  }
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
  std::bitset<8> weekdays;
  RETURN_IF_ERROR(
      ParseField(fields[4], {0, 7, kDayNames, 7}, &weekdays, &s.any_weekday_));
  for (int d = 0; d < 7; ++d) s.weekdays_[d] = weekdays[d];
  if (weekdays[7]) s.weekdays_[0] = true;  // 7 is Sunday too
  return s;
}

WallTime CronSchedule::Next(WallTime t) const {
  using namespace std::chrono;
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
