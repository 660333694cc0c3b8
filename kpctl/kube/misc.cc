// kpctl version, config, api-resources.
#include <rapidjson/document.h>

#include <algorithm>
#include <initializer_list>

#include "base/strings.h"
#include "kpctl/kube/commands.h"
#include "kpctl/kube/printer.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Document;
using rapidjson::Value;

constexpr char kClientVersion[] = "v1.32.4-kplane";

int RunVersion(Context& ctx) {
  ctx.out() << "Client Version: " << kClientVersion << "\n";
  if (ctx.flags->GetBool("client")) return 0;
  StatusOr<Document> v = ctx.client->Version();
  if (!v.ok()) return ctx.Fail(v.status());
  ctx.out() << "Server Version: " << StrAt(*v, {"gitVersion"}) << "\n";
  return 0;
}

// Sets entry[field][key] to `shown` for each key present and not empty.
void ReplaceIn(Value& doc, const char* list, const char* field,
               std::initializer_list<const char*> keys, const char* shown) {
  Value* entries = const_cast<Value*>(At(doc, {list}));
  if (entries == nullptr || !entries->IsArray()) return;
  for (Value& e : entries->GetArray()) {
    Value* inner = const_cast<Value*>(At(e, {field}));
    if (inner == nullptr || !inner->IsObject()) continue;
    for (const char* k : keys) {
      auto it = inner->FindMember(k);
      if (it != inner->MemberEnd() && it->value.IsString() &&
          it->value.GetStringLength() > 0) {
        it->value.SetString(rapidjson::StringRef(shown));
      }
    }
  }
}

// What `kubectl config view` hides without --raw (client-go's
// ShortenConfig): the *-data fields show DATA+OMITTED, tokens and
// passwords REDACTED.
void Redact(Value& doc) {
  ReplaceIn(doc, "clusters", "cluster", {"certificate-authority-data"},
            "DATA+OMITTED");
  ReplaceIn(doc, "users", "user",
            {"client-certificate-data", "client-key-data"}, "DATA+OMITTED");
  ReplaceIn(doc, "users", "user", {"token", "password"}, "REDACTED");
}

// Keeps only entries named `name` in doc[list].
void KeepOnly(Document& doc, const char* list, const std::string& name) {
  auto it = doc.FindMember(list);
  if (it == doc.MemberEnd() || !it->value.IsArray()) return;
  Value& arr = it->value;
  for (auto e = arr.Begin(); e != arr.End();) {
    if (StrAt(*e, {"name"}) != name) {
      e = arr.Erase(e);
    } else {
      ++e;
    }
  }
}

int RunConfig(Context& ctx) {
  const std::vector<std::string>& pos = ctx.flags->positional();
  const std::string sub = pos.empty() ? "" : pos[0];
  Document doc;
  doc.CopyFrom(ctx.kubeconfig.doc, doc.GetAllocator());
  const std::string current = ctx.flags->Has("context")
                                  ? ctx.flags->Get("context")
                                  : StrAt(doc, {"current-context"});
  if (sub == "view") {
    auto& a = doc.GetAllocator();
    for (const char* k : {"clusters", "contexts", "users"}) {
      if (!doc.HasMember(k))
        doc.AddMember(Value(k, a), Value(rapidjson::kArrayType), a);
    }
    if (!doc.HasMember("apiVersion")) doc.AddMember("apiVersion", "v1", a);
    if (!doc.HasMember("kind")) doc.AddMember("kind", "Config", a);
    if (!doc.HasMember("current-context"))
      doc.AddMember("current-context", "", a);
    if (!doc.HasMember("preferences")) {
      doc.AddMember("preferences", Value(rapidjson::kObjectType), a);
    }
    if (ctx.flags->GetBool("minify")) {
      if (current.empty())
        return ctx.Fail("current-context must exist in order to minify");
      std::string cluster, user;
      if (const Value* cs = At(doc, {"contexts"}); cs && cs->IsArray()) {
        for (const Value& c : cs->GetArray()) {
          if (StrAt(c, {"name"}) == current) {
            cluster = StrAt(c, {"context", "cluster"});
            user = StrAt(c, {"context", "user"});
          }
        }
      }
      KeepOnly(doc, "contexts", current);
      KeepOnly(doc, "clusters", cluster);
      KeepOnly(doc, "users", user);
    }
    if (!ctx.flags->GetBool("raw")) Redact(doc);
    const std::string out = ctx.flags->Get("output");
    ctx.out() << (out == "json" ? PrettyJson(doc) : ToYaml(doc));
    return 0;
  }
  if (sub == "current-context") {
    if (current.empty()) return ctx.Fail("current-context is not set");
    ctx.out() << current << "\n";
    return 0;
  }
  if (sub == "get-contexts") {
    TabWriter tw(&ctx.out());
    tw.AddRow({"CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"});
    if (const Value* cs = At(doc, {"contexts"}); cs && cs->IsArray()) {
      for (const Value& c : cs->GetArray()) {
        const std::string name = StrAt(c, {"name"});
        tw.AddRow({name == current ? "*" : "", name,
                   StrAt(c, {"context", "cluster"}),
                   StrAt(c, {"context", "user"}),
                   StrAt(c, {"context", "namespace"})});
      }
    }
    tw.Flush();
    return 0;
  }
  return ctx.Fail(
      "config needs a subcommand: view, current-context, "
      "get-contexts");
}

int RunApiResources(Context& ctx) {
  TabWriter tw(&ctx.out());
  if (!ctx.flags->GetBool("no-headers")) {
    tw.AddRow({"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"});
  }
  std::vector<const objects::ResourceInfo*> rs;
  for (const auto& r : objects::Scheme::Default().resources())
    rs.push_back(r.get());
  std::stable_sort(rs.begin(), rs.end(), [](auto* a, auto* b) {
    return a->gv.group != b->gv.group ? a->gv.group < b->gv.group
                                      : a->resource < b->resource;
  });
  for (const objects::ResourceInfo* r : rs) {
    tw.AddRow({r->resource, StrJoin(r->short_names, ","), r->gv.ApiVersion(),
               r->namespaced ? "true" : "false", r->kind->kind});
  }
  tw.Flush();
  return 0;
}

}  // namespace

CommandSpec VersionCommand() {
  return {"version",
          "Print the client and server versions",
          "kpctl version [--client]",
          {{"client", 0, true, "", "the client version only"}},
          false,
          [](Context& ctx) {
            if (ctx.flags->GetBool("client")) return RunVersion(ctx);
            // Connect lazily: --client needs no server.
            ConfigOverrides o = OverridesFromFlags(*ctx.flags);
            StatusOr<ClientConfig> cc = ResolveClientConfig(ctx.kubeconfig, o);
            if (!cc.ok()) return ctx.Fail(cc.status());
            ctx.config = *cc;
            StatusOr<Duration> timeout = RequestTimeoutFlag(*ctx.flags);
            if (!timeout.ok()) return ctx.Fail(timeout.status());
            StatusOr<std::unique_ptr<KubeClient>> c =
                KubeClient::New(ctx.config, *timeout, ctx.clock());
            if (!c.ok()) return ctx.Fail(c.status());
            ctx.client = std::move(*c);
            return RunVersion(ctx);
          }};
}

CommandSpec ConfigCommand() {
  return {"config",
          "Show kubeconfig settings (view, current-context, get-contexts)",
          "kpctl config (view [--minify] [--raw] | current-context | "
          "get-contexts)",
          {{"minify", 0, true, "", "view: only the current context's entries"},
           {"raw", 0, true, "",
            "view: show certificate data, tokens and passwords"},
           {"output", 'o', false, "yaml", "view: yaml or json"}},
          false,
          RunConfig};
}

CommandSpec ApiResourcesCommand() {
  return {"api-resources",
          "Print the supported API resources",
          "kpctl api-resources",
          {{"no-headers", 0, true, "", "omit the header row"}},
          false,
          RunApiResources};
}

}  // namespace kplane::kpctl::kube
