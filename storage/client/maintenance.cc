#include "storage/client/maintenance.h"

#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/json_stream.h"

namespace kplane::storage {

namespace {

net::HttpClientOptions HttpOptions(const MaintenanceOptions& o) {
  net::HttpClientOptions h;
  h.connect_timeout = o.dial_timeout;
  h.read_timeout = o.request_timeout;
  h.write_timeout = o.request_timeout;
  h.stream_idle_timeout = o.request_timeout;
  h.clock = o.clock;
  h.tls = o.tls;
  h.default_headers = {{"User-Agent", "kplane-storage-client/1"}};
  return h;
}

}  // namespace

StatusOr<std::unique_ptr<Maintenance>> Maintenance::Create(
    std::string_view endpoint, MaintenanceOptions options) {
  ASSIGN_OR_RETURN(
      std::vector<Endpoint> eps,
      ParseEndpoints({std::string(endpoint)}, options.tls != nullptr));
  if (eps.size() != 1) {
    return InvalidArgumentError("Maintenance talks to exactly one endpoint");
  }
  if (eps[0].tls && options.tls == nullptr) {
    ASSIGN_OR_RETURN(options.tls, NewStoreClientTls({}));
  }
  return std::unique_ptr<Maintenance>(
      new Maintenance(std::move(eps[0]), std::move(options)));
}

Maintenance::Maintenance(Endpoint endpoint, MaintenanceOptions options)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      pool_(endpoint_, HttpOptions(options_), 4) {}

template <typename Resp>
StatusOr<Resp> Maintenance::Unary(std::string_view path,
                                  const google::protobuf::Message& req) {
  Resp resp;
  PooledClient c = pool_.Take();
  RETURN_IF_ERROR(CallEndpoint(c.get(), path, req, &resp));
  return resp;
}

StatusOr<etcdserverpb::StatusResponse> Maintenance::Status() {
  return Unary<etcdserverpb::StatusResponse>("/v3/maintenance/status",
                                             etcdserverpb::StatusRequest());
}

StatusOr<etcdserverpb::DefragmentResponse> Maintenance::Defragment() {
  return Unary<etcdserverpb::DefragmentResponse>(
      "/v3/maintenance/defragment", etcdserverpb::DefragmentRequest());
}

StatusOr<etcdserverpb::HashResponse> Maintenance::Hash() {
  return Unary<etcdserverpb::HashResponse>("/v3/maintenance/hash",
                                           etcdserverpb::HashRequest());
}

StatusOr<etcdserverpb::AlarmResponse> Maintenance::Alarm(
    const etcdserverpb::AlarmRequest& req) {
  return Unary<etcdserverpb::AlarmResponse>("/v3/maintenance/alarm", req);
}

StatusOr<etcdserverpb::MoveLeaderResponse> Maintenance::MoveLeader(
    uint64_t target_id) {
  etcdserverpb::MoveLeaderRequest req;
  req.set_targetid(target_id);
  return Unary<etcdserverpb::MoveLeaderResponse>(
      "/v3/maintenance/transfer-leadership", req);
}

StatusOr<etcdserverpb::MemberListResponse> Maintenance::MemberList() {
  return Unary<etcdserverpb::MemberListResponse>(
      "/v3/cluster/member/list", etcdserverpb::MemberListRequest());
}

StatusOr<etcdserverpb::MemberAddResponse> Maintenance::MemberAdd(
    const etcdserverpb::MemberAddRequest& req) {
  return Unary<etcdserverpb::MemberAddResponse>("/v3/cluster/member/add", req);
}

StatusOr<etcdserverpb::MemberRemoveResponse> Maintenance::MemberRemove(
    uint64_t id) {
  etcdserverpb::MemberRemoveRequest req;
  req.set_id(id);
  return Unary<etcdserverpb::MemberRemoveResponse>("/v3/cluster/member/remove",
                                                   req);
}

StatusOr<etcdserverpb::MemberUpdateResponse> Maintenance::MemberUpdate(
    const etcdserverpb::MemberUpdateRequest& req) {
  return Unary<etcdserverpb::MemberUpdateResponse>("/v3/cluster/member/update",
                                                   req);
}

StatusOr<etcdserverpb::MemberPromoteResponse> Maintenance::MemberPromote(
    uint64_t id) {
  etcdserverpb::MemberPromoteRequest req;
  req.set_id(id);
  return Unary<etcdserverpb::MemberPromoteResponse>(
      "/v3/cluster/member/promote", req);
}

StatusOr<uint64_t> Maintenance::Snapshot(
    const std::function<kplane::Status(std::string_view)>& sink) {
  std::unique_ptr<net::HttpClient> client = pool_.NewClient();
  ASSIGN_OR_RETURN(
      std::unique_ptr<net::HttpStream> stream,
      client->OpenStream("POST", "/v3/maintenance/snapshot", JsonHeaders()));
  RETURN_IF_ERROR(stream->Send("{}"));
  RETURN_IF_ERROR(stream->CloseSend());
  ASSIGN_OR_RETURN(net::HttpResponse head,
                   stream->ReadHead(options_.request_timeout));
  std::string data;
  if (head.status != 200) {
    for (;;) {
      StatusOr<bool> more = stream->Read(&data, options_.request_timeout);
      if (!more.ok() || !*more) break;
    }
    return etcdjson::ErrorToStatus(head.status, data);
  }
  etcdjson::JsonObjectSplitter split;
  uint64_t total = 0;
  std::string object;
  for (;;) {
    data.clear();
    ASSIGN_OR_RETURN(bool more, stream->Read(&data, options_.request_timeout));
    if (!more) break;
    split.Feed(data);
    kplane::Status err;
    while (split.Next(&object, &err)) {
      etcdserverpb::SnapshotResponse resp;
      RETURN_IF_ERROR(etcdjson::ParseStreamMessage(object, &resp));
      total += resp.blob().size();
      RETURN_IF_ERROR(sink(resp.blob()));
    }
    RETURN_IF_ERROR(err);
  }
  if (split.buffered() > 0) {
    return UnavailableError("snapshot stream ended in the middle of a message");
  }
  return total;
}

}  // namespace kplane::storage
