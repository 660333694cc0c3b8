// `kpctl store` against Debian's etcdctl 3.4.23, command by command: each
// test starts two fresh, identical single-member etcd 3.4 instances, runs
// the same script with etcdctl on one and kpctl on the other, and compares
// stdout, stderr and exit codes after replacing what legitimately differs
// between two instances (ports, member/cluster/lease ids, timings).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include "base/mutex.h"
#include "base/subprocess.h"
#include "kpctl/store/go_format.h"
#include "kpctl/store/store_command.h"
#include "storage/client/local_cluster.h"
#include "storage/client/maintenance.h"

namespace kplane::kpctl {
namespace {

struct Result {
  std::string out, err;
  int code = -1;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// etcdctl's client library logs retries as JSON lines on stderr; they are
// not part of the command's output.
std::string DropClientLogs(const std::string& s) {
  std::istringstream in(s);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("{\"level\":", 0) == 0) continue;
    out += line + "\n";
  }
  if (!s.empty() && s.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

class Side {
 public:
  Side(bool kpctl, std::string tmp) : kpctl_(kpctl), tmp_(std::move(tmp)) {}

  void Start() {
    // Both sides advertise the same peer URL, so they get the same member
    // and cluster ids.
    auto c = storage::LocalCluster::Start(
        {.members = 1, .advertised_peer_urls = {"http://127.0.0.1:2380"}});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    auto m = storage::Maintenance::Create(cluster_->client_url(0));
    ASSERT_TRUE(m.ok());
    auto st = (*m)->Status();
    ASSERT_TRUE(st.ok()) << st.status();
    member_ = st->header().member_id();
    cluster_id_ = st->header().cluster_id();
    vars_["MEMBER"] = GoHexU(member_);
    vars_["SNAP"] = tmp_ + (kpctl_ ? "/kp.db" : "/etcd.db");
  }

  std::string endpoint() const {
    return cluster_->client_url(0).substr(std::string("http://").size());
  }

  Result Run(std::vector<std::string> args, const std::string& in = "") {
    for (auto& a : args) a = Subst(a);
    args.insert(args.begin(), "--endpoints=" + endpoint());
    Result r = kpctl_ ? RunKpctl(args, in) : RunEtcdctl(args, in);
    return r;
  }

  // Replaces {VAR} in a command argument.
  std::string Subst(std::string a) const {
    for (const auto& [k, v] : vars_) {
      std::string pat = "{" + k + "}";
      for (size_t p; (p = a.find(pat)) != std::string::npos;) {
        a.replace(p, pat.size(), v);
      }
    }
    return a;
  }

  void SetVar(const std::string& k, const std::string& v) { vars_[k] = v; }
  // Registers an id that shows up in outputs, to be normalized.
  void AddId(const std::string& name, uint64_t id) {
    ids_.push_back({name, id});
  }

  std::string Normalize(std::string s) const {
    std::vector<std::pair<std::string, std::string>> reps;
    auto add_id = [&](const std::string& name, uint64_t id) {
      reps.push_back({GoHexU(id, 16, '0'), "<" + name + ">"});
      reps.push_back({std::to_string(id), "<" + name + ">"});
      reps.push_back({GoHexU(id), "<" + name + ">"});
    };
    add_id("MEMBER", member_);
    add_id("CLUSTER", cluster_id_);
    for (const auto& [name, id] : ids_) add_id(name, id);
    reps.push_back({endpoint(), "<EP>"});
    reps.push_back({cluster_->data_dir(0), "<DATA>"});
    reps.push_back({vars_.at("SNAP"), "<SNAP>"});
    // Longest first, so a padded form wins over its digits.
    std::stable_sort(reps.begin(), reps.end(), [](auto& a, auto& b) {
      return a.first.size() > b.first.size();
    });
    for (const auto& [from, to] : reps) {
      if (from.empty()) continue;
      for (size_t p; (p = s.find(from)) != std::string::npos;) {
        s.replace(p, from.size(), to);
      }
    }
    // Two etcd instances report bbolt's in-use bytes differently depending
    // on when their background commit ran; not the client's business.
    s = std::regex_replace(s, std::regex(R"re("dbSizeInUse":\d+)re"),
                           "\"dbSizeInUse\":<N>");
    // Likewise the file size endpoint status prints (bbolt grows the two
    // servers' files at different moments).
    s = std::regex_replace(s, std::regex(R"(\b[0-9.]+ (B|kB|MB)\b)"), "<SIZE>");
    s = std::regex_replace(s, std::regex(R"re("dbSize":\d+)re"),
                           "\"dbSize\":<N>");
    // Leases granted without being captured.
    s = std::regex_replace(s, std::regex("lease [0-9a-f]{16} granted"),
                           "lease <L> granted");
    s = std::regex_replace(s, std::regex(R"re("ID":\d+,"TTL")re"),
                           "\"ID\":<L>,\"TTL\"");
    s = std::regex_replace(s, std::regex(R"(took = [0-9.]+(ns|µs|ms|s))"),
                           "took = <T>");
    s = std::regex_replace(s, std::regex(R"("took":"[^"]*")"),
                           "\"took\":\"<T>\"");
    s = std::regex_replace(s, std::regex(R"(\| +[0-9.]+(ns|µs|ms|s) \|)"),
                           "| <T> |");
    return s;
  }

  storage::LocalCluster* cluster() { return cluster_.get(); }
  uint64_t member() const { return member_; }

 private:
  Result RunKpctl(const std::vector<std::string>& args, const std::string& in) {
    std::istringstream is(in);
    std::ostringstream os, es;
    StoreIo io;
    io.in = &is;
    io.out = &os;
    io.err = &es;
    io.getenv = [](const char*) -> const char* { return nullptr; };
    Result r;
    r.code = RunStore(args, io);
    r.out = os.str();
    r.err = es.str();
    return r;
  }

  Result RunEtcdctl(const std::vector<std::string>& args,
                    const std::string& in) {
    const std::string inf = tmp_ + "/in", outf = tmp_ + "/out",
                      errf = tmp_ + "/err";
    std::ofstream(inf, std::ios::binary) << in;
    std::vector<std::string> argv = {
        "/bin/sh", "-c",
        "exec /usr/bin/etcdctl \"$@\" <\"$IN\" >\"$OUT\" 2>\"$ERR\"", "sh"};
    argv.insert(argv.end(), args.begin(), args.end());
    Subprocess p(argv, {.env = {"IN=" + inf, "OUT=" + outf, "ERR=" + errf,
                                "ETCDCTL_API=3"}});
    Result r;
    if (!p.Start().ok()) return r;
    r.code = p.Wait();
    r.out = Slurp(outf);
    r.err = DropClientLogs(Slurp(errf));
    return r;
  }

  bool kpctl_;
  std::string tmp_;
  std::unique_ptr<storage::LocalCluster> cluster_;
  uint64_t member_ = 0, cluster_id_ = 0;
  std::map<std::string, std::string> vars_;
  std::vector<std::pair<std::string, uint64_t>> ids_;
};

class EtcdctlCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kpctl-compat-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    etcd_ = std::make_unique<Side>(false, tmp_);
    kp_ = std::make_unique<Side>(true, tmp_);
    etcd_->Start();
    kp_->Start();
  }
  void TearDown() override {
    etcd_.reset();
    kp_.reset();
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }

  // Runs one command on both sides and expects the same result.
  std::pair<Result, Result> Same(const std::vector<std::string>& args,
                                 const std::string& in = "") {
    Result e = etcd_->Run(args, in);
    Result k = kp_->Run(args, in);
    std::string what;
    for (const auto& a : args) what += " " + a;
    EXPECT_EQ(kp_->Normalize(k.out), etcd_->Normalize(e.out))
        << "stdout of" << what;
    EXPECT_EQ(kp_->Normalize(k.err), etcd_->Normalize(e.err))
        << "stderr of" << what;
    EXPECT_EQ(k.code, e.code)
        << "exit code of" << what << "\netcdctl stderr: " << e.err
        << "\nkpctl stderr: " << k.err;
    return {e, k};
  }

  std::string tmp_;
  std::unique_ptr<Side> etcd_, kp_;
};

TEST_F(EtcdctlCompat, PutGetDel) {
  Same({"put", "foo", "v1"});
  Same({"put", "bar", "v2"});
  Same({"put", "foo", "v3"});
  Same({"put", "foo", "v4", "--prev-kv"});
  Same({"put", "foo", "v5", "--prev-kv", "-w", "json"});
  Same({"put", "stdin-key"}, "value from stdin\n");
  Same({"put", "x", "y", "--lease", "zz"});
  Same({"put"});
  for (const std::vector<std::string>& get :
       std::vector<std::vector<std::string>>{
           {"get", "foo"},
           {"get", "foo", "-w", "json"},
           {"get", "--prefix", ""},
           {"get", "--prefix", "", "-w", "json"},
           {"get", "--prefix", "", "--keys-only"},
           {"get", "--from-key", "b", "--limit", "1", "-w", "json"},
           {"get", "a", "z"},
           {"get", "foo", "--rev", "2"},
           {"get", "--prefix", "", "--sort-by=MODIFY", "--order=DESCEND"},
           {"get", "--prefix", "", "--sort-by=value", "-w", "json"},
           {"get", "--prefix", "", "--limit", "2", "--order", "descend"},
           {"get", "foo", "--print-value-only"},
           {"get", "foo", "--hex"},
           {"get", "foo", "--consistency", "s"},
           {"get", "nosuch"},
           {"get", "nosuch", "-w", "json"},
           {"get", "foo", "-w", "table"},
           {"get", "foo", "-w", "json", "--print-value-only"},
           {"get"},
           {"get", "a", "--prefix", "--from-key"},
           {"get", "a", "b", "--prefix"},
           {"get", "foo", "--consistency", "x"},
           {"get", "foo", "--order", "sideways"},
           {"get", "foo", "--sort-by", "size"},
           {"get", "foo", "-w", "xml"},
           {"get", "foo", "--rev", "100"},
       }) {
    Same(get);
  }
  Same({"del", "bar", "--prev-kv"});
  Same({"del", "nosuch"});
  Same({"del", "fo", "--prefix", "-w", "json"});
  Same({"del", "a", "--from-key", "--prev-kv"});
  Same({"del"});
  Same({"del", "a", "b", "c"});
}

TEST_F(EtcdctlCompat, TxnAndCompaction) {
  Same({"put", "foo", "v3"});
  Same({"put", "bar", "v2"});
  const std::string ok =
      "value(\"foo\") = \"v3\"\nmod(\"bar\") > \"0\"\n\n"
      "put a 1\nget foo\ndel nosuch\n\nput b 2\n\n";
  Same({"txn"}, ok);
  Same({"txn", "-w", "json"}, ok);
  const std::string fail =
      "value(\"foo\") = \"zz\"\n\nput a 1\n\nput b 2\nget b --prefix\n\n";
  Same({"txn"}, fail);
  Same({"txn", "-w", "json"}, fail);
  Same({"txn", "-i"}, "\n\n\n");
  Same({"txn"}, "\n\n\n");
  Same({"txn"}, "bogus\n\n\n\n");
  Same({"txn"}, "ver(\"foo\") > \"x\"\n\n\n\n");
  Same({"txn"}, "\nfoo bar\n\n\n");
  Same({"txn"}, "\nput a 1\n\nput b 2\n");
  Same({"txn", "extra"}, "\n\n\n");
  // (Single-quoted arguments are not compared: etcdctl 3.4 slices them
  // with the wrong length, keeping e.g. "s" of 'single quoted'.)
  Same({"txn"},
       "c(\"nosuch\") = \"0\"\nver(\"nosuch\") = \"0\"\n\n"
       "put \"quoted key\" \"a\\tb\"\n\n\n");
  Same({"get", "quoted key"});

  Same({"compaction", "3"});
  Same({"compaction", "3"});
  Same({"compaction", "100"});
  Same({"compaction", "x"});
  Same({"compaction", "4", "--physical"});
  Same({"get", "foo", "--rev", "2"});
  Same({"compaction"});
}

TEST_F(EtcdctlCompat, Leases) {
  for (Side* s : {etcd_.get(), kp_.get()}) {
    for (const char* var : {"L0", "L1"}) {
      Result r = s->Run({"lease", "grant", "100"});
      std::smatch m;
      ASSERT_TRUE(
          std::regex_search(r.out, m, std::regex("lease ([0-9a-f]+) granted")))
          << r.out << r.err;
      s->SetVar(var, m[1]);
      s->AddId(var, std::stoull(m[1], nullptr, 16));
    }
  }
  Same({"put", "lk", "lv", "--lease", "{L0}"});
  Same({"put", "lk2", "lv2", "--lease={L0}"});
  Same({"lease", "keep-alive", "--once", "{L0}"});
  Same({"lease", "keep-alive", "--once", "{L0}", "-w", "json"});
  Same({"lease", "list"});
  Same({"lease", "list", "-w", "json"});
  Same({"lease", "revoke", "{L1}"});
  Same({"lease", "revoke", "{L1}", "-w", "json"});
  Same({"lease", "timetolive", "{L1}"});
  Same({"lease", "timetolive", "{L1}", "-w", "json"});
  Same({"lease", "keep-alive", "--once", "{L1}"});
  Same({"lease", "keep-alive", "--once", "1234"});
  Same({"lease", "revoke", "zz"});
  Same({"lease", "grant"});
  Same({"lease", "grant", "x"});
  Same({"lease", "revoke", "{L0}"});
  Same({"get", "lk"});
  Same({"lease", "list", "-w", "json"});
  Same({"lease", "list"});
  Same({"lease", "grant", "1", "-w", "json"});  // raised to 2 s

  // timetolive counts down: compare the parts that do not move.
  Same({"lease", "grant", "100"});
  for (Side* s : {etcd_.get(), kp_.get()}) {
    Result r = s->Run({"lease", "grant", "300"});
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(r.out, m, std::regex("lease ([0-9a-f]+) granted")));
    s->SetVar("L2", m[1]);
    s->AddId("L2", std::stoull(m[1], nullptr, 16));
    s->Run({"put", "k3", "v", "--lease", "{L2}"});
  }
  auto [e, k] = std::pair{etcd_->Run({"lease", "timetolive", "{L2}", "--keys"}),
                          kp_->Run({"lease", "timetolive", "{L2}", "--keys"})};
  std::regex remaining(R"(remaining\(\d+s\))");
  EXPECT_EQ(std::regex_replace(kp_->Normalize(k.out), remaining, "R"),
            std::regex_replace(etcd_->Normalize(e.out), remaining, "R"));
  e = etcd_->Run({"lease", "timetolive", "{L2}", "--keys", "-w", "json"});
  k = kp_->Run({"lease", "timetolive", "{L2}", "--keys", "-w", "json"});
  std::regex ttl(R"("ttl":\d+)");
  EXPECT_EQ(std::regex_replace(kp_->Normalize(k.out), ttl, "T"),
            std::regex_replace(etcd_->Normalize(e.out), ttl, "T"));
}

TEST_F(EtcdctlCompat, MembersEndpointsMaintenance) {
  Same({"member", "list"});
  Same({"member", "list", "-w", "table"});
  Same({"member", "list", "-w", "json"});
  Same({"endpoint", "status"});
  Same({"endpoint", "status", "-w", "table"});
  Same({"endpoint", "status", "-w", "json"});
  Same({"endpoint", "status", "--cluster", "-w", "json"});
  Same({"endpoint", "health"});
  Same({"endpoint", "health", "-w", "json"});
  {
    // The TOOK column's width follows the measured time: compare with
    // padding and rules collapsed.
    Result e = etcd_->Run({"endpoint", "health", "-w", "table"});
    Result k = kp_->Run({"endpoint", "health", "-w", "table"});
    auto squash = [](Side* s, const std::string& t) {
      std::string n =
          std::regex_replace(s->Normalize(t), std::regex(" +"), " ");
      return std::regex_replace(n, std::regex("-+"), "-");
    };
    EXPECT_EQ(squash(kp_.get(), k.out), squash(etcd_.get(), e.out));
    EXPECT_EQ(k.code, e.code);
  }
  Same({"alarm", "list"});
  Same({"alarm", "list", "-w", "json"});
  Same({"alarm", "disarm", "-w", "json"});
  Same({"defrag"});
  Same({"move-leader", "{MEMBER}"});
  Same({"move-leader", "1234"});
  Same({"move-leader", "zz"});

  // A learner: its id is new on each side.
  for (Side* s : {etcd_.get(), kp_.get()}) {
    const std::string peer =
        "http://127.0.0.1:" + std::to_string(*storage::PickFreePort());
    s->SetVar("PEER", peer);
  }
  // Peer URLs differ between the sides: compare the shapes.
  Result e =
      etcd_->Run({"member", "add", "n2", "--learner", "--peer-urls={PEER}"});
  Result k =
      kp_->Run({"member", "add", "n2", "--learner", "--peer-urls={PEER}"});
  ASSERT_EQ(e.code, 0) << e.err;
  ASSERT_EQ(k.code, 0) << k.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(e.out, m, std::regex("Member +([0-9a-f]+) added")));
  etcd_->SetVar("NEW", m[1]);
  etcd_->AddId("NEW", std::stoull(m[1], nullptr, 16));
  ASSERT_TRUE(
      std::regex_search(k.out, m, std::regex("Member +([0-9a-f]+) added")));
  kp_->SetVar("NEW", m[1]);
  kp_->AddId("NEW", std::stoull(m[1], nullptr, 16));
  // The new member's id is random (its length, hence the padding and
  // column widths, and its place in the member order differ): compare with
  // blanks and dashes collapsed, lines and cluster entries sorted.
  std::regex peer_re(R"(http://127\.0\.0\.1:\d+)");
  auto shape = [&](Side* s, const std::string& t) {
    std::string n = std::regex_replace(s->Normalize(t), peer_re, "<URL>");
    n = std::regex_replace(n, std::regex(" +"), " ");
    n = std::regex_replace(n, std::regex("-+"), "-");
    std::smatch ic;
    if (std::regex_search(n, ic, std::regex("INITIAL_CLUSTER=\"([^\"]*)\""))) {
      std::vector<std::string> parts;
      std::stringstream ss(ic[1].str());
      for (std::string p; std::getline(ss, p, ',');) parts.push_back(p);
      std::sort(parts.begin(), parts.end());
      std::string joined;
      for (const auto& p : parts) joined += p + ",";
      n = std::string(ic.prefix()) + "INITIAL_CLUSTER=" + joined +
          std::string(ic.suffix());
    }
    // JSON member lists: the members' order follows their ids.
    {
      std::regex member(R"re(\{"ID":[^{}]*\})re");
      std::vector<std::string> ms;
      for (auto it = std::sregex_iterator(n.begin(), n.end(), member);
           it != std::sregex_iterator(); ++it) {
        ms.push_back(it->str());
      }
      if (ms.size() > 1) {
        std::vector<std::string> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        std::string rebuilt;
        size_t last = 0, k = 0;
        for (auto it = std::sregex_iterator(n.begin(), n.end(), member);
             it != std::sregex_iterator(); ++it, ++k) {
          rebuilt += n.substr(last, it->position() - last) + sorted[k];
          last = it->position() + it->length();
        }
        n = rebuilt + n.substr(last);
      }
    }
    std::vector<std::string> lines;
    std::stringstream ls(n);
    for (std::string l; std::getline(ls, l);) lines.push_back(l);
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  };
  EXPECT_EQ(shape(kp_.get(), k.out), shape(etcd_.get(), e.out));
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{
           {"member", "list", "-w", "table"},
           {"member", "list"},
           {"member", "list", "-w", "json"},
           {"member", "promote", "{NEW}"},
           {"member", "remove", "{NEW}"},
           {"member", "remove", "{NEW}", "-w", "json"}}) {
    e = etcd_->Run(cmd);
    k = kp_->Run(cmd);
    std::string what;
    for (const auto& a : cmd) what += " " + a;
    EXPECT_EQ(shape(kp_.get(), k.out), shape(etcd_.get(), e.out)) << what;
    EXPECT_EQ(shape(kp_.get(), k.err), shape(etcd_.get(), e.err)) << what;
    EXPECT_EQ(k.code, e.code) << what;
  }
  Same({"member", "remove", "1234"});
  Same({"member", "remove", "zz"});
  Same({"member", "add"});
  Same({"member", "add", "n3"});
  Same({"member", "add", "n3", "http://127.0.0.1:1"});
}

TEST_F(EtcdctlCompat, SnapshotSaveAndStatus) {
  for (int i = 0; i < 20; ++i) Same({"put", "k" + std::to_string(i), "v"});
  Same({"snapshot", "save", "{SNAP}"});
  // Both tools read the same file: etcd's db.
  for (const char* w : {"simple", "json", "table"}) {
    Result e = etcd_->Run({"snapshot", "status", "{SNAP}", "-w", w});
    Result k =
        kp_->Run({"snapshot", "status", etcd_->Subst("{SNAP}"), "-w", w});
    EXPECT_EQ(k.out, e.out) << w;
    EXPECT_EQ(k.code, e.code);
  }
  // kpctl's own copy describes the same store contents.
  Result own = kp_->Run({"snapshot", "status", "{SNAP}"});
  EXPECT_EQ(own.code, 0) << own.err;
  EXPECT_NE(own.out.find(", 21, "), std::string::npos) << own.out;
  Same({"snapshot", "status", "/nonexistent/file"});
  std::ofstream(tmp_ + "/junk.db") << "junk\n";
  Same({"snapshot", "status", tmp_ + "/junk.db"});
  Same({"snapshot", "save"});
}

TEST_F(EtcdctlCompat, SnapshotSaveNeedsOneEndpoint) {
  // Both sides get two endpoints.
  std::vector<std::string> args = {
      "--endpoints=" + etcd_->endpoint() + "," + kp_->endpoint(), "snapshot",
      "save", tmp_ + "/two.db"};
  Result k;
  {
    std::istringstream is;
    std::ostringstream os, es;
    StoreIo io{&is, &os, &es};
    k.code = RunStore(args, io);
    k.err = es.str();
  }
  EXPECT_EQ(k.code, 5);
  EXPECT_EQ(k.err,
            "Error: snapshot must be requested to one selected node, "
            "not multiple [" +
                etcd_->endpoint() + " " + kp_->endpoint() + "]\n");
}

TEST_F(EtcdctlCompat, NoSpaceAlarmListAndDisarm) {
  // Raise NOSPACE by hand (etcd accepts an ACTIVATE request), on both.
  for (Side* s : {etcd_.get(), kp_.get()}) {
    net::HttpClient c("127.0.0.1",
                      static_cast<uint16_t>(std::stoi(
                          s->endpoint().substr(s->endpoint().find(':') + 1))));
    auto r = c.Request("POST", "/v3/maintenance/alarm", {},
                       "{\"action\":\"ACTIVATE\",\"memberID\":\"" +
                           std::to_string(s->member()) +
                           "\",\"alarm\":\"NOSPACE\"}");
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 200) << r->body;
  }
  Same({"alarm", "list"});
  Same({"alarm", "list", "-w", "json"});
  // The two etcd servers' files grow at different moments around the alarm
  // (bbolt's background commit), so their DB SIZE may differ by a page or
  // two; the rest of each row must be the same.
  const std::regex size(R"(\b[0-9.]+ (B|kB|MB)\b)");
  for (std::vector<std::string> args :
       {std::vector<std::string>{"endpoint", "status"},
        std::vector<std::string>{"endpoint", "status", "-w", "table"}}) {
    Result e = etcd_->Run(args);
    Result k = kp_->Run(args);
    EXPECT_EQ(k.code, e.code);
    EXPECT_EQ(std::regex_replace(kp_->Normalize(k.out), size, "<SIZE>"),
              std::regex_replace(etcd_->Normalize(e.out), size, "<SIZE>"))
        << args.back();
  }
  Same({"put", "a", "b"});
  Same({"alarm", "disarm"});
  Same({"alarm", "list"});
  Same({"put", "a", "b"});
}

// Output of a running watch, awaited as it arrives.
class Capture : public std::streambuf {
 public:
  bool WaitFor(const std::string& needle, Duration timeout) {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), timeout, [&]() REQUIRES(mu_) {
      return data_.find(needle) != std::string::npos;
    });
  }
  // Waits until a whole line holding `needle` has arrived and returns the
  // offset just past that line's newline, or npos on timeout. Output arrives
  // in pieces of any size, so seeing the needle does not mean its line ended.
  size_t WaitForLine(const std::string& needle, Duration timeout) {
    MutexLock l(&mu_);
    size_t end = std::string::npos;
    cv_.wait_for(l.native(), timeout, [&]() REQUIRES(mu_) {
      size_t at = data_.find(needle);
      if (at == std::string::npos) return false;
      size_t nl = data_.find('\n', at);
      if (nl == std::string::npos) return false;
      end = nl + 1;
      return true;
    });
    return end;
  }
  std::string data() {
    MutexLock l(&mu_);
    return data_;
  }
  void Append(std::string_view s) {
    MutexLock l(&mu_);
    data_.append(s);
    cv_.notify_all();
  }

 protected:
  int overflow(int c) override {
    if (c != EOF) {
      char ch = static_cast<char>(c);
      Append(std::string_view(&ch, 1));
    }
    return c;
  }
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    Append(std::string_view(p, static_cast<size_t>(n)));
    return n;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::string data_ GUARDED_BY(mu_);
};

TEST_F(EtcdctlCompat, WatchOutputAndCancel) {
  Same({"put", "w0", "x"});
  // etcdctl watch runs as a process writing into a FIFO that a thread
  // reads; kpctl watch runs in a thread writing into a Capture.
  const std::string fifo = tmp_ + "/watch.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Capture ecap, kcap;
  Subprocess ew(
      {"/bin/sh", "-c",
       "exec /usr/bin/etcdctl --endpoints=" + etcd_->endpoint() +
           " watch --prefix w --prev-kv -w json >" + fifo + " 2>/dev/null"},
      {.env = {"ETCDCTL_API=3"}});
  ASSERT_TRUE(ew.Start().ok());
  std::thread reader([&] {
    int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) {
      ecap.Append(std::string_view(buf, static_cast<size_t>(n)));
    }
    ::close(fd);
  });
  std::ostream kout(&kcap);
  std::ostringstream kerr;
  std::istringstream kin;
  StopSignal stop;
  int kcode = -1;
  std::thread kw([&] {
    StoreIo io{&kin, &kout, &kerr, &stop};
    kcode = RunStore({"--endpoints=" + kp_->endpoint(), "watch", "--prefix",
                      "w", "--prev-kv", "-w", "json"},
                     io);
  });
  // Whatever happens below, end both watches before leaving the test.
  struct Cleanup {
    std::function<void()> fn;
    ~Cleanup() { fn(); }
  } cleanup{[&] {
    stop.Stop();
    if (kw.joinable()) kw.join();
    if (ew.running()) {
      (void)ew.Signal(SIGKILL);
      ew.Wait();
    }
    if (reader.joinable()) reader.join();
  }};
  // Nothing tells when a watch process has registered its watch but its
  // output: write probes until one shows up.
  for (auto [side, cap] :
       {std::pair{etcd_.get(), &ecap}, std::pair{kp_.get(), &kcap}}) {
    bool seen = false;
    for (int i = 0; i < 100 && !seen; ++i) {
      side->Run({"put", "wprobe", "p"});
      seen = cap->WaitFor("d3Byb2Jl", milliseconds(200));
    }
    ASSERT_TRUE(seen) << "watch never started";
  }
  // Let every probe's event arrive, then mark where the script begins: just
  // past the line that carries the mark's event.
  size_t eskip = 0, kskip = 0;
  for (auto [side, cap, skip] : {std::tuple{etcd_.get(), &ecap, &eskip},
                                 std::tuple{kp_.get(), &kcap, &kskip}}) {
    side->Run({"put", "wmark", "m"});
    *skip = cap->WaitForLine("d21hcms=", seconds(20));
    ASSERT_NE(*skip, std::string::npos);
  }
  for (Side* s : {etcd_.get(), kp_.get()}) {
    s->Run({"put", "w1", "a"});
    s->Run({"put", "w1", "b"});
    s->Run({"del", "w1"});
    s->Run({"txn"}, "\nput w2 x\nput w3 y\n\n\n");
  }
  ASSERT_NE(ecap.WaitForLine("dzM=", seconds(20)), std::string::npos);
  ASSERT_NE(kcap.WaitForLine("dzM=", seconds(20)), std::string::npos);
  cleanup.fn();
  // Revisions differ by the number of probes: compare with them masked.
  std::regex revs(R"re("(revision|create_revision|mod_revision)":\d+)re");
  std::string e = std::regex_replace(
      etcd_->Normalize(ecap.data().substr(eskip)), revs, "R");
  std::string k =
      std::regex_replace(kp_->Normalize(kcap.data().substr(kskip)), revs, "R");
  EXPECT_EQ(k, e);
  EXPECT_NE(k.find("\"type\":1"), std::string::npos) << k;
  EXPECT_EQ(kcode, 0);

  // A watch from a compacted revision: both cancel and exit 5.
  Same({"compaction", "5"});
  Same({"watch", "w", "--rev", "2"});
  Same({"watch"});
  Same({"watch", "a", "b", "--prefix"});
}

}  // namespace
}  // namespace kplane::kpctl
