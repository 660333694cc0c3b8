// Fuzzes the small scalar parsers of request bodies and parameters:
// resource quantities (objects/machinery/quantity.h: "500m", "1.5Gi",
// "1e3"), Go durations (meta/v1 Duration, timeouts) and RFC 3339 times
// (meta/v1 Time and MicroTime).
//
// Checked: no crash or sanitizer report (signed overflow included: UBSan
// is fatal); a quantity's String() parses back to an equal quantity; a
// duration's Go string parses back to the same nanoseconds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "objects/machinery/duration.h"
#include "objects/machinery/quantity.h"
#include "objects/time.h"

namespace m = kplane::machinery;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = m::Quantity::Parse(text);
  if (q.ok()) {
    (void)q->Value();
    (void)q->MilliValue();
    (void)q->AsApproximateDouble();
    std::string s = q->String();
    auto again = m::Quantity::Parse(s);
    if (!again.ok() || !(*again == *q)) {
      std::fprintf(stderr, "%s\n", s.c_str());
      kplane::fuzz::Fail("a quantity's String() does not parse back");
    }
    m::Quantity sum = *q;
    sum.Add(*again);
    sum.Sub(*q);
    sum.Neg();
    (void)sum.String();
  }
  auto d = m::ParseDuration(text);
  if (d.ok()) {
    (void)m::HumanDuration(*d);
    (void)m::ShortHumanDuration(*d);
    std::string s = m::GoDurationString(*d);
    auto again = m::ParseDuration(s);
    if (!again.ok() || *again != *d) {
      std::fprintf(stderr, "%s\n", s.c_str());
      kplane::fuzz::Fail("a duration's Go string does not parse back");
    }
  }
  (void)kplane::objects::ParseGoDurationNanos(text);
  (void)kplane::objects::ParseRfc3339(text);
  return 0;
}
