// Store lease calls and the LeaseBackend the lessor persists through.

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "base/logging.h"
#include "base/mutex.h"
#include "storage/mvcc/keys.h"
#include "storage/mvcc/lessor.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"
#include "storage/mvcc/write_txn.h"

namespace kplane::mvcc {
namespace {

// etcd's quota cost of a lease grant (leaseOverhead).
constexpr int64_t kLeaseGrantCost = 64;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

int64_t Store::NextLeaseIdLocked() {
  // Derived from persisted state only (the grant counter and the revision),
  // so replicas applying the same log pick the same ID.
  for (uint64_t attempt = 0;; ++attempt) {
    uint64_t x = SplitMix64(static_cast<uint64_t>(lease_seq_ + 1) ^
                            SplitMix64(static_cast<uint64_t>(current_rev_)) ^
                            (attempt << 48));
    int64_t id = static_cast<int64_t>(x & 0x7fffffffffffffffULL);
    if (id != 0 && !lessor_->Exists(id)) return id;
  }
}

Status Store::SaveLeaseLocked(int64_t id, int64_t ttl, uint64_t ci) {
  rocksdb::WriteBatch wb;
  std::string k = keys::LeaseKey(id), v = keys::EncodeInt64(ttl);
  wb.Put(k, v);
  wb.Put(rocksdb::Slice(keys::kMetaLeaseSeq.data(), keys::kMetaLeaseSeq.size()),
         keys::EncodeInt64(lease_seq_ + 1));
  const int64_t new_size =
      size_in_use_.load() + static_cast<int64_t>(k.size() + v.size());
  wb.Put(
      rocksdb::Slice(keys::kMetaSizeInUse.data(), keys::kMetaSizeInUse.size()),
      keys::EncodeInt64(new_size));
  if (ci != 0) {
    wb.Put(rocksdb::Slice(keys::kMetaConsistentIndex.data(),
                          keys::kMetaConsistentIndex.size()),
           keys::EncodeInt64(static_cast<int64_t>(ci)));
  }
  RETURN_IF_ERROR(WriteLocked(&wb, options_.sync_writes, "lease grant"));
  ++lease_seq_;
  size_in_use_ = new_size;
  if (ci != 0) consistent_index_ = ci;
  PublishGauges();
  return Status::Ok();
}

Status Store::DeleteLeaseAndKeysLocked(int64_t id,
                                       const std::vector<std::string>& keys,
                                       uint64_t ci) {
  auto txn = NewWriteTxnLocked();
  for (const std::string& key : keys) {
    ASSIGN_OR_RETURN(int64_t n, txn->DeleteRange(key, "", nullptr));
    (void)n;
  }
  std::string k = keys::LeaseKey(id);
  txn->batch()->Delete(k);
  txn->AddSizeDelta(-static_cast<int64_t>(k.size() + 8));
  // Now, even in a write group: the lessor forgets the lease now.
  RETURN_IF_ERROR(CommitLocked(txn.get(), ci, /*write_now=*/true));
  // etcd's lessor deletes each key with a delete-range of its own, in one
  // transaction.
  OpTally{.deletes = static_cast<uint32_t>(keys.size())}.AddTo(
      options_.metrics.get());
  return Status::Ok();
}

StatusOr<etcdserverpb::LeaseGrantResponse> Store::LeaseGrant(
    const etcdserverpb::LeaseGrantRequest& req, uint64_t consistent_index) {
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(FlushGroupLocked());
  RETURN_IF_ERROR(WriteStatus());
  RETURN_IF_ERROR(CheckQuotaLocked(kLeaseGrantCost));
  const int64_t id = req.id() != 0 ? req.id() : NextLeaseIdLocked();
  ASSIGN_OR_RETURN(int64_t ttl,
                   lessor_->Grant(id, req.ttl(), consistent_index));
  etcdserverpb::LeaseGrantResponse resp;
  resp.mutable_header()->set_revision(current_rev_.load());
  resp.set_id(id);
  resp.set_ttl(ttl);
  return resp;
}

StatusOr<etcdserverpb::LeaseRevokeResponse> Store::LeaseRevoke(
    const etcdserverpb::LeaseRevokeRequest& req, uint64_t consistent_index) {
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(FlushGroupLocked());
  RETURN_IF_ERROR(WriteStatus());
  RETURN_IF_ERROR(lessor_->Revoke(req.id(), consistent_index));
  etcdserverpb::LeaseRevokeResponse resp;
  resp.mutable_header()->set_revision(current_rev_.load());
  return resp;
}

StatusOr<etcdserverpb::LeaseKeepAliveResponse> Store::LeaseKeepAlive(
    const etcdserverpb::LeaseKeepAliveRequest& req) {
  ASSIGN_OR_RETURN(int64_t ttl, lessor_->KeepAlive(req.id()));
  etcdserverpb::LeaseKeepAliveResponse resp;
  resp.mutable_header()->set_revision(current_rev_.load());
  resp.set_id(req.id());
  resp.set_ttl(ttl);
  return resp;
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse> Store::LeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req) {
  etcdserverpb::LeaseTimeToLiveResponse resp;
  resp.mutable_header()->set_revision(current_rev_.load());
  resp.set_id(req.id());
  std::optional<LeaseInfo> info = lessor_->Lookup(req.id(), req.keys());
  if (!info) {
    resp.set_ttl(-1);
    return resp;
  }
  resp.set_ttl(info->remaining);
  resp.set_grantedttl(info->ttl);
  for (const std::string& k : info->keys) resp.add_keys(k);
  return resp;
}

StatusOr<etcdserverpb::LeaseLeasesResponse> Store::LeaseLeases() {
  etcdserverpb::LeaseLeasesResponse resp;
  resp.mutable_header()->set_revision(current_rev_.load());
  for (int64_t id : lessor_->Leases()) resp.add_leases()->set_id(id);
  return resp;
}

void Store::LeasePromote(Duration extend) { lessor_->Promote(extend); }
void Store::LeaseDemote() { lessor_->Demote(); }
std::vector<int64_t> Store::ExpiredLeases(size_t limit) {
  return lessor_->ExpiredLeases(limit);
}

}  // namespace kplane::mvcc
