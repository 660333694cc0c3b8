// The real etcdctl 3.4 (Debian's etcd-client, gRPC) against `kplane store`
// and, as the reference, against etcd 3.4 itself: the same commands and the
// same expectations on both (modulo ids, revisions and sizes). gRPC and the
// JSON gateway share the client port, so a JSON request to the same URL
// must keep working.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <thread>

#include "base/base64.h"
#include "base/subprocess.h"
#include "kpctl/store/bolt_status.h"
#include "kpctl/store/snapshot_file.h"
#include "net/http_client.h"
#include "storage/bolt/etcd_backend.h"
#include "storage/bolt/etcd_wal.h"
#include "storage/client/local_cluster.h"

namespace kplane::e2e {
namespace {

namespace fs = std::filesystem;
using storage::LocalCluster;
using storage::StoreKind;

constexpr const char* kEtcdctl = "/usr/bin/etcdctl";

struct Out {
  std::string out;  // stdout and stderr
  int code = -1;
};

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Param {
  StoreKind kind;
  int members;
};

// etcdctl against a cluster that StartCluster() starts.
class EtcdctlTest : public ::testing::Test {
 protected:
  // Skips the test (GTEST_SKIP) if etcdctl or the store binary is absent.
  void StartCluster(storage::LocalClusterOptions options) {
    if (!fs::exists(kEtcdctl)) GTEST_SKIP() << "etcdctl is absent";
    if (options.kind == StoreKind::kKplane &&
        storage::FindKplaneBinary().empty()) {
      GTEST_SKIP() << "build/kplane is absent (build target kplane)";
    }
    auto c = LocalCluster::Start(std::move(options));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    eps_ = cluster_->endpoints_flag();
    tmp_ = cluster_->data_root() + "/etcdctl";
    fs::create_directories(tmp_);
  }

  // etcdctl `args` with `in` on stdin; waits for it. `endpoints` replaces
  // the whole cluster's list (etcdctl's --endpoints appends when repeated).
  Out Run(std::vector<std::string> args, const std::string& in = "",
          const std::string& endpoints = "") {
    std::string base = tmp_ + "/run" + std::to_string(++seq_);
    {
      std::ofstream f(base + ".in", std::ios::binary);
      f << in;
    }
    Subprocess p(
        {"/bin/sh", "-c", Command(args, endpoints) + " <" + base + ".in"},
        {.log_path = base + ".out", .env = {"ETCDCTL_API=3"}});
    Out o;
    if (Status st = p.Start(); !st.ok()) {
      o.out = st.ToString();
      return o;
    }
    o.code = p.Wait();
    o.out = ReadFile(base + ".out");
    return o;
  }

  // etcdctl `args` in the background; its output goes to *log.
  std::unique_ptr<Subprocess> Background(std::vector<std::string> args,
                                         std::string* log) {
    *log = tmp_ + "/bg" + std::to_string(++seq_) + ".out";
    auto p = std::make_unique<Subprocess>(
        std::vector<std::string>{"/bin/sh", "-c", "exec " + Command(args)},
        SubprocessOptions{.log_path = *log, .env = {"ETCDCTL_API=3"}});
    EXPECT_TRUE(p->Start().ok());
    return p;
  }

  // Waits until the file at `path` contains `needle` (the process writes
  // it as events arrive); false after `timeout`.
  static bool AwaitOutput(const std::string& path, const std::string& needle,
                          Duration timeout = seconds(20)) {
    TimePoint deadline = Clock::Real()->Now() + timeout;
    while (Clock::Real()->Now() < deadline) {
      if (ReadFile(path).find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // The output at `path` without clientv3's log lines ({"level":...}): its
  // retry warnings after a transient error are not the command's output.
  static std::string Output(const std::string& path) {
    std::istringstream in(ReadFile(path));
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.rfind("{\"level\":", 0) == 0) continue;
      out += line + "\n";
    }
    return out;
  }

  // Waits until `needle` occurs `n` times in the file at `path`.
  static bool AwaitCount(const std::string& path, const std::string& needle,
                         size_t n, Duration timeout = seconds(20)) {
    TimePoint deadline = Clock::Real()->Now() + timeout;
    while (Clock::Real()->Now() < deadline) {
      std::string text = ReadFile(path);
      size_t count = 0;
      for (size_t at = text.find(needle); at != std::string::npos;
           at = text.find(needle, at + 1)) {
        ++count;
      }
      if (count >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string Command(const std::vector<std::string>& args,
                      const std::string& endpoints = "") {
    // `snapshot save` takes one endpoint, as etcdctl requires.
    const bool one = !args.empty() && args[0] == "snapshot";
    std::string cmd = std::string(kEtcdctl) + " --endpoints=" +
                      (!endpoints.empty() ? endpoints
                       : one ? cluster_->client_url(cluster_->members()[0])
                             : eps_) +
                      " --dial-timeout=5s --command-timeout=20s";
    for (const auto& a : args) cmd += " " + ShellQuote(a);
    return cmd + " 2>&1";
  }

  // A key's mod_revision, from `get -w json`.
  int64_t ModRevision(const std::string& key) {
    Out j = Run({"get", key, "-w", "json"});
    std::smatch m;
    if (!std::regex_search(j.out, m, std::regex("\"mod_revision\":(\\d+)"))) {
      ADD_FAILURE() << j.out;
      return -1;
    }
    return std::stoll(m[1]);
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::string eps_, tmp_;
  int seq_ = 0;
};

class EtcdctlGrpc : public EtcdctlTest,
                    public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override {
    StartCluster({.kind = GetParam().kind, .members = GetParam().members});
  }
};

#define EXPECT_OK(o) EXPECT_EQ((o).code, 0) << (o).out

TEST_P(EtcdctlGrpc, PutGetDelTxn) {
  EXPECT_EQ(Run({"put", "foo", "v1"}).out, "OK\n");
  int64_t rev1 = ModRevision("foo");
  EXPECT_OK(Run({"put", "/registry/pods/a", "1"}));
  EXPECT_OK(Run({"put", "/registry/pods/b", "2"}));
  EXPECT_EQ(Run({"put", "foo", "v2", "--prev-kv"}).out, "OK\nfoo\nv1\n");
  EXPECT_EQ(Run({"get", "/registry/pods", "--prefix", "--keys-only"}).out,
            "/registry/pods/a\n\n/registry/pods/b\n\n");
  EXPECT_EQ(Run({"get", "/registry", "--prefix"}).out,
            "/registry/pods/a\n1\n/registry/pods/b\n2\n");
  EXPECT_EQ(Run({"get", "foo", "--rev", std::to_string(rev1)}).out,
            "foo\nv1\n");
  EXPECT_EQ(Run({"get", "foo", "--print-value-only"}).out, "v2\n");
  EXPECT_EQ(Run({"get", "nothing"}).out, "");

  Out t = Run({"txn"},
              "value(\"foo\") = \"v2\"\n\nput t 1\nget foo\n\ndel foo\n\n");
  EXPECT_EQ(t.out, "SUCCESS\n\nOK\n\nfoo\nv2\n");
  Out f = Run({"txn"}, "value(\"foo\") = \"zz\"\n\nput t 2\n\nget t\n\n");
  EXPECT_EQ(f.out, "FAILURE\n\nt\n1\n");
  EXPECT_EQ(Run({"del", "t", "--prev-kv"}).out, "1\nt\n1\n");
  EXPECT_EQ(Run({"del", "/registry", "--prefix"}).out, "2\n");
  EXPECT_EQ(Run({"del", "t"}).out, "0\n");

  // etcd's own error texts and codes come through gRPC.
  Out e = Run({"put", "", "x"});
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.out.find("key is not provided"), std::string::npos) << e.out;
  Out fut = Run({"get", "foo", "--rev", "100000"});
  EXPECT_NE(fut.code, 0);
  EXPECT_NE(fut.out.find("etcdserver: mvcc: required revision is a future "
                         "revision"),
            std::string::npos)
      << fut.out;
}

TEST_P(EtcdctlGrpc, WatchWithPrevKvAndRev) {
  EXPECT_OK(Run({"put", "w", "0"}));
  int64_t rev0 = ModRevision("w");
  std::string live_log, hist_log;
  auto live = Background({"watch", "w", "--prev-kv"}, &live_log);
  // A watcher from a past revision first gets the history.
  auto hist =
      Background({"watch", "w", "--rev", std::to_string(rev0)}, &hist_log);
  ASSERT_TRUE(AwaitOutput(hist_log, "PUT\nw\n0\n")) << ReadFile(hist_log);
  // The live watcher is created once its first response arrived; there is
  // no output before an event, so keep writing until it sees one.
  int n = 1;
  bool seen = false;
  for (; n < 200 && !seen; ++n) {
    EXPECT_OK(Run({"put", "w", std::to_string(n)}));
    seen = AwaitOutput(live_log, "PUT\n", milliseconds(200));
  }
  ASSERT_TRUE(seen) << ReadFile(live_log);
  EXPECT_OK(Run({"put", "w", "last"}));
  EXPECT_OK(Run({"del", "w"}));
  // --prev-kv: a put shows the previous value, a delete the deleted one.
  ASSERT_TRUE(AwaitOutput(live_log, "DELETE\nw\nlast\nw\n\n"))
      << ReadFile(live_log);
  EXPECT_NE(ReadFile(live_log).find("PUT\nw\n" + std::to_string(n - 1) +
                                    "\nw\nlast\n"),
            std::string::npos)
      << ReadFile(live_log);
  ASSERT_TRUE(AwaitOutput(hist_log, "PUT\nw\nlast\nDELETE\nw\n\n"))
      << ReadFile(hist_log);
  live->Stop(2000);
  hist->Stop(2000);
}

TEST_P(EtcdctlGrpc, Leases) {
  Out g = Run({"lease", "grant", "60"});
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      g.out, m, std::regex("lease ([0-9a-f]+) granted with TTL\\(60s\\)\n")))
      << g.out;
  const std::string lease = m[1];
  EXPECT_OK(Run({"put", "lk", "lv", "--lease", lease}));
  EXPECT_EQ(Run({"lease", "keep-alive", "--once", lease}).out,
            "lease " + lease + " keepalived with TTL(60)\n");
  Out ttl = Run({"lease", "timetolive", lease, "--keys"});
  EXPECT_TRUE(std::regex_match(
      ttl.out, std::regex("lease " + lease +
                          " granted with TTL\\(60s\\), remaining\\(\\d+s\\), "
                          "attached keys\\(\\[lk\\]\\)\n")))
      << ttl.out;
  // Every member counts down as the leader does (followers ask it): time
  // has passed since the keep-alive, so none answers the full 60 s.
  for (const std::string& url : cluster_->client_urls()) {
    Out at = Run({"lease", "timetolive", lease}, "", url);
    std::smatch left;
    ASSERT_TRUE(std::regex_match(
        at.out, left,
        std::regex("lease " + lease +
                   " granted with TTL\\(60s\\), remaining\\((\\d+)s\\)\n")))
        << url << ": " << at.out;
    EXPECT_LT(std::stoi(left[1]), 60) << url << ": " << at.out;
  }
  Out list = Run({"lease", "list"});
  EXPECT_NE(list.out.find("found 1 leases\n" + lease + "\n"), std::string::npos)
      << list.out;
  EXPECT_EQ(Run({"lease", "revoke", lease}).out,
            "lease " + lease + " revoked\n");
  EXPECT_EQ(Run({"get", "lk"}).out, "");
  Out gone = Run({"lease", "timetolive", lease});
  EXPECT_EQ(gone.out, "lease " + lease + " already expired\n");
  Out bad = Run({"lease", "revoke", lease});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("etcdserver: requested lease not found"),
            std::string::npos)
      << bad.out;
}

TEST_P(EtcdctlGrpc, ClusterAndMaintenance) {
  Out health = Run({"endpoint", "health"});
  EXPECT_OK(health);
  for (const std::string& url : cluster_->client_urls()) {
    EXPECT_NE(health.out.find(url.substr(7) + " is healthy"), std::string::npos)
        << health.out;
  }
  Out st = Run({"endpoint", "status", "-w", "table"});
  EXPECT_OK(st);
  EXPECT_TRUE(std::regex_search(st.out, std::regex("\\|\\s+ENDPOINT\\s+\\|")))
      << st.out;
  EXPECT_NE(st.out.find("IS LEADER"), std::string::npos) << st.out;
  // One row per endpoint, one of them the leader.
  EXPECT_TRUE(std::regex_search(st.out, std::regex("\\|\\s+true\\s+\\|")))
      << st.out;
  Out ml = Run({"member", "list"});
  EXPECT_OK(ml);
  for (int i : cluster_->members()) {
    EXPECT_NE(ml.out.find(", started, " + cluster_->name(i) + ", " +
                          cluster_->peer_url(i) + ", " +
                          cluster_->client_url(i) + ", false"),
              std::string::npos)
        << ml.out;
  }
  EXPECT_EQ(Run({"alarm", "list"}).out, "");

  EXPECT_OK(Run({"put", "c", "1"}));
  int64_t rev = ModRevision("c");
  EXPECT_OK(Run({"put", "c", "2"}));
  EXPECT_EQ(Run({"compact", std::to_string(rev + 1), "--physical"}).out,
            "compacted revision " + std::to_string(rev + 1) + "\n");
  Out old = Run({"get", "c", "--rev", std::to_string(rev)});
  EXPECT_NE(old.code, 0);
  EXPECT_NE(old.out.find("etcdserver: mvcc: required revision has been "
                         "compacted"),
            std::string::npos)
      << old.out;
  Out defrag = Run({"defrag"});
  EXPECT_OK(defrag);
  EXPECT_NE(defrag.out.find("Finished defragmenting etcd member["),
            std::string::npos)
      << defrag.out;

  // The JSON gateway answers on the same port.
  auto v = cluster_->HttpGet(0, "/version");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->status, 200);
  etcdserverpb::RangeRequest rr;
  rr.set_key("c");
  auto r = cluster_->SerializableRange(0, rr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_EQ(r->kvs(0).value(), "2");
}

// gRPC connections are handed from the client port's HTTP server to the gRPC
// front, and count against --max-connections while gRPC holds them: with a
// cap of 2, more etcdctl runs than that one after another are all served,
// because each connection's slot comes back once etcdctl has left (before
// the fix, each handed-off connection kept its slot forever and the third
// run was answered 503).
TEST_F(EtcdctlTest, GrpcConnectionsGiveBackTheirSlots) {
  StartCluster({.kind = StoreKind::kKplane,
                .members = 1,
                .extra_flags = {"--max-connections", "2"}});
  if (IsSkipped()) return;
  // Waits until the client port (not the peer port) counts `n` handed-off
  // connections; false after 20 s.
  auto await_handed_off = [&](double n) {
    const std::string series =
        "kplane_http_connections_handed_off{server=\"client\"} ";
    TimePoint deadline = Clock::Real()->Now() + seconds(20);
    while (Clock::Real()->Now() < deadline) {
      auto r = cluster_->HttpGet(0, "/metrics");
      size_t at = r.ok() ? r->body.find(series) : std::string::npos;
      if (at != std::string::npos &&
          std::strtod(r->body.c_str() + at + series.size(), nullptr) == n) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  for (int i = 0; i < 5; ++i) {
    Out o = Run({"put", "k" + std::to_string(i), "v"});
    EXPECT_EQ(o.out, "OK\n") << "run " << i;
    // etcdctl has exited; its connection is closed once gRPC has seen that.
    ASSERT_TRUE(await_handed_off(0)) << "run " << i;
  }
  EXPECT_EQ(Run({"get", "k", "--prefix", "--keys-only"}).out,
            "k0\n\nk1\n\nk2\n\nk3\n\nk4\n\n");
  // A gRPC connection held open (a watch, which first replays k0's put)
  // is counted, and another gRPC client is served in the slot left.
  std::string log;
  auto watch = Background({"watch", "k0", "--rev", "1"}, &log);
  ASSERT_TRUE(AwaitOutput(log, "PUT\nk0\nv\n")) << ReadFile(log);
  ASSERT_TRUE(await_handed_off(1));
  EXPECT_EQ(Run({"put", "k0", "w"}).out, "OK\n");
  ASSERT_TRUE(AwaitOutput(log, "PUT\nk0\nw\n")) << ReadFile(log);
  watch->Stop(2000);
}

// `etcdctl snapshot save` gets etcd's format from both: a bbolt database
// and its sha256, which `snapshot status` reads as etcd computes it (and
// our own reader agrees), and `snapshot restore` accepts. The same writes
// give the same key count on etcd and kplane: the key bucket holds every
// version not yet compacted (5), plus one lease, one record per member,
// and consistent_index, clusterVersion and authRevision (3). The revision
// is each store's own current revision (kplane's first write is 1,
// etcd's 2). The hashes cannot be compared across the two: they cover
// member ids and URLs, the raft index and lease ids.
TEST_P(EtcdctlGrpc, SnapshotSaveStatusRestore) {
  EXPECT_OK(Run({"put", "foo", "v1"}));
  EXPECT_OK(Run({"put", "bar", "b"}));
  EXPECT_OK(Run({"put", "foo", "v2"}));
  EXPECT_OK(Run({"del", "bar"}));
  Out g = Run({"lease", "grant", "100"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(g.out, m, std::regex("lease ([0-9a-f]+) ")))
      << g.out;
  EXPECT_OK(Run({"put", "lk", "lv", "--lease", m[1]}));
  const int64_t rev = ModRevision("lk");
  const int64_t members = static_cast<int64_t>(cluster_->members().size());

  // Saves, checks the file, returns what etcdctl's status says.
  auto save = [&](const std::string& name) -> kpctl::SnapshotStatus {
    const std::string file = tmp_ + "/" + name;
    Out saved = Run({"snapshot", "save", file});
    EXPECT_OK(saved);
    EXPECT_NE(saved.out.find("Snapshot saved at " + file), std::string::npos)
        << saved.out;
    const std::string data = ReadFile(file);
    kpctl::SnapshotStatus st;
    if (data.size() < 32 + 4096) {
      ADD_FAILURE() << "snapshot of " << data.size() << " bytes";
      return st;
    }
    const std::string_view db(data.data(), data.size() - 32);
    EXPECT_EQ(bolt::Sha256(db), data.substr(db.size()));
    Out j = Run({"snapshot", "status", file, "-w", "json"});
    EXPECT_OK(j);
    std::smatch f;
    EXPECT_TRUE(std::regex_search(
        j.out, f,
        std::regex("\\{\"hash\":(\\d+),\"revision\":(\\d+),"
                   "\"totalKey\":(\\d+),\"totalSize\":(\\d+)\\}")))
        << j.out;
    if (f.empty()) return st;
    st.hash = static_cast<uint32_t>(std::stoul(f[1]));
    st.revision = std::stoll(f[2]);
    st.total_keys = std::stoll(f[3]);
    st.total_size = std::stoll(f[4]);
    EXPECT_EQ(static_cast<size_t>(st.total_size), db.size());
    // Our reader computes the same four figures.
    auto ours = kpctl::BoltSnapshotStatus(data);
    EXPECT_TRUE(ours.ok()) << ours.status();
    if (ours.ok()) {
      EXPECT_EQ(ours->hash, st.hash);
      EXPECT_EQ(ours->revision, st.revision);
      EXPECT_EQ(ours->total_keys, st.total_keys);
      EXPECT_EQ(ours->total_size, st.total_size);
    }
    return st;
  };

  kpctl::SnapshotStatus st = save("before.db");
  EXPECT_EQ(st.revision, rev);
  EXPECT_EQ(st.total_keys, 5 + 1 + members + 3);

  // After a compaction the history below it is gone (foo@v1; bar's put
  // and tombstone) and meta holds both compaction revisions.
  EXPECT_OK(Run({"compact", std::to_string(rev), "--physical"}));
  st = save("after.db");
  EXPECT_EQ(st.revision, rev);
  EXPECT_EQ(st.total_keys, 2 + 1 + members + 3 + 2);

  // etcdctl restores it into an etcd data dir (opening the bbolt file
  // read-write, checking the sha256).
  Out r = Run({"snapshot", "restore", tmp_ + "/after.db", "--data-dir",
               tmp_ + "/restored", "--name", "r1", "--initial-cluster",
               "r1=http://127.0.0.1:1", "--initial-advertise-peer-urls",
               "http://127.0.0.1:1"});
  EXPECT_OK(r);
  EXPECT_TRUE(fs::exists(tmp_ + "/restored/member/snap/db")) << r.out;
}

// Migrating from etcd (issue 17): the real etcd 3.4 writes keys, a lease and
// a compaction; `etcdctl snapshot save` gets its bbolt file; `kpctl store
// snapshot restore` turns it into a kplane data dir, and `kplane store`
// started on it serves the same values at the same revisions (old ones
// included, compacted ones refused) and the lease with its key.
TEST_F(EtcdctlTest, EtcdSnapshotRestoresIntoKplane) {
  if (storage::FindKplaneBinary().empty()) {
    GTEST_SKIP() << "build/kplane is absent (build target kplane)";
  }
  StartCluster({.kind = StoreKind::kEtcd, .members = 1});
  EXPECT_OK(Run({"put", "foo", "v1"}));  // 2
  EXPECT_OK(Run({"put", "bar", "b"}));   // 3
  EXPECT_OK(Run({"put", "foo", "v2"}));  // 4
  EXPECT_OK(Run({"del", "bar"}));        // 5
  Out g = Run({"lease", "grant", "900"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(g.out, m, std::regex("lease ([0-9a-f]+) ")))
      << g.out;
  const std::string lease = m[1];
  EXPECT_OK(Run({"put", "lk", "lv", "--lease", lease}));  // 6
  EXPECT_OK(Run({"put", "foo", "v3"}));                   // 7
  EXPECT_OK(Run({"compact", "4", "--physical"}));
  EXPECT_OK(Run({"put", "zed", "z"}));  // 8
  const int64_t foo_rev = ModRevision("foo");
  const int64_t zed_rev = ModRevision("zed");
  const std::string file = tmp_ + "/etcd.db";
  Out saved = Run({"snapshot", "save", file});
  ASSERT_EQ(saved.code, 0) << saved.out;
  const std::string snapshot = ReadFile(file);

  // A kplane member, stopped; its data dir replaced by the restored one.
  StartCluster({.kind = StoreKind::kKplane, .members = 1});
  ASSERT_TRUE(cluster_->Terminate(0).ok());
  const std::string data_dir = cluster_->data_dir(0);
  fs::remove_all(data_dir);
  {
    std::ofstream f(tmp_ + "/etcd.db", std::ios::binary);
    f << snapshot;
  }
  kpctl::RestoreOptions o;
  o.data_dir = data_dir;
  o.name = cluster_->name(0);
  o.initial_cluster = o.name + "=" + cluster_->peer_url(0);
  o.initial_advertise_peer_urls = cluster_->peer_url(0);
  Status st = kpctl::RestoreSnapshot(tmp_ + "/etcd.db", o);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_TRUE(cluster_->Restart(0).ok());
  ASSERT_TRUE(cluster_->WaitReady(0, seconds(30)).ok()) << cluster_->LogTails();

  Out foo = Run({"get", "foo", "--print-value-only"});
  EXPECT_EQ(foo.out, "v3\n");
  EXPECT_EQ(ModRevision("foo"), foo_rev);
  EXPECT_EQ(ModRevision("zed"), zed_rev);
  EXPECT_EQ(Run({"get", "foo", "--rev", "6", "--print-value-only"}).out,
            "v2\n");
  EXPECT_EQ(Run({"get", "bar", "--rev", "4", "--print-value-only"}).out, "b\n");
  EXPECT_EQ(Run({"get", "bar"}).out, "");
  Out compacted = Run({"get", "foo", "--rev", "3"});
  EXPECT_NE(compacted.out.find("required revision has been compacted"),
            std::string::npos)
      << compacted.out;
  Out ttl = Run({"lease", "timetolive", lease, "--keys"});
  EXPECT_OK(ttl);
  EXPECT_NE(ttl.out.find("granted with TTL(900s)"), std::string::npos)
      << ttl.out;
  EXPECT_NE(ttl.out.find("attached keys([lk])"), std::string::npos) << ttl.out;
  // The next write continues the history.
  EXPECT_OK(Run({"put", "next", "n"}));
  EXPECT_EQ(ModRevision("next"), zed_rev + 1);
}

// Drop-in for etcd (issue 17, etcd's TestIssue6361): the real `etcdctl
// snapshot restore` writes an etcd data directory (member/snap/db and
// member/wal); `kplane store` started on it imports it and serves the keys
// and the lease at etcd's revisions, with the member and cluster IDs etcd's
// WAL names; then `member add` and a second kplane member joining with
// --initial-cluster-state existing get the same data.
TEST_F(EtcdctlTest, KplaneStartsOnTheDataDirEtcdctlRestoreWrites) {
  if (storage::FindKplaneBinary().empty()) {
    GTEST_SKIP() << "build/kplane is absent (build target kplane)";
  }
  StartCluster({.kind = StoreKind::kEtcd, .members = 1});
  EXPECT_OK(Run({"put", "foo", "v1"}));
  Out g = Run({"lease", "grant", "900"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(g.out, m, std::regex("lease ([0-9a-f]+) ")))
      << g.out;
  const std::string lease = m[1];
  EXPECT_OK(Run({"put", "lk", "lv", "--lease", lease}));
  EXPECT_OK(Run({"put", "foo", "v2"}));
  const int64_t foo_rev = ModRevision("foo");
  const int64_t lk_rev = ModRevision("lk");
  const std::string file = tmp_ + "/etcd.db";
  ASSERT_EQ(Run({"snapshot", "save", file}).code, 0);
  const std::string snapshot = ReadFile(file);

  // A kplane member, stopped; its data dir replaced by what etcdctl
  // restore writes for it.
  StartCluster({.kind = StoreKind::kKplane, .members = 1});
  ASSERT_TRUE(cluster_->Terminate(0).ok());
  const std::string data_dir = cluster_->data_dir(0);
  fs::remove_all(data_dir);
  const std::string saved = tmp_ + "/etcd.db";  // the new cluster's tmp_
  {
    std::ofstream f(saved, std::ios::binary);
    f << snapshot;
  }
  const std::string name = cluster_->name(0);
  Out restored =
      Run({"snapshot", "restore", saved, "--name", name, "--initial-cluster",
           name + "=" + cluster_->peer_url(0), "--initial-cluster-token",
           "etcd-cluster", "--initial-advertise-peer-urls",
           cluster_->peer_url(0), "--data-dir", data_dir});
  ASSERT_EQ(restored.code, 0) << restored.out;
  ASSERT_TRUE(fs::exists(data_dir + "/member/wal"));
  auto wal = bolt::ReadEtcdWal(FileSystem::Default(), data_dir + "/member/wal");
  ASSERT_TRUE(wal.ok()) << wal.status();

  ASSERT_TRUE(cluster_->Restart(0).ok());
  ASSERT_TRUE(cluster_->WaitReady(0, seconds(30)).ok()) << cluster_->LogTails();
  EXPECT_TRUE(fs::exists(data_dir + "/member.etcd/wal"));  // etcd's, kept
  EXPECT_EQ(Run({"get", "foo", "--print-value-only"}).out, "v2\n");
  EXPECT_EQ(ModRevision("foo"), foo_rev);
  EXPECT_EQ(ModRevision("lk"), lk_rev);
  EXPECT_EQ(Run({"get", "foo", "--rev", std::to_string(foo_rev - 1),
                 "--print-value-only"})
                .out,
            "v1\n");
  Out ttl = Run({"lease", "timetolive", lease, "--keys"});
  EXPECT_NE(ttl.out.find("attached keys([lk])"), std::string::npos) << ttl.out;
  // etcdctl prints the IDs etcd's WAL holds.
  Out list = Run({"member", "list", "-w", "json"});
  EXPECT_NE(list.out.find("\"cluster_id\":" + std::to_string(wal->cluster_id)),
            std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("\"ID\":" + std::to_string(wal->node_id)),
            std::string::npos)
      << list.out;

  // member add, then a second member started with
  // --initial-cluster-state existing.
  StatusOr<int> added = cluster_->AddMember();
  ASSERT_TRUE(added.ok()) << added.status() << cluster_->LogTails();
  Out there = Run({"get", "foo", "--print-value-only", "--consistency", "s"},
                  "", cluster_->client_url(*added));
  EXPECT_EQ(there.out, "v2\n");
  EXPECT_EQ(
      Run({"get", "lk", "--print-value-only"}, "", cluster_->client_url(*added))
          .out,
      "lv\n");
}

// etcdctl's lock is clientv3's Mutex recipe (a key per session under the
// lock's prefix, the oldest holds it): over KV, leases and watch.
TEST_P(EtcdctlGrpc, LockTwoLockers) {
  // The watch starts at a known revision, so it misses no event even if
  // it is created after the lockers' puts.
  EXPECT_OK(Run({"put", "start", "x"}));
  const int64_t start = ModRevision("start");
  std::string watch_log, first_log, second_log;
  auto watch = Background(
      {"watch", "mylock", "--prefix", "--rev", std::to_string(start + 1)},
      &watch_log);
  auto first = Background({"lock", "mylock"}, &first_log);
  // The holder prints its key (and the key's empty value).
  ASSERT_TRUE(AwaitOutput(first_log, "mylock/")) << ReadFile(first_log);
  std::smatch m;
  std::string out = Output(first_log);
  ASSERT_TRUE(std::regex_search(out, m, std::regex("(mylock/[0-9a-f]+)\n\n")))
      << out;
  const std::string first_key = m[1];

  // The second locker runs its command once it holds the lock.
  auto second =
      Background({"lock", "mylock", "echo", "second-holds"}, &second_log);
  // Its key is queued behind the first one's...
  ASSERT_TRUE(AwaitCount(watch_log, "PUT\nmylock/", 2)) << ReadFile(watch_log);
  // ...so it does not hold the lock while the first locker runs.
  EXPECT_EQ(Output(second_log), "");
  ASSERT_TRUE(first->Signal(SIGINT).ok());
  EXPECT_EQ(first->Wait(), 0) << ReadFile(first_log);
  EXPECT_EQ(second->Wait(), 0) << ReadFile(second_log);
  EXPECT_EQ(Output(second_log), "second-holds\n");
  // Both keys are gone: the first unlocked on SIGINT, the second after its
  // command.
  EXPECT_TRUE(AwaitOutput(watch_log, "DELETE\n" + first_key + "\n"));
  EXPECT_TRUE(AwaitCount(watch_log, "DELETE\nmylock/", 2))
      << ReadFile(watch_log);
  EXPECT_EQ(Run({"get", "mylock", "--prefix"}).out, "");
  ASSERT_TRUE(watch->Signal(SIGINT).ok());
  watch->Wait();

  // With a command and no contention the lock is taken at once.
  Out once = Run({"lock", "other", "echo", "held"});
  EXPECT_OK(once);
  EXPECT_NE(once.out.find("held\n"), std::string::npos) << once.out;
}

// etcdctl's elect is clientv3's Election recipe; `elect -l` observes.
TEST_P(EtcdctlGrpc, ElectCampaignObserveAndHandOver) {
  // clientv3's Campaign waits for the keys created before its own with
  // WithMaxCreateRev(rev - 1); as the first write of a store that starts
  // at revision 0 (kplane, until it starts at 1 as etcd does) that is
  // max 0, "no limit", and it would wait for its own key forever.
  // The watch starts at a known revision, so it misses no event.
  EXPECT_OK(Run({"put", "first-write", "x"}));
  const int64_t start = ModRevision("first-write");
  std::string obs_log, watch_log, l1_log, l2_log;
  auto observer = Background({"elect", "-l", "myelection"}, &obs_log);
  auto watch = Background(
      {"watch", "myelection", "--prefix", "--rev", std::to_string(start + 1)},
      &watch_log);
  auto l1 = Background({"elect", "myelection", "p1"}, &l1_log);
  ASSERT_TRUE(AwaitOutput(l1_log, "\np1\n")) << ReadFile(l1_log);
  std::smatch m;
  std::string out = Output(l1_log);
  ASSERT_TRUE(
      std::regex_search(out, m, std::regex("(myelection/([0-9a-f]+))\np1\n")))
      << out;
  const std::string key1 = m[1], lease1 = m[2];
  EXPECT_TRUE(AwaitOutput(obs_log, key1 + "\np1\n")) << ReadFile(obs_log);

  // A second candidate queues behind the leader.
  auto l2 = Background({"elect", "myelection", "p2"}, &l2_log);
  ASSERT_TRUE(AwaitOutput(watch_log, "\np2\n")) << ReadFile(watch_log);
  EXPECT_EQ(Output(l2_log), "");

  // A proclamation (a put on the leader's key, with its lease, as
  // Election.Proclaim writes it) reaches the observer.
  EXPECT_OK(Run({"put", key1, "p1-again", "--lease=" + lease1}));
  EXPECT_TRUE(AwaitOutput(obs_log, key1 + "\np1-again\n")) << ReadFile(obs_log);

  // The leader resigns on SIGINT; the second candidate leads.
  ASSERT_TRUE(l1->Signal(SIGINT).ok());
  EXPECT_EQ(l1->Wait(), 0) << ReadFile(l1_log);
  ASSERT_TRUE(AwaitOutput(l2_log, "\np2\n")) << ReadFile(l2_log);
  out = Output(l2_log);
  ASSERT_TRUE(
      std::regex_search(out, m, std::regex("(myelection/[0-9a-f]+)\np2\n")))
      << out;
  const std::string key2 = m[1];
  EXPECT_NE(key2, key1);
  EXPECT_TRUE(AwaitOutput(obs_log, key2 + "\np2\n")) << ReadFile(obs_log);
  EXPECT_EQ(Output(obs_log),
            key1 + "\np1\n" + key1 + "\np1-again\n" + key2 + "\np2\n");

  ASSERT_TRUE(l2->Signal(SIGINT).ok());
  EXPECT_EQ(l2->Wait(), 0) << ReadFile(l2_log);
  ASSERT_TRUE(observer->Signal(SIGINT).ok());
  observer->Wait();
  ASSERT_TRUE(watch->Signal(SIGINT).ok());
  watch->Wait();
  EXPECT_EQ(Run({"get", "myelection", "--prefix"}).out, "");
}

// The Lock service itself (etcdctl runs the recipe client-side) through the
// JSON gateway, each step on another member: the waiter's watch and checks
// run on the member it asked (a follower on kplane 3).
TEST_P(EtcdctlGrpc, JsonLockServiceAcrossMembers) {
  const std::vector<int> ms = cluster_->members();
  auto post = [&](size_t i, const std::string& path, const std::string& body) {
    auto c = net::HttpClient::ForUrl(cluster_->client_url(ms[i % ms.size()]));
    if (!c.ok()) return c.status().ToString();
    auto r = (*c)->Request("POST", path, {{"Content-Type", "application/json"}},
                           body);
    if (!r.ok()) return r.status().ToString();
    return std::to_string(r->status) + " " + r->body;
  };
  EXPECT_OK(Run({"put", "start", "x"}));
  const int64_t start = ModRevision("start");
  std::string watch_log;
  auto watch = Background(
      {"watch", "l/", "--prefix", "--rev", std::to_string(start + 1)},
      &watch_log);
  EXPECT_NE(post(0, "/v3/lease/grant", R"({"TTL":60,"ID":100})")
                .find("\"ID\":\"100\""),
            std::string::npos);
  EXPECT_NE(post(0, "/v3/lease/grant", R"({"TTL":60,"ID":200})")
                .find("\"ID\":\"200\""),
            std::string::npos);
  std::string held = post(0, "/v3/lock/lock", R"({"name":"bA==","lease":100})");
  EXPECT_NE(held.find("200 {"), std::string::npos) << held;
  EXPECT_NE(held.find("\"key\":\"bC82NA==\""), std::string::npos) << held;

  auto waiter = std::async(std::launch::async, [&] {
    return post(1, "/v3/lock/lock", R"({"name":"bA==","lease":200})");
  });
  ASSERT_TRUE(AwaitOutput(watch_log, "PUT\nl/c8\n")) << ReadFile(watch_log);
  EXPECT_EQ(waiter.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);
  EXPECT_NE(post(2, "/v3/lock/unlock", R"({"key":"bC82NA=="})").find("200 {"),
            std::string::npos);
  std::string got = waiter.get();
  EXPECT_NE(got.find("200 {"), std::string::npos) << got;
  EXPECT_NE(got.find("\"key\":\"bC9jOA==\""), std::string::npos) << got;
  ASSERT_TRUE(watch->Signal(SIGINT).ok());
  watch->Wait();
}

// Whether `o` failed with etcdctl's "Error: <text>".
::testing::AssertionResult FailsWith(const Out& o, const std::string& text) {
  if (o.code != 0 && o.out.find("Error: " + text + "\n") != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "exit " << o.code << ", want \"Error: " << text << "\":\n"
         << o.out;
}

// etcd's auth through etcdctl: users, roles, a prefix permission, auth
// enable, a user limited to the prefix, wrong passwords, admin-only
// commands, revoking, auth disable -- with etcd's texts.
TEST_P(EtcdctlGrpc, UsersRolesAuth) {
  EXPECT_TRUE(FailsWith(Run({"auth", "enable"}),
                        "etcdserver: root user does not exist"));
  EXPECT_EQ(Run({"user", "add", "root:rootpw"}).out, "User root created\n");
  EXPECT_TRUE(FailsWith(Run({"user", "add", "root:other"}),
                        "etcdserver: user name already exists"));
  EXPECT_EQ(Run({"role", "add", "app"}).out, "Role app created\n");
  EXPECT_TRUE(FailsWith(Run({"role", "add", "app"}),
                        "etcdserver: role name already exists"));
  EXPECT_EQ(Run({"role", "grant-permission", "app", "--prefix=true",
                 "readwrite", "/app/"})
                .out,
            "Role app updated\n");
  EXPECT_EQ(
      Run({"role", "grant-permission", "app", "--from-key", "read", "zz"}).out,
      "Role app updated\n");
  EXPECT_EQ(Run({"user", "add", "alice:alicepw"}).out, "User alice created\n");
  EXPECT_EQ(Run({"user", "grant-role", "alice", "app"}).out,
            "Role app is granted to user alice\n");
  EXPECT_TRUE(FailsWith(Run({"user", "grant-role", "alice", "nope"}),
                        "etcdserver: role name not found"));
  EXPECT_TRUE(FailsWith(Run({"user", "get", "bob"}),
                        "etcdserver: user name not found"));
  EXPECT_TRUE(FailsWith(Run({"role", "get", "nope"}),
                        "etcdserver: role name not found"));
  EXPECT_TRUE(FailsWith(Run({"user", "revoke-role", "alice", "other"}),
                        "etcdserver: role is not granted to the user"));
  EXPECT_EQ(Run({"role", "get", "app"}).out,
            "Role app\nKV Read:\n\t[/app/, /app0) (prefix /app/)\n"
            "\t[zz, <open ended>\nKV Write:\n\t[/app/, /app0) (prefix "
            "/app/)\n");
  EXPECT_EQ(Run({"user", "get", "alice"}).out, "User: alice\nRoles: app\n");
  // The root user lacks the root role: etcdctl creates it and retries
  // (it matches etcd's error text to do so; the first failure is logged).
  Out enable = Run({"auth", "enable"});
  EXPECT_OK(enable);
  EXPECT_NE(enable.out.find("etcdserver: root user does not have root role"),
            std::string::npos)
      << enable.out;
  EXPECT_TRUE(enable.out.ends_with("\nAuthentication Enabled\n")) << enable.out;

  EXPECT_TRUE(
      FailsWith(Run({"get", "/app/x"}), "etcdserver: user name is empty"));
  const std::string alice = "--user=alice:alicepw";
  EXPECT_EQ(Run({alice, "put", "/app/x", "1"}).out, "OK\n");
  EXPECT_EQ(Run({alice, "get", "/app/x"}).out, "/app/x\n1\n");
  EXPECT_EQ(Run({alice, "get", "/app/", "--prefix", "--keys-only"}).out,
            "/app/x\n\n");
  EXPECT_EQ(Run({alice, "get", "zzz"}).out, "");
  EXPECT_TRUE(FailsWith(Run({alice, "put", "zzz", "1"}),
                        "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({alice, "put", "/other", "1"}),
                        "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({alice, "get", "/other"}),
                        "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({alice, "get", "/", "--prefix"}),
                        "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({alice, "del", "/app/", "--from-key"}),
                        "etcdserver: permission denied"));
  // A txn needs its compares' and both branches' permissions.
  EXPECT_EQ(Run({alice, "txn"},
                "value(\"/app/x\") = \"1\"\n\nput /app/y 2\n\nget /app/x\n\n")
                .out,
            "SUCCESS\n\nOK\n");
  EXPECT_TRUE(FailsWith(
      Run({alice, "txn"},
          "value(\"/app/x\") = \"1\"\n\nput /app/y 3\n\nput /other 1\n\n"),
      "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({"--user=alice:wrong", "get", "/app/x"}),
                        "etcdserver: authentication failed, invalid user ID "
                        "or password"));
  EXPECT_TRUE(FailsWith(Run({"--user=nobody:pw", "get", "/app/x"}),
                        "etcdserver: authentication failed, invalid user ID "
                        "or password"));
  EXPECT_TRUE(
      FailsWith(Run({alice, "user", "list"}), "etcdserver: permission denied"));
  // Membership changes need the root role; the list needs nothing.
  EXPECT_TRUE(FailsWith(
      Run({alice, "member", "add", "x", "--peer-urls=http://127.0.0.1:1"}),
      "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({alice, "member", "remove", "1234"}),
                        "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({"member", "promote", "1234"}),
                        "etcdserver: user name is empty"));
  EXPECT_TRUE(FailsWith(Run({alice, "member", "update", "1234",
                             "--peer-urls=http://127.0.0.1:1"}),
                        "etcdserver: permission denied"));
  EXPECT_OK(Run({"member", "list"}));
  EXPECT_TRUE(FailsWith(Run({"--user=root:rootpw", "member", "remove", "1234"}),
                        "etcdserver: member not found"));
  EXPECT_TRUE(FailsWith(Run({alice, "user", "add", "eve:pw"}),
                        "etcdserver: permission denied"));
  // A watch outside the grants is cancelled by the server.
  Out watch = Run({alice, "watch", "/other"});
  EXPECT_NE(watch.code, 0);
  EXPECT_NE(watch.out.find("watch was canceled (rpc error: code = "
                           "PermissionDenied desc = etcdserver: permission "
                           "denied)\n"),
            std::string::npos)
      << watch.out;
  EXPECT_TRUE(FailsWith(watch, "watch is canceled by the server"));
  // Maintenance that etcd keeps for the root role; etcd 3.4 answers with
  // its auth package's error, unconverted.
  Out defrag = Run({alice, "defrag"});
  EXPECT_NE(defrag.code, 0);
  EXPECT_NE(defrag.out.find("(rpc error: code = Unknown desc = auth: "
                            "permission denied)"),
            std::string::npos)
      << defrag.out;
  EXPECT_OK(Run({"--user=root:rootpw", "defrag"}));
  // A user may read himself, and the roles he holds.
  EXPECT_EQ(Run({alice, "user", "get", "alice"}).out,
            "User: alice\nRoles: app\n");

  const std::string root = "--user=root:rootpw";
  EXPECT_EQ(Run({root, "user", "list"}).out, "alice\nroot\n");
  EXPECT_EQ(Run({root, "role", "list"}).out, "app\nroot\n");
  EXPECT_EQ(Run({root, "get", "/app/y"}).out, "/app/y\n2\n");
  EXPECT_TRUE(FailsWith(Run({root, "user", "delete", "root"}),
                        "etcdserver: invalid auth management"));
  EXPECT_TRUE(FailsWith(Run({root, "role", "revoke-permission", "app", "/x"}),
                        "etcdserver: permission is not granted to the role"));
  EXPECT_EQ(
      Run({root, "role", "revoke-permission", "app", "/app/", "--prefix=true"})
          .out,
      "Permission of range [/app/, /app0) is revoked from role app\n");
  EXPECT_TRUE(FailsWith(Run({alice, "get", "/app/x"}),
                        "etcdserver: permission denied"));
  EXPECT_EQ(
      Run({root, "user", "passwd", "alice", "--interactive=false"}, "newpw\n")
          .out,
      "Password updated\n");
  EXPECT_TRUE(FailsWith(Run({alice, "get", "zzz"}),
                        "etcdserver: authentication failed, invalid user ID "
                        "or password"));
  EXPECT_EQ(Run({"--user=alice:newpw", "get", "zzz"}).out, "");
  EXPECT_EQ(Run({root, "auth", "disable"}).out, "Authentication Disabled\n");

  EXPECT_EQ(Run({"get", "/app/x"}).out, "/app/x\n1\n");
  // clientv3 logs the refused authentication and goes on without a token.
  Out late = Run({"--user=root:rootpw", "get", "/app/x"});
  EXPECT_OK(late);
  EXPECT_NE(late.out.find("etcdserver: authentication is not enabled"),
            std::string::npos)
      << late.out;
  EXPECT_TRUE(late.out.ends_with("}\n/app/x\n1\n")) << late.out;
  EXPECT_EQ(Run({"user", "delete", "alice"}).out, "User alice deleted\n");
  EXPECT_EQ(Run({"role", "delete", "app"}).out, "Role app deleted\n");
  EXPECT_EQ(Run({"user", "list"}).out, "root\n");
}

// etcd's --auth-token=jwt (ES256 here): etcdctl authenticates and its
// requests carry the signed token over gRPC (with three members, to
// whichever member it picks: none keeps the tokens); over the JSON gateway
// a token from /v3/auth/authenticate works in the Authorization header,
// and a forged, unsigned or tampered one is etcd's "invalid auth token",
// an old one (issued before a role was added) "revision of auth store is
// old", with the same codes on etcd and kplane.
class EtcdctlJwt : public EtcdctlTest,
                   public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override {
    keys_ = fs::temp_directory_path() /
            ("kplane-jwt-" + std::to_string(::getpid()) + "-" +
             std::to_string(GetParam().members) +
             (GetParam().kind == StoreKind::kEtcd ? "e" : "k"));
    fs::create_directories(keys_);
    EVP_PKEY* k = EVP_EC_gen("P-256");
    ASSERT_NE(k, nullptr);
    for (bool priv : {true, false}) {
      const std::string path = (keys_ / (priv ? "priv.pem" : "pub.pem"));
      FILE* f = std::fopen(path.c_str(), "w");
      ASSERT_NE(f, nullptr);
      if (priv) {
        PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
      } else {
        PEM_write_PUBKEY(f, k);
      }
      std::fclose(f);
    }
    EVP_PKEY_free(k);
    StartCluster({.kind = GetParam().kind,
                  .members = GetParam().members,
                  .extra_flags = {"--auth-token=jwt,pub-key=" +
                                  (keys_ / "pub.pem").string() +
                                  ",priv-key=" + (keys_ / "priv.pem").string() +
                                  ",sign-method=ES256,ttl=10m"}});
  }
  void TearDown() override { fs::remove_all(keys_); }

  // A JSON gateway POST to member `i` with `token` in Authorization:
  // "<status> <body>".
  std::string Post(size_t i, const std::string& path, const std::string& body,
                   const std::string& token = "") {
    const std::vector<int> ms = cluster_->members();
    auto c = net::HttpClient::ForUrl(cluster_->client_url(ms[i % ms.size()]));
    if (!c.ok()) return c.status().ToString();
    net::HttpHeaders headers = {{"Content-Type", "application/json"}};
    if (!token.empty()) headers.Add("Authorization", token);
    auto r = (*c)->Request("POST", path, headers, body);
    if (!r.ok()) return r.status().ToString();
    return std::to_string(r->status) + " " + r->body;
  }
  // A JSON gateway watch on member 0 with `token` in Authorization: "<status>
  // <first message>" (the message read until it is a whole JSON object).
  std::string WatchFirst(const std::string& token, const std::string& body) {
    const std::vector<int> ms = cluster_->members();
    auto c = net::HttpClient::ForUrl(cluster_->client_url(ms[0]));
    if (!c.ok()) return c.status().ToString();
    net::HttpHeaders headers = {{"Content-Type", "application/json"}};
    if (!token.empty()) headers.Add("Authorization", token);
    auto stream = (*c)->OpenStream("POST", "/v3/watch", headers);
    if (!stream.ok()) return stream.status().ToString();
    // The whole request body, as curl sends it: etcd's gateway answers a
    // stream once its request body ended.
    if (!(*stream)->Send(body).ok() || !(*stream)->CloseSend().ok()) {
      return "send failed";
    }
    auto head = (*stream)->ReadHead(seconds(10));
    if (!head.ok()) return head.status().ToString();
    std::string got;
    int depth = 0;
    for (;;) {
      std::string chunk;
      auto more = (*stream)->Read(&chunk, seconds(10));
      if (!more.ok() || !*more) break;
      got += chunk;
      depth = 0;
      for (char ch : got) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
      if (!got.empty() && depth == 0) break;
    }
    return std::to_string(head->status) + " " + got;
  }
  std::string Token(size_t i, const std::string& user, const std::string& pw) {
    std::string r =
        Post(i, "/v3/auth/authenticate",
             R"({"name":")" + user + R"(","password":")" + pw + R"("})");
    std::smatch m;
    if (!std::regex_search(r, m, std::regex("\"token\":\"([^\"]+)\""))) {
      ADD_FAILURE() << r;
      return "";
    }
    return m[1];
  }

  fs::path keys_;
};

TEST_P(EtcdctlJwt, UsersAuthenticateWithSignedTokens) {
  EXPECT_EQ(Run({"user", "add", "root:rootpw"}).out, "User root created\n");
  EXPECT_OK(Run({"user", "grant-role", "root", "root"}));
  EXPECT_EQ(Run({"user", "add", "alice:alicepw"}).out, "User alice created\n");
  EXPECT_OK(Run({"role", "add", "app"}));
  EXPECT_OK(Run({"role", "grant-permission", "app", "--prefix=true",
                 "readwrite", "/app/"}));
  EXPECT_OK(Run({"user", "grant-role", "alice", "app"}));
  EXPECT_EQ(Run({"auth", "enable"}).out, "Authentication Enabled\n");

  const std::string alice = "--user=alice:alicepw";
  for (int i = 0; i < 3; ++i) {  // etcdctl picks a member each time
    EXPECT_EQ(Run({alice, "put", "/app/x", std::to_string(i)}).out, "OK\n");
    EXPECT_EQ(Run({alice, "get", "/app/x"}).out,
              "/app/x\n" + std::to_string(i) + "\n");
  }
  EXPECT_TRUE(FailsWith(Run({alice, "put", "/other", "1"}),
                        "etcdserver: permission denied"));
  EXPECT_TRUE(FailsWith(Run({"--user=alice:wrong", "get", "/app/x"}),
                        "etcdserver: authentication failed, invalid user ID "
                        "or password"));
  EXPECT_TRUE(
      FailsWith(Run({"get", "/app/x"}), "etcdserver: user name is empty"));

  // The JSON gateway: a token from one member works on every member.
  const std::string token = Token(0, "alice", "alicepw");
  ASSERT_EQ(std::count(token.begin(), token.end(), '.'), 2) << token;
  const std::string range = R"({"key":"L2FwcC94"})";  // /app/x
  for (size_t i = 0; i < cluster_->members().size(); ++i) {
    std::string r = Post(i, "/v3/kv/range", range, token);
    EXPECT_TRUE(r.starts_with("200 ")) << r;
    EXPECT_NE(r.find("\"value\":\"Mg==\""), std::string::npos) << r;
  }
  const std::string invalid =
      R"({"error":"etcdserver: invalid auth token","message":"etcdserver: )"
      R"(invalid auth token","code":16})";
  // Forged: alice's signature over root's claims; unsigned; tampered.
  const std::string header = token.substr(0, token.find('.'));
  const std::string sig = token.substr(token.rfind('.') + 1);
  const std::string root_claims =
      Base64UrlEncode(R"({"exp":9999999999,"revision":99,"username":"root"})");
  std::string tampered = token;
  tampered[tampered.size() - 3] =
      tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
  for (const std::string& bad :
       {header + "." + root_claims + "." + sig,
        Base64UrlEncode(R"({"alg":"none","typ":"JWT"})") + "." + root_claims +
            ".",
        tampered, std::string("not-a-token")}) {
    std::string r = Post(0, "/v3/kv/range", range, bad);
    EXPECT_EQ(r, "401 " + invalid) << bad;
  }
  // A watch with an invalid token: the stream opens and each create is
  // refused, created and canceled with the gRPC error's text (etcd's
  // isWatchPermitted behind its gateway), rather than a 401.
  for (const std::string& bad : {std::string("not-a-token"), tampered}) {
    std::string w = WatchFirst(bad, R"({"create_request":{"key":"L2FwcC94"}})");
    EXPECT_TRUE(w.starts_with("200 {\"result\":{")) << w;
    EXPECT_NE(w.find(R"("watch_id":"-1","created":true,"canceled":true,)"
                     R"("cancel_reason":"rpc error: code = Unauthenticated )"
                     R"(desc = etcdserver: invalid auth token"})"),
              std::string::npos)
        << w;
  }
  // An old token: the auth revision moved on since it was issued.
  EXPECT_OK(Run({"--user=root:rootpw", "role", "add", "other"}));
  std::string old = Post(0, "/v3/kv/range", range, token);
  EXPECT_NE(old.find("\"error\":\"etcdserver: revision of auth store is "
                     "old\""),
            std::string::npos)
      << old;
  EXPECT_NE(old.find("\"code\":3}"), std::string::npos) << old;
  std::string fresh =
      Post(0, "/v3/kv/range", range, Token(0, "alice", "alicepw"));
  EXPECT_TRUE(fresh.starts_with("200 ")) << fresh;
}

INSTANTIATE_TEST_SUITE_P(
    Stores, EtcdctlJwt,
    ::testing::Values(Param{StoreKind::kEtcd, 1}, Param{StoreKind::kKplane, 1},
                      Param{StoreKind::kKplane, 3}),
    [](const ::testing::TestParamInfo<Param>& p) {
      return std::string(p.param.kind == StoreKind::kEtcd ? "Etcd" : "Kplane") +
             std::to_string(p.param.members);
    });

// etcd's Cluster.MemberUpdate: a member's peer URLs change through the log.
// etcdctl prints the same on both; the member restarted with the new peer
// URL serves the cluster's writes. The JSON gateway's
// /v3/cluster/member/update does the same, and etcd's errors come back for
// a taken URL and an unknown id. The restarted member listens on the new
// port only: it gets the write below only if the others dial its new URL
// (without the update reaching the transports the leader kept dialing the
// closed old port and the member never saw the write).
class EtcdctlMemberUpdate : public EtcdctlTest,
                            public ::testing::WithParamInterface<StoreKind> {
 protected:
  // With pre-vote the restarted member does not take the leadership over
  // (etcd 3.4's default is off; both accept the flag).
  void SetUp() override {
    StartCluster(
        {.kind = GetParam(), .members = 3, .extra_flags = {"--pre-vote=true"}});
  }

  // Member i's id as etcdctl takes it (hex, as `member list` prints it).
  std::string MemberIdHex(int i) {
    auto id = cluster_->member_id(i);
    EXPECT_TRUE(id.ok()) << id.status();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%llx",
                  static_cast<unsigned long long>(id.ok() ? *id : 0));
    return hex;
  }
};

TEST_P(EtcdctlMemberUpdate, PeersFollowTheNewUrl) {
  const int moved = cluster_->members()[2];
  const std::string id = MemberIdHex(moved);
  auto port = storage::PickFreePort();
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);
  const std::string old_url = cluster_->peer_url(moved);

  // Update and list through one member: MemberList answers from the
  // serving member's own view (etcd 3.4's too), and the update returns
  // once the member that took it has applied it.
  const std::string asked = cluster_->client_url(cluster_->members()[0]);
  Out up = Run({"member", "update", id, "--peer-urls=" + url}, "", asked);
  EXPECT_OK(up);
  // etcdctl's "%16x": space-padded hex.
  EXPECT_TRUE(std::regex_match(
      up.out, std::regex("Member " + std::string(16 - id.size(), ' ') + id +
                         " updated in cluster [ 0-9a-f]{16}\n")))
      << up.out;
  Out ml = Run({"member", "list"}, "", asked);
  EXPECT_OK(ml);
  EXPECT_NE(ml.out.find(", started, " + cluster_->name(moved) + ", " + url +
                        ", " + cluster_->client_url(moved) + ", false"),
            std::string::npos)
      << ml.out;
  EXPECT_EQ(ml.out.find(old_url), std::string::npos) << ml.out;

  // The member moves to the new port: the old one is closed from now on.
  ASSERT_TRUE(cluster_->Terminate(moved).ok());
  ASSERT_TRUE(cluster_->SetPeerPort(moved, *port).ok());
  ASSERT_TRUE(cluster_->Restart(moved).ok());
  ASSERT_TRUE(cluster_->WaitReady(moved, seconds(30)).ok())
      << ReadFile(cluster_->log_path(moved));
  EXPECT_OK(Run({"put", "moved", "yes"}));
  // It gets the write from the leader (over the new URL) and answers a
  // read on its own.
  std::string value;
  for (int tries = 0; tries < 200 && value != "yes"; ++tries) {
    etcdserverpb::RangeRequest rr;
    rr.set_key("moved");
    auto r = cluster_->SerializableRange(moved, rr);
    if (r.ok() && r->kvs_size() == 1) value = r->kvs(0).value();
    if (value != "yes") std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(value, "yes");

  // etcd's errors: another member's URL, an unknown member.
  const int other = cluster_->members()[0];
  EXPECT_TRUE(FailsWith(
      Run({"member", "update", id, "--peer-urls=" + cluster_->peer_url(other)}),
      "etcdserver: Peer URLs already exists"));
  EXPECT_TRUE(FailsWith(Run({"member", "update", "1234", "--peer-urls=" + url}),
                        "etcdserver: member not found"));

  // The JSON gateway: back to the old URL list plus the new one.
  auto dec = cluster_->member_id(moved);
  ASSERT_TRUE(dec.ok());
  const std::string both = old_url + "\",\"" + url;
  Subprocess curl({"curl", "-s", "-X", "POST", "-d",
                   "{\"ID\":\"" + std::to_string(*dec) + "\",\"peerURLs\":[\"" +
                       both + "\"]}",
                   cluster_->client_url(other) + "/v3/cluster/member/update"},
                  {.log_path = tmp_ + "/curl.out"});
  ASSERT_TRUE(curl.Start().ok());
  EXPECT_EQ(curl.Wait(), 0);
  const std::string json = ReadFile(tmp_ + "/curl.out");
  EXPECT_NE(json.find("\"peerURLs\":[\"" + both + "\"]"), std::string::npos)
      << json;
  // As above: the member that applied the update (stop 36's CI got a
  // follower's list from before it).
  Out ml2 = Run({"member", "list"}, "", cluster_->client_url(other));
  EXPECT_NE(ml2.out.find(", " + old_url + "," + url + ", "), std::string::npos)
      << ml2.out;
}

INSTANTIATE_TEST_SUITE_P(
    Stores, EtcdctlMemberUpdate,
    ::testing::Values(StoreKind::kEtcd, StoreKind::kKplane),
    [](const ::testing::TestParamInfo<StoreKind>& p) {
      return std::string(p.param == StoreKind::kEtcd ? "Etcd3" : "Kplane3");
    });

INSTANTIATE_TEST_SUITE_P(
    Stores, EtcdctlGrpc,
    ::testing::Values(Param{StoreKind::kEtcd, 1}, Param{StoreKind::kKplane, 1},
                      Param{StoreKind::kKplane, 3}),
    [](const ::testing::TestParamInfo<Param>& p) {
      return std::string(p.param.kind == StoreKind::kEtcd ? "Etcd" : "Kplane") +
             std::to_string(p.param.members);
    });

}  // namespace
}  // namespace kplane::e2e
