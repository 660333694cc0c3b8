// Fuzzes what a store member does with a raft message from its peer port
// before the node loop steps it (storage/server/entry_check.h): decode the
// raftpb.Message of one /raft/stream frame, refuse types only the local
// node makes, messages to other members and entries no member could apply,
// and decode each entry's request (InternalRaftRequest) or ConfChange the
// way the apply thread later does.
//
// Input: the message's protobuf bytes (one frame's payload). The 4-byte
// frame length in front is read by storage/server/peer_transport.cc's
// NextFrame, which is not exposed.
//
// Checked: no crash or sanitizer report; a message CheckPeerMessage admits
// holds only entries that decode.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "schemas/raft.pb.h"
#include "storage/server/entry_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  raftpb::Message m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  kplane::Status ok = kplane::storage::CheckPeerMessage(m, /*self=*/1,
                                                        /*max_entry_bytes=*/
                                                        1 << 20);
  for (const raftpb::Entry& e : m.entries()) {
    kplane::Status entry = kplane::storage::CheckEntry(e, 1 << 20);
    if (e.data().empty()) continue;
    bool decodes = false;
    if (e.type() == raftpb::EntryNormal) {
      decodes = kplane::storage::DecodeRequest(e.data()).ok();
    } else if (e.type() == raftpb::EntryConfChange) {
      decodes = kplane::storage::DecodeConfChange(e.data()).ok();
    }
    if (ok.ok() &&
        (m.type() == raftpb::MsgApp || m.type() == raftpb::MsgProp) &&
        (!entry.ok() || !decodes)) {
      kplane::fuzz::Fail("an admitted message carries an invalid entry");
    }
  }
  (void)m.snapshot().metadata().conf_state().voters_size();
  return 0;
}
