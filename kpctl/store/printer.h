// Printer: how `kpctl store` shows each response, in etcdctl 3.4's three
// output formats (-w simple|json|table), byte for byte.
//
//   simple  etcdctl's simplePrinter ("OK", key/value lines, "lease 6942..
//           granted with TTL(30s)", comma-separated status rows, ...)
//   json    encoding/json of the structure etcdctl prints: the response
//           message for KV, member and alarm calls; clientv3's own structs
//           for watch ({"Header":..,"Events":..}), leases (header fields
//           inlined) and endpoint lists ([{"Endpoint":..,"Status":..}])
//   table   member list, endpoint status/health, snapshot status; every
//           other call answers "table not supported as output format"
//
// A method returns false when its format does not support the call; the
// caller then exits like etcdctl (code 4, ExitBadFeature).
//
// Ownership: writes to the streams given at construction (not owned).
// Thread-safety: one printer per command; not thread-safe.
#ifndef KPLANE_KPCTL_STORE_PRINTER_H_
#define KPLANE_KPCTL_STORE_PRINTER_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "schemas/rpc.pb.h"

namespace kplane::kpctl {

// One row of `endpoint health`.
struct EndpointHealth {
  std::string endpoint;
  bool health = false;
  std::string took;   // Go duration text ("4.73ms")
  std::string error;  // empty when healthy
};

// One row of `endpoint status`.
struct EndpointStatus {
  std::string endpoint;
  etcdserverpb::StatusResponse status;
};

// `snapshot status` of a file.
struct SnapshotStatus {
  uint32_t hash = 0;
  int64_t revision = 0;
  int64_t total_keys = 0;
  int64_t total_size = 0;
};

class Printer {
 public:
  virtual ~Printer() = default;

  virtual bool Get(const etcdserverpb::RangeResponse& r) = 0;
  virtual bool Put(const etcdserverpb::PutResponse& r) = 0;
  virtual bool Del(const etcdserverpb::DeleteRangeResponse& r) = 0;
  virtual bool Txn(const etcdserverpb::TxnResponse& r) = 0;
  virtual bool Watch(const etcdserverpb::WatchResponse& r) = 0;

  virtual bool Grant(const etcdserverpb::LeaseGrantResponse& r) = 0;
  virtual bool Revoke(int64_t id,
                      const etcdserverpb::LeaseRevokeResponse& r) = 0;
  virtual bool KeepAlive(const etcdserverpb::LeaseKeepAliveResponse& r) = 0;
  virtual bool TimeToLive(const etcdserverpb::LeaseTimeToLiveResponse& r,
                          bool keys) = 0;
  virtual bool Leases(const etcdserverpb::LeaseLeasesResponse& r) = 0;

  virtual bool MemberAdd(const etcdserverpb::MemberAddResponse& r) = 0;
  virtual bool MemberRemove(uint64_t id,
                            const etcdserverpb::MemberRemoveResponse& r) = 0;
  virtual bool MemberUpdate(uint64_t id,
                            const etcdserverpb::MemberUpdateResponse& r) = 0;
  virtual bool MemberPromote(uint64_t id,
                             const etcdserverpb::MemberPromoteResponse& r) = 0;
  virtual bool MemberList(const etcdserverpb::MemberListResponse& r) = 0;

  virtual bool EndpointHealthList(const std::vector<EndpointHealth>& h) = 0;
  virtual bool EndpointStatusList(const std::vector<EndpointStatus>& s) = 0;
  virtual bool MoveLeader(uint64_t leader, uint64_t target,
                          const etcdserverpb::MoveLeaderResponse& r) = 0;
  virtual bool Alarm(const etcdserverpb::AlarmResponse& r) = 0;
  virtual bool DBStatus(const SnapshotStatus& s) = 0;

  // "simple", "json", "table".
  virtual const char* name() const = 0;
};

// nullptr for an unknown format. `out` takes results; `err` takes what
// etcdctl writes to stderr (endpoint health in simple format).
std::unique_ptr<Printer> NewPrinter(const std::string& format, bool hex,
                                    bool value_only, std::ostream* out,
                                    std::ostream* err);

// etcdctl's simple form of one key-value pair ("key\nvalue\n"; with hex,
// "\x6b\x65\x79").
std::string SimpleKV(const mvccpb::KeyValue& kv, bool hex, bool value_only);

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_STORE_PRINTER_H_
