#include "kpctl/kube/resources.h"

#include <algorithm>

#include "base/strings.h"

namespace kplane::kpctl::kube {

StatusOr<const objects::ResourceInfo*> ResolveResource(std::string_view word) {
  const objects::ResourceInfo* r = objects::Scheme::Default().Resolve(word);
  // Create-only resources (bindings) cannot be listed or read.
  if (r == nullptr || r->list_kind == nullptr) {
    return InvalidArgumentError("the server doesn't have a resource type \"" +
                                std::string(word) + "\"");
  }
  return r;
}

namespace {

void Add(std::vector<ResourceSelection>* out, const objects::ResourceInfo* r,
         const std::string* name) {
  auto it = std::find_if(out->begin(), out->end(),
                         [&](const auto& s) { return s.resource == r; });
  if (it == out->end()) {
    out->push_back({r, {}});
    it = out->end() - 1;
  }
  if (name != nullptr) it->names.push_back(*name);
}

StatusOr<std::vector<const objects::ResourceInfo*>> ResolveList(
    std::string_view words) {
  std::vector<const objects::ResourceInfo*> out;
  for (const std::string& w : StrSplit(words, ',')) {
    if (w.empty()) continue;
    if (ToLower(w) == "all") {
      for (const auto& r : objects::Scheme::Default().resources()) {
        for (const std::string& c : r->categories) {
          if (c == "all") out.push_back(r.get());
        }
      }
      continue;
    }
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, ResolveResource(w));
    out.push_back(r);
  }
  if (out.empty()) {
    return InvalidArgumentError("you must specify the type of resource to get");
  }
  return out;
}

}  // namespace

StatusOr<std::vector<ResourceSelection>> ParseResourceArgs(
    const std::vector<std::string>& args) {
  std::vector<ResourceSelection> out;
  if (args.empty()) {
    return InvalidArgumentError(
        "you must specify the type of resource to get. Use \"kpctl "
        "api-resources\" for a complete list of supported resources.");
  }
  if (args[0].find('/') != std::string::npos) {
    for (const std::string& a : args) {
      const size_t slash = a.find('/');
      if (slash == std::string::npos) {
        return InvalidArgumentError(
            "there is no need to specify a resource type as a separate "
            "argument when passing arguments in resource/name form (e.g. "
            "'kpctl get resource/<resource_name>' instead of 'kpctl get "
            "resource resource/<resource_name>'");
      }
      const std::string name = a.substr(slash + 1);
      if (name.empty()) {
        return InvalidArgumentError(
            "arguments in resource/name form must "
            "have a single resource and name");
      }
      ASSIGN_OR_RETURN(const objects::ResourceInfo* r,
                       ResolveResource(a.substr(0, slash)));
      Add(&out, r, &name);
    }
    return out;
  }
  ASSIGN_OR_RETURN(std::vector<const objects::ResourceInfo*> types,
                   ResolveList(args[0]));
  for (const objects::ResourceInfo* r : types) {
    Add(&out, r, nullptr);
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i].find('/') != std::string::npos) {
        return InvalidArgumentError(
            "there is no need to specify a resource type as a separate "
            "argument when passing arguments in resource/name form (e.g. "
            "'kpctl get resource/<resource_name>' instead of 'kpctl get "
            "resource resource/<resource_name>'");
      }
      Add(&out, r, &args[i]);
    }
  }
  return out;
}

std::string KindGroup(const objects::ResourceInfo& r) {
  std::string s = ToLower(r.kind->kind);
  if (!r.gv.group.empty()) s += "." + r.gv.group;
  return s;
}

std::string ObjectRef(const objects::ResourceInfo& r, std::string_view name) {
  return KindGroup(r) + "/" + std::string(name);
}

}  // namespace kplane::kpctl::kube
