// etcd's metric series on /metrics of an in-process member (gRPC front,
// JSON gateway and store, as `kplane store` serves them): puts, deletes,
// ranges and txns over gRPC and JSON move etcd_mvcc_* by etcd's amounts,
// grpc_server_* count each gRPC call with its method, type and code (an
// error code included), the leader, version and id series are set, and
// the WAL fsync and backend commit histograms count writes.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdio.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "base/base64.h"
#include "net/http_client.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/server/version.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

// go-grpc-prometheus's labels, in the order Prometheus prints them.
std::string Grpc(const std::string& name, const std::string& method,
                 const std::string& service, const std::string& type,
                 const std::string& code = "") {
  std::string s = name + "{";
  if (!code.empty()) s += "grpc_code=\"" + code + "\",";
  return s + "grpc_method=\"" + method + "\",grpc_service=\"" + service +
         "\",grpc_type=\"" + type + "\"}";
}

// The same for a unary call of etcdserverpb.KV.
std::string KvUnary(const std::string& name, const std::string& method,
                    const std::string& code = "") {
  return Grpc(name, method, "etcdserverpb.KV", "unary", code);
}

// The value of the series `series` (name and labels exactly as printed);
// -1 when it is absent.
double Value(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  size_t pos = 0;
  while ((pos = text.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      return std::stod(text.substr(pos + prefix.size()));
    }
    ++pos;
  }
  return -1;
}

class EtcdMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start().ok());
    kv_ = pb::KV::NewStub(member_.Channel());
    lease_ = pb::Lease::NewStub(member_.Channel());
  }

  // /metrics as a scraper reads it.
  std::string Scrape() {
    net::HttpClient c("127.0.0.1", member_.port());
    auto r = c.Request("GET", "/metrics");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return "";
    EXPECT_EQ(r->status, 200);
    return r->body;
  }

  double Now(const std::string& series) { return Value(Scrape(), series); }

  grpc::Status Put(const std::string& key, bool prev_kv = false) {
    grpc::ClientContext ctx;
    pb::PutRequest req;
    req.set_key(key);
    req.set_value("v");
    req.set_prev_kv(prev_kv);
    pb::PutResponse resp;
    return kv_->Put(&ctx, req, &resp);
  }

  net::HttpResponse Json(const std::string& path, const std::string& body) {
    net::HttpClient c("127.0.0.1", member_.port());
    auto r =
        c.Request("POST", path, {{"Content-Type", "application/json"}}, body);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return *r;
  }

  TestMember member_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Lease::Stub> lease_;
};

constexpr char kPut[] = "etcd_mvcc_put_total";
constexpr char kDelete[] = "etcd_mvcc_delete_total";
constexpr char kRange[] = "etcd_mvcc_range_total";
constexpr char kTxn[] = "etcd_mvcc_txn_total";
constexpr char kKeys[] = "etcd_debugging_mvcc_keys_total";

// The etcd_mvcc_* series KV calls move, from one scrape (-1: absent), or
// how far they moved between two.
struct Mvcc {
  double put = 0;
  double del = 0;
  double range = 0;
  double txn = 0;
  double keys = 0;

  static Mvcc Of(const std::string& text) {
    return {Value(text, kPut), Value(text, kDelete), Value(text, kRange),
            Value(text, kTxn), Value(text, kKeys)};
  }
  bool Present() const {
    return put >= 0 && del >= 0 && range >= 0 && txn >= 0 && keys >= 0;
  }
  Mvcc operator-(const Mvcc& o) const {
    return {put - o.put, del - o.del, range - o.range, txn - o.txn,
            keys - o.keys};
  }
  bool operator==(const Mvcc&) const = default;
  friend void PrintTo(const Mvcc& m, std::ostream* os) {
    *os << "{put " << m.put << ", delete " << m.del << ", range " << m.range
        << ", txn " << m.txn << ", keys " << m.keys << "}";
  }
};

TEST_F(EtcdMetricsTest, GrpcCallsMoveTheMvccAndGrpcSeries) {
  const std::string put_ok = KvUnary("grpc_server_handled_total", "Put", "OK");
  std::string t = Scrape();
  const Mvcc before = Mvcc::Of(t);
  const double rx = Value(t, "etcd_network_client_grpc_received_bytes_total"),
               tx = Value(t, "etcd_network_client_grpc_sent_bytes_total");
  ASSERT_TRUE(before.Present()) << t;

  ASSERT_TRUE(Put("a").ok());
  ASSERT_TRUE(Put("b").ok());
  // prev_kv: etcd reads the key first, so a range and a txn too.
  ASSERT_TRUE(Put("b", /*prev_kv=*/true).ok());
  {
    grpc::ClientContext ctx;
    pb::RangeRequest req;
    req.set_key("a");
    pb::RangeResponse resp;
    ASSERT_TRUE(kv_->Range(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.kvs_size(), 1);
  }
  {
    grpc::ClientContext ctx;
    pb::DeleteRangeRequest req;
    req.set_key("a");
    pb::DeleteRangeResponse resp;
    ASSERT_TRUE(kv_->DeleteRange(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.deleted(), 1);
  }
  {
    // One compare (a range of its own), then two puts and a range: a txn.
    grpc::ClientContext ctx;
    pb::TxnRequest req;
    pb::Compare* c = req.add_compare();
    c->set_key("b");
    c->set_target(pb::Compare::VERSION);
    c->set_result(pb::Compare::GREATER);
    c->set_version(0);
    req.add_success()->mutable_request_put()->set_key("c");
    req.add_success()->mutable_request_put()->set_key("d");
    req.add_success()->mutable_request_range()->set_key("c");
    pb::TxnResponse resp;
    ASSERT_TRUE(kv_->Txn(&ctx, req, &resp).ok());
    ASSERT_TRUE(resp.succeeded());
  }
  t = Scrape();
  EXPECT_EQ(Mvcc::Of(t) - before, (Mvcc{.put = 5,    // a, b, b, c, d
                                        .del = 1,    // a
                                        .range = 4,  // prev_kv, a, compare, c
                                        .txn = 2,  // put with prev_kv, the txn
                                        .keys = 3}));  // b, c, d
  EXPECT_EQ(Value(t, put_ok), 3);
  EXPECT_EQ(Value(t, KvUnary("grpc_server_started_total", "Put")), 3);
  EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_received_total", "Put")), 3);
  EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_sent_total", "Put")), 3);
  EXPECT_EQ(Value(t, KvUnary("grpc_server_handled_total", "Txn", "OK")), 1);
  EXPECT_EQ(Value(t, KvUnary("grpc_server_handled_total", "DeleteRange", "OK")),
            1);
  // Each call counted once.
  for (const char* m : {"Range", "DeleteRange", "Txn"}) {
    EXPECT_EQ(Value(t, KvUnary("grpc_server_started_total", m)), 1) << m;
    EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_received_total", m)), 1) << m;
    EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_sent_total", m)), 1) << m;
  }
  EXPECT_EQ(Value(t, KvUnary("grpc_server_handled_total", "Range", "OK")), 1);
  // Every code of a called method is there from its first call.
  EXPECT_EQ(
      Value(t, KvUnary("grpc_server_handled_total", "Put", "Unavailable")), 0);
  // At least the requests' keys and values went in, and headers came out.
  EXPECT_GE(Value(t, "etcd_network_client_grpc_received_bytes_total"),
            rx + 5 * 2);
  EXPECT_GT(Value(t, "etcd_network_client_grpc_sent_bytes_total"), tx);
}

TEST_F(EtcdMetricsTest, GrpcErrorsCountWithTheirCode) {
  {
    grpc::ClientContext ctx;
    pb::LeaseRevokeRequest req;
    req.set_id(12345);
    pb::LeaseRevokeResponse resp;
    grpc::Status st = lease_->LeaseRevoke(&ctx, req, &resp);
    ASSERT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND)
        << st.error_message();
  }
  // etcd: "etcdserver: key is not provided".
  ASSERT_EQ(Put("").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::string t = Scrape();
  EXPECT_EQ(Value(t, Grpc("grpc_server_handled_total", "LeaseRevoke",
                          "etcdserverpb.Lease", "unary", "NotFound")),
            1);
  EXPECT_EQ(Value(t, Grpc("grpc_server_handled_total", "LeaseRevoke",
                          "etcdserverpb.Lease", "unary", "OK")),
            0);
  EXPECT_EQ(
      Value(t, KvUnary("grpc_server_handled_total", "Put", "InvalidArgument")),
      1);
  // The request came in; no response message went out.
  EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_received_total", "Put")), 1);
  EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_sent_total", "Put")), 0);
  // Neither write reached the store.
  EXPECT_EQ(Value(t, kPut), 0);
}

TEST_F(EtcdMetricsTest, ACallRefusedForItsTokenCountsWithItsCode) {
  auto auth = pb::Auth::NewStub(member_.Channel());
  ASSERT_TRUE(AddRootUser(auth.get(), "rootpw").ok());
  {
    grpc::ClientContext ctx;
    pb::AuthEnableResponse resp;
    ASSERT_TRUE(auth->AuthEnable(&ctx, pb::AuthEnableRequest(), &resp).ok());
  }
  for (const char* method : {"Range", "Put"}) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("token", "not-a-token");
    grpc::Status st;
    if (method == std::string("Range")) {
      pb::RangeRequest req;
      req.set_key("a");
      pb::RangeResponse resp;
      st = kv_->Range(&ctx, req, &resp);
    } else {
      pb::PutRequest req;
      req.set_key("a");
      pb::PutResponse resp;
      st = kv_->Put(&ctx, req, &resp);
    }
    // etcd: "etcdserver: invalid auth token".
    ASSERT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << method << ": " << st.error_message();
  }
  const std::string t = Scrape();
  for (const char* m : {"Range", "Put"}) {
    EXPECT_EQ(
        Value(t, KvUnary("grpc_server_handled_total", m, "Unauthenticated")), 1)
        << m;
    EXPECT_EQ(Value(t, KvUnary("grpc_server_handled_total", m, "OK")), 0) << m;
    EXPECT_EQ(Value(t, KvUnary("grpc_server_started_total", m)), 1) << m;
    EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_received_total", m)), 1) << m;
    EXPECT_EQ(Value(t, KvUnary("grpc_server_msg_sent_total", m)), 0) << m;
  }
}

TEST_F(EtcdMetricsTest, ACancelledWatchCountsAsCanceled) {
  auto watch = pb::Watch::NewStub(member_.Channel());
  const std::string canceled =
      Grpc("grpc_server_handled_total", "Watch", "etcdserverpb.Watch",
           "bidi_stream", "Canceled");
  {
    grpc::ClientContext ctx;
    auto stream = watch->Watch(&ctx);
    pb::WatchRequest req;
    req.mutable_create_request()->set_key("w");
    ASSERT_TRUE(stream->Write(req));
    pb::WatchResponse resp;
    ASSERT_TRUE(stream->Read(&resp));  // created
    ASSERT_TRUE(resp.created());
    ctx.TryCancel();
    while (stream->Read(&resp)) {
    }
  }
  // The server learns of the cancel after the client: wait for it (the
  // status is counted as the server finishes the call).
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  double v = Now(canceled);
  while (v != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    v = Now(canceled);
  }
  EXPECT_EQ(v, 1);
  EXPECT_EQ(Now(Grpc("grpc_server_msg_received_total", "Watch",
                     "etcdserverpb.Watch", "bidi_stream")),
            1);
}

TEST_F(EtcdMetricsTest, JsonGatewayCallsMoveTheMvccSeries) {
  std::string t = Scrape();
  const Mvcc before = Mvcc::Of(t);
  ASSERT_TRUE(before.Present()) << t;
  const std::string k = Base64Encode("j"), v = Base64Encode("v");
  Json("/v3/kv/put", "{\"key\":\"" + k + "\",\"value\":\"" + v + "\"}");
  Json("/v3/kv/range", "{\"key\":\"" + k + "\"}");
  Json("/v3/kv/txn", "{\"success\":[{\"request_put\":{\"key\":\"" +
                         Base64Encode("j2") + "\",\"value\":\"" + v +
                         "\"}},{\"request_delete_range\":{\"key\":\"" + k +
                         "\"}}]}");
  Json("/v3/kv/deleterange", "{\"key\":\"" + Base64Encode("j2") + "\"}");
  t = Scrape();
  EXPECT_EQ(Mvcc::Of(t) - before,
            (Mvcc{.put = 2, .del = 2, .range = 1, .txn = 1, .keys = 0}));
  // The gateway does not go through gRPC here (etcd's loops back to it).
  EXPECT_EQ(Value(t, KvUnary("grpc_server_started_total", "Put")), -1);
}

TEST_F(EtcdMetricsTest, LeaderIdentityAndDiskSeries) {
  std::string t = Scrape();
  EXPECT_EQ(Value(t, "etcd_server_has_leader"), 1);
  EXPECT_EQ(Value(t, "etcd_server_is_leader"), 1);
  EXPECT_GE(Value(t, "etcd_server_leader_changes_seen_total"), 1);
  char id[17];
  snprintf(id, sizeof(id), "%llx",
           static_cast<unsigned long long>(member_.server()->member_id()));
  EXPECT_EQ(Value(t, std::string("etcd_server_id{server_id=\"") + id + "\"}"),
            1);
  EXPECT_EQ(Value(t, std::string("etcd_server_version{server_version=\"") +
                         kEtcdServerVersion + "\"}"),
            1);
  EXPECT_EQ(Value(t, "etcd_cluster_version{cluster_version=\"3.4\"}"), 1);

  const double fsyncs = Value(t, "etcd_disk_wal_fsync_duration_seconds_count");
  const double commits =
      Value(t, "etcd_disk_backend_commit_duration_seconds_count");
  const double in_use = Value(t, "etcd_mvcc_db_total_size_in_use_in_bytes");
  const double rev = Value(t, "etcd_debugging_mvcc_current_revision");
  ASSERT_GE(fsyncs, 0);
  ASSERT_GE(commits, 0);
  EXPECT_GT(Value(t, "etcd_mvcc_db_total_size_in_bytes"), 0);
  ASSERT_TRUE(Put("disk").ok());
  t = Scrape();
  EXPECT_GT(Value(t, "etcd_disk_wal_fsync_duration_seconds_count"), fsyncs);
  EXPECT_GT(Value(t, "etcd_disk_backend_commit_duration_seconds_count"),
            commits);
  EXPECT_GT(Value(t, "etcd_mvcc_db_total_size_in_use_in_bytes"), in_use);
  EXPECT_EQ(Value(t, "etcd_debugging_mvcc_current_revision"), rev + 1);
}

}  // namespace
}  // namespace kplane::storage
