// Internal to apiserver/registry: server-side Table printing with
// kube-apiserver 1.32's columns and cell rules
// (pkg/printers/internalversion/printers.go). The apiserver always prints
// "wide": rows carry every column, priority-1 ones included, and kubectl
// hides those without -o wide.
//
// Worked example (a Running pod with one restart five minutes ago):
//   columns: Name | Ready | Status | Restarts | Age | IP* | Node* |
//            Nominated Node* | Readiness Gates*          (* priority 1)
//   row:     web-0 | 1/1 | Running | 1 (5m ago) | 3h | 10.244.0.5 |
//            node-1 | <none> | <none>
//
// Ages are HumanDuration(now - creationTimestamp), "<unknown>" for an
// unset time. Thread-safety: pure functions.
#ifndef KPLANE_APISERVER_REGISTRY_PRINTERS_H_
#define KPLANE_APISERVER_REGISTRY_PRINTERS_H_

#include <string>
#include <vector>

#include "objects/apps_workloads_types.h"
#include "objects/batch_types.h"
#include "objects/discovery_types.h"
#include "objects/endpoints_types.h"
#include "objects/serviceaccount_types.h"
#include "objects/types.h"
#include "apiserver/registry/strategy.h"
#include "base/clock.h"

namespace kplane::apiserver::printers {

std::string TranslateTimestampSince(const objects::metav1::Time& t, WallTime now);
std::string TranslateMicroTimestampSince(const objects::metav1::MicroTime& t,
                                         WallTime now);

// The default table convertor (kinds without a printer): Name, Created At.
std::vector<TableColumn> DefaultColumns();
std::vector<TableCell> DefaultRow(const objects::metav1::ObjectMeta& meta);

std::vector<TableColumn> PodColumns();
std::vector<TableCell> PodRow(const objects::corev1::Pod& pod, WallTime now);

std::vector<TableColumn> NodeColumns();
std::vector<TableCell> NodeRow(const objects::corev1::Node& node, WallTime now);

std::vector<TableColumn> NamespaceColumns();
std::vector<TableCell> NamespaceRow(const objects::corev1::Namespace& ns,
                                    WallTime now);

std::vector<TableColumn> ConfigMapColumns();
std::vector<TableCell> ConfigMapRow(const objects::corev1::ConfigMap& cm,
                                    WallTime now);

std::vector<TableColumn> SecretColumns();
std::vector<TableCell> SecretRow(const objects::corev1::Secret& s, WallTime now);

std::vector<TableColumn> ServiceColumns();
std::vector<TableCell> ServiceRow(const objects::corev1::Service& svc,
                                  WallTime now);

std::vector<TableColumn> EventColumns();
std::vector<TableCell> EventRow(const objects::corev1::Event& ev, WallTime now);

std::vector<TableColumn> DeploymentColumns();
std::vector<TableCell> DeploymentRow(const objects::appsv1::Deployment& d,
                                     WallTime now);

std::vector<TableColumn> ReplicaSetColumns();
std::vector<TableCell> ReplicaSetRow(const objects::appsv1::ReplicaSet& rs,
                                     WallTime now);

std::vector<TableColumn> StatefulSetColumns();
std::vector<TableCell> StatefulSetRow(const objects::appsv1::StatefulSet& s,
                                      WallTime now);

// NAME CONTROLLER REVISION AGE; CONTROLLER is "<kind>.<group>/<name>" of
// the controller reference (kube's formatResourceName), or <none>.
std::vector<TableColumn> ControllerRevisionColumns();
std::vector<TableCell> ControllerRevisionRow(
    const objects::appsv1::ControllerRevision& cr, WallTime now);

std::vector<TableColumn> DaemonSetColumns();
std::vector<TableCell> DaemonSetRow(const objects::appsv1::DaemonSet& ds,
                                    WallTime now);

std::vector<TableColumn> EndpointsColumns();
std::vector<TableCell> EndpointsRow(const objects::corev1::Endpoints& ep,
                                    WallTime now);

std::vector<TableColumn> ServiceAccountColumns();
std::vector<TableCell> ServiceAccountRow(
    const objects::corev1::ServiceAccount& sa, WallTime now);

// kube 1.32's printJob: Name, Status (Complete, Failed, Terminating,
// Suspended, FailureTarget, SuccessCriteriaMet or Running), Completions
// ("1/3", "0/1 of 4" without completions), Duration (start to completion,
// or to now), Age; Containers, Images, Selector (wide).
std::vector<TableColumn> JobColumns();
std::vector<TableCell> JobRow(const objects::batchv1::Job& job, WallTime now);

// kube 1.32's printCronJob: Name, Schedule, Timezone ("<none>"), Suspend,
// Active, Last Schedule ("<none>"), Age; Containers, Images, Selector.
std::vector<TableColumn> CronJobColumns();
std::vector<TableCell> CronJobRow(const objects::batchv1::CronJob& cj,
                                  WallTime now);

std::vector<TableColumn> LeaseColumns();
std::vector<TableCell> LeaseRow(const objects::coordinationv1::Lease& l,
                                WallTime now);

// kube 1.32's printEndpointSlice: Name, AddressType, Ports (the first three
// port numbers, a name for a port without number, "*" for neither),
// Endpoints (the first three addresses), Age; "<unset>" for an empty list,
// " + N more..." past three.
std::vector<TableColumn> EndpointSliceColumns();
std::vector<TableCell> EndpointSliceRow(
    const objects::discoveryv1::EndpointSlice& slice, WallTime now);

// kube 1.32's printPodDisruptionBudget: Name, Min Available and Max
// Unavailable ("N/A" when unset), Allowed Disruptions, Age.
std::vector<TableColumn> PodDisruptionBudgetColumns();
std::vector<TableCell> PodDisruptionBudgetRow(
    const objects::policyv1::PodDisruptionBudget& pdb, WallTime now);

}  // namespace kplane::apiserver::printers

#endif  // KPLANE_APISERVER_REGISTRY_PRINTERS_H_
