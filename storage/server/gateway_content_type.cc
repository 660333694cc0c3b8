#include "storage/server/gateway_content_type.h"

#include <string>

#include "base/strings.h"

namespace kplane::storage {

Status CheckGatewayContentType(const net::HttpHeaders& headers) {
  const std::string_view raw = headers.Get("Content-Type");
  // The media type without parameters ("; charset=utf-8"), lower case.
  const std::string type =
      ToLower(StripWhitespace(raw.substr(0, raw.find(';'))));
  if (type == "application/json" || type.ends_with("+json")) {
    return Status::Ok();
  }
  const bool from_browser = headers.Has("Origin");
  if (!from_browser &&
      (type.empty() || type == "application/x-www-form-urlencoded")) {
    return Status::Ok();
  }
  std::string why = type.empty() ? "a request without Content-Type"
                                 : "Content-Type \"" + type + "\"";
  if (from_browser) why += " with an Origin header (a browser)";
  return InvalidArgumentError(
      why +
      " is not accepted: send JSON as application/json (curl: -H "
      "'Content-Type: application/json'; plain `curl -d` without an Origin "
      "header is accepted too)");
}

}  // namespace kplane::storage
