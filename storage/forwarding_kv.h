// ForwardingKV: a KV that passes every call on to another KV.
//
// The base for wrappers that change one or two calls and keep the rest:
// tests that fail, hold or record some requests on their way to a real
// store override just those methods and call ForwardingKV's for the
// store's answer.
//
//   class FailingTxn : public storage::ForwardingKV {
//    public:
//     using ForwardingKV::ForwardingKV;
//     StatusOr<etcdserverpb::TxnResponse> Txn(
//         const etcdserverpb::TxnRequest&) override {
//       return UnavailableError("no endpoint answered");
//     }
//   };
//
// Thread-safety: as the target's; set_target must happen before any call.
#ifndef KPLANE_STORAGE_FORWARDING_KV_H_
#define KPLANE_STORAGE_FORWARDING_KV_H_

#include <memory>
#include <utility>

#include "storage/kv.h"

namespace kplane::storage {

class ForwardingKV : public KV {
 public:
  // `target` is not owned and must outlive this; null until set_target.
  explicit ForwardingKV(KV* target = nullptr) : target_(target) {}
  void set_target(KV* target) { target_ = target; }
  KV* target() const { return target_; }

  StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req) override {
    return target_->Range(req);
  }
  StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& req) override {
    return target_->Put(req);
  }
  StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& req) override {
    return target_->DeleteRange(req);
  }
  StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& req) override {
    return target_->Txn(req);
  }
  StatusOr<etcdserverpb::CompactionResponse> Compact(
      const etcdserverpb::CompactionRequest& req) override {
    return target_->Compact(req);
  }
  StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      const etcdserverpb::LeaseGrantRequest& req) override {
    return target_->LeaseGrant(req);
  }
  StatusOr<etcdserverpb::LeaseRevokeResponse> LeaseRevoke(
      const etcdserverpb::LeaseRevokeRequest& req) override {
    return target_->LeaseRevoke(req);
  }
  StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req) override {
    return target_->LeaseKeepAlive(req);
  }
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) override {
    return target_->LeaseTimeToLive(req);
  }
  StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases(
      const etcdserverpb::LeaseLeasesRequest& req) override {
    return target_->LeaseLeases(req);
  }
  StatusOr<etcdserverpb::StatusResponse> MemberStatus() override {
    return target_->MemberStatus();
  }
  StatusOr<std::unique_ptr<Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req,
      WatchCallback callback) override {
    return target_->StartWatch(req, std::move(callback));
  }

 private:
  KV* target_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_FORWARDING_KV_H_
