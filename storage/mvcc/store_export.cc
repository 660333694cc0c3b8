// Store::ExportAll: the whole store at one RocksDB snapshot; and its
// inverse, Store::CreateFromExport.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

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

namespace {

Status CheckImport(const Store::Export& data, int64_t revision) {
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const Store::ExportedVersion& v : data.versions) {
    const std::string at = "version of \"" + v.kv.key() + "\" at revision " +
                           std::to_string(v.main) + "/" + std::to_string(v.sub);
    if (v.main < 1 || v.sub < 0 ||
        v.sub > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgumentError("import: " + at + ": revision out of range");
    }
    if (!seen.emplace(v.main, v.sub).second) {
      return InvalidArgumentError("import: two versions at revision " +
                                  std::to_string(v.main) + "/" +
                                  std::to_string(v.sub));
    }
    if (!v.tombstone &&
        (v.kv.create_revision() < 1 || v.kv.create_revision() > v.main ||
         v.kv.version() < 1)) {
      return InvalidArgumentError("import: " + at + ": bad create revision " +
                                  std::to_string(v.kv.create_revision()) +
                                  " or version " +
                                  std::to_string(v.kv.version()));
    }
  }
  if (data.compact_scheduled < 0 || data.compact_finished < 0 ||
      data.compact_scheduled > revision ||
      data.compact_finished > data.compact_scheduled) {
    return InvalidArgumentError(
        "import: compaction revisions (scheduled " +
        std::to_string(data.compact_scheduled) + ", finished " +
        std::to_string(data.compact_finished) + ") do not fit revision " +
        std::to_string(revision));
  }
  for (const auto& [id, ttl] : data.leases) {
    if (id == 0) return InvalidArgumentError("import: a lease with id 0");
  }
  return Status::Ok();
}

}  // namespace

Status Store::CreateFromExport(const Options& options, const Export& data) {
  {
    std::error_code ec;
    if (std::filesystem::exists(options.dir, ec) &&
        !std::filesystem::is_empty(options.dir, ec)) {
      return Status(StatusCode::kAlreadyExists,
                    "import: " + options.dir + " is not empty");
    }
  }
  int64_t revision = std::max(data.revision, kInitialRevision);
  for (const ExportedVersion& v : data.versions) {
    revision = std::max(revision, v.main);
  }
  RETURN_IF_ERROR(CheckImport(data, revision));

  ASSIGN_OR_RETURN(std::unique_ptr<Store> s, Open(options));
  MutexLock l(&s->write_mu_);
  if (s->CurrentRevision() != kInitialRevision || s->lease_seq_ != 0) {
    return Status(StatusCode::kAlreadyExists,
                  "import: " + options.dir + " holds a store");
  }
  int64_t size = 0;
  rocksdb::WriteBatch wb;
  auto put = [&](const std::string& k, const std::string& v) {
    wb.Put(k, v);
    size += static_cast<int64_t>(k.size() + v.size());
  };
  // Written in batches of bounded size; the meta keys go last, so a store
  // cut short reads as one at revision 1 with stray records (the caller
  // throws its staging directory away).
  auto flush = [&]() -> Status {
    if (wb.Count() == 0) return Status::Ok();
    s->write_mu_.AssertHeld();  // held above; the analysis skips lambdas
    RETURN_IF_ERROR(s->WriteLocked(&wb, /*sync=*/false, "import"));
    wb.Clear();
    return Status::Ok();
  };
  std::set<int64_t> lease_ids;
  for (const auto& [id, ttl] : data.leases) {
    lease_ids.insert(id);
    put(keys::LeaseKey(id), keys::EncodeInt64(ttl));
  }
  // Each key's newest version decides its lease attachment.
  std::map<std::string, const ExportedVersion*> newest;
  int n = 0;
  for (const ExportedVersion& v : data.versions) {
    const std::string& key = v.kv.key();
    const uint32_t sub = static_cast<uint32_t>(v.sub);
    put(keys::VersionKey(key, v.main, sub),
        v.tombstone
            ? keys::EncodeTombstoneRecord()
            : keys::EncodePutRecord(v.kv.create_revision(), v.kv.version(),
                                    v.kv.lease(), v.kv.value()));
    put(keys::EventKey(v.main, sub), keys::EncodeEventRecord(v.tombstone, key));
    const ExportedVersion*& last = newest[key];
    if (last == nullptr ||
        std::make_pair(last->main, last->sub) < std::make_pair(v.main, v.sub)) {
      last = &v;
    }
    if (++n % 10000 == 0) RETURN_IF_ERROR(flush());
  }
  for (const auto& [key, v] : newest) {
    if (!v->tombstone && v->kv.lease() != 0 &&
        lease_ids.count(v->kv.lease()) > 0) {
      put(keys::AttachKey(v->kv.lease(), key), "");
    }
  }
  RETURN_IF_ERROR(flush());
  auto meta = [&](std::string_view k, int64_t v) {
    wb.Put(rocksdb::Slice(k.data(), k.size()), keys::EncodeInt64(v));
  };
  meta(keys::kMetaCurrentRevision, revision);
  if (data.consistent_index != 0) {
    meta(keys::kMetaConsistentIndex,
         static_cast<int64_t>(data.consistent_index));
  }
  if (data.compact_scheduled != 0) {
    meta(keys::kMetaCompactScheduled, data.compact_scheduled);
  }
  if (data.compact_finished != 0) {
    meta(keys::kMetaCompactFinished, data.compact_finished);
    // Everything up to the finished compaction was processed.
    meta(keys::kMetaCompactCursor, data.compact_finished);
  }
  meta(keys::kMetaLeaseSeq, static_cast<int64_t>(data.leases.size()));
  meta(keys::kMetaSizeInUse, size);
  RETURN_IF_ERROR(s->WriteLocked(&wb, /*sync=*/true, "import"));
  l.Unlock();
  // The synced WAL holds everything now; the flush into tables that Close
  // would do (and only log if it failed) is done here so that a failing
  // disk fails the import, which the caller then redoes from scratch.
  RETURN_IF_ERROR(FromRocks(s->db_->Flush(rocksdb::FlushOptions()))
                      .Annotate("import: flush " + options.dir));
  s->Close();
  return Status::Ok();
}

}  // namespace kplane::mvcc
