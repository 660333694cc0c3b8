// Incremental HTTP/1.1 parsing shared by the server and the client: message
// heads (request line / status line plus header fields) and bodies
// (Content-Length, chunked, or until the connection closes).
//
// Parsing is split in two because bytes arrive in arbitrary pieces:
//
//   1. ParseRequestHead / ParseResponseHead look at everything buffered so
//      far. They return kIncomplete until the blank line that ends the head
//      has arrived, remembering in `*scan_from` how far they have searched so
//      a head trickling in one byte at a time costs O(n), not O(n^2).
//   2. A BodyDecoder, set up from the head's framing, consumes body bytes as
//      they come and appends the payload (chunk framing removed) to a string.
//      Whatever it does not consume belongs to the next message (pipelining).
//
//   Example: "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
//            "5\r\nhello\r\n0\r\n\r\nGET /b HTTP/1.1\r\n..."
//   ParseRequestHead -> kComplete, head_length = 50; framing kChunked;
//   decoder.Decode(rest) appends "hello", consumes 15 bytes, done() is true;
//   the remaining "GET /b ..." is the next request's head.
//
// Lenient where RFC 9112 allows (bare LF line ends, empty lines before a
// request line, chunk extensions and trailers are skipped), strict where
// leniency enables request smuggling (obs-fold, whitespace before ':',
// conflicting Content-Length, Content-Length together with chunked).
//
// Thread-safety: functions are pure; a BodyDecoder is used by one thread.
// Errors: HeadResult carries the HTTP status to answer (400, 414, 431, 505,
// 501); Decode returns kInvalidArgument for malformed chunk framing.
#ifndef KPLANE_NET_HTTP_PARSER_H_
#define KPLANE_NET_HTTP_PARSER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/statusor.h"
#include "net/http_message.h"

namespace kplane::net {

struct ParseLimits {
  size_t max_start_line_bytes = 8 * 1024;  // request line or status line
  size_t max_header_bytes = 64 * 1024;     // the whole head
  size_t max_header_count = 100;
};

struct HeadResult {
  enum Kind { kIncomplete, kComplete, kError };
  Kind kind = kIncomplete;
  size_t head_length =
      0;                 // kComplete: bytes up to and including the blank line
  int error_status = 0;  // kError: the HTTP status to answer with
  std::string error;     // kError: why, for logs and plain-text bodies
};

// Parses a request head from the start of `data`. `*scan_from` must be 0 for
// a new message and is updated between calls on a growing buffer. Fills
// method, target, raw_path, path, raw_query, query, version_minor, headers.
HeadResult ParseRequestHead(std::string_view data, size_t* scan_from,
                            const ParseLimits& limits, HttpRequest* out);

// Parses a response head (status line and headers) from the start of `data`.
HeadResult ParseResponseHead(std::string_view data, size_t* scan_from,
                             const ParseLimits& limits, HttpResponse* out);

// Splits a request-target into raw path and raw query and decodes both.
// Accepts origin-form ("/a?b"), absolute-form ("http://h/a?b") and "*".
// Errors: kInvalidArgument.
Status ParseRequestTarget(std::string_view target, HttpRequest* out);

struct BodyFraming {
  enum Kind { kNone, kContentLength, kChunked, kUntilClose };
  Kind kind = kNone;
  uint64_t length = 0;  // kContentLength only
};

// How a request's body is delimited. Errors (kInvalidArgument -> 400,
// kUnimplemented -> 501): an invalid or conflicting Content-Length, a
// Transfer-Encoding other than chunked, or both headers together.
StatusOr<BodyFraming> RequestBodyFraming(const HttpRequest& req);

// How a response's body is delimited, given the request method (HEAD
// responses and 1xx/204/304 have no body).
StatusOr<BodyFraming> ResponseBodyFraming(std::string_view request_method,
                                          const HttpResponse& resp);

class BodyDecoder {
 public:
  BodyDecoder() = default;
  explicit BodyDecoder(BodyFraming framing) { Reset(framing); }

  void Reset(BodyFraming framing);

  // Consumes bytes from the front of `in` and appends the payload to *out.
  // Stops at the end of the body; returns the number of bytes consumed.
  StatusOr<size_t> Decode(std::string_view in, std::string* out);

  bool done() const { return state_ == State::kDone; }
  // For kUntilClose framing: the connection ended, so the body did too.
  // For other framings an EOF before done() means a truncated body.
  void FinishAtEof() {
    if (framing_.kind == BodyFraming::kUntilClose) state_ = State::kDone;
  }
  const BodyFraming& framing() const { return framing_; }

 private:
  enum class State {
    kDone,
    kLength,        // copying a Content-Length body
    kUntilClose,    // copying until EOF
    kChunkSize,     // reading "1a;ext\r\n"
    kChunkData,     // copying chunk payload
    kChunkDataEnd,  // reading the "\r\n" after the payload
    kTrailer,       // reading trailer lines until an empty one
  };
  // Accumulates one line (up to LF) across calls; returns true when the line
  // is complete, with *consumed advanced. Lines are capped at 4 KiB.
  StatusOr<bool> TakeLine(std::string_view in, size_t* consumed);

  BodyFraming framing_;
  State state_ = State::kDone;
  uint64_t remaining_ = 0;
  std::string line_;
};

// Appends the chunked-encoding frame for `data` ("5\r\nhello\r\n").
void AppendChunk(std::string_view data, std::string* out);
// The header of one chunk of `size` bytes: "1a\r\n".
std::string ChunkHeader(size_t size);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace kplane::net

#endif  // KPLANE_NET_HTTP_PARSER_H_
