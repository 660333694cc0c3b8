// Pod validation: volumes and the paths and downward-API fields they
// use (upstream: validateVolumes, validateVolumeSource, the projected,
// downwardAPI, secret and configMap sources, validateLocalDescendingPath,
// validateObjectFieldSelector, validateContainerResourceFieldSelector in
// pkg/apis/core/validation/validation.go).
#include <algorithm>

#include "apiserver/registry/pod_validation_internal.h"
#include "base/strings.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver::podvalidation::internal {

namespace {

constexpr std::string_view kFileModeErrorMsg =
    "must be a number between 0 and 0777 (octal), both inclusive";

}  // namespace

// --- paths inside volumes ---

FieldErrors ValidatePathNoBacksteps(std::string_view target, const Path& p) {
  for (const std::string& part : StrSplit(target, '/')) {
    if (part == "..")
      return {InvalidString(p, target, "must not contain '..'")};
  }
  return {};
}

FieldErrors ValidateLocalDescendingPath(std::string_view target,
                                        const Path& p) {
  FieldErrors errs;
  if (!target.empty() && target.front() == '/') {
    errs.push_back(InvalidString(p, target, "must be a relative path"));
  }
  Append(&errs, ValidatePathNoBacksteps(target, p));
  return errs;
}

namespace {

FieldErrors ValidateLocalNonReservedPath(std::string_view target,
                                         const Path& p) {
  FieldErrors errs = ValidateLocalDescendingPath(target, p);
  if (target.starts_with("..") && !target.starts_with("../")) {
    errs.push_back(InvalidString(p, target, "must not start with '..'"));
  }
  return errs;
}

FieldErrors ValidateMode(bool has, int32_t mode, const Path& p) {
  if (has && (mode > 0777 || mode < 0)) {
    return {InvalidInt(p, mode, std::string(kFileModeErrorMsg))};
  }
  return {};
}

FieldErrors ValidateKeyToPath(const KeyToPath& kp, const Path& p) {
  FieldErrors errs;
  if (kp.key().empty()) errs.push_back(Required(p.Child("key")));
  if (kp.path().empty()) errs.push_back(Required(p.Child("path")));
  Append(&errs, ValidateLocalNonReservedPath(kp.path(), p.Child("path")));
  Append(&errs, ValidateMode(kp.has_mode(), kp.mode(), p.Child("mode")));
  return errs;
}

}  // namespace

// --- downward API ---

const std::set<std::string>& EnvFieldPaths() {
  static const auto* s = new std::set<std::string>{"metadata.name",
                                                   "metadata.namespace",
                                                   "metadata.uid",
                                                   "spec.nodeName",
                                                   "spec.serviceAccountName",
                                                   "status.hostIP",
                                                   "status.hostIPs",
                                                   "status.podIP",
                                                   "status.podIPs"};
  return *s;
}

namespace {

const std::set<std::string>& VolumeFieldPaths() {
  static const auto* s = new std::set<std::string>{
      "metadata.annotations", "metadata.labels", "metadata.name",
      "metadata.namespace", "metadata.uid"};
  return *s;
}

const std::set<std::string>& ResourceFieldPaths() {
  static const auto* s = new std::set<std::string>{
      "limits.cpu",   "limits.ephemeral-storage",   "limits.memory",
      "requests.cpu", "requests.ephemeral-storage", "requests.memory"};
  return *s;
}

// fieldpath.SplitMaybeSubscriptedPath: "metadata.labels['k']".
bool SplitSubscript(std::string_view fp, std::string* path, std::string* sub) {
  if (fp.size() < 2 || fp.substr(fp.size() - 2) != "']") return false;
  std::string_view s = fp.substr(0, fp.size() - 2);
  size_t open = s.find("['");
  if (open == std::string_view::npos || open == 0) return false;
  *path = std::string(s.substr(0, open));
  *sub = std::string(s.substr(open + 2));
  return true;
}

// pods.ConvertDownwardAPIFieldLabel's error, or "" when supported.
std::string ConvertDownwardAPIFieldLabel(const std::string& version,
                                         const std::string& label) {
  if (version != "v1") return "unsupported pod version: " + version;
  std::string path, sub;
  if (SplitSubscript(label, &path, &sub)) {
    if (path == "metadata.annotations" || path == "metadata.labels") return "";
    return "field label does not support subscript: " + label;
  }
  static const auto* known =
      new std::set<std::string>{"metadata.annotations",
                                "metadata.labels",
                                "metadata.name",
                                "metadata.namespace",
                                "metadata.uid",
                                "spec.nodeName",
                                "spec.restartPolicy",
                                "spec.serviceAccountName",
                                "spec.schedulerName",
                                "status.phase",
                                "status.hostIP",
                                "status.hostIPs",
                                "status.podIP",
                                "status.podIPs",
                                "spec.host"};
  if (known->count(label)) return "";
  return "field label not supported: " + label;
}

}  // namespace

FieldErrors ValidateObjectFieldSelector(const ObjectFieldSelector& fs,
                                        const std::set<std::string>& allowed,
                                        const Path& p) {
  if (fs.apiversion().empty()) return {Required(p.Child("apiVersion"))};
  if (fs.fieldpath().empty()) return {Required(p.Child("fieldPath"))};
  std::string err =
      ConvertDownwardAPIFieldLabel(fs.apiversion(), fs.fieldpath());
  if (!err.empty()) {
    return {InvalidString(p.Child("fieldPath"), fs.fieldpath(),
                          "error converting fieldPath: " + err)};
  }
  std::string path =
      fs.fieldpath() == "spec.host" ? "spec.nodeName" : fs.fieldpath();
  std::string sub;
  std::string base;
  if (SplitSubscript(path, &base, &sub)) {
    if (base == "metadata.annotations") {
      return validation::ValidateQualifiedName(ToLower(sub), p);
    }
    return validation::ValidateQualifiedName(sub, p);
  }
  if (!allowed.count(path)) {
    return {NotSupportedString(p.Child("fieldPath"), path,
                               {allowed.begin(), allowed.end()})};
  }
  return {};
}

namespace {

FieldErrors ValidateResourceDivisor(const std::string& resource,
                                    const ResourceFieldSelector& fs,
                                    const Path& p) {
  if (!fs.has_divisor() || fs.divisor().string().empty()) return {};
  auto q = Quantity::Parse(fs.divisor().string());
  if (!q.ok() || q->IsZero()) return {};
  std::string d = q->String();
  static const auto* cpu = new std::set<std::string>{"1m", "1"};
  static const auto* mem =
      new std::set<std::string>{"1",   "1k",  "1M",  "1G",  "1T",  "1P", "1E",
                                "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"};
  if ((resource == "limits.cpu" || resource == "requests.cpu") &&
      !cpu->count(d)) {
    return {InvalidString(p.Child("divisor"), resource,
                          "only divisor's values 1m and 1 are supported with "
                          "the cpu resource")};
  }
  if ((resource == "limits.memory" || resource == "requests.memory") &&
      !mem->count(d)) {
    return {InvalidString(p.Child("divisor"), resource,
                          "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, "
                          "1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with "
                          "the memory resource")};
  }
  if ((resource == "limits.ephemeral-storage" ||
       resource == "requests.ephemeral-storage") &&
      !mem->count(d)) {
    return {InvalidString(p.Child("divisor"), resource,
                          "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, "
                          "1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with "
                          "the local ephemeral storage resource")};
  }
  return {};
}

}  // namespace

FieldErrors ValidateResourceFieldSelector(const ResourceFieldSelector& fs,
                                          const Path& p, bool volume) {
  FieldErrors errs;
  if (volume && fs.containername().empty()) {
    errs.push_back(Required(p.Child("containerName")));
  } else if (fs.resource().empty()) {
    errs.push_back(Required(p.Child("resource")));
  } else if (!ResourceFieldPaths().count(fs.resource()) &&
             !fs.resource().starts_with("requests.hugepages-") &&
             !fs.resource().starts_with("limits.hugepages-")) {
    errs.push_back(NotSupportedString(
        p.Child("resource"), fs.resource(),
        {ResourceFieldPaths().begin(), ResourceFieldPaths().end()}));
  }
  Append(&errs, ValidateResourceDivisor(fs.resource(), fs, p));
  return errs;
}

namespace {

FieldErrors ValidateDownwardAPIFile(const DownwardAPIVolumeFile& f,
                                    const Path& p) {
  FieldErrors errs;
  if (f.path().empty()) errs.push_back(Required(p.Child("path")));
  Append(&errs, ValidateLocalNonReservedPath(f.path(), p.Child("path")));
  if (f.has_fieldref()) {
    Append(&errs, ValidateObjectFieldSelector(f.fieldref(), VolumeFieldPaths(),
                                              p.Child("fieldRef")));
    if (f.has_resourcefieldref()) {
      errs.push_back(InvalidString(
          p, "resource",
          "fieldRef and resourceFieldRef can not be specified simultaneously"));
    }
  } else if (f.has_resourcefieldref()) {
    Append(&errs, ValidateResourceFieldSelector(
                      f.resourcefieldref(), p.Child("resourceFieldRef"), true));
  } else {
    errs.push_back(
        Required(p, "one of fieldRef and resourceFieldRef is required"));
  }
  Append(&errs, ValidateMode(f.has_mode(), f.mode(), p.Child("mode")));
  return errs;
}

// --- volumes ---

FieldErrors ValidateProjected(const ProjectedVolumeSource& proj,
                              const Path& p) {
  FieldErrors errs = ValidateMode(proj.has_defaultmode(), proj.defaultmode(),
                                  p.Child("defaultMode"));
  std::set<std::string> paths;
  auto note_path = [&](const std::string& path, const std::string& value) {
    if (path.empty()) return;
    if (!paths.insert(path).second) {
      errs.push_back(InvalidString(p, value, "conflicting duplicate paths"));
    }
  };
  for (int i = 0; i < proj.sources_size(); ++i) {
    const VolumeProjection& src = proj.sources(i);
    Path sp = p.Child("sources").Index(i);
    int n = 0;
    if (src.has_secret()) {
      ++n;
      Path pp = sp.Child("secret");
      const auto& s = src.secret();
      if (s.localobjectreference().name().empty()) {
        errs.push_back(Required(pp.Child("name")));
      }
      for (int j = 0; j < s.items_size(); ++j) {
        Append(&errs,
               ValidateKeyToPath(s.items(j), pp.Child("items").Index(j)));
        note_path(s.items(j).path(), s.localobjectreference().name());
      }
    }
    if (src.has_configmap()) {
      ++n;
      Path pp = sp.Child("configMap");
      const auto& c = src.configmap();
      if (c.localobjectreference().name().empty()) {
        errs.push_back(Required(pp.Child("name")));
      }
      for (int j = 0; j < c.items_size(); ++j) {
        Append(&errs,
               ValidateKeyToPath(c.items(j), pp.Child("items").Index(j)));
        note_path(c.items(j).path(), c.localobjectreference().name());
      }
    }
    if (src.has_downwardapi()) {
      ++n;
      for (const auto& f : src.downwardapi().items()) {
        Append(&errs, ValidateDownwardAPIFile(f, sp.Child("downwardAPI")));
        note_path(f.path(), f.path());
      }
    }
    if (src.has_serviceaccounttoken()) {
      ++n;
      const auto& t = src.serviceaccounttoken();
      Path pp = sp.Child("serviceAccountToken");
      if (t.expirationseconds() < 600) {
        errs.push_back(InvalidInt(pp.Child("expirationSeconds"),
                                  t.expirationseconds(),
                                  "may not specify a duration less than 10 "
                                  "minutes"));
      }
      if (t.expirationseconds() > (int64_t{1} << 32)) {
        errs.push_back(InvalidInt(pp.Child("expirationSeconds"),
                                  t.expirationseconds(),
                                  "may not specify a duration larger than 2^32 "
                                  "seconds"));
      }
      if (t.path().empty()) {
        errs.push_back(Required(p.Child("path")));
      } else {
        Append(&errs, ValidateLocalNonReservedPath(t.path(), p.Child("path")));
      }
    }
    if (n > 1) {
      errs.push_back(
          Forbidden(sp, "may not specify more than 1 volume type per source"));
    }
  }
  return errs;
}

FieldErrors ValidateVolumeSource(const VolumeSource& s, const Path& p) {
  FieldErrors errs;
  int n = 0;
  auto more = [&](std::string_view child) {
    if (n > 0) {
      errs.push_back(
          Forbidden(p.Child(child), "may not specify more than 1 volume type"));
      return true;
    }
    ++n;
    return false;
  };
  if (s.has_emptydir() && !more("emptyDir")) {
    const auto& e = s.emptydir();
    if (e.has_sizelimit()) {
      auto q = Quantity::Parse(e.sizelimit().string());
      if (q.ok() && q->Sign() < 0) {
        errs.push_back(Forbidden(p.Child("emptyDir").Child("sizeLimit"),
                                 "SizeLimit field must be a valid resource "
                                 "quantity"));
      }
    }
  }
  if (s.has_hostpath() && !more("hostPath")) {
    const auto& h = s.hostpath();
    Path hp = p.Child("hostPath");
    if (h.path().empty()) {
      errs.push_back(Required(hp.Child("path")));
    } else {
      Append(&errs, ValidatePathNoBacksteps(h.path(), hp.Child("path")));
      static const std::vector<std::string> kTypes = {"",
                                                      "BlockDevice",
                                                      "CharDevice",
                                                      "Directory",
                                                      "DirectoryOrCreate",
                                                      "File",
                                                      "FileOrCreate",
                                                      "Socket"};
      if (h.has_type() &&
          std::find(kTypes.begin(), kTypes.end(), h.type()) == kTypes.end()) {
        errs.push_back(NotSupportedString(hp.Child("type"), h.type(), kTypes));
      }
    }
  }
  if (s.has_secret() && !more("secret")) {
    const auto& sec = s.secret();
    Path sp = p.Child("secret");
    if (sec.secretname().empty())
      errs.push_back(Required(sp.Child("secretName")));
    Append(&errs, ValidateMode(sec.has_defaultmode(), sec.defaultmode(),
                               sp.Child("defaultMode")));
    for (int i = 0; i < sec.items_size(); ++i) {
      Append(&errs,
             ValidateKeyToPath(sec.items(i), sp.Child("items").Index(i)));
    }
  }
  if (s.has_nfs() && !more("nfs")) {
    const auto& nfs = s.nfs();
    Path np = p.Child("nfs");
    if (nfs.server().empty()) errs.push_back(Required(np.Child("server")));
    if (nfs.path().empty()) errs.push_back(Required(np.Child("path")));
    if (nfs.path().empty() || nfs.path().front() != '/') {
      errs.push_back(InvalidString(np.Child("path"), nfs.path(),
                                   "must be an absolute path"));
    }
  }
  if (s.has_persistentvolumeclaim() && !more("persistentVolumeClaim")) {
    if (s.persistentvolumeclaim().claimname().empty()) {
      errs.push_back(
          Required(p.Child("persistentVolumeClaim").Child("claimName")));
    }
  }
  if (s.has_downwardapi() && !more("downwardAPI")) {
    const auto& d = s.downwardapi();
    Path dp = p.Child("downwardAPI");
    Append(&errs, ValidateMode(d.has_defaultmode(), d.defaultmode(),
                               dp.Child("defaultMode")));
    for (const auto& f : d.items())
      Append(&errs, ValidateDownwardAPIFile(f, dp));
  }
  if (s.has_projected() && !more("projected")) {
    Append(&errs, ValidateProjected(s.projected(), p.Child("projected")));
  }
  if (s.has_configmap() && !more("configMap")) {
    const auto& c = s.configmap();
    Path cp = p.Child("configMap");
    if (c.localobjectreference().name().empty()) {
      errs.push_back(Required(cp.Child("name")));
    }
    Append(&errs, ValidateMode(c.has_defaultmode(), c.defaultmode(),
                               cp.Child("defaultMode")));
    for (int i = 0; i < c.items_size(); ++i) {
      Append(&errs, ValidateKeyToPath(c.items(i), cp.Child("items").Index(i)));
    }
  }
  if (s.has_csi() && !more("csi")) {
    const auto& csi = s.csi();
    Path cp = p.Child("csi");
    if (csi.driver().empty()) {
      errs.push_back(Required(cp.Child("driver")));
    } else {
      if (csi.driver().size() > 63) {
        errs.push_back(validation::TooLong(cp.Child("driver"), 63));
      }
      for (auto& m : machinery::IsDNS1123Subdomain(ToLower(csi.driver()))) {
        errs.push_back(InvalidString(cp.Child("driver"), csi.driver(), m));
      }
    }
    if (csi.has_nodepublishsecretref()) {
      const std::string& name = csi.nodepublishsecretref().name();
      if (name.empty()) {
        errs.push_back(Required(cp.Child("nodePublishSecretRef", "name")));
      } else {
        for (auto& m : NameIsDNSSubdomain(name)) {
          errs.push_back(InvalidString(cp.Child("name"), name, m));
        }
      }
    }
  }
  if (s.has_image() && !more("image")) {
    if (s.image().reference().empty()) {
      errs.push_back(Required(p.Child("image").Child("reference")));
    }
  }
  if (n == 0) errs.push_back(Required(p, "must specify a volume type"));
  return errs;
}

}  // namespace

// Returns the valid volumes by name.
std::map<std::string, const VolumeSource*> ValidateVolumes(
    const google::protobuf::RepeatedPtrField<Volume>& volumes, const Path& p,
    FieldErrors* errs) {
  std::map<std::string, const VolumeSource*> out;
  std::set<std::string> names;
  for (int i = 0; i < volumes.size(); ++i) {
    const Volume& v = volumes[i];
    Path ip = p.Index(i);
    FieldErrors el = ValidateVolumeSource(v.volumesource(), ip);
    if (v.name().empty()) {
      el.push_back(Required(ip.Child("name")));
    } else {
      Append(&el, validation::ValidateDNS1123Label(v.name(), ip.Child("name")));
    }
    if (names.count(v.name())) {
      el.push_back(Duplicate(ip.Child("name"), GoQuote(v.name())));
    }
    if (el.empty()) {
      names.insert(v.name());
      out[v.name()] = &v.volumesource();
    } else {
      Append(errs, std::move(el));
    }
  }
  return out;
}

}  // namespace kplane::apiserver::podvalidation::internal
