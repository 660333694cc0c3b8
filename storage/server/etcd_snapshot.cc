#include "storage/server/etcd_snapshot.h"

#include <utility>

#include "storage/bolt/etcd_backend.h"

namespace kplane::storage {

StatusOr<std::string> EtcdSnapshotDb(StoreServer* server) {
  bolt::EtcdBackend b;
  {
    StoreRef store = server->mvcc();
    if (!store) return UnavailableError("etcdserver: no store");
    ASSIGN_OR_RETURN(mvcc::Store::Export e, store->ExportAll());
    b.consistent_index = e.consistent_index;
    b.scheduled_compact_revision = e.compact_scheduled;
    b.finished_compact_revision = e.compact_finished;
    b.versions.reserve(e.versions.size());
    for (auto& v : e.versions) {
      b.versions.push_back({v.main, v.sub, v.tombstone, std::move(v.kv)});
    }
    for (const auto& [id, ttl] : e.leases) b.leases.push_back({id, ttl});
  }
  storagepb::ClusterRecord record = server->membership()->Record();
  for (const auto& m : record.members()) {
    etcdserverpb::Member& out = b.members.emplace_back();
    out.set_id(m.id());
    out.set_name(m.name());
    *out.mutable_peerurls() = m.peer_urls();
    *out.mutable_clienturls() = m.client_urls();
    out.set_islearner(m.is_learner());
  }
  b.removed_members.assign(record.removed().begin(), record.removed().end());
  b.alarms = server->Alarms();
  // etcd's auth buckets, from the same record (cluster.pb) the member
  // persists.
  const storagepb::AuthRecord& auth = record.auth();
  b.auth_revision = auth.revision() + 1;  // etcd's starts at 1
  b.auth_enabled_key = auth.enabled() || auth.revision() > 0;
  b.auth_enabled = auth.enabled();
  b.auth_users.assign(auth.users().begin(), auth.users().end());
  b.auth_roles.assign(auth.roles().begin(), auth.roles().end());
  return bolt::WriteEtcdBackend(std::move(b));
}

}  // namespace kplane::storage
