// Fuzzes CronJob's spec.schedule parser (objects/machinery/cron.h): any
// client allowed to create a CronJob chooses the text, and the controller
// manager computes the next run from it.
//
// Input: 4 bytes choosing a start time within about 136 years of
// 2000-01-01 UTC, then the schedule text.
// Checked: no crash or sanitizer report; a parsed schedule's Next(t) is
// after t, on a whole minute, at most 5 years later (or "never"), and
// asking again from one second before it finds the same minute.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/clock.h"
#include "fuzz/fuzz_input.h"
#include "objects/machinery/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using std::chrono::seconds;
  kplane::fuzz::FuzzInput in(data, size);
  uint32_t offset = 0;
  for (int i = 0; i < 4; ++i) offset = (offset << 8) | in.TakeByte();
  auto schedule = kplane::machinery::CronSchedule::Parse(in.rest());
  if (!schedule.ok()) return 0;
  const kplane::WallTime start =
      kplane::WallTime(seconds(946684800)) + seconds(offset);
  const kplane::WallTime next = schedule->Next(start);
  if (next == kplane::WallTime::max()) return 0;
  if (next <= start) kplane::fuzz::Fail("Next is not after the start");
  if (next - start > std::chrono::hours(24 * 366 * 5)) {
    kplane::fuzz::Fail("Next is more than 5 years after the start");
  }
  if (next.time_since_epoch() % std::chrono::minutes(1) !=
      kplane::WallTime::duration::zero()) {
    kplane::fuzz::Fail("Next is not on a whole minute");
  }
  if (schedule->Next(next - seconds(1)) != next) {
    kplane::fuzz::Fail("Next from a second before a match is not the match");
  }
  return 0;
}
