// Fuzzes the client's reading of a server's answer (net/http_parser.h):
// status line and headers, the response's body framing for the method that
// asked, and the body. kplane's clients talk to servers they do not control
// (a real etcd, any URL given to kpctl).
//
// Input: byte 0 picks the request method (HEAD has no body); the rest is
// what the server sent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "net/http_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  static constexpr std::string_view kMethods[] = {"GET", "POST", "HEAD", "PUT"};
  std::string_view method = kMethods[in.TakeByte() % 4];
  std::string_view conn = in.rest();
  kplane::net::ParseLimits limits;
  limits.max_start_line_bytes = 512;
  limits.max_header_bytes = 2048;
  limits.max_header_count = 20;
  kplane::net::HttpResponse resp;
  size_t scan = 0;
  auto head = kplane::net::ParseResponseHead(conn, &scan, limits, &resp);
  if (head.kind != kplane::net::HeadResult::kComplete) return 0;
  if (head.head_length == 0 || head.head_length > conn.size()) {
    kplane::fuzz::Fail("head_length outside the buffer");
  }
  conn.remove_prefix(head.head_length);
  auto framing = kplane::net::ResponseBodyFraming(method, resp);
  if (!framing.ok()) return 0;
  kplane::net::BodyDecoder decoder(*framing);
  std::string body;
  auto used = decoder.Decode(conn, &body);
  if (!used.ok()) return 0;
  if (*used > conn.size()) kplane::fuzz::Fail("decoder overconsumed");
  if (!decoder.done()) decoder.FinishAtEof();
  return 0;
}
