#include "kpctl/kube/kubeconfig.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "objects/yaml.h"
#include "base/strings.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Value;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string StringAt(const Value& obj, const char* key) {
  if (!obj.IsObject()) return "";
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString()) return "";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

// The `field` (e.g. "context") object of the entry named `name` in the
// list `list` ("contexts"); nullptr when absent.
const Value* FindNamed(const Value& doc, const char* list,
                       const std::string& name, const char* field) {
  auto it = doc.FindMember(list);
  if (it == doc.MemberEnd() || !it->value.IsArray()) return nullptr;
  for (const Value& e : it->value.GetArray()) {
    if (StringAt(e, "name") == name) {
      auto f = e.FindMember(field);
      return f != e.MemberEnd() ? &f->value : nullptr;
    }
  }
  return nullptr;
}

}  // namespace

void MergeKubeconfig(const Value& file, Kubeconfig* into) {
  rapidjson::Document& doc = into->doc;
  auto& alloc = doc.GetAllocator();
  if (!doc.IsObject()) doc.SetObject();
  if (!file.IsObject()) return;
  if (StringAt(doc, "current-context").empty() &&
      !StringAt(file, "current-context").empty()) {
    doc.RemoveMember("current-context");
    doc.AddMember("current-context",
                  Value(StringAt(file, "current-context").c_str(), alloc),
                  alloc);
  }
  for (const char* list : {"clusters", "contexts", "users"}) {
    auto src = file.FindMember(list);
    if (src == file.MemberEnd() || !src->value.IsArray()) continue;
    if (!doc.HasMember(list)) {
      doc.AddMember(Value(list, alloc), Value(rapidjson::kArrayType), alloc);
    }
    Value& dst = doc[list];
    for (const Value& e : src->value.GetArray()) {
      const std::string name = StringAt(e, "name");
      bool seen = false;
      for (const Value& d : dst.GetArray()) seen |= StringAt(d, "name") == name;
      if (!seen) dst.PushBack(Value(e, alloc), alloc);
    }
  }
  for (auto& m : file.GetObject()) {
    if (!doc.HasMember(m.name)) {
      doc.AddMember(Value(m.name, alloc), Value(m.value, alloc), alloc);
    }
  }
}

StatusOr<Kubeconfig> LoadKubeconfig(const std::string& explicit_path,
                                    const GetEnvFn& getenv) {
  Kubeconfig config;
  config.doc.SetObject();
  std::vector<std::string> candidates;
  bool must_exist = false;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);
    must_exist = true;
  } else if (const char* env = getenv("KUBECONFIG");
             env != nullptr && *env != '\0') {
    for (const std::string& p : StrSplit(env, ':')) {
      if (!p.empty()) candidates.push_back(p);
    }
  } else if (const char* home = getenv("HOME"); home != nullptr) {
    // kubectl's default, else the one `kplane up` writes.
    const std::string kube = std::string(home) + "/.kube/config";
    std::error_code ec;
    candidates.push_back(std::filesystem::exists(kube, ec)
                             ? kube
                             : std::string(home) + "/.kplane/kubeconfig");
  }
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      if (must_exist) {
        return NotFoundError("stat " + path + ": no such file or directory");
      }
      continue;
    }
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    if (StripWhitespace(text).empty()) continue;
    StatusOr<rapidjson::Document> doc = objects::ParseYamlDocument(text);
    if (!doc.ok()) {
      return InvalidArgumentError("error loading config file \"" + path +
                                  "\": " + doc.status().message());
    }
    MergeKubeconfig(*doc, &config);
    config.files.push_back(path);
  }
  return config;
}

StatusOr<std::string> NormalizeServer(const std::string& server) {
  if (server.rfind("https://", 0) == 0) {
    return InvalidArgumentError("server " + server +
                                ": https is not supported (kplane's API "
                                "server speaks plain HTTP); use http://");
  }
  std::string s = server;
  if (s.rfind("http://", 0) != 0) s = "http://" + s;
  while (s.size() > 7 && s.back() == '/') s.pop_back();
  return s;
}

StatusOr<ClientConfig> ResolveClientConfig(const Kubeconfig& config,
                                           const ConfigOverrides& overrides) {
  const Value& doc = config.doc;
  ClientConfig out;
  out.context = overrides.context.empty() ? StringAt(doc, "current-context")
                                          : overrides.context;
  const Value* context = nullptr;
  if (!out.context.empty()) {
    context = FindNamed(doc, "contexts", out.context, "context");
    if (context == nullptr && !overrides.context.empty()) {
      return InvalidArgumentError(
          "context was not found for specified "
          "context: " +
          out.context);
    }
  }
  std::string server, token, ns;
  if (context != nullptr) {
    ns = StringAt(*context, "namespace");
    const std::string cluster = StringAt(*context, "cluster");
    if (const Value* c = FindNamed(doc, "clusters", cluster, "cluster")) {
      server = StringAt(*c, "server");
    }
    const std::string user = StringAt(*context, "user");
    if (const Value* u = FindNamed(doc, "users", user, "user")) {
      token = StringAt(*u, "token");
      const std::string token_file = StringAt(*u, "tokenFile");
      if (token.empty() && !token_file.empty()) {
        ASSIGN_OR_RETURN(std::string t, ReadFile(token_file));
        token = std::string(StripWhitespace(t));
      }
    }
  }
  if (!overrides.server.empty()) server = overrides.server;
  if (!overrides.token.empty()) token = overrides.token;
  if (!overrides.ns.empty()) {
    ns = overrides.ns;
    out.ns_explicit = true;
  }
  if (server.empty()) {
    return InvalidArgumentError(
        "no API server configured: pass --server, or point --kubeconfig / "
        "KUBECONFIG at a kubeconfig (`kplane up` writes one to "
        "~/.kplane/kubeconfig)");
  }
  ASSIGN_OR_RETURN(out.server, NormalizeServer(server));
  out.token = token;
  out.ns = ns.empty() ? "default" : ns;
  return out;
}

}  // namespace kplane::kpctl::kube
