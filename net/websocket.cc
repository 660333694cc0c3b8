#include "net/websocket.h"

#include <openssl/sha.h>

#include <utility>

#include "base/base64.h"
#include "base/status.h"

namespace kplane::net {

namespace {

constexpr std::string_view kWebSocketGuid =
    "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool IsControl(uint8_t opcode) { return (opcode & 0x8) != 0; }

void AppendLength(std::string* out, uint8_t first, uint8_t mask_bit, size_t n) {
  out->push_back(static_cast<char>(first));
  if (n < 126) {
    out->push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    out->push_back(static_cast<char>(mask_bit | 126));
    out->push_back(static_cast<char>(n >> 8));
    out->push_back(static_cast<char>(n & 0xFF));
  } else {
    out->push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      out->push_back(
          static_cast<char>((static_cast<uint64_t>(n) >> shift) & 0xFF));
    }
  }
}

}  // namespace

std::string WebSocketAcceptKey(std::string_view client_key) {
  std::string text(client_key);
  text += kWebSocketGuid;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
       digest);
  return Base64Encode(
      std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string EncodeWebSocketFrame(WebSocketOpcode opcode,
                                 std::string_view payload) {
  if (IsControl(static_cast<uint8_t>(opcode)) && payload.size() > 125) {
    payload = payload.substr(0, 125);
  }
  std::string out;
  out.reserve(payload.size() + 10);
  AppendLength(&out, 0x80 | static_cast<uint8_t>(opcode), 0, payload.size());
  out.append(payload);
  return out;
}

std::string EncodeWebSocketClose(uint16_t code, std::string_view reason) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  payload.append(reason.substr(0, 123));
  return EncodeWebSocketFrame(WebSocketOpcode::kClose, payload);
}

std::string EncodeWebSocketClientFrame(WebSocketOpcode opcode,
                                       std::string_view payload,
                                       uint32_t mask_key, bool fin) {
  std::string out;
  AppendLength(&out, (fin ? 0x80 : 0) | static_cast<uint8_t>(opcode), 0x80,
               payload.size());
  const uint8_t mask[4] = {static_cast<uint8_t>(mask_key >> 24),
                           static_cast<uint8_t>(mask_key >> 16),
                           static_cast<uint8_t>(mask_key >> 8),
                           static_cast<uint8_t>(mask_key)};
  for (uint8_t m : mask) out.push_back(static_cast<char>(m));
  for (size_t i = 0; i < payload.size(); ++i) {
    out.push_back(
        static_cast<char>(static_cast<uint8_t>(payload[i]) ^ mask[i % 4]));
  }
  return out;
}

uint16_t WebSocketCloseCode(std::string_view p) {
  if (p.size() < 2) return 1005;
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) |
                               static_cast<uint8_t>(p[1]));
}

uint16_t WebSocketCloseReply(std::string_view p) {
  if (p.empty()) return 1000;
  if (p.size() == 1) return 1002;
  const uint16_t code = WebSocketCloseCode(p);
  const bool sendable = (code >= 1000 && code <= 1003) ||
                        (code >= 1007 && code <= 1014) ||
                        (code >= 3000 && code <= 4999);
  return sendable ? code : 1002;
}

WebSocketReader::WebSocketReader(WebSocketReaderOptions options)
    : options_(options) {}

void WebSocketReader::Feed(std::string_view data) {
  if (!failed_.ok()) return;
  if (off_ > 0 && off_ * 2 >= in_.size()) {
    in_.erase(0, off_);
    off_ = 0;
  }
  in_.append(data);
}

Status WebSocketReader::Fail(uint16_t code, std::string message) {
  close_code_ = code;
  failed_ = InvalidArgumentError("websocket: " + std::move(message));
  std::string().swap(in_);
  std::string().swap(partial_);
  off_ = 0;
  return failed_;
}

StatusOr<std::optional<WebSocketMessage>> WebSocketReader::Next() {
  if (!failed_.ok()) return failed_;
  for (;;) {
    const std::string_view in = std::string_view(in_).substr(off_);
    if (in.size() < 2) return std::optional<WebSocketMessage>();
    const uint8_t b0 = static_cast<uint8_t>(in[0]);
    const uint8_t b1 = static_cast<uint8_t>(in[1]);
    const bool fin = (b0 & 0x80) != 0;
    const uint8_t opcode = b0 & 0x0F;
    const bool masked = (b1 & 0x80) != 0;
    if ((b0 & 0x70) != 0) return Fail(1002, "reserved bits set");
    if (opcode != 0x0 && opcode != 0x1 && opcode != 0x2 && opcode != 0x8 &&
        opcode != 0x9 && opcode != 0xA) {
      return Fail(1002, "unknown opcode " + std::to_string(opcode));
    }
    if (options_.require_mask && !masked) {
      return Fail(1002, "a client frame is not masked");
    }
    size_t header = 2;
    uint64_t length = b1 & 0x7F;
    if (length == 126) {
      if (in.size() < 4) return std::optional<WebSocketMessage>();
      length = (static_cast<uint64_t>(static_cast<uint8_t>(in[2])) << 8) |
               static_cast<uint8_t>(in[3]);
      header = 4;
    } else if (length == 127) {
      if (in.size() < 10) return std::optional<WebSocketMessage>();
      length = 0;
      for (int i = 2; i < 10; ++i) {
        length = (length << 8) | static_cast<uint8_t>(in[i]);
      }
      if ((length >> 63) != 0) return Fail(1002, "frame length top bit set");
      header = 10;
    }
    if (IsControl(opcode) && (!fin || length > 125)) {
      return Fail(1002, "a control frame is fragmented or over 125 bytes");
    }
    if (length > options_.max_message_bytes ||
        (!IsControl(opcode) &&
         partial_.size() + length > options_.max_message_bytes)) {
      return Fail(1009, "message over " +
                            std::to_string(options_.max_message_bytes) +
                            " bytes");
    }
    if (!IsControl(opcode)) {
      if (opcode == 0x0 && !in_message_) {
        return Fail(1002, "a continuation frame without a message");
      }
      if (opcode != 0x0 && in_message_) {
        return Fail(1002, "a new message inside a fragmented one");
      }
    }
    const size_t mask_bytes = masked ? 4 : 0;
    if (in.size() < header + mask_bytes + length) {
      return std::optional<WebSocketMessage>();
    }
    uint8_t mask[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < mask_bytes; ++i) {
      mask[i] = static_cast<uint8_t>(in[header + i]);
    }
    std::string payload(in.substr(header + mask_bytes, length));
    if (masked) {
      for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] =
            static_cast<char>(static_cast<uint8_t>(payload[i]) ^ mask[i % 4]);
      }
    }
    off_ += header + mask_bytes + length;
    if (off_ == in_.size()) {
      in_.clear();
      off_ = 0;
    }
    if (IsControl(opcode)) {
      return std::optional<WebSocketMessage>(WebSocketMessage{
          static_cast<WebSocketOpcode>(opcode), std::move(payload)});
    }
    if (opcode != 0x0) {
      message_opcode_ = static_cast<WebSocketOpcode>(opcode);
    }
    if (fin && !in_message_) {
      return std::optional<WebSocketMessage>(
          WebSocketMessage{message_opcode_, std::move(payload)});
    }
    partial_ += payload;
    in_message_ = true;
    if (fin) {
      in_message_ = false;
      WebSocketMessage m{message_opcode_, std::move(partial_)};
      partial_.clear();
      return std::optional<WebSocketMessage>(std::move(m));
    }
  }
}

std::string EncodeChannelRecord(uint8_t channel, std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 5);
  out.push_back(static_cast<char>(channel));
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((n >> shift) & 0xFF));
  }
  out.append(payload);
  return out;
}

StatusOr<std::optional<ChannelRecord>> ChannelRecordReader::Next() {
  const std::string_view in = std::string_view(in_).substr(off_);
  if (in.size() < 5) return std::optional<ChannelRecord>();
  uint32_t n = 0;
  for (int i = 1; i < 5; ++i) n = (n << 8) | static_cast<uint8_t>(in[i]);
  if (n > max_) {
    return InvalidArgumentError("channel record of " + std::to_string(n) +
                                " bytes, over " + std::to_string(max_));
  }
  if (in.size() < 5 + static_cast<size_t>(n)) {
    return std::optional<ChannelRecord>();
  }
  ChannelRecord r{static_cast<uint8_t>(in[0]), std::string(in.substr(5, n))};
  off_ += 5 + n;
  if (off_ * 2 >= in_.size()) {
    in_.erase(0, off_);
    off_ = 0;
  }
  return std::optional<ChannelRecord>(std::move(r));
}

}  // namespace kplane::net
