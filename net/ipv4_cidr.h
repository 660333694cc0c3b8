// IPv4 CIDR text <-> (network, prefix length), for the node IPAM
// controller's CIDR set and the simulated kubelets' pod addresses.
//
//   uint32_t net; int prefix;
//   RETURN_IF_ERROR(ParseIPv4Cidr("10.1.2.0/24", &net, &prefix));
//   // net == 0x0a010200 (host byte order), prefix == 24
//   FormatIPv4Cidr(net, prefix) == "10.1.2.0/24"
//
// Host bits are masked off, as Go's net.ParseCIDR does ("10.1.2.3/24" is
// 10.1.2.0/24). Errors: InvalidArgument naming the text for anything but
// a dotted quad, '/', and a prefix length 0..32 (IPv6 included).
// Thread-safety: pure functions.
#ifndef KPLANE_NET_IPV4_CIDR_H_
#define KPLANE_NET_IPV4_CIDR_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kplane::net {

Status ParseIPv4Cidr(std::string_view cidr, uint32_t* network, int* prefix);
// The address in dotted-quad form ("10.1.2.0").
std::string FormatIPv4Address(uint32_t address);
std::string FormatIPv4Cidr(uint32_t network, int prefix);
// The netmask of a prefix length: 24 -> 0xffffff00.
inline uint32_t IPv4Mask(int prefix) {
  return prefix <= 0 ? 0 : ~uint32_t{0} << (32 - prefix);
}

}  // namespace kplane::net

#endif  // KPLANE_NET_IPV4_CIDR_H_
