// CidrSet: the node pod CIDRs of one cluster CIDR, as kube-controller-
// manager's nodeipam cidrset (pkg/controller/nodeipam/ipam/cidrset): the
// cluster CIDR cut into 2^(node mask - cluster mask) subnets of the node
// mask size, handed out round robin from after the last one allocated.
//
//   ASSIGN_OR_RETURN(CidrSet set, CidrSet::New("10.0.0.0/16", 24));  // 256
//   ASSIGN_OR_RETURN(std::string cidr, set.AllocateNext());  // 10.0.0.0/24
//   RETURN_IF_ERROR(set.Occupy("10.0.7.0/24"));  // already on a node
//   RETURN_IF_ERROR(set.Release(cidr));
//
// IPv4 only (kplane's pods are IPv4). A cluster CIDR may hold at most 2^16
// node subnets (kube's clusterSubnetMaxDiff).
//
// Errors: New: InvalidArgument for a malformed or IPv6 CIDR, a node mask
// shorter than the cluster's or longer than 30 bits, or more than 2^16
// subnets. AllocateNext: ResourceExhausted when every subnet is taken.
// Occupy/Release: InvalidArgument for a malformed CIDR or one outside the
// cluster CIDR (Occupy of a CIDR bigger than a subnet takes all it covers).
// Thread-safety: none; the owner serialises.
#ifndef KPLANE_CONTROLLERS_CIDR_SET_H_
#define KPLANE_CONTROLLERS_CIDR_SET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"

namespace kplane::controllers {

class CidrSet {
 public:
  static StatusOr<CidrSet> New(std::string_view cluster_cidr,
                               int node_mask_size);

  StatusOr<std::string> AllocateNext();
  Status Occupy(std::string_view cidr);
  Status Release(std::string_view cidr);

  int64_t size() const { return static_cast<int64_t>(used_.size()); }
  int64_t used() const { return used_count_; }

 private:
  CidrSet() = default;
  // The subnet indexes [first, last] `cidr` covers.
  Status Range(std::string_view cidr, int64_t* first, int64_t* last) const;
  void Mark(int64_t first, int64_t last, bool used);

  uint32_t base_ = 0;  // cluster network address, host byte order
  int cluster_bits_ = 0;
  int node_bits_ = 0;
  std::vector<bool> used_;
  int64_t used_count_ = 0;
  int64_t next_candidate_ = 0;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_CIDR_SET_H_
