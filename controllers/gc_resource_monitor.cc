#include "controllers/gc_resource_monitor.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <set>

#include "base/json.h"
#include "base/logging.h"
#include "informer/list_watch.h"

namespace kplane::controllers {

namespace {

constexpr char kCrdResource[] =
    "customresourcedefinitions.apiextensions.k8s.io";

StatusOr<rapidjson::Document> GetJson(informer::RestClient* client,
                                      const std::string& path) {
  informer::RestRequest req{.method = "GET", .path = path};
  req.headers.Set("Accept", "application/json");
  ASSIGN_OR_RETURN(net::HttpResponse resp, client->Do(req));
  rapidjson::Document doc;
  if (!json::ParseDom(resp.body, &doc).ok() || !doc.IsObject()) {
    return InvalidArgumentError("discovery: " + path +
                                " did not answer a JSON object");
  }
  return doc;
}

std::string StringMember(const rapidjson::Value& v, const char* name) {
  auto m = v.FindMember(name);
  if (m == v.MemberEnd() || !m->value.IsString()) return "";
  return std::string(m->value.GetString(), m->value.GetStringLength());
}

std::set<std::string> Verbs(const rapidjson::Value& r) {
  std::set<std::string> have;
  auto verbs = r.FindMember("verbs");
  if (verbs == r.MemberEnd() || !verbs->value.IsArray()) return have;
  for (const rapidjson::Value& v : verbs->value.GetArray()) {
    if (v.IsString()) have.insert(v.GetString());
  }
  return have;
}

// The GC-able resources of one group-version's APIResourceList.
void AddResources(const std::string& group, const std::string& version,
                  const rapidjson::Document& list,
                  std::vector<DiscoveredResource>* out) {
  auto resources = list.FindMember("resources");
  if (resources == list.MemberEnd() || !resources->value.IsArray()) return;
  for (const rapidjson::Value& r : resources->value.GetArray()) {
    if (!r.IsObject()) continue;
    std::string name = StringMember(r, "name");
    if (name.empty() || name.find('/') != std::string::npos) continue;
    // Kubernetes' collector ignores events (core and events.k8s.io).
    if (name == "events" && (group.empty() || group == "events.k8s.io")) {
      continue;
    }
    std::set<std::string> verbs = Verbs(r);
    if (!verbs.count("delete") || !verbs.count("list") ||
        !verbs.count("watch")) {
      continue;
    }
    DiscoveredResource d{
        .gvr = {group, version, name},
        .kind = StringMember(r, "kind"),
        .deletecollection = verbs.count("deletecollection") > 0};
    auto namespaced = r.FindMember("namespaced");
    if (namespaced != r.MemberEnd() && namespaced->value.IsBool()) {
      d.namespaced = namespaced->value.GetBool();
    }
    out->push_back(std::move(d));
  }
}

}  // namespace

std::string DiscoveredResource::Name() const {
  return gvr.group.empty() ? gvr.resource : gvr.resource + "." + gvr.group;
}

StatusOr<std::vector<DiscoveredResource>> DiscoverGcResources(
    informer::RestClient* client, std::vector<std::string>* failed_groups) {
  std::vector<DiscoveredResource> out;
  StatusOr<rapidjson::Document> core = GetJson(client, "/api/v1");
  if (!core.ok()) return core.status();
  AddResources("", "v1", *core, &out);
  ASSIGN_OR_RETURN(rapidjson::Document groups, GetJson(client, "/apis"));
  const rapidjson::Value& root = groups;
  auto list = root.FindMember("groups");
  if (list == root.MemberEnd() || !list->value.IsArray()) return out;
  for (const rapidjson::Value& g : list->value.GetArray()) {
    if (!g.IsObject()) continue;
    std::string group = StringMember(g, "name");
    auto preferred = g.FindMember("preferredVersion");
    if (group.empty() || preferred == g.MemberEnd() ||
        !preferred->value.IsObject()) {
      continue;
    }
    std::string version = StringMember(preferred->value, "version");
    StatusOr<rapidjson::Document> gv =
        GetJson(client, "/apis/" + group + "/" + version);
    if (!gv.ok()) {
      LOG(WARNING) << "discovery of " << group << "/" << version << ": "
                   << gv.status().ToString();
      if (failed_groups != nullptr) failed_groups->push_back(group);
      continue;
    }
    AddResources(group, version, *gv, &out);
  }
  return out;
}

GcResourceMonitor::GcResourceMonitor(GcResourceMonitorOptions options)
    : options_(options),
      clock_(options.clock != nullptr ? options.clock : Clock::Real()),
      dynamic_(options.client) {
  CHECK(options_.client != nullptr && options_.gc != nullptr);
}

GcResourceMonitor::~GcResourceMonitor() { Stop(); }

void GcResourceMonitor::Start() {
  MutexLock l(&mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void GcResourceMonitor::Loop() {
  for (;;) {
    Status s = Resync();
    if (!s.ok()) {
      LOG(WARNING) << "garbagecollector: resource discovery: " << s.ToString();
    }
    MutexLock l(&mu_);
    clock_->WaitFor(l.native(), cv_, options_.resync_period,
                    [this]() REQUIRES(mu_) { return kicked_ || stopping_; });
    if (stopping_) return;
    kicked_ = false;
  }
}

void GcResourceMonitor::Kick() {
  MutexLock l(&mu_);
  kicked_ = true;
  cv_.notify_all();
}

void GcResourceMonitor::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  // An informer waited for in Resync returns once stopped: stop them
  // before joining.
  // (Outside mu_: a stopping informer waits for its handlers, which may
  // Kick.)
  std::vector<std::shared_ptr<informer::SharedIndexInformer>> running;
  {
    MutexLock l(&mu_);
    for (auto& [name, m] : monitors_) running.push_back(m.informer);
  }
  for (auto& inf : running) inf->Stop();
  if (thread_.joinable()) thread_.join();
  std::map<std::string, Monitor> monitors;
  {
    MutexLock r(&resync_mu_);
    MutexLock l(&mu_);
    monitors.swap(monitors_);
  }
  for (auto& [name, m] : monitors) {
    if (m.added) options_.gc->RemoveResource(name);
    m.informer->Stop();
  }
}

std::vector<std::string> GcResourceMonitor::Monitored() const {
  MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, m] : monitors_) out.push_back(name);
  return out;
}

Status GcResourceMonitor::Resync() {
  MutexLock resync(&resync_mu_);
  std::vector<std::string> failed_groups;
  ASSIGN_OR_RETURN(std::vector<DiscoveredResource> found,
                   DiscoverGcResources(options_.client, &failed_groups));
  std::map<std::string, DiscoveredResource> wanted;
  std::vector<std::string> current = Monitored();
  for (DiscoveredResource& d : found) {
    std::string name = d.Name();
    // The typed caches the collector was built with stay in charge.
    bool ours =
        std::find(current.begin(), current.end(), name) != current.end();
    if (!ours && options_.gc->Follows(name)) continue;
    wanted.emplace(name, std::move(d));
  }
  // Gone from discovery (and not only unreachable): stop following.
  std::vector<Monitor> removed;
  std::vector<std::shared_ptr<informer::SharedIndexInformer>> started;
  {
    MutexLock l(&mu_);
    if (stopping_) return Status::Ok();
    for (auto it = monitors_.begin(); it != monitors_.end();) {
      const std::string& group = it->second.resource.gvr.group;
      bool unreachable = std::find(failed_groups.begin(), failed_groups.end(),
                                   group) != failed_groups.end();
      if (wanted.count(it->first) == 0 && !unreachable) {
        if (it->second.added) options_.gc->RemoveResource(it->first);
        LOG(INFO) << "garbagecollector: no longer following " << it->first;
        removed.push_back(std::move(it->second));
        it = monitors_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [name, d] : wanted) {
      if (monitors_.count(name) != 0) continue;
      const objects::ResourceInfo* info = &dynamic_.ResourceInfoFor(d.gvr);
      informer::SharedInformerOptions o;
      o.name = "gc:" + name;
      o.clock = clock_;
      // Metadata only, as kube's collector watches: owner references,
      // finalizers and deletion are all it reads.
      auto inf = std::make_shared<informer::SharedIndexInformer>(
          std::make_shared<informer::RestListerWatcher>(
              options_.client, info, informer::ListWatchScope{},
              informer::ObjectForm::kMetadata),
          o);
      CHECK(inf->AddIndexers({{kOwnerUidIndex, OwnerUidIndexFunc}}).ok());
      GarbageCollector* gc = options_.gc;
      const bool crds = name == kCrdResource;
      OnObjectEvents(inf.get(),
                     [this, gc, resource = name, crds](const ObjectEvent& e) {
                       gc->ObjectChanged(resource, e);
                       if (crds) Kick();
                     });
      started.push_back(inf);
      monitors_.emplace(name, Monitor{.resource = d, .informer = inf});
    }
  }
  for (Monitor& m : removed) m.informer->Stop();
  for (auto& inf : started) inf->Start();
  // New informers: hand each to the collector once its first LIST is in
  // (those not synced yet are tried again on the next pass).
  std::vector<std::string> to_add;
  {
    MutexLock l(&mu_);
    for (auto& [name, m] : monitors_) {
      if (!m.added) to_add.push_back(name);
    }
  }
  for (const std::string& name : to_add) {
    std::shared_ptr<informer::SharedIndexInformer> inf;
    DiscoveredResource d;
    {
      MutexLock l(&mu_);
      auto it = monitors_.find(name);
      if (it == monitors_.end()) continue;
      inf = it->second.informer;
      d = it->second.resource;
    }
    if (!inf->WaitForCacheSync(options_.sync_timeout)) {
      LOG(WARNING) << "garbagecollector: " << name
                   << " has not synced yet; retrying on the next pass";
      continue;
    }
    {
      MutexLock l(&mu_);
      if (stopping_) return Status::Ok();
      monitors_[name].added = true;
    }
    options_.gc->AddResource(
        GcResource{.name = name,
                   .group = d.gvr.group,
                   .kind = d.kind,
                   .namespaced = d.namespaced,
                   .info = &dynamic_.ResourceInfoFor(d.gvr),
                   .cache = &inf->GetIndexer(),
                   .keep_alive = inf});
    LOG(DEBUG) << "garbagecollector: following " << name;
  }
  if (failed_groups.empty()) options_.gc->MarkDiscovered();
  return Status::Ok();
}

}  // namespace kplane::controllers
