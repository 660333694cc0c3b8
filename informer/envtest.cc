#include "informer/envtest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "apiserver/api_server.h"
#include "base/file_system.h"
#include "base/logging.h"
#include "informer/api_errors.h"
#include "objects/yaml.h"
#include "storage/server/store_server.h"

namespace kplane::informer::envtest {

namespace {

const GroupVersionResource kCrdResource{"apiextensions.k8s.io", "v1",
                                        "customresourcedefinitions"};

bool IsCrd(const Unstructured& obj) {
  return obj.Kind() == "CustomResourceDefinition" &&
         obj.ApiVersion().starts_with("apiextensions.k8s.io/");
}

bool HasSuffix(std::string_view name) {
  return name.ends_with(".yaml") || name.ends_with(".yml") ||
         name.ends_with(".json");
}

// "True" when the CRD's Established condition is, else its conditions as
// "Type=Status" pairs for the error message (prefixed by '!').
std::string Established(const Unstructured& crd) {
  const rapidjson::Value* conds = crd.Nested({"status", "conditions"});
  std::string seen = "!";
  if (conds == nullptr || !conds->IsArray()) return seen + "no conditions";
  for (const rapidjson::Value& c : conds->GetArray()) {
    if (!c.IsObject() || !c.HasMember("type") || !c.HasMember("status") ||
        !c["type"].IsString() || !c["status"].IsString()) {
      continue;
    }
    std::string type = c["type"].GetString();
    std::string status = c["status"].GetString();
    if (type == "Established" && status == "True") return "True";
    seen += (seen.size() > 1 ? ", " : "") + type + "=" + status;
  }
  return seen;
}

}  // namespace

// ---- Manifests -------------------------------------------------------------

StatusOr<std::vector<Unstructured>> ParseManifests(std::string_view yaml) {
  ASSIGN_OR_RETURN(std::vector<rapidjson::Document> docs,
                   objects::ParseYamlStream(yaml));
  std::vector<Unstructured> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    StatusOr<Unstructured> obj = Unstructured::FromValue(docs[i]);
    if (!obj.ok()) {
      return obj.status().Annotate("document " + std::to_string(i + 1));
    }
    if (obj->Kind() == "List") {
      const rapidjson::Value* items = obj->Nested({"items"});
      if (items == nullptr || !items->IsArray()) continue;
      for (const rapidjson::Value& item : items->GetArray()) {
        ASSIGN_OR_RETURN(Unstructured u, Unstructured::FromValue(item));
        out.push_back(std::move(u));
      }
      continue;
    }
    if (obj->ApiVersion().empty() || obj->Kind().empty()) {
      return InvalidArgumentError("document " + std::to_string(i + 1) +
                                  ": apiVersion and kind are required");
    }
    out.push_back(std::move(*obj));
  }
  return out;
}

StatusOr<std::vector<Unstructured>> ReadManifests(
    const std::vector<std::string>& paths) {
  FileSystem* fs = FileSystem::Default();
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (!fs->Exists(path)) return NotFoundError("manifest path " + path);
    StatusOr<std::vector<std::string>> names = fs->ListDir(path);
    if (!names.ok()) {  // a file
      files.push_back(path);
      continue;
    }
    std::sort(names->begin(), names->end());
    for (const std::string& name : *names) {
      if (HasSuffix(name)) files.push_back(path + "/" + name);
    }
  }
  std::vector<Unstructured> out;
  for (const std::string& file : files) {
    StatusOr<std::string> text = ReadFile(fs, file);
    if (!text.ok()) return text.status().Annotate(file);
    StatusOr<std::vector<Unstructured>> objs = ParseManifests(*text);
    if (!objs.ok()) return objs.status().Annotate(file);
    for (Unstructured& o : *objs) out.push_back(std::move(o));
  }
  return out;
}

// ---- Environment -----------------------------------------------------------

StatusOr<std::unique_ptr<Environment>> Environment::Start(
    EnvironmentOptions options) {
  std::unique_ptr<Environment> env(new Environment());
  env->options_ = std::move(options);
  // On an error the destructor stops whatever started.
  RETURN_IF_ERROR(env->StartServers(env->options_));
  if (!env->options_.crd_paths.empty()) {
    ASSIGN_OR_RETURN(std::vector<Unstructured> crds,
                     ReadManifests(env->options_.crd_paths));
    for (const Unstructured& obj : crds) {
      if (!IsCrd(obj)) {
        return InvalidArgumentError("crd_paths: " + obj.Kind() + " " +
                                    obj.Name() +
                                    " is not a CustomResourceDefinition");
      }
    }
    RETURN_IF_ERROR(env->ApplyObjects(crds).status());
  }
  if (!env->options_.manifest_paths.empty()) {
    RETURN_IF_ERROR(env->ApplyFiles(env->options_.manifest_paths).status());
  }
  return env;
}

Status Environment::StartServers(const EnvironmentOptions& options) {
  std::string parent = options.temp_dir;
  if (parent.empty()) {
    const char* tmp = getenv("TMPDIR");
    parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string tmpl = parent + "/kplane-envtest-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return IOError("mkdtemp " + tmpl + ": " + std::string(strerror(errno)));
  }
  dir_ = tmpl;

  storage::StoreConfig config;
  config.name = "envtest";
  config.data_dir = dir_ + "/data";
  config.peer_urls = {"http://127.0.0.1:2380"};  // never dialled: one member
  // One member elects itself after one election timeout: keep it short.
  config.heartbeat_interval = milliseconds(10);
  config.election_timeout = milliseconds(50);
  config.corrupt_check_interval = Duration(0);
  config.metrics = &store_metrics_;
  ASSIGN_OR_RETURN(store_, storage::StoreServer::Open(config));
  RETURN_IF_ERROR(store_->Start(nullptr));
  if (!store_->WaitForLeader(seconds(10))) {
    return DeadlineExceededError("envtest: the store elected no leader");
  }

  apiserver::ApiServerOptions api;
  if (options.configure_api_server) options.configure_api_server(&api);
  api.kv = store_.get();
  api.bind_address = "127.0.0.1";
  api.port = 0;
  api.metrics = &api_metrics_;
  api_ = std::make_unique<apiserver::ApiServer>(api);
  RETURN_IF_ERROR(api_->Start());
  if (!api_->WaitReady(seconds(20))) {
    return DeadlineExceededError("envtest: the API server did not get ready");
  }
  ASSIGN_OR_RETURN(client_, RestClient::New(rest_options()));
  dynamic_ = std::make_unique<DynamicClient>(client_.get());
  return Status::Ok();
}

Environment::~Environment() { Stop(); }

void Environment::Stop() {
  dynamic_.reset();
  client_.reset();
  if (api_ != nullptr) {
    api_->Stop();
    api_.reset();
  }
  if (store_ != nullptr) {
    store_->Stop();
    store_.reset();
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

uint16_t Environment::port() const {
  return api_ != nullptr ? api_->port() : 0;
}

std::string Environment::server() const {
  return "http://127.0.0.1:" + std::to_string(port());
}

RestClientOptions Environment::rest_options() const {
  RestClientOptions o;
  o.server = server();
  o.user_agent = "kplane-envtest/1";
  o.metrics = const_cast<metrics::Registry*>(&client_metrics_);
  return o;
}

std::string Environment::Kubeconfig() const {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: envtest\n"
         "  cluster:\n"
         "    server: " +
         server() +
         "\n"
         "contexts:\n"
         "- name: envtest\n"
         "  context:\n"
         "    cluster: envtest\n"
         "    user: envtest\n"
         "    namespace: default\n"
         "current-context: envtest\n"
         "users:\n"
         "- name: envtest\n"
         "  user: {}\n";
}

Status Environment::WriteKubeconfig(const std::string& path) const {
  return WriteFileAtomically(FileSystem::Default(), path, Kubeconfig());
}

StatusOr<Unstructured> Environment::Apply(const Unstructured& obj) {
  const std::string api_version = obj.ApiVersion();
  const std::string kind = obj.Kind();
  if (api_version.empty() || kind.empty()) {
    return InvalidArgumentError("apply: apiVersion and kind are required");
  }
  ASSIGN_OR_RETURN(ResourceMapping m, dynamic_->MapKind(api_version, kind));
  DynamicResourceClient resource = dynamic_->Resource(m.gvr);
  Unstructured desired = obj;
  if (m.namespaced) {
    if (desired.Namespace().empty()) desired.SetNamespace("default");
    resource = resource.Namespace(desired.Namespace());
  } else {
    desired.RemoveNested({"metadata", "namespace"});
  }
  StatusOr<Unstructured> created = resource.Create(desired);
  if (!IsAlreadyExists(created.status())) {
    if (!created.ok()) {
      return created.status().Annotate(kind + " " + desired.Name());
    }
    return created;
  }
  ASSIGN_OR_RETURN(Unstructured current, resource.Get(desired.Name()));
  desired.SetResourceVersion(current.ResourceVersion());
  StatusOr<Unstructured> updated = resource.Update(desired);
  if (!updated.ok()) {
    return updated.status().Annotate(kind + " " + desired.Name());
  }
  return updated;
}

StatusOr<std::vector<Unstructured>> Environment::ApplyYaml(
    std::string_view yaml) {
  ASSIGN_OR_RETURN(std::vector<Unstructured> objs, ParseManifests(yaml));
  return ApplyObjects(objs);
}

StatusOr<std::vector<Unstructured>> Environment::ApplyObjects(
    const std::vector<Unstructured>& objs) {
  std::vector<Unstructured> crds;
  std::vector<Unstructured> applied;
  if (std::any_of(objs.begin(), objs.end(), IsCrd)) {
    RETURN_IF_ERROR(CheckCrdsServed());
  }
  for (const Unstructured& obj : objs) {
    if (!IsCrd(obj)) continue;
    ASSIGN_OR_RETURN(Unstructured stored, Apply(obj));
    crds.push_back(stored);
    applied.push_back(std::move(stored));
  }
  RETURN_IF_ERROR(WaitForCRDs(crds));
  for (const Unstructured& obj : objs) {
    if (IsCrd(obj)) continue;
    ASSIGN_OR_RETURN(Unstructured stored, Apply(obj));
    applied.push_back(std::move(stored));
  }
  return applied;
}

StatusOr<std::vector<Unstructured>> Environment::ApplyFiles(
    const std::vector<std::string>& paths) {
  ASSIGN_OR_RETURN(std::vector<Unstructured> objs, ReadManifests(paths));
  return ApplyObjects(objs);
}

Status Environment::WaitForCRDs(const std::vector<Unstructured>& crds) {
  for (const Unstructured& crd : crds) {
    RETURN_IF_ERROR(WaitForCRD(crd.Name(), options_.crd_install_timeout));
  }
  return Status::Ok();
}

Status Environment::CheckCrdsServed() {
  StatusOr<ResourceMapping> served =
      dynamic_->MapKind("apiextensions.k8s.io/v1", "CustomResourceDefinition");
  if (IsNotFound(served.status())) {
    return FailedPreconditionError(
        "the API server does not serve CustomResourceDefinitions "
        "(apiextensions.k8s.io/v1): " +
        served.status().message());
  }
  return served.status();
}

Status Environment::WaitForCRD(std::string_view name, Duration timeout) {
  RETURN_IF_ERROR(CheckCrdsServed());
  Clock* clock = Clock::Real();
  const TimePoint deadline = clock->Now() + timeout;
  DynamicResourceClient crds = dynamic_->Resource(kCrdResource);
  // List for the current state and a resourceVersion, then watch from it:
  // every change of the CRD's status wakes us; nothing polls.
  ASSIGN_OR_RETURN(UnstructuredList list, crds.List());
  std::optional<Unstructured> crd;
  for (Unstructured& item : list.items) {
    if (item.Name() == name) crd = std::move(item);
  }
  std::string rv = list.resource_version;
  std::string last_state = crd.has_value() ? Established(*crd) : "!not found";
  while (last_state != "True") {
    const Duration left = deadline - clock->Now();
    if (left <= Duration(0)) {
      return DeadlineExceededError(
          "CustomResourceDefinition " + std::string(name) +
          " not Established within " +
          std::to_string(
              std::chrono::duration_cast<milliseconds>(timeout).count()) +
          " ms (" + last_state.substr(1) + ")");
    }
    ListOptions watch_options{
        .resource_version = rv,
        .timeout_seconds = std::max<int64_t>(
            1, static_cast<int64_t>(
                   std::ceil(std::chrono::duration<double>(left).count())))};
    ASSIGN_OR_RETURN(std::unique_ptr<WatchStream> watch,
                     crds.Watch(watch_options));
    WatchEvent event;
    while (last_state != "True" && clock->Now() < deadline &&
           watch->Next(&event)) {
      if (event.type == EventType::kError) return event.error;
      if (event.object == nullptr) continue;
      rv = event.ResourceVersion();
      if (event.type == EventType::kBookmark) continue;
      ASSIGN_OR_RETURN(Unstructured obj,
                       Unstructured::FromObject(*event.object));
      if (obj.Name() != name) continue;
      last_state =
          event.type == EventType::kDeleted ? "!deleted" : Established(obj);
      if (last_state == "True") crd = std::move(obj);
    }
    watch->Stop();
  }
  // Established: discovery must serve every served version.
  const std::string group = crd->NestedString({"spec", "group"}).value_or("");
  const std::string kind =
      crd->NestedString({"spec", "names", "kind"}).value_or("");
  const std::string plural =
      crd->NestedString({"spec", "names", "plural"}).value_or("");
  const rapidjson::Value* versions = crd->Nested({"spec", "versions"});
  if (versions == nullptr || !versions->IsArray()) return Status::Ok();
  for (const rapidjson::Value& v : versions->GetArray()) {
    if (!v.IsObject() || !v.HasMember("name") || !v["name"].IsString()) {
      continue;
    }
    if (v.HasMember("served") && v["served"].IsBool() &&
        !v["served"].GetBool()) {
      continue;
    }
    const std::string api_version = group + "/" + v["name"].GetString();
    StatusOr<ResourceMapping> m = dynamic_->MapKind(api_version, kind);
    if (!m.ok() || m->gvr.resource != plural) {
      return FailedPreconditionError(
          "CustomResourceDefinition " + std::string(name) +
          " is Established but discovery does not serve " + plural + " in " +
          api_version + (m.ok() ? "" : ": " + m.status().message()));
    }
  }
  return Status::Ok();
}

}  // namespace kplane::informer::envtest
