// A faithful port of the algorithms of k8s.io/apimachinery/pkg/util/
// strategicpatch (patch.go) onto RapidJSON values. Function names follow
// upstream so that the two can be read side by side; comments explain where
// and why we differ.
//
// Lists are handled as std::vector<JsonValue> (elements moved out of the
// RapidJSON array and back), because upstream reorders, partitions and
// appends Go slices freely. Lists used only as an ordering reference are
// deep copies, since upstream reads them after the elements were moved.
#include "objects/patch/strategic.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kplane::patch {

namespace {

constexpr std::string_view kDirectiveMarker = "$patch";
constexpr std::string_view kDeleteDirective = "delete";
constexpr std::string_view kReplaceDirective = "replace";
constexpr std::string_view kMergeDirective = "merge";
constexpr std::string_view kRetainKeysStrategy = "retainKeys";
constexpr std::string_view kDeleteFromPrimitiveListPrefix =
    "$deleteFromPrimitiveList";
constexpr std::string_view kRetainKeysDirective = "$retainKeys";
constexpr std::string_view kSetElementOrderPrefix = "$setElementOrder";

using List = std::vector<JsonValue>;

Status ErrBadArgType(std::string_view expected, const JsonValue& actual) {
  return InvalidArgumentError("expected a " + std::string(expected) +
                              ", but received a " +
                              std::string(KindName(KindOf(actual))));
}
constexpr std::string_view kMapType = "map[string]interface {}";
constexpr std::string_view kSliceType = "[]interface {}";

Status ErrNoMergeKey(const JsonValue& m, std::string_view key) {
  return InvalidArgumentError(
      "map: " + GoString(m) +
      " does not contain declared merge key: " + std::string(key));
}
Status ErrBadPatchType(const JsonValue& t, const JsonValue& m) {
  return InvalidArgumentError("unknown patch type: " + GoString(t) +
                              " in map: " + GoString(m));
}
Status ErrNoListOfLists() {
  return InvalidArgumentError("lists of lists are not supported");
}
Status ErrBadPatchFormatForPrimitiveList() {
  return InvalidArgumentError("invalid patch format of primitive list");
}
Status ErrBadPatchFormatForRetainKeys() {
  return InvalidArgumentError("invalid patch format of retainKeys");
}
Status ErrBadPatchFormatForSetElementOrderList() {
  return InvalidArgumentError("invalid patch format of setElementOrder list");
}

std::string GoListString(const List& l) {
  std::string s = "[";
  for (size_t i = 0; i < l.size(); ++i) {
    if (i > 0) s += " ";
    s += GoString(l[i]);
  }
  return s + "]";
}

// Go's `a == b` on two interface{} values holding decoded JSON: same dynamic
// type and equal value. Maps and slices are not comparable in Go (it would
// panic); we answer false.
bool GoInterfaceEqual(const JsonValue* a, const JsonValue* b) {
  if (a == nullptr || b == nullptr) return a == b;
  JsonKind k = KindOf(*a);
  if (k == JsonKind::kObject || k == JsonKind::kArray) return false;
  return JsonEqual(*a, *b);
}

bool IsDirective(const JsonValue& v, std::string_view directive) {
  return v.IsString() && StringOf(v) == directive;
}

// Go's sort.SliceStable (insertion sort on blocks of 20, then SymMerge),
// reproduced exactly because upstream's normalizeSliceOrder passes it a
// comparator that is not a strict weak order (an element absent from the
// order list is "less" than everything), so the result depends on the
// algorithm.
class GoStableSorter {
 public:
  GoStableSorter(List& data,
                 std::function<bool(const JsonValue&, const JsonValue&)> less)
      : d_(data), less_(std::move(less)) {}

  void Sort() {
    int n = static_cast<int>(d_.size());
    int block = 20;
    int a = 0, b = block;
    while (b <= n) {
      InsertionSort(a, b);
      a = b;
      b += block;
    }
    InsertionSort(a, n);
    while (block < n) {
      a = 0;
      b = 2 * block;
      while (b <= n) {
        SymMerge(a, a + block, b);
        a = b;
        b += 2 * block;
      }
      if (int m = a + block; m < n) SymMerge(a, m, n);
      block *= 2;
    }
  }

 private:
  bool Less(int i, int j) { return less_(d_[i], d_[j]); }
  void Swap(int i, int j) { std::swap(d_[i], d_[j]); }

  void InsertionSort(int a, int b) {
    for (int i = a + 1; i < b; ++i) {
      for (int j = i; j > a && Less(j, j - 1); --j) Swap(j, j - 1);
    }
  }
  void SwapRange(int a, int b, int n) {
    for (int i = 0; i < n; ++i) Swap(a + i, b + i);
  }
  void Rotate(int a, int m, int b) {
    int i = m - a, j = b - m;
    while (i != j) {
      if (i > j) {
        SwapRange(m - i, m, j);
        i -= j;
      } else {
        SwapRange(m - i, m + j - i, i);
        j -= i;
      }
    }
    SwapRange(m - i, m, i);
  }
  void SymMerge(int a, int m, int b) {
    if (m - a == 1) {
      int i = m, j = b;
      while (i < j) {
        int h = (i + j) / 2;
        if (Less(h, a)) {
          i = h + 1;
        } else {
          j = h;
        }
      }
      for (int k = a; k < i - 1; ++k) Swap(k, k + 1);
      return;
    }
    if (b - m == 1) {
      int i = a, j = m;
      while (i < j) {
        int h = (i + j) / 2;
        if (!Less(m, h)) {
          i = h + 1;
        } else {
          j = h;
        }
      }
      for (int k = m; k > i; --k) Swap(k, k - 1);
      return;
    }
    int mid = (a + b) / 2;
    int n = mid + m;
    int start, r;
    if (m > mid) {
      start = n - b;
      r = mid;
    } else {
      start = a;
      r = m;
    }
    int p = n - 1;
    while (start < r) {
      int c = (start + r) / 2;
      if (!Less(p - c, c)) {
        start = c + 1;
      } else {
        r = c;
      }
    }
    int end = n - start;
    if (start < m && m < end) Rotate(start, m, end);
    if (a < start && start < mid) SymMerge(a, start, mid);
    if (mid < end && end < b) SymMerge(mid, end, b);
  }

  List& d_;
  std::function<bool(const JsonValue&, const JsonValue&)> less_;
};

struct DiffOptions {
  bool set_element_order = false;
  bool ignore_changes_and_additions = false;
  bool ignore_deletions = false;
  bool build_retain_keys_directive = false;
};

struct MergeOptions {
  bool merge_parallel_list = false;
  bool ignore_unmatched_nulls = false;
};

// extractRetainKeysPatchStrategy.
Status ExtractRetainKeysPatchStrategy(const std::vector<std::string>& s,
                                      bool* retain_keys,
                                      std::string* strategy) {
  *retain_keys = false;
  strategy->clear();
  if (s.empty()) return Status::Ok();
  if (s.size() == 1) {
    if (s[0] == kRetainKeysStrategy) {
      *retain_keys = true;
    } else {
      *strategy = s[0];
    }
    return Status::Ok();
  }
  if (s.size() == 2) {
    if (s[0] == kRetainKeysStrategy) {
      *retain_keys = true;
      *strategy = s[1];
      return Status::Ok();
    }
    if (s[1] == kRetainKeysStrategy) {
      *retain_keys = true;
      *strategy = s[0];
      return Status::Ok();
    }
  }
  std::string joined;
  for (const auto& x : s) joined += (joined.empty() ? "" : " ") + x;
  return InvalidArgumentError("unexpected patch strategy: [" + joined + "]");
}

class Engine {
 public:
  explicit Engine(JsonAllocator& alloc) : a_(alloc) {}

  JsonValue Copy(const JsonValue& v) { return JsonValue(v, a_); }
  List CopyList(const List& l) {
    List out;
    out.reserve(l.size());
    for (const auto& v : l) out.push_back(Copy(v));
    return out;
  }
  static List TakeList(JsonValue& arr) {
    List out;
    out.reserve(arr.Size());
    for (auto& e : arr.GetArray()) out.push_back(JsonValue(std::move(e)));
    return out;
  }
  List CopyOfArray(const JsonValue& arr) {
    List out;
    for (const auto& e : arr.GetArray()) out.push_back(Copy(e));
    return out;
  }
  JsonValue MakeArray(List&& l) {
    JsonValue arr(rapidjson::kArrayType);
    arr.Reserve(static_cast<rapidjson::SizeType>(l.size()), a_);
    for (auto& e : l) arr.PushBack(e, a_);
    return arr;
  }

  // ---------------------------------------------------------------- diff

  Status DiffMaps(const JsonValue& original, const JsonValue& modified,
                  const PatchSchema& schema, DiffOptions o, JsonValue* patch) {
    patch->SetObject();
    List retain_keys;
    for (const auto& m : modified.GetObject()) {
      std::string_view key = StringOf(m.name);
      const JsonValue& mod = m.value;
      if (o.build_retain_keys_directive && !mod.IsNull()) {
        retain_keys.push_back(MakeString(key, a_));
      }
      const JsonValue* orig = FindMember(original, key);
      if (orig == nullptr) {
        if (!o.ignore_changes_and_additions) {
          SetMember(*patch, key, Copy(mod), a_);
        }
        continue;
      }
      if (key == kDirectiveMarker) {
        if (!orig->IsString() || !mod.IsString()) {
          return InvalidArgumentError("invalid value for special key: $patch");
        }
        if (!JsonEqual(*orig, mod)) SetMember(*patch, key, Copy(mod), a_);
        continue;
      }
      if (KindOf(*orig) != KindOf(mod)) {
        if (!o.ignore_changes_and_additions) {
          SetMember(*patch, key, Copy(mod), a_);
        }
        continue;
      }
      if (mod.IsObject()) {
        RETURN_IF_ERROR(HandleMapDiff(key, *orig, mod, patch, schema, o));
      } else if (mod.IsArray()) {
        RETURN_IF_ERROR(HandleSliceDiff(key, *orig, mod, patch, schema, o));
      } else {
        ReplacePatchFieldIfNotEqual(key, *orig, mod, patch, o);
      }
    }
    // updatePatchIfMissing
    if (!o.ignore_deletions) {
      for (const auto& m : original.GetObject()) {
        if (FindMember(modified, StringOf(m.name)) == nullptr) {
          SetMember(*patch, StringOf(m.name), JsonValue(), a_);
        }
      }
    }
    if (!retain_keys.empty() && (patch->MemberCount() > 0 ||
                                 HasAdditionalNewField(original, modified))) {
      SortScalars(retain_keys);
      SetMember(*patch, kRetainKeysDirective, MakeArray(std::move(retain_keys)),
                a_);
    }
    return Status::Ok();
  }

  static bool HasAdditionalNewField(const JsonValue& original,
                                    const JsonValue& modified) {
    for (const auto& m : original.GetObject()) {
      if (m.value.IsNull()) continue;
      if (FindMember(modified, StringOf(m.name)) == nullptr) return true;
    }
    return false;
  }

  Status HandleMapDiff(std::string_view key, const JsonValue& orig,
                       const JsonValue& mod, JsonValue* patch,
                       const PatchSchema& schema, DiffOptions o) {
    PatchSchema::Field f = schema.Lookup(key);
    bool retain = false;
    std::string strategy;
    RETURN_IF_ERROR(
        ExtractRetainKeysPatchStrategy(f.meta.strategies, &retain, &strategy));
    o.build_retain_keys_directive = retain;
    if (strategy == kReplaceDirective) {
      if (!o.ignore_changes_and_additions)
        SetMember(*patch, key, Copy(mod), a_);
      return Status::Ok();
    }
    JsonValue sub;
    RETURN_IF_ERROR(DiffMaps(orig, mod, f.schema, o, &sub));
    if (sub.MemberCount() > 0) SetMember(*patch, key, sub, a_);
    return Status::Ok();
  }

  Status HandleSliceDiff(std::string_view key, const JsonValue& orig,
                         const JsonValue& mod, JsonValue* patch,
                         const PatchSchema& schema, DiffOptions o) {
    PatchSchema::Field f = schema.Lookup(key);
    bool retain = false;
    std::string strategy;
    RETURN_IF_ERROR(
        ExtractRetainKeysPatchStrategy(f.meta.strategies, &retain, &strategy));
    if (strategy != kMergeDirective) {
      ReplacePatchFieldIfNotEqual(key, orig, mod, patch, o);
      return Status::Ok();
    }
    o.build_retain_keys_directive = retain;
    List add, del, order;
    RETURN_IF_ERROR(DiffLists(orig, mod, f.schema, f.meta.merge_key, o, &add,
                              &del, &order));
    if (!add.empty()) SetMember(*patch, key, MakeArray(std::move(add)), a_);
    if (!del.empty()) {
      SetMember(
          *patch,
          std::string(kDeleteFromPrimitiveListPrefix) + "/" + std::string(key),
          MakeArray(std::move(del)), a_);
    }
    if (!order.empty()) {
      SetMember(*patch,
                std::string(kSetElementOrderPrefix) + "/" + std::string(key),
                MakeArray(std::move(order)), a_);
    }
    return Status::Ok();
  }

  void ReplacePatchFieldIfNotEqual(std::string_view key, const JsonValue& orig,
                                   const JsonValue& mod, JsonValue* patch,
                                   const DiffOptions& o) {
    if (o.ignore_changes_and_additions) return;
    if (JsonEqual(orig, mod)) return;
    SetMember(*patch, key, Copy(mod), a_);
  }

  // sliceElementType: the common kind of all elements of the lists.
  static Status SliceElementKind(std::initializer_list<const List*> lists,
                                 JsonKind* kind) {
    std::optional<JsonKind> prev;
    for (const List* l : lists) {
      for (const auto& v : *l) {
        JsonKind k = KindOf(v);
        if (!prev) {
          prev = k;
          if (k == JsonKind::kArray) return ErrNoListOfLists();
        } else if (*prev != k) {
          std::string all;
          for (const List* x : lists) {
            all += (all.empty() ? "" : " ") + GoListString(*x);
          }
          return InvalidArgumentError(
              "list element types are not identical: [" + all + "]");
        }
      }
    }
    if (!prev) {
      return InvalidArgumentError("no elements in any of the given slices");
    }
    *kind = *prev;
    return Status::Ok();
  }

  Status DiffLists(const JsonValue& original, const JsonValue& modified,
                   const PatchSchema& schema, const std::string& merge_key,
                   const DiffOptions& o, List* patch_list, List* delete_list,
                   List* set_order_list) {
    if (original.Empty()) {
      if (modified.Empty() || o.ignore_changes_and_additions) {
        return Status::Ok();
      }
      *patch_list = CopyOfArray(modified);
      return Status::Ok();
    }
    List orig = CopyOfArray(original);
    List mod = CopyOfArray(modified);
    JsonKind kind;
    RETURN_IF_ERROR(SliceElementKind({&orig, &mod}, &kind));
    if (kind == JsonKind::kObject) {
      List del;
      RETURN_IF_ERROR(
          DiffListsOfMaps(orig, mod, schema, merge_key, o, patch_list, &del));
      RETURN_IF_ERROR(NormalizeSliceOrder(*patch_list, mod, merge_key, kind));
      bool order_same = false;
      RETURN_IF_ERROR(IsOrderSame(orig, mod, merge_key, &order_same));
      for (auto& d : del) patch_list->push_back(std::move(d));
      bool non_empty = !patch_list->empty();
      if (o.set_element_order &&
          ((!o.ignore_changes_and_additions && (non_empty || !order_same)) ||
           (!o.ignore_deletions && non_empty))) {
        for (const auto& v : mod) {
          JsonValue e(rapidjson::kObjectType);
          const JsonValue* kv = FindMember(v, merge_key);
          e.AddMember(MakeString(merge_key, a_), kv ? Copy(*kv) : JsonValue(),
                      a_);
          set_order_list->push_back(std::move(e));
        }
      }
      return Status::Ok();
    }
    RETURN_IF_ERROR(DiffListsOfScalars(orig, mod, o, patch_list, delete_list));
    RETURN_IF_ERROR(NormalizeSliceOrder(*patch_list, mod, merge_key, kind));
    if (o.set_element_order &&
        ((!o.ignore_deletions && !delete_list->empty()) ||
         (!o.ignore_changes_and_additions && !JsonEqual(original, modified)))) {
      *set_order_list = std::move(mod);
    }
    return Status::Ok();
  }

  static Status IsOrderSame(const List& original, const List& modified,
                            const std::string& merge_key, bool* same) {
    *same = false;
    if (original.size() != modified.size()) return Status::Ok();
    for (size_t i = 0; i < modified.size(); ++i) {
      bool eq = false;
      RETURN_IF_ERROR(
          MergeKeyValueEqual(original[i], modified[i], merge_key, &eq));
      if (!eq) return Status::Ok();
    }
    *same = true;
    return Status::Ok();
  }

  static Status MergeKeyValueEqual(const JsonValue& left,
                                   const JsonValue& right,
                                   const std::string& merge_key, bool* eq) {
    if (merge_key.empty()) {
      *eq = GoInterfaceEqual(&left, &right);
      return Status::Ok();
    }
    if (!left.IsObject()) return ErrBadArgType(kMapType, left);
    if (!right.IsObject()) return ErrBadArgType(kMapType, right);
    const JsonValue* l = FindMember(left, merge_key);
    if (l == nullptr) return ErrNoMergeKey(left, merge_key);
    const JsonValue* r = FindMember(right, merge_key);
    if (r == nullptr) return ErrNoMergeKey(right, merge_key);
    *eq = GoInterfaceEqual(l, r);
    return Status::Ok();
  }

  // sortScalars: by Go %v rendering.
  static void SortScalars(List& l) {
    std::stable_sort(l.begin(), l.end(),
                     [](const JsonValue& a, const JsonValue& b) {
                       return GoString(a) < GoString(b);
                     });
  }

  // deduplicateScalars, including its swap-with-last reordering.
  static void DeduplicateScalars(List& s) {
    int length = static_cast<int>(s.size()) - 1;
    for (int i = 0; i < length; ++i) {
      for (int j = i + 1; j <= length; ++j) {
        if (GoInterfaceEqual(&s[i], &s[j])) {
          // Moves the last element into the hole (Go's s[j] = s[length]);
          // RapidJSON forbids assigning a value to itself.
          if (j != length) s[j] = s[length];
          s.pop_back();
          --length;
          --j;
        }
      }
    }
  }

  Status DiffListsOfScalars(const List& original, const List& modified,
                            const DiffOptions& o, List* add, List* del) {
    List os = CopyList(original), ms = CopyList(modified);
    SortScalars(os);
    SortScalars(ms);
    size_t oi = 0, mi = 0;
    while (oi < os.size() || mi < ms.size()) {
      bool oin = oi < os.size(), min = mi < ms.size();
      std::string ostr = oin ? GoString(os[oi]) : "";
      std::string mstr = min ? GoString(ms[mi]) : "";
      if (oin && min && ostr == mstr) {
        ++oi;
        ++mi;
      } else if (!oin || (oin && min && ostr > mstr)) {
        if (!o.ignore_changes_and_additions) add->push_back(Copy(ms[mi]));
        ++mi;
      } else {
        if (!o.ignore_deletions) del->push_back(Copy(os[oi]));
        ++oi;
      }
    }
    DeduplicateScalars(*del);
    return Status::Ok();
  }

  // sortMergeListsByNameArray(s, schema, mergeKey, recurse=false).
  static void SortMergeList(List& s, const std::string& merge_key) {
    if (s.empty()) return;
    if (!s[0].IsObject()) {
      DeduplicateScalars(s);
      SortScalars(s);
      return;
    }
    auto key_of = [&](const JsonValue& m) {
      const JsonValue* v = FindMember(m, merge_key);
      return v ? GoString(*v) : std::string("<nil>");
    };
    std::stable_sort(s.begin(), s.end(),
                     [&](const JsonValue& a, const JsonValue& b) {
                       return key_of(a) < key_of(b);
                     });
  }

  Status DiffListsOfMaps(const List& original, const List& modified,
                         const PatchSchema& schema,
                         const std::string& merge_key, const DiffOptions& o,
                         List* patch, List* deletions) {
    List os = CopyList(original), ms = CopyList(modified);
    SortMergeList(os, merge_key);
    SortMergeList(ms, merge_key);
    size_t oi = 0, mi = 0;
    while (oi < os.size() || mi < ms.size()) {
      bool oin = oi < os.size(), min = mi < ms.size();
      std::string ostr, mstr;
      const JsonValue* okv = nullptr;
      const JsonValue* mkv = nullptr;
      if (oin) {
        if (!os[oi].IsObject()) return ErrBadArgType(kMapType, os[oi]);
        okv = FindMember(os[oi], merge_key);
        if (okv == nullptr) return ErrNoMergeKey(os[oi], merge_key);
        ostr = GoString(*okv);
      }
      if (min) {
        if (!ms[mi].IsObject()) return ErrBadArgType(kMapType, ms[mi]);
        mkv = FindMember(ms[mi], merge_key);
        if (mkv == nullptr) return ErrNoMergeKey(ms[mi], merge_key);
        mstr = GoString(*mkv);
      }
      if (oin && min && ostr == mstr) {
        JsonValue pv;
        RETURN_IF_ERROR(DiffMaps(os[oi], ms[mi], schema, o, &pv));
        if (pv.MemberCount() > 0) {
          SetMember(pv, merge_key, Copy(*mkv), a_);
          patch->push_back(std::move(pv));
        }
        ++oi;
        ++mi;
      } else if (!oin || (oin && min && ostr > mstr)) {
        if (!o.ignore_changes_and_additions) patch->push_back(Copy(ms[mi]));
        ++mi;
      } else {
        if (!o.ignore_deletions) {
          JsonValue d(rapidjson::kObjectType);
          d.AddMember(MakeString(merge_key, a_), Copy(*okv), a_);
          d.AddMember(MakeString(kDirectiveMarker, a_),
                      MakeString(kDeleteDirective, a_), a_);
          deletions->push_back(std::move(d));
        }
        ++oi;
      }
    }
    return Status::Ok();
  }

  // index(): position of `v` in `l` by merge key (maps) or value.
  static int Index(const List& l, const JsonValue& v,
                   const std::string& merge_key, JsonKind kind) {
    auto val = [&](const JsonValue& item) -> const JsonValue* {
      if (kind == JsonKind::kObject) {
        if (!item.IsObject()) return nullptr;
        return FindMember(item, merge_key);
      }
      return &item;
    };
    const JsonValue* want = val(v);
    for (size_t i = 0; i < l.size(); ++i) {
      if (GoInterfaceEqual(want, val(l[i]))) return static_cast<int>(i);
    }
    return -1;
  }

  static Status ValidateMergeKeyInLists(const std::string& merge_key,
                                        std::initializer_list<const List*> ls) {
    for (const List* l : ls) {
      for (const auto& item : *l) {
        if (!item.IsObject()) return ErrBadArgType(kMapType, item);
        if (FindMember(item, merge_key) == nullptr) {
          return ErrNoMergeKey(item, merge_key);
        }
      }
    }
    return Status::Ok();
  }

  static Status ExtractToDeleteItems(List& l, List* to_delete) {
    List keep;
    for (auto& v : l) {
      if (!v.IsObject()) return ErrBadArgType(kMapType, v);
      const JsonValue* d = FindMember(v, kDirectiveMarker);
      if (d != nullptr && IsDirective(*d, kDeleteDirective)) {
        to_delete->push_back(std::move(v));
      } else {
        keep.push_back(std::move(v));
      }
    }
    l = std::move(keep);
    return Status::Ok();
  }

  static Status NormalizeSliceOrder(List& to_sort, const List& order,
                                    const std::string& merge_key,
                                    JsonKind kind) {
    List to_delete;
    if (kind == JsonKind::kObject) {
      RETURN_IF_ERROR(ValidateMergeKeyInLists(merge_key, {&to_sort, &order}));
      RETURN_IF_ERROR(ExtractToDeleteItems(to_sort, &to_delete));
    }
    GoStableSorter(to_sort, [&](const JsonValue& a, const JsonValue& b) {
      int ia = Index(order, a, merge_key, kind);
      if (ia >= 0) {
        int ib = Index(order, b, merge_key, kind);
        if (ib >= 0) return ia < ib;
      }
      return true;
    }).Sort();
    for (auto& d : to_delete) to_sort.push_back(std::move(d));
    return Status::Ok();
  }

  static List MergeSortedSlice(List& left, List& right,
                               const List& server_order,
                               const std::string& merge_key, JsonKind kind) {
    List s;
    size_t i = 0, j = 0, size = left.size() + right.size();
    for (size_t k = 0; k < size; ++k) {
      if (i >= left.size() && j < right.size()) {
        s.push_back(std::move(right[j++]));
      } else if (j >= right.size() && i < left.size()) {
        s.push_back(std::move(left[i++]));
      } else {
        int li = Index(server_order, left[i], merge_key, kind);
        int ri = Index(server_order, right[j], merge_key, kind);
        if (li >= 0 && ri >= 0 && li < ri) {
          s.push_back(std::move(left[i++]));
        } else {
          s.push_back(std::move(right[j++]));
        }
      }
    }
    return s;
  }

  static Status NormalizeElementOrder(List patch, List server_only,
                                      const List& patch_order,
                                      const List& server_order,
                                      const std::string& merge_key,
                                      JsonKind kind, List* out) {
    RETURN_IF_ERROR(NormalizeSliceOrder(patch, patch_order, merge_key, kind));
    RETURN_IF_ERROR(
        NormalizeSliceOrder(server_only, server_order, merge_key, kind));
    *out = MergeSortedSlice(server_only, patch, server_order, merge_key, kind);
    return Status::Ok();
  }

  // --------------------------------------------------------------- merge

  // mergeMap: merges `patch` into `original` (both objects; patch consumed).
  Status MergeMap(JsonValue& original, JsonValue& patch,
                  const PatchSchema& schema, const MergeOptions& mo) {
    if (const JsonValue* d = FindMember(patch, kDirectiveMarker)) {
      if (IsDirective(*d, kReplaceDirective)) {
        RemoveMember(patch, kDirectiveMarker);
        original = patch;
        return Status::Ok();
      }
      if (IsDirective(*d, kDeleteDirective)) {
        original.SetObject();
        return Status::Ok();
      }
      return ErrBadPatchType(*d, patch);
    }
    if (original.IsNull()) original.SetObject();
    RETURN_IF_ERROR(ApplyRetainKeysDirective(original, patch, mo));
    RETURN_IF_ERROR(MergePatchIntoOriginal(original, patch, schema, mo));

    IndexedMembers members(original, patch.MemberCount(), a_);
    for (auto& m : patch.GetObject()) {
      std::string k(StringOf(m.name));
      JsonValue& pv = m.value;
      bool is_delete_list = false;
      if (k.starts_with(kDeleteFromPrimitiveListPrefix)) {
        if (!mo.merge_parallel_list) {
          members.Set(k, pv);
          continue;
        }
        size_t slash = k.find('/');
        if (slash == std::string::npos ||
            k.substr(0, slash) != kDeleteFromPrimitiveListPrefix) {
          return ErrBadPatchFormatForPrimitiveList();
        }
        k = k.substr(slash + 1);
        is_delete_list = true;
      }
      if (pv.IsNull()) {
        members.Remove(k);
        if (mo.ignore_unmatched_nulls) continue;
      }
      JsonValue* ov = members.Find(k);
      if (ov == nullptr || KindOf(*ov) != KindOf(pv)) {
        if (!is_delete_list) {
          if (mo.ignore_unmatched_nulls) DiscardNullValuesFromPatch(pv);
          if (RemoveDirectives(pv)) {
            members.Set(k, pv);
          } else {
            members.Remove(k);
          }
        }
        continue;
      }
      if (ov->IsObject()) {
        PatchSchema::Field f = schema.Lookup(k);
        bool retain;
        std::string strategy;
        RETURN_IF_ERROR(ExtractRetainKeysPatchStrategy(f.meta.strategies,
                                                       &retain, &strategy));
        if (strategy != kReplaceDirective) {
          RETURN_IF_ERROR(MergeMap(*ov, pv, f.schema, mo));
        } else {
          *ov = pv;
        }
      } else if (ov->IsArray()) {
        PatchSchema::Field f = schema.Lookup(k);
        bool retain;
        std::string strategy;
        RETURN_IF_ERROR(ExtractRetainKeysPatchStrategy(f.meta.strategies,
                                                       &retain, &strategy));
        JsonValue merged;
        RETURN_IF_ERROR(MergeSliceHandler(*ov, pv, f.schema, strategy,
                                          f.meta.merge_key, is_delete_list, mo,
                                          &merged));
        *ov = merged;
      } else {
        if (RemoveDirectives(pv)) {
          *ov = pv;
        } else {
          members.Remove(k);
        }
      }
    }
    members.Compact();
    return Status::Ok();
  }

  static void DiscardNullValuesFromPatch(JsonValue& v) {
    if (v.IsObject()) {
      for (auto it = v.MemberBegin(); it != v.MemberEnd();) {
        if (it->value.IsNull()) {
          it = v.EraseMember(it);
        } else {
          DiscardNullValuesFromPatch(it->value);
          ++it;
        }
      }
    } else if (v.IsArray()) {
      for (auto& e : v.GetArray()) DiscardNullValuesFromPatch(e);
    }
  }

  // removeDirectives: false when `v` itself is a directive object (drop it).
  static bool RemoveDirectives(JsonValue& v) {
    if (v.IsObject()) {
      if (FindMember(v, kDirectiveMarker) != nullptr) return false;
      for (auto it = v.MemberBegin(); it != v.MemberEnd();) {
        if (!RemoveDirectives(it->value)) {
          it = v.EraseMember(it);
        } else {
          ++it;
        }
      }
      return true;
    }
    if (v.IsArray()) {
      for (auto it = v.Begin(); it != v.End();) {
        if (!RemoveDirectives(*it)) {
          it = v.Erase(it);
        } else {
          ++it;
        }
      }
    }
    return true;
  }

  Status ApplyRetainKeysDirective(JsonValue& original, JsonValue& patch,
                                  const MergeOptions& mo) {
    JsonValue* in_patch = FindMember(patch, kRetainKeysDirective);
    if (in_patch == nullptr) return Status::Ok();
    JsonValue retain(std::move(*in_patch));
    RemoveMember(patch, kRetainKeysDirective);
    if (!mo.merge_parallel_list) {
      if (const JsonValue* in_orig =
              FindMember(original, kRetainKeysDirective)) {
        if (!JsonEqual(*in_orig, retain)) {
          return InvalidArgumentError(
              GoString(*in_orig) + " and " + GoString(retain) +
              " are not deep equal: this may happen when calculating the "
              "3-way diff patch");
        }
      } else {
        SetMember(original, kRetainKeysDirective, retain, a_);
      }
      return Status::Ok();
    }
    if (!retain.IsArray()) return ErrBadPatchFormatForRetainKeys();
    std::set<std::string> keep;
    for (const auto& v : retain.GetArray()) {
      if (v.IsString()) keep.insert(std::string(StringOf(v)));
    }
    for (const auto& m : patch.GetObject()) {
      std::string_view k = StringOf(m.name);
      if (m.value.IsNull() || k.starts_with(kDeleteFromPrimitiveListPrefix) ||
          k.starts_with(kSetElementOrderPrefix)) {
        continue;
      }
      if (!keep.count(std::string(k))) return ErrBadPatchFormatForRetainKeys();
    }
    for (auto it = original.MemberBegin(); it != original.MemberEnd();) {
      if (!keep.count(std::string(StringOf(it->name)))) {
        it = original.EraseMember(it);
      } else {
        ++it;
      }
    }
    return Status::Ok();
  }

  static Status ValidatePatchWithSetOrderList(const List& patch_list,
                                              const List& set_order,
                                              const std::string& merge_key) {
    if (set_order.empty() || patch_list.empty()) return Status::Ok();
    std::vector<const JsonValue*> non_delete;
    for (const auto& v : patch_list) {
      if (!merge_key.empty()) {
        if (!v.IsObject()) return ErrBadArgType(kMapType, v);
        const JsonValue* d = FindMember(v, kDirectiveMarker);
        if (d != nullptr && IsDirective(*d, kDeleteDirective)) continue;
      }
      non_delete.push_back(&v);
    }
    size_t pi = 0, si = 0;
    while (pi < non_delete.size() && si < set_order.size()) {
      if (non_delete[pi]->IsObject() &&
          FindMember(*non_delete[pi], kDirectiveMarker) != nullptr) {
        ++pi;
        continue;
      }
      bool eq = false;
      RETURN_IF_ERROR(
          MergeKeyValueEqual(*non_delete[pi], set_order[si], merge_key, &eq));
      if (eq) ++pi;
      ++si;
    }
    if (pi < non_delete.size() && si >= set_order.size()) {
      return InvalidArgumentError("The order in patch list:\n" +
                                  GoListString(patch_list) +
                                  "\n doesn't match $setElementOrder list:\n" +
                                  GoListString(set_order) + "\n");
    }
    return Status::Ok();
  }

  static void PartitionPrimitives(List& merged, const List& by, List* in,
                                  List* server_only) {
    for (auto& v : merged) {
      bool found = false;
      for (const auto& b : by) {
        if (GoInterfaceEqual(&v, &b)) {
          found = true;
          break;
        }
      }
      (found ? in : server_only)->push_back(std::move(v));
    }
  }

  static Status PartitionMaps(List& merged, const List& by,
                              const std::string& merge_key, List* in,
                              List* server_only) {
    for (auto& v : merged) {
      if (!v.IsObject()) return ErrBadArgType(kMapType, v);
      const JsonValue* kv = FindMember(v, merge_key);
      if (kv == nullptr) return ErrNoMergeKey(v, merge_key);
      bool found = false;
      for (size_t i = 0; i < by.size(); ++i) {
        if (!by[i].IsObject()) {
          return InvalidArgumentError("value for key " + std::to_string(i) +
                                      " is not a map");
        }
        const JsonValue* bv = FindMember(by[i], merge_key);
        if (bv != nullptr && GoInterfaceEqual(bv, kv)) {
          found = true;
          break;
        }
      }
      (found ? in : server_only)->push_back(std::move(v));
    }
    return Status::Ok();
  }

  Status MergePatchIntoOriginal(JsonValue& original, JsonValue& patch,
                                const PatchSchema& schema,
                                const MergeOptions& mo) {
    std::vector<std::string> keys;
    for (const auto& m : patch.GetObject()) {
      if (StringOf(m.name).starts_with(kSetElementOrderPrefix)) {
        keys.emplace_back(StringOf(m.name));
      }
    }
    for (const std::string& key : keys) {
      JsonValue order_v(std::move(*FindMember(patch, key)));
      RemoveMember(patch, key);
      if (!mo.merge_parallel_list) {
        if (const JsonValue* in_orig = FindMember(original, key)) {
          if (!JsonEqual(*in_orig, order_v)) {
            return ErrBadPatchFormatForSetElementOrderList();
          }
        } else {
          SetMember(original, key, Copy(order_v), a_);
        }
      }
      if (!order_v.IsArray()) return ErrBadArgType(kSliceType, order_v);
      List set_order = TakeList(order_v);
      size_t slash = key.find('/');
      if (slash == std::string::npos ||
          key.substr(0, slash) != kSetElementOrderPrefix) {
        return ErrBadPatchFormatForSetElementOrderList();
      }
      std::string original_key = key.substr(slash + 1);
      JsonValue* orig_list = FindMember(original, original_key);
      JsonValue* patch_list = FindMember(patch, original_key);
      if (orig_list != nullptr && !orig_list->IsArray()) {
        return ErrBadArgType(kSliceType, *orig_list);
      }
      if (patch_list != nullptr && !patch_list->IsArray()) {
        return ErrBadArgType(kSliceType, *patch_list);
      }
      PatchSchema::Field f = schema.Lookup(original_key);
      bool retain;
      std::string strategy;
      RETURN_IF_ERROR(ExtractRetainKeysPatchStrategy(f.meta.strategies, &retain,
                                                     &strategy));
      const std::string& merge_key = f.meta.merge_key;
      List orig_copy = orig_list ? CopyOfArray(*orig_list) : List();
      List patch_copy = patch_list ? CopyOfArray(*patch_list) : List();
      RETURN_IF_ERROR(
          ValidatePatchWithSetOrderList(patch_copy, set_order, merge_key));

      List merged;
      if (orig_list != nullptr && patch_list == nullptr) {
        merged = CopyList(orig_copy);
      } else if (orig_list == nullptr && patch_list != nullptr) {
        JsonValue v = Copy(*patch_list);
        if (!RemoveDirectives(v)) continue;
        merged = TakeList(v);
      } else if (orig_list != nullptr && patch_list != nullptr) {
        JsonValue out;
        RETURN_IF_ERROR(MergeSliceHandler(*orig_list, *patch_list, f.schema,
                                          strategy, merge_key, false, mo,
                                          &out));
        merged = TakeList(out);
      } else {
        continue;
      }
      List in, server_only;
      if (merge_key.empty()) {
        PartitionPrimitives(merged, set_order, &in, &server_only);
      } else {
        RETURN_IF_ERROR(
            PartitionMaps(merged, set_order, merge_key, &in, &server_only));
      }
      JsonKind kind;
      RETURN_IF_ERROR(SliceElementKind({&orig_copy, &patch_copy}, &kind));
      List server_order = CopyList(orig_copy);
      if (orig_list != nullptr && patch_list != nullptr &&
          kind == JsonKind::kObject && !merge_key.empty()) {
        server_order = AliasedServerOrder(orig_copy, patch_copy, merge_key);
      }
      List both;
      RETURN_IF_ERROR(NormalizeElementOrder(
          std::move(in), std::move(server_only), set_order, server_order,
          merge_key, kind, &both));
      SetMember(original, original_key, MakeArray(std::move(both)), a_);
      RemoveMember(patch, original_key);
    }
    return Status::Ok();
  }

  // Upstream orders the result of a "$setElementOrder" merge against the
  // original list *after* mergeSlice has edited that list's Go backing array
  // in place: deleteMatchingEntries shifts later elements left (leaving a
  // stale copy of the last one), and appending a new element writes into the
  // freed slot. The server order it reads is therefore the first len(original)
  // slots of that array. We replay those writes to get the same order:
  //   original [1,2,4], patch [3,{1 $patch:delete}]
  //   delete 1 -> [2,4,4]; append 3 -> [2,4,3]  (upstream's server order)
  List AliasedServerOrder(const List& original, const List& patch,
                          const std::string& merge_key) {
    List backing = CopyList(original);
    size_t n = backing.size(), len = n;
    auto key_matches = [&](const JsonValue& e, const JsonValue* want) {
      const JsonValue* k = e.IsObject() ? FindMember(e, merge_key) : nullptr;
      return k != nullptr && GoInterfaceEqual(k, want);
    };
    bool replace = false;
    for (const auto& v : patch) {
      const JsonValue* d =
          v.IsObject() ? FindMember(v, kDirectiveMarker) : nullptr;
      if (d == nullptr) continue;
      if (IsDirective(*d, kReplaceDirective)) replace = true;
      if (!IsDirective(*d, kDeleteDirective)) continue;
      const JsonValue* want = FindMember(v, merge_key);
      for (size_t i = 0; i < len;) {
        if (!key_matches(backing[i], want)) {
          ++i;
          continue;
        }
        for (size_t j = i; j + 1 < len; ++j) backing[j] = Copy(backing[j + 1]);
        --len;
      }
    }
    if (replace) return backing;
    for (const auto& v : patch) {
      if (v.IsObject() && FindMember(v, kDirectiveMarker) != nullptr) continue;
      const JsonValue* want = v.IsObject() ? FindMember(v, merge_key) : nullptr;
      bool found = false;
      for (size_t i = 0; i < len && i < n; ++i) {
        if (key_matches(backing[i], want)) found = true;
      }
      if (found) continue;
      if (len < n) backing[len] = Copy(v);
      ++len;
    }
    return backing;
  }

  // mergeSliceHandler: merged list written to *out. `original` and `patch`
  // are consumed.
  Status MergeSliceHandler(JsonValue& original, JsonValue& patch,
                           const PatchSchema& schema,
                           const std::string& strategy,
                           const std::string& merge_key, bool is_delete_list,
                           const MergeOptions& mo, JsonValue* out) {
    if (!original.IsArray()) return ErrBadArgType(kSliceType, original);
    if (!patch.IsArray()) return ErrBadArgType(kSliceType, patch);
    if (strategy == kMergeDirective || is_delete_list) {
      List o = TakeList(original), p = TakeList(patch);
      List merged;
      RETURN_IF_ERROR(MergeSlice(std::move(o), std::move(p), schema, merge_key,
                                 mo, is_delete_list, &merged));
      *out = MakeArray(std::move(merged));
      return Status::Ok();
    }
    *out = patch;
    return Status::Ok();
  }

  Status MergeSlice(List original, List patch, const PatchSchema& schema,
                    const std::string& merge_key, const MergeOptions& mo,
                    bool is_delete_list, List* out) {
    if (original.empty() && patch.empty()) {
      *out = std::move(original);
      return Status::Ok();
    }
    JsonKind kind;
    RETURN_IF_ERROR(SliceElementKind({&original, &patch}, &kind));
    List merged;
    if (kind != JsonKind::kObject) {
      if (mo.merge_parallel_list && is_delete_list) {
        for (auto& v : original) {
          bool drop = false;
          for (const auto& d : patch) {
            if (GoInterfaceEqual(&v, &d)) drop = true;
          }
          if (!drop) out->push_back(std::move(v));
        }
        return Status::Ok();
      }
      merged = CopyList(original);
      for (const auto& v : patch) merged.push_back(Copy(v));
      DeduplicateScalars(merged);
    } else {
      if (merge_key.empty()) {
        return InvalidArgumentError(
            "cannot merge lists without merge key for " + schema.Name());
      }
      RETURN_IF_ERROR(
          MergeSliceWithSpecialElements(original, patch, merge_key));
      RETURN_IF_ERROR(MergeSliceWithoutSpecialElements(
          CopyList(original), CopyList(patch), merge_key, schema, mo, &merged));
    }
    List in, server_only;
    if (merge_key.empty()) {
      PartitionPrimitives(merged, patch, &in, &server_only);
    } else {
      RETURN_IF_ERROR(
          PartitionMaps(merged, patch, merge_key, &in, &server_only));
    }
    return NormalizeElementOrder(std::move(in), std::move(server_only), patch,
                                 original, merge_key, kind, out);
  }

  // mergeSliceWithSpecialElements: applies "$patch" elements. On replace,
  // original becomes the patch's plain elements and patch becomes empty.
  Status MergeSliceWithSpecialElements(List& original, List& patch,
                                       const std::string& merge_key) {
    List plain;
    bool replace = false;
    for (auto& v : patch) {
      const JsonValue* d = FindMember(v, kDirectiveMarker);
      if (d == nullptr) {
        plain.push_back(std::move(v));
        continue;
      }
      if (IsDirective(*d, kDeleteDirective)) {
        const JsonValue* mv = FindMember(v, merge_key);
        if (mv == nullptr) return ErrNoMergeKey(v, merge_key);
        for (size_t i = 0; i < original.size();) {
          if (!original[i].IsObject()) {
            return InvalidArgumentError("value for key " + std::to_string(i) +
                                        " is not a map");
          }
          const JsonValue* ov = FindMember(original[i], merge_key);
          if (ov != nullptr && GoInterfaceEqual(ov, mv)) {
            original.erase(original.begin() + i);
          } else {
            ++i;
          }
        }
      } else if (IsDirective(*d, kReplaceDirective)) {
        replace = true;
      } else if (IsDirective(*d, kMergeDirective)) {
        return InvalidArgumentError(
            "merging lists cannot yet be specified in the patch");
      } else {
        return ErrBadPatchType(*d, v);
      }
    }
    if (replace) {
      original = std::move(plain);
      patch.clear();
      return Status::Ok();
    }
    patch = std::move(plain);
    return Status::Ok();
  }

  Status MergeSliceWithoutSpecialElements(List original, List patch,
                                          const std::string& merge_key,
                                          const PatchSchema& schema,
                                          const MergeOptions& mo, List* out) {
    for (auto& v : patch) {
      const JsonValue* mv = FindMember(v, merge_key);
      if (mv == nullptr) return ErrNoMergeKey(v, merge_key);
      int found = -1;
      for (size_t i = 0; i < original.size(); ++i) {
        if (!original[i].IsObject()) {
          return InvalidArgumentError("value for key " + std::to_string(i) +
                                      " is not a map");
        }
        const JsonValue* ov = FindMember(original[i], merge_key);
        if (ov != nullptr && GoInterfaceEqual(ov, mv)) {
          found = static_cast<int>(i);
          break;
        }
      }
      if (found >= 0) {
        RETURN_IF_ERROR(MergeMap(original[found], v, schema, mo));
      } else {
        original.push_back(std::move(v));
      }
    }
    *out = std::move(original);
    return Status::Ok();
  }

  // ------------------------------------------------------------ conflicts

  StatusOr<bool> MergingMapFieldsHaveConflicts(const JsonValue& left,
                                               const JsonValue& right,
                                               const PatchSchema& schema,
                                               const std::string& strategy,
                                               const std::string& merge_key) {
    switch (KindOf(left)) {
      case JsonKind::kObject: {
        if (!right.IsObject()) return true;
        const JsonValue* lm = FindMember(left, kDirectiveMarker);
        const JsonValue* rm = FindMember(right, kDirectiveMarker);
        if (lm != nullptr || rm != nullptr) {
          if ((lm == nullptr) != (rm == nullptr)) return true;
          if (!GoInterfaceEqual(lm, rm)) return true;
        }
        if (strategy == kReplaceDirective) return false;
        return MapsHaveConflicts(left, right, schema);
      }
      case JsonKind::kArray:
        if (!right.IsArray()) return true;
        return SlicesHaveConflicts(left, right, schema, strategy, merge_key);
      default:
        return !JsonEqual(left, right);
    }
  }

  StatusOr<bool> MapsHaveConflicts(const JsonValue& left,
                                   const JsonValue& right,
                                   const PatchSchema& schema) {
    for (const auto& m : left.GetObject()) {
      std::string_view key = StringOf(m.name);
      if (key == kDirectiveMarker || key == kRetainKeysDirective) continue;
      const JsonValue* rv = FindMember(right, key);
      if (rv == nullptr) continue;
      PatchSchema sub;
      std::string strategy, merge_key;
      if (m.value.IsArray() || m.value.IsObject()) {
        PatchSchema::Field f = schema.Lookup(key);
        bool retain;
        RETURN_IF_ERROR(ExtractRetainKeysPatchStrategy(f.meta.strategies,
                                                       &retain, &strategy));
        sub = f.schema;
        merge_key = f.meta.merge_key;
      }
      ASSIGN_OR_RETURN(bool c, MergingMapFieldsHaveConflicts(
                                   m.value, *rv, sub, strategy, merge_key));
      if (c) return true;
    }
    return false;
  }

  StatusOr<bool> SlicesHaveConflicts(const JsonValue& left,
                                     const JsonValue& right,
                                     const PatchSchema& schema,
                                     const std::string& strategy,
                                     const std::string& merge_key) {
    List l = CopyOfArray(left), r = CopyOfArray(right);
    JsonKind kind;
    Status st = SliceElementKind({&l, &r}, &kind);
    if (!st.ok()) return st;
    if (strategy == kMergeDirective) {
      if (kind != JsonKind::kObject) return false;
      // sliceOfMapsToMapOfMaps, keyed by fmt "%s" of the merge key value.
      auto to_map =
          [&](const List& s,
              std::map<std::string, const JsonValue*>* out) -> Status {
        for (const auto& v : s) {
          if (!v.IsObject()) {
            return InvalidArgumentError(
                "invalid element type in merging list:" + GoListString(s));
          }
          const JsonValue* kv = FindMember(v, merge_key);
          if (kv == nullptr) {
            return InvalidArgumentError(
                "cannot find merge key `" + merge_key +
                "` in merging list element:" + GoString(v));
          }
          (*out)[GoString(*kv)] = &v;
        }
        return Status::Ok();
      };
      std::map<std::string, const JsonValue*> lm, rm;
      RETURN_IF_ERROR(to_map(l, &lm));
      RETURN_IF_ERROR(to_map(r, &rm));
      for (const auto& [k, lv] : lm) {
        auto it = rm.find(k);
        if (it == rm.end()) continue;
        ASSIGN_OR_RETURN(bool c, MergingMapFieldsHaveConflicts(*lv, *it->second,
                                                               schema, "", ""));
        if (c) return true;
      }
      return false;
    }
    if (l.size() != r.size()) return true;
    if (kind != JsonKind::kObject) {
      DeduplicateScalars(l);
      SortScalars(l);
      DeduplicateScalars(r);
      SortScalars(r);
    }
    for (size_t i = 0; i < l.size() && i < r.size(); ++i) {
      ASSIGN_OR_RETURN(
          bool c, MergingMapFieldsHaveConflicts(l[i], r[i], schema, "", ""));
      if (c) return true;
    }
    return false;
  }

 private:
  JsonAllocator& a_;
};

const JsonValue& ObjectOrEmpty(const JsonValue& v) {
  static const JsonValue* empty = new JsonValue(rapidjson::kObjectType);
  return v.IsObject() ? v : *empty;
}

}  // namespace

Status StrategicMergePatch(JsonValue& object, const JsonValue& patch,
                           const PatchSchema& schema, JsonAllocator& alloc) {
  if ((!object.IsObject() && !object.IsNull()) ||
      (!patch.IsObject() && !patch.IsNull())) {
    return InvalidArgumentError("invalid JSON document");
  }
  if (patch.IsNull()) {
    if (object.IsNull()) object.SetObject();
    return Status::Ok();
  }
  Engine e(alloc);
  JsonValue work = e.Copy(object);
  JsonValue p = e.Copy(patch);
  // Kubernetes decodes the patch into map[string]interface{}: of two
  // members of one name, the last counts.
  KeepLastMembers(p);
  MergeOptions mo{.merge_parallel_list = true, .ignore_unmatched_nulls = true};
  RETURN_IF_ERROR(e.MergeMap(work, p, schema, mo));
  object = work;
  return Status::Ok();
}

StatusOr<std::string> StrategicMergePatchJson(std::string_view original,
                                              std::string_view patch,
                                              const PatchSchema& schema) {
  rapidjson::Document o, p;
  RETURN_IF_ERROR(ParseJson(original.empty() ? "{}" : original, &o));
  RETURN_IF_ERROR(ParseJson(patch.empty() ? "{}" : patch, &p));
  RETURN_IF_ERROR(StrategicMergePatch(o, p, schema, o.GetAllocator()));
  return CompactJson(o);
}

Status CreateTwoWayMergePatch(const JsonValue& original,
                              const JsonValue& modified,
                              const PatchSchema& schema, JsonValue* patch,
                              JsonAllocator& alloc,
                              const std::vector<Precondition>& preconditions) {
  Engine e(alloc);
  DiffOptions o{.set_element_order = true};
  RETURN_IF_ERROR(e.DiffMaps(ObjectOrEmpty(original), ObjectOrEmpty(modified),
                             schema, o, patch));
  for (const auto& pre : preconditions) {
    if (!pre(*patch)) {
      return FailedPreconditionError("precondition failed for: " +
                                     GoString(*patch));
    }
  }
  return Status::Ok();
}

Status CreateThreeWayMergePatch(
    const JsonValue& original, const JsonValue& modified,
    const JsonValue& current, const PatchSchema& schema, bool overwrite,
    JsonValue* patch, JsonAllocator& alloc,
    const std::vector<Precondition>& preconditions) {
  Engine e(alloc);
  const JsonValue& o = ObjectOrEmpty(original);
  const JsonValue& m = ObjectOrEmpty(modified);
  const JsonValue& c = ObjectOrEmpty(current);
  JsonValue delta, deletions;
  RETURN_IF_ERROR(e.DiffMaps(
      c, m, schema, {.set_element_order = true, .ignore_deletions = true},
      &delta));
  RETURN_IF_ERROR(e.DiffMaps(
      o, m, schema,
      {.set_element_order = true, .ignore_changes_and_additions = true},
      &deletions));
  RETURN_IF_ERROR(e.MergeMap(deletions, delta, schema, MergeOptions{}));
  for (const auto& pre : preconditions) {
    if (!pre(deletions)) {
      return FailedPreconditionError("precondition failed for: " +
                                     GoString(deletions));
    }
  }
  if (!overwrite) {
    JsonValue changed;
    RETURN_IF_ERROR(e.DiffMaps(o, c, schema, {}, &changed));
    ASSIGN_OR_RETURN(bool conflict, e.MergingMapFieldsHaveConflicts(
                                        deletions, changed, schema, "", ""));
    if (conflict) {
      return Status(StatusCode::kConflict,
                    "patch:\n" + CanonicalJson(deletions) +
                        "\nconflicts with changes made from original to "
                        "current:\n" +
                        CanonicalJson(changed) + "\n");
    }
  }
  *patch = deletions;
  return Status::Ok();
}

StatusOr<std::string> CreateThreeWayMergePatchJson(
    std::string_view original, std::string_view modified,
    std::string_view current, const PatchSchema& schema, bool overwrite,
    const std::vector<Precondition>& preconditions) {
  rapidjson::Document o, m, c;
  RETURN_IF_ERROR(ParseJson(original.empty() ? "{}" : original, &o));
  RETURN_IF_ERROR(ParseJson(modified.empty() ? "{}" : modified, &m));
  RETURN_IF_ERROR(ParseJson(current.empty() ? "{}" : current, &c));
  rapidjson::Document out;
  JsonValue patch;
  RETURN_IF_ERROR(CreateThreeWayMergePatch(o, m, c, schema, overwrite, &patch,
                                           out.GetAllocator(), preconditions));
  return CanonicalJson(patch);
}

StatusOr<bool> MergingMapsHaveConflicts(const JsonValue& left,
                                        const JsonValue& right,
                                        const PatchSchema& schema) {
  rapidjson::Document scratch;
  Engine e(scratch.GetAllocator());
  return e.MergingMapFieldsHaveConflicts(left, right, schema, "", "");
}

}  // namespace kplane::patch
