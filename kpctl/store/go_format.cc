#include "kpctl/store/go_format.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <climits>
#include <cmath>
#include <cstdio>

#include "base/base64.h"

namespace kplane::kpctl {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::OneofDescriptor;
using google::protobuf::Reflection;

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 if invalid
// (then the byte stands for U+FFFD, as in Go's utf8.DecodeRuneInString).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    n = 2;
    *cp = c & 0x1F;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    *cp = c & 0x0F;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    *cp = c & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (cc & 0x3F);
  }
  if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

std::string CamelCase(const std::string& name) {
  std::string out;
  bool up = true;
  for (char c : name) {
    if (c == '_') {
      up = true;
      continue;
    }
    out +=
        up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

void AppendValue(const Message& msg, const FieldDescriptor* f, int index,
                 std::string* out);

void AppendMessage(const Message& msg, std::string* out);

bool FieldIsSet(const Message& msg, const FieldDescriptor* f) {
  const Reflection* r = msg.GetReflection();
  if (f->is_repeated()) return r->FieldSize(msg, f) > 0;
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
      f->containing_oneof() != nullptr) {
    return r->HasField(msg, f);
  }
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->GetInt32(msg, f) != 0;
    case FieldDescriptor::CPPTYPE_INT64:
      return r->GetInt64(msg, f) != 0;
    case FieldDescriptor::CPPTYPE_UINT32:
      return r->GetUInt32(msg, f) != 0;
    case FieldDescriptor::CPPTYPE_UINT64:
      return r->GetUInt64(msg, f) != 0;
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->GetBool(msg, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return r->GetEnumValue(msg, f) != 0;
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      return !r->GetStringReference(msg, f, &scratch).empty();
    }
    default:
      return false;
  }
}

void AppendValue(const Message& msg, const FieldDescriptor* f, int index,
                 std::string* out) {
  const Reflection* r = msg.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      *out += std::to_string(rep ? r->GetRepeatedInt32(msg, f, index)
                                 : r->GetInt32(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      *out += std::to_string(rep ? r->GetRepeatedInt64(msg, f, index)
                                 : r->GetInt64(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      *out += std::to_string(rep ? r->GetRepeatedUInt32(msg, f, index)
                                 : r->GetUInt32(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      *out += std::to_string(rep ? r->GetRepeatedUInt64(msg, f, index)
                                 : r->GetUInt64(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      *out += (rep ? r->GetRepeatedBool(msg, f, index) : r->GetBool(msg, f))
                  ? "true"
                  : "false";
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      *out += std::to_string(rep ? r->GetRepeatedEnumValue(msg, f, index)
                                 : r->GetEnumValue(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string v =
          rep ? r->GetRepeatedString(msg, f, index) : r->GetString(msg, f);
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        *out += "\"" + Base64Encode(v) + "\"";
      } else {
        *out += GoJsonString(v);
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      AppendMessage(
          rep ? r->GetRepeatedMessage(msg, f, index) : r->GetMessage(msg, f),
          out);
      break;
    default:
      *out += "null";
  }
}

void AppendField(const Message& msg, const FieldDescriptor* f,
                 std::string* out) {
  *out += GoJsonString(f->name());
  *out += ":";
  if (f->is_repeated()) {
    *out += "[";
    int n = msg.GetReflection()->FieldSize(msg, f);
    for (int i = 0; i < n; ++i) {
      if (i > 0) *out += ",";
      AppendValue(msg, f, i, out);
    }
    *out += "]";
  } else {
    AppendValue(msg, f, 0, out);
  }
}

// The fields of a message, comma-separated; returns whether any was written.
bool AppendFields(const Message& msg, std::string* out) {
  const Descriptor* d = msg.GetDescriptor();
  const Reflection* r = msg.GetReflection();
  bool any = false;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const OneofDescriptor* oneof = f->containing_oneof();
    if (oneof != nullptr) {
      // Go puts the oneof's interface field where its first member is.
      if (oneof->field(0) != f) continue;
      const FieldDescriptor* set = r->GetOneofFieldDescriptor(msg, oneof);
      if (set == nullptr) continue;
      if (any) *out += ",";
      any = true;
      *out += GoJsonString(CamelCase(oneof->name())) + ":{";
      *out += GoJsonString(CamelCase(set->name())) + ":";
      AppendValue(msg, set, 0, out);
      *out += "}";
      continue;
    }
    if (!FieldIsSet(msg, f)) continue;
    if (any) *out += ",";
    any = true;
    AppendField(msg, f, out);
  }
  return any;
}

void AppendMessage(const Message& msg, std::string* out) {
  *out += "{";
  AppendFields(msg, out);
  *out += "}";
}

}  // namespace

std::string GoJsonString(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' &&
          c != '&') {
        out += static_cast<char>(c);
      } else {
        switch (c) {
          case '"':
            out += "\\\"";
            break;
          case '\\':
            out += "\\\\";
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
          default:
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
        }
      }
      ++i;
      continue;
    }
    uint32_t cp;
    size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += "\"";
  return out;
}

std::string MessageToGoJson(const Message& msg) {
  std::string out;
  AppendMessage(msg, &out);
  return out;
}

std::string MessageFieldsToGoJson(const Message& msg) {
  std::string out;
  AppendFields(msg, &out);
  return out;
}

namespace {

// Go's fmtFrac: ".12" for v=120000 at prec 6; nothing when the fraction
// is zero. Returns v / 10^prec.
uint64_t FmtFrac(uint64_t v, int prec, std::string* frac) {
  std::string digits;
  bool print = false;
  for (int i = 0; i < prec; ++i) {
    int digit = static_cast<int>(v % 10);
    print = print || digit != 0;
    if (print) digits.insert(digits.begin(), static_cast<char>('0' + digit));
    v /= 10;
  }
  if (print) *frac = "." + digits;
  return v;
}

}  // namespace

std::string GoDuration(Duration d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  bool neg = ns < 0;
  uint64_t u =
      neg ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::string out;
  if (u < 1000000000ULL) {
    int prec;
    std::string unit;
    if (u < 1000ULL) {
      prec = 0;
      unit = "ns";
    } else if (u < 1000000ULL) {
      prec = 3;
      unit = "\xC2\xB5s";  // µs
    } else {
      prec = 6;
      unit = "ms";
    }
    std::string frac;
    uint64_t whole = FmtFrac(u, prec, &frac);
    out = std::to_string(whole) + frac + unit;
  } else {
    std::string frac;
    uint64_t secs = FmtFrac(u, 9, &frac);
    out = std::to_string(secs % 60) + frac + "s";
    uint64_t mins = secs / 60;
    if (mins > 0) {
      out = std::to_string(mins % 60) + "m" + out;
      uint64_t hours = mins / 60;
      if (hours > 0) out = std::to_string(hours) + "h" + out;
    }
  }
  return neg ? "-" + out : out;
}

std::string HumanizeBytes(uint64_t s) {
  static const char* kSizes[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  if (s < 10) return std::to_string(s) + " B";
  double e = std::floor(std::log(static_cast<double>(s)) / std::log(1000.0));
  double val =
      std::floor(static_cast<double>(s) / std::pow(1000.0, e) * 10 + 0.5) / 10;
  char buf[64];
  std::snprintf(buf, sizeof(buf), val < 10 ? "%.1f %s" : "%.0f %s", val,
                kSizes[static_cast<int>(e)]);
  return buf;
}

std::string GoHexU(uint64_t v, int width, char pad) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  std::string out = buf;
  if (static_cast<int>(out.size()) < width) {
    out.insert(0, width - out.size(), pad);
  }
  return out;
}

std::string GoHex(int64_t v, int width, char pad) {
  if (v >= 0) return GoHexU(static_cast<uint64_t>(v), width, pad);
  uint64_t mag = static_cast<uint64_t>(-(v + 1)) + 1;
  std::string digits = GoHexU(mag);
  int w = static_cast<int>(digits.size()) + 1;
  if (w < width) {
    if (pad == '0') return "-" + std::string(width - w, '0') + digits;
    return std::string(width - w, ' ') + "-" + digits;
  }
  return "-" + digits;
}

// --- tablewriter ---------------------------------------------------------

namespace {

constexpr int kMaxColumnWidth = 30;
constexpr int kWrapPenalty = 100000;

int DisplayWidth(std::string_view s) {
  int w = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    size_t n = DecodeUtf8(s, i, &cp);
    i += n == 0 ? 1 : n;
    ++w;
  }
  return w;
}

std::vector<std::string> SplitOn(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.emplace_back(s.substr(start, p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

// tablewriter's WrapString: minimum-raggedness line breaking of the
// space-separated words of `s` at `lim` columns (widened to the longest
// word).
std::vector<std::string> WrapString(const std::string& s, int lim) {
  std::string flat = s;
  for (char& c : flat) {
    if (c == '\n') c = ' ';
  }
  std::vector<std::string> words = SplitOn(flat, ' ');
  for (const auto& w : words) lim = std::max(lim, DisplayWidth(w));
  const int n = static_cast<int>(words.size());
  std::vector<std::vector<int>> length(n, std::vector<int>(n, 0));
  for (int i = 0; i < n; ++i) {
    length[i][i] = DisplayWidth(words[i]);
    for (int j = i + 1; j < n; ++j) {
      length[i][j] = length[i][j - 1] + 1 + DisplayWidth(words[j]);
    }
  }
  std::vector<int> nbrk(n, 0), cost(n, INT_MAX);
  for (int i = n - 1; i >= 0; --i) {
    if (length[i][n - 1] <= lim) {
      cost[i] = 0;
      nbrk[i] = n;
      continue;
    }
    for (int j = i + 1; j < n; ++j) {
      int d = lim - length[i][j - 1];
      long long c = static_cast<long long>(d) * d + cost[j];
      if (length[i][j - 1] > lim) c += kWrapPenalty;
      if (c < cost[i]) {
        cost[i] = static_cast<int>(c);
        nbrk[i] = j;
      }
    }
  }
  std::vector<std::string> lines;
  for (int i = 0; i < n;) {
    std::string line;
    for (int k = i; k < nbrk[i]; ++k) {
      if (k > i) line += " ";
      line += words[k];
    }
    lines.push_back(line);
    i = nbrk[i];
  }
  return lines;
}

std::string Title(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (c == '_' || c == '.') c = ' ';
  }
  size_t b = s.find_first_not_of(" \t\n\r");
  size_t e = s.find_last_not_of(" \t\n\r");
  s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
  if (s.empty() && !name.empty()) s = " ";
  for (char& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Repeat(char c, int n) { return std::string(n > 0 ? n : 0, c); }

}  // namespace

std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  const size_t cols = header.size();
  std::vector<int> width(cols, 0);
  auto seen = std::vector<bool>(cols, false);
  auto dimension = [&](const std::string& s, size_t col) {
    int w = std::min(DisplayWidth(s), kMaxColumnWidth);
    if (!seen[col] || width[col] < w || width[col] == 0) width[col] = w;
    seen[col] = true;
  };
  for (size_t c = 0; c < cols; ++c) dimension(header[c], c);
  // Cells are wrapped at the column width known when they are added (a
  // quirk of tablewriter that decides where long cells break).
  std::vector<std::vector<std::vector<std::string>>> cells;
  for (const auto& row : rows) {
    std::vector<std::vector<std::string>> lines;
    for (size_t c = 0; c < cols; ++c) {
      const std::string& v = c < row.size() ? row[c] : std::string();
      dimension(v, c);
      std::vector<std::string> wrapped = WrapString(v, width[c]);
      for (const auto& l : wrapped)
        width[c] = std::max(width[c], DisplayWidth(l));
      lines.push_back(std::move(wrapped));
    }
    cells.push_back(std::move(lines));
  }
  std::string out;
  auto line = [&] {
    out += "+";
    for (size_t c = 0; c < cols; ++c) out += Repeat('-', width[c] + 2) + "+";
    out += "\n";
  };
  line();
  out += "|";
  for (size_t c = 0; c < cols; ++c) {
    std::string h = Title(header[c]);
    int gap = width[c] - DisplayWidth(h);
    int left = gap > 0 ? gap / 2 : 0;
    int right = gap > 0 ? gap - left : 0;
    out += " " + Repeat(' ', left) + h + Repeat(' ', right) + " |";
  }
  out += "\n";
  line();
  for (const auto& row : cells) {
    size_t height = 0;
    for (const auto& c : row) height = std::max(height, c.size());
    for (size_t k = 0; k < height; ++k) {
      out += "|";
      for (size_t c = 0; c < cols; ++c) {
        std::string v = k < row[c].size() ? row[c][k] : "";
        out += " " + Repeat(' ', width[c] - DisplayWidth(v)) + v + " |";
      }
      out += "\n";
    }
  }
  line();
  return out;
}

}  // namespace kplane::kpctl
