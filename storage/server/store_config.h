// StoreConfig: how one member of the replicated store is set up (the
// flags of `kplane store`, etcd's names where etcd has the flag).
//
// A plain value; StoreServer::Open validates it and derives the defaults
// left at zero (request_timeout).
#ifndef KPLANE_STORAGE_SERVER_STORE_CONFIG_H_
#define KPLANE_STORAGE_SERVER_STORE_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/file_system.h"
#include "base/metrics.h"
#include "schemas/storage.pb.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/mvcc/auto_compactor.h"
#include "storage/server/auth_token.h"

namespace kplane::storage {

struct StoreConfig {
  std::string name = "default";
  std::string data_dir;
  // Peer URLs this member is reached at (its --initial-advertise-peer-urls).
  std::vector<std::string> peer_urls;
  // Client URLs this member publishes (its --advertise-client-urls).
  std::vector<std::string> client_urls;
  // "name=url,..."; empty means a single-member cluster of this member.
  std::string initial_cluster;
  // "new" bootstraps a cluster; "existing" joins one (after `member add`).
  std::string initial_cluster_state = "new";
  std::string initial_cluster_token = "kplane-cluster";
  // For "existing": the cluster record fetched from a running member.
  std::optional<storagepb::ClusterRecord> existing_cluster;

  Duration heartbeat_interval = milliseconds(100);
  Duration election_timeout = milliseconds(1000);
  bool pre_vote = true;
  uint64_t snapshot_count = 100000;
  uint64_t snapshot_catch_up_entries = 5000;
  int64_t quota_backend_bytes = int64_t{2} << 30;
  int64_t max_request_bytes = 1536 * 1024;
  // etcd's --max-txn-ops: a txn with more operations in one branch is
  // refused ("etcdserver: too many operations in txn request").
  int max_txn_ops = 128;
  // kplane's --max-watchers-per-stream: most watchers open at once on one
  // client Watch stream, gRPC or the JSON gateway's /v3/watch (0: no
  // bound; etcd has none). A create past it is refused with
  // etcdjson::CheckWatcherLimit's text and the stream goes on.
  size_t max_watchers_per_stream = etcdjson::kDefaultMaxWatchersPerStream;
  // etcd's --experimental-watch-progress-notify-interval: how often a watch
  // created with progress_notify hears the revision when it saw no event.
  Duration watch_progress_interval = minutes(10);
  // etcd's --experimental-compaction-batch-limit: compaction deletes in
  // write batches of about this many records.
  int compaction_batch_records = 1000;
  // --experimental-key-index: the MVCC store's in-memory key index
  // (mvcc::Options::key_index).
  bool key_index = true;
  mvcc::AutoCompactionOptions auto_compaction;
  // A proposal not applied within this time fails with
  // "etcdserver: request timed out" (etcd: 5 s + 2 election timeouts).
  Duration request_timeout = Duration(0);  // 0: derive as etcd does
  // The leader compares members' HashKV this often, the first time five
  // election timeouts after the member started (0: never).
  Duration corrupt_check_interval = minutes(1);
  // etcd's --auth-token-ttl: a simple token expires this long after its
  // last use.
  Duration auth_token_ttl = seconds(300);
  // A request whose simple token names a raft index this member has not
  // applied yet waits this long for it at most, and this many such
  // requests wait at once at most (AuthStoreOptions::token_index_wait).
  Duration auth_token_index_wait = seconds(2);
  int max_auth_token_index_waiters = 64;
  // etcd's --auth-token: JWT tokens (auth_token.h); null: simple tokens.
  std::shared_ptr<const TokenProvider> auth_tokens;
  // PBKDF2 rounds for new passwords (tests lower it).
  int auth_pbkdf2_iterations = 100000;

  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
  // Where the WAL and the MVCC store's RocksDB files (snapshot checkpoints
  // included) are written; null = FileSystem::Default(). Tests put a
  // fault-injecting file system here (base/testing). Not owned; must outlive
  // the member. Everything under the data directory goes through it: the
  // WAL, RocksDB, cluster.pb, the LOCK file, snapshot checkpoints and the
  // directory moves of a snapshot install. (The HTTP peer transport still
  // writes the files of a received snapshot itself, with fsync.)
  FileSystem* file_system = nullptr;
  // A WAL segment is cut once it reaches this size (etcd's
  // wal.SegmentSizeBytes, 64 MiB). Tests make it small to cut often.
  uint64_t wal_segment_bytes = 64 << 20;
  // Test seam: called at named steps of multi-step disk updates (e.g.
  // "install-snapshot:swapped", "snapshot:store-synced", the WAL's
  // "cut:created"); crash tests kill the process or cut the power there,
  // others stall it there ("apply:task", before the apply thread applies a
  // task; with a hook set, no task is applied on the node loop). Null in
  // production.
  std::function<void(std::string_view step)> crash_hook;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_STORE_CONFIG_H_
