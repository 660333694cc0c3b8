#include "tests/e2e/hostile/hostile_cluster.h"

#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kplane::e2e {
namespace {

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

// Caps `pid`'s address space at its current size plus the headroom.
StatusOr<uint64_t> CapAddressSpace(pid_t pid) {
  ASSIGN_OR_RETURN(ProcMemory m, ReadProcMemory(pid));
  const uint64_t cap =
      static_cast<uint64_t>(m.size_kib) * 1024 + kAddressSpaceHeadroom;
  rlimit lim{.rlim_cur = cap, .rlim_max = cap};
  if (::prlimit(pid, RLIMIT_AS, &lim, nullptr) != 0) {
    return InternalError(std::string("prlimit: ") + std::strerror(errno));
  }
  return cap;
}

}  // namespace

StatusOr<ProcMemory> ReadProcMemory(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in.good()) return InternalError("no /proc/<pid>/status");
  ProcMemory m;
  std::string line;
  int found = 0;
  while (std::getline(in, line)) {
    int64_t* field = nullptr;
    if (line.rfind("VmRSS:", 0) == 0) field = &m.rss_kib;
    if (line.rfind("VmHWM:", 0) == 0) field = &m.hwm_kib;
    if (line.rfind("VmSize:", 0) == 0) field = &m.size_kib;
    if (field != nullptr) {
      *field = std::strtoll(line.c_str() + line.find(':') + 1, nullptr, 10);
      ++found;
    }
  }
  if (found != 3) return InternalError("VmRSS/VmHWM/VmSize missing");
  return m;
}

Status ResetPeakRss(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  out << "5";
  out.flush();
  if (!out.good()) return InternalError("cannot write clear_refs");
  return Status::Ok();
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

StatusOr<std::unique_ptr<HostileCluster>> HostileCluster::Start(
    HostileClusterOptions options) {
  std::unique_ptr<HostileCluster> c(new HostileCluster());
  ASSIGN_OR_RETURN(c->store_, storage::LocalCluster::Start(
                                  {.kind = storage::StoreKind::kKplane,
                                   .members = 1,
                                   .extra_flags = options.store_flags,
                                   .test_pki = storage::StoreSuitesUseTls()}));
  const std::string url = c->store_->client_url(0);
  c->store_port_ =
      static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  c->dir_ = c->store_->data_root();

  std::vector<std::string> argv = {storage::FindKplaneBinary(), "apiserver",
                                   "--insecure-http", "--storage-backend",
                                   "remote", "--etcd-servers", url, "--port",
                                   "0", "--log-level", "warning",
                                   // Its clients send no credentials yet.
                                   "--authorization-mode=AlwaysAllow"};
  if (const storage::LocalClusterTls& t = c->store_->tls(); t.enabled()) {
    argv.push_back("--etcd-cafile=" + t.ca_file);
    argv.push_back("--etcd-certfile=" + t.client_cert_file);
    argv.push_back("--etcd-keyfile=" + t.client_key_file);
  }
  for (const std::string& f : options.apiserver_flags) argv.push_back(f);
  c->apiserver_ = std::make_unique<Process>(argv, std::vector<std::string>{},
                                            c->dir_ + "/apiserver.log");
  c->apiserver_->Start();
  const std::string marker = "serving on http://127.0.0.1:";
  for (;;) {
    std::optional<std::string> line =
        c->apiserver_->ReadLine(std::chrono::milliseconds(60000));
    if (!line.has_value()) {
      return UnavailableError("kplane apiserver did not start:\n" +
                              c->LogTails());
    }
    const size_t at = line->find(marker);
    if (at != std::string::npos) {
      c->api_port_ =
          static_cast<uint16_t>(std::stoi(line->substr(at + marker.size())));
      break;
    }
  }
  ASSIGN_OR_RETURN(c->store_cap_, CapAddressSpace(c->store_pid()));
  ASSIGN_OR_RETURN(c->api_cap_, CapAddressSpace(c->api_pid()));
  return c;
}

HostileCluster::~HostileCluster() {
  // The apiserver first: it is the store's client.
  apiserver_.reset();
  store_.reset();
}

std::string HostileCluster::LogTails(size_t bytes) const {
  return "--- apiserver log:\n" + Tail(dir_ + "/apiserver.log", bytes) +
         "\n--- store:\n" + (store_ ? store_->LogTails(bytes) : "");
}

WellBehavedClient::WellBehavedClient(uint16_t api_port, std::string node)
    : node_(std::move(node)),
      client_("127.0.0.1", api_port,
              net::HttpClientOptions{.read_timeout = seconds(10),
                                     .write_timeout = seconds(10)}) {}

Status WellBehavedClient::Setup() {
  int code = Do("POST", "/api/v1/nodes", "application/json",
                R"({"metadata":{"name":")" + node_ + R"("}})");
  if (code != 201) return InternalError("node create: " + std::to_string(code));
  code = Do(
      "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
      "application/json",
      R"({"metadata":{"name":")" + node_ + R"("},"spec":{"holderIdentity":")" +
          node_ + R"(","leaseDurationSeconds":40}})");
  if (code != 201) {
    return InternalError("lease create: " + std::to_string(code));
  }
  return Status::Ok();
}

int WellBehavedClient::RenewLease() {
  ++renewals_;
  char micro[32];
  std::snprintf(micro, sizeof(micro), "%06d", renewals_ % 1000000);
  return Do(
      "PATCH",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + node_,
      "application/merge-patch+json",
      std::string(R"({"spec":{"renewTime":"2026-01-01T00:00:00.)") + micro +
          R"(Z"}})");
}

int WellBehavedClient::PatchNodeStatus() {
  return Do("PATCH", "/api/v1/nodes/" + node_ + "/status",
            "application/merge-patch+json",
            R"({"status":{"conditions":[{"type":"Ready","status":"True",)"
            R"("reason":"KubeletReady","message":"beat )" +
                std::to_string(renewals_) + R"("}]}})");
}

int WellBehavedClient::ListLeases() {
  return Do("GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            "", "");
}

int WellBehavedClient::CreateConfigMap(const std::string& name) {
  return Do("POST", "/api/v1/namespaces/default/configmaps", "application/json",
            R"({"metadata":{"name":")" + name + R"("},"data":{"k":"v"}})");
}

int WellBehavedClient::Do(const std::string& method, const std::string& path,
                          const std::string& content_type,
                          const std::string& body) {
  net::HttpHeaders h;
  if (!content_type.empty()) h.Add("Content-Type", content_type);
  StatusOr<net::HttpResponse> r = client_.Request(method, path, h, body);
  if (!r.ok()) {
    client_.CloseConnection();
    return -1;
  }
  return r->status;
}

}  // namespace kplane::e2e
