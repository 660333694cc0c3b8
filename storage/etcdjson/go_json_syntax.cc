#include "storage/etcdjson/go_json_syntax.h"

#include <cstdio>
#include <vector>

#include "base/json.h"

namespace kplane::etcdjson {

std::string GoQuoteChar(unsigned char c) {
  switch (c) {
    case '\'':
      return "'\\''";
    case '"':
      return "'\"'";
    case '\\':
      return "'\\\\'";
    case '\a':
      return "'\\a'";
    case '\b':
      return "'\\b'";
    case '\f':
      return "'\\f'";
    case '\n':
      return "'\\n'";
    case '\r':
      return "'\\r'";
    case '\t':
      return "'\\t'";
    case '\v':
      return "'\\v'";
  }
  char buf[16];
  if (c < 0x20 || c == 0x7f) {
    snprintf(buf, sizeof(buf), "'\\x%02x'", c);
  } else if (c < 0x80) {
    snprintf(buf, sizeof(buf), "'%c'", c);
  } else if (c <= 0xa0 || c == 0xad) {  // not printable (strconv.IsPrint)
    snprintf(buf, sizeof(buf), "'\\u00%02x'", c);
  } else {
    snprintf(buf, sizeof(buf), "'%c%c'", 0xc0 | (c >> 6), 0x80 | (c & 0x3f));
  }
  return buf;
}

namespace {

// Go's scanner (encoding/json/scanner.go), one state per step function of
// it, reading the first value only. Step returns kDone once that value is
// complete: at its closing bracket, or, for a number or literal, at the
// byte after it (Go's scanEnd, which json.Decoder stops at without
// judging that byte).
class GoScanner {
 public:
  enum Result { kMore, kDone, kError };

  Result Step(unsigned char c) {
    switch (state_) {
      case kBeginValueOrEmpty:
        if (IsGoJsonSpace(c)) return kMore;
        if (c == ']') return EndValue(c);
        return BeginValue(c);
      case kBeginValue:
        return BeginValue(c);
      case kBeginStringOrEmpty:
        if (IsGoJsonSpace(c)) return kMore;
        if (c == '}') {
          stack_.back() = kObjectValue;
          return EndValue(c);
        }
        return BeginString(c);
      case kBeginString:
        return BeginString(c);
      case kEndValue:
        return EndValue(c);
      case kInString:
        if (c == '"') {
          state_ = kEndValue;
        } else if (c == '\\') {
          state_ = kInStringEsc;
        } else if (c < 0x20) {
          return Error(c, "in string literal");
        }
        return kMore;
      case kInStringEsc:
        switch (c) {
          case 'b':
          case 'f':
          case 'n':
          case 'r':
          case 't':
          case '\\':
          case '/':
          case '"':
            state_ = kInString;
            return kMore;
          case 'u':
            state_ = kInStringEscU;
            hex_left_ = 4;
            return kMore;
        }
        return Error(c, "in string escape code");
      case kInStringEscU:
        if (!IsHex(c)) return Error(c, "in \\u hexadecimal character escape");
        if (--hex_left_ == 0) state_ = kInString;
        return kMore;
      case kNeg:
        if (c == '0') {
          state_ = k0;
          return kMore;
        }
        if (c >= '1' && c <= '9') {
          state_ = k1;
          return kMore;
        }
        return Error(c, "in numeric literal");
      case k1:
        if (IsDigit(c)) return kMore;
        [[fallthrough]];
      case k0:
        if (c == '.') {
          state_ = kDot;
          return kMore;
        }
        if (c == 'e' || c == 'E') {
          state_ = kE;
          return kMore;
        }
        return EndValue(c);
      case kDot:
        if (IsDigit(c)) {
          state_ = kDot0;
          return kMore;
        }
        return Error(c, "after decimal point in numeric literal");
      case kDot0:
        if (IsDigit(c)) return kMore;
        if (c == 'e' || c == 'E') {
          state_ = kE;
          return kMore;
        }
        return EndValue(c);
      case kE:
        if (c == '+' || c == '-') {
          state_ = kESign;
          return kMore;
        }
        [[fallthrough]];
      case kESign:
        if (IsDigit(c)) {
          state_ = kE0;
          return kMore;
        }
        return Error(c, "in exponent of numeric literal");
      case kE0:
        if (IsDigit(c)) return kMore;
        return EndValue(c);
      case kLiteral:
        if (static_cast<char>(c) != literal_[literal_next_]) {
          return Error(c, std::string("in literal ") + literal_ +
                              " (expecting " +
                              GoQuoteChar(literal_[literal_next_]) + ")");
        }
        if (literal_[++literal_next_] == '\0') state_ = kEndValue;
        return kMore;
    }
    return kMore;
  }

  // The text ended before Step returned kDone or kError: Go's decoder
  // steps a space (which ends a number, string or literal at the top
  // level), then calls the rest io.ErrUnexpectedEOF.
  Result Eof() {
    if (stack_.empty() && (state_ == kEndValue || state_ == k1 ||
                           state_ == k0 || state_ == kDot0 || state_ == kE0)) {
      return kDone;
    }
    error_ = "unexpected EOF";
    return kError;
  }

  const std::string& error() const { return error_; }
  // Step returned kDone at the bracket that closes the value (part of it),
  // not at the byte after a number or literal.
  bool closed_by_bracket() const { return closed_by_bracket_; }

 private:
  enum State {
    kBeginValueOrEmpty,
    kBeginValue,
    kBeginStringOrEmpty,
    kBeginString,
    kEndValue,
    kInString,
    kInStringEsc,
    kInStringEscU,
    kNeg,
    k1,
    k0,
    kDot,
    kDot0,
    kE,
    kESign,
    kE0,
    kLiteral,
  };
  enum Container : char { kObjectKey, kObjectValue, kArrayValue };

  static bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
  static bool IsHex(unsigned char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  Result Error(unsigned char c, const std::string& context) {
    error_ = "invalid character " + GoQuoteChar(c) + " " + context;
    return kError;
  }

  Result Push(unsigned char c, Container container) {
    stack_.push_back(container);
    // Go's maxNestingDepth, the same bound as RapidJSON's here.
    if (stack_.size() > static_cast<size_t>(json::kMaxDepth)) {
      return Error(c, "exceeded max depth");
    }
    return kMore;
  }

  Result BeginValue(unsigned char c) {
    if (IsGoJsonSpace(c)) return kMore;
    switch (c) {
      case '{':
        state_ = kBeginStringOrEmpty;
        return Push(c, kObjectKey);
      case '[':
        state_ = kBeginValueOrEmpty;
        return Push(c, kArrayValue);
      case '"':
        state_ = kInString;
        return kMore;
      case '-':
        state_ = kNeg;
        return kMore;
      case '0':
        state_ = k0;
        return kMore;
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
    }
    if (c >= '1' && c <= '9') {
      state_ = k1;
      return kMore;
    }
    return Error(c, "looking for beginning of value");
  }

  Result Literal(const char* word) {
    state_ = kLiteral;
    literal_ = word;
    literal_next_ = 1;
    return kMore;
  }

  Result BeginString(unsigned char c) {
    if (IsGoJsonSpace(c)) return kMore;
    if (c == '"') {
      state_ = kInString;
      return kMore;
    }
    return Error(c, "looking for beginning of object key string");
  }

  Result EndValue(unsigned char c) {
    // The first value is complete before this byte.
    if (stack_.empty()) return kDone;
    if (IsGoJsonSpace(c)) {
      state_ = kEndValue;
      return kMore;
    }
    switch (stack_.back()) {
      case kObjectKey:
        if (c == ':') {
          stack_.back() = kObjectValue;
          state_ = kBeginValue;
          return kMore;
        }
        return Error(c, "after object key");
      case kObjectValue:
        if (c == ',') {
          stack_.back() = kObjectKey;
          state_ = kBeginString;
          return kMore;
        }
        if (c == '}') return Pop();
        return Error(c, "after object key:value pair");
      case kArrayValue:
        if (c == ',') {
          state_ = kBeginValue;
          return kMore;
        }
        if (c == ']') return Pop();
        return Error(c, "after array element");
    }
    return Error(c, "");
  }

  // The decoder stops at the bracket that closes the first value.
  Result Pop() {
    stack_.pop_back();
    if (stack_.empty()) {
      closed_by_bracket_ = true;
      return kDone;
    }
    state_ = kEndValue;
    return kMore;
  }

  State state_ = kBeginValue;
  std::vector<Container> stack_;
  const char* literal_ = "";
  int literal_next_ = 0;
  int hex_left_ = 0;
  bool closed_by_bracket_ = false;
  std::string error_;
};

}  // namespace

bool IsGoJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string GoJsonSyntaxError(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsGoJsonSpace(text[i])) ++i;
  if (i == text.size()) return "";  // io.EOF
  GoScanner scanner;
  for (; i < text.size(); ++i) {
    switch (scanner.Step(static_cast<unsigned char>(text[i]))) {
      case GoScanner::kMore:
        continue;
      case GoScanner::kDone:
        return "";
      case GoScanner::kError:
        return scanner.error();
    }
  }
  return scanner.Eof() == GoScanner::kDone ? "" : scanner.error();
}

std::string GoJsonValueSyntaxError(std::string_view text) {
  GoScanner scanner;
  for (size_t i = 0; i < text.size(); ++i) {
    switch (scanner.Step(static_cast<unsigned char>(text[i]))) {
      case GoScanner::kMore:
        continue;
      case GoScanner::kError:
        return scanner.error();
      case GoScanner::kDone:
        // Only white space may follow the value.
        for (size_t j = scanner.closed_by_bracket() ? i + 1 : i;
             j < text.size(); ++j) {
          if (!IsGoJsonSpace(text[j])) {
            return "invalid character " +
                   GoQuoteChar(static_cast<unsigned char>(text[j])) +
                   " after top-level value";
          }
        }
        return "";
    }
  }
  // Go's scanner.eof: a space ends a number, or is the error.
  switch (scanner.Step(' ')) {
    case GoScanner::kDone:
      return "";
    case GoScanner::kError:
      return scanner.error();
    case GoScanner::kMore:
      break;
  }
  return "unexpected end of JSON input";
}

}  // namespace kplane::etcdjson
