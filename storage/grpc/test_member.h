// TestMember: one store member in the test's process, served as `kplane
// store` serves it -- a StoreServer, its gRPC front and the JSON gateway
// on one loopback client port (ephemeral), plaintext or TLS. For tests.
//
//   TestMember m;
//   ASSERT_TRUE(m.Start({.max_request_bytes = 1 << 20}).ok());
//   auto kv = etcdserverpb::KV::NewStub(m.Channel());
//   int64_t rev = m.MustPut("k", "v");  // over gRPC, a test failure if not
//   ... m.port(), m.server(), m.http() ...
//   // the destructor stops everything and removes the data directory
//
// With `peers` set, the member serves raft on a peer port of its own
// (HttpPeerTransport) and others may join its cluster as learners:
//
//   TestMember voter, learner;
//   ASSERT_TRUE(voter.Start({.peers = true}).ok());
//   ASSERT_TRUE(learner.StartLearnerOf(voter).ok());
//
// With `tls` set, the client port serves TLS for both protocols (ALPN "h2"
// goes to gRPC through HttpServerOptions::handoff); Channel() is plaintext
// and then useless: build a channel with grpc::SslCredentials.
//
// Thread-safety: Start/Stop from the test's thread; the accessors from any
// thread in between. Errors: Start() returns what failed (data directory,
// store, gRPC or the listener); the member is then stopped.
#ifndef KPLANE_STORAGE_GRPC_TEST_MEMBER_H_
#define KPLANE_STORAGE_GRPC_TEST_MEMBER_H_

// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/grpc_front.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "base/metrics.h"
#include "net/http_server.h"
#include "net/socket.h"
#include "net/tls.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/server/client_api.h"
#include "storage/server/peer_transport.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

// A deadline for one call of a test, so that a missing response fails the
// test instead of hanging it.
inline std::chrono::system_clock::time_point TestCallDeadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(30);
}

// Adds the user "root" with `password` and grants it the root role, as
// `etcdctl user add root` and `etcdctl user grant-role root root` do
// (auth is left as it was). The first failure's status, or OK.
inline grpc::Status AddRootUser(etcdserverpb::Auth::Stub* auth,
                                const std::string& password) {
  {
    grpc::ClientContext ctx;
    etcdserverpb::AuthUserAddRequest r;
    r.set_name("root");
    r.set_password(password);
    etcdserverpb::AuthUserAddResponse resp;
    grpc::Status st = auth->UserAdd(&ctx, r, &resp);
    if (!st.ok()) return st;
  }
  grpc::ClientContext ctx;
  etcdserverpb::AuthUserGrantRoleRequest r;
  r.set_user("root");
  r.set_role("root");
  etcdserverpb::AuthUserGrantRoleResponse resp;
  return auth->UserGrantRole(&ctx, r, &resp);
}

// A lease of `ttl` seconds granted through `lease`: its id, or 0 after a
// test failure if refused.
inline int64_t MustGrantLease(etcdserverpb::Lease::Stub* lease,
                              int64_t ttl = 60) {
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl);
  etcdserverpb::LeaseGrantResponse resp;
  grpc::Status st = lease->LeaseGrant(&ctx, req, &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return st.ok() ? resp.id() : 0;
}

// Revokes lease `id` through `lease`; a test failure if refused.
inline bool MustRevokeLease(etcdserverpb::Lease::Stub* lease, int64_t id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(id);
  etcdserverpb::LeaseRevokeResponse resp;
  grpc::Status st = lease->LeaseRevoke(&ctx, req, &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return st.ok();
}

struct TestMemberOptions {
  // StoreConfig::max_request_bytes; 0 keeps the store's default.
  int64_t max_request_bytes = 0;
  // Serve the client port over TLS with this server context.
  std::shared_ptr<const net::TlsContext> tls;
  // StoreConfig::auth_tokens: JWT tokens (null: simple tokens).
  std::shared_ptr<const TokenProvider> auth_tokens;
  // StoreConfig::max_watchers_per_stream; unset keeps the store's default.
  std::optional<size_t> max_watchers_per_stream;
  // StoreConfig::auth_token_index_wait; unset keeps the store's default.
  std::optional<Duration> auth_token_index_wait;
  // Raft over HTTP on a peer port of its own (HttpPeerTransport), so that
  // other members can join the cluster (StartLearnerOf). Without it the
  // member is alone and has no transport.
  bool peers = false;
};

class TestMember {
 public:
  TestMember() = default;
  ~TestMember() { Stop(); }
  TestMember(const TestMember&) = delete;
  TestMember& operator=(const TestMember&) = delete;

  Status Start(TestMemberOptions options = {}) {
    StoreConfig c;
    if (Status st = Configure("m1", options, &c); !st.ok()) {
      Stop();
      return st;
    }
    if (options.peers) c.initial_cluster = "m1=" + c.peer_urls.front();
    Status st = StartMember(c, std::move(options));
    if (!st.ok()) Stop();
    return st;
  }

  // Joins the cluster of `voter` (started with `peers`) as a learner, as
  // `member add --learner` through `voter` and a start with
  // --initial-cluster-state existing do, and waits until it is ready (its
  // attributes went through the log). Serves raft itself (`peers` is
  // implied).
  Status StartLearnerOf(const TestMember& voter,
                        TestMemberOptions options = {}) {
    options.peers = true;
    StoreConfig c;
    Status st = Configure("m2", options, &c);
    if (st.ok()) {
      etcdserverpb::MemberAddRequest add;
      add.add_peerurls(c.peer_urls.front());
      add.set_islearner(true);
      st = voter.server()->MemberAdd(add).status();
    }
    if (st.ok()) {
      c.initial_cluster_state = "existing";
      c.existing_cluster = voter.server()->RecordForJoiners();
      st = StartMember(c, std::move(options));
    }
    if (!st.ok()) Stop();
    return st;
  }

  // Stops the listener, gRPC and the store; removes the data directory.
  void Stop() {
    if (http_) http_->Stop();
    if (grpc_) grpc_->Stop();
    if (server_) server_->Stop();
    if (transport_) transport_->Stop();
    if (peer_http_) peer_http_->Stop();
    http_.reset();
    api_.reset();
    grpc_.reset();
    server_.reset();
    transport_.reset();
    peer_http_.reset();
    peer_fd_ = net::ScopedFd();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    dir_.clear();
  }

  uint16_t port() const { return http_->port(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }
  StoreServer* server() const { return server_.get(); }
  net::HttpServer* http() const { return http_.get(); }
  metrics::Registry* metrics() { return &metrics_; }
  const std::string& dir() const { return dir_; }

  // A plaintext gRPC channel to the member.
  std::shared_ptr<grpc::Channel> Channel(
      const grpc::ChannelArguments& args = {}) const {
    return grpc::CreateCustomChannel(address(),
                                     grpc::InsecureChannelCredentials(), args);
  }

  // Puts key=value over gRPC and returns the put's revision; a failed put
  // is a test failure (and 0).
  int64_t MustPut(const std::string& key, const std::string& value) const {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    etcdserverpb::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    etcdserverpb::PutResponse resp;
    grpc::Status st =
        etcdserverpb::KV::NewStub(Channel())->Put(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << "put " << key << ": " << st.error_message();
    return st.ok() ? resp.header().revision() : 0;
  }

 private:
  // A data directory and the store's configuration for member `name`;
  // with `peers`, its peer port is bound (peer_fd_) and advertised.
  Status Configure(const std::string& name, const TestMemberOptions& options,
                   StoreConfig* out) {
    char tmpl[] = "/tmp/kplane-member-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return IOError("mkdtemp failed");
    dir_ = tmpl;
    StoreConfig& c = *out;
    c.name = name;
    c.data_dir = dir_ + "/" + name;
    c.peer_urls = {"http://" + name + ":2380"};
    if (options.peers) {
      ASSIGN_OR_RETURN(peer_fd_, net::ListenTcp("127.0.0.1", 0, 128));
      ASSIGN_OR_RETURN(uint16_t peer_port, net::LocalPort(peer_fd_.get()));
      c.peer_urls = {"http://127.0.0.1:" + std::to_string(peer_port)};
    }
    c.heartbeat_interval = milliseconds(10);
    c.election_timeout = milliseconds(100);
    c.corrupt_check_interval = Duration(0);
    if (options.max_request_bytes > 0) {
      c.max_request_bytes = options.max_request_bytes;
    }
    c.auth_tokens = options.auth_tokens;
    if (options.max_watchers_per_stream) {
      c.max_watchers_per_stream = *options.max_watchers_per_stream;
    }
    if (options.auth_token_index_wait) {
      c.auth_token_index_wait = *options.auth_token_index_wait;
    }
    // The member's series go to metrics(), which its /metrics serves.
    c.metrics = &metrics_;
    return Status::Ok();
  }

  Status StartMember(const StoreConfig& c, TestMemberOptions options) {
    ASSIGN_OR_RETURN(server_, StoreServer::Open(c));
    if (peer_fd_.get() >= 0) {
      transport_ = std::make_unique<HttpPeerTransport>(
          server_.get(), PeerTransportOptions{.metrics = &metrics_});
      net::HttpServerOptions po;
      po.listen_fd = peer_fd_.Release();
      po.name = "peer";
      po.metrics = &metrics_;
      peer_http_ = std::make_unique<net::HttpServer>(std::move(po));
      transport_->RegisterHandlers(peer_http_.get());
      RETURN_IF_ERROR(peer_http_->Start());
    }
    RETURN_IF_ERROR(server_->Start(transport_.get()));
    if (!server_->WaitReady(seconds(10))) {
      return UnavailableError("the member did not become ready");
    }
    grpc_ = std::make_unique<GrpcFront>(server_.get());
    RETURN_IF_ERROR(grpc_->Start());
    net::HttpServerOptions o;
    o.port = 0;
    o.metrics = &metrics_;
    o.tls = std::move(options.tls);
    grpc_->InstallHandoff(&o);
    http_ = std::make_unique<net::HttpServer>(std::move(o));
    api_ = std::make_unique<ClientApi>(server_.get(), &metrics_);
    api_->RegisterHandlers(http_.get());
    return http_->Start();
  }

  std::string dir_;
  metrics::Registry metrics_;
  net::ScopedFd peer_fd_;  // the peer port, until its server takes it
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<HttpPeerTransport> transport_;
  std::unique_ptr<net::HttpServer> peer_http_;
  std::unique_ptr<GrpcFront> grpc_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<ClientApi> api_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_TEST_MEMBER_H_
