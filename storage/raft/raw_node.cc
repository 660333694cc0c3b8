#include "storage/raft/raw_node.h"

#include "base/logging.h"

namespace kplane::raft {

StatusOr<std::unique_ptr<RawNode>> RawNode::Create(const Config& config,
                                                   Storage* storage) {
  RETURN_IF_ERROR(config.Validate());
  if (storage == nullptr) return InvalidArgumentError("raft: storage is null");
  auto st = storage->InitialState();
  if (!st.ok()) return st.status();
  return std::unique_ptr<RawNode>(
      new RawNode(std::make_unique<Raft>(config, storage)));
}

StatusOr<std::unique_ptr<RawNode>> RawNode::Restart(const Config& config,
                                                    Storage* storage) {
  if (storage == nullptr) return InvalidArgumentError("raft: storage is null");
  auto st = storage->InitialState();
  if (!st.ok()) return st.status();
  auto last = storage->LastIndex();
  if (!last.ok()) return last.status();
  if (IsEmptyHardState(st->hard_state) && *last == 0) {
    return FailedPreconditionError("raft: restart from an empty storage");
  }
  return Create(config, storage);
}

RawNode::RawNode(std::unique_ptr<Raft> r) : raft_(std::move(r)) {
  prev_soft_state_ = raft_->GetSoftState();
  prev_hard_state_ = raft_->GetHardState();
}

void RawNode::Tick() { raft_->Tick(); }

Status RawNode::Campaign() {
  raftpb::Message m;
  m.set_type(raftpb::MsgHup);
  return raft_->Step(std::move(m));
}

Status RawNode::Propose(std::string data) {
  raftpb::Message m;
  m.set_type(raftpb::MsgProp);
  m.set_from(raft_->id);
  m.add_entries()->set_data(std::move(data));
  return raft_->Step(std::move(m));
}

Status RawNode::ProposeConfChange(const raftpb::ConfChange& cc) {
  raftpb::Message m;
  m.set_type(raftpb::MsgProp);
  m.set_from(raft_->id);
  auto* e = m.add_entries();
  e->set_type(raftpb::EntryConfChange);
  e->set_data(cc.SerializeAsString());
  return raft_->Step(std::move(m));
}

Status RawNode::ProposeConfChange(const raftpb::ConfChangeV2& cc) {
  raftpb::Message m;
  m.set_type(raftpb::MsgProp);
  m.set_from(raft_->id);
  auto* e = m.add_entries();
  e->set_type(raftpb::EntryConfChangeV2);
  e->set_data(cc.SerializeAsString());
  return raft_->Step(std::move(m));
}

raftpb::ConfState RawNode::ApplyConfChange(const raftpb::ConfChange& cc) {
  return raft_->ApplyConfChange(ConfChangeAsV2(cc));
}

raftpb::ConfState RawNode::ApplyConfChange(const raftpb::ConfChangeV2& cc) {
  return raft_->ApplyConfChange(cc);
}

Status RawNode::Step(raftpb::Message m) {
  if (IsLocalMessage(m.type())) {
    return InvalidArgumentError("raft: cannot step raft local message " +
                                raftpb::MessageType_Name(m.type()));
  }
  if (IsResponseMessage(m.type()) && !raft_->prs.progress.count(m.from())) {
    return NotFoundError("raft: cannot step as peer not found");
  }
  return raft_->Step(std::move(m));
}

bool RawNode::HasReady() const {
  const Raft& r = *raft_;
  if (ready_outstanding_) return false;
  if (r.GetSoftState() != prev_soft_state_) return true;
  raftpb::HardState hs = r.GetHardState();
  if (!IsEmptyHardState(hs) && !HardStateEqual(hs, prev_hard_state_)) {
    return true;
  }
  if (r.raft_log.HasPendingSnapshot()) return true;
  if (!r.msgs.empty() || !r.raft_log.UnstableEntries().empty() ||
      r.raft_log.HasNextCommittedEntries()) {
    return true;
  }
  return !r.read_states.empty();
}

Ready RawNode::GetReady() {
  CHECK(!ready_outstanding_) << "GetReady() called before Advance()";
  Raft& r = *raft_;
  Ready rd;
  rd.entries = r.raft_log.UnstableEntries();
  rd.committed_entries = r.raft_log.NextCommittedEntries();
  rd.messages.swap(r.msgs);
  SoftState ss = r.GetSoftState();
  if (ss != prev_soft_state_) {
    rd.soft_state = ss;
    prev_soft_state_ = ss;
  }
  raftpb::HardState hs = r.GetHardState();
  if (!HardStateEqual(hs, prev_hard_state_)) rd.hard_state = hs;
  if (const raftpb::Snapshot* s = r.raft_log.PendingSnapshot()) {
    rd.snapshot = *s;
  }
  rd.read_states.swap(r.read_states);
  // Term and vote must be durable before we answer anyone (§5 "persistent
  // state"), and so must new entries; a commit index alone need not be.
  // A snapshot too: the MsgAppResp acking it is in rd.messages.
  rd.must_sync = !rd.entries.empty() || !IsEmptySnapshot(rd.snapshot) ||
                 hs.vote() != prev_hard_state_.vote() ||
                 hs.term() != prev_hard_state_.term();

  ready_outstanding_ = true;
  ready_hard_state_ = hs;
  ready_last_entry_index_ = 0;
  ready_last_entry_term_ = 0;
  if (!rd.entries.empty()) {
    ready_last_entry_index_ = rd.entries.back().index();
    ready_last_entry_term_ = rd.entries.back().term();
  }
  ready_snapshot_index_ = rd.snapshot.metadata().index();
  ready_applied_bytes_ = PayloadsSize(rd.committed_entries);
  if (!rd.committed_entries.empty()) {
    ready_applied_to_ = rd.committed_entries.back().index();
  } else {
    ready_applied_to_ = ready_snapshot_index_;
  }
  return rd;
}

void RawNode::Advance() {
  CHECK(ready_outstanding_) << "Advance() without GetReady()";
  ready_outstanding_ = false;
  Raft& r = *raft_;
  prev_hard_state_ = ready_hard_state_;
  if (ready_last_entry_index_ != 0) {
    r.raft_log.StableTo(ready_last_entry_index_, ready_last_entry_term_);
  }
  if (ready_snapshot_index_ != 0) {
    r.raft_log.StableSnapTo(ready_snapshot_index_);
  }
  r.AdvanceApplied(ready_applied_to_, ready_applied_bytes_);
}

void RawNode::ReadIndex(std::string ctx) {
  raftpb::Message m;
  m.set_type(raftpb::MsgReadIndex);
  m.add_entries()->set_data(std::move(ctx));
  (void)raft_->Step(std::move(m));
}

void RawNode::TransferLeader(uint64_t transferee) {
  raftpb::Message m;
  m.set_type(raftpb::MsgTransferLeader);
  m.set_from(transferee);
  (void)raft_->Step(std::move(m));
}

void RawNode::ReportUnreachable(uint64_t id) {
  raftpb::Message m;
  m.set_type(raftpb::MsgUnreachable);
  m.set_from(id);
  (void)raft_->Step(std::move(m));
}

void RawNode::ReportSnapshot(uint64_t id, SnapshotStatus status) {
  raftpb::Message m;
  m.set_type(raftpb::MsgSnapStatus);
  m.set_from(id);
  m.set_reject(status == SnapshotStatus::kFailure);
  (void)raft_->Step(std::move(m));
}

BasicStatus RawNode::GetBasicStatus() const {
  BasicStatus s;
  s.id = raft_->id;
  s.hard_state = raft_->GetHardState();
  s.soft_state = raft_->GetSoftState();
  s.applied = raft_->raft_log.applied();
  s.lead_transferee = raft_->lead_transferee;
  return s;
}

FullStatus RawNode::GetStatus() const {
  FullStatus s;
  s.basic = GetBasicStatus();
  s.config = raft_->prs.config.DebugString();
  if (raft_->state == StateType::kLeader) {
    for (const auto& [id, pr] : raft_->prs.progress) {
      s.progress[id] = pr.DebugString();
    }
  }
  return s;
}

}  // namespace kplane::raft
