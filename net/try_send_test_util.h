// The TrySend test shared by the plaintext and the TLS client tests
// (http_client_test.cc, http_tls_test.cc): a chunk the connection takes
// only part of stays in the stream, nothing overtakes it, and the next Send
// writes the rest before its own chunk. The server half reads nothing until
// the client's socket is full, then reads the whole body; the client half
// checks that the body arrived whole and in order.
//
// Thread-safety: the two halves run on different threads; each is used by
// one. Not part of the library.
#ifndef KPLANE_NET_TRY_SEND_TEST_UTIL_H_
#define KPLANE_NET_TRY_SEND_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <charconv>
#include <functional>
#include <future>
#include <string>
#include <string_view>

#include "net/http_client.h"
#include "net/http_test_util.h"

namespace kplane::net::testing {

// The request body of a chunked request as the server read it: the chunks'
// data, in order ("" if the framing is broken).
inline std::string DechunkBody(std::string_view raw) {
  size_t at = raw.find("\r\n\r\n");
  if (at == std::string_view::npos) return "";
  at += 4;
  std::string out;
  for (;;) {
    const size_t eol = raw.find("\r\n", at);
    if (eol == std::string_view::npos) return "";
    size_t n = 0;
    // No exception on a broken size line: a corrupt stream fails the test
    // instead of ending the process with a server thread still running.
    const auto [end, ec] =
        std::from_chars(raw.data() + at, raw.data() + eol, n, 16);
    if (ec != std::errc() || end != raw.data() + eol) return "";
    at = eol + 2;
    if (n == 0) return out;
    if (raw.size() < at + n + 2 || raw.substr(at + n, 2) != "\r\n") return "";
    out.append(raw.substr(at, n));
    at += n + 2;
  }
}

// The server half, once `read` let it start: reads with `read_some` (up to
// n bytes into buf; <= 0 at the end or on an error) until the last chunk
// has come, counting `drained` down once 256 KiB have arrived (the
// client's socket has room again). Returns everything it read.
inline std::string ReadUntilLastChunk(
    const std::function<ssize_t(char* buf, size_t n)>& read_some,
    Latch* drained) {
  std::string all;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read_some(buf, sizeof(buf));
    if (n <= 0) break;
    const bool before = all.size() < (256 << 10);
    all.append(buf, static_cast<size_t>(n));
    if (before && all.size() >= (256 << 10)) drained->CountDown();
    if (all.size() >= 5 && all.compare(all.size() - 5, 5, "0\r\n\r\n") == 0) {
      break;  // the last chunk
    }
  }
  return all;
}

// The client half: TrySends chunks of `chunk_bytes` (one letter each) until
// one is taken only in part (the loopback buffers hold a few MiB), lets the
// server read (`read`), checks that nothing overtakes the rest even once
// the socket has room (`drained`), then Sends "tail", ends the body and
// checks the body the server got (`got`). Returns false, having checked
// nothing, when the connection refused a chunk outright (a plaintext
// socket whose buffer ended exactly full): the caller skips the test.
inline bool TrySendUntilPartialThenFinish(HttpStream* s, Latch* read,
                                          Latch* drained,
                                          std::future<std::string> got,
                                          size_t chunk_bytes = 64 << 10) {
  using R = HttpStream::TrySendResult;
  std::string want;
  int chunks = 0;
  R r = R::kSent;
  while (r == R::kSent && chunks < 4096) {
    const std::string chunk(chunk_bytes, static_cast<char>('a' + chunks % 26));
    r = s->TrySend(chunk);
    if (r != R::kNotSent) want += chunk;
    ++chunks;
  }
  if (r == R::kNotSent) {
    read->CountDown();
    s->Cancel();
    return false;
  }
  EXPECT_EQ(r, R::kPartial) << "after " << chunks;
  read->CountDown();
  EXPECT_TRUE(drained->Wait());
  EXPECT_EQ(s->TrySend("overtaker"), R::kNotSent);
  Status sent = s->Send("tail");
  EXPECT_TRUE(sent.ok()) << sent;
  want += "tail";
  Status closed = s->CloseSend();
  EXPECT_TRUE(closed.ok()) << closed;
  const std::string body = DechunkBody(got.get());
  EXPECT_EQ(body.size(), want.size());
  EXPECT_TRUE(body == want) << "the body's chunks are out of order";
  return true;
}

}  // namespace kplane::net::testing

#endif  // KPLANE_NET_TRY_SEND_TEST_UTIL_H_
