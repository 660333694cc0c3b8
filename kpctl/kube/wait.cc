// kpctl wait --for=condition=X[=V] | --for=delete.
#include <rapidjson/document.h>

#include "base/strings.h"
#include "informer/api_errors.h"
#include "kpctl/kube/commands.h"
#include "kpctl/kube/printer.h"
#include "kpctl/kube/resources.h"
#include "kpctl/kube/rollout.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Document;
using rapidjson::Value;

struct WaitFor {
  bool del = false;
  std::string type;
  std::string value = "True";
};

StatusOr<WaitFor> ParseFor(const std::string& s) {
  WaitFor w;
  if (ToLower(s) == "delete") {
    w.del = true;
    return w;
  }
  if (!s.starts_with("condition=") || s.size() == 10) {
    return InvalidArgumentError("unrecognized condition: \"" + s +
                                "\" (use --for=condition=NAME[=VALUE] or "
                                "--for=delete)");
  }
  std::string rest = s.substr(10);
  const size_t eq = rest.find('=');
  if (eq != std::string::npos) {
    w.value = rest.substr(eq + 1);
    rest.resize(eq);
  }
  w.type = rest;
  return w;
}

// OK when met; DeadlineExceeded on timeout; NotFound for a missing object
// when waiting for a condition.
Status WaitOne(Context& ctx, const objects::ResourceInfo& r, const std::string& ns,
               const std::string& name, const WaitFor& w, TimePoint deadline) {
  for (;;) {
    StatusOr<Document> live = ctx.client->Get(r, ns, name);
    if (!live.ok()) {
      if (w.del && informer::IsNotFound(live.status())) return Status();
      return live.status();
    }
    if (!w.del && ConditionMet(*live, w.type, w.value)) return Status();
    if (ctx.clock()->Now() >= deadline) {
      return DeadlineExceededError("timed out");
    }
    bool met = false;
    ListQuery q;
    q.field_selector = "metadata.name=" + name;
    q.resource_version = StrAt(*live, {"metadata", "resourceVersion"});
    q.allow_bookmarks = true;
    Status s = ctx.client->Watch(
        r, ns, q, false,
        [&](std::string_view type, Value& obj) {
          if (type == "BOOKMARK") return true;
          met = w.del ? type == "DELETED"
                      : type != "DELETED" && ConditionMet(obj, w.type, w.value);
          return !met;
        },
        deadline);
    if (met) return Status();
    if (s.code() == StatusCode::kDeadlineExceeded) return s;
    if (!s.ok() && !informer::IsExpired(s)) return s;
  }
}

int RunWait(Context& ctx) {
  const Flags& f = *ctx.flags;
  if (!f.Has("for")) return ctx.Fail("--for must be given");
  StatusOr<WaitFor> w = ParseFor(f.Get("for"));
  if (!w.ok()) return ctx.Fail(w.status().message());
  StatusOr<Duration> timeout = DurationFlag(f, "timeout");
  if (!timeout.ok()) return ctx.Fail(timeout.status());
  StatusOr<std::vector<ResourceSelection>> sel =
      ParseResourceArgs(f.positional());
  if (!sel.ok()) return ctx.Fail(sel.status().message());
  struct Item {
    const objects::ResourceInfo* r;
    std::string name;
  };
  std::vector<Item> items;
  for (const auto& s : *sel) {
    if (!s.names.empty()) {
      for (const auto& n : s.names) items.push_back({s.resource, n});
      continue;
    }
    if (f.Get("selector").empty() && !f.GetBool("all")) {
      return ctx.Fail("resource(s) were provided, but no name was specified");
    }
    StatusOr<Document> list = ctx.client->List(
        *s.resource, ctx.ns(), {.label_selector = f.Get("selector")});
    if (!list.ok()) return ctx.Fail(list.status());
    for (const Value& i : (*list)["items"].GetArray()) {
      items.push_back({s.resource, StrAt(i, {"metadata", "name"})});
    }
  }
  if (items.empty()) return ctx.Fail("no matching resources found");
  const TimePoint deadline = ctx.clock()->Now() + *timeout;
  int code = 0;
  for (const Item& it : items) {
    Status s = WaitOne(ctx, *it.r, ctx.ns(), it.name, *w, deadline);
    if (s.ok()) {
      ctx.out() << ObjectRef(*it.r, it.name) << " condition met\n";
      ctx.out().flush();
    } else if (s.code() == StatusCode::kDeadlineExceeded) {
      code = ctx.Fail("timed out waiting for the condition on " +
                      it.r->resource + "/" + it.name);
    } else {
      code = ctx.Fail(s);
    }
  }
  return code;
}

}  // namespace

CommandSpec WaitCommand() {
  return {"wait",
          "Wait for a condition on one or many resources",
          "kpctl wait (TYPE NAME | TYPE/NAME | TYPE -l SEL) "
          "--for=condition=NAME[=VALUE]|delete [flags]",
          {{"for", 0, false, "", "condition=NAME[=VALUE] or delete"},
           {"timeout", 0, false, "30s", "give up after this long"},
           {"selector", 'l', false, "", "wait on objects matching this"},
           {"all", 0, true, "", "wait on every object of the type"}},
          true,
          RunWait};
}

}  // namespace kplane::kpctl::kube
