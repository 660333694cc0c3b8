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

}  // namespace kplane

#endif  // KPLANE_BASE_BASE64_H_
