// The store as the watch hub's event source: events by revision from the
// revision-major log, each completed from its key-major version (and the
// version before it for prev_kv).

#include <rocksdb/db.h>

#include <algorithm>

#include "storage/mvcc/keys.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"

namespace kplane::mvcc {

Status Store::ReadEvents(int64_t from, int64_t to, bool with_prev,
                         std::vector<mvccpb::Event>* out, int64_t* compacted) {
  internal::ScopedSnapshot snap(db_.get());
  *compacted = compact_scheduled_.load();
  // Events of the compaction revision itself are kept.
  const int64_t start = std::max(from, *compacted);
  if (start > to) return Status::Ok();
  DbView view(db_.get(), snap.get());
  auto events =
      view.NewCursor(keys::EventKey(start, 0), keys::EventKey(to + 1, 0));
  auto versions = view.NewCursor(std::string(1, keys::kVersionTag),
                                 std::string(1, keys::kVersionTag + 1));
  rocksdb::Iterator* eit = events->it();
  rocksdb::Iterator* vit = versions->it();
  for (eit->Seek(events->lower()); eit->Valid(); eit->Next()) {
    int64_t main;
    uint32_t sub;
    bool is_delete;
    std::string_view user_key;
    rocksdb::Slice ek = eit->key(), ev = eit->value();
    if (!keys::ParseEventKey(std::string_view(ek.data(), ek.size()), &main,
                             &sub) ||
        !keys::DecodeEventRecord(std::string_view(ev.data(), ev.size()),
                                 &is_delete, &user_key)) {
      return CorruptionError("mvcc: malformed event record");
    }
    mvccpb::Event& event = out->emplace_back();
    event.set_type(is_delete ? mvccpb::Event::DELETE : mvccpb::Event::PUT);
    mvccpb::KeyValue* kv = event.mutable_kv();
    kv->set_key(user_key.data(), user_key.size());
    kv->set_mod_revision(main);
    std::string vk = keys::VersionKey(user_key, main, sub);
    vit->Seek(vk);
    if (!vit->Valid() || vit->key() != rocksdb::Slice(vk)) {
      RETURN_IF_ERROR(internal::FromRocks(vit->status()));
      return CorruptionError("mvcc: event without its version");
    }
    if (!is_delete) {
      rocksdb::Slice rv = vit->value();
      if (!keys::DecodePutRecord(std::string_view(rv.data(), rv.size()), kv)) {
        return CorruptionError("mvcc: malformed version record");
      }
    }
    // A create has no previous version worth reporting (etcd skips it).
    if (!with_prev || (!is_delete && kv->version() == 1)) continue;
    vit->Next();
    if (!vit->Valid()) continue;
    rocksdb::Slice pk = vit->key(), pv = vit->value();
    std::string_view prefix;
    int64_t pmain;
    uint32_t psub;
    if (!keys::ParseVersionKey(std::string_view(pk.data(), pk.size()), &prefix,
                               &pmain, &psub)) {
      return CorruptionError("mvcc: malformed version key");
    }
    std::string_view prev_record(pv.data(), pv.size());
    if (prefix.size() != vk.size() - keys::kVersionSuffixSize ||
        prefix != std::string_view(vk).substr(0, prefix.size()) ||
        keys::IsTombstoneRecord(prev_record)) {
      continue;  // no previous version, or it was compacted away
    }
    RETURN_IF_ERROR(DecodeKeyValue(prefix, pmain, prev_record, true,
                                   event.mutable_prev_kv()));
  }
  return internal::FromRocks(eit->status());
}

}  // namespace kplane::mvcc
