// WebSocket (RFC 6455), server side, without I/O: the opening handshake's
// accept key, a bounded frame reader for what a client sends, and the
// frame writer for what the server sends. pods/exec
// (apiserver/pod_exec.h) speaks Kubernetes' channel protocol over it.
//
//   WebSocketReader reader({.max_message_bytes = 1 << 20});
//   reader.Feed(bytes_from_socket);
//   for (;;) {
//     StatusOr<std::optional<WebSocketMessage>> m = reader.Next();
//     if (!m.ok()) { send EncodeWebSocketClose(1002, ...) and close; }
//     if (!m->has_value()) break;          // wait for more bytes
//     ... (*m)->opcode, (*m)->payload ...
//   }
//   write(fd, EncodeWebSocketFrame(WebSocketOpcode::kBinary, "\x01hi"));
//
// What the reader refuses (kInvalidArgument, with RFC 6455's close code in
// WebSocketReader::close_code()): an unmasked frame (a client must mask),
// reserved bits set (no extension is negotiated), an unknown opcode, a
// fragmented or over-125-byte control frame, a continuation without a
// start or a new data frame inside a fragmented message (1002); a
// 64-bit length with the top bit set (1002); a message or frame longer
// than max_message_bytes (1009). After an error the reader stays failed.
// Pings and pongs may arrive between the fragments of a message; they are
// returned as they come.
//
// Thread-safety: none (one reader per connection). The free functions are
// pure.
#ifndef KPLANE_NET_WEBSOCKET_H_
#define KPLANE_NET_WEBSOCKET_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/statusor.h"

namespace kplane::net {

enum class WebSocketOpcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64 of the
// SHA-1 of the key and RFC 6455's GUID.
std::string WebSocketAcceptKey(std::string_view client_key);

// One unmasked server frame (FIN set). Control payloads must be at most
// 125 bytes (the caller's duty; longer ones are cut).
std::string EncodeWebSocketFrame(WebSocketOpcode opcode,
                                 std::string_view payload);
// A close frame: the status code and a reason (cut to fit 125 bytes).
std::string EncodeWebSocketClose(uint16_t code, std::string_view reason);
// A masked client frame (tests and tools speak as a client with it).
std::string EncodeWebSocketClientFrame(WebSocketOpcode opcode,
                                       std::string_view payload,
                                       uint32_t mask_key, bool fin = true);

struct WebSocketMessage {
  WebSocketOpcode opcode;  // kText, kBinary, kClose, kPing or kPong
  std::string payload;     // unmasked; fragments joined
};

struct WebSocketReaderOptions {
  // The longest message (all its fragments) or frame accepted.
  size_t max_message_bytes = 1 << 20;
  // Server side: frames must be masked. False reads a server's frames.
  bool require_mask = true;
};

class WebSocketReader {
 public:
  explicit WebSocketReader(WebSocketReaderOptions options = {});

  // Appends bytes read from the connection.
  void Feed(std::string_view data);
  // The next complete message, nullopt if more bytes are needed, or the
  // protocol error (see the file comment).
  StatusOr<std::optional<WebSocketMessage>> Next();
  // The close code to send after an error (1002 or 1009); 0 before one.
  uint16_t close_code() const { return close_code_; }
  // Bytes held (unparsed input and a partial message).
  size_t BufferedBytes() const { return in_.size() - off_ + partial_.size(); }

 private:
  Status Fail(uint16_t code, std::string message);

  const WebSocketReaderOptions options_;
  std::string in_;
  size_t off_ = 0;
  // A fragmented data message being joined.
  bool in_message_ = false;
  WebSocketOpcode message_opcode_ = WebSocketOpcode::kBinary;
  std::string partial_;
  uint16_t close_code_ = 0;
  Status failed_;
};

// The status code of a close frame's payload (1005 if it has none).
uint16_t WebSocketCloseCode(std::string_view close_payload);
// The code to answer a client's close frame with (RFC 6455 5.5.1, 7.4):
// its own code when that may be sent, 1000 when it gave none, 1002 for a
// one-byte payload or a code no endpoint may send (1005, 1006, 1015, the
// unassigned ones below 3000, 5000 and up).
uint16_t WebSocketCloseReply(std::string_view close_payload);

// Kubernetes' remotecommand channels (stdin 0, stdout 1, stderr 2, error 3,
// resize 4; v5's close 255) carried over a plain byte stream instead of
// WebSocket messages: the kubeletsim's /exec answer. One record is the
// channel byte, the payload length (4 bytes, big-endian) and the payload.
std::string EncodeChannelRecord(uint8_t channel, std::string_view payload);
struct ChannelRecord {
  uint8_t channel = 0;
  std::string payload;
};
// Splits a stream into records; a record over `max_payload` bytes is an
// error (kInvalidArgument), as is anything after one.
class ChannelRecordReader {
 public:
  explicit ChannelRecordReader(size_t max_payload) : max_(max_payload) {}
  void Feed(std::string_view data) { in_.append(data); }
  StatusOr<std::optional<ChannelRecord>> Next();
  // Bytes of an incomplete record (non-zero at the stream's end: cut).
  size_t BufferedBytes() const { return in_.size() - off_; }

 private:
  const size_t max_;
  std::string in_;
  size_t off_ = 0;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_WEBSOCKET_H_
