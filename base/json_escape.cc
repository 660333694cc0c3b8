#include "base/json_escape.h"

#include <cstdint>

#include "base/utf8.h"

namespace kplane {

namespace {

constexpr char kHex[] = "0123456789abcdef";

char ShortEscape(uint8_t c) {
  switch (c) {
    case '\n':
      return 'n';
    case '\r':
      return 'r';
    case '\t':
      return 't';
    case '\b':
      return 'b';
    case '\f':
      return 'f';
    default:
      return 0;
  }
}

void AppendUnicodeEscape(uint8_t c, std::string* out) {
  *out += "\\u00";
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 0xf]);
}

}  // namespace

void AppendJsonEscaped(std::string_view text, const JsonEscapeOptions& options,
                       std::string* out) {
  out->reserve(out->size() + text.size());
  for (size_t i = 0; i < text.size();) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      const char e = ShortEscape(c);
      if (e != 0 && options.short_escapes.find(static_cast<char>(c)) !=
                        std::string_view::npos) {
        out->push_back('\\');
        out->push_back(e);
      } else {
        AppendUnicodeEscape(c, out);
      }
      ++i;
    } else if (options.html_safe && (c == '<' || c == '>' || c == '&')) {
      AppendUnicodeEscape(c, out);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else {
      // E2 80 A8 and E2 80 A9 are U+2028 and U+2029.
      if (options.escape_line_separators && c == 0xe2 && i + 2 < text.size() &&
          static_cast<uint8_t>(text[i + 1]) == 0x80 &&
          (static_cast<uint8_t>(text[i + 2]) & 0xfe) == 0xa8) {
        *out +=
            static_cast<uint8_t>(text[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
        i += 3;
        continue;
      }
      if (!options.replace_invalid_utf8) {
        out->push_back(static_cast<char>(c));
        ++i;
        continue;
      }
      const size_t n = Utf8SequenceLength(text.substr(i));
      if (n == 0) {
        *out += "\\ufffd";
        ++i;
      } else {
        out->append(text.substr(i, n));
        i += n;
      }
    }
  }
}

std::string JsonQuote(std::string_view text, const JsonEscapeOptions& options) {
  std::string out = "\"";
  AppendJsonEscaped(text, options, &out);
  out.push_back('"');
  return out;
}

}  // namespace kplane
