#include "storage/raft/raft.h"

#include <algorithm>

#include "base/logging.h"

namespace kplane::raft {

namespace {

constexpr char kCampaignTransfer[] = "CampaignTransfer";
// Marks the pre-vote of a node that is not in its own configuration.
constexpr char kCampaignRemoved[] = "CampaignRemoved";
constexpr char kDroppedPrefix[] = "raft proposal dropped";

// Moves a message's entries into a contiguous vector (protobuf moves are
// pointer swaps, so no payload is copied).
EntryVec TakeEntries(raftpb::Message& m) {
  EntryVec out(static_cast<size_t>(m.entries_size()));
  for (int i = 0; i < m.entries_size(); ++i) {
    out[i] = std::move(*m.mutable_entries(i));
  }
  return out;
}

uint64_t MixSeed(uint64_t seed, uint64_t id) {
  // Distinct nodes draw distinct timeout sequences from one seed.
  Prng p(seed ^ (id * 0x9e3779b97f4a7c15ULL));
  return p.Next();
}

}  // namespace

const char* StateTypeName(StateType s) {
  switch (s) {
    case StateType::kFollower:
      return "StateFollower";
    case StateType::kCandidate:
      return "StateCandidate";
    case StateType::kLeader:
      return "StateLeader";
    case StateType::kPreCandidate:
      return "StatePreCandidate";
  }
  return "?";
}

Status ProposalDroppedError(const std::string& why) {
  return Status(StatusCode::kUnavailable,
                std::string(kDroppedPrefix) + ": " + why);
}

bool IsProposalDropped(const Status& s) {
  return s.Is(StatusCode::kUnavailable) &&
         s.message().rfind(kDroppedPrefix, 0) == 0;
}

Raft::Raft(const Config& c, Storage* storage)
    : id(c.id),
      raft_log(storage, c.max_committed_size_per_ready != 0
                            ? c.max_committed_size_per_ready
                            : c.max_size_per_msg),
      max_msg_size(c.max_size_per_msg),
      max_uncommitted_size(c.max_uncommitted_entries_size != 0
                               ? c.max_uncommitted_entries_size
                               : kNoLimit),
      prs(static_cast<size_t>(c.max_inflight_msgs), c.max_inflight_bytes),
      read_only(c.read_only_option),
      check_quorum(c.check_quorum),
      pre_vote(c.pre_vote),
      heartbeat_timeout(c.heartbeat_tick),
      election_timeout(c.election_tick),
      disable_proposal_forwarding(c.disable_proposal_forwarding),
      step_down_on_removal(c.step_down_on_removal),
      prng_(MixSeed(c.random_seed, c.id)) {
  CHECK_OK(c.Validate());
  auto st = storage->InitialState();
  CHECK(st.ok()) << "storage InitialState: " << st.status().ToString();
  auto cp = RestoreConfig(prs, raft_log.LastIndex(), st->conf_state);
  CHECK(cp.ok()) << "restoring config " << DescribeConfState(st->conf_state)
                 << ": " << cp.status().ToString();
  raftpb::ConfState cs = SwitchToConfig(std::move(cp).value());
  CHECK(ConfStatesEquivalent(cs, st->conf_state))
      << "restored " << DescribeConfState(cs) << " != stored "
      << DescribeConfState(st->conf_state);
  if (!IsEmptyHardState(st->hard_state)) LoadState(st->hard_state);
  if (c.applied > 0) {
    // The state machine may have applied entries whose commit index was not
    // yet synced when the node stopped (commit-only hard state updates are
    // not fsynced). They were committed cluster-wide, so catching the local
    // commit index up is safe.
    CHECK_LE(c.applied, raft_log.LastIndex())
        << "applied index beyond the persisted log";
    raft_log.CommitTo(c.applied);
    raft_log.AppliedTo(c.applied);
  }
  BecomeFollower(term, kNone);
  LOG(DEBUG) << "newRaft " << id << " [peers: " << prs.config.DebugString()
             << ", term: " << term << ", commit: " << raft_log.committed()
             << ", applied: " << raft_log.applied()
             << ", lastindex: " << raft_log.LastIndex()
             << ", lastterm: " << raft_log.LastTerm() << "]";
}

raftpb::HardState Raft::GetHardState() const {
  raftpb::HardState hs;
  hs.set_term(term);
  hs.set_vote(vote);
  hs.set_commit(raft_log.committed());
  return hs;
}

bool Raft::Promotable() const {
  auto it = prs.progress.find(id);
  return it != prs.progress.end() && !it->second.is_learner &&
         !raft_log.HasPendingSnapshot();
}

void Raft::LoadState(const raftpb::HardState& hs) {
  CHECK(hs.commit() >= raft_log.committed() &&
        hs.commit() <= raft_log.LastIndex())
      << id << " state.commit " << hs.commit() << " is out of range ["
      << raft_log.committed() << ", " << raft_log.LastIndex() << "]";
  raft_log.CommitTo(hs.commit());
  term = hs.term();
  vote = hs.vote();
}

// ---- sending ----

void Raft::Send(raftpb::Message m) {
  if (m.from() == kNone) m.set_from(id);
  auto t = m.type();
  if (t == raftpb::MsgVote || t == raftpb::MsgVoteResp ||
      t == raftpb::MsgPreVote || t == raftpb::MsgPreVoteResp) {
    // Votes carry the term they are for, which is not always ours (pre-vote
    // asks for term+1; responses echo the request's term).
    CHECK_NE(m.term(), 0u) << "term should be set when sending "
                           << raftpb::MessageType_Name(t);
  } else {
    CHECK_EQ(m.term(), 0u) << "term should not be set when sending "
                           << raftpb::MessageType_Name(t);
    // Proposals and read requests forwarded to the leader act as local
    // messages there and carry no term.
    if (t != raftpb::MsgProp && t != raftpb::MsgReadIndex) m.set_term(term);
  }
  msgs.push_back(std::move(m));
}

bool Raft::MaybeSendAppend(uint64_t to, bool send_if_empty) {
  Progress& pr = prs.progress.at(to);
  if (pr.IsPaused()) return false;
  uint64_t prev_index = pr.next - 1;
  auto prev_term = raft_log.Term(prev_index);
  StatusOr<EntryVec> ents = EntryVec{};
  // With a full window in replicate state, send only an empty MsgApp: if all
  // in-flight messages were lost, its answer still unblocks the pipeline.
  if (pr.state != ProgressState::kReplicate || !pr.inflights.Full()) {
    ents = raft_log.EntriesFrom(pr.next, max_msg_size);
  }
  if (ents.ok() && ents->empty() && !send_if_empty) return false;

  if (!prev_term.ok() || !ents.ok()) {
    // The entries the follower needs were compacted: send a snapshot
    // (InstallSnapshot, §7), but only to a peer that looks alive.
    if (!pr.recent_active) return false;
    auto snap = raft_log.Snapshot();
    if (!snap.ok()) {
      if (snap.status().Is(StatusCode::kUnavailable)) return false;
      LOG(FATAL) << "storage Snapshot: " << snap.status().ToString();
    }
    CHECK(!IsEmptySnapshot(*snap)) << "need non-empty snapshot";
    // A snapshot taken before `to` joined would be refused by it (a node
    // only installs a config that contains it), and resending it would loop.
    // Wait until the application has taken a newer snapshot.
    const auto& cs = snap->metadata().conf_state();
    bool member = false;
    for (uint64_t v : cs.voters()) member |= v == to;
    for (uint64_t v : cs.learners()) member |= v == to;
    for (uint64_t v : cs.voters_outgoing()) member |= v == to;
    if (!member) {
      LOG(DEBUG) << id << " not sending snapshot at "
                 << snap->metadata().index() << " to " << to
                 << ": its config predates the peer";
      return false;
    }
    uint64_t sindex = snap->metadata().index();
    LOG(DEBUG) << id << " [firstindex: " << raft_log.FirstIndex()
               << ", commit: " << raft_log.committed()
               << "] sent snapshot[index: " << sindex << "] to " << to << " ["
               << pr.DebugString() << "]";
    pr.BecomeSnapshot(sindex);
    raftpb::Message m;
    m.set_to(to);
    m.set_type(raftpb::MsgSnap);
    *m.mutable_snapshot() = std::move(snap).value();
    Send(std::move(m));
    return true;
  }

  raftpb::Message m;
  m.set_to(to);
  m.set_type(raftpb::MsgApp);
  m.set_index(prev_index);
  m.set_logterm(*prev_term);
  m.set_commit(raft_log.committed());
  uint64_t bytes = PayloadsSize(*ents);
  size_t n = ents->size();
  m.mutable_entries()->Reserve(static_cast<int>(n));
  for (auto& e : *ents) *m.add_entries() = std::move(e);
  pr.SentEntries(n, bytes);
  Send(std::move(m));
  return true;
}

void Raft::SendHeartbeat(uint64_t to, const std::string& ctx) {
  // Never tell a follower a commit index beyond what it is known to have:
  // it could not commit entries it lacks (§5.3).
  uint64_t commit = std::min(prs.progress.at(to).match, raft_log.committed());
  raftpb::Message m;
  m.set_to(to);
  m.set_type(raftpb::MsgHeartbeat);
  m.set_commit(commit);
  m.set_context(ctx);
  Send(std::move(m));
}

void Raft::BcastAppend() {
  for (auto& [pid, pr] : prs.progress) {
    if (pid == id) continue;
    SendAppend(pid);
  }
}

void Raft::BcastHeartbeat() {
  BcastHeartbeatWithCtx(read_only.LastPendingRequestCtx());
}

void Raft::BcastHeartbeatWithCtx(const std::string& ctx) {
  for (auto& [pid, pr] : prs.progress) {
    if (pid == id) continue;
    SendHeartbeat(pid, ctx);
  }
}

void Raft::SendTimeoutNow(uint64_t to) {
  raftpb::Message m;
  m.set_to(to);
  m.set_type(raftpb::MsgTimeoutNow);
  Send(std::move(m));
}

bool Raft::MaybeCommit() { return raft_log.MaybeCommit(prs.Committed(), term); }

// ---- roles ----

void Raft::Reset(uint64_t t) {
  if (term != t) {
    term = t;
    vote = kNone;
  }
  lead = kNone;
  election_elapsed = 0;
  heartbeat_elapsed = 0;
  ResetRandomizedElectionTimeout();
  AbortLeaderTransfer();
  prs.ResetVotes();
  uint64_t last = raft_log.LastIndex();
  for (auto& [pid, pr] : prs.progress) {
    bool learner = pr.is_learner;
    pr = Progress(prs.max_inflight, prs.max_inflight_bytes);
    pr.next = last + 1;
    pr.is_learner = learner;
    if (pid == id) pr.match = last;
  }
  pending_conf_index = 0;
  uncommitted_size = 0;
  read_only = ReadOnly(read_only.option());
  pending_read_index_messages.clear();
}

void Raft::ResetRandomizedElectionTimeout() {
  // Randomized timeouts make split votes rare (§5.2).
  randomized_election_timeout_ =
      election_timeout + static_cast<int>(prng_.Uniform(election_timeout));
}

bool Raft::IncreaseUncommittedSize(const raftpb::Entry* first,
                                   const raftpb::Entry* last) {
  uint64_t s = 0;
  for (const raftpb::Entry* e = first; e != last; ++e) s += PayloadSize(*e);
  // Always accept something when nothing is outstanding, so a single
  // oversized proposal cannot wedge the leader.
  if (uncommitted_size > 0 && s > 0 &&
      uncommitted_size + s > max_uncommitted_size) {
    return false;
  }
  uncommitted_size += s;
  return true;
}

bool Raft::AppendEntries(raftpb::Entry* first, raftpb::Entry* last) {
  uint64_t li = raft_log.LastIndex();
  uint64_t i = 0;
  for (raftpb::Entry* e = first; e != last; ++e, ++i) {
    e->set_term(term);
    e->set_index(li + 1 + i);
  }
  if (!IncreaseUncommittedSize(first, last)) return false;
  li = raft_log.Append(first, last);
  // The leader counts its own (not yet durable) append towards the quorum.
  // This is safe: the commit it may produce only leaves this node in a later
  // Ready, which the caller obtains after persisting this one.
  auto self = prs.progress.find(id);
  if (self != prs.progress.end()) self->second.MaybeUpdate(li);
  MaybeCommit();
  return true;
}

void Raft::BecomeFollower(uint64_t t, uint64_t l) {
  Reset(t);
  lead = l;
  state = StateType::kFollower;
  LOG(DEBUG) << id << " became follower at term " << term;
}

void Raft::BecomeCandidate() {
  CHECK(state != StateType::kLeader)
      << "invalid transition [leader -> candidate]";
  Reset(term + 1);
  vote = id;
  state = StateType::kCandidate;
  LOG(DEBUG) << id << " became candidate at term " << term;
}

void Raft::BecomePreCandidate() {
  CHECK(state != StateType::kLeader)
      << "invalid transition [leader -> pre-candidate]";
  // Pre-vote changes neither term nor vote (thesis §9.6).
  prs.ResetVotes();
  lead = kNone;
  state = StateType::kPreCandidate;
  LOG(DEBUG) << id << " became pre-candidate at term " << term;
}

void Raft::BecomeLeader() {
  CHECK(state != StateType::kFollower)
      << "invalid transition [follower -> leader]";
  Reset(term);
  lead = id;
  state = StateType::kLeader;
  // A leader may be outside its own config (it won as a removed node, or was
  // removed while leading); then it has no progress of its own.
  auto self = prs.progress.find(id);
  if (self != prs.progress.end()) {
    self->second.BecomeReplicate();
    self->second.recent_active = true;
  }
  // There may be an unapplied conf change anywhere in the log; refusing new
  // ones until everything up to here is applied is conservative and cheap.
  pending_conf_index = raft_log.LastIndex();
  // An empty entry of the new term: committing it commits every earlier
  // entry (§5.4.2) and lets ReadIndex proceed (thesis §6.4).
  raftpb::Entry empty;
  CHECK(AppendEntries(&empty, &empty + 1)) << "empty entry was dropped";
  LOG(DEBUG) << id << " became leader at term " << term;
}

// ---- elections ----

bool Raft::RemovedButMayCampaign() const {
  return !prs.progress.count(id) && !prs.config.voters.incoming.empty() &&
         !raft_log.HasPendingSnapshot();
}

void Raft::Hup(CampaignType t) {
  if (state == StateType::kLeader) return;
  if (!Promotable() && RemovedButMayCampaign() &&
      t != CampaignType::kTransfer) {
    // Removed from our (applied) config, but the others may not have applied
    // that removal yet: members still in a joint config can need our vote,
    // which our longer log would deny them, and only we could bring them the
    // commit. So we may campaign, always with a pre-vote that voters grant
    // only if our log is strictly ahead of theirs; once everyone caught up,
    // a removed node can no longer disturb the cluster (etcd-io/etcd#12359).
    if (!HasUnappliedConfChanges()) Campaign(CampaignType::kPreElection);
    return;
  }
  if (!Promotable()) {
    LOG(DEBUG) << id << " is unpromotable and can not campaign";
    return;
  }
  if (HasUnappliedConfChanges()) {
    LOG(DEBUG) << id << " cannot campaign at term " << term
               << " since there are still pending configuration changes to "
                  "apply";
    return;
  }
  Campaign(t);
}

bool Raft::HasUnappliedConfChanges() const {
  if (raft_log.applied() >= raft_log.committed()) return false;
  uint64_t lo = raft_log.applied() + 1;
  uint64_t hi = raft_log.committed() + 1;
  while (lo < hi) {
    auto ents = raft_log.Slice(lo, hi, raft_log.max_applying_size());
    CHECK(ents.ok()) << "error scanning unapplied entries: "
                     << ents.status().ToString();
    for (const auto& e : *ents) {
      if (e.type() == raftpb::EntryConfChange ||
          e.type() == raftpb::EntryConfChangeV2) {
        return true;
      }
    }
    lo += ents->size();
  }
  return false;
}

void Raft::Campaign(CampaignType t) {
  bool removed = !Promotable();
  if (removed && !RemovedButMayCampaign()) return;
  raftpb::MessageType vote_msg;
  uint64_t vote_term;
  if (t == CampaignType::kPreElection) {
    BecomePreCandidate();
    vote_msg = raftpb::MsgPreVote;
    // Pre-votes ask for the term we would campaign in, without taking it.
    vote_term = term + 1;
  } else {
    BecomeCandidate();
    vote_msg = raftpb::MsgVote;
    vote_term = term;
  }
  if (Poll(id, VoteResponseType(vote_msg), true) == VoteResult::kWon) {
    // Single-voter cluster: our own vote is a quorum.
    if (t == CampaignType::kPreElection) {
      Campaign(CampaignType::kElection);
    } else {
      BecomeLeader();
    }
    return;
  }
  for (uint64_t voter : prs.VoterNodes()) {
    if (voter == id) continue;
    raftpb::Message m;
    m.set_term(vote_term);
    m.set_to(voter);
    m.set_type(vote_msg);
    m.set_index(raft_log.LastIndex());
    m.set_logterm(raft_log.LastTerm());
    if (t == CampaignType::kTransfer) m.set_context(kCampaignTransfer);
    if (removed && t == CampaignType::kPreElection) {
      m.set_context(kCampaignRemoved);
    }
    Send(std::move(m));
  }
}

VoteResult Raft::Poll(uint64_t from, raftpb::MessageType t, bool granted) {
  LOG(DEBUG) << id << " received " << raftpb::MessageType_Name(t)
             << (granted ? "" : " rejection") << " from " << from << " at term "
             << term;
  prs.RecordVote(from, granted);
  int g = 0, r = 0;
  return prs.TallyVotes(&g, &r);
}

// ---- ticks ----

void Raft::Tick() {
  if (state == StateType::kLeader) {
    TickHeartbeat();
  } else {
    TickElection();
  }
}

void Raft::TickElection() {
  ++election_elapsed;
  if ((Promotable() || RemovedButMayCampaign()) && PastElectionTimeout()) {
    election_elapsed = 0;
    raftpb::Message m;
    m.set_from(id);
    m.set_type(raftpb::MsgHup);
    (void)Step(std::move(m));
  }
}

void Raft::TickHeartbeat() {
  ++heartbeat_elapsed;
  ++election_elapsed;
  if (election_elapsed >= election_timeout) {
    election_elapsed = 0;
    if (check_quorum) {
      raftpb::Message m;
      m.set_from(id);
      m.set_type(raftpb::MsgCheckQuorum);
      (void)Step(std::move(m));
    }
    // A transfer that did not finish within an election timeout is given up
    // (thesis §3.10) so proposals flow again.
    if (state == StateType::kLeader && lead_transferee != kNone) {
      AbortLeaderTransfer();
    }
    // A leader removed from the config keeps trying to hand over.
    if (state == StateType::kLeader && step_down_on_removal && !IsVoter(id)) {
      HandOffLeadership();
    }
  }
  if (state != StateType::kLeader) return;
  if (heartbeat_elapsed >= heartbeat_timeout) {
    heartbeat_elapsed = 0;
    raftpb::Message m;
    m.set_from(id);
    m.set_type(raftpb::MsgBeat);
    (void)Step(std::move(m));
  }
}

// ---- Step ----

Status Raft::Step(raftpb::Message m) {
  // Terms first (§5.1): a newer term makes us a follower, an older one is
  // mostly ignored.
  if (m.term() == 0) {
    // Local message.
  } else if (m.term() > term) {
    if (m.type() == raftpb::MsgVote || m.type() == raftpb::MsgPreVote) {
      bool force = m.context() == kCampaignTransfer;
      bool in_lease =
          check_quorum && lead != kNone && election_elapsed < election_timeout;
      if (!force && in_lease) {
        // We heard from a leader within the minimum election timeout: do not
        // update the term or grant the vote (thesis §4.2.3). This is what
        // stops a rejoining, partitioned node from deposing a healthy leader.
        LOG(DEBUG) << id << " [term: " << term << "] ignored "
                   << raftpb::MessageType_Name(m.type()) << " from " << m.from()
                   << " [term: " << m.term()
                   << "]: lease is not expired (remaining ticks: "
                   << election_timeout - election_elapsed << ")";
        return Status::Ok();
      }
    }
    if (m.type() == raftpb::MsgPreVote) {
      // Never change our term in response to a pre-vote.
    } else if (m.type() == raftpb::MsgPreVoteResp && !m.reject()) {
      // Granted pre-votes carry the future term we asked for; the term only
      // moves when we win and campaign for real.
    } else {
      LOG(DEBUG) << id << " [term: " << term << "] received a "
                 << raftpb::MessageType_Name(m.type())
                 << " message with higher term from " << m.from()
                 << " [term: " << m.term() << "]";
      if (m.type() == raftpb::MsgApp || m.type() == raftpb::MsgHeartbeat ||
          m.type() == raftpb::MsgSnap) {
        BecomeFollower(m.term(), m.from());
      } else {
        BecomeFollower(m.term(), kNone);
      }
    }
  } else if (m.term() < term) {
    if ((check_quorum || pre_vote) &&
        (m.type() == raftpb::MsgHeartbeat || m.type() == raftpb::MsgApp)) {
      // A leader of an older term is talking to us. With check-quorum or
      // pre-vote our term may have moved on during a partition while we
      // could not win; tell the stale leader our term so it steps down
      // instead of both sides being stuck.
      raftpb::Message resp;
      resp.set_to(m.from());
      resp.set_type(raftpb::MsgAppResp);
      Send(std::move(resp));
    } else if (m.type() == raftpb::MsgPreVote) {
      // Reject explicitly so a pre-candidate with a stale term learns ours.
      raftpb::Message resp;
      resp.set_to(m.from());
      resp.set_term(term);
      resp.set_type(raftpb::MsgPreVoteResp);
      resp.set_reject(true);
      Send(std::move(resp));
    } else {
      LOG(DEBUG) << id << " [term: " << term << "] ignored a "
                 << raftpb::MessageType_Name(m.type())
                 << " message with lower term from " << m.from()
                 << " [term: " << m.term() << "]";
    }
    return Status::Ok();
  }

  switch (m.type()) {
    case raftpb::MsgHup:
      Hup(pre_vote ? CampaignType::kPreElection : CampaignType::kElection);
      return Status::Ok();
    case raftpb::MsgVote:
    case raftpb::MsgPreVote: {
      // We can vote if this is a repeat of our vote, if we have not voted
      // and know no leader in this term, or if it is a pre-vote for a
      // future term (§5.2: at most one vote per term).
      bool can_vote = vote == m.from() || (vote == kNone && lead == kNone) ||
                      (m.type() == raftpb::MsgPreVote && m.term() > term);
      // ...and the candidate's log is at least as up-to-date (§5.4.1).
      // Learners may vote too: one may have been promoted without knowing.
      bool up_to_date = raft_log.IsUpToDate(m.index(), m.logterm());
      if (m.context() == kCampaignRemoved) {
        // A removed node must be strictly ahead (see Hup).
        up_to_date = up_to_date && !(m.index() == raft_log.LastIndex() &&
                                     m.logterm() == raft_log.LastTerm());
      }
      if (can_vote && up_to_date) {
        LOG(DEBUG) << id << " cast " << raftpb::MessageType_Name(m.type())
                   << " for " << m.from() << " at term " << term;
        raftpb::Message resp;
        resp.set_to(m.from());
        // Answer with the request's term: for a pre-vote ours may be older
        // and the pre-candidate would ignore the answer.
        resp.set_term(m.term());
        resp.set_type(VoteResponseType(m.type()));
        Send(std::move(resp));
        if (m.type() == raftpb::MsgVote) {
          election_elapsed = 0;
          vote = m.from();
        }
      } else {
        LOG(DEBUG) << id << " rejected " << raftpb::MessageType_Name(m.type())
                   << " from " << m.from() << " at term " << term;
        raftpb::Message resp;
        resp.set_to(m.from());
        resp.set_term(term);
        resp.set_type(VoteResponseType(m.type()));
        resp.set_reject(true);
        Send(std::move(resp));
        // A removed node that is ahead of a candidate is the one that must
        // lead (see Hup): campaign now rather than race the members' timers.
        if (!up_to_date && state == StateType::kFollower && !Promotable() &&
            RemovedButMayCampaign()) {
          Hup(CampaignType::kPreElection);
        }
      }
      return Status::Ok();
    }
    default:
      break;
  }
  switch (state) {
    case StateType::kLeader:
      return StepLeader(m);
    case StateType::kCandidate:
    case StateType::kPreCandidate:
      return StepCandidate(m);
    case StateType::kFollower:
      return StepFollower(m);
  }
  return Status::Ok();
}

bool Raft::CommittedEntryInCurrentTerm() const {
  return raft_log.TermOrZero(raft_log.committed()) == term;
}

raftpb::Message Raft::ResponseToReadIndexReq(const raftpb::Message& req,
                                             uint64_t read_index) {
  if (req.from() == kNone || req.from() == id) {
    read_states.push_back(ReadState{read_index, req.entries(0).data()});
    return raftpb::Message();
  }
  raftpb::Message resp;
  resp.set_type(raftpb::MsgReadIndexResp);
  resp.set_to(req.from());
  resp.set_index(read_index);
  *resp.mutable_entries() = req.entries();
  return resp;
}

void Raft::SendReadIndexResponse(const raftpb::Message& m) {
  switch (read_only.option()) {
    case ReadOnlyOption::kSafe: {
      // Confirm we are still the leader with a heartbeat round (thesis §6.4).
      const std::string& ctx = m.entries(0).data();
      read_only.AddRequest(raft_log.committed(), m);
      read_only.RecvAck(id, ctx);
      BcastHeartbeatWithCtx(ctx);
      break;
    }
    case ReadOnlyOption::kLeaseBased: {
      raftpb::Message resp = ResponseToReadIndexReq(m, raft_log.committed());
      if (resp.to() != kNone) Send(std::move(resp));
      break;
    }
  }
}

void Raft::ReleasePendingReadIndexMessages() {
  if (pending_read_index_messages.empty()) return;
  if (!CommittedEntryInCurrentTerm()) return;
  std::vector<raftpb::Message> pending;
  pending.swap(pending_read_index_messages);
  for (const auto& m : pending) SendReadIndexResponse(m);
}

Status Raft::StepLeader(raftpb::Message& m) {
  switch (m.type()) {
    case raftpb::MsgBeat:
      BcastHeartbeat();
      return Status::Ok();
    case raftpb::MsgCheckQuorum:
      if (!prs.QuorumActive()) {
        LOG(DEBUG) << id
                   << " stepped down to follower since quorum is not active";
        BecomeFollower(term, kNone);
      }
      // Everyone but us starts the next round as inactive.
      for (auto& [pid, pr] : prs.progress) {
        if (pid != id) pr.recent_active = false;
      }
      return Status::Ok();
    case raftpb::MsgProp: {
      CHECK_GT(m.entries_size(), 0) << id << " stepped empty MsgProp";
      if (!prs.progress.count(id)) {
        // Removed from the configuration while leading.
        return ProposalDroppedError("leader was removed from the config");
      }
      if (lead_transferee != kNone) {
        return ProposalDroppedError("leadership transfer in progress");
      }
      for (int i = 0; i < m.entries_size(); ++i) {
        raftpb::Entry* e = m.mutable_entries(i);
        raftpb::ConfChangeV2 cc;
        bool is_cc = false;
        if (e->type() == raftpb::EntryConfChange) {
          raftpb::ConfChange v1;
          CHECK(v1.ParseFromString(e->data())) << "bad ConfChange";
          cc = ConfChangeAsV2(v1);
          is_cc = true;
        } else if (e->type() == raftpb::EntryConfChangeV2) {
          CHECK(cc.ParseFromString(e->data())) << "bad ConfChangeV2";
          is_cc = true;
        }
        if (!is_cc) continue;
        bool already_pending = pending_conf_index > raft_log.applied();
        bool already_joint = !prs.config.voters.outgoing.empty();
        bool wants_leave_joint = cc.changes_size() == 0;
        std::string failed;
        if (already_pending) {
          failed = "possible unapplied conf change at index " +
                   std::to_string(pending_conf_index) + " (applied to " +
                   std::to_string(raft_log.applied()) + ")";
        } else if (already_joint && !wants_leave_joint) {
          failed = "must transition out of joint config first";
        } else if (!already_joint && wants_leave_joint) {
          failed = "not in joint state; refusing empty conf change";
        } else {
          // The change will apply on top of the current config (nothing else
          // is pending), so an invalid one can be refused now instead of
          // crashing every replica when it is applied.
          Changer changer(prs, raft_log.LastIndex());
          bool auto_leave = false;
          StatusOr<ConfigAndProgress> r =
              wants_leave_joint ? changer.LeaveJoint()
              : ConfChangeEntersJoint(cc, &auto_leave)
                  ? changer.EnterJoint(
                        auto_leave, {cc.changes().begin(), cc.changes().end()})
                  : changer.Simple({cc.changes().begin(), cc.changes().end()});
          if (!r.ok()) failed = r.status().message();
        }
        if (!failed.empty()) {
          LOG(INFO) << id << " ignoring conf change " << DescribeConfChange(cc)
                    << " at config " << prs.config.DebugString() << ": "
                    << failed;
          // Keep the entry's slot (the batch stays contiguous) as a no-op.
          *e = raftpb::Entry();
        } else {
          pending_conf_index = raft_log.LastIndex() + i + 1;
        }
      }
      EntryVec ents = TakeEntries(m);
      if (!AppendEntries(ents.data(), ents.data() + ents.size())) {
        return ProposalDroppedError("too many uncommitted entries");
      }
      BcastAppend();
      return Status::Ok();
    }
    case raftpb::MsgReadIndex:
      if (prs.IsSingleton()) {
        // Only us: the commit index is trivially confirmed.
        raftpb::Message resp = ResponseToReadIndexReq(m, raft_log.committed());
        if (resp.to() != kNone) Send(std::move(resp));
        return Status::Ok();
      }
      // Until this leader has committed an entry of its own term it does
      // not know the latest commit index (thesis §6.4): postpone.
      if (!CommittedEntryInCurrentTerm()) {
        pending_read_index_messages.push_back(m);
        return Status::Ok();
      }
      SendReadIndexResponse(m);
      return Status::Ok();
    default:
      break;
  }

  // Everything else needs the sender's progress.
  auto it = prs.progress.find(m.from());
  if (it == prs.progress.end()) {
    LOG(DEBUG) << id << " no progress available for " << m.from();
    return Status::Ok();
  }
  Progress& pr = it->second;
  switch (m.type()) {
    case raftpb::MsgAppResp: {
      pr.recent_active = true;
      if (m.reject()) {
        LOG(DEBUG) << id << " received MsgAppResp(rejected, hint: (index "
                   << m.rejecthint() << ", term " << m.logterm() << ")) from "
                   << m.from() << " for index " << m.index();
        // The follower's log matches ours at most up to rejecthint; its term
        // there lets us skip its whole divergent tail (§5.3's optimization):
        // find our last index whose term is <= the follower's.
        uint64_t next_probe = m.rejecthint();
        if (m.logterm() > 0) {
          next_probe =
              raft_log.FindConflictByTerm(m.rejecthint(), m.logterm()).first;
        }
        if (pr.MaybeDecrTo(m.index(), next_probe)) {
          if (pr.state == ProgressState::kReplicate) pr.BecomeProbe();
          SendAppend(m.from());
        }
      } else {
        bool old_paused = pr.IsPaused();
        // Update on a higher match, or move a probing peer that answered
        // at its match back to replicate.
        if (pr.MaybeUpdate(m.index()) ||
            (pr.match == m.index() && pr.state == ProgressState::kProbe)) {
          if (pr.state == ProgressState::kProbe) {
            pr.BecomeReplicate();
          } else if (pr.state == ProgressState::kSnapshot &&
                     pr.match + 1 >= raft_log.FirstIndex()) {
            // The follower caught up (from the snapshot or otherwise) far
            // enough to continue from the log.
            pr.BecomeProbe();
            pr.BecomeReplicate();
          } else if (pr.state == ProgressState::kReplicate) {
            pr.inflights.FreeLE(m.index());
          }
          if (MaybeCommit()) {
            ReleasePendingReadIndexMessages();
            BcastAppend();
          } else if (old_paused) {
            // The follower may lack the latest commit index.
            SendAppend(m.from());
          }
          // Flow control may allow more in-flight messages now: send as
          // many as we can (without empty ones).
          if (m.from() != id) {
            while (MaybeSendAppend(m.from(), false)) {
            }
          }
          if (m.from() == lead_transferee && pr.match == raft_log.LastIndex()) {
            LOG(DEBUG) << id << " sent MsgTimeoutNow to " << m.from()
                       << " after received MsgAppResp";
            SendTimeoutNow(m.from());
            // A removed leader's hand-off is done: the transferee has our
            // whole log, so we would grant it our vote.
            if (step_down_on_removal && !IsVoter(id)) {
              BecomeFollower(term, kNone);
            }
          }
        }
      }
      return Status::Ok();
    }
    case raftpb::MsgHeartbeatResp: {
      pr.recent_active = true;
      pr.msg_app_flow_paused = false;
      // A behind or probing follower gets an append (possibly empty): this
      // recovers a pipeline whose messages were all lost.
      if (pr.match < raft_log.LastIndex() ||
          pr.state == ProgressState::kProbe) {
        SendAppend(m.from());
      }
      if (read_only.option() != ReadOnlyOption::kSafe || m.context().empty()) {
        return Status::Ok();
      }
      const auto* acks = read_only.RecvAck(m.from(), m.context());
      if (acks == nullptr ||
          prs.config.voters.Vote(*acks) != VoteResult::kWon) {
        return Status::Ok();
      }
      for (auto& rs : read_only.Advance(m.context())) {
        raftpb::Message resp = ResponseToReadIndexReq(rs.req, rs.index);
        if (resp.to() != kNone) Send(std::move(resp));
      }
      return Status::Ok();
    }
    case raftpb::MsgSnapStatus:
      if (pr.state != ProgressState::kSnapshot) return Status::Ok();
      if (m.reject()) {
        // The snapshot never applied: probe from the match, not from it.
        pr.pending_snapshot = 0;
      }
      pr.BecomeProbe();
      // Success: wait for the follower's MsgAppResp. Failure: wait for a
      // heartbeat interval before retrying.
      pr.msg_app_flow_paused = true;
      return Status::Ok();
    case raftpb::MsgUnreachable:
      // Optimistic replication to an unreachable peer probably lost a
      // MsgApp; fall back to probing.
      if (pr.state == ProgressState::kReplicate) pr.BecomeProbe();
      return Status::Ok();
    case raftpb::MsgTransferLeader: {
      if (pr.is_learner) {
        LOG(DEBUG) << id << " is learner. Ignored transferring leadership";
        return Status::Ok();
      }
      uint64_t transferee = m.from();
      if (lead_transferee != kNone) {
        if (lead_transferee == transferee) return Status::Ok();
        AbortLeaderTransfer();
      }
      if (transferee == id) return Status::Ok();
      // The transfer must finish within an election timeout (thesis §3.10).
      election_elapsed = 0;
      lead_transferee = transferee;
      if (pr.match == raft_log.LastIndex()) {
        SendTimeoutNow(transferee);
      } else {
        SendAppend(transferee);
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

Status Raft::StepCandidate(raftpb::Message& m) {
  // Only answers to our current candidacy count (a candidate may still get
  // stale pre-vote answers from its pre-candidate phase in this term).
  raftpb::MessageType my_resp = state == StateType::kPreCandidate
                                    ? raftpb::MsgPreVoteResp
                                    : raftpb::MsgVoteResp;
  switch (m.type()) {
    case raftpb::MsgProp:
      return ProposalDroppedError("no leader at term " + std::to_string(term));
    case raftpb::MsgApp:
      // A leader exists at our term (§5.2): step down.
      BecomeFollower(m.term(), m.from());
      HandleAppendEntries(m);
      return Status::Ok();
    case raftpb::MsgHeartbeat:
      BecomeFollower(m.term(), m.from());
      HandleHeartbeat(m);
      return Status::Ok();
    case raftpb::MsgSnap:
      BecomeFollower(m.term(), m.from());
      HandleSnapshot(m);
      return Status::Ok();
    case raftpb::MsgTimeoutNow:
      return Status::Ok();
    default:
      break;
  }
  if (m.type() == my_resp) {
    switch (Poll(m.from(), m.type(), !m.reject())) {
      case VoteResult::kWon:
        if (state == StateType::kPreCandidate) {
          Campaign(CampaignType::kElection);
        } else {
          BecomeLeader();
          BcastAppend();
        }
        break;
      case VoteResult::kLost:
        // A pre-vote response carries a future term: keep ours.
        BecomeFollower(term, kNone);
        break;
      case VoteResult::kPending:
        break;
    }
  }
  return Status::Ok();
}

Status Raft::StepFollower(raftpb::Message& m) {
  switch (m.type()) {
    case raftpb::MsgProp:
      if (lead == kNone) {
        return ProposalDroppedError("no leader at term " +
                                    std::to_string(term));
      }
      if (disable_proposal_forwarding) {
        return ProposalDroppedError("proposal forwarding is disabled");
      }
      m.set_to(lead);
      Send(std::move(m));
      return Status::Ok();
    case raftpb::MsgApp:
      election_elapsed = 0;
      lead = m.from();
      HandleAppendEntries(m);
      return Status::Ok();
    case raftpb::MsgHeartbeat:
      election_elapsed = 0;
      lead = m.from();
      HandleHeartbeat(m);
      return Status::Ok();
    case raftpb::MsgSnap:
      election_elapsed = 0;
      lead = m.from();
      HandleSnapshot(m);
      return Status::Ok();
    case raftpb::MsgTransferLeader:
      if (lead == kNone) return Status::Ok();
      if (m.term() != 0) {
        // A peer forwarded it to us as its leader, and we are not: a
        // buggy or forged message (forwarding it on would trip Send's
        // check that it carries no term yet). Dropped.
        LOG(ERROR) << id << " dropped a leadership transfer that " << m.from()
                   << " sent to a follower";
        return Status::Ok();
      }
      m.set_to(lead);
      Send(std::move(m));
      return Status::Ok();
    case raftpb::MsgTimeoutNow:
      // A transfer skips pre-vote: we know we are not rejoining after a
      // partition, the leader asked us.
      LOG(DEBUG) << id << " [term " << term << "] received MsgTimeoutNow from "
                 << m.from() << " and starts an election to get leadership";
      Hup(CampaignType::kTransfer);
      return Status::Ok();
    case raftpb::MsgReadIndex:
      if (lead == kNone) return Status::Ok();
      m.set_to(lead);
      Send(std::move(m));
      return Status::Ok();
    case raftpb::MsgReadIndexResp:
      if (m.entries_size() != 1) {
        LOG(ERROR) << id << " invalid format of MsgReadIndexResp from "
                   << m.from() << ", entries count: " << m.entries_size();
        return Status::Ok();
      }
      read_states.push_back(ReadState{m.index(), m.entries(0).data()});
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

void Raft::HandleAppendEntries(raftpb::Message& m) {
  if (m.index() < raft_log.committed()) {
    // Everything up to our commit index is known to match the leader.
    raftpb::Message resp;
    resp.set_to(m.from());
    resp.set_type(raftpb::MsgAppResp);
    resp.set_index(raft_log.committed());
    Send(std::move(resp));
    return;
  }
  EntryVec ents = TakeEntries(m);
  auto last_new = raft_log.MaybeAppend(m.index(), m.logterm(), m.commit(),
                                       ents.data(), ents.data() + ents.size());
  raftpb::Message resp;
  resp.set_to(m.from());
  resp.set_type(raftpb::MsgAppResp);
  if (last_new) {
    resp.set_index(*last_new);
    Send(std::move(resp));
    return;
  }
  // The log does not contain (index, logterm) (§5.3 consistency check).
  // Hint the leader at our largest (index, term) with index <= m.index and
  // term <= m.logterm, so it can skip our divergent tail.
  uint64_t hint_index = std::min(m.index(), raft_log.LastIndex());
  auto [idx, t] = raft_log.FindConflictByTerm(hint_index, m.logterm());
  LOG(DEBUG) << id << " [logterm: " << raft_log.TermOrZero(m.index())
             << ", index: " << m.index()
             << "] rejected MsgApp [logterm: " << m.logterm()
             << ", index: " << m.index() << "] from " << m.from();
  resp.set_index(m.index());
  resp.set_reject(true);
  resp.set_rejecthint(idx);
  resp.set_logterm(t);
  Send(std::move(resp));
}

void Raft::HandleHeartbeat(const raftpb::Message& m) {
  // A leader sends at most what the follower has acknowledged; a commit
  // past our log comes from a buggy or forged peer (etcd's raft panics on
  // it). Nothing is committed then; the heartbeat is still answered.
  if (m.commit() > raft_log.LastIndex()) {
    LOG(ERROR) << id << " ignored the commit index " << m.commit()
               << " of a heartbeat from " << m.from()
               << ": past the last index " << raft_log.LastIndex();
  } else {
    raft_log.CommitTo(m.commit());
  }
  raftpb::Message resp;
  resp.set_to(m.from());
  resp.set_type(raftpb::MsgHeartbeatResp);
  resp.set_context(m.context());
  Send(std::move(resp));
}

void Raft::HandleSnapshot(const raftpb::Message& m) {
  raftpb::Message resp;
  resp.set_to(m.from());
  resp.set_type(raftpb::MsgAppResp);
  if (Restore(m.snapshot())) {
    LOG(DEBUG) << id << " [commit: " << raft_log.committed()
               << "] restored snapshot [index: "
               << m.snapshot().metadata().index()
               << ", term: " << m.snapshot().metadata().term() << "]";
    resp.set_index(raft_log.LastIndex());
  } else {
    LOG(DEBUG) << id << " [commit: " << raft_log.committed()
               << "] ignored snapshot [index: "
               << m.snapshot().metadata().index() << "]";
    resp.set_index(raft_log.committed());
  }
  Send(std::move(resp));
}

bool Raft::Restore(const raftpb::Snapshot& s) {
  const auto& meta = s.metadata();
  if (meta.index() <= raft_log.committed()) return false;
  if (state != StateType::kFollower) {
    // Defense in depth: only followers restore snapshots.
    LOG(WARNING) << id
                 << " attempted to restore snapshot as leader; should never "
                    "happen";
    BecomeFollower(term + 1, kNone);
    return false;
  }
  // More defense in depth: the snapshot's config must contain us.
  bool found = false;
  const auto& cs = meta.conf_state();
  for (uint64_t v : cs.voters()) found |= v == id;
  for (uint64_t v : cs.learners()) found |= v == id;
  for (uint64_t v : cs.voters_outgoing()) found |= v == id;
  if (!found) {
    // Happens when the leader's latest snapshot predates this node's
    // addition; the leader retries until it has a newer one.
    LOG(DEBUG) << id << " ignoring snapshot at index " << meta.index()
               << ": not in its ConfState " << DescribeConfState(cs);
    return false;
  }
  // If we already have the snapshot's last entry, just fast-forward commit:
  // our log past it may hold more (§7).
  if (raft_log.MatchTerm(meta.index(), meta.term())) {
    raft_log.CommitTo(meta.index());
    return false;
  }
  raft_log.Restore(s);
  // Rebuild the configuration from the snapshot's ConfState.
  ProgressTracker fresh(prs.max_inflight, prs.max_inflight_bytes);
  prs = std::move(fresh);
  auto cp = RestoreConfig(prs, raft_log.LastIndex(), cs);
  CHECK(cp.ok()) << "unable to restore config " << DescribeConfState(cs) << ": "
                 << cp.status().ToString();
  raftpb::ConfState got = SwitchToConfig(std::move(cp).value());
  CHECK(ConfStatesEquivalent(got, cs));
  // The progress of the new config starts over (as in Reset).
  return true;
}

raftpb::ConfState Raft::ApplyConfChange(const raftpb::ConfChangeV2& cc) {
  Changer changer(prs, raft_log.LastIndex());
  bool auto_leave = false;
  ConfChangeSingles changes(cc.changes().begin(), cc.changes().end());
  StatusOr<ConfigAndProgress> r = ConfChangeLeavesJoint(cc)
                                      ? changer.LeaveJoint()
                                  : ConfChangeEntersJoint(cc, &auto_leave)
                                      ? changer.EnterJoint(auto_leave, changes)
                                      : changer.Simple(changes);
  // Committed conf changes are facts every replica applies identically; one
  // that cannot apply means the log or the application is broken.
  CHECK(r.ok()) << id << " cannot apply conf change " << DescribeConfChange(cc)
                << ": " << r.status().ToString();
  return SwitchToConfig(std::move(r).value());
}

raftpb::ConfState Raft::SwitchToConfig(ConfigAndProgress cp) {
  prs.config = std::move(cp.config);
  prs.progress = std::move(cp.progress);
  LOG(DEBUG) << id << " switched to configuration " << prs.config.DebugString();
  raftpb::ConfState cs = prs.ConfState();
  auto it = prs.progress.find(id);
  bool present = it != prs.progress.end();
  is_learner = present && it->second.is_learner;
  if ((!present || is_learner) && state == StateType::kLeader) {
    // Removed or demoted while leading. Tell everyone the commit index (the
    // followers may not know yet that the change committed), then hand
    // leadership to the most up-to-date voter. Simply stepping down could
    // deadlock: followers that have not applied the change still count us
    // in their quorum, and our longer log denies them our vote.
    if (step_down_on_removal) {
      MaybeCommit();
      BcastAppend();
      HandOffLeadership();
    }
    return cs;
  }
  if (state != StateType::kLeader || cs.voters_size() == 0) return cs;
  if (MaybeCommit()) {
    // The new config may commit more (e.g. a removed slow voter).
    BcastAppend();
  } else {
    // Probe new peers right away rather than at the next heartbeat.
    for (auto& [pid, pr] : prs.progress) {
      if (pid == id) continue;
      MaybeSendAppend(pid, false);
    }
  }
  if (lead_transferee != kNone &&
      !prs.config.voters.Ids().count(lead_transferee)) {
    AbortLeaderTransfer();
  }
  return cs;
}

bool Raft::IsVoter(uint64_t node) const {
  auto it = prs.progress.find(node);
  return it != prs.progress.end() && !it->second.is_learner &&
         prs.config.voters.Ids().count(node) > 0;
}

void Raft::HandOffLeadership() {
  uint64_t best = kNone;
  uint64_t best_match = 0;
  for (uint64_t v : prs.config.voters.incoming.ids()) {
    if (v == id) continue;
    uint64_t match = prs.progress.at(v).match;
    if (best == kNone || match > best_match) {
      best = v;
      best_match = match;
    }
  }
  if (best == kNone) {
    BecomeFollower(term, kNone);
    return;
  }
  LOG(DEBUG) << id << " was removed from the config and hands leadership to "
             << best;
  // As MsgTransferLeader: bring it up to date, then MsgTimeoutNow.
  election_elapsed = 0;
  lead_transferee = best;
  if (best_match == raft_log.LastIndex()) {
    SendTimeoutNow(best);
    BecomeFollower(term, kNone);
  } else {
    SendAppend(best);
  }
}

void Raft::AdvanceApplied(uint64_t new_applied, uint64_t applied_bytes) {
  // Applied payloads no longer count against the uncommitted quota.
  uncommitted_size =
      applied_bytes > uncommitted_size ? 0 : uncommitted_size - applied_bytes;
  if (new_applied == 0) return;
  uint64_t old_applied = raft_log.applied();
  raft_log.AppliedTo(new_applied);
  if (prs.config.auto_leave && old_applied <= pending_conf_index &&
      new_applied >= pending_conf_index && state == StateType::kLeader) {
    // The joint config this leader proposed is applied and asks to be left
    // automatically: propose the empty ConfChangeV2 that leaves it. Its
    // payload is empty, so the uncommitted quota cannot refuse it.
    raftpb::Entry e;
    e.set_type(raftpb::EntryConfChangeV2);
    CHECK(AppendEntries(&e, &e + 1))
        << "refused un-refusable auto-leaving ConfChangeV2";
    pending_conf_index = raft_log.LastIndex();
    LOG(DEBUG) << id
               << " initiating automatic transition out of joint "
                  "configuration "
               << prs.config.DebugString();
    BcastAppend();
  }
}

}  // namespace kplane::raft
