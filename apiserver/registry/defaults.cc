#include "apiserver/registry/defaults.h"

#include <string>

namespace kplane::apiserver::defaults {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types

bool IsLowerRepoChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// The tag docker's reference parser finds in `image`, "latest" when there is
// neither tag nor digest, and "" when the reference does not parse (upstream
// ignores that error, so such images get IfNotPresent).
std::string ImageTag(std::string_view image) {
  std::string_view name = image;
  bool has_digest = false;
  if (size_t at = name.find('@'); at != std::string_view::npos) {
    has_digest = true;
    name = name.substr(0, at);
  }
  std::string tag;
  size_t slash = name.rfind('/');
  size_t colon = name.rfind(':');
  if (colon != std::string_view::npos &&
      (slash == std::string_view::npos || colon > slash)) {
    tag = std::string(name.substr(colon + 1));
    name = name.substr(0, colon);
    if (tag.empty()) return "";
  }
  if (name.empty()) return "";
  // Path components after an optional registry host must be lower case.
  size_t first_slash = name.find('/');
  std::string_view path = name;
  if (first_slash != std::string_view::npos) {
    std::string_view host = name.substr(0, first_slash);
    if (host.find('.') != std::string_view::npos ||
        host.find(':') != std::string_view::npos || host == "localhost") {
      path = name.substr(first_slash + 1);
    }
  }
  if (path.empty()) return "";
  for (char c : path) {
    if (c != '/' && !IsLowerRepoChar(c)) return "";
  }
  if (tag.empty() && !has_digest) return "latest";
  return tag;
}

void DefaultProbe(Probe* p) {
  if (p->timeoutseconds() == 0) p->set_timeoutseconds(1);
  if (p->periodseconds() == 0) p->set_periodseconds(10);
  if (p->successthreshold() == 0) p->set_successthreshold(1);
  if (p->failurethreshold() == 0) p->set_failurethreshold(3);
}

void DefaultHTTPGet(HTTPGetAction* h) {
  if (h->path().empty()) h->set_path("/");
  if (h->scheme().empty()) h->set_scheme("HTTP");
}

void DefaultProbeHandler(ProbeHandler* h) {
  if (h->has_httpget()) DefaultHTTPGet(h->mutable_httpget());
  // GRPCAction.service: +default="" (a pointer upstream, so it is written).
  if (h->has_grpc() && !h->grpc().has_service()) {
    h->mutable_grpc()->set_service("");
  }
}

void DefaultLifecycleHandler(LifecycleHandler* h) {
  if (h->has_httpget()) DefaultHTTPGet(h->mutable_httpget());
}

void DefaultFieldRef(ObjectFieldSelector* f) {
  if (f->apiversion().empty()) f->set_apiversion("v1");
}

void DefaultContainer(Container* c) {
  if (c->imagepullpolicy().empty()) {
    c->set_imagepullpolicy(std::string(DefaultPullPolicy(c->image())));
  }
  if (c->terminationmessagepath().empty()) {
    c->set_terminationmessagepath("/dev/termination-log");
  }
  if (c->terminationmessagepolicy().empty()) {
    c->set_terminationmessagepolicy("File");
  }
  for (ContainerPort& p : *c->mutable_ports()) {
    if (p.protocol().empty()) p.set_protocol("TCP");
  }
  for (EnvVar& e : *c->mutable_env()) {
    if (e.has_valuefrom() && e.valuefrom().has_fieldref()) {
      DefaultFieldRef(e.mutable_valuefrom()->mutable_fieldref());
    }
  }
  for (Probe* p :
       {c->has_livenessprobe() ? c->mutable_livenessprobe() : nullptr,
        c->has_readinessprobe() ? c->mutable_readinessprobe() : nullptr,
        c->has_startupprobe() ? c->mutable_startupprobe() : nullptr}) {
    if (p == nullptr) continue;
    DefaultProbe(p);
    if (p->has_handler()) DefaultProbeHandler(p->mutable_handler());
  }
  if (c->has_lifecycle()) {
    Lifecycle* l = c->mutable_lifecycle();
    if (l->has_poststart()) DefaultLifecycleHandler(l->mutable_poststart());
    if (l->has_prestop()) DefaultLifecycleHandler(l->mutable_prestop());
  }
  // `resources` is a Go value struct: always present.
  c->mutable_resources();
}

void DefaultDownwardAPIFiles(
    google::protobuf::RepeatedPtrField<DownwardAPIVolumeFile>* files) {
  for (DownwardAPIVolumeFile& f : *files) {
    if (f.has_fieldref()) DefaultFieldRef(f.mutable_fieldref());
  }
}

void DefaultVolume(Volume* v) {
  VolumeSource* s = v->mutable_volumesource();
  const auto* d = VolumeSource::descriptor();
  const auto* r = VolumeSource::GetReflection();
  bool any = false;
  for (int i = 0; i < d->field_count(); ++i) {
    if (r->HasField(*s, d->field(i))) any = true;
  }
  if (!any) s->mutable_emptydir();
  constexpr int32_t kDefaultMode = 0644;  // 420
  if (s->has_secret() && !s->secret().has_defaultmode()) {
    s->mutable_secret()->set_defaultmode(kDefaultMode);
  }
  if (s->has_configmap() && !s->configmap().has_defaultmode()) {
    s->mutable_configmap()->set_defaultmode(kDefaultMode);
  }
  if (s->has_downwardapi()) {
    if (!s->downwardapi().has_defaultmode()) {
      s->mutable_downwardapi()->set_defaultmode(kDefaultMode);
    }
    DefaultDownwardAPIFiles(s->mutable_downwardapi()->mutable_items());
  }
  if (s->has_projected()) {
    ProjectedVolumeSource* p = s->mutable_projected();
    if (!p->has_defaultmode()) p->set_defaultmode(kDefaultMode);
    for (VolumeProjection& src : *p->mutable_sources()) {
      if (src.has_serviceaccounttoken() &&
          !src.serviceaccounttoken().has_expirationseconds()) {
        src.mutable_serviceaccounttoken()->set_expirationseconds(3600);
      }
      if (src.has_downwardapi()) {
        DefaultDownwardAPIFiles(src.mutable_downwardapi()->mutable_items());
      }
    }
  }
  // HostPathType is a pointer defaulted to HostPathUnset ("").
  if (s->has_hostpath() && !s->hostpath().has_type()) {
    s->mutable_hostpath()->set_type("");
  }
}

void CopyLimitsToRequests(Container* c) {
  ResourceRequirements* r = c->mutable_resources();
  for (const auto& [name, q] : r->limits()) {
    if (!r->requests().contains(name)) (*r->mutable_requests())[name] = q;
  }
}

}  // namespace

std::string_view DefaultPullPolicy(std::string_view image) {
  return ImageTag(image) == "latest" ? "Always" : "IfNotPresent";
}

void DefaultPodSpec(PodSpec* spec) {
  if (spec->dnspolicy().empty()) spec->set_dnspolicy("ClusterFirst");
  if (spec->restartpolicy().empty()) spec->set_restartpolicy("Always");
  spec->mutable_securitycontext();
  if (!spec->has_terminationgraceperiodseconds()) {
    spec->set_terminationgraceperiodseconds(30);
  }
  if (spec->schedulername().empty()) {
    spec->set_schedulername("default-scheduler");
  }
  // The deprecated serviceAccount mirrors serviceAccountName (the v1 <->
  // internal conversion copies it in both directions).
  if (spec->serviceaccountname().empty() && !spec->serviceaccount().empty()) {
    spec->set_serviceaccountname(spec->serviceaccount());
  }
  spec->set_serviceaccount(spec->serviceaccountname());
  for (Volume& v : *spec->mutable_volumes()) DefaultVolume(&v);
  for (Container& c : *spec->mutable_initcontainers()) DefaultContainer(&c);
  for (Container& c : *spec->mutable_containers()) DefaultContainer(&c);
}

void DefaultPod(Pod* pod) {
  PodSpec* spec = pod->mutable_spec();
  for (Container& c : *spec->mutable_containers()) CopyLimitsToRequests(&c);
  for (Container& c : *spec->mutable_initcontainers()) CopyLimitsToRequests(&c);
  if (!spec->has_enableservicelinks()) spec->set_enableservicelinks(true);
  if (spec->hostnetwork()) {
    for (auto* list :
         {spec->mutable_containers(), spec->mutable_initcontainers()}) {
      for (Container& c : *list) {
        for (ContainerPort& p : *c.mutable_ports()) {
          if (p.hostport() == 0) p.set_hostport(p.containerport());
        }
      }
    }
  }
  DefaultPodSpec(spec);
  NormalizePodIPs(pod->mutable_status());
}

void NormalizePodIPs(PodStatus* st) {
  if (!st->podip().empty() &&
      (st->podips().empty() || st->podips(0).ip() != st->podip())) {
    st->clear_podips();
    st->add_podips()->set_ip(st->podip());
  }
  if (!st->podips().empty()) st->set_podip(st->podips(0).ip());
}

void DefaultPodTemplate(PodTemplateSpec* t) {
  DefaultPodSpec(t->mutable_spec());
}

void DefaultDeployment(objects::appsv1::Deployment* d) {
  objects::appsv1::DeploymentSpec* spec = d->mutable_spec();
  if (!spec->has_replicas()) spec->set_replicas(1);
  objects::appsv1::DeploymentStrategy* st = spec->mutable_strategy();
  if (st->type().empty()) st->set_type("RollingUpdate");
  if (st->type() == "RollingUpdate") {
    auto* ru = st->mutable_rollingupdate();
    if (!ru->has_maxunavailable()) {
      ru->mutable_maxunavailable()->set_type(1);
      ru->mutable_maxunavailable()->set_strval("25%");
    }
    if (!ru->has_maxsurge()) {
      ru->mutable_maxsurge()->set_type(1);
      ru->mutable_maxsurge()->set_strval("25%");
    }
  }
  if (!spec->has_revisionhistorylimit()) spec->set_revisionhistorylimit(10);
  if (!spec->has_progressdeadlineseconds()) {
    spec->set_progressdeadlineseconds(600);
  }
  DefaultPodTemplate(spec->mutable_template_());
}

void DefaultReplicaSet(objects::appsv1::ReplicaSet* rs) {
  if (!rs->spec().has_replicas()) rs->mutable_spec()->set_replicas(1);
  DefaultPodTemplate(rs->mutable_spec()->mutable_template_());
}

void DefaultService(Service* svc) {
  ServiceSpec* spec = svc->mutable_spec();
  if (spec->sessionaffinity().empty()) spec->set_sessionaffinity("None");
  if (spec->sessionaffinity() == "None") spec->clear_sessionaffinityconfig();
  if (spec->sessionaffinity() == "ClientIP") {
    const auto& cfg = spec->sessionaffinityconfig();
    if (!spec->has_sessionaffinityconfig() || !cfg.has_clientip() ||
        !cfg.clientip().has_timeoutseconds()) {
      spec->mutable_sessionaffinityconfig()
          ->mutable_clientip()
          ->set_timeoutseconds(10800);
    }
  }
  if (spec->type().empty()) spec->set_type("ClusterIP");
  for (ServicePort& p : *spec->mutable_ports()) {
    if (p.protocol().empty()) p.set_protocol("TCP");
    const auto& tp = p.targetport();
    bool unset = !p.has_targetport() || (tp.type() == 0 && tp.intval() == 0) ||
                 (tp.type() == 1 && tp.strval().empty());
    if (unset) {
      p.mutable_targetport()->set_type(0);
      p.mutable_targetport()->set_intval(p.port());
      p.mutable_targetport()->clear_strval();
    }
  }
  const std::string& type = spec->type();
  bool externally_accessible =
      type == "LoadBalancer" || type == "NodePort" ||
      (type == "ClusterIP" && !spec->externalips().empty());
  if (externally_accessible && spec->externaltrafficpolicy().empty()) {
    spec->set_externaltrafficpolicy("Cluster");
  }
  if (!spec->has_internaltrafficpolicy() &&
      (type == "NodePort" || type == "LoadBalancer" || type == "ClusterIP")) {
    spec->set_internaltrafficpolicy("Cluster");
  }
  if (type == "LoadBalancer" && !spec->has_allocateloadbalancernodeports()) {
    spec->set_allocateloadbalancernodeports(true);
  }
  if (type == "LoadBalancer") {
    for (auto& ing :
         *svc->mutable_status()->mutable_loadbalancer()->mutable_ingress()) {
      if (!ing.ip().empty() && !ing.has_ipmode()) ing.set_ipmode("VIP");
    }
  }
}

void DefaultSecret(Secret* s) {
  if (s->type().empty()) s->set_type("Opaque");
  for (const auto& [k, v] : s->stringdata()) (*s->mutable_data())[k] = v;
  s->clear_stringdata();
}

void DefaultNamespace(Namespace* ns) {
  if (!ns->metadata().name().empty()) {
    (*ns->mutable_metadata()->mutable_labels())["kubernetes.io/metadata.name"] =
        ns->metadata().name();
  }
  if (ns->status().phase().empty()) ns->mutable_status()->set_phase("Active");
}

void DefaultNode(Node* node) {
  NodeStatus* st = node->mutable_status();
  if (st->allocatable().empty() && !st->capacity().empty()) {
    *st->mutable_allocatable() = st->capacity();
  }
}

}  // namespace kplane::apiserver::defaults
