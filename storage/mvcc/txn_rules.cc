#include "storage/mvcc/txn_rules.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>

namespace kplane::mvcc {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;
using Ops = google::protobuf::RepeatedPtrField<RequestOp>;

Status EmptyKeyError() {
  return InvalidArgumentError("etcdserver: key is not provided");
}

Status DuplicateKeyError() {
  return InvalidArgumentError("etcdserver: duplicate key given in txn request");
}

Status CheckTxnOps(const TxnRequest& r, int max_ops);

Status CheckRequestOp(const RequestOp& u, int max_ops) {
  switch (u.request_case()) {
    case RequestOp::kRequestRange:
      return CheckRangeRequest(u.request_range());
    case RequestOp::kRequestPut:
      return CheckPutRequest(u.request_put());
    case RequestOp::kRequestDeleteRange:
      return CheckDeleteRequest(u.request_delete_range());
    case RequestOp::kRequestTxn:
      return CheckTxnOps(u.request_txn(), max_ops);
    default:
      // etcd answers an empty op with this (odd) text.
      return InvalidArgumentError("etcdserver: key not found");
  }
}

Status CheckTxnOps(const TxnRequest& r, int max_ops) {
  int opc = std::max({r.compare_size(), r.success_size(), r.failure_size()});
  if (opc > max_ops) {
    return InvalidArgumentError(
        "etcdserver: too many operations in txn request");
  }
  for (const Compare& c : r.compare()) {
    if (c.key().empty()) return EmptyKeyError();
  }
  for (const RequestOp& u : r.success()) {
    RETURN_IF_ERROR(CheckRequestOp(u, max_ops - opc));
  }
  for (const RequestOp& u : r.failure()) {
    RETURN_IF_ERROR(CheckRequestOp(u, max_ops - opc));
  }
  return Status::Ok();
}

// The keys deleted on one execution path: a union of ranges [begin, end),
// merged, so that a put is checked against all of them in O(log n) (a
// list scanned for every put was quadratic: ~43,000 puts against ~43,000
// deletes, in a txn within --max-txn-ops, took seconds on every member).
// A point delete is [key, key + "\0"). Unlike etcd 3.4 (whose interval
// check reads "\0" literally and so lets a put slip past a delete-to-the-
// end), range_end "\0" means every key >= begin here, as it does when the
// delete executes; a range_end at or below its key deletes nothing.
class DeletedKeys {
 public:
  void AddDelete(const etcdserverpb::DeleteRangeRequest& d) {
    if (d.range_end().empty()) {
      Add(d.key(), End{d.key() + std::string(1, '\0'), false});
    } else if (d.range_end().size() == 1 && d.range_end()[0] == '\0') {
      Add(d.key(), End{"", true});
    } else {
      Add(d.key(), End{d.range_end(), false});
    }
  }
  void AddAll(const DeletedKeys& other) {
    for (const auto& [begin, end] : other.ranges_) Add(begin, end);
  }
  bool Contains(const std::string& k) const {
    auto it = ranges_.upper_bound(k);
    if (it == ranges_.begin()) return false;
    --it;
    return it->second.to_infinity || k < it->second.key;
  }

 private:
  struct End {
    std::string key;  // exclusive
    bool to_infinity = false;
  };
  static bool Before(const End& a, const End& b) {
    return !a.to_infinity && (b.to_infinity || a.key < b.key);
  }

  void Add(std::string begin, End end) {
    if (!end.to_infinity && end.key <= begin) return;  // empty
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.to_infinity || prev->second.key >= begin) {
        // Overlaps or touches the range before: grow that one.
        if (!Before(prev->second, end)) return;  // already covered
        begin = prev->first;
        it = prev;
      }
    }
    // Swallow every range that starts inside (or right at the end of) the
    // new one.
    while (it != ranges_.end() && (end.to_infinity || it->first <= end.key)) {
      if (Before(end, it->second)) end = it->second;
      it = ranges_.erase(it);
    }
    ranges_.emplace(std::move(begin), std::move(end));
  }

  std::map<std::string, End> ranges_;  // begin -> end, disjoint
};

// Mirrors etcd's checkIntervals: deletes of this level first, then the puts
// of nested txns (then/else may share keys: only one runs), then this
// level's puts.
Status CheckIntervals(const Ops& reqs, std::set<std::string>* puts_out,
                      DeletedKeys* dels_out) {
  DeletedKeys dels;
  for (const RequestOp& req : reqs) {
    if (req.request_case() != RequestOp::kRequestDeleteRange) continue;
    dels.AddDelete(req.request_delete_range());
  }
  std::set<std::string> puts;
  for (const RequestOp& req : reqs) {
    if (req.request_case() != RequestOp::kRequestTxn) continue;
    std::set<std::string> puts_then, puts_else;
    DeletedKeys dels_then, dels_else;
    RETURN_IF_ERROR(
        CheckIntervals(req.request_txn().success(), &puts_then, &dels_then));
    RETURN_IF_ERROR(
        CheckIntervals(req.request_txn().failure(), &puts_else, &dels_else));
    for (const std::string& k : puts_then) {
      if (puts.count(k) != 0 || dels.Contains(k)) return DuplicateKeyError();
      puts.insert(k);
    }
    for (const std::string& k : puts_else) {
      if (puts.count(k) != 0 && puts_then.count(k) == 0) {
        return DuplicateKeyError();
      }
      if (dels.Contains(k)) return DuplicateKeyError();
      puts.insert(k);
    }
    dels.AddAll(dels_then);
    dels.AddAll(dels_else);
  }
  for (const RequestOp& req : reqs) {
    if (req.request_case() != RequestOp::kRequestPut) continue;
    const std::string& k = req.request_put().key();
    if (puts.count(k) != 0 || dels.Contains(k)) return DuplicateKeyError();
    puts.insert(k);
  }
  if (puts_out) *puts_out = std::move(puts);
  if (dels_out) *dels_out = std::move(dels);
  return Status::Ok();
}

// Depth-first; `depth` is r's own (1 for the request). The recursion is as
// deep as the decoded request, which protobuf's parser bounds.
bool NestsDeeperThan(const TxnRequest& r, int depth, int limit) {
  if (depth > limit) return true;
  for (const Ops* ops : {&r.success(), &r.failure()}) {
    for (const RequestOp& op : *ops) {
      if (op.request_case() == RequestOp::kRequestTxn &&
          NestsDeeperThan(op.request_txn(), depth + 1, limit)) {
        return true;
      }
    }
  }
  return false;
}

bool AnyOp(const TxnRequest& r, bool (*pred)(const RequestOp&)) {
  for (const Ops* ops : {&r.success(), &r.failure()}) {
    for (const RequestOp& op : *ops) {
      if (pred(op)) return true;
      if (op.request_case() == RequestOp::kRequestTxn &&
          AnyOp(op.request_txn(), pred)) {
        return true;
      }
    }
  }
  return false;
}

int Sign(int64_t a, int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

bool CompareKV(const Compare& c, const mvccpb::KeyValue& kv) {
  int result = 0;
  switch (c.target()) {
    case Compare::VALUE: {
      int r = kv.value().compare(c.value());
      result = r < 0 ? -1 : (r > 0 ? 1 : 0);
      break;
    }
    case Compare::CREATE:
      result = Sign(kv.create_revision(), c.create_revision());
      break;
    case Compare::MOD:
      result = Sign(kv.mod_revision(), c.mod_revision());
      break;
    case Compare::VERSION:
      result = Sign(kv.version(), c.version());
      break;
    case Compare::LEASE:
      result = Sign(kv.lease(), c.lease());
      break;
    default:
      break;
  }
  switch (c.result()) {
    case Compare::EQUAL:
      return result == 0;
    case Compare::NOT_EQUAL:
      return result != 0;
    case Compare::GREATER:
      return result > 0;
    case Compare::LESS:
      return result < 0;
    default:
      return true;
  }
}

StatusOr<bool> ApplyCompare(ReadView* view, int64_t rev, const Compare& c,
                            const LatestLookup& latest) {
  if (latest && c.range_end().empty() && c.target() != Compare::VALUE) {
    // A missing key compares as 0 (below).
    return CompareKV(c, latest(c.key()).value_or(mvccpb::KeyValue()));
  }
  bool any = false;
  bool ok = true;
  Status decode_status;
  RETURN_IF_ERROR(ScanRange(
      view, c.key(), c.range_end(), rev,
      [&](std::string_view prefix, int64_t main, std::string_view record) {
        any = true;
        mvccpb::KeyValue kv;
        decode_status = DecodeKeyValue(prefix, main, record,
                                       c.target() == Compare::VALUE, &kv);
        if (!decode_status.ok()) return false;
        ok = CompareKV(c, kv);
        return ok;
      }));
  RETURN_IF_ERROR(decode_status);
  if (!any) {
    // A missing key has no value to compare ("" would be ambiguous), so a
    // VALUE compare fails whatever the operator; the rest compare as 0.
    if (c.target() == Compare::VALUE) return false;
    return CompareKV(c, mvccpb::KeyValue());
  }
  return ok;
}

Status AppendPath(ReadView* view, int64_t rev, const TxnRequest& r,
                  const LatestLookup& latest, std::vector<bool>* path) {
  bool succeeded = true;
  for (const Compare& c : r.compare()) {
    ASSIGN_OR_RETURN(bool ok, ApplyCompare(view, rev, c, latest));
    if (!ok) {
      succeeded = false;
      break;
    }
  }
  path->push_back(succeeded);
  for (const RequestOp& op : succeeded ? r.success() : r.failure()) {
    if (op.request_case() == RequestOp::kRequestTxn) {
      RETURN_IF_ERROR(AppendPath(view, rev, op.request_txn(), latest, path));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckRangeRequest(const etcdserverpb::RangeRequest& r) {
  if (r.key().empty()) return EmptyKeyError();
  return Status::Ok();
}

Status CheckPutRequest(const etcdserverpb::PutRequest& r) {
  if (r.key().empty()) return EmptyKeyError();
  if (r.ignore_value() && !r.value().empty()) {
    return InvalidArgumentError("etcdserver: value is provided");
  }
  if (r.ignore_lease() && r.lease() != 0) {
    return InvalidArgumentError("etcdserver: lease is provided");
  }
  return Status::Ok();
}

Status CheckDeleteRequest(const etcdserverpb::DeleteRangeRequest& r) {
  if (r.key().empty()) return EmptyKeyError();
  return Status::Ok();
}

Status CheckTxnRequest(const TxnRequest& r, int max_ops) {
  RETURN_IF_ERROR(CheckTxnOps(r, max_ops));
  // After the op checks: the duplicate check walks every op.
  RETURN_IF_ERROR(CheckIntervals(r.success(), nullptr, nullptr));
  RETURN_IF_ERROR(CheckIntervals(r.failure(), nullptr, nullptr));
  return Status::Ok();
}

Status CheckTxnNesting(const TxnRequest& r) {
  if (!NestsDeeperThan(r, 1, kMaxTxnNesting)) return Status::Ok();
  return InvalidArgumentError("etcdserver: txn request nests more than " +
                              std::to_string(kMaxTxnNesting) + " txns");
}

bool IsTxnReadOnly(const TxnRequest& r) {
  return !AnyOp(r, [](const RequestOp& op) {
    return op.request_case() == RequestOp::kRequestPut ||
           op.request_case() == RequestOp::kRequestDeleteRange;
  });
}

bool TxnHasPut(const TxnRequest& r) {
  return AnyOp(r, [](const RequestOp& op) {
    return op.request_case() == RequestOp::kRequestPut;
  });
}

StatusOr<std::vector<bool>> CompareToPath(ReadView* view, int64_t rev,
                                          const TxnRequest& r,
                                          const LatestLookup& latest) {
  std::vector<bool> path;
  RETURN_IF_ERROR(AppendPath(view, rev, r, latest, &path));
  return path;
}

}  // namespace kplane::mvcc
