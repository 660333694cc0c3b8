#include "base/base64.h"

#include <array>
#include <cstdint>

namespace kplane {
namespace {

constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(kAlphabet[i])] = i;
  return t;
}
constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

}  // namespace

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v =
        (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

StatusOr<std::string> Base64Decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) {
    return InvalidArgumentError("illegal base64 data: bad length");
  }
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int8_t d = kDecode[static_cast<uint8_t>(c)];
    if (d < 0) return InvalidArgumentError("illegal base64 data");
    acc = (acc << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// Go's (*Encoding).Decode (encoding/base64, Go 1.19): whole quanta of four
// alphabet characters fast, anything else through decodeQuantum's loop.
StatusOr<std::string> Base64DecodeGoStd(std::string_view in) {
  auto corrupt = [](size_t at) {
    return InvalidArgumentError("illegal base64 data at input byte " +
                                std::to_string(at));
  };
  auto newline = [&](size_t i) { return in[i] == '\n' || in[i] == '\r'; };
  std::string out(in.size() / 4 * 3 + 3, '\0');
  size_t n = 0;  // bytes written to out
  size_t si = 0;
  while (si < in.size()) {
    if (in.size() - si >= 4) {
      const int8_t a = kDecode[static_cast<uint8_t>(in[si])];
      const int8_t b = kDecode[static_cast<uint8_t>(in[si + 1])];
      const int8_t c = kDecode[static_cast<uint8_t>(in[si + 2])];
      const int8_t d = kDecode[static_cast<uint8_t>(in[si + 3])];
      if ((a | b | c | d) >= 0) {
        const uint32_t v =
            static_cast<uint32_t>(a) << 18 | static_cast<uint32_t>(b) << 12 |
            static_cast<uint32_t>(c) << 6 | static_cast<uint32_t>(d);
        out[n++] = static_cast<char>(v >> 16);
        out[n++] = static_cast<char>((v >> 8) & 0xff);
        out[n++] = static_cast<char>(v & 0xff);
        si += 4;
        continue;
      }
    }
    // decodeQuantum: one quantum, skipping newlines, ending at padding.
    uint32_t dbuf[4] = {0, 0, 0, 0};
    int dlen = 4;
    bool padded = false;
    for (int j = 0; j < 4; ++j) {
      if (si == in.size()) {
        if (j == 0) {  // only newlines after the last quantum
          out.resize(n);
          return out;
        }
        return corrupt(si - j);  // a quantum cut short: padding is required
      }
      const char ch = in[si++];
      const int8_t d = kDecode[static_cast<uint8_t>(ch)];
      if (d >= 0) {
        dbuf[j] = static_cast<uint32_t>(d);
        continue;
      }
      if (ch == '\n' || ch == '\r') {
        --j;
        continue;
      }
      if (ch != '=' || j < 2) return corrupt(si - 1);
      if (j == 2) {  // "==": the second '=', after any newlines
        while (si < in.size() && newline(si)) ++si;
        if (si == in.size()) return corrupt(in.size());
        if (in[si] != '=') return corrupt(si - 1);
        ++si;
      }
      while (si < in.size() && newline(si)) ++si;
      if (si < in.size()) return corrupt(si);  // data after the padding
      dlen = j;
      padded = true;
      break;
    }
    const uint32_t v = dbuf[0] << 18 | dbuf[1] << 12 | dbuf[2] << 6 | dbuf[3];
    out[n++] = static_cast<char>(v >> 16);
    if (dlen >= 3) out[n++] = static_cast<char>((v >> 8) & 0xff);
    if (dlen == 4) out[n++] = static_cast<char>(v & 0xff);
    if (padded) break;
  }
  out.resize(n);
  return out;
}

std::string Base64UrlEncode(std::string_view in) {
  std::string out = Base64Encode(in);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& ch : out) {
    if (ch == '+') ch = '-';
    if (ch == '/') ch = '_';
  }
  return out;
}

StatusOr<std::string> Base64UrlDecode(std::string_view in) {
  std::string std_alphabet(in);
  for (char& ch : std_alphabet) {
    if (ch == '+' || ch == '/' || ch == '=') {
      return InvalidArgumentError("illegal base64url data");
    }
    if (ch == '-') ch = '+';
    if (ch == '_') ch = '/';
  }
  return Base64Decode(std_alphabet);
}

}  // namespace kplane
