// Fault tests of `kplane store` on real processes: a 3-member cluster on
// loopback, a write load and a register load running through every fault,
// and at the end the same verdict for each test (VerifyCluster): every
// member converged to the same revision and the same HashKV there, every
// acknowledged put is on every member with its value and revision, the
// register history is linearizable, and no alarm was raised.
//
// The figures (failover and catch-up times) are printed as "FIGURE ..."
// lines; README.md says how to collect them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <random>
#include <set>

#include "base/mutex.h"
#include "base/test_seed.h"
#include "storage/client/lease_keepalive.h"
#include "storage/client/local_cluster.h"
#include "storage/client/maintenance.h"
#include "tests/e2e/store_faults/workload.h"

namespace kplane::e2e {
namespace {

int64_t Ms(Duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

void Figure(const std::string& what, const std::string& value) {
  std::printf("FIGURE %s: %s\n", what.c_str(), value.c_str());
  std::fflush(stdout);
}

// The members' default raft timings, spelled out: the figures depend on them.
// And the members' own corruption check every second (the leader compares
// every member's HashKV at its revision; default: a minute, etcd's: never),
// so that it runs through every fault and the verdict's "no alarm" means it
// found no divergence there, nor a false one.
const std::vector<std::string> kTimings = {
    "--heartbeat-interval", "100", "--election-timeout", "1000",
    "--experimental-corrupt-check-time", "1s"};

class StoreFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (etcd_ && ::access("/usr/bin/etcd", X_OK) != 0) {
      GTEST_SKIP() << "no /usr/bin/etcd (scripts/install-deps.sh)";
    }
    if (!etcd_ && storage::FindKplaneBinary().empty()) {
      GTEST_SKIP() << "no kplane binary in this build tree (build target "
                      "kplane, or set KPLANE_BIN)";
    }
  }

  void TearDown() override {
    if (load_) load_->Stop();
    if (register_) register_->Stop();
    if (HasFailure() && cluster_) {
      std::printf("member logs (tails):\n%s\n",
                  cluster_->LogTails(4000).c_str());
    }
  }

  void StartCluster(std::vector<std::string> flags = {}) {
    for (const std::string& f : kTimings) flags.push_back(f);
    const storage::StoreKind kind =
        etcd_ ? storage::StoreKind::kEtcd : storage::StoreKind::kKplane;
    auto c = storage::LocalCluster::Start(
        {.kind = kind,
         .members = 3,
         .extra_flags = flags,
         .start_timeout = seconds(60),
         .test_pki = storage::StoreSuitesUseTls()});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    // Never a silent plain-HTTP run of the TLS suite.
    ASSERT_EQ(cluster_->client_url(0).rfind(
                  storage::StoreSuitesUseTls() ? "https://" : "http://", 0),
              0u)
        << cluster_->client_url(0);
  }

  // A client of every member (with the harness's certificate over TLS).
  storage::RemoteKVOptions ClientOptions() const {
    storage::RemoteKVOptions o;
    o.endpoints = cluster_->client_urls();
    o.tls = cluster_->client_tls();
    return o;
  }

  void StartLoad() {
    load_ = std::make_unique<WriteLoad>(WriteLoadOptions{
        .endpoints = cluster_->client_urls(), .tls = cluster_->client_tls()});
    ASSERT_TRUE(load_->Start().ok());
    register_ = std::make_unique<RegisterLoad>(RegisterLoadOptions{
        .endpoints = cluster_->client_urls(), .tls = cluster_->client_tls()});
    ASSERT_TRUE(register_->Start().ok());
  }

  // Waits until the load has `more` acknowledged puts beyond now.
  void WaitForProgress(int64_t more, Duration timeout = seconds(60)) {
    const int64_t want = load_->acked() + more;
    ASSERT_TRUE(load_->WaitForAcks(want, timeout))
        << "the load got " << load_->acked() << " of " << want
        << " acknowledged puts; failures:\n"
        << load_->ErrorSummary();
  }

  // Polls the members until they all report the same revision twice in a
  // row (the load has stopped, so that is where they converge).
  int64_t WaitConverged(const std::vector<int>& members,
                        Duration timeout = seconds(60)) {
    const TimePoint deadline = Clock::Real()->Now() + timeout;
    int64_t last = -1;
    std::string state;
    while (Clock::Real()->Now() < deadline) {
      std::set<int64_t> revs;
      state.clear();
      for (int i : members) {
        auto s = cluster_->MemberStatus(i);
        if (!s.ok()) {
          revs.insert(-1);
          state += " " + cluster_->name(i) + "=" + s.status().ToString();
          continue;
        }
        revs.insert(s->header().revision());
        state += " " + cluster_->name(i) + "@" +
                 std::to_string(s->header().revision());
      }
      if (revs.size() == 1 && *revs.begin() >= 0) {
        if (*revs.begin() == last) return last;
        last = *revs.begin();
      } else {
        last = -1;
      }
      // The members' apply progress is another process's: poll briefly.
      Clock::Real()->SleepFor(milliseconds(100));
    }
    ADD_FAILURE() << "members did not converge:" << state;
    return -1;
  }

  // For a failed hash comparison: which members hold which hash, and the
  // keys whose key-value differs between the first member and the others
  // at `rev` (at most 20), so that a divergence names its cause.
  std::string DescribeDivergence(const std::map<uint32_t, std::string>& hashes,
                                 int64_t rev) {
    std::string out;
    for (const auto& [hash, names] : hashes) {
      out += "\n  hash " + std::to_string(hash) + ":" + names;
    }
    std::vector<std::map<std::string, std::string>> views;
    for (int i : cluster_->members()) {
      etcdserverpb::RangeRequest all;
      all.set_key(std::string(1, '\0'));
      all.set_range_end(std::string(1, '\0'));
      all.set_revision(rev);
      auto r = cluster_->SerializableRange(i, all);
      if (!r.ok()) {
        out += "\n  " + cluster_->name(i) + ": " + r.status().ToString();
        return out;
      }
      std::map<std::string, std::string>& view = views.emplace_back();
      for (const auto& kv : r->kvs()) view[kv.key()] = kv.ShortDebugString();
    }
    int shown = 0;
    for (size_t m = 1; m < views.size(); ++m) {
      std::set<std::string> keys;
      for (const auto& [k, v] : views[0]) keys.insert(k);
      for (const auto& [k, v] : views[m]) keys.insert(k);
      for (const std::string& k : keys) {
        auto a = views[0].find(k);
        auto b = views[m].find(k);
        const std::string va = a == views[0].end() ? "(absent)" : a->second;
        const std::string vb = b == views[m].end() ? "(absent)" : b->second;
        if (va == vb) continue;
        if (++shown > 20) return out + "\n  ...";
        out += "\n  " + cluster_->name(cluster_->members()[0]) + " " + va +
               "\n  " + cluster_->name(cluster_->members()[m]) + " " + vb;
      }
    }
    return out;
  }

  // The common verdict (see the file comment). Stops the loads.
  void VerifyCluster() {
    load_->Stop();
    register_->Stop();
    const std::vector<int> members = cluster_->members();
    for (int i : members) {
      ASSERT_TRUE(cluster_->running(i)) << cluster_->name(i) << " died";
    }
    const int64_t rev = WaitConverged(members);
    ASSERT_GT(rev, 0);

    // Same hash of the key-values at the common revision on every member.
    std::map<uint32_t, std::string> hashes;
    // (HashKV at `rev`: a write after the members converged, such as an
    // expired lease's revoke, must not change it.)
    for (int i : members) {
      auto h = cluster_->HashKV(i, rev);
      ASSERT_TRUE(h.ok()) << cluster_->name(i) << ": " << h.status();
      // With the member's current and compacted revisions, so that a
      // failure shows where each member stood when it answered.
      hashes[h->hash()] += " " + cluster_->name(i) + " (at " +
                           std::to_string(h->header().revision()) +
                           ", compacted " +
                           std::to_string(h->compact_revision()) + ")";
    }
    EXPECT_EQ(hashes.size(), 1u) << "members diverged at revision " << rev
                                 << ":" << DescribeDivergence(hashes, rev);

    // Every acknowledged put, with its value and revision, on every member.
    const std::map<std::string, AckedWrite> acked = load_->Acked();
    ASSERT_GT(acked.size(), 0u);
    for (int i : members) {
      etcdserverpb::RangeRequest all;
      all.set_key(load_->prefix());
      all.set_range_end(load_->prefix().substr(0, load_->prefix().size() - 1) +
                        static_cast<char>(load_->prefix().back() + 1));
      auto r = cluster_->SerializableRange(i, all);
      ASSERT_TRUE(r.ok()) << r.status();
      std::map<std::string, std::pair<std::string, int64_t>> stored;
      for (const auto& kv : r->kvs()) {
        stored[kv.key()] = {kv.value(), kv.mod_revision()};
      }
      int lost = 0;
      std::string first_lost;
      for (const auto& [key, w] : acked) {
        auto it = stored.find(key);
        if (it == stored.end() || it->second.first != w.value ||
            it->second.second != w.revision) {
          if (lost++ == 0) {
            first_lost = key + " (acknowledged at revision " +
                         std::to_string(w.revision) + ")";
          }
        }
      }
      EXPECT_EQ(lost, 0) << cluster_->name(i) << " lacks " << lost << " of "
                         << acked.size()
                         << " acknowledged puts, first: " << first_lost;
      // Nothing beyond what was written: acknowledged or maybe-applied.
      EXPECT_LE(stored.size(), acked.size() + load_->Maybe().size());
    }

    // The register: linearizable against the store's order of its writes.
    storage::RemoteKVOptions o = ClientOptions();
    auto kv = storage::RemoteKV::Create(o);
    ASSERT_TRUE(kv.ok());
    auto stored = ReadRegisterWrites(kv->get(), register_->key(), seconds(30));
    ASSERT_TRUE(stored.ok()) << stored.status();
    const std::vector<RegisterOp> history = register_->History();
    EXPECT_GT(history.size(), 10u);
    Status lin = CheckRegisterHistory(history, *stored);
    EXPECT_TRUE(lin.ok()) << lin;

    // No alarm (a CORRUPT alarm would mean the members' own hash check
    // found a divergence).
    for (int i : members) {
      etcdserverpb::AlarmRequest get;
      get.set_action(etcdserverpb::AlarmRequest::GET);
      etcdserverpb::AlarmResponse alarms;
      auto m = storage::Maintenance::Create(cluster_->client_url(i),
                                            {.tls = cluster_->client_tls()});
      ASSERT_TRUE(m.ok());
      auto a = (*m)->Alarm(get);
      ASSERT_TRUE(a.ok()) << a.status();
      EXPECT_EQ(a->alarms_size(), 0) << cluster_->name(i) << " has alarms";
    }
    std::printf(
        "verified: %zu members agree at revision %lld; %zu acknowledged "
        "puts, %zu failed (maybe applied); %zu register operations "
        "linearizable\n",
        members.size(), static_cast<long long>(rev), acked.size(),
        load_->Maybe().size(), history.size());
    if (load_->failed() > 0) {
      std::printf("put failures:\n%s", load_->ErrorSummary().c_str());
    }
  }

  // Waits for the first acknowledged put that was sent at or after `t`
  // (a put sent earlier may be acknowledged later: RemoteKV resends it when
  // connecting failed) and returns the time from `t` to its
  // acknowledgement; fails the test (returning -1) after 30 s.
  Duration FirstAckSentAfter(TimePoint t) {
    std::optional<Duration> first;
    const TimePoint give_up = t + seconds(30);
    while (!(first = load_->FirstAckSentAfter(t)) &&
           Clock::Real()->Now() < give_up) {
      load_->WaitForAcks(load_->acked() + 1, seconds(1));
    }
    if (first) return *first;
    ADD_FAILURE() << "no put sent after the fault was acknowledged within "
                     "30 s; failures:\n"
                  << load_->ErrorSummary();
    return Duration(-1);
  }

  // Puts unique keys with a 200 ms timeout, one after the other, until one
  // is acknowledged; returns the time from `since` to that (or 30 s).
  Duration ProbeWrite(TimePoint since, const std::string& prefix) {
    storage::RemoteKVOptions o = ClientOptions();
    o.dial_timeout = milliseconds(100);
    o.request_timeout = milliseconds(200);
    o.call_timeout = milliseconds(200);
    auto kv = storage::RemoteKV::Create(o);
    if (!kv.ok()) return Duration(-1);
    for (int n = 0; Clock::Real()->Now() < since + seconds(30); ++n) {
      etcdserverpb::PutRequest put;
      put.set_key(prefix + std::to_string(n));
      put.set_value("probe");
      if ((*kv)->Put(put).ok()) return Clock::Real()->Now() - since;
    }
    return seconds(30);
  }

  // Until member i reports at least `revision` (it caught up).
  void WaitForRevision(int i, int64_t revision, Duration timeout) {
    const TimePoint deadline = Clock::Real()->Now() + timeout;
    int64_t have = -1;
    while (Clock::Real()->Now() < deadline) {
      auto s = cluster_->MemberStatus(i);
      if (s.ok()) {
        have = s->header().revision();
        if (have >= revision) return;
      }
      Clock::Real()->SleepFor(milliseconds(20));
    }
    FAIL() << cluster_->name(i) << " at revision " << have << " < " << revision
           << " after " << Ms(timeout) << " ms";
  }

  void RunLeaderKills();

  // Run against Debian's etcd 3.4 instead (side-by-side figures).
  bool etcd_ = false;
  std::unique_ptr<storage::LocalCluster> cluster_;
  std::unique_ptr<WriteLoad> load_;
  std::unique_ptr<RegisterLoad> register_;
};

// 1. kill -9 the leader under load, five times: a new leader is elected,
// writes resume, the killed member restarts and catches up.
void StoreFaultTest::RunLeaderKills() {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  std::vector<int64_t> to_leader, to_write, to_probe, to_catch_up;
  for (int round = 0; round < 5; ++round) {
    auto old = cluster_->WaitForLeader(seconds(30));
    ASSERT_TRUE(old.ok()) << old.status();
    ASSERT_NO_FATAL_FAILURE(WaitForProgress(50));
    const TimePoint killed = Clock::Real()->Now();
    ASSERT_TRUE(cluster_->Kill(*old).ok());
    // A client that gives up on a put after 200 ms and sends the next one
    // at once: how soon after the kill the cluster acknowledges a write,
    // without the load clients' 2 s request timeout in the figure (a put
    // forwarded to the dead leader hangs until that timeout).
    std::future<Duration> probe = std::async(std::launch::async, [&] {
      return ProbeWrite(killed, "probe/" + std::to_string(round) + "/");
    });
    auto next =
        cluster_->WaitForLeader(seconds(30), [&](int i) { return i != *old; });
    ASSERT_TRUE(next.ok()) << next.status();
    to_leader.push_back(Ms(Clock::Real()->Now() - killed));
    // Writes resume: a put sent after the kill is acknowledged.
    const Duration first = FirstAckSentAfter(killed);
    ASSERT_GE(first.count(), 0);
    to_write.push_back(Ms(first));
    to_probe.push_back(Ms(probe.get()));
    // The killed member restarts and catches up with the leader.
    auto lead = cluster_->MemberStatus(*next);
    ASSERT_TRUE(lead.ok()) << lead.status();
    const TimePoint restarted = Clock::Real()->Now();
    ASSERT_TRUE(cluster_->Restart(*old).ok());
    ASSERT_TRUE(cluster_->WaitReady(*old, seconds(60)).ok());
    ASSERT_NO_FATAL_FAILURE(
        WaitForRevision(*old, lead->header().revision(), seconds(60)));
    to_catch_up.push_back(Ms(Clock::Real()->Now() - restarted));
  }
  auto join = [](std::vector<int64_t> v) {
    std::string out;
    for (int64_t x : v) out += std::to_string(x) + " ";
    std::sort(v.begin(), v.end());
    return out + "ms (median " + std::to_string(v[v.size() / 2]) + " ms)";
  };
  const std::string who = etcd_ ? "etcd 3.4.23: " : "";
  Figure(who + "leader kill -> new leader", join(to_leader));
  Figure(who + "leader kill -> first acknowledged put (load, 2 s timeout)",
         join(to_write));
  Figure(who + "leader kill -> first acknowledged put (probe, 200 ms timeout)",
         join(to_probe));
  Figure(who + "killed leader restart -> caught up", join(to_catch_up));
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

TEST_F(StoreFaultTest, LeaderKilledUnderLoad) { RunLeaderKills(); }

// The same against Debian's etcd 3.4 with the same raft timings: the
// figures side by side, and the verdict as a check of the harness and the
// linearizability checker on a reference implementation.
class EtcdFaultTest : public StoreFaultTest {
 protected:
  EtcdFaultTest() { etcd_ = true; }
};

TEST_F(EtcdFaultTest, LeaderKilledUnderLoad) { RunLeaderKills(); }

// Member i's HashKV at `rev`, asked until it has applied `rev` (a put is
// acknowledged by the member that served it; the others may lag).
StatusOr<etcdserverpb::HashKVResponse> HashOnceAt(
    storage::LocalCluster* cluster, int i, int64_t rev) {
  StatusOr<etcdserverpb::HashKVResponse> h = cluster->HashKV(i, rev);
  for (int tries = 0;
       tries < 100 && !h.ok() && h.status().Is(StatusCode::kFutureRevision);
       ++tries) {
    // Another process's apply progress: poll briefly.
    Clock::Real()->SleepFor(milliseconds(50));
    h = cluster->HashKV(i, rev);
  }
  return h;
}

// The verdict's hash comparison is at the common revision: a write after it
// changes nothing. (An expired lease's revoke once landed between two
// members' answers, and the harness's old call, the JSON gateway's Hash of
// the data as it was when asked, read that as a divergence.)
void ExpectHashAtRevisionIgnoresLaterWrites(storage::LocalCluster* cluster,
                                            storage::KV* kv) {
  etcdserverpb::PutRequest p;
  p.set_key("hash/a");
  p.set_value("1");
  auto first = kv->Put(p);
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t rev = first->header().revision();
  std::vector<uint32_t> at_rev;
  for (int i : cluster->members()) {
    StatusOr<etcdserverpb::HashKVResponse> h = HashOnceAt(cluster, i, rev);
    ASSERT_TRUE(h.ok()) << cluster->name(i) << ": " << h.status();
    at_rev.push_back(h->hash());
  }
  EXPECT_EQ(std::set<uint32_t>(at_rev.begin(), at_rev.end()).size(), 1u);
  p.set_key("hash/b");
  auto second = kv->Put(p);
  ASSERT_TRUE(second.ok()) << second.status();
  auto again = HashOnceAt(cluster, cluster->members()[0], rev);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->hash(), at_rev[0])
      << "the hash at " << rev << " changed with a later write";
  auto now =
      HashOnceAt(cluster, cluster->members()[0], second->header().revision());
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_NE(now->hash(), at_rev[0]);
}

TEST_F(StoreFaultTest, HashAtARevisionIgnoresLaterWrites) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto kv = storage::RemoteKV::Create(ClientOptions());
  ASSERT_TRUE(kv.ok()) << kv.status();
  ExpectHashAtRevisionIgnoresLaterWrites(cluster_.get(), kv->get());
}

TEST_F(EtcdFaultTest, HashAtARevisionIgnoresLaterWrites) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto kv = storage::RemoteKV::Create(ClientOptions());
  ASSERT_TRUE(kv.ok()) << kv.status();
  ExpectHashAtRevisionIgnoresLaterWrites(cluster_.get(), kv->get());
}

// 2. A member down while the others write more than --snapshot-count
// entries catches up by a snapshot.
TEST_F(StoreFaultTest, DownMemberCatchesUpBySnapshot) {
  ASSERT_NO_FATAL_FAILURE(
      StartCluster({"--snapshot-count", "300",
                    "--experimental-snapshot-catchup-entries", "50"}));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  const int down = (*leader + 1) % 3;
  ASSERT_TRUE(cluster_->Kill(down).ok());
  // Well past a snapshot plus the entries kept behind it.
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(1200));
  for (int i : cluster_->members()) {
    if (i == down) continue;
    EXPECT_GE(cluster_->LogCount(i, "snapshot at index"), 1)
        << cluster_->name(i) << " took no snapshot";
  }
  auto lead = cluster_->MemberStatus(*leader);
  ASSERT_TRUE(lead.ok()) << lead.status();
  const TimePoint restarted = Clock::Real()->Now();
  ASSERT_TRUE(cluster_->Restart(down).ok());
  ASSERT_TRUE(cluster_->WaitReady(down, seconds(60)).ok());
  ASSERT_NO_FATAL_FAILURE(
      WaitForRevision(down, lead->header().revision(), seconds(60)));
  Figure("member down for " + std::to_string(1200) +
             "+ puts: restart -> caught up by snapshot",
         std::to_string(Ms(Clock::Real()->Now() - restarted)) + " ms");
  EXPECT_GE(cluster_->LogCount(down, "installing snapshot at index"), 1)
      << cluster_->name(down) << " did not install a snapshot";
  EXPECT_GE(cluster_->LogCount(down, "received snapshot"), 1);
  auto received =
      cluster_->Metric(down, "etcd_network_snapshot_receive_success");
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_GE(*received, 1);
  // Sent by the leader of the moment (normally the one before the restart).
  double sent = 0;
  for (int i : cluster_->members()) {
    if (i == down) continue;
    auto n = cluster_->Metric(i, "etcd_network_snapshot_send_success");
    ASSERT_TRUE(n.ok()) << n.status();
    sent += *n;
  }
  EXPECT_GE(sent, 1);
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

// 2b. The same, but the leader is killed as soon as the lagging member is
// restarted, while it is being sent (or installing) a snapshot: the new
// leader brings it up to date instead.
TEST_F(StoreFaultTest, LeaderKilledWhileMemberCatchesUp) {
  ASSERT_NO_FATAL_FAILURE(
      StartCluster({"--snapshot-count", "300",
                    "--experimental-snapshot-catchup-entries", "50"}));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  const int down = (*leader + 1) % 3;
  ASSERT_TRUE(cluster_->Kill(down).ok());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(1200));
  const int seen = cluster_->LogCount(down, "sees leader");
  ASSERT_TRUE(cluster_->Restart(down).ok());
  // Kill the leader the moment the lagging member hears from it (its log
  // names the leader), i.e. while the catch-up is under way. The log is
  // another process's: poll it.
  const TimePoint deadline = Clock::Real()->Now() + seconds(30);
  while (cluster_->LogCount(down, "sees leader") <= seen &&
         Clock::Real()->Now() < deadline) {
    Clock::Real()->SleepFor(milliseconds(2));
  }
  ASSERT_TRUE(cluster_->Kill(*leader).ok());
  auto next =
      cluster_->WaitForLeader(seconds(30), [&](int i) { return i != *leader; });
  ASSERT_TRUE(next.ok()) << next.status();
  Status ready = cluster_->WaitReady(down, seconds(60));
  ASSERT_TRUE(ready.ok()) << ready;
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  ASSERT_TRUE(cluster_->Restart(*leader).ok());
  ready = cluster_->WaitReady(*leader, seconds(60));
  ASSERT_TRUE(ready.ok()) << ready;
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

// 2c. Random kill -9s: every ~0.5 s a random member (leader or not) is
// killed and started again right away, without waiting for the previous
// one to catch up, so a member may die again while it replays its WAL,
// installs a snapshot or catches up; the cluster may lose its quorum for a
// moment. Small snapshots make snapshot transfers frequent. The victims and
// pauses come from a seed (printed; KPLANE_FAULTS_SEED=<seed> picks
// another); the real timing of the processes is not replayable.
TEST_F(StoreFaultTest, RandomKillsUnderLoad) {
  ASSERT_NO_FATAL_FAILURE(
      StartCluster({"--snapshot-count", "200",
                    "--experimental-snapshot-catchup-entries", "20"}));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  const TestSeed seed("KPLANE_FAULTS_SEED", 20261129);
  SCOPED_TRACE(seed.Replay());
  std::mt19937 rng(seed.value());
  for (int round = 0; round < 12; ++round) {
    const int victim = static_cast<int>(rng() % 3);
    ASSERT_TRUE(cluster_->Kill(victim).ok()) << "round " << round;
    // The fault is the timing: a short, random time down and up.
    Clock::Real()->SleepFor(milliseconds(100 + rng() % 400));
    ASSERT_TRUE(cluster_->Restart(victim).ok());
    Clock::Real()->SleepFor(milliseconds(100 + rng() % 400));
  }
  for (int i : cluster_->members()) {
    Status ready = cluster_->WaitReady(i, seconds(60));
    ASSERT_TRUE(ready.ok()) << ready;
  }
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

// 3. member add and member remove under load.
TEST_F(StoreFaultTest, MemberAddAndRemoveUnderLoad) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  // Add a fourth member; it starts from a snapshot and serves.
  auto added = cluster_->AddMember();
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  // Remove a follower.
  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  int follower = -1;
  for (int i : cluster_->members()) {
    if (i != *leader && i != *added) follower = i;
  }
  ASSERT_TRUE(cluster_->RemoveMember(follower).ok());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  // Add a fifth, then remove the leader itself.
  auto added2 = cluster_->AddMember();
  ASSERT_TRUE(added2.ok()) << added2.status();
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  Status removed = cluster_->RemoveMember(*leader);
  ASSERT_TRUE(removed.ok()) << removed;
  auto next = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  // The member list is exactly the members we think are in.
  storage::RemoteKVOptions o = ClientOptions();
  auto kv = storage::RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  etcdserverpb::MemberListResponse list;
  ASSERT_TRUE((*kv)
                  ->Call("/v3/cluster/member/list",
                         etcdserverpb::MemberListRequest(), &list,
                         storage::CallKind::kRead)
                  .ok());
  std::set<std::string> listed, expected;
  for (const auto& m : list.members()) listed.insert(m.name());
  for (int i : cluster_->members()) expected.insert(cluster_->name(i));
  EXPECT_EQ(listed, expected);
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

// 4. Restart all members under load (SIGTERM, then kill -9): data,
// revision and leases survive.
class RestartAllTest : public StoreFaultTest,
                       public ::testing::WithParamInterface<bool> {};

TEST_P(RestartAllTest, DataRevisionAndLeasesSurvive) {
  const bool graceful = GetParam();
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(300));
  // A long lease with a key, to survive the restart.
  storage::RemoteKVOptions o = ClientOptions();
  auto kv = storage::RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(600);
  auto lease = (*kv)->LeaseGrant(grant);
  ASSERT_TRUE(lease.ok()) << lease.status();
  etcdserverpb::PutRequest put;
  put.set_key("leased");
  put.set_value("x");
  put.set_lease(lease->id());
  ASSERT_TRUE((*kv)->Put(put).ok());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  int64_t before = 0;
  for (int i : cluster_->members()) {
    auto s = cluster_->MemberStatus(i);
    ASSERT_TRUE(s.ok());
    before = std::max(before, s->header().revision());
  }
  for (int i : cluster_->members()) {
    if (graceful) {
      auto code = cluster_->Terminate(i);
      ASSERT_TRUE(code.ok()) << code.status();
      EXPECT_EQ(*code, 0) << cluster_->name(i) << " exit code";
    } else {
      ASSERT_TRUE(cluster_->Kill(i).ok());
    }
  }
  const TimePoint down = Clock::Real()->Now();
  for (int i : cluster_->members()) ASSERT_TRUE(cluster_->Restart(i).ok());
  for (int i : cluster_->members()) {
    Status s = cluster_->WaitReady(i, seconds(60));
    ASSERT_TRUE(s.ok()) << s;
  }
  Figure(std::string("restart all (") + (graceful ? "SIGTERM" : "kill -9") +
             ") -> first acknowledged put",
         std::to_string(Ms(FirstAckSentAfter(down))) + " ms");
  for (int i : cluster_->members()) {
    auto s = cluster_->MemberStatus(i);
    ASSERT_TRUE(s.ok());
    EXPECT_GE(s->header().revision(), before) << cluster_->name(i);
  }
  etcdserverpb::LeaseTimeToLiveRequest ttl;
  ttl.set_id(lease->id());
  ttl.set_keys(true);
  auto left = (*kv)->LeaseTimeToLive(ttl);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_GT(left->ttl(), 0) << "the lease did not survive";
  ASSERT_EQ(left->keys_size(), 1);
  EXPECT_EQ(left->keys(0), "leased");
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

INSTANTIATE_TEST_SUITE_P(, RestartAllTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Sigterm" : "Kill9";
                         });

// 5. A frozen follower (SIGSTOP, longer than the election timeout) rejoins
// on SIGCONT without deposing the leader: pre-vote and check-quorum keep
// the term.
TEST_F(StoreFaultTest, FrozenFollowerRejoinsWithoutDeposingLeader) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  auto before = cluster_->MemberStatus(*leader);
  ASSERT_TRUE(before.ok());
  auto changes =
      cluster_->Metric(*leader, "etcd_server_leader_changes_seen_total");
  ASSERT_TRUE(changes.ok()) << changes.status();
  const int frozen = (*leader + 1) % 3;
  ASSERT_TRUE(cluster_->Pause(frozen).ok());
  // The fault is a duration: the follower must miss several election
  // timeouts (1 s) worth of heartbeats while the others keep writing.
  Clock::Real()->SleepFor(seconds(4));
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(50));
  auto lead = cluster_->MemberStatus(*leader);
  ASSERT_TRUE(lead.ok());
  ASSERT_TRUE(cluster_->Resume(frozen).ok());
  ASSERT_NO_FATAL_FAILURE(
      WaitForRevision(frozen, lead->header().revision(), seconds(30)));
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(200));
  for (int i : cluster_->members()) {
    auto s = cluster_->MemberStatus(i);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->raftterm(), before->raftterm())
        << cluster_->name(i) << ": the term changed";
    EXPECT_EQ(s->leader(), before->leader()) << cluster_->name(i);
  }
  auto after =
      cluster_->Metric(*leader, "etcd_server_leader_changes_seen_total");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *changes);
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

// 6. Leases across a leader kill: one kept alive survives (the new leader
// extends the TTLs it inherits), an unrefreshed one expires afterwards, and
// not before its TTL.
TEST_F(StoreFaultTest, LeasesAcrossLeaderKill) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  storage::RemoteKVOptions o = ClientOptions();
  o.request_timeout = seconds(2);
  o.call_timeout = seconds(5);
  auto kv = storage::RemoteKV::Create(o);
  ASSERT_TRUE(kv.ok());
  constexpr int kTtl = 4;
  auto grant_with_key = [&](const std::string& key) -> int64_t {
    etcdserverpb::LeaseGrantRequest g;
    g.set_ttl(kTtl);
    auto l = (*kv)->LeaseGrant(g);
    EXPECT_TRUE(l.ok()) << l.status();
    if (!l.ok()) return 0;
    etcdserverpb::PutRequest p;
    p.set_key(key);
    p.set_value("x");
    p.set_lease(l->id());
    EXPECT_TRUE((*kv)->Put(p).ok());
    return l->id();
  };
  const int64_t kept = grant_with_key("lease/kept");
  const int64_t left_alone = grant_with_key("lease/unrefreshed");
  const TimePoint granted = Clock::Real()->Now();
  ASSERT_NE(kept, 0);
  ASSERT_NE(left_alone, 0);
  Mutex errors_mu;
  std::vector<std::string> keepalive_errors;
  // Every round, kept to explain a lost lease.
  auto record = [&](const std::string& what) {
    MutexLock l(&errors_mu);
    keepalive_errors.push_back(
        std::to_string(Ms(Clock::Real()->Now() - granted)) + " ms: " + what);
  };
  storage::KeepAliveLoop keepalive(
      kv->get(), kept,
      {.on_renewed =
           [&](const etcdserverpb::LeaseKeepAliveResponse& r) {
             record("renewed, TTL " + std::to_string(r.ttl()));
           },
       .on_error = [&](const Status& s) { record(s.ToString()); }});
  auto errors = [&] {
    MutexLock l(&errors_mu);
    std::string out = "keepalive rounds:";
    for (const std::string& e : keepalive_errors) out += "\n  " + e;
    return out;
  };

  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok());
  ASSERT_TRUE(cluster_->Kill(*leader).ok());
  auto next =
      cluster_->WaitForLeader(seconds(30), [&](int i) { return i != *leader; });
  ASSERT_TRUE(next.ok()) << next.status();

  auto exists = [&](const std::string& key) -> std::optional<bool> {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    auto got = (*kv)->Range(r);
    if (!got.ok()) return std::nullopt;
    return got->kvs_size() > 0;
  };
  // The unrefreshed lease expires, but not before its TTL.
  std::optional<TimePoint> gone;
  while (Clock::Real()->Now() < granted + seconds(kTtl * 5)) {
    const TimePoint asked = Clock::Real()->Now();
    std::optional<bool> e = exists("lease/unrefreshed");
    if (e.has_value() && !*e) {
      gone = asked;
      break;
    }
    Clock::Real()->SleepFor(milliseconds(100));
  }
  ASSERT_TRUE(gone.has_value()) << "the unrefreshed lease never expired";
  EXPECT_GE(Ms(*gone - granted), kTtl * 1000 - 200)
      << "the unrefreshed lease expired before its TTL";
  Figure("unrefreshed lease (TTL " + std::to_string(kTtl) +
             " s, leader killed) expired after",
         std::to_string(Ms(*gone - granted)) + " ms");
  // The kept lease outlives several TTLs across the failover (a duration
  // is the point here: there is no event to wait for).
  while (Clock::Real()->Now() < granted + seconds(kTtl * 3)) {
    Clock::Real()->SleepFor(milliseconds(200));
  }
  EXPECT_EQ(exists("lease/kept"), std::optional<bool>(true))
      << "the kept-alive lease's key is gone; " << errors();
  EXPECT_GT(keepalive.renewals(), 2) << errors();
  keepalive.Stop();
  Status ended = keepalive.Wait();
  EXPECT_TRUE(ended.ok()) << ended << "; " << errors();
  // The killed leader rejoins; the members agree on everything.
  ASSERT_TRUE(cluster_->Restart(*leader).ok());
  ASSERT_TRUE(cluster_->WaitReady(*leader, seconds(60)).ok());
  ASSERT_NO_FATAL_FAILURE(WaitForProgress(100));
  ASSERT_NO_FATAL_FAILURE(VerifyCluster());
}

}  // namespace
}  // namespace kplane::e2e
