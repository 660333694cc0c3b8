// UTF-8 validity as Go's unicode/utf8 judges it, for writers that copy Go's
// handling of bytes that are not UTF-8 (strconv.Quote, encoding/json), and
// rune counts for limits measured in characters.
//
//   Utf8SequenceLength("\xc3\xa9x") -> 2     (é)
//   Utf8SequenceLength("\xc0\xaf")  -> 0     (overlong '/')
//   Utf8SequenceLength("\xed\xa0\x80") -> 0  (a surrogate)
//   Utf8RuneCount("h\xc3\xa9") -> 2; Utf8PrefixBytes("h\xc3\xa9!", 2) -> 3
//
// Thread-safety: a pure function. Errors: none; 0 means "not UTF-8".
#ifndef KPLANE_BASE_UTF8_H_
#define KPLANE_BASE_UTF8_H_

#include <cstddef>
#include <string_view>

namespace kplane {

// Length (1-4) of the valid UTF-8 sequence at the start of `s`
// (utf8.DecodeRune's rules: no overlong forms, no surrogates, nothing above
// U+10FFFF, no truncated sequence), or 0 for an empty `s` or a byte that does
// not start one.
size_t Utf8SequenceLength(std::string_view s);

// The number of code points in `s`, counted as kube counts runes for its
// length limits: every byte that is not a continuation byte (10xxxxxx)
// starts one. Linear in `s`.
size_t Utf8RuneCount(std::string_view s);

// The length in bytes of the first `runes` runes of `s` (all of `s` when
// it has no more), so that s.substr(0, Utf8PrefixBytes(s, n)) never cuts
// a sequence in two.
size_t Utf8PrefixBytes(std::string_view s, size_t runes);

}  // namespace kplane

#endif  // KPLANE_BASE_UTF8_H_
