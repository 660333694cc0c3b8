#include "controllers/garbage_collector.h"

#include <google/protobuf/message.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <memory>

#include "base/logging.h"
#include "informer/api_errors.h"
#include "informer/event_recorder.h"
#include "informer/unstructured.h"
#include "objects/meta.h"
#include "objects/scheme.h"

namespace kplane::controllers {

namespace {
constexpr char kOrphan[] = "orphan";
constexpr char kForeground[] = "foregroundDeletion";

// Whether the cache holds less than the whole typed object: metadata only
// (the discovered resources' metadata informers) or unstructured JSON. Such
// an object is changed with a JSON patch of its metadata, not an update.
bool ChangedByPatch(const google::protobuf::Message& obj) {
  return google::protobuf::DynamicCastToGenerated<
             metav1::PartialObjectMetadata>(&obj) != nullptr ||
         google::protobuf::DynamicCastToGenerated<informer::UnstructuredObject>(
             &obj) != nullptr;
}

// The group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
std::string GroupOf(const std::string& api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

bool HasGcFinalizer(const metav1::ObjectMeta& m) {
  return objects::HasFinalizer(m, kOrphan) ||
         objects::HasFinalizer(m, kForeground);
}

// Whether `m` is waiting for its dependents (kube's deletingDependents).
bool DeletingDependents(const metav1::ObjectMeta& m) {
  return objects::IsBeingDeleted(m) && objects::HasFinalizer(m, kForeground);
}

// Whether the dependent's reference holds its owner's foreground deletion.
bool Blocks(const metav1::OwnerReference& ref) {
  return ref.has_blockownerdeletion() && ref.blockownerdeletion();
}

// The reference of `m` to `uid`, or null.
const metav1::OwnerReference* RefTo(const metav1::ObjectMeta& m,
                                    const std::string& uid) {
  for (const metav1::OwnerReference& r : m.ownerreferences()) {
    if (r.uid() == uid) return &r;
  }
  return nullptr;
}

// Whether the collector has something to do about an object.
bool Interesting(const metav1::ObjectMeta& m) {
  return m.ownerreferences_size() > 0 ||
         (objects::IsBeingDeleted(m) && HasGcFinalizer(m));
}

// Whether `a` and `b` hold the same owner references as the collector
// reads them: each one's uid and whether it blocks, in order.
bool SameOwnerRefs(const metav1::ObjectMeta& a, const metav1::ObjectMeta& b) {
  if (a.ownerreferences_size() != b.ownerreferences_size()) return false;
  for (int i = 0; i < a.ownerreferences_size(); ++i) {
    const metav1::OwnerReference& x = a.ownerreferences(i);
    const metav1::OwnerReference& y = b.ownerreferences(i);
    if (x.uid() != y.uid() || Blocks(x) != Blocks(y)) return false;
  }
  return true;
}

// The object's metadata as the server has it now (a PartialObjectMetadata
// GET): nullptr when it is gone; an error when the read fails, or answers
// no uid (a 2xx answer carrying something else is no ground to act on).
StatusOr<ObjectPtr> LiveMetadata(ApiWriter* api,
                                 const objects::ResourceInfo& resource,
                                 std::string_view ns, std::string_view name) {
  StatusOr<ObjectPtr> live = api->GetMetadata(resource, ns, name);
  if (!live.ok()) {
    if (informer::IsNotFound(live.status())) return ObjectPtr();
    return live.status();
  }
  if (objects::Uid(**live).empty()) {
    return InternalError("the live read of " + resource.resource + " " +
                         informer::ObjectKey(ns, name) + " answered no uid");
  }
  return *live;
}

// Whether an update changed what the collector looks at (lease renewals
// and status writes of owned objects do not). A relist reports an object
// replaced under the same name as an update: a new uid counts.
bool GcRelevantChange(const metav1::ObjectMeta& before,
                      const metav1::ObjectMeta& after) {
  return before.uid() != after.uid() || !SameOwnerRefs(before, after) ||
         objects::IsBeingDeleted(before) != objects::IsBeingDeleted(after) ||
         objects::HasFinalizer(before, kOrphan) !=
             objects::HasFinalizer(after, kOrphan) ||
         objects::HasFinalizer(before, kForeground) !=
             objects::HasFinalizer(after, kForeground);
}

// A JSON patch (RFC 6902) removing the array elements at `indexes` of
// `path` (descending, so that earlier removals do not shift later ones),
// each after a test that it still is `values[i]` at `value_path`.
std::string TestAndRemovePatch(const std::string& path,
                               const std::vector<int>& indexes,
                               const std::string& value_suffix,
                               const std::vector<std::string>& values) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartArray();
  for (size_t i = 0; i < indexes.size(); ++i) {
    std::string element = path + "/" + std::to_string(indexes[i]);
    w.StartObject();
    w.Key("op");
    w.String("test");
    w.Key("path");
    w.String((element + value_suffix).c_str());
    w.Key("value");
    w.String(values[i].c_str(),
             static_cast<rapidjson::SizeType>(values[i].size()));
    w.EndObject();
    w.StartObject();
    w.Key("op");
    w.String("remove");
    w.Key("path");
    w.String(element.c_str());
    w.EndObject();
  }
  w.EndArray();
  return buf.GetString();
}
// A JSON patch setting blockOwnerDeletion to false on the ownerReferences
// at `indexes`, each after a test that it still refers to `uids[i]`.
std::string TestAndUnblockPatch(const std::vector<int>& indexes,
                                const std::vector<std::string>& uids) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartArray();
  for (size_t i = 0; i < indexes.size(); ++i) {
    std::string element =
        "/metadata/ownerReferences/" + std::to_string(indexes[i]);
    w.StartObject();
    w.Key("op");
    w.String("test");
    w.Key("path");
    w.String((element + "/uid").c_str());
    w.Key("value");
    w.String(uids[i].c_str(), static_cast<rapidjson::SizeType>(uids[i].size()));
    w.EndObject();
    w.StartObject();
    w.Key("op");
    w.String("replace");
    w.Key("path");
    w.String((element + "/blockOwnerDeletion").c_str());
    w.Key("value");
    w.Bool(false);
    w.EndObject();
  }
  w.EndArray();
  return buf.GetString();
}
}  // namespace

std::vector<std::string> OwnerUidIndexFunc(
    const google::protobuf::Message& obj) {
  const metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  std::vector<std::string> out;
  if (meta == nullptr) return out;
  for (const metav1::OwnerReference& r : meta->ownerreferences()) {
    out.push_back(r.uid());
  }
  return out;
}

GarbageCollector::GarbageCollector(GarbageCollectorOptions options)
    : Controller("garbagecollector", options.clock, options.metrics),
      options_(options) {
  CHECK(options_.api != nullptr && options_.pods != nullptr &&
        options_.replicasets != nullptr && options_.deployments != nullptr);
  auto typed = [this](const objects::ResourceInfo& r,
                      const informer::Indexer* cache) {
    typed_.push_back(GcResource{.name = r.resource,
                                .group = r.gv.group,
                                .kind = r.kind->kind,
                                .namespaced = r.namespaced,
                                .info = &r,
                                .cache = cache});
  };
  typed(PodsResource(), options_.pods);
  typed(ReplicaSetsResource(), options_.replicasets);
  typed(DeploymentsResource(), options_.deployments);
  if (options_.jobs != nullptr) typed(JobsResource(), options_.jobs);
  if (options_.cronjobs != nullptr) {
    typed(CronJobsResource(), options_.cronjobs);
  }
}

std::string GarbageCollector::KeyFor(const objects::ResourceInfo& resource,
                                     const google::protobuf::Message& obj) {
  return resource.resource + "/" + informer::ObjectKey(obj);
}

std::optional<GcResource> GarbageCollector::Find(
    const std::string& name) const {
  for (const GcResource& r : typed_) {
    if (r.name == name) return r;
  }
  MutexLock l(&mu_);
  auto it = added_.find(name);
  if (it == added_.end()) return std::nullopt;
  return it->second;
}

std::optional<GcResource> GarbageCollector::FindKind(
    const std::string& api_version, const std::string& kind) const {
  const std::string group = GroupOf(api_version);
  for (const GcResource& r : typed_) {
    if (r.group == group && r.kind == kind) return r;
  }
  MutexLock l(&mu_);
  for (const auto& [name, r] : added_) {
    if (r.group == group && r.kind == kind) return r;
  }
  return std::nullopt;
}

std::vector<GcResource> GarbageCollector::All() const {
  std::vector<GcResource> out = typed_;
  MutexLock l(&mu_);
  for (const auto& [name, r] : added_) out.push_back(r);
  return out;
}

bool GarbageCollector::Follows(const std::string& name) const {
  if (name == "replicasets.apps" || name == "deployments.apps" ||
      name == "jobs.batch" || name == "cronjobs.batch") {
    // Typed resources are named by their plural alone in keys.
    return Find(name.substr(0, name.find('.'))).has_value();
  }
  return Find(name).has_value();
}

std::vector<std::string> GarbageCollector::AddedResources() const {
  MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, r] : added_) out.push_back(name);
  return out;
}

void GarbageCollector::MarkDiscovered() {
  MutexLock l(&mu_);
  discovered_ = true;
}

bool GarbageCollector::Discovered() const {
  MutexLock l(&mu_);
  return discovered_;
}

void GarbageCollector::AddResource(GcResource resource) {
  CHECK(resource.info != nullptr && resource.cache != nullptr);
  const informer::Indexer* cache = resource.cache;
  const std::string name = resource.name;
  std::set<std::string> waiting;
  {
    MutexLock l(&mu_);
    auto it = unresolved_.find(resource.group + "/" + resource.kind);
    if (it != unresolved_.end()) {
      waiting.swap(it->second);
      unresolved_keys_ -= waiting.size();
      unresolved_.erase(it);
    }
    added_[name] = std::move(resource);
  }
  // What the cache held before the handlers were called for it.
  for (const ObjectPtr& o : cache->List()) {
    if (Interesting(*objects::GetObjectMeta(*o))) {
      Controller::Enqueue(name + "/" + informer::ObjectKey(*o));
    }
  }
  // Their owners can be looked up now (at once, not after a backoff).
  for (const std::string& key : waiting) Controller::Enqueue(key);
}

void GarbageCollector::RemoveResource(const std::string& name) {
  MutexLock l(&mu_);
  added_.erase(name);
}

void GarbageCollector::ObjectChanged(const std::string& name,
                                     const ObjectEvent& event) {
  std::optional<GcResource> r = Find(name);
  if (r.has_value()) EnqueueEvent(*r, event);
}

void GarbageCollector::EnqueueDependents(
    const google::protobuf::Message& owner) {
  for (const Dependent& d : DependentsOf(objects::Uid(owner))) {
    Controller::Enqueue(d.resource.name + "/" + informer::ObjectKey(*d.object));
  }
}

std::vector<GarbageCollector::Dependent> GarbageCollector::DependentsOf(
    const std::string& uid) const {
  std::vector<Dependent> out;
  for (const GcResource& r : All()) {
    StatusOr<std::vector<ObjectPtr>> deps =
        r.cache->ByIndex(kOwnerUidIndex, uid);
    if (!deps.ok()) continue;  // a typed cache without the index
    for (ObjectPtr& d : *deps) out.push_back(Dependent{r, std::move(d)});
  }
  return out;
}

std::optional<std::string> GarbageCollector::OwnerKey(
    const metav1::ObjectMeta& dependent,
    const metav1::OwnerReference& ref) const {
  std::optional<GcResource> r = FindKind(ref.apiversion(), ref.kind());
  if (!r.has_value()) return std::nullopt;
  // A namespaced owner is in its dependent's namespace (references across
  // namespaces are invalid); a cluster-scoped one has none.
  return r->name + "/" +
         informer::ObjectKey(r->namespaced ? dependent.namespace_() : "",
                             ref.name());
}

ObjectPtr GarbageCollector::CachedOwner(
    const metav1::ObjectMeta& dependent,
    const metav1::OwnerReference& ref) const {
  std::optional<GcResource> r = FindKind(ref.apiversion(), ref.kind());
  if (!r.has_value()) return nullptr;
  ObjectPtr owner = r->cache->Get(informer::ObjectKey(
      r->namespaced ? dependent.namespace_() : "", ref.name()));
  if (owner == nullptr || objects::Uid(*owner) != ref.uid()) return nullptr;
  return owner;
}

void GarbageCollector::EnqueueWaitingOwners(
    const metav1::ObjectMeta& dependent) {
  for (const metav1::OwnerReference& ref : dependent.ownerreferences()) {
    ObjectPtr owner = CachedOwner(dependent, ref);
    if (owner == nullptr ||
        !DeletingDependents(*objects::GetObjectMeta(*owner))) {
      continue;
    }
    std::optional<std::string> key = OwnerKey(dependent, ref);
    if (key.has_value()) Controller::Enqueue(*key);
  }
}

void GarbageCollector::EnqueueUnblockedOwners(const metav1::ObjectMeta& before,
                                              const metav1::ObjectMeta& after) {
  for (const metav1::OwnerReference& ref : before.ownerreferences()) {
    if (!Blocks(ref)) continue;
    const metav1::OwnerReference* now = RefTo(after, ref.uid());
    if (now != nullptr && Blocks(*now)) continue;
    // Whatever state the owner is in: a sync of one that is not waiting
    // for its dependents is cheap.
    std::optional<std::string> key = OwnerKey(before, ref);
    if (key.has_value()) Controller::Enqueue(*key);
  }
}

void GarbageCollector::RegisterHandlers(
    informer::SharedIndexInformer* pods,
    informer::SharedIndexInformer* replicasets,
    informer::SharedIndexInformer* deployments) {
  Watch(pods, PodsResource());
  Watch(replicasets, ReplicaSetsResource());
  Watch(deployments, DeploymentsResource());
}

void GarbageCollector::RegisterJobHandlers(
    informer::SharedIndexInformer* jobs,
    informer::SharedIndexInformer* cronjobs) {
  CHECK(options_.jobs != nullptr && options_.cronjobs != nullptr)
      << "GarbageCollectorOptions::jobs or cronjobs unset";
  Watch(jobs, JobsResource());
  Watch(cronjobs, CronJobsResource());
}

void GarbageCollector::Watch(informer::SharedIndexInformer* inf,
                             const objects::ResourceInfo& resource) {
  std::optional<GcResource> r = Find(resource.resource);
  CHECK(r.has_value());
  OnObjectEvents(inf,
                 [this, r = *r](const ObjectEvent& e) { EnqueueEvent(r, e); });
}

void GarbageCollector::EnqueueEvent(const GcResource& resource,
                                    const ObjectEvent& e) {
  if (e.deleted()) {
    ForgetUnresolved(resource, e.object);
    EnqueueDependents(e.object);
    // Owners waiting for it may be done (kube's graph builder does the
    // same), without waiting for a resync.
    EnqueueWaitingOwners(*objects::GetObjectMeta(e.object));
    return;
  }
  const metav1::ObjectMeta& now = *objects::GetObjectMeta(e.object);
  if (e.old != nullptr && e.old != &e.object) {
    EnqueueUnblockedOwners(*objects::GetObjectMeta(*e.old), now);
  }
  if (!Interesting(now)) return;
  // An update that changed nothing the collector reads (and is not a
  // periodic resync, old == object) needs no sync.
  if (e.old != nullptr && e.old != &e.object &&
      !GcRelevantChange(*objects::GetObjectMeta(*e.old), now)) {
    return;
  }
  Controller::Enqueue(resource.name + "/" + informer::ObjectKey(e.object));
}

void GarbageCollector::ForgetUnresolved(
    const GcResource& resource, const google::protobuf::Message& deleted) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(deleted);
  const std::string key = resource.name + "/" + informer::ObjectKey(deleted);
  MutexLock l(&mu_);
  for (const metav1::OwnerReference& ref : meta.ownerreferences()) {
    auto it = unresolved_.find(GroupOf(ref.apiversion()) + "/" + ref.kind());
    if (it == unresolved_.end()) continue;
    unresolved_keys_ -= it->second.erase(key);
    if (it->second.empty()) unresolved_.erase(it);
  }
}

Status GarbageCollector::Sync(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return Status::Ok();
  std::optional<GcResource> resource = Find(key.substr(0, slash));
  if (!resource.has_value()) return Status::Ok();  // no longer followed
  ObjectPtr obj = resource->cache->Get(key.substr(slash + 1));
  if (obj == nullptr) return Status::Ok();
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(*obj);
  if (objects::IsBeingDeleted(meta)) {
    // Deletion is a one-way trip: only the GC finalizers are left to do.
    // The orphan one goes first; its removal is an update that brings the
    // object back for a foregroundDeletion it may also carry.
    if (objects::HasFinalizer(meta, kOrphan)) {
      return OrphanDependents(*resource, *obj);
    }
    if (objects::HasFinalizer(meta, kForeground)) {
      return ProcessDeletingDependents(*resource, *obj);
    }
    return Status::Ok();
  }
  if (meta.ownerreferences_size() == 0) return Status::Ok();
  return AttemptToDelete(*resource, *obj);
}

Status GarbageCollector::OrphanDependents(
    const GcResource& resource, const google::protobuf::Message& owner) {
  const std::string& uid = objects::Uid(owner);
  for (const Dependent& d : DependentsOf(uid)) {
    Status s = RemoveOwnerRefs(d.resource, *d.object, {uid});
    if (!s.ok() && !informer::IsNotFound(s)) return s;
  }
  Status s = RemoveGcFinalizer(resource, owner, kOrphan);
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

Status GarbageCollector::ProcessDeletingDependents(
    const GcResource& resource, const google::protobuf::Message& owner) {
  const std::string& uid = objects::Uid(owner);
  bool blocked = false;
  for (const Dependent& d : DependentsOf(uid)) {
    const metav1::ObjectMeta& dm = *objects::GetObjectMeta(*d.object);
    const metav1::OwnerReference* ref = RefTo(dm, uid);
    if (ref != nullptr && Blocks(*ref)) blocked = true;
    // Each dependent decides in its own sync (with its own retries)
    // whether it goes, and how, or only loses the reference. One already
    // being deleted has nothing left to decide.
    if (!objects::IsBeingDeleted(dm)) {
      Controller::Enqueue(d.resource.name + "/" +
                          informer::ObjectKey(*d.object));
    }
  }
  // Still blocked: the dependents' deletions (or their references
  // becoming non-blocking) enqueue the owner again.
  if (blocked) return Status::Ok();
  Status s = RemoveGcFinalizer(resource, owner, kForeground);
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

Status GarbageCollector::AttemptToDelete(const GcResource& resource,
                                         const google::protobuf::Message& obj) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  std::vector<std::string> dangling, waiting;
  int solid = 0;
  for (const metav1::OwnerReference& ref : meta.ownerreferences()) {
    std::optional<GcResource> owner_resource =
        FindKind(ref.apiversion(), ref.kind());
    if (!owner_resource.has_value()) {
      {
        MutexLock l(&mu_);
        if (unresolved_keys_ < kMaxUnresolved &&
            unresolved_[GroupOf(ref.apiversion()) + "/" + ref.kind()]
                .insert(resource.name + "/" + informer::ObjectKey(obj))
                .second) {
          ++unresolved_keys_;
        }
      }
      if (!Discovered()) {
        ++solid;  // no discovery to resolve the kind with: assumed alive
        continue;
      }
      // Kubernetes keeps the object and retries (the kind may be a CRD
      // discovery has not shown yet).
      return UnavailableError("cannot resolve the owner " + ref.kind() + " " +
                              ref.name() + " (" + ref.apiversion() + ") of " +
                              resource.name + " " + informer::ObjectKey(obj) +
                              ": no resource serves that kind");
    }
    if (!resource.namespaced && owner_resource->namespaced) {
      // A reference has no namespace of its own: from a cluster-scoped
      // object one to a namespaced kind names nothing, and is invalid
      // rather than dangling (looked up without a namespace it 404s, and
      // the object, a Namespace even, was deleted). Kube's isDangling
      // returns namespacedOwnerOfClusterScopedObjectErr: the object is kept
      // untouched and not retried (a retry cannot make the reference
      // valid), and an OwnerRefInvalidNamespace event says why.
      ReportInvalidNamespaceOwnerRef(resource, obj, ref);
      return Status::Ok();
    }
    ObjectPtr owner = CachedOwner(meta, ref);
    if (owner == nullptr) {
      const std::string owner_ns =
          owner_resource->namespaced ? meta.namespace_() : "";
      // Its metadata is all that is read (as Kubernetes' collector does).
      ASSIGN_OR_RETURN(ObjectPtr live,
                       LiveMetadata(options_.api, *owner_resource->info,
                                    owner_ns, ref.name()));
      if (live != nullptr && objects::Uid(*live) == ref.uid()) owner = live;
    }
    if (owner == nullptr) {
      dangling.push_back(ref.uid());
    } else if (DeletingDependents(*objects::GetObjectMeta(*owner))) {
      waiting.push_back(ref.uid());
    } else {
      ++solid;
    }
  }
  if (solid > 0) {
    if (dangling.empty() && waiting.empty()) return Status::Ok();
    // A waiting owner would otherwise keep its finalizer as long as this
    // object lives.
    std::vector<std::string> drop = dangling;
    drop.insert(drop.end(), waiting.begin(), waiting.end());
    Status s = RemoveOwnerRefs(resource, obj, drop);
    return informer::IsNotFound(s) ? Status::Ok() : s;
  }
  // Every owner is gone or waiting: the object is to be deleted. The cache
  // may lag behind it (an orphaning owner removed its reference a moment
  // ago, then went). Kubernetes' attemptToDeleteItem reads the latest
  // object first for this; here the delete goes ahead only if the object
  // is still this one with the same references (SameOwnerRefs), else the
  // newer version's event (GcRelevantChange compares the same) syncs it
  // again.
  ASSIGN_OR_RETURN(bool current, StillAsCached(resource, meta));
  if (!current) return Status::Ok();
  if (!waiting.empty()) {
    std::vector<Dependent> deps = DependentsOf(meta.uid());
    if (!deps.empty()) {
      for (const Dependent& d : deps) {
        if (!DeletingDependents(*objects::GetObjectMeta(*d.object))) continue;
        // Something below is itself waiting for its dependents, perhaps
        // (through a cycle) for this object's owner: once this object's
        // references no longer block, that owner can finish first.
        LOG(INFO) << "garbagecollector: " << resource.name << " "
                  << informer::ObjectKey(obj) << " and its dependent "
                  << d.resource.name << " " << informer::ObjectKey(*d.object)
                  << " both wait for dependents: making its owner "
                     "references non-blocking";
        Status s = UnblockOwnerRefs(resource, obj);
        if (informer::IsNotFound(s)) return Status::Ok();
        if (!s.ok()) return s;
        break;
      }
      // Its owner then waits for the whole subtree.
      return DeleteObject(resource, obj, "Foreground");
    }
  }
  std::string policy = "Background";
  if (objects::HasFinalizer(meta, kOrphan)) {
    policy = "Orphan";
  } else if (objects::HasFinalizer(meta, kForeground)) {
    policy = "Foreground";
  }
  return DeleteObject(resource, obj, policy);
}

void GarbageCollector::ReportInvalidNamespaceOwnerRef(
    const GcResource& resource, const google::protobuf::Message& obj,
    const metav1::OwnerReference& ref) const {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  // Kube's reportInvalidNamespaceOwnerRef message.
  const std::string message = "ownerRef [" + ref.apiversion() + "/" +
                              ref.kind() + ", namespace: " + meta.namespace_() +
                              ", name: " + ref.name() + ", uid: " + ref.uid() +
                              "] does not exist in namespace \"" +
                              meta.namespace_() + "\"";
  LOG(WARNING) << "garbagecollector: keeping " << resource.name << " "
               << informer::ObjectKey(obj) << ": " << message;
  // The event's involvedObject takes its kind from the message type: a
  // built-in kind's object (held as metadata only) is named as that kind.
  const objects::KindInfo* kind =
      resource.info == nullptr
          ? nullptr
          : objects::Scheme::Default().FindKind(resource.info->gv.ApiVersion(),
                                                resource.kind);
  if (kind != nullptr && kind->prototype != nullptr &&
      !informer::IsUnstructuredKind(*kind)) {
    std::unique_ptr<google::protobuf::Message> typed = kind->New();
    *objects::MutableObjectMeta(typed.get()) = meta;
    RecordEvent(*typed, informer::kEventWarning, "OwnerRefInvalidNamespace",
                message);
    return;
  }
  RecordEvent(obj, informer::kEventWarning, "OwnerRefInvalidNamespace",
              message);
}

StatusOr<bool> GarbageCollector::StillAsCached(
    const GcResource& resource, const metav1::ObjectMeta& cached) {
  ASSIGN_OR_RETURN(ObjectPtr live,
                   LiveMetadata(options_.api, *resource.info,
                                cached.namespace_(), cached.name()));
  if (live == nullptr) return false;
  const metav1::ObjectMeta& now = *objects::GetObjectMeta(*live);
  return now.uid() == cached.uid() && SameOwnerRefs(now, cached);
}

Status GarbageCollector::DeleteObject(const GcResource& resource,
                                      const google::protobuf::Message& obj,
                                      const std::string& policy) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  LOG(INFO) << "garbagecollector: deleting " << resource.name << " "
            << informer::ObjectKey(obj) << " (propagationPolicy " << policy
            << "): its owners are gone or being deleted";
  metav1::DeleteOptions opts;
  opts.set_propagationpolicy(policy);
  opts.mutable_preconditions()->set_uid(meta.uid());
  Status s = options_.api->Delete(*resource.info, meta.namespace_(),
                                  meta.name(), opts);
  return informer::IsNotFound(s) || informer::IsConflict(s) ? Status::Ok() : s;
}

Status GarbageCollector::UnblockOwnerRefs(
    const GcResource& resource, const google::protobuf::Message& obj) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  if (ChangedByPatch(obj)) {
    std::vector<int> indexes;
    std::vector<std::string> uids;
    for (int i = 0; i < meta.ownerreferences_size(); ++i) {
      if (!Blocks(meta.ownerreferences(i))) continue;
      indexes.push_back(i);
      uids.push_back(meta.ownerreferences(i).uid());
    }
    if (indexes.empty()) return Status::Ok();
    return options_.api->Patch(*resource.info, meta.namespace_(), meta.name(),
                               informer::PatchType::kJsonPatch,
                               TestAndUnblockPatch(indexes, uids));
  }
  std::unique_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  bool changed = false;
  for (metav1::OwnerReference& r :
       *objects::MutableObjectMeta(copy.get())->mutable_ownerreferences()) {
    if (!Blocks(r)) continue;
    r.set_blockownerdeletion(false);
    changed = true;
  }
  if (!changed) return Status::Ok();
  return options_.api->Update(*resource.info, *copy).status();
}

Status GarbageCollector::RemoveOwnerRefs(const GcResource& resource,
                                         const google::protobuf::Message& obj,
                                         const std::vector<std::string>& uids) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  auto gone = [&uids](const std::string& uid) {
    return std::find(uids.begin(), uids.end(), uid) != uids.end();
  };
  if (ChangedByPatch(obj)) {
    std::vector<int> indexes;
    std::vector<std::string> values;
    for (int i = meta.ownerreferences_size() - 1; i >= 0; --i) {
      if (!gone(meta.ownerreferences(i).uid())) continue;
      indexes.push_back(i);
      values.push_back(meta.ownerreferences(i).uid());
    }
    if (indexes.empty()) return Status::Ok();
    return options_.api->Patch(*resource.info, meta.namespace_(), meta.name(),
                               informer::PatchType::kJsonPatch,
                               TestAndRemovePatch("/metadata/ownerReferences",
                                                  indexes, "/uid", values));
  }
  std::unique_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  auto* refs =
      objects::MutableObjectMeta(copy.get())->mutable_ownerreferences();
  for (int i = refs->size() - 1; i >= 0; --i) {
    if (gone(refs->Get(i).uid())) refs->DeleteSubrange(i, 1);
  }
  return options_.api->Update(*resource.info, *copy).status();
}

Status GarbageCollector::RemoveGcFinalizer(const GcResource& resource,
                                           const google::protobuf::Message& obj,
                                           const std::string& finalizer) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  if (ChangedByPatch(obj)) {
    std::vector<int> indexes;
    std::vector<std::string> values;
    for (int i = meta.finalizers_size() - 1; i >= 0; --i) {
      if (meta.finalizers(i) != finalizer) continue;
      indexes.push_back(i);
      values.push_back(finalizer);
    }
    if (indexes.empty()) return Status::Ok();
    return options_.api->Patch(
        *resource.info, meta.namespace_(), meta.name(),
        informer::PatchType::kJsonPatch,
        TestAndRemovePatch("/metadata/finalizers", indexes, "", values));
  }
  std::unique_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  objects::RemoveFinalizer(objects::MutableObjectMeta(copy.get()), finalizer);
  return options_.api->Update(*resource.info, *copy).status();
}

}  // namespace kplane::controllers
