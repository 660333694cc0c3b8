// LocalCluster: N members of an etcd-compatible store (Debian's etcd 3.4 or
// `kplane store`) running as child processes on 127.0.0.1 ephemeral ports,
// each with a fresh data dir under /tmp. For tests, benchmarks and demos of
// the remote client, `kpctl store` and the differential suite.
//
//   ASSIGN_OR_RETURN(auto c, LocalCluster::Start({.members = 3}));
//   RemoteKVOptions o;  o.endpoints = c->client_urls();
//   ...
//   ASSIGN_OR_RETURN(int leader, c->LeaderIndex());
//   c->Kill(leader);                      // kill -9
//   c->Restart(leader);                   // same data dir
//
// Both kinds get the same flags (kplane store accepts etcd's): --name,
// --data-dir, --listen-client-urls, --advertise-client-urls,
// --listen-peer-urls, --initial-advertise-peer-urls, --initial-cluster.
// Ports are chosen by binding port 0 and releasing it just before the
// member starts (a small race with other processes, acceptable in tests).
//
// Ownership: the cluster owns its processes (killed and reaped by the
// destructor, and by the kernel if the test process dies: base/subprocess)
// and its data root (removed by the destructor unless KPLANE_KEEP_DATA is
// set in the environment).
// Thread-safety: not thread-safe; one owner.
// Errors: kNotFound when the binary is missing, kUnavailable when members
// do not become ready in time, kInternal for process or file errors.
#ifndef KPLANE_STORAGE_CLIENT_LOCAL_CLUSTER_H_
#define KPLANE_STORAGE_CLIENT_LOCAL_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "base/subprocess.h"

namespace kplane::storage {

enum class StoreKind { kEtcd, kKplane };

struct LocalClusterOptions {
  StoreKind kind = StoreKind::kEtcd;
  // Empty: /usr/bin/etcd, or FindKplaneBinary() for kKplane.
  std::string binary;
  int members = 1;
  // Appended to every member's flags.
  std::vector<std::string> extra_flags;
  // When set, member i advertises this peer URL (and --initial-cluster
  // names it) while listening on its own port. Member and cluster ids derive
  // from the advertised URLs, so two single-member clusters given the same
  // URL get the same ids, which lets tests compare their outputs verbatim.
  std::vector<std::string> advertised_peer_urls;
  Duration start_timeout = seconds(30);
};

class LocalCluster {
 public:
  static StatusOr<std::unique_ptr<LocalCluster>> Start(
      LocalClusterOptions options);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  // "http://127.0.0.1:P".
  std::string client_url(int i) const;
  std::vector<std::string> client_urls() const;
  // "127.0.0.1:P1,127.0.0.1:P2" (etcdctl's --endpoints form).
  std::string endpoints_flag() const;
  std::string name(int i) const { return members_[i].name; }
  // The peer URL member i advertises.
  std::string peer_url(int i) const;
  std::string data_dir(int i) const { return members_[i].data_dir; }
  std::string log_path(int i) const { return members_[i].log_path; }
  const std::string& data_root() const { return root_; }
  pid_t pid(int i) const;
  bool running(int i);

  // kill -9, then reap.
  Status Kill(int i);
  // Starts a killed member again on its data dir and ports.
  Status Restart(int i);
  // Waits until member i answers a linearizable read and the member list
  // shows its client URL.
  Status WaitReady(int i, Duration timeout);
  // Index of the member that reports itself leader (asks the running ones).
  StatusOr<int> LeaderIndex();

 private:
  struct Member {
    std::string name;
    std::string data_dir;
    std::string log_path;
    uint16_t client_port = 0;
    uint16_t peer_port = 0;
    std::unique_ptr<Subprocess> process;
  };
  explicit LocalCluster(LocalClusterOptions options);
  std::vector<std::string> Argv(int i) const;
  Status StartMember(int i);

  const LocalClusterOptions options_;
  std::string binary_;
  std::string root_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

// The `kplane` binary to test: $KPLANE_BIN if set, else the build tree's
// (build/kplane or build/cmd/kplane/kplane, known at compile time). Empty
// when none exists.
std::string FindKplaneBinary();

// An unused 127.0.0.1 TCP port (bind to port 0, read it, release it).
StatusOr<uint16_t> PickFreePort();

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_LOCAL_CLUSTER_H_
