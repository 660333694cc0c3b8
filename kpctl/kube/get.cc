// kpctl get: server-side Tables, -o yaml|json|name, -w.
#include <rapidjson/document.h>

#include <algorithm>

#include "base/strings.h"
#include "informer/api_errors.h"
#include "kpctl/kube/commands.h"
#include "kpctl/kube/printer.h"
#include "kpctl/kube/resources.h"
#include "objects/machinery/jsonpath.h"

namespace kplane::kpctl::kube {
namespace {

using machinery::JsonPath;
using rapidjson::Document;
using rapidjson::Value;

bool HasColumns(const Value& table) {
  const Value* d = At(table, {"columnDefinitions"});
  return d != nullptr && d->IsArray() && d->Size() > 0;
}

std::string NoResourcesLine(const Context& ctx, bool all_namespaces,
                            const std::vector<ResourceSelection>& sel) {
  bool namespaced = false;
  for (const auto& s : sel) namespaced |= s.resource->namespaced;
  if (all_namespaces || !namespaced) return "No resources found";
  return "No resources found in " + ctx.ns() + " namespace.";
}

// -o yaml|json|name.
int PrintObjects(Context& ctx, const std::vector<ResourceSelection>& sel,
                 const std::string& ns, const ListQuery& query,
                 const std::string& output) {
  Document list(rapidjson::kObjectType);
  auto& a = list.GetAllocator();
  Value items(rapidjson::kArrayType);
  std::vector<const objects::ResourceInfo*> item_resources;
  int code = 0;
  bool single = sel.size() == 1 && sel[0].names.size() == 1;
  for (const ResourceSelection& s : sel) {
    if (!s.names.empty()) {
      for (const std::string& name : s.names) {
        StatusOr<Document> obj = ctx.client->Get(*s.resource, ns, name);
        if (!obj.ok()) {
          code = ctx.Fail(obj.status());
          continue;
        }
        FillTypeMeta(*obj, *s.resource, obj->GetAllocator());
        items.PushBack(Value(*obj, a), a);
        item_resources.push_back(s.resource);
      }
      continue;
    }
    StatusOr<Document> l = ctx.client->List(*s.resource, ns, query);
    if (!l.ok()) {
      code = ctx.Fail(l.status());
      continue;
    }
    for (Value& i : (*l)["items"].GetArray()) {
      FillTypeMeta(i, *s.resource, l->GetAllocator());
      items.PushBack(Value(i, a), a);
      item_resources.push_back(s.resource);
    }
  }
  const bool show_managed = ctx.flags->GetBool("show-managed-fields");
  if (output == "name") {
    for (size_t i = 0; i < items.Size(); ++i) {
      ctx.out() << ObjectRef(*item_resources[i],
                             StrAt(items[i], {"metadata", "name"}))
                << "\n";
    }
    return code;
  }
  // kubectl's printGeneric: a single named object that failed is its
  // error alone, nothing printed (several names print the List of those
  // found, then fail).
  if (single && items.Empty() && code != 0) return code;
  Document printable;
  if (single && items.Size() == 1) {
    printable.CopyFrom(items[0], printable.GetAllocator());
  } else {
    if (items.Empty() && code == 0 && !single) {
      ctx.err() << NoResourcesLine(ctx, ns.empty(), sel) << "\n";
    }
    printable.SetObject();
    auto& pa = printable.GetAllocator();
    printable.AddMember("apiVersion", "v1", pa);
    printable.AddMember("items", Value(items, pa), pa);
    printable.AddMember("kind", "List", pa);
    Value meta(rapidjson::kObjectType);
    meta.AddMember("resourceVersion", "", pa);
    printable.AddMember("metadata", meta, pa);
  }
  if (!show_managed) DropManagedFields(printable);
  if (output.starts_with("jsonpath=")) {
    StatusOr<JsonPath> jp = JsonPath::Parse(output.substr(9));
    if (!jp.ok()) {
      return ctx.Fail("error parsing jsonpath " + output.substr(9) + ", " +
                      jp.status().message());
    }
    ctx.out() << jp->Execute(printable);
    return code;
  }
  ctx.out() << (output == "json" ? PrettyJson(printable) : ToYaml(printable));
  return code;
}

int WatchTable(Context& ctx, const ResourceSelection& s, const std::string& ns,
               ListQuery query, const TableOptions& opts, TabWriter* tw,
               Document* defs, bool* header_printed, const std::string& rv) {
  if (s.names.size() > 1) {
    return ctx.Fail(
        "watch is only supported on individual resources and "
        "resource collections, but 2 resources were found");
  }
  if (s.names.size() == 1) {
    query.field_selector = "metadata.name=" + s.names[0];
  }
  query.resource_version = rv;
  // As with kubectl, an explicit --request-timeout bounds the watch too.
  if (ctx.flags->Has("request-timeout")) {
    StatusOr<Duration> t = DurationFlag(*ctx.flags, "request-timeout");
    if (t.ok() && *t > Duration(0)) {
      query.timeout_seconds = std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::seconds>(*t).count());
    }
  }
  Status st = ctx.client->Watch(
      *s.resource, ns, query, /*table=*/true,
      [&](std::string_view type, Value& table) {
        if (type == "BOOKMARK") return true;
        if (HasColumns(table) && !HasColumns(*defs)) {
          defs->CopyFrom(table, defs->GetAllocator());
        }
        if (!*header_printed && HasColumns(*defs) && !opts.no_headers) {
          tw->AddRow(TableHeader(*defs, opts));
          *header_printed = true;
        }
        for (auto& row : TableRows(table, opts, defs)) tw->AddRow(row);
        tw->Flush();
        return true;
      });
  if (!st.ok()) return ctx.Fail(st);
  return 0;
}

int RunGet(Context& ctx) {
  const Flags& f = *ctx.flags;
  StatusOr<std::vector<ResourceSelection>> sel =
      ParseResourceArgs(f.positional());
  if (!sel.ok()) return ctx.Fail(sel.status().message());
  const bool all_ns = f.GetBool("all-namespaces");
  const std::string ns = all_ns ? "" : ctx.ns();
  const std::string output = f.Get("output");
  const bool jsonpath = output.starts_with("jsonpath=");
  if (output != "" && output != "wide" && output != "yaml" &&
      output != "json" && output != "name" && !jsonpath) {
    return ctx.Fail(
        "unable to match a printer suitable for the output "
        "format \"" +
        output +
        "\", allowed formats are: "
        "json,jsonpath,name,wide,yaml");
  }
  ListQuery query;
  query.label_selector = f.Get("selector");
  query.field_selector = f.Get("field-selector");
  const bool watch = f.GetBool("watch") || f.GetBool("watch-only");
  if (watch && sel->size() > 1) {
    return ctx.Fail("you may only specify a single resource type");
  }
  if (!query.label_selector.empty() || !query.field_selector.empty()) {
    for (const auto& s : *sel) {
      if (!s.names.empty()) {
        return ctx.Fail(
            "selectors and the all flag cannot be used when "
            "passing resource/name arguments");
      }
    }
  }
  if (output == "yaml" || output == "json" || output == "name" || jsonpath) {
    if (watch) return ctx.Fail("-w is supported with table output only");
    return PrintObjects(ctx, *sel, ns, query, output);
  }

  TableOptions opts;
  opts.wide = output == "wide";
  opts.show_labels = f.GetBool("show-labels");
  for (const std::string& l : f.GetAll("label-columns")) {
    for (const std::string& key : StrSplit(l, ',')) {
      if (!key.empty()) opts.label_columns.push_back(key);
    }
  }
  opts.no_headers = f.GetBool("no-headers");
  // kubectl prefixes names with their kind when several kinds print.
  opts.kind_prefix = sel->size() > 1;
  int code = 0;
  int total_rows = 0;
  bool printed_any = false;
  TabWriter tw(&ctx.out());
  for (const ResourceSelection& s : *sel) {
    opts.all_namespaces = all_ns && s.resource->namespaced;
    opts.kind_group = KindGroup(*s.resource);
    Document defs;  // the columnDefinitions for this resource
    std::vector<std::vector<std::string>> rows;
    std::string list_rv;
    if (!s.names.empty()) {
      for (const std::string& name : s.names) {
        StatusOr<Document> t = ctx.client->Table(*s.resource, ns, name);
        if (!t.ok()) {
          code = ctx.Fail(t.status());
          continue;
        }
        if (!HasColumns(defs)) defs.CopyFrom(*t, defs.GetAllocator());
        for (auto& r : TableRows(*t, opts, &defs)) rows.push_back(r);
        if (s.names.size() == 1) {
          // A watch on one object starts after the version just printed.
          const Value* r0 = At(*t, {"rows"});
          if (r0 != nullptr && r0->IsArray() && r0->Size() > 0) {
            list_rv =
                StrAt((*r0)[0], {"object", "metadata", "resourceVersion"});
          }
        }
      }
    } else {
      StatusOr<Document> t = ctx.client->Table(*s.resource, ns, "", query);
      if (!t.ok()) {
        code = ctx.Fail(t.status());
        continue;
      }
      defs.CopyFrom(*t, defs.GetAllocator());
      rows = TableRows(*t, opts, &defs);
      list_rv = StrAt(*t, {"metadata", "resourceVersion"});
    }
    bool header_printed = false;
    if (!f.GetBool("watch-only") && !rows.empty()) {
      if (printed_any) {
        tw.Flush();
        ctx.out() << "\n";
        tw = TabWriter(&ctx.out());
      }
      if (!opts.no_headers) tw.AddRow(TableHeader(defs, opts));
      header_printed = true;
      for (auto& r : rows) tw.AddRow(std::move(r));
      total_rows += static_cast<int>(rows.size());
      printed_any = true;
    }
    tw.Flush();
    if (watch) {
      if (rows.empty() && !f.GetBool("watch-only") && code == 0) {
        ctx.err() << NoResourcesLine(ctx, all_ns, *sel) << "\n";
      }
      if (code != 0) return code;
      return WatchTable(ctx, s, ns, query, opts, &tw, &defs, &header_printed,
                        list_rv);
    }
  }
  tw.Flush();
  if (total_rows == 0 && code == 0) {
    ctx.err() << NoResourcesLine(ctx, all_ns, *sel) << "\n";
  }
  return code;
}

}  // namespace

CommandSpec GetCommand() {
  return {
      "get",
      "Display one or many resources",
      "kpctl get TYPE[.GROUP][,TYPE...] [NAME...] | TYPE/NAME... [flags]",
      {
          {"output", 'o', false, "",
           "output format: wide, yaml, json, name, jsonpath=TEMPLATE"},
          {"all-namespaces", 'A', true, "", "list across all namespaces"},
          {"selector", 'l', false, "",
           "label selector (e.g. app=web,tier!=db)"},
          {"field-selector", 0, false, "",
           "field selector (e.g. status.phase=Running)"},
          {"watch", 'w', true, "", "after listing, watch for changes"},
          {"watch-only", 0, true, "",
           "watch for changes without listing first"},
          {"show-labels", 0, true, "", "add a LABELS column"},
          {"label-columns", 'L', false, "",
           "a column per label key (comma-separated; repeatable)"},
          {"no-headers", 0, true, "", "omit the header row"},
          {"show-managed-fields", 0, true, "",
           "keep metadata.managedFields in yaml/json output"},
      },
      true,
      RunGet,
  };
}

}  // namespace kplane::kpctl::kube
