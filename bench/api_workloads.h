// Kubernetes REST workloads for the shared load tool (bench/load.h): pods
// in one namespace, driven through an apiserver's JSON API, so the API
// layer is measured with the same closed loop, histogram and RESULT lines
// as the raw store (bench/store_workloads.h).
//
//   create  POST a new pod (names <run>-c<client>-<seq>, unique per run).
//   get     GET a random pod of the fixture (<fixture>-%08d, 0..pods-1).
//   update  read-modify-write of a pod of the fixture: PUT back the object
//           the pod's last answer returned (its resourceVersion, defaults
//           and all) with one annotation changed. Client i of c owns the
//           fixture pods j with j % c == i, so no two clients touch one pod
//           and no update conflicts; the first update of a pod reads it
//           first (GET + PUT in one operation; a warmup keeps these out of
//           the figures).
//   list    GET the namespace's pods with `list_query` (e.g.
//           "resourceVersion=0": the watch cache; "limit=500": the store,
//           page by page). A paged list follows `continue` tokens; the
//           operation is the whole list.
//   delete  DELETE the pods named in `delete_names` (shared by all
//           clients, each name taken once; a client that finds none left
//           goes idle).
//
// Each operation's success is its HTTP status (201 create; 200 get, update,
// list; 200/202 delete); anything else counts as an error.
//
// Thread-safety: each script belongs to one client; the ApiListStats and
// the delete queue are shared and atomic.
#ifndef KPLANE_BENCH_API_WORKLOADS_H_
#define KPLANE_BENCH_API_WORKLOADS_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bench/load.h"

namespace kplane::bench {

// What list operations saw (shared by a run's list scripts).
struct ApiListStats {
  std::atomic<int64_t> bytes{0};  // of the last complete list, all pages
  std::atomic<int64_t> items{0};  // ditto
  std::atomic<int64_t> pages{0};  // ditto
};

struct ApiWorkload {
  std::string kind = "create";  // create | get | update | list | delete
  std::string ns = "bench";
  std::string run = "run";          // create: name prefix, unique per run
  std::string fixture = "fixture";  // get/update: pods <fixture>-%08d
  int64_t pods = 1000;              // get/update: fixture size
  int clients = 1;                  // update: how the fixture is shared
  std::string list_query;           // list: query string without '?'
  uint64_t seed = 1;
  // delete: the names to delete and the next one to take.
  std::shared_ptr<const std::vector<std::string>> delete_names;
  std::shared_ptr<std::atomic<int64_t>> delete_next;
  std::shared_ptr<ApiListStats> list_stats;
};

std::unique_ptr<ClientScript> NewApiScript(const ApiWorkload& w, int client);

// The pod body every workload sends (a small nginx pod with resource
// requests, a label and an annotation), named `name`.
std::string PodJson(const std::string& name, const std::string& annotation);

// Name of fixture pod i: fixture + "-%08d".
std::string FixturePodName(const std::string& fixture, int64_t i);

// Creates namespace `ns` unless it exists.
Status EnsureNamespace(const Endpoint& server, const std::string& ns);

// Creates fixture pods 0..count-1 in `ns` with `clients` concurrent
// writers; pods that already exist are kept (so a fill can be repeated).
// Returns the time it took in seconds.
StatusOr<double> FillPods(const Endpoint& server, const std::string& ns,
                          const std::string& fixture, int64_t count,
                          int clients);

// Names of every pod in `ns` (a consistent LIST).
StatusOr<std::vector<std::string>> ListPodNames(const Endpoint& server,
                                                const std::string& ns);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_API_WORKLOADS_H_
