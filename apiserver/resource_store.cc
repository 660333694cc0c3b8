#include "apiserver/resource_store.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "objects/codec.h"
#include "objects/machinery/fields.h"
#include "objects/machinery/labels.h"
#include "objects/machinery/validation.h"
#include "objects/meta.h"
#include "objects/time.h"
#include "apiserver/patching.h"
#include "base/logging.h"
#include "base/saturating.h"
#include "base/strings.h"

namespace kplane::apiserver {

namespace {

using Msg = google::protobuf::Message;
using MutableObject = std::unique_ptr<google::protobuf::Message>;

constexpr std::string_view kOptimisticLockMessage =
    "the object has been modified; please apply your changes to the latest "
    "version and try again";
constexpr std::string_view kFinalizerOrphan = "orphan";
constexpr std::string_view kFinalizerForeground = "foregroundDeletion";
constexpr int kMaxGenerateNameAttempts = 8;
constexpr int kMaxDeleteAttempts = 16;

MutableObject Clone(const Msg& m) {
  MutableObject c(m.New());
  c->CopyFrom(m);
  return c;
}

const objects::metav1::ObjectMeta& MetaOf(const Msg& m) {
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(m);
  CHECK(meta != nullptr) << "not an object: " << m.GetTypeName();
  return *meta;
}

// A namespace's spec.finalizers ("kubernetes" until the namespace
// controller has emptied it) hold its deletion like metadata finalizers.
bool HasSpecFinalizers(const Msg& m) {
  const auto* ns = dynamic_cast<const objects::corev1::Namespace*>(&m);
  return ns != nullptr && ns->spec().finalizers_size() > 0;
}

template <typename T>
bool IsError(const ApiResult<T>& r) {
  return std::holds_alternative<ApiError>(r);
}

std::string Rfc3339(WallTime t) {
  return objects::FormatRfc3339(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
          .count());
}

// A failed DELETE precondition, in kube's storage-error words:
// `Operation cannot be fulfilled on pods "x": StorageError: invalid object,
// Code: 4, Key: /registry/pods/default/x, ResourceVersion: 0,
// AdditionalErrorMsg: Precondition failed: UID in precondition: a, UID in
// object meta: b`.
std::optional<ApiError> CheckPreconditions(
    const objects::ResourceInfo& resource, std::string_view name,
    std::string_view key, const objects::metav1::DeleteOptions& opts,
    const objects::metav1::ObjectMeta& meta) {
  if (!opts.has_preconditions()) return std::nullopt;
  const auto& p = opts.preconditions();
  std::string failed;
  if (p.has_uid() && p.uid() != meta.uid()) {
    failed = "Precondition failed: UID in precondition: " + p.uid() +
             ", UID in object meta: " + meta.uid();
  } else if (p.has_resourceversion() &&
             p.resourceversion() != meta.resourceversion()) {
    failed = "Precondition failed: ResourceVersion in precondition: " +
             p.resourceversion() +
             ", ResourceVersion in object meta: " + meta.resourceversion();
  } else {
    return std::nullopt;
  }
  return ApiError::Conflict(
      resource, name,
      "StorageError: invalid object, Code: 4, Key: " + std::string(key) +
          ", ResourceVersion: 0, AdditionalErrorMsg: " + failed);
}

bool ShouldOrphan(const objects::metav1::DeleteOptions& opts,
                  const objects::metav1::ObjectMeta& meta) {
  if (opts.has_orphandependents()) return opts.orphandependents();
  if (opts.has_propagationpolicy()) {
    return opts.propagationpolicy() == "Orphan";
  }
  for (const std::string& f : meta.finalizers()) {
    if (f == kFinalizerOrphan) return true;
    if (f == kFinalizerForeground) return false;
  }
  return false;  // every kind served here defaults to Background
}

bool ShouldDeleteDependents(const objects::metav1::DeleteOptions& opts,
                            const objects::metav1::ObjectMeta& meta) {
  if (opts.has_orphandependents()) return false;
  if (opts.has_propagationpolicy()) {
    return opts.propagationpolicy() == "Foreground";
  }
  for (const std::string& f : meta.finalizers()) {
    if (f == kFinalizerForeground) return true;
  }
  return false;
}

// The finalizers after applying the deletion's propagation policy.
std::vector<std::string> FinalizersForDeletion(
    const objects::metav1::DeleteOptions& opts,
    const objects::metav1::ObjectMeta& meta) {
  std::vector<std::string> out;
  for (const std::string& f : meta.finalizers()) {
    if (f == kFinalizerOrphan || f == kFinalizerForeground) continue;
    out.push_back(f);
  }
  if (ShouldOrphan(opts, meta)) out.emplace_back(kFinalizerOrphan);
  if (ShouldDeleteDependents(opts, meta)) {
    out.emplace_back(kFinalizerForeground);
  }
  return out;
}

void SetFinalizers(objects::metav1::ObjectMeta* meta,
                   const std::vector<std::string>& finalizers) {
  meta->clear_finalizers();
  for (const std::string& f : finalizers) meta->add_finalizers(f);
}

bool IsImmortalNamespace(std::string_view name) {
  return name == "default" || name == "kube-system" || name == "kube-public";
}

}  // namespace

ResourceStore::ResourceStore(const objects::ResourceInfo* resource,
                             const Strategy* strategy, ObjectStore* store,
                             Cacher* cacher, ResourceStoreOptions options)
    : resource_(resource),
      strategy_(strategy),
      store_(store),
      cacher_(cacher),
      options_(std::move(options)),
      rand_(std::random_device{}()) {}

bool ResourceStore::ReturnsDeletedObject() const {
  return resource_->gv.group.empty() &&
         (resource_->resource == "pods" || resource_->resource == "services" ||
          resource_->resource == "namespaces");
}

std::string ResourceStore::NewUid() {
  uint64_t a, b;
  {
    MutexLock l(&rand_mu_);
    a = rand_();
    b = rand_();
  }
  // Version 4 (random), variant 10.
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(
      buf, sizeof(buf),
      "%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
      static_cast<uint64_t>(a >> 32), static_cast<uint64_t>((a >> 16) & 0xffff),
      static_cast<uint64_t>(a & 0xffff), static_cast<uint64_t>(b >> 48),
      static_cast<uint64_t>(b & 0xffffffffffffULL));
  return buf;
}

std::string ResourceStore::GenerateNameSuffix() {
  MutexLock l(&rand_mu_);
  return machinery::GenerateNameSuffix([this](int n) REQUIRES(rand_mu_) {
    return static_cast<int>(rand_() % static_cast<uint64_t>(n));
  });
}

// ---------------------------------------------------------------------------
// Reads

ApiResult<ObjectPtr> ResourceStore::Get(std::string_view ns,
                                        std::string_view name,
                                        std::string_view resource_version) {
  StatusOr<int64_t> rev = Versioner::Parse(resource_version);
  if (!rev.ok()) return ApiError::BadRequest(rev.status().message());
  StatusOr<ObjectPtr> r =
      (resource_version == "0" && cacher_ != nullptr && cacher_->ready())
          ? cacher_->Get(ns, name)
          : store_->Get(ns, name, 0);
  if (!r.ok()) return ApiError::FromStatus(r.status(), resource_, name);
  return *r;
}

ApiResult<ListResult> ResourceStore::List(std::string_view ns,
                                          const ListParams& params,
                                          ObjectPredicate predicate) {
  StatusOr<int64_t> rev = Versioner::Parse(params.resource_version);
  if (!rev.ok()) return ApiError::BadRequest(rev.status().message());
  ListOptions lo;
  lo.revision = *rev;
  lo.limit = params.limit;
  lo.continue_token = params.continue_token;
  lo.predicate = std::move(predicate);
  StatusOr<ListResult> r =
      (params.resource_version_match == "Exact" || cacher_ == nullptr)
          ? store_->List(ns, lo)
          : cacher_->List(ns, *rev, params.resource_version.empty(), lo,
                          params.resource_version_match == "NotOlderThan");
  if (!r.ok()) {
    ApiError e = ApiError::FromStatus(r.status(), resource_);
    // A continue token at a compacted revision: kube's 410 offers the
    // rest of the list at the latest revision.
    if (r.status().Is(StatusCode::kExpired) && !lo.continue_token.empty()) {
      e.list_continue = InconsistentContinueToken(lo.continue_token);
    }
    return e;
  }
  return std::move(*r);
}

ApiResult<ObjectPredicate> ResourceStore::Predicate(
    std::string_view label_selector, std::string_view field_selector) const {
  StatusOr<machinery::LabelSelector> ls =
      machinery::LabelSelector::Parse(label_selector);
  if (!ls.ok()) return ApiError::BadRequest(ls.status().message());
  StatusOr<machinery::FieldSelector> fs =
      machinery::FieldSelector::Parse(field_selector);
  if (!fs.ok()) return ApiError::BadRequest(fs.status().message());
  std::vector<std::string> supported = strategy_->SupportedFieldLabels();
  if (std::find(supported.begin(), supported.end(), "metadata.name") ==
      supported.end()) {
    supported.emplace_back("metadata.name");
  }
  Status valid = fs->Validate(supported);
  if (!valid.ok()) return ApiError::BadRequest(valid.message());
  if (ls->Empty() && fs->Empty()) return ObjectPredicate();
  const Strategy* strategy = strategy_;
  return ObjectPredicate([ls = *ls, fs = *fs, strategy](const Msg& obj) {
    const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
    if (meta == nullptr) return false;
    if (!ls.Empty()) {
      machinery::Labels labels(meta->labels().begin(), meta->labels().end());
      if (!ls.Matches(labels)) return false;
    }
    if (!fs.Empty()) {
      return fs.Matches([&](std::string_view field) -> std::string {
        if (field == "metadata.name") return meta->name();
        if (field == "metadata.namespace") return meta->namespace_();
        return strategy->FieldValue(obj, field).value_or("");
      });
    }
    return true;
  });
}

// ---------------------------------------------------------------------------
// Create

std::optional<ApiError> ResourceStore::PrepareCreate(std::string_view ns,
                                                     Msg* obj,
                                                     const WriteContext& ctx,
                                                     WallTime now) {
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj);
  const std::string expected_ns = resource_->namespaced ? std::string(ns) : "";
  if (meta->namespace_().empty()) {
    meta->set_namespace_(expected_ns);
  } else if (meta->namespace_() != expected_ns) {
    return ApiError::BadRequest(
        "the namespace of the provided object does not match the namespace "
        "sent on the request");
  }
  if (!meta->resourceversion().empty()) {
    return ApiError::Internal(
        "resourceVersion should not be set on objects to be created");
  }
  if (resource_->namespaced && options_.namespace_check) {
    if (std::optional<ApiError> e =
            options_.namespace_check(*resource_, meta->name(), ns)) {
      return e;
    }
  }
  meta->set_uid(NewUid());
  objects::SetTime(meta->mutable_creationtimestamp(), now);
  meta->clear_deletiontimestamp();
  meta->clear_deletiongraceperiodseconds();
  meta->clear_selflink();
  if (meta->name().empty() && !meta->generatename().empty()) {
    std::string base = meta->generatename();
    if (base.size() > static_cast<size_t>(machinery::kMaxGeneratedNameLength)) {
      base.resize(machinery::kMaxGeneratedNameLength);
    }
    meta->set_name(base + GenerateNameSuffix());
  }
  if (auto e = PruneUnknownFields(obj, ctx)) return e;
  strategy_->Default(obj);
  strategy_->PrepareForCreate(obj);
  FieldErrors errs = strategy_->ValidateCreate(*obj);
  if (errs.empty()) {
    errs = ValidateGenericObjectMeta(*meta, resource_->namespaced);
  }
  if (!errs.empty()) {
    return ApiError::Invalid(resource_->kind->gv.group, resource_->kind->kind,
                             meta->name(), errs);
  }
  if (ctx.admit) return ctx.admit(*obj, nullptr);
  return std::nullopt;
}

int64_t ResourceStore::TtlSeconds() const {
  const bool events =
      resource_->resource == "events" &&
      (resource_->gv.group.empty() || resource_->gv.group == "events.k8s.io");
  return events ? options_.event_ttl_seconds : 0;
}

ApiResult<WriteResult> ResourceStore::CreateWithRetries(
    std::string_view ns, MutableObject obj, bool generated,
    const WriteContext& ctx) {
  // Another name from generateName, prepared again as kube's retry runs
  // BeforeCreate again (a Namespace's name label follows its name).
  auto rename = [&](const std::string& name) {
    objects::MutableObjectMeta(obj.get())->set_name(
        name.substr(0, name.size() - machinery::kGenerateNameSuffixLength) +
        GenerateNameSuffix());
    strategy_->PrepareForCreate(obj.get());
  };
  const int64_t ttl = TtlSeconds();
  for (int attempt = 0;; ++attempt) {
    const std::string name = MetaOf(*obj).name();
    if (ctx.dry_run) {
      StatusOr<ObjectPtr> existing = store_->Get(ns, name, 0);
      if (existing.ok()) {
        if (generated && attempt + 1 < kMaxGenerateNameAttempts) {
          rename(name);
          continue;
        }
        return ApiError::AlreadyExists(*resource_, name);
      }
      if (!existing.status().Is(StatusCode::kNotFound)) {
        return ApiError::FromStatus(existing.status(), resource_, name);
      }
      return WriteResult{ObjectPtr(std::move(obj)), true};
    }
    StatusOr<ObjectPtr> r = store_->Create(*obj, ttl);
    if (r.ok()) return WriteResult{*r, true};
    if (r.status().Is(StatusCode::kAlreadyExists) && generated &&
        attempt + 1 < kMaxGenerateNameAttempts) {
      rename(name);
      continue;
    }
    if (r.status().Is(StatusCode::kAlreadyExists)) {
      return ApiError::AlreadyExists(*resource_, name);
    }
    return ApiError::FromStatus(r.status(), resource_, name);
  }
}

ApiResult<WriteResult> ResourceStore::Create(std::string_view ns,
                                             MutableObject obj,
                                             const WriteContext& ctx) {
  const WallTime now = options_.clock->WallNow();
  // A name from generateName is retried on a collision; a name the client
  // chose never is (kube ignores generateName then).
  const bool generated =
      MetaOf(*obj).name().empty() && !MetaOf(*obj).generatename().empty();
  if (std::optional<ApiError> e = PrepareCreate(ns, obj.get(), ctx, now)) {
    return *e;
  }
  if (std::optional<ApiError> e =
          TrackUpdate(nullptr, obj.get(), "", ctx, now)) {
    return *e;
  }
  std::unique_ptr<WriteAllocator::Pending> allocated;
  if (options_.allocator != nullptr) {
    ApiResult<std::unique_ptr<WriteAllocator::Pending>> a =
        options_.allocator->Allocate(obj.get(), nullptr, ctx.dry_run);
    if (IsError(a)) return std::get<ApiError>(std::move(a));
    allocated =
        std::get<std::unique_ptr<WriteAllocator::Pending>>(std::move(a));
  }
  ApiResult<WriteResult> r =
      CreateWithRetries(ns, std::move(obj), generated, ctx);
  // A failed create gives its allocations back (allocated's destructor).
  if (allocated != nullptr && !IsError(r)) allocated->Commit();
  return r;
}

// ---------------------------------------------------------------------------
// Update

std::optional<ApiError> ResourceStore::TrackUpdate(const Msg* old, Msg* obj,
                                                   std::string_view subresource,
                                                   const WriteContext& ctx,
                                                   WallTime now) {
  std::vector<std::vector<std::string>> ignored;
  if (subresource.empty() && resource_->FindSubresource("status") != nullptr) {
    ignored.push_back({"f:status"});
  }
  // A write through a subresource is its manager's entry for that
  // subresource (kube's manager identifier holds it).
  Status s =
      TrackManagedFields(old, obj, *resource_->kind, ctx.field_manager,
                         Rfc3339(now), ignored, std::string(subresource));
  if (!s.ok()) return ApiError::Internal(s.message());
  return std::nullopt;
}

std::optional<ApiError> ResourceStore::PrepareUpdate(
    std::string_view subresource, Msg* obj, const Msg& old,
    const WriteContext& ctx, WallTime now, bool is_apply) {
  // rest.BeforeUpdate: system fields come from storage; what a client may
  // not change at all (uid, a deletion already under way) is left for
  // ValidateUpdate to reject.
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj);
  const objects::metav1::ObjectMeta& old_meta = MetaOf(old);
  if (meta->uid().empty()) meta->set_uid(old_meta.uid());
  if (old_meta.has_creationtimestamp()) {
    *meta->mutable_creationtimestamp() = old_meta.creationtimestamp();
  }
  if (objects::IsBeingDeleted(old_meta)) {
    *meta->mutable_deletiontimestamp() = old_meta.deletiontimestamp();
  }
  if (old_meta.has_deletiongraceperiodseconds() &&
      !meta->has_deletiongraceperiodseconds()) {
    meta->set_deletiongraceperiodseconds(old_meta.deletiongraceperiodseconds());
  }
  // An unconditional update is validated as if it named the stored version.
  if (meta->resourceversion().empty()) {
    meta->set_resourceversion(old_meta.resourceversion());
  }
  meta->clear_selflink();
  if (auto e = PruneUnknownFields(obj, ctx)) return e;
  strategy_->Default(obj);
  if (subresource == "status") {
    strategy_->PrepareForStatusUpdate(obj, old);
  } else if (subresource == "finalize") {
    strategy_->PrepareForFinalizeUpdate(obj, old);
  } else {
    strategy_->PrepareForUpdate(obj, old);
  }
  // A Prepare may have replaced the object's parts (the custom resources'
  // status update moves a whole object in): `meta` is looked up anew.
  meta = objects::MutableObjectMeta(obj);
  if (!is_apply) {
    if (std::optional<ApiError> e =
            TrackUpdate(&old, obj, subresource, ctx, now)) {
      return e;
    }
  }
  FieldErrors errs =
      subresource == "status"     ? strategy_->ValidateStatusUpdate(*obj, old)
      : subresource == "finalize" ? strategy_->ValidateFinalizeUpdate(*obj, old)
                                  : strategy_->ValidateUpdate(*obj, old);
  if (!errs.empty()) {
    return ApiError::Invalid(resource_->kind->gv.group, resource_->kind->kind,
                             meta->name(), errs);
  }
  if (ctx.admit) return ctx.admit(*obj, &old);
  return std::nullopt;
}

namespace {
// What the update function returns to GuaranteedUpdate when the registry
// rejected the change; the ApiError itself travels beside it.
Status Rejected() { return Status(StatusCode::kAborted, "update rejected"); }
}  // namespace

ApiResult<WriteResult> ResourceStore::DoUpdate(std::string_view ns,
                                               std::string_view name,
                                               bool create_if_missing,
                                               bool dry_run,
                                               const UpdateFn& fn) {
  std::optional<ApiError> rejected;
  bool created = false;
  bool old_deleting = false;
  std::unique_ptr<WriteAllocator::Pending> allocated;
  auto wrapped = [&](const Msg* cur)
      -> StatusOr<std::unique_ptr<google::protobuf::Message>> {
    rejected.reset();
    created = cur == nullptr;
    old_deleting = false;
    if (cur != nullptr) {
      const objects::metav1::ObjectMeta& m = MetaOf(*cur);
      old_deleting =
          objects::IsBeingDeleted(m) && (!m.has_deletiongraceperiodseconds() ||
                                     m.deletiongraceperiodseconds() == 0);
    }
    ApiResult<MutableObject> r = fn(cur);
    if (IsError(r)) {
      rejected = std::get<ApiError>(std::move(r));
      return Rejected();
    }
    MutableObject next = std::get<MutableObject>(std::move(r));
    if (options_.allocator != nullptr) {
      // A retried round (a lost race) gives back what the last one took.
      allocated.reset();
      ApiResult<std::unique_ptr<WriteAllocator::Pending>> a =
          options_.allocator->Allocate(next.get(), cur, dry_run);
      if (IsError(a)) {
        rejected = std::get<ApiError>(std::move(a));
        return Rejected();
      }
      allocated =
          std::get<std::unique_ptr<WriteAllocator::Pending>>(std::move(a));
    }
    return next;
  };

  if (dry_run) {
    StatusOr<ObjectPtr> cur = store_->Get(ns, name, 0);
    if (!cur.ok() &&
        !(cur.status().Is(StatusCode::kNotFound) && create_if_missing)) {
      return ApiError::FromStatus(cur.status(), resource_, name);
    }
    StatusOr<MutableObject> r = wrapped(cur.ok() ? cur->get() : nullptr);
    if (!r.ok()) {
      if (rejected) return *rejected;
      return ApiError::FromStatus(r.status(), resource_, name);
    }
    if (cur.ok()) {
      objects::SetResourceVersion(r->get(), objects::ResourceVersion(**cur));
    }
    return WriteResult{ObjectPtr(std::move(*r)), created};
  }

  // The watch cache's copy spares the store read when it is current, as
  // kube-apiserver's cacher passes it to GuaranteedUpdate.
  ObjectPtr cached;
  if (cacher_ != nullptr && cacher_->ready()) {
    StatusOr<ObjectPtr> c = cacher_->Get(ns, name);
    if (c.ok()) cached = *c;
  }
  // Created or updated, an event lives one TTL from this write (kube's
  // Store.Update returns calculateTTL's answer to GuaranteedUpdate on both
  // paths).
  StatusOr<ObjectPtr> r =
      store_->GuaranteedUpdate(ns, name, Preconditions{}, wrapped,
                               create_if_missing, cached, TtlSeconds());
  if (!r.ok()) {
    // `rejected` may be left from a round on a stale cached copy that the
    // store then failed to replace: only the rejection marker means it.
    if (rejected && r.status() == Rejected()) return *rejected;
    return ApiError::FromStatus(r.status(), resource_, name);
  }
  if (allocated != nullptr) allocated->Commit();
  const objects::metav1::ObjectMeta& meta = MetaOf(**r);
  if (!created && old_deleting && meta.finalizers_size() == 0 &&
      objects::IsBeingDeleted(meta) && !HasSpecFinalizers(**r)) {
    // The update removed the last finalizer of an object whose deletion was
    // requested: finish the deletion (registry.Store.shouldDeleteDuringUpdate,
    // and for namespaces ShouldDeleteNamespaceDuringUpdate, which also waits
    // for spec.finalizers: the namespace controller's PUT of /finalize is
    // what ends a namespace).
    Preconditions pre;
    pre.uid = meta.uid();
    pre.resource_version = meta.resourceversion();
    StatusOr<ObjectPtr> d = store_->Delete(ns, name, pre);
    if (d.ok()) {
      if (options_.allocator != nullptr) options_.allocator->Release(**d);
      return WriteResult{*d, false};
    }
  }
  return WriteResult{*r, created};
}

namespace {

// The name and namespace of a PUT/PATCH body against the URL.
std::optional<ApiError> MatchUrl(const objects::ResourceInfo& resource,
                                 std::string_view ns, std::string_view name,
                                 google::protobuf::Message* obj) {
  objects::metav1::ObjectMeta* meta = objects::MutableObjectMeta(obj);
  if (meta->name().empty()) {
    meta->set_name(std::string(name));
  } else if (meta->name() != name) {
    return ApiError::BadRequest("the name of the object (" + meta->name() +
                                ") does not match the name on the URL (" +
                                std::string(name) + ")");
  }
  const std::string expected_ns = resource.namespaced ? std::string(ns) : "";
  if (meta->namespace_().empty()) {
    meta->set_namespace_(expected_ns);
  } else if (meta->namespace_() != expected_ns) {
    return ApiError::BadRequest(
        "the namespace of the provided object does not match the namespace "
        "sent on the request");
  }
  return std::nullopt;
}

// 409 when the body names a resourceVersion other than the stored one.
std::optional<ApiError> CheckResourceVersion(
    const objects::ResourceInfo& resource, std::string_view name,
    const google::protobuf::Message& obj,
    const google::protobuf::Message& cur) {
  const std::string& rv = objects::ResourceVersion(obj);
  if (rv.empty()) return std::nullopt;
  StatusOr<int64_t> want = Versioner::Parse(rv);
  if (!want.ok()) return ApiError::BadRequest(want.status().message());
  StatusOr<int64_t> have = Versioner::Parse(objects::ResourceVersion(cur));
  if (!have.ok() || *want != *have) {
    return ApiError::Conflict(resource, name, kOptimisticLockMessage);
  }
  return std::nullopt;
}

bool AllowsCreateOnUpdate(const objects::ResourceInfo& r) {
  return (r.gv.group.empty() &&
          (r.resource == "events" || r.resource == "services")) ||
         (r.gv.group == "events.k8s.io" && r.resource == "events") ||
         (r.gv.group == "coordination.k8s.io" && r.resource == "leases");
}

}  // namespace

ApiResult<WriteResult> ResourceStore::Update(std::string_view ns,
                                             std::string_view name,
                                             std::string_view subresource,
                                             MutableObject obj,
                                             const WriteContext& ctx) {
  if (std::optional<ApiError> e = MatchUrl(*resource_, ns, name, obj.get())) {
    return *e;
  }
  const WallTime now = options_.clock->WallNow();
  const bool allow_create =
      subresource.empty() && AllowsCreateOnUpdate(*resource_);
  std::vector<std::string> warnings;
  std::shared_ptr<const Msg> body(std::move(obj));
  ApiResult<WriteResult> r = DoUpdate(
      ns, name, allow_create, ctx.dry_run,
      [&](const Msg* cur) -> ApiResult<MutableObject> {
        MutableObject n = Clone(*body);
        if (cur == nullptr) {
          objects::SetResourceVersion(n.get(), "");
          if (auto e = PrepareCreate(ns, n.get(), ctx, now)) return *e;
          if (auto e = TrackUpdate(nullptr, n.get(), "", ctx, now)) return *e;
          return n;
        }
        if (auto e = CheckResourceVersion(*resource_, name, *n, *cur)) {
          return *e;
        }
        if (auto e =
                PrepareUpdate(subresource, n.get(), *cur, ctx, now, false)) {
          return *e;
        }
        return n;
      });
  return r;
}

std::optional<ApiError> ResourceStore::PruneUnknownFields(
    Msg* obj, const WriteContext& ctx) const {
  if (!options_.prune_unknown_fields) return std::nullopt;
  objects::DecodeResult unknown;
  unknown.unknown_fields = options_.prune_unknown_fields(obj);
  if (unknown.strict_ok()) return std::nullopt;
  if (ctx.field_validation == FieldValidation::kStrict) {
    return ApiError::BadRequest(unknown.StrictErrorMessage());
  }
  if (ctx.field_validation == FieldValidation::kWarn &&
      ctx.warnings != nullptr) {
    // Once each, though a retried update prunes again (the reply dedupes
    // and bounds them: BoundedWarnings).
    for (std::string& w : unknown.Warnings()) {
      ctx.warnings->push_back(std::move(w));
    }
  }
  return std::nullopt;
}

patch::PatchLimits ResourceStore::PatchBounds() const {
  patch::PatchLimits limits;
  limits.max_bytes = options_.max_patched_bytes;
  return limits;
}

ApiResult<WriteResult> ResourceStore::Patch(
    std::string_view ns, std::string_view name, std::string_view subresource,
    PatchType type, std::string_view patch, const WriteContext& ctx) {
  if (subresource == "scale") return PatchScale(ns, name, type, patch, ctx);
  const WallTime now = options_.clock->WallNow();
  const objects::KindInfo& kind = *resource_->kind;
  std::vector<std::string> attempt_warnings;
  ApiResult<WriteResult> r;
  if (type == PatchType::kApply) {
    ApplyParams params;
    params.manager = ctx.field_manager;
    params.force = ctx.force;
    params.time = Rfc3339(now);
    params.validation = ctx.field_validation;
    params.subresource = std::string(subresource);
    if (subresource.empty() &&
        resource_->FindSubresource("status") != nullptr) {
      params.ignored.push_back({"f:status"});
    }
    r = DoUpdate(
        ns, name, /*create_if_missing=*/subresource.empty(), ctx.dry_run,
        [&](const Msg* cur) -> ApiResult<MutableObject> {
          attempt_warnings.clear();
          ApiResult<MutableMessage> applied = ServerSideApplyObject(
              cur, kind, patch, params, &attempt_warnings, PatchBounds());
          if (IsError(applied)) return std::get<ApiError>(std::move(applied));
          MutableObject n = std::get<MutableMessage>(std::move(applied));
          if (auto e = MatchUrl(*resource_, ns, name, n.get())) return *e;
          if (cur == nullptr) {
            objects::SetResourceVersion(n.get(), "");
            if (auto e = PrepareCreate(ns, n.get(), ctx, now)) return *e;
            return n;
          }
          if (auto e = CheckResourceVersion(*resource_, name, *n, *cur)) {
            return *e;
          }
          if (auto e =
                  PrepareUpdate(subresource, n.get(), *cur, ctx, now, true)) {
            return *e;
          }
          return n;
        });
  } else {
    r = DoUpdate(
        ns, name, false, ctx.dry_run,
        [&](const Msg* cur) -> ApiResult<MutableObject> {
          attempt_warnings.clear();
          ApiResult<MutableMessage> patched =
              ApplyPatch(*cur, kind, type, patch, ctx.field_validation,
                         &attempt_warnings, PatchBounds());
          if (IsError(patched)) return std::get<ApiError>(std::move(patched));
          MutableObject n = std::get<MutableMessage>(std::move(patched));
          if (auto e = MatchUrl(*resource_, ns, name, n.get())) return *e;
          if (auto e = CheckResourceVersion(*resource_, name, *n, *cur)) {
            return *e;
          }
          if (auto e =
                  PrepareUpdate(subresource, n.get(), *cur, ctx, now, false)) {
            return *e;
          }
          return n;
        });
  }
  if (ctx.warnings != nullptr) {
    ctx.warnings->insert(ctx.warnings->end(), attempt_warnings.begin(),
                         attempt_warnings.end());
  }
  return r;
}

// ---------------------------------------------------------------------------
// Delete

ApiResult<DeleteResult> ResourceStore::Delete(
    std::string_view ns, std::string_view name,
    const objects::metav1::DeleteOptions& opts) {
  const bool dry_run = opts.dryrun_size() > 0;
  const bool is_namespace =
      resource_->gv.group.empty() && resource_->resource == "namespaces";
  const bool is_pod =
      resource_->gv.group.empty() && resource_->resource == "pods";
  if (is_namespace && IsImmortalNamespace(name)) {
    return ApiError::Forbidden(*resource_, name,
                               "this namespace may not be deleted");
  }
  for (int attempt = 0; attempt < kMaxDeleteAttempts; ++attempt) {
    StatusOr<ObjectPtr> cur = store_->Get(ns, name, 0);
    if (!cur.ok()) return ApiError::FromStatus(cur.status(), resource_, name);
    const Msg& obj = **cur;
    const objects::metav1::ObjectMeta& meta = MetaOf(obj);
    if (auto e = CheckPreconditions(*resource_, name, store_->Key(ns, name),
                                    opts, meta)) {
      return *e;
    }
    const WallTime now = options_.clock->WallNow();
    const int64_t now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch())
            .count();

    enum class Action { kPending, kUpdate, kDeleteNow } action;
    MutableObject updated;
    const bool deleting = objects::IsBeingDeleted(meta);
    const std::vector<std::string> finalizers =
        FinalizersForDeletion(opts, meta);
    const bool finalizers_changed =
        finalizers != std::vector<std::string>(meta.finalizers().begin(),
                                               meta.finalizers().end());

    if (is_namespace && !deleting) {
      // First deletion of a namespace: it goes Terminating; the namespace
      // finalizer empties it and removes it.
      updated = Clone(obj);
      objects::metav1::ObjectMeta* m = objects::MutableObjectMeta(updated.get());
      objects::SetTime(m->mutable_deletiontimestamp(), now);
      SetFinalizers(m, finalizers);
      if (auto* nsobj = dynamic_cast<objects::corev1::Namespace*>(updated.get())) {
        nsobj->mutable_status()->set_phase("Terminating");
      }
      action = Action::kUpdate;
    } else if (is_namespace && dynamic_cast<const objects::corev1::Namespace&>(obj)
                                       .spec()
                                       .finalizers_size() > 0) {
      action = Action::kPending;
    } else if (deleting) {
      const int64_t cur_grace = meta.has_deletiongraceperiodseconds()
                                    ? meta.deletiongraceperiodseconds()
                                    : 0;
      if (cur_grace > 0) {
        if (opts.has_graceperiodseconds() &&
            opts.graceperiodseconds() < cur_grace) {
          const int64_t grace = opts.graceperiodseconds();
          if (grace == 0 && meta.finalizers_size() == 0) {
            action = Action::kDeleteNow;
          } else {
            updated = Clone(obj);
            objects::metav1::ObjectMeta* m =
                objects::MutableObjectMeta(updated.get());
            // Moved earlier by the difference (grace < cur_grace).
            objects::SetTime(
                m->mutable_deletiontimestamp(),
                SaturatingAdd(objects::UnixSeconds(meta.deletiontimestamp()),
                              grace - cur_grace));
            m->set_deletiongraceperiodseconds(grace);
            action = Action::kUpdate;
          }
        } else {
          action = Action::kPending;  // graceful deletion already under way
        }
      } else if (!finalizers.empty()) {
        if (finalizers_changed) {
          updated = Clone(obj);
          SetFinalizers(objects::MutableObjectMeta(updated.get()), finalizers);
          action = Action::kUpdate;
        } else {
          action = Action::kPending;
        }
      } else {
        action = Action::kDeleteNow;
      }
    } else {
      int64_t grace = 0;
      if (is_pod) {
        grace = opts.has_graceperiodseconds()
                    ? opts.graceperiodseconds()
                    : strategy_->DefaultGracePeriodSeconds(obj);
        const std::string node =
            strategy_->FieldValue(obj, "spec.nodeName").value_or("");
        const std::string phase =
            strategy_->FieldValue(obj, "status.phase").value_or("");
        if (node.empty() || phase == "Succeeded" || phase == "Failed") {
          grace = 0;
        }
        // The pod's terminationGracePeriodSeconds may be any int64; the
        // DeleteOptions one is already capped (ParseDeleteOptions).
        grace = std::min(grace, kMaxRequestDurationSeconds);
      }
      if (grace > 0) {
        updated = Clone(obj);
        objects::metav1::ObjectMeta* m =
            objects::MutableObjectMeta(updated.get());
        objects::SetTime(m->mutable_deletiontimestamp(),
                         SaturatingAdd(now_s, grace));
        m->set_deletiongraceperiodseconds(grace);
        SetFinalizers(m, finalizers);
        if (m->generation() > 0) m->set_generation(m->generation() + 1);
        action = Action::kUpdate;
      } else if (!finalizers.empty()) {
        updated = Clone(obj);
        objects::metav1::ObjectMeta* m = objects::MutableObjectMeta(updated.get());
        objects::SetTime(m->mutable_deletiontimestamp(), now);
        m->set_deletiongraceperiodseconds(0);
        SetFinalizers(m, finalizers);
        action = Action::kUpdate;
      } else {
        action = Action::kDeleteNow;
      }
    }

    switch (action) {
      case Action::kPending:
        return DeleteResult{*cur, false};
      case Action::kUpdate: {
        if (dry_run) return DeleteResult{ObjectPtr(std::move(updated)), false};
        Preconditions pre;
        pre.uid = meta.uid();
        pre.resource_version = meta.resourceversion();
        std::shared_ptr<const Msg> next(std::move(updated));
        StatusOr<ObjectPtr> r = store_->GuaranteedUpdate(
            ns, name, pre, [&](const Msg* c) -> StatusOr<MutableObject> {
              if (c == nullptr) return NotFoundError("gone");
              return Clone(*next);
            });
        if (r.ok()) return DeleteResult{*r, false};
        if (r.status().Is(StatusCode::kConflict)) continue;  // raced: again
        return ApiError::FromStatus(r.status(), resource_, name);
      }
      case Action::kDeleteNow: {
        if (dry_run) return DeleteResult{*cur, true};
        Preconditions pre;
        pre.uid = meta.uid();
        pre.resource_version = meta.resourceversion();
        StatusOr<ObjectPtr> r = store_->Delete(ns, name, pre);
        if (r.ok()) {
          if (options_.allocator != nullptr) options_.allocator->Release(**r);
          return DeleteResult{*r, true};
        }
        if (r.status().Is(StatusCode::kConflict)) continue;
        return ApiError::FromStatus(r.status(), resource_, name);
      }
    }
  }
  return ApiError::Conflict(*resource_, name, kOptimisticLockMessage);
}

ApiResult<std::vector<ObjectPtr>> ResourceStore::DeleteCollection(
    std::string_view ns, const objects::metav1::DeleteOptions& opts,
    ObjectPredicate predicate) {
  ListOptions lo;
  lo.predicate = std::move(predicate);
  StatusOr<ListResult> list = store_->List(ns, lo);
  if (!list.ok()) return ApiError::FromStatus(list.status(), resource_);
  std::vector<ObjectPtr> out;
  for (const ObjectPtr& item : list->items) {
    const objects::metav1::ObjectMeta& meta = MetaOf(*item);
    objects::metav1::DeleteOptions item_opts = opts;
    item_opts.clear_preconditions();
    ApiResult<DeleteResult> r =
        Delete(meta.namespace_(), meta.name(), item_opts);
    if (IsError(r)) {
      const ApiError& e = std::get<ApiError>(r);
      if (e.code == 404) continue;
      return e;
    }
    out.push_back(std::get<DeleteResult>(r).object);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Subresources

ApiResult<ObjectPtr> ResourceStore::GetScale(std::string_view ns,
                                             std::string_view name) {
  StatusOr<ObjectPtr> r = store_->Get(ns, name, 0);
  if (!r.ok()) return ApiError::FromStatus(r.status(), resource_, name);
  return ObjectPtr(
      std::make_shared<objects::autoscalingv1::Scale>(strategy_->ToScale(**r)));
}

namespace {

std::optional<ApiError> CheckScale(const objects::autoscalingv1::Scale& scale) {
  FieldErrors errs = ValidateScale(scale);
  if (errs.empty()) return std::nullopt;
  return ApiError::Invalid("autoscaling", "Scale", scale.metadata().name(),
                           errs);
}

}  // namespace

ApiResult<WriteResult> ResourceStore::UpdateScale(std::string_view ns,
                                                  std::string_view name,
                                                  MutableObject scale_msg,
                                                  const WriteContext& ctx) {
  auto* scale = dynamic_cast<objects::autoscalingv1::Scale*>(scale_msg.get());
  CHECK(scale != nullptr);
  if (auto e = MatchUrl(*resource_, ns, name, scale)) return *e;
  if (auto e = CheckScale(*scale)) return *e;
  const WallTime now = options_.clock->WallNow();
  ApiResult<WriteResult> r = DoUpdate(
      ns, name, false, ctx.dry_run,
      [&](const Msg* cur) -> ApiResult<MutableObject> {
        if (auto e = CheckResourceVersion(*resource_, name, *scale, *cur)) {
          return *e;
        }
        MutableObject n = Clone(*cur);
        strategy_->ApplyScale(*scale, n.get());
        if (auto e = PrepareUpdate("scale", n.get(), *cur, ctx, now, false)) {
          return *e;
        }
        return n;
      });
  if (IsError(r)) return r;
  WriteResult w = std::get<WriteResult>(std::move(r));
  w.object = std::make_shared<objects::autoscalingv1::Scale>(
      strategy_->ToScale(*w.object));
  return w;
}

ApiResult<WriteResult> ResourceStore::PatchScale(std::string_view ns,
                                                 std::string_view name,
                                                 PatchType type,
                                                 std::string_view patch,
                                                 const WriteContext& ctx) {
  if (type == PatchType::kApply) {
    return ApiError::UnsupportedMediaType(
        "application/apply-patch+yaml",
        {"application/json-patch+json", "application/merge-patch+json",
         "application/strategic-merge-patch+"
         "json"});
  }
  const objects::KindInfo* scale_kind =
      objects::Scheme::Default().FindKind("autoscaling/v1", "Scale");
  CHECK(scale_kind != nullptr);
  const WallTime now = options_.clock->WallNow();
  std::vector<std::string> attempt_warnings;
  ApiResult<WriteResult> r = DoUpdate(
      ns, name, false, ctx.dry_run,
      [&](const Msg* cur) -> ApiResult<MutableObject> {
        attempt_warnings.clear();
        objects::autoscalingv1::Scale current = strategy_->ToScale(*cur);
        ApiResult<MutableMessage> patched =
            ApplyPatch(current, *scale_kind, type, patch, ctx.field_validation,
                       &attempt_warnings, PatchBounds());
        if (IsError(patched)) return std::get<ApiError>(std::move(patched));
        auto* scale = dynamic_cast<objects::autoscalingv1::Scale*>(
            std::get<MutableMessage>(patched).get());
        CHECK(scale != nullptr);
        if (auto e = MatchUrl(*resource_, ns, name, scale)) return *e;
        if (auto e = CheckScale(*scale)) return *e;
        if (auto e = CheckResourceVersion(*resource_, name, *scale, *cur)) {
          return *e;
        }
        MutableObject n = Clone(*cur);
        strategy_->ApplyScale(*scale, n.get());
        if (auto e = PrepareUpdate("scale", n.get(), *cur, ctx, now, false)) {
          return *e;
        }
        return n;
      });
  if (ctx.warnings != nullptr) {
    ctx.warnings->insert(ctx.warnings->end(), attempt_warnings.begin(),
                         attempt_warnings.end());
  }
  if (IsError(r)) return r;
  WriteResult w = std::get<WriteResult>(std::move(r));
  w.object = std::make_shared<objects::autoscalingv1::Scale>(
      strategy_->ToScale(*w.object));
  return w;
}

std::optional<ApiError> ResourceStore::Bind(std::string_view ns,
                                            const objects::corev1::Binding& binding,
                                            bool dry_run) {
  const std::string& name = binding.metadata().name();
  FieldErrors errs = ValidateBinding(binding);
  if (!errs.empty()) return ApiError::Invalid("", "Binding", name, errs);
  const WallTime now = options_.clock->WallNow();
  ApiResult<WriteResult> r = DoUpdate(
      ns, name, false, dry_run,
      [&](const Msg* cur) -> ApiResult<MutableObject> {
        MutableObject n = Clone(*cur);
        auto* pod = dynamic_cast<objects::corev1::Pod*>(n.get());
        CHECK(pod != nullptr) << "Bind on a store that is not pods";
        Status s = ApplyBinding(binding, pod, now);
        if (!s.ok()) {
          ApiError e = ApiError::FromStatus(s, resource_, name);
          if (s.Is(StatusCode::kConflict)) {
            e.message = "Operation cannot be fulfilled on pods/binding \"" +
                        name + "\": " + s.message();
          }
          return e;
        }
        return n;
      });
  if (IsError(r)) return std::get<ApiError>(std::move(r));
  return std::nullopt;
}

}  // namespace kplane::apiserver
