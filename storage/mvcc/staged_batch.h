// StagedBatch: the records a write group has staged and not yet written
// (internal to kplane_mvcc).
//
// The records go into a plain rocksdb::WriteBatch, which is what reaches
// RocksDB. The ordered index that reading the batch merged with the
// database needs (rocksdb::WriteBatchWithIndex: one more skiplist insert,
// with its key comparisons, per record) is built only when a read asks
// for it (Indexed()): the records staged so far are replayed into a
// WriteBatchWithIndex, with the open save points at the same places, and
// every later record of the group goes there too, until Clear(). Most
// groups never read what they staged -- a put takes its previous version
// from the key index -- and so never pay for the index; a group that does
// read pays for it once. The records, their order and so the bytes written
// are the same either way.
//
//   StagedBatch b;
//   b.Put("k1", "v1");           // plain: appended, not indexed
//   b.SetSavePoint();
//   b.Put("k2", "v2");
//   b.Indexed()->GetFromBatchAndDB(db, ro, "k1", &v);  // replays k1, save
//                                                       // point, k2
//   b.RollbackToSavePoint();     // k2 gone, in the indexed batch
//   db->Write(wo, b.GetWriteBatch());
//   b.Clear();                   // plain again
//
// Thread-safety: none; the store uses it under its write lock.
#ifndef KPLANE_STORAGE_MVCC_STAGED_BATCH_H_
#define KPLANE_STORAGE_MVCC_STAGED_BATCH_H_

#include <rocksdb/utilities/write_batch_with_index.h>
#include <rocksdb/write_batch.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace kplane::mvcc {

class StagedBatch {
 public:
  // `always_indexed`: index every record as it is staged, as the store did
  // before (for tests and benchmarks that compare the two).
  explicit StagedBatch(bool always_indexed = false);
  StagedBatch(const StagedBatch&) = delete;
  StagedBatch& operator=(const StagedBatch&) = delete;

  void Put(std::string_view key, std::string_view value);
  void Delete(std::string_view key);

  // Save points nest; Pop drops the newest, Rollback removes every record
  // staged since the newest and drops it. Calling Pop or Rollback without
  // a save point is a bug (CHECK).
  void SetSavePoint();
  void PopSavePoint();
  void RollbackToSavePoint();

  // Records staged, and the size of the batch's representation.
  uint32_t Count();
  size_t DataSize();

  // The batch to write (every staged record in order).
  rocksdb::WriteBatch* GetWriteBatch();

  // The staged records with the index reads need, built on the first call
  // after Clear().
  rocksdb::WriteBatchWithIndex* Indexed();
  bool indexed() const { return use_index_; }

  // Forgets every record and save point; the next group starts plain
  // (unless always indexed).
  void Clear();

 private:
  rocksdb::WriteBatch plain_;
  // Record counts at plain_'s open save points, oldest first: where the
  // replay into the index re-creates them.
  std::vector<uint32_t> save_counts_;
  // overwrite_key: required for reading the batch merged with the db.
  rocksdb::WriteBatchWithIndex index_;
  const bool always_indexed_;
  bool use_index_;
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_STAGED_BATCH_H_
