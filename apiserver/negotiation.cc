#include "apiserver/negotiation.h"

#include <algorithm>

#include "base/strings.h"

namespace kplane::apiserver {

std::string_view MediaRange::Param(std::string_view name) const {
  for (const auto& [k, v] : params) {
    if (k == name) return v;
  }
  return {};
}

std::vector<MediaRange> ParseAccept(std::string_view accept) {
  std::vector<MediaRange> out;
  for (const std::string& clause : StrSplit(accept, ',')) {
    std::vector<std::string> parts = StrSplit(clause, ';');
    std::string type = ToLower(StripWhitespace(parts[0]));
    if (type.empty()) continue;
    MediaRange r;
    const size_t slash = type.find('/');
    if (slash == std::string::npos) {
      if (type != "*") continue;
      r.type = "*";
      r.subtype = "*";
    } else {
      r.type = type.substr(0, slash);
      r.subtype = type.substr(slash + 1);
    }
    bool bad = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string_view p = StripWhitespace(parts[i]);
      if (p.empty()) continue;
      const size_t eq = p.find('=');
      std::string name = ToLower(StripWhitespace(p.substr(0, eq)));
      std::string value = eq == std::string_view::npos
                              ? std::string()
                              : std::string(StripWhitespace(p.substr(eq + 1)));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
      if (name == "q") {
        std::optional<double> q = ParseDouble(value);
        if (!q) {
          bad = true;
          break;
        }
        r.q = *q;
        continue;
      }
      r.params.emplace_back(std::move(name), std::move(value));
    }
    if (bad || r.q <= 0) continue;
    out.push_back(std::move(r));
  }
  // By q, then concrete before wildcard (goautoneg's order, which
  // kube-apiserver negotiates with: "*/*, application/vnd.kubernetes.protobuf"
  // is protobuf), then as written.
  auto specificity = [](const MediaRange& r) {
    return (r.type != "*" ? 2 : 0) + (r.subtype != "*" ? 1 : 0);
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const MediaRange& a, const MediaRange& b) {
                     if (a.q != b.q) return a.q > b.q;
                     return specificity(a) > specificity(b);
                   });
  return out;
}

std::string Negotiated::ContentType() const {
  return std::string(objects::MediaTypeName(media));
}

namespace {

bool IsMetaGroup(const MediaRange& r) {
  std::string_view g = r.Param("g");
  std::string_view v = r.Param("v");
  return g == "meta.k8s.io" && (v == "v1" || v == "v1beta1");
}

}  // namespace

std::optional<Negotiated> NegotiateResponse(std::string_view accept,
                                            const NegotiateOptions& opts) {
  if (StripWhitespace(accept).empty()) return Negotiated{};
  for (const MediaRange& r : ParseAccept(accept)) {
    Negotiated n;
    std::string_view as = r.Param("as");
    if (r.type == "*" && r.subtype == "*") return n;
    if (r.type != "application") continue;
    if (r.subtype == "*") return n;
    if (r.subtype == "json") {
      n.media = objects::MediaType::kJson;
    } else if (r.subtype == "yaml") {
      if (!opts.allow_yaml) continue;
      n.media = objects::MediaType::kYaml;
    } else if (r.subtype == "vnd.kubernetes.protobuf") {
      if (!opts.allow_protobuf) continue;
      n.media = objects::MediaType::kProtobuf;
    } else {
      continue;
    }
    if (as.empty()) {
      // Discovery-only clauses (g=apidiscovery.k8s.io without as=) are not
      // sent by clients; a plain type with no "as" is the object itself.
      return n;
    }
    if (!IsMetaGroup(r)) continue;
    n.meta_version = std::string(r.Param("v"));
    if (as == "Table") {
      // Tables exist only as JSON here (no Table protobuf schema).
      if (!opts.allow_table || n.media != objects::MediaType::kJson) continue;
      n.shape = ResponseShape::kTable;
      return n;
    }
    if (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") {
      // JSON or protobuf: kube's metadata informers (the garbage
      // collector's) ask for protobuf first.
      if (!opts.allow_metadata || n.media == objects::MediaType::kYaml) {
        continue;
      }
      n.shape = ResponseShape::kMetadata;
      n.metadata_list = as == "PartialObjectMetadataList";
      return n;
    }
  }
  return std::nullopt;
}

std::string MetadataFormMismatch(const Negotiated& n, bool list,
                                 std::string_view go_type) {
  if (n.shape != ResponseShape::kMetadata || n.metadata_list == list) {
    return "";
  }
  // Kubernetes' words (handlers/response.go). It checks after negotiation
  // and does not fall back to a later clause of the Accept header.
  std::string m = n.metadata_list
                      ? "you requested PartialObjectMetadataList, but the "
                        "requested object is not a list ("
                      : "you requested PartialObjectMetadata, but the "
                        "requested object is a list (";
  m.append(go_type);
  m += ")";
  return m;
}

std::string GoTypeName(const objects::ResourceInfo& resource, bool custom,
                       bool list) {
  std::string name;
  if (custom || resource.kind == nullptr) {
    name = "*unstructured.Unstructured";
  } else {
    // kube's internal packages: the group's first label, with these
    // exceptions (pkg/apis/...).
    const std::string& group = resource.gv.group;
    std::string package = group.substr(0, group.find('.'));
    if (group.empty() || group == "events.k8s.io") package = "core";
    if (group == "internal.apiserver.k8s.io") package = "apiserverinternal";
    name = "*" + package + "." + resource.kind->kind;
  }
  if (list) name += "List";
  return name;
}

std::vector<std::string> SupportedResponseTypes(bool protobuf) {
  std::vector<std::string> out = {"application/json", "application/yaml"};
  if (protobuf) out.push_back("application/vnd.kubernetes.protobuf");
  return out;
}

std::vector<std::string> SupportedBodyTypes(bool protobuf) {
  return SupportedResponseTypes(protobuf);
}

bool WantsAggregatedDiscovery(std::string_view accept) {
  for (const MediaRange& r : ParseAccept(accept)) {
    const bool json = r.type == "application" && r.subtype == "json";
    if (json && r.Param("g") == "apidiscovery.k8s.io") {
      if (r.Param("v") == "v2" && r.Param("as") == "APIGroupDiscoveryList") {
        return true;
      }
      continue;  // v2beta1 or another shape: not served
    }
    if (json || (r.type == "*") ||
        (r.type == "application" && r.subtype == "*")) {
      return false;  // the legacy document satisfies this clause first
    }
  }
  return false;
}

std::optional<PatchType> ParsePatchType(std::string_view content_type) {
  std::string type =
      ToLower(StripWhitespace(content_type.substr(0, content_type.find(';'))));
  if (type == "application/json-patch+json") return PatchType::kJsonPatch;
  if (type == "application/merge-patch+json") return PatchType::kMergePatch;
  if (type == "application/strategic-merge-patch+json") {
    return PatchType::kStrategicMergePatch;
  }
  if (type == "application/apply-patch+yaml") return PatchType::kApply;
  return std::nullopt;
}

std::vector<std::string> SupportedPatchTypes() {
  return {"application/json-patch+json", "application/merge-patch+json",
          "application/strategic-merge-patch+json",
          "application/apply-patch+yaml"};
}

}  // namespace kplane::apiserver
