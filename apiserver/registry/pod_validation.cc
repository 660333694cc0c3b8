#include "apiserver/registry/pod_validation.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/strings.h"
#include "objects/codec.h"
#include "objects/machinery/quantity.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver::podvalidation {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using machinery::Quantity;
using validation::Append;
using validation::Duplicate;
using validation::Forbidden;
using validation::GoInt;
using validation::Invalid;
using validation::InvalidInt;
using validation::InvalidString;
using validation::NotFound;
using validation::NotSupportedString;
using validation::Path;
using validation::Required;

constexpr std::string_view kFileModeErrorMsg =
    "must be a number between 0 and 0777 (octal), both inclusive";
constexpr int64_t kMaxInt32 = 2147483647;

template <typename M>
std::vector<std::string> SortedKeys(const M& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::string> NameIsDNSSubdomain(std::string_view name) {
  return validation::ValidateName(validation::NameRule::kDNS1123Subdomain, name,
                                  false);
}

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

// --- containers ---

FieldErrors ValidateContainerPorts(
    const google::protobuf::RepeatedPtrField<ContainerPort>& ports,
    const Path& p) {
  FieldErrors errs;
  std::set<std::string> names;
  for (int i = 0; i < ports.size(); ++i) {
    const ContainerPort& port = ports[i];
    Path ip = p.Index(i);
    if (!port.name().empty()) {
      auto msgs = validation::IsValidPortName(port.name());
      if (!msgs.empty()) {
        for (auto& m : msgs) {
          errs.push_back(InvalidString(ip.Child("name"), port.name(), m));
        }
      } else if (names.count(port.name())) {
        errs.push_back(Duplicate(ip.Child("name"), GoQuote(port.name())));
      } else {
        names.insert(port.name());
      }
    }
    if (port.containerport() == 0) {
      errs.push_back(Required(ip.Child("containerPort")));
    } else {
      for (auto& m : validation::IsValidPortNum(port.containerport())) {
        errs.push_back(
            InvalidInt(ip.Child("containerPort"), port.containerport(), m));
      }
    }
    if (port.hostport() != 0) {
      for (auto& m : validation::IsValidPortNum(port.hostport())) {
        errs.push_back(InvalidInt(ip.Child("hostPort"), port.hostport(), m));
      }
    }
    if (port.protocol().empty()) {
      errs.push_back(Required(ip.Child("protocol")));
    } else if (port.protocol() != "TCP" && port.protocol() != "UDP" &&
               port.protocol() != "SCTP") {
      errs.push_back(NotSupportedString(ip.Child("protocol"), port.protocol(),
                                        {"SCTP", "TCP", "UDP"}));
    }
  }
  return errs;
}

FieldErrors ValidateKeySelector(const std::string& name, const std::string& key,
                                const Path& p) {
  FieldErrors errs;
  for (auto& m : NameIsDNSSubdomain(name)) {
    errs.push_back(InvalidString(p.Child("name"), name, m));
  }
  if (key.empty()) {
    errs.push_back(Required(p.Child("key")));
  } else {
    for (auto& m : validation::IsConfigMapKey(key)) {
      errs.push_back(InvalidString(p.Child("key"), key, m));
    }
  }
  return errs;
}

FieldErrors ValidateEnv(const google::protobuf::RepeatedPtrField<EnvVar>& vars,
                        const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < vars.size(); ++i) {
    const EnvVar& ev = vars[i];
    Path ip = p.Index(i);
    if (ev.name().empty()) {
      errs.push_back(Required(ip.Child("name")));
    } else {
      for (auto& m : validation::IsRelaxedEnvVarName(ev.name())) {
        errs.push_back(InvalidString(ip.Child("name"), ev.name(), m));
      }
    }
    if (!ev.has_valuefrom()) continue;
    const EnvVarSource& src = ev.valuefrom();
    Path vp = ip.Child("valueFrom");
    int n = 0;
    if (src.has_fieldref()) {
      ++n;
      Append(&errs, ValidateObjectFieldSelector(src.fieldref(), EnvFieldPaths(),
                                                vp.Child("fieldRef")));
    }
    if (src.has_resourcefieldref()) {
      ++n;
      Append(&errs,
             ValidateResourceFieldSelector(
                 src.resourcefieldref(), vp.Child("resourceFieldRef"), false));
    }
    if (src.has_configmapkeyref()) {
      ++n;
      Append(&errs,
             ValidateKeySelector(
                 src.configmapkeyref().localobjectreference().name(),
                 src.configmapkeyref().key(), vp.Child("configMapKeyRef")));
    }
    if (src.has_secretkeyref()) {
      ++n;
      Append(&errs, ValidateKeySelector(
                        src.secretkeyref().localobjectreference().name(),
                        src.secretkeyref().key(), vp.Child("secretKeyRef")));
    }
    if (n == 0) {
      errs.push_back(InvalidString(vp, "",
                                   "must specify one of: `fieldRef`, "
                                   "`resourceFieldRef`, `configMapKeyRef` or "
                                   "`secretKeyRef`"));
    } else if (!ev.value().empty()) {
      errs.push_back(InvalidString(vp, "",
                                   "may not be specified when `value` is not "
                                   "empty"));
    } else if (n > 1) {
      errs.push_back(InvalidString(vp, "",
                                   "may not have more than one field specified "
                                   "at a time"));
    }
  }
  return errs;
}

FieldErrors ValidateEnvFrom(
    const google::protobuf::RepeatedPtrField<EnvFromSource>& vars,
    const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < vars.size(); ++i) {
    const EnvFromSource& ev = vars[i];
    Path ip = p.Index(i);
    if (!ev.prefix().empty()) {
      for (auto& m : validation::IsRelaxedEnvVarName(ev.prefix())) {
        errs.push_back(InvalidString(ip.Child("prefix"), ev.prefix(), m));
      }
    }
    int n = 0;
    auto check_name = [&](const std::string& name, const Path& np) {
      if (name.empty()) {
        errs.push_back(Required(np.Child("name")));
      } else {
        for (auto& m : validation::ValidateName(
                 validation::NameRule::kDNS1123Subdomain, name, true)) {
          errs.push_back(InvalidString(np.Child("name"), name, m));
        }
      }
    };
    if (ev.has_configmapref()) {
      ++n;
      check_name(ev.configmapref().localobjectreference().name(),
                 ip.Child("configMapRef"));
    }
    if (ev.has_secretref()) {
      ++n;
      check_name(ev.secretref().localobjectreference().name(),
                 ip.Child("secretRef"));
    }
    if (n == 0) {
      errs.push_back(InvalidString(
          p, "", "must specify one of: `configMapRef` or `secretRef`"));
    } else if (n > 1) {
      errs.push_back(InvalidString(
          p, "", "may not have more than one field specified at a time"));
    }
  }
  return errs;
}

FieldErrors ValidateVolumeMounts(
    const Container& c,
    const std::map<std::string, const VolumeSource*>& volumes, const Path& p) {
  FieldErrors errs;
  std::map<std::string, std::string> devices;
  for (const auto& d : c.volumedevices()) devices[d.name()] = d.devicepath();
  std::set<std::string> mountpoints;
  for (int i = 0; i < c.volumemounts_size(); ++i) {
    const VolumeMount& m = c.volumemounts(i);
    Path ip = p.Index(i);
    if (m.name().empty()) errs.push_back(Required(ip.Child("name")));
    if (!volumes.count(m.name())) {
      errs.push_back(NotFound(ip.Child("name"), GoQuote(m.name())));
    }
    if (m.mountpath().empty()) errs.push_back(Required(ip.Child("mountPath")));
    if (mountpoints.count(m.mountpath())) {
      errs.push_back(InvalidString(ip.Child("mountPath"), m.mountpath(),
                                   "must be unique"));
    }
    mountpoints.insert(m.mountpath());
    if (devices.count(m.name())) {
      errs.push_back(InvalidString(ip.Child("name"), m.name(),
                                   "must not already exist in volumeDevices"));
    }
    for (const auto& [dn, dp] : devices) {
      if (dp == m.mountpath()) {
        errs.push_back(
            InvalidString(ip.Child("mountPath"), m.mountpath(),
                          "must not already exist as a path in volumeDevices"));
        break;
      }
    }
    if (!m.subpath().empty()) {
      Append(&errs,
             ValidateLocalDescendingPath(m.subpath(), p.Child("subPath")));
    }
    if (!m.subpathexpr().empty()) {
      if (!m.subpath().empty()) {
        errs.push_back(InvalidString(ip.Child("subPathExpr"), m.subpathexpr(),
                                     "subPathExpr and subPath are mutually "
                                     "exclusive"));
      }
      Append(&errs, ValidateLocalDescendingPath(m.subpathexpr(),
                                                p.Child("subPathExpr")));
    }
    if (m.has_mountpropagation()) {
      Path mp = p.Child("mountPropagation");
      const std::string& prop = m.mountpropagation();
      if (prop != "Bidirectional" && prop != "HostToContainer" &&
          prop != "None") {
        errs.push_back(NotSupportedString(
            mp, prop, {"Bidirectional", "HostToContainer", "None"}));
      }
      bool privileged = c.has_securitycontext() &&
                        c.securitycontext().has_privileged() &&
                        c.securitycontext().privileged();
      if (prop == "Bidirectional" && !privileged) {
        errs.push_back(Forbidden(mp,
                                 "Bidirectional mount propagation is "
                                 "available only to privileged containers"));
      }
    }
    if (m.has_recursivereadonly()) {
      Path rp = p.Child("recursiveReadOnly");
      const std::string& rro = m.recursivereadonly();
      if (rro == "Enabled" || rro == "IfPossible") {
        if (!m.readonly()) {
          errs.push_back(Forbidden(rp,
                                   "may only be specified when readOnly is "
                                   "true"));
        }
        if (m.has_mountpropagation() && m.mountpropagation() != "None") {
          errs.push_back(Forbidden(rp,
                                   "may only be specified when "
                                   "mountPropagation is None or not "
                                   "specified"));
        }
      } else if (rro != "Disabled") {
        errs.push_back(
            NotSupportedString(rp, rro, {"Disabled", "Enabled", "IfPossible"}));
      }
    }
  }
  return errs;
}

FieldErrors ValidateVolumeDevices(
    const Container& c,
    const std::map<std::string, const VolumeSource*>& volumes, const Path& p) {
  FieldErrors errs;
  std::map<std::string, std::string> mounts;
  for (const auto& m : c.volumemounts()) mounts[m.name()] = m.mountpath();
  std::set<std::string> paths;
  std::set<std::string> names;
  for (int i = 0; i < c.volumedevices_size(); ++i) {
    const VolumeDevice& d = c.volumedevices(i);
    Path ip = p.Index(i);
    auto it = volumes.find(d.name());
    bool matched = it != volumes.end();
    bool is_pvc = matched && it->second->has_persistentvolumeclaim();
    if (d.name().empty()) errs.push_back(Required(ip.Child("name")));
    if (names.count(d.name())) {
      errs.push_back(
          InvalidString(ip.Child("name"), d.name(), "must be unique"));
    }
    if (matched && !is_pvc) {
      errs.push_back(InvalidString(ip.Child("name"), d.name(),
                                   "can only use volume source type of "
                                   "PersistentVolumeClaim or Ephemeral for "
                                   "block mode"));
    }
    if (!matched) errs.push_back(NotFound(ip.Child("name"), GoQuote(d.name())));
    if (d.devicepath().empty())
      errs.push_back(Required(ip.Child("devicePath")));
    if (paths.count(d.devicepath())) {
      errs.push_back(InvalidString(ip.Child("devicePath"), d.devicepath(),
                                   "must be unique"));
    }
    if (!d.devicepath().empty() &&
        !ValidatePathNoBacksteps(d.devicepath(), p).empty()) {
      errs.push_back(InvalidString(ip.Child("devicePath"), d.devicepath(),
                                   "can not contain backsteps ('..')"));
    } else {
      paths.insert(d.devicepath());
    }
    if (mounts.count(d.name())) {
      errs.push_back(InvalidString(ip.Child("name"), d.name(),
                                   "must not already exist in volumeMounts"));
    }
    for (const auto& [mn, mp] : mounts) {
      if (mp == d.devicepath()) {
        errs.push_back(InvalidString(ip.Child("devicePath"), d.devicepath(),
                                     "must not already exist as a path in "
                                     "volumeMounts"));
        break;
      }
    }
    if (!d.name().empty()) names.insert(d.name());
  }
  return errs;
}

// --- resources ---

bool IsHugePages(std::string_view name) {
  return name.starts_with("hugepages-");
}

bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}

bool IsExtendedResource(std::string_view name) {
  if (IsNativeResource(name) || name.starts_with("requests.")) return false;
  return machinery::IsQualifiedName("requests." + std::string(name)).empty();
}

bool IsStandardResourceName(std::string_view name) {
  static const auto* s =
      new std::set<std::string, std::less<>>{"cpu",
                                             "memory",
                                             "ephemeral-storage",
                                             "requests.cpu",
                                             "requests.memory",
                                             "requests.ephemeral-storage",
                                             "limits.cpu",
                                             "limits.memory",
                                             "limits.ephemeral-storage",
                                             "pods",
                                             "resourcequotas",
                                             "services",
                                             "replicationcontrollers",
                                             "secrets",
                                             "configmaps",
                                             "persistentvolumeclaims",
                                             "storage",
                                             "requests.storage",
                                             "services.nodeports",
                                             "services.loadbalancers"};
  return s->count(name) > 0 || IsHugePages(name) ||
         name.starts_with("requests.hugepages-");
}

FieldErrors ValidateContainerResourceName(const std::string& name,
                                          const Path& p) {
  FieldErrors errs;
  for (auto& m : machinery::IsQualifiedName(name)) {
    errs.push_back(InvalidString(p, name, m));
  }
  if (!errs.empty()) return errs;
  bool slash = name.find('/') != std::string::npos;
  if (!slash && !IsStandardResourceName(name)) {
    errs.push_back(InvalidString(
        p, name, "must be a standard resource type or fully qualified"));
  }
  if (!slash) {
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage" &&
        !IsHugePages(name)) {
      errs.push_back(
          InvalidString(p, name, "must be a standard resource for containers"));
    }
  } else if (!IsNativeResource(name) && !IsExtendedResource(name)) {
    errs.push_back(InvalidString(p, name,
                                 "doesn't follow extended resource name "
                                 "standard"));
  }
  return errs;
}

FieldErrors ValidateQuantityValue(const std::string& name, const Quantity& q,
                                  const Path& p) {
  FieldErrors errs;
  if (q.Sign() < 0) {
    errs.push_back(InvalidString(p, q.String(),
                                 std::string(validation::kIsNegativeErrorMsg)));
  }
  if (IsExtendedResource(name) && q.MilliValue() % 1000 != 0) {
    errs.push_back(Invalid(p, q.String(), "must be an integer"));
  }
  return errs;
}

std::optional<std::string> HugePageError(const std::string& name,
                                         const Quantity& q) {
  if (!IsHugePages(name)) return std::nullopt;
  auto page = Quantity::Parse(name.substr(strlen("hugepages-")));
  bool ok = page.ok() && page->Sign() > 0 && page->MilliValue() % 1000 == 0 &&
            q.Value() % page->Value() == 0;
  if (ok) return std::nullopt;
  return q.String() + " is not positive integer multiple of " + name;
}

FieldErrors ValidateResourceRequirements(const ResourceRequirements& r,
                                         const Path& p) {
  FieldErrors errs;
  Path lim_path = p.Child("limits");
  Path req_path = p.Child("requests");
  bool lim_cpu_mem = false, req_cpu_mem = false, lim_huge = false,
       req_huge = false;
  for (const std::string& name : SortedKeys(r.limits())) {
    Path fp = lim_path.Key(name);
    Append(&errs, ValidateContainerResourceName(name, fp));
    auto q = Quantity::Parse(r.limits().at(name).string());
    if (!q.ok()) continue;
    Append(&errs, ValidateQuantityValue(name, *q, fp));
    if (IsHugePages(name)) {
      lim_huge = true;
      if (auto e = HugePageError(name, *q)) {
        errs.push_back(InvalidString(fp, q->String(), *e));
      }
    }
    if (name == "cpu" || name == "memory") lim_cpu_mem = true;
  }
  for (const std::string& name : SortedKeys(r.requests())) {
    Path fp = req_path.Key(name);
    Append(&errs, ValidateContainerResourceName(name, fp));
    auto q = Quantity::Parse(r.requests().at(name).string());
    if (!q.ok()) continue;
    Append(&errs, ValidateQuantityValue(name, *q, fp));
    bool overcommit = IsNativeResource(name) && !IsHugePages(name);
    auto lit = r.limits().find(name);
    if (lit != r.limits().end()) {
      auto lim = Quantity::Parse(lit->second.string());
      if (lim.ok()) {
        if (q->Cmp(*lim) != 0 && !overcommit) {
          errs.push_back(InvalidString(
              req_path, q->String(),
              "must be equal to " + name + " limit of " + lim->String()));
        } else if (q->Cmp(*lim) > 0) {
          errs.push_back(InvalidString(req_path, q->String(),
                                       "must be less than or equal to " + name +
                                           " limit of " + lim->String()));
        }
      }
    } else if (!overcommit) {
      errs.push_back(Required(lim_path,
                              "Limit must be set for non overcommitable "
                              "resources"));
    }
    if (IsHugePages(name)) {
      req_huge = true;
      if (auto e = HugePageError(name, *q)) {
        errs.push_back(InvalidString(fp, q->String(), *e));
      }
    }
    if (name == "cpu" || name == "memory") req_cpu_mem = true;
  }
  if (!lim_cpu_mem && !req_cpu_mem && (lim_huge || req_huge)) {
    errs.push_back(Forbidden(p, "HugePages require cpu or memory"));
  }
  std::set<std::string> claim_names;
  for (int i = 0; i < r.claims_size(); ++i) {
    const std::string& name = r.claims(i).name();
    if (name.empty()) {
      errs.push_back(Required(p.Child("claims").Index(i)));
      continue;
    }
    if (!claim_names.insert(name).second) {
      errs.push_back(Duplicate(p.Child("claims").Index(i), GoQuote(name)));
    }
  }
  return errs;
}

// --- probes and handlers ---

FieldErrors ValidatePortNumOrName(const objects::intstr::IntOrString& port,
                                  const Path& p) {
  FieldErrors errs;
  if (port.type() == 0) {
    for (auto& m : validation::IsValidPortNum(port.intval())) {
      errs.push_back(InvalidInt(p, port.intval(), m));
    }
  } else {
    for (auto& m : validation::IsValidPortName(port.strval())) {
      errs.push_back(InvalidString(p, port.strval(), m));
    }
  }
  return errs;
}

FieldErrors ValidateHTTPGet(const HTTPGetAction& h, const Path& p) {
  FieldErrors errs;
  if (h.path().empty()) errs.push_back(Required(p.Child("path")));
  Append(&errs, ValidatePortNumOrName(h.port(), p.Child("port")));
  if (h.scheme() != "HTTP" && h.scheme() != "HTTPS") {
    errs.push_back(
        NotSupportedString(p.Child("scheme"), h.scheme(), {"HTTP", "HTTPS"}));
  }
  for (const auto& header : h.httpheaders()) {
    for (auto& m : validation::IsHTTPHeaderName(header.name())) {
      errs.push_back(InvalidString(p.Child("httpHeaders"), header.name(), m));
    }
  }
  return errs;
}

struct Handler {
  const ExecAction* exec = nullptr;
  const HTTPGetAction* http_get = nullptr;
  const TCPSocketAction* tcp = nullptr;
  const GRPCAction* grpc = nullptr;
  const SleepAction* sleep = nullptr;
};

FieldErrors ValidateHandler(const Handler& h, const PodSpec& spec,
                            const Path& p) {
  FieldErrors errs;
  int n = 0;
  auto more = [&](std::string_view child) {
    if (n > 0) {
      errs.push_back(Forbidden(p.Child(child),
                               "may not specify more than 1 handler type"));
      return true;
    }
    ++n;
    return false;
  };
  if (h.exec && !more("exec")) {
    if (h.exec->command().empty()) {
      errs.push_back(Required(p.Child("exec").Child("command")));
    }
  }
  if (h.http_get && !more("httpGet")) {
    Append(&errs, ValidateHTTPGet(*h.http_get, p.Child("httpGet")));
  }
  if (h.tcp && !more("tcpSocket")) {
    Append(&errs, ValidatePortNumOrName(h.tcp->port(),
                                        p.Child("tcpSocket").Child("port")));
  }
  if (h.grpc && !more("grpc")) {
    for (auto& m : validation::IsValidPortNum(h.grpc->port())) {
      errs.push_back(
          InvalidInt(p.Child("grpc").Child("port"), h.grpc->port(), m));
    }
  }
  if (h.sleep && !more("sleep")) {
    if (spec.has_terminationgraceperiodseconds()) {
      int64_t grace = spec.terminationgraceperiodseconds();
      if (h.sleep->seconds() <= 0 || h.sleep->seconds() > grace) {
        errs.push_back(InvalidInt(p.Child("sleep"), h.sleep->seconds(),
                                  "must be greater than 0 and less than "
                                  "terminationGracePeriodSeconds (" +
                                      std::to_string(grace) + ")"));
      }
    }
  }
  if (n == 0) errs.push_back(Required(p, "must specify a handler type"));
  return errs;
}

FieldErrors ValidateProbe(const Probe* probe, const PodSpec& spec,
                          const Path& p, std::string_view kind) {
  if (probe == nullptr) return {};
  FieldErrors errs;
  const ProbeHandler& ph = probe->handler();
  Handler h;
  if (ph.has_exec()) h.exec = &ph.exec();
  if (ph.has_httpget()) h.http_get = &ph.httpget();
  if (ph.has_tcpsocket()) h.tcp = &ph.tcpsocket();
  if (ph.has_grpc()) h.grpc = &ph.grpc();
  Append(&errs, ValidateHandler(h, spec, p));
  Append(&errs,
         validation::ValidateNonnegative(probe->initialdelayseconds(),
                                         p.Child("initialDelaySeconds")));
  Append(&errs, validation::ValidateNonnegative(probe->timeoutseconds(),
                                                p.Child("timeoutSeconds")));
  Append(&errs, validation::ValidateNonnegative(probe->periodseconds(),
                                                p.Child("periodSeconds")));
  Append(&errs, validation::ValidateNonnegative(probe->successthreshold(),
                                                p.Child("successThreshold")));
  Append(&errs, validation::ValidateNonnegative(probe->failurethreshold(),
                                                p.Child("failureThreshold")));
  if (probe->has_terminationgraceperiodseconds() &&
      probe->terminationgraceperiodseconds() <= 0) {
    errs.push_back(InvalidInt(p.Child("terminationGracePeriodSeconds"),
                              probe->terminationgraceperiodseconds(),
                              "must be greater than 0"));
  }
  if ((kind == "liveness" || kind == "startup") &&
      probe->successthreshold() != 1) {
    errs.push_back(InvalidInt(p.Child("successThreshold"),
                              probe->successthreshold(), "must be 1"));
  }
  if (kind == "readiness" && probe->has_terminationgraceperiodseconds()) {
    errs.push_back(InvalidInt(p.Child("terminationGracePeriodSeconds"),
                              probe->terminationgraceperiodseconds(),
                              "must not be set for readinessProbes"));
  }
  return errs;
}

FieldErrors ValidateLifecycle(const Lifecycle& l, const PodSpec& spec,
                              const Path& p) {
  FieldErrors errs;
  for (auto [has, handler, name] :
       {std::tuple{l.has_poststart(), &l.poststart(), "postStart"},
        std::tuple{l.has_prestop(), &l.prestop(), "preStop"}}) {
    if (!has) continue;
    Handler h;
    if (handler->has_exec()) h.exec = &handler->exec();
    if (handler->has_httpget()) h.http_get = &handler->httpget();
    if (handler->has_tcpsocket()) h.tcp = &handler->tcpsocket();
    if (handler->has_sleep()) h.sleep = &handler->sleep();
    Append(&errs, ValidateHandler(h, spec, p.Child(name)));
  }
  return errs;
}

FieldErrors ValidateSeccompProfile(const SeccompProfile& sp, const Path& p) {
  FieldErrors errs;
  const std::string& t = sp.type();
  if (t.empty()) {
    errs.push_back(Required(p.Child("type"),
                            "type is required when seccompProfile is set"));
  } else if (t != "Localhost" && t != "RuntimeDefault" && t != "Unconfined") {
    errs.push_back(NotSupportedString(
        p.Child("type"), t, {"Localhost", "RuntimeDefault", "Unconfined"}));
  }
  if (t == "Localhost") {
    if (!sp.has_localhostprofile()) {
      errs.push_back(Required(p.Child("localhostProfile"),
                              "must be set when seccomp type is Localhost"));
    } else {
      Append(&errs, ValidateLocalDescendingPath(sp.localhostprofile(),
                                                p.Child("localhostProfile")));
    }
  } else if (sp.has_localhostprofile()) {
    errs.push_back(Invalid(
        p.Child("localhostProfile"),
        "&core.SeccompProfile{Type:" + GoQuote(t) +
            ", LocalhostProfile:" + GoQuote(sp.localhostprofile()) + "}",
        "can only be set when seccomp type is Localhost"));
  }
  return errs;
}

FieldErrors ValidateContainerSecurityContext(const Container& c,
                                             const Path& p) {
  if (!c.has_securitycontext()) return {};
  const SecurityContext& sc = c.securitycontext();
  FieldErrors errs;
  if (sc.has_runasuser()) {
    for (auto& m : validation::IsValidGroupOrUserID(sc.runasuser())) {
      errs.push_back(InvalidInt(p.Child("runAsUser"), sc.runasuser(), m));
    }
  }
  if (sc.has_runasgroup()) {
    for (auto& m : validation::IsValidGroupOrUserID(sc.runasgroup())) {
      errs.push_back(InvalidInt(p.Child("runAsGroup"), sc.runasgroup(), m));
    }
  }
  if (sc.has_procmount() && sc.procmount() != "Default" &&
      sc.procmount() != "Unmasked") {
    errs.push_back(NotSupportedString(p.Child("procMount"), sc.procmount(),
                                      {"Default", "Unmasked"}));
  }
  if (sc.has_seccompprofile()) {
    Append(&errs, ValidateSeccompProfile(sc.seccompprofile(),
                                         p.Child("seccompProfile")));
  }
  if (sc.has_allowprivilegeescalation() && !sc.allowprivilegeescalation()) {
    // Upstream prints the whole *SecurityContext (a pointer, so %#v shows an
    // address); we print the fields that matter.
    if (sc.has_privileged() && sc.privileged()) {
      errs.push_back(Invalid(p,
                             "&core.SecurityContext{Privileged:true, "
                             "AllowPrivilegeEscalation:false}",
                             "cannot set `allowPrivilegeEscalation` to false "
                             "and `privileged` to true"));
    }
    for (const auto& cap : sc.capabilities().add()) {
      if (cap == "CAP_SYS_ADMIN") {
        errs.push_back(
            Invalid(p, "&core.SecurityContext{AllowPrivilegeEscalation:false}",
                    "cannot set `allowPrivilegeEscalation` to false "
                    "and `capabilities.Add` CAP_SYS_ADMIN"));
      }
    }
  }
  return errs;
}

FieldErrors ValidateContainerCommon(
    const Container& c,
    const std::map<std::string, const VolumeSource*>& volumes,
    const PodSpec& spec, const Path& p) {
  FieldErrors errs;
  if (c.name().empty()) {
    errs.push_back(Required(p.Child("name")));
  } else {
    Append(&errs, validation::ValidateDNS1123Label(c.name(), p.Child("name")));
  }
  if (c.image().empty()) errs.push_back(Required(p.Child("image")));
  const std::string& tmp = c.terminationmessagepolicy();
  if (tmp.empty()) {
    errs.push_back(Required(p.Child("terminationMessagePolicy")));
  } else if (tmp != "File" && tmp != "FallbackToLogsOnError") {
    errs.push_back(NotSupportedString(p.Child("terminationMessagePolicy"), tmp,
                                      {"File", "FallbackToLogsOnError"}));
  }
  Append(&errs, ValidateContainerPorts(c.ports(), p.Child("ports")));
  Append(&errs, ValidateEnv(c.env(), p.Child("env")));
  Append(&errs, ValidateEnvFrom(c.envfrom(), p.Child("envFrom")));
  Append(&errs, ValidateVolumeMounts(c, volumes, p.Child("volumeMounts")));
  Append(&errs, ValidateVolumeDevices(c, volumes, p.Child("volumeDevices")));
  const std::string& pull = c.imagepullpolicy();
  if (pull.empty()) {
    errs.push_back(Required(p.Child("imagePullPolicy")));
  } else if (pull != "Always" && pull != "IfNotPresent" && pull != "Never") {
    errs.push_back(NotSupportedString(p.Child("imagePullPolicy"), pull,
                                      {"Always", "IfNotPresent", "Never"}));
  }
  Append(&errs,
         ValidateResourceRequirements(c.resources(), p.Child("resources")));
  Path rp = p.Child("resizePolicy");
  std::set<std::string> resize_names;
  for (int i = 0; i < c.resizepolicy_size(); ++i) {
    const auto& rz = c.resizepolicy(i);
    if (!resize_names.insert(rz.resourcename()).second) {
      errs.push_back(Duplicate(rp.Index(i), GoQuote(rz.resourcename())));
    }
    if (rz.resourcename().empty()) {
      errs.push_back(Required(rp));
    } else if (rz.resourcename() != "cpu" && rz.resourcename() != "memory") {
      errs.push_back(
          NotSupportedString(rp, rz.resourcename(), {"cpu", "memory"}));
    }
    if (rz.restartpolicy().empty()) {
      errs.push_back(Required(rp));
    } else if (rz.restartpolicy() != "NotRequired" &&
               rz.restartpolicy() != "RestartContainer") {
      errs.push_back(NotSupportedString(rp, rz.restartpolicy(),
                                        {"NotRequired", "RestartContainer"}));
    }
    if (spec.restartpolicy() == "Never" &&
        rz.restartpolicy() != "NotRequired") {
      errs.push_back(InvalidString(rp, rz.restartpolicy(),
                                   "must be 'NotRequired' when `restartPolicy` "
                                   "is 'Never'"));
    }
  }
  Append(&errs,
         ValidateContainerSecurityContext(c, p.Child("securityContext")));
  return errs;
}

FieldErrors CheckHostPortConflicts(
    const std::vector<const Container*>& containers,
    const std::vector<int>& indexes, const Path& p) {
  FieldErrors errs;
  std::set<std::string> seen;
  for (size_t ci = 0; ci < containers.size(); ++ci) {
    const Container& c = *containers[ci];
    Path pp = p.Index(indexes[ci]).Child("ports");
    for (int pi = 0; pi < c.ports_size(); ++pi) {
      const ContainerPort& port = c.ports(pi);
      if (port.hostport() == 0) continue;
      std::string key = port.protocol() + "/" + port.hostip() + "/" +
                        std::to_string(port.hostport());
      if (!seen.insert(key).second) {
        errs.push_back(Duplicate(pp.Index(pi).Child("hostPort"), GoQuote(key)));
      }
    }
  }
  return errs;
}

FieldErrors ValidateContainers(
    const PodSpec& spec,
    const std::map<std::string, const VolumeSource*>& volumes, const Path& p) {
  FieldErrors errs;
  if (spec.containers().empty()) return {Required(p)};
  std::set<std::string> names;
  std::vector<const Container*> all;
  std::vector<int> idx;
  for (int i = 0; i < spec.containers_size(); ++i) {
    const Container& c = spec.containers(i);
    Path cp = p.Index(i);
    Append(&errs, ValidateContainerCommon(c, volumes, spec, cp));
    if (!names.insert(c.name()).second) {
      errs.push_back(Duplicate(cp.Child("name"), GoQuote(c.name())));
    }
    if (c.has_lifecycle()) {
      Append(&errs,
             ValidateLifecycle(c.lifecycle(), spec, cp.Child("lifecycle")));
    }
    Append(&errs,
           ValidateProbe(c.has_livenessprobe() ? &c.livenessprobe() : nullptr,
                         spec, cp.Child("livenessProbe"), "liveness"));
    Append(&errs,
           ValidateProbe(c.has_readinessprobe() ? &c.readinessprobe() : nullptr,
                         spec, cp.Child("readinessProbe"), "readiness"));
    Append(&errs,
           ValidateProbe(c.has_startupprobe() ? &c.startupprobe() : nullptr,
                         spec, cp.Child("startupProbe"), "startup"));
    if (c.has_restartpolicy()) {
      errs.push_back(Forbidden(cp.Child("restartPolicy"),
                               "may not be set for non-init containers"));
    }
    all.push_back(&c);
    idx.push_back(i);
  }
  Append(&errs, CheckHostPortConflicts(all, idx, p));
  return errs;
}

FieldErrors ValidateInitContainers(
    const PodSpec& spec,
    const std::map<std::string, const VolumeSource*>& volumes, const Path& p) {
  FieldErrors errs;
  std::set<std::string> names;
  for (const auto& c : spec.containers()) names.insert(c.name());
  for (int i = 0; i < spec.initcontainers_size(); ++i) {
    const Container& c = spec.initcontainers(i);
    Path cp = p.Index(i);
    Append(&errs, ValidateContainerCommon(c, volumes, spec, cp));
    bool restart_always = false;
    if (c.has_restartpolicy()) {
      if (c.restartpolicy() != "Always") {
        errs.push_back(NotSupportedString(cp.Child("restartPolicy"),
                                          c.restartpolicy(), {"Always"}));
      }
      restart_always = c.restartpolicy() == "Always";
    }
    if (names.count(c.name())) {
      errs.push_back(Duplicate(cp.Child("name"), GoQuote(c.name())));
    } else if (!c.name().empty()) {
      names.insert(c.name());
    }
    Append(&errs, CheckHostPortConflicts({&c}, {i}, p));
    if (restart_always) {
      if (c.has_lifecycle()) {
        Append(&errs,
               ValidateLifecycle(c.lifecycle(), spec, cp.Child("lifecycle")));
      }
      Append(&errs,
             ValidateProbe(c.has_livenessprobe() ? &c.livenessprobe() : nullptr,
                           spec, cp.Child("livenessProbe"), "liveness"));
      Append(&errs, ValidateProbe(
                        c.has_readinessprobe() ? &c.readinessprobe() : nullptr,
                        spec, cp.Child("readinessProbe"), "readiness"));
      Append(&errs,
             ValidateProbe(c.has_startupprobe() ? &c.startupprobe() : nullptr,
                           spec, cp.Child("startupProbe"), "startup"));
    } else {
      constexpr std::string_view kMsg =
          "may not be set for init containers without restartPolicy=Always";
      if (c.has_lifecycle()) {
        errs.push_back(Forbidden(cp.Child("lifecycle"), std::string(kMsg)));
      }
      if (c.has_livenessprobe()) {
        errs.push_back(Forbidden(cp.Child("livenessProbe"), std::string(kMsg)));
      }
      if (c.has_readinessprobe()) {
        errs.push_back(
            Forbidden(cp.Child("readinessProbe"), std::string(kMsg)));
      }
      if (c.has_startupprobe()) {
        errs.push_back(Forbidden(cp.Child("startupProbe"), std::string(kMsg)));
      }
    }
    if (c.resizepolicy_size() > 0) {
      errs.push_back(Invalid(cp.Child("resizePolicy"),
                             "[]core.ContainerResizePolicy{...}",
                             "must not be set for init containers"));
    }
  }
  return errs;
}

// --- pod-level pieces ---

FieldErrors ValidateTolerations(
    const google::protobuf::RepeatedPtrField<Toleration>& tolerations,
    const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < tolerations.size(); ++i) {
    const Toleration& t = tolerations[i];
    Path ip = p.Index(i);
    if (!t.key().empty()) {
      Append(&errs, validation::ValidateLabelName(t.key(), ip.Child("key")));
    }
    if (t.key().empty() && t.operator_() != "Exists") {
      errs.push_back(InvalidString(
          ip.Child("operator"), t.operator_(),
          "operator must be Exists when `key` is empty, which means \"match "
          "all values and all keys\""));
    }
    if (t.has_tolerationseconds() && t.effect() != "NoExecute") {
      errs.push_back(InvalidString(ip.Child("effect"), t.effect(),
                                   "effect must be 'NoExecute' when "
                                   "`tolerationSeconds` is set"));
    }
    if (t.operator_() == "Equal" || t.operator_().empty()) {
      auto msgs = machinery::IsValidLabelValue(t.value());
      if (!msgs.empty()) {
        errs.push_back(
            InvalidString(ip.Child("operator"), t.value(), StrJoin(msgs, ";")));
      }
    } else if (t.operator_() == "Exists") {
      if (!t.value().empty()) {
        std::string v =
            "core.Toleration{Key:" + GoQuote(t.key()) +
            ", Operator:" + GoQuote(t.operator_()) +
            ", Value:" + GoQuote(t.value()) +
            ", Effect:" + GoQuote(t.effect()) + ", TolerationSeconds:" +
            (t.has_tolerationseconds() ? "(*int64)(...)" : "(*int64)(nil)") +
            "}";
        errs.push_back(Invalid(ip.Child("operator"), v,
                               "value must be empty when `operator` is "
                               "'Exists'"));
      }
    } else {
      errs.push_back(NotSupportedString(ip.Child("operator"), t.operator_(),
                                        {"Equal", "Exists"}));
    }
    if (!t.effect().empty() && t.effect() != "NoSchedule" &&
        t.effect() != "PreferNoSchedule" && t.effect() != "NoExecute") {
      errs.push_back(
          NotSupportedString(ip.Child("effect"), t.effect(),
                             {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
  }
  return errs;
}

FieldErrors ValidateNodeSelectorRequirement(const NodeSelectorRequirement& r,
                                            const Path& p, bool field) {
  FieldErrors errs;
  const std::string& op = r.operator_();
  if (op == "In" || op == "NotIn") {
    if (r.values().empty()) {
      errs.push_back(Required(p.Child("values"),
                              "must be specified when `operator` is 'In' or "
                              "'NotIn'"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!field && !r.values().empty()) {
      errs.push_back(Forbidden(p.Child("values"),
                               "may not be specified when `operator` is "
                               "'Exists' or 'DoesNotExist'"));
    }
  } else if (op == "Gt" || op == "Lt") {
    if (r.values_size() != 1) {
      errs.push_back(Required(p.Child("values"),
                              "must be specified single value when `operator` "
                              "is 'Lt' or 'Gt'"));
    }
  } else {
    errs.push_back(InvalidString(p.Child("operator"), op,
                                 "not a valid selector operator"));
  }
  if (!field) {
    Append(&errs, validation::ValidateLabelName(r.key(), p.Child("key")));
  } else if (r.key() != "metadata.name") {
    errs.push_back(InvalidString(p.Child("key"), r.key(),
                                 "not a valid field selector key"));
  }
  return errs;
}

FieldErrors ValidateNodeSelectorTerm(const NodeSelectorTerm& t, const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < t.matchexpressions_size(); ++i) {
    Append(&errs, ValidateNodeSelectorRequirement(
                      t.matchexpressions(i),
                      p.Child("matchExpressions").Index(i), false));
  }
  for (int i = 0; i < t.matchfields_size(); ++i) {
    Append(&errs, ValidateNodeSelectorRequirement(
                      t.matchfields(i), p.Child("matchFields").Index(i), true));
  }
  return errs;
}

FieldErrors ValidateAffinity(const PodSpec& spec, const Path& p) {
  if (!spec.has_affinity()) return {};
  FieldErrors errs;
  const Affinity& a = spec.affinity();
  if (a.has_nodeaffinity()) {
    const NodeAffinity& na = a.nodeaffinity();
    Path np = p.Child("nodeAffinity");
    if (na.has_requiredduringschedulingignoredduringexecution()) {
      const NodeSelector& ns =
          na.requiredduringschedulingignoredduringexecution();
      Path rp = np.Child("requiredDuringSchedulingIgnoredDuringExecution");
      if (ns.nodeselectorterms().empty()) {
        errs.push_back(Required(rp.Child("nodeSelectorTerms"),
                                "must have at least one node selector term"));
      }
      for (int i = 0; i < ns.nodeselectorterms_size(); ++i) {
        Append(&errs, ValidateNodeSelectorTerm(
                          ns.nodeselectorterms(i),
                          rp.Child("nodeSelectorTerms").Index(i)));
      }
    }
    Path pp = np.Child("preferredDuringSchedulingIgnoredDuringExecution");
    for (int i = 0;
         i < na.preferredduringschedulingignoredduringexecution_size(); ++i) {
      const auto& term = na.preferredduringschedulingignoredduringexecution(i);
      if (term.weight() <= 0 || term.weight() > 100) {
        errs.push_back(InvalidInt(pp.Index(i).Child("weight"), term.weight(),
                                  "must be in the range 1-100"));
      }
      Append(&errs, ValidateNodeSelectorTerm(term.preference(),
                                             pp.Index(i).Child("preference")));
    }
  }
  return errs;
}

FieldErrors ValidateTopologySpread(const PodSpec& spec, const Path& p) {
  FieldErrors errs;
  std::set<std::pair<std::string, std::string>> seen;
  for (int i = 0; i < spec.topologyspreadconstraints_size(); ++i) {
    const auto& c = spec.topologyspreadconstraints(i);
    Path ip = p.Index(i);
    if (c.maxskew() <= 0) {
      errs.push_back(InvalidInt(ip.Child("maxSkew"), c.maxskew(),
                                "must be greater than zero"));
    }
    if (c.topologykey().empty()) {
      errs.push_back(Required(ip.Child("topologyKey"), "can not be empty"));
    } else {
      Append(&errs, validation::ValidateLabelName(c.topologykey(),
                                                  ip.Child("topologyKey")));
    }
    const std::string& wu = c.whenunsatisfiable();
    if (wu != "DoNotSchedule" && wu != "ScheduleAnyway") {
      errs.push_back(NotSupportedString(ip.Child("whenUnsatisfiable"), wu,
                                        {"DoNotSchedule", "ScheduleAnyway"}));
    }
    if (!seen.insert({c.topologykey(), wu}).second) {
      errs.push_back(Duplicate(
          ip, "{" + GoQuote(c.topologykey()) + ", " + GoQuote(wu) + "}"));
    }
  }
  return errs;
}

FieldErrors ValidatePodDNSConfig(const PodSpec& spec, const Path& p) {
  FieldErrors errs;
  if (spec.dnspolicy() == "None" && !spec.has_dnsconfig()) {
    return {Required(p, "must provide `dnsConfig` when `dnsPolicy` is None")};
  }
  if (!spec.has_dnsconfig()) return errs;
  const PodDNSConfig& c = spec.dnsconfig();
  if (spec.dnspolicy() == "None" && c.nameservers().empty()) {
    errs.push_back(Required(p.Child("nameservers"),
                            "must provide at least one DNS nameserver when "
                            "`dnsPolicy` is None"));
  }
  if (c.nameservers_size() > 3) {
    errs.push_back(Invalid(p.Child("nameservers"),
                           validation::GoStringSlice(c.nameservers()),
                           "must not have more than 3 nameservers"));
  }
  for (int i = 0; i < c.nameservers_size(); ++i) {
    if (!validation::IsIP(c.nameservers(i))) {
      errs.push_back(InvalidString(p.Child("nameservers").Index(i),
                                   c.nameservers(i),
                                   "must be valid IP address"));
    }
  }
  if (c.searches_size() > 32) {
    errs.push_back(Invalid(p.Child("searches"),
                           validation::GoStringSlice(c.searches()),
                           "must not have more than 32 search paths"));
  }
  for (int i = 0; i < c.searches_size(); ++i) {
    std::string s = c.searches(i);
    if (s == ".") continue;
    if (!s.empty() && s.back() == '.') s.pop_back();
    Append(&errs, validation::ValidateDNS1123Subdomain(
                      s, p.Child("searches").Index(i)));
  }
  for (int i = 0; i < c.options_size(); ++i) {
    if (c.options(i).name().empty()) {
      errs.push_back(Required(p.Child("options").Index(i),
                              "Option.Name must not be empty"));
    }
  }
  return errs;
}

FieldErrors ValidatePodSecurityContext(const PodSpec& spec, const Path& p) {
  if (!spec.has_securitycontext()) return {};
  const PodSecurityContext& sc = spec.securitycontext();
  FieldErrors errs;
  if (sc.has_fsgroup()) {
    for (auto& m : validation::IsValidGroupOrUserID(sc.fsgroup())) {
      errs.push_back(InvalidInt(p.Child("fsGroup"), sc.fsgroup(), m));
    }
  }
  if (sc.has_runasuser()) {
    for (auto& m : validation::IsValidGroupOrUserID(sc.runasuser())) {
      errs.push_back(InvalidInt(p.Child("runAsUser"), sc.runasuser(), m));
    }
  }
  if (sc.has_runasgroup()) {
    for (auto& m : validation::IsValidGroupOrUserID(sc.runasgroup())) {
      errs.push_back(InvalidInt(p.Child("runAsGroup"), sc.runasgroup(), m));
    }
  }
  for (int i = 0; i < sc.supplementalgroups_size(); ++i) {
    for (auto& m : validation::IsValidGroupOrUserID(sc.supplementalgroups(i))) {
      errs.push_back(InvalidInt(p.Child("supplementalGroups").Index(i),
                                sc.supplementalgroups(i), m));
    }
  }
  if (spec.has_shareprocessnamespace() && spec.hostpid() &&
      spec.shareprocessnamespace()) {
    errs.push_back(Invalid(p.Child("shareProcessNamespace"), "true",
                           "ShareProcessNamespace and HostPID cannot both be "
                           "enabled"));
  }
  if (sc.has_fsgroupchangepolicy() && sc.fsgroupchangepolicy() != "Always" &&
      sc.fsgroupchangepolicy() != "OnRootMismatch") {
    errs.push_back(NotSupportedString(p.Child("fsGroupChangePolicy"),
                                      sc.fsgroupchangepolicy(),
                                      {"Always", "OnRootMismatch"}));
  }
  if (sc.has_seccompprofile()) {
    Append(&errs, ValidateSeccompProfile(sc.seccompprofile(),
                                         p.Child("seccompProfile")));
  }
  return errs;
}

}  // namespace

FieldErrors ValidatePodSpec(const PodSpec& spec, const Path& p,
                            bool resource_is_pod) {
  FieldErrors errs;
  if (!spec.has_terminationgraceperiodseconds()) {
    errs.push_back(Required(p.Child("terminationGracePeriodSeconds")));
  }
  auto volumes = ValidateVolumes(spec.volumes(), p.Child("volumes"), &errs);
  std::set<std::string> claims;
  for (int i = 0; i < spec.resourceclaims_size(); ++i) {
    const auto& c = spec.resourceclaims(i);
    Path cp = p.Child("resourceClaims").Index(i);
    Append(&errs, validation::ValidateDNS1123Label(c.name(), cp.Child("name")));
    if (!claims.insert(c.name()).second) {
      errs.push_back(Duplicate(cp.Child("name"), GoQuote(c.name())));
    }
  }
  Append(&errs, ValidateContainers(spec, volumes, p.Child("containers")));
  Append(&errs,
         ValidateInitContainers(spec, volumes, p.Child("initContainers")));
  if (spec.hostnetwork()) {
    Path cp = p.Child("containers");
    for (int i = 0; i < spec.containers_size(); ++i) {
      const Container& c = spec.containers(i);
      for (int j = 0; j < c.ports_size(); ++j) {
        int32_t hp = c.ports(j).hostport(), cport = c.ports(j).containerport();
        if ((resource_is_pod || hp != 0) && hp != cport) {
          errs.push_back(InvalidInt(
              cp.Index(i).Child("ports").Index(j).Child("hostPort"), hp,
              "must match `containerPort` when "
              "`hostNetwork` is true"));
        }
      }
    }
  }
  const std::string& rp = spec.restartpolicy();
  if (rp.empty()) {
    errs.push_back(Required(p.Child("restartPolicy")));
  } else if (rp != "Always" && rp != "OnFailure" && rp != "Never") {
    errs.push_back(NotSupportedString(p.Child("restartPolicy"), rp,
                                      {"Always", "OnFailure", "Never"}));
  }
  const std::string& dp = spec.dnspolicy();
  if (dp.empty()) {
    errs.push_back(Required(p.Child("dnsPolicy")));
  } else if (dp != "ClusterFirstWithHostNet" && dp != "ClusterFirst" &&
             dp != "Default" && dp != "None") {
    errs.push_back(NotSupportedString(
        p.Child("dnsPolicy"), dp,
        {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}));
  }
  Append(&errs, validation::ValidateLabels(spec.nodeselector(),
                                           p.Child("nodeSelector")));
  Append(&errs, ValidatePodSecurityContext(spec, p.Child("securityContext")));
  for (int i = 0; i < spec.imagepullsecrets_size(); ++i) {
    (void)i;  // only `name` exists in our schema, so nothing else can be set
  }
  Append(&errs, ValidateAffinity(spec, p.Child("affinity")));
  Append(&errs, ValidatePodDNSConfig(spec, p.Child("dnsConfig")));
  for (int i = 0; i < spec.readinessgates_size(); ++i) {
    Append(&errs,
           validation::ValidateQualifiedName(
               spec.readinessgates(i).conditiontype(),
               p.Child("readinessGates").Index(i).Child("conditionType")));
  }
  std::set<std::string> gates;
  for (int i = 0; i < spec.schedulinggates_size(); ++i) {
    const std::string& g = spec.schedulinggates(i).name();
    Path gp = p.Child("schedulingGates").Index(i);
    Append(&errs, validation::ValidateQualifiedName(g, gp));
    if (!gates.insert(g).second) errs.push_back(Duplicate(gp, GoQuote(g)));
  }
  Append(&errs,
         ValidateTopologySpread(spec, p.Child("topologySpreadConstraints")));
  if (!spec.serviceaccountname().empty()) {
    for (auto& m : NameIsDNSSubdomain(spec.serviceaccountname())) {
      errs.push_back(InvalidString(p.Child("serviceAccountName"),
                                   spec.serviceaccountname(), m));
    }
  }
  if (!spec.nodename().empty()) {
    for (auto& m : NameIsDNSSubdomain(spec.nodename())) {
      errs.push_back(InvalidString(p.Child("nodeName"), spec.nodename(), m));
    }
  }
  if (spec.has_activedeadlineseconds()) {
    int64_t v = spec.activedeadlineseconds();
    if (v < 1 || v > kMaxInt32) {
      errs.push_back(InvalidInt(p.Child("activeDeadlineSeconds"), v,
                                validation::InclusiveRangeError(1, kMaxInt32)));
    }
  }
  if (!spec.hostname().empty()) {
    Append(&errs, validation::ValidateDNS1123Label(spec.hostname(),
                                                   p.Child("hostname")));
  }
  if (!spec.subdomain().empty()) {
    Append(&errs, validation::ValidateDNS1123Label(spec.subdomain(),
                                                   p.Child("subdomain")));
  }
  if (!spec.tolerations().empty()) {
    Append(&errs,
           ValidateTolerations(spec.tolerations(), p.Child("tolerations")));
  }
  for (int i = 0; i < spec.hostaliases_size(); ++i) {
    const auto& ha = spec.hostaliases(i);
    Path hp = p.Child("hostAliases").Index(i);
    Append(&errs, validation::ValidateValidIP(ha.ip(), hp.Child("ip")));
    for (int j = 0; j < ha.hostnames_size(); ++j) {
      Append(&errs, validation::ValidateDNS1123Subdomain(
                        ha.hostnames(j), hp.Child("hostnames").Index(j)));
    }
  }
  if (!spec.priorityclassname().empty()) {
    for (auto& m : NameIsDNSSubdomain(spec.priorityclassname())) {
      errs.push_back(InvalidString(p.Child("priorityClassName"),
                                   spec.priorityclassname(), m));
    }
  }
  if (spec.has_runtimeclassname()) {
    for (auto& m : NameIsDNSSubdomain(spec.runtimeclassname())) {
      errs.push_back(InvalidString(p.Child("runtimeClassName"),
                                   spec.runtimeclassname(), m));
    }
  }
  if (spec.has_preemptionpolicy()) {
    const std::string& pp = spec.preemptionpolicy();
    if (pp.empty()) {
      errs.push_back(Required(p.Child("preemptionPolicy")));
    } else if (pp != "PreemptLowerPriority" && pp != "Never") {
      errs.push_back(NotSupportedString(p.Child("preemptionPolicy"), pp,
                                        {"PreemptLowerPriority", "Never"}));
    }
  }
  if (spec.has_os()) {
    if (spec.os().name().empty()) {
      errs.push_back(Required(p.Child("os").Child("name"), "cannot be empty"));
    } else if (spec.os().name() != "linux" && spec.os().name() != "windows") {
      errs.push_back(NotSupportedString(p.Child("os"), spec.os().name(),
                                        {"linux", "windows"}));
    }
  }
  return errs;
}

FieldErrors ValidatePodTemplateSpec(const PodTemplateSpec& t, const Path& p) {
  FieldErrors errs;
  Append(&errs,
         validation::ValidateLabels(t.metadata().labels(), p.Child("labels")));
  Append(&errs, validation::ValidateAnnotations(t.metadata().annotations(),
                                                p.Child("annotations")));
  Append(&errs, ValidatePodSpec(t.spec(), p.Child("spec"), false));
  return errs;
}

FieldErrors ValidatePodTemplateForController(
    const PodTemplateSpec& t, const machinery::LabelSelector& selector,
    const Path& p, std::string_view owner_kind) {
  FieldErrors errs;
  if (!selector.Empty() &&
      !selector.Matches(validation::ToLabels(t.metadata().labels()))) {
    errs.push_back(Invalid(p.Child("metadata", "labels"),
                           validation::GoStringMap(t.metadata().labels()),
                           "`selector` does not match template `labels`"));
  }
  Append(&errs, ValidatePodTemplateSpec(t, p));
  if (t.spec().restartpolicy() != "Always") {
    errs.push_back(NotSupportedString(p.Child("spec", "restartPolicy"),
                                      t.spec().restartpolicy(), {"Always"}));
  }
  if (t.spec().has_activedeadlineseconds()) {
    errs.push_back(Forbidden(p.Child("spec", "activeDeadlineSeconds"),
                             "activeDeadlineSeconds in " +
                                 std::string(owner_kind) +
                                 " is not Supported"));
  }
  return errs;
}

namespace {

FieldErrors ValidatePodMetadataAndSpec(const Pod& pod) {
  Path meta("metadata");
  Path spec("spec");
  FieldErrors errs = validation::ValidateObjectMeta(
      pod.metadata(), true, validation::NameRule::kDNS1123Subdomain, meta);
  // Pod-specific annotations: the mirror-pod rule and pod deletion cost.
  const auto& ann = pod.metadata().annotations();
  if (auto it = ann.find("kubernetes.io/config.mirror");
      it != ann.end() && pod.spec().nodename().empty()) {
    errs.push_back(InvalidString(meta.Child("annotations").Key(it->first),
                                 it->second,
                                 "must set spec.nodeName if mirror pod "
                                 "annotation is set"));
  }
  if (auto it = ann.find("controller.kubernetes.io/pod-deletion-cost");
      it != ann.end()) {
    auto v = ParseInt64(it->second);
    if (!v || *v < INT32_MIN || *v > INT32_MAX) {
      errs.push_back(InvalidString(meta.Child("annotations").Key(it->first),
                                   it->second, "must be a 32bit integer"));
    }
  }
  Append(&errs, ValidatePodSpec(pod.spec(), spec, true));
  if (pod.spec().serviceaccountname().empty()) {
    for (int vi = 0; vi < pod.spec().volumes_size(); ++vi) {
      const auto& v = pod.spec().volumes(vi).volumesource();
      if (!v.has_projected()) continue;
      for (int si = 0; si < v.projected().sources_size(); ++si) {
        if (v.projected().sources(si).has_serviceaccounttoken()) {
          errs.push_back(Forbidden(spec.Child("volumes")
                                       .Index(vi)
                                       .Child("projected")
                                       .Child("sources")
                                       .Index(si)
                                       .Child("serviceAccountToken"),
                                   "must not be specified when "
                                   "serviceAccountName is not set"));
        }
      }
    }
  }
  for (auto [list, name] :
       {std::pair{&pod.spec().containers(), "containers"},
        std::pair{&pod.spec().initcontainers(), "initContainers"}}) {
    for (int i = 0; i < list->size(); ++i) {
      const std::string& image = (*list)[i].image();
      std::string_view trimmed = StripWhitespace(image);
      if (trimmed.size() != image.size()) {
        errs.push_back(InvalidString(spec.Child(name).Index(i).Child("image"),
                                     image,
                                     "must not have leading or trailing "
                                     "whitespace"));
      }
    }
  }
  return errs;
}

// A one-line JSON rendering of one field of `m` ("null" when unset), for
// the update diff.
std::string FieldJson(const google::protobuf::Message& m,
                      const google::protobuf::FieldDescriptor* f) {
  const auto* r = m.GetReflection();
  bool present = f->is_repeated() ? r->FieldSize(m, f) > 0 : r->HasField(m, f);
  if (!present) return "null";
  rapidjson::Document doc;
  rapidjson::Value v = objects::ToJsonValue(m, doc.GetAllocator());
  auto it = v.FindMember(f->name().c_str());
  if (it == v.MemberEnd()) return "null";
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  it->value.Accept(w);
  return buf.GetString();
}

}  // namespace

FieldErrors ValidatePodCreate(const Pod& pod) {
  FieldErrors errs = ValidatePodMetadataAndSpec(pod);
  if (!pod.spec().nodename().empty() && !pod.spec().schedulinggates().empty()) {
    errs.push_back(Forbidden(Path("spec").Child("nodeName"),
                             "cannot be set until all schedulingGates have "
                             "been cleared"));
  }
  return errs;
}

namespace {

bool TolerationEqualIgnoringSeconds(const Toleration& a, const Toleration& b) {
  return a.key() == b.key() && a.operator_() == b.operator_() &&
         a.value() == b.value() && a.effect() == b.effect();
}

}  // namespace

FieldErrors ValidatePodUpdate(const Pod& pod, const Pod& old) {
  Path meta("metadata");
  Path spec_path("spec");
  FieldErrors errs = validation::ValidateObjectMetaUpdate(pod.metadata(),
                                                          old.metadata(), meta);
  Append(&errs, ValidatePodMetadataAndSpec(pod));
  const auto& na = pod.metadata().annotations();
  const auto& oa = old.metadata().annotations();
  constexpr std::string_view kMirror = "kubernetes.io/config.mirror";
  if (oa.contains(std::string(kMirror)) &&
      (!na.contains(std::string(kMirror)) ||
       na.at(std::string(kMirror)) != oa.at(std::string(kMirror)))) {
    errs.push_back(Forbidden(meta.Child("annotations").Key(kMirror),
                             "may not remove or update mirror pod annotation"));
  }
  if (!oa.contains(std::string(kMirror)) && na.contains(std::string(kMirror))) {
    errs.push_back(Forbidden(meta.Child("annotations").Key(kMirror),
                             "may not add mirror pod annotation"));
  }

  const PodSpec& ns = pod.spec();
  const PodSpec& os = old.spec();
  for (auto [nl, ol, name] :
       {std::tuple{&ns.containers(), &os.containers(), "containers"},
        std::tuple{&ns.initcontainers(), &os.initcontainers(),
                   "initContainers"}}) {
    if (nl->size() != ol->size()) {
      errs.push_back(Forbidden(spec_path.Child(name),
                               "pod updates may not add or remove containers"));
      return errs;
    }
    for (int i = 0; i < nl->size(); ++i) {
      const std::string& image = (*nl)[i].image();
      if (image.empty()) {
        errs.push_back(Required(spec_path.Child(name).Index(i).Child("image")));
      }
      if (StripWhitespace(image).size() != image.size()) {
        errs.push_back(
            InvalidString(spec_path.Child(name).Index(i).Child("image"), image,
                          "must not have leading or trailing "
                          "whitespace"));
      }
    }
  }
  if (ns.has_activedeadlineseconds()) {
    int64_t v = ns.activedeadlineseconds();
    if (v < 0 || v > kMaxInt32) {
      errs.push_back(InvalidInt(spec_path.Child("activeDeadlineSeconds"), v,
                                validation::InclusiveRangeError(0, kMaxInt32)));
      return errs;
    }
    if (os.has_activedeadlineseconds() && os.activedeadlineseconds() < v) {
      errs.push_back(
          InvalidInt(spec_path.Child("activeDeadlineSeconds"), v,
                     "must be less than or equal to previous value"));
      return errs;
    }
  } else if (os.has_activedeadlineseconds()) {
    errs.push_back(Invalid(spec_path.Child("activeDeadlineSeconds"), "null",
                           "must not update from a positive integer to nil "
                           "value"));
  }
  // Only additions to tolerations (tolerationSeconds may change).
  bool tolerations_ok = true;
  for (const Toleration& ot : os.tolerations()) {
    bool found = false;
    for (const Toleration& nt : ns.tolerations()) {
      if (TolerationEqualIgnoringSeconds(ot, nt)) {
        found = true;
        break;
      }
    }
    if (!found) {
      errs.push_back(Forbidden(spec_path.Child("tolerations"),
                               "existing toleration can not be modified except "
                               "its tolerationSeconds"));
      tolerations_ok = false;
      break;
    }
  }
  if (tolerations_ok) {
    Append(&errs, ValidateTolerations(ns.tolerations(),
                                      spec_path.Child("tolerations")));
  }
  // Only deletions of scheduling gates.
  if (!ns.schedulinggates().empty()) {
    std::set<std::string> old_gates;
    for (const auto& g : os.schedulinggates()) old_gates.insert(g.name());
    for (int i = 0; i < ns.schedulinggates_size(); ++i) {
      const std::string& g = ns.schedulinggates(i).name();
      if (!old_gates.count(g)) {
        errs.push_back(Forbidden(
            spec_path.Child("schedulingGates").Index(i).Child("name"),
            "only deletion is allowed, but found new scheduling gate '" + g +
                "'"));
      }
    }
  }
  if (validation::Equal(ns, os)) return errs;
  std::string old_qos = old.status().qosclass().empty()
                            ? ComputeQOS(old)
                            : old.status().qosclass();
  if (old_qos != ComputeQOS(pod)) {
    errs.push_back(
        InvalidString(meta, pod.status().qosclass(), "Pod QoS is immutable"));
  }

  // Munge the updatable fields back to their old values and compare.
  PodSpec munged = ns;
  for (int i = 0; i < munged.containers_size(); ++i) {
    munged.mutable_containers(i)->set_image(os.containers(i).image());
  }
  for (int i = 0; i < munged.initcontainers_size(); ++i) {
    munged.mutable_initcontainers(i)->set_image(os.initcontainers(i).image());
  }
  if (os.has_activedeadlineseconds()) {
    munged.set_activedeadlineseconds(os.activedeadlineseconds());
  } else {
    munged.clear_activedeadlineseconds();
  }
  *munged.mutable_schedulinggates() = os.schedulinggates();
  *munged.mutable_tolerations() = os.tolerations();
  if (os.has_terminationgraceperiodseconds() &&
      os.terminationgraceperiodseconds() < 0 &&
      munged.has_terminationgraceperiodseconds() &&
      munged.terminationgraceperiodseconds() == 1) {
    munged.set_terminationgraceperiodseconds(
        os.terminationgraceperiodseconds());
  }
  if (!os.schedulinggates().empty()) {
    // Gated pods may add nodeSelector entries and node affinity terms; we
    // accept any change to those two fields while gated.
    *munged.mutable_nodeselector() = os.nodeselector();
    if (os.has_affinity() || munged.has_affinity()) {
      Affinity a = munged.affinity();
      if (os.affinity().has_nodeaffinity()) {
        *a.mutable_nodeaffinity() = os.affinity().nodeaffinity();
      } else {
        a.clear_nodeaffinity();
      }
      if (validation::Equal(a, Affinity()) && !os.has_affinity()) {
        munged.clear_affinity();
      } else {
        *munged.mutable_affinity() = a;
      }
    }
  }
  if (!validation::Equal(munged, os)) {
    // Upstream appends cmp.Diff(old, new) of the Go structs; we list the
    // PodSpec fields that differ, old and new value as JSON.
    std::string diff;
    const auto* d = PodSpec::descriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const auto* f = d->field(i);
      std::string a = FieldJson(os, f);
      std::string b = FieldJson(munged, f);
      if (a == b) continue;
      diff += "  - " + f->json_name() + ": " + a + "\n";
      diff += "  + " + f->json_name() + ": " + b + "\n";
    }
    errs.push_back(Forbidden(
        spec_path,
        "pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,"
        "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow "
        "it to be set to 1 if it was previously negative)\n" +
            diff));
  }
  return errs;
}

FieldErrors ValidatePodStatusUpdate(const Pod& pod, const Pod& old) {
  Path meta("metadata");
  FieldErrors errs = validation::ValidateObjectMetaUpdate(pod.metadata(),
                                                          old.metadata(), meta);
  static const auto* system =
      new std::set<std::string>{"PodScheduled", "Ready", "Initialized"};
  for (int i = 0; i < pod.status().conditions_size(); ++i) {
    const std::string& t = pod.status().conditions(i).type();
    if (system->count(t)) continue;
    // Upstream's path here is metadata.conditions[i].Type (sic).
    Append(&errs, validation::ValidateQualifiedName(
                      t, meta.Child("conditions").Index(i).Child("Type")));
  }
  Path st("status");
  if (pod.spec().nodename() != old.spec().nodename()) {
    errs.push_back(
        Forbidden(st.Child("nodeName"), "may not be changed directly"));
  }
  const std::string& nn = pod.status().nominatednodename();
  if (nn != old.status().nominatednodename() && !nn.empty()) {
    for (auto& m : NameIsDNSSubdomain(nn)) {
      errs.push_back(InvalidString(st.Child("nominatedNodeName"), nn, m));
    }
  }
  // Terminated containers may not come back unless the pod restarts them.
  auto transitions = [&](const auto& news, const auto& olds, const Path& p,
                         const std::string& policy, bool init) {
    if (policy == "Always") return;
    for (int i = 0; i < olds.size(); ++i) {
      const ContainerStatus& o = olds[i];
      if (!o.state().has_terminated()) continue;
      if (o.state().terminated().exitcode() != 0 && policy == "OnFailure")
        continue;
      if (init) {
        bool restartable = false;
        for (const auto& c : old.spec().initcontainers()) {
          if (c.name() == o.name()) {
            restartable = c.restartpolicy() == "Always";
            break;
          }
        }
        if (restartable) continue;
      }
      for (const ContainerStatus& n : news) {
        if (n.name() == o.name() && !n.state().has_terminated()) {
          errs.push_back(Forbidden(p.Index(i).Child("state"),
                                   "may not be transitioned to non-terminated "
                                   "state"));
        }
      }
    }
  };
  transitions(pod.status().containerstatuses(),
              old.status().containerstatuses(), st.Child("containerStatuses"),
              old.spec().restartpolicy(), false);
  transitions(pod.status().initcontainerstatuses(),
              old.status().initcontainerstatuses(),
              st.Child("initContainerStatuses"), old.spec().restartpolicy(),
              true);
  transitions(pod.status().ephemeralcontainerstatuses(),
              old.status().ephemeralcontainerstatuses(),
              st.Child("ephemeralContainerStatuses"), "Never", false);
  // podIPs and hostIPs: valid, unique, at most one per family; hostIP ==
  // hostIPs[0] (podIP is made equal to podIPs[0] by conversion).
  auto ips = [&](const auto& list, const std::string& type, const Path& lp) {
    auto go_list = [&] {
      std::string out = "[]core." + type + "{";
      for (int i = 0; i < list.size(); ++i) {
        if (i > 0) out += ", ";
        out += "core." + type + "{IP:" + GoQuote(list[i].ip()) + "}";
      }
      return out + "}";
    };
    for (int i = 0; i < list.size(); ++i) {
      Append(&errs, validation::ValidateValidIP(list[i].ip(), lp.Index(i)));
    }
    if (list.size() > 1) {
      int v6 = 0;
      for (const auto& e : list) v6 += validation::IsIPv6(e.ip()) ? 1 : 0;
      if (list.size() > 2 || v6 != 1) {
        errs.push_back(Invalid(lp, go_list(),
                               "may specify no more than one IP for each IP "
                               "family"));
      }
      std::set<std::string> seen;
      for (int i = 0; i < list.size(); ++i) {
        if (!seen.insert(list[i].ip()).second) {
          errs.push_back(
              Duplicate(lp.Index(i),
                        "core." + type + "{IP:" + GoQuote(list[i].ip()) + "}"));
        }
      }
    }
  };
  ips(pod.status().podips(), "PodIP", st.Child("podIPs"));
  const auto& host_ips = pod.status().hostips();
  if (!host_ips.empty() && pod.status().hostip() != host_ips[0].ip()) {
    errs.push_back(InvalidString(st.Child("hostIPs").Index(0).Child("ip"),
                                 host_ips[0].ip(),
                                 "must be equal to `hostIP`"));
  }
  ips(host_ips, "HostIP", st.Child("hostIPs"));
  return errs;
}

std::string ComputeQOS(const Pod& pod) {
  std::map<std::string, Quantity> requests, limits;
  bool guaranteed = true;
  auto visit = [&](const Container& c) {
    for (const auto& [name, q] : c.resources().requests()) {
      if (name != "cpu" && name != "memory") continue;
      auto v = Quantity::Parse(q.string());
      if (!v.ok() || v->Sign() <= 0) continue;
      requests[name].Add(*v);
    }
    std::set<std::string> found;
    for (const auto& [name, q] : c.resources().limits()) {
      if (name != "cpu" && name != "memory") continue;
      auto v = Quantity::Parse(q.string());
      if (!v.ok() || v->Sign() <= 0) continue;
      found.insert(name);
      limits[name].Add(*v);
    }
    if (!found.count("cpu") || !found.count("memory")) guaranteed = false;
  };
  for (const auto& c : pod.spec().containers()) visit(c);
  for (const auto& c : pod.spec().initcontainers()) visit(c);
  if (requests.empty() && limits.empty()) return "BestEffort";
  if (guaranteed) {
    for (const auto& [name, req] : requests) {
      auto it = limits.find(name);
      if (it == limits.end() || it->second.Cmp(req) != 0) {
        guaranteed = false;
        break;
      }
    }
  }
  if (guaranteed && requests.size() == limits.size()) return "Guaranteed";
  return "Burstable";
}

}  // namespace kplane::apiserver::podvalidation
