// Listers: read-only, selector-aware views of an informer's Indexer
// (client-go's generated listers, e.g. PodLister / PodNamespaceLister).
// Controllers read the cache through these, never the API server.
//
//   Lister pods(&informer->GetIndexer(), pods_resource);
//   for (const ObjectPtr& p : pods.List(LabelSelector::Parse("app=web")))
//   StatusOr<ObjectPtr> web = pods.ByNamespace("default").Get("web");
//
//   TypedLister<corev1::Pod> typed(&informer->GetIndexer());
//   StatusOr<std::shared_ptr<const corev1::Pod>> p =
//       typed.ByNamespace("default").Get("web");
//
// ByNamespace uses the namespace index when the indexer has it (O(objects
// in the namespace)) and filters otherwise. Everything returned is in key
// order and shares the cached objects: never modify them (copy first).
//
// Ownership: a lister borrows the Indexer (the informer owns it), which
// must outlive the lister; listers are cheap values.
// Thread-safety: as the Indexer (any thread). Errors: Get returns
// kNotFound with Kubernetes' text (`pods "web" not found`).
#ifndef KPLANE_INFORMER_LISTER_H_
#define KPLANE_INFORMER_LISTER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "objects/machinery/labels.h"
#include "objects/scheme.h"
#include "informer/indexer.h"

namespace kplane::informer {

// The labels of an object, as a selector matches them.
machinery::Labels LabelsOf(const google::protobuf::Message& obj);

class NamespaceLister {
 public:
  NamespaceLister(const Indexer* indexer, std::string ns,
                  std::string group_resource);
  std::vector<ObjectPtr> List(
      const machinery::LabelSelector& selector = {}) const;
  StatusOr<ObjectPtr> Get(std::string_view name) const;

 private:
  const Indexer* indexer_;
  std::string ns_;
  std::string group_resource_;
};

class Lister {
 public:
  // `resource` (optional) names the resource in NotFound errors.
  explicit Lister(const Indexer* indexer,
                  const objects::ResourceInfo* resource = nullptr);

  // Every cached object the selector matches.
  std::vector<ObjectPtr> List(
      const machinery::LabelSelector& selector = {}) const;
  NamespaceLister ByNamespace(std::string ns) const;
  // A cluster-scoped object by name (or any object by its full key).
  StatusOr<ObjectPtr> Get(std::string_view key) const;
  StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view index_name,
                                           std::string_view value) const {
    return indexer_->ByIndex(index_name, value);
  }

 private:
  const Indexer* indexer_;
  std::string group_resource_;
};

// Typed views; T must be the informer's object type.
template <typename T>
std::vector<std::shared_ptr<const T>> CastObjects(
    const std::vector<ObjectPtr>& objects) {
  std::vector<std::shared_ptr<const T>> out;
  out.reserve(objects.size());
  for (const ObjectPtr& o : objects) {
    out.push_back(std::static_pointer_cast<const T>(o));
  }
  return out;
}

template <typename T>
class TypedNamespaceLister {
 public:
  explicit TypedNamespaceLister(NamespaceLister lister)
      : lister_(std::move(lister)) {}
  std::vector<std::shared_ptr<const T>> List(
      const machinery::LabelSelector& selector = {}) const {
    return CastObjects<T>(lister_.List(selector));
  }
  StatusOr<std::shared_ptr<const T>> Get(std::string_view name) const {
    ASSIGN_OR_RETURN(ObjectPtr o, lister_.Get(name));
    return std::static_pointer_cast<const T>(o);
  }

 private:
  NamespaceLister lister_;
};

template <typename T>
class TypedLister {
 public:
  explicit TypedLister(const Indexer* indexer)
      : lister_(indexer, ResourceOf()) {}
  std::vector<std::shared_ptr<const T>> List(
      const machinery::LabelSelector& selector = {}) const {
    return CastObjects<T>(lister_.List(selector));
  }
  TypedNamespaceLister<T> ByNamespace(std::string ns) const {
    return TypedNamespaceLister<T>(lister_.ByNamespace(std::move(ns)));
  }
  StatusOr<std::shared_ptr<const T>> Get(std::string_view key) const {
    ASSIGN_OR_RETURN(ObjectPtr o, lister_.Get(key));
    return std::static_pointer_cast<const T>(o);
  }
  StatusOr<std::vector<std::shared_ptr<const T>>> ByIndex(
      std::string_view index_name, std::string_view value) const {
    ASSIGN_OR_RETURN(std::vector<ObjectPtr> objs,
                     lister_.ByIndex(index_name, value));
    return CastObjects<T>(objs);
  }

 private:
  static const objects::ResourceInfo* ResourceOf() {
    const objects::Scheme& s = objects::Scheme::Default();
    const objects::KindInfo* k = s.KindFor(T::descriptor());
    return k != nullptr ? s.ResourceForKind(*k) : nullptr;
  }
  Lister lister_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_LISTER_H_
