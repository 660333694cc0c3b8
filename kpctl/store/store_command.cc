#include "kpctl/store/store_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "base/flags.h"
#include "base/strings.h"
#include "kpctl/store/go_format.h"
#include "kpctl/store/kv_requests.h"
#include "kpctl/store/printer.h"
#include "kpctl/store/snapshot_file.h"
#include "storage/client/lease_keepalive.h"
#include "storage/client/maintenance.h"
#include "storage/client/remote_kv.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::kpctl {

void StopSignal::Stop() {
  std::function<void()> fn;
  {
    MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    fn = fn_;
  }
  if (fn) fn();
}

bool StopSignal::stopped() const {
  MutexLock l(&mu_);
  return stopped_;
}

void StopSignal::OnStop(std::function<void()> fn) {
  bool run_now;
  {
    MutexLock l(&mu_);
    fn_ = fn;
    run_now = stopped_ && fn_;
  }
  if (run_now) fn();
}

namespace {

using storage::CallKind;
using storage::Maintenance;
using storage::RemoteKV;

struct GlobalFlags {
  std::vector<std::string> endpoints = {"127.0.0.1:2379"};
  Duration dial_timeout = seconds(2);
  Duration command_timeout = seconds(5);
  std::string write_out = "simple";
  bool hex = false;
  // Accepted for etcdctl compatibility; no effect.
  bool debug = false;
  bool insecure_transport = true;
  // etcdctl's TLS flags (ETCDCTL_CACERT, ...): any of the three, or
  // --insecure-transport=false, makes bare host:port endpoints speak TLS.
  std::string cacert;
  std::string cert;
  std::string key;
  bool insecure_skip_tls_verify = false;
  Duration keepalive_time = seconds(2);
  Duration keepalive_timeout = seconds(6);
};

// Global flags that take a value (to find the command words before the
// command's own flags are known).
bool GlobalTakesValue(const std::string& a) {
  static const char* kValued[] = {"--endpoints",
                                  "--dial-timeout",
                                  "--command-timeout",
                                  "--write-out",
                                  "-w",
                                  "--keepalive-time",
                                  "--keepalive-timeout",
                                  "--cacert",
                                  "--cert",
                                  "--key"};
  for (const char* v : kValued) {
    if (a == v) return true;
  }
  return false;
}

class Ctx {
 public:
  explicit Ctx(const StoreIo& io) : io(io), out(*io.out), err(*io.err) {}

  const StoreIo& io;
  std::ostream& out;
  std::ostream& err;
  GlobalFlags g;
  std::unique_ptr<Printer> printer;
  // Built by Parse from the TLS flags; null: plain HTTP for bare endpoints.
  std::shared_ptr<const net::TlsContext> tls;

  int Fail(int code, const std::string& msg) {
    out.flush();
    err << "Error: " << msg << "\n";
    err.flush();
    return code;
  }
  int Fail(const CommandError& e) { return Fail(e.exit_code, e.message); }
  int Unsupported() {
    return Fail(kExitBadFeature, std::string(printer->name()) +
                                     " not supported as output format");
  }

  const char* Env(const char* name) const {
    return io.getenv ? io.getenv(name) : std::getenv(name);
  }

  // Adds the global flags (defaults from ETCDCTL_*), parses `args`, and
  // prepares the printer. Returns an exit code to stop with, or -1.
  int Parse(FlagSet* fs, const std::vector<std::string>& args,
            std::vector<std::string>* positional, const std::string& usage,
            bool value_only = false) {
    if (const char* e = Env("ETCDCTL_ENDPOINTS"); e && *e) {
      g.endpoints = StrSplit(e, ',');
    }
    if (const char* e = Env("ETCDCTL_WRITE_OUT"); e && *e) g.write_out = e;
    if (const char* e = Env("ETCDCTL_HEX"); e && *e) {
      g.hex = ParseBool(e).value_or(false);
    }
    for (auto [name, v] : {std::pair{"ETCDCTL_CACERT", &g.cacert},
                           std::pair{"ETCDCTL_CERT", &g.cert},
                           std::pair{"ETCDCTL_KEY", &g.key}}) {
      if (const char* e = Env(name); e && *e) *v = e;
    }
    for (auto [name, b] :
         {std::pair{"ETCDCTL_INSECURE_TRANSPORT", &g.insecure_transport},
          std::pair{"ETCDCTL_INSECURE_SKIP_TLS_VERIFY",
                    &g.insecure_skip_tls_verify}}) {
      if (const char* e = Env(name); e && *e) {
        if (auto v = ParseBool(e)) *b = *v;
      }
    }
    for (auto [name, d] :
         {std::pair{"ETCDCTL_DIAL_TIMEOUT", &g.dial_timeout},
          std::pair{"ETCDCTL_COMMAND_TIMEOUT", &g.command_timeout}}) {
      if (const char* e = Env(name); e && *e) {
        if (auto ns = ParseGoDuration(e)) *d = nanoseconds(*ns);
      }
    }
    fs->StringList("endpoints", &g.endpoints, "gRPC endpoints");
    fs->Duration("dial-timeout", &g.dial_timeout,
                 "dial timeout for client connections");
    fs->Duration("command-timeout", &g.command_timeout,
                 "timeout for short running command (excluding dial timeout)");
    fs->String("write-out", &g.write_out,
               "set the output format (json, simple, table)", 'w');
    fs->Bool("hex", &g.hex, "print byte strings as hex encoded strings");
    fs->Bool("debug", &g.debug, "accepted for etcdctl compatibility");
    fs->Bool("insecure-transport", &g.insecure_transport,
             "disable transport security for client connections");
    fs->Bool("insecure-skip-tls-verify", &g.insecure_skip_tls_verify,
             "skip server certificate verification (CAUTION: this option "
             "should be enabled only for testing purposes)");
    fs->String("cert", &g.cert,
               "identify secure client using this TLS certificate file");
    fs->String("key", &g.key, "identify secure client using this TLS key file");
    fs->String("cacert", &g.cacert,
               "verify certificates of TLS-enabled secure servers using this "
               "CA bundle");
    fs->Duration("keepalive-time", &g.keepalive_time,
                 "accepted for etcdctl compatibility");
    fs->Duration("keepalive-timeout", &g.keepalive_timeout,
                 "accepted for etcdctl compatibility");
    Status s = fs->Parse(args);
    if (!s.ok()) return Fail(kExitError, s.message());
    if (fs->help_requested()) {
      out << "Usage: kpctl store " << usage << "\n\n" << fs->Usage();
      return kExitSuccess;
    }
    // etcdctl's newClientCfg: TLS when any TLS file is given or
    // --insecure-transport=false; https:// endpoints speak TLS regardless.
    storage::StoreClientTlsFiles files{
        .ca_file = g.cacert,
        .cert_file = g.cert,
        .key_file = g.key,
        .insecure_skip_verify = g.insecure_skip_tls_verify};
    if (!files.empty() || !g.insecure_transport) {
      auto t = storage::NewStoreClientTls(files);
      if (!t.ok()) return Fail(kExitBadArgs, t.status().message());
      tls = *t;
    }
    *positional = fs->args();
    printer = NewPrinter(g.write_out, g.hex, value_only, io.out, io.err);
    if (!printer) return Fail(kExitBadFeature, "unsupported output format");
    return -1;
  }

  StatusOr<std::unique_ptr<RemoteKV>> NewKV(
      const std::vector<std::string>& endpoints) const {
    storage::RemoteKVOptions o;
    o.endpoints = endpoints;
    o.dial_timeout = g.dial_timeout;
    o.request_timeout = g.command_timeout;
    o.call_timeout = g.command_timeout;
    o.tls = tls;
    return RemoteKV::Create(o);
  }

  // The cluster client, created on first use. Exits 1 on bad endpoints.
  RemoteKV* kv(int* code) {
    if (!kv_) {
      auto k = NewKV(g.endpoints);
      if (!k.ok()) {
        *code = Fail(kExitError, k.status().message());
        return nullptr;
      }
      kv_ = std::move(*k);
    }
    return kv_.get();
  }

  StatusOr<std::unique_ptr<Maintenance>> Member(const std::string& ep) const {
    storage::MaintenanceOptions mo;
    mo.dial_timeout = g.dial_timeout;
    mo.request_timeout = g.command_timeout;
    mo.tls = tls;
    return Maintenance::Create(ep, mo);
  }

 private:
  std::unique_ptr<RemoteKV> kv_;
};

std::string GoStringSlice(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += " ";
    s += v[i];
  }
  return s + "]";
}

// --- KV commands -------------------------------------------------------------

int CmdGet(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store get", "Gets the key or a range of keys");
  GetFlags f;
  AddGetFlags(&fs, &f);
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "get [options] <key> [range_end]",
                      f.print_value_only);
      r >= 0) {
    return r;
  }
  etcdserverpb::RangeRequest req;
  if (auto e = BuildRange(pos, f, &req)) return c.Fail(*e);
  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;
  auto resp = kv->Range(req);
  if (!resp.ok()) return c.Fail(kExitError, resp.status().message());
  if (f.print_value_only) {
    if (std::string(c.printer->name()) != "simple") {
      return c.Fail(kExitBadArgs,
                    "print-value-only is only for `--write-out=simple`");
    }
    c.printer = NewPrinter("simple", c.g.hex, true, c.io.out, c.io.err);
  }
  if (!c.printer->Get(*resp)) return c.Unsupported();
  return kExitSuccess;
}

int CmdPut(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store put", "Puts the given key into the store");
  PutFlags f;
  AddPutFlags(&fs, &f);
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "put [options] <key> <value>"); r >= 0) {
    return r;
  }
  etcdserverpb::PutRequest req;
  if (auto e = BuildPut(pos, f, c.io.in, &req)) return c.Fail(*e);
  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;
  auto resp = kv->Put(req);
  if (!resp.ok()) return c.Fail(kExitError, resp.status().message());
  if (!c.printer->Put(*resp)) return c.Unsupported();
  return kExitSuccess;
}

int CmdDel(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store del",
             "Removes the specified key or range of keys [key, range_end)");
  DelFlags f;
  AddDelFlags(&fs, &f);
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "del [options] <key> [range_end]");
      r >= 0) {
    return r;
  }
  etcdserverpb::DeleteRangeRequest req;
  if (auto e = BuildDel(pos, f, &req)) return c.Fail(*e);
  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;
  auto resp = kv->DeleteRange(req);
  if (!resp.ok()) return c.Fail(kExitError, resp.status().message());
  if (!c.printer->Del(*resp)) return c.Unsupported();
  return kExitSuccess;
}

int CmdTxn(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store txn",
             "Txn processes all the requests in one transaction");
  bool interactive = false;
  fs.Bool("interactive", &interactive, "Input transaction in interactive mode",
          'i');
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "txn [options]"); r >= 0) return r;
  if (!pos.empty()) {
    return c.Fail(kExitBadArgs, "txn command does not accept argument");
  }
  etcdserverpb::TxnRequest req;
  if (auto e = ReadTxn(*c.io.in, interactive ? &c.out : nullptr, &req)) {
    return c.Fail(*e);
  }
  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;
  auto resp = kv->Txn(req);
  if (!resp.ok()) return c.Fail(kExitError, resp.status().message());
  if (!c.printer->Txn(*resp)) return c.Unsupported();
  return kExitSuccess;
}

int CmdCompaction(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store compaction", "Compacts the event history in etcd");
  bool physical = false;
  fs.Bool("physical", &physical,
          "'true' to wait for compaction to physically remove all old "
          "revisions");
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "compaction [options] <revision>");
      r >= 0) {
    return r;
  }
  if (pos.size() != 1) {
    return c.Fail(kExitBadArgs, "compaction command needs 1 argument");
  }
  std::string perr;
  auto rev = GoParseInt(pos[0], 10, &perr);
  if (!rev) return c.Fail(kExitError, perr);
  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;
  etcdserverpb::CompactionRequest req;
  req.set_revision(*rev);
  req.set_physical(physical);
  auto resp = kv->Compact(req);
  if (!resp.ok()) return c.Fail(kExitError, resp.status().message());
  c.out << "compacted revision " << *rev << "\n";
  return kExitSuccess;
}

// --- watch -------------------------------------------------------------------

int CmdWatch(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store watch", "Watches events stream on keys or prefixes");
  bool prefix = false, prev_kv = false, progress_notify = false,
       interactive = false;
  int64_t rev = 0;
  fs.Bool("prefix", &prefix, "Watch on a prefix if prefix is set");
  fs.Int64("rev", &rev, "Revision to start watching");
  fs.Bool("prev-kv", &prev_kv,
          "get the previous key-value pair before the event happens");
  fs.Bool("progress-notify", &progress_notify,
          "get periodic watch progress notification from server");
  fs.Bool("interactive", &interactive, "Interactive mode (not supported)", 'i');
  for (const std::string& a : args) {
    if (a == "--") {
      return c.Fail(kExitBadArgs,
                    "running a command for each event (watch ... -- <cmd>) "
                    "is not supported by kpctl");
    }
  }
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos,
                      "watch [options] [key or prefix] [range_end]");
      r >= 0) {
    return r;
  }
  if (interactive) {
    return c.Fail(kExitBadArgs, "interactive watch is not supported by kpctl");
  }
  if (pos.empty() || pos.size() > 2) {
    return c.Fail(kExitBadArgs, "bad number of arguments");
  }
  etcdserverpb::WatchCreateRequest req;
  std::string key = pos[0];
  if (pos.size() == 2) {
    if (prefix) {
      return c.Fail(kExitBadArgs,
                    "`range_end` and `--prefix` are mutually exclusive");
    }
    req.set_range_end(pos[1]);
  }
  if (prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req.set_range_end(std::string(1, '\0'));
    } else {
      req.set_range_end(PrefixRangeEnd(key));
    }
  }
  req.set_key(key);
  req.set_start_revision(rev);
  req.set_prev_kv(prev_kv);
  req.set_progress_notify(progress_notify);

  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;

  Mutex mu;
  std::condition_variable cv;
  bool canceled = false, unsupported = false, stopped = false;
  auto callback = [&](const etcdserverpb::WatchResponse& r) {
    MutexLock l(&mu);
    if (canceled || unsupported) return;
    // clientv3 hands out `created` only on request; etcdctl never asks.
    if (r.created() && !r.canceled()) return;
    if (r.canceled()) {
      std::string why =
          r.compact_revision() != 0
              ? "etcdserver: mvcc: required revision has been compacted"
          : !r.cancel_reason().empty()
              ? r.cancel_reason()
              : "etcdserver: mvcc: required revision is a future revision";
      c.err << "watch was canceled (" << why << ")\n";
      c.err.flush();
    }
    if (r.events_size() == 0 && !r.canceled() && !r.created() &&
        r.compact_revision() == 0 && r.header().revision() != 0) {
      c.out << "progress notify: " << r.header().revision() << "\n";
    }
    if (!c.printer->Watch(r)) unsupported = true;
    c.out.flush();
    if (r.canceled()) canceled = true;
    cv.notify_all();
  };
  auto w = kv->StartWatch(req, callback);
  if (!w.ok()) return c.Fail(kExitBadArgs, w.status().message());
  if (c.io.stop) {
    c.io.stop->OnStop([&] {
      MutexLock l(&mu);
      stopped = true;
      cv.notify_all();
    });
  }
  {
    MutexLock l(&mu);
    cv.wait(l.native(), [&] { return canceled || unsupported || stopped; });
  }
  if (c.io.stop) c.io.stop->OnStop(nullptr);
  w->reset();
  if (unsupported) return c.Unsupported();
  if (stopped) return kExitSuccess;
  return c.Fail(kExitInterrupted, "watch is canceled by the server");
}

// --- endpoints and maintenance -----------------------------------------------

// The endpoints a per-member command addresses: --endpoints, or with
// --cluster every member's client URLs.
bool EndpointsFor(Ctx& c, bool cluster, std::vector<std::string>* eps,
                  int* code) {
  if (!cluster) {
    *eps = c.g.endpoints;
    return true;
  }
  RemoteKV* kv = c.kv(code);
  if (!kv) return false;
  etcdserverpb::MemberListResponse ml;
  Status s = kv->Call("/v3/cluster/member/list",
                      etcdserverpb::MemberListRequest(), &ml, CallKind::kRead);
  if (!s.ok()) {
    *code = c.Fail(kExitError,
                   "failed to fetch endpoints from etcd cluster member list: " +
                       s.message());
    return false;
  }
  eps->clear();
  for (const auto& m : ml.members()) {
    for (const auto& u : m.clienturls()) eps->push_back(u);
  }
  return true;
}

int CmdEndpoint(Ctx& c, const std::string& sub,
                const std::vector<std::string>& args) {
  FlagSet fs("kpctl store endpoint " + sub, "Endpoint related commands");
  bool cluster = false;
  fs.Bool("cluster", &cluster,
          "use all endpoints from the cluster member list");
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "endpoint " + sub); r >= 0) return r;
  std::vector<std::string> eps;
  int code = 0;
  if (!EndpointsFor(c, cluster, &eps, &code)) return code;

  if (sub == "health") {
    std::vector<EndpointHealth> hs(eps.size());
    std::vector<std::thread> ts;
    for (size_t i = 0; i < eps.size(); ++i) {
      ts.emplace_back([&, i] {
        EndpointHealth& h = hs[i];
        h.endpoint = eps[i];
        auto kv = c.NewKV({eps[i]});
        if (!kv.ok()) {
          h.error = kv.status().message();
          return;
        }
        TimePoint start = Clock::Real()->Now();
        etcdserverpb::RangeRequest req;
        req.set_key("health");
        auto r = (*kv)->Range(req);
        h.took = GoDuration(Clock::Real()->Now() - start);
        if (r.ok() || r.status().code() == StatusCode::kPermissionDenied) {
          h.health = true;
        } else {
          h.error = r.status().message();
        }
      });
    }
    for (auto& t : ts) t.join();
    bool failed = false;
    for (const auto& h : hs) failed = failed || !h.error.empty();
    if (!c.printer->EndpointHealthList(hs)) return c.Unsupported();
    if (failed) return c.Fail(kExitError, "unhealthy cluster");
    return kExitSuccess;
  }
  if (sub == "status") {
    std::vector<EndpointStatus> list;
    bool failed = false;
    for (const std::string& ep : eps) {
      StatusOr<etcdserverpb::StatusResponse> st = UnavailableError("");
      auto m = c.Member(ep);
      st = m.ok() ? (*m)->Status() : m.status();
      if (!st.ok()) {
        failed = true;
        c.err << "Failed to get the status of endpoint " << ep << " ("
              << st.status().message() << ")\n";
        continue;
      }
      list.push_back({ep, *st});
    }
    if (!c.printer->EndpointStatusList(list)) return c.Unsupported();
    return failed ? kExitError : kExitSuccess;
  }
  return c.Fail(kExitError,
                "unknown command \"" + sub + "\" for \"kpctl store endpoint\"");
}

int CmdDefrag(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store defrag",
             "Defragments the storage of the members with given endpoints");
  bool cluster = false;
  fs.Bool("cluster", &cluster,
          "use all endpoints from the cluster member list");
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "defrag"); r >= 0) return r;
  std::vector<std::string> eps;
  int code = 0;
  if (!EndpointsFor(c, cluster, &eps, &code)) return code;
  int failures = 0;
  for (const std::string& ep : eps) {
    auto m = c.Member(ep);
    Status s = m.ok() ? (*m)->Defragment().status() : m.status();
    if (!s.ok()) {
      c.err << "Failed to defragment etcd member[" << ep << "] (" << s.message()
            << ")\n";
      ++failures;
    } else {
      c.out << "Finished defragmenting etcd member[" << ep << "]\n";
    }
  }
  return failures ? kExitError : kExitSuccess;
}

int CmdMoveLeader(Ctx& c, const std::vector<std::string>& args) {
  FlagSet fs("kpctl store move-leader",
             "Transfers leadership to another cluster member.");
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "move-leader <transferee-member-id>");
      r >= 0) {
    return r;
  }
  if (pos.size() != 1) {
    return c.Fail(kExitBadArgs, "move-leader command needs 1 argument");
  }
  std::string perr;
  auto target = GoParseUint(pos[0], 16, &perr);
  if (!target) return c.Fail(kExitBadArgs, perr);
  std::unique_ptr<Maintenance> leader;
  uint64_t leader_id = 0;
  for (const std::string& ep : c.g.endpoints) {
    auto m = c.Member(ep);
    if (!m.ok()) return c.Fail(kExitError, m.status().message());
    auto st = (*m)->Status();
    if (!st.ok()) return c.Fail(kExitError, st.status().message());
    if (st->header().member_id() == st->leader()) {
      leader = std::move(*m);
      leader_id = st->leader();
      break;
    }
  }
  if (!leader) {
    return c.Fail(kExitBadArgs, "no leader endpoint given at " +
                                    GoStringSlice(c.g.endpoints));
  }
  auto resp = leader->MoveLeader(*target);
  if (!resp.ok()) return c.Fail(kExitError, resp.status().message());
  if (!c.printer->MoveLeader(leader_id, *target, *resp)) {
    return c.Unsupported();
  }
  return kExitSuccess;
}

int CmdAlarm(Ctx& c, const std::string& sub,
             const std::vector<std::string>& args) {
  FlagSet fs("kpctl store alarm " + sub, "Alarm related commands");
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "alarm " + sub); r >= 0) return r;
  if (!pos.empty()) {
    return c.Fail(kExitBadArgs,
                  "alarm " + sub + " command accepts no arguments");
  }
  if (sub != "list" && sub != "disarm") {
    return c.Fail(kExitError,
                  "unknown command \"" + sub + "\" for \"kpctl store alarm\"");
  }
  int code = 0;
  RemoteKV* kv = c.kv(&code);
  if (!kv) return code;
  etcdserverpb::AlarmRequest list_req;
  list_req.set_action(etcdserverpb::AlarmRequest::GET);
  etcdserverpb::AlarmResponse listed;
  Status s =
      kv->Call("/v3/maintenance/alarm", list_req, &listed, CallKind::kRead);
  if (!s.ok()) return c.Fail(kExitError, s.message());
  if (sub == "list") {
    if (!c.printer->Alarm(listed)) return c.Unsupported();
    return kExitSuccess;
  }
  // clientv3's AlarmDisarm of "everything": disarm each listed alarm.
  etcdserverpb::AlarmResponse result;
  for (const auto& a : listed.alarms()) {
    etcdserverpb::AlarmRequest d;
    d.set_action(etcdserverpb::AlarmRequest::DEACTIVATE);
    d.set_memberid(a.memberid());
    d.set_alarm(a.alarm());
    etcdserverpb::AlarmResponse dr;
    s = kv->Call("/v3/maintenance/alarm", d, &dr, CallKind::kWrite);
    if (!s.ok()) return c.Fail(kExitError, s.message());
    for (const auto& x : dr.alarms()) *result.add_alarms() = x;
  }
  if (!c.printer->Alarm(result)) return c.Unsupported();
  return kExitSuccess;
}

// --- member ------------------------------------------------------------------

int CmdMember(Ctx& c, const std::string& sub,
              const std::vector<std::string>& args) {
  FlagSet fs("kpctl store member " + sub, "Membership related commands");
  std::string peer_urls;
  bool learner = false;
  if (sub == "add" || sub == "update") {
    fs.String("peer-urls", &peer_urls,
              "comma separated peer URLs for the new member.");
  }
  if (sub == "add") {
    fs.Bool("learner", &learner, "indicates if the new member is raft learner");
  }
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "member " + sub); r >= 0) return r;
  int code = 0;

  if (sub == "list") {
    RemoteKV* kv = c.kv(&code);
    if (!kv) return code;
    etcdserverpb::MemberListResponse resp;
    Status s =
        kv->Call("/v3/cluster/member/list", etcdserverpb::MemberListRequest(),
                 &resp, CallKind::kRead);
    if (!s.ok()) return c.Fail(kExitError, s.message());
    if (!c.printer->MemberList(resp)) return c.Unsupported();
    return kExitSuccess;
  }
  if (sub == "add") {
    if (pos.empty()) return c.Fail(kExitBadArgs, "member name not provided");
    if (pos.size() > 1) {
      std::string ev = "too many arguments";
      for (const auto& s : pos) {
        if (ToLower(s).rfind("http", 0) == 0) {
          ev += ", did you mean --peer-urls=" + s;
        }
      }
      return c.Fail(kExitBadArgs, ev);
    }
    if (peer_urls.empty()) {
      return c.Fail(kExitBadArgs, "member peer urls not provided");
    }
    RemoteKV* kv = c.kv(&code);
    if (!kv) return code;
    etcdserverpb::MemberAddRequest req;
    for (const auto& u : StrSplit(peer_urls, ',')) req.add_peerurls(u);
    req.set_islearner(learner);
    etcdserverpb::MemberAddResponse resp;
    Status s = kv->Call("/v3/cluster/member/add", req, &resp, CallKind::kWrite);
    if (!s.ok()) return c.Fail(kExitError, s.message());
    if (!c.printer->MemberAdd(resp)) return c.Unsupported();
    if (std::string(c.printer->name()) == "simple") {
      std::vector<std::string> conf;
      for (const auto& m : resp.members()) {
        for (const auto& u : m.peerurls()) {
          std::string n = m.id() == resp.member().id() ? pos[0] : m.name();
          conf.push_back(n + "=" + u);
        }
      }
      c.out << "\n"
            << "ETCD_NAME=" << GoQuote(pos[0]) << "\n"
            << "ETCD_INITIAL_CLUSTER=" << GoQuote(StrJoin(conf, ",")) << "\n"
            << "ETCD_INITIAL_ADVERTISE_PEER_URLS=" << GoQuote(peer_urls) << "\n"
            << "ETCD_INITIAL_CLUSTER_STATE=\"existing\"\n";
    }
    return kExitSuccess;
  }
  if (sub == "remove" || sub == "promote" || sub == "update") {
    if (pos.size() != 1) {
      return c.Fail(kExitBadArgs, "member ID is not provided");
    }
    std::string perr;
    auto id = GoParseUint(pos[0], 16, &perr);
    if (!id) {
      return c.Fail(kExitBadArgs,
                    "bad member ID arg (" + perr + "), expecting ID in Hex");
    }
    if (sub == "update" && peer_urls.empty()) {
      return c.Fail(kExitBadArgs, "member peer urls not provided");
    }
    RemoteKV* kv = c.kv(&code);
    if (!kv) return code;
    Status s;
    bool printed = false;
    if (sub == "remove") {
      etcdserverpb::MemberRemoveRequest req;
      req.set_id(*id);
      etcdserverpb::MemberRemoveResponse resp;
      s = kv->Call("/v3/cluster/member/remove", req, &resp, CallKind::kWrite);
      if (s.ok()) printed = c.printer->MemberRemove(*id, resp);
    } else if (sub == "promote") {
      etcdserverpb::MemberPromoteRequest req;
      req.set_id(*id);
      etcdserverpb::MemberPromoteResponse resp;
      s = kv->Call("/v3/cluster/member/promote", req, &resp, CallKind::kWrite);
      if (s.ok()) printed = c.printer->MemberPromote(*id, resp);
    } else {
      etcdserverpb::MemberUpdateRequest req;
      req.set_id(*id);
      for (const auto& u : StrSplit(peer_urls, ',')) req.add_peerurls(u);
      etcdserverpb::MemberUpdateResponse resp;
      s = kv->Call("/v3/cluster/member/update", req, &resp, CallKind::kWrite);
      if (s.ok()) printed = c.printer->MemberUpdate(*id, resp);
    }
    if (!s.ok()) return c.Fail(kExitError, s.message());
    if (!printed) return c.Unsupported();
    return kExitSuccess;
  }
  return c.Fail(kExitError,
                "unknown command \"" + sub + "\" for \"kpctl store member\"");
}

// --- lease -------------------------------------------------------------------

std::optional<int64_t> LeaseArg(Ctx& c, const std::string& arg, int* code) {
  std::string perr;
  auto id = GoParseInt(arg, 16, &perr);
  if (!id) {
    *code = c.Fail(kExitBadArgs,
                   "bad lease ID arg (" + perr + "), expecting ID in Hex");
  }
  return id;
}

int CmdLease(Ctx& c, const std::string& sub,
             const std::vector<std::string>& args) {
  FlagSet fs("kpctl store lease " + sub, "Lease related commands");
  bool keys = false, once = false;
  if (sub == "timetolive") {
    fs.Bool("keys", &keys, "Get keys attached to this lease");
  }
  if (sub == "keep-alive") {
    fs.Bool("once", &once,
            "Resets the keep-alive time to its original value and exits "
            "immediately");
  }
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "lease " + sub); r >= 0) return r;
  int code = 0;

  if (sub == "grant") {
    if (pos.size() != 1) {
      return c.Fail(kExitBadArgs, "lease grant command needs TTL argument");
    }
    std::string perr;
    auto ttl = GoParseInt(pos[0], 10, &perr);
    if (!ttl) return c.Fail(kExitBadArgs, "bad TTL (" + perr + ")");
    RemoteKV* kv = c.kv(&code);
    if (!kv) return code;
    etcdserverpb::LeaseGrantRequest req;
    req.set_ttl(*ttl);
    auto resp = kv->LeaseGrant(req);
    if (!resp.ok()) {
      return c.Fail(kExitError,
                    "failed to grant lease (" + resp.status().message() + ")");
    }
    if (!c.printer->Grant(*resp)) return c.Unsupported();
    return kExitSuccess;
  }
  if (sub == "list") {
    RemoteKV* kv = c.kv(&code);
    if (!kv) return code;
    auto resp = kv->LeaseLeases({});
    if (!resp.ok()) return c.Fail(kExitBadConnection, resp.status().message());
    if (!c.printer->Leases(*resp)) return c.Unsupported();
    return kExitSuccess;
  }
  if (sub == "revoke" || sub == "timetolive" || sub == "keep-alive") {
    if (pos.size() != 1) {
      return c.Fail(kExitBadArgs,
                    sub == "revoke" ? "lease revoke command needs 1 argument"
                    : sub == "timetolive"
                        ? "lease timetolive command needs lease ID as argument"
                        : "lease keep-alive command needs lease ID as "
                          "argument");
    }
    auto id = LeaseArg(c, pos[0], &code);
    if (!id) return code;
    RemoteKV* kv = c.kv(&code);
    if (!kv) return code;
    if (sub == "revoke") {
      etcdserverpb::LeaseRevokeRequest req;
      req.set_id(*id);
      auto resp = kv->LeaseRevoke(req);
      if (!resp.ok()) {
        return c.Fail(kExitError, "failed to revoke lease (" +
                                      resp.status().message() + ")");
      }
      if (!c.printer->Revoke(*id, *resp)) return c.Unsupported();
      return kExitSuccess;
    }
    if (sub == "timetolive") {
      etcdserverpb::LeaseTimeToLiveRequest req;
      req.set_id(*id);
      req.set_keys(keys);
      auto resp = kv->LeaseTimeToLive(req);
      if (!resp.ok()) {
        return c.Fail(kExitBadConnection, resp.status().message());
      }
      if (!c.printer->TimeToLive(*resp, keys)) return c.Unsupported();
      return kExitSuccess;
    }
    // keep-alive
    etcdserverpb::LeaseKeepAliveRequest req;
    req.set_id(*id);
    if (once) {
      auto resp = kv->LeaseKeepAlive(req);
      if (!resp.ok()) {
        return c.Fail(kExitBadConnection, resp.status().message());
      }
      if (!c.printer->KeepAlive(*resp)) return c.Unsupported();
      return kExitSuccess;
    }
    Mutex mu;
    std::condition_variable cv;
    bool unsupported = false, stopped = false;
    storage::KeepAliveOptions ko;
    ko.on_renewed = [&](const etcdserverpb::LeaseKeepAliveResponse& r) {
      MutexLock l(&mu);
      if (!unsupported && !c.printer->KeepAlive(r)) {
        unsupported = true;
        cv.notify_all();
      }
      c.out.flush();
    };
    storage::KeepAliveLoop loop(kv, *id, ko);
    std::thread waiter([&] {
      Status why = loop.Wait();
      (void)why;
      MutexLock l(&mu);
      stopped = true;
      cv.notify_all();
    });
    if (c.io.stop) {
      c.io.stop->OnStop([&] { loop.Stop(); });
    }
    {
      MutexLock l(&mu);
      cv.wait(l.native(), [&] { return stopped || unsupported; });
    }
    if (c.io.stop) c.io.stop->OnStop(nullptr);
    loop.Stop();
    waiter.join();
    if (unsupported) return c.Unsupported();
    if (c.io.stop && c.io.stop->stopped()) return kExitSuccess;
    if (std::string(c.printer->name()) == "simple") {
      c.out << "lease " << GoHex(*id, 16, '0') << " expired or revoked.\n";
    }
    return kExitSuccess;
  }
  return c.Fail(kExitError,
                "unknown command \"" + sub + "\" for \"kpctl store lease\"");
}

// --- snapshot ----------------------------------------------------------------

int CmdSnapshot(Ctx& c, const std::string& sub,
                const std::vector<std::string>& args) {
  FlagSet fs("kpctl store snapshot " + sub, "Manages member snapshots");
  RestoreOptions ro;
  if (sub == "restore") {
    fs.String("data-dir", &ro.data_dir, "Path to the data directory");
    fs.String("name", &ro.name, "Human-readable name for this member");
    fs.String("initial-cluster", &ro.initial_cluster,
              "Initial cluster configuration for restore bootstrap");
    fs.String("initial-cluster-token", &ro.initial_cluster_token,
              "Initial cluster token for the cluster during restore bootstrap");
    fs.String("initial-advertise-peer-urls", &ro.initial_advertise_peer_urls,
              "List of this member's peer URLs to advertise to the rest of "
              "the cluster");
    fs.Bool("skip-hash-check", &ro.skip_hash_check,
            "Ignore snapshot integrity hash value");
  }
  std::vector<std::string> pos;
  if (int r = c.Parse(&fs, args, &pos, "snapshot " + sub + " <filename>");
      r >= 0) {
    return r;
  }
  if (sub == "save") {
    if (pos.size() != 1) {
      return c.Fail(kExitBadArgs, "snapshot save expects one argument");
    }
    if (c.g.endpoints.size() != 1) {
      return c.Fail(kExitInterrupted,
                    "snapshot must be requested to one selected node, not "
                    "multiple " +
                        GoStringSlice(c.g.endpoints));
    }
    auto m = c.Member(c.g.endpoints[0]);
    if (!m.ok()) return c.Fail(kExitInterrupted, m.status().message());
    Status s = SaveSnapshot(m->get(), pos[0]);
    if (!s.ok()) return c.Fail(kExitInterrupted, s.message());
    c.out << "Snapshot saved at " << pos[0] << "\n";
    return kExitSuccess;
  }
  if (sub == "status") {
    if (pos.size() != 1) {
      return c.Fail(kExitBadArgs,
                    "snapshot status requires exactly one argument");
    }
    auto st = SnapshotFileStatus(pos[0]);
    if (!st.ok()) return c.Fail(kExitError, st.status().message());
    if (!c.printer->DBStatus(*st)) return c.Unsupported();
    return kExitSuccess;
  }
  if (sub == "restore") {
    if (pos.size() != 1) {
      return c.Fail(kExitBadArgs,
                    "snapshot restore requires exactly one argument");
    }
    Status s = RestoreSnapshot(pos[0], ro);
    if (!s.ok()) return c.Fail(kExitError, s.message());
    return kExitSuccess;
  }
  return c.Fail(kExitError,
                "unknown command \"" + sub + "\" for \"kpctl store snapshot\"");
}

// --- dispatch ----------------------------------------------------------------

struct CommandInfo {
  const char* name;
  const char* subs;  // space-separated subcommands, or ""
  const char* help;
};

const CommandInfo kCommands[] = {
    {"get", "", "Gets the key or a range of keys"},
    {"put", "", "Puts the given key into the store"},
    {"del", "", "Removes the specified key or range of keys [key, range_end)"},
    {"txn", "", "Txn processes all the requests in one transaction"},
    {"compaction", "", "Compacts the event history (alias: compact)"},
    {"watch", "", "Watches events stream on keys or prefixes"},
    {"lease", "grant revoke timetolive list keep-alive",
     "Lease related commands"},
    {"member", "add remove update list promote", "Membership related commands"},
    {"endpoint", "health status", "Endpoint related commands"},
    {"snapshot", "save restore status", "Manages member snapshots"},
    {"alarm", "disarm list", "Alarm related commands"},
    {"defrag", "", "Defragments the storage of the members"},
    {"move-leader", "", "Transfers leadership to another cluster member"},
    {"bench", "put range cas watch failover",
     "Load benchmarks (bench/store_bench_command.h; flags: --help)"},
};

}  // namespace

std::string StoreUsage() {
  std::string s =
      "Usage: kpctl store [global flags] <command> [flags] [arguments]\n\n"
      "An etcdctl 3.4 work-alike for etcd v3 JSON stores (etcd 3.4 or "
      "kplane store).\n\nCommands:\n";
  for (const auto& c : kCommands) {
    std::string name = c.name;
    if (*c.subs) name += " <" + std::string(c.subs) + ">";
    s += "  " + name + "\n      " + c.help + "\n";
  }
  s += "\nGlobal flags:\n"
       "  --endpoints=127.0.0.1:2379   comma-separated endpoints\n"
       "  --dial-timeout=2s            connect timeout\n"
       "  --command-timeout=5s         timeout of one command\n"
       "  -w, --write-out=simple       simple, json or table\n"
       "  --hex                        print keys and values as hex\n"
       "  --cacert, --cert, --key      TLS: the CA, client certificate, key\n"
       "  --insecure-skip-tls-verify   do not verify the server's "
       "certificate\n"
       "\nRun 'kpctl store <command> --help' for a command's flags.\n";
  return s;
}

int RunStore(const std::vector<std::string>& args, const StoreIo& io) {
  Ctx c(io);
  // Find the command words among the global flags.
  std::vector<std::string> words;
  std::vector<std::string> rest;
  const CommandInfo* cmd = nullptr;
  bool after_dashdash = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool is_flag = !after_dashdash && a.size() > 1 && a[0] == '-';
    if (a == "--") after_dashdash = true;
    const size_t want = cmd == nullptr ? 1 : (*cmd->subs ? 2 : 1);
    if (!is_flag && words.size() < want && !after_dashdash) {
      if (words.empty()) {
        std::string name = a == "compact" ? "compaction" : a;
        for (const auto& ci : kCommands) {
          if (name == ci.name) cmd = &ci;
        }
        if (cmd == nullptr) {
          return c.Fail(kExitError,
                        "unknown command \"" + a + "\" for \"kpctl store\"");
        }
        words.push_back(name);
      } else {
        words.push_back(a);
      }
      continue;
    }
    rest.push_back(a);
    if (is_flag && GlobalTakesValue(a) && i + 1 < args.size()) {
      rest.push_back(args[++i]);
    }
  }
  if (cmd == nullptr) {
    bool help = false;
    for (const auto& a : args) help = help || a == "--help" || a == "-h";
    (help ? c.out : c.err) << StoreUsage();
    return help ? kExitSuccess : kExitError;
  }
  const std::string name = words[0];
  if (*cmd->subs && words.size() < 2) {
    bool help = false;
    for (const auto& a : rest) help = help || a == "--help" || a == "-h";
    std::string text = "Usage: kpctl store " + name + " <" + cmd->subs +
                       ">\n\n" + cmd->help + "\n";
    (help ? c.out : c.err) << text;
    return help ? kExitSuccess : kExitError;
  }
  if (*cmd->subs) {
    std::vector<std::string> subs = StrSplit(cmd->subs, ' ');
    if (std::find(subs.begin(), subs.end(), words[1]) == subs.end()) {
      return c.Fail(kExitError, "unknown command \"" + words[1] +
                                    "\" for \"kpctl store " + name + "\"");
    }
  }
  if (name == "get") return CmdGet(c, rest);
  if (name == "put") return CmdPut(c, rest);
  if (name == "del") return CmdDel(c, rest);
  if (name == "txn") return CmdTxn(c, rest);
  if (name == "compaction") return CmdCompaction(c, rest);
  if (name == "watch") return CmdWatch(c, rest);
  if (name == "defrag") return CmdDefrag(c, rest);
  if (name == "move-leader") return CmdMoveLeader(c, rest);
  if (name == "lease") return CmdLease(c, words[1], rest);
  if (name == "member") return CmdMember(c, words[1], rest);
  if (name == "endpoint") return CmdEndpoint(c, words[1], rest);
  if (name == "snapshot") return CmdSnapshot(c, words[1], rest);
  if (name == "alarm") return CmdAlarm(c, words[1], rest);
  if (name == "bench") {
    if (!io.bench) {
      return c.Fail(kExitError,
                    "the store benchmarks are not built into this program");
    }
    rest.push_back("--workload=" + words[1]);
    return io.bench(rest);
  }
  return c.Fail(kExitError, "unknown command \"" + name + "\"");
}

}  // namespace kplane::kpctl
