#include "objects/patch/apply.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "base/json.h"
#include "objects/patch/strategic.h"

namespace kplane::patch {

const std::vector<std::vector<std::string>>& AlwaysIgnored() {
  static const auto* v = new std::vector<std::vector<std::string>>{
      {"f:apiVersion"},
      {"f:kind"},
      {"f:metadata", "f:name"},
      {"f:metadata", "f:namespace"},
      {"f:metadata", "f:uid"},
      {"f:metadata", "f:resourceVersion"},
      {"f:metadata", "f:generation"},
      {"f:metadata", "f:creationTimestamp"},
      {"f:metadata", "f:managedFields"},
      {"f:metadata", "f:selfLink"},
      {"f:metadata", "f:deletionTimestamp"},
      {"f:metadata", "f:deletionGracePeriodSeconds"},
  };
  return *v;
}

namespace {

JsonValue ParseElementJson(std::string_view text, JsonAllocator& alloc,
                           bool* ok) {
  rapidjson::Document d(&alloc);
  *ok = json::ParseDom(text, &d).ok();
  JsonValue out(d, alloc);
  return out;
}

// Does list element `elem` match the key object `key` ({"name":"x"})?
bool MatchesKey(const JsonValue& elem, const JsonValue& key) {
  if (!elem.IsObject() || !key.IsObject()) return false;
  for (const auto& m : key.GetObject()) {
    const JsonValue* v = FindMember(elem, StringOf(m.name));
    if (v == nullptr || !JsonEqual(*v, m.value)) return false;
  }
  return true;
}

// Index of the array element addressed by a k:/v:/i: path element, or -1.
int FindElement(const JsonValue& arr, const std::string& pe) {
  if (!arr.IsArray() || pe.size() < 2) return -1;
  std::string_view body = std::string_view(pe).substr(2);
  if (pe[0] == 'i') {
    auto n = std::atoi(std::string(body).c_str());
    return n >= 0 && static_cast<rapidjson::SizeType>(n) < arr.Size() ? n : -1;
  }
  rapidjson::Document scratch;
  bool ok = false;
  JsonValue want = ParseElementJson(body, scratch.GetAllocator(), &ok);
  if (!ok) return -1;
  for (rapidjson::SizeType i = 0; i < arr.Size(); ++i) {
    if (pe[0] == 'k' ? MatchesKey(arr[i], want) : JsonEqual(arr[i], want)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool IsIgnored(const std::vector<std::string>& path,
               const std::vector<std::vector<std::string>>& ignored) {
  for (const auto& ig : ignored) {
    if (ig == path) return true;
  }
  for (const auto& ig : AlwaysIgnored()) {
    if (ig == path) return true;
  }
  return false;
}

// The JSON string of `text`, as CanonicalJson writes it.
std::string JsonString(std::string_view text) {
  return CanonicalJson(JsonValue(rapidjson::StringRef(
      text.data(), static_cast<rapidjson::SizeType>(text.size()))));
}

// The key of associative-list element `e` as kube writes it after "k:": an
// object of the list's keys (meta.MapKeys()) sorted by name, as
// structured-merge-diff's KeyByFields sorts them ({"port":53,
// "protocol":"TCP"}); a key field `e` omits is its default when it has one
// (keyedAssociativeListItemToPathElement). False when `e` is no object or
// omits a key without default; then *missing names that key.
bool ElementKey(const JsonValue& e, const PatchMeta& meta, std::string* out,
                std::string* missing = nullptr) {
  std::vector<std::string> keys = meta.MapKeys();
  if (!e.IsObject() || keys.empty()) return false;
  std::sort(keys.begin(), keys.end());
  std::string key = "{";
  for (const std::string& k : keys) {
    std::string value;
    if (const JsonValue* kv = FindMember(e, k)) {
      value = CanonicalJson(*kv);
    } else {
      for (const auto& [name, def] : meta.key_defaults) {
        if (name == k) value = JsonString(def);
      }
      if (value.empty()) {
        if (missing != nullptr) *missing = k;
        return false;
      }
    }
    if (key.size() > 1) key += ",";
    key += JsonString(k) + ":" + value;
  }
  *out = key + "}";
  return true;
}

void Walk(const JsonValue& obj, const PatchSchema& schema,
          const std::vector<std::vector<std::string>>& ignored,
          std::vector<std::string>& path, FieldSet* out) {
  for (const auto& m : obj.GetObject()) {
    std::string name(StringOf(m.name));
    path.push_back("f:" + name);
    if (IsIgnored(path, ignored)) {
      path.pop_back();
      continue;
    }
    FieldSet& child = out->children[path.back()];
    const JsonValue& v = m.value;
    PatchSchema::Field f = schema.Lookup(name);
    if (v.IsObject() && v.MemberCount() > 0) {
      Walk(v, f.schema, ignored, path, &child);
      if (child.children.empty()) {
        // Everything below was ignored: the field itself is not tracked.
        out->children.erase(path.back());
      }
    } else if (v.IsArray() && v.Size() > 0 && f.meta.IsMerge() &&
               !f.meta.merge_key.empty() && v[0].IsObject()) {
      for (const auto& e : v.GetArray()) {
        std::string key;
        if (!ElementKey(e, f.meta, &key)) continue;
        key = "k:" + key;
        path.push_back(key);
        FieldSet& elem = child.children[key];
        elem.member = true;
        Walk(e, f.schema, ignored, path, &elem);
        path.pop_back();
      }
    } else if (v.IsArray() && v.Size() > 0 && f.meta.IsMerge() &&
               !v[0].IsObject() && !v[0].IsArray()) {
      for (const auto& e : v.GetArray()) {
        child.children["v:" + CanonicalJson(e)].member = true;
      }
    } else {
      child.member = true;
    }
    path.pop_back();
  }
}

// Paths of `set` with whether each is a leaf (no children).
void CollectPaths(const FieldSet& set, std::vector<std::string>& path,
                  std::vector<std::pair<std::vector<std::string>, bool>>* out) {
  if (set.member) out->emplace_back(path, set.children.empty());
  for (const auto& [k, child] : set.children) {
    path.push_back(k);
    CollectPaths(child, path, out);
    path.pop_back();
  }
}

const FieldSet* Node(const FieldSet& set,
                     const std::vector<std::string>& path) {
  const FieldSet* cur = &set;
  for (const auto& pe : path) {
    auto it = cur->children.find(pe);
    if (it == cur->children.end()) return nullptr;
    cur = &it->second;
  }
  return cur;
}

// The members of an object, looked up by name: by a scan while they are
// few, through an index built once when there are many (a map of 200,000
// labels looked up once per label made a write quadratic).
class MemberLookup {
 public:
  explicit MemberLookup(const JsonValue* v) : v_(v) {
    if (v_ == nullptr || !v_->IsObject() || v_->MemberCount() <= 16) return;
    index_.reserve(v_->MemberCount());
    for (const auto& m : v_->GetObject())
      index_.emplace(StringOf(m.name), &m.value);
  }
  // The value at path element `pe` ("f:<name>", or an element key of a
  // list) below the object or list; null when absent.
  const JsonValue* Child(const std::string& pe) const {
    if (v_ == nullptr || pe.size() < 2) return nullptr;
    if (pe[0] == 'f') {
      const std::string_view name = std::string_view(pe).substr(2);
      if (!index_.empty()) {
        auto it = index_.find(name);
        return it == index_.end() ? nullptr : it->second;
      }
      return FindMember(*v_, name);
    }
    const int i = FindElement(*v_, pe);
    return i < 0 ? nullptr : &(*v_)[static_cast<rapidjson::SizeType>(i)];
  }

 private:
  const JsonValue* v_;
  std::unordered_map<std::string_view, const JsonValue*> index_;
};

// The paths of `set` below `path` whose value differs between `before` and
// `after` (null: absent there), walked with both values in one pass.
void ChangedUnder(const FieldSet& set, const JsonValue* before,
                  const JsonValue* after, std::vector<std::string>* path,
                  FieldSet* changed) {
  if (set.member) {
    const bool leaf = set.children.empty();
    const bool differs =
        (before == nullptr) != (after == nullptr) ||
        (leaf && before != nullptr && !JsonEqual(*before, *after));
    if (differs) changed->Insert(*path);
  }
  if (set.children.empty()) return;
  const MemberLookup in_before(before), in_after(after);
  for (const auto& [k, child] : set.children) {
    path->push_back(k);
    ChangedUnder(child, in_before.Child(k), in_after.Child(k), path, changed);
    path->pop_back();
  }
}

// Paths of `set` whose value differs between `before` and `after`.
FieldSet ChangedFields(const FieldSet& set, const JsonValue* before,
                       const JsonValue& after) {
  FieldSet changed;
  std::vector<std::string> path;
  ChangedUnder(set, before, &after, &path, &changed);
  return changed;
}

std::string ManagerString(const ManagedFieldsEntry& e) {
  std::string s = "\"" + e.manager + "\"";
  if (!e.subresource.empty()) {
    s += " with subresource \"" + e.subresource + "\"";
  }
  if (e.operation == "Update") s += " using " + e.api_version;
  return s;
}

// Whether `e` is the entry of `manager` writing with `operation` through
// `subresource`: kube's manager identifier (buildManagerInfo) holds the
// subresource, so a manager's entry for /status is not its entry for the
// main resource.
bool SameManager(const ManagedFieldsEntry& e, std::string_view manager,
                 std::string_view operation, std::string_view subresource) {
  return e.manager == manager && e.operation == operation &&
         e.subresource == subresource;
}

std::string ConflictMessage(const std::vector<FieldConflict>& conflicts) {
  if (conflicts.size() == 1) {
    return "Apply failed with 1 conflict: conflict with " +
           conflicts[0].manager + ": " + conflicts[0].field;
  }
  std::map<std::string, std::vector<std::string>> by_manager;
  for (const auto& c : conflicts) by_manager[c.manager].push_back(c.field);
  std::string msg;
  for (const auto& [m, fields] : by_manager) {
    if (!msg.empty()) msg += "\n";
    msg += "conflicts with " + m + ":";
    for (const auto& f : fields) msg += "\n- " + f;
  }
  return "Apply failed with " + std::to_string(conflicts.size()) +
         " conflicts: " + msg;
}

void RemoveManagedFieldsFrom(JsonValue& obj) {
  if (JsonValue* md = FindMember(obj, "metadata")) {
    RemoveMember(*md, "managedFields");
  }
}

}  // namespace

bool FieldSet::Empty() const {
  if (member) return false;
  for (const auto& [k, c] : children) {
    if (!c.Empty()) return false;
  }
  return true;
}

FieldSet FieldSet::Union(const FieldSet& other) const {
  FieldSet out = *this;
  out.member = member || other.member;
  for (const auto& [k, c] : other.children) {
    auto it = out.children.find(k);
    if (it == out.children.end()) {
      out.children[k] = c;
    } else {
      it->second = it->second.Union(c);
    }
  }
  return out;
}

FieldSet FieldSet::Difference(const FieldSet& other) const {
  FieldSet out;
  out.member = member && !other.member;
  for (const auto& [k, c] : children) {
    auto it = other.children.find(k);
    FieldSet d = it == other.children.end() ? c : c.Difference(it->second);
    if (!d.Empty()) out.children[k] = std::move(d);
  }
  return out;
}

FieldSet FieldSet::Intersection(const FieldSet& other) const {
  FieldSet out;
  out.member = member && other.member;
  for (const auto& [k, c] : children) {
    auto it = other.children.find(k);
    if (it == other.children.end()) continue;
    FieldSet i = c.Intersection(it->second);
    if (!i.Empty()) out.children[k] = std::move(i);
  }
  return out;
}

std::vector<std::vector<std::string>> FieldSet::Paths() const {
  std::vector<std::pair<std::vector<std::string>, bool>> all;
  std::vector<std::string> path;
  CollectPaths(*this, path, &all);
  std::vector<std::vector<std::string>> out;
  for (auto& [p, leaf] : all) out.push_back(std::move(p));
  return out;
}

bool FieldSet::Has(const std::vector<std::string>& path) const {
  const FieldSet* n = Node(*this, path);
  return n != nullptr && n->member;
}

void FieldSet::Insert(const std::vector<std::string>& path) {
  FieldSet* cur = this;
  for (const auto& pe : path) cur = &cur->children[pe];
  cur->member = true;
}

JsonValue FieldSet::ToJson(JsonAllocator& alloc) const {
  JsonValue obj(rapidjson::kObjectType);
  // std::map iterates in sorted order; "." sorts before "f:"/"k:"/"v:".
  if (member && !children.empty()) {
    obj.AddMember(MakeString(".", alloc), JsonValue(rapidjson::kObjectType),
                  alloc);
  }
  for (const auto& [k, c] : children) {
    if (c.Empty()) continue;
    obj.AddMember(MakeString(k, alloc), c.ToJson(alloc), alloc);
  }
  return obj;
}

std::string FieldSet::ToJsonString() const {
  rapidjson::Document d;
  JsonValue v = ToJson(d.GetAllocator());
  return CanonicalJson(v);
}

bool FieldSet::IsPathElement(std::string_view key) {
  return key.size() >= 2 && key[1] == ':' &&
         std::string_view("fkvi").find(key[0]) != std::string_view::npos;
}

StatusOr<FieldSet> FieldSet::FromJson(const JsonValue& v) {
  if (!v.IsObject()) {
    return InvalidArgumentError("fieldsV1 must be a JSON object");
  }
  FieldSet out;
  if (v.MemberCount() == 0) {
    out.member = true;
    return out;
  }
  for (const auto& m : v.GetObject()) {
    std::string k(StringOf(m.name));
    if (k == ".") {
      out.member = true;
      continue;
    }
    if (!IsPathElement(k)) {
      return InvalidArgumentError("invalid fieldsV1 path element: " + k);
    }
    ASSIGN_OR_RETURN(FieldSet child, FromJson(m.value));
    out.children[k] = std::move(child);
  }
  return out;
}

std::string PathString(const std::vector<std::string>& path) {
  std::string s;
  for (const auto& pe : path) {
    if (pe.size() < 2) continue;
    std::string_view body = std::string_view(pe).substr(2);
    switch (pe[0]) {
      case 'f':
        s += "." + std::string(body);
        break;
      case 'i':
        s += "[" + std::string(body) + "]";
        break;
      case 'v':
        s += "[=" + std::string(body) + "]";
        break;
      case 'k': {
        rapidjson::Document d;
        const bool parsed = json::ParseDom(body, &d).ok();
        s += "[";
        if (parsed && d.IsObject()) {
          bool first = true;
          for (const auto& m : d.GetObject()) {
            if (!first) s += ",";
            first = false;
            s += std::string(StringOf(m.name)) + "=" + CanonicalJson(m.value);
          }
        }
        s += "]";
        break;
      }
    }
  }
  return s;
}

FieldSet ComputeFieldSet(const JsonValue& obj, const PatchSchema& schema,
                         const std::vector<std::vector<std::string>>& ignored) {
  FieldSet out;
  if (!obj.IsObject()) return out;
  std::vector<std::string> path;
  Walk(obj, schema, ignored, path, &out);
  return out;
}

const JsonValue* ResolveFieldPath(const JsonValue& obj,
                                  const std::vector<std::string>& path) {
  const JsonValue* cur = &obj;
  for (const auto& pe : path) {
    if (pe.size() < 2) return nullptr;
    if (pe[0] == 'f') {
      cur = FindMember(*cur, std::string_view(pe).substr(2));
    } else {
      int i = FindElement(*cur, pe);
      cur = i < 0 ? nullptr : &(*cur)[static_cast<rapidjson::SizeType>(i)];
    }
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

bool RemoveFieldPath(JsonValue& obj, const std::vector<std::string>& path) {
  if (path.empty()) return false;
  std::vector<std::string> parent_path(path.begin(), path.end() - 1);
  JsonValue* parent =
      const_cast<JsonValue*>(ResolveFieldPath(obj, parent_path));
  if (parent == nullptr) return false;
  const std::string& last = path.back();
  if (last.size() >= 2 && last[0] == 'f') {
    return RemoveMember(*parent, std::string_view(last).substr(2));
  }
  int i = FindElement(*parent, last);
  if (i < 0) return false;
  parent->Erase(parent->Begin() + i);
  return true;
}

StatusOr<std::vector<ManagedFieldsEntry>> ReadManagedFields(
    const JsonValue& obj) {
  std::vector<ManagedFieldsEntry> out;
  const JsonValue* md = FindMember(obj, "metadata");
  const JsonValue* mf = md ? FindMember(*md, "managedFields") : nullptr;
  if (mf == nullptr || mf->IsNull()) return out;
  if (!mf->IsArray()) {
    return InvalidArgumentError("metadata.managedFields must be a list");
  }
  for (const auto& e : mf->GetArray()) {
    if (!e.IsObject()) {
      return InvalidArgumentError(
          "metadata.managedFields entries must be "
          "objects");
    }
    ManagedFieldsEntry entry;
    auto str = [&](std::string_view k) {
      const JsonValue* v = FindMember(e, k);
      return v && v->IsString() ? std::string(StringOf(*v)) : std::string();
    };
    entry.manager = str("manager");
    entry.operation = str("operation");
    entry.api_version = str("apiVersion");
    entry.time = str("time");
    entry.subresource = str("subresource");
    if (const JsonValue* f = FindMember(e, "fieldsV1")) {
      ASSIGN_OR_RETURN(entry.fields, FieldSet::FromJson(*f));
    }
    out.push_back(std::move(entry));
  }
  return out;
}

void WriteManagedFields(JsonValue& obj,
                        const std::vector<ManagedFieldsEntry>& entries,
                        JsonAllocator& alloc) {
  if (!obj.IsObject()) obj.SetObject();
  JsonValue* md = FindMember(obj, "metadata");
  // A null metadata is an absent one. Callers refuse other non-objects
  // (ServerSideApply does); replacing them here keeps rapidjson's member
  // functions off a non-object, which is undefined behaviour in release.
  if (md == nullptr || !md->IsObject()) {
    SetMember(obj, "metadata", JsonValue(rapidjson::kObjectType), alloc);
    md = FindMember(obj, "metadata");
  }
  if (entries.empty()) {
    RemoveMember(*md, "managedFields");
    return;
  }
  JsonValue arr(rapidjson::kArrayType);
  for (const auto& e : entries) {
    JsonValue o(rapidjson::kObjectType);
    o.AddMember("manager", MakeString(e.manager, alloc), alloc);
    o.AddMember("operation", MakeString(e.operation, alloc), alloc);
    if (!e.api_version.empty()) {
      o.AddMember("apiVersion", MakeString(e.api_version, alloc), alloc);
    }
    if (!e.time.empty()) o.AddMember("time", MakeString(e.time, alloc), alloc);
    o.AddMember("fieldsType", "FieldsV1", alloc);
    o.AddMember("fieldsV1", e.fields.ToJson(alloc), alloc);
    if (!e.subresource.empty()) {
      o.AddMember("subresource", MakeString(e.subresource, alloc), alloc);
    }
    arr.PushBack(o, alloc);
  }
  SetMember(*md, "managedFields", arr, alloc);
}

namespace {

// Strategic merge reads some member names beginning with '$' as directives
// ("$patch", "$retainKeys", "$setElementOrder/...", ...); server-side apply
// has none, kube's structured merge reads them as ordinary fields (a
// custom resource's free-form data may hold kustomize patches with
// "$patch": "delete"). Around the merge every name beginning with '$' gets
// one more '$' (so none is a directive name: they all begin "$$") and loses
// it afterwards; the renaming is one-to-one, so no two members collide.
// Walked with a stack of its own: an object may be 10,000 levels deep.
enum class DollarNames { kEscape, kUnescape };

bool RenameDollarNames(JsonValue& root, DollarNames how, JsonAllocator& alloc) {
  bool renamed = false;
  std::vector<JsonValue*> todo = {&root};
  while (!todo.empty()) {
    JsonValue* v = todo.back();
    todo.pop_back();
    if (v->IsObject()) {
      for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
        const std::string_view name(it->name.GetString(),
                                    it->name.GetStringLength());
        if (name.starts_with('$')) {
          const std::string to = how == DollarNames::kEscape
                                     ? "$" + std::string(name)
                                     : std::string(name.substr(1));
          it->name.SetString(
              to.data(), static_cast<rapidjson::SizeType>(to.size()), alloc);
          renamed = true;
        }
        todo.push_back(&it->value);
      }
    } else if (v->IsArray()) {
      for (auto& e : v->GetArray()) todo.push_back(&e);
    }
  }
  return renamed;
}

// What MarkListMapKeys does to the elements of lists with several keys.
enum class KeyMarks {
  kAddToApplied,  // the key, or InvalidArgument when an element has none
  kAddToLive,     // the key, or one no other element has
  kRemove,
};

// Walks `v` along `schema` (the parts of known types only: lists with
// several keys are built-in types') and marks each element of a list with
// several list_map_keys with its ElementKey in member kListMapKeyMember,
// or removes those marks. Sets *marked when there was such an element.
// InvalidArgument (kube's message, with the path of the list) when an
// applied element omits a key that has no default.
Status MarkListMapKeys(JsonValue& v, const PatchSchema& schema, KeyMarks how,
                       JsonAllocator& alloc, bool* marked) {
  if (!v.IsObject() || !schema.known()) return Status::Ok();
  for (auto& m : v.GetObject()) {
    JsonValue& value = m.value;
    if (!value.IsObject() && !value.IsArray()) continue;
    const PatchSchema::Field f = schema.Lookup(StringOf(m.name));
    if (!f.schema.known()) continue;
    if (value.IsObject()) {
      Status st = MarkListMapKeys(value, f.schema, how, alloc, marked);
      if (!st.ok()) {
        return InvalidArgumentError("." + std::string(StringOf(m.name)) +
                                    st.message());
      }
      continue;
    }
    const bool keyed = f.meta.IsMerge() && f.meta.list_map_keys.size() > 1;
    for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
      JsonValue& e = value[i];
      if (!e.IsObject()) continue;
      if (keyed) {
        *marked = true;
        if (how == KeyMarks::kRemove) {
          RemoveMember(e, kListMapKeyMember);
        } else {
          std::string key, missing;
          if (!ElementKey(e, f.meta, &key, &missing)) {
            if (how == KeyMarks::kAddToApplied) {
              return InvalidArgumentError(
                  "." + std::string(StringOf(m.name)) + ": element " +
                  std::to_string(i) +
                  ": associative list with keys has an element that omits "
                  "key field \"" +
                  missing + "\" (and doesn't have default value)");
            }
            key = "#" + std::to_string(i);  // no ElementKey starts so
          }
          SetMember(e, kListMapKeyMember, MakeString(key, alloc), alloc);
        }
      }
      Status st = MarkListMapKeys(e, f.schema, how, alloc, marked);
      if (!st.ok()) {
        return InvalidArgumentError("." + std::string(StringOf(m.name)) + "[" +
                                    std::to_string(i) + "]" + st.message());
      }
    }
  }
  return Status::Ok();
}

// StrategicMergePatch with every member name read literally and the
// elements of lists with several list_map_keys matched by all of them
// (strategic merge has one merge key: each element's key is put in a member
// of its own for the merge). Changes `patch` (the caller's scratch copy).
Status MergeLiterally(JsonValue& object, JsonValue& patch,
                      const PatchSchema& schema, JsonAllocator& alloc) {
  const bool renamed = RenameDollarNames(patch, DollarNames::kEscape, alloc) |
                       RenameDollarNames(object, DollarNames::kEscape, alloc);
  bool marked = false;
  Status st =
      MarkListMapKeys(patch, schema, KeyMarks::kAddToApplied, alloc, &marked);
  if (st.ok()) {
    st = MarkListMapKeys(object, schema, KeyMarks::kAddToLive, alloc, &marked);
  }
  if (st.ok()) {
    st = StrategicMergePatch(
        object, patch, marked ? schema.MergingByListMapKeys() : schema, alloc);
  }
  if (marked) {
    bool unused = false;  // removing fails never
    static_cast<void>(
        MarkListMapKeys(object, schema, KeyMarks::kRemove, alloc, &unused));
  }
  if (renamed) RenameDollarNames(object, DollarNames::kUnescape, alloc);
  return st;
}

// Whether a k: element of `path` (a field path of `obj`, whose type is
// `schema`) is not the ElementKey of the element it finds: a key written
// before kplane keyed lists by all their list_map_keys (k:{"port":53}),
// which finds the first element it matches, not necessarily its own.
bool HasStaleKey(const JsonValue& obj, const PatchSchema& schema,
                 const std::vector<std::string>& path) {
  const JsonValue* cur = &obj;
  PatchSchema at = schema;
  PatchMeta meta;
  for (const auto& pe : path) {
    if (pe.size() < 2) return false;
    if (pe[0] == 'f') {
      const PatchSchema::Field f = at.Lookup(std::string_view(pe).substr(2));
      meta = f.meta;
      at = f.schema;
      cur = FindMember(*cur, std::string_view(pe).substr(2));
    } else {
      const int i = FindElement(*cur, pe);
      cur = i < 0 ? nullptr : &(*cur)[static_cast<rapidjson::SizeType>(i)];
      std::string key;
      if (pe[0] == 'k' && cur != nullptr) {
        if (!ElementKey(*cur, meta, &key)) return true;
        rapidjson::Document want, have;
        if (!json::ParseDom(std::string_view(pe).substr(2), &want).ok() ||
            !json::ParseDom(key, &have).ok() || !JsonEqual(want, have)) {
          return true;
        }
      }
      meta = PatchMeta();
    }
    if (cur == nullptr) return false;
  }
  return false;
}

// Whether `a` and `b` (objects) are equal but for metadata.managedFields.
bool SameButManagedFields(const JsonValue& a, const JsonValue& b) {
  if (!a.IsObject() || !b.IsObject()) return a == b;
  if (a.MemberCount() != b.MemberCount()) return false;
  // Members of metadata but managedFields.
  auto tracked = [](const JsonValue& md) {
    return md.MemberCount() - (md.HasMember("managedFields") ? 1 : 0);
  };
  auto name = [](const JsonValue& n) {
    return std::string_view(n.GetString(), n.GetStringLength());
  };
  for (const auto& m : a.GetObject()) {
    const JsonValue* other = FindMember(b, name(m.name));
    if (other == nullptr) return false;
    if (name(m.name) != "metadata" || !m.value.IsObject() ||
        !other->IsObject()) {
      if (m.value != *other) return false;
      continue;
    }
    if (tracked(m.value) != tracked(*other)) return false;
    for (const auto& f : m.value.GetObject()) {
      if (name(f.name) == "managedFields") continue;
      const JsonValue* g = FindMember(*other, name(f.name));
      if (g == nullptr || f.value != *g) return false;
    }
  }
  return true;
}

// Client-side apply's record of the applied configuration; kube's
// lastAppliedManager and lastAppliedUpdater read it for applies by the
// field manager "kubectl" only (others opt out by their name).
constexpr std::string_view kLastAppliedAnnotation =
    "kubectl.kubernetes.io/last-applied-configuration";
constexpr std::string_view kKubectlManager = "kubectl";

// The annotation's value when `obj` has it as a non-empty string, else null.
const JsonValue* LastAppliedOf(const JsonValue& obj) {
  const JsonValue* md = FindMember(obj, "metadata");
  const JsonValue* an =
      md != nullptr ? FindMember(*md, "annotations") : nullptr;
  const JsonValue* v =
      an != nullptr ? FindMember(*an, kLastAppliedAnnotation) : nullptr;
  return v != nullptr && v->IsString() && v->GetStringLength() > 0 ? v
                                                                   : nullptr;
}

// kube's allowedConflictsFromLastApplied: the fields of the last-applied
// configuration whose live values are still the ones it applied (leaves
// equal, list elements and maps present), i.e. the fields client-side apply
// still stands behind. Empty when `live` has no annotation, or it is not a
// JSON object of `opts.api_version` (or nests deeper than `live`).
FieldSet AllowedFromLastApplied(const JsonValue& live,
                                const ApplyOptions& opts) {
  const JsonValue* text = LastAppliedOf(live);
  if (text == nullptr) return {};
  rapidjson::Document last;
  if (!ParseJson(StringOf(*text), &last).ok() || !last.IsObject()) return {};
  // The walks below recurse; callers provide a stack for the live object's
  // depth (base/deep_stack.h), so an annotation nesting deeper than it is
  // not read (its deepest fields are not live ones anyway).
  if (json::Measure(last).depth > json::Measure(live).depth) return {};
  const JsonValue* av = FindMember(last, "apiVersion");
  if (av == nullptr || !av->IsString() || StringOf(*av) != opts.api_version) {
    return {};
  }
  std::vector<std::pair<std::vector<std::string>, bool>> paths;
  std::vector<std::string> path;
  CollectPaths(ComputeFieldSet(last, opts.schema, opts.ignored), path, &paths);
  FieldSet allowed;
  for (const auto& [p, leaf] : paths) {
    const JsonValue* now = ResolveFieldPath(live, p);
    const JsonValue* then = ResolveFieldPath(last, p);
    if (now == nullptr || then == nullptr) continue;  // removed since
    if (leaf && !JsonEqual(*now, *then)) continue;    // modified since
    allowed.Insert(p);
  }
  return allowed;
}

// kube's lastAppliedUpdater: after a successful apply by "kubectl", an
// annotation the result has is rewritten to the applied configuration
// without that annotation (its metadata.annotations, when the configuration
// has them, stays, if empty as {}; a null one goes).
void UpdateLastApplied(const JsonValue& applied, const ApplyOptions& opts,
                       JsonValue& result, JsonAllocator& alloc) {
  if (opts.manager != kKubectlManager || LastAppliedOf(result) == nullptr) {
    return;
  }
  rapidjson::Document config;
  config.CopyFrom(applied, config.GetAllocator());
  RemoveManagedFieldsFrom(config);
  if (JsonValue* md = FindMember(config, "metadata"); md != nullptr) {
    if (JsonValue* an = FindMember(*md, "annotations"); an != nullptr) {
      if (an->IsObject()) {
        RemoveMember(*an, kLastAppliedAnnotation);
      } else {
        RemoveMember(*md, "annotations");
      }
    }
  }
  JsonValue* an = FindMember(*FindMember(result, "metadata"), "annotations");
  // kube's buildLastApplied writes it with json.Encoder: a final newline.
  SetMember(*an, kLastAppliedAnnotation,
            MakeString(GoCanonicalJson(config) + "\n", alloc), alloc);
}

}  // namespace

Status ServerSideApply(const JsonValue* live, const JsonValue& applied,
                       const ApplyOptions& opts, JsonValue* result,
                       JsonAllocator& alloc,
                       std::vector<FieldConflict>* conflicts) {
  conflicts->clear();
  if (opts.manager.empty()) {
    return InvalidArgumentError(
        "fieldManager: Required value: is required "
        "for apply patch");
  }
  if (!applied.IsObject()) {
    return InvalidArgumentError("apply patch must be a JSON or YAML object");
  }
  // metadata must be an object (or null, meaning absent), as Kubernetes'
  // typed decoding of ObjectMeta demands; the merge below would otherwise
  // put a string or array where managedFields are written.
  if (const JsonValue* md = FindMember(applied, "metadata");
      md != nullptr && !md->IsObject() && !md->IsNull()) {
    return InvalidArgumentError(
        "metadata: Invalid value: must be an object in an apply patch");
  }
  JsonValue config(applied, alloc);
  RemoveManagedFieldsFrom(config);
  FieldSet applied_set = ComputeFieldSet(config, opts.schema, opts.ignored);

  ManagedFieldsEntry mine{opts.manager, "Apply",       opts.api_version,
                          opts.time,    std::string(), applied_set};
  mine.subresource = opts.subresource;
  if (live == nullptr || live->IsNull()) {
    *result = config;
    UpdateLastApplied(applied, opts, *result, alloc);
    WriteManagedFields(*result, {mine}, alloc);
    return Status::Ok();
  }

  ASSIGN_OR_RETURN(std::vector<ManagedFieldsEntry> entries,
                   ReadManagedFields(*live));
  JsonValue merged(*live, alloc);
  RemoveManagedFieldsFrom(merged);
  RETURN_IF_ERROR(MergeLiterally(merged, config, opts.schema, alloc));

  // Prune what this manager applied before (through the same subresource)
  // and no longer applies, unless someone else still owns it (or something
  // beneath it), the same manager's entry for another subresource included.
  FieldSet previous, others;
  for (const auto& e : entries) {
    if (SameManager(e, opts.manager, "Apply", opts.subresource)) {
      previous = e.fields;
    } else {
      others = others.Union(e.fields);
    }
  }
  std::vector<std::pair<std::vector<std::string>, bool>> removed;
  std::vector<std::string> path;
  CollectPaths(previous.Difference(applied_set), path, &removed);
  for (const auto& [p, leaf] : removed) {
    const FieldSet* n = Node(others, p);
    if (n != nullptr && !n->Empty()) continue;
    if (HasStaleKey(merged, opts.schema, p)) continue;
    RemoveFieldPath(merged, p);
  }

  // Fields this apply changes that others own are conflicts (or, forced,
  // change hands).
  FieldSet changed = ChangedFields(applied_set, live, merged);
  // kube's Updater.Apply returns no object when the merge leaves the live
  // object as it was, and managedFieldsUpdater then stamps no time: the
  // applier's entry keeps the time it had (a new applier's gets none), so
  // an apply that changes nothing is written as nothing.
  const bool unchanged = SameButManagedFields(merged, *live);
  if (unchanged) mine.time.clear();
  std::vector<ManagedFieldsEntry> out;
  bool replaced_mine = false;
  // Conflicts an apply by "kubectl" may take as if forced: fields of the
  // last-applied annotation still at their applied values (kube's
  // lastAppliedManager, moving from client-side apply). Read at the first
  // field taken from someone else.
  std::optional<FieldSet> allowed;
  for (auto& e : entries) {
    if (SameManager(e, opts.manager, "Apply", opts.subresource)) {
      out.push_back(mine);
      if (unchanged) out.back().time = e.time;
      replaced_mine = true;
      continue;
    }
    FieldSet taken = changed.Intersection(e.fields);
    if (!taken.Empty()) {
      if (!opts.force) {
        if (!allowed.has_value()) {
          allowed = opts.manager == kKubectlManager
                        ? AllowedFromLastApplied(*live, opts)
                        : FieldSet();
        }
        for (const auto& p : taken.Paths()) {
          if (allowed->Has(p)) continue;
          conflicts->push_back({ManagerString(e), PathString(p)});
        }
      }
      // Forced, or every conflict allowed: the fields change hands (with
      // any conflict left nothing below is written).
      e.fields = e.fields.Difference(taken);
    }
    if (!e.fields.Empty()) out.push_back(e);
  }
  if (!conflicts->empty()) {
    return ConflictError(ConflictMessage(*conflicts));
  }
  if (!replaced_mine) out.push_back(mine);
  UpdateLastApplied(applied, opts, merged, alloc);
  WriteManagedFields(merged, out, alloc);
  *result = merged;
  return Status::Ok();
}

Status UpdateManagedFields(const JsonValue* old, JsonValue& updated,
                           const ApplyOptions& opts, JsonAllocator& alloc) {
  if (opts.manager.empty()) {
    RemoveManagedFieldsFrom(updated);
    if (old != nullptr) {
      ASSIGN_OR_RETURN(auto entries, ReadManagedFields(*old));
      WriteManagedFields(updated, entries, alloc);
    }
    return Status::Ok();
  }
  std::vector<ManagedFieldsEntry> entries;
  if (old != nullptr && !old->IsNull()) {
    ASSIGN_OR_RETURN(entries, ReadManagedFields(*old));
  }
  RemoveManagedFieldsFrom(updated);
  FieldSet new_set = ComputeFieldSet(updated, opts.schema, opts.ignored);
  FieldSet old_set;
  if (old != nullptr && !old->IsNull()) {
    old_set = ComputeFieldSet(*old, opts.schema, opts.ignored);
  }
  FieldSet changed = ChangedFields(new_set, old, updated);
  FieldSet removed = old_set.Difference(new_set);

  std::vector<ManagedFieldsEntry> out;
  bool found = false;
  for (auto& e : entries) {
    if (SameManager(e, opts.manager, "Update", opts.subresource)) {
      found = true;
      e.fields = e.fields.Union(changed).Difference(removed);
      // kube's managedFieldsUpdater: only an update that set something
      // (its "current-operation" set is not empty) moves the time and
      // the version.
      if (!changed.Empty()) {
        e.time = opts.time;
        e.api_version = opts.api_version;
      }
    } else {
      e.fields = e.fields.Difference(changed).Difference(removed);
    }
    if (!e.fields.Empty()) out.push_back(e);
  }
  if (!found && !changed.Empty()) {
    out.push_back({opts.manager, "Update", opts.api_version, opts.time,
                   opts.subresource, changed});
  }
  WriteManagedFields(updated, out, alloc);
  return Status::Ok();
}

}  // namespace kplane::patch
