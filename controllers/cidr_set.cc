#include "controllers/cidr_set.h"

#include "net/ipv4_cidr.h"

namespace kplane::controllers {

namespace {

constexpr int kMaxSubnetBits = 16;  // kube's clusterSubnetMaxDiff

}  // namespace

StatusOr<CidrSet> CidrSet::New(std::string_view cluster_cidr,
                               int node_mask_size) {
  CidrSet s;
  RETURN_IF_ERROR(net::ParseIPv4Cidr(cluster_cidr, &s.base_, &s.cluster_bits_));
  if (node_mask_size < s.cluster_bits_ || node_mask_size > 30) {
    return InvalidArgumentError(
        "node CIDR mask size " + std::to_string(node_mask_size) +
        " must lie in [" + std::to_string(s.cluster_bits_) +
        ", 30] for cluster CIDR " + std::string(cluster_cidr));
  }
  if (node_mask_size - s.cluster_bits_ > kMaxSubnetBits) {
    return InvalidArgumentError(
        "node CIDR mask size " + std::to_string(node_mask_size) +
        " cuts cluster CIDR " + std::string(cluster_cidr) +
        " into more than 65536 node CIDRs");
  }
  s.node_bits_ = node_mask_size;
  s.used_.assign(size_t{1} << (node_mask_size - s.cluster_bits_), false);
  return s;
}

StatusOr<std::string> CidrSet::AllocateNext() {
  const int64_t n = size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t candidate = (next_candidate_ + i) % n;
    if (used_[candidate]) continue;
    Mark(candidate, candidate, true);
    next_candidate_ = (candidate + 1) % n;
    return net::FormatIPv4Cidr(
        base_ + (static_cast<uint32_t>(candidate) << (32 - node_bits_)),
        node_bits_);
  }
  return ResourceExhaustedError("no remaining CIDRs left to allocate in " +
                                net::FormatIPv4Cidr(base_, cluster_bits_) +
                                " (" + std::to_string(n) + " of /" +
                                std::to_string(node_bits_) + " in use)");
}

Status CidrSet::Range(std::string_view cidr, int64_t* first,
                      int64_t* last) const {
  uint32_t network = 0;
  int prefix = 0;
  RETURN_IF_ERROR(net::ParseIPv4Cidr(cidr, &network, &prefix));
  if (prefix < cluster_bits_ ||
      (network & net::IPv4Mask(cluster_bits_)) != base_) {
    return InvalidArgumentError("CIDR " + std::string(cidr) +
                                " is out of the cluster CIDR " +
                                net::FormatIPv4Cidr(base_, cluster_bits_));
  }
  uint32_t offset = network - base_;
  int shift = 32 - node_bits_;
  *first = offset >> shift;
  if (prefix >= node_bits_) {
    *last = *first;
  } else {
    *last = *first + (int64_t{1} << (node_bits_ - prefix)) - 1;
  }
  return Status::Ok();
}

void CidrSet::Mark(int64_t first, int64_t last, bool used) {
  for (int64_t i = first; i <= last; ++i) {
    if (used_[i] != used) used_count_ += used ? 1 : -1;
    used_[i] = used;
  }
}

Status CidrSet::Occupy(std::string_view cidr) {
  int64_t first = 0, last = 0;
  RETURN_IF_ERROR(Range(cidr, &first, &last));
  Mark(first, last, true);
  return Status::Ok();
}

Status CidrSet::Release(std::string_view cidr) {
  int64_t first = 0, last = 0;
  RETURN_IF_ERROR(Range(cidr, &first, &last));
  Mark(first, last, false);
  return Status::Ok();
}

}  // namespace kplane::controllers
