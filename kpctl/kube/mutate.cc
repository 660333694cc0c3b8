// kpctl scale, label, annotate, rollout, edit: changes to live objects.
#include <rapidjson/document.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "base/deep_stack.h"
#include "base/strings.h"
#include "informer/api_errors.h"
#include "kpctl/kube/commands.h"
#include "kpctl/kube/printer.h"
#include "kpctl/kube/resources.h"
#include "kpctl/kube/rollout.h"
#include "objects/patch/json_patch.h"
#include "objects/patch/json_value.h"
#include "objects/patch/merge_patch.h"
#include "objects/patch/patch_meta.h"
#include "objects/patch/strategic.h"
#include "objects/time.h"
#include "objects/yaml.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Document;
using rapidjson::Value;

// One named object from TYPE NAME or TYPE/NAME arguments.
struct Named {
  const objects::ResourceInfo* resource = nullptr;
  std::string name;
};

StatusOr<std::vector<Named>> NamedObjects(
    const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(std::vector<ResourceSelection> sel, ParseResourceArgs(args));
  std::vector<Named> out;
  for (const auto& s : sel) {
    for (const auto& n : s.names) out.push_back({s.resource, n});
  }
  if (out.empty()) {
    return InvalidArgumentError(
        "resource(s) were provided, but no name was "
        "specified");
  }
  return out;
}

std::string Quote(const std::string& s) {
  rapidjson::Value v(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return patch::CompactJson(v);
}

// ---- scale

int RunScale(Context& ctx) {
  const Flags& f = *ctx.flags;
  std::optional<int64_t> replicas = ParseInt64(f.Get("replicas"));
  if (!f.Has("replicas") || !replicas || *replicas < 0) {
    return ctx.Fail(
        "The --replicas=COUNT flag is required, and COUNT must "
        "be greater than or equal to 0");
  }
  StatusOr<std::vector<Named>> objs = NamedObjects(f.positional());
  if (!objs.ok()) return ctx.Fail(objs.status().message());
  int code = 0;
  for (const Named& o : *objs) {
    if (o.resource->FindSubresource("scale") == nullptr) {
      code = ctx.Fail("cannot scale " + o.resource->GroupResource() +
                      ": it has no scale subresource");
      continue;
    }
    if (f.Has("current-replicas")) {
      StatusOr<Document> scale =
          ctx.client->Get(*o.resource, ctx.ns(), o.name, "scale");
      if (!scale.ok()) {
        code = ctx.Fail(scale.status());
        continue;
      }
      const std::string want = f.Get("current-replicas");
      const int64_t have = IntAt(*scale, {"spec", "replicas"});
      if (std::to_string(have) != want) {
        code = ctx.Fail("Expected replicas to be " + want + ", was " +
                        std::to_string(have));
        continue;
      }
    }
    StatusOr<Document> r = ctx.client->Patch(
        *o.resource, ctx.ns(), o.name, PatchType::kMergePatch,
        "{\"spec\":{\"replicas\":" + std::to_string(*replicas) + "}}", "",
        "scale");
    if (!r.ok()) {
      code = ctx.Fail(r.status());
      continue;
    }
    ctx.out() << ObjectRef(*o.resource, o.name) << " scaled\n";
  }
  return code;
}

// ---- label / annotate

int RunMetadataMap(Context& ctx, const char* field, const char* verb,
                   const char* manager) {
  const Flags& f = *ctx.flags;
  std::vector<std::string> resource_args;
  std::map<std::string, std::optional<std::string>> changes;  // nullopt: -
  for (const std::string& a : f.positional()) {
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      if (eq == 0) return ctx.Fail("invalid " + std::string(field) + ": " + a);
      changes[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (a.size() > 1 && a.back() == '-') {
      changes[a.substr(0, a.size() - 1)] = std::nullopt;
    } else if (changes.empty()) {
      resource_args.push_back(a);
    } else {
      return ctx.Fail("all resources must be specified before " +
                      std::string(field) + " changes: " + a);
    }
  }
  if (changes.empty()) {
    return ctx.Fail(std::string("at least one ") + field +
                    " update is required");
  }
  std::vector<Named> objs;
  const std::string selector = f.Get("selector");
  if (!selector.empty() || f.GetBool("all")) {
    StatusOr<std::vector<ResourceSelection>> sel =
        ParseResourceArgs(resource_args);
    if (!sel.ok()) return ctx.Fail(sel.status().message());
    for (const auto& s : *sel) {
      StatusOr<Document> list =
          ctx.client->List(*s.resource, ctx.ns(), {.label_selector = selector});
      if (!list.ok()) return ctx.Fail(list.status());
      for (const Value& i : (*list)["items"].GetArray()) {
        objs.push_back({s.resource, StrAt(i, {"metadata", "name"})});
      }
    }
  } else {
    StatusOr<std::vector<Named>> named = NamedObjects(resource_args);
    if (!named.ok()) return ctx.Fail(named.status().message());
    objs = *named;
  }
  const bool overwrite = f.GetBool("overwrite");
  int code = 0;
  for (const Named& o : objs) {
    StatusOr<Document> live = ctx.client->Get(*o.resource, ctx.ns(), o.name);
    if (!live.ok()) {
      code = ctx.Fail(live.status());
      continue;
    }
    const Value* current = At(*live, {"metadata", field});
    bool changed = false;
    bool refused = false;
    std::string body;
    for (const auto& [key, value] : changes) {
      const Value* have = nullptr;
      if (current != nullptr && current->IsObject()) {
        auto it = current->FindMember(key.c_str());
        if (it != current->MemberEnd()) have = &it->value;
      }
      if (value.has_value()) {
        if (have != nullptr && have->IsString() &&
            *value == have->GetString()) {
          continue;
        }
        if (have != nullptr && !overwrite) {
          code = ctx.Fail("'" + key + "' already has a value (" +
                          (have->IsString() ? have->GetString() : "") +
                          "), and --overwrite is false");
          refused = true;
          break;
        }
      } else if (have == nullptr) {
        ctx.err() << field << " \"" << key << "\" not found.\n";
        continue;
      }
      body += (body.empty() ? "" : ",") + Quote(key) + ":" +
              (value ? Quote(*value) : "null");
      changed = true;
    }
    if (refused) continue;
    if (!changed) {
      ctx.out() << ObjectRef(*o.resource, o.name) << " not " << verb << "\n";
      continue;
    }
    const std::string patch_body =
        "{\"metadata\":{\"" + std::string(field) + "\":{" + body + "}}}";
    StatusOr<Document> r =
        ctx.client->Patch(*o.resource, ctx.ns(), o.name, PatchType::kMergePatch,
                          patch_body, manager);
    if (!r.ok()) {
      code = ctx.Fail(r.status());
      continue;
    }
    ctx.out() << ObjectRef(*o.resource, o.name) << " " << verb << "\n";
  }
  return code;
}

int RunLabel(Context& ctx) {
  return RunMetadataMap(ctx, "labels", "labeled", "kubectl-label");
}
int RunAnnotate(Context& ctx) {
  return RunMetadataMap(ctx, "annotations", "annotated", "kubectl-annotate");
}

std::vector<FlagSpec> MetadataMapFlags() {
  return {
      {"overwrite", 0, true, "", "replace existing values"},
      {"selector", 'l', false, "",
       "change every object matching this "
       "label selector"},
      {"all", 0, true, "", "change every object of the type"},
  };
}

// ---- rollout

const objects::ResourceInfo* Deployments() {
  return objects::Scheme::Default().FindResource("apps", "v1", "deployments");
}

StatusOr<Named> OneDeployment(Context& ctx,
                              const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(std::vector<Named> objs, NamedObjects(args));
  if (objs.size() != 1) {
    return InvalidArgumentError("rollout takes exactly one deployment");
  }
  if (objs[0].resource != Deployments()) {
    return InvalidArgumentError("no rollout support for " +
                                objs[0].resource->GroupResource() +
                                " (deployments only)");
  }
  return objs[0];
}

int RolloutStatus(Context& ctx, const Named& d) {
  const Flags& f = *ctx.flags;
  StatusOr<Duration> timeout = DurationFlag(f, "timeout");
  if (!timeout.ok()) return ctx.Fail(timeout.status());
  std::optional<TimePoint> deadline;
  if (*timeout > Duration(0)) deadline = ctx.clock()->Now() + *timeout;
  const bool watch = f.Get("watch").empty() || f.GetBool("watch");
  std::string last;
  auto report = [&](const Value& obj) -> StatusOr<bool> {
    ASSIGN_OR_RETURN(RolloutState st, DeploymentRolloutStatus(obj));
    if (st.message != last) {
      ctx.out() << st.message << "\n";
      ctx.out().flush();
      last = st.message;
    }
    return st.done;
  };
  StatusOr<Document> live = ctx.client->Get(*d.resource, ctx.ns(), d.name);
  if (!live.ok()) return ctx.Fail(live.status());
  for (;;) {
    StatusOr<bool> done = report(*live);
    if (!done.ok()) return ctx.Fail(done.status().message());
    if (*done || !watch) return 0;
    Status error;
    bool finished = false;
    ListQuery q;
    q.field_selector = "metadata.name=" + d.name;
    q.resource_version = StrAt(*live, {"metadata", "resourceVersion"});
    q.allow_bookmarks = true;
    Status s = ctx.client->Watch(
        *d.resource, ctx.ns(), q, false,
        [&](std::string_view type, Value& obj) {
          if (type == "BOOKMARK") return true;
          if (type == "DELETED") {
            error = NotFoundError("object has been deleted");
            return false;
          }
          StatusOr<bool> r = report(obj);
          if (!r.ok()) {
            error = r.status();
            return false;
          }
          finished = *r;
          return !finished;
        },
        deadline);
    if (!error.ok()) return ctx.Fail(error.message());
    if (finished) return 0;
    if (s.code() == StatusCode::kDeadlineExceeded) {
      return ctx.Fail("timed out waiting for the condition");
    }
    if (!s.ok() && !informer::IsExpired(s)) return ctx.Fail(s);
    // The server ended the watch (its timeout) or the version expired:
    // read the object again and continue.
    live = ctx.client->Get(*d.resource, ctx.ns(), d.name);
    if (!live.ok()) return ctx.Fail(live.status());
  }
}

// The deployment's ReplicaSets by revision (controllerRef to its uid).
StatusOr<std::map<int64_t, Document>> History(Context& ctx,
                                              const Value& deployment) {
  const objects::ResourceInfo* rs =
      objects::Scheme::Default().FindResource("apps", "v1", "replicasets");
  ASSIGN_OR_RETURN(Document list, ctx.client->List(*rs, ctx.ns()));
  const std::string uid = StrAt(deployment, {"metadata", "uid"});
  std::map<int64_t, Document> out;
  for (Value& item : list["items"].GetArray()) {
    const Value* owners = At(item, {"metadata", "ownerReferences"});
    bool owned = false;
    if (owners != nullptr && owners->IsArray()) {
      for (const Value& o : owners->GetArray())
        owned |= StrAt(o, {"uid"}) == uid;
    }
    if (!owned) continue;
    std::optional<int64_t> rev =
        ParseInt64(StrAt(item, {"metadata", "annotations",
                                "deployment.kubernetes.io/revision"}));
    if (!rev) continue;
    Document d;
    d.CopyFrom(item, d.GetAllocator());
    out.emplace(*rev, std::move(d));
  }
  return out;
}

int RolloutHistory(Context& ctx, const Named& d) {
  StatusOr<Document> live = ctx.client->Get(*d.resource, ctx.ns(), d.name);
  if (!live.ok()) return ctx.Fail(live.status());
  StatusOr<std::map<int64_t, Document>> h = History(ctx, *live);
  if (!h.ok()) return ctx.Fail(h.status());
  const Flags& f = *ctx.flags;
  if (f.Has("revision") && f.Get("revision") != "0") {
    std::optional<int64_t> rev = ParseInt64(f.Get("revision"));
    auto it = rev ? h->find(*rev) : h->end();
    if (it == h->end()) {
      return ctx.Fail("unable to find the specified revision");
    }
    ctx.out() << ObjectRef(*d.resource, d.name) << " with revision #" << *rev
              << "\nPod Template:\n";
    const Value* tmpl = At(it->second, {"spec", "template"});
    std::string yaml = tmpl != nullptr ? ToYaml(*tmpl) : "";
    for (const std::string& line : StrSplit(yaml, '\n')) {
      if (!line.empty()) ctx.out() << "  " << line << "\n";
    }
    return 0;
  }
  ctx.out() << ObjectRef(*d.resource, d.name) << "\n";
  if (h->empty()) {
    ctx.out() << "No rollout history found.\n";
    return 0;
  }
  // kubectl's history table uses padding 2.
  std::vector<std::pair<std::string, std::string>> rows = {
      {"REVISION", "CHANGE-CAUSE"}};
  for (const auto& [rev, rs] : *h) {
    std::string cause =
        StrAt(rs, {"metadata", "annotations", "kubernetes.io/change-cause"});
    rows.emplace_back(std::to_string(rev), cause.empty() ? "<none>" : cause);
  }
  size_t w = 0;
  for (const auto& r : rows) w = std::max(w, r.first.size() + 2);
  for (const auto& r : rows) {
    ctx.out() << r.first << std::string(w - r.first.size(), ' ') << r.second
              << "\n";
  }
  ctx.out() << "\n";
  return 0;
}

int RolloutUndo(Context& ctx, const Named& d) {
  StatusOr<Document> live = ctx.client->Get(*d.resource, ctx.ns(), d.name);
  if (!live.ok()) return ctx.Fail(live.status());
  StatusOr<std::map<int64_t, Document>> h = History(ctx, *live);
  if (!h.ok()) return ctx.Fail(h.status());
  std::optional<int64_t> to = ParseInt64(ctx.flags->Get("to-revision"));
  if (!to) return ctx.Fail("invalid --to-revision");
  const Value* target = nullptr;
  int64_t target_rev = 0;
  if (*to == 0) {
    // The previous revision: the highest below the current one.
    const int64_t current =
        ParseInt64(StrAt(*live, {"metadata", "annotations",
                                 "deployment.kubernetes.io/revision"}))
            .value_or(h->empty() ? 0 : h->rbegin()->first);
    for (const auto& [rev, rs] : *h) {
      if (rev < current) {
        target = &rs;
        target_rev = rev;
      }
    }
    if (target == nullptr) {
      return ctx.Fail("no rollout history found for deployment \"" + d.name +
                      "\"");
    }
  } else {
    auto it = h->find(*to);
    if (it == h->end()) {
      return ctx.Fail("unable to find specified revision " +
                      std::to_string(*to) + " in history");
    }
    target = &it->second;
    target_rev = *to;
  }
  const Value* target_tmpl = At(*target, {"spec", "template"});
  if (target_tmpl == nullptr || !target_tmpl->IsObject()) {
    return ctx.Fail("revision " + std::to_string(target_rev) +
                    " (replicaset \"" + StrAt(*target, {"metadata", "name"}) +
                    "\") has no pod template");
  }
  Document tmpl;
  tmpl.CopyFrom(*target_tmpl, tmpl.GetAllocator());
  if (Value* labels = const_cast<Value*>(At(tmpl, {"metadata", "labels"}));
      labels != nullptr && labels->IsObject()) {
    labels->RemoveMember("pod-template-hash");
  }
  const Value* live_tmpl = At(*live, {"spec", "template"});
  if (live_tmpl != nullptr && patch::JsonEqual(*live_tmpl, tmpl)) {
    ctx.out() << ObjectRef(*d.resource, d.name)
              << " skipped rollback (current template already matches "
                 "revision "
              << target_rev << ")\n";
    return 0;
  }
  const std::string body =
      "[{\"op\":\"replace\",\"path\":\"/spec/template\","
      "\"value\":" +
      patch::CompactJson(tmpl) + "}]";
  StatusOr<Document> r =
      ctx.client->Patch(*d.resource, ctx.ns(), d.name, PatchType::kJsonPatch,
                        body, "kubectl-rollout");
  if (!r.ok()) return ctx.Fail(r.status());
  ctx.out() << ObjectRef(*d.resource, d.name) << " rolled back\n";
  return 0;
}

int RolloutPatch(Context& ctx, const Named& d, const std::string& body,
                 const char* verb) {
  StatusOr<Document> r = ctx.client->Patch(*d.resource, ctx.ns(), d.name,
                                           PatchType::kStrategicMergePatch,
                                           body, "kubectl-rollout");
  if (!r.ok()) return ctx.Fail(r.status());
  ctx.out() << ObjectRef(*d.resource, d.name) << " " << verb << "\n";
  return 0;
}

int RunRollout(Context& ctx) {
  const std::vector<std::string>& pos = ctx.flags->positional();
  if (pos.empty()) {
    return ctx.Fail(
        "rollout needs a subcommand: status, history, undo, "
        "restart, pause, resume");
  }
  const std::string sub = pos[0];
  StatusOr<Named> d =
      OneDeployment(ctx, std::vector<std::string>(pos.begin() + 1, pos.end()));
  if (!d.ok()) return ctx.Fail(d.status().message());
  if (sub == "status") return RolloutStatus(ctx, *d);
  if (sub == "history") return RolloutHistory(ctx, *d);
  if (sub == "undo") return RolloutUndo(ctx, *d);
  if (sub == "restart") {
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            ctx.clock()->WallNow().time_since_epoch())
                            .count();
    return RolloutPatch(
        ctx, *d,
        "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"kubectl."
        "kubernetes.io/restartedAt\":\"" +
            objects::FormatRfc3339(now) + "\"}}}}}",
        "restarted");
  }
  if (sub == "pause") {
    return RolloutPatch(ctx, *d, R"({"spec":{"paused":true}})", "paused");
  }
  if (sub == "resume") {
    return RolloutPatch(ctx, *d, R"({"spec":{"paused":null})", "resumed");
  }
  return ctx.Fail("unknown rollout subcommand \"" + sub + "\"");
}

// ---- patch

int RunPatch(Context& ctx) {
  const Flags& f = *ctx.flags;
  StatusOr<std::vector<Named>> objs = NamedObjects(f.positional());
  if (!objs.ok()) return ctx.Fail(objs.status().message());
  if (!f.Has("patch")) return ctx.Fail("must specify -p to patch");
  const std::string type = f.Get("type");
  PatchType pt;
  if (type == "strategic") {
    pt = PatchType::kStrategicMergePatch;
  } else if (type == "merge") {
    pt = PatchType::kMergePatch;
  } else if (type == "json") {
    pt = PatchType::kJsonPatch;
  } else {
    return ctx.Fail("--type must be one of [json merge strategic], not \"" +
                    type + "\"");
  }
  // Accept YAML too, as kubectl does; send JSON.
  StatusOr<rapidjson::Document> body = objects::ParseYamlDocument(f.Get("patch"));
  if (!body.ok()) {
    return ctx.Fail("unable to parse \"" + f.Get("patch") +
                    "\": " + body.status().message());
  }
  int code = 0;
  for (const Named& o : *objs) {
    StatusOr<Document> before =
        ctx.client->Get(*o.resource, ctx.ns(), o.name, f.Get("subresource"));
    if (!before.ok()) {
      code = ctx.Fail(before.status());
      continue;
    }
    StatusOr<Document> after = ctx.client->Patch(
        *o.resource, ctx.ns(), o.name, pt, patch::CompactJson(*body),
        "kubectl-patch", f.Get("subresource"));
    if (!after.ok()) {
      code = ctx.Fail(after.status());
      continue;
    }
    const bool changed = StrAt(*before, {"metadata", "resourceVersion"}) !=
                         StrAt(*after, {"metadata", "resourceVersion"});
    ctx.out() << ObjectRef(*o.resource, o.name)
              << (changed ? " patched" : " patched (no change)") << "\n";
  }
  return code;
}

// ---- edit

constexpr char kEditHeader[] =
    "# Please edit the object below. Lines beginning with a '#' will be "
    "ignored,\n"
    "# and an empty file will abort the edit. If an error occurs while "
    "saving this file will be\n"
    "# reopened with the relevant failures.\n#\n";

std::string StripComments(const std::string& text) {
  std::string out;
  for (const std::string& line : StrSplit(text, '\n')) {
    if (StripWhitespace(line).starts_with("#")) continue;
    out += line + "\n";
  }
  return out;
}

int RunEdit(Context& ctx) {
  StatusOr<std::vector<Named>> objs = NamedObjects(ctx.flags->positional());
  if (!objs.ok()) return ctx.Fail(objs.status().message());
  if (objs->size() != 1) return ctx.Fail("edit takes exactly one object");
  const Named& o = (*objs)[0];
  StatusOr<Document> live = ctx.client->Get(*o.resource, ctx.ns(), o.name);
  if (!live.ok()) return ctx.Fail(live.status());
  FillTypeMeta(*live, *o.resource, live->GetAllocator());
  DropManagedFields(*live);
  const std::string original_yaml = ToYaml(*live);

  char path[] = "/tmp/kpctl-edit-XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  if (fd < 0) return ctx.Fail("cannot create a temporary file");
  close(fd);
  {
    std::ofstream f(path);
    f << kEditHeader << original_yaml;
  }
  std::string editor;
  for (const char* var : {"KUBE_EDITOR", "EDITOR"}) {
    const char* v = ctx.io->getenv(var);
    if (v != nullptr && *v != '\0') {
      editor = v;
      break;
    }
  }
  if (editor.empty()) editor = "vi";
  const std::string cmd = editor + " '" + path + "'";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    unlink(path);
    return ctx.Fail("the editor \"" + editor + "\" exited with status " +
                    std::to_string(rc));
  }
  std::stringstream ss;
  {
    std::ifstream f(path);
    ss << f.rdbuf();
  }
  const std::string edited = StripComments(ss.str());
  if (StripWhitespace(edited).empty()) {
    unlink(path);
    ctx.out() << "Edit cancelled, no changes made.\n";
    return 0;
  }
  StatusOr<Document> doc = objects::ParseYamlDocument(edited);
  if (!doc.ok()) {
    ctx.err() << "error: " << path << ": " << doc.status().message()
              << "\nA copy of your changes has been stored to \"" << path
              << "\"\n";
    return 1;
  }
  if (patch::JsonEqual(*doc, *live)) {
    unlink(path);
    ctx.out() << "Edit cancelled, no changes made.\n";
    return 0;
  }
  patch::PatchSchema schema(o.resource->kind->descriptor,
                            &patch::KubernetesPatchMetaTable());
  Document p(rapidjson::kObjectType);
  // The diff recurses once per level; an edited document may be 10,000 deep.
  Status s = InternalError("no patch computed");
  Status ran = RunWithDeepStack([&] {
    s = patch::CreateTwoWayMergePatch(
        *live, *doc, schema, &p, p.GetAllocator(),
        {patch::RequireKeyUnchanged("apiVersion"),
         patch::RequireKeyUnchanged("kind"),
         patch::RequireMetadataKeyUnchanged("name")});
  });
  if (!ran.ok()) s = ran;
  if (!s.ok()) {
    ctx.err() << "error: " << s.message()
              << "\nA copy of your changes has been stored to \"" << path
              << "\"\n";
    return 1;
  }
  StatusOr<Document> r = ctx.client->Patch(
      *o.resource, ctx.ns(), o.name, PatchType::kStrategicMergePatch,
      patch::CanonicalJson(p), "kubectl-edit");
  if (!r.ok()) {
    ctx.err() << ErrorLine(r.status()) << "\nA copy of your changes has been "
              << "stored to \"" << path << "\"\n";
    return 1;
  }
  unlink(path);
  ctx.out() << ObjectRef(*o.resource, o.name) << " edited\n";
  return 0;
}

}  // namespace

CommandSpec ScaleCommand() {
  return {"scale",
          "Set a new size for a deployment or replica set",
          "kpctl scale (TYPE NAME | TYPE/NAME) --replicas=COUNT [flags]",
          {{"replicas", 0, false, "", "the new number of replicas"},
           {"current-replicas", 0, false, "",
            "precondition: only scale if the current size is this"}},
          true,
          RunScale};
}

CommandSpec LabelCommand() {
  return {"label",
          "Update the labels on a resource",
          "kpctl label (TYPE NAME | TYPE/NAME | TYPE -l SEL) KEY=VAL... "
          "KEY-... [flags]",
          MetadataMapFlags(),
          true,
          RunLabel};
}

CommandSpec AnnotateCommand() {
  return {"annotate",
          "Update the annotations on a resource",
          "kpctl annotate (TYPE NAME | TYPE/NAME | TYPE -l SEL) KEY=VAL... "
          "KEY-... [flags]",
          MetadataMapFlags(),
          true,
          RunAnnotate};
}

CommandSpec RolloutCommand() {
  return {
      "rollout",
      "Manage the rollout of a deployment",
      "kpctl rollout (status|history|undo|restart|pause|resume) "
      "(deployment NAME | deployment/NAME) [flags]",
      {{"timeout", 0, false, "0", "status: give up after this long (0: never)"},
       {"watch", 'w', true, "true", "status: wait for the rollout"},
       {"revision", 0, false, "0", "history: show this revision"},
       {"to-revision", 0, false, "0",
        "undo: roll back to this revision (0: the previous one)"}},
      true,
      RunRollout};
}

CommandSpec PatchCommand() {
  return {"patch",
          "Update fields of a resource with a patch",
          "kpctl patch (TYPE NAME | TYPE/NAME) -p PATCH [--type "
          "strategic|merge|json] [flags]",
          {{"patch", 'p', false, "", "the patch (JSON or YAML)"},
           {"type", 0, false, "strategic", "strategic, merge or json"},
           {"subresource", 0, false, "", "e.g. status or scale"}},
          true,
          RunPatch};
}

CommandSpec EditCommand() {
  return {"edit",
          "Edit a resource in $KUBE_EDITOR or $EDITOR",
          "kpctl edit (TYPE NAME | TYPE/NAME) [flags]",
          {},
          true,
          RunEdit};
}

}  // namespace kplane::kpctl::kube
