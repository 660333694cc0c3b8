// Writing bytes as a JSON string: the one escaper behind the JSON kplane
// writes by hand (etcd gateway errors, etcd's member JSON in bolt, the etcd
// v2-style health body, continue tokens).
//
// The callers copy different Go writers byte for byte, and those differ, so
// the differences are options rather than hidden in each caller:
//   - which control characters get a two-character escape (\n, \t, ...);
//     every other one below 0x20 is \u00XX (lower-case hex);
//   - html_safe: '<', '>' and '&' as \u003c, \u003e, \u0026 (Go's
//     json.Marshal; protojson and fmt-built JSON leave them);
//   - escape_line_separators: U+2028 and U+2029 as \u2028 and \u2029
//     (json.Marshal, so the text is also valid JavaScript);
//   - replace_invalid_utf8: a byte that does not start a valid UTF-8
//     sequence (utf8.DecodeRune's rules: no overlong forms, no surrogates,
//     nothing above U+10FFFF) becomes \ufffd, as json.Marshal writes it;
//     without it such bytes are copied through unchanged.
// '"' and '\\' are always escaped; DEL and bytes >= 0x80 otherwise pass.
//
//   std::string out;
//   AppendJsonEscaped("a\"b\n<", kGoJsonEscape, &out);   // a\"b\n\u003c
//   JsonQuote("x\ty", kGoJsonEscape)                     // "\"x\\ty\""
//
// Thread-safety: pure functions. Errors: none; every input has an output.
#ifndef KPLANE_BASE_JSON_ESCAPE_H_
#define KPLANE_BASE_JSON_ESCAPE_H_

#include <string>
#include <string_view>

namespace kplane {

struct JsonEscapeOptions {
  // Control characters written as \n, \r, \t, \b or \f; any of "\n\r\t\b\f".
  std::string_view short_escapes = "\n\r\t";
  bool html_safe = false;
  bool escape_line_separators = false;
  bool replace_invalid_utf8 = false;
};

// Go's encoding/json as of Go 1.22 (json.Marshal of a string, HTML-safe).
inline constexpr JsonEscapeOptions kGoJsonEscape = {
    .short_escapes = "\n\r\t\b\f",
    .html_safe = true,
    .escape_line_separators = true,
    .replace_invalid_utf8 = true,
};

// Appends the inside of the JSON string for `text` (no quotes) to `out`.
void AppendJsonEscaped(std::string_view text, const JsonEscapeOptions& options,
                       std::string* out);

// `text` as a JSON string, quotes included.
std::string JsonQuote(std::string_view text, const JsonEscapeOptions& options);

}  // namespace kplane

#endif  // KPLANE_BASE_JSON_ESCAPE_H_
