#include "net/ipv4_cidr.h"

#include <arpa/inet.h>

#include <charconv>

namespace kplane::net {

Status ParseIPv4Cidr(std::string_view cidr, uint32_t* network, int* prefix) {
  auto bad = [&] {
    return InvalidArgumentError("invalid IPv4 CIDR \"" + std::string(cidr) +
                                "\"");
  };
  size_t slash = cidr.find('/');
  if (slash == std::string_view::npos) return bad();
  std::string ip(cidr.substr(0, slash));
  std::string_view bits = cidr.substr(slash + 1);
  int p = -1;
  auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), p);
  if (bits.empty() || ec != std::errc() || end != bits.data() + bits.size() ||
      p < 0 || p > 32) {
    return bad();
  }
  in_addr addr{};
  if (inet_pton(AF_INET, ip.c_str(), &addr) != 1) return bad();
  *network = ntohl(addr.s_addr) & IPv4Mask(p);
  *prefix = p;
  return Status::Ok();
}

std::string FormatIPv4Address(uint32_t address) {
  char buf[INET_ADDRSTRLEN] = {};
  uint32_t be = htonl(address);
  inet_ntop(AF_INET, &be, buf, sizeof(buf));
  return buf;
}

std::string FormatIPv4Cidr(uint32_t network, int prefix) {
  return FormatIPv4Address(network) + "/" + std::to_string(prefix);
}

}  // namespace kplane::net
