#include "apiserver/storage/object_store.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "apiserver/storage/lease_manager.h"
#include "base/strings.h"
#include "objects/envelope.h"
#include "objects/meta.h"

namespace kplane::apiserver {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::RangeResponse;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

// kube-apiserver pages through etcd with at most this many keys per read
// when a predicate filters objects out (etcd3 store.go, maxLimit).
constexpr int64_t kMaxFetch = 10000;

constexpr std::string_view kListTooOld =
    "The resourceVersion for the provided list is too old.";
// kube's storage.NewResourceExpiredError with a token: the caller hands
// out InconsistentContinueToken (resource_store.cc).
constexpr std::string_view kContinueTooOld =
    "The provided continue parameter is too old to display a consistent list "
    "result. You can start a new list without the continue parameter, or use "
    "the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent "
    "list - objects that were created, modified, or deleted between the time "
    "the first chunk was returned and now may show up in the list.";

Status TooLargeResourceVersion(int64_t wanted, int64_t current) {
  return Status(StatusCode::kDeadlineExceeded,
                "Too large resource version: " + std::to_string(wanted) +
                    ", current: " + std::to_string(current),
                current);
}

Status ExpiredError(std::string_view message) {
  return Status(StatusCode::kExpired, message);
}

}  // namespace

// ---------------------------------------------------------------------------
// Versioner

std::string Versioner::ToResourceVersion(int64_t revision) {
  return std::to_string(revision);
}

StatusOr<int64_t> Versioner::Parse(std::string_view resource_version) {
  if (resource_version.empty()) return int64_t{0};
  bool digits = std::all_of(resource_version.begin(), resource_version.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  std::optional<int64_t> v =
      digits ? ParseInt64(resource_version) : std::nullopt;
  if (!v) {
    return InvalidArgumentError("invalid resource version " +
                                GoQuote(resource_version));
  }
  return *v;
}

Status ObjectModifiedError(const objects::ResourceInfo& resource,
                           std::string_view name) {
  return ConflictError(
      "Operation cannot be fulfilled on " + resource.GroupResource() + " " +
      GoQuote(name) +
      ": the object has been modified; please apply your changes to the "
      "latest version and try again");
}

// ---------------------------------------------------------------------------
// ObjectStore

ObjectStore::ObjectStore(storage::KV* kv, const objects::ResourceInfo* resource,
                         ObjectStoreOptions options)
    : kv_(kv),
      resource_(resource),
      options_(std::move(options)),
      group_resource_(resource->GroupResource()) {
  // path.Join("/", prefix) + "/", as kube-apiserver normalizes --etcd-prefix.
  std::string p = options_.prefix;
  if (p.empty() || p.front() != '/') p.insert(p.begin(), '/');
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p.back() != '/') p.push_back('/');
  resource_prefix_ = p + resource_->resource + "/";
  leases_ = std::make_unique<LeaseManager>(kv_, options_.clock);
  revision_reads_ = std::make_unique<SharedRead<int64_t>>(
      [this] { return ReadCurrentRevision(); });

  auto* latency = options_.metrics->NewHistogram(
      "etcd_request_duration_seconds",
      "Etcd request latency in seconds for each operation and object type.",
      {"operation", "type"},
      {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2,
       3,     4,     5,    6,   8,   10,  15,  20,  30,  45,   60});
  auto* total =
      options_.metrics->NewCounter("etcd_requests_total",
                                   "Etcd request counts for each operation and "
                                   "object type.",
                                   {"operation", "type"});
  auto* errors = options_.metrics->NewCounter(
      "etcd_request_errors_total",
      "Etcd failed request counts for each operation and object type.",
      {"operation", "type"});
  static constexpr const char* kOpNames[kNumOps] = {"get", "create", "update",
                                                    "delete", "list"};
  for (int op = 0; op < kNumOps; ++op) {
    std::vector<std::string> labels = {kOpNames[op], group_resource_};
    metrics_[op] = OpMetrics{latency->With(labels), total->With(labels),
                             errors->With(labels)};
  }
}

ObjectStore::~ObjectStore() = default;

template <typename F>
auto ObjectStore::Timed(Op op, F&& call) -> decltype(call()) {
  // Metrics are observations, not logic: the real clock is right here.
  auto start = std::chrono::steady_clock::now();
  auto result = call();
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  metrics_[op].latency->Observe(took.count());
  metrics_[op].total->Inc();
  if (!result.ok()) metrics_[op].errors->Inc();
  return result;
}

std::string ObjectStore::Key(std::string_view ns, std::string_view name) const {
  std::string key = resource_prefix_;
  if (resource_->namespaced) {
    key += ns;
    key += '/';
  }
  key += name;
  return key;
}

std::string ObjectStore::Prefix(std::string_view ns) const {
  std::string prefix = resource_prefix_;
  if (resource_->namespaced && !ns.empty()) {
    prefix += ns;
    prefix += '/';
  }
  return prefix;
}

StatusOr<std::string> ObjectStore::CheckedKey(std::string_view ns,
                                              std::string_view name) const {
  auto bad = [](std::string_view s) {
    return s.empty() || s == "." || s == ".." ||
           s.find('/') != std::string_view::npos;
  };
  if (bad(name) || (resource_->namespaced && bad(ns))) {
    return InvalidArgumentError("invalid key: " + GoQuote(Key(ns, name)));
  }
  return Key(ns, name);
}

StatusOr<encryption::Transformer::Read> ObjectStore::Unseal(
    std::string_view key, std::string_view value) const {
  if (options_.transformer == nullptr) {
    RETURN_IF_ERROR(encryption::CheckNotEncrypted(value));
    return encryption::Transformer::Read{std::string(value), false};
  }
  StatusOr<encryption::Transformer::Read> read =
      options_.transformer->FromStorage(value, key);
  if (!read.ok()) {
    return Status(
        StatusCode::kCorruption,
        "cannot decrypt " + std::string(key) + ": " + read.status().message());
  }
  return read;
}

StatusOr<std::string> ObjectStore::Seal(std::string_view key,
                                        std::string value) const {
  if (options_.transformer == nullptr) return value;
  StatusOr<std::string> sealed = options_.transformer->ToStorage(value, key);
  if (!sealed.ok()) {
    return InternalError("cannot encrypt " + std::string(key) + ": " +
                         sealed.status().message());
  }
  return sealed;
}

StatusOr<MutableObject> ObjectStore::Decode(std::string_view key,
                                            std::string_view value,
                                            int64_t mod_revision) const {
  if (options_.transformer == nullptr) {
    RETURN_IF_ERROR(encryption::CheckNotEncrypted(value));
    return DecodePlain(value, mod_revision);  // no copy
  }
  ASSIGN_OR_RETURN(encryption::Transformer::Read read, Unseal(key, value));
  return DecodePlain(read.plain, mod_revision);
}

StatusOr<MutableObject> ObjectStore::DecodePlain(std::string_view value,
                                                 int64_t mod_revision) const {
  const objects::KindInfo* kind = options_.conversion != nullptr
                                      ? options_.conversion->stored_kind
                                      : resource_->kind;
  MutableObject obj = kind->New();
  // Our own values hold no unknown fields: skip the walk that drops them.
  ASSIGN_OR_RETURN(objects::TypeMeta stored,
                   objects::DecodeEnvelopeInto(value, obj.get(),
                                               /*discard_unknown=*/false));
  const bool stored_as_another_version =
      stored.kind == kind->kind &&
      std::find(options_.also_stored_as.begin(), options_.also_stored_as.end(),
                stored.api_version) != options_.also_stored_as.end();
  if (!(stored == kind->type_meta()) && !stored_as_another_version) {
    return Status(StatusCode::kCorruption,
                  "stored object is " + stored.api_version +
                      ", Kind=" + stored.kind + ", not " +
                      kind->type_meta().api_version + ", Kind=" + kind->kind);
  }
  if (options_.conversion != nullptr) {
    obj = options_.conversion->from_stored(*obj);
  }
  if (options_.on_decode) options_.on_decode(obj.get());
  objects::SetResourceVersion(obj.get(),
                              Versioner::ToResourceVersion(mod_revision));
  return obj;
}

std::string ObjectStore::EncodeForStore(
    const google::protobuf::Message& obj) const {
  if (options_.conversion == nullptr) {
    return objects::EncodeEnvelope(obj, resource_->kind->type_meta());
  }
  MutableObject stored = options_.conversion->to_stored(obj);
  return objects::EncodeEnvelope(*stored,
                                 options_.conversion->stored_kind->type_meta());
}

StatusOr<std::optional<mvccpb::KeyValue>> ObjectStore::ReadKey(
    const std::string& key) {
  RangeRequest req;
  req.set_key(key);
  ASSIGN_OR_RETURN(RangeResponse resp,
                   Timed(kGet, [&] { return kv_->Range(req); }));
  if (resp.kvs_size() == 0) return std::optional<mvccpb::KeyValue>();
  return std::optional<mvccpb::KeyValue>(std::move(*resp.mutable_kvs(0)));
}

Status ObjectStore::CheckPreconditions(const std::string& key,
                                       const google::protobuf::Message& current,
                                       const Preconditions& pre,
                                       bool for_update) const {
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(current);
  const std::string& name = meta->name();
  // kube-apiserver's storage.Preconditions.Check fails with an InvalidObj
  // StorageError, which its registry turns into a Conflict quoting it.
  auto invalid_object = [&](const std::string& why) {
    return ConflictError(
        "Operation cannot be fulfilled on " + group_resource_ + " " +
        GoQuote(name) + ": StorageError: invalid object, Code: 4, Key: " + key +
        ", ResourceVersion: 0, AdditionalErrorMsg: " + why);
  };
  if (pre.uid && *pre.uid != meta->uid()) {
    return invalid_object("Precondition failed: UID in precondition: " +
                          *pre.uid + ", UID in object meta: " + meta->uid());
  }
  if (pre.resource_version &&
      *pre.resource_version != meta->resourceversion()) {
    // An update carrying a stale resourceVersion is the optimistic-lock
    // conflict users know; DELETE preconditions quote the storage error.
    if (for_update) return ObjectModifiedError(*resource_, name);
    return invalid_object(
        "Precondition failed: ResourceVersion in precondition: " +
        *pre.resource_version +
        ", ResourceVersion in object meta: " + meta->resourceversion());
  }
  return Status::Ok();
}

StatusOr<ObjectPtr> ObjectStore::Create(const google::protobuf::Message& obj,
                                        int64_t ttl_seconds) {
  if (obj.GetDescriptor() != resource_->kind->descriptor) {
    return InvalidArgumentError("cannot store " +
                                obj.GetDescriptor()->full_name() + " as " +
                                group_resource_);
  }
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  ASSIGN_OR_RETURN(int64_t rv, Versioner::Parse(meta->resourceversion()));
  if (rv != 0) {
    return InvalidArgumentError(
        "resourceVersion should not be set on objects to be created");
  }
  ASSIGN_OR_RETURN(std::string key,
                   CheckedKey(meta->namespace_(), meta->name()));

  MutableObject stored(obj.New());
  stored->CopyFrom(obj);
  objects::MutableObjectMeta(stored.get())->clear_resourceversion();
  ASSIGN_OR_RETURN(std::string value, Seal(key, EncodeForStore(*stored)));

  int64_t lease = 0;
  if (ttl_seconds > 0) {
    ASSIGN_OR_RETURN(lease, leases_->GetLease(ttl_seconds));
  }
  TxnRequest txn;
  Compare* absent = txn.add_compare();
  absent->set_key(key);
  absent->set_target(Compare::MOD);
  absent->set_result(Compare::EQUAL);
  absent->set_mod_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(std::move(value));
  put->set_lease(lease);
  ASSIGN_OR_RETURN(TxnResponse resp,
                   Timed(kCreate, [&] { return kv_->Txn(txn); }));
  if (!resp.succeeded()) {
    return AlreadyExistsError(group_resource_ + " " + GoQuote(meta->name()) +
                              " already exists");
  }
  objects::SetResourceVersion(
      stored.get(), Versioner::ToResourceVersion(resp.header().revision()));
  return ObjectPtr(std::move(stored));
}

StatusOr<ObjectPtr> ObjectStore::Get(std::string_view ns, std::string_view name,
                                     int64_t revision) {
  ASSIGN_OR_RETURN(std::string key, CheckedKey(ns, name));
  RangeRequest req;
  req.set_key(key);
  req.set_revision(revision);
  StatusOr<RangeResponse> resp = Timed(kGet, [&] { return kv_->Range(req); });
  if (!resp.ok()) {
    if (resp.status().Is(StatusCode::kCompacted)) {
      return ExpiredError(
          "too old resource version: " + std::to_string(revision) + " (" +
          std::to_string(resp.status().detail()) + ")");
    }
    if (resp.status().Is(StatusCode::kFutureRevision)) {
      return TooLargeResourceVersion(revision, resp.status().detail());
    }
    return resp.status();
  }
  if (resp->kvs_size() == 0) {
    return NotFoundError(group_resource_ + " " + GoQuote(name) + " not found");
  }
  const mvccpb::KeyValue& kv = resp->kvs(0);
  ASSIGN_OR_RETURN(MutableObject obj,
                   Decode(kv.key(), kv.value(), kv.mod_revision()));
  return ObjectPtr(std::move(obj));
}

StatusOr<ObjectPtr> ObjectStore::GuaranteedUpdate(
    std::string_view ns, std::string_view name, const Preconditions& pre,
    const UpdateFn& update, bool create_if_missing, ObjectPtr cached,
    int64_t ttl_seconds) {
  ASSIGN_OR_RETURN(std::string key, CheckedKey(ns, name));
  // What the update starts from: the caller's cached copy if it has one (no
  // store read; kube-apiserver's cachedExistingObject), else the store's
  // key. Once the state comes from the store `cached` is dropped; decisions
  // that a stale copy could get wrong (an error from the preconditions or
  // from `update`, "nothing changed") are only final then: with the cached
  // copy they read the store and go round again.
  std::optional<mvccpb::KeyValue> current;
  int64_t cached_revision = 0;
  if (cached != nullptr) {
    StatusOr<int64_t> rv = Versioner::Parse(objects::ResourceVersion(*cached));
    if (!rv.ok() || *rv <= 0 ||
        cached->GetDescriptor() != resource_->kind->descriptor) {
      cached = nullptr;
    } else {
      cached_revision = *rv;
    }
  }
  if (cached == nullptr) {
    ASSIGN_OR_RETURN(current, ReadKey(key));
  }
  auto read_store = [&]() -> Status {
    cached = nullptr;
    ASSIGN_OR_RETURN(current, ReadKey(key));
    return Status::Ok();
  };
  for (;;) {
    const bool fresh = cached == nullptr;
    MutableObject decoded;
    // The current value's plain bytes; `stale` if it must be rewritten
    // (another encryption key) even when the update changes nothing.
    encryption::Transformer::Read plain;
    const google::protobuf::Message* existing = cached.get();
    if (fresh && current) {
      ASSIGN_OR_RETURN(plain, Unseal(key, current->value()));
      ASSIGN_OR_RETURN(decoded,
                       DecodePlain(plain.plain, current->mod_revision()));
      existing = decoded.get();
    }
    if (existing != nullptr) {
      Status st = CheckPreconditions(key, *existing, pre, true);
      if (!st.ok()) {
        if (fresh) return st;
        RETURN_IF_ERROR(read_store());
        continue;
      }
    } else {
      if (!create_if_missing) {
        return NotFoundError(group_resource_ + " " + GoQuote(name) +
                             " not found");
      }
      if (pre.uid || pre.resource_version) {
        // As kube: preconditions are checked against the zero object.
        MutableObject zero = resource_->kind->New();
        objects::MutableObjectMeta(zero.get())->set_name(std::string(name));
        RETURN_IF_ERROR(CheckPreconditions(key, *zero, pre, true));
      }
    }

    StatusOr<MutableObject> result = update(existing);
    if (!result.ok() && !fresh) {
      RETURN_IF_ERROR(read_store());
      continue;
    }
    ASSIGN_OR_RETURN(MutableObject updated, std::move(result));
    if (updated == nullptr ||
        updated->GetDescriptor() != resource_->kind->descriptor) {
      return InternalError("update of " + group_resource_ + " " +
                           GoQuote(name) + " returned no " +
                           resource_->kind->kind);
    }
    objects::MutableObjectMeta(updated.get())->clear_resourceversion();
    std::string value = EncodeForStore(*updated);
    if (fresh && current && !plain.stale && value == plain.plain) {
      return ObjectPtr(std::move(decoded));  // nothing to write
    }
    if (!fresh) {
      // "Nothing changed" against a copy that may be stale is not an
      // answer: compare with the store's bytes instead.
      MutableObject copy(cached->New());
      copy->CopyFrom(*cached);
      objects::MutableObjectMeta(copy.get())->clear_resourceversion();
      if (value == EncodeForStore(*copy)) {
        RETURN_IF_ERROR(read_store());
        continue;
      }
    }

    const int64_t expected_revision =
        fresh ? (current ? current->mod_revision() : 0) : cached_revision;
    TxnRequest txn;
    Compare* unchanged = txn.add_compare();
    unchanged->set_key(key);
    unchanged->set_target(Compare::MOD);
    unchanged->set_result(Compare::EQUAL);
    unchanged->set_mod_revision(expected_revision);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    ASSIGN_OR_RETURN(std::string sealed, Seal(key, std::move(value)));
    put->set_value(std::move(sealed));
    if (ttl_seconds > 0) {
      // Created or updated, the object lives `ttl_seconds` from this write
      // (kube's GuaranteedUpdate attaches the TTL its update function
      // returns). The lease is the one LeaseManager shares with the other
      // writes of this window; the put detaches the key from its old one.
      ASSIGN_OR_RETURN(int64_t lease, leases_->GetLease(ttl_seconds));
      put->set_lease(lease);
    } else if (!fresh || (current && current->lease() != 0)) {
      // Without a TTL the key keeps whatever lease it has. A cached copy
      // does not say whether it has one; the key exists at the compared
      // revision, so ignoring the lease is right either way.
      put->set_ignore_lease(true);
    }
    txn.add_failure()->mutable_request_range()->set_key(key);
    ASSIGN_OR_RETURN(TxnResponse resp,
                     Timed(expected_revision != 0 ? kUpdate : kCreate,
                           [&] { return kv_->Txn(txn); }));
    if (!resp.succeeded()) {
      // Lost the race (or the cached copy was stale): retry with what the
      // store holds now, which the failed transaction returned.
      cached = nullptr;
      current.reset();
      if (resp.responses_size() > 0 &&
          resp.responses(0).response_range().kvs_size() > 0) {
        current = resp.responses(0).response_range().kvs(0);
      }
      continue;
    }
    objects::SetResourceVersion(
        updated.get(), Versioner::ToResourceVersion(resp.header().revision()));
    return ObjectPtr(std::move(updated));
  }
}

StatusOr<ObjectPtr> ObjectStore::Delete(
    std::string_view ns, std::string_view name, const Preconditions& pre,
    const std::function<Status(const google::protobuf::Message&)>& validate) {
  ASSIGN_OR_RETURN(std::string key, CheckedKey(ns, name));
  ASSIGN_OR_RETURN(std::optional<mvccpb::KeyValue> current, ReadKey(key));
  for (;;) {
    if (!current) {
      return NotFoundError(group_resource_ + " " + GoQuote(name) +
                           " not found");
    }
    ASSIGN_OR_RETURN(MutableObject existing,
                     Decode(key, current->value(), current->mod_revision()));
    RETURN_IF_ERROR(CheckPreconditions(key, *existing, pre, false));
    if (validate) RETURN_IF_ERROR(validate(*existing));

    TxnRequest txn;
    Compare* unchanged = txn.add_compare();
    unchanged->set_key(key);
    unchanged->set_target(Compare::MOD);
    unchanged->set_result(Compare::EQUAL);
    unchanged->set_mod_revision(current->mod_revision());
    txn.add_success()->mutable_request_delete_range()->set_key(key);
    txn.add_failure()->mutable_request_range()->set_key(key);
    ASSIGN_OR_RETURN(TxnResponse resp,
                     Timed(kDelete, [&] { return kv_->Txn(txn); }));
    if (!resp.succeeded()) {
      current.reset();
      if (resp.responses_size() > 0 &&
          resp.responses(0).response_range().kvs_size() > 0) {
        current = resp.responses(0).response_range().kvs(0);
      }
      continue;
    }
    objects::SetResourceVersion(
        existing.get(), Versioner::ToResourceVersion(resp.header().revision()));
    return ObjectPtr(std::move(existing));
  }
}

StatusOr<ListResult> ObjectStore::List(std::string_view ns,
                                       const ListOptions& opts) {
  const std::string prefix = Prefix(ns);
  const std::string range_end = PrefixRangeEnd(prefix);
  const bool paging = opts.limit > 0;
  const bool continuing = !opts.continue_token.empty();

  std::string start = prefix;
  int64_t with_rev = 0;  // 0 until the first read pins the snapshot
  if (continuing) {
    auto token = DecodeContinueToken(opts.continue_token);
    if (!token.ok()) {
      return InvalidArgumentError("invalid continue token: " +
                                  token.status().message());
    }
    if (opts.revision > 0) {
      return InvalidArgumentError(
          "specifying resource version is not allowed when using continue");
    }
    start = prefix + token->second;
    // A negative revision asks for the latest state (an inconsistent
    // continuation); 0 never decodes.
    if (token->first > 0) with_rev = token->first;
  } else if (opts.revision > 0) {
    with_rev = opts.revision;
  }

  ListResult result;
  int64_t fetch = opts.limit;
  std::string last_key;
  bool has_more = false;
  int64_t last_count = 0;
  for (;;) {
    RangeRequest req;
    req.set_key(start);
    req.set_range_end(range_end);
    req.set_revision(with_rev);
    // One key past the page says whether another page exists (a limit
    // of INT64_MAX reads everything: there is no key past it).
    if (paging && fetch < std::numeric_limits<int64_t>::max()) {
      req.set_limit(fetch + 1);
    }
    StatusOr<RangeResponse> resp =
        Timed(kList, [&] { return kv_->Range(req); });
    if (!resp.ok()) {
      if (resp.status().Is(StatusCode::kCompacted)) {
        return ExpiredError(continuing ? kContinueTooOld : kListTooOld);
      }
      if (resp.status().Is(StatusCode::kFutureRevision)) {
        return TooLargeResourceVersion(with_rev, resp.status().detail());
      }
      return resp.status();
    }
    if (with_rev == 0) with_rev = resp->header().revision();
    last_count = resp->count();

    int consumed = 0;
    for (const mvccpb::KeyValue& kv : resp->kvs()) {
      if (paging && static_cast<int64_t>(result.items.size()) >= opts.limit) {
        break;
      }
      ++consumed;
      last_key = kv.key();
      ASSIGN_OR_RETURN(MutableObject obj,
                       Decode(kv.key(), kv.value(), kv.mod_revision()));
      if (!opts.predicate || opts.predicate(*obj)) {
        result.items.push_back(ObjectPtr(std::move(obj)));
      }
    }
    bool keys_beyond = consumed < resp->kvs_size() || resp->more();
    if (!paging || !keys_beyond) break;
    if (static_cast<int64_t>(result.items.size()) >= opts.limit) {
      has_more = true;
      break;
    }
    // The predicate dropped objects: read on, in growing pages, as kube.
    const int64_t most = std::max(kMaxFetch, opts.limit);
    fetch = fetch > most / 2 ? most : fetch * 2;
    start = last_key;
    start.push_back('\0');
  }

  result.revision = with_rev;
  if (has_more) {
    std::string next = last_key.substr(prefix.size());
    next.push_back('\0');
    result.continue_token = EncodeContinueToken(with_rev, next);
    // Keys counted from this read's start, minus this page: exact only
    // when nothing was filtered out.
    if (!opts.predicate) result.remaining_items = last_count - opts.limit;
  }
  return result;
}

StatusOr<int64_t> ObjectStore::CurrentRevision() {
  return revision_reads_->Read();
}

StatusOr<int64_t> ObjectStore::ReadCurrentRevision() {
  // One key, not the resource's range: the header's revision is the
  // store's whatever is read, and a range would make the store count every
  // key under the prefix (deleted ones too, until compaction) on each
  // consistent LIST. The prefix itself is no object's key.
  RangeRequest req;
  req.set_key(resource_prefix_);
  req.set_count_only(true);
  ASSIGN_OR_RETURN(RangeResponse resp,
                   Timed(kGet, [&] { return kv_->Range(req); }));
  return resp.header().revision();
}

}  // namespace kplane::apiserver
