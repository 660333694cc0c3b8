#include "controllers/node_ipam_controller.h"

#include <algorithm>

#include "base/logging.h"
#include "controllers/util.h"
#include "informer/api_errors.h"

namespace kplane::controllers {

namespace {
constexpr int kCidrUpdateWorkers = 30;  // kube's cidrUpdateWorkers
}  // namespace

StatusOr<std::unique_ptr<NodeIpamController>> NodeIpamController::New(
    NodeIpamControllerOptions options) {
  CHECK(options.api != nullptr && options.nodes != nullptr);
  ASSIGN_OR_RETURN(CidrSet set, CidrSet::New(options.cluster_cidr,
                                             options.node_cidr_mask_size));
  return std::unique_ptr<NodeIpamController>(
      new NodeIpamController(std::move(options), std::move(set)));
}

NodeIpamController::NodeIpamController(NodeIpamControllerOptions options,
                                       CidrSet set)
    : Controller("nodeipam", options.clock, options.metrics),
      options_(std::move(options)),
      set_(std::move(set)) {
  metrics::Registry* reg = options_.metrics != nullptr
                               ? options_.metrics
                               : metrics::Registry::Default();
  const std::vector<std::string> label = {options_.cluster_cidr};
  usage_ = reg->NewGauge("cidrset_usage_cidrs",
                         "Fraction of the cluster CIDR's node CIDRs in use.",
                         {"clusterCIDR"})
               ->With(label);
  allocations_ = reg->NewCounter("cidrset_cidrs_allocations_total",
                                 "Node CIDRs allocated.", {"clusterCIDR"})
                     ->With(label);
  releases_ = reg->NewCounter("cidrset_cidrs_releases_total",
                              "Node CIDRs released.", {"clusterCIDR"})
                  ->With(label);
}

void NodeIpamController::RegisterHandlers(
    informer::SharedIndexInformer* nodes) {
  OnObjectEvents(nodes, [this](const ObjectEvent& e) {
    if (e.type == ObjectEvent::Type::kUpdated &&
        e.As<corev1::Node>().spec().podcidrs_size() ==
            e.OldAs<corev1::Node>().spec().podcidrs_size()) {
      return;  // heartbeats and status: nothing for IPAM
    }
    Enqueue(e.Key());
  });
}

void NodeIpamController::Run(int workers) {
  {
    MutexLock l(&mu_);
    for (const informer::ObjectPtr& o : options_.nodes->List()) {
      const auto& node = static_cast<const corev1::Node&>(*o);
      OccupyLocked(node.metadata().name(), node.spec().podcidrs());
    }
    LOG(INFO) << "nodeipam: " << set_.used() << " of " << set_.size()
              << " node CIDRs of " << options_.cluster_cidr
              << " held by existing nodes";
  }
  // Each allocation is one Node update round trip; kube's range allocator
  // runs 30 of them at once (cidrUpdateWorkers). With --concurrent-syncs' 2
  // a 20,000-node fleet got 14 CIDRs/s (143 ms per update on a loaded
  // apiserver): 24 minutes until the last node had one.
  Controller::Run(std::max(workers, kCidrUpdateWorkers));
}

int64_t NodeIpamController::used() const {
  MutexLock l(&mu_);
  return set_.used();
}

void NodeIpamController::UpdateUsage() {
  usage_->Set(set_.size() == 0 ? 0
                               : static_cast<double>(set_.used()) /
                                     static_cast<double>(set_.size()));
}

void NodeIpamController::OccupyLocked(
    const std::string& name,
    const google::protobuf::RepeatedPtrField<std::string>& cidrs) {
  if (cidrs.empty()) return;
  auto it = assigned_.find(name);
  if (it != assigned_.end() && std::equal(it->second.begin(), it->second.end(),
                                          cidrs.begin(), cidrs.end())) {
    return;
  }
  if (it != assigned_.end()) ReleaseLocked(name);
  std::vector<std::string>& held = assigned_[name];
  for (const std::string& c : cidrs) {
    Status s = set_.Occupy(c);
    if (!s.ok()) {
      // Kube logs and leaves such a node alone (e.g. a CIDR assigned by
      // hand from another range).
      LOG(WARNING) << "nodeipam: node " << name << ": " << s.ToString();
      continue;
    }
    held.push_back(c);
  }
  UpdateUsage();
}

void NodeIpamController::ReleaseLocked(const std::string& name) {
  auto it = assigned_.find(name);
  if (it == assigned_.end()) return;
  for (const std::string& c : it->second) {
    if (set_.Release(c).ok()) releases_->Inc();
  }
  assigned_.erase(it);
  UpdateUsage();
}

Status NodeIpamController::Sync(const std::string& key) {
  auto node =
      std::static_pointer_cast<const corev1::Node>(options_.nodes->Get(key));
  std::string cidr;
  {
    MutexLock l(&mu_);
    if (node == nullptr) {
      ReleaseLocked(key);
      return Status::Ok();
    }
    if (!node->spec().podcidrs().empty()) {
      OccupyLocked(key, node->spec().podcidrs());
      return Status::Ok();
    }
    if (node->spec().podcidr().empty() == false) {
      // Only the singular field (an old client): kube keeps podCIDRs[0] ==
      // podCIDR, so it is what the node holds.
      google::protobuf::RepeatedPtrField<std::string> one;
      one.Add()->assign(node->spec().podcidr());
      OccupyLocked(key, one);
      return Status::Ok();
    }
    auto it = assigned_.find(key);
    if (it != assigned_.end() && !it->second.empty()) {
      // Allocated before, but the update has not reached the cache (or
      // failed with a conflict): the same CIDR again.
      cidr = it->second.front();
    } else {
      StatusOr<std::string> next = set_.AllocateNext();
      if (!next.ok()) {
        RecordEvent(*node, "Normal", "CIDRNotAvailable",
                    "Node " + key + " status is now: CIDRNotAvailable");
        return Status(next.status().code(),
                      "failed to allocate a CIDR for node " + key + ": " +
                          std::string(next.status().message()));
      }
      cidr = *next;
      assigned_[key] = {cidr};
      allocations_->Inc();
      UpdateUsage();
    }
  }
  corev1::Node copy = *node;
  copy.mutable_spec()->set_podcidr(cidr);
  copy.mutable_spec()->clear_podcidrs();
  copy.mutable_spec()->add_podcidrs(cidr);
  StatusOr<ObjectPtr> r = options_.api->Update(NodesResource(), copy);
  if (r.ok()) {
    LOG(DEBUG) << "nodeipam: node " << key << " gets pod CIDR " << cidr;
    return Status::Ok();
  }
  if (informer::IsConflict(r.status())) return r.status();  // retried
  MutexLock l(&mu_);
  if (informer::IsNotFound(r.status())) {
    ReleaseLocked(key);
    return Status::Ok();
  }
  // Only a refusal (4xx) surely left the node without it. After a timeout,
  // a transport error or a 5xx the PUT may have been applied: the CIDR
  // stays the node's, and the retry sends it again (kube's
  // updateCIDRsAllocation keeps it on a server timeout too).
  const int http = informer::HttpCodeOf(r.status());
  if (http >= 400 && http < 500) ReleaseLocked(key);
  RecordEvent(*node, "Normal", "CIDRAssignmentFailed",
              "Node " + key + " status is now: CIDRAssignmentFailed");
  return r.status();
}

}  // namespace kplane::controllers
