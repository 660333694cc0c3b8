#include "storage/server/raft_log.h"

#include <algorithm>

#include "base/logging.h"
#include "storage/raft/util.h"

namespace kplane::storage {

StatusOr<std::unique_ptr<RaftLog>> RaftLog::Open(
    const std::string& dir, const RaftLogOptions& options) {
  std::unique_ptr<RaftLog> log(new RaftLog(options));
  // Replay collects the newest snapshot marker, the newest hard state and the
  // entries in log order, where an entry with index i replaces every entry
  // >= i seen before it (a new leader overwrote an uncommitted suffix).
  // Example: records e1 e2 e3 e2' e3' e4' leave [e1 e2' e3' e4'].
  raft::EntryVec ents;
  Status replay_error;
  bool any = false;
  auto replay = [&](const wal::Record& r) {
    any = true;
    if (!replay_error.ok()) return;
    switch (r.type) {
      case kEntry: {
        raftpb::Entry e;
        if (!e.ParseFromString(r.payload)) {
          replay_error = CorruptionError("wal: undecodable entry");
          return;
        }
        if (!ents.empty()) {
          uint64_t first = ents.front().index();
          if (e.index() <= ents.back().index()) {
            if (e.index() < first) {
              ents.clear();
            } else {
              ents.resize(e.index() - first);
            }
          } else if (e.index() != ents.back().index() + 1) {
            replay_error = CorruptionError(
                "wal: gap in entries: " + std::to_string(ents.back().index()) +
                " then " + std::to_string(e.index()));
            return;
          }
        }
        ents.push_back(std::move(e));
        break;
      }
      case kHardState:
        if (!log->hard_state_.ParseFromString(r.payload)) {
          replay_error = CorruptionError("wal: undecodable hard state");
        }
        break;
      case kSnapshot:
      case kInstalledSnapshot: {
        raftpb::SnapshotMetadata m;
        if (!m.ParseFromString(r.payload)) {
          replay_error = CorruptionError("wal: undecodable snapshot marker");
          return;
        }
        if (m.index() < log->snapshot_.index()) break;
        log->snapshot_ = m;
        if (r.type == kInstalledSnapshot) {
          ents.clear();  // as MemoryStorage::ApplySnapshot does live
        } else {
          // A local snapshot: entries at or below it are covered. One
          // erase of the covered prefix: erasing entry by entry made a
          // restart quadratic in the log (100,000 entries: 85 s).
          auto covered = std::find_if(
              ents.begin(), ents.end(),
              [&m](const raftpb::Entry& e) { return e.index() > m.index(); });
          ents.erase(ents.begin(), covered);
        }
        break;
      }
      case kIdentity: {
        storagepb::MemberIdentity id;
        if (!id.ParseFromString(r.payload)) {
          replay_error = CorruptionError("wal: undecodable identity");
          return;
        }
        log->identity_ = id;
        break;
      }
      default:
        replay_error = CorruptionError("wal: unknown record type " +
                                       std::to_string(r.type));
    }
  };
  ASSIGN_OR_RETURN(log->wal_, wal::Wal::Open(dir, options.wal, replay));
  RETURN_IF_ERROR(replay_error);
  log->empty_ = !any;

  if (log->snapshot_.index() > 0) {
    raftpb::Snapshot snap;
    *snap.mutable_metadata() = log->snapshot_;
    RETURN_IF_ERROR(log->memory_.ApplySnapshot(snap));
  }
  // Entries at or below the snapshot are covered by it.
  size_t skip = 0;
  while (skip < ents.size() && ents[skip].index() <= log->snapshot_.index()) {
    ++skip;
  }
  if (skip < ents.size()) {
    // Without a snapshot the log starts at 1 (after MemoryStorage's dummy
    // entry at 0); a gap here would trip MemoryStorage::Append's CHECK.
    if (ents[skip].index() != log->snapshot_.index() + 1) {
      return CorruptionError(
          "wal: entries start at " + std::to_string(ents[skip].index()) +
          " after snapshot " + std::to_string(log->snapshot_.index()));
    }
    RETURN_IF_ERROR(
        log->memory_.Append(ents.data() + skip, ents.data() + ents.size()));
  }
  log->memory_.SetHardState(log->hard_state_);
  return log;
}

Status RaftLog::WriteIdentity(const storagepb::MemberIdentity& id) {
  RETURN_IF_ERROR(
      wal_->Append(wal::Record{kIdentity, 0, id.SerializeAsString()}));
  RETURN_IF_ERROR(wal_->Sync());
  identity_ = id;
  empty_ = false;
  return Status::Ok();
}

Status RaftLog::Bootstrap(const raftpb::ConfState& conf_state) {
  // The initial membership is a snapshot of the empty state machine at
  // index 1, term 1. Every founding member starts from the same one; a
  // member that joins later lacks index 1, so the leader must send it a
  // snapshot, and the snapshot carries the configuration it needs.
  raftpb::SnapshotMetadata m;
  m.set_index(1);
  m.set_term(1);
  *m.mutable_conf_state() = conf_state;
  raftpb::HardState hs;
  hs.set_term(1);
  hs.set_commit(1);
  RETURN_IF_ERROR(
      wal_->Append({wal::Record{kSnapshot, 1, m.SerializeAsString()},
                    wal::Record{kHardState, 0, hs.SerializeAsString()}}));
  RETURN_IF_ERROR(wal_->Sync());
  snapshot_ = m;
  hard_state_ = hs;
  raftpb::Snapshot snap;
  *snap.mutable_metadata() = m;
  RETURN_IF_ERROR(memory_.ApplySnapshot(snap));
  memory_.SetHardState(hs);
  empty_ = false;
  return Status::Ok();
}

std::vector<wal::Record> RaftLog::HeaderRecords() const {
  std::vector<wal::Record> h;
  if (identity_) h.push_back({kIdentity, 0, identity_->SerializeAsString()});
  h.push_back({kSnapshot, snapshot_.index(), snapshot_.SerializeAsString()});
  h.push_back({kHardState, 0, hard_state_.SerializeAsString()});
  return h;
}

Status RaftLog::Save(const raftpb::HardState& hs, const raft::EntryVec& entries,
                     const raftpb::Snapshot& snap, bool sync) {
  std::vector<wal::Record> recs;
  bool has_snap = snap.metadata().index() > 0;
  if (has_snap) {
    recs.push_back({kInstalledSnapshot, snap.metadata().index(),
                    snap.metadata().SerializeAsString()});
  }
  recs.reserve(recs.size() + entries.size() + 1);
  for (const raftpb::Entry& e : entries) {
    recs.push_back({kEntry, e.index(), e.SerializeAsString()});
  }
  bool hs_changed = !raft::IsEmptyHardState(hs);
  if (hs_changed) recs.push_back({kHardState, 0, hs.SerializeAsString()});
  if (!recs.empty()) RETURN_IF_ERROR(wal_->Append(recs));
  if (sync) RETURN_IF_ERROR(wal_->Sync());
  empty_ = false;

  if (has_snap) {
    snapshot_ = snap.metadata();
    raftpb::Snapshot marker;  // the data lives in the MVCC store, not here
    *marker.mutable_metadata() = snap.metadata();
    RETURN_IF_ERROR(memory_.ApplySnapshot(marker));
  }
  if (!entries.empty()) {
    RETURN_IF_ERROR(
        memory_.Append(entries.data(), entries.data() + entries.size()));
  }
  if (hs_changed) {
    hard_state_ = hs;
    memory_.SetHardState(hs);
  }
  if (wal_->NeedsCut()) {
    ASSIGN_OR_RETURN(uint64_t last, memory_.LastIndex());
    Status cut = wal_->Cut(last + 1, HeaderRecords());
    if (cut.Is(StatusCode::kNoSpace) && !wal_->failed()) {
      // What this Ready handed out is durable (Cut synced it first); the
      // log goes on in the current segment and the next Save cuts again.
      // A disk that stays full shows up as that Save's own NoSpace.
      LOG(WARNING) << "cannot start a new WAL segment: " << cut
                   << "; going on in the current one";
      return Status::Ok();
    }
    RETURN_IF_ERROR(cut);
  }
  return Status::Ok();
}

Status RaftLog::CreateSnapshot(uint64_t index,
                               const raftpb::ConfState& conf_state) {
  if (index <= snapshot_.index()) return Status::Ok();
  // The marker reaches the WAL first: after a full disk (kNoSpace, nothing
  // written) the memory is unchanged too.
  raftpb::SnapshotMetadata m;
  m.set_index(index);
  ASSIGN_OR_RETURN(uint64_t term, memory_.Term(index));
  m.set_term(term);
  *m.mutable_conf_state() = conf_state;
  RETURN_IF_ERROR(
      wal_->Append(wal::Record{kSnapshot, index, m.SerializeAsString()}));
  RETURN_IF_ERROR(wal_->Sync());
  ASSIGN_OR_RETURN(raftpb::Snapshot snap,
                   memory_.CreateSnapshot(index, &conf_state, ""));
  snapshot_ = snap.metadata();
  if (index > options_.catch_up_entries) {
    uint64_t compact_to = index - options_.catch_up_entries;
    ASSIGN_OR_RETURN(uint64_t first, memory_.FirstIndex());
    if (compact_to >= first) RETURN_IF_ERROR(memory_.Compact(compact_to));
    // Segments wholly behind the oldest entry we keep are no longer needed:
    // the snapshot marker and hard state are rewritten at each segment start.
    RETURN_IF_ERROR(wal_->ReleaseBefore(compact_to + 1));
  }
  return Status::Ok();
}

}  // namespace kplane::storage
