#include "storage/client/local_cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/logging.h"
#include "storage/client/maintenance.h"

#ifndef KPLANE_BUILD_DIR
#define KPLANE_BUILD_DIR ""
#endif

namespace kplane::storage {

namespace {

// The end of a member's log, for error messages (the data root, log
// included, is removed with the cluster).
std::string LogTail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (data.size() > 1500) data = "..." + data.substr(data.size() - 1500);
  return "log " + path + ":\n" + data;
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
    return NotFoundError("store binary not found: \"" + c->binary_ + "\"");
  }
  char tmpl[] = "/tmp/kplane-cluster-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return InternalError("mkdtemp failed");
  c->root_ = tmpl;
  c->members_.resize(o.members);
  std::set<uint16_t> used;
  for (int i = 0; i < o.members; ++i) {
    Member& m = c->members_[i];
    m.name = "n" + std::to_string(i + 1);
    m.data_dir = c->root_ + "/" + m.name + ".data";
    m.log_path = c->root_ + "/" + m.name + ".log";
    // The kernel may hand out a just-released port again: keep the
    // cluster's ports distinct.
    for (uint16_t* port : {&m.client_port, &m.peer_port}) {
      for (;;) {
        ASSIGN_OR_RETURN(*port, PickFreePort());
        if (used.insert(*port).second) break;
      }
    }
    if (!c->initial_cluster_.empty()) c->initial_cluster_ += ",";
    c->initial_cluster_ += m.name + "=" + c->peer_url(i);
  }
  for (int i = 0; i < o.members; ++i) RETURN_IF_ERROR(c->StartMember(i));
  for (int i = 0; i < o.members; ++i) {
    RETURN_IF_ERROR(c->WaitReady(i, o.start_timeout));
  }
  return c;
}

LocalCluster::~LocalCluster() {
  for (Member& m : members_) {
    if (m.process && m.process->running()) {
      (void)m.process->Signal(SIGKILL);
      m.process->Wait();
    }
  }
  if (!root_.empty() && std::getenv("KPLANE_KEEP_DATA") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
}

std::vector<std::string> LocalCluster::Argv(int i) const {
  const Member& m = members_[i];
  const std::string client =
      "http://127.0.0.1:" + std::to_string(m.client_port);
  const std::string listen_peer =
      "http://127.0.0.1:" + std::to_string(m.peer_port);
  const std::string peer = peer_url(i);
  std::vector<std::string> argv = {binary_};
  if (options_.kind == StoreKind::kKplane) argv.push_back("store");
  for (const std::string& a :
       {std::string("--name"), m.name, std::string("--data-dir"), m.data_dir,
        std::string("--listen-client-urls"), client,
        std::string("--advertise-client-urls"), client,
        std::string("--listen-peer-urls"), listen_peer,
        std::string("--initial-advertise-peer-urls"), peer,
        std::string("--initial-cluster"), initial_cluster_}) {
    argv.push_back(a);
  }
  for (const std::string& f : options_.extra_flags) argv.push_back(f);
  return argv;
}

Status LocalCluster::StartMember(int i) {
  Member& m = members_[i];
  m.process = std::make_unique<Subprocess>(
      Argv(i), SubprocessOptions{.log_path = m.log_path});
  return m.process->Start();
}

std::string LocalCluster::peer_url(int i) const {
  if (i < static_cast<int>(options_.advertised_peer_urls.size())) {
    return options_.advertised_peer_urls[i];
  }
  return "http://127.0.0.1:" + std::to_string(members_[i].peer_port);
}

std::string LocalCluster::client_url(int i) const {
  return "http://127.0.0.1:" + std::to_string(members_[i].client_port);
}

std::vector<std::string> LocalCluster::client_urls() const {
  std::vector<std::string> out;
  for (int i = 0; i < size(); ++i) out.push_back(client_url(i));
  return out;
}

std::string LocalCluster::endpoints_flag() const {
  std::string out;
  for (int i = 0; i < size(); ++i) {
    if (i > 0) out += ",";
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

Status LocalCluster::Kill(int i) {
  Member& m = members_[i];
  if (!m.process || !m.process->running()) {
    return FailedPreconditionError(m.name + " is not running");
  }
  RETURN_IF_ERROR(m.process->Signal(SIGKILL));
  m.process->Wait();
  return Status::Ok();
}

Status LocalCluster::Restart(int i) {
  if (running(i)) return FailedPreconditionError(name(i) + " is running");
  return StartMember(i);
}

Status LocalCluster::WaitReady(int i, Duration timeout) {
  Clock* clock = Clock::Real();
  const TimePoint deadline = clock->Now() + timeout;
  net::HttpClientOptions ho;
  ho.connect_timeout = milliseconds(200);
  ho.read_timeout = seconds(2);
  auto http = std::make_unique<net::HttpClient>("127.0.0.1",
                                                members_[i].client_port, ho);
  Status last;
  while (clock->Now() < deadline) {
    if (!running(i)) {
      return UnavailableError(
          name(i) + " exited while starting: " + LogTail(log_path(i)));
    }
    // A linearizable read succeeds once the member has a leader and has
    // applied its log up to the read index.
    StatusOr<net::HttpResponse> r = http->Request(
        "POST", "/v3/kv/range", JsonHeaders(), R"({"key":"AA=="})");
    if (r.ok() && r->status == 200) {
      // kplane store answers before it has published its client URLs
      // (etcd does not): wait until the member list shows them too.
      r = http->Request("POST", "/v3/cluster/member/list", JsonHeaders(), "{}");
      if (r.ok() && r->status == 200 &&
          r->body.find("\"" + client_url(i) + "\"") != std::string::npos) {
        return Status::Ok();
      }
    }
    last = r.ok() ? Status(StatusCode::kUnavailable,
                           "HTTP " + std::to_string(r->status) + " " + r->body)
                  : r.status();
    // Readiness of another process cannot be awaited on an event of ours:
    // poll briefly.
    clock->SleepFor(milliseconds(20));
  }
  return UnavailableError(name(i) + " not ready after " +
                          std::to_string(timeout.count() / 1000000) +
                          " ms (last: " + last.message() +
                          "): " + LogTail(log_path(i)));
}

StatusOr<int> LocalCluster::LeaderIndex() {
  MaintenanceOptions mo;
  mo.dial_timeout = milliseconds(500);
  mo.request_timeout = seconds(2);
  for (int i = 0; i < size(); ++i) {
    if (!running(i)) continue;
    ASSIGN_OR_RETURN(auto m, Maintenance::Create(client_url(i), mo));
    StatusOr<etcdserverpb::StatusResponse> s = m->Status();
    if (s.ok() && s->leader() != 0 && s->leader() == s->header().member_id()) {
      return i;
    }
  }
  return UnavailableError("no member reports itself leader");
}

}  // namespace kplane::storage
