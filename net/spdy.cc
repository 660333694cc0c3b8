#include "net/spdy.h"

#include <zlib.h>

#include <cctype>
#include <utility>

#include "base/status.h"

namespace kplane::net {

namespace {

// The draft's dictionary (2.6.10.1): its header names and common values,
// each as a 32-bit length and the bytes, then a run of status codes, reason
// phrases, dates and media types as plain text.
std::string BuildDictionary() {
  static constexpr const char* kWords[] = {"options",
                                           "head",
                                           "post",
                                           "put",
                                           "delete",
                                           "trace",
                                           "accept",
                                           "accept-charset",
                                           "accept-encoding",
                                           "accept-language",
                                           "accept-ranges",
                                           "age",
                                           "allow",
                                           "authorization",
                                           "cache-control",
                                           "connection",
                                           "content-base",
                                           "content-encoding",
                                           "content-language",
                                           "content-length",
                                           "content-location",
                                           "content-md5",
                                           "content-range",
                                           "content-type",
                                           "date",
                                           "etag",
                                           "expect",
                                           "expires",
                                           "from",
                                           "host",
                                           "if-match",
                                           "if-modified-since",
                                           "if-none-match",
                                           "if-range",
                                           "if-unmodified-since",
                                           "last-modified",
                                           "location",
                                           "max-forwards",
                                           "pragma",
                                           "proxy-authenticate",
                                           "proxy-authorization",
                                           "range",
                                           "referer",
                                           "retry-after",
                                           "server",
                                           "te",
                                           "trailer",
                                           "transfer-encoding",
                                           "upgrade",
                                           "user-agent",
                                           "vary",
                                           "via",
                                           "warning",
                                           "www-authenticate",
                                           "method",
                                           "get",
                                           "status",
                                           "200 OK",
                                           "version",
                                           "HTTP/1.1",
                                           "url",
                                           "public",
                                           "set-cookie",
                                           "keep-alive",
                                           "origin"};
  std::string d;
  for (std::string_view w : kWords) {
    const uint32_t n = static_cast<uint32_t>(w.size());
    for (int shift = 24; shift >= 0; shift -= 8) {
      d.push_back(static_cast<char>((n >> shift) & 0xFF));
    }
    d.append(w);
  }
  d += "100101201202205206300302303304305306307402405406407408409410411412413"
       "414415416417502504505"
       "203 Non-Authoritative Information204 No Content301 Moved Permanently"
       "400 Bad Request401 Unauthorized403 Forbidden404 Not Found"
       "500 Internal Server Error501 Not Implemented503 Service Unavailable"
       "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
       "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
       "chunked,text/html,image/png,image/jpg,image/gif,application/xml,"
       "application/xhtml+xml,text/plain,text/javascript,publicprivate"
       "max-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
  return d;
}

void Put32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
  }
}

uint32_t Get32(std::string_view p) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(p[0])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(p[3]));
}

uint32_t Get31(std::string_view p) { return Get32(p) & 0x7FFFFFFF; }

// The 8-byte head of a control frame.
std::string ControlFrame(SpdyFrameType type, uint8_t flags,
                         std::string_view payload) {
  std::string out;
  out.reserve(8 + payload.size());
  out.push_back(static_cast<char>(0x80 | (kSpdyVersion >> 8)));
  out.push_back(static_cast<char>(kSpdyVersion & 0xFF));
  const uint16_t t = static_cast<uint16_t>(type);
  out.push_back(static_cast<char>(t >> 8));
  out.push_back(static_cast<char>(t & 0xFF));
  const uint32_t n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>((n >> 16) & 0xFF));
  out.push_back(static_cast<char>((n >> 8) & 0xFF));
  out.push_back(static_cast<char>(n & 0xFF));
  out.append(payload);
  return out;
}

}  // namespace

const std::string& SpdyHeaderDictionary() {
  static const std::string* const kDictionary =
      new std::string(BuildDictionary());
  return *kDictionary;
}

std::string EncodeSpdyHeaderBlock(const SpdyHeaders& headers) {
  std::string out;
  Put32(&out, static_cast<uint32_t>(headers.size()));
  for (const auto& [name, value] : headers) {
    Put32(&out, static_cast<uint32_t>(name.size()));
    out.append(name);
    Put32(&out, static_cast<uint32_t>(value.size()));
    out.append(value);
  }
  return out;
}

StatusOr<SpdyHeaders> ParseSpdyHeaderBlock(std::string_view block) {
  if (block.size() < 4) {
    return InvalidArgumentError("spdy: header block without its count");
  }
  const uint32_t count = Get32(block);
  block.remove_prefix(4);
  // Each pair takes at least 8 bytes: no reserve beyond what is there.
  if (count > block.size() / 8) {
    return InvalidArgumentError("spdy: header block count " +
                                std::to_string(count) + " over its bytes");
  }
  SpdyHeaders out;
  out.reserve(count);
  std::set<std::string_view> seen;
  auto take = [&block](std::string_view* field) {
    if (block.size() < 4) return false;
    const uint32_t n = Get32(block);
    if (n > block.size() - 4) return false;
    *field = block.substr(4, n);
    block.remove_prefix(4 + static_cast<size_t>(n));
    return true;
  };
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view name, value;
    if (!take(&name) || !take(&value)) {
      return InvalidArgumentError("spdy: header block truncated");
    }
    if (name.empty()) return InvalidArgumentError("spdy: empty header name");
    for (char c : name) {
      if (std::isupper(static_cast<unsigned char>(c))) {
        return InvalidArgumentError("spdy: header name not lower case");
      }
    }
    if (!seen.insert(name).second) {
      return InvalidArgumentError("spdy: header " + std::string(name) +
                                  " twice");
    }
    out.emplace_back(std::string(name), std::string(value));
  }
  if (!block.empty()) {
    return InvalidArgumentError("spdy: bytes after the header block");
  }
  return out;
}

std::string EncodeSpdyData(uint32_t stream_id, std::string_view data,
                           bool fin) {
  std::string out;
  out.reserve(8 + data.size());
  Put32(&out, stream_id & 0x7FFFFFFF);
  const uint32_t n = static_cast<uint32_t>(data.size());
  out.push_back(static_cast<char>(fin ? kSpdyFlagFin : 0));
  out.push_back(static_cast<char>((n >> 16) & 0xFF));
  out.push_back(static_cast<char>((n >> 8) & 0xFF));
  out.push_back(static_cast<char>(n & 0xFF));
  out.append(data);
  return out;
}

std::string EncodeSpdyRstStream(uint32_t stream_id, SpdyRstStatus status) {
  std::string p;
  Put32(&p, stream_id & 0x7FFFFFFF);
  Put32(&p, static_cast<uint32_t>(status));
  return ControlFrame(SpdyFrameType::kRstStream, 0, p);
}

std::string EncodeSpdyGoAway(uint32_t last_good_stream_id,
                             SpdyGoAwayStatus status) {
  std::string p;
  Put32(&p, last_good_stream_id & 0x7FFFFFFF);
  Put32(&p, static_cast<uint32_t>(status));
  return ControlFrame(SpdyFrameType::kGoAway, 0, p);
}

std::string EncodeSpdyPing(uint32_t id) {
  std::string p;
  Put32(&p, id);
  return ControlFrame(SpdyFrameType::kPing, 0, p);
}

std::string EncodeSpdyWindowUpdate(uint32_t stream_id, uint32_t delta) {
  std::string p;
  Put32(&p, stream_id & 0x7FFFFFFF);
  Put32(&p, delta & 0x7FFFFFFF);
  return ControlFrame(SpdyFrameType::kWindowUpdate, 0, p);
}

std::string EncodeSpdySettings(const std::vector<SpdySetting>& settings) {
  std::string p;
  Put32(&p, static_cast<uint32_t>(settings.size()));
  for (const SpdySetting& s : settings) {
    p.push_back(static_cast<char>(s.flags));
    p.push_back(static_cast<char>((s.id >> 16) & 0xFF));
    p.push_back(static_cast<char>((s.id >> 8) & 0xFF));
    p.push_back(static_cast<char>(s.id & 0xFF));
    Put32(&p, s.value);
  }
  return ControlFrame(SpdyFrameType::kSettings, 0, p);
}

// ---------------------------------------------------------------------------
// SpdyFrameWriter

struct SpdyFrameWriter::Deflater {
  z_stream z{};
  bool ok = false;
  Deflater() {
    ok = deflateInit(&z, Z_DEFAULT_COMPRESSION) == Z_OK;
    if (ok) {
      const std::string& d = SpdyHeaderDictionary();
      ok = deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(d.data()),
                                static_cast<uInt>(d.size())) == Z_OK;
    }
  }
  ~Deflater() { deflateEnd(&z); }
};

SpdyFrameWriter::SpdyFrameWriter() : deflater_(std::make_unique<Deflater>()) {}
SpdyFrameWriter::~SpdyFrameWriter() = default;

std::string SpdyFrameWriter::Compress(const SpdyHeaders& headers) {
  std::string block = EncodeSpdyHeaderBlock(headers);
  std::string out;
  z_stream& z = deflater_->z;
  z.next_in = reinterpret_cast<Bytef*>(block.data());
  z.avail_in = static_cast<uInt>(block.size());
  char buf[4096];
  // A sync flush ends each block on a byte boundary the peer can inflate
  // without the next one; the stream itself never ends.
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    if (deflate(&z, Z_SYNC_FLUSH) == Z_STREAM_ERROR) break;
    out.append(buf, sizeof(buf) - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

std::string SpdyFrameWriter::SynStream(uint32_t stream_id,
                                       const SpdyHeaders& headers,
                                       uint8_t flags,
                                       uint32_t associated_stream_id,
                                       uint8_t priority) {
  std::string p;
  Put32(&p, stream_id & 0x7FFFFFFF);
  Put32(&p, associated_stream_id & 0x7FFFFFFF);
  p.push_back(static_cast<char>((priority & 0x7) << 5));
  p.push_back(0);  // credential slot
  p += Compress(headers);
  return ControlFrame(SpdyFrameType::kSynStream, flags, p);
}

std::string SpdyFrameWriter::SynReply(uint32_t stream_id,
                                      const SpdyHeaders& headers, bool fin) {
  std::string p;
  Put32(&p, stream_id & 0x7FFFFFFF);
  p += Compress(headers);
  return ControlFrame(SpdyFrameType::kSynReply, fin ? kSpdyFlagFin : 0, p);
}

std::string SpdyFrameWriter::Headers(uint32_t stream_id,
                                     const SpdyHeaders& headers, bool fin) {
  std::string p;
  Put32(&p, stream_id & 0x7FFFFFFF);
  p += Compress(headers);
  return ControlFrame(SpdyFrameType::kHeaders, fin ? kSpdyFlagFin : 0, p);
}

// ---------------------------------------------------------------------------
// SpdyFrameReader

struct SpdyFrameReader::Inflater {
  z_stream z{};
  bool ok = false;
  Inflater() { ok = inflateInit(&z) == Z_OK; }
  ~Inflater() { inflateEnd(&z); }
};

SpdyFrameReader::SpdyFrameReader(SpdyReaderOptions options)
    : options_(options) {}
SpdyFrameReader::~SpdyFrameReader() = default;

void SpdyFrameReader::Feed(std::string_view data) {
  if (!failed_.ok()) return;
  if (off_ > 0 && off_ * 2 >= in_.size()) {
    in_.erase(0, off_);
    off_ = 0;
  }
  in_.append(data);
}

Status SpdyFrameReader::Fail(std::string message) {
  failed_ = InvalidArgumentError("spdy: " + std::move(message));
  std::string().swap(in_);
  off_ = 0;
  inflater_.reset();
  return failed_;
}

StatusOr<SpdyHeaders> SpdyFrameReader::Inflate(std::string_view compressed) {
  if (inflater_ == nullptr) inflater_ = std::make_unique<Inflater>();
  if (!inflater_->ok) return Fail("zlib inflate could not start");
  z_stream& z = inflater_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string block;
  char buf[4096];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    int rc = inflate(&z, Z_SYNC_FLUSH);
    if (rc == Z_NEED_DICT) {
      const std::string& d = SpdyHeaderDictionary();
      if (inflateSetDictionary(&z, reinterpret_cast<const Bytef*>(d.data()),
                               static_cast<uInt>(d.size())) != Z_OK) {
        return Fail("header block compressed with another dictionary");
      }
      rc = Z_OK;
    }
    const size_t produced = sizeof(buf) - z.avail_out;
    if (block.size() + produced > options_.max_header_block_bytes) {
      return Fail("header block inflates to over " +
                  std::to_string(options_.max_header_block_bytes) + " bytes");
    }
    block.append(buf, produced);
    if (rc == Z_STREAM_END) return Fail("header compression stream ended");
    if (rc == Z_BUF_ERROR) break;  // no progress possible: all consumed
    if (rc != Z_OK) {
      return Fail(std::string("header block does not inflate: ") +
                  (z.msg != nullptr ? z.msg : "zlib error"));
    }
    if (z.avail_in == 0 && z.avail_out != 0) break;
  }
  if (z.avail_in != 0) return Fail("header block does not inflate");
  StatusOr<SpdyHeaders> headers = ParseSpdyHeaderBlock(block);
  if (!headers.ok()) return Fail(std::string(headers.status().message()));
  return headers;
}

StatusOr<std::optional<SpdyFrame>> SpdyFrameReader::Next() {
  using Out = std::optional<SpdyFrame>;
  for (;;) {
    if (!failed_.ok()) return failed_;
    const std::string_view in = std::string_view(in_).substr(off_);
    if (in.size() < 8) return Out();
    const uint8_t b0 = static_cast<uint8_t>(in[0]);
    const uint8_t flags = static_cast<uint8_t>(in[4]);
    const size_t length =
        (static_cast<size_t>(static_cast<uint8_t>(in[5])) << 16) |
        (static_cast<size_t>(static_cast<uint8_t>(in[6])) << 8) |
        static_cast<uint8_t>(in[7]);
    if (length > options_.max_frame_bytes) {
      return Fail("frame of " + std::to_string(length) + " bytes, over " +
                  std::to_string(options_.max_frame_bytes));
    }
    if (in.size() < 8 + length) return Out();
    const std::string_view p = in.substr(8, length);
    off_ += 8 + length;
    SpdyFrame f;
    f.flags = flags;
    if ((b0 & 0x80) == 0) {
      f.type = SpdyFrameType::kData;
      f.stream_id = Get31(in);
      f.data.assign(p);
      return Out(std::move(f));
    }
    const uint16_t version =
        static_cast<uint16_t>(((b0 & 0x7F) << 8) | static_cast<uint8_t>(in[1]));
    const uint16_t type = static_cast<uint16_t>(
        (static_cast<uint8_t>(in[2]) << 8) | static_cast<uint8_t>(in[3]));
    if (version != kSpdyVersion) {
      return Fail("unsupported version " + std::to_string(version));
    }
    auto bad_length = [&] {
      return Fail("control frame type " + std::to_string(type) + " of " +
                  std::to_string(length) + " bytes");
    };
    switch (static_cast<SpdyFrameType>(type)) {
      case SpdyFrameType::kSynStream: {
        if (length < 10) return bad_length();
        f.stream_id = Get31(p);
        f.associated_stream_id = Get31(p.substr(4));
        f.priority = static_cast<uint8_t>(static_cast<uint8_t>(p[8]) >> 5);
        ASSIGN_OR_RETURN(f.headers, Inflate(p.substr(10)));
        break;
      }
      case SpdyFrameType::kSynReply:
      case SpdyFrameType::kHeaders: {
        if (length < 4) return bad_length();
        f.stream_id = Get31(p);
        ASSIGN_OR_RETURN(f.headers, Inflate(p.substr(4)));
        break;
      }
      case SpdyFrameType::kRstStream:
      case SpdyFrameType::kGoAway:
        if (length != 8) return bad_length();
        f.stream_id = Get31(p);
        f.status = Get32(p.substr(4));
        break;
      case SpdyFrameType::kSettings: {
        if (length < 4) return bad_length();
        const uint32_t n = Get32(p);
        if (n > (length - 4) / 8 || length != 4 + size_t{n} * 8) {
          return bad_length();
        }
        for (uint32_t i = 0; i < n; ++i) {
          std::string_view e = p.substr(4 + size_t{i} * 8, 8);
          f.settings.push_back({.flags = static_cast<uint8_t>(e[0]),
                                .id = Get32(e) & 0xFFFFFF,
                                .value = Get32(e.substr(4))});
        }
        break;
      }
      case SpdyFrameType::kPing:
        if (length != 4) return bad_length();
        f.ping_id = Get32(p);
        break;
      case SpdyFrameType::kWindowUpdate:
        if (length != 8) return bad_length();
        f.stream_id = Get31(p);
        f.window_delta = Get31(p.substr(4));
        break;
      default:
        continue;  // NOOP, CREDENTIAL, unknown: ignored (draft 2.2.1)
    }
    f.type = static_cast<SpdyFrameType>(type);
    return Out(std::move(f));
  }
}

// ---------------------------------------------------------------------------
// SpdyServerSession

SpdyServerSession::SpdyServerSession(SpdySessionOptions options)
    : options_(options), reader_(options.reader) {}

Status SpdyServerSession::SessionError(std::string message,
                                       std::string* to_client) {
  *to_client +=
      EncodeSpdyGoAway(last_stream_id_, SpdyGoAwayStatus::kProtocolError);
  failed_ = InvalidArgumentError(std::move(message));
  return failed_;
}

std::string SpdyServerSession::Reply(uint32_t stream_id) {
  return writer_.SynReply(stream_id, {});
}

std::string SpdyServerSession::Reset(uint32_t stream_id, SpdyRstStatus status) {
  open_.erase(stream_id);
  client_finished_.erase(stream_id);
  return EncodeSpdyRstStream(stream_id, status);
}

StatusOr<std::optional<SpdyEvent>> SpdyServerSession::Next(
    std::string* to_client) {
  using Out = std::optional<SpdyEvent>;
  if (!failed_.ok()) return failed_;
  for (;;) {
    StatusOr<std::optional<SpdyFrame>> next = reader_.Next();
    if (!next.ok()) {
      return SessionError(std::string(next.status().message()), to_client);
    }
    if (!next->has_value()) return Out();
    SpdyFrame& f = **next;
    const bool fin = (f.flags & kSpdyFlagFin) != 0;
    const uint32_t id = f.stream_id;
    switch (f.type) {
      case SpdyFrameType::kSynStream: {
        if (id == 0 || id % 2 == 0 || id <= last_stream_id_) {
          return SessionError("spdy: SYN_STREAM with stream id " +
                                  std::to_string(id) + " after " +
                                  std::to_string(last_stream_id_),
                              to_client);
        }
        last_stream_id_ = id;
        if (opened_ >= options_.max_streams) {
          *to_client += EncodeSpdyRstStream(id, SpdyRstStatus::kRefusedStream);
          continue;
        }
        ++opened_;
        (fin ? client_finished_ : open_).insert(id);
        SpdyEvent e{.kind = SpdyEvent::kNewStream, .stream_id = id};
        e.headers = std::move(f.headers);
        e.fin = fin;
        return Out(std::move(e));
      }
      case SpdyFrameType::kData:
      case SpdyFrameType::kHeaders: {
        if (open_.count(id) == 0) {
          *to_client +=
              EncodeSpdyRstStream(id, client_finished_.count(id) != 0
                                          ? SpdyRstStatus::kStreamAlreadyClosed
                                          : SpdyRstStatus::kInvalidStream);
          continue;
        }
        if (fin) {
          open_.erase(id);
          client_finished_.insert(id);
        }
        if (f.type == SpdyFrameType::kHeaders && !fin) continue;
        SpdyEvent e{.kind = SpdyEvent::kData, .stream_id = id};
        if (f.type == SpdyFrameType::kData) e.data = std::move(f.data);
        e.fin = fin;
        return Out(std::move(e));
      }
      case SpdyFrameType::kRstStream: {
        open_.erase(id);
        client_finished_.erase(id);
        return Out(SpdyEvent{.kind = SpdyEvent::kReset, .stream_id = id});
      }
      case SpdyFrameType::kPing:
        // Odd ids are the client's; even ones would answer our pings (we
        // send none).
        if (f.ping_id % 2 == 1) *to_client += EncodeSpdyPing(f.ping_id);
        continue;
      case SpdyFrameType::kGoAway:
        return Out(SpdyEvent{.kind = SpdyEvent::kGoAway, .stream_id = id});
      case SpdyFrameType::kSynReply:
        // The server opens no streams, so nothing may be replied to.
        *to_client += EncodeSpdyRstStream(id, SpdyRstStatus::kInvalidStream);
        continue;
      case SpdyFrameType::kSettings:
      case SpdyFrameType::kWindowUpdate:
        continue;  // no flow control (see the file comment)
    }
  }
}

}  // namespace kplane::net
