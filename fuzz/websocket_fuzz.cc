// Fuzzes the WebSocket frame reader and the channel record reader
// (net/websocket.h): any client that may exec into a pod sends the frames
// kube-apiserver parses, and a kubelet the records.
//
// Input: 1 byte choosing the message cap (16 << (b % 8) bytes) and whether
// frames must be masked, 1 byte choosing the piece size the rest is fed
// in, then the bytes.
// Checked: no crash or sanitizer report; every message is at most the cap,
// control messages at most 125 bytes; once failed, the reader stays failed
// with close code 1002 or 1009; records are at most their cap.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "net/websocket.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kplane::net::WebSocketOpcode;
  kplane::fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.TakeByte();
  const size_t piece = 1 + in.TakeByte();
  const size_t cap = size_t{16} << (mode % 8);
  kplane::net::WebSocketReader reader(
      {.max_message_bytes = cap, .require_mask = (mode & 0x80) == 0});
  kplane::net::ChannelRecordReader records(cap);
  std::string_view rest = in.rest();
  bool failed = false;
  bool records_failed = false;
  while (!rest.empty()) {
    std::string_view p = rest.substr(0, piece);
    rest.remove_prefix(p.size());
    reader.Feed(p);
    records.Feed(p);
    for (;;) {
      auto m = reader.Next();
      if (!m.ok()) {
        if (reader.close_code() != 1002 && reader.close_code() != 1009) {
          kplane::fuzz::Fail("a reader error without its close code");
        }
        failed = true;
        break;
      }
      if (failed) kplane::fuzz::Fail("a failed reader read again");
      if (!m->has_value()) break;
      const auto& msg = **m;
      if (msg.payload.size() > cap) kplane::fuzz::Fail("message over the cap");
      const bool control = msg.opcode == WebSocketOpcode::kClose ||
                           msg.opcode == WebSocketOpcode::kPing ||
                           msg.opcode == WebSocketOpcode::kPong;
      if (control && msg.payload.size() > 125) {
        kplane::fuzz::Fail("control message over 125 bytes");
      }
      if (msg.opcode == WebSocketOpcode::kContinuation) {
        kplane::fuzz::Fail("a continuation returned as a message");
      }
    }
    while (!records_failed) {
      auto r = records.Next();
      if (!r.ok()) {
        records_failed = true;
        break;
      }
      if (!r->has_value()) break;
      if ((*r)->payload.size() > cap) kplane::fuzz::Fail("record over the cap");
    }
  }
  return 0;
}
