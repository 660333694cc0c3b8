// DNS SRV discovery of a store cluster's client endpoints, as etcd 3.4's
// clients and gateway do it (pkg/srv GetClient): for a domain and an
// optional service name, look up
//
//   _etcd-client-ssl[-<name>]._tcp.<domain>   -> https://<target>:<port>
//   _etcd-client[-<name>]._tcp.<domain>       -> http://<target>:<port>
//
// and fail only when both lookups fail.
//
//   SrvResolver* r = SrvResolver::System();   // res_query(3), /etc/resolv.conf
//   ASSIGN_OR_RETURN(auto eps, DiscoverClientEndpoints(*r, "example.com", ""));
//
// SrvResolver is the seam tests inject; ParseSrvResponse reads the answer
// section of a DNS message (untrusted bytes: every length is checked by
// libresolv's ns_parserr/dn_expand).
//
// Thread-safety: the functions are thread-safe; System() is shared.
// Errors: kNotFound when a name has no SRV record (NXDOMAIN or no answer),
// kUnavailable when the resolver could not be asked, kInvalidArgument for
// a malformed DNS message.
#ifndef KPLANE_NET_SRV_DISCOVERY_H_
#define KPLANE_NET_SRV_DISCOVERY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::net {

struct SrvRecord {
  std::string target;  // without the trailing dot
  uint16_t port = 0;
  uint16_t priority = 0;
  uint16_t weight = 0;
};

class SrvResolver {
 public:
  virtual ~SrvResolver() = default;
  // The SRV records of `name` (e.g. "_etcd-client._tcp.example.com").
  virtual StatusOr<std::vector<SrvRecord>> LookupSrv(
      const std::string& name) = 0;
  // The system's resolver (libresolv's res_query).
  static SrvResolver* System();
};

// The SRV records in the answer section of the DNS message `msg`.
StatusOr<std::vector<SrvRecord>> ParseSrvResponse(std::string_view msg);

// "_etcd-client-ssl-<name>._tcp.<domain>" and the like (etcd's
// GetSRVService): `service` gets "-ssl" for https, then "-<name>" when
// `service_name` is not empty.
std::string SrvQueryName(std::string_view service,
                         std::string_view service_name, bool https,
                         std::string_view domain);

struct DiscoveredEndpoint {
  std::string url;  // "https://host:port" or "http://host:port"
  bool https = false;
  SrvRecord srv;
};

// etcd's client discovery: the https records first, then the http ones.
// Fails (kNotFound or kUnavailable, naming both lookups) only when both
// lookups fail.
StatusOr<std::vector<DiscoveredEndpoint>> DiscoverClientEndpoints(
    SrvResolver& resolver, std::string_view domain,
    std::string_view service_name);

}  // namespace kplane::net

#endif  // KPLANE_NET_SRV_DISCOVERY_H_
