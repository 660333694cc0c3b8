#include "storage/server/etcd_health.h"

#include <string>

namespace kplane::storage {

void RespondEtcdHealth(net::Responder& r, bool healthy,
                       std::string_view reason) {
  net::HttpHeaders headers{{"Content-Type", "text/plain; charset=utf-8"}};
  if (healthy) {
    r.Respond(200, std::move(headers), R"({"health":"true"})");
    return;
  }
  headers.Add("X-Content-Type-Options", "nosniff");
  if (!reason.empty()) {
    std::string value(reason);
    for (char& c : value) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) c = ' ';
    }
    headers.Add("X-Kplane-Health-Reason", std::move(value));
  }
  r.Respond(503, std::move(headers), "{\"health\":\"false\"}\n");
}

bool RespondEtcdHealthToOtherMethods(const net::HttpRequest& req,
                                     net::Responder& r) {
  if (req.method == "GET") return false;
  r.Respond(405,
            {{"Allow", "GET"},
             {"Content-Type", "text/plain; charset=utf-8"},
             {"X-Content-Type-Options", "nosniff"}},
            "Method Not Allowed\n");
  return true;
}

}  // namespace kplane::storage
