// Entry and message checks: what may enter this member's raft log, and what
// it can apply.
//
// Every committed entry is applied by every member, so an entry that no
// member can decode would stop them all (it used to crash them all, at
// every restart). Such an entry must never be proposed or appended: the
// leader checks the entries of a forwarded proposal (MsgProp) and a
// follower those of an append (MsgApp) before the node loop steps them, and
// the apply thread decodes with the same functions (an entry that still
// fails stops the apply: store_applier.h).
//
// What a valid entry is:
//   EntryNormal       empty (a new leader's entry), or an
//                     InternalRaftRequest with one request set and at most
//                     max_entry_bytes;
//   EntryConfChange   a ConfChange of a known type with a node id, whose
//                     context (when set) is a MemberRecord of that id;
//   anything else     invalid (kplane never proposes ConfChangeV2).
// A peer message is refused when it is of a type only the local node makes
// (MsgHup, MsgBeat, ...), is not addressed to this member, is a MsgSnap
// (snapshots arrive with their files, through ReceiveSnapshot), carries a
// term where a leader's peer sends none (MsgProp, MsgReadIndex: a follower
// forwards them and the raft core CHECKs that they have none) or none where
// it sends one, or is a MsgProp without entries (the raft core CHECKs on
// that) or with an invalid one (over max_entry_bytes included), a
// MsgReadIndex without exactly one (its context), or a MsgApp with an
// invalid entry (whatever its size: the leader applied its own limit) or
// with entries that do not follow its index one by one in terms from its
// logTerm to its own term. What depends on the member's log (a commit past
// its end, entries that would replace committed ones) the raft core
// refuses itself. fuzz/raft_step steps what passes into a raft core.
// A snapshot message (CheckPeerSnapshot) is a MsgSnap addressed to this
// member with a term, whose snapshot has an index and a term no later than
// the message's, and whose ConfState is one the raft core can restore (a
// voter at least, no member twice, learners not voting): the core CHECKs
// on one it cannot restore, and takes a message without a term for its
// own (a candidate would step down to term 0 and could vote twice).
//
// Thread-safety: functions of their arguments only.
// Errors: kCorruption, with what is wrong.
#ifndef KPLANE_STORAGE_SERVER_ENTRY_CHECK_H_
#define KPLANE_STORAGE_SERVER_ENTRY_CHECK_H_

#include <cstdint>
#include <string_view>

#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "schemas/storage.pb.h"

namespace kplane::storage {

// The request of an EntryNormal entry's data (non-empty).
StatusOr<storagepb::InternalRaftRequest> DecodeRequest(std::string_view data);
// The change of an EntryConfChange entry's data.
StatusOr<raftpb::ConfChange> DecodeConfChange(std::string_view data);

// Whether `e` may enter the log (above). `max_entry_bytes` 0: no limit.
Status CheckEntry(const raftpb::Entry& e, int64_t max_entry_bytes = 0);

// Whether a message from a peer may be stepped into member `self`'s node
// (that its sender is a member is the caller's check: it knows the
// membership).
Status CheckPeerMessage(const raftpb::Message& m, uint64_t self,
                        int64_t max_entry_bytes = 0);
// Whether a snapshot message that arrived with its files (/raft/snapshot)
// may be stepped into member `self`'s node (the same caveat).
Status CheckPeerSnapshot(const raftpb::Message& m, uint64_t self);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_ENTRY_CHECK_H_
