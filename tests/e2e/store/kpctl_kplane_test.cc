// `kpctl store` against `kplane store`: every command works on our store as
// it does on etcd (kpctl/store's etcdctl_compat_test compares it with
// etcdctl on etcd), and a snapshot saved from a member restores into a new
// member that serves the same data.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "base/mutex.h"
#include "base/subprocess.h"
#include "kpctl/store/store_command.h"
#include "net/http_client.h"
#include "storage/client/local_cluster.h"
#include "storage/client/maintenance.h"
#include "storage/client/remote_kv.h"

namespace kplane::e2e {
namespace {

struct Out {
  std::string out, err;
  int code = -1;
};

Out Kpctl(const std::string& endpoints, std::vector<std::string> args,
          const std::string& in = "") {
  args.insert(args.begin(), "--endpoints=" + endpoints);
  std::istringstream is(in);
  std::ostringstream os, es;
  kpctl::StoreIo io{&is, &os, &es};
  io.getenv = [](const char*) -> const char* { return nullptr; };
  Out o;
  o.code = kpctl::RunStore(args, io);
  o.out = os.str();
  o.err = es.str();
  return o;
}

// A thread-safe output stream buffer whose contents can be awaited.
class Capture : public std::streambuf {
 public:
  bool WaitFor(const std::string& needle, Duration timeout) {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), timeout, [&]() REQUIRES(mu_) {
      return data_.find(needle) != std::string::npos;
    });
  }
  std::string data() {
    MutexLock l(&mu_);
    return data_;
  }

 protected:
  int overflow(int c) override {
    if (c != EOF) {
      char ch = static_cast<char>(c);
      xsputn(&ch, 1);
    }
    return c;
  }
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    MutexLock l(&mu_);
    data_.append(p, static_cast<size_t>(n));
    cv_.notify_all();
    return n;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::string data_ GUARDED_BY(mu_);
};

class KpctlOnKplane : public ::testing::Test {
 protected:
  void SetUp() override {
    if (storage::FindKplaneBinary().empty()) {
      GTEST_SKIP() << "build/kplane is absent (build target kplane or set "
                      "KPLANE_BIN)";
    }
    auto c = storage::LocalCluster::Start(
        {.kind = storage::StoreKind::kKplane, .members = 3});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    eps_ = cluster_->endpoints_flag();
    one_ = cluster_->client_url(0).substr(7);
  }

  Out Run(std::vector<std::string> args, const std::string& in = "") {
    return Kpctl(eps_, std::move(args), in);
  }
  Out RunOne(std::vector<std::string> args, const std::string& in = "") {
    return Kpctl(one_, std::move(args), in);
  }

  std::unique_ptr<storage::LocalCluster> cluster_;
  std::string eps_, one_;
};

#define EXPECT_OK(o) EXPECT_EQ((o).code, 0) << (o).out << (o).err

TEST_F(KpctlOnKplane, KvTxnLeaseAndErrors) {
  EXPECT_EQ(Run({"put", "foo", "v1"}).out, "OK\n");
  EXPECT_OK(Run({"put", "bar", "v2"}));
  Out p = Run({"put", "foo", "v3", "--prev-kv"});
  EXPECT_EQ(p.out, "OK\nfoo\nv1\n");
  EXPECT_EQ(Run({"get", "--prefix", ""}).out, "bar\nv2\nfoo\nv3\n");
  EXPECT_EQ(Run({"get", "foo", "--print-value-only"}).out, "v3\n");
  // The first write is revision 2, as etcd's (an empty store is at 1).
  EXPECT_EQ(Run({"get", "foo", "--rev", "1"}).out, "");
  EXPECT_EQ(Run({"get", "foo", "--rev", "2"}).out, "foo\nv1\n");
  Out j = Run({"get", "foo", "-w", "json"});
  EXPECT_OK(j);
  EXPECT_NE(j.out.find("\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":2,"
                       "\"mod_revision\":4,\"version\":2,\"value\":\"djM=\"}]"),
            std::string::npos)
      << j.out;

  Out t = Run({"txn"},
              "value(\"foo\") = \"v3\"\n\nput t 1\nget foo\n\ndel foo\n\n");
  EXPECT_EQ(t.out, "SUCCESS\n\nOK\n\nfoo\nv3\n");
  EXPECT_EQ(Run({"del", "t", "--prev-kv"}).out, "1\nt\n1\n");

  Out g = Run({"lease", "grant", "60"});
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      g.out, m, std::regex("lease ([0-9a-f]{16}) granted with TTL\\(60s\\)\n")))
      << g.out << g.err;
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
  EXPECT_EQ(Run({"lease", "list"}).out, "found 1 leases\n" + lease + "\n");
  EXPECT_EQ(Run({"lease", "revoke", lease}).out,
            "lease " + lease + " revoked\n");
  EXPECT_EQ(Run({"get", "lk"}).out, "");
  Out rv = Run({"lease", "revoke", lease});
  EXPECT_EQ(rv.code, 1);
  EXPECT_EQ(rv.err,
            "Error: failed to revoke lease (etcdserver: requested lease not "
            "found)\n");

  EXPECT_EQ(Run({"compaction", "2"}).out, "compacted revision 2\n");
  Out c = Run({"get", "foo", "--rev", "1"});
  EXPECT_EQ(c.code, 1);
  EXPECT_EQ(c.err,
            "Error: etcdserver: mvcc: required revision has been compacted\n");
  Out f = Run({"compaction", "1000"});
  EXPECT_EQ(f.err,
            "Error: etcdserver: mvcc: required revision is a future "
            "revision\n");
}

TEST_F(KpctlOnKplane, ClusterCommands) {
  Out ml = Run({"member", "list"});
  EXPECT_OK(ml);
  EXPECT_EQ(std::count(ml.out.begin(), ml.out.end(), '\n'), 3) << ml.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(ml.out.find(", started, n" + std::to_string(i + 1) + ", "),
              std::string::npos)
        << ml.out;
  }
  Out st = Run({"endpoint", "status", "-w", "table"});
  EXPECT_OK(st);
  EXPECT_NE(st.out.find(" 3.4.0 "), std::string::npos) << st.out;
  EXPECT_EQ(std::count(st.out.begin(), st.out.end(), '\n'), 7) << st.out;
  // Exactly one leader.
  Out sj = Run({"endpoint", "status"});
  EXPECT_EQ(std::regex_search(sj.out, std::regex(", true, false, ")), true);
  int leaders = 0;
  for (size_t p = 0;
       (p = sj.out.find(", true, false, ", p)) != std::string::npos; ++p) {
    ++leaders;
  }
  EXPECT_EQ(leaders, 1) << sj.out;
  Out h = Run({"endpoint", "health", "--cluster"});
  EXPECT_OK(h);
  EXPECT_EQ(std::count(h.err.begin(), h.err.end(), '\n'), 3) << h.err;
  EXPECT_OK(Run({"defrag", "--cluster"}));
  EXPECT_EQ(Run({"alarm", "list"}).out, "");

  // move-leader to a follower.
  auto leader = cluster_->LeaderIndex();
  ASSERT_TRUE(leader.ok());
  int follower = (*leader + 1) % 3;
  auto m = storage::Maintenance::Create(cluster_->client_url(follower));
  ASSERT_TRUE(m.ok());
  auto fs = (*m)->Status();
  ASSERT_TRUE(fs.ok());
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%llx",
                static_cast<unsigned long long>(fs->header().member_id()));
  Out mv = Run({"move-leader", hex});
  EXPECT_OK(mv);
  EXPECT_NE(mv.out.find(std::string(" to ") + hex + "\n"), std::string::npos)
      << mv.out;

  // A new leader refuses a configuration change until it has applied its
  // log up to where it took over (raft's pending conf index; etcd's raft
  // does the same): the refused change is dropped and its proposer waits
  // for its timeout. So wait until the new leader has applied everything
  // it had when it answered.
  {
    auto first = (*m)->Status();
    ASSERT_TRUE(first.ok());
    bool caught_up = false;
    const TimePoint deadline = Clock::Real()->Now() + seconds(10);
    while (!caught_up && Clock::Real()->Now() < deadline) {
      auto now = (*m)->Status();
      caught_up = now.ok() && now->raftappliedindex() >= first->raftindex();
      if (!caught_up) std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_TRUE(caught_up) << "the new leader did not apply its log";
  }

  // A learner added and removed again.
  const std::string peer =
      "http://127.0.0.1:" + std::to_string(*storage::PickFreePort());
  Out add = Run({"member", "add", "n4", "--learner", "--peer-urls=" + peer});
  EXPECT_OK(add);
  std::smatch id;
  ASSERT_TRUE(
      std::regex_search(add.out, id, std::regex("Member +([0-9a-f]+) added")))
      << add.out;
  EXPECT_NE(add.out.find("ETCD_INITIAL_CLUSTER_STATE=\"existing\""),
            std::string::npos);
  EXPECT_NE(
      Run({"member", "list"}).out.find(", unstarted, , " + peer + ", , true"),
      std::string::npos);
  Out rm = Run({"member", "remove", id[1]});
  EXPECT_OK(rm);
  const std::string after = Run({"member", "list"}).out;
  EXPECT_EQ(std::count(after.begin(), after.end(), '\n'), 3) << after;
}

TEST_F(KpctlOnKplane, WatchSurvivesLeaderKill) {
  auto leader = cluster_->LeaderIndex();
  ASSERT_TRUE(leader.ok());
  // The watch talks to the leader first.
  std::string eps = cluster_->client_url(*leader).substr(7);
  for (int i = 0; i < 3; ++i) {
    if (i != *leader) eps += "," + cluster_->client_url(i).substr(7);
  }
  Capture cap;
  std::ostream wout(&cap);
  std::ostringstream werr;
  std::istringstream win;
  kpctl::StopSignal stop;
  int code = -1;
  std::thread w([&] {
    kpctl::StoreIo io{&win, &wout, &werr, &stop};
    code =
        kpctl::RunStore({"--endpoints=" + eps, "watch", "--prefix", "k/"}, io);
  });
  struct Joiner {
    kpctl::StopSignal* stop;
    std::thread* t;
    ~Joiner() {
      stop->Stop();
      if (t->joinable()) t->join();
    }
  } joiner{&stop, &w};
  std::vector<std::string> other;
  for (int i = 0; i < 3; ++i) {
    if (i != *leader) other.push_back(cluster_->client_url(i).substr(7));
  }
  const std::string writers = other[0] + "," + other[1];
  // Nothing but its output tells when the other thread's watch is
  // registered: write probes until one shows up.
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    ASSERT_EQ(Kpctl(writers, {"put", "k/0", "probe"}).code, 0);
    seen = cap.WaitFor("k/0\nprobe\n", milliseconds(200));
  }
  ASSERT_TRUE(seen);
  ASSERT_TRUE(cluster_->Kill(*leader).ok());
  for (int i = 1; i <= 20; ++i) {
    const std::string key = "k/" + std::to_string(i);
    // A put that fails during the election may or may not have been
    // applied (kpctl never resends it): look before trying again.
    for (int attempt = 0;; ++attempt) {
      ASSERT_LT(attempt, 10) << "cannot write " << key;
      Out p = Kpctl(writers, {"--command-timeout=10s", "put", key,
                              "v" + std::to_string(i)});
      if (p.code == 0) break;
      Out g = Kpctl(writers, {"--command-timeout=10s", "get", key});
      if (g.code == 0 && !g.out.empty()) break;
    }
  }
  ASSERT_TRUE(cap.WaitFor("k/20\nv20\n", seconds(30))) << cap.data();
  stop.Stop();
  w.join();
  EXPECT_EQ(code, 0) << werr.str();
  std::string got = cap.data();
  // Every key once, in order, after the probes.
  size_t pos = got.find("PUT\nk/1\nv1\n");
  ASSERT_NE(pos, std::string::npos) << got;
  std::string want;
  for (int i = 1; i <= 20; ++i) {
    want += "PUT\nk/" + std::to_string(i) + "\nv" + std::to_string(i) + "\n";
  }
  EXPECT_EQ(got.substr(pos), want);
}

TEST_F(KpctlOnKplane, SnapshotSaveStatusRestore) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(Run({"put", "s/" + std::to_string(i), "v"}).code, 0);
  }
  // A user, kept by the restore (auth stays disabled: no revisions used).
  auto post = [](const std::string& url, const std::string& path,
                 const std::string& body) {
    auto c = net::HttpClient::ForUrl(url);
    if (!c.ok()) return c.status().ToString();
    auto r = (*c)->Request("POST", path, {{"Content-Type", "application/json"}},
                           body);
    return r.ok() ? r->body : r.status().ToString();
  };
  EXPECT_NE(post(cluster_->client_url(0), "/v3/auth/user/add",
                 R"({"name":"alice","password":"pw"})")
                .find("header"),
            std::string::npos);
  ASSERT_EQ(Run({"put", "s/0", "again"}).code, 0);  // revision 12
  char tmpl[] = "/tmp/kpctl-snap-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string file = dir + "/snap.kp";
  Out saved = RunOne({"snapshot", "save", file});
  ASSERT_EQ(saved.code, 0) << saved.err;
  EXPECT_EQ(saved.out, "Snapshot saved at " + file + "\n");
  EXPECT_FALSE(std::filesystem::exists(file + ".part"));

  // status: the member's HashKV at revision 12, 10 keys.
  auto m = storage::Maintenance::Create(cluster_->client_url(0));
  ASSERT_TRUE(m.ok());
  auto hash = (*m)->Hash();
  ASSERT_TRUE(hash.ok());
  Out st = RunOne({"snapshot", "status", file, "-w", "json"});
  ASSERT_EQ(st.code, 0) << st.err;
  EXPECT_NE(st.out.find("{\"hash\":" + std::to_string(hash->hash()) +
                        ",\"revision\":12,\"totalKey\":10,"),
            std::string::npos)
      << st.out;

  // restore into a new single-member cluster and serve it.
  const int peer = *storage::PickFreePort(), client = *storage::PickFreePort();
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
  const std::string client_url = "http://127.0.0.1:" + std::to_string(client);
  const std::string data = dir + "/restored";
  Out rs = RunOne({"snapshot", "restore", file, "--data-dir", data, "--name",
                   "r1", "--initial-cluster", "r1=" + peer_url,
                   "--initial-advertise-peer-urls", peer_url});
  ASSERT_EQ(rs.code, 0) << rs.err;
  Out again = RunOne({"snapshot", "restore", file, "--data-dir", data});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.err, "Error: data-dir \"" + data + "\" exists\n");
  {
    Subprocess member(
        {storage::FindKplaneBinary(), "store", "--name", "r1", "--data-dir",
         data, "--listen-client-urls", client_url, "--listen-peer-urls",
         peer_url, "--initial-cluster", "r1=" + peer_url},
        {.log_path = dir + "/r1.log"});
    ASSERT_TRUE(member.Start().ok());
    const std::string ep = client_url.substr(7);
    Out got;
    for (int i = 0; i < 250; ++i) {
      got = Kpctl(ep, {"--command-timeout=1s", "get", "s/0"});
      if (got.code == 0) break;
      // (Waiting for another process to start serving.)
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
    EXPECT_EQ(got.out, "s/0\nagain\n") << got.err;
    EXPECT_EQ(Kpctl(ep, {"get", "s/", "--prefix", "--keys-only"}).out.size(),
              std::string("s/0\n\n").size() * 10);
    // History and revisions carry on; new writes are applied.
    EXPECT_EQ(Kpctl(ep, {"get", "s/0", "--rev", "2"}).out, "s/0\nv\n");
    EXPECT_EQ(Kpctl(ep, {"put", "new", "x"}).code, 0);
    Out j = Kpctl(ep, {"get", "new", "-w", "json"});
    EXPECT_NE(j.out.find("\"mod_revision\":13"), std::string::npos) << j.out;
    // kplane serves before it has published its client URLs (etcd does
    // not; README known difference 7): wait for them.
    const std::string want = ", started, r1, " + peer_url + ", " + client_url;
    Out ml;
    for (int i = 0; i < 100; ++i) {
      ml = Kpctl(ep, {"member", "list"});
      if (ml.out.find(want) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(ml.out.find(want), std::string::npos) << ml.out;
    std::string users = post(client_url, "/v3/auth/user/list", "{}");
    EXPECT_NE(users.find(R"("users":["alice"])"), std::string::npos) << users;
    member.Stop();
  }
  Out etcd_kind = RunOne({"snapshot", "restore", "/nonexistent"});
  EXPECT_EQ(etcd_kind.code, 1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace kplane::e2e
