#include "kpctl/kube/printer.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>

#include "base/json.h"
#include "base/strings.h"
#include "objects/yaml.h"

namespace kplane::kpctl::kube {

using rapidjson::Value;

namespace {
constexpr size_t kMinWidth = 6;
constexpr size_t kPadding = 3;
}  // namespace

void TabWriter::AddRow(std::vector<std::string> cells) {
  rows_.push_back(std::move(cells));
}

void TabWriter::Flush() {
  for (const auto& row : rows_) {
    // The last cell of a row is not a column: it is never padded.
    for (size_t i = 0; i + 1 < row.size(); ++i) {
      if (widths_.size() <= i) widths_.resize(i + 1, 0);
      widths_[i] = std::max({widths_[i], row[i].size() + kPadding, kMinWidth});
    }
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths_[i] - row[i].size(), ' ');
    }
    *out_ << line << "\n";
  }
  rows_.clear();
  out_->flush();
}

const Value* At(const Value& obj, std::initializer_list<const char*> path) {
  const Value* v = &obj;
  for (const char* p : path) {
    if (!v->IsObject()) return nullptr;
    auto it = v->FindMember(p);
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
  }
  return v;
}

std::string StrAt(const Value& obj, std::initializer_list<const char*> path) {
  const Value* v = At(obj, path);
  return v != nullptr && v->IsString()
             ? std::string(v->GetString(), v->GetStringLength())
             : "";
}

int64_t IntAt(const Value& obj, std::initializer_list<const char*> path,
              int64_t def) {
  const Value* v = At(obj, path);
  if (v == nullptr) return def;
  if (v->IsInt64()) return v->GetInt64();
  if (v->IsDouble()) return static_cast<int64_t>(v->GetDouble());
  return def;
}

std::string CellString(const Value& cell) {
  if (cell.IsString())
    return std::string(cell.GetString(), cell.GetStringLength());
  if (cell.IsInt64()) return std::to_string(cell.GetInt64());
  if (cell.IsUint64()) return std::to_string(cell.GetUint64());
  if (cell.IsDouble()) {
    double d = cell.GetDouble();
    if (d == static_cast<double>(static_cast<int64_t>(d))) {
      return std::to_string(static_cast<int64_t>(d));
    }
    return std::to_string(d);
  }
  if (cell.IsBool()) return cell.GetBool() ? "true" : "false";
  if (cell.IsNull()) return "<none>";
  return "<unknown>";
}

std::string LabelsString(const Value& metadata) {
  const Value* labels = At(metadata, {"labels"});
  if (labels == nullptr || !labels->IsObject() || labels->MemberCount() == 0) {
    return "<none>";
  }
  std::vector<std::string> parts;
  for (auto& m : labels->GetObject()) {
    parts.push_back(std::string(m.name.GetString()) + "=" +
                    (m.value.IsString() ? m.value.GetString() : ""));
  }
  std::sort(parts.begin(), parts.end());
  return StrJoin(parts, ",");
}

namespace {

// Indexes of the columns to show and whether each is the name column.
std::vector<std::pair<size_t, bool>> ShownColumns(const Value& table,
                                                  const TableOptions& o) {
  std::vector<std::pair<size_t, bool>> cols;
  const Value* defs = At(table, {"columnDefinitions"});
  if (defs == nullptr || !defs->IsArray()) return cols;
  for (size_t i = 0; i < defs->Size(); ++i) {
    const Value& d = (*defs)[i];
    if (IntAt(d, {"priority"}) > 0 && !o.wide) continue;
    cols.emplace_back(i, StrAt(d, {"format"}) == "name");
  }
  return cols;
}

}  // namespace

std::vector<std::string> TableHeader(const Value& table,
                                     const TableOptions& o) {
  std::vector<std::string> h;
  if (o.all_namespaces) h.push_back("NAMESPACE");
  const Value* defs = At(table, {"columnDefinitions"});
  for (auto [i, is_name] : ShownColumns(table, o)) {
    std::string n = StrAt((*defs)[i], {"name"});
    for (char& c : n) c = static_cast<char>(std::toupper(c));
    h.push_back(n);
  }
  for (const std::string& key : o.label_columns) {
    std::string n = key.substr(key.rfind('/') + 1);
    for (char& c : n) c = static_cast<char>(std::toupper(c));
    h.push_back(n);
  }
  if (o.show_labels) h.push_back("LABELS");
  return h;
}

std::vector<std::vector<std::string>> TableRows(const Value& table,
                                                const TableOptions& o,
                                                const Value* definitions) {
  std::vector<std::vector<std::string>> out;
  const Value* rows = At(table, {"rows"});
  if (rows == nullptr || !rows->IsArray()) return out;
  // Column definitions arrive only in a watch's first event; later events
  // reuse the first's. Without any, print every cell.
  const auto cols =
      ShownColumns(definitions != nullptr ? *definitions : table, o);
  for (const Value& row : rows->GetArray()) {
    std::vector<std::string> cells;
    const Value* meta = At(row, {"object", "metadata"});
    static const Value kEmpty(rapidjson::kObjectType);
    if (meta == nullptr) meta = &kEmpty;
    if (o.all_namespaces) cells.push_back(StrAt(*meta, {"namespace"}));
    const Value* c = At(row, {"cells"});
    if (c != nullptr && c->IsArray()) {
      for (auto [i, is_name] : cols) {
        std::string s = i < c->Size() ? CellString((*c)[i]) : "";
        if (is_name && o.kind_prefix) s = o.kind_group + "/" + s;
        cells.push_back(std::move(s));
      }
    }
    for (const std::string& key : o.label_columns) {
      cells.push_back(StrAt(*meta, {"labels", key.c_str()}));
    }
    if (o.show_labels) cells.push_back(LabelsString(*meta));
    out.push_back(std::move(cells));
  }
  return out;
}

void DropManagedFields(Value& obj) {
  if (!obj.IsObject()) return;
  if (Value* items = const_cast<Value*>(At(obj, {"items"}));
      items != nullptr && items->IsArray()) {
    for (Value& i : items->GetArray()) DropManagedFields(i);
  }
  auto m = obj.FindMember("metadata");
  if (m != obj.MemberEnd() && m->value.IsObject()) {
    m->value.RemoveMember("managedFields");
  }
}

void FillTypeMeta(Value& obj, const objects::ResourceInfo& r,
                  rapidjson::Document::AllocatorType& alloc) {
  if (!obj.IsObject()) return;
  if (!obj.HasMember("apiVersion")) {
    obj.AddMember("apiVersion", Value(r.gv.ApiVersion().c_str(), alloc), alloc);
  }
  if (!obj.HasMember("kind")) {
    obj.AddMember("kind", Value(r.kind->kind.c_str(), alloc), alloc);
  }
}

rapidjson::Document ToPrintableList(const Value& list,
                                    const objects::ResourceInfo& r) {
  rapidjson::Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  out.AddMember("apiVersion", "v1", a);
  Value items(rapidjson::kArrayType);
  if (const Value* in = At(list, {"items"}); in != nullptr && in->IsArray()) {
    for (const Value& i : in->GetArray()) {
      Value copy(i, a);
      FillTypeMeta(copy, r, a);
      items.PushBack(copy, a);
    }
  }
  out.AddMember("items", items, a);
  out.AddMember("kind", "List", a);
  Value meta(rapidjson::kObjectType);
  meta.AddMember("resourceVersion", "", a);
  out.AddMember("metadata", meta, a);
  return out;
}

namespace {

void SortKeys(Value& v) {
  if (v.IsObject()) {
    std::sort(v.MemberBegin(), v.MemberEnd(), [](const auto& a, const auto& b) {
      return std::string_view(a.name.GetString(), a.name.GetStringLength()) <
             std::string_view(b.name.GetString(), b.name.GetStringLength());
    });
    for (auto& m : v.GetObject()) SortKeys(m.value);
  } else if (v.IsArray()) {
    for (Value& e : v.GetArray()) SortKeys(e);
  }
}

}  // namespace

std::string PrettyJson(const Value& v) {
  rapidjson::Document copy;
  copy.CopyFrom(v, copy.GetAllocator());
  SortKeys(copy);
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  w.SetIndent(' ', 4);
  json::Accept(copy, w);
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

std::string ToYaml(const Value& v) { return objects::JsonToYaml(v); }

}  // namespace kplane::kpctl::kube
