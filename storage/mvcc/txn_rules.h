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
