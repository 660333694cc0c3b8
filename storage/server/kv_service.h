// KvService: etcd's KV requests (Range, Put, DeleteRange, Txn, Compact) and
// lease grant/revoke as asynchronous calls on a StoreServer -- the one
// request path both client fronts take: the JSON gateway (ClientApi) and
// the gRPC front (storage/grpc). A front decodes its protocol into the
// etcdserverpb request, calls here, and encodes the answer or the Status
// (etcd's rpctypes texts; etcdjson::StatusToError maps them to gRPC codes).
//
// What happens where: writes are proposed and answered from the apply
// thread; a linearizable range or read-only txn waits for its ReadIndex
// off the caller's thread; a serializable range is served on the caller's
// thread; a physical compaction's wait runs on the server's workers.
//
// Auth: `user` is the name the request's token resolved to (UserOf; empty
// for none). With auth enabled, a range or read-only txn is checked where
// it is served, after its linearizable wait, and answers etcd's
// ErrAuthOldRevision if auth changed while it read; a write carries the name
// into the log and every member checks it when it applies the entry
// (StoreApplier). With auth disabled nothing is checked.
//
// Ownership: borrows the StoreServer, which must outlive every call's
// `done`. Thread-safety: every method may be called from any thread.
// `done` runs exactly once, on any thread (the apply thread included):
// keep it short and never block in it.
#ifndef KPLANE_STORAGE_SERVER_KV_SERVICE_H_
#define KPLANE_STORAGE_SERVER_KV_SERVICE_H_

#include <functional>

#include "base/statusor.h"
#include "schemas/rpc.pb.h"
#include "storage/server/proposer.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

template <typename T>
using Done = std::function<void(StatusOr<T>)>;

class KvService {
 public:
  explicit KvService(StoreServer* server) : server_(server) {}

  // The user a request's token names ("" without a token or with auth
  // disabled: one atomic load); etcd's "invalid auth token" otherwise.
  StatusOr<std::string> UserOf(std::string_view token) {
    return server_->auth()->ResolveToken(token);
  }

  void Range(etcdserverpb::RangeRequest req,
             Done<etcdserverpb::RangeResponse> done, std::string user = {});
  // The same, answered into `*out`, which must be empty, stay alive until
  // `done` has run and may live on a protobuf arena (the gRPC front's);
  // `done` gets the outcome. On an error `*out` is unspecified.
  void Range(etcdserverpb::RangeRequest req, etcdserverpb::RangeResponse* out,
             std::function<void(Status)> done, std::string user = {});
  void Put(etcdserverpb::PutRequest req, Done<etcdserverpb::PutResponse> done,
           std::string user = {});
  void DeleteRange(etcdserverpb::DeleteRangeRequest req,
                   Done<etcdserverpb::DeleteRangeResponse> done,
                   std::string user = {});
  // A read-only txn is served as a linearizable read, not proposed (etcd).
  void Txn(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done,
           std::string user = {});
  // An auth request (etcd's Auth service) by `user`: prepared on the
  // server's workers (a password hash is slow), proposed, applied by every
  // member; answered with etcd's response of type T, header filled.
  template <typename T>
  void Auth(storagepb::AuthRequest req, std::string user, Done<T> done) {
    StoreServer* s = server_;
    AuthApply(std::move(req), std::move(user),
              [s, done = std::move(done)](StatusOr<ApplyResponse> r) {
                StatusOr<T> resp = AuthResponseAs<T>(std::move(r));
                if (resp.ok()) FillAuthHeader(s, resp->mutable_header());
                done(std::move(resp));
              });
  }
  // With physical = true, answers once the compaction is on disk.
  void Compact(etcdserverpb::CompactionRequest req,
               Done<etcdserverpb::CompactionResponse> done);
  void LeaseGrant(etcdserverpb::LeaseGrantRequest req,
                  Done<etcdserverpb::LeaseGrantResponse> done);
  // With auth enabled, `user` needs WRITE on every key of the lease.
  void LeaseRevoke(etcdserverpb::LeaseRevokeRequest req,
                   Done<etcdserverpb::LeaseRevokeResponse> done,
                   std::string user = {});

  // A keepalive's answer as etcd's stream gives it: an unknown (or
  // expired) lease gets its ID back with no TTL, ID 0 just a header. Any
  // other failure (no leader, the proposal timed out or was dropped in a
  // leader change) is returned: as etcd's leaseKeepAlive, the stream then
  // ends with that error and the client retries, rather than being told
  // that a live lease is gone. Blocks until applied.
  StatusOr<etcdserverpb::LeaseKeepAliveResponse> KeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req);

  // A lease's time to live (the leader's count: StoreServer). With auth
  // enabled the caller needs READ on every key attached to the lease,
  // whether or not it asks for them (etcd 3.4.26's checkLeaseTimeToLive,
  // CVE-2023-32082: the key names are the caller's to see only then);
  // "etcdserver: permission denied" otherwise. Blocks.
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req, const std::string& user);

  StoreServer* server() const { return server_; }

  // Tests: runs on the serving thread after a range or read-only txn read
  // the store and before its auth revision is compared again, to change
  // auth in between as a concurrent request can. Set before any call.
  void SetAfterReadHookForTest(std::function<void()> hook) {
    after_read_hook_ = std::move(hook);
  }

 private:
  void AuthApply(storagepb::AuthRequest req, std::string user,
                 ApplyCallback done);
  static void FillAuthHeader(StoreServer* s, etcdserverpb::ResponseHeader* h);

  StoreServer* const server_;
  std::function<void()> after_read_hook_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_KV_SERVICE_H_
