#include "apiserver/rbac_policy.h"

#include <vector>

#include "apiserver/auth/bootstrap_policy.h"
#include "base/logging.h"
#include "base/strings.h"
#include "objects/meta.h"

namespace kplane::apiserver {

namespace {

std::vector<std::string> ToVector(
    const google::protobuf::RepeatedPtrField<std::string>& v) {
  return {v.begin(), v.end()};
}

template <typename R>
auth::Role RoleOf(const R& r) {
  auth::Role out{.ns = r.metadata().namespace_(), .name = r.metadata().name()};
  for (const rbacv1::PolicyRule& rule : r.rules()) {
    out.rules.push_back(PolicyRuleFromApi(rule));
  }
  return out;
}

template <typename B>
auth::RoleBinding BindingOf(const B& b) {
  auth::RoleBinding out{
      .ns = b.metadata().namespace_(),
      .name = b.metadata().name(),
      .role_ref = {.cluster_role = b.roleref().kind() == "ClusterRole",
                   .name = b.roleref().name()}};
  for (const rbacv1::Subject& s : b.subjects()) {
    auth::Subject subject{.name = s.name(), .ns = s.namespace_()};
    if (s.kind() == "User") {
      subject.kind = auth::Subject::Kind::kUser;
    } else if (s.kind() == "Group") {
      subject.kind = auth::Subject::Kind::kGroup;
    } else if (s.kind() == "ServiceAccount") {
      subject.kind = auth::Subject::Kind::kServiceAccount;
    } else {
      continue;  // validation refuses other kinds; never match them
    }
    out.subjects.push_back(std::move(subject));
  }
  return out;
}

void SetBootstrapMeta(objects::metav1::ObjectMeta* meta,
                      const std::string& name) {
  meta->set_name(name);
  (*meta->mutable_labels())["kubernetes.io/bootstrapping"] = "rbac-defaults";
  (*meta->mutable_annotations())[kAutoupdateAnnotation] = "true";
}

std::string KeyOf(const google::protobuf::Message& obj) {
  const objects::metav1::ObjectMeta* m = objects::GetObjectMeta(obj);
  return m == nullptr ? "" : m->namespace_() + "/" + m->name();
}

}  // namespace

auth::PolicyRule PolicyRuleFromApi(const rbacv1::PolicyRule& r) {
  return {.verbs = ToVector(r.verbs()),
          .api_groups = ToVector(r.apigroups()),
          .resources = ToVector(r.resources()),
          .resource_names = ToVector(r.resourcenames()),
          .non_resource_urls = ToVector(r.nonresourceurls())};
}
auth::Role RoleFromApi(const rbacv1::Role& r) { return RoleOf(r); }
auth::Role RoleFromApi(const rbacv1::ClusterRole& r) { return RoleOf(r); }
auth::RoleBinding BindingFromApi(const rbacv1::RoleBinding& b) {
  return BindingOf(b);
}
auth::RoleBinding BindingFromApi(const rbacv1::ClusterRoleBinding& b) {
  return BindingOf(b);
}

rbacv1::PolicyRule PolicyRuleToApi(const auth::PolicyRule& r) {
  rbacv1::PolicyRule out;
  for (const auto& v : r.verbs) out.add_verbs(v);
  for (const auto& v : r.api_groups) out.add_apigroups(v);
  for (const auto& v : r.resources) out.add_resources(v);
  for (const auto& v : r.resource_names) out.add_resourcenames(v);
  for (const auto& v : r.non_resource_urls) out.add_nonresourceurls(v);
  return out;
}

rbacv1::ClusterRole BootstrapClusterRoleToApi(const auth::Role& r) {
  rbacv1::ClusterRole out;
  SetBootstrapMeta(out.mutable_metadata(), r.name);
  for (const auto& [label, value] : auth::BootstrapAggregationLabels(r.name)) {
    (*out.mutable_metadata()->mutable_labels())[label] = value;
  }
  if (std::string selects = auth::BootstrapAggregationSelector(r.name);
      !selects.empty()) {
    (*out.mutable_aggregationrule()
          ->add_clusterroleselectors()
          ->mutable_matchlabels())[selects] = "true";
  }
  for (const auth::PolicyRule& rule : r.rules) {
    *out.add_rules() = PolicyRuleToApi(rule);
  }
  return out;
}

rbacv1::ClusterRoleBinding BootstrapClusterRoleBindingToApi(
    const auth::RoleBinding& b) {
  rbacv1::ClusterRoleBinding out;
  SetBootstrapMeta(out.mutable_metadata(), b.name);
  out.mutable_roleref()->set_apigroup(kRbacGroup);
  out.mutable_roleref()->set_kind("ClusterRole");
  out.mutable_roleref()->set_name(b.role_ref.name);
  for (const auth::Subject& s : b.subjects) {
    rbacv1::Subject* o = out.add_subjects();
    o->set_name(s.name);
    switch (s.kind) {
      case auth::Subject::Kind::kUser:
        o->set_kind("User");
        o->set_apigroup(kRbacGroup);
        break;
      case auth::Subject::Kind::kGroup:
        o->set_kind("Group");
        o->set_apigroup(kRbacGroup);
        break;
      case auth::Subject::Kind::kServiceAccount:
        o->set_kind("ServiceAccount");
        o->set_namespace_(s.ns);
        break;
    }
  }
  return out;
}

namespace {

// %q of a []string: ["a" "b"].
std::string GoQuotedList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i > 0 ? " " : "") + GoQuote(v[i]);
  }
  return out + "]";
}

// rbacv1helpers.CompactString.
std::string CompactString(const auth::PolicyRule& r) {
  std::vector<std::string> parts;
  if (!r.api_groups.empty())
    parts.push_back("APIGroups:" + GoQuotedList(r.api_groups));
  if (!r.resources.empty())
    parts.push_back("Resources:" + GoQuotedList(r.resources));
  if (!r.resource_names.empty()) {
    parts.push_back("ResourceNames:" + GoQuotedList(r.resource_names));
  }
  if (!r.non_resource_urls.empty()) {
    parts.push_back("NonResourceURLs:" + GoQuotedList(r.non_resource_urls));
  }
  if (!r.verbs.empty()) parts.push_back("Verbs:" + GoQuotedList(r.verbs));
  return "{" + StrJoin(parts, ", ") + "}";
}

// Whether some owner rule allows the one-verb, one-resource (one name)
// rule `atom`.
bool Covered(const std::vector<auth::PolicyRule>& owner,
             const auth::PolicyRule& atom) {
  auth::Attributes a;
  a.verb = atom.verbs[0];
  if (!atom.non_resource_urls.empty()) {
    a.path = atom.non_resource_urls[0];
  } else {
    a.resource_request = true;
    a.api_group = atom.api_groups[0];
    const std::string& res = atom.resources[0];
    const size_t slash = res.find('/');
    a.resource = res.substr(0, slash);
    if (slash != std::string::npos) a.subresource = res.substr(slash + 1);
    if (!atom.resource_names.empty()) a.name = atom.resource_names[0];
  }
  for (const auth::PolicyRule& r : owner) {
    if (auth::RuleAllows(r, a)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> EscalationError(
    const auth::UserInfo& user,
    const std::vector<auth::PolicyRule>& owner_rules,
    const std::vector<auth::PolicyRule>& rules,
    const std::vector<std::string>& resolution_errors) {
  // The uncovered atoms, compacted as kube does: one rule per (groups,
  // resources, names, urls) with their missing verbs.
  std::vector<auth::PolicyRule> missing;
  auto add = [&missing](auth::PolicyRule atom) {
    for (auth::PolicyRule& m : missing) {
      if (m.api_groups == atom.api_groups && m.resources == atom.resources &&
          m.resource_names == atom.resource_names &&
          m.non_resource_urls == atom.non_resource_urls) {
        m.verbs.push_back(atom.verbs[0]);
        return;
      }
    }
    missing.push_back(std::move(atom));
  };
  for (const auth::PolicyRule& rule : rules) {
    for (const std::string& verb : rule.verbs) {
      if (!rule.non_resource_urls.empty()) {
        for (const std::string& url : rule.non_resource_urls) {
          auth::PolicyRule atom{.verbs = {verb}, .non_resource_urls = {url}};
          if (!Covered(owner_rules, atom)) add(std::move(atom));
        }
        continue;
      }
      for (const std::string& group : rule.api_groups) {
        for (const std::string& res : rule.resources) {
          std::vector<std::string> names = rule.resource_names;
          if (names.empty()) names.push_back("");
          for (const std::string& name : names) {
            auth::PolicyRule atom{
                .verbs = {verb}, .api_groups = {group}, .resources = {res}};
            if (!name.empty()) atom.resource_names = {name};
            if (!Covered(owner_rules, atom)) add(std::move(atom));
          }
        }
      }
    }
  }
  if (missing.empty()) return std::nullopt;
  std::string msg = "user " + GoQuote(user.name) +
                    " (groups=" + GoQuotedList(user.groups) +
                    ") is attempting to grant RBAC permissions not currently "
                    "held:";
  for (const auth::PolicyRule& m : missing) msg += "\n" + CompactString(m);
  if (!resolution_errors.empty()) {
    msg += "; resolution errors: [" + StrJoin(resolution_errors, " ") + "]";
  }
  return msg;
}

// One watch's sink: hands events to the cache, tagged with the kind and
// the watch's generation (events of a replaced watch are ignored).
class RbacPolicyCache::Sink final : public WatchSink {
 public:
  Sink(RbacPolicyCache* owner, int kind, uint64_t generation)
      : owner_(owner), kind_(kind), generation_(generation) {}
  bool Send(const WatchEventPtr& event) override {
    owner_->OnEvent(kind_, generation_, *event);
    return true;
  }
  void Close(const Status& reason) override {
    LOG(INFO) << "rbac policy: watch closed (" << reason << "); watching again";
    owner_->OnClose(kind_, generation_);
  }

 private:
  RbacPolicyCache* const owner_;
  const int kind_;
  const uint64_t generation_;
};

RbacPolicyCache::RbacPolicyCache(
    Caches caches, std::shared_ptr<const auth::StaticPolicy> fallback)
    : caches_(caches), fallback_(std::move(fallback)) {}

RbacPolicyCache::~RbacPolicyCache() { Stop(); }

Cacher* RbacPolicyCache::CacherOf(int kind) const {
  switch (kind) {
    case kRoles:
      return caches_.roles;
    case kClusterRoles:
      return caches_.cluster_roles;
    case kRoleBindings:
      return caches_.role_bindings;
    default:
      return caches_.cluster_role_bindings;
  }
}

Status RbacPolicyCache::Start(int64_t revision) {
  for (int k = 0; k < kKinds; ++k) RETURN_IF_ERROR(Watch(k, revision));
  rewatch_thread_ = std::thread([this] { RewatchLoop(); });
  return Status::Ok();
}

Status RbacPolicyCache::Watch(int kind, int64_t revision) {
  uint64_t generation;
  {
    MutexLock l(&mu_);
    if (stopping_) return Status::Ok();
    KindState& s = kinds_[kind];
    generation = ++s.generation;
    s.loading = true;
    s.loading_roles.clear();
    s.loading_bindings.clear();
  }
  WatchOptions wo;
  wo.send_initial_events = true;
  wo.allow_bookmarks = true;
  wo.revision = revision;
  auto sink = std::make_shared<Sink>(this, kind, generation);
  StatusOr<std::unique_ptr<WatchHandle>> h = CacherOf(kind)->Watch(wo, sink);
  if (!h.ok()) return h.status();
  std::unique_ptr<WatchHandle> old;
  {
    MutexLock l(&mu_);
    old = std::move(handles_[kind]);
    handles_[kind] = std::move(*h);
  }
  return Status::Ok();  // `old` (a closed watch) is released unlocked
}

void RbacPolicyCache::OnEvent(int kind, uint64_t generation,
                              const WatchEvent& e) {
  MutexLock l(&mu_);
  KindState& s = kinds_[kind];
  if (generation != s.generation) return;
  if (e.type == WatchEventType::kBookmark) {
    if (e.initial_events_end && s.loading) {
      s.roles = std::move(s.loading_roles);
      s.bindings = std::move(s.loading_bindings);
      s.loading_roles.clear();
      s.loading_bindings.clear();
      s.loading = false;
      s.ever_synced = true;
      Rebuild();
    }
    return;
  }
  if (e.object == nullptr) return;
  const std::string key = KeyOf(*e.object);
  auto& roles = s.loading ? s.loading_roles : s.roles;
  auto& bindings = s.loading ? s.loading_bindings : s.bindings;
  const bool deleted = e.type == WatchEventType::kDeleted;
  const google::protobuf::Message& o = *e.object;
  if (deleted) {
    roles.erase(key);
    bindings.erase(key);
  } else if (const auto* r = dynamic_cast<const rbacv1::Role*>(&o)) {
    roles[key] = RoleFromApi(*r);
  } else if (const auto* cr = dynamic_cast<const rbacv1::ClusterRole*>(&o)) {
    roles[key] = RoleFromApi(*cr);
  } else if (const auto* b = dynamic_cast<const rbacv1::RoleBinding*>(&o)) {
    bindings[key] = BindingFromApi(*b);
  } else if (const auto* cb =
                 dynamic_cast<const rbacv1::ClusterRoleBinding*>(&o)) {
    bindings[key] = BindingFromApi(*cb);
  }
  if (!s.loading) Rebuild();
}

void RbacPolicyCache::OnClose(int kind, uint64_t generation) {
  MutexLock l(&mu_);
  KindState& s = kinds_[kind];
  if (generation != s.generation || stopping_) return;
  s.needs_rewatch = true;
  cv_.notify_all();
}

void RbacPolicyCache::RewatchLoop() {
  MutexLock l(&mu_);
  while (!stopping_) {
    int kind = -1;
    for (int k = 0; k < kKinds; ++k) {
      if (kinds_[k].needs_rewatch) kind = k;
    }
    if (kind < 0) {
      cv_.wait(l.native());
      continue;
    }
    kinds_[kind].needs_rewatch = false;
    l.Unlock();
    Status st = Watch(kind, 0);
    l.Lock();
    if (!st.ok() && !stopping_) {
      // The cache is relisting; it answers again within moments.
      LOG(WARNING) << "rbac policy: watch failed: " << st << "; retrying";
      kinds_[kind].needs_rewatch = true;
      cv_.wait_for(l.native(), std::chrono::milliseconds(200));
    }
  }
}

void RbacPolicyCache::Rebuild() {
  for (const KindState& s : kinds_) {
    if (!s.ever_synced) return;  // the fallback stays until all arrived
  }
  auto policy = std::make_shared<auth::StaticPolicy>();
  for (const KindState& s : kinds_) {
    for (const auto& [key, role] : s.roles) policy->AddRole(role);
    for (const auto& [key, binding] : s.bindings) policy->AddBinding(binding);
  }
  current_ = std::move(policy);
}

std::shared_ptr<const auth::StaticPolicy> RbacPolicyCache::Current() const {
  MutexLock l(&mu_);
  return current_ != nullptr ? current_ : fallback_;
}

bool RbacPolicyCache::synced() const {
  MutexLock l(&mu_);
  return current_ != nullptr;
}

void RbacPolicyCache::Stop() {
  std::array<std::unique_ptr<WatchHandle>, kKinds> handles;
  {
    MutexLock l(&mu_);
    stopping_ = true;
    cv_.notify_all();
    handles = std::move(handles_);
  }
  if (rewatch_thread_.joinable()) rewatch_thread_.join();
  for (auto& h : handles) h.reset();  // unlocked: a Send may be running
}

}  // namespace kplane::apiserver
