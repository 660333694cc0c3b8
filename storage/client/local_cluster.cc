#include "storage/client/local_cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "base/logging.h"
#include "net/http_client.h"
#include "net/pki.h"
#include "storage/client/endpoint.h"
#include "storage/client/grpc_kv.h"

#ifndef KPLANE_BUILD_DIR
#define KPLANE_BUILD_DIR ""
#endif

namespace kplane::storage {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

int64_t Ms(Duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

std::string HexId(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(id));
  return buf;
}

bool IsExecutable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string FindKplaneBinary() {
  if (const char* env = std::getenv("KPLANE_BIN"); env && *env) {
    return IsExecutable(env) ? std::string(env) : std::string();
  }
  const std::string build = KPLANE_BUILD_DIR;
  if (build.empty()) return "";
  for (const std::string& p :
       {build + "/kplane", build + "/cmd/kplane/kplane"}) {
    if (IsExecutable(p)) return p;
  }
  return "";
}

StatusOr<LocalClusterTls> WriteTestPki(const std::string& dir,
                                       const std::string& ca_name) {
  net::Pki pki({.dir = dir, .ca_common_name = ca_name + "-ca"});
  RETURN_IF_ERROR(pki.EnsureCa().status());
  for (const char* name : {"server", "peer"}) {
    RETURN_IF_ERROR(pki.EnsureCertificate(name, {.common_name = name,
                                                 .dns_names = {"localhost"},
                                                 .ip_addresses = {"127.0.0.1"},
                                                 .server_auth = true,
                                                 .client_auth = true})
                        .status());
  }
  RETURN_IF_ERROR(pki.EnsureCertificate(
                         "client", {.common_name = "root", .client_auth = true})
                      .status());
  return LocalClusterTls{.ca_file = pki.CertPath("ca"),
                         .server_cert_file = pki.CertPath("server"),
                         .server_key_file = pki.KeyPath("server"),
                         .peer_cert_file = pki.CertPath("peer"),
                         .peer_key_file = pki.KeyPath("peer"),
                         .client_cert_file = pki.CertPath("client"),
                         .client_key_file = pki.KeyPath("client")};
}

std::vector<std::string> MemberTlsFlags(const LocalClusterTls& t) {
  if (!t.enabled()) return {};
  return {"--cert-file",
          t.server_cert_file,
          "--key-file",
          t.server_key_file,
          "--trusted-ca-file",
          t.ca_file,
          "--client-cert-auth=true",
          "--peer-cert-file",
          t.peer_cert_file,
          "--peer-key-file",
          t.peer_key_file,
          "--peer-trusted-ca-file",
          t.ca_file,
          "--peer-client-cert-auth=true"};
}

std::vector<std::string> ClientTlsFlags(const LocalClusterTls& t) {
  if (!t.enabled()) return {};
  return {"--cacert=" + t.ca_file, "--cert=" + t.client_cert_file,
          "--key=" + t.client_key_file};
}

bool StoreSuitesUseTls() {
  const char* v = std::getenv("KPLANE_STORE_TLS");
  return v == nullptr || std::string_view(v) != "0";
}

StatusOr<uint16_t> PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return InternalError("socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return InternalError("bind failed");
  }
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

LocalCluster::LocalCluster(LocalClusterOptions options)
    : options_(std::move(options)) {}

StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    LocalClusterOptions options) {
  std::unique_ptr<LocalCluster> c(new LocalCluster(std::move(options)));
  const LocalClusterOptions& o = c->options_;
  c->binary_ = o.binary;
  if (c->binary_.empty()) {
    c->binary_ =
        o.kind == StoreKind::kEtcd ? "/usr/bin/etcd" : FindKplaneBinary();
  }
  if (!IsExecutable(c->binary_)) {
    return NotFoundError("store binary not found: \"" + c->binary_ +
                         "\" (build target kplane or set KPLANE_BIN)");
  }
  char tmpl[] = "/tmp/kplane-cluster-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return InternalError("mkdtemp failed");
  c->root_ = tmpl;
  c->tls_ = o.tls;
  if (!c->tls_.enabled() && o.test_pki) {
    ASSIGN_OR_RETURN(c->tls_, WriteTestPki(c->root_ + "/pki", "cluster"));
  }
  if (c->tls_.enabled()) {
    ASSIGN_OR_RETURN(c->client_tls_,
                     NewStoreClientTls({.ca_file = c->tls_.ca_file,
                                        .cert_file = c->tls_.client_cert_file,
                                        .key_file = c->tls_.client_key_file}));
  }
  const int n = c->options_.members;
  c->members_.resize(n);
  std::string initial;
  for (int i = 0; i < n; ++i) {
    RETURN_IF_ERROR(c->NewMember(&c->members_[i], i));
    if (!initial.empty()) initial += ",";
    initial += c->members_[i].name + "=" + c->peer_url(i);
  }
  for (int i = 0; i < n; ++i) {
    c->members_[i].initial_cluster = initial;
    RETURN_IF_ERROR(c->StartProcess(i));
  }
  for (int i = 0; i < n; ++i) {
    RETURN_IF_ERROR(c->WaitReady(i, c->options_.start_timeout));
  }
  return c;
}

LocalCluster::~LocalCluster() {
  for (Member& m : members_) {
    if (m.process && m.process->running()) {
      // A frozen process dies of SIGKILL too; wake it anyway so nothing
      // lingers in the stopped state.
      (void)m.process->Signal(SIGKILL);
      (void)m.process->Signal(SIGCONT);
      m.process->Wait();
    }
  }
  if (!root_.empty() && std::getenv("KPLANE_KEEP_DATA") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  } else if (!root_.empty()) {
    LOG(INFO) << "kept cluster data in " << root_;
  }
}

Status LocalCluster::NewMember(Member* m, int number) {
  m->name = "n" + std::to_string(number + 1);
  m->data_dir = root_ + "/" + m->name + ".data";
  m->log_path = root_ + "/" + m->name + ".log";
  std::set<uint16_t> used;
  for (const Member& o : members_) {
    used.insert(o.client_port);
    used.insert(o.peer_port);
  }
  // The kernel may hand a just-released port out again: keep them distinct.
  for (uint16_t* port : {&m->client_port, &m->peer_port}) {
    for (;;) {
      ASSIGN_OR_RETURN(*port, PickFreePort());
      if (used.insert(*port).second) break;
    }
  }
  return Status::Ok();
}

std::vector<std::string> LocalCluster::Argv(int i) const {
  const Member& m = members_[i];
  const std::string client = client_url(i);
  const std::string listen_peer =
      options_.unix_peers ? UnixPeerUrl(i)
                          : std::string(tls_.enabled() ? "https" : "http") +
                                "://127.0.0.1:" + std::to_string(m.peer_port);
  std::vector<std::string> argv = {binary_};
  if (options_.kind == StoreKind::kKplane) argv.push_back("store");
  for (const std::string& a :
       {std::string("--name"), m.name, std::string("--data-dir"), m.data_dir,
        std::string("--listen-client-urls"), client,
        std::string("--advertise-client-urls"), client,
        std::string("--listen-peer-urls"), listen_peer,
        std::string("--initial-advertise-peer-urls"), peer_url(i),
        std::string("--initial-cluster"), m.initial_cluster,
        std::string("--initial-cluster-state"), m.initial_cluster_state}) {
    argv.push_back(a);
  }
  for (const std::string& a : MemberTlsFlags(tls_)) argv.push_back(a);
  for (const std::string& f : options_.extra_flags) argv.push_back(f);
  return argv;
}

Status LocalCluster::StartProcess(int i,
                                  const std::vector<std::string>& extra_flags) {
  Member& m = members_[i];
  std::vector<std::string> argv = Argv(i);
  for (const std::string& f : extra_flags) argv.push_back(f);
  m.process = std::make_unique<Subprocess>(
      argv, SubprocessOptions{
                .log_path = m.log_path,
                // Where the unix peer sockets' relative paths resolve.
                .working_dir = options_.unix_peers ? root_ : std::string()});
  return m.process->Start();
}

std::vector<int> LocalCluster::members() const {
  std::vector<int> out;
  for (int i = 0; i < size(); ++i) {
    if (!members_[i].removed) out.push_back(i);
  }
  return out;
}

std::string LocalCluster::client_url(int i) const {
  return std::string(tls_.enabled() ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(members_[i].client_port);
}

std::string LocalCluster::peer_url(int i) const {
  if (i < static_cast<int>(options_.advertised_peer_urls.size())) {
    return options_.advertised_peer_urls[i];
  }
  if (options_.unix_peers) return UnixPeerUrl(i);
  return std::string(tls_.enabled() ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(members_[i].peer_port);
}

std::string LocalCluster::UnixPeerUrl(int i) const {
  return std::string(tls_.enabled() ? "unixs" : "unix") +
         "://localhost:" + std::to_string(members_[i].peer_port);
}

std::vector<std::string> LocalCluster::client_urls() const {
  std::vector<std::string> out;
  for (int i : members()) out.push_back(client_url(i));
  return out;
}

std::string LocalCluster::endpoints_flag() const {
  std::string out;
  for (int i : members()) {
    if (!out.empty()) out += ",";
    out += "127.0.0.1:" + std::to_string(members_[i].client_port);
  }
  return out;
}

pid_t LocalCluster::pid(int i) const {
  return members_[i].process ? members_[i].process->pid() : -1;
}

bool LocalCluster::running(int i) {
  return members_[i].process && members_[i].process->running();
}

StatusOr<uint64_t> LocalCluster::member_id(int i) {
  if (members_[i].id != 0) return members_[i].id;
  ASSIGN_OR_RETURN(etcdserverpb::StatusResponse s, MemberStatus(i));
  members_[i].id = s.header().member_id();
  return members_[i].id;
}

Status LocalCluster::Kill(int i) {
  Member& m = members_[i];
  if (!running(i)) return FailedPreconditionError(m.name + " is not running");
  RETURN_IF_ERROR(m.process->Signal(SIGKILL));
  (void)m.process->Signal(SIGCONT);
  m.process->Wait();
  return Status::Ok();
}

StatusOr<int> LocalCluster::Terminate(int i, Duration grace) {
  Member& m = members_[i];
  if (!running(i)) return FailedPreconditionError(m.name + " is not running");
  RETURN_IF_ERROR(m.process->Signal(SIGTERM));
  return WaitExit(i, grace, "of SIGTERM");
}

StatusOr<int> LocalCluster::WaitExit(int i, Duration timeout,
                                     const std::string& after) {
  Member& m = members_[i];
  // The exit of another process has no event we can wait on portably other
  // than waitpid; poll it briefly.
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  while (m.process->running()) {
    if (Clock::Real()->Now() > deadline) {
      (void)m.process->Signal(SIGKILL);
      m.process->Wait();
      return DeadlineExceededError(m.name + " did not exit within " +
                                   std::to_string(Ms(timeout)) + " ms " +
                                   after);
    }
    Clock::Real()->SleepFor(milliseconds(10));
  }
  return m.process->Wait();
}

Status LocalCluster::Pause(int i) {
  if (!running(i)) return FailedPreconditionError(name(i) + " not running");
  return members_[i].process->Signal(SIGSTOP);
}

Status LocalCluster::Resume(int i) {
  if (!running(i)) return FailedPreconditionError(name(i) + " not running");
  return members_[i].process->Signal(SIGCONT);
}

Status LocalCluster::SetPeerPort(int i, uint16_t port) {
  if (running(i)) return FailedPreconditionError(name(i) + " is running");
  if (i < static_cast<int>(options_.advertised_peer_urls.size())) {
    return FailedPreconditionError(name(i) + " advertises a fixed peer URL");
  }
  members_[i].peer_port = port;
  return Status::Ok();
}

Status LocalCluster::Restart(int i,
                             const std::vector<std::string>& extra_flags) {
  if (running(i)) return FailedPreconditionError(name(i) + " is running");
  if (members_[i].removed) return FailedPreconditionError(name(i) + " removed");
  return StartProcess(i, extra_flags);
}

Status LocalCluster::WaitReady(int i, Duration timeout) {
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  Status last;
  while (Clock::Real()->Now() < deadline) {
    if (!running(i)) {
      return UnavailableError(name(i) + " exited while starting:\n" +
                              LogTails());
    }
    etcdserverpb::RangeRequest rr;
    rr.set_key(std::string(1, '\0'));
    etcdserverpb::RangeResponse rresp;
    last = Call(i, "/v3/kv/range", rr, &rresp, seconds(2));
    if (last.ok()) {
      etcdserverpb::MemberListResponse ml;
      last = Call(i, "/v3/cluster/member/list",
                  etcdserverpb::MemberListRequest(), &ml, seconds(2));
      if (last.ok()) {
        for (const auto& m : ml.members()) {
          for (const auto& u : m.clienturls()) {
            if (u == client_url(i)) return Status::Ok();
          }
        }
        last = UnavailableError("member list does not show " + client_url(i));
      }
    }
    // Another process's readiness is not an event of ours: poll briefly.
    Clock::Real()->SleepFor(milliseconds(25));
  }
  return UnavailableError(name(i) + " not ready after " +
                          std::to_string(Ms(timeout)) +
                          " ms (last: " + last.ToString() + ")\n" + LogTails());
}

StatusOr<int> LocalCluster::AddMember() {
  const int n = size();
  members_.emplace_back();
  Member& m = members_.back();
  Status s = NewMember(&m, n);
  if (!s.ok()) {
    members_.pop_back();
    return s;
  }
  etcdserverpb::MemberAddRequest req;
  req.add_peerurls(peer_url(n));
  etcdserverpb::MemberAddResponse resp;
  s = UnavailableError("no running member to add through");
  // Through the leader when there is one; any member forwards otherwise.
  std::vector<int> order;
  if (auto l = WaitForLeader(seconds(10)); l.ok()) order.push_back(*l);
  for (int i : members()) {
    if (i != n && running(i)) order.push_back(i);
  }
  std::string tried;
  for (int i : order) {
    s = Call(i, "/v3/cluster/member/add", req, &resp, seconds(15));
    if (s.ok()) break;
    tried += "; via " + name(i) + ": " + s.ToString();
    if (!IsConnectFailure(s)) break;
  }
  if (!s.ok()) {
    members_.pop_back();
    return Status(s.code(), "member add" + tried);
  }
  m.id = resp.member().id();
  // The initial cluster of a joining member lists every current member.
  std::string initial;
  for (const auto& mem : resp.members()) {
    std::string mname;
    for (int j = 0; j < n; ++j) {
      for (const auto& u : mem.peerurls()) {
        if (u == peer_url(j)) mname = members_[j].name;
      }
    }
    if (mem.id() == m.id) mname = m.name;
    if (mname.empty()) mname = HexId(mem.id());
    for (const auto& u : mem.peerurls()) {
      if (!initial.empty()) initial += ",";
      initial += mname + "=" + u;
    }
  }
  m.initial_cluster = initial;
  m.initial_cluster_state = "existing";
  RETURN_IF_ERROR(StartProcess(n));
  RETURN_IF_ERROR(WaitReady(n, options_.start_timeout));
  return n;
}

Status LocalCluster::RemoveMember(int i, Duration exit_timeout) {
  ASSIGN_OR_RETURN(uint64_t id, member_id(i));
  etcdserverpb::MemberRemoveRequest req;
  req.set_id(id);
  etcdserverpb::MemberRemoveResponse resp;
  Status s = UnavailableError("no other running member");
  std::string tried;
  for (int j : members()) {
    if (j == i || !running(j)) continue;
    s = Call(j, "/v3/cluster/member/remove", req, &resp, seconds(15));
    if (s.ok()) break;
    tried += "; via " + name(j) + ": " + s.ToString();
    // Only a request that never reached a server may be sent again.
    if (!IsConnectFailure(s)) break;
  }
  if (!s.ok()) {
    return Status(s.code(), "member remove " + name(i) + tried);
  }
  members_[i].removed = true;
  if (!members_[i].process) return Status::Ok();
  ASSIGN_OR_RETURN(int code, WaitExit(i, exit_timeout, "of its removal"));
  if (code != 0) {
    return InternalError(name(i) + " exited with status " +
                         std::to_string(code) + " after its removal");
  }
  return Status::Ok();
}

StatusOr<int> LocalCluster::LeaderIndex() {
  for (int i : members()) {
    if (!running(i)) continue;
    StatusOr<etcdserverpb::StatusResponse> s = MemberStatus(i);
    if (s.ok() && s->leader() != 0 && s->leader() == s->header().member_id()) {
      return i;
    }
  }
  return UnavailableError("no member reports itself leader");
}

StatusOr<int> LocalCluster::WaitForLeader(
    Duration timeout, const std::function<bool(int)>& pred) {
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  std::string last = "no member answered";
  while (Clock::Real()->Now() < deadline) {
    for (int i : members()) {
      if (!running(i)) continue;
      StatusOr<etcdserverpb::StatusResponse> s = MemberStatus(i);
      if (!s.ok()) {
        last = name(i) + ": " + s.status().ToString();
        continue;
      }
      if (s->leader() != 0 && s->leader() == s->header().member_id()) {
        if (!pred || pred(i)) return i;
        last = name(i) + " leads, but is not the leader asked for";
      }
    }
    // Leadership is another process's state: poll briefly.
    Clock::Real()->SleepFor(milliseconds(20));
  }
  return UnavailableError("no leader after " + std::to_string(Ms(timeout)) +
                          " ms (last: " + last + ")");
}

Status LocalCluster::Call(int i, const std::string& path,
                          const google::protobuf::Message& req,
                          google::protobuf::Message* resp, Duration timeout) {
  net::HttpClientOptions ho;
  ho.connect_timeout = milliseconds(500);
  ho.read_timeout = timeout;
  ho.write_timeout = timeout;
  ho.tls = client_tls_;
  net::HttpClient http("127.0.0.1", members_[i].client_port, ho);
  return CallEndpoint(&http, path, req, resp);
}

StatusOr<etcdserverpb::StatusResponse> LocalCluster::MemberStatus(int i) {
  etcdserverpb::StatusResponse resp;
  RETURN_IF_ERROR(Call(i, "/v3/maintenance/status",
                       etcdserverpb::StatusRequest(), &resp, seconds(3)));
  return resp;
}

StatusOr<etcdserverpb::HashKVResponse> LocalCluster::HashKV(int i,
                                                            int64_t revision) {
  // Over gRPC: the JSON gateway's /v3/maintenance/hash is Hash, which hashes
  // the member's data as it is when asked, whatever the revision; a write
  // landing between two members' answers (an expiring lease's revoke) then
  // looked like a divergence.
  RemoteKVOptions o;
  o.endpoints = {client_url(i)};
  if (tls_.enabled()) {
    o.tls_files = {.ca_file = tls_.ca_file,
                   .cert_file = tls_.client_cert_file,
                   .key_file = tls_.client_key_file};
  }
  o.dial_timeout = seconds(2);
  o.request_timeout = seconds(30);
  o.call_timeout = seconds(30);
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcKV> kv, GrpcKV::Create(std::move(o)));
  etcdserverpb::HashKVRequest req;
  req.set_revision(revision);
  return kv->HashKV(req);
}

StatusOr<etcdserverpb::RangeResponse> LocalCluster::SerializableRange(
    int i, const etcdserverpb::RangeRequest& req) {
  etcdserverpb::RangeRequest r = req;
  r.set_serializable(true);
  etcdserverpb::RangeResponse resp;
  RETURN_IF_ERROR(Call(i, "/v3/kv/range", r, &resp, seconds(30)));
  return resp;
}

StatusOr<double> LocalCluster::Metric(int i, const std::string& metric) {
  net::HttpClientOptions ho;
  ho.connect_timeout = milliseconds(500);
  ho.read_timeout = seconds(3);
  ho.tls = client_tls_;
  net::HttpClient http("127.0.0.1", members_[i].client_port, ho);
  ASSIGN_OR_RETURN(net::HttpResponse r, http.Request("GET", "/metrics"));
  if (r.status != 200) {
    return UnavailableError("GET /metrics: HTTP " + std::to_string(r.status));
  }
  std::istringstream lines(r.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, metric.size(), metric) != 0) continue;
    const char next = line.size() > metric.size() ? line[metric.size()] : 0;
    if (next != ' ' && next != '{') continue;
    const size_t sp = line.rfind(' ');
    return std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return NotFoundError("metric " + metric + " not served by " + name(i));
}

StatusOr<net::HttpResponse> LocalCluster::HttpGet(int i,
                                                  const std::string& path) {
  net::HttpClientOptions ho;
  ho.connect_timeout = milliseconds(500);
  ho.read_timeout = seconds(5);
  ho.tls = client_tls_;
  net::HttpClient http("127.0.0.1", members_[i].client_port, ho);
  return http.Request("GET", path);
}

int LocalCluster::LogCount(int i, const std::string& text) const {
  const std::string log = ReadFile(members_[i].log_path);
  int n = 0;
  for (size_t p = log.find(text); p != std::string::npos;
       p = log.find(text, p + text.size())) {
    ++n;
  }
  return n;
}

std::string LocalCluster::LogTails(size_t bytes) const {
  std::string out;
  for (const Member& m : members_) {
    std::string log = ReadFile(m.log_path);
    if (log.size() > bytes) log = "..." + log.substr(log.size() - bytes);
    out += "---- " + m.name + " (" + m.log_path + "):\n" + log + "\n";
  }
  return out;
}

}  // namespace kplane::storage
