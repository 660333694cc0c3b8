// Standard base64 (RFC 4648 §4, with padding), as etcd's JSON API and
// Kubernetes Secrets use it.
#ifndef KPLANE_BASE_BASE64_H_
#define KPLANE_BASE_BASE64_H_

#include <string>
#include <string_view>

#include "base/statusor.h"

namespace kplane {

std::string Base64Encode(std::string_view in);
// Accepts padded and unpadded input; rejects any other character.
StatusOr<std::string> Base64Decode(std::string_view in);

// Go's base64.StdEncoding.DecodeString, which etcd's JSON gateway (Go's
// encoding/json) applies to bytes fields: the standard alphabet, padding
// required, '\r' and '\n' skipped wherever they are, bits after the last
// byte ignored (not "strict"). Anything else is Go's error, in its words:
// "illegal base64 data at input byte N", N counting every byte of `in`.
StatusOr<std::string> Base64DecodeGoStd(std::string_view in);

// The URL and file name safe alphabet (RFC 4648 §5: '-' and '_' for '+' and
// '/') without padding, as JSON Web Tokens use it (RFC 7515 §2). Decoding
// rejects padding and the standard alphabet's '+' and '/'.
std::string Base64UrlEncode(std::string_view in);
StatusOr<std::string> Base64UrlDecode(std::string_view in);

}  // namespace kplane

#endif  // KPLANE_BASE_BASE64_H_
