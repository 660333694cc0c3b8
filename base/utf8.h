// UTF-8 validity as Go's unicode/utf8 judges it, for writers that copy Go's
// handling of bytes that are not UTF-8 (strconv.Quote, encoding/json).
//
//   Utf8SequenceLength("\xc3\xa9x") -> 2     (é)
//   Utf8SequenceLength("\xc0\xaf")  -> 0     (overlong '/')
//   Utf8SequenceLength("\xed\xa0\x80") -> 0  (a surrogate)
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

}  // namespace kplane

#endif  // KPLANE_BASE_UTF8_H_
