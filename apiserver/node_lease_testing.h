// A node's Lease as a kubelet writes it (kube-node-lease/node-1, owned by
// Node node-1, 40 s duration), for managedFields' tests and benchmark.
#ifndef KPLANE_APISERVER_NODE_LEASE_TESTING_H_
#define KPLANE_APISERVER_NODE_LEASE_TESTING_H_

#include <cstdint>

#include "objects/time.h"
#include "objects/types.h"

namespace kplane::apiserver::testing {

// renewTime = renew_seconds + 123 µs.
inline objects::coordinationv1::Lease NodeLease(int64_t renew_seconds) {
  objects::coordinationv1::Lease l;
  l.mutable_metadata()->set_name("node-1");
  l.mutable_metadata()->set_namespace_("kube-node-lease");
  l.mutable_metadata()->set_uid("lease-uid");
  l.mutable_metadata()->set_resourceversion("5");
  auto* o = l.mutable_metadata()->add_ownerreferences();
  o->set_apiversion("v1");
  o->set_kind("Node");
  o->set_name("node-1");
  o->set_uid("node-uid");
  l.mutable_spec()->set_holderidentity("node-1");
  l.mutable_spec()->set_leasedurationseconds(40);
  objects::SetMicroTime(l.mutable_spec()->mutable_renewtime(), renew_seconds,
                        123000);
  return l;
}

}  // namespace kplane::apiserver::testing

#endif  // KPLANE_APISERVER_NODE_LEASE_TESTING_H_
