// Fuzzes chunked transfer coding (net/http_parser.h BodyDecoder): chunk
// sizes, extensions, the CRLF after each chunk, trailers.
//
// Input: byte 0 chooses the read size; the rest is a chunked body followed
// by whatever came next on the connection.
//
// Checked: decoding in reads of any size gives the same payload, the same
// outcome and the same consumed length as decoding all at once; the payload
// re-encoded with AppendChunk decodes back to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "net/http_parser.h"

namespace {

using kplane::net::BodyDecoder;
using kplane::net::BodyFraming;

struct Outcome {
  bool ok = true;
  bool done = false;
  size_t consumed = 0;
  std::string payload;
};

Outcome Decode(std::string_view in, size_t step) {
  BodyDecoder d(BodyFraming{BodyFraming::kChunked, 0});
  Outcome out;
  while (out.consumed < in.size() && !d.done()) {
    std::string_view read = in.substr(out.consumed, step);
    auto used = d.Decode(read, &out.payload);
    if (!used.ok()) {
      out.ok = false;
      return out;
    }
    out.consumed += *used;
    if (*used < read.size() && !d.done()) {
      kplane::fuzz::Fail("decoder stopped inside a read before the end");
    }
  }
  out.done = d.done();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const size_t step = 1 + in.TakeByte() % 32;
  std::string_view body = in.rest();
  Outcome whole = Decode(body, body.size() + 1);
  Outcome pieces = Decode(body, step);
  if (whole.ok != pieces.ok) kplane::fuzz::Fail("outcome depends on reads");
  if (whole.ok &&
      (whole.done != pieces.done || whole.payload != pieces.payload ||
       (whole.done && whole.consumed != pieces.consumed))) {
    kplane::fuzz::Fail("payload depends on how the bytes arrived");
  }
  if (whole.ok && whole.done) {
    std::string again;
    kplane::net::AppendChunk(whole.payload, &again);
    again += kplane::net::kLastChunk;
    Outcome round = Decode(again, again.size() + 1);
    if (!round.ok || !round.done || round.payload != whole.payload) {
      kplane::fuzz::Fail("AppendChunk's output does not decode to its input");
    }
  }
  return 0;
}
