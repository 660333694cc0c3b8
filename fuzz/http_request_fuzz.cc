// Fuzzes the server's reading of a connection (net/http_parser.h): request
// heads, body framing and bodies (Content-Length, chunked), pipelined
// requests one after another, as net/http_server.cc's read loop drives them.
//
// Input: byte 0 chooses how the bytes are cut into reads (the parser must
// give the same answer however the bytes arrive); the rest is what a client
// sent on one connection.
//
// Checked: no crash or sanitizer report; a head parsed from pieces equals
// the head parsed from the whole buffer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "net/http_parser.h"

namespace {

using kplane::net::BodyDecoder;
using kplane::net::BodyFraming;
using kplane::net::HeadResult;
using kplane::net::HttpRequest;
using kplane::net::ParseLimits;

// Parses a head from `data` fed in reads of `step` bytes, as a connection
// receives it.
HeadResult ParseInPieces(std::string_view data, size_t step,
                         const ParseLimits& limits, HttpRequest* out) {
  size_t scan = 0;
  HeadResult r;
  for (size_t have = std::min(step, data.size());;
       have = std::min(have + step, data.size())) {
    *out = HttpRequest();
    r = kplane::net::ParseRequestHead(data.substr(0, have), &scan, limits, out);
    if (r.kind != HeadResult::kIncomplete || have == data.size()) return r;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const size_t step = 1 + in.TakeByte() % 64;
  std::string_view conn = in.rest();
  ParseLimits limits;
  limits.max_start_line_bytes = 512;  // small limits reach their checks
  limits.max_header_bytes = 2048;
  limits.max_header_count = 20;

  for (int n = 0; n < 16 && !conn.empty(); ++n) {
    HttpRequest whole;
    size_t scan = 0;
    HeadResult head =
        kplane::net::ParseRequestHead(conn, &scan, limits, &whole);
    HttpRequest pieces;
    HeadResult head2 = ParseInPieces(conn, step, limits, &pieces);
    if (head.kind != head2.kind ||
        (head.kind == HeadResult::kComplete &&
         (head.head_length != head2.head_length ||
          whole.target != pieces.target || whole.path != pieces.path ||
          whole.headers.size() != pieces.headers.size()))) {
      std::fprintf(
          stderr,
          "request %d, step %zu\nwhole: kind %d length %zu status %d %s\n"
          "pieces: kind %d length %zu status %d %s\n",
          n, step, head.kind, head.head_length, head.error_status,
          head.error.c_str(), head2.kind, head2.head_length, head2.error_status,
          head2.error.c_str());
      kplane::fuzz::Fail("a head read in pieces differs from the whole");
    }
    if (head.kind != HeadResult::kComplete) return 0;
    if (head.head_length == 0 || head.head_length > conn.size()) {
      kplane::fuzz::Fail("head_length outside the buffer");
    }
    conn.remove_prefix(head.head_length);
    (void)whole.QueryParam("watch");
    auto framing = kplane::net::RequestBodyFraming(whole);
    if (!framing.ok()) return 0;
    if (framing->kind == BodyFraming::kNone) continue;
    BodyDecoder decoder(*framing);
    std::string body;
    // The body in reads of `step` bytes.
    while (!conn.empty() && !decoder.done()) {
      std::string_view read = conn.substr(0, step);
      auto used = decoder.Decode(read, &body);
      if (!used.ok()) return 0;
      if (*used > read.size()) kplane::fuzz::Fail("decoder overconsumed");
      conn.remove_prefix(*used);
      if (*used < read.size() && !decoder.done()) {
        kplane::fuzz::Fail("decoder left bytes of a read before its end");
      }
      if (body.size() > (1u << 20)) return 0;
    }
    if (!decoder.done()) {
      decoder.FinishAtEof();
      return 0;
    }
  }
  return 0;
}
