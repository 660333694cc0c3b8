// The differential harness: one fresh real etcd 3.4 and one fresh `kplane
// store` (single members on loopback ephemeral ports), the same HTTP
// exchanges sent to both, and their answers compared.
//
//   DiffPair p;                      // starts both; skips without kplane
//   p.Same("POST", "/v3/kv/put", R"({"key":"Zm9v","value":"djE="})");
//   p.Same("POST", "/v3/kv/range", R"({"key":"Zm9v","revision":"{R:2}"})");
//
// Compared: the HTTP status, the Content-Type, and the body. JSON bodies are
// compared after removing header fields that name the cluster
// (cluster_id, member_id, raft_term) wherever they occur, with object
// members in the order the server sent them; a "leases" list is sorted by
// ID and a lease's "keys" list by key (etcd lists both in Go map order,
// i.e. at random).
//
// Revisions. An empty etcd and an empty kplane store are both at revision
// 1 (the first write is revision 2; kplane started at 0 before issue 17).
// "{R:n}" in a request body stands for revision n; a Side can still line
// up a store at another offset (`revision_offset`: its answers' revisions
// are read that much higher, "{R:n}" sent that much lower), but both sides
// of the suite now run at offset 0.
//
// Known differences: KnownDiff() asserts that the two answers still differ
// exactly as recorded, so fixing the server turns the test red and the
// record is removed, rather than a difference being silently tolerated.
//
// Over TLS: with KPLANE_STORE_DIFF_TLS=1 in the environment (ctest's
// e2e_store_diff_tls_test) both stores serve https:// client URLs with
// client certificates required (etcd's --cert-file, --key-file,
// --trusted-ca-file, --client-cert-auth; certificates from
// storage::WriteTestPki), both with the same files (one CA, one server and
// one client certificate), and every exchange goes through TLS: the same
// answers are expected.
//
// Thread-safety: one test thread.
#ifndef KPLANE_TESTS_E2E_STORE_DIFFERENTIAL_H_
#define KPLANE_TESTS_E2E_STORE_DIFFERENTIAL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "storage/client/local_cluster.h"

namespace kplane::e2e {

struct Answer {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One store of the pair.
class Side {
 public:
  Side(storage::StoreKind kind, int revision_offset)
      : kind_(kind), offset_(revision_offset) {}
  ~Side();
  // Over TLS when `tls` is enabled (the pair's shared certificates).
  Status Start(const storage::LocalClusterTls& tls = {});
  // A client of this store's client URL (over TLS with the harness's
  // certificate when the pair runs over TLS).
  StatusOr<std::unique_ptr<net::HttpClient>> NewClient(
      net::HttpClientOptions options = {}) const;

  // Sends one request; "{R:n}" in `body` is translated.
  Answer Do(const std::string& method, const std::string& path,
            const std::string& body);
  // Opens /v3/watch with `body` (all requests at once: etcd 3.4's gateway
  // answers only after the request body ended) and collects `n` messages,
  // running `between` once `before` messages have arrived. Another
  // streaming `path` (/v3/election/observe) is read the same way.
  std::vector<std::string> Watch(const std::string& body, size_t n,
                                 const std::function<void()>& between,
                                 size_t before = 1,
                                 Duration timeout = seconds(10),
                                 const std::string& path = "/v3/watch");

  // The body with "{R:n}" replaced by this store's revision for etcd's n.
  std::string Translate(const std::string& body) const;
  // A JSON body normalized for comparison (see the header comment); a
  // non-JSON body is returned as is.
  std::string Normalize(const std::string& body) const;

  const char* name() const {
    return kind_ == storage::StoreKind::kEtcd ? "etcd" : "kplane";
  }
  storage::LocalCluster* cluster() { return cluster_.get(); }

 private:
  storage::StoreKind kind_;
  int offset_;
  std::unique_ptr<storage::LocalCluster> cluster_;
  std::unique_ptr<net::HttpClient> http_;
};

class DiffTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Both answers must agree; returns etcd's (normalized) body.
  std::string Same(const std::string& method, const std::string& path,
                   const std::string& body = "{}");
  // Like Same for a whole watch session: `n` messages, `between` run after
  // the first `before`. With `unordered`, messages are compared as a
  // multiset (etcd orders different watchers' messages arbitrarily).
  void SameWatch(const std::string& body, size_t n,
                 const std::function<void(Side*)>& between = nullptr,
                 size_t before = 1, bool unordered = false);
  // A watch session whose messages differ as recorded.
  void KnownWatchDiff(const std::string& body, size_t n,
                      const std::vector<std::string>& etcd_expected,
                      const std::vector<std::string>& kplane_expected);
  // The answers differ, exactly as recorded (normalized bodies).
  void KnownDiff(const std::string& method, const std::string& path,
                 const std::string& body, const Answer& etcd_expected,
                 const Answer& kplane_expected);
  // Sends to both without comparing (setup steps).
  void Both(const std::string& method, const std::string& path,
            const std::string& body);

  std::unique_ptr<Side> etcd_, kplane_;
  std::string pki_dir_;  // both sides' certificates; "" unless over TLS
};

// Base64 of a string (keys and values in request bodies).
std::string B64(const std::string& s);

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_STORE_DIFFERENTIAL_H_
