// Workloads over etcd's v3 JSON API, shared by every store benchmark so our
// store and a real etcd are driven by byte-identical requests.
//
//   put    PUT of a random key from a key space (etcd's benchmark tool
//          draws keys uniformly too) with a fixed random value per client.
//   range  RANGE of one key, or of every key under a prefix; linearizable
//          unless `serializable`.
//   cas    the apiserver's update pattern: RANGE a key, then a TXN that puts
//          a new value if mod_revision is still the one read (one operation;
//          a lost race is retried within the operation, as GuaranteedUpdate
//          does).
//
// Thread-safety: each script belongs to one client.
#ifndef KPLANE_BENCH_STORE_WORKLOADS_H_
#define KPLANE_BENCH_STORE_WORKLOADS_H_

#include <memory>
#include <string>

#include "bench/load.h"

namespace kplane::bench {

struct StoreWorkload {
  std::string kind = "put";  // put | range | cas
  std::string prefix = "/registry/configmaps/default/";
  int64_t key_space = 100000;
  int value_size = 256;
  // range: one key ("key-00000001" under prefix) or the whole prefix.
  bool range_prefix = false;
  bool serializable = false;
  uint64_t seed = 1;
};

std::unique_ptr<ClientScript> NewStoreScript(const StoreWorkload& w,
                                             int client);

// The key of index i: prefix + "key-%08d".
std::string StoreKey(const std::string& prefix, int64_t i);

// Writes `count` keys (StoreKey(prefix, 0..count-1)) of `value_size` bytes
// with `clients` concurrent writers: fixtures for range benchmarks.
Status FillStore(const std::vector<Endpoint>& endpoints,
                 const std::string& prefix, int64_t count, int value_size,
                 int clients);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_STORE_WORKLOADS_H_
