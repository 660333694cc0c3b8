// SPDY/3.1 (draft-mbelshe-httpbis-spdy-00 and the 3.1 changes), without
// I/O: the frame reader and writer, the zlib-compressed header blocks, and
// the server side of one connection's streams. kubectl before 1.30 runs
// `kubectl exec` over it (Upgrade: SPDY/3.1, kube's
// apimachinery/pkg/util/httpstream/spdy over moby/spdystream);
// apiserver/pod_exec.h serves it.
//
//   SpdyServerSession session({.max_streams = 8});
//   session.Feed(bytes_from_client);
//   std::string to_client;
//   for (;;) {
//     StatusOr<std::optional<SpdyEvent>> e = session.Next(&to_client);
//     if (!e.ok()) break;                  // to_client ends with a GOAWAY
//     if (!e->has_value()) break;          // wait for more bytes
//     if ((*e)->kind == SpdyEvent::kNewStream)
//       to_client += session.Reply((*e)->stream_id);
//     ...
//   }
//   write(fd, to_client);
//   write(fd, EncodeSpdyData(stream_id, "output", /*fin=*/false));
//
// Frames: a control frame is |1|version 15|type 16|flags 8|length 24| and
// its fields; a DATA frame |0|stream id 31|flags 8|length 24| and its
// bytes. SYN_STREAM, SYN_REPLY and HEADERS carry a header block (pairs of
// 32-bit-length-prefixed names and values, several values of a name joined
// by NUL) compressed with zlib into ONE stream per direction of the
// connection, primed with SPDY/3's dictionary and sync-flushed after each
// block; losing a block (an error) loses the connection.
//
// Bounds and errors. SpdyFrameReader (either side's frames) fails, and
// stays failed, on: a frame longer than max_frame_bytes, a control frame
// whose version is not 3, a known control frame with the wrong length for
// its type, a header block that does not inflate (bad zlib data, another
// dictionary) or inflates to more than max_header_block_bytes, or whose
// pairs are malformed (truncated, an empty or upper-case name, a name
// twice, trailing bytes). Unknown control frame types (CREDENTIAL, NOOP)
// are skipped, as the draft asks. SpdyServerSession adds the stream rules:
// a SYN_STREAM with stream id 0, an even id or one not above the last is a
// session error (GOAWAY PROTOCOL_ERROR, then the session stays failed); a
// stream beyond max_streams (over the connection's life) gets RST_STREAM
// REFUSED_STREAM; DATA or HEADERS on a stream never opened gets RST_STREAM
// INVALID_STREAM, after the client's FIN STREAM_ALREADY_CLOSED. PINGs from
// the client (odd ids) are echoed. Flow control: none is enforced either
// way (WINDOW_UPDATE and SETTINGS are read and ignored), as spdystream,
// kube's implementation, does; a client's DATA is bounded by
// max_frame_bytes per frame and by the caller's consumption.
//
// Thread-safety: none (one reader, writer or session per connection, used
// from one thread). EncodeSpdyData/RstStream/GoAway/Ping are pure and may
// be called from any thread.
#ifndef KPLANE_NET_SPDY_H_
#define KPLANE_NET_SPDY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/statusor.h"

namespace kplane::net {

inline constexpr uint16_t kSpdyVersion = 3;
inline constexpr uint8_t kSpdyFlagFin = 0x01;
inline constexpr uint8_t kSpdyFlagUnidirectional = 0x02;

enum class SpdyFrameType : uint16_t {
  kData = 0,  // not a control type: a DATA frame
  kSynStream = 1,
  kSynReply = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kHeaders = 8,
  kWindowUpdate = 9,
};

// RST_STREAM status codes.
enum class SpdyRstStatus : uint32_t {
  kProtocolError = 1,
  kInvalidStream = 2,
  kRefusedStream = 3,
  kUnsupportedVersion = 4,
  kCancel = 5,
  kInternalError = 6,
  kFlowControlError = 7,
  kStreamInUse = 8,
  kStreamAlreadyClosed = 9,
  kFrameTooLarge = 11,
};

// GOAWAY status codes.
enum class SpdyGoAwayStatus : uint32_t {
  kOk = 0,
  kProtocolError = 1,
  kInternalError = 2,
};

// Header names are lower case (the draft requires it); a value may hold
// several, NUL-separated.
using SpdyHeaders = std::vector<std::pair<std::string, std::string>>;

struct SpdySetting {
  uint8_t flags = 0;
  uint32_t id = 0;  // 24 bits
  uint32_t value = 0;
};

struct SpdyFrame {
  SpdyFrameType type = SpdyFrameType::kData;
  uint8_t flags = 0;
  // DATA, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE; the
  // last good stream of a GOAWAY.
  uint32_t stream_id = 0;
  uint32_t associated_stream_id = 0;  // SYN_STREAM
  uint8_t priority = 0;               // SYN_STREAM, 0 (highest) to 7
  SpdyHeaders headers;                // SYN_STREAM, SYN_REPLY, HEADERS
  std::string data;                   // DATA
  uint32_t status = 0;                // RST_STREAM, GOAWAY
  uint32_t ping_id = 0;               // PING
  uint32_t window_delta = 0;          // WINDOW_UPDATE
  std::vector<SpdySetting> settings;  // SETTINGS
};

// SPDY/3's zlib dictionary for header blocks (1423 bytes, Adler-32
// 0xe3c6a7c2).
const std::string& SpdyHeaderDictionary();

// The uncompressed header block of `headers` (names as given).
std::string EncodeSpdyHeaderBlock(const SpdyHeaders& headers);
// Parses an uncompressed header block (see the file comment's rules).
StatusOr<SpdyHeaders> ParseSpdyHeaderBlock(std::string_view block);

// Frames without header blocks: pure.
std::string EncodeSpdyData(uint32_t stream_id, std::string_view data, bool fin);
std::string EncodeSpdyRstStream(uint32_t stream_id, SpdyRstStatus status);
std::string EncodeSpdyGoAway(uint32_t last_good_stream_id,
                             SpdyGoAwayStatus status);
std::string EncodeSpdyPing(uint32_t id);
std::string EncodeSpdyWindowUpdate(uint32_t stream_id, uint32_t delta);
std::string EncodeSpdySettings(const std::vector<SpdySetting>& settings);

// Writes frames with header blocks, owning this direction's compressor.
class SpdyFrameWriter {
 public:
  SpdyFrameWriter();
  ~SpdyFrameWriter();
  SpdyFrameWriter(const SpdyFrameWriter&) = delete;
  SpdyFrameWriter& operator=(const SpdyFrameWriter&) = delete;

  std::string SynStream(uint32_t stream_id, const SpdyHeaders& headers,
                        uint8_t flags = 0, uint32_t associated_stream_id = 0,
                        uint8_t priority = 0);
  std::string SynReply(uint32_t stream_id, const SpdyHeaders& headers,
                       bool fin = false);
  std::string Headers(uint32_t stream_id, const SpdyHeaders& headers,
                      bool fin = false);

 private:
  std::string Compress(const SpdyHeaders& headers);
  struct Deflater;
  std::unique_ptr<Deflater> deflater_;
};

struct SpdyReaderOptions {
  // The longest frame payload (after the 8-byte frame header) accepted.
  size_t max_frame_bytes = 256 * 1024;
  // The largest inflated header block.
  size_t max_header_block_bytes = 64 * 1024;
};

class SpdyFrameReader {
 public:
  explicit SpdyFrameReader(SpdyReaderOptions options = {});
  ~SpdyFrameReader();
  SpdyFrameReader(const SpdyFrameReader&) = delete;
  SpdyFrameReader& operator=(const SpdyFrameReader&) = delete;

  // Appends bytes read from the connection (dropped once failed).
  void Feed(std::string_view data);
  // The next frame, nullopt if more bytes are needed, or the error
  // (kInvalidArgument; then always the same error).
  StatusOr<std::optional<SpdyFrame>> Next();
  // Bytes held that are not yet a frame.
  size_t BufferedBytes() const { return in_.size() - off_; }

 private:
  Status Fail(std::string message);
  StatusOr<SpdyHeaders> Inflate(std::string_view compressed);

  const SpdyReaderOptions options_;
  std::string in_;
  size_t off_ = 0;
  Status failed_;
  struct Inflater;
  std::unique_ptr<Inflater> inflater_;
};

// What the client did, for SpdyServerSession's owner.
struct SpdyEvent {
  enum Kind {
    kNewStream,  // SYN_STREAM: Reply() or Reset() it
    kData,       // DATA on an open stream (data may be empty when fin)
    kReset,      // the client's RST_STREAM
    kGoAway,     // the client's GOAWAY: it opens no more streams
  };
  Kind kind = kData;
  uint32_t stream_id = 0;
  SpdyHeaders headers;  // kNewStream
  std::string data;     // kData
  bool fin = false;     // kNewStream, kData: the client's half is closed
};

struct SpdySessionOptions {
  SpdyReaderOptions reader;
  // Streams a client may open over the connection's life.
  int max_streams = 8;
};

// The server side of one SPDY/3.1 connection (streams opened by the
// client; the server opens none).
class SpdyServerSession {
 public:
  explicit SpdyServerSession(SpdySessionOptions options = {});

  void Feed(std::string_view data) { reader_.Feed(data); }
  // The next event, nullopt if more bytes are needed. Frames the session
  // answers itself (PING echoes, RST_STREAMs, the GOAWAY of a session
  // error) are appended to *to_client. After an error the session stays
  // failed.
  StatusOr<std::optional<SpdyEvent>> Next(std::string* to_client);

  // SYN_REPLY accepting a new stream (no headers, as kube's).
  std::string Reply(uint32_t stream_id);
  // RST_STREAM refusing or ending one; its frames are then refused too.
  std::string Reset(uint32_t stream_id, SpdyRstStatus status);
  // GOAWAY naming the last stream accepted.
  std::string GoAway(SpdyGoAwayStatus status) const {
    return EncodeSpdyGoAway(last_stream_id_, status);
  }

 private:
  Status SessionError(std::string message, std::string* to_client);

  const SpdySessionOptions options_;
  SpdyFrameReader reader_;
  SpdyFrameWriter writer_;
  uint32_t last_stream_id_ = 0;
  int opened_ = 0;
  std::set<uint32_t> open_;             // accepted, client half open
  std::set<uint32_t> client_finished_;  // accepted, client half closed
  Status failed_;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_SPDY_H_
