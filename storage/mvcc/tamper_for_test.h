// Test helper: silent corruption of a closed store, for corruption-check
// tests. Changes the last byte of the newest stored value of `user_key`
// directly in RocksDB, so the revision, the version and every meta record
// stay as they were: only a comparison with other members' data (HashKV)
// can find it, as with a bit flip that no checksum saw.
//
// Not for production code. The store must be closed (RocksDB's LOCK).
#ifndef KPLANE_STORAGE_MVCC_TAMPER_FOR_TEST_H_
#define KPLANE_STORAGE_MVCC_TAMPER_FOR_TEST_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "rocksdb/db.h"
#include "storage/mvcc/keys.h"

namespace kplane::mvcc::testing {

inline Status TamperNewestValue(const std::string& db_dir,
                                std::string_view user_key) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Options opts;
  rocksdb::Status st = rocksdb::DB::Open(opts, db_dir, &raw);
  if (!st.ok()) return IOError("open " + db_dir + ": " + st.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  const std::string prefix = keys::VersionPrefix(user_key);
  std::unique_ptr<rocksdb::Iterator> it(
      db->NewIterator(rocksdb::ReadOptions()));
  it->Seek(prefix);  // the newest version sorts first
  if (!it->Valid() || !it->key().starts_with(prefix) ||
      it->value().size() < 2 || it->value()[0] != 0x01) {
    return NotFoundError("no stored value of " + std::string(user_key));
  }
  std::string record = it->value().ToString();
  record.back() ^= 0x01;
  std::string key = it->key().ToString();
  it.reset();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  st = db->Put(wo, key, record);
  if (!st.ok()) return IOError("tamper: " + st.ToString());
  st = db->Close();
  if (!st.ok()) return IOError("close: " + st.ToString());
  return Status::Ok();
}

}  // namespace kplane::mvcc::testing

#endif  // KPLANE_STORAGE_MVCC_TAMPER_FOR_TEST_H_
