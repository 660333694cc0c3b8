#include "base/utf8.h"

#include <cstdint>

namespace kplane {

size_t Utf8SequenceLength(std::string_view s) {
  if (s.empty()) return 0;
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xbf;  // bounds of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return n;
}

namespace {
bool StartsRune(char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; }
}  // namespace

size_t Utf8RuneCount(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += StartsRune(c);
  return n;
}

size_t Utf8PrefixBytes(std::string_view s, size_t runes) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (StartsRune(s[i]) && seen++ == runes) return i;
  }
  return s.size();
}

}  // namespace kplane
