// The versions a store member reports to its clients.
//
// Clients parse etcd's versions: Patroni's etcd3 DCS splits /version's
// "etcdserver" at the dots and int()s the parts, etcdctl prints
// StatusResponse.version. So both carry the etcd API level kplane speaks,
// in etcd's form, and kplane names itself in a field of its own:
//   GET /version -> {"etcdserver":"3.4.0","etcdcluster":"3.4.0",
//                    "kplane":"0.1.0"}
// (etcd 3.4.23 answers {"etcdserver":"3.4.23","etcdcluster":"3.4.0"}).
#ifndef KPLANE_STORAGE_SERVER_VERSION_H_
#define KPLANE_STORAGE_SERVER_VERSION_H_

namespace kplane::storage {

// The etcd server API level: /version's "etcdserver" and
// StatusResponse.version.
inline constexpr char kEtcdServerVersion[] = "3.4.0";
// The cluster version etcd 3.4 members agree on (/version's "etcdcluster",
// the bbolt export's clusterVersion).
inline constexpr char kEtcdClusterVersion[] = "3.4.0";
// kplane's own version: /version's "kplane".
inline constexpr char kKplaneVersion[] = "0.1.0";

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_VERSION_H_
