#include "net/http_parser.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"
#include "net/url.h"

namespace kplane::net {

namespace {

constexpr size_t kNpos = std::string_view::npos;
constexpr size_t kMaxChunkLine = 4096;

bool IsTokenChar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9')) {
    return true;
  }
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

HeadResult Error(int status, std::string message) {
  HeadResult r;
  r.kind = HeadResult::kError;
  r.error_status = status;
  r.error = std::move(message);
  return r;
}

// Scans for the blank line ending a head. `start` is where the head begins
// (after skipped empty lines). Returns the offset just past the blank line,
// or kNpos with *scan_from set to where the next call should resume.
size_t FindHeadEnd(std::string_view data, size_t start, size_t* scan_from) {
  size_t i = std::max(*scan_from, start);
  const size_t n = data.size();
  for (; i < n; ++i) {
    if (data[i] != '\n') continue;
    if (i + 1 >= n) break;
    if (data[i + 1] == '\n') return i + 2;
    if (data[i + 1] == '\r') {
      if (i + 2 >= n) break;
      if (data[i + 2] == '\n') return i + 3;
    }
  }
  *scan_from = i;
  return kNpos;
}

// Locates the head in `data`: skips empty lines before the start line
// (RFC 9112 §2.2), enforces size limits, and splits the head into lines
// without their line ends. On kComplete, `lines` holds the start line and
// the header lines (not the final blank line).
HeadResult SplitHead(std::string_view data, size_t* scan_from,
                     const ParseLimits& limits, int start_line_too_long,
                     std::vector<std::string_view>* lines) {
  size_t start = 0;
  while (start < data.size() && (data[start] == '\r' || data[start] == '\n')) {
    ++start;
  }
  if (start > 64) return Error(400, "too many empty lines before the head");
  size_t end = FindHeadEnd(data, start, scan_from);
  if (end == kNpos) {
    // A start line of max_start_line_bytes may still be followed by CR LF:
    // refuse only when the LF cannot come in time, so the answer does not
    // depend on how the bytes arrived (found by fuzz/http_request_fuzz.cc).
    std::string_view body = data.substr(start);
    if (body.size() > limits.max_start_line_bytes + 1 &&
        body.substr(0, limits.max_start_line_bytes + 2).find('\n') == kNpos) {
      return Error(start_line_too_long, "start line too long");
    }
    if (body.size() > limits.max_header_bytes) {
      return Error(431, "header section too large");
    }
    return HeadResult{};
  }
  if (end - start > limits.max_header_bytes) {
    return Error(431, "header section too large");
  }
  std::string_view head = data.substr(start, end - start);
  while (!head.empty()) {
    size_t lf = head.find('\n');
    std::string_view line = head.substr(0, lf);
    head.remove_prefix(lf + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the blank line
    lines->push_back(line);
  }
  if (lines->empty()) return Error(400, "empty head");
  if (lines->front().size() > limits.max_start_line_bytes) {
    return Error(start_line_too_long, "start line too long");
  }
  HeadResult r;
  r.kind = HeadResult::kComplete;
  r.head_length = end;
  return r;
}

// Parses header lines (all but the first of `lines`) into `out`.
HeadResult ParseHeaderLines(const std::vector<std::string_view>& lines,
                            const ParseLimits& limits, HttpHeaders* out) {
  if (lines.size() - 1 > limits.max_header_count) {
    return Error(431, "too many header fields");
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.front() == ' ' || line.front() == '\t') {
      return Error(400, "obsolete header line folding");
    }
    size_t colon = line.find(':');
    if (colon == kNpos) return Error(400, "header line without ':'");
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) return Error(400, "invalid header name");
    std::string_view value = TrimOws(line.substr(colon + 1));
    for (unsigned char c : value) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return Error(400, "control character in header value");
      }
    }
    out->Add(std::string(name), std::string(value));
  }
  HeadResult r;
  r.kind = HeadResult::kComplete;
  return r;
}

// "HTTP/1.1" -> 1, "HTTP/1.0" -> 0; -1 for a well-formed but unsupported
// version, -2 for garbage.
int ParseVersion(std::string_view v) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || v[6] != '.' || v[5] < '0' ||
      v[5] > '9' || v[7] < '0' || v[7] > '9') {
    return -2;
  }
  if (v[5] != '1') return -1;
  return v[7] == '0' ? 0 : 1;  // HTTP/1.x with x > 1 is treated as 1.1
}

// Parses a decimal Content-Length value; a list "5, 5" of equal values is
// accepted (RFC 9110 §8.6).
std::optional<uint64_t> ParseContentLength(
    const std::vector<std::string_view>& values) {
  std::optional<uint64_t> result;
  for (std::string_view v : values) {
    for (std::string_view item : StrSplit(v, ',')) {
      item = TrimOws(item);
      if (item.empty() || item.size() > 19) return std::nullopt;
      for (char c : item) {
        if (c < '0' || c > '9') return std::nullopt;
      }
      std::optional<uint64_t> n = ParseUint64(item);
      if (!n || (result && *result != *n)) return std::nullopt;
      result = n;
    }
  }
  return result;
}

}  // namespace

Status ParseRequestTarget(std::string_view target, HttpRequest* out) {
  std::string_view rest = target;
  if (rest == "*") {
    out->raw_path = out->path = "*";
    out->raw_query.clear();
    out->query.clear();
    return Status::Ok();
  }
  if (rest.empty() || rest[0] != '/') {
    // absolute-form: "http://host:port/path?query".
    size_t scheme_end = rest.find("://");
    if (scheme_end == kNpos) return InvalidArgumentError("bad request target");
    std::string scheme = ToLower(rest.substr(0, scheme_end));
    if (scheme != "http" && scheme != "https") {
      return InvalidArgumentError("bad request target scheme");
    }
    rest.remove_prefix(scheme_end + 3);
    size_t slash = rest.find_first_of("/?");
    rest = slash == kNpos ? std::string_view("/") : rest.substr(slash);
  }
  size_t hash = rest.find('#');
  if (hash != kNpos) rest = rest.substr(0, hash);
  size_t q = rest.find('?');
  out->raw_path = std::string(rest.substr(0, q));
  out->raw_query = q == kNpos ? std::string() : std::string(rest.substr(q + 1));
  if (out->raw_path.empty()) out->raw_path = "/";
  StatusOr<std::string> path = PercentDecode(out->raw_path, false);
  if (!path.ok()) return path.status().Annotate("path");
  out->path = std::move(*path);
  auto query = ParseQuery(out->raw_query);
  if (!query.ok()) return query.status().Annotate("query");
  out->query = std::move(*query);
  return Status::Ok();
}

HeadResult ParseRequestHead(std::string_view data, size_t* scan_from,
                            const ParseLimits& limits, HttpRequest* out) {
  std::vector<std::string_view> lines;
  HeadResult r = SplitHead(data, scan_from, limits, 414, &lines);
  if (r.kind != HeadResult::kComplete) return r;

  std::string_view line = lines[0];
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == kNpos ? kNpos : line.find(' ', sp1 + 1);
  if (sp2 == kNpos || line.find(' ', sp2 + 1) != kNpos) {
    return Error(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Error(400, "invalid method");
  if (target.empty()) return Error(400, "empty request target");
  for (unsigned char c : target) {
    if (c <= 0x20 || c == 0x7f) return Error(400, "invalid request target");
  }
  int minor = ParseVersion(version);
  if (minor == -2) return Error(400, "malformed HTTP version");
  if (minor == -1) return Error(505, "unsupported HTTP version");

  out->method = std::string(method);
  out->target = std::string(target);
  out->version_minor = minor;
  Status st = ParseRequestTarget(target, out);
  if (!st.ok()) return Error(400, st.message());
  HeadResult h = ParseHeaderLines(lines, limits, &out->headers);
  if (h.kind == HeadResult::kError) return h;
  if (minor == 1 && !out->headers.Has("Host")) {
    // RFC 9112 §3.2 requires 400 here; kplane's clients all send Host and
    // being strict catches broken hand-written clients early.
    return Error(400, "missing Host header");
  }
  return r;
}

HeadResult ParseResponseHead(std::string_view data, size_t* scan_from,
                             const ParseLimits& limits, HttpResponse* out) {
  std::vector<std::string_view> lines;
  HeadResult r = SplitHead(data, scan_from, limits, 400, &lines);
  if (r.kind != HeadResult::kComplete) return r;

  std::string_view line = lines[0];
  size_t sp1 = line.find(' ');
  if (sp1 == kNpos) return Error(400, "malformed status line");
  int minor = ParseVersion(line.substr(0, sp1));
  if (minor < 0) return Error(400, "malformed status line version");
  std::string_view rest = line.substr(sp1 + 1);
  size_t sp2 = rest.find(' ');
  std::string_view code = rest.substr(0, sp2);
  if (code.size() != 3 || !std::all_of(code.begin(), code.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return Error(400, "malformed status code");
  }
  out->version_minor = minor;
  out->status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
  out->reason =
      sp2 == kNpos ? std::string() : std::string(rest.substr(sp2 + 1));
  HeadResult h = ParseHeaderLines(lines, limits, &out->headers);
  if (h.kind == HeadResult::kError) return h;
  return r;
}

StatusOr<BodyFraming> RequestBodyFraming(const HttpRequest& req) {
  BodyFraming f;
  std::vector<std::string_view> te = req.headers.GetAll("Transfer-Encoding");
  std::vector<std::string_view> cl = req.headers.GetAll("Content-Length");
  if (!te.empty()) {
    if (!cl.empty()) {
      return InvalidArgumentError(
          "both Transfer-Encoding and Content-Length present");
    }
    // The only coding we accept is a single "chunked".
    std::vector<std::string> codings;
    for (std::string_view v : te) {
      for (std::string_view item : StrSplit(v, ',')) {
        item = TrimOws(item);
        if (!item.empty()) codings.push_back(ToLower(item));
      }
    }
    if (codings.empty() || codings.back() != "chunked") {
      return InvalidArgumentError("request body is not chunked");
    }
    if (codings.size() != 1) {
      return UnimplementedError("unsupported transfer coding");
    }
    f.kind = BodyFraming::kChunked;
    return f;
  }
  if (!cl.empty()) {
    std::optional<uint64_t> n = ParseContentLength(cl);
    if (!n) return InvalidArgumentError("invalid Content-Length");
    f.kind = *n == 0 ? BodyFraming::kNone : BodyFraming::kContentLength;
    f.length = *n;
    return f;
  }
  return f;
}

StatusOr<BodyFraming> ResponseBodyFraming(std::string_view request_method,
                                          const HttpResponse& resp) {
  BodyFraming f;
  if (request_method == "HEAD" || (resp.status >= 100 && resp.status < 200) ||
      resp.status == 204 || resp.status == 304) {
    return f;
  }
  std::vector<std::string_view> te = resp.headers.GetAll("Transfer-Encoding");
  if (!te.empty()) {
    f.kind = resp.headers.HasToken("Transfer-Encoding", "chunked")
                 ? BodyFraming::kChunked
                 : BodyFraming::kUntilClose;
    return f;
  }
  std::vector<std::string_view> cl = resp.headers.GetAll("Content-Length");
  if (!cl.empty()) {
    std::optional<uint64_t> n = ParseContentLength(cl);
    if (!n) return InvalidArgumentError("invalid Content-Length in response");
    f.kind = *n == 0 ? BodyFraming::kNone : BodyFraming::kContentLength;
    f.length = *n;
    return f;
  }
  f.kind = BodyFraming::kUntilClose;
  return f;
}

void BodyDecoder::Reset(BodyFraming framing) {
  framing_ = framing;
  line_.clear();
  remaining_ = 0;
  switch (framing.kind) {
    case BodyFraming::kNone:
      state_ = State::kDone;
      break;
    case BodyFraming::kContentLength:
      remaining_ = framing.length;
      state_ = remaining_ == 0 ? State::kDone : State::kLength;
      break;
    case BodyFraming::kChunked:
      state_ = State::kChunkSize;
      break;
    case BodyFraming::kUntilClose:
      state_ = State::kUntilClose;
      break;
  }
}

StatusOr<bool> BodyDecoder::TakeLine(std::string_view in, size_t* consumed) {
  std::string_view rest = in.substr(*consumed);
  size_t lf = rest.find('\n');
  size_t take = lf == kNpos ? rest.size() : lf + 1;
  if (line_.size() + take > kMaxChunkLine) {
    return InvalidArgumentError("chunk framing line too long");
  }
  line_.append(rest.data(), take);
  *consumed += take;
  if (lf == kNpos) return false;
  line_.pop_back();  // '\n'
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  return true;
}

StatusOr<size_t> BodyDecoder::Decode(std::string_view in, std::string* out) {
  size_t pos = 0;
  while (pos < in.size() && state_ != State::kDone) {
    switch (state_) {
      case State::kDone:
        break;
      case State::kUntilClose:
        out->append(in.data() + pos, in.size() - pos);
        pos = in.size();
        break;
      case State::kLength: {
        size_t n = static_cast<size_t>(
            std::min<uint64_t>(remaining_, in.size() - pos));
        out->append(in.data() + pos, n);
        pos += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kDone;
        break;
      }
      case State::kChunkSize: {
        ASSIGN_OR_RETURN(bool complete, TakeLine(in, &pos));
        if (!complete) break;
        std::string_view line = line_;
        size_t semi = line.find(';');  // chunk extensions are ignored
        std::string_view hex = TrimOws(line.substr(0, semi));
        if (hex.empty() || hex.size() > 15) {
          return InvalidArgumentError("bad chunk size");
        }
        uint64_t size = 0;
        for (char c : hex) {
          int d = (c >= '0' && c <= '9')   ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                           : -1;
          if (d < 0) return InvalidArgumentError("bad chunk size");
          size = size * 16 + static_cast<uint64_t>(d);
        }
        line_.clear();
        if (size == 0) {
          state_ = State::kTrailer;
        } else {
          remaining_ = size;
          state_ = State::kChunkData;
        }
        break;
      }
      case State::kChunkData: {
        size_t n = static_cast<size_t>(
            std::min<uint64_t>(remaining_, in.size() - pos));
        out->append(in.data() + pos, n);
        pos += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kChunkDataEnd;
        break;
      }
      case State::kChunkDataEnd: {
        ASSIGN_OR_RETURN(bool complete, TakeLine(in, &pos));
        if (!complete) {
          // Only a CR may precede the LF; fail early rather than buffering.
          if (!line_.empty() && line_ != "\r") {
            return InvalidArgumentError("missing CRLF after chunk data");
          }
          break;
        }
        if (!line_.empty()) {
          return InvalidArgumentError("missing CRLF after chunk data");
        }
        state_ = State::kChunkSize;
        break;
      }
      case State::kTrailer: {
        ASSIGN_OR_RETURN(bool complete, TakeLine(in, &pos));
        if (!complete) break;
        // Trailer fields are read and dropped: nothing in kplane uses them.
        if (line_.empty()) state_ = State::kDone;
        line_.clear();
        break;
      }
    }
  }
  return pos;
}

void AppendChunk(std::string_view data, std::string* out) {
  if (data.empty()) return;  // an empty chunk would end the body
  out->append(ChunkHeader(data.size()));
  out->append(data);
  out->append("\r\n");
}

std::string ChunkHeader(size_t size) {
  char buf[24];
  int n = std::snprintf(buf, sizeof(buf), "%zx\r\n", size);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace kplane::net
