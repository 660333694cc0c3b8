// DaemonSetController: one pod of every apps/v1 DaemonSet on each node
// that should run it (Kubernetes' pkg/controller/daemon).
//
// Which nodes: a node should run the daemon pod when the template's
// nodeSelector labels are all on it, its required node affinity terms
// match (matchExpressions on labels: In, NotIn, Exists, DoesNotExist, Gt,
// Lt; matchFields on metadata.name) and every NoSchedule and NoExecute
// taint is tolerated -- by the template's tolerations plus those kube adds
// to every daemon pod: node.kubernetes.io/not-ready and /unreachable
// (NoExecute), /disk-pressure, /memory-pressure, /pid-pressure and
// /unschedulable (NoSchedule), and /network-unavailable (NoSchedule) with
// hostNetwork. spec.unschedulable is ignored (its taint is tolerated). A
// pod already there keeps running while its NoExecute taints are
// tolerated.
//
// Placement: kube's controller sets a required nodeAffinity on
// metadata.name and lets kube-scheduler bind. kplane's scheduler
// (controllers/scheduler.h) filters NotReady and unschedulable nodes and
// knows no node affinity, so daemon pods are created bound: spec.nodeName
// set (as kube did before 1.12), and the nodeAffinity term on
// metadata.name is added as well, as kube does. No resource-fit check.
//
// History (kube's constructHistory, controllers/controller_history.h):
// every template the set has had is an apps/v1 ControllerRevision
// "<ds>-<template hash>" labelled controller-revision-hash=<template hash>,
// controlled by the set. The current revision is the one holding the
// set's template (created when none does) and always has the highest
// number: `kubectl rollout undo` brings an old template back, and its
// revision is renumbered max+1. Pods carry the current revision's hash.
// Old revisions no pod uses are deleted, oldest first, beyond
// spec.revisionHistoryLimit (default 10), once expectations are met. Not
// done: a hash collision (a revision of that name with other data) is an
// error on every sync, where kube bumps status.collisionCount; several
// revisions with the current template (a collision's leftovers) are not
// merged: all but the newest count as old.
//
// Sync("ns/name"):
//  1. Pods and revisions controlled by the set (matching orphans are
//     adopted, owned ones that stop matching are released); pods grouped
//     by node.
//  2. Per node: should run and no pod -> create (generateName "<ds>-",
//     labels of the template plus controller-revision-hash=<current
//     revision's hash>, the added tolerations); Failed pods are deleted (and
//     replaced by a later sync); more than one pod -> all but the oldest
//     deleted; should not run -> its pods deleted. Pods on nodes that no
//     longer exist are deleted with grace period 0 (no kubelet will).
//     Creates and deletes are tracked with ControllerExpectations, so a
//     cache behind our own writes never doubles a pod.
//  3. updateStrategy RollingUpdate (maxSurge 0): pods of an old template
//     that are not available are deleted at once; available ones while
//     fewer than maxUnavailable (an int or a percentage of
//     desiredNumberScheduled, rounded up) nodes are unavailable. The
//     replacement is created on the next sync. OnDelete: pods are only
//     replaced when deleted. A maxSurge > 0 is rolled as maxSurge 0.
//  4. Status: desiredNumberScheduled, currentNumberScheduled,
//     numberMisscheduled, numberReady, numberAvailable,
//     numberUnavailable, updatedNumberScheduled, observedGeneration.
// A set that is gone (confirmed by a live GET) has its pods and revisions
// deleted.
//
// Ownership: borrows the writer and the caches (which must outlive it).
// Thread-safety: as Controller. Errors: the first failed write (retried
// with backoff).
#ifndef KPLANE_CONTROLLERS_DAEMONSET_CONTROLLER_H_
#define KPLANE_CONTROLLERS_DAEMONSET_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "controllers/expectations.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/apps_workloads_types.h"

namespace kplane::controllers {

const objects::ResourceInfo& DaemonSetsResource();

// The template's hash, the value of the controller-revision-hash label of
// the set's current pods.
std::string DaemonSetTemplateHash(const appsv1::DaemonSet& ds);

// The pod template's spec with the tolerations kube adds to daemon pods.
corev1::PodSpec DaemonPodSpec(const corev1::PodSpec& tmpl);

// Whether a daemon pod with `spec` (tolerations already added) should be
// created on `node`, and whether one already there may stay.
struct NodeFit {
  bool should_run = false;
  bool should_continue_running = false;
};
NodeFit DaemonPodFits(const corev1::PodSpec& spec, const corev1::Node& node);

struct DaemonSetControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* daemonsets = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* nodes = nullptr;
  const informer::Indexer* revisions = nullptr;  // controllerrevisions
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class DaemonSetController : public Controller {
 public:
  explicit DaemonSetController(DaemonSetControllerOptions options);

  // Sets are enqueued on their own events, their pods' and revisions'
  // events and on node additions, deletions and label/taint changes.
  void RegisterHandlers(informer::SharedIndexInformer* daemonsets,
                        informer::SharedIndexInformer* pods,
                        informer::SharedIndexInformer* nodes,
                        informer::SharedIndexInformer* revisions);

  Status Sync(const std::string& key) override;

  ControllerExpectations& expectations() { return expectations_; }

 private:
  // kAdded counts towards the expected creations, kGone (deleted or now
  // terminating) towards the expected deletions.
  enum class PodChange { kAdded, kChanged, kGone };
  void OnPod(const corev1::Pod& pod, PodChange change);
  void EnqueueAll();
  Status DeletePodsOfGoneSet(const std::string& key);

  DaemonSetControllerOptions options_;
  ControllerExpectations expectations_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_DAEMONSET_CONTROLLER_H_
