#include "storage/server/entry_check.h"

#include <cstdint>
#include <string>

#include "storage/raft/confchange.h"
#include "storage/raft/tracker.h"
#include "storage/raft/util.h"

namespace kplane::storage {

StatusOr<storagepb::InternalRaftRequest> DecodeRequest(std::string_view data) {
  storagepb::InternalRaftRequest req;
  if (!req.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return CorruptionError("undecodable request (" +
                           std::to_string(data.size()) + " bytes)");
  }
  if (req.request_case() == storagepb::InternalRaftRequest::REQUEST_NOT_SET) {
    return CorruptionError("a request of no known kind");
  }
  return req;
}

StatusOr<raftpb::ConfChange> DecodeConfChange(std::string_view data) {
  raftpb::ConfChange cc;
  if (!cc.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return CorruptionError("undecodable conf change");
  }
  switch (cc.type()) {
    case raftpb::ConfChangeAddNode:
    case raftpb::ConfChangeAddLearnerNode:
    case raftpb::ConfChangeRemoveNode:
      break;
    case raftpb::ConfChangeUpdateNode:
      // MemberUpdate: the context carries the member's new peer URLs.
      if (cc.context().empty()) {
        return CorruptionError("member update without a member record");
      }
      break;
    default:
      return CorruptionError("conf change of unknown type " +
                             std::to_string(cc.type()));
  }
  if (cc.node_id() == 0) return CorruptionError("conf change of node 0");
  if (!cc.context().empty()) {
    storagepb::MemberRecord m;
    if (!m.ParseFromString(cc.context()) || m.id() != cc.node_id()) {
      return CorruptionError("conf change whose member record is not node " +
                             std::to_string(cc.node_id()) + "'s");
    }
  }
  return cc;
}

Status CheckEntry(const raftpb::Entry& e, int64_t max_entry_bytes) {
  switch (e.type()) {
    case raftpb::EntryNormal:
      if (e.data().empty()) return Status::Ok();
      if (max_entry_bytes > 0 &&
          static_cast<int64_t>(e.data().size()) > max_entry_bytes) {
        return CorruptionError("entry of " + std::to_string(e.data().size()) +
                               " bytes, over the limit of " +
                               std::to_string(max_entry_bytes));
      }
      return DecodeRequest(e.data()).status();
    case raftpb::EntryConfChange:
      return DecodeConfChange(e.data()).status();
    default:
      return CorruptionError("entry type " + std::to_string(e.type()) +
                             " is never proposed here");
  }
}

Status CheckPeerMessage(const raftpb::Message& m, uint64_t self,
                        int64_t max_entry_bytes) {
  if (raft::IsLocalMessage(m.type())) {
    return CorruptionError("a peer sent a local message (" +
                           raftpb::MessageType_Name(m.type()) + ")");
  }
  if (m.to() != self) {
    return CorruptionError("message addressed to another member");
  }
  if (m.type() == raftpb::MsgSnap) {
    // A snapshot arrives with its files, over /raft/snapshot, and is
    // stepped once they are in place (ReceiveSnapshot); one on the message
    // stream has no database behind it.
    return CorruptionError("a snapshot without its files");
  }
  // Forwarded proposals and read requests carry no term (the leader takes
  // them as its own); every other message carries its sender's.
  const bool forwarded =
      m.type() == raftpb::MsgProp || m.type() == raftpb::MsgReadIndex;
  if (forwarded && m.term() != 0) {
    return CorruptionError("a forwarded " + raftpb::MessageType_Name(m.type()) +
                           " with a term");
  }
  if (!forwarded && m.term() == 0) {
    return CorruptionError("a " + raftpb::MessageType_Name(m.type()) +
                           " without a term");
  }
  if (m.type() == raftpb::MsgProp && m.entries_size() == 0) {
    return CorruptionError("proposal without entries");
  }
  if (m.type() == raftpb::MsgReadIndex && m.entries_size() != 1) {
    return CorruptionError("read index request without its one context entry");
  }
  if (m.type() == raftpb::MsgApp) {
    // The entries follow `index` one by one, in terms that never go down,
    // from `logTerm` to at most the message's term: what a leader sends.
    if (m.index() > UINT64_MAX - static_cast<uint64_t>(m.entries_size())) {
      return CorruptionError("appended entries past the largest index");
    }
    uint64_t prev_term = m.logterm();
    for (int i = 0; i < m.entries_size(); ++i) {
      const raftpb::Entry& e = m.entries(i);
      if (e.index() != m.index() + 1 + static_cast<uint64_t>(i)) {
        return CorruptionError("appended entry " + std::to_string(e.index()) +
                               " where " + std::to_string(m.index() + 1 + i) +
                               " belongs");
      }
      if (e.term() < prev_term || e.term() > m.term()) {
        return CorruptionError("appended entry " + std::to_string(e.index()) +
                               " of term " + std::to_string(e.term()) +
                               " out of order");
      }
      prev_term = e.term();
    }
  }
  if (m.type() == raftpb::MsgProp || m.type() == raftpb::MsgApp) {
    // The size limit is the leader's to apply to proposals; entries it
    // appended passed its own (members may run with different limits).
    const int64_t limit = m.type() == raftpb::MsgProp ? max_entry_bytes : 0;
    for (const raftpb::Entry& e : m.entries()) {
      Status s = CheckEntry(e, limit);
      if (!s.ok()) {
        return s.Annotate(std::string(m.type() == raftpb::MsgProp
                                          ? "proposed entry"
                                          : "appended entry") +
                          " " + std::to_string(e.index()));
      }
    }
  }
  return Status::Ok();
}

Status CheckPeerSnapshot(const raftpb::Message& m, uint64_t self) {
  if (m.type() != raftpb::MsgSnap) {
    return CorruptionError("not a snapshot message");
  }
  if (m.to() != self) {
    return CorruptionError("message addressed to another member");
  }
  if (m.term() == 0) return CorruptionError("a MsgSnap without a term");
  const raftpb::SnapshotMetadata& meta = m.snapshot().metadata();
  if (meta.index() == 0 || meta.term() == 0 || meta.term() > m.term()) {
    return CorruptionError("a snapshot at index " +
                           std::to_string(meta.index()) + " of term " +
                           std::to_string(meta.term()) +
                           " in a message of term " + std::to_string(m.term()));
  }
  // What Raft::Restore does with it, on an empty tracker: it CHECKs that
  // this succeeds and gives back the same configuration.
  raft::ProgressTracker scratch(1, 0);
  StatusOr<raft::ConfigAndProgress> cp =
      raft::RestoreConfig(scratch, meta.index(), meta.conf_state());
  if (!cp.ok()) {
    return CorruptionError("a snapshot whose membership cannot be restored: " +
                           std::string(cp.status().message()));
  }
  raft::ProgressTracker restored(1, 0);
  restored.config = cp->config;
  restored.progress = cp->progress;
  if (!raft::ConfStatesEquivalent(restored.ConfState(), meta.conf_state())) {
    return CorruptionError("a snapshot whose membership names a member twice");
  }
  return Status::Ok();
}

}  // namespace kplane::storage
