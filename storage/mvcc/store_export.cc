// Store::ExportAll: the whole store at one RocksDB snapshot.
#include <algorithm>

#include "storage/mvcc/keys.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"

namespace kplane::mvcc {

using internal::FromRocks;
using internal::ScopedSnapshot;

StatusOr<Store::Export> Store::ExportAll() {
  ScopedSnapshot snap(db_.get());
  Export out;
  auto meta = [&](std::string_view key, int64_t* v) -> Status {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap.get();
    std::string value;
    rocksdb::Status st =
        db_->Get(ro, rocksdb::Slice(key.data(), key.size()), &value);
    *v = 0;
    if (st.IsNotFound()) return Status::Ok();
    RETURN_IF_ERROR(FromRocks(st));
    if (!keys::DecodeInt64(value, v)) {
      return CorruptionError("mvcc: bad meta value for " + std::string(key));
    }
    return Status::Ok();
  };
  int64_t ci = 0;
  RETURN_IF_ERROR(meta(keys::kMetaCurrentRevision, &out.revision));
  RETURN_IF_ERROR(meta(keys::kMetaConsistentIndex, &ci));
  RETURN_IF_ERROR(meta(keys::kMetaCompactScheduled, &out.compact_scheduled));
  RETURN_IF_ERROR(meta(keys::kMetaCompactFinished, &out.compact_finished));
  out.consistent_index = static_cast<uint64_t>(ci);

  DbView view(db_.get(), snap.get());
  {
    auto c = view.NewCursor(std::string(1, keys::kLeaseTag),
                            std::string(1, keys::kLeaseTag + 1));
    for (c->it()->Seek(c->lower()); c->it()->Valid(); c->it()->Next()) {
      int64_t id = 0, ttl = 0;
      rocksdb::Slice k = c->it()->key(), v = c->it()->value();
      if (!keys::ParseLeaseKey(std::string_view(k.data(), k.size()), &id) ||
          !keys::DecodeInt64(std::string_view(v.data(), v.size()), &ttl)) {
        return CorruptionError("mvcc: malformed lease record");
      }
      out.leases.emplace_back(id, ttl);
    }
    RETURN_IF_ERROR(FromRocks(c->it()->status()));
  }
  auto c = view.NewCursor(std::string(1, keys::kVersionTag),
                          std::string(1, keys::kVersionTag + 1));
  std::string prefix, user_key;
  for (c->it()->Seek(c->lower()); c->it()->Valid(); c->it()->Next()) {
    rocksdb::Slice k = c->it()->key(), v = c->it()->value();
    std::string_view p;
    int64_t main = 0;
    uint32_t sub = 0;
    if (!keys::ParseVersionKey(std::string_view(k.data(), k.size()), &p, &main,
                               &sub)) {
      return CorruptionError("mvcc: malformed version key");
    }
    if (p != prefix) {
      prefix.assign(p);
      if (!keys::UserKeyOfPrefix(prefix, &user_key)) {
        return CorruptionError("mvcc: malformed version key");
      }
    }
    ExportedVersion& e = out.versions.emplace_back();
    e.main = main;
    e.sub = sub;
    std::string_view record(v.data(), v.size());
    e.tombstone = keys::IsTombstoneRecord(record);
    if (!e.tombstone) {
      if (!keys::DecodePutRecord(record, &e.kv)) {
        return CorruptionError("mvcc: malformed version record");
      }
      e.kv.set_mod_revision(main);
    }
    e.kv.set_key(user_key);
  }
  RETURN_IF_ERROR(FromRocks(c->it()->status()));
  std::sort(out.versions.begin(), out.versions.end(),
            [](const ExportedVersion& a, const ExportedVersion& b) {
              return a.main != b.main ? a.main < b.main : a.sub < b.sub;
            });
  return out;
}

}  // namespace kplane::mvcc
