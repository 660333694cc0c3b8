// Fuzzes the SPDY/3.1 server session (net/spdy.h): any client allowed to
// exec into a pod with an older kubectl sends the frames kube-apiserver
// parses, compressed header blocks included.
//
// Input: 1 byte choosing the frame cap (64 << (b % 8) bytes), the header
// block cap (same shift, from 256 bytes) and max_streams (b / 8 % 4 + 1),
// 1 byte choosing the piece size the rest is fed in, then the bytes.
// Checked: no crash or sanitizer report; DATA events are at most the frame
// cap; a new stream's headers fit the header block cap; stream ids of new
// streams are odd and rising and at most max_streams of them; once failed,
// the session stays failed; everything the session writes back is
// well-formed SPDY a reader accepts (no header block needs inflating but
// SYN_REPLY's, which the session's own writer compressed).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "net/spdy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.TakeByte();
  const size_t piece = 1 + in.TakeByte();
  const size_t frame_cap = size_t{64} << (mode % 8);
  const size_t header_cap = size_t{256} << (mode % 8);
  const int max_streams = mode / 8 % 4 + 1;
  kplane::net::SpdyServerSession session(
      {.reader = {.max_frame_bytes = frame_cap,
                  .max_header_block_bytes = header_cap},
       .max_streams = max_streams});
  // Reads what the session writes back, as a client would.
  kplane::net::SpdyFrameReader echo(
      {.max_frame_bytes = 1 << 20, .max_header_block_bytes = 1 << 20});
  std::string_view rest = in.rest();
  bool failed = false;
  uint32_t last_id = 0;
  int streams = 0;
  while (!rest.empty()) {
    std::string_view p = rest.substr(0, piece);
    rest.remove_prefix(p.size());
    session.Feed(p);
    std::string to_client;
    for (;;) {
      auto e = session.Next(&to_client);
      if (!e.ok()) {
        failed = true;
        break;
      }
      if (failed) kplane::fuzz::Fail("a failed session read again");
      if (!e->has_value()) break;
      const kplane::net::SpdyEvent& ev = **e;
      if (ev.data.size() > frame_cap) kplane::fuzz::Fail("DATA over the cap");
      if (ev.kind == kplane::net::SpdyEvent::kNewStream) {
        if (ev.stream_id % 2 == 0 || ev.stream_id <= last_id) {
          kplane::fuzz::Fail("a stream id out of order");
        }
        last_id = ev.stream_id;
        if (++streams > max_streams) kplane::fuzz::Fail("over max_streams");
        size_t bytes = 4;
        for (const auto& [k, v] : ev.headers) bytes += 8 + k.size() + v.size();
        if (bytes > header_cap) kplane::fuzz::Fail("headers over the cap");
        to_client += session.Reply(ev.stream_id);
      }
    }
    echo.Feed(to_client);
    for (;;) {
      auto f = echo.Next();
      if (!f.ok()) kplane::fuzz::Fail("the session wrote a bad frame");
      if (!f->has_value()) break;
    }
  }
  return 0;
}
