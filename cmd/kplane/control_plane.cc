#include "cmd/kplane/control_plane.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "apiserver/api_server.h"
#include "apiserver/auth/service_account_token.h"
#include "apiserver/encryption/ciphers.h"
#include "apiserver/encryption/transformer.h"
#include "base/base64.h"
#include "base/file_system.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/subprocess.h"
#include "cmd/kplane/cluster_pki.h"
#include "controllers/controller_manager.h"
#include "kubeletsim/fleet.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "storage/client/endpoint.h"
#include "storage/client/grpc_kv.h"
#include "storage/client/maintenance.h"
#include "storage/client/remote_kv.h"
#include "storage/grpc/grpc_front.h"
#include "storage/server/client_api.h"
#include "storage/server/member_tls.h"
#include "storage/server/store_server.h"

namespace kplane::cmd {
namespace {

std::string HttpUrl(const std::string& host, int port) {
  return "http://" + host + ":" + std::to_string(port);
}

std::string HttpsUrl(const std::string& host, int port) {
  return "https://" + host + ":" + std::to_string(port);
}

// One GET /health on `url`: true for 200. `tls`: the client context for an
// https:// url.
bool Healthy(const std::string& url,
             const std::shared_ptr<const net::TlsContext>& tls) {
  net::HttpClientOptions o;
  o.tls = tls;
  o.connect_timeout = seconds(1);
  o.read_timeout = seconds(2);
  auto client = net::HttpClient::ForUrl(url, o);
  if (!client.ok()) return false;
  auto r = (*client)->Request("GET", "/health");
  return r.ok() && r->status == 200;
}

// Member i (0..2) serves clients on 2379, 22379, 32379 for base 2379.
int MemberClientPort(int base, int i) {
  return i == 0 ? base : base + (i + 1) * 10000;
}

bool Interrupted(const std::atomic<bool>* interrupted) {
  return interrupted != nullptr && interrupted->load();
}

Status InterruptedError() {
  return CancelledError("interrupted during startup");
}

}  // namespace

// Three `kplane store` processes, restarted when they fail.
//
// As systemd's Restart=on-failure and the kubelet's CrashLoopBackOff: a
// member that exits 0 (stopped by SIGTERM, or removed from the cluster:
// store_command.cc) stays down; one that fails is restarted after
// `restart_delay`, doubled for each failure in a row up to
// kMaxRestartDelay, and back to `restart_delay` once a run lasted
// kBackoffReset. Each member waits on its own schedule: the loop wakes at
// the next restart due and checks every member each time.
class StoreSupervisor {
 public:
  static constexpr Duration kMaxRestartDelay = minutes(5);
  // The kubelet forgets a container's backoff after twice its cap.
  static constexpr Duration kBackoffReset = minutes(10);

  struct Member {
    std::string name;
    std::vector<std::string> argv;
    std::string log_path;
    std::string pid_path;
    std::string client_url;
    std::unique_ptr<Subprocess> process;
    TimePoint started;
    // Failures in a row; the next delay is restart_delay * 2^(n-1).
    int failures = 0;
    std::optional<TimePoint> restart_at;  // a failed member's restart
  };

  // `client_tls`: how to reach https:// client URLs (null: http://).
  StoreSupervisor(std::vector<Member> members, Duration restart_delay,
                  std::shared_ptr<const net::TlsContext> client_tls)
      : members_(std::move(members)),
        restart_delay_(restart_delay),
        client_tls_(std::move(client_tls)) {}
  ~StoreSupervisor() { Stop(); }

  // Launches every member and waits until each answers /health; fails at
  // once when one of them exits meanwhile, or on `interrupted`.
  Status Start(const std::atomic<bool>* interrupted) {
    for (Member& m : members_) RETURN_IF_ERROR(Launch(m));
    const TimePoint deadline = clock_->Now() + seconds(60);
    for (Member& m : members_) {
      while (!Healthy(m.client_url, client_tls_)) {
        for (Member& other : members_) {
          if (!other.process->running()) {
            return UnavailableError("store member " + other.name +
                                    " exited with code " +
                                    std::to_string(other.process->Wait()) +
                                    " while starting; see " + other.log_path);
          }
        }
        if (Interrupted(interrupted)) return InterruptedError();
        if (clock_->Now() >= deadline) {
          return UnavailableError("store member " + m.name +
                                  " is not healthy after 60s; see " +
                                  m.log_path);
        }
        clock_->SleepFor(milliseconds(100));
      }
    }
    thread_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  // Stops supervising, then every member that runs: SIGTERM to all at
  // once, and up to 10 s for them to exit before SIGKILL. Removes the pid
  // files.
  void Stop() {
    {
      MutexLock l(&mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (Member& m : members_) {
      if (m.process && m.process->running()) {
        (void)m.process->Signal(SIGTERM);
      }
    }
    const TimePoint deadline = clock_->Now() + seconds(10);
    for (Member& m : members_) {
      if (m.process) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - clock_->Now());
        m.process->Stop(static_cast<int>(std::max<int64_t>(0, left.count())));
      }
      std::error_code ec;
      std::filesystem::remove(m.pid_path, ec);
    }
  }

  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const Member& m : members_) out.push_back(m.client_url);
    return out;
  }

 private:
  Status Launch(Member& m) {
    m.process = std::make_unique<Subprocess>(
        m.argv, SubprocessOptions{.log_path = m.log_path});
    Status s = m.process->Start();
    if (!s.ok()) return s.Annotate("start store member " + m.name);
    m.started = clock_->Now();
    LOG(INFO) << "store member " << m.name << " started, pid "
              << m.process->pid() << ", log " << m.log_path;
    // For users and the demos: `kill -9 $(cat <data-dir>/s1.pid)`.
    Status w = WriteFileAtomically(FileSystem::Default(), m.pid_path,
                                   std::to_string(m.process->pid()) + "\n");
    if (!w.ok()) {
      LOG(WARNING) << "pid file of store member " << m.name << ": " << w;
    }
    return Status::Ok();
  }

  // Notices an exit of `m` (and schedules its restart) or restarts it when
  // due. Returns when it next needs a look.
  std::optional<TimePoint> Check(Member& m, TimePoint now) {
    if (m.restart_at) {
      if (now < *m.restart_at) return m.restart_at;
      m.restart_at.reset();
      Status s = Launch(m);
      if (s.ok()) return std::nullopt;
      // Could not even start it: as a failure.
      m.process.reset();
      return ScheduleRestart(m, now, s.ToString());
    }
    // A member left down has no process.
    if (!m.process || m.process->running()) return std::nullopt;
    const int code = m.process->Wait();
    const pid_t pid = m.process->pid();
    m.process.reset();
    std::error_code ec;
    std::filesystem::remove(m.pid_path, ec);
    if (code == 0) {
      LOG(WARNING) << "store member " << m.name << " (pid " << pid
                   << ") exited with code 0 (stopped, or removed from the "
                      "cluster); leaving it down";
      m.failures = 0;
      return std::nullopt;
    }
    if (restart_delay_ <= Duration(0)) {
      LOG(WARNING) << "store member " << m.name << " (pid " << pid
                   << ") exited with code " << code
                   << "; not restarting it (--store-restart-delay 0); see "
                   << m.log_path;
      return std::nullopt;
    }
    if (now - m.started >= kBackoffReset) m.failures = 0;
    return ScheduleRestart(m, now, "exited with code " + std::to_string(code));
  }

  // `what`: "exited with code 1", or why it could not be started.
  std::optional<TimePoint> ScheduleRestart(Member& m, TimePoint now,
                                           const std::string& what) {
    Duration delay = restart_delay_;
    for (int i = 0; i < m.failures && delay < kMaxRestartDelay; ++i) {
      delay *= 2;
    }
    delay = std::min(delay, std::max(kMaxRestartDelay, restart_delay_));
    ++m.failures;
    m.restart_at = now + delay;
    LOG(WARNING)
        << "store member " << m.name << " " << what << " (failure "
        << m.failures << " in a row); restarting it in "
        << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()
        << " ms; see " << m.log_path;
    return m.restart_at;
  }

  void Loop() {
    MutexLock l(&mu_);
    while (!stopped_) {
      const TimePoint now = clock_->Now();
      // Exits are polled (a child's exit offers no event short of SIGCHLD
      // or a pidfd); restarts are woken for when due.
      TimePoint wake = now + milliseconds(100);
      for (Member& m : members_) {
        if (std::optional<TimePoint> next = Check(m, now)) {
          wake = std::min(wake, *next);
        }
      }
      if (stopped_) break;
      clock_->WaitUntil(l.native(), cv_, wake,
                        [&]() REQUIRES(mu_) { return stopped_; });
    }
  }

  Clock* const clock_ = Clock::Real();
  std::vector<Member> members_;
  const Duration restart_delay_;
  const std::shared_ptr<const net::TlsContext> client_tls_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

struct ControlPlane::Impl {
  UpOptions options;
  // Set from another thread to abandon the start (Ctrl-C); may be null.
  const std::atomic<bool>* interrupted = nullptr;
  // <data_dir>/kplane.lock, held for the life of the control plane.
  std::unique_ptr<FileLock> data_dir_lock;

  // Store: embedded, or supervised processes reached through RemoteKV.
  std::unique_ptr<storage::StoreServer> embedded;
  std::unique_ptr<net::HttpServer> embedded_client_http;
  std::unique_ptr<storage::ClientApi> embedded_client_api;
  std::unique_ptr<storage::GrpcFront> embedded_grpc;
  std::unique_ptr<StoreSupervisor> supervisor;
  std::unique_ptr<storage::KV> remote;
  std::vector<std::string> store_endpoints;
  // The API server's client TLS for the member processes (null otherwise).
  std::shared_ptr<const net::TlsContext> store_client_tls;
  // <data_dir>/ui-token: the web view's admin token ("" without a PKI).
  std::string ui_token_file;

  // Null with insecure_http.
  std::unique_ptr<ClusterPki> pki;

  std::unique_ptr<apiserver::ApiServer> apiserver;
  std::string apiserver_url;
  std::string encryption_config;  // "" when values are stored plain
  std::unique_ptr<controllers::ControllerManager> controller_manager;
  std::unique_ptr<kubeletsim::Fleet> fleet;

  Status PreparePki();
  Status StartStore();
  Status StartApiServer();
  Status StartControllerManager();
  Status StartFleet();
  void Stop();

  // The host clients dial: the bind address, or loopback when it listens
  // on every interface (a certificate cannot name 0.0.0.0).
  std::string ClientHost() const {
    const std::string& b = options.bind_address;
    return b == "0.0.0.0" || b == "::" ? "127.0.0.1" : b;
  }
  // A store member's URL (members listen on loopback): https:// with the
  // PKI.
  std::string MemberUrl(int port) const {
    return pki ? HttpsUrl("127.0.0.1", port) : HttpUrl("127.0.0.1", port);
  }
  // https://<client host>:port, or http://<bind address>:port without TLS.
  std::string Url(int port) const {
    return pki ? HttpsUrl(ClientHost(), port)
               : HttpUrl(options.bind_address, port);
  }
};

// The store member's TLS as etcd's flags say it, from the PKI (kubeadm's
// etcd: --client-cert-auth and --peer-client-cert-auth, one CA).
storage::MemberTlsFiles MemberFiles(const ClusterPki& pki,
                                    const std::string& name) {
  return {.cert_file = pki.dir + "/" + name + ".crt",
          .key_file = pki.dir + "/" + name + ".key",
          .trusted_ca_file = pki.CaFile(),
          .client_cert_auth = true};
}

// <data_dir>/pki: every certificate this control plane uses, issued once
// and reused (EnsureClusterPki).
Status ControlPlane::Impl::PreparePki() {
  if (options.insecure_http) return Status::Ok();
  ClusterPkiOptions po{.dir = options.data_dir + "/pki",
                       .bind_address = options.bind_address};
  for (int i = 0; i < options.nodes; ++i) {
    po.node_names.push_back(options.node_prefix + std::to_string(i));
  }
  if (options.store_members == 1) {
    po.store_members = {"kplane"};
  } else {
    for (int i = 1; i <= options.store_members; ++i) {
      po.store_members.push_back("s" + std::to_string(i));
    }
  }
  ASSIGN_OR_RETURN(ClusterPki issued, EnsureClusterPki(po));
  pki = std::make_unique<ClusterPki>(std::move(issued));
  return Status::Ok();
}

Status ControlPlane::Impl::StartStore() {
  const UpOptions& o = options;
  if (o.store_members == 1) {
    storage::StoreConfig cfg;
    cfg.name = "kplane";
    cfg.data_dir = o.data_dir + "/store";
    cfg.peer_urls = {"http://127.0.0.1:2380"};
    cfg.corrupt_check_interval = Duration(0);
    if (o.compaction_interval > Duration(0)) {
      cfg.auto_compaction.mode = mvcc::AutoCompactionMode::kPeriodic;
      cfg.auto_compaction.retention_period = o.compaction_interval;
    }
    ASSIGN_OR_RETURN(embedded, storage::StoreServer::Open(cfg));
    RETURN_IF_ERROR(embedded->Start(nullptr));
    const TimePoint deadline = Clock::Real()->Now() + seconds(30);
    while (!embedded->WaitReady(milliseconds(100))) {
      if (Interrupted(interrupted)) return InterruptedError();
      if (Clock::Real()->Now() >= deadline) {
        return UnavailableError("the embedded store elected no leader in 30s");
      }
    }
    // etcd's v3 API on the store's client port, as `kplane store` serves
    // it: gRPC (etcdctl, clientv3) and the JSON gateway (`kpctl store`,
    // curl) on one port. Over TLS unless --insecure-http, with client
    // certificates required (etcd's --client-cert-auth, as kubeadm runs
    // etcd): the store holds every Secret, so only holders of a
    // certificate this control plane's CA signed may talk to it.
    net::HttpServerOptions ho;
    ho.host = o.bind_address;
    ho.port = static_cast<uint16_t>(o.store_port);
    ho.name = "store-client";
    ho.worker_threads = 4;
    if (pki) {
      ASSIGN_OR_RETURN(
          storage::MemberTls tls,
          storage::NewMemberTls(MemberFiles(*pki, "etcd-kplane-server"), {}));
      ho.tls = tls.client_server;
    }
    embedded_grpc = std::make_unique<storage::GrpcFront>(
        embedded.get(), storage::GrpcFrontOptions{});
    RETURN_IF_ERROR(embedded_grpc->Start());
    embedded_grpc->InstallHandoff(&ho);
    embedded_client_http = std::make_unique<net::HttpServer>(ho);
    embedded_client_api = std::make_unique<storage::ClientApi>(
        embedded.get(), metrics::Registry::Default());
    embedded_client_api->RegisterHandlers(embedded_client_http.get());
    Status s = embedded_client_http->Start();
    if (!s.ok()) {
      return s.Annotate("store client port " + std::to_string(o.store_port) +
                        " (is an etcd or another kplane running? choose "
                        "another with --store-port)");
    }
    store_endpoints = {Url(embedded_client_http->port())};
    return Status::Ok();
  }
  // ValidateUpOptions checked the members and their ports.
  std::vector<StoreSupervisor::Member> members;
  std::string initial_cluster;
  for (int i = 0; i < 3; ++i) {
    int client_port = MemberClientPort(o.store_port, i);
    initial_cluster += (i ? "," : "") + std::string("s") +
                       std::to_string(i + 1) + "=" + MemberUrl(client_port + 1);
  }
  for (int i = 0; i < 3; ++i) {
    int client_port = MemberClientPort(o.store_port, i);
    StoreSupervisor::Member m;
    m.name = "s" + std::to_string(i + 1);
    m.client_url = MemberUrl(client_port);
    std::string peer_url = MemberUrl(client_port + 1);
    m.log_path = o.data_dir + "/" + m.name + ".log";
    m.pid_path = o.data_dir + "/" + m.name + ".pid";
    m.argv = {o.kplane_binary,
              "store",
              "--name",
              m.name,
              "--data-dir",
              o.data_dir + "/" + m.name,
              "--listen-client-urls",
              m.client_url,
              "--advertise-client-urls",
              m.client_url,
              "--listen-peer-urls",
              peer_url,
              "--initial-advertise-peer-urls",
              peer_url,
              "--initial-cluster",
              initial_cluster};
    if (pki) {
      // etcd's flags, as kubeadm's etcd manifest passes them: client and
      // peer certificates required, one CA for both.
      const auto server = MemberFiles(*pki, "etcd-" + m.name + "-server");
      const auto peer = MemberFiles(*pki, "etcd-" + m.name + "-peer");
      m.argv.insert(
          m.argv.end(),
          {"--cert-file", server.cert_file, "--key-file", server.key_file,
           "--trusted-ca-file", server.trusted_ca_file, "--client-cert-auth",
           "--peer-cert-file", peer.cert_file, "--peer-key-file", peer.key_file,
           "--peer-trusted-ca-file", peer.trusted_ca_file,
           "--peer-client-cert-auth"});
    }
    // As for the embedded member: 0 means no automatic compaction (the
    // store refuses a zero retention).
    if (o.compaction_interval > Duration(0)) {
      m.argv.insert(
          m.argv.end(),
          {"--auto-compaction-mode", "periodic", "--auto-compaction-retention",
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                              o.compaction_interval)
                              .count()) +
               "s"});
    }
    members.push_back(std::move(m));
  }
  // The API server's store client: kube's --etcd-cafile/certfile/keyfile.
  std::shared_ptr<const net::TlsContext> client_tls;
  storage::StoreClientTlsFiles client_tls_files;
  if (pki) {
    client_tls_files = {.ca_file = pki->CaFile(),
                        .cert_file = pki->dir + "/apiserver-etcd-client.crt",
                        .key_file = pki->dir + "/apiserver-etcd-client.key"};
    ASSIGN_OR_RETURN(client_tls, storage::NewStoreClientTls(client_tls_files));
  }
  supervisor = std::make_unique<StoreSupervisor>(
      std::move(members), o.store_restart_delay, client_tls);
  RETURN_IF_ERROR(supervisor->Start(interrupted));
  store_endpoints = supervisor->endpoints();
  storage::RemoteKVOptions ro;
  ro.endpoints = store_endpoints;
  ro.tls = client_tls;
  ro.tls_files = client_tls_files;
  store_client_tls = client_tls;
  ASSIGN_OR_RETURN(remote,
                   storage::NewStoreClient(
                       ro, *storage::ParseStoreProtocol(o.store_protocol)));
  return Status::Ok();
}

StatusOr<std::string> EnsureEncryptionConfig(const std::string& data_dir) {
  const std::string path = data_dir + "/encryption-config.yaml";
  FileSystem* fs = FileSystem::Default();
  if (fs->Exists(path)) return path;
  ASSIGN_OR_RETURN(std::string yaml,
                   apiserver::encryption::GenerateAesGcmConfig("key1"));
  // Through the file seam: created 0600, synced, renamed into place.
  RETURN_IF_ERROR(WriteFileAtomically(fs, path, yaml));
  return path;
}

// <data_dir>/pki/sa.key: the key that signs ServiceAccount tokens (kube's
// --service-account-signing-key-file), made on the first start (RSA 2048,
// PEM, mode 0600 in a 0700 directory, as net/pki.h keeps its keys there)
// and reused after, so that tokens outlive a restart.
StatusOr<std::string> EnsureServiceAccountKey(const std::string& data_dir) {
  FileSystem* fs = FileSystem::Default();
  const std::string dir = data_dir + "/pki";
  const std::string path = dir + "/sa.key";
  if (fs->Exists(path)) return ReadFile(fs, path);
  RETURN_IF_ERROR(CreateDirAll(fs, dir, kPrivateDirMode));
  ASSIGN_OR_RETURN(std::string pem,
                   apiserver::auth::GenerateServiceAccountKeyPem());
  RETURN_IF_ERROR(WriteFileAtomically(fs, path, pem));
  return pem;
}

// The web view's admin token (issue 21, docs/ui.md): a random bearer token
// in <data_dir>/ui-token (0600), made on the first start and reused, and
// the token file <data_dir>/pki/ui-tokens.csv naming it as user
// kplane-ui-admin in system:masters, as the admin's client certificate is.
// A browser has no client certificate; this is what `kplane up` prints
// next to the UI's URL. Delete both files and restart to replace it.
StatusOr<std::string> EnsureUiToken(const std::string& data_dir,
                                    std::string* token_file) {
  FileSystem* fs = FileSystem::Default();
  const std::string path = data_dir + "/ui-token";
  const std::string csv = data_dir + "/pki/ui-tokens.csv";
  std::string token;
  if (fs->Exists(path)) {
    ASSIGN_OR_RETURN(token, ReadFile(fs, path));
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) {
      token.pop_back();
    }
  }
  if (token.empty()) {
    ASSIGN_OR_RETURN(std::string random,
                     apiserver::encryption::RandomBytes(32));
    token = Base64UrlEncode(random);
    RETURN_IF_ERROR(WriteFileAtomically(fs, path, token + "\n"));
  }
  RETURN_IF_ERROR(CreateDirAll(fs, data_dir + "/pki", kPrivateDirMode));
  RETURN_IF_ERROR(WriteFileAtomically(
      fs, csv, token + ",kplane-ui-admin,kplane-ui-admin,system:masters\n"));
  *token_file = path;
  return csv;
}

// Every store member's status for the web view's store panel, each asked
// directly (etcdctl endpoint status --cluster): a killed member shows as
// an error, the others name the new leader.
std::vector<apiserver::StoreMemberReport> StoreMembersStatus(
    const std::vector<std::string>& endpoints,
    const std::shared_ptr<const net::TlsContext>& tls) {
  std::vector<apiserver::StoreMemberReport> out;
  for (const std::string& ep : endpoints) {
    StatusOr<std::unique_ptr<storage::Maintenance>> m =
        storage::Maintenance::Create(ep, {.tls = tls,
                                          .dial_timeout = seconds(1),
                                          .request_timeout = seconds(2)});
    out.push_back({.endpoint = ep,
                   .status = m.ok() ? (*m)->Status()
                                    : StatusOr<etcdserverpb::StatusResponse>(
                                          m.status())});
  }
  return out;
}

Status ControlPlane::Impl::StartApiServer() {
  apiserver::ApiServerOptions ao;
  if (pki) {
    ASSIGN_OR_RETURN(ao.auth.token_auth_file,
                     EnsureUiToken(options.data_dir, &ui_token_file));
  }
  if (remote) {
    ao.store_status = [endpoints = store_endpoints, tls = store_client_tls] {
      return StoreMembersStatus(endpoints, tls);
    };
  }
  ASSIGN_OR_RETURN(ao.service_account_signing_key_pem,
                   EnsureServiceAccountKey(options.data_dir));
  std::string enc_path = options.encryption_provider_config;
  if (enc_path.empty() && options.secrets_encryption) {
    ASSIGN_OR_RETURN(enc_path, EnsureEncryptionConfig(options.data_dir));
  }
  if (!enc_path.empty()) {
    ASSIGN_OR_RETURN(
        apiserver::encryption::EncryptionConfiguration config,
        apiserver::encryption::LoadEncryptionConfiguration(enc_path));
    ao.encryption =
        std::make_shared<const apiserver::encryption::TransformerSet>(config);
    encryption_config = enc_path;
  }
  ao.kv = embedded ? static_cast<storage::KV*>(embedded.get())
                   : static_cast<storage::KV*>(remote.get());
  ao.bind_address = options.bind_address;
  ao.port = static_cast<uint16_t>(options.apiserver_port);
  if (pki) {
    // Client certificates requested, not required (kube's
    // --client-ca-file): the authenticator decides about a request without.
    ASSIGN_OR_RETURN(
        ao.tls, pki->ServerContext(pki->apiserver, net::ClientAuth::kRequest));
    // pods/log to the simulated kubelets, which require a CA-signed client
    // certificate; their serving certificate is checked against the CA.
    ASSIGN_OR_RETURN(ao.kubelet_tls,
                     pki->ClientContext(pki->apiserver_kubelet_client));
  }
  // Authentication and authorization (issue 18) whenever the control plane
  // has its PKI: the admin is system:masters, the controller manager
  // system:kube-controller-manager (its bootstrap ClusterRole), each
  // simulated node system:node:<name> (the Node authorizer). Only
  // --insecure-http, which has no client certificates to tell anyone
  // apart, serves everything to everyone (and says so).
  ao.auth.enabled = pki != nullptr;
  apiserver = std::make_unique<apiserver::ApiServer>(ao);
  Status s = apiserver->Start();
  if (!s.ok()) {
    return s.Annotate("API server port " +
                      std::to_string(options.apiserver_port) +
                      " (choose another with --port)");
  }
  const TimePoint deadline = Clock::Real()->Now() + seconds(60);
  while (!apiserver->WaitReady(milliseconds(100))) {
    if (Interrupted(interrupted)) return InterruptedError();
    if (Clock::Real()->Now() >= deadline) {
      LOG(WARNING) << "watch caches not ready after 60s; serving anyway";
      break;
    }
  }
  apiserver_url = pki ? HttpsUrl(ClientHost(), apiserver->port())
                      : HttpUrl(options.bind_address, apiserver->port());
  return Status::Ok();
}

Status ControlPlane::Impl::StartControllerManager() {
  controllers::ControllerManagerOptions co;
  co.server = apiserver_url;
  if (pki) {
    ASSIGN_OR_RETURN(co.tls, pki->ClientContext(pki->controller_manager));
    ASSIGN_OR_RETURN(co.serving_tls,
                     pki->ServerContext(pki->controller_manager_serving,
                                        net::ClientAuth::kNone));
    // kube-root-ca.crt in every namespace (kubeadm passes --root-ca-file).
    co.root_ca_pem = pki->ca.cert_pem;
  }
  co.node_monitor_grace_period = options.node_monitor_grace_period;
  co.node_monitor_period = options.node_monitor_period;
  co.percentage_of_nodes_to_score = options.percentage_of_nodes_to_score;
  co.pod_eviction_timeout_default = options.pod_eviction_timeout;
  co.allocate_node_cidrs = !options.cluster_cidr.empty();
  co.cluster_cidr = options.cluster_cidr;
  co.node_cidr_mask_size = options.node_cidr_mask_size;
  co.bind_address = options.bind_address;
  // -1: no HTTP; 0: an ephemeral port.
  co.port = std::max(0, options.controller_manager_port);
  co.ephemeral_port = options.controller_manager_port == 0;
  auto cm = controllers::ControllerManager::Start(co);
  if (!cm.ok()) return cm.status().Annotate("controller manager");
  controller_manager = std::move(*cm);
  return Status::Ok();
}

Status ControlPlane::Impl::StartFleet() {
  kubeletsim::FleetOptions fo;
  fo.server = apiserver_url;
  if (pki && options.nodes > 0) {
    // The fleet's two watches (all bound pods, all nodes) as its first node
    // -- what kube's Node authorizer lets any node read -- and each node's
    // writes with its own certificate.
    ASSIGN_OR_RETURN(
        fo.tls, pki->ClientContext(pki->nodes.at(options.node_prefix + "0")));
    const ClusterPki* issued = pki.get();
    fo.node_tls = [issued](const std::string& node)
        -> StatusOr<std::shared_ptr<const net::TlsContext>> {
      auto it = issued->nodes.find(node);
      if (it == issued->nodes.end()) {
        return InternalError("no certificate was issued for node " + node);
      }
      return issued->ClientContext(it->second);
    };
    // Only holders of a certificate the cluster CA signed may stop nodes.
    ASSIGN_OR_RETURN(fo.serving_tls,
                     pki->ServerContext(pki->kubelet_serving,
                                        net::ClientAuth::kRequireAndVerify));
  }
  fo.nodes = options.nodes;
  fo.name_prefix = options.node_prefix;
  fo.register_pod_cidr = !options.controllers || options.cluster_cidr.empty();
  fo.lease_renew_interval = options.lease_renew_interval;
  fo.bind_address = options.bind_address;
  // Ours: -1 none, 0 ephemeral; the fleet's: 0 none, -1 ephemeral.
  fo.port = options.kubeletsim_port <= 0 ? -1 - options.kubeletsim_port
                                         : options.kubeletsim_port;
  auto fleet_or = kubeletsim::Fleet::Start(fo);
  if (!fleet_or.ok()) return fleet_or.status().Annotate("simulated nodes");
  fleet = std::move(*fleet_or);
  return Status::Ok();
}

void ControlPlane::Impl::Stop() {
  // Nodes first (they stop heartbeating; nothing evicts them while the
  // controllers stop next), then the API server, then the store.
  if (fleet) fleet->Stop();
  if (controller_manager) controller_manager->Stop();
  if (apiserver) apiserver->Stop();
  remote.reset();
  if (supervisor) supervisor->Stop();
  if (embedded_client_http) embedded_client_http->Stop();
  embedded_grpc.reset();
  if (embedded) embedded->Stop();
  data_dir_lock.reset();
}

Status ValidateUpOptions(const UpOptions& o) {
  if (o.data_dir.empty()) {
    return InvalidArgumentError("a data directory is required");
  }
  // As `kplane apiserver` checks its --port.
  auto port_in_range = [](const std::string& flag, int port, int lowest) {
    if (port >= lowest && port <= 65535) return Status::Ok();
    return InvalidArgumentError(
        flag + " must be in " + (lowest < 0 ? "-1 (none) or 0" : "0") +
        "..65535" + " (got " + std::to_string(port) + ")");
  };
  RETURN_IF_ERROR(port_in_range("--port", o.apiserver_port, 0));
  RETURN_IF_ERROR(port_in_range("--store-port", o.store_port, 0));
  RETURN_IF_ERROR(port_in_range("--kubeletsim-port", o.kubeletsim_port, -1));
  RETURN_IF_ERROR(port_in_range("--controller-manager-port",
                                o.controller_manager_port, -1));
  if (o.store_members != 1 && o.store_members != 3) {
    return InvalidArgumentError("--store-nodes must be 1 or 3 (got " +
                                std::to_string(o.store_members) + ")");
  }
  if (o.store_members == 3) {
    if (o.store_port == 0) {
      return InvalidArgumentError(
          "--store-nodes 3 needs a fixed --store-port (the members must know "
          "each other's addresses)");
    }
    for (int i = 0; i < 3; ++i) {
      // The client port and the peer port after it.
      const int client = MemberClientPort(o.store_port, i);
      if (client + 1 > 65535) {
        return InvalidArgumentError(
            "--store-port " + std::to_string(o.store_port) +
            " puts store member s" + std::to_string(i + 1) +
            " on client port " + std::to_string(client) + " and peer port " +
            std::to_string(client + 1) +
            " (members use --store-port, +20000 and +30000, peers the client "
            "port + 1): choose a --store-port of at most 35534");
      }
    }
    Status protocol = storage::ParseStoreProtocol(o.store_protocol).status();
    if (!protocol.ok()) {
      return InvalidArgumentError("--etcd-protocol: " +
                                  std::string(protocol.message()));
    }
  }
  if (o.compaction_interval < Duration(0)) {
    return InvalidArgumentError(
        "--etcd-compaction-interval must not be negative (0: never compact)");
  }
  if (o.store_restart_delay < Duration(0)) {
    return InvalidArgumentError(
        "--store-restart-delay must not be negative (0: leave a member that "
        "failed down)");
  }
  if (o.nodes < 0) {
    return InvalidArgumentError("--nodes must not be negative");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Start(
    UpOptions options, const std::atomic<bool>* interrupted) {
  // Every option before anything is done.
  RETURN_IF_ERROR(ValidateUpOptions(options));
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return InvalidArgumentError("cannot create " + options.data_dir + ": " +
                                ec.message());
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->interrupted = interrupted;
  // One control plane per data dir, as etcd flocks its data dir: a second
  // would report success against the first's store and overwrite its
  // kubeconfig and pid files. flock: released by the kernel when this
  // process ends, however it ends.
  const std::string lock_path = impl->options.data_dir + "/kplane.lock";
  StatusOr<std::unique_ptr<FileLock>> lock =
      FileSystem::Default()->LockFile(lock_path);
  if (!lock.ok()) {
    if (lock.status().code() == StatusCode::kUnavailable) {
      return FailedPreconditionError(
          "data dir " + impl->options.data_dir +
          " is in use by another kplane up (it holds the lock " + lock_path +
          "); stop that one first, or choose another --data-dir");
    }
    return lock.status().Annotate("lock the data dir");
  }
  impl->data_dir_lock = std::move(*lock);
  Status s = impl->PreparePki();
  auto step = [&](const std::function<Status()>& f) {
    if (!s.ok()) return;
    s = Interrupted(interrupted) ? InterruptedError() : f();
  };
  step([&] { return impl->StartStore(); });
  step([&] { return impl->StartApiServer(); });
  if (impl->options.controllers) {
    step([&] { return impl->StartControllerManager(); });
  }
  if (impl->options.nodes > 0) step([&] { return impl->StartFleet(); });
  if (s.ok() && Interrupted(interrupted)) s = InterruptedError();
  if (s.ok() && !impl->options.kubeconfig_out.empty()) {
    KubeconfigCredentials credentials;
    if (impl->pki) {
      credentials = {.ca_pem = impl->pki->ca.cert_pem,
                     .client_cert_pem = impl->pki->admin.cert_pem,
                     .client_key_pem = impl->pki->admin.key_pem};
    }
    s = WriteKubeconfig(impl->options.kubeconfig_out, impl->apiserver_url,
                        credentials);
  }
  if (!s.ok()) {
    impl->Stop();
    return s;
  }
  return std::unique_ptr<ControlPlane>(new ControlPlane(std::move(impl)));
}

ControlPlane::ControlPlane(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ControlPlane::~ControlPlane() { Stop(); }
void ControlPlane::Stop() { impl_->Stop(); }

std::string ControlPlane::apiserver_url() const { return impl_->apiserver_url; }
std::vector<std::string> ControlPlane::store_endpoints() const {
  return impl_->store_endpoints;
}
std::string ControlPlane::kubeletsim_url() const {
  if (!impl_->fleet || impl_->fleet->port() == 0) return "";
  return impl_->Url(impl_->fleet->port());
}
std::string ControlPlane::controller_manager_url() const {
  if (!impl_->controller_manager || impl_->controller_manager->port() == 0) {
    return "";
  }
  return impl_->Url(impl_->controller_manager->port());
}
std::string ControlPlane::pki_dir() const {
  return impl_->pki ? impl_->pki->dir : "";
}

std::string ControlPlane::Summary() const {
  std::ostringstream out;
  const UpOptions& o = impl_->options;
  out << "kplane is up.\n";
  if (o.insecure_http) {
    out << "  WARNING:      --insecure-http: the API server, controller "
           "manager and nodes speak plain HTTP without authentication; "
           "anyone who can reach these ports can read and change "
           "everything\n";
  }
  out << "  API server:   " << apiserver_url() << "\n";
  out << "  store:        ";
  for (size_t i = 0; i < impl_->store_endpoints.size(); ++i) {
    out << (i ? "," : "") << impl_->store_endpoints[i];
  }
  out << (o.store_members == 1 ? " (embedded, 1 member)"
                               : " (3 member processes)")
      << "\n";
  if (!controller_manager_url().empty()) {
    out << "  controllers:  " << controller_manager_url()
        << " (/healthz, /metrics)\n";
  }
  if (impl_->fleet) {
    out << "  nodes:        " << o.nodes << " simulated (" << o.node_prefix
        << "0 .. " << o.node_prefix << o.nodes - 1 << ")";
    if (!kubeletsim_url().empty()) {
      out << ", control " << kubeletsim_url() << " (kpctl sim --endpoint "
          << kubeletsim_url() << " list)";
    }
    out << "\n";
  }
  if (!impl_->ui_token_file.empty()) {
    out << "  web view:     " << apiserver_url() << "/ui/ (token: cat "
        << impl_->ui_token_file << "; the browser must trust "
        << impl_->pki->CaFile() << ", docs/ui.md)\n";
  } else if (impl_->pki == nullptr) {
    out << "  web view:     " << apiserver_url() << "/ui/\n";
  }
  out << "  data:         " << o.data_dir << "\n";
  if (impl_->pki) {
    out << "  pki:          " << impl_->pki->dir
        << " (the CA and every certificate; delete one and restart to "
           "reissue it)\n";
  }
  if (impl_->encryption_config.empty()) {
    out << "  encryption:   OFF: Secrets are stored in plaintext\n";
  } else {
    out << "  encryption:   " << impl_->encryption_config
        << " (encryption at rest; keep it secret)\n";
  }
  if (!o.kubeconfig_out.empty()) {
    out << "  kubeconfig:   " << o.kubeconfig_out << "\n\n";
    out << "Try:\n  export KUBECONFIG=" << o.kubeconfig_out << "\n"
        << "  kubectl get nodes\n"
        << "  etcdctl --endpoints " << impl_->store_endpoints.front();
    if (impl_->pki) {
      // The store requires a client certificate; the admin's will do (any
      // the CA signed), given as etcdctl's flags.
      const std::string& d = impl_->pki->dir;
      out << " --cacert " << d << "/ca.crt --cert " << d << "/admin.crt --key "
          << d << "/admin.key";
    }
    out << " get /registry/ --prefix --keys-only\n"
        << "  (build/cmd/kpctl/kpctl store takes the same arguments)\n";
  }
  return out.str();
}

Status WriteKubeconfig(const std::string& path, const std::string& server,
                       const KubeconfigCredentials& credentials) {
  FileSystem* fs = FileSystem::Default();
  const std::string parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    RETURN_IF_ERROR(CreateDirAll(fs, parent, kPrivateDirMode));
  }
  std::string cluster = "    server: " + server + "\n";
  if (!credentials.ca_pem.empty()) {
    cluster +=
        "    certificate-authority-data: " + Base64Encode(credentials.ca_pem) +
        "\n";
  }
  std::string user;
  if (!credentials.client_cert_pem.empty()) {
    user += "    client-certificate-data: " +
            Base64Encode(credentials.client_cert_pem) + "\n";
    user += "    client-key-data: " + Base64Encode(credentials.client_key_pem) +
            "\n";
  }
  const std::string text =
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: kplane\n"
      "  cluster:\n" +
      cluster +
      "contexts:\n"
      "- name: kplane\n"
      "  context:\n"
      "    cluster: kplane\n"
      "    user: kplane\n"
      "    namespace: default\n"
      "current-context: kplane\n"
      "users:\n"
      "- name: kplane\n" +
      (user.empty() ? "  user: {}\n" : "  user:\n" + user) +
      "preferences: {}\n";
  // Through the file seam: created 0600 (it holds the admin's key),
  // synced, renamed into place.
  return WriteFileAtomically(fs, path, text);
}

}  // namespace kplane::cmd
