#include "base/strings.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "base/utf8.h"

namespace kplane {

std::vector<std::string> StrSplit(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string StrJoin(const std::vector<std::string>& parts,
                    std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view StripWhitespace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return v;
}

std::optional<uint64_t> ParseUint64(std::string_view s) {
  uint64_t v;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return v;
}

std::optional<double> ParseDouble(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string tmp(s);
  char* end = nullptr;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size()) return std::nullopt;
  return v;
}

std::optional<bool> ParseBool(std::string_view s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" ||
      s == "True") {
    return true;
  }
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" ||
      s == "False") {
    return false;
  }
  return std::nullopt;
}

std::string GoQuote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s.substr(i));
      if (n == 0) {  // not UTF-8: the byte in hex
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
        ++i;
      } else if (n == 2 && c == 0xc2 && static_cast<uint8_t>(s[i + 1]) < 0xa0) {
        // A C1 control, U+0080-U+009F.
        const uint8_t r = static_cast<uint8_t>(s[i + 1]);
        out += "\\u00";
        out += kHex[r >> 4];
        out += kHex[r & 0xf];
        i += n;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string PrefixRangeEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string HexDump(std::string_view bytes) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<uint8_t>(bytes[i]));
    if (i) out += ' ';
    out += buf;
  }
  return out;
}

std::optional<int64_t> ParseGoDuration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool neg = false;
  if (s.front() == '-' || s.front() == '+') {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0;
  double total = 0;
  bool any = false;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() &&
           (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
      ++i;
    }
    if (i == 0) return std::nullopt;
    auto num = ParseDouble(s.substr(0, i));
    if (!num) return std::nullopt;
    s.remove_prefix(i);
    size_t j = 0;
    while (j < s.size() && !std::isdigit(static_cast<unsigned char>(s[j])) &&
           s[j] != '.') {
      ++j;
    }
    std::string_view unit = s.substr(0, j);
    s.remove_prefix(j);
    double mult;
    if (unit == "ns") {
      mult = 1;
    } else if (unit == "us" || unit == "\xc2\xb5s") {
      mult = 1e3;
    } else if (unit == "ms") {
      mult = 1e6;
    } else if (unit == "s") {
      mult = 1e9;
    } else if (unit == "m") {
      mult = 60e9;
    } else if (unit == "h") {
      mult = 3600e9;
    } else {
      return std::nullopt;
    }
    total += *num * mult;
    any = true;
  }
  if (!any) return std::nullopt;
  // Go refuses a duration past int64 nanoseconds ("invalid duration");
  // converting such a double would be undefined behaviour (found by
  // fuzz/quantity_fuzz.cc: "550055000m"). 2^63 is the first value out.
  if (!(total < 9223372036854775808.0)) return std::nullopt;
  return static_cast<int64_t>(neg ? -total : total);
}

}  // namespace kplane
