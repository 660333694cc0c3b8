// Indexer: the thread-safe local cache of one collection, keyed by
// "namespace/name" ("name" for cluster-scoped objects), with secondary
// indices (client-go's cache.Indexer over threadSafeMap).
//
// An index is a named function from an object to the values it is filed
// under; the store keeps, per index, value -> set of keys. The namespace
// index (kNamespaceIndex) is built in; controllers add their own, e.g. pods
// by node name. Worked example, indices "namespace" and "node":
//
//   Upsert(pod default/a on n1)   items  {default/a}
//                                 namespace{default: {default/a}}
//                                 node     {n1: {default/a}}
//   Upsert(pod kube/b on n1)      namespace{default: {default/a},
//                                           kube: {kube/b}}
//                                 node     {n1: {default/a, kube/b}}
//   Upsert(pod default/a on n2)   node     {n1: {kube/b}, n2: {default/a}}
//                                 (old values are unfiled, new ones filed)
//   Delete("kube/b")              namespace{default: {default/a}}
//                                 node     {n2: {default/a}}
//                                 (empty sets are dropped, so ListIndexValues
//                                  never reports a value with no objects)
//   ByIndex("node", "n2")  ->  [default/a]
//
// Objects are shared immutable pointers: readers get the same object the
// store holds; a write replaces the pointer. Results are in key order.
//
// Thread-safety: all methods may be called concurrently (a shared mutex:
// many readers, one writer). Index functions run under the write lock and
// must not call back into the store. Errors: kNotFound for an unknown index
// name; kAlreadyExists for AddIndexers of a name already present.
#ifndef KPLANE_INFORMER_INDEXER_H_
#define KPLANE_INFORMER_INDEXER_H_

#include <google/protobuf/message.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/statusor.h"
#include "informer/watch.h"

namespace kplane::informer {

using IndexFunc =
    std::function<std::vector<std::string>(const google::protobuf::Message&)>;
using Indexers = std::map<std::string, IndexFunc>;

inline constexpr std::string_view kNamespaceIndex = "namespace";
// [metadata.namespace] (client-go's MetaNamespaceIndexFunc).
std::vector<std::string> NamespaceIndexFunc(const google::protobuf::Message&);
// The namespace index alone.
Indexers DefaultIndexers();

// "namespace/name", or "name" when there is no namespace (client-go's
// MetaNamespaceKeyFunc).
std::string ObjectKey(const google::protobuf::Message& obj);
std::string ObjectKey(std::string_view ns, std::string_view name);
// Splits a key back into namespace ("" for cluster scope) and name.
std::pair<std::string, std::string> SplitObjectKey(std::string_view key);

class Indexer {
 public:
  explicit Indexer(Indexers indexers = DefaultIndexers());
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;

  // Adds or replaces the object under its key; returns the previous object
  // (null if none).
  ObjectPtr Upsert(ObjectPtr obj) EXCLUDES(mu_);
  // Removes the key; returns the removed object (null if none).
  ObjectPtr Delete(const std::string& key) EXCLUDES(mu_);
  // Replaces the whole content (indices rebuilt).
  void Replace(std::vector<ObjectPtr> objects) EXCLUDES(mu_);

  ObjectPtr Get(const std::string& key) const EXCLUDES(mu_);  // null if absent
  std::vector<ObjectPtr> List() const EXCLUDES(mu_);
  std::vector<std::string> ListKeys() const EXCLUDES(mu_);
  size_t Size() const EXCLUDES(mu_);

  // Objects filed under `value` in index `index_name`.
  StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view index_name,
                                           std::string_view value) const
      EXCLUDES(mu_);
  StatusOr<std::vector<std::string>> IndexKeys(std::string_view index_name,
                                               std::string_view value) const
      EXCLUDES(mu_);
  // Objects whose index values intersect those of `obj` (client-go's
  // Index()).
  StatusOr<std::vector<ObjectPtr>> Index(
      std::string_view index_name, const google::protobuf::Message& obj) const
      EXCLUDES(mu_);
  // Every value of the index that has at least one object.
  StatusOr<std::vector<std::string>> ListIndexValues(
      std::string_view index_name) const EXCLUDES(mu_);
  bool HasIndex(std::string_view index_name) const EXCLUDES(mu_);

  // Adds indices, filing the existing objects under them too.
  Status AddIndexers(Indexers indexers) EXCLUDES(mu_);

 private:
  using IndexMap = std::map<std::string, std::set<std::string>, std::less<>>;

  // `key` added to / removed from `values` of one index.
  static void FileUnder(IndexMap* index, const std::string& key,
                        const std::vector<std::string>& values);
  static void UnfileFrom(IndexMap* index, const std::string& key,
                         const std::vector<std::string>& values);
  // mu_ held for writing.
  void File(const std::string& key, const google::protobuf::Message& obj)
      REQUIRES(mu_);
  void Unfile(const std::string& key, const google::protobuf::Message& obj)
      REQUIRES(mu_);
  // Moves `key` from `old`'s index values to `obj`'s, leaving alone each
  // index whose values did not change.
  void Refile(const std::string& key, const google::protobuf::Message& old,
              const google::protobuf::Message& obj) REQUIRES(mu_);

  mutable SharedMutex mu_;
  std::map<std::string, ObjectPtr, std::less<>> items_ GUARDED_BY(mu_);
  Indexers indexers_ GUARDED_BY(mu_);
  std::map<std::string, IndexMap, std::less<>> indices_ GUARDED_BY(mu_);
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_INDEXER_H_
