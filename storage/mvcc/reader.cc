#include "storage/mvcc/reader.h"

#include <algorithm>

#include "storage/mvcc/keys.h"

namespace kplane::mvcc {
namespace {

// Next() is much cheaper than Seek() in RocksDB, and after compaction most
// keys have one or two versions, so step over a few before seeking past the
// rest. When that did not leave the previous key (long histories), try only
// one step for the next key.
constexpr int kNextsBeforeSeek = 4;

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return CorruptionError(s.ToString());
  return IOError(s.ToString());
}

}  // namespace

Cursor::Cursor(std::string lower, std::string upper)
    : lower_(std::move(lower)),
      upper_(std::move(upper)),
      lower_slice_(lower_),
      upper_slice_(upper_) {
  ro_.iterate_lower_bound = &lower_slice_;
  ro_.iterate_upper_bound = &upper_slice_;
}

std::unique_ptr<Cursor> DbView::NewCursor(std::string lower,
                                          std::string upper) {
  auto c = std::make_unique<Cursor>(std::move(lower), std::move(upper));
  c->read_options()->snapshot = snapshot_;
  c->Reset(db_->NewIterator(*c->read_options()));
  return c;
}

std::unique_ptr<Cursor> BatchView::NewCursor(std::string lower,
                                             std::string upper) {
  auto c = std::make_unique<Cursor>(std::move(lower), std::move(upper));
  rocksdb::Iterator* base = db_->NewIterator(*c->read_options());
  if (!batch_->indexed() && batch_->Count() == 0) {
    // Nothing staged: indexing would only make the rest of the group pay.
    c->Reset(base);
    return c;
  }
  c->Reset(batch_->Indexed()->NewIteratorWithBase(db_->DefaultColumnFamily(),
                                                  base, c->read_options()));
  return c;
}

Status ScanLive(Cursor* cursor, int64_t rev, const LiveVisitor& visit) {
  rocksdb::Iterator* it = cursor->it();
  const rocksdb::Slice upper(cursor->upper());
  std::string seek_key = cursor->lower();
  keys::AppendVersionSuffix(&seek_key, rev, UINT32_MAX);
  std::string current;  // prefix of the key being skipped; reused buffer
  int nexts = kNextsBeforeSeek;
  it->Seek(seek_key);
  while (it->Valid()) {
    rocksdb::Slice k = it->key();
    // The batch-merging iterator may not apply the upper bound to the batch.
    if (k.compare(upper) >= 0) break;
    std::string_view prefix;
    int64_t main;
    uint32_t sub;
    if (!keys::ParseVersionKey(std::string_view(k.data(), k.size()), &prefix,
                               &main, &sub)) {
      return CorruptionError("mvcc: malformed version key");
    }
    if (main > rev) {
      // Only versions newer than rev seen so far: jump to the newest <= rev
      // (or past this key when it has none).
      seek_key.assign(prefix);
      keys::AppendVersionSuffix(&seek_key, rev, UINT32_MAX);
      it->Seek(seek_key);
      continue;
    }
    current.assign(prefix);
    rocksdb::Slice v = it->value();
    std::string_view record(v.data(), v.size());
    if (!keys::IsTombstoneRecord(record)) {
      if (!visit(current, main, record)) return FromRocks(it->status());
    }
    bool left_key = false;
    for (int i = 0; i < nexts; ++i) {
      it->Next();
      if (!it->Valid() || !it->key().ToStringView().starts_with(current)) {
        left_key = true;
        break;
      }
    }
    nexts = left_key ? kNextsBeforeSeek : 1;
    if (!left_key) it->Seek(keys::PrefixSuccessor(current));
  }
  return FromRocks(it->status());
}

Status ScanRange(ReadView* view, std::string_view key,
                 std::string_view range_end, int64_t rev,
                 const LiveVisitor& visit) {
  std::string lower, upper;
  if (!keys::VersionBounds(key, range_end, &lower, &upper)) {
    return Status::Ok();
  }
  auto cursor = view->NewCursor(std::move(lower), std::move(upper));
  return ScanLive(cursor.get(), rev, visit);
}

Status DecodeKeyValue(std::string_view prefix, int64_t main,
                      std::string_view record, bool with_value,
                      mvccpb::KeyValue* kv) {
  if (!keys::UserKeyOfPrefix(prefix, kv->mutable_key()) ||
      !keys::DecodePutRecord(record, kv, with_value)) {
    return CorruptionError("mvcc: malformed version record");
  }
  kv->set_mod_revision(main);
  return Status::Ok();
}

StatusOr<std::optional<mvccpb::KeyValue>> GetLatest(ReadView* view,
                                                    std::string_view key) {
  std::string lower = keys::VersionPrefix(key);
  std::string upper = keys::PrefixSuccessor(lower);
  auto c = view->NewCursor(lower, upper);
  c->it()->Seek(lower);
  if (!c->it()->Valid() || c->it()->key().compare(upper) >= 0) {
    RETURN_IF_ERROR(FromRocks(c->it()->status()));
    return std::optional<mvccpb::KeyValue>();
  }
  rocksdb::Slice k = c->it()->key(), v = c->it()->value();
  std::string_view record(v.data(), v.size());
  if (keys::IsTombstoneRecord(record)) return std::optional<mvccpb::KeyValue>();
  std::string_view prefix;
  int64_t main;
  uint32_t sub;
  if (!keys::ParseVersionKey(std::string_view(k.data(), k.size()), &prefix,
                             &main, &sub)) {
    return CorruptionError("mvcc: malformed version key");
  }
  mvccpb::KeyValue kv;
  RETURN_IF_ERROR(DecodeKeyValue(prefix, main, record, true, &kv));
  return std::optional<mvccpb::KeyValue>(std::move(kv));
}

namespace {

using etcdserverpb::RangeRequest;

bool Less(const mvccpb::KeyValue& a, const mvccpb::KeyValue& b,
          RangeRequest::SortTarget target) {
  switch (target) {
    case RangeRequest::KEY:
      return a.key() < b.key();
    case RangeRequest::VERSION:
      return a.version() < b.version();
    case RangeRequest::CREATE:
      return a.create_revision() < b.create_revision();
    case RangeRequest::MOD:
      return a.mod_revision() < b.mod_revision();
    case RangeRequest::VALUE:
      return a.value() < b.value();
    default:
      return false;
  }
}

}  // namespace

Status ExecuteRange(ReadView* view, const etcdserverpb::RangeRequest& req,
                    int64_t current_rev, int64_t compact_rev,
                    etcdserverpb::RangeResponse* out,
                    const RangeCounter& counter) {
  int64_t rev = req.revision();
  if (rev > current_rev) return FutureRevisionError(current_rev);
  if (rev <= 0) rev = current_rev;
  if (rev < compact_rev) return CompactedError(compact_rev);

  out->mutable_header()->set_revision(current_rev);

  RangeRequest::SortOrder order = req.sort_order();
  const RangeRequest::SortTarget target = req.sort_target();
  if (target != RangeRequest::KEY && order == RangeRequest::NONE) {
    order = RangeRequest::ASCEND;
  }
  const bool filtered =
      req.min_mod_revision() != 0 || req.max_mod_revision() != 0 ||
      req.min_create_revision() != 0 || req.max_create_revision() != 0;
  // Results come in key order; anything else needs every row first.
  const bool natural =
      !filtered &&
      (order == RangeRequest::NONE ||
       (order == RangeRequest::ASCEND && target == RangeRequest::KEY));
  const int64_t limit = req.limit() > 0 ? req.limit() : 0;
  const bool with_value = !req.keys_only() || target == RangeRequest::VALUE;

  // Only counting is left once a limited key-order scan has its rows.
  std::optional<int64_t> known_count;
  if (counter && (req.count_only() || (natural && limit > 0))) {
    known_count = counter(rev);
  }
  int64_t count = 0;
  // Rows are decoded straight into the answer (on its arena, if it has one).
  google::protobuf::RepeatedPtrField<mvccpb::KeyValue>* kvs =
      out->mutable_kvs();
  Status decode_status;
  Status st;
  if (!(known_count && req.count_only())) {
    st = ScanRange(
        view, req.key(), req.range_end(), rev,
        [&](std::string_view prefix, int64_t main, std::string_view record) {
          ++count;
          if (req.count_only()) return true;
          if (natural && limit > 0 && kvs->size() >= limit) {
            // Only counting from here on, unless the count is known.
            return !known_count.has_value();
          }
          mvccpb::KeyValue* kv = kvs->Add();
          decode_status = DecodeKeyValue(prefix, main, record, with_value, kv);
          if (!decode_status.ok()) return false;
          if ((req.max_mod_revision() != 0 &&
               kv->mod_revision() > req.max_mod_revision()) ||
              (req.min_mod_revision() != 0 &&
               kv->mod_revision() < req.min_mod_revision()) ||
              (req.max_create_revision() != 0 &&
               kv->create_revision() > req.max_create_revision()) ||
              (req.min_create_revision() != 0 &&
               kv->create_revision() < req.min_create_revision())) {
            kvs->RemoveLast();
            return true;
          }
          // With the count known, stop at the limit-th row.
          return !(known_count && natural && limit > 0 && kvs->size() >= limit);
        });
  }
  RETURN_IF_ERROR(st);
  if (known_count) count = *known_count;
  RETURN_IF_ERROR(decode_status);

  // Sorting moves the rows' pointers, not the rows.
  if (order == RangeRequest::ASCEND && target != RangeRequest::KEY) {
    std::stable_sort(
        kvs->pointer_begin(), kvs->pointer_end(),
        [target](const mvccpb::KeyValue* a, const mvccpb::KeyValue* b) {
          return Less(*a, *b, target);
        });
  } else if (order == RangeRequest::DESCEND) {
    std::stable_sort(
        kvs->pointer_begin(), kvs->pointer_end(),
        [target](const mvccpb::KeyValue* a, const mvccpb::KeyValue* b) {
          return Less(*b, *a, target);
        });
  }
  if (req.count_only()) {
    // No rows, so never "more" (etcd compares the returned rows).
  } else if (natural) {
    out->set_more(limit > 0 && count > limit);
  } else if (limit > 0 && kvs->size() > limit) {
    kvs->DeleteSubrange(static_cast<int>(limit),
                        kvs->size() - static_cast<int>(limit));
    out->set_more(true);
  }
  out->set_count(count);
  // Values read only to sort by them.
  if (req.keys_only() && with_value) {
    for (mvccpb::KeyValue& kv : *kvs) kv.clear_value();
  }
  return Status::Ok();
}

}  // namespace kplane::mvcc
