#include "storage/server/bootstrap.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/logging.h"
#include "storage/server/etcd_import.h"
#include "storage/server/store_applier.h"

namespace kplane::storage {

StatusOr<DataDirLock> DataDirLock::Acquire(FileSystem* fs,
                                           const std::string& data_dir) {
  StatusOr<std::unique_ptr<FileLock>> lock = fs->LockFile(data_dir + "/LOCK");
  if (lock.status().Is(StatusCode::kUnavailable)) {
    return FailedPreconditionError("data directory " + data_dir +
                                   " is in use by another process");
  }
  if (!lock.ok()) return lock.status();
  return DataDirLock(std::move(*lock));
}

mvcc::Options StoreOptions(const StoreConfig& config,
                           const std::string& member_dir) {
  mvcc::Options o;
  o.dir = member_dir + "/db";
  o.clock = config.clock;
  o.quota_bytes = config.quota_backend_bytes;
  // Applied on every member whatever its size; NOSPACE goes through the
  // log (StoreApplier).
  o.refuse_writes_over_quota = false;
  o.max_request_bytes = config.max_request_bytes;
  o.max_txn_ops = config.max_txn_ops;
  o.watch_progress_interval = config.watch_progress_interval;
  o.compaction_batch_records = config.compaction_batch_records;
  o.key_index = config.key_index;
  o.file_system = config.file_system;
  if (config.metrics != nullptr) {
    o.metrics = std::make_shared<const mvcc::StoreMetrics>(
        mvcc::StoreMetrics::Register(config.metrics));
  }
  // Auto-compaction is the server's (through raft), never the replica's.
  return o;
}

namespace {

// The membership a brand-new member starts from, and whether it joins a
// running cluster (rather than bootstrapping a new one).
StatusOr<storagepb::ClusterRecord> InitialMembership(StoreConfig* config,
                                                     bool* joining) {
  if (config->initial_cluster_state == "existing") {
    if (!config->existing_cluster) {
      return InvalidArgumentError(
          "--initial-cluster-state=existing needs the current membership "
          "from a running member");
    }
    *joining = true;
    return *config->existing_cluster;
  }
  if (config->initial_cluster_state == "new") {
    std::string ic = config->initial_cluster;
    if (ic.empty()) {
      if (config->peer_urls.empty()) {
        config->peer_urls = {"http://127.0.0.1:2380"};
      }
      ic = config->name + "=" + config->peer_urls.front();
    }
    ASSIGN_OR_RETURN(auto members, ParseInitialCluster(ic));
    *joining = false;
    return NewClusterRecord(members, config->initial_cluster_token);
  }
  return InvalidArgumentError(
      "--initial-cluster-state must be \"new\" or \"existing\", got \"" +
      config->initial_cluster_state + "\"");
}

// A brand-new member: finds itself in the initial membership (by name in a
// new cluster, by peer URLs when joining), saves the membership and its
// identity, and for a new cluster the initial configuration.
Status InitializeMember(StoreConfig* config, BootstrappedMember* m) {
  bool joining = false;
  ASSIGN_OR_RETURN(storagepb::ClusterRecord initial,
                   InitialMembership(config, &joining));
  for (const auto& rec : initial.members()) {
    bool match = false;
    if (joining) {
      for (const auto& u : rec.peer_urls()) {
        for (const auto& mine : config->peer_urls) match |= (u == mine);
      }
    } else {
      match = rec.name() == config->name;
    }
    if (match) m->member_id = rec.id();
  }
  if (m->member_id == 0) {
    return InvalidArgumentError(
        joining ? "this member's peer URLs are not in the cluster's "
                  "membership (run `member add` first)"
                : "member name \"" + config->name +
                      "\" is not in --initial-cluster");
  }
  ASSIGN_OR_RETURN(m->membership,
                   Membership::Open(m->member_dir + "/cluster.pb", initial,
                                    config->file_system));
  // A restored data dir (`snapshot restore`) brings the old cluster's users
  // and roles in its cluster.pb; the membership is the new one.
  storagepb::ClusterRecord restored = m->membership->Record();
  if (restored.has_auth() && !initial.has_auth()) {
    *initial.mutable_auth() = restored.auth();
  }
  RETURN_IF_ERROR(m->membership->Replace(initial));
  storagepb::MemberIdentity id;
  id.set_member_id(m->member_id);
  id.set_cluster_id(initial.cluster_id());
  id.set_name(config->name);
  RETURN_IF_ERROR(m->log->WriteIdentity(id));
  if (!joining) {
    raftpb::ConfState cs;
    for (const auto& rec : initial.members()) {
      if (rec.is_learner()) {
        cs.add_learners(rec.id());
      } else {
        cs.add_voters(rec.id());
      }
    }
    RETURN_IF_ERROR(m->log->Bootstrap(cs));
  }
  LOG(INFO) << "member " << IdToHex(m->member_id) << " (" << config->name
            << ") " << (joining ? "joining" : "bootstrapping") << " cluster "
            << IdToHex(initial.cluster_id());
  return Status::Ok();
}

// A member with a log: its identity is the log's, its membership the file's.
Status ReopenMember(FileSystem* fs, BootstrappedMember* m) {
  if (!m->log->identity()) {
    return CorruptionError("WAL has no member identity record");
  }
  m->member_id = m->log->identity()->member_id();
  ASSIGN_OR_RETURN(m->membership,
                   Membership::Open(m->member_dir + "/cluster.pb", {}, fs));
  if (m->membership->cluster_id() != m->log->identity()->cluster_id()) {
    return CorruptionError("membership file belongs to cluster " +
                           IdToHex(m->membership->cluster_id()) + ", WAL to " +
                           IdToHex(m->log->identity()->cluster_id()));
  }
  LOG(INFO) << "member " << IdToHex(m->member_id) << " restarting: applied "
            << m->store->ConsistentIndex() << ", revision "
            << m->store->CurrentRevision() << ", snapshot "
            << m->log->snapshot_metadata().index() << ", log ends at "
            << m->log->LastIndex() << ", commit "
            << m->log->hard_state().commit();
  return Status::Ok();
}

// The advice every failed startup check ends with.
constexpr char kRefuse[] =
    ". Refusing to start on data that contradicts itself: keep the data "
    "directory for diagnosis and replace this member (member remove, a "
    "fresh data directory, member add), or restore it from a snapshot "
    "(docs/store.md, \"Faults\")";

}  // namespace

Status CheckStartupInvariants(RaftLog& log, uint64_t store_applied_index,
                              const Membership& membership) {
  const uint64_t last = log.LastIndex();
  const uint64_t snap = log.snapshot_metadata().index();
  const uint64_t commit = log.hard_state().commit();
  const uint64_t members_applied = membership.Record().applied_index();
  auto n = [](uint64_t v) { return std::to_string(v); };
  if (log.empty()) {
    // (Not the membership: a member that joins saves the membership it
    // fetched, with the cluster's applied index, before its identity.)
    if (store_applied_index > 0) {
      return CorruptionError(
          "startup check: the WAL is empty but the MVCC store has applied "
          "raft index " +
          n(store_applied_index) + ": the WAL was lost" + kRefuse);
    }
    return Status::Ok();
  }
  if (commit > last) {
    return CorruptionError(
        "startup check: the WAL's hard state commits index " + n(commit) +
        " but its log ends at index " + n(last) +
        ": the WAL lost committed entries" + kRefuse);
  }
  if (commit < snap) {
    return CorruptionError(
        "startup check: the WAL's hard state commits index " + n(commit) +
        ", below its snapshot at index " + n(snap) + kRefuse);
  }
  if (store_applied_index > last) {
    return CorruptionError(
        "startup check: the MVCC store has applied raft index " +
        n(store_applied_index) + " but the WAL's log ends at index " + n(last) +
        ": the WAL lost entries that were applied (truncated or damaged)" +
        kRefuse);
  }
  if (members_applied > last) {
    return CorruptionError(
        "startup check: the membership (cluster.pb) has applied raft index " +
        n(members_applied) + " but the WAL's log ends at index " + n(last) +
        ": the WAL lost entries that were applied" + kRefuse);
  }
  const bool bootstrap_snapshot = snap == 1 && store_applied_index == 0;
  if (store_applied_index < snap && !bootstrap_snapshot) {
    return CorruptionError(
        "startup check: the WAL has a snapshot at index " + n(snap) +
        " but the MVCC store has applied only index " + n(store_applied_index) +
        ": the store lost writes the snapshot vouched for" + kRefuse);
  }
  return Status::Ok();
}

Status PrivateDir(FileSystem* fs, const std::string& dir) {
  RETURN_IF_ERROR(CreateDirAll(fs, dir, kPrivateDirMode));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return IOError("stat " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(dir + " is not a directory");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return FailedPreconditionError(
        "data directory " + dir + " is writable by group or others (mode " +
        mode +
        "): anyone who can write there can change the cluster's data. "
        "Run `chmod 700 " +
        dir + "` (kplane creates it 0700, as etcd does)");
  }
  return Status::Ok();
}

StatusOr<BootstrappedMember> BootstrapMember(StoreConfig* config) {
  BootstrappedMember m;
  m.member_dir = config->data_dir + "/member";
  FileSystem* fs =
      config->file_system ? config->file_system : FileSystem::Default();
  RETURN_IF_ERROR(PrivateDir(fs, config->data_dir));
  ASSIGN_OR_RETURN(m.lock, DataDirLock::Acquire(fs, config->data_dir));

  RaftLogOptions log_opts;
  log_opts.catch_up_entries = config->snapshot_catch_up_entries;
  log_opts.wal.file_system = config->file_system;
  log_opts.wal.segment_bytes = config->wal_segment_bytes;
  log_opts.wal.preallocate_bytes = std::min<uint64_t>(
      log_opts.wal.preallocate_bytes, config->wal_segment_bytes);
  log_opts.wal.crash_hook = config->crash_hook;
  // An etcd 3.4 data directory becomes a kplane member's first (under the
  // LOCK, before anything below creates kplane's files in member/).
  bool imported = false;
  RETURN_IF_ERROR(ImportEtcdDataDir(fs, config->data_dir, log_opts,
                                    config->name, &imported));
  RETURN_IF_ERROR(PrivateDir(fs, m.member_dir));
  RETURN_IF_ERROR(PrivateDir(fs, m.member_dir + "/snap"));
  ASSIGN_OR_RETURN(m.log, RaftLog::Open(m.member_dir + "/wal", log_opts));
  // A snapshot received from a leader is durable in member/snap/ before its
  // marker reaches the WAL; if we crashed before swapping it in, do it now.
  RETURN_IF_ERROR(StoreApplier::FinishInstall(
      fs, m.member_dir, m.log->snapshot_metadata().index()));
  ASSIGN_OR_RETURN(m.store,
                   mvcc::Store::Open(StoreOptions(*config, m.member_dir)));

  if (m.log->empty()) {
    // A WAL lost beside a store that applied it must not be bootstrapped
    // again over that store.
    ASSIGN_OR_RETURN(auto none, Membership::Open("", {}));
    RETURN_IF_ERROR(
        CheckStartupInvariants(*m.log, m.store->ConsistentIndex(), *none));
    RETURN_IF_ERROR(InitializeMember(config, &m));
  } else {
    RETURN_IF_ERROR(ReopenMember(fs, &m));
    RETURN_IF_ERROR(CheckStartupInvariants(*m.log, m.store->ConsistentIndex(),
                                           *m.membership));
  }
  if (m.membership->IsRemoved(m.member_id)) {
    return FailedPreconditionError(
        "this member was removed from the cluster; start a new member with "
        "a fresh data directory");
  }
  return m;
}

}  // namespace kplane::storage
