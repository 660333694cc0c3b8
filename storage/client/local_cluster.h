// LocalCluster: N members of an etcd-compatible store (Debian's etcd 3.4 or
// `kplane store`) running as child processes on 127.0.0.1 ephemeral ports,
// each with a fresh data dir under /tmp. The one process harness for tests,
// benchmarks and demos of the remote client, `kpctl store`, the differential
// suite and the store fault suite (tests/e2e/store_faults). Test support:
// target kplane_storage_client_testing, never linked by a production binary.
//
//   ASSIGN_OR_RETURN(auto c, LocalCluster::Start({.members = 3}));
//   RemoteKVOptions o;  o.endpoints = c->client_urls();
//   ...
//   ASSIGN_OR_RETURN(int leader, c->WaitForLeader(seconds(10)));
//   c->Kill(leader);                      // kill -9, reaped
//   c->Restart(leader);                   // same data dir and ports
//   ASSIGN_OR_RETURN(int n4, c->AddMember());  // member add + start existing
//
// Besides kill -9 it can stop members gracefully (Terminate: SIGTERM),
// freeze them (Pause/Resume: SIGSTOP/SIGCONT), change the membership at
// runtime (AddMember/RemoveMember), and read one member's status, hashes,
// metrics and log.
//
// Members are numbered in the order they were created (0, 1, 2, then added
// ones) and named n1, n2, ...; a removed member keeps its number and is no
// longer in members(). Both kinds get the same flags (kplane store accepts
// etcd's): --name, --data-dir, --listen-client-urls, --advertise-client-urls,
// --listen-peer-urls, --initial-advertise-peer-urls, --initial-cluster,
// --initial-cluster-state. Ports are chosen by binding port 0 and releasing
// it just before the member first starts (a small race with other processes,
// acceptable in tests) and are kept across its restarts.
//
// Ownership: the cluster owns its processes (SIGKILLed and reaped by the
// destructor; the kernel kills them too if the test process dies, via
// PR_SET_PDEATHSIG in base/subprocess) and its data root under /tmp
// (removed by the destructor unless KPLANE_KEEP_DATA is set in the
// environment).
// Thread-safety: process control (Start/Kill/Restart/AddMember/...) from one
// thread; the read-only queries (MemberStatus, HashKV, SerializableRange,
// Metric, client_url, LogCount, LogTails) may be called from any thread
// while no member is added.
// Errors: kNotFound when the binary is missing, kUnavailable when members
// do not become ready or no leader appears in time, the server's errors for
// member changes, kInternal for process or file errors.
#ifndef KPLANE_STORAGE_CLIENT_LOCAL_CLUSTER_H_
#define KPLANE_STORAGE_CLIENT_LOCAL_CLUSTER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "base/subprocess.h"
#include "net/http_client.h"
#include "schemas/rpc.pb.h"

namespace kplane::storage {

enum class StoreKind { kEtcd, kKplane };

// TLS for a LocalCluster (etcd's flags): every member serves https:// client
// and peer URLs and requires certificates signed by ca_file on both
// (--client-cert-auth, --peer-client-cert-auth); the cluster's own calls
// present client_cert_file. WriteTestPki makes a set.
struct LocalClusterTls {
  std::string ca_file;
  std::string server_cert_file;  // --cert-file / --key-file
  std::string server_key_file;
  std::string peer_cert_file;  // --peer-cert-file / --peer-key-file
  std::string peer_key_file;
  std::string client_cert_file;  // what the harness (and tests) present
  std::string client_key_file;
  bool enabled() const { return !ca_file.empty(); }
};

// A CA `ca_name` in `dir` (net/pki.h) and, signed by it, certificates for
// 127.0.0.1/localhost: "server" and "peer" (server and client usage) and
// "client" (CN root).
StatusOr<LocalClusterTls> WriteTestPki(const std::string& dir,
                                       const std::string& ca_name = "test");

// The flags every member gets for `tls` (etcd's: --cert-file, --key-file,
// --trusted-ca-file, --client-cert-auth=true and the --peer-* ones), and
// the client flags etcdctl and `kpctl store` take (--cacert, --cert, --key
// with the harness's certificate). Both empty when `tls` is not enabled.
std::vector<std::string> MemberTlsFlags(const LocalClusterTls& tls);
std::vector<std::string> ClientTlsFlags(const LocalClusterTls& tls);

struct LocalClusterOptions {
  StoreKind kind = StoreKind::kEtcd;
  // Empty: /usr/bin/etcd, or FindKplaneBinary() for kKplane.
  std::string binary;
  int members = 1;
  // Appended to every member's flags (e.g. {"--snapshot-count", "500"}).
  std::vector<std::string> extra_flags;
  // When set, member i advertises this peer URL (and --initial-cluster
  // names it) while listening on its own port. Member and cluster ids derive
  // from the advertised URLs, so two single-member clusters given the same
  // URL get the same ids, which lets tests compare their outputs verbatim.
  std::vector<std::string> advertised_peer_urls;
  // Each member's start, and each WaitReady of Start and AddMember.
  Duration start_timeout = seconds(30);
  // When enabled: https:// URLs and certificates everywhere.
  LocalClusterTls tls;
  // When set and `tls` is not enabled: a fresh PKI (WriteTestPki) in the
  // data root's pki/ and TLS with it (what the store suites do when
  // StoreSuitesUseTls()).
  bool test_pki = false;
  // Members talk to each other over unix sockets: member i listens on and
  // advertises "unix://localhost:<port>" ("unixs://" with TLS), the socket
  // file "localhost:<port>" in data_root() (every member runs there), as etcd's
  // integration suite names its peer sockets.
  bool unix_peers = false;
};

// Whether the store suites (tests/e2e/store_faults, the hostile suite's
// store rows) run over TLS: yes unless KPLANE_STORE_TLS=0 is in the
// environment, as in CI's plain-HTTP smoke entries (docs/testing.md).
bool StoreSuitesUseTls();

class LocalCluster {
 public:
  static StatusOr<std::unique_ptr<LocalCluster>> Start(
      LocalClusterOptions options);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  StoreKind kind() const { return options_.kind; }
  // Every member number ever created (removed ones included).
  int size() const { return static_cast<int>(members_.size()); }
  // The numbers of the members currently in the cluster (not removed).
  std::vector<int> members() const;
  // "http://127.0.0.1:P" ("https://" with TLS).
  std::string client_url(int i) const;
  // The certificates in use (disabled without TLS): for tests that start
  // their own clients (etcdctl's --cacert/--cert/--key, an apiserver's
  // --etcd-cafile/--etcd-certfile/--etcd-keyfile).
  const LocalClusterTls& tls() const { return tls_; }
  // The client context the cluster's own calls use (null without TLS).
  std::shared_ptr<const net::TlsContext> client_tls() const {
    return client_tls_;
  }
  // Client URLs of members().
  std::vector<std::string> client_urls() const;
  // "127.0.0.1:P1,127.0.0.1:P2" for members() (etcdctl's --endpoints form).
  std::string endpoints_flag() const;
  std::string name(int i) const { return members_[i].name; }
  // The peer URL member i advertises.
  std::string peer_url(int i) const;
  uint16_t peer_port(int i) const { return members_[i].peer_port; }
  std::string data_dir(int i) const { return members_[i].data_dir; }
  std::string log_path(int i) const { return members_[i].log_path; }
  const std::string& data_root() const { return root_; }
  pid_t pid(int i) const;
  bool running(int i);
  // The member's raft id (read from its status when first needed).
  StatusOr<uint64_t> member_id(int i);

  // kill -9 (SIGCONT too, for a frozen member), then reap.
  Status Kill(int i);
  // SIGTERM; waits up to `grace` for the exit. Returns the exit code, or
  // kDeadlineExceeded (after SIGKILL) if it did not exit in time.
  StatusOr<int> Terminate(int i, Duration grace = seconds(20));
  // SIGSTOP / SIGCONT (a frozen member is partitioned from everyone).
  Status Pause(int i);
  Status Resume(int i);
  // Starts a stopped member again on its data dir and ports, with
  // `extra_flags` after the cluster's; does not wait.
  Status Restart(int i, const std::vector<std::string>& extra_flags = {});
  // Moves stopped member i to another peer port (after a `member update`):
  // its next Restart listens on and advertises only that one.
  Status SetPeerPort(int i, uint16_t port);
  // Waits up to `timeout` for member i's process to exit by itself and
  // returns its exit code (kDeadlineExceeded, after SIGKILL, if it did not).
  StatusOr<int> WaitForExit(int i, Duration timeout) {
    return WaitExit(i, timeout, "by itself");
  }
  // Waits until member i answers a linearizable read and the member list
  // shows its client URL.
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

  // Index of the member that reports itself leader (asks the running ones
  // once; kUnavailable when none does).
  StatusOr<int> LeaderIndex();
  // Until a running member reports itself leader and `pred(leader)` holds;
  // returns the leader's number.
  StatusOr<int> WaitForLeader(Duration timeout,
                              const std::function<bool(int)>& pred = nullptr);

  // One member's answers (no failover). HashKV goes over gRPC (etcd 3.4's
  // JSON gateway serves only Hash, of the data as it is when asked), so it
  // is the hash at `revision`, stable under later writes, for etcd members
  // too.
  StatusOr<etcdserverpb::StatusResponse> MemberStatus(int i);
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int i, int64_t revision);
  StatusOr<etcdserverpb::RangeResponse> SerializableRange(
      int i, const etcdserverpb::RangeRequest& req);
  // A sample's value from GET /metrics (the first series of that name, any
  // labels); kNotFound when absent.
  StatusOr<double> Metric(int i, const std::string& name);
  // GET `path` on member i's client port (e.g. /health).
  StatusOr<net::HttpResponse> HttpGet(int i, const std::string& path);
  // How many times the member's log contains `text`.
  int LogCount(int i, const std::string& text) const;
  // The last `bytes` of every member's log (for failure messages).
  std::string LogTails(size_t bytes = 1500) const;

 private:
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

  explicit LocalCluster(LocalClusterOptions options);
  Status NewMember(Member* m, int number);
  std::vector<std::string> Argv(int i) const;
  Status StartProcess(int i, const std::vector<std::string>& extra_flags = {});
  // Member i's peer socket URL (LocalClusterOptions::unix_peers).
  std::string UnixPeerUrl(int i) const;
  // Waits up to `timeout` for member i's process to exit and returns its
  // exit code; past it, SIGKILLs it and returns DeadlineExceeded ("... did
  // not exit within N ms <after>").
  StatusOr<int> WaitExit(int i, Duration timeout, const std::string& after);
  // A unary POST of the JSON API to member i only.
  Status Call(int i, const std::string& path,
              const google::protobuf::Message& req,
              google::protobuf::Message* resp, Duration timeout);

  const LocalClusterOptions options_;
  LocalClusterTls tls_;  // options_.tls, or the test PKI made by Start
  std::shared_ptr<const net::TlsContext> client_tls_;
  std::string binary_;
  std::string root_;
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
