// Store: kplane's revisioned key-value store on RocksDB (etcd's mvcc
// package, plus its lessor and the parts of its apply layer that give
// Range/Put/DeleteRange/Txn their exact semantics).
//
// A global revision increases by one per write transaction. Every key keeps
// its history (create_revision, mod_revision, version, lease per version)
// until compaction, so Range can read any uncompacted revision. Watchers see
// every change in revision order. Leases delete their keys when revoked.
// Requests and responses are etcd's messages (schemas/rpc.proto); responses
// fill header.revision only. On-disk layout: FORMAT.md.
//
//   ASSIGN_OR_RETURN(auto store, Store::Open({.dir = "/var/lib/kplane"}));
//   PutRequest put;  put.set_key("/foo");  put.set_value("v1");
//   ASSIGN_OR_RETURN(auto resp, store->Put(put));   // header.revision 1
//
// Durability: each write transaction (or write group, below) is one RocksDB
// write batch that also carries the new revision and the caller's
// consistent_index (the raft log index that produced it; 0 = none), so after
// a crash the store reports the last index applied and nothing is
// half-applied. With sync_writes=true the
// batch is fsynced (RocksDB's WAL) before the call returns: an acknowledged
// write survives a power cut. With sync_writes=false it reaches the OS but
// is not fsynced: it survives a process crash but not a power loss (the
// replicated server replays its raft log for that, and calls Sync() before
// it records a snapshot).
//
// Files: RocksDB's files go through Options::file_system
// (base/file_system.h, via rocks_env.h): created 0600 in a 0700 directory
// whose parents are synced when created, so a fault-injecting file system
// can cut the power under the store.
//
// Failed writes: a write RocksDB refuses (a full disk, an I/O error) is
// sticky, as leveldb's bg_error_: that write and every later one fail with
// WriteStatus() -- kNoSpace with etcd's "database space exceeded" text for a
// full disk (the NOSPACE alarm is raised, in memory), kIOError otherwise --
// while reads, watches and HashKV keep working. Nothing of the failed write
// is published (revision, watch events, lease attachments, consistent index
// stay where they were); whether its bytes survive a restart is unknown, so
// its outcome is unknown, as for any failed I/O. A full disk is recoverable:
// free space, then ResumeAfterFullDisk() (the replicated server retries the
// failed writes then, and lifts the alarm when it is disarmed) or
// DisarmNoSpaceAlarm(). Any other failure lasts until the store is
// reopened. Nothing crashes the process.
//
// Ownership: the store owns its RocksDB and three threads (compaction, watch
// catch-up, optional auto-compaction). Close() or the destructor stops them.
// Watch streams must not be used after the store is closed.
//
// Key index: the store keeps every key's uncompacted versions (revision,
// tombstone, create_revision, version, lease -- no values) in memory, as
// etcd's treeIndex does (key_index.h). It is rebuilt from RocksDB by Open()
// (so also after a snapshot install, which reopens the store), kept under
// the write lock by every write, rolled back with a failed write, and
// compacted by Compact(). Writes take a previous version's metadata from it
// (RocksDB is read only for a previous value a caller asks for), deletes
// take their live keys from it, and Range answers `count` (count_only, and
// limit with `more`) from it, reading only the rows it returns. Memory:
// about 140 bytes per key plus 40 per uncompacted version (docs/store.md).
// Options::key_index=false turns it off (for comparisons).
//
// Thread-safety: every method may be called from any thread. Writes are
// serialized by one write lock (the replicated server calls them from its
// apply thread anyway); reads take no lock of the store's (the key index
// has a reader-writer lock) and read a RocksDB snapshot.
// Lock order: write_mu_ -> the lessor's and the watch hub's mutexes (a write
// notifies watchers and attaches leases under it); compact_mu_ is never held
// with write_mu_ and is taken with no other lock of the store held.
//
// Errors: etcd's texts, see README.md. Compacted (detail = compacted
// revision), FutureRevision (detail = current revision), NoSpace when the
// NOSPACE alarm is active, TooLarge for requests over max_request_bytes,
// InvalidArgument/NotFound/FailedPrecondition/OutOfRange as etcd.
#ifndef KPLANE_STORAGE_MVCC_STORE_H_
#define KPLANE_STORAGE_MVCC_STORE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/file_system.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/statusor.h"
#include "schemas/kv.pb.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/auto_compactor.h"
#include "storage/mvcc/store_metrics.h"
#include "storage/mvcc/watch.h"

namespace rocksdb {
class DB;
class Env;
class Status;
class Iterator;
class WriteBatch;
}  // namespace rocksdb

namespace kplane::mvcc {

class KeyIndex;
class StagedBatch;
class Lessor;
class ReadView;
class WatchHub;
class WriteTxn;

struct Options {
  std::string dir;
  // fsync every write batch (standalone use); the replicated server leaves
  // this off and gets durability from its raft log.
  bool sync_writes = false;
  // etcd's --max-request-bytes: a request whose encoding is larger is
  // rejected with TooLarge "etcdserver: request is too large".
  int64_t max_request_bytes = 1536 * 1024;
  // etcd's --quota-backend-bytes: past it, writes raise the NOSPACE alarm.
  int64_t quota_bytes = int64_t{2} << 30;
  // Whether a write that would take the store past `quota_bytes` is refused
  // (and raises the store's own persisted alarm). The replicated server
  // turns this off: there every member must apply every committed entry,
  // and file sizes differ between members, so a refusal while applying
  // would make one member's data differ from the others'. It applies the
  // write and reads OverQuota() instead, raising NOSPACE through the log
  // (etcd's quotaApplierV3 does the same).
  bool refuse_writes_over_quota = true;
  int max_txn_ops = 128;
  Clock* clock = Clock::Real();
  AutoCompactionOptions auto_compaction;
  // Watch: responses queued per stream (at least; one per watcher of a
  // stream with more, watch_hub.h StreamState::Limit); per-watcher
  // progress interval.
  size_t watch_queue_capacity = 128;
  Duration watch_progress_interval = minutes(10);
  // Compaction deletes in write batches of about this many records (a
  // key's superseded versions always go together, in one range deletion).
  int compaction_batch_records = 1000;
  // RocksDB block cache.
  int64_t block_cache_bytes = 64 << 20;
  // Flush RocksDB's memtables on Close() so the next Open() replays no WAL.
  // Off leaves the directory as a crash would (benchmarks of recovery).
  bool flush_on_close = true;
  // Where RocksDB's files go; null = FileSystem::Default(). Not owned; must
  // outlive the store.
  FileSystem* file_system = nullptr;
  // Keep the in-memory key index (above). Off: every previous version and
  // every count is read from RocksDB (the store before the index; for
  // benchmarks and tests that compare the two).
  bool key_index = true;
  // Index every staged record for reads as it is staged (the store before
  // staged_batch.h, which indexes a write group's batch only when it is
  // read). For tests and benchmarks that compare the two.
  bool index_every_staged_write = false;
  // etcd's mvcc and backend series (store_metrics.h), or null for none.
  // Shared: the registry behind it must outlive the store. The keys, size
  // and revision gauges are set by whichever store wrote last when several
  // share them.
  std::shared_ptr<const StoreMetrics> metrics;
};

class Store {
 public:
  // The revision of a new, empty store, as etcd's: the first write is
  // revision 2. (A store created before this was 1 started at 0 and keeps
  // its revisions; see FORMAT.md.)
  static constexpr int64_t kInitialRevision = 1;

  static StatusOr<std::unique_ptr<Store>> Open(const Options& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Stops the threads, flushes and closes RocksDB. Idempotent.
  void Close() EXCLUDES(write_mu_, compact_mu_);

  // ---- key-value --------------------------------------------------------
  StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req);
  // The same into `*out`, which must be empty and may live on a protobuf
  // arena (the gRPC front's, so a large answer's rows cost no frees each).
  Status Range(const etcdserverpb::RangeRequest& req,
               etcdserverpb::RangeResponse* out);
  StatusOr<etcdserverpb::PutResponse> Put(const etcdserverpb::PutRequest& req,
                                          uint64_t consistent_index = 0)
      EXCLUDES(write_mu_);
  StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& req,
      uint64_t consistent_index = 0) EXCLUDES(write_mu_);
  StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req,
                                          uint64_t consistent_index = 0)
      EXCLUDES(write_mu_);

  // ---- write groups (the replicated server's apply path) -----------------
  // Between BeginWriteGroup() and EndWriteGroup(), Put, DeleteRange and Txn
  // stage their changes in one batch instead of writing each: the group
  // reaches RocksDB in one write, with the revision, consistent index and
  // size records written once, and only then do readers, watchers and the
  // lessor see it, one revision after the other. Each call still returns
  // its full response (revision included) and reads what the group staged
  // before it; a caller must not act on a response (answer a client)
  // before EndWriteGroup() returns. Any other write (compaction, leases,
  // alarms, a read-only Txn with a consistent index, Sync) first writes out
  // what is staged, so a group may reach RocksDB in several writes, each
  // with the consistent index of its last staged entry. A crash keeps
  // whole writes only, so the raft log replays exactly what was lost.
  // Saves a RocksDB write and three meta records per entry.
  //
  // One group at a time, and while it is open only its owner (the apply
  // thread) may write: another thread's Put would join the group. Reads
  // from any thread see only what was written out.
  //
  // If writing the group out fails, nothing it staged is published and the
  // responses handed out for it are void: a caller checks WriteStatus()
  // after EndWriteGroup() before it acts on them.
  //
  //   store->BeginWriteGroup();
  //   auto a = store->Put(put_a, 41);   // revision 8, not yet visible
  //   auto b = store->Txn(cas_on_a, 42);  // sees a; revision 9
  //   store->EndWriteGroup();            // one write; revisions 8, 9 visible
  void BeginWriteGroup() EXCLUDES(write_mu_);
  void EndWriteGroup() EXCLUDES(write_mu_);
  // Writes out and publishes what the open group staged; the group stays
  // open. (For callers about to read the store's current state.)
  void FlushWriteGroup() EXCLUDES(write_mu_);

  // OK, or the sticky error of the first write RocksDB refused (above).
  Status WriteStatus() const EXCLUDES(error_mu_);

  // ---- compaction and maintenance -----------------------------------------
  // Makes revisions below `revision` unreadable at once and deletes their
  // superseded versions in the background. Compacted if revision <= the
  // compacted revision, FutureRevision if above the current one.
  Status Compact(int64_t revision, uint64_t consistent_index = 0)
      EXCLUDES(write_mu_, compact_mu_);
  // Waits until the physical compaction up to `revision` has finished
  // (etcd's physical=true). Unavailable if the store closes first.
  Status WaitForCompaction(int64_t revision) EXCLUDES(compact_mu_);
  // Rewrites the database to reclaim space (RocksDB full compaction).
  Status Defrag();
  // Makes every write so far durable (fsyncs RocksDB's WAL). The replicated
  // server calls it before it records a raft snapshot at the store's
  // consistent index, because it writes with sync_writes=false.
  Status Sync() EXCLUDES(write_mu_);
  // Bytes of the database files on disk (SST, WAL, manifest).
  int64_t DbSize() const;
  // Bytes of live records (keys + values of every stored version, event,
  // lease and attachment): what a defrag would keep.
  int64_t DbSizeInUse() const { return size_in_use_.load(); }
  // etcd HashKV: CRC-32C over every key-value live at `revision` (0 =
  // current), in key order.
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int64_t revision);
  // A consistent copy of the database in `dir` (which must not exist), for
  // snapshots; Store::Open on it restores this state. Fails with
  // WriteStatus() while a write has failed (the copy would start with a
  // flush, which after a full disk keeps RocksDB from resuming).
  Status Checkpoint(const std::string& dir);

  // Everything the store keeps, read at one instant (one RocksDB
  // snapshot, so revision, consistent index and data agree), for a snapshot
  // in etcd's backend format (storage/bolt/etcd_backend.h): every stored
  // version, history not yet compacted included, in revision order.
  // Memory: the whole history at once. Errors: IOError/Corruption.
  struct ExportedVersion {
    int64_t main = 0;
    int64_t sub = 0;
    bool tombstone = false;
    mvccpb::KeyValue kv;  // key, create/mod revision, version, value,
                          // lease; a tombstone's holds only the key
  };
  struct Export {
    int64_t revision = 0;
    uint64_t consistent_index = 0;
    int64_t compact_scheduled = 0;
    int64_t compact_finished = 0;
    std::vector<ExportedVersion> versions;            // by (main, sub)
    std::vector<std::pair<int64_t, int64_t>> leases;  // (id, TTL) by id
  };
  StatusOr<Export> ExportAll();

  // The inverse of ExportAll, for restoring a snapshot written by another
  // store (etcd's backend, storage/bolt/etcd_backend.h): creates a new store
  // at options.dir (which must not exist, or be empty) holding exactly
  // `data` -- every version at its own (main, sub) revision with its
  // create revision, version and lease, the leases, the compaction
  // revisions and the consistent index -- and closes it; Store::Open then
  // serves it. The revision is the largest of data.revision, the last
  // version's and kInitialRevision. A key whose newest version is a put
  // with a lease that `data` does not hold keeps the lease id in its
  // version but is attached to no lease (etcd's lessor skips such keys on
  // recovery the same way).
  // Memory: the records of up to 10,000 versions at a time. Errors:
  // kAlreadyExists for a non-empty dir, kInvalidArgument for data that no
  // store could hold (a revision below 1 or past the revision, a sub
  // revision out of range, two versions at one revision, a put without a
  // create revision or version, compaction revisions past the revision or
  // out of order), kIOError from RocksDB. A failed import leaves a partial
  // store behind: create it in a staging directory.
  static Status CreateFromExport(const Options& options, const Export& data);

  int64_t CurrentRevision() const { return current_rev_.load(); }
  // The compaction revision requested last (reads below it fail).
  int64_t CompactRevision() const { return compact_scheduled_.load(); }
  // The compaction revision physically completed.
  int64_t FinishedCompactRevision() const EXCLUDES(compact_mu_);
  uint64_t ConsistentIndex() const { return consistent_index_.load(); }
  // How many times a write read a key's newest version from RocksDB (a
  // seek through the write group's batch and the database) to learn its
  // lease or value (put with ignore_lease / ignore_value). With the key
  // index only ignore_value reads; tests check that.
  int64_t LatestReadsForTesting() const { return latest_reads_.load(); }
  // Forgets the raft index the data was written at (durably). For restoring
  // a snapshot into a new cluster, whose log starts over at index 1 and must
  // not skip its first entries as "already applied".
  Status ResetConsistentIndex() EXCLUDES(write_mu_);

  // ---- NOSPACE alarm ------------------------------------------------------
  // Raised by a write over quota (persisted) or by a full disk (in memory).
  bool NoSpaceAlarm() const { return nospace_.load() || disk_full_.load(); }
  // Only the quota's part of it (persisted until disarmed).
  bool QuotaAlarm() const { return nospace_.load(); }
  // With Options::refuse_writes_over_quota off: whether the last put, txn
  // with a put or lease grant left the store past its quota (as measured
  // for the quota: the files at the last measure plus what was written
  // since). False again after DisarmNoSpaceAlarm until a write measures.
  bool OverQuota() const { return over_quota_.load(); }
  // Whether the last failed write found the disk full (the sticky error is
  // kNoSpace) and no resume has succeeded since.
  bool DiskFull() const { return disk_full_.load(); }
  // After a full disk: resumes RocksDB (it writes its memtables out and
  // starts a new log) and, if that works, lifts the sticky error so that
  // writes go through again -- the quota alarm, if any, stays. The caller
  // (the replicated server's apply thread) retries the writes that failed.
  // kNoSpace (or another error) while the disk is still full; OK and a no-op
  // when the sticky error is not a full disk (or there is none). Any other
  // sticky error stays until the store reopens.
  Status ResumeAfterFullDisk() EXCLUDES(write_mu_);
  // Clears the alarm (etcdctl alarm disarm). A later write over quota raises
  // it again. After a full disk it first resumes (ResumeAfterFullDisk); if
  // the disk is still full it fails with kNoSpace and the alarm stays.
  Status DisarmNoSpaceAlarm(uint64_t consistent_index = 0) EXCLUDES(write_mu_);

  // ---- leases -------------------------------------------------------------
  // ID 0 picks an unused ID deterministically from the applied history (the
  // replicated server should pick IDs before proposing, as etcd's leader
  // does). TTL below 2 s is raised to 2 s.
  StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      const etcdserverpb::LeaseGrantRequest& req, uint64_t consistent_index = 0)
      EXCLUDES(write_mu_);
  // Deletes the lease and its keys (all in one revision).
  StatusOr<etcdserverpb::LeaseRevokeResponse> LeaseRevoke(
      const etcdserverpb::LeaseRevokeRequest& req,
      uint64_t consistent_index = 0) EXCLUDES(write_mu_);
  // Primary only (NotLeader otherwise). Not persisted, as etcd.
  StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req);
  // Unknown lease: success with TTL -1, as etcd.
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req);
  StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases();
  // Lease expiry is counted only after Promote (the leader); the store
  // starts demoted. Expired leases are reported, never revoked here.
  void LeasePromote(Duration extend);
  void LeaseDemote();
  std::vector<int64_t> ExpiredLeases(size_t limit = 1000);

  // ---- watch --------------------------------------------------------------
  std::unique_ptr<WatchStream> NewWatchStream();
  struct WatchStats {
    size_t synced = 0, unsynced = 0, victims = 0;
  };
  WatchStats GetWatchStats() const;

  // ---- introspection for tests and tools -----------------------------------
  // Every stored version of `key`, newest first: (mod revision, is
  // tombstone). Compaction tests check physical deletion with it.
  std::vector<std::pair<int64_t, bool>> RawVersions(const std::string& key);
  // Number of event-log records with revision <= `revision`.
  int64_t RawEventCount(int64_t up_to_revision);
  // Keys and versions the key index holds (0, 0 without one).
  std::pair<size_t, size_t> KeyIndexSize() const;

 private:
  class Backend;
  class Events;
  explicit Store(const Options& options);

  Status OpenDb();
  // Whether the directory holds a RocksDB WAL with records, which the next
  // open replays.
  StatusOr<bool> HasWalToReplay() const;
  Status LoadMeta();
  Status LoadLeases();
  // Builds the key index from the stored versions (Open).
  Status BuildKeyIndex();

  // Stages the transaction in the write group; outside an open group (or
  // with `write_now`) writes the group out at once: one batch with the new
  // revision, consistent index and size, then lease changes and watchers.
  // Fails with the sticky write error.
  Status CommitLocked(WriteTxn* txn, uint64_t consistent_index,
                      bool write_now = false) REQUIRES(write_mu_);
  Status WriteMetaLocked(uint64_t consistent_index) REQUIRES(write_mu_);
  // Writes out what the current write group staged, then publishes it. On a
  // failed write (or a sticky error) drops it unpublished.
  Status FlushGroupLocked() REQUIRES(write_mu_);
  void DropGroupLocked() REQUIRES(write_mu_);
  // Writes `wb` outside the write group, turning a failure into the sticky
  // error; fails at once if there is one.
  Status WriteLocked(rocksdb::WriteBatch* wb, bool sync, std::string_view what)
      REQUIRES(write_mu_);
  // Records a failed RocksDB write as the sticky error and returns it.
  Status WriteFailed(const rocksdb::Status& st, std::string_view what)
      EXCLUDES(error_mu_);
  // The revision the next write starts from: the group's when it staged
  // something, else the store's.
  int64_t WriteRevLocked() const REQUIRES(write_mu_);
  // What the write group staged (empty outside an open group).
  StagedBatch* StagedBatchLocked() REQUIRES(write_mu_);
  Status CheckRequestSize(size_t request_bytes) const;
  // NoSpace when the quota alarm is active or `cost` would exceed the quota.
  // (A full disk refuses writes through the sticky error instead, so that a
  // resumed store takes the failed writes again.) Without
  // refuse_writes_over_quota it never refuses and sets over_quota_ instead.
  Status CheckQuotaLocked(int64_t cost) REQUIRES(write_mu_);
  // ResumeAfterFullDisk's work.
  Status ResumeLocked() REQUIRES(write_mu_);
  // A transaction staging into the write group's batch (every write does;
  // outside an open group the group holds one transaction at a time).
  std::unique_ptr<WriteTxn> NewWriteTxnLocked() REQUIRES(write_mu_);

  // Txn pieces (store_txn.cc).
  enum class OpCheck { kPuts, kRanges };
  Status CheckTxnOps(ReadView* view, const etcdserverpb::TxnRequest& r,
                     const std::vector<bool>& path, size_t* idx, int64_t rev,
                     int64_t compact_rev, OpCheck what);
  // Executes the ops on the path; ranges read `view` at `rev` (the txn's own
  // view and revision for write txns, where `txn` is non-null).
  // Adds what it executes to `tally` (store_metrics.h).
  Status ApplyTxnOps(ReadView* view, WriteTxn* txn,
                     const etcdserverpb::TxnRequest& r,
                     const std::vector<bool>& path, size_t* idx,
                     int64_t read_rev, int64_t compact_rev,
                     etcdserverpb::TxnResponse* resp, OpTally* tally);
  StatusOr<etcdserverpb::TxnResponse> ReadOnlyTxn(
      const etcdserverpb::TxnRequest& req, OpTally* tally);
  // Sets the size, key and revision gauges (options_.metrics) from what
  // is published; called wherever that changes.
  void PublishGauges() const;
  StatusOr<std::optional<mvccpb::KeyValue>> PutLocked(
      WriteTxn* txn, const etcdserverpb::PutRequest& req) REQUIRES(write_mu_);
  // The newest live version of `key` as `view` sees it (a write's view:
  // the group's staged writes included), for ignore_lease / ignore_value.
  // Without `want_value` it comes from the key index when there is one
  // (create/mod revision, version and lease; no value), which holds the
  // same state as `view` under write_mu_: no RocksDB seek. A lease
  // renewal of the API server (a cached object's update keeps the key's
  // lease) is such a put, on every member for every renewal. Called by
  // writes only, under write_mu_ (not annotated: CheckTxnOps, its caller,
  // also serves read-only txns, which never reach the put branch).
  StatusOr<std::optional<mvccpb::KeyValue>> LatestForWrite(
      ReadView* view, const std::string& key, bool want_value);
  int64_t NextLeaseIdLocked() REQUIRES(write_mu_);

  // Lease backend pieces (store_lease.cc).
  Status SaveLeaseLocked(int64_t id, int64_t ttl, uint64_t ci)
      REQUIRES(write_mu_);
  Status DeleteLeaseAndKeysLocked(int64_t id,
                                  const std::vector<std::string>& keys,
                                  uint64_t ci) REQUIRES(write_mu_);

  // Compaction (store_compact.cc).
  void CompactionLoop() EXCLUDES(compact_mu_, write_mu_);
  // kCancelled when stopped before finishing; a failed read or write
  // otherwise.
  Status RunCompaction(int64_t target) EXCLUDES(compact_mu_, write_mu_);
  // Adds to `wb` the deletion of `user_key`'s versions that compaction to
  // `target` removes, read through `versions` (an iterator over the `k`
  // records); returns how many records that deletes.
  StatusOr<int64_t> CompactKey(rocksdb::Iterator* versions,
                               std::string_view user_key, int64_t target,
                               rocksdb::WriteBatch* wb, int64_t* freed);
  Status FlushCompactionBatch(rocksdb::WriteBatch* wb, int64_t* freed,
                              int64_t cursor_rev)
      EXCLUDES(compact_mu_, write_mu_);
  bool CompactionStopping() EXCLUDES(compact_mu_);

  // Events for the watch hub (store_watch.cc).
  Status ReadEvents(int64_t from, int64_t to, bool with_prev,
                    std::vector<mvccpb::Event>* out, int64_t* compacted);

  const Options options_;
  Clock* const clock_;
  FileSystem* const fs_;
  std::unique_ptr<rocksdb::Env> env_;  // outlives db_
  std::unique_ptr<rocksdb::DB> db_;

  // Serializes writers (and the commit of compaction batches). The atomics
  // below are written under it and read without it.
  Mutex write_mu_;
  // The first failed write (sticky). Taken after write_mu_ when both are.
  mutable Mutex error_mu_ ACQUIRED_AFTER(write_mu_);
  Status write_error_ GUARDED_BY(error_mu_);
  std::atomic<int64_t> current_rev_{0};
  std::atomic<uint64_t> consistent_index_{0};
  std::atomic<int64_t> compact_scheduled_{0};
  std::atomic<int64_t> size_in_use_{0};
  // Live keys (etcd_debugging_mvcc_keys_total): counted by Open from the
  // key index (0 without one), then moved by each published write.
  std::atomic<int64_t> live_keys_{0};
  // The database size as last measured (-1: not yet), for the gauge.
  std::atomic<int64_t> measured_size_for_gauge_{-1};
  // The quota alarm (persisted; refuses puts and lease grants).
  std::atomic<bool> nospace_{false};
  // A write failed for lack of disk space (the sticky error is kNoSpace).
  std::atomic<bool> disk_full_{false};
  // OverQuota().
  std::atomic<bool> over_quota_{false};
  int64_t lease_seq_ GUARDED_BY(write_mu_) = 0;
  struct WriteGroup;
  const std::unique_ptr<WriteGroup> group_ PT_GUARDED_BY(write_mu_);
  // Quota bookkeeping: the last measured size and what was written since.
  int64_t measured_db_size_ GUARDED_BY(write_mu_) = -1;
  int64_t written_since_measure_ GUARDED_BY(write_mu_) = 0;
  int64_t writes_since_measure_ GUARDED_BY(write_mu_) = 0;

  // Null when Options::key_index is off. Its mutators are called under
  // write_mu_ only.
  std::unique_ptr<KeyIndex> index_;
  // LatestForWrite's reads from RocksDB (LatestReadsForTesting).
  std::atomic<int64_t> latest_reads_{0};

  std::unique_ptr<Backend> lease_backend_;
  std::unique_ptr<Lessor> lessor_;
  std::unique_ptr<Events> event_source_;
  std::shared_ptr<WatchHub> hub_;

  mutable Mutex compact_mu_;
  std::condition_variable compact_cv_;
  int64_t compact_finished_ GUARDED_BY(compact_mu_) = 0;
  int64_t compact_cursor_ GUARDED_BY(compact_mu_) = 0;
  bool stopping_ GUARDED_BY(compact_mu_) = false;
  // Why compaction stopped (a failed read or write); it waits for a
  // recovery.
  Status compaction_error_ GUARDED_BY(compact_mu_);
  std::thread compact_thread_;
  std::unique_ptr<AutoCompactor> auto_compactor_;

  std::once_flag close_once_;
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_STORE_H_
