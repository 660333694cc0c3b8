// kpctl apply / create / delete: manifests against the API server.
//
// Client-side apply (kubectl's default): the object is sent with the
// annotation kubectl.kubernetes.io/last-applied-configuration holding the
// manifest as sorted-key JSON. Later applies compute the three-way
// strategic merge patch (last applied, new manifest, live object) with
// objects/patch: fields the user changed are set, fields the user removed from
// the manifest are deleted, fields others set (controllers, defaults) are
// kept. An empty patch ({}) sends nothing: "unchanged".
#include <rapidjson/document.h>

#include "base/deep_stack.h"
#include "base/json.h"
#include "informer/api_errors.h"
#include "kpctl/kube/commands.h"
#include "kpctl/kube/manifest.h"
#include "kpctl/kube/printer.h"
#include "kpctl/kube/resources.h"
#include "objects/patch/json_value.h"
#include "objects/patch/merge_patch.h"
#include "objects/patch/patch_meta.h"
#include "objects/patch/strategic.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Document;
using rapidjson::Value;

constexpr char kLastApplied[] =
    "kubectl.kubernetes.io/last-applied-configuration";

// A manifest resolved to its resource, namespace and name.
struct Target {
  const objects::ResourceInfo* resource = nullptr;
  std::string ns;
  std::string name;
};

StatusOr<Target> Resolve(Context& ctx, Manifest& m) {
  Target t;
  const std::string api_version = StrAt(m.object, {"apiVersion"});
  const std::string kind = StrAt(m.object, {"kind"});
  const objects::Scheme& scheme = objects::Scheme::Default();
  const objects::KindInfo* k = scheme.FindKind(api_version, kind);
  t.resource = k != nullptr ? scheme.ResourceForKind(*k) : nullptr;
  t.name = StrAt(m.object, {"metadata", "name"});
  const std::string obj_ns = StrAt(m.object, {"metadata", "namespace"});
  if (t.resource == nullptr || t.resource->list_kind == nullptr) {
    return InvalidArgumentError("resource mapping not found for name: \"" +
                                t.name + "\" namespace: \"" + obj_ns +
                                "\" from \"" + m.source +
                                "\": no matches for kind \"" + kind +
                                "\" in version \"" + api_version + "\"");
  }
  if (t.resource->namespaced) {
    if (!obj_ns.empty() && ctx.config.ns_explicit && obj_ns != ctx.ns()) {
      return InvalidArgumentError(
          "the namespace from the provided object \"" + obj_ns +
          "\" does not match the namespace \"" + ctx.ns() +
          "\". You must pass '--namespace=" + obj_ns +
          "' to perform this operation.");
    }
    t.ns = obj_ns.empty() ? ctx.ns() : obj_ns;
    // The object carries its namespace, as kubectl's builder sets it.
    auto& a = m.object.GetAllocator();
    if (!m.object.HasMember("metadata") || !m.object["metadata"].IsObject()) {
      m.object.RemoveMember("metadata");
      m.object.AddMember("metadata", Value(rapidjson::kObjectType), a);
    }
    Value& meta = m.object["metadata"];
    meta.RemoveMember("namespace");
    meta.AddMember("namespace", Value(t.ns.c_str(), a), a);
  }
  return t;
}

Value& Annotations(Document& obj) {
  auto& a = obj.GetAllocator();
  if (!obj.HasMember("metadata") || !obj["metadata"].IsObject()) {
    obj.RemoveMember("metadata");
    obj.AddMember("metadata", Value(rapidjson::kObjectType), a);
  }
  Value& meta = obj["metadata"];
  if (!meta.HasMember("annotations") || !meta["annotations"].IsObject()) {
    meta.RemoveMember("annotations");
    meta.AddMember("annotations", Value(rapidjson::kObjectType), a);
  }
  return meta["annotations"];
}

// kubectl's GetModifiedConfiguration: the manifest with the annotation set
// to the manifest's own sorted-key JSON (with "annotations":{} when it had
// none), newline-terminated.
std::string ModifiedConfiguration(const Document& manifest) {
  Document obj;
  obj.CopyFrom(manifest, obj.GetAllocator());
  Annotations(obj).RemoveMember(kLastApplied);
  const std::string original = patch::GoCanonicalJson(obj) + "\n";
  Annotations(obj).AddMember(Value(kLastApplied, obj.GetAllocator()),
                             Value(original.c_str(), obj.GetAllocator()),
                             obj.GetAllocator());
  return patch::CanonicalJson(obj);
}

std::string LiveLastApplied(const Value& live) {
  const Value* a = At(live, {"metadata", "annotations"});
  if (a == nullptr || !a->IsObject()) return "";
  auto it = a->FindMember(kLastApplied);
  return it != a->MemberEnd() && it->value.IsString() ? it->value.GetString()
                                                      : "";
}

struct Outcome {
  int ok = 0;
  std::vector<std::string> succeeded;  // "deployment.apps/web (f.yaml #1)"
  std::vector<std::string> failed;
};

std::string Where(const Manifest& m) {
  return m.source + " document " + std::to_string(m.index);
}

// Applies one manifest; prints its line. Returns the error, if any, already
// formatted.
// --dry-run: "" (none), "server" (the server validates, stores nothing) or
// "client" (nothing is sent). Returns the suffix kubectl prints.
StatusOr<std::string> SetUpDryRun(Context& ctx, bool* client_only) {
  const std::string v = ctx.flags->Get("dry-run");
  *client_only = false;
  if (v.empty() || v == "none" || v == "false") return std::string();
  if (v == "server") {
    ctx.client->set_server_dry_run(true);
    return std::string(" (server dry run)");
  }
  if (v == "client" || v == "true") {
    *client_only = true;
    return std::string(" (dry run)");
  }
  return InvalidArgumentError(
      "Invalid dry-run value (" + v +
      "). Must be \"none\", \"server\", or \"client\".");
}

// `*failed_op` names the step an error comes from, as kubectl's messages do.
Status ApplyOne(Context& ctx, Manifest& m, const Target& t, bool server_side,
                bool client_dry_run, std::string* line,
                std::string* failed_op) {
  const std::string ref = ObjectRef(*t.resource, t.name);
  if (server_side && client_dry_run) {
    *line = ref + " serverside-applied";
    return Status();
  }
  if (server_side) {
    // The manifest is the apply body (JSON is YAML); the server creates or
    // merges and records field ownership for the manager "kubectl".
    StatusOr<Document> r = ctx.client->Patch(
        *t.resource, t.ns, t.name, PatchType::kApplyPatch,
        patch::CanonicalJson(m.object), "kubectl", {},
        {{"force", ctx.flags->GetBool("force-conflicts") ? "true" : "false"}});
    if (!r.ok()) return r.status();
    *line = ref + " serverside-applied";
    return Status();
  }
  const std::string modified = ModifiedConfiguration(m.object);
  StatusOr<Document> live = ctx.client->Get(*t.resource, t.ns, t.name);
  if (!live.ok() && !informer::IsNotFound(live.status())) return live.status();
  if (!live.ok() && client_dry_run) {
    *line = ref + " created";
    return Status();
  }
  if (!live.ok()) {
    Document body;
    json::ParseDom(modified, &body);
    StatusOr<Document> created = ctx.client->Create(
        *t.resource, t.ns, body, "kubectl-client-side-apply");
    if (!created.ok()) {
      *failed_op = "creating";
      return created.status();
    }
    *line = ref + " created";
    return Status();
  }
  std::string original = LiveLastApplied(*live);
  if (original.empty()) {
    ctx.err() << "Warning: resource " << t.resource->resource << "/" << t.name
              << " is missing the " << kLastApplied
              << " annotation which is required by kpctl apply. kpctl apply "
                 "should only be used on resources created declaratively by "
                 "either kpctl create --save-config or kpctl apply. The "
                 "missing annotation will be patched automatically.\n";
    original = "{}";
  }
  patch::PatchSchema schema(t.resource->kind->descriptor,
                            &patch::KubernetesPatchMetaTable());
  // The diff recurses once per level of the three documents, which may be
  // 10,000 deep (a manifest, a server's answer): a deep stack holds that.
  StatusOr<std::string> p = InternalError("no patch computed");
  RETURN_IF_ERROR(RunWithDeepStack([&] {
    p = patch::CreateThreeWayMergePatchJson(
        original, modified, patch::CompactJson(*live), schema,
        /*overwrite=*/true,
        {patch::RequireKeyUnchanged("apiVersion"),
         patch::RequireKeyUnchanged("kind"),
         patch::RequireMetadataKeyUnchanged("name")});
  }));
  if (!p.ok()) return p.status();
  if (*p == "{}") {
    *line = ref + " unchanged";
    return Status();
  }
  if (client_dry_run) {
    *line = ref + " configured";
    return Status();
  }
  StatusOr<Document> patched = ctx.client->Patch(
      *t.resource, t.ns, t.name, PatchType::kStrategicMergePatch, *p,
      "kubectl-client-side-apply");
  if (!patched.ok()) return patched.status();
  *line = ref + " configured";
  return Status();
}

int Summarize(Context& ctx, const Outcome& o, std::string_view verb) {
  if (o.failed.empty()) return 0;
  if (!o.succeeded.empty()) {
    ctx.err() << "error: " << o.failed.size() << " of "
              << o.failed.size() + o.succeeded.size() << " objects failed; "
              << verb << ": ";
    for (size_t i = 0; i < o.succeeded.size(); ++i) {
      ctx.err() << (i ? ", " : "") << o.succeeded[i];
    }
    ctx.err() << "; not " << verb << ": ";
    for (size_t i = 0; i < o.failed.size(); ++i) {
      ctx.err() << (i ? ", " : "") << o.failed[i];
    }
    ctx.err() << "\n";
  }
  return 1;
}

StatusOr<std::vector<Manifest>> LoadFromFlags(Context& ctx) {
  return LoadManifests(ctx.flags->GetAll("filename"),
                       ctx.flags->GetBool("recursive"), ctx.io->in);
}

int RunApply(Context& ctx) {
  if (!ctx.flags->positional().empty()) {
    return ctx.Fail("unexpected arguments: apply takes -f FILE|DIR|-");
  }
  StatusOr<std::vector<Manifest>> ms = LoadFromFlags(ctx);
  if (!ms.ok()) return ctx.Fail(ms.status().message());
  const bool server_side = ctx.flags->GetBool("server-side");
  bool client_dry_run = false;
  StatusOr<std::string> suffix = SetUpDryRun(ctx, &client_dry_run);
  if (!suffix.ok()) return ctx.Fail(suffix.status().message());
  Outcome o;
  for (Manifest& m : *ms) {
    StatusOr<Target> t = Resolve(ctx, m);
    if (!t.ok()) {
      ctx.err() << "error: " << t.status().message() << "\n";
      o.failed.push_back(Where(m));
      continue;
    }
    const std::string desc =
        ObjectRef(*t->resource, t->name) + " (" + Where(m) + ")";
    if (t->name.empty()) {
      ctx.err() << "error: error when retrieving current configuration of "
                << KindGroup(*t->resource) << " from \"" << m.source
                << "\": resource name may not be empty (apply needs "
                   "metadata.name; generateName works with create)\n";
      o.failed.push_back(desc);
      continue;
    }
    std::string line;
    std::string failed_op = "applying patch to";
    Status s =
        ApplyOne(ctx, m, *t, server_side, client_dry_run, &line, &failed_op);
    if (!s.ok()) {
      // kubectl: `error when creating "f.yaml": ...` or `... applying ...`.
      ctx.err() << ErrorLine(
                       s, "error when " + failed_op + " \"" + m.source + "\": ")
                << "\n";
      o.failed.push_back(desc);
      continue;
    }
    ctx.out() << line << *suffix << "\n";
    ctx.out().flush();
    o.succeeded.push_back(desc);
  }
  return Summarize(ctx, o, "applied");
}

int RunCreate(Context& ctx) {
  if (!ctx.flags->positional().empty()) {
    return ctx.Fail(
        "kpctl create supports -f FILE|DIR|- only (generators "
        "like `create deployment` are not implemented)");
  }
  StatusOr<std::vector<Manifest>> ms = LoadFromFlags(ctx);
  if (!ms.ok()) return ctx.Fail(ms.status().message());
  bool client_dry_run = false;
  StatusOr<std::string> suffix = SetUpDryRun(ctx, &client_dry_run);
  if (!suffix.ok()) return ctx.Fail(suffix.status().message());
  Outcome o;
  for (Manifest& m : *ms) {
    StatusOr<Target> t = Resolve(ctx, m);
    if (!t.ok()) {
      ctx.err() << "error: " << t.status().message() << "\n";
      o.failed.push_back(Where(m));
      continue;
    }
    if (client_dry_run) {
      ctx.out() << ObjectRef(*t->resource, t->name) << " created" << *suffix
                << "\n";
      continue;
    }
    Document body;
    if (ctx.flags->GetBool("save-config")) {
      const std::string modified = ModifiedConfiguration(m.object);
      json::ParseDom(modified, &body);
    } else {
      body.CopyFrom(m.object, body.GetAllocator());
    }
    StatusOr<Document> created =
        ctx.client->Create(*t->resource, t->ns, body, "kubectl-create");
    const std::string name =
        created.ok() ? StrAt(*created, {"metadata", "name"}) : t->name;
    const std::string desc =
        ObjectRef(*t->resource, name) + " (" + Where(m) + ")";
    if (!created.ok()) {
      ctx.err() << ErrorLine(created.status(),
                             "error when creating \"" + m.source + "\": ")
                << "\n";
      o.failed.push_back(desc);
      continue;
    }
    ctx.out() << ObjectRef(*t->resource, name) << " created" << *suffix << "\n";
    o.succeeded.push_back(desc);
  }
  return Summarize(ctx, o, "created");
}

// Waits until `name` is gone (DELETED event or NotFound).
Status WaitDeleted(Context& ctx, const objects::ResourceInfo& r,
                   const std::string& ns, const std::string& name,
                   const std::string& uid, std::optional<TimePoint> deadline) {
  for (;;) {
    StatusOr<Document> live = ctx.client->Get(r, ns, name);
    if (!live.ok()) {
      return informer::IsNotFound(live.status()) ? Status() : live.status();
    }
    if (!uid.empty() && StrAt(*live, {"metadata", "uid"}) != uid) {
      return Status();  // a new object of the same name
    }
    ListQuery q;
    q.field_selector = "metadata.name=" + name;
    q.resource_version = StrAt(*live, {"metadata", "resourceVersion"});
    q.allow_bookmarks = true;
    bool gone = false;
    Status s = ctx.client->Watch(
        r, ns, q, false,
        [&](std::string_view type, Value&) {
          gone = type == "DELETED";
          return !gone;
        },
        deadline);
    if (gone) return Status();
    if (!s.ok()) return s;
  }
}

int RunDelete(Context& ctx) {
  const Flags& f = *ctx.flags;
  struct Item {
    const objects::ResourceInfo* resource;
    std::string ns;
    std::string name;
    std::string source;
  };
  std::vector<Item> items;
  int code = 0;
  if (f.Has("filename")) {
    StatusOr<std::vector<Manifest>> ms = LoadFromFlags(ctx);
    if (!ms.ok()) return ctx.Fail(ms.status().message());
    for (Manifest& m : *ms) {
      StatusOr<Target> t = Resolve(ctx, m);
      if (!t.ok()) {
        code = ctx.Fail(t.status().message());
        continue;
      }
      if (t->name.empty()) {
        code = ctx.Fail("resource name may not be empty (" + Where(m) + ")");
        continue;
      }
      items.push_back({t->resource, t->ns, t->name, m.source});
    }
  } else {
    StatusOr<std::vector<ResourceSelection>> sel =
        ParseResourceArgs(f.positional());
    if (!sel.ok()) return ctx.Fail(sel.status().message());
    const std::string selector = f.Get("selector");
    const bool all = f.GetBool("all");
    for (const ResourceSelection& s : *sel) {
      if (!s.names.empty()) {
        for (const std::string& n : s.names) {
          items.push_back({s.resource, ctx.ns(), n, ""});
        }
        continue;
      }
      if (selector.empty() && !all) {
        return ctx.Fail(
            "resource(s) were provided, but no name was "
            "specified");
      }
      ListQuery q;
      q.label_selector = selector;
      q.field_selector = f.Get("field-selector");
      StatusOr<Document> list = ctx.client->List(*s.resource, ctx.ns(), q);
      if (!list.ok()) return ctx.Fail(list.status());
      for (const Value& i : (*list)["items"].GetArray()) {
        items.push_back({s.resource, StrAt(i, {"metadata", "namespace"}),
                         StrAt(i, {"metadata", "name"}), ""});
      }
    }
    if (items.empty() && code == 0) {
      ctx.err() << "No resources found\n";
      return 0;
    }
  }
  StatusOr<Duration> timeout = DurationFlag(f, "timeout");
  if (!timeout.ok()) return ctx.Fail(timeout.status());
  const bool wait = f.Get("wait") == "" || f.GetBool("wait");
  const bool ignore_missing = f.GetBool("ignore-not-found");
  bool client_dry_run = false;
  StatusOr<std::string> suffix = SetUpDryRun(ctx, &client_dry_run);
  if (!suffix.ok()) return ctx.Fail(suffix.status().message());
  for (const Item& it : items) {
    if (client_dry_run) {
      ctx.out() << KindGroup(*it.resource) << " \"" << it.name << "\" deleted"
                << *suffix << "\n";
      continue;
    }
    StatusOr<Document> r = ctx.client->Delete(*it.resource, it.ns, it.name);
    if (!r.ok()) {
      if (ignore_missing && informer::IsNotFound(r.status())) continue;
      ctx.err() << ErrorLine(r.status(), it.source.empty()
                                             ? ""
                                             : "error when deleting \"" +
                                                   it.source + "\": ")
                << "\n";
      code = 1;
      continue;
    }
    ctx.out() << KindGroup(*it.resource) << " \"" << it.name << "\" deleted"
              << *suffix << "\n";
    ctx.out().flush();
    // Objects with finalizers or a grace period linger: wait like kubectl.
    if (wait && suffix->empty() && StrAt(*r, {"kind"}) != "Status" &&
        !StrAt(*r, {"metadata", "deletionTimestamp"}).empty()) {
      std::optional<TimePoint> deadline;
      if (*timeout > Duration(0)) deadline = ctx.clock()->Now() + *timeout;
      Status s = WaitDeleted(ctx, *it.resource, it.ns, it.name,
                             StrAt(*r, {"metadata", "uid"}), deadline);
      if (!s.ok()) code = ctx.Fail(s);
    }
  }
  return code;
}

std::vector<FlagSpec> FileFlags() {
  return {
      {"dry-run", 0, false, "none",
       "none, server (validated, not stored) or client (nothing sent)"},
      {"filename", 'f', false, "", "file, directory or - (stdin); repeatable"},
      {"recursive", 'R', true, "", "descend into subdirectories of -f DIR"},
  };
}

}  // namespace

CommandSpec ApplyCommand() {
  std::vector<FlagSpec> flags = FileFlags();
  flags.push_back({"server-side", 0, true, "",
                   "server-side apply (PATCH application/apply-patch+yaml)"});
  flags.push_back({"force-conflicts", 0, true, "",
                   "server-side apply: take fields other managers own"});
  return {"apply",
          "Apply a configuration to resources by file or stdin",
          "kpctl apply -f FILE|DIR|- [flags]",
          flags,
          true,
          RunApply};
}

CommandSpec CreateCommand() {
  std::vector<FlagSpec> flags = FileFlags();
  flags.push_back({"save-config", 0, true, "",
                   "record the last-applied annotation (for a later apply)"});
  return {"create",
          "Create resources from a file or stdin",
          "kpctl create -f FILE|DIR|- [flags]",
          flags,
          true,
          RunCreate};
}

CommandSpec DeleteCommand() {
  std::vector<FlagSpec> flags = FileFlags();
  flags.push_back({"selector", 'l', false, "",
                   "delete objects matching this "
                   "label selector"});
  flags.push_back({"field-selector", 0, false, "", "and this field selector"});
  flags.push_back({"all", 0, true, "", "delete every object of the types"});
  flags.push_back(
      {"ignore-not-found", 0, true, "", "a missing object is not an error"});
  flags.push_back(
      {"wait", 0, true, "true", "wait until terminating objects are gone"});
  flags.push_back(
      {"timeout", 0, false, "0", "how long --wait waits (0: forever)"});
  return {"delete",
          "Delete resources by file, names or label selector",
          "kpctl delete (-f FILE | TYPE NAME... | TYPE/NAME... | TYPE -l "
          "SELECTOR | TYPE --all) [flags]",
          flags,
          true,
          RunDelete};
}

}  // namespace kplane::kpctl::kube
