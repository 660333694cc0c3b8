// Pod validation: containers and init containers (upstream:
// validateContainers, validateInitContainers, validateContainerCommon,
// validateContainerPorts, ValidateEnv, validateEnvFrom,
// ValidateVolumeMounts, ValidateVolumeDevices, validateProbe,
// validateLifecycle, validateHandler, checkHostPortConflicts in
// pkg/apis/core/validation/validation.go).
#include "apiserver/registry/pod_validation_internal.h"
#include "base/strings.h"

namespace kplane::apiserver::podvalidation::internal {

namespace {

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

}  // namespace

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

}  // namespace kplane::apiserver::podvalidation::internal
