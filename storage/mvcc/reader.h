// Reading the key-major history at a revision (internal to kplane_mvcc).
//
// A ReadView hands out RocksDB iterators over one consistent state: the
// database (optionally pinned at a snapshot) or a write transaction's
// uncommitted batch layered on the database. ScanLive walks the newest
// version <= rev of every user key in a range, skipping deleted keys, with
// about one seek per key:
//
//   versions (newest first):  a@9 a@7 a@2 | b@8(tomb) b@3 | c@12 c@5
//   ScanLive(rev=8):  Seek(a,~8) -> a@7 (visit) ; Next x1 -> a@2 same key,
//                     Seek(succ(a)) -> b@8 tombstone (skip) ; Next -> b@3,
//                     Next -> c@12 > 8 -> Seek(c,~8) -> c@5 (visit)
//
// Thread-safety: a ReadView is used by one thread at a time; distinct views
// may be used concurrently. Errors: IOError/Corruption from RocksDB or a
// malformed record.
#ifndef KPLANE_STORAGE_MVCC_READER_H_
#define KPLANE_STORAGE_MVCC_READER_H_

#include <rocksdb/db.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/statusor.h"
#include "schemas/kv.pb.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/staged_batch.h"

namespace kplane::mvcc {

// A RocksDB iterator that owns its bounds (RocksDB keeps Slices to them).
class Cursor {
 public:
  Cursor(std::string lower, std::string upper);
  rocksdb::ReadOptions* read_options() { return &ro_; }
  void Reset(rocksdb::Iterator* it) { it_.reset(it); }
  rocksdb::Iterator* it() const { return it_.get(); }
  rocksdb::Iterator* operator->() const { return it_.get(); }
  const std::string& lower() const { return lower_; }
  const std::string& upper() const { return upper_; }

 private:
  std::string lower_, upper_;
  rocksdb::Slice lower_slice_, upper_slice_;
  rocksdb::ReadOptions ro_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

class ReadView {
 public:
  virtual ~ReadView() = default;
  // An iterator over RocksDB keys in [lower, upper).
  virtual std::unique_ptr<Cursor> NewCursor(std::string lower,
                                            std::string upper) = 0;
};

// Reads the database, at `snapshot` when given (not owned).
class DbView : public ReadView {
 public:
  DbView(rocksdb::DB* db, const rocksdb::Snapshot* snapshot)
      : db_(db), snapshot_(snapshot) {}
  std::unique_ptr<Cursor> NewCursor(std::string lower,
                                    std::string upper) override;

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snapshot_;
};

// Reads a write group's staged batch layered on the database. A cursor
// over a batch that holds records makes the batch build its index
// (StagedBatch::Indexed); over an empty one it reads the database alone.
class BatchView : public ReadView {
 public:
  BatchView(rocksdb::DB* db, StagedBatch* batch) : db_(db), batch_(batch) {}
  std::unique_ptr<Cursor> NewCursor(std::string lower,
                                    std::string upper) override;

 private:
  rocksdb::DB* db_;
  StagedBatch* batch_;
};

// Called with the version-key prefix, revision and record of the newest live
// version of each key. Returns false to stop.
using LiveVisitor = std::function<bool(std::string_view prefix, int64_t main,
                                       std::string_view record)>;

// Walks [lower, upper) (version-key bounds from keys::VersionBounds) at
// revision `rev` on a cursor created with those bounds.
Status ScanLive(Cursor* cursor, int64_t rev, const LiveVisitor& visit);

// Convenience: ScanLive over a view for user keys [key, range_end) (etcd
// conventions).
Status ScanRange(ReadView* view, std::string_view key,
                 std::string_view range_end, int64_t rev,
                 const LiveVisitor& visit);

// Decodes a visited version into a full KeyValue.
Status DecodeKeyValue(std::string_view prefix, int64_t main,
                      std::string_view record, bool with_value,
                      mvccpb::KeyValue* kv);

// The newest version of `key` (any revision) when it is live.
StatusOr<std::optional<mvccpb::KeyValue>> GetLatest(ReadView* view,
                                                    std::string_view key);

// Counts the live keys of a range request's range at a revision without
// reading them (the store's key index), or returns nullopt.
using RangeCounter = std::function<std::optional<int64_t>(int64_t rev)>;

// Executes a RangeRequest at `current_rev` (the header revision) with etcd's
// rules: revision <= 0 is current, > current is FutureRevision, below
// `compact_rev` is Compacted; count ignores limit and min/max filters;
// sort before limit; negative limit is no limit.
// With a `counter`, a count_only request reads no rows and a request whose
// rows come in key order with a limit (a paged list) reads only `limit`
// rows; the count comes from the counter.
// The answer goes into `*out`, which must be empty and may live on a
// protobuf arena (then its rows cost no separate frees); on an error its
// contents are unspecified.
Status ExecuteRange(ReadView* view, const etcdserverpb::RangeRequest& req,
                    int64_t current_rev, int64_t compact_rev,
                    etcdserverpb::RangeResponse* out,
                    const RangeCounter& counter = nullptr);

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_READER_H_
