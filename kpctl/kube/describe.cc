// kpctl describe: a readable subset of kubectl's describers for pods,
// deployments and nodes; other kinds print metadata plus spec and status
// as YAML.
#include <rapidjson/document.h>
#include <time.h>

#include <algorithm>
#include <sstream>

#include "objects/machinery/duration.h"
#include "objects/time.h"
#include "base/strings.h"
#include "kpctl/kube/commands.h"
#include "kpctl/kube/printer.h"
#include "kpctl/kube/resources.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Document;
using rapidjson::Value;

// Lines of "Key:<pad>value" with keys of one section padded alike.
class Describer {
 public:
  explicit Describer(std::ostream* out) : out_(out) {}
  void Field(int indent, const std::string& key, const std::string& value) {
    // Continuation lines (empty key) carry no colon.
    lines_.push_back({indent, key.empty() ? "" : key + ":", value, true});
  }
  void Line(int indent, const std::string& text) {
    lines_.push_back({indent, text, "", false});
  }
  // A map (labels, annotations) as "k=v" lines, the first on the key's line.
  void Map(int indent, const std::string& key, const Value* map,
           const char* sep = "=") {
    if (map == nullptr || !map->IsObject() || map->MemberCount() == 0) {
      Field(indent, key, "<none>");
      return;
    }
    std::vector<std::string> items;
    for (auto& m : map->GetObject()) {
      // kubectl describe leaves out apply's bookkeeping.
      if (std::string_view(m.name.GetString()) ==
          "kubectl.kubernetes.io/last-applied-configuration") {
        continue;
      }
      const std::string v =
          m.value.IsString() ? m.value.GetString() : CellString(m.value);
      items.push_back(std::string(m.name.GetString()) + sep +
                      std::string(StripWhitespace(v)));
    }
    if (items.empty()) {
      Field(indent, key, "<none>");
      return;
    }
    std::sort(items.begin(), items.end());
    Field(indent, key, items[0]);
    for (size_t i = 1; i < items.size(); ++i) Field(indent, "", items[i]);
  }
  void Table(int indent, const std::vector<std::vector<std::string>>& rows) {
    std::ostringstream s;
    TabWriter tw(&s);
    for (const auto& r : rows) tw.AddRow(r);
    tw.Flush();
    for (const std::string& l : StrSplit(s.str(), '\n')) {
      if (!l.empty()) Line(indent, l);
    }
  }
  void Flush() {
    // Pad keys per run of fields at one indentation (kubectl aligns the
    // values of a section).
    for (size_t i = 0; i < lines_.size();) {
      size_t j = i;
      size_t width = 0;
      while (j < lines_.size() && lines_[j].field &&
             lines_[j].indent == lines_[i].indent) {
        width = std::max(width, lines_[j].key.size());
        ++j;
      }
      if (j == i) {
        *out_ << std::string(lines_[i].indent, ' ') << lines_[i].key << "\n";
        ++i;
        continue;
      }
      for (size_t k = i; k < j; ++k) {
        const auto& l = lines_[k];
        std::string key = l.key;
        key.resize(width + 2, ' ');
        std::string text = std::string(l.indent, ' ') + key + l.value;
        while (!text.empty() && text.back() == ' ') text.pop_back();
        *out_ << text << "\n";
      }
      i = j;
    }
    lines_.clear();
  }

 private:
  struct L {
    int indent;
    std::string key;
    std::string value;
    bool field;
  };
  std::ostream* out_;
  std::vector<L> lines_;
};

std::string Or(const std::string& s, const std::string& def = "<none>") {
  return s.empty() ? def : s;
}

std::string Age(Context& ctx, const std::string& rfc3339) {
  StatusOr<objects::Timestamp> t = objects::ParseRfc3339(rfc3339);
  if (!t.ok()) return "<unknown>";
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          ctx.clock()->WallNow().time_since_epoch())
                          .count();
  return machinery::HumanDuration(now - t->seconds * machinery::kSecond);
}

// "Sun, 29 Nov 2026 14:08:10 +0000", as kubectl describe prints times.
std::string When(const std::string& rfc3339) {
  StatusOr<objects::Timestamp> t = objects::ParseRfc3339(rfc3339);
  if (!t.ok()) return rfc3339;
  const time_t secs = static_cast<time_t>(t->seconds);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S +0000", &tm);
  return buf;
}

std::string ControllerOf(const Value& obj) {
  const Value* owners = At(obj, {"metadata", "ownerReferences"});
  if (owners == nullptr || !owners->IsArray()) return "";
  for (const Value& o : owners->GetArray()) {
    const Value* c = At(o, {"controller"});
    if (c != nullptr && c->IsBool() && c->GetBool()) {
      return StrAt(o, {"kind"}) + "/" + StrAt(o, {"name"});
    }
  }
  return "";
}

void Common(Describer& d, const Value& obj, bool namespaced) {
  d.Field(0, "Name", StrAt(obj, {"metadata", "name"}));
  if (namespaced)
    d.Field(0, "Namespace", StrAt(obj, {"metadata", "namespace"}));
}

void Containers(Describer& d, int indent, int fields, const Value* containers,
                const Value* statuses) {
  if (containers == nullptr || !containers->IsArray()) return;
  for (const Value& c : containers->GetArray()) {
    const std::string name = StrAt(c, {"name"});
    d.Line(indent, name + ":");
    d.Field(fields, "Image", StrAt(c, {"image"}));
    if (const Value* ports = At(c, {"ports"}); ports && ports->IsArray()) {
      std::vector<std::string> ps;
      for (const Value& p : ports->GetArray()) {
        ps.push_back(std::to_string(IntAt(p, {"containerPort"})) + "/" +
                     Or(StrAt(p, {"protocol"}), "TCP"));
      }
      d.Field(fields, ps.size() > 1 ? "Ports" : "Port", StrJoin(ps, ", "));
    }
    if (statuses != nullptr && statuses->IsArray()) {
      for (const Value& s : statuses->GetArray()) {
        if (StrAt(s, {"name"}) != name) continue;
        const Value* state = At(s, {"state"});
        std::string st = "Waiting";
        if (At(s, {"state", "running"}) != nullptr) st = "Running";
        if (At(s, {"state", "terminated"}) != nullptr) st = "Terminated";
        d.Field(fields, "State", st);
        if (st == "Running") {
          d.Field(fields + 2, "Started",
                  StrAt(*state, {"running", "startedAt"}));
        } else if (st == "Waiting") {
          // No `state` at all (nothing reported yet) is Waiting without a
          // reason, as kubectl prints it.
          if (state != nullptr) {
            d.Field(fields + 2, "Reason", StrAt(*state, {"waiting", "reason"}));
          }
        } else {
          d.Field(fields + 2, "Reason",
                  StrAt(*state, {"terminated", "reason"}));
          d.Field(fields + 2, "Exit Code",
                  std::to_string(IntAt(*state, {"terminated", "exitCode"})));
        }
        const Value* ready = At(s, {"ready"});
        d.Field(
            fields, "Ready",
            ready && ready->IsBool() && ready->GetBool() ? "True" : "False");
        d.Field(fields, "Restart Count",
                std::to_string(IntAt(s, {"restartCount"})));
      }
    }
    for (const char* kind : {"limits", "requests"}) {
      const Value* m = At(c, {"resources", kind});
      if (m == nullptr || !m->IsObject() || m->MemberCount() == 0) continue;
      std::string k = kind;
      k[0] = static_cast<char>(std::toupper(k[0]));
      d.Line(fields, k + ":");
      for (auto& e : m->GetObject()) {
        d.Field(fields + 2, e.name.GetString(), CellString(e.value));
      }
    }
    const Value* env = At(c, {"env"});
    if (env != nullptr && env->IsArray() && env->Size() > 0) {
      d.Line(fields, "Environment:");
      for (const Value& e : env->GetArray()) {
        std::string v = StrAt(e, {"value"});
        if (At(e, {"valueFrom"}) != nullptr) v = "<set from a reference>";
        d.Field(fields + 2, StrAt(e, {"name"}), v);
      }
    } else {
      d.Field(fields, "Environment", "<none>");
    }
  }
}

void Conditions(Describer& d, const Value& obj, bool with_reason) {
  const Value* conds = At(obj, {"status", "conditions"});
  if (conds == nullptr || !conds->IsArray() || conds->Empty()) {
    d.Field(0, "Conditions", "<none>");
    return;
  }
  d.Line(0, "Conditions:");
  std::vector<std::vector<std::string>> rows;
  rows.push_back(with_reason
                     ? std::vector<std::string>{"Type", "Status", "Reason"}
                     : std::vector<std::string>{"Type", "Status"});
  rows.push_back(with_reason
                     ? std::vector<std::string>{"----", "------", "------"}
                     : std::vector<std::string>{"----", "------"});
  for (const Value& c : conds->GetArray()) {
    std::vector<std::string> r = {StrAt(c, {"type"}), StrAt(c, {"status"})};
    if (with_reason) r.push_back(StrAt(c, {"reason"}));
    rows.push_back(r);
  }
  d.Table(2, rows);
}

void Events(Context& ctx, Describer& d, const Value& obj) {
  const objects::ResourceInfo* events =
      objects::Scheme::Default().FindResource("", "v1", "events");
  ListQuery q;
  const std::string ns = StrAt(obj, {"metadata", "namespace"});
  q.field_selector = "involvedObject.name=" + StrAt(obj, {"metadata", "name"}) +
                     ",involvedObject.namespace=" + ns +
                     ",involvedObject.uid=" + StrAt(obj, {"metadata", "uid"});
  StatusOr<Document> list =
      events != nullptr ? ctx.client->List(*events, ns, q)
                        : StatusOr<Document>(NotFoundError("no events"));
  // kubectl ignores errors listing events.
  if (!list.ok() || (*list)["items"].Empty()) {
    d.Field(0, "Events", "<none>");
    return;
  }
  d.Line(0, "Events:");
  std::vector<std::vector<std::string>> rows = {
      {"Type", "Reason", "Age", "From", "Message"},
      {"----", "------", "----", "----", "-------"}};
  for (const Value& e : (*list)["items"].GetArray()) {
    std::string when = StrAt(e, {"lastTimestamp"});
    if (when.empty()) when = StrAt(e, {"eventTime"});
    if (when.empty()) when = StrAt(e, {"metadata", "creationTimestamp"});
    std::string from = StrAt(e, {"source", "component"});
    if (from.empty()) from = StrAt(e, {"reportingComponent"});
    rows.push_back({StrAt(e, {"type"}), StrAt(e, {"reason"}), Age(ctx, when),
                    from, StrAt(e, {"message"})});
  }
  d.Table(2, rows);
}

void DescribePod(Context& ctx, Describer& d, const Value& p) {
  Common(d, p, true);
  d.Field(0, "Priority", std::to_string(IntAt(p, {"spec", "priority"})));
  std::string node = StrAt(p, {"spec", "nodeName"});
  if (!node.empty() && !StrAt(p, {"status", "hostIP"}).empty()) {
    node += "/" + StrAt(p, {"status", "hostIP"});
  }
  d.Field(0, "Node", Or(node));
  if (!StrAt(p, {"status", "startTime"}).empty()) {
    d.Field(0, "Start Time", When(StrAt(p, {"status", "startTime"})));
  }
  d.Map(0, "Labels", At(p, {"metadata", "labels"}));
  d.Map(0, "Annotations", At(p, {"metadata", "annotations"}), ": ");
  std::string status = StrAt(p, {"status", "phase"});
  if (!StrAt(p, {"metadata", "deletionTimestamp"}).empty()) {
    status = "Terminating (lasts " +
             Age(ctx, StrAt(p, {"metadata", "deletionTimestamp"})) + ")";
  }
  d.Field(0, "Status", Or(status, "Pending"));
  d.Field(0, "IP", StrAt(p, {"status", "podIP"}));
  const std::string ctrl = ControllerOf(p);
  if (!ctrl.empty()) d.Field(0, "Controlled By", ctrl);
  d.Line(0, "Containers:");
  Containers(d, 2, 4, At(p, {"spec", "containers"}),
             At(p, {"status", "containerStatuses"}));
  Conditions(d, p, false);
  const Value* tol = At(p, {"spec", "tolerations"});
  if (tol != nullptr && tol->IsArray() && !tol->Empty()) {
    bool first = true;
    for (const Value& t : tol->GetArray()) {
      std::string s = StrAt(t, {"key"});
      if (StrAt(t, {"operator"}) == "Equal" || !StrAt(t, {"value"}).empty()) {
        s += "=" + StrAt(t, {"value"});
      }
      if (!StrAt(t, {"effect"}).empty()) s += ":" + StrAt(t, {"effect"});
      if (At(t, {"tolerationSeconds"}) != nullptr) {
        s += " for " + std::to_string(IntAt(t, {"tolerationSeconds"})) + "s";
      }
      if (StrAt(t, {"operator"}) == "Exists" && StrAt(t, {"key"}).empty()) {
        s = ":" + StrAt(t, {"effect"}) + " op=Exists";
      }
      d.Field(0, first ? "Tolerations" : "", s);
      first = false;
    }
  } else {
    d.Field(0, "Tolerations", "<none>");
  }
  Events(ctx, d, p);
}

std::string SelectorString(const Value* sel) {
  if (sel == nullptr) return "<none>";
  std::vector<std::string> parts;
  if (const Value* m = At(*sel, {"matchLabels"}); m && m->IsObject()) {
    for (auto& e : m->GetObject()) {
      parts.push_back(std::string(e.name.GetString()) + "=" +
                      (e.value.IsString() ? e.value.GetString() : ""));
    }
  }
  std::sort(parts.begin(), parts.end());
  if (const Value* ex = At(*sel, {"matchExpressions"}); ex && ex->IsArray()) {
    for (const Value& e : ex->GetArray()) {
      std::vector<std::string> vals;
      if (const Value* v = At(e, {"values"}); v && v->IsArray()) {
        for (const Value& x : v->GetArray()) vals.push_back(CellString(x));
      }
      std::string op = ToLower(StrAt(e, {"operator"}));
      if (op == "exists") {
        parts.push_back(StrAt(e, {"key"}));
      } else if (op == "doesnotexist") {
        parts.push_back("!" + StrAt(e, {"key"}));
      } else {
        parts.push_back(StrAt(e, {"key"}) + " " + op + " (" +
                        StrJoin(vals, ",") + ")");
      }
    }
  }
  return parts.empty() ? "<none>" : StrJoin(parts, ",");
}

void DescribeDeployment(Context& ctx, Describer& d, const Value& dep) {
  Common(d, dep, true);
  d.Field(0, "CreationTimestamp",
          When(StrAt(dep, {"metadata", "creationTimestamp"})));
  d.Map(0, "Labels", At(dep, {"metadata", "labels"}));
  d.Map(0, "Annotations", At(dep, {"metadata", "annotations"}), ": ");
  d.Field(0, "Selector", SelectorString(At(dep, {"spec", "selector"})));
  const int64_t want = IntAt(dep, {"spec", "replicas"}, 1);
  d.Field(0, "Replicas",
          std::to_string(want) + " desired | " +
              std::to_string(IntAt(dep, {"status", "updatedReplicas"})) +
              " updated | " +
              std::to_string(IntAt(dep, {"status", "replicas"})) + " total | " +
              std::to_string(IntAt(dep, {"status", "availableReplicas"})) +
              " available | " +
              std::to_string(IntAt(dep, {"status", "unavailableReplicas"})) +
              " unavailable");
  const std::string strategy = StrAt(dep, {"spec", "strategy", "type"});
  d.Field(0, "StrategyType", Or(strategy, "RollingUpdate"));
  d.Field(0, "MinReadySeconds",
          std::to_string(IntAt(dep, {"spec", "minReadySeconds"})));
  if (strategy.empty() || strategy == "RollingUpdate") {
    auto iv = [&](const char* k) {
      const Value* v = At(dep, {"spec", "strategy", "rollingUpdate", k});
      return v == nullptr ? std::string("25%") : CellString(*v);
    };
    d.Field(0, "RollingUpdateStrategy",
            iv("maxUnavailable") + " max unavailable, " + iv("maxSurge") +
                " max surge");
  }
  d.Line(0, "Pod Template:");
  d.Map(2, "Labels", At(dep, {"spec", "template", "metadata", "labels"}));
  const Value* ta = At(dep, {"spec", "template", "metadata", "annotations"});
  if (ta != nullptr && ta->IsObject() && ta->MemberCount() > 0) {
    d.Map(2, "Annotations", ta, ": ");
  }
  d.Line(2, "Containers:");
  Containers(d, 3, 4, At(dep, {"spec", "template", "spec", "containers"}),
             nullptr);
  Conditions(d, dep, true);
  // Old and new ReplicaSets (controllerRef to this deployment).
  const objects::ResourceInfo* rsr =
      objects::Scheme::Default().FindResource("apps", "v1", "replicasets");
  StatusOr<Document> rss =
      ctx.client->List(*rsr, StrAt(dep, {"metadata", "namespace"}));
  const std::string uid = StrAt(dep, {"metadata", "uid"});
  const std::string rev = StrAt(
      dep, {"metadata", "annotations", "deployment.kubernetes.io/revision"});
  std::vector<std::string> olds;
  std::string nw;
  if (rss.ok()) {
    for (const Value& rs : (*rss)["items"].GetArray()) {
      bool owned = false;
      if (const Value* o = At(rs, {"metadata", "ownerReferences"});
          o && o->IsArray()) {
        for (const Value& r : o->GetArray()) owned |= StrAt(r, {"uid"}) == uid;
      }
      if (!owned) continue;
      const std::string desc =
          StrAt(rs, {"metadata", "name"}) + " (" +
          std::to_string(IntAt(rs, {"status", "replicas"})) + "/" +
          std::to_string(IntAt(rs, {"spec", "replicas"}, 1)) +
          " replicas created)";
      if (StrAt(rs, {"metadata", "annotations",
                     "deployment.kubernetes.io/revision"}) == rev &&
          !rev.empty()) {
        nw = desc;
      } else if (IntAt(rs, {"spec", "replicas"}, 1) > 0 ||
                 IntAt(rs, {"status", "replicas"}) > 0) {
        olds.push_back(desc);
      }
    }
  }
  d.Field(0, "OldReplicaSets", olds.empty() ? "<none>" : StrJoin(olds, ", "));
  d.Field(0, "NewReplicaSet", Or(nw));
  Events(ctx, d, dep);
}

void DescribeNode(Context& ctx, Describer& d, const Value& n) {
  Common(d, n, false);
  std::vector<std::string> roles;
  if (const Value* l = At(n, {"metadata", "labels"}); l && l->IsObject()) {
    for (auto& e : l->GetObject()) {
      std::string k = e.name.GetString();
      if (k.starts_with("node-role.kubernetes.io/"))
        roles.push_back(k.substr(24));
    }
  }
  d.Field(0, "Roles", roles.empty() ? "<none>" : StrJoin(roles, ","));
  d.Map(0, "Labels", At(n, {"metadata", "labels"}));
  d.Map(0, "Annotations", At(n, {"metadata", "annotations"}), ": ");
  d.Field(0, "CreationTimestamp",
          When(StrAt(n, {"metadata", "creationTimestamp"})));
  const Value* taints = At(n, {"spec", "taints"});
  if (taints != nullptr && taints->IsArray() && !taints->Empty()) {
    bool first = true;
    for (const Value& t : taints->GetArray()) {
      std::string s = StrAt(t, {"key"});
      if (!StrAt(t, {"value"}).empty()) s += "=" + StrAt(t, {"value"});
      s += ":" + StrAt(t, {"effect"});
      d.Field(0, first ? "Taints" : "", s);
      first = false;
    }
  } else {
    d.Field(0, "Taints", "<none>");
  }
  const Value* unsched = At(n, {"spec", "unschedulable"});
  d.Field(
      0, "Unschedulable",
      unsched && unsched->IsBool() && unsched->GetBool() ? "true" : "false");
  const Value* conds = At(n, {"status", "conditions"});
  if (conds != nullptr && conds->IsArray() && !conds->Empty()) {
    d.Line(0, "Conditions:");
    std::vector<std::vector<std::string>> rows = {
        {"Type", "Status", "LastHeartbeatTime", "Reason", "Message"},
        {"----", "------", "-----------------", "------", "-------"}};
    for (const Value& c : conds->GetArray()) {
      rows.push_back({StrAt(c, {"type"}), StrAt(c, {"status"}),
                      StrAt(c, {"lastHeartbeatTime"}), StrAt(c, {"reason"}),
                      StrAt(c, {"message"})});
    }
    d.Table(2, rows);
  } else {
    d.Field(0, "Conditions", "<none>");
  }
  if (const Value* a = At(n, {"status", "addresses"}); a && a->IsArray()) {
    d.Line(0, "Addresses:");
    for (const Value& e : a->GetArray()) {
      d.Field(2, StrAt(e, {"type"}), StrAt(e, {"address"}));
    }
  }
  for (const char* k : {"capacity", "allocatable"}) {
    const Value* m = At(n, {"status", k});
    if (m == nullptr || !m->IsObject()) continue;
    std::string title = k;
    title[0] = static_cast<char>(std::toupper(title[0]));
    d.Line(0, title + ":");
    for (auto& e : m->GetObject())
      d.Field(2, e.name.GetString(), CellString(e.value));
  }
  if (const Value* info = At(n, {"status", "nodeInfo"});
      info && info->IsObject()) {
    d.Line(0, "System Info:");
    const std::pair<const char*, const char*> keys[] = {
        {"machineID", "Machine ID"},
        {"kernelVersion", "Kernel Version"},
        {"osImage", "OS Image"},
        {"operatingSystem", "Operating System"},
        {"architecture", "Architecture"},
        {"containerRuntimeVersion", "Container Runtime Version"},
        {"kubeletVersion", "Kubelet Version"}};
    for (auto [k, title] : keys) d.Field(2, title, StrAt(*info, {k}));
  }
  if (!StrAt(n, {"spec", "podCIDR"}).empty()) {
    d.Field(0, "PodCIDR", StrAt(n, {"spec", "podCIDR"}));
  }
  const objects::ResourceInfo* pods =
      objects::Scheme::Default().FindResource("", "v1", "pods");
  ListQuery q;
  q.field_selector = "spec.nodeName=" + StrAt(n, {"metadata", "name"}) +
                     ",status.phase!=Succeeded,status.phase!=Failed";
  StatusOr<Document> list = ctx.client->List(*pods, "", q);
  if (list.ok()) {
    d.Line(0, "Non-terminated Pods:  (" +
                  std::to_string((*list)["items"].Size()) + " in total)");
    std::vector<std::vector<std::string>> rows = {{"Namespace", "Name", "Age"},
                                                  {"---------", "----", "---"}};
    for (const Value& p : (*list)["items"].GetArray()) {
      rows.push_back({StrAt(p, {"metadata", "namespace"}),
                      StrAt(p, {"metadata", "name"}),
                      Age(ctx, StrAt(p, {"metadata", "creationTimestamp"}))});
    }
    if (rows.size() > 2) d.Table(2, rows);
  }
  Events(ctx, d, n);
}

void DescribeGeneric(Context& ctx, Describer& d, const objects::ResourceInfo& r,
                     const Value& obj) {
  Common(d, obj, r.namespaced);
  d.Map(0, "Labels", At(obj, {"metadata", "labels"}));
  d.Map(0, "Annotations", At(obj, {"metadata", "annotations"}), ": ");
  d.Field(0, "CreationTimestamp",
          When(StrAt(obj, {"metadata", "creationTimestamp"})));
  for (auto& m : obj.GetObject()) {
    const std::string k = m.name.GetString();
    if (k == "metadata" || k == "apiVersion" || k == "kind") continue;
    std::string title = k;
    title[0] = static_cast<char>(std::toupper(title[0]));
    if (!m.value.IsObject() && !m.value.IsArray()) {
      d.Field(0, title, CellString(m.value));
      continue;
    }
    d.Line(0, title + ":");
    for (const std::string& l : StrSplit(ToYaml(m.value), '\n')) {
      if (!l.empty()) d.Line(2, l);
    }
  }
  Events(ctx, d, obj);
}

int RunDescribe(Context& ctx) {
  const Flags& f = *ctx.flags;
  StatusOr<std::vector<ResourceSelection>> sel =
      ParseResourceArgs(f.positional());
  if (!sel.ok()) return ctx.Fail(sel.status().message());
  int code = 0;
  bool first = true;
  for (const ResourceSelection& s : *sel) {
    std::vector<Document> objs;
    if (s.names.empty()) {
      StatusOr<Document> list = ctx.client->List(
          *s.resource, ctx.ns(), {.label_selector = f.Get("selector")});
      if (!list.ok()) {
        code = ctx.Fail(list.status());
        continue;
      }
      for (Value& i : (*list)["items"].GetArray()) {
        Document d;
        d.CopyFrom(i, d.GetAllocator());
        objs.push_back(std::move(d));
      }
    } else {
      for (const std::string& n : s.names) {
        StatusOr<Document> o = ctx.client->Get(*s.resource, ctx.ns(), n);
        if (!o.ok()) {
          code = ctx.Fail(o.status());
          continue;
        }
        objs.push_back(std::move(*o));
      }
    }
    for (const Document& obj : objs) {
      if (!first) ctx.out() << "\n\n";
      first = false;
      Describer d(&ctx.out());
      const std::string res = s.resource->resource;
      if (res == "pods") {
        DescribePod(ctx, d, obj);
      } else if (res == "deployments") {
        DescribeDeployment(ctx, d, obj);
      } else if (res == "nodes") {
        DescribeNode(ctx, d, obj);
      } else {
        DescribeGeneric(ctx, d, *s.resource, obj);
      }
      d.Flush();
    }
  }
  return code;
}

}  // namespace

CommandSpec DescribeCommand() {
  return {"describe",
          "Show details of a resource or group of resources",
          "kpctl describe (TYPE [NAME...] | TYPE/NAME...) [flags]",
          {{"selector", 'l', false, "", "describe objects matching this"}},
          true,
          RunDescribe};
}

}  // namespace kplane::kpctl::kube
