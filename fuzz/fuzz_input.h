// Small helpers shared by the fuzz targets (fuzz/*_fuzz.cc).
//
// FuzzInput splits libFuzzer's bytes into the choices a target makes (a
// selector byte, a split point) and the payload the parser reads, so one
// input drives both. Taking from an exhausted input yields zeros, never
// fails. Thread-safety: one input per call, one thread.
#ifndef KPLANE_FUZZ_FUZZ_INPUT_H_
#define KPLANE_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace kplane::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  // One byte from the front (0 when empty).
  uint8_t TakeByte() {
    if (rest_.empty()) return 0;
    uint8_t b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // Up to `n` bytes from the front.
  std::string_view TakeBytes(size_t n) {
    std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }
  // Up to the first `sep` (consumed, not returned), or everything.
  std::string_view TakeUntil(std::string_view sep) {
    size_t at = rest_.find(sep);
    std::string_view out = rest_.substr(0, at);
    rest_.remove_prefix(at == std::string_view::npos ? rest_.size()
                                                     : at + sep.size());
    return out;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

// `s` with non-printable bytes as \xNN, for failure messages.
inline std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// A property the target checks failed: report and abort, so libFuzzer keeps
// the input as a crasher.
[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what);
  std::abort();
}

}  // namespace kplane::fuzz

#endif  // KPLANE_FUZZ_FUZZ_INPUT_H_
