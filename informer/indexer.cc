#include "informer/indexer.h"

#include "objects/meta.h"
#include "base/logging.h"

namespace kplane::informer {

std::vector<std::string> NamespaceIndexFunc(
    const google::protobuf::Message& obj) {
  return {objects::Namespace(obj)};
}

Indexers DefaultIndexers() {
  return {{std::string(kNamespaceIndex), NamespaceIndexFunc}};
}

std::string ObjectKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

std::string ObjectKey(const google::protobuf::Message& obj) {
  const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  CHECK(meta != nullptr) << obj.GetDescriptor()->full_name()
                         << " has no ObjectMeta";
  return ObjectKey(meta->namespace_(), meta->name());
}

std::pair<std::string, std::string> SplitObjectKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)),
          std::string(key.substr(slash + 1))};
}

Indexer::Indexer(Indexers indexers) : indexers_(std::move(indexers)) {
  for (const auto& [name, fn] : indexers_) indices_[name];
}

void Indexer::FileUnder(IndexMap* index, const std::string& key,
                        const std::vector<std::string>& values) {
  for (const std::string& value : values) (*index)[value].insert(key);
}

void Indexer::UnfileFrom(IndexMap* index, const std::string& key,
                         const std::vector<std::string>& values) {
  for (const std::string& value : values) {
    auto it = index->find(value);
    if (it == index->end()) continue;
    it->second.erase(key);
    if (it->second.empty()) index->erase(it);
  }
}

void Indexer::File(const std::string& key,
                   const google::protobuf::Message& obj) {
  for (const auto& [name, fn] : indexers_) {
    FileUnder(&indices_[name], key, fn(obj));
  }
}

void Indexer::Unfile(const std::string& key,
                     const google::protobuf::Message& obj) {
  for (const auto& [name, fn] : indexers_) {
    UnfileFrom(&indices_[name], key, fn(obj));
  }
}

void Indexer::Refile(const std::string& key,
                     const google::protobuf::Message& old,
                     const google::protobuf::Message& obj) {
  for (const auto& [name, fn] : indexers_) {
    std::vector<std::string> before = fn(old);
    std::vector<std::string> after = fn(obj);
    // The usual update (a Lease renewal, a status change) keeps its
    // namespace, owners and the like: nothing to move.
    if (before == after) continue;
    IndexMap* index = &indices_[name];
    UnfileFrom(index, key, before);
    FileUnder(index, key, after);
  }
}

ObjectPtr Indexer::Upsert(ObjectPtr obj) {
  std::string key = ObjectKey(*obj);
  WriterLock l(&mu_);
  ObjectPtr& slot = items_[key];
  ObjectPtr old = std::move(slot);
  if (old != nullptr) {
    Refile(key, *old, *obj);
  } else {
    File(key, *obj);
  }
  slot = std::move(obj);
  return old;
}

ObjectPtr Indexer::Delete(const std::string& key) {
  WriterLock l(&mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  items_.erase(it);
  Unfile(key, *old);
  return old;
}

void Indexer::Replace(std::vector<ObjectPtr> objects) {
  WriterLock l(&mu_);
  items_.clear();
  for (auto& [name, index] : indices_) index.clear();
  for (ObjectPtr& obj : objects) {
    std::string key = ObjectKey(*obj);
    ObjectPtr& slot = items_[key];
    if (slot != nullptr) Unfile(key, *slot);  // a duplicate: last one wins
    File(key, *obj);
    slot = std::move(obj);
  }
}

ObjectPtr Indexer::Get(const std::string& key) const {
  ReaderLock l(&mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Indexer::List() const {
  ReaderLock l(&mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(obj);
  return out;
}

std::vector<std::string> Indexer::ListKeys() const {
  ReaderLock l(&mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(key);
  return out;
}

size_t Indexer::Size() const {
  ReaderLock l(&mu_);
  return items_.size();
}

StatusOr<std::vector<std::string>> Indexer::IndexKeys(
    std::string_view index_name, std::string_view value) const {
  ReaderLock l(&mu_);
  auto idx = indices_.find(index_name);
  if (idx == indices_.end()) {
    return NotFoundError("index \"" + std::string(index_name) +
                         "\" does not exist");
  }
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return std::vector<std::string>();
  return std::vector<std::string>(it->second.begin(), it->second.end());
}

StatusOr<std::vector<ObjectPtr>> Indexer::ByIndex(
    std::string_view index_name, std::string_view value) const {
  ReaderLock l(&mu_);
  auto idx = indices_.find(index_name);
  if (idx == indices_.end()) {
    return NotFoundError("index \"" + std::string(index_name) +
                         "\" does not exist");
  }
  std::vector<ObjectPtr> out;
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return out;
  out.reserve(it->second.size());
  for (const std::string& key : it->second) {
    auto item = items_.find(key);
    CHECK(item != items_.end())
        << "index " << index_name << " names " << key << " which is not stored";
    out.push_back(item->second);
  }
  return out;
}

StatusOr<std::vector<ObjectPtr>> Indexer::Index(
    std::string_view index_name, const google::protobuf::Message& obj) const {
  ReaderLock l(&mu_);
  auto fn = indexers_.find(std::string(index_name));
  auto idx = indices_.find(index_name);
  if (fn == indexers_.end() || idx == indices_.end()) {
    return NotFoundError("index \"" + std::string(index_name) +
                         "\" does not exist");
  }
  std::set<std::string> keys;
  for (const std::string& value : fn->second(obj)) {
    auto it = idx->second.find(value);
    if (it != idx->second.end())
      keys.insert(it->second.begin(), it->second.end());
  }
  std::vector<ObjectPtr> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) out.push_back(items_.find(key)->second);
  return out;
}

StatusOr<std::vector<std::string>> Indexer::ListIndexValues(
    std::string_view index_name) const {
  ReaderLock l(&mu_);
  auto idx = indices_.find(index_name);
  if (idx == indices_.end()) {
    return NotFoundError("index \"" + std::string(index_name) +
                         "\" does not exist");
  }
  std::vector<std::string> out;
  out.reserve(idx->second.size());
  for (const auto& [value, keys] : idx->second) out.push_back(value);
  return out;
}

bool Indexer::HasIndex(std::string_view index_name) const {
  ReaderLock l(&mu_);
  return indices_.find(index_name) != indices_.end();
}

Status Indexer::AddIndexers(Indexers indexers) {
  WriterLock l(&mu_);
  for (const auto& [name, fn] : indexers) {
    if (indexers_.count(name) != 0) {
      return AlreadyExistsError("indexer \"" + name + "\" already exists");
    }
  }
  for (auto& [name, fn] : indexers) {
    IndexMap& index = indices_[name];
    for (const auto& [key, obj] : items_) FileUnder(&index, key, fn(*obj));
    indexers_.emplace(name, std::move(fn));
  }
  return Status::Ok();
}

}  // namespace kplane::informer
