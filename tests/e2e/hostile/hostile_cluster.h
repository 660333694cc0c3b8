// The processes a hostile client attacks in tests/e2e/hostile, and the
// instruments that judge each attack (README.md).
//
// HostileCluster: one `kplane store` member (storage::LocalCluster) and a
// `kplane apiserver --storage-backend=remote` on top of it, as `kplane up
// --store-nodes 3` wires them, both on 127.0.0.1 ephemeral ports with fresh
// data dirs. The store serves TLS with client certificates required (the
// apiserver connects with --etcd-cafile/--etcd-certfile/--etcd-keyfile)
// unless KPLANE_STORE_TLS=0 (storage::StoreSuitesUseTls); the apiserver's
// own port is plain HTTP. Each process's address space is capped (RLIMIT_AS,
// set with prlimit(2) once it is up, before any hostile byte is sent) at what
// it had reserved when it became ready plus kAddressSpaceHeadroom: a path that
// grows without bound fails an allocation (and the test) at that size
// instead of taking the machine's memory. No cgroup is needed, and the cap
// applies to the process only, not to the test.
//
// Memory: ResetPeakRss() (writes 5 to /proc/<pid>/clear_refs, which resets
// VmHWM to the current RSS) and ReadProcMemory() measure the peak resident
// set of a process during one attack.
//
// WellBehavedClient: what a kubelet does all the time (renew its Lease,
// patch its Node's status, list) on its own connection, so a test can
// show that such a client is served while an attack is in flight.
//
// Ownership: the cluster owns both processes (SIGKILLed and reaped by the
// destructor; they die with the test process too, PR_SET_PDEATHSIG) and
// their data under /tmp.
// Thread-safety: HostileCluster's accessors and probes from any thread;
// Start/destruction from one. A WellBehavedClient is used by one thread.
// Errors: kNotFound without a kplane binary, kUnavailable when a process
// does not come up, kInternal for /proc or prlimit failures.
#ifndef KPLANE_TESTS_E2E_HOSTILE_HOSTILE_CLUSTER_H_
#define KPLANE_TESTS_E2E_HOSTILE_HOSTILE_CLUSTER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/statusor.h"
#include "net/http_client.h"
#include "storage/client/local_cluster.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::e2e {

// Address space each process may reserve beyond what it had when ready
// (about 1.8 GiB for the apiserver, mostly 64 worker stacks and malloc
// arenas; about 1.2 GiB for the store).
inline constexpr uint64_t kAddressSpaceHeadroom = uint64_t{1536} << 20;

struct ProcMemory {
  int64_t rss_kib = 0;   // VmRSS
  int64_t hwm_kib = 0;   // VmHWM: the peak RSS since start or the last reset
  int64_t size_kib = 0;  // VmSize
};
StatusOr<ProcMemory> ReadProcMemory(pid_t pid);
// VmHWM := VmRSS.
Status ResetPeakRss(pid_t pid);
// True while `pid` exists and is not a zombie.
bool ProcessAlive(pid_t pid);

struct HostileClusterOptions {
  // Appended to `kplane apiserver`'s and `kplane store`'s flags.
  std::vector<std::string> apiserver_flags;
  std::vector<std::string> store_flags;
};

class HostileCluster {
 public:
  static StatusOr<std::unique_ptr<HostileCluster>> Start(
      HostileClusterOptions options = {});
  ~HostileCluster();
  HostileCluster(const HostileCluster&) = delete;
  HostileCluster& operator=(const HostileCluster&) = delete;

  uint16_t api_port() const { return api_port_; }
  uint16_t store_port() const { return store_port_; }
  // The store's client context (the harness's CA-signed certificate), null
  // over plain HTTP.
  std::shared_ptr<const net::TlsContext> store_tls() const {
    return store_->client_tls();
  }
  pid_t api_pid() const { return apiserver_->pid(); }
  pid_t store_pid() const { return store_->pid(0); }
  // The cap set on each (bytes).
  uint64_t api_address_space_cap() const { return api_cap_; }
  uint64_t store_address_space_cap() const { return store_cap_; }
  // The last `bytes` of both processes' logs (for failure messages).
  std::string LogTails(size_t bytes = 2000) const;

 private:
  HostileCluster() = default;

  std::string dir_;
  std::unique_ptr<storage::LocalCluster> store_;
  std::unique_ptr<Process> apiserver_;
  uint16_t api_port_ = 0;
  uint16_t store_port_ = 0;
  uint64_t api_cap_ = 0;
  uint64_t store_cap_ = 0;
};

// A kubelet-like client of node `node`: created by Setup() (a Node and its
// Lease in kube-node-lease), then served one call at a time. Every call
// returns the HTTP status, or -1 when no response came within the client's
// read timeout (10 s: a locked-out server shows as a failure, not a hang).
class WellBehavedClient {
 public:
  WellBehavedClient(uint16_t api_port, std::string node);
  Status Setup();
  // PATCH of the Lease's spec.renewTime (200).
  int RenewLease();
  // PATCH of the Node's status conditions (200).
  int PatchNodeStatus();
  // GET of the leases in kube-node-lease (200).
  int ListLeases();
  // POST of a new small ConfigMap in default (201).
  int CreateConfigMap(const std::string& name);

 private:
  int Do(const std::string& method, const std::string& path,
         const std::string& content_type, const std::string& body);

  std::string node_;
  int renewals_ = 0;
  net::HttpClient client_;
};

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_HOSTILE_HOSTILE_CLUSTER_H_
