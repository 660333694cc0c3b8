#include "net/srv_discovery.h"

#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <cstring>

namespace kplane::net {

namespace {

class SystemSrvResolver : public SrvResolver {
 public:
  StatusOr<std::vector<SrvRecord>> LookupSrv(const std::string& name) override {
    // res_nquery with a state of our own: the global res_query state is
    // not safe to share between threads.
    struct __res_state st;
    std::memset(&st, 0, sizeof(st));
    if (res_ninit(&st) != 0) {
      return UnavailableError("cannot read the resolver configuration");
    }
    // 64 KiB is the largest DNS message (TCP); res_nquery retries over TCP
    // when the UDP answer is truncated.
    std::string answer(65536, '\0');
    h_errno = 0;
    const int n = res_nquery(&st, name.c_str(), ns_c_in, ns_t_srv,
                             reinterpret_cast<unsigned char*>(answer.data()),
                             static_cast<int>(answer.size()));
    const int herr = st.res_h_errno;
    res_nclose(&st);
    if (n < 0) {
      if (herr == HOST_NOT_FOUND || herr == NO_DATA) {
        return NotFoundError("lookup " + name + ": no such SRV record");
      }
      return UnavailableError("lookup " + name + ": " + hstrerror(herr));
    }
    answer.resize(static_cast<size_t>(n));
    auto recs = ParseSrvResponse(answer);
    if (!recs.ok()) return recs.status().Annotate("lookup " + name);
    if (recs->empty()) {
      return NotFoundError("lookup " + name + ": no such SRV record");
    }
    return recs;
  }
};

}  // namespace

SrvResolver* SrvResolver::System() {
  static SystemSrvResolver* r = new SystemSrvResolver();
  return r;
}

StatusOr<std::vector<SrvRecord>> ParseSrvResponse(std::string_view msg) {
  const auto* base = reinterpret_cast<const unsigned char*>(msg.data());
  ns_msg handle;
  if (msg.size() > 65535 ||
      ns_initparse(base, static_cast<int>(msg.size()), &handle) != 0) {
    return InvalidArgumentError("malformed DNS message");
  }
  std::vector<SrvRecord> out;
  const int count = ns_msg_count(handle, ns_s_an);
  for (int i = 0; i < count; ++i) {
    ns_rr rr;
    if (ns_parserr(&handle, ns_s_an, i, &rr) != 0) {
      return InvalidArgumentError("malformed DNS answer record " +
                                  std::to_string(i));
    }
    // Other types (a CNAME on the way) are skipped, as Go's resolver does.
    if (ns_rr_type(rr) != ns_t_srv || ns_rr_class(rr) != ns_c_in) continue;
    // RDATA: priority, weight, port (16 bits each), then the target name,
    // which may be compressed (a pointer into the whole message).
    if (ns_rr_rdlen(rr) < 7) {
      return InvalidArgumentError("SRV record " + std::to_string(i) +
                                  " too short");
    }
    const unsigned char* rd = ns_rr_rdata(rr);
    SrvRecord r;
    r.priority = ns_get16(rd);
    r.weight = ns_get16(rd + 2);
    r.port = ns_get16(rd + 4);
    char name[NS_MAXDNAME];
    const int used =
        dn_expand(base, base + msg.size(), rd + 6, name, sizeof(name));
    if (used < 0 || used > ns_rr_rdlen(rr) - 6) {
      return InvalidArgumentError("SRV record " + std::to_string(i) +
                                  ": malformed target name");
    }
    r.target = name;
    if (!r.target.empty() && r.target.back() == '.') r.target.pop_back();
    if (r.target.empty()) {
      // "." is RFC 2782's "no service here".
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string SrvQueryName(std::string_view service,
                         std::string_view service_name, bool https,
                         std::string_view domain) {
  std::string s = "_" + std::string(service);
  if (https) s += "-ssl";
  if (!service_name.empty()) s += "-" + std::string(service_name);
  return s + "._tcp." + std::string(domain);
}

StatusOr<std::vector<DiscoveredEndpoint>> DiscoverClientEndpoints(
    SrvResolver& resolver, std::string_view domain,
    std::string_view service_name) {
  std::vector<DiscoveredEndpoint> out;
  Status errs[2];
  for (bool https : {true, false}) {
    const std::string q =
        SrvQueryName("etcd-client", service_name, https, domain);
    auto recs = resolver.LookupSrv(q);
    if (!recs.ok()) {
      errs[https ? 0 : 1] = recs.status();
      continue;
    }
    for (SrvRecord& r : *recs) {
      DiscoveredEndpoint e;
      e.https = https;
      const bool v6 = r.target.find(':') != std::string::npos;
      e.url = std::string(https ? "https://" : "http://") +
              (v6 ? "[" + r.target + "]" : r.target) + ":" +
              std::to_string(r.port);
      e.srv = std::move(r);
      out.push_back(std::move(e));
    }
  }
  if (!errs[0].ok() && !errs[1].ok()) {
    Status s = errs[1].code() == StatusCode::kNotFound ? errs[0] : errs[1];
    return Status(s.code(), "dns lookup errors: " + errs[0].message() +
                                " and " + errs[1].message());
  }
  return out;
}

}  // namespace kplane::net
