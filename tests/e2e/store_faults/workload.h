// Client load for the store fault tests, and what it lets us check
// afterwards.
//
// WriteLoad: `clients` threads, each with its own RemoteKV over all
// endpoints (thread t prefers endpoint t % n, so leader and followers both
// take writes and followers forward). Each put writes a key never written
// before ("<prefix><client>/<seq>"), so a key names one write and its
// mod_revision must equal the revision the put was acknowledged with.
// Every acknowledged put is recorded (key, value, revision, when it was
// sent and acknowledged); a failed put is recorded as "maybe applied".
//
// RegisterLoad: `clients` threads doing random puts (unique values) and
// linearizable gets on one key, recording each operation's invocation and
// completion times; CheckRegisterHistory() then verifies the history
// against the store's own order of writes (see below).
//
//   WriteLoad load({.endpoints = cluster->client_urls()});
//   RETURN_IF_ERROR(load.Start());
//   load.WaitForAcks(load.acked() + 100, seconds(30));
//   ... fault ...
//   load.Stop();
//   for (const auto& [key, w] : load.Acked()) ...
//
// Thread-safety: Start/Stop from the owner; the queries from any thread.
#ifndef KPLANE_TESTS_E2E_STORE_FAULTS_WORKLOAD_H_
#define KPLANE_TESTS_E2E_STORE_FAULTS_WORKLOAD_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "storage/client/remote_kv.h"

namespace kplane::e2e {

struct WriteLoadOptions {
  std::vector<std::string> endpoints;
  int clients = 4;
  std::string prefix = "load/";
  size_t value_bytes = 100;
  // Per request and per call (RemoteKV); short, so that a client notices a
  // dead member and moves on quickly.
  Duration request_timeout = seconds(2);
  Duration call_timeout = seconds(5);
  // For https:// endpoints: the client context (LocalCluster::client_tls()).
  std::shared_ptr<const net::TlsContext> tls;
};

struct AckedWrite {
  std::string value;
  int64_t revision = 0;
  TimePoint sent;
  TimePoint acked;
};

class WriteLoad {
 public:
  explicit WriteLoad(WriteLoadOptions options);
  ~WriteLoad();  // Stop()
  WriteLoad(const WriteLoad&) = delete;
  WriteLoad& operator=(const WriteLoad&) = delete;

  Status Start();
  // Stops the clients and joins them (each finishes its current put).
  void Stop();

  int64_t acked() const;
  int64_t failed() const;
  // Blocks until `count` puts are acknowledged in all; false on timeout.
  bool WaitForAcks(int64_t count, Duration timeout);
  // The time from `t` to the first acknowledgement of a put sent at or
  // after `t`; nullopt if there is none yet.
  std::optional<Duration> FirstAckSentAfter(TimePoint t) const;

  // Key -> the acknowledged write.
  std::map<std::string, AckedWrite> Acked() const;
  // Keys whose put failed (it may or may not have been applied).
  std::vector<std::string> Maybe() const;
  // "N x message" lines of the failures, for logs.
  std::string ErrorSummary() const;
  const std::string& prefix() const { return options_.prefix; }

 private:
  void Run(int client);

  const WriteLoadOptions options_;
  std::vector<std::unique_ptr<storage::RemoteKV>> kvs_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, AckedWrite> acked_ GUARDED_BY(mu_);
  std::vector<std::string> maybe_ GUARDED_BY(mu_);
  std::map<std::string, int> errors_ GUARDED_BY(mu_);
};

// One operation on the register.
struct RegisterOp {
  enum Kind { kWrite, kRead } kind = kRead;
  int client = 0;
  // kWrite: the value written. kRead: the value read ("" = key absent).
  std::string value;
  // kWrite acknowledged: the put's revision. kRead: the mod_revision of
  // what was read (0 = absent).
  int64_t revision = 0;
  TimePoint invoked;
  TimePoint completed;  // TimePoint::max() when the outcome is unknown
  bool ok = false;      // acknowledged (write) / answered (read)
};

struct RegisterLoadOptions {
  std::vector<std::string> endpoints;
  int clients = 3;
  std::string key = "register";
  Duration request_timeout = seconds(2);
  Duration call_timeout = seconds(5);
  // For https:// endpoints: the client context (LocalCluster::client_tls()).
  std::shared_ptr<const net::TlsContext> tls;
};

class RegisterLoad {
 public:
  explicit RegisterLoad(RegisterLoadOptions options);
  ~RegisterLoad();
  RegisterLoad(const RegisterLoad&) = delete;
  RegisterLoad& operator=(const RegisterLoad&) = delete;

  Status Start();
  void Stop();
  std::vector<RegisterOp> History() const;
  const std::string& key() const { return options_.key; }

 private:
  void Run(int client);

  const RegisterLoadOptions options_;
  std::vector<std::unique_ptr<storage::RemoteKV>> kvs_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  mutable Mutex mu_;
  std::vector<RegisterOp> ops_ GUARDED_BY(mu_);
};

// One write of the register as the store ordered it (from a watch from
// revision 1): the value and the revision it was written at.
struct StoredWrite {
  std::string value;
  int64_t revision = 0;
};

// Checks a register history for linearizability against the store's write
// order `stored` (ascending revisions, the register's every put). With
// unique values, each read names the write it observed, and the store's
// revisions give the only possible order of writes; the history is then
// linearizable iff:
//   1. every acknowledged write is in `stored` at its acknowledged
//      revision, and every stored value was written by some client;
//   2. writes respect real time: w1 completed before w2 was invoked =>
//      rev(w1) < rev(w2);
//   3. every read returned a stored write (value and revision agree), or
//      "absent" with revision 0;
//   4. a read does not see the future: the write it observed was invoked
//      before the read completed, and a write invoked after the read
//      completed has a higher revision;
//   5. a read is not stale: every write that completed before the read was
//      invoked has a revision <= the observed one;
//   6. reads respect real time among themselves: r1 completed before r2
//      was invoked => rev(r1) <= rev(r2).
// Worked example: w(a)@5 acked at t=10; r invoked at t=11 returns a@5:
// fine. If a later w(b)@6 completed at t=12 and a read invoked at t=13
// still returned a@5, rule 5 fails ("stale read").
// Returns OK, or kInternal naming the first violation.
Status CheckRegisterHistory(const std::vector<RegisterOp>& history,
                            const std::vector<StoredWrite>& stored);

// Every put of `key` since revision 1, read with a watch through `kv`
// up to the key's current mod_revision.
StatusOr<std::vector<StoredWrite>> ReadRegisterWrites(storage::RemoteKV* kv,
                                                      const std::string& key,
                                                      Duration timeout);

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_STORE_FAULTS_WORKLOAD_H_
