#include "storage/server/etcd_import.h"

#include <algorithm>
#include <utility>

#include "base/logging.h"
#include "storage/bolt/etcd_wal.h"
#include "storage/server/bootstrap.h"
#include "storage/server/cluster.h"

namespace kplane::storage {
namespace {

// etcd's member dir: its bbolt backend in snap/db (kplane's snap/ only ever
// holds db-<index> directories) and none of kplane's files.
bool IsEtcdMemberDir(FileSystem* fs, const std::string& dir) {
  return fs->Exists(dir + "/snap/db") && fs->Exists(dir + "/wal") &&
         !fs->Exists(dir + "/db") && !fs->Exists(dir + "/cluster.pb");
}

// The versions etcd 3.0-3.4 write into bucket "cluster"; empty when the
// cluster never agreed on one (a restore of a fresh member's snapshot).
bool IsEtcd34OrOlder(const std::string& v) {
  if (v.empty()) return true;
  return v.size() >= 4 && v.compare(0, 2, "3.") == 0 && v[2] >= '0' &&
         v[2] <= '4' && v[3] == '.';
}

// Builds kplane's member directory `out` from etcd's member directory `src`.
Status BuildFromEtcd(FileSystem* fs, const std::string& src,
                     const std::string& out, const RaftLogOptions& log_options,
                     const std::string& name) {
  const std::string db_path = src + "/snap/db";
  ASSIGN_OR_RETURN(std::string db, ReadFile(fs, db_path));
  StatusOr<bolt::EtcdBackend> backend = bolt::ReadEtcdBackend(db);
  if (!backend.ok()) return backend.status().Annotate(db_path);
  db.clear();
  db.shrink_to_fit();
  if (!IsEtcd34OrOlder(backend->cluster_version)) {
    return InvalidArgumentError(
        db_path + " was written by etcd " + backend->cluster_version +
        "; kplane imports etcd 3.4's data directories (restore a snapshot "
        "with `kpctl store snapshot restore` instead)");
  }
  ASSIGN_OR_RETURN(bolt::EtcdWal wal, bolt::ReadEtcdWal(fs, src + "/wal"));
  if (wal.LastIndex() > backend->consistent_index) {
    return FailedPreconditionError(
        "the etcd WAL in " + src + "/wal holds entries up to raft index " +
        std::to_string(wal.LastIndex()) + " but " + db_path +
        " has applied only up to " + std::to_string(backend->consistent_index) +
        ": this is a live (or crashed) etcd member's directory, whose "
        "latest writes are only in the WAL. Stop etcd, take a snapshot "
        "from a running member (`etcdctl snapshot save FILE`), and start "
        "kplane on what `etcdctl snapshot restore FILE --data-dir DIR ...` "
        "or `kpctl store snapshot restore FILE --data-dir DIR ...` writes");
  }
  StatusOr<bolt::EtcdWalMembership> members = bolt::MembershipFromEtcdWal(wal);
  if (!members.ok()) {
    return members.status().Annotate(
        "import " + src +
        " (take a snapshot with `etcdctl snapshot save` "
        "and restore it instead)");
  }

  storagepb::ClusterRecord record;
  record.set_cluster_id(wal.cluster_id);
  std::string my_name;
  raftpb::ConfState cs;
  for (const etcdserverpb::Member& m : members->members) {
    storagepb::MemberRecord* r = record.add_members();
    r->set_id(m.id());
    r->set_name(m.name());
    // A member added later carries its name only in its own attributes,
    // which the log has as an ordinary request: take the backend's record
    // of the same ID if it has one.
    for (const auto& old : backend->members) {
      if (r->name().empty() && old.id() == m.id()) r->set_name(old.name());
    }
    if (m.id() == wal.node_id && r->name().empty()) r->set_name(name);
    for (const auto& u : m.peerurls()) r->add_peer_urls(u);
    for (const auto& u : m.clienturls()) r->add_client_urls(u);
    r->set_is_learner(m.islearner());
    if (m.islearner()) {
      cs.add_learners(m.id());
    } else {
      cs.add_voters(m.id());
    }
    if (m.id() == wal.node_id) my_name = r->name();
  }
  for (uint64_t id : members->removed) record.add_removed(id);
  if (my_name.empty() &&
      std::none_of(record.members().begin(), record.members().end(),
                   [&](const storagepb::MemberRecord& r) {
                     return r.id() == wal.node_id;
                   })) {
    return CorruptionError("etcd WAL in " + src + "/wal names member " +
                           IdToHex(wal.node_id) +
                           ", which is not in the membership its conf "
                           "changes build");
  }

  ASSIGN_OR_RETURN(EtcdBackendData data, FromEtcdBackend(std::move(*backend)));
  *record.mutable_auth() = std::move(data.auth);
  // kplane's log starts again at index 1, so no entry counts as applied
  // (etcd's consistent index belongs to etcd's log).
  data.history.consistent_index = 0;

  RETURN_IF_ERROR(PrivateDir(fs, out));
  RETURN_IF_ERROR(PrivateDir(fs, out + "/snap"));
  mvcc::Options mo;
  mo.dir = out + "/db";
  mo.file_system = fs;
  RETURN_IF_ERROR(mvcc::Store::CreateFromExport(mo, data.history));
  ASSIGN_OR_RETURN(auto membership,
                   Membership::Open(out + "/cluster.pb", record, fs));
  RETURN_IF_ERROR(membership->Save());
  {
    ASSIGN_OR_RETURN(auto log, RaftLog::Open(out + "/wal", log_options));
    storagepb::MemberIdentity id;
    id.set_member_id(wal.node_id);
    id.set_cluster_id(wal.cluster_id);
    id.set_name(my_name);
    RETURN_IF_ERROR(log->WriteIdentity(id));
    RETURN_IF_ERROR(log->Bootstrap(cs));
  }
  RETURN_IF_ERROR(fs->SyncDir(out));
  LOG(INFO) << "imported etcd member " << IdToHex(wal.node_id) << " ("
            << my_name << ") of cluster " << IdToHex(wal.cluster_id) << " from "
            << src << ": revision " << data.history.revision << ", "
            << data.history.versions.size() << " versions, "
            << data.history.leases.size() << " leases, "
            << record.members_size() << " members";
  return Status::Ok();
}

}  // namespace

StatusOr<EtcdBackendData> FromEtcdBackend(bolt::EtcdBackend b) {
  EtcdBackendData out;
  mvcc::Store::Export& e = out.history;
  e.consistent_index = b.consistent_index;
  e.compact_scheduled = b.scheduled_compact_revision;
  e.compact_finished = b.finished_compact_revision;
  // etcd's revision is its newest record's, or the compaction's when that
  // removed every newer one (etcd's restore takes the larger of the two).
  e.revision = b.scheduled_compact_revision;
  e.versions.reserve(b.versions.size());
  for (auto& v : b.versions) {
    e.revision = std::max(e.revision, v.main);
    mvcc::Store::ExportedVersion& x = e.versions.emplace_back();
    x.main = v.main;
    x.sub = v.sub;
    x.tombstone = v.tombstone;
    x.kv = std::move(v.kv);
    if (x.kv.mod_revision() != 0 && x.kv.mod_revision() != x.main) {
      return CorruptionError("etcd backend: key \"" + x.kv.key() +
                             "\" at revision " + std::to_string(x.main) +
                             " says mod_revision " +
                             std::to_string(x.kv.mod_revision()));
    }
  }
  for (const auto& l : b.leases) e.leases.emplace_back(l.id, l.ttl);
  // The writer stores revision + 1 (etcd's authRevision starts at 1).
  out.auth.set_revision(b.auth_revision > 0 ? b.auth_revision - 1 : 0);
  out.auth.set_enabled(b.auth_enabled);
  for (auto& u : b.auth_users) {
    // etcd hashes passwords with bcrypt, which kplane does not check: with
    // auth enabled nobody could sign in to the restored cluster.
    if (out.auth.enabled() && !u.options().no_password() &&
        u.password().rfind("pbkdf2-sha256$", 0) != 0) {
      return Status(
          StatusCode::kFailedPrecondition,
          "user \"" + u.name() +
              "\" has an etcd (bcrypt) password, which kplane cannot check, "
              "and auth is enabled: run `etcdctl auth disable`, save the "
              "snapshot again, restore it, then set the passwords with "
              "`kpctl store user passwd` and enable auth");
    }
    *out.auth.add_users() = std::move(u);
  }
  for (auto& r : b.auth_roles) *out.auth.add_roles() = std::move(r);
  return out;
}

Status ImportEtcdDataDir(FileSystem* fs, const std::string& data_dir,
                         const RaftLogOptions& log_options,
                         const std::string& name, bool* imported) {
  *imported = false;
  const std::string member = data_dir + "/member";
  const std::string aside = data_dir + "/" + kEtcdMemberAside;
  const std::string staging = data_dir + "/member.import";
  std::string src;
  if (fs->Exists(member + "/snap/db") && !fs->Exists(member + "/wal") &&
      !fs->Exists(member + "/db") && !fs->Exists(member + "/cluster.pb")) {
    // etcd's backend without its WAL (etcd's --wal-dir puts it elsewhere):
    // starting would serve an empty store beside etcd's data.
    return FailedPreconditionError(
        member + " holds etcd's backend (snap/db) but no WAL (member/wal): " +
        "if etcd ran with --wal-dir, move that directory to " + member +
        "/wal; or start kplane on what `etcdctl snapshot restore` writes");
  }
  if (IsEtcdMemberDir(fs, member)) {
    if (fs->Exists(aside)) {
      return FailedPreconditionError(
          data_dir + " holds both an etcd member directory (member/) and " +
          "one kplane imported before (" + kEtcdMemberAside +
          "/): move one of them away");
    }
    src = member;
  } else if (!fs->Exists(member) && IsEtcdMemberDir(fs, aside)) {
    src = aside;  // a crash between the two renames below
  } else {
    return Status::Ok();
  }
  LOG(INFO) << "importing etcd data directory " << src;
  RETURN_IF_ERROR(RemoveAll(fs, staging));
  Status built = BuildFromEtcd(fs, src, staging, log_options, name);
  if (!built.ok()) {
    // Refused or failed: leave the data directory as it was.
    Status rm = RemoveAll(fs, staging);
    if (!rm.ok()) LOG(WARNING) << "remove " << staging << ": " << rm;
    return built;
  }
  if (src == member) {
    RETURN_IF_ERROR(fs->Rename(member, aside));
    RETURN_IF_ERROR(fs->SyncDir(data_dir));
  }
  RETURN_IF_ERROR(fs->Rename(staging, member));
  RETURN_IF_ERROR(fs->SyncDir(data_dir));
  *imported = true;
  return Status::Ok();
}

}  // namespace kplane::storage
