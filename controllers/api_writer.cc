#include "controllers/api_writer.h"

#include <optional>

#include "informer/api_errors.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {
StatusOr<ObjectPtr> Shared(
    StatusOr<std::unique_ptr<google::protobuf::Message>> m) {
  if (!m.ok()) return m.status();
  return ObjectPtr(std::move(*m));
}

std::string Target(const objects::ResourceInfo& r, std::string_view sub,
                   std::string_view ns, std::string_view name) {
  std::string s = r.resource;
  if (!sub.empty()) s += "/" + std::string(sub);
  s += " ";
  if (!ns.empty()) s += std::string(ns) + "/";
  s += name;
  return s;
}
}  // namespace

bool CreateRefusedInEndingNamespace(ApiWriter* api, const Status& create,
                                    std::string_view ns) {
  if (!informer::IsForbidden(create)) return false;
  StatusOr<ObjectPtr> live = api->Get(NamespacesResource(), "", ns);
  if (informer::IsNotFound(live.status())) return true;
  return live.ok() && objects::IsBeingDeleted(*objects::GetObjectMeta(**live));
}

StatusOr<ObjectPtr> RestApiWriter::Create(
    const objects::ResourceInfo& resource,
    const google::protobuf::Message& obj) {
  return Shared(client_->Create(resource, "", obj));
}
StatusOr<ObjectPtr> RestApiWriter::Update(
    const objects::ResourceInfo& resource,
    const google::protobuf::Message& obj) {
  return Shared(client_->Update(resource, obj));
}
StatusOr<ObjectPtr> RestApiWriter::UpdateStatus(
    const objects::ResourceInfo& resource,
    const google::protobuf::Message& obj) {
  return Shared(client_->UpdateStatus(resource, obj));
}
Status RestApiWriter::Delete(const objects::ResourceInfo& resource,
                             std::string_view ns, std::string_view name,
                             const metav1::DeleteOptions& options) {
  return client_->Delete(resource, ns, name, options);
}
Status RestApiWriter::Bind(std::string_view ns, std::string_view pod,
                           std::string_view pod_uid, std::string_view node) {
  corev1::Binding b;
  b.mutable_metadata()->set_name(std::string(pod));
  b.mutable_metadata()->set_namespace_(std::string(ns));
  if (!pod_uid.empty()) b.mutable_metadata()->set_uid(std::string(pod_uid));
  b.mutable_target()->set_kind("Node");
  b.mutable_target()->set_apiversion("v1");
  b.mutable_target()->set_name(std::string(node));
  return client_->Create(PodsResource(), ns, b, {}, pod, "binding").status();
}
Status RestApiWriter::Patch(const objects::ResourceInfo& resource,
                            std::string_view ns, std::string_view name,
                            informer::PatchType type, std::string_view patch) {
  // The answer is not decoded: custom resources have no compiled-in type.
  informer::RestRequest req{
      .method = "PATCH",
      .path = informer::RestClient::ResourcePath(resource, ns, name),
      .body = std::string(patch)};
  req.headers.Set("Content-Type",
                  std::string(informer::PatchContentType(type)));
  req.headers.Set("Accept", "application/json");
  return client_->Do(req).status();
}
StatusOr<ObjectPtr> RestApiWriter::Get(const objects::ResourceInfo& resource,
                                       std::string_view ns,
                                       std::string_view name) {
  return Shared(client_->Get(resource, ns, name));
}
StatusOr<ObjectPtr> RestApiWriter::GetMetadata(
    const objects::ResourceInfo& resource, std::string_view ns,
    std::string_view name) {
  return Shared(client_->GetMetadata(resource, ns, name));
}
StatusOr<std::vector<ObjectPtr>> RestApiWriter::List(
    const objects::ResourceInfo& resource, std::string_view ns) {
  ASSIGN_OR_RETURN(informer::ListResult list,
                   client_->ListObjects(resource, ns));
  return std::move(list.items);
}
Status RestApiWriter::DeleteCollection(const objects::ResourceInfo& resource,
                                       std::string_view ns,
                                       const metav1::DeleteOptions& options) {
  return client_->DeleteCollection(resource, ns, options);
}
StatusOr<ObjectPtr> RestApiWriter::Finalize(const corev1::Namespace& ns) {
  return Shared(client_->Update(NamespacesResource(), ns, {}, "finalize"));
}

std::optional<Status> FakeApiWriter::TakeFailureLocked(
    const std::string& action) {
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if (action.rfind(it->first, 0) == 0) {
      Status s = it->second;
      failures_.erase(it);
      return s;
    }
  }
  return std::nullopt;
}

Status FakeApiWriter::Record(std::string action, ObjectPtr written) {
  MutexLock l(&mu_);
  if (std::optional<Status> failure = TakeFailureLocked(action)) {
    actions_.push_back(std::move(action));
    return *failure;
  }
  actions_.push_back(std::move(action));
  if (written) written_.push_back(std::move(written));
  return Status::Ok();
}

StatusOr<ObjectPtr> FakeApiWriter::Create(
    const objects::ResourceInfo& resource,
    const google::protobuf::Message& obj) {
  std::shared_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  metav1::ObjectMeta* meta = objects::MutableObjectMeta(copy.get());
  std::string shown =
      meta->name().empty() ? meta->generatename() : meta->name();
  if (meta->name().empty()) {
    MutexLock l(&mu_);
    meta->set_name(meta->generatename() + std::to_string(++generated_));
  }
  RETURN_IF_ERROR(Record(
      "create " + Target(resource, "", meta->namespace_(), shown), copy));
  return ObjectPtr(copy);
}
StatusOr<ObjectPtr> FakeApiWriter::Update(
    const objects::ResourceInfo& resource,
    const google::protobuf::Message& obj) {
  std::shared_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  RETURN_IF_ERROR(Record(
      "update " +
          Target(resource, "", objects::Namespace(obj), objects::Name(obj)),
      copy));
  Reflect(resource, copy);
  return ObjectPtr(copy);
}
StatusOr<ObjectPtr> FakeApiWriter::UpdateStatus(
    const objects::ResourceInfo& resource,
    const google::protobuf::Message& obj) {
  std::shared_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  RETURN_IF_ERROR(Record(
      "update-status " +
          Target(resource, "", objects::Namespace(obj), objects::Name(obj)),
      copy));
  Reflect(resource, copy);
  return ObjectPtr(copy);
}
Status FakeApiWriter::Delete(const objects::ResourceInfo& resource,
                             std::string_view ns, std::string_view name,
                             const metav1::DeleteOptions& options) {
  const std::string target = Target(resource, "", ns, name);
  if (options.has_preconditions()) {
    // As the API server: preconditions are checked against the live object
    // (when the test set one) and a mismatch is a 409 Conflict.
    StatusOr<ObjectPtr> live = FindLive(resource, ns, name);
    const metav1::ObjectMeta* meta =
        live.ok() ? objects::GetObjectMeta(**live) : nullptr;
    const metav1::Preconditions& p = options.preconditions();
    if (meta != nullptr && ((p.has_uid() && p.uid() != meta->uid()) ||
                            (p.has_resourceversion() &&
                             p.resourceversion() != meta->resourceversion()))) {
      MutexLock l(&mu_);
      actions_.push_back("delete-refused " + target);
      return ConflictError("Operation cannot be fulfilled on " + target +
                           ": precondition failed");
    }
  }
  return Record("delete " + target, nullptr);
}
Status FakeApiWriter::Bind(std::string_view ns, std::string_view pod,
                           std::string_view, std::string_view node) {
  return Record("bind " + Target(PodsResource(), "", ns, pod) + " -> " +
                    std::string(node),
                nullptr);
}
Status FakeApiWriter::Patch(const objects::ResourceInfo& resource,
                            std::string_view ns, std::string_view name,
                            informer::PatchType, std::string_view patch) {
  {
    MutexLock l(&mu_);
    patches_.emplace_back(patch);
  }
  return Record("patch " + Target(resource, "", ns, name), nullptr);
}
StatusOr<ObjectPtr> FakeApiWriter::Get(const objects::ResourceInfo& resource,
                                       std::string_view ns,
                                       std::string_view name) {
  return FindLive(resource, ns, name);
}

StatusOr<ObjectPtr> FakeApiWriter::FindLive(
    const objects::ResourceInfo& resource, std::string_view ns,
    std::string_view name) {
  std::string key = Target(resource, "", ns, name);
  {
    MutexLock l(&mu_);
    auto it = live_.find(key);
    if (it != live_.end()) return it->second;
    auto from = live_from_.find(resource.GroupResource());
    if (from != live_from_.end()) {
      if (ObjectPtr o = from->second->Get(informer::ObjectKey(ns, name))) {
        return o;
      }
    }
  }
  return NotFoundError(resource.resource + " \"" + std::string(name) +
                       "\" not found");
}

StatusOr<ObjectPtr> FakeApiWriter::GetMetadata(
    const objects::ResourceInfo& resource, std::string_view ns,
    std::string_view name) {
  {
    MutexLock l(&mu_);
    if (std::optional<Status> failure = TakeFailureLocked(
            "get-metadata " + Target(resource, "", ns, name))) {
      return *failure;
    }
  }
  ASSIGN_OR_RETURN(ObjectPtr live, FindLive(resource, ns, name));
  const metav1::ObjectMeta* meta = objects::GetObjectMeta(*live);
  if (meta == nullptr) {
    return InternalError("fake: the live " + resource.resource +
                         " has no metadata");
  }
  auto partial = std::make_shared<metav1::PartialObjectMetadata>();
  *partial->mutable_metadata() = *meta;
  return ObjectPtr(std::move(partial));
}

StatusOr<std::vector<ObjectPtr>> FakeApiWriter::List(
    const objects::ResourceInfo& resource, std::string_view ns) {
  const std::string prefix = resource.resource + " " + std::string(ns) + "/";
  std::vector<ObjectPtr> out;
  MutexLock l(&mu_);
  for (auto it = live_.lower_bound(prefix);
       it != live_.end() && it->first.starts_with(prefix); ++it) {
    out.push_back(it->second);
  }
  return out;
}
Status FakeApiWriter::DeleteCollection(const objects::ResourceInfo& resource,
                                       std::string_view ns,
                                       const metav1::DeleteOptions&) {
  return Record("deletecollection " + resource.resource + " " + std::string(ns),
                nullptr);
}
StatusOr<ObjectPtr> FakeApiWriter::Finalize(const corev1::Namespace& ns) {
  auto copy = std::make_shared<corev1::Namespace>(ns);
  RETURN_IF_ERROR(Record("finalize namespaces " + ns.metadata().name(), copy));
  return ObjectPtr(copy);
}

std::vector<std::string> FakeApiWriter::Actions() const {
  MutexLock l(&mu_);
  return actions_;
}
std::vector<ObjectPtr> FakeApiWriter::Written() const {
  MutexLock l(&mu_);
  return written_;
}
std::vector<std::string> FakeApiWriter::Patches() const {
  MutexLock l(&mu_);
  return patches_;
}
void FakeApiWriter::Clear() {
  MutexLock l(&mu_);
  actions_.clear();
  written_.clear();
  patches_.clear();
}
void FakeApiWriter::ServeLiveFrom(const objects::ResourceInfo& resource,
                                  const informer::Indexer* cache) {
  MutexLock l(&mu_);
  live_from_[resource.GroupResource()] = cache;
}

void FakeApiWriter::FailNext(std::string prefix, Status error) {
  MutexLock l(&mu_);
  failures_.emplace_back(std::move(prefix), std::move(error));
}
void FakeApiWriter::ReflectUpdates(const objects::ResourceInfo& resource,
                                   informer::Indexer* cache) {
  MutexLock l(&mu_);
  reflect_[&resource] = cache;
}

void FakeApiWriter::Reflect(const objects::ResourceInfo& resource,
                            std::shared_ptr<google::protobuf::Message> obj) {
  informer::Indexer* cache = nullptr;
  int64_t rv = 0;
  {
    MutexLock l(&mu_);
    auto it = reflect_.find(&resource);
    if (it == reflect_.end()) return;
    cache = it->second;
    rv = ++rv_;
  }
  metav1::ObjectMeta* m = objects::MutableObjectMeta(obj.get());
  m->set_resourceversion(std::to_string(rv));
  cache->Upsert(obj);
}

void FakeApiWriter::SetLive(const objects::ResourceInfo& resource,
                            ObjectPtr obj) {
  MutexLock l(&mu_);
  live_[Target(resource, "", objects::Namespace(*obj), objects::Name(*obj))] =
      std::move(obj);
}
void FakeApiWriter::RemoveLive(const objects::ResourceInfo& resource,
                               std::string_view ns, std::string_view name) {
  MutexLock l(&mu_);
  live_.erase(Target(resource, "", ns, name));
}

}  // namespace kplane::controllers
