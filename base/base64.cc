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
