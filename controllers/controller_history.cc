#include "controllers/controller_history.h"

#include <algorithm>

#include "base/logging.h"
#include "controllers/workload_pods.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/codec.h"
#include "objects/meta.h"
#include "objects/patch/json_value.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

constexpr char kHashLabel[] = "controller-revision-hash";
// ControllerRevisionName keeps at most 223 bytes of the owner's name, so
// that "<name>-<hash>" stays a valid object name.
constexpr size_t kMaxNamePrefix = 223;

bool RevisionLess(const RevisionPtr& a, const RevisionPtr& b) {
  if (a->revision() != b->revision()) return a->revision() < b->revision();
  int64_t ta = objects::UnixSeconds(a->metadata().creationtimestamp());
  int64_t tb = objects::UnixSeconds(b->metadata().creationtimestamp());
  if (ta != tb) return ta < tb;
  return a->metadata().name() < b->metadata().name();
}

}  // namespace

const objects::ResourceInfo& ControllerRevisionsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<appsv1::ControllerRevision>();
  CHECK(r != nullptr);
  return *r;
}

std::string TemplatePatch(const corev1::PodTemplateSpec& tmpl) {
  rapidjson::Document doc;
  doc.SetObject();
  auto& alloc = doc.GetAllocator();
  rapidjson::Value template_json = objects::ToJsonValue(tmpl, alloc);
  template_json.AddMember("$patch", "replace", alloc);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("template", template_json, alloc);
  doc.AddMember("spec", spec, alloc);
  return patch::CanonicalJson(doc);
}

StatusOr<corev1::PodTemplateSpec> RevisionTemplate(
    const appsv1::ControllerRevision& revision) {
  rapidjson::Document doc;
  RETURN_IF_ERROR(patch::ParseJson(revision.data().raw(), &doc));
  rapidjson::Value* spec =
      doc.IsObject() ? patch::FindMember(doc, "spec") : nullptr;
  rapidjson::Value* tmpl = spec != nullptr && spec->IsObject()
                               ? patch::FindMember(*spec, "template")
                               : nullptr;
  if (tmpl == nullptr || !tmpl->IsObject()) {
    return InvalidArgumentError("controllerrevision " +
                                revision.metadata().name() +
                                ": data has no spec.template");
  }
  patch::RemoveMember(*tmpl, "$patch");
  corev1::PodTemplateSpec out;
  RETURN_IF_ERROR(objects::DecodeJsonValue(*tmpl, &out).status());
  return out;
}

std::string HashRevisionData(std::string_view data, int32_t collision_count) {
  // FNV-1 (multiply, then xor), as Go's hash/fnv New32.
  uint32_t h = 2166136261u;
  auto add = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h *= 16777619u;
      h ^= c;
    }
  };
  add(data);
  add(std::to_string(collision_count));
  // rand.SafeEncodeString(fmt.Sprint(hash)).
  static constexpr char kAlphanums[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (char c : std::to_string(h)) {
    out += kAlphanums[static_cast<unsigned char>(c) % (sizeof(kAlphanums) - 1)];
  }
  return out;
}

bool SameRevisionData(std::string_view a, std::string_view b) {
  if (a == b) return true;
  rapidjson::Document da, db;
  if (!patch::ParseJson(a, &da).ok() || !patch::ParseJson(b, &db).ok()) {
    return false;
  }
  return patch::JsonEqual(da, db);
}

StatusOr<std::vector<RevisionPtr>> ClaimRevisions(
    ApiWriter* api, const informer::Indexer& revisions,
    const metav1::ObjectMeta& owner, std::string_view kind,
    const machinery::LabelSelector& selector, Status* first_error) {
  std::vector<RevisionPtr> owned;
  StatusOr<std::vector<ObjectPtr>> in_ns =
      revisions.ByIndex(informer::kNamespaceIndex, owner.namespace_());
  RETURN_IF_ERROR(in_ns.status());
  for (const ObjectPtr& o : *in_ns) {
    auto rev = std::static_pointer_cast<const appsv1::ControllerRevision>(o);
    const metav1::OwnerReference* ref = objects::ControllerRef(rev->metadata());
    const bool matches = !selector.Empty() &&
                         selector.Matches(LabelMap(rev->metadata().labels()));
    if (ref != nullptr && ref->uid() != owner.uid()) continue;
    if (ref != nullptr && matches) {
      owned.push_back(rev);
      continue;
    }
    if (ref == nullptr && (!matches || objects::IsBeingDeleted(owner) ||
                           objects::IsBeingDeleted(rev->metadata()))) {
      continue;
    }
    // Release (ours, no longer matching) or adopt (a matching orphan).
    appsv1::ControllerRevision copy = *rev;
    auto* refs = copy.mutable_metadata()->mutable_ownerreferences();
    if (ref != nullptr) {
      for (int i = 0; i < refs->size(); ++i) {
        if (refs->Get(i).uid() == owner.uid()) {
          refs->DeleteSubrange(i, 1);
          break;
        }
      }
    } else {
      *refs->Add() = ControllerRefTo("apps/v1", kind, owner);
    }
    StatusOr<ObjectPtr> written =
        api->Update(ControllerRevisionsResource(), copy);
    if (written.ok()) {
      if (ref == nullptr) {
        owned.push_back(
            std::static_pointer_cast<const appsv1::ControllerRevision>(
                *written));
      }
    } else if (!informer::IsNotFound(written.status())) {
      KeepFirstError(first_error, written.status());
    }
  }
  std::sort(owned.begin(), owned.end(), RevisionLess);
  return owned;
}

appsv1::ControllerRevision NewRevision(const metav1::ObjectMeta& owner,
                                       std::string_view kind,
                                       const corev1::PodTemplateSpec& tmpl,
                                       const std::string& data,
                                       const std::string& hash,
                                       int64_t revision) {
  appsv1::ControllerRevision cr;
  metav1::ObjectMeta* m = cr.mutable_metadata();
  m->set_name(owner.name().substr(0, kMaxNamePrefix) + "-" + hash);
  m->set_namespace_(owner.namespace_());
  *m->mutable_labels() = tmpl.metadata().labels();
  (*m->mutable_labels())[kHashLabel] = hash;
  *m->mutable_annotations() = owner.annotations();
  *m->add_ownerreferences() = ControllerRefTo("apps/v1", kind, owner);
  cr.mutable_data()->set_raw(data);
  cr.set_revision(revision);
  return cr;
}

StatusOr<RevisionPtr> SetRevisionNumber(ApiWriter* api,
                                        const appsv1::ControllerRevision& rev,
                                        int64_t number) {
  appsv1::ControllerRevision copy = rev;
  if (copy.revision() == number) {
    return std::make_shared<const appsv1::ControllerRevision>(copy);
  }
  copy.set_revision(number);
  StatusOr<ObjectPtr> written =
      api->Update(ControllerRevisionsResource(), copy);
  if (informer::IsConflict(written.status())) {
    ASSIGN_OR_RETURN(ObjectPtr live, api->Get(ControllerRevisionsResource(),
                                              rev.metadata().namespace_(),
                                              rev.metadata().name()));
    copy = static_cast<const appsv1::ControllerRevision&>(*live);
    if (copy.revision() == number) {
      return std::static_pointer_cast<const appsv1::ControllerRevision>(live);
    }
    copy.set_revision(number);
    written = api->Update(ControllerRevisionsResource(), copy);
  }
  RETURN_IF_ERROR(written.status());
  return std::static_pointer_cast<const appsv1::ControllerRevision>(*written);
}

int64_t MaxRevision(const std::vector<RevisionPtr>& revisions) {
  int64_t max = 0;
  for (const RevisionPtr& r : revisions) max = std::max(max, r->revision());
  return max;
}

std::string RevisionHashLabel(const metav1::ObjectMeta& meta) {
  auto it = meta.labels().find(kHashLabel);
  return it == meta.labels().end() ? "" : it->second;
}

Status DeleteRevisionsOfGoneOwner(ApiWriter* api,
                                  const informer::Indexer& revisions,
                                  const objects::ResourceInfo& owner_resource,
                                  std::string_view kind,
                                  const std::string& key) {
  auto [ns, name] = informer::SplitObjectKey(key);
  StatusOr<std::vector<ObjectPtr>> in_ns =
      revisions.ByIndex(informer::kNamespaceIndex, ns);
  RETURN_IF_ERROR(in_ns.status());
  std::vector<ObjectPtr> left;
  for (const ObjectPtr& o : *in_ns) {
    const auto& meta =
        static_cast<const appsv1::ControllerRevision&>(*o).metadata();
    const metav1::OwnerReference* ref = objects::ControllerRef(meta);
    if (ref != nullptr && ref->kind() == kind && ref->name() == name &&
        !objects::IsBeingDeleted(meta)) {
      left.push_back(o);
    }
  }
  if (left.empty()) return Status::Ok();
  // The cache may lag behind a create: only the server says gone.
  StatusOr<ObjectPtr> live = api->Get(owner_resource, ns, name);
  std::string live_uid;
  if (live.ok()) {
    live_uid = objects::Uid(**live);
  } else if (!informer::IsNotFound(live.status())) {
    return live.status();
  }
  Status first_error;
  for (const ObjectPtr& o : left) {
    const auto& meta =
        static_cast<const appsv1::ControllerRevision&>(*o).metadata();
    if (objects::ControllerRef(meta)->uid() == live_uid) continue;
    // The cached version too: a revision orphaned (`--cascade=orphan`)
    // since the cache saw it answers 409 Conflict and is left alone.
    metav1::DeleteOptions opts;
    opts.mutable_preconditions()->set_uid(meta.uid());
    if (!meta.resourceversion().empty()) {
      opts.mutable_preconditions()->set_resourceversion(meta.resourceversion());
    }
    Status s = api->Delete(ControllerRevisionsResource(), meta.namespace_(),
                           meta.name(), opts);
    if (!informer::IsNotFound(s) && !informer::IsConflict(s)) {
      KeepFirstError(&first_error, s);
    }
  }
  return first_error;
}

}  // namespace kplane::controllers
