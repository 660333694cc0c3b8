// StoreCluster: real `kplane store` processes on 127.0.0.1 for fault tests.
// Unlike storage::LocalCluster (fixed membership, kill -9 only) it can add
// and remove members at runtime, stop members gracefully (SIGTERM), freeze
// them (SIGSTOP/SIGCONT), and read their metrics, hashes and logs.
//
//   ASSIGN_OR_RETURN(auto c, StoreCluster::Start({.members = 3}));
//   ASSIGN_OR_RETURN(int leader, c->WaitForLeader(seconds(10)));
//   RETURN_IF_ERROR(c->Kill(leader));         // kill -9, reaped
//   RETURN_IF_ERROR(c->Restart(leader));      // same data dir and ports
//   ASSIGN_OR_RETURN(int n4, c->AddMember()); // member add + start existing
//
// Members are numbered in the order they were created (0, 1, 2, then
// added ones); a removed member keeps its number and is no longer in
// members(). Ports are picked free (bind to port 0, release) just before
// a member first starts and are kept across its restarts.
//
// Ownership: the cluster owns its processes (SIGKILLed and reaped by the
// destructor; the kernel kills them too if the test process dies, via
// PR_SET_PDEATHSIG in base/subprocess) and its data root under /tmp
// (removed by the destructor unless KPLANE_KEEP_DATA is set).
// Thread-safety: process control (Start/Kill/Restart/Add/Remove/...) from
// one thread; the read-only queries (Status, HashKV, Metric, client_url,
// LogContains) may be called from any thread while no member is added.
// Errors: kNotFound without a kplane binary, kUnavailable when a member does
// not become ready or no leader appears in time, the server's errors for
// member changes, kInternal for process and file errors.
#ifndef KPLANE_TESTS_E2E_STORE_FAULTS_STORE_CLUSTER_H_
#define KPLANE_TESTS_E2E_STORE_FAULTS_STORE_CLUSTER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "base/subprocess.h"
#include "schemas/rpc.pb.h"
#include "storage/client/local_cluster.h"

namespace kplane::e2e {

struct StoreClusterOptions {
  // Debian's etcd 3.4 (/usr/bin/etcd) instead of `kplane store`, for
  // side-by-side figures: the same flags, no HashKV (etcd 3.4's JSON
  // gateway serves only the whole-backend Hash).
  bool etcd = false;
  int members = 3;
  // Appended to every member's flags (e.g. {"--snapshot-count", "500"}).
  std::vector<std::string> extra_flags;
  // Each member's start, and each WaitReady.
  Duration start_timeout = seconds(60);
};

class StoreCluster {
 public:
  static StatusOr<std::unique_ptr<StoreCluster>> Start(
      StoreClusterOptions options);
  ~StoreCluster();
  StoreCluster(const StoreCluster&) = delete;
  StoreCluster& operator=(const StoreCluster&) = delete;

  // Every member number ever created (removed ones included).
  int size() const { return static_cast<int>(members_.size()); }
  // The numbers of the members currently in the cluster (not removed).
  std::vector<int> members() const;
  bool etcd() const { return options_.etcd; }
  std::string name(int i) const { return members_[i].name; }
  std::string client_url(int i) const;
  std::string peer_url(int i) const;
  // Client URLs of members().
  std::vector<std::string> client_urls() const;
  std::string log_path(int i) const { return members_[i].log_path; }
  pid_t pid(int i) const;
  bool running(int i);
  // The member's raft id (read from its status when first needed).
  StatusOr<uint64_t> member_id(int i);

  // kill -9, then reap.
  Status Kill(int i);
  // SIGTERM; waits up to `grace` for the exit. Returns the exit code, or
  // kDeadlineExceeded (after SIGKILL) if it did not exit in time.
  StatusOr<int> Terminate(int i, Duration grace = seconds(20));
  // SIGSTOP / SIGCONT (a frozen member is partitioned from everyone).
  Status Pause(int i);
  Status Resume(int i);
  // Starts a stopped member again on its data dir and ports; does not wait.
  Status Restart(int i);
  // Until member i answers a linearizable read and lists its client URL.
  Status WaitReady(int i, Duration timeout);

  // `member add` through a running member, then starts the new member with
  // --initial-cluster-state existing and waits until it is ready. Returns
  // its number.
  StatusOr<int> AddMember();
  // `member remove` of member i through another running member; then waits
  // for i's process to exit by itself with status 0, as a removed member
  // does once it learns of its removal. After `exit_timeout` it is killed
  // and the result is DeadlineExceeded.
  Status RemoveMember(int i, Duration exit_timeout = seconds(30));

  // Until a running member reports itself leader and `pred(leader)` holds;
  // returns the leader's number.
  StatusOr<int> WaitForLeader(Duration timeout,
                              const std::function<bool(int)>& pred = nullptr);

  // One member's answers (no failover).
  StatusOr<etcdserverpb::StatusResponse> MemberStatus(int i);
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int i, int64_t revision);
  StatusOr<etcdserverpb::RangeResponse> SerializableRange(
      int i, const etcdserverpb::RangeRequest& req);
  // A sample's value from GET /metrics (the first series of that name, any
  // labels); kNotFound when absent.
  StatusOr<double> Metric(int i, const std::string& name);
  // Whether the member's log contains `text`, and how many times.
  int LogCount(int i, const std::string& text) const;
  // The last `bytes` of every member's log (for failure messages).
  std::string LogTails(size_t bytes = 1500) const;

 private:
  // Waits up to `timeout` for member i's process to exit and returns its
  // exit code; past it, SIGKILLs it and returns DeadlineExceeded ("... did
  // not exit within N ms <after>").
  StatusOr<int> WaitExit(int i, Duration timeout, const std::string& after);
  struct Member {
    std::string name;
    std::string data_dir;
    std::string log_path;
    uint16_t client_port = 0;
    uint16_t peer_port = 0;
    std::string initial_cluster;
    std::string initial_cluster_state = "new";
    uint64_t id = 0;
    bool removed = false;
    std::unique_ptr<Subprocess> process;
  };

  explicit StoreCluster(StoreClusterOptions options);
  Status NewMember(Member* m, int number);
  Status StartProcess(int i);
  // A Unary POST of the JSON API to member i only.
  Status Call(int i, const std::string& path,
              const google::protobuf::Message& req,
              google::protobuf::Message* resp, Duration timeout);

  const StoreClusterOptions options_;
  std::string binary_;
  std::string root_;
  std::vector<Member> members_;
};

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_STORE_FAULTS_STORE_CLUSTER_H_
