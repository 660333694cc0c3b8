// Pod validation: pod and container security contexts (upstream:
// validatePodSpecSecurityContext, ValidateSecurityContext,
// validateSeccompProfileField in pkg/apis/core/validation/validation.go).
#include "apiserver/registry/pod_validation_internal.h"
#include "base/strings.h"

namespace kplane::apiserver::podvalidation::internal {

namespace {

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

}  // namespace

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

}  // namespace kplane::apiserver::podvalidation::internal
