// Store::Txn: etcd's applierV3backend.Txn. Compares (of the txn and of the
// nested txns on the chosen path) are all evaluated against the state before
// the txn; the ops on the path are checked (lease existence, ignore_* keys,
// range revisions) before anything is written; then they run in order on one
// write transaction, so later ops see earlier ones and everything lands at
// one revision.

#include <rocksdb/db.h>

#include "base/logging.h"
#include "base/mutex.h"
#include "storage/mvcc/key_index.h"
#include "storage/mvcc/lessor.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"
#include "storage/mvcc/txn_rules.h"
#include "storage/mvcc/write_txn.h"

namespace kplane::mvcc {

using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;
using internal::ScopedSnapshot;

Status Store::CheckTxnOps(ReadView* view, const TxnRequest& r,
                          const std::vector<bool>& path, size_t* idx,
                          int64_t rev, int64_t compact_rev, OpCheck what) {
  CHECK_LT(*idx, path.size());
  const bool succeeded = path[(*idx)++];
  for (const RequestOp& op : succeeded ? r.success() : r.failure()) {
    switch (op.request_case()) {
      case RequestOp::kRequestPut: {
        if (what != OpCheck::kPuts) break;
        const auto& put = op.request_put();
        if (put.ignore_value() || put.ignore_lease()) {
          // Only whether the key exists: never the value.
          ASSIGN_OR_RETURN(
              auto prev, LatestForWrite(view, put.key(), /*want_value=*/false));
          if (!prev) return internal::KeyNotFoundError();
        }
        if (put.lease() != 0 && !lessor_->Exists(put.lease())) {
          return internal::LeaseNotFoundError();
        }
        break;
      }
      case RequestOp::kRequestRange: {
        if (what != OpCheck::kRanges) break;
        const int64_t want = op.request_range().revision();
        // etcd compares with its first revision, which is -1 before any
        // compaction (so a negative revision fails only after one).
        const int64_t first = compact_rev > 0 ? compact_rev : -1;
        if (want == 0) break;
        if (want > rev) return FutureRevisionError(rev);
        if (want < first) return CompactedError(compact_rev);
        break;
      }
      case RequestOp::kRequestTxn:
        RETURN_IF_ERROR(CheckTxnOps(view, op.request_txn(), path, idx, rev,
                                    compact_rev, what));
        break;
      default:
        break;
    }
  }
  return Status::Ok();
}

Status Store::ApplyTxnOps(ReadView* view, WriteTxn* txn, const TxnRequest& r,
                          const std::vector<bool>& path, size_t* idx,
                          int64_t read_rev, int64_t compact_rev,
                          TxnResponse* resp, OpTally* tally) {
  // etcd evaluates each compare with a read of its own (applyCompare).
  tally->compare_ranges += static_cast<uint32_t>(r.compare_size());
  CHECK_LT(*idx, path.size());
  const bool succeeded = path[(*idx)++];
  resp->set_succeeded(succeeded);
  for (const RequestOp& op : succeeded ? r.success() : r.failure()) {
    etcdserverpb::ResponseOp* out = resp->add_responses();
    switch (op.request_case()) {
      case RequestOp::kRequestRange: {
        // A range sees the revision as of its position in the txn.
        const int64_t rev = txn ? txn->rev() : read_rev;
        ++tally->ranges;
        RETURN_IF_ERROR(ExecuteRange(view, op.request_range(), rev, compact_rev,
                                     out->mutable_response_range()));
        break;
      }
      case RequestOp::kRequestPut: {
        CHECK(txn != nullptr);
        // A write txn exists only under write_mu_ (NewWriteTxnLocked); the
        // read-only path passes none.
        write_mu_.AssertHeld();
        ASSIGN_OR_RETURN(std::optional<mvccpb::KeyValue> prev,
                         PutLocked(txn, op.request_put()));
        const OpTally put_tally = internal::PutTally(op.request_put());
        tally->ranges += put_tally.ranges;
        tally->puts += put_tally.puts;
        auto* put = out->mutable_response_put();
        put->mutable_header()->set_revision(txn->rev());
        if (op.request_put().prev_kv() && prev) {
          *put->mutable_prev_kv() = std::move(*prev);
        }
        break;
      }
      case RequestOp::kRequestDeleteRange: {
        CHECK(txn != nullptr);
        const auto& req = op.request_delete_range();
        std::vector<mvccpb::KeyValue> prev;
        ASSIGN_OR_RETURN(int64_t n,
                         txn->DeleteRange(req.key(), req.range_end(),
                                          req.prev_kv() ? &prev : nullptr));
        tally->ranges += req.prev_kv() ? 1 : 0;
        ++tally->deletes;
        auto* del = out->mutable_response_delete_range();
        del->mutable_header()->set_revision(txn->rev());
        del->set_deleted(n);
        for (auto& kv : prev) *del->add_prev_kvs() = std::move(kv);
        break;
      }
      case RequestOp::kRequestTxn: {
        TxnResponse* nested = out->mutable_response_txn();
        nested->mutable_header();  // etcd sends an empty header here
        RETURN_IF_ERROR(ApplyTxnOps(view, txn, op.request_txn(), path, idx,
                                    read_rev, compact_rev, nested, tally));
        break;
      }
      default:
        break;
    }
  }
  return Status::Ok();
}

StatusOr<TxnResponse> Store::ReadOnlyTxn(const TxnRequest& req,
                                         OpTally* tally) {
  const int64_t current = current_rev_.load();
  ScopedSnapshot snap(db_.get());
  const int64_t compacted = compact_scheduled_.load();
  DbView view(db_.get(), snap.get());
  ASSIGN_OR_RETURN(std::vector<bool> path, CompareToPath(&view, current, req));
  size_t idx = 0;
  RETURN_IF_ERROR(CheckTxnOps(&view, req, path, &idx, current, compacted,
                              OpCheck::kRanges));
  TxnResponse resp;
  idx = 0;
  RETURN_IF_ERROR(ApplyTxnOps(&view, nullptr, req, path, &idx, current,
                              compacted, &resp, tally));
  resp.mutable_header()->set_revision(current);
  return resp;
}

StatusOr<TxnResponse> Store::Txn(const TxnRequest& req,
                                 uint64_t consistent_index) {
  RETURN_IF_ERROR(CheckTxnRequest(req, options_.max_txn_ops));
  const size_t bytes = req.ByteSizeLong();
  RETURN_IF_ERROR(CheckRequestSize(bytes));
  if (IsTxnReadOnly(req)) {
    if (consistent_index != 0) {
      // A raft-ordered read sees the entries before it.
      MutexLock l(&write_mu_);
      RETURN_IF_ERROR(FlushGroupLocked());
    }
    OpTally tally;
    ASSIGN_OR_RETURN(TxnResponse resp, ReadOnlyTxn(req, &tally));
    if (consistent_index != 0) {
      MutexLock l(&write_mu_);
      RETURN_IF_ERROR(WriteMetaLocked(consistent_index));
    }
    tally.AddTo(options_.metrics.get());
    return resp;
  }
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(WriteStatus());
  if (TxnHasPut(req)) {
    RETURN_IF_ERROR(CheckQuotaLocked(static_cast<int64_t>(bytes)));
  }
  const int64_t current = WriteRevLocked();
  const int64_t compacted = compact_scheduled_.load();
  // Under the write lock nothing changes at or below `current` except the
  // compaction of versions below `compacted`, which no read here can see.
  // In a write group, `current` and `base` include what the group staged.
  BatchView base(db_.get(), StagedBatchLocked());
  // The index's newest versions are the state before this txn (staged
  // writes of the group included), as `base` at `current` is.
  LatestLookup latest;
  if (index_ != nullptr) {
    latest = [this](const std::string& key) {
      return index_->LatestKeyValue(key);
    };
  }
  ASSIGN_OR_RETURN(std::vector<bool> path,
                   CompareToPath(&base, current, req, latest));
  size_t idx = 0;
  RETURN_IF_ERROR(
      CheckTxnOps(&base, req, path, &idx, current, compacted, OpCheck::kPuts));
  idx = 0;
  RETURN_IF_ERROR(CheckTxnOps(&base, req, path, &idx, current, compacted,
                              OpCheck::kRanges));
  auto txn = NewWriteTxnLocked();
  TxnResponse resp;
  idx = 0;
  // On error the transaction rolls the batch back to where it began.
  OpTally tally;
  RETURN_IF_ERROR(ApplyTxnOps(txn->view(), txn.get(), req, path, &idx, current,
                              compacted, &resp, &tally));
  RETURN_IF_ERROR(CommitLocked(txn.get(), consistent_index));
  tally.AddTo(options_.metrics.get());
  resp.mutable_header()->set_revision(txn->rev());
  return resp;
}

}  // namespace kplane::mvcc
