#include "controllers/garbage_collector.h"

#include "base/logging.h"
#include "informer/api_errors.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {
constexpr char kOrphan[] = "orphan";
constexpr char kForeground[] = "foregroundDeletion";

void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

std::string ResourceOfKind(const metav1::OwnerReference& ref) {
  if (ref.apiversion() == "apps/v1" && ref.kind() == "ReplicaSet") {
    return "replicasets";
  }
  if (ref.apiversion() == "apps/v1" && ref.kind() == "Deployment") {
    return "deployments";
  }
  if (ref.apiversion() == "batch/v1" && ref.kind() == "Job") return "jobs";
  if (ref.apiversion() == "batch/v1" && ref.kind() == "CronJob") {
    return "cronjobs";
  }
  return "";
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
}

std::string GarbageCollector::KeyFor(const objects::ResourceInfo& resource,
                                     const google::protobuf::Message& obj) {
  return resource.resource + "/" + informer::ObjectKey(obj);
}

const informer::Indexer* GarbageCollector::CacheFor(
    const std::string& resource) const {
  if (resource == "pods") return options_.pods;
  if (resource == "replicasets") return options_.replicasets;
  if (resource == "deployments") return options_.deployments;
  if (resource == "jobs") return options_.jobs;
  if (resource == "cronjobs") return options_.cronjobs;
  return nullptr;
}

const objects::ResourceInfo* GarbageCollector::ResourceFor(
    const std::string& resource) const {
  if (resource == "pods") return &PodsResource();
  if (resource == "replicasets") return &ReplicaSetsResource();
  if (resource == "deployments") return &DeploymentsResource();
  if (resource == "jobs") return &JobsResource();
  if (resource == "cronjobs") return &CronJobsResource();
  return nullptr;
}

std::vector<std::pair<const objects::ResourceInfo*, const informer::Indexer*>>
GarbageCollector::DependentCaches(const std::string& owner_resource) const {
  // Any owner may have dependents of any of these kinds.
  (void)owner_resource;
  std::vector<std::pair<const objects::ResourceInfo*, const informer::Indexer*>>
      caches = {{&PodsResource(), options_.pods},
                {&ReplicaSetsResource(), options_.replicasets}};
  if (options_.jobs != nullptr)
    caches.push_back({&JobsResource(), options_.jobs});
  return caches;
}

void GarbageCollector::EnqueueDependents(
    const google::protobuf::Message& owner) {
  for (auto [resource, cache] : DependentCaches("")) {
    auto deps = cache->ByIndex(kOwnerUidIndex, objects::Uid(owner));
    if (!deps.ok()) continue;
    for (const ObjectPtr& d : *deps) Enqueue(KeyFor(*resource, *d));
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
  const objects::ResourceInfo* r = &resource;
  auto interesting = [](const google::protobuf::Message& o) {
    const metav1::ObjectMeta& m = *objects::GetObjectMeta(o);
    return m.ownerreferences_size() > 0 ||
           (objects::IsBeingDeleted(m) &&
            (objects::HasFinalizer(m, kOrphan) ||
             objects::HasFinalizer(m, kForeground)));
  };
  OnObjectEvents(inf, [this, r, interesting](const ObjectEvent& e) {
    if (e.deleted()) {
      EnqueueDependents(e.object);
    } else if (interesting(e.object)) {
      Enqueue(KeyFor(*r, e.object));
    }
  });
}

Status GarbageCollector::Sync(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return Status::Ok();
  std::string resource = key.substr(0, slash);
  const informer::Indexer* cache = CacheFor(resource);
  const objects::ResourceInfo* info = ResourceFor(resource);
  if (cache == nullptr || info == nullptr) return Status::Ok();
  ObjectPtr obj = cache->Get(key.substr(slash + 1));
  if (obj == nullptr) return Status::Ok();
  Status first_error;
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(*obj);
  if (objects::IsBeingDeleted(meta) &&
      (objects::HasFinalizer(meta, kOrphan) ||
       objects::HasFinalizer(meta, kForeground))) {
    Keep(&first_error, SyncOwner(*info, *obj));
  }
  if (meta.ownerreferences_size() > 0) {
    Keep(&first_error, SyncDependent(*info, *obj));
  }
  return first_error;
}

Status GarbageCollector::SyncOwner(const objects::ResourceInfo& resource,
                                   const google::protobuf::Message& owner) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(owner);
  const std::string& uid = meta.uid();
  std::vector<std::pair<const objects::ResourceInfo*, ObjectPtr>> dependents;
  for (auto [r, cache] : DependentCaches(resource.resource)) {
    ASSIGN_OR_RETURN(std::vector<ObjectPtr> deps,
                     cache->ByIndex(kOwnerUidIndex, uid));
    for (ObjectPtr& d : deps) dependents.emplace_back(r, std::move(d));
  }
  std::string finalizer;
  if (objects::HasFinalizer(meta, kOrphan)) {
    for (auto& [r, d] : dependents) {
      std::unique_ptr<google::protobuf::Message> copy(d->New());
      copy->CopyFrom(*d);
      auto* refs =
          objects::MutableObjectMeta(copy.get())->mutable_ownerreferences();
      for (int i = refs->size() - 1; i >= 0; --i) {
        if (refs->Get(i).uid() == uid) refs->DeleteSubrange(i, 1);
      }
      Status s = options_.api->Update(*r, *copy).status();
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
      Status s = options_.api->Delete(*r, objects::Namespace(*d),
                                      objects::Name(*d), opts);
      if (!s.ok() && !informer::IsNotFound(s)) return s;
    }
    if (remaining) {
      EnqueueAfter(KeyFor(resource, owner), options_.foreground_recheck);
      return Status::Ok();
    }
    finalizer = kForeground;
  }
  std::unique_ptr<google::protobuf::Message> copy(owner.New());
  copy->CopyFrom(owner);
  objects::RemoveFinalizer(objects::MutableObjectMeta(copy.get()), finalizer);
  Status s = options_.api->Update(resource, *copy).status();
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

Status GarbageCollector::SyncDependent(const objects::ResourceInfo& resource,
                                       const google::protobuf::Message& obj) {
  const metav1::ObjectMeta& meta = *objects::GetObjectMeta(obj);
  if (objects::IsBeingDeleted(meta)) return Status::Ok();
  std::vector<std::string> dangling;
  int alive = 0;
  for (const metav1::OwnerReference& ref : meta.ownerreferences()) {
    std::string owner_resource = ResourceOfKind(ref);
    const informer::Indexer* cache = CacheFor(owner_resource);
    if (cache == nullptr) {
      ++alive;  // a kind we do not follow
      continue;
    }
    ObjectPtr owner =
        cache->Get(informer::ObjectKey(meta.namespace_(), ref.name()));
    if (owner != nullptr && objects::Uid(*owner) == ref.uid()) {
      ++alive;
      continue;
    }
    StatusOr<ObjectPtr> live = options_.api->Get(*ResourceFor(owner_resource),
                                                 meta.namespace_(), ref.name());
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
    LOG(INFO) << "garbagecollector: deleting " << KeyFor(resource, obj)
              << ": its owners are gone";
    metav1::DeleteOptions opts;
    opts.set_propagationpolicy("Background");
    opts.mutable_preconditions()->set_uid(meta.uid());
    Status s =
        options_.api->Delete(resource, meta.namespace_(), meta.name(), opts);
    return informer::IsNotFound(s) || informer::IsConflict(s) ? Status::Ok()
                                                              : s;
  }
  std::unique_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  auto* refs =
      objects::MutableObjectMeta(copy.get())->mutable_ownerreferences();
  for (int i = refs->size() - 1; i >= 0; --i) {
    if (std::find(dangling.begin(), dangling.end(), refs->Get(i).uid()) !=
        dangling.end()) {
      refs->DeleteSubrange(i, 1);
    }
  }
  Status s = options_.api->Update(resource, *copy).status();
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

}  // namespace kplane::controllers
