// Test support (not part of the library): builders for the objects the
// controller unit tests put in their caches.
#ifndef KPLANE_CONTROLLERS_TEST_OBJECTS_H_
#define KPLANE_CONTROLLERS_TEST_OBJECTS_H_

#include <map>
#include <memory>
#include <string>

#include "controllers/util.h"
#include "informer/api_errors.h"
#include "informer/indexer.h"
#include "objects/time.h"

namespace kplane::controllers::testing {

using LabelMapT = std::map<std::string, std::string>;

inline void SetMeta(metav1::ObjectMeta* m, const std::string& ns,
                    const std::string& name, const LabelMapT& labels = {}) {
  m->set_namespace_(ns);
  m->set_name(name);
  m->set_uid("uid-" + name);
  m->set_resourceversion("1");
  m->set_generation(1);
  objects::SetTime(m->mutable_creationtimestamp(), int64_t{1700000000});
  for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
}

inline void OwnedBy(metav1::ObjectMeta* m, const std::string& kind,
                    const metav1::ObjectMeta& owner) {
  *m->add_ownerreferences() = ControllerRefTo("apps/v1", kind, owner);
}

inline std::shared_ptr<corev1::Pod> NewPod(const std::string& ns,
                                           const std::string& name,
                                           const LabelMapT& labels = {}) {
  auto p = std::make_shared<corev1::Pod>();
  SetMeta(p->mutable_metadata(), ns, name, labels);
  corev1::Container* c = p->mutable_spec()->add_containers();
  c->set_name("app");
  c->set_image("nginx");
  p->mutable_status()->set_phase("Pending");
  return p;
}

// Bound, Running, Ready since `ready_since` (unix seconds).
inline void RunOn(corev1::Pod* p, const std::string& node, bool ready,
                  int64_t ready_since = 1700000000) {
  p->mutable_spec()->set_nodename(node);
  p->mutable_status()->set_phase("Running");
  corev1::PodCondition* c = p->mutable_status()->add_conditions();
  c->set_type("Ready");
  c->set_status(ready ? "True" : "False");
  objects::SetTime(c->mutable_lasttransitiontime(), ready_since);
}

inline void SetRequests(corev1::Pod* p, const std::string& cpu,
                        const std::string& mem) {
  auto* req = p->mutable_spec()
                  ->mutable_containers(0)
                  ->mutable_resources()
                  ->mutable_requests();
  if (!cpu.empty()) (*req)["cpu"].set_string(cpu);
  if (!mem.empty()) (*req)["memory"].set_string(mem);
}

inline corev1::PodTemplateSpec Template(const LabelMapT& labels,
                                        const std::string& image) {
  corev1::PodTemplateSpec t;
  for (const auto& [k, v] : labels)
    (*t.mutable_metadata()->mutable_labels())[k] = v;
  corev1::Container* c = t.mutable_spec()->add_containers();
  c->set_name("app");
  c->set_image(image);
  return t;
}

inline std::shared_ptr<appsv1::ReplicaSet> NewReplicaSet(
    const std::string& ns, const std::string& name, int32_t replicas,
    const LabelMapT& labels, const std::string& image = "nginx") {
  auto rs = std::make_shared<appsv1::ReplicaSet>();
  SetMeta(rs->mutable_metadata(), ns, name, labels);
  rs->mutable_spec()->set_replicas(replicas);
  for (const auto& [k, v] : labels) {
    (*rs->mutable_spec()->mutable_selector()->mutable_matchlabels())[k] = v;
  }
  *rs->mutable_spec()->mutable_template_() = Template(labels, image);
  return rs;
}

inline std::shared_ptr<appsv1::Deployment> NewDeployment(
    const std::string& ns, const std::string& name, int32_t replicas,
    const LabelMapT& labels, const std::string& image = "nginx") {
  auto d = std::make_shared<appsv1::Deployment>();
  SetMeta(d->mutable_metadata(), ns, name, labels);
  d->mutable_spec()->set_replicas(replicas);
  for (const auto& [k, v] : labels) {
    (*d->mutable_spec()->mutable_selector()->mutable_matchlabels())[k] = v;
  }
  *d->mutable_spec()->mutable_template_() = Template(labels, image);
  d->mutable_spec()->mutable_strategy()->set_type("RollingUpdate");
  d->mutable_spec()->set_progressdeadlineseconds(600);
  d->mutable_spec()->set_revisionhistorylimit(10);
  return d;
}

// A namespace as the API server holds it: Active, or being deleted.
inline std::shared_ptr<corev1::Namespace> LiveNamespace(const std::string& name,
                                                        bool being_deleted) {
  auto ns = std::make_shared<corev1::Namespace>();
  SetMeta(ns->mutable_metadata(), "", name);
  ns->mutable_status()->set_phase(being_deleted ? "Terminating" : "Active");
  if (being_deleted) {
    objects::SetTime(ns->mutable_metadata()->mutable_deletiontimestamp(),
                     int64_t{1700000100});
  }
  return ns;
}

// A create's 403, as the REST client reports it.
inline Status ForbiddenStatus(const std::string& message) {
  metav1::Status forbidden;
  forbidden.set_reason("Forbidden");
  forbidden.set_code(403);
  forbidden.set_message(message);
  return informer::StatusFromApiStatus(forbidden, 403);
}

inline std::shared_ptr<corev1::Node> NewNode(const std::string& name,
                                             bool ready = true,
                                             const std::string& cpu = "4",
                                             const std::string& mem = "8Gi",
                                             const std::string& pods = "110") {
  auto n = std::make_shared<corev1::Node>();
  SetMeta(n->mutable_metadata(), "", name, {{"kubernetes.io/hostname", name}});
  corev1::NodeCondition* c = n->mutable_status()->add_conditions();
  c->set_type("Ready");
  c->set_status(ready ? "True" : "False");
  c->set_reason(ready ? "KubeletReady" : "KubeletNotReady");
  auto* a = n->mutable_status()->mutable_allocatable();
  if (!cpu.empty()) (*a)["cpu"].set_string(cpu);
  if (!mem.empty()) (*a)["memory"].set_string(mem);
  if (!pods.empty()) (*a)["pods"].set_string(pods);
  return n;
}

inline std::shared_ptr<coordinationv1::Lease> NewLease(const std::string& node,
                                                       WallTime renew) {
  auto l = std::make_shared<coordinationv1::Lease>();
  SetMeta(l->mutable_metadata(), "kube-node-lease", node);
  l->mutable_spec()->set_holderidentity(node);
  l->mutable_spec()->set_leasedurationseconds(40);
  objects::SetMicroTime(l->mutable_spec()->mutable_renewtime(), renew);
  return l;
}

}  // namespace kplane::controllers::testing

#endif  // KPLANE_CONTROLLERS_TEST_OBJECTS_H_
