#include "controllers/garbage_collector.h"

#include <google/protobuf/message.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

#include "base/logging.h"
#include "informer/api_errors.h"
#include "informer/unstructured.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {
constexpr char kOrphan[] = "orphan";
constexpr char kForeground[] = "foregroundDeletion";

void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

bool IsUnstructuredObject(const google::protobuf::Message& obj) {
  return google::protobuf::DynamicCastToGenerated<informer::UnstructuredObject>(
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

// Whether the collector has something to do about an object.
bool Interesting(const metav1::ObjectMeta& m) {
  return m.ownerreferences_size() > 0 ||
         (objects::IsBeingDeleted(m) && HasGcFinalizer(m));
}

// Whether an update changed what the collector looks at (lease renewals
// and status writes of owned objects do not).
bool GcRelevantChange(const metav1::ObjectMeta& before,
                      const metav1::ObjectMeta& after) {
  if (before.ownerreferences_size() != after.ownerreferences_size() ||
      objects::IsBeingDeleted(before) != objects::IsBeingDeleted(after) ||
      HasGcFinalizer(before) != HasGcFinalizer(after)) {
    return true;
  }
  for (int i = 0; i < before.ownerreferences_size(); ++i) {
    if (before.ownerreferences(i).uid() != after.ownerreferences(i).uid()) {
      return true;
    }
  }
  return false;
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
  {
    MutexLock l(&mu_);
    added_[name] = std::move(resource);
  }
  // What the cache held before the handlers were called for it.
  for (const ObjectPtr& o : cache->List()) {
    if (Interesting(*objects::GetObjectMeta(*o))) {
      Controller::Enqueue(name + "/" + informer::ObjectKey(*o));
    }
  }
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
  const std::string uid = objects::Uid(owner);
  for (const GcResource& r : All()) {
    auto deps = r.cache->ByIndex(kOwnerUidIndex, uid);
    if (!deps.ok()) continue;  // a typed cache without the index
    for (const ObjectPtr& d : *deps) {
      Controller::Enqueue(r.name + "/" + informer::ObjectKey(*d));
    }
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
    EnqueueDependents(e.object);
    return;
  }
  const metav1::ObjectMeta& now = *objects::GetObjectMeta(e.object);
  if (!Interesting(now)) return;
  // An update that changed nothing the collector reads (and is not a
  // periodic resync, old == object) needs no sync.
  if (e.old != nullptr && e.old != &e.object &&
      !GcRelevantChange(*objects::GetObjectMeta(*e.old), now)) {
    return;
  }
  Controller::Enqueue(resource.name + "/" + informer::ObjectKey(e.object));
}

Status GarbageCollector::Sync(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return Status::Ok();
  std::optional<GcResource> resource = Find(key.substr(0, slash));
  if (!resource.has_value()) return Status::Ok();  // no longer followed
  ObjectPtr obj = resource->cache->Get(key.substr(slash + 1));
  if (obj == nullptr) return Status::Ok();
  Status first_error;
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(*obj);
  if (objects::IsBeingDeleted(meta) && HasGcFinalizer(meta)) {
    Keep(&first_error, SyncOwner(*resource, *obj));
  }
  if (meta.ownerreferences_size() > 0) {
    Keep(&first_error, SyncDependent(*resource, *obj));
  }
  return first_error;
}

Status GarbageCollector::SyncOwner(const GcResource& resource,
                                   const google::protobuf::Message& owner) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(owner);
  const std::string& uid = meta.uid();
  std::vector<std::pair<GcResource, ObjectPtr>> dependents;
  for (GcResource& r : All()) {
    StatusOr<std::vector<ObjectPtr>> deps =
        r.cache->ByIndex(kOwnerUidIndex, uid);
    if (!deps.ok()) continue;  // a typed cache without the index
    for (ObjectPtr& d : *deps) dependents.emplace_back(r, std::move(d));
  }
  std::string finalizer;
  if (objects::HasFinalizer(meta, kOrphan)) {
    for (auto& [r, d] : dependents) {
      Status s = RemoveOwnerRefs(r, *d, {uid});
      if (!s.ok() && !informer::IsNotFound(s)) return s;
    }
    finalizer = kOrphan;
  } else {
    bool remaining = false;
    for (auto& [r, d] : dependents) {
      remaining = true;
      if (objects::IsBeingDeleted(*objects::GetObjectMeta(*d))) continue;
      metav1::DeleteOptions opts;
      opts.set_propagationpolicy("Foreground");
      Status s = options_.api->Delete(*r.info, objects::Namespace(*d),
                                      objects::Name(*d), opts);
      if (!s.ok() && !informer::IsNotFound(s)) return s;
    }
    if (remaining) {
      EnqueueAfter(resource.name + "/" + informer::ObjectKey(owner),
                   options_.foreground_recheck);
      return Status::Ok();
    }
    finalizer = kForeground;
  }
  Status s = RemoveGcFinalizer(resource, owner, finalizer);
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

Status GarbageCollector::SyncDependent(const GcResource& resource,
                                       const google::protobuf::Message& obj) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  if (objects::IsBeingDeleted(meta)) return Status::Ok();
  std::vector<std::string> dangling;
  int alive = 0;
  for (const metav1::OwnerReference& ref : meta.ownerreferences()) {
    std::optional<GcResource> owner_resource =
        FindKind(ref.apiversion(), ref.kind());
    if (!owner_resource.has_value()) {
      if (!Discovered()) {
        ++alive;  // no discovery to resolve the kind with: assumed alive
        continue;
      }
      // Kubernetes keeps the object and retries (the kind may be a CRD
      // discovery has not shown yet).
      return UnavailableError("cannot resolve the owner " + ref.kind() + " " +
                              ref.name() + " (" + ref.apiversion() + ") of " +
                              resource.name + " " + informer::ObjectKey(obj) +
                              ": no resource serves that kind");
    }
    // A namespaced owner is in its dependent's namespace (references
    // across namespaces are invalid); a cluster-scoped one has none.
    const std::string owner_ns =
        owner_resource->namespaced ? meta.namespace_() : "";
    ObjectPtr owner =
        owner_resource->cache->Get(informer::ObjectKey(owner_ns, ref.name()));
    if (owner != nullptr && objects::Uid(*owner) == ref.uid()) {
      ++alive;
      continue;
    }
    StatusOr<ObjectPtr> live =
        options_.api->Get(*owner_resource->info, owner_ns, ref.name());
    if (live.ok() && objects::Uid(**live) == ref.uid()) {
      ++alive;
      continue;
    }
    if (!live.ok() && !informer::IsNotFound(live.status()))
      return live.status();
    dangling.push_back(ref.uid());
  }
  if (dangling.empty()) return Status::Ok();
  if (alive == 0) {
    LOG(INFO) << "garbagecollector: deleting " << resource.name << " "
              << informer::ObjectKey(obj) << ": its owners are gone";
    metav1::DeleteOptions opts;
    opts.set_propagationpolicy("Background");
    opts.mutable_preconditions()->set_uid(meta.uid());
    Status s = options_.api->Delete(*resource.info, meta.namespace_(),
                                    meta.name(), opts);
    return informer::IsNotFound(s) || informer::IsConflict(s) ? Status::Ok()
                                                              : s;
  }
  Status s = RemoveOwnerRefs(resource, obj, dangling);
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

Status GarbageCollector::RemoveOwnerRefs(const GcResource& resource,
                                         const google::protobuf::Message& obj,
                                         const std::vector<std::string>& uids) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  auto gone = [&uids](const std::string& uid) {
    return std::find(uids.begin(), uids.end(), uid) != uids.end();
  };
  if (IsUnstructuredObject(obj)) {
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
  if (IsUnstructuredObject(obj)) {
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
