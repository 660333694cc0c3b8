#include "informer/lister.h"

#include "objects/meta.h"

namespace kplane::informer {

namespace {

std::vector<ObjectPtr> Filter(std::vector<ObjectPtr> objects,
                              const machinery::LabelSelector& selector) {
  if (selector.Empty()) return objects;
  std::vector<ObjectPtr> out;
  if (selector.MatchesNothing()) return out;
  for (ObjectPtr& o : objects) {
    if (selector.Matches(LabelsOf(*o))) out.push_back(std::move(o));
  }
  return out;
}

Status NotFound(const std::string& group_resource, std::string_view name) {
  return Status(
      StatusCode::kNotFound,
      (group_resource.empty() ? std::string("object") : group_resource) +
          " \"" + std::string(name) + "\" not found",
      404);
}

}  // namespace

machinery::Labels LabelsOf(const google::protobuf::Message& obj) {
  machinery::Labels labels;
  if (const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj)) {
    for (const auto& [k, v] : meta->labels()) labels.emplace(k, v);
  }
  return labels;
}

NamespaceLister::NamespaceLister(const Indexer* indexer, std::string ns,
                                 std::string group_resource)
    : indexer_(indexer),
      ns_(std::move(ns)),
      group_resource_(std::move(group_resource)) {}

std::vector<ObjectPtr> NamespaceLister::List(
    const machinery::LabelSelector& selector) const {
  std::vector<ObjectPtr> objects;
  StatusOr<std::vector<ObjectPtr>> by_index =
      indexer_->ByIndex(kNamespaceIndex, ns_);
  if (by_index.ok()) {
    objects = std::move(*by_index);
  } else {
    for (ObjectPtr& o : indexer_->List()) {
      if (objects::Namespace(*o) == ns_) objects.push_back(std::move(o));
    }
  }
  return Filter(std::move(objects), selector);
}

StatusOr<ObjectPtr> NamespaceLister::Get(std::string_view name) const {
  ObjectPtr o = indexer_->Get(ObjectKey(ns_, name));
  if (o == nullptr) return NotFound(group_resource_, name);
  return o;
}

Lister::Lister(const Indexer* indexer, const objects::ResourceInfo* resource)
    : indexer_(indexer),
      group_resource_(resource != nullptr ? resource->GroupResource() : "") {}

std::vector<ObjectPtr> Lister::List(
    const machinery::LabelSelector& selector) const {
  return Filter(indexer_->List(), selector);
}

NamespaceLister Lister::ByNamespace(std::string ns) const {
  return NamespaceLister(indexer_, std::move(ns), group_resource_);
}

StatusOr<ObjectPtr> Lister::Get(std::string_view key) const {
  ObjectPtr o = indexer_->Get(std::string(key));
  if (o == nullptr) return NotFound(group_resource_, key);
  return o;
}

}  // namespace kplane::informer
