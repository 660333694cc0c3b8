#include "bench/failover.h"

#include <signal.h>

#include <memory>

#include "base/base64.h"
#include "net/http_client.h"
#include "schemas/rpc.pb.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::bench {

StatusOr<int> FindLeaderEndpoint(const std::vector<Endpoint>& endpoints) {
  for (size_t i = 0; i < endpoints.size(); ++i) {
    net::HttpClientOptions co;
    co.connect_timeout = seconds(1);
    co.read_timeout = seconds(2);
    net::HttpClient c(endpoints[i].host, endpoints[i].port, co);
    auto r = c.Request("POST", "/v3/maintenance/status",
                       {{"Content-Type", "application/json"}}, "{}");
    if (!r.ok() || r->status != 200) continue;
    etcdserverpb::StatusResponse s;
    if (!etcdjson::ParseJson(r->body, &s).ok()) continue;
    if (s.leader() != 0 && s.leader() == s.header().member_id()) {
      return static_cast<int>(i);
    }
  }
  return UnavailableError("no endpoint reports itself as leader");
}

StatusOr<FailoverResult> RunFailover(const FailoverOptions& o) {
  if (o.endpoints.size() != o.pids.size() || o.endpoints.empty()) {
    return InvalidArgumentError("need one pid per endpoint");
  }
  ASSIGN_OR_RETURN(int leader, FindLeaderEndpoint(o.endpoints));
  FailoverResult res;
  res.killed_endpoint = leader;
  res.killed_pid = o.pids[static_cast<size_t>(leader)];

  std::vector<std::unique_ptr<net::HttpClient>> clients;
  for (const auto& e : o.endpoints) {
    net::HttpClientOptions co;
    co.connect_timeout = o.op_timeout;
    co.read_timeout = o.op_timeout;
    co.write_timeout = o.op_timeout;
    clients.push_back(std::make_unique<net::HttpClient>(e.host, e.port, co));
  }
  std::string value = Base64Encode(std::string(256, 'f'));
  int64_t start = NowNs();
  int64_t kill_at = start + o.kill_after.count();
  int64_t killed = 0;
  int64_t last_ok = start;
  size_t ep = static_cast<size_t>(leader);
  for (int64_t i = 0;; ++i) {
    int64_t now = NowNs();
    if (!killed && now >= kill_at) {
      if (kill(res.killed_pid, SIGKILL) != 0) {
        return InternalError("kill " + std::to_string(res.killed_pid) +
                             " failed");
      }
      killed = NowNs();
    }
    if (killed && now - killed > o.give_up_after.count()) {
      return DeadlineExceededError(
          "no successful write within " +
          std::to_string(o.give_up_after.count() / 1000000000) +
          " s of the kill");
    }
    std::string body =
        "{\"key\":\"" +
        Base64Encode("/registry/failover/k" + std::to_string(i % 1000)) +
        "\",\"value\":\"" + value + "\"}";
    int64_t sent = NowNs();
    auto r = clients[ep]->Request("POST", "/v3/kv/put",
                                  {{"Content-Type", "application/json"}}, body);
    int64_t done = NowNs();
    if (r.ok() && r->status == 200) {
      res.longest_gap_ms = std::max(res.longest_gap_ms, (done - last_ok) / 1e6);
      last_ok = done;
      if (killed && sent >= killed) {
        res.kill_to_first_write_ms = (done - killed) / 1e6;
        return res;
      }
    } else {
      ++res.failed_puts;
      clients[ep]->CloseConnection();
      ep = (ep + 1) % clients.size();
    }
  }
}

}  // namespace kplane::bench
