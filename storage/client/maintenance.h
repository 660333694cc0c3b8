// Maintenance: the cluster and maintenance calls of etcd's v3 JSON API,
// addressed to ONE member (etcdctl's `endpoint status`, `defrag`, `member
// ...`, `alarm ...`, `snapshot save`, `move-leader`).
//
//   ASSIGN_OR_RETURN(auto m, Maintenance::Create("127.0.0.1:2379"));
//   ASSIGN_OR_RETURN(etcdserverpb::StatusResponse s, m->Status());
//   bool leader = s.leader() == s.header().member_id();
//
// Unlike RemoteKV nothing is retried on another endpoint: these calls are
// about the member they are sent to. (For cluster-wide calls with failover,
// such as member list, use RemoteKV::Call.)
//
// Paths (etcd 3.4's gateway): /v3/maintenance/{status,defragment,hash,
// alarm,snapshot,transfer-leadership}, /v3/cluster/member/{list,add,
// remove,update,promote}.
//
// Thread-safety: all methods may be called concurrently.
// Errors: the transport's status (kUnavailable, kDeadlineExceeded) or the
// server's error mapped by etcdjson::ErrorToStatus.
#ifndef KPLANE_STORAGE_CLIENT_MAINTENANCE_H_
#define KPLANE_STORAGE_CLIENT_MAINTENANCE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/statusor.h"
#include "net/http_client.h"
#include "schemas/rpc.pb.h"
#include "storage/client/endpoint.h"

namespace kplane::storage {

struct MaintenanceOptions {
  // As RemoteKVOptions::tls.
  std::shared_ptr<const net::TlsContext> tls;
  Duration dial_timeout = seconds(2);
  // One request; a snapshot stream waits at most this long for each piece.
  Duration request_timeout = seconds(30);
  Clock* clock = nullptr;
};

class Maintenance {
 public:
  static StatusOr<std::unique_ptr<Maintenance>> Create(
      std::string_view endpoint, MaintenanceOptions options = {});

  StatusOr<etcdserverpb::StatusResponse> Status();
  StatusOr<etcdserverpb::DefragmentResponse> Defragment();
  StatusOr<etcdserverpb::HashResponse> Hash();
  // AlarmRequest{action: GET} lists; DEACTIVATE with memberID 0 and alarm
  // NONE disarms all (etcdctl's `alarm disarm`).
  StatusOr<etcdserverpb::AlarmResponse> Alarm(
      const etcdserverpb::AlarmRequest& req);
  StatusOr<etcdserverpb::MoveLeaderResponse> MoveLeader(uint64_t target_id);

  StatusOr<etcdserverpb::MemberListResponse> MemberList();
  StatusOr<etcdserverpb::MemberAddResponse> MemberAdd(
      const etcdserverpb::MemberAddRequest& req);
  StatusOr<etcdserverpb::MemberRemoveResponse> MemberRemove(uint64_t id);
  StatusOr<etcdserverpb::MemberUpdateResponse> MemberUpdate(
      const etcdserverpb::MemberUpdateRequest& req);
  StatusOr<etcdserverpb::MemberPromoteResponse> MemberPromote(uint64_t id);

  // Streams the member's snapshot, handing each blob to `sink` in order.
  // Returns the number of bytes received. Stops early with `sink`'s status
  // when `sink` fails. Each piece must arrive within request_timeout.
  StatusOr<uint64_t> Snapshot(
      const std::function<kplane::Status(std::string_view)>& sink);

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Maintenance(Endpoint endpoint, MaintenanceOptions options);

  template <typename Resp>
  StatusOr<Resp> Unary(std::string_view path,
                       const google::protobuf::Message& req);

  const Endpoint endpoint_;
  const MaintenanceOptions options_;
  ConnectionPool pool_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_MAINTENANCE_H_
