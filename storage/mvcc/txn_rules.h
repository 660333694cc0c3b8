// etcd's request rules for Put/DeleteRange/Range/Txn (internal to
// kplane_mvcc): validation with etcd's error texts, the duplicate-key check
// of a txn, and the evaluation of txn compares.
//
// Thread-safety: pure functions (CompareToPath reads through a view).
#ifndef KPLANE_STORAGE_MVCC_TXN_RULES_H_
#define KPLANE_STORAGE_MVCC_TXN_RULES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/reader.h"

namespace kplane::mvcc {

Status CheckRangeRequest(const etcdserverpb::RangeRequest& r);
Status CheckPutRequest(const etcdserverpb::PutRequest& r);
Status CheckDeleteRequest(const etcdserverpb::DeleteRangeRequest& r);
// Op counts (each of compare/success/failure <= max_ops, nested txns share
// the budget as etcd), empty keys, empty ops; then duplicate keys: a put and
// an overlapping delete, or two puts of one key, on one execution path.
Status CheckTxnRequest(const etcdserverpb::TxnRequest& r, int max_ops);

// The most txns a request may nest in one another (a flat txn is 1).
// etcd has no such bound (Go's protobuf decoder has no depth limit). Here
// a proposal must stay decodable by every member, whose protobuf parser
// stops at 100 nested messages; a txn level is two (TxnRequest, RequestOp)
// and the proposal wraps the request in an InternalRaftRequest. The JSON
// gateway's decoder already stops at 64 nested messages, 32 txns.
inline constexpr int kMaxTxnNesting = 32;
// InvalidArgument if `r` nests txns deeper than kMaxTxnNesting. Checked
// where requests enter and before a proposal, never when an entry is
// applied: an entry that is in the log must apply as it did before.
Status CheckTxnNesting(const etcdserverpb::TxnRequest& r);

// No put or delete in any branch, at any depth.
bool IsTxnReadOnly(const etcdserverpb::TxnRequest& r);
// Some put in any branch, at any depth (what the NOSPACE alarm refuses).
bool TxnHasPut(const etcdserverpb::TxnRequest& r);

// The newest version of a key (create/mod revision, version, lease; no
// value), or nullopt when it is not live: the store's key index, for
// compares of one key on anything but its value at the newest revision.
using LatestLookup =
    std::function<std::optional<mvccpb::KeyValue>(const std::string& key)>;

// Evaluates every compare of the txn and of the nested txns on the chosen
// path, all against `view` at `rev` (the state before the txn), as etcd's
// compareToPath: element 0 is the top-level result, then depth-first.
// With `latest` (only when `rev` is the newest revision `view` holds), a
// single-key compare of CREATE, MOD, VERSION or LEASE asks it instead of
// reading the view.
StatusOr<std::vector<bool>> CompareToPath(ReadView* view, int64_t rev,
                                          const etcdserverpb::TxnRequest& r,
                                          const LatestLookup& latest = nullptr);

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_TXN_RULES_H_
