#include "objects/codec.h"

#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "base/base64.h"
#include "base/json.h"
#include "base/logging.h"
#include "base/strings.h"
#include "objects/field_table.h"
#include "objects/time.h"
#include "objects/unstructured.h"

namespace kplane::objects {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using internal::Emit;
using internal::FieldEntry;
using internal::KeyEntry;
using internal::MessageTable;
using internal::Special;
using internal::TableFor;
using rapidjson::SizeType;

namespace {

constexpr size_t kMaxReportedFields = 100;  // as Kubernetes caps them

// ---------------------------------------------------------------------------
// Encoding

// Formats a double the shortest way that reads back exactly ("0.1").
std::string ShortestDouble(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, r.ptr);
}

// The syntax Kubernetes' ParseQuantity accepts: a signed decimal number and
// one suffix, binary (Ki..Ei), decimal SI (n u m k M G T P E) or an exponent
// (e3, E-2). The value itself is kept as written (see objects/README.md).
bool IsQuantitySyntax(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      ++digits;
    } else if (s[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  std::string_view suffix = s.substr(i);
  if (suffix.empty()) return true;
  static constexpr std::string_view kSuffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi",
                                                   "Ei", "n",  "u",  "m",  "k",
                                                   "M",  "G",  "T",  "P",  "E"};
  for (std::string_view known : kSuffixes) {
    if (suffix == known) return true;
  }
  if (suffix[0] != 'e' && suffix[0] != 'E') return false;
  suffix.remove_prefix(1);
  if (!suffix.empty() && (suffix[0] == '+' || suffix[0] == '-')) {
    suffix.remove_prefix(1);
  }
  if (suffix.empty()) return false;
  for (char c : suffix) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The length of the valid UTF-8 sequence at p (1 to 4), or 0 when the
// bytes at p are not one. Strict: no overlongs, surrogates or code points
// past U+10FFFF.
int Utf8SequenceLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = *p;
  if (c < 0x80) return 1;
  int n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 1;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 2;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (end - p <= n) return 0;
  for (int i = 1; i <= n; ++i) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n + 1;
}

// Strict UTF-8, with a fast path for ASCII, which nearly every Kubernetes
// string is.
bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    if (end - p >= 8) {
      uint64_t chunk;
      std::memcpy(&chunk, p, 8);
      if ((chunk & 0x8080808080808080ULL) == 0) {
        p += 8;
        continue;
      }
    }
    const int n = Utf8SequenceLength(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

// s with every byte that does not start a valid UTF-8 sequence replaced by
// U+FFFD, as Go's encoding/json writes strings: protobuf string fields are
// not checked for UTF-8 when decoded, and what we write must be JSON our
// own reader (and any other) accepts.
std::string ReplaceInvalidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const int n = Utf8SequenceLength(p, end);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++p;
    } else {
      out.append(reinterpret_cast<const char*>(p), n);
      p += n;
    }
  }
  return out;
}

// rapidjson 1.1's Writer::RawNumber quotes the number; this adapter writes
// raw numbers verbatim through RawValue instead and forwards the rest.
template <typename W>
class RawNumberFix {
 public:
  using Ch = char;
  explicit RawNumberFix(W* w) : w_(*w) {}
  bool Null() { return w_.Null(); }
  bool Bool(bool b) { return w_.Bool(b); }
  bool Int(int i) { return w_.Int(i); }
  bool Uint(unsigned u) { return w_.Uint(u); }
  bool Int64(int64_t i) { return w_.Int64(i); }
  bool Uint64(uint64_t u) { return w_.Uint64(u); }
  bool Double(double d) { return w_.Double(d); }
  bool RawNumber(const Ch* s, SizeType n, bool) {
    return w_.RawValue(s, n, rapidjson::kNumberType);
  }
  bool String(const Ch* s, SizeType n, bool copy) {
    return w_.String(s, n, copy);
  }
  bool StartObject() { return w_.StartObject(); }
  bool Key(const Ch* s, SizeType n, bool copy) { return w_.Key(s, n, copy); }
  bool EndObject(SizeType n) { return w_.EndObject(n); }
  bool StartArray() { return w_.StartArray(); }
  bool EndArray(SizeType n) { return w_.EndArray(n); }

 private:
  W& w_;
};

// Forwards the members of one JSON object (the events inside its outermost
// braces) to `inner`, counting them: Unstructured content spliced into the
// object being written.
template <typename Inner>
class MemberSplicer {
 public:
  using Ch = char;
  explicit MemberSplicer(Inner* inner) : in_(*inner) {}
  SizeType members() const { return members_; }
  bool Null() { return in_.Null(); }
  bool Bool(bool b) { return in_.Bool(b); }
  bool Int(int i) { return in_.Int(i); }
  bool Uint(unsigned u) { return in_.Uint(u); }
  bool Int64(int64_t i) { return in_.Int64(i); }
  bool Uint64(uint64_t u) { return in_.Uint64(u); }
  bool Double(double d) { return in_.Double(d); }
  bool RawNumber(const Ch* s, SizeType n, bool copy) {
    return in_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, SizeType n, bool copy) {
    return in_.String(s, n, copy);
  }
  bool StartObject() { return depth_++ == 0 ? true : in_.StartObject(); }
  bool Key(const Ch* s, SizeType n, bool copy) {
    if (depth_ == 1) ++members_;
    return in_.Key(s, n, copy);
  }
  bool EndObject(SizeType n) { return --depth_ == 0 ? true : in_.EndObject(n); }
  bool StartArray() {
    ++depth_;
    return in_.StartArray();
  }
  bool EndArray(SizeType n) {
    --depth_;
    return in_.EndArray(n);
  }

 private:
  Inner& in_;
  int depth_ = 0;
  SizeType members_ = 0;
};

template <typename Handler>
class Encoder {
 public:
  explicit Encoder(Handler* h) : h_(*h) {}

  void Root(const Message& m, const TypeMeta& tm) {
    const MessageTable& t = *TableFor(m.GetDescriptor());
    if (t.special != Special::kNone) {
      SpecialValue(m, t);
      return;
    }
    Object(m, t, &tm);
  }

 private:
  static constexpr bool kIsDom = std::is_same_v<Handler, rapidjson::Document>;

  // Strings and keys go out as valid UTF-8 whatever a protobuf body put in
  // them (see ReplaceInvalidUtf8).
  void Key(std::string_view k) {
    if (!IsValidUtf8(k)) {
      const std::string fixed = ReplaceInvalidUtf8(k);
      h_.Key(fixed.data(), static_cast<SizeType>(fixed.size()), true);
      return;
    }
    h_.Key(k.data(), static_cast<SizeType>(k.size()), true);
  }
  void Str(std::string_view s) {
    if (!IsValidUtf8(s)) {
      const std::string fixed = ReplaceInvalidUtf8(s);
      h_.String(fixed.data(), static_cast<SizeType>(fixed.size()), true);
      return;
    }
    h_.String(s.data(), static_cast<SizeType>(s.size()), true);
  }

  void Object(const Message& m, const MessageTable& t, const TypeMeta* tm) {
    if (const auto* u =
            google::protobuf::DynamicCastToGenerated<Unstructured>(&m)) {
      UnstructuredObject(*u, tm);
      return;
    }
    h_.StartObject();
    SizeType n = 0;
    if (tm != nullptr) {
      if (!tm->kind.empty()) {
        Key("kind");
        Str(tm->kind);
        ++n;
      }
      if (!tm->api_version.empty()) {
        Key("apiVersion");
        Str(tm->api_version);
        ++n;
      }
    }
    n += Members(m, t);
    h_.EndObject(n);
  }

  SizeType Members(const Message& m, const MessageTable& t) {
    const Reflection* r = m.GetReflection();
    SizeType n = 0;
    for (const FieldEntry& f : t.fields) {
      const FieldDescriptor* fd = f.field;
      if (f.is_inline) {
        n += Members(r->GetMessage(m, fd), *f.table);
        continue;
      }
      if (f.repeated) {
        const int size = r->FieldSize(m, fd);
        if (size == 0 && f.emit != Emit::kAlways) continue;
        Key(f.name);
        ++n;
        if (f.is_map) {
          Map(m, f, size);
        } else {
          List(m, f, size);
        }
        continue;
      }
      const bool has = r->HasField(m, fd);
      if (fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        if (!has && f.emit != Emit::kAlways) continue;
        Key(f.name);
        ++n;
        MessageValue(r->GetMessage(m, fd), f);
        continue;
      }
      if (f.emit == Emit::kIfSet && !has) continue;
      if (f.emit == Emit::kNonZero && (!has || IsZeroScalar(*r, m, fd))) {
        continue;
      }
      Key(f.name);
      ++n;
      Scalar(*r, m, fd, -1);
    }
    return n;
  }

  void MessageValue(const Message& sub, const FieldEntry& f) {
    if (f.special != Special::kNone) {
      SpecialValue(sub, *f.table);
    } else {
      Object(sub, *f.table, nullptr);
    }
  }

  void List(const Message& m, const FieldEntry& f, int size) {
    const Reflection* r = m.GetReflection();
    h_.StartArray();
    for (int i = 0; i < size; ++i) {
      if (f.table != nullptr) {
        MessageValue(r->GetRepeatedMessage(m, f.field, i), f);
      } else {
        Scalar(*r, m, f.field, i);
      }
    }
    h_.EndArray(static_cast<SizeType>(size));
  }

  // Maps are written with sorted keys, as Go does, so equal objects encode
  // to equal bytes whatever their insertion order.
  void Map(const Message& m, const FieldEntry& f, int size) {
    const Reflection* r = m.GetReflection();
    std::vector<std::pair<std::string_view, const Message*>> entries;
    entries.reserve(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) {
      const Message& e = r->GetRepeatedMessage(m, f.field, i);
      const std::string& k =
          e.GetReflection()->GetStringReference(e, f.map_key, nullptr);
      entries.emplace_back(k, &e);
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    h_.StartObject();
    for (const auto& [key, e] : entries) {
      Key(key);
      const Reflection* er = e->GetReflection();
      if (f.table != nullptr) {
        MessageValue(er->GetMessage(*e, f.value), f);
      } else {
        Scalar(*er, *e, f.value, -1);
      }
    }
    h_.EndObject(static_cast<SizeType>(entries.size()));
  }

  static bool IsZeroScalar(const Reflection& r, const Message& m,
                           const FieldDescriptor* fd) {
    switch (fd->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return r.GetInt32(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_INT64:
        return r.GetInt64(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_UINT32:
        return r.GetUInt32(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_UINT64:
        return r.GetUInt64(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return r.GetDouble(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_FLOAT:
        return r.GetFloat(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_BOOL:
        return !r.GetBool(m, fd);
      case FieldDescriptor::CPPTYPE_ENUM:
        return r.GetEnumValue(m, fd) == 0;
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string scratch;
        return r.GetStringReference(m, fd, &scratch).empty();
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
    return false;
  }

  void Number(double d) {
    // Go refuses NaN and infinities; we write null rather than bad JSON.
    if (std::isfinite(d)) {
      h_.Double(d);
    } else {
      h_.Null();
    }
  }

  // index < 0: singular field; otherwise element `index` of a repeated one.
  void Scalar(const Reflection& r, const Message& m, const FieldDescriptor* fd,
              int index) {
    const bool rep = index >= 0;
    switch (fd->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        h_.Int(rep ? r.GetRepeatedInt32(m, fd, index) : r.GetInt32(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_INT64:
        h_.Int64(rep ? r.GetRepeatedInt64(m, fd, index) : r.GetInt64(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_UINT32:
        h_.Uint(rep ? r.GetRepeatedUInt32(m, fd, index) : r.GetUInt32(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_UINT64:
        h_.Uint64(rep ? r.GetRepeatedUInt64(m, fd, index) : r.GetUInt64(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        Number(rep ? r.GetRepeatedDouble(m, fd, index) : r.GetDouble(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_FLOAT:
        Number(rep ? r.GetRepeatedFloat(m, fd, index) : r.GetFloat(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_BOOL:
        h_.Bool(rep ? r.GetRepeatedBool(m, fd, index) : r.GetBool(m, fd));
        return;
      case FieldDescriptor::CPPTYPE_ENUM:
        Str(rep ? r.GetRepeatedEnum(m, fd, index)->name()
                : r.GetEnum(m, fd)->name());
        return;
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string scratch;
        const std::string& s =
            rep ? r.GetRepeatedStringReference(m, fd, index, &scratch)
                : r.GetStringReference(m, fd, &scratch);
        if (fd->type() == FieldDescriptor::TYPE_BYTES) {
          Str(Base64Encode(s));
        } else {
          Str(s);
        }
        return;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
    LOG(FATAL) << "not a scalar: " << fd->full_name();
  }

  // apiVersion and kind (the caller's, else the object's own), metadata,
  // then the members of the content.
  void UnstructuredObject(const Unstructured& u, const TypeMeta* tm) {
    h_.StartObject();
    SizeType n = 0;
    const bool given = tm != nullptr && !tm->empty();
    const std::string& api_version = given ? tm->api_version : u.apiversion();
    const std::string& kind = given ? tm->kind : u.kind();
    if (!api_version.empty()) {
      Key("apiVersion");
      Str(api_version);
      ++n;
    }
    if (!kind.empty()) {
      Key("kind");
      Str(kind);
      ++n;
    }
    Key("metadata");
    Object(u.metadata(), *TableFor(u.metadata().GetDescriptor()), nullptr);
    ++n;
    n += SpliceMembers(u.content());
    h_.EndObject(n);
  }

  // How stored raw JSON is re-read: numbers kept exact (as strings for the
  // text writer), encodings checked.
  static constexpr unsigned kFlags =
      kIsDom ? (rapidjson::kParseFullPrecisionFlag |
                rapidjson::kParseValidateEncodingFlag)
             : (rapidjson::kParseNumbersAsStringsFlag |
                rapidjson::kParseValidateEncodingFlag);

  // Whether `raw` parses whole with kFlags, before any of it is written (a
  // half-written value would break the output). Stored raw JSON came
  // through our bounded parsers, but a protobuf body may carry any bytes:
  // json::ParseSax parses iteratively and within the depth limit.
  static bool ParsesAsJson(const std::string& raw) {
    rapidjson::BaseReaderHandler<> check;
    json::ViewStream in(raw);
    return json::ParseSax<kFlags>(in, check).ok();
  }

  // Writes the members of the JSON object `raw` into the object being
  // written; content that is not a JSON object adds nothing.
  SizeType SpliceMembers(const std::string& raw) {
    const size_t first = raw.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || raw[first] != '{') return 0;
    if (!ParsesAsJson(raw)) return 0;
    json::ViewStream in(raw);
    if constexpr (kIsDom) {
      MemberSplicer<Handler> splicer(&h_);
      json::ParseSax<kFlags>(in, splicer);
      return splicer.members();
    } else {
      RawNumberFix<Handler> fixed(&h_);
      MemberSplicer<RawNumberFix<Handler>> splicer(&fixed);
      json::ParseSax<kFlags>(in, splicer);
      return splicer.members();
    }
  }

  void SpecialValue(const Message& m, const MessageTable& t) {
    const Reflection* r = m.GetReflection();
    const auto& sf = t.special_fields;
    switch (t.special) {
      case Special::kTime:
      case Special::kMicroTime:
        if (!r->HasField(m, sf[1]) && !r->HasField(m, sf[2])) {
          h_.Null();  // Go's zero time.Time
        } else if (t.special == Special::kTime) {
          Str(FormatRfc3339(r->GetInt64(m, sf[1])));
        } else {
          Str(FormatRfc3339Micro(r->GetInt64(m, sf[1]), r->GetInt32(m, sf[2])));
        }
        return;
      case Special::kDuration:
        Str(FormatGoDuration(r->GetInt64(m, sf[1])));
        return;
      case Special::kIntOrString:
        if (r->GetInt64(m, sf[1]) == 1) {
          std::string scratch;
          Str(r->GetStringReference(m, sf[3], &scratch));
        } else {
          h_.Int(r->GetInt32(m, sf[2]));
        }
        return;
      case Special::kQuantity: {
        std::string scratch;
        const std::string& s = r->GetStringReference(m, sf[1], &scratch);
        Str(s.empty() ? std::string_view("0") : std::string_view(s));
        return;
      }
      case Special::kRawJson: {
        std::string scratch;
        EmbedRaw(r->GetStringReference(m, t.raw_field, &scratch));
        return;
      }
      case Special::kNone:
        break;
    }
    LOG(FATAL) << "not a special message: " << m.GetDescriptor()->full_name();
  }

  // Writes stored raw JSON as part of the output, re-tokenised so the result
  // stays one line. Raw bytes that are not JSON (a protobuf RawExtension has
  // none we could show) are written as null rather than breaking the output.
  void EmbedRaw(const std::string& raw) {
    if (raw.empty()) {
      h_.Null();
      return;
    }
    if (!ParsesAsJson(raw)) {
      h_.Null();
      return;
    }
    json::ViewStream in(raw);
    if constexpr (kIsDom) {
      json::ParseSax<kFlags>(in, h_);
    } else {
      RawNumberFix<Handler> fixed(&h_);
      json::ParseSax<kFlags>(in, fixed);
    }
  }

  Handler& h_;
};

// ---------------------------------------------------------------------------
// Decoding

enum class TokenType : uint8_t {
  kNull,
  kBool,
  kInt,        // i
  kUint,       // u
  kDouble,     // d
  kRawNumber,  // text (exact JSON number text)
  kString,     // text
};

struct Token {
  TokenType type = TokenType::kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view text;
};

std::string Describe(const Token& t) {
  switch (t.type) {
    case TokenType::kNull:
      return "null";
    case TokenType::kBool:
      return t.b ? "bool true" : "bool false";
    case TokenType::kInt:
      return "number " + std::to_string(t.i);
    case TokenType::kUint:
      return "number " + std::to_string(t.u);
    case TokenType::kDouble:
      return "number " + ShortestDouble(t.d);
    case TokenType::kRawNumber:
      return "number " + std::string(t.text);
    case TokenType::kString: {
      constexpr size_t kMax = 64;
      std::string s(t.text.substr(0, kMax));
      return "string \"" + s + (t.text.size() > kMax ? "...\"" : "\"");
    }
  }
  return "value";
}

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

class Decoder {
 public:
  Decoder(Message* root, DecodeResult* result, bool lenient_doubles)
      : root_(root), result_(result), lenient_doubles_(lenient_doubles) {}

  const Status& status() const { return status_; }

  // rapidjson SAX handler interface.
  bool Null() { return Scalar(Token{}); }
  bool Bool(bool b) {
    Token t;
    t.type = TokenType::kBool;
    t.b = b;
    return Scalar(t);
  }
  bool Int(int i) { return Int64(i); }
  bool Int64(int64_t i) {
    Token t;
    t.type = TokenType::kInt;
    t.i = i;
    return Scalar(t);
  }
  bool Uint(unsigned u) { return Uint64(u); }
  bool Uint64(uint64_t u) {
    Token t;
    t.type = TokenType::kUint;
    t.u = u;
    return Scalar(t);
  }
  bool Double(double d) {
    Token t;
    t.type = TokenType::kDouble;
    t.d = d;
    return Scalar(t);
  }
  bool RawNumber(const char* s, SizeType n, bool) {
    Token t;
    t.type = TokenType::kRawNumber;
    t.text = std::string_view(s, n);
    return Scalar(t);
  }
  bool String(const char* s, SizeType n, bool) {
    if (!IsValidUtf8(std::string_view(s, n))) {
      return Fail("invalid UTF-8 in string");
    }
    Token t;
    t.type = TokenType::kString;
    t.text = std::string_view(s, n);
    return Scalar(t);
  }
  bool StartObject();
  bool Key(const char* s, SizeType n, bool);
  bool EndObject(SizeType);
  bool StartArray();
  bool EndArray(SizeType);

 private:
  enum class FrameKind : uint8_t { kMessage, kList, kMap, kSkip, kCapture };

  struct Frame {
    FrameKind kind = FrameKind::kMessage;
    // kMessage: the object being filled. kList/kMap: the message owning
    // `field`.
    Message* msg = nullptr;
    const MessageTable* table = nullptr;  // kMessage
    // kList/kMap: the field. kMessage: the field of the pending member.
    const FieldEntry* field = nullptr;
    // kMessage: the message holding the pending member's field (msg, or the
    // inlined sub-message).
    Message* owner = nullptr;
    bool has_pending = false;
    bool pending_skip = false;      // unknown member: ignore its value
    uint8_t pending_type_meta = 0;  // 1 kind, 2 apiVersion
    size_t path_len = 0;            // path_ length of this frame's own location
    int index = 0;                  // kList: index of the next element
    int depth = 0;                  // kSkip/kCapture: open containers
    uint64_t seen = 0;              // kMessage: member slots seen (first 64)
    std::vector<bool> seen_more;    // slots >= 64
    std::unordered_set<std::string> map_keys;  // kMap
    std::string map_key;                       // kMap: pending key
  };

  bool Fail(std::string message) {
    if (status_.ok()) {
      status_ = InvalidArgumentError(path_.empty() ? message
                                                   : path_ + ": " + message);
    }
    return false;
  }
  bool TypeError(std::string_view expected, const std::string& got) {
    return Fail("expected " + std::string(expected) + ", got " + got);
  }

  static void Report(std::vector<std::string>* list, const std::string& path) {
    if (list->size() >= kMaxReportedFields) return;
    if (std::find(list->begin(), list->end(), path) != list->end()) return;
    list->push_back(path);
  }

  // Called when the value of the top frame's current member/element ends.
  void Done() {
    Frame& f = stack_.back();
    path_.resize(f.path_len);
    switch (f.kind) {
      case FrameKind::kMessage:
        f.has_pending = false;
        f.pending_skip = false;
        f.pending_type_meta = 0;
        f.field = nullptr;
        f.owner = nullptr;
        break;
      case FrameKind::kList:
        ++f.index;
        break;
      default:
        break;
    }
  }

  void PushMessage(Message* m, const MessageTable* table) {
    Frame f;
    f.kind = FrameKind::kMessage;
    f.msg = m;
    f.table = table;
    f.path_len = path_.size();
    stack_.push_back(std::move(f));
  }

  void PushContainer(FrameKind kind, Message* owner, const FieldEntry* field) {
    Frame f;
    f.kind = kind;
    f.msg = owner;
    f.field = field;
    f.path_len = path_.size();
    stack_.push_back(std::move(f));
  }

  void PushSkip() {
    Frame f;
    f.kind = FrameKind::kSkip;
    f.depth = 1;
    f.path_len = path_.size();
    stack_.push_back(std::move(f));
  }

  // Starts capturing the current value as raw JSON into `target` (a
  // RawExtension or FieldsV1 message).
  void PushCapture(Message* target, const MessageTable& table, bool object) {
    capture_target_ = target;
    capture_field_ = table.raw_field;
    capture_buffer_.Clear();
    capture_writer_.Reset(capture_buffer_);
    if (object) {
      capture_writer_.StartObject();
    } else {
      capture_writer_.StartArray();
    }
    Frame f;
    f.kind = FrameKind::kCapture;
    f.depth = 1;
    f.path_len = path_.size();
    stack_.push_back(std::move(f));
  }

  void FinishCapture() {
    capture_target_->GetReflection()->SetString(
        capture_target_, capture_field_,
        std::string(capture_buffer_.GetString(), capture_buffer_.GetSize()));
    capture_target_ = nullptr;
  }

  void AppendIndex(const Frame& f) {
    path_ += '[';
    path_ += std::to_string(f.index);
    path_ += ']';
  }

  bool Scalar(const Token& t);
  bool ScalarInto(Message* owner, const FieldEntry& f, const Token& t);
  bool ListElement(Message* owner, const FieldEntry& f, const Token& t);
  bool MapValue(Message* owner, const FieldEntry& f, const std::string& key,
                const Token& t);
  bool SetScalar(Message* m, const FieldDescriptor* fd, const Token& t,
                 bool add);
  bool SetSpecial(Message* m, const MessageTable& table, const Token& t);
  bool CaptureScalar(Message* target, const MessageTable& table,
                     const Token& t);
  bool ForwardToCapture(const Token& t);
  template <typename T>
  bool ToInteger(const Token& t, std::string_view type_name, T* out);
  bool ToDouble(const Token& t, double* out);
  Message* MessageTarget(const FieldEntry& f, Message* owner, bool add);

  Message* root_;
  DecodeResult* result_;
  const bool lenient_doubles_;
  Status status_;
  std::vector<Frame> stack_;
  std::string path_;
  bool root_done_ = false;
  Message* capture_target_ = nullptr;
  const FieldDescriptor* capture_field_ = nullptr;
  rapidjson::StringBuffer capture_buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> capture_writer_;
};

template <typename T>
bool Decoder::ToInteger(const Token& t, std::string_view type_name, T* out) {
  constexpr bool kSigned = std::is_signed_v<T>;
  const auto lo = std::numeric_limits<T>::min();
  const auto hi = std::numeric_limits<T>::max();
  auto overflow = [&](const std::string& text) {
    return Fail("number " + text + " overflows " + std::string(type_name));
  };
  switch (t.type) {
    case TokenType::kRawNumber: {
      std::string_view digits = t.text;
      const bool negative = !digits.empty() && digits.front() == '-';
      if (negative) digits.remove_prefix(1);
      if (!IsDigits(digits)) {
        return TypeError("integer", Describe(t));
      }
      if (negative) {
        std::optional<int64_t> v = ParseInt64(t.text);
        if (!v || !kSigned || *v < static_cast<int64_t>(lo)) {
          return overflow(std::string(t.text));
        }
        *out = static_cast<T>(*v);
      } else {
        std::optional<uint64_t> v = ParseUint64(digits);
        if (!v || *v > static_cast<uint64_t>(hi)) {
          return overflow(std::string(t.text));
        }
        *out = static_cast<T>(*v);
      }
      return true;
    }
    case TokenType::kInt:
      if ((kSigned && t.i < static_cast<int64_t>(lo)) ||
          (!kSigned && t.i < 0) ||
          (t.i > 0 && static_cast<uint64_t>(t.i) > static_cast<uint64_t>(hi))) {
        return overflow(std::to_string(t.i));
      }
      *out = static_cast<T>(t.i);
      return true;
    case TokenType::kUint:
      if (t.u > static_cast<uint64_t>(hi)) {
        return overflow(std::to_string(t.u));
      }
      *out = static_cast<T>(t.u);
      return true;
    case TokenType::kDouble: {
      // Only from a parsed DOM (YAML's "replicas: 1.0", which Go's YAML to
      // JSON conversion writes as 1). JSON text keeps its raw number.
      if (!lenient_doubles_ || std::trunc(t.d) != t.d) {
        return TypeError("integer", Describe(t));
      }
      // hi + 1 is a power of two, so the upper bound is exact as a double.
      if (t.d < static_cast<double>(lo) ||
          t.d >= static_cast<double>(hi) + 1.0) {
        return overflow(ShortestDouble(t.d));
      }
      *out = static_cast<T>(t.d);
      return true;
    }
    default:
      return TypeError("integer", Describe(t));
  }
}

bool Decoder::ToDouble(const Token& t, double* out) {
  switch (t.type) {
    case TokenType::kRawNumber: {
      std::optional<double> v = ParseDouble(t.text);
      if (!v) return TypeError("number", Describe(t));
      *out = *v;
      return true;
    }
    case TokenType::kInt:
      *out = static_cast<double>(t.i);
      return true;
    case TokenType::kUint:
      *out = static_cast<double>(t.u);
      return true;
    case TokenType::kDouble:
      *out = t.d;
      return true;
    default:
      return TypeError("number", Describe(t));
  }
}

bool Decoder::SetScalar(Message* m, const FieldDescriptor* fd, const Token& t,
                        bool add) {
  const Reflection* r = m->GetReflection();
  switch (fd->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      if (t.type != TokenType::kBool) return TypeError("bool", Describe(t));
      add ? r->AddBool(m, fd, t.b) : r->SetBool(m, fd, t.b);
      return true;
    case FieldDescriptor::CPPTYPE_STRING: {
      if (t.type != TokenType::kString) return TypeError("string", Describe(t));
      if (fd->type() == FieldDescriptor::TYPE_BYTES) {
        StatusOr<std::string> bytes = Base64Decode(t.text);
        if (!bytes.ok()) return Fail("illegal base64 data");
        add ? r->AddString(m, fd, std::move(*bytes))
            : r->SetString(m, fd, std::move(*bytes));
      } else {
        add ? r->AddString(m, fd, std::string(t.text))
            : r->SetString(m, fd, std::string(t.text));
      }
      return true;
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v = 0;
      if (!ToInteger(t, "int32", &v)) return false;
      add ? r->AddInt32(m, fd, v) : r->SetInt32(m, fd, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v = 0;
      if (!ToInteger(t, "int64", &v)) return false;
      add ? r->AddInt64(m, fd, v) : r->SetInt64(m, fd, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = 0;
      if (!ToInteger(t, "uint32", &v)) return false;
      add ? r->AddUInt32(m, fd, v) : r->SetUInt32(m, fd, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = 0;
      if (!ToInteger(t, "uint64", &v)) return false;
      add ? r->AddUInt64(m, fd, v) : r->SetUInt64(m, fd, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v = 0;
      if (!ToDouble(t, &v)) return false;
      if (fd->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        add ? r->AddDouble(m, fd, v) : r->SetDouble(m, fd, v);
      } else {
        add ? r->AddFloat(m, fd, static_cast<float>(v))
            : r->SetFloat(m, fd, static_cast<float>(v));
      }
      return true;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      if (t.type != TokenType::kString) return TypeError("string", Describe(t));
      const auto* ev = fd->enum_type()->FindValueByName(std::string(t.text));
      if (ev == nullptr) return Fail("unknown value " + Describe(t));
      add ? r->AddEnum(m, fd, ev) : r->SetEnum(m, fd, ev);
      return true;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return TypeError("object", Describe(t));
}

bool Decoder::SetSpecial(Message* m, const MessageTable& table,
                         const Token& t) {
  const Reflection* r = m->GetReflection();
  const auto& sf = table.special_fields;
  switch (table.special) {
    case Special::kTime:
    case Special::kMicroTime: {
      if (t.type != TokenType::kString) return TypeError("string", Describe(t));
      StatusOr<Timestamp> ts = ParseRfc3339(t.text);
      if (!ts.ok()) return Fail(ts.status().message());
      r->SetInt64(m, sf[1], ts->seconds);
      // Time keeps whole seconds (its JSON form has no fraction); MicroTime
      // keeps microseconds.
      r->SetInt32(
          m, sf[2],
          table.special == Special::kTime ? 0 : ts->nanos / 1000 * 1000);
      return true;
    }
    case Special::kDuration: {
      if (t.type != TokenType::kString) return TypeError("string", Describe(t));
      StatusOr<int64_t> nanos = ParseGoDurationNanos(t.text);
      if (!nanos.ok()) return Fail(nanos.status().message());
      r->SetInt64(m, sf[1], *nanos);
      return true;
    }
    case Special::kIntOrString: {
      // All three fields are set, as Go's marshaller writes them, so our
      // protobuf bytes equal Kubernetes'.
      int32_t v = 0;
      std::string s;
      if (t.type == TokenType::kString) {
        s = std::string(t.text);
      } else if (!ToInteger(t, "int32", &v)) {
        return false;
      }
      r->SetInt64(m, sf[1], t.type == TokenType::kString ? 1 : 0);
      r->SetInt32(m, sf[2], v);
      r->SetString(m, sf[3], std::move(s));
      return true;
    }
    case Special::kQuantity: {
      std::string text;
      switch (t.type) {
        case TokenType::kString:
          text = std::string(StripWhitespace(t.text));
          break;
        case TokenType::kRawNumber:
          text = std::string(t.text);
          break;
        case TokenType::kInt:
          text = std::to_string(t.i);
          break;
        case TokenType::kUint:
          text = std::to_string(t.u);
          break;
        case TokenType::kDouble:
          text = ShortestDouble(t.d);
          break;
        default:
          return TypeError("quantity (string or number)", Describe(t));
      }
      if (!IsQuantitySyntax(text)) {
        return Fail(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
      }
      r->SetString(m, sf[1], std::move(text));
      return true;
    }
    case Special::kRawJson:
      return CaptureScalar(m, table, t);
    case Special::kNone:
      break;
  }
  return TypeError("object", Describe(t));
}

bool Decoder::CaptureScalar(Message* target, const MessageTable& table,
                            const Token& t) {
  capture_buffer_.Clear();
  capture_writer_.Reset(capture_buffer_);
  capture_target_ = target;
  capture_field_ = table.raw_field;
  ForwardToCapture(t);
  FinishCapture();
  return true;
}

bool Decoder::ForwardToCapture(const Token& t) {
  auto& w = capture_writer_;
  switch (t.type) {
    case TokenType::kNull:
      return w.Null();
    case TokenType::kBool:
      return w.Bool(t.b);
    case TokenType::kInt:
      return w.Int64(t.i);
    case TokenType::kUint:
      return w.Uint64(t.u);
    case TokenType::kDouble:
      return w.Double(t.d);
    case TokenType::kRawNumber:
      // Not w.RawNumber(): rapidjson 1.1 would quote it.
      return w.RawValue(t.text.data(), t.text.size(), rapidjson::kNumberType);
    case TokenType::kString:
      return w.String(t.text.data(), static_cast<SizeType>(t.text.size()));
  }
  return false;
}

// The message a compound value of field `f` goes into: the singular
// sub-message, or a new element of a repeated field.
Message* Decoder::MessageTarget(const FieldEntry& f, Message* owner, bool add) {
  const Reflection* r = owner->GetReflection();
  return add ? r->AddMessage(owner, f.field)
             : r->MutableMessage(owner, f.field);
}

bool Decoder::ScalarInto(Message* owner, const FieldEntry& f, const Token& t) {
  const Reflection* r = owner->GetReflection();
  if (t.type == TokenType::kNull) {
    r->ClearField(owner, f.field);  // Go: null leaves the zero value
    return true;
  }
  if (f.repeated) {
    return TypeError(f.is_map ? "object" : "array", Describe(t));
  }
  if (f.table != nullptr) {
    if (f.special == Special::kNone) return TypeError("object", Describe(t));
    return SetSpecial(MessageTarget(f, owner, false), *f.table, t);
  }
  return SetScalar(owner, f.field, t, /*add=*/false);
}

bool Decoder::ListElement(Message* owner, const FieldEntry& f, const Token& t) {
  if (f.table != nullptr) {
    Message* elem = MessageTarget(f, owner, true);
    if (t.type == TokenType::kNull) return true;  // Go appends a zero value
    if (f.special == Special::kNone) return TypeError("object", Describe(t));
    return SetSpecial(elem, *f.table, t);
  }
  if (t.type == TokenType::kNull) {
    Token zero;
    switch (f.field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_BOOL:
        zero.type = TokenType::kBool;
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        zero.type = TokenType::kString;
        break;
      default:
        zero.type = TokenType::kInt;
        break;
    }
    return SetScalar(owner, f.field, zero, /*add=*/true);
  }
  return SetScalar(owner, f.field, t, /*add=*/true);
}

bool Decoder::MapValue(Message* owner, const FieldEntry& f,
                       const std::string& key, const Token& t) {
  Message* entry = owner->GetReflection()->AddMessage(owner, f.field);
  const Reflection* er = entry->GetReflection();
  er->SetString(entry, f.map_key, key);
  if (t.type == TokenType::kNull) return true;  // the zero value
  if (f.table != nullptr) {
    if (f.special == Special::kNone) return TypeError("object", Describe(t));
    return SetSpecial(er->MutableMessage(entry, f.value), *f.table, t);
  }
  return SetScalar(entry, f.value, t, /*add=*/false);
}

bool Decoder::Scalar(const Token& t) {
  if (stack_.empty()) {
    return TypeError(root_done_ ? "end of input" : "object", Describe(t));
  }
  Frame& f = stack_.back();
  switch (f.kind) {
    case FrameKind::kSkip:
      return true;
    case FrameKind::kCapture:
      return ForwardToCapture(t);
    case FrameKind::kMessage: {
      bool ok = true;
      if (f.pending_skip) {
        // Unknown member: ignored.
      } else if (f.pending_type_meta != 0) {
        if (t.type == TokenType::kString) {
          if (stack_.size() == 1) {
            (f.pending_type_meta == 1 ? result_->type_meta.kind
                                      : result_->type_meta.api_version) =
                std::string(t.text);
          }
        } else if (t.type != TokenType::kNull) {
          ok = TypeError("string", Describe(t));
        }
      } else {
        ok = ScalarInto(f.owner, *f.field, t);
      }
      if (ok) Done();
      return ok;
    }
    case FrameKind::kList: {
      AppendIndex(f);
      if (!ListElement(f.msg, *f.field, t)) return false;
      Done();
      return true;
    }
    case FrameKind::kMap: {
      if (!MapValue(f.msg, *f.field, f.map_key, t)) return false;
      Done();
      return true;
    }
  }
  return false;
}

bool Decoder::StartObject() {
  if (stack_.empty()) {
    if (root_done_) return TypeError("end of input", "object");
    if (TableFor(root_->GetDescriptor())->special != Special::kNone) {
      return Fail("cannot decode " + root_->GetDescriptor()->full_name() +
                  " as a top-level object");
    }
    PushMessage(root_, TableFor(root_->GetDescriptor()));
    return true;
  }
  Frame& f = stack_.back();
  switch (f.kind) {
    case FrameKind::kSkip:
      ++f.depth;
      return true;
    case FrameKind::kCapture:
      ++f.depth;
      return capture_writer_.StartObject();
    case FrameKind::kMessage: {
      if (f.pending_skip) {
        PushSkip();
        return true;
      }
      if (f.pending_type_meta != 0) return TypeError("string", "object");
      const FieldEntry& fe = *f.field;
      if (fe.is_map) {
        PushContainer(FrameKind::kMap, f.owner, &fe);
        return true;
      }
      if (fe.repeated) return TypeError("array", "object");
      if (fe.table == nullptr) {
        return TypeError(
            fe.field->cpp_type() == FieldDescriptor::CPPTYPE_STRING ? "string"
            : fe.field->cpp_type() == FieldDescriptor::CPPTYPE_BOOL ? "bool"
                                                                    : "number",
            "object");
      }
      if (fe.special == Special::kRawJson) {
        PushCapture(MessageTarget(fe, f.owner, false), *fe.table,
                    /*object=*/true);
        return true;
      }
      if (fe.special != Special::kNone) return TypeError("string", "object");
      PushMessage(MessageTarget(fe, f.owner, false), fe.table);
      return true;
    }
    case FrameKind::kList: {
      const FieldEntry& fe = *f.field;
      AppendIndex(f);
      if (fe.table == nullptr) return TypeError("array element", "object");
      if (fe.special == Special::kRawJson) {
        PushCapture(MessageTarget(fe, f.msg, true), *fe.table, /*object=*/true);
        return true;
      }
      if (fe.special != Special::kNone) return TypeError("string", "object");
      PushMessage(MessageTarget(fe, f.msg, true), fe.table);
      return true;
    }
    case FrameKind::kMap: {
      const FieldEntry& fe = *f.field;
      if (fe.table == nullptr || fe.special != Special::kNone) {
        if (fe.special == Special::kRawJson) {
          Message* entry = f.msg->GetReflection()->AddMessage(f.msg, fe.field);
          entry->GetReflection()->SetString(entry, fe.map_key, f.map_key);
          PushCapture(entry->GetReflection()->MutableMessage(entry, fe.value),
                      *fe.table, /*object=*/true);
          return true;
        }
        return TypeError("string", "object");
      }
      Message* entry = f.msg->GetReflection()->AddMessage(f.msg, fe.field);
      entry->GetReflection()->SetString(entry, fe.map_key, f.map_key);
      PushMessage(entry->GetReflection()->MutableMessage(entry, fe.value),
                  fe.table);
      return true;
    }
  }
  return false;
}

bool Decoder::Key(const char* s, SizeType n, bool) {
  Frame& f = stack_.back();
  std::string_view key(s, n);
  if (!IsValidUtf8(key)) return Fail("invalid UTF-8 in member name");
  switch (f.kind) {
    case FrameKind::kSkip:
      return true;
    case FrameKind::kCapture:
      return capture_writer_.Key(s, n);
    case FrameKind::kMessage: {
      if (!path_.empty()) path_ += '.';
      path_ += key;
      f.has_pending = true;
      int slot = 0;
      const KeyEntry* e = f.table->FindKey(key, &slot);
      if (e == nullptr) {
        Report(&result_->unknown_fields, path_);
        f.pending_skip = true;
        return true;
      }
      bool dup;
      if (slot < 64) {
        dup = (f.seen >> slot) & 1;
        f.seen |= uint64_t{1} << slot;
      } else {
        const size_t i = static_cast<size_t>(slot - 64);
        if (f.seen_more.size() <= i) f.seen_more.resize(i + 1);
        dup = f.seen_more[i];
        f.seen_more[i] = true;
      }
      if (dup) Report(&result_->duplicate_fields, path_);
      if (e->type_meta_member != 0) {
        f.pending_type_meta = e->type_meta_member;
        return true;
      }
      f.field = e->field;
      f.owner = e->via_inline == nullptr
                    ? f.msg
                    : f.msg->GetReflection()->MutableMessage(
                          f.msg, e->via_inline->field);
      return true;
    }
    case FrameKind::kMap:
      path_ += '.';
      path_ += key;
      f.map_key.assign(key);
      if (!f.map_keys.insert(f.map_key).second) {
        Report(&result_->duplicate_fields, path_);
      }
      return true;
    case FrameKind::kList:
      break;
  }
  return Fail("unexpected member");
}

bool Decoder::EndObject(SizeType) {
  Frame& f = stack_.back();
  switch (f.kind) {
    case FrameKind::kSkip:
      if (--f.depth > 0) return true;
      stack_.pop_back();
      Done();
      return true;
    case FrameKind::kCapture:
      if (!capture_writer_.EndObject()) return Fail("bad raw JSON");
      if (--f.depth > 0) return true;
      FinishCapture();
      stack_.pop_back();
      Done();
      return true;
    case FrameKind::kMessage:
    case FrameKind::kMap:
      stack_.pop_back();
      if (stack_.empty()) {
        root_done_ = true;
      } else {
        Done();
      }
      return true;
    case FrameKind::kList:
      break;
  }
  return Fail("unbalanced object");
}

bool Decoder::StartArray() {
  if (stack_.empty()) return TypeError("object", "array");
  Frame& f = stack_.back();
  switch (f.kind) {
    case FrameKind::kSkip:
      ++f.depth;
      return true;
    case FrameKind::kCapture:
      ++f.depth;
      return capture_writer_.StartArray();
    case FrameKind::kMessage: {
      if (f.pending_skip) {
        PushSkip();
        return true;
      }
      if (f.pending_type_meta != 0) return TypeError("string", "array");
      const FieldEntry& fe = *f.field;
      if (fe.repeated && !fe.is_map) {
        // Go replaces a slice's contents rather than appending to them.
        f.owner->GetReflection()->ClearField(f.owner, fe.field);
        PushContainer(FrameKind::kList, f.owner, &fe);
        return true;
      }
      if (!fe.repeated && fe.special == Special::kRawJson) {
        PushCapture(MessageTarget(fe, f.owner, false), *fe.table,
                    /*object=*/false);
        return true;
      }
      return TypeError(fe.is_map || fe.table != nullptr ? "object" : "scalar",
                       "array");
    }
    case FrameKind::kList: {
      const FieldEntry& fe = *f.field;
      AppendIndex(f);
      if (fe.special == Special::kRawJson) {
        PushCapture(MessageTarget(fe, f.msg, true), *fe.table,
                    /*object=*/false);
        return true;
      }
      return TypeError(fe.table != nullptr ? "object" : "scalar", "array");
    }
    case FrameKind::kMap: {
      const FieldEntry& fe = *f.field;
      if (fe.special == Special::kRawJson) {
        Message* entry = f.msg->GetReflection()->AddMessage(f.msg, fe.field);
        entry->GetReflection()->SetString(entry, fe.map_key, f.map_key);
        PushCapture(entry->GetReflection()->MutableMessage(entry, fe.value),
                    *fe.table, /*object=*/false);
        return true;
      }
      return TypeError(fe.table != nullptr ? "object" : "scalar", "array");
    }
  }
  return false;
}

bool Decoder::EndArray(SizeType) {
  Frame& f = stack_.back();
  switch (f.kind) {
    case FrameKind::kSkip:
      if (--f.depth > 0) return true;
      stack_.pop_back();
      Done();
      return true;
    case FrameKind::kCapture:
      if (!capture_writer_.EndArray()) return Fail("bad raw JSON");
      if (--f.depth > 0) return true;
      FinishCapture();
      stack_.pop_back();
      Done();
      return true;
    case FrameKind::kList:
      stack_.pop_back();
      Done();
      return true;
    default:
      break;
  }
  return Fail("unbalanced array");
}

}  // namespace

std::vector<std::string> DecodeResult::Warnings() const {
  std::vector<std::string> out;
  out.reserve(unknown_fields.size() + duplicate_fields.size());
  // Go's %q, as sigs.k8s.io/json's strict errors write the path: a field
  // named "a\r\nb" is reported as "a\\r\\nb", never with raw control
  // characters (these texts become Warning headers).
  for (const std::string& p : unknown_fields) {
    out.push_back("unknown field " + GoQuote(p));
  }
  for (const std::string& p : duplicate_fields) {
    out.push_back("duplicate field " + GoQuote(p));
  }
  return out;
}

std::string DecodeResult::StrictErrorMessage() const {
  return "strict decoding error: " + StrJoin(Warnings(), ", ");
}

namespace {

// Go's names of JSON value types, as the decoder's errors use them.
const char* JsonTypeName(const rapidjson::Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "bool";
  if (v.IsNumber()) return "number";
  if (v.IsString()) return "string";
  if (v.IsArray()) return "array";
  return "object";
}

// An Unstructured from a JSON object: apiVersion and kind, metadata through
// the typed decoder, every other member into the content.
StatusOr<DecodeResult> DecodeUnstructured(const rapidjson::Value& value,
                                          Unstructured* u) {
  u->Clear();
  DecodeResult result;
  if (!value.IsObject()) {
    return InvalidArgumentError(std::string("expected object, got ") +
                                JsonTypeName(value));
  }
  rapidjson::Document content;
  content.SetObject();
  for (const auto& m : value.GetObject()) {
    const std::string_view key(m.name.GetString(), m.name.GetStringLength());
    if (key == "apiVersion" || key == "kind") {
      if (m.value.IsNull()) continue;
      if (!m.value.IsString()) {
        return InvalidArgumentError(std::string(key) +
                                    ": expected string, got " +
                                    JsonTypeName(m.value));
      }
      std::string s(m.value.GetString(), m.value.GetStringLength());
      if (key == "apiVersion") {
        result.type_meta.api_version = s;
        u->set_apiversion(std::move(s));
      } else {
        result.type_meta.kind = s;
        u->set_kind(std::move(s));
      }
      continue;
    }
    if (key == "metadata") {
      if (m.value.IsNull()) continue;
      StatusOr<DecodeResult> meta =
          DecodeJsonValue(m.value, u->mutable_metadata());
      if (!meta.ok()) {
        return InvalidArgumentError("metadata." + meta.status().message());
      }
      for (const std::string& f : meta->unknown_fields) {
        result.unknown_fields.push_back("metadata." + f);
      }
      for (const std::string& f : meta->duplicate_fields) {
        result.duplicate_fields.push_back("metadata." + f);
      }
      continue;
    }
    content.AddMember(rapidjson::Value(m.name, content.GetAllocator()),
                      rapidjson::Value(m.value, content.GetAllocator()),
                      content.GetAllocator());
  }
  SetContent(u, content);
  return result;
}

}  // namespace

StatusOr<DecodeResult> DecodeJson(std::string_view text, Message* msg) {
  if (auto* u = google::protobuf::DynamicCastToGenerated<Unstructured>(msg)) {
    rapidjson::Document doc;
    json::Outcome pr =
        json::ParseDom<rapidjson::kParseFullPrecisionFlag |
                       rapidjson::kParseValidateEncodingFlag>(text, &doc);
    if (!pr.ok()) {
      u->Clear();
      return InvalidArgumentError("invalid JSON: " + pr.Message() +
                                  " (at offset " + std::to_string(pr.offset) +
                                  ")");
    }
    return DecodeUnstructured(doc, u);
  }
  msg->Clear();
  DecodeResult result;
  Decoder decoder(msg, &result, /*lenient_doubles=*/false);
  // In-situ parsing of a private copy: strings are unescaped in place and
  // reach the decoder without another copy. A NUL byte ends the text (and
  // is then reported as malformed JSON).
  std::string buffer(text);
  rapidjson::InsituStringStream in(buffer.data());
  // UTF-8 is checked by the decoder itself, faster than rapidjson's
  // per-character validation.
  constexpr unsigned kFlags =
      rapidjson::kParseInsituFlag | rapidjson::kParseNumbersAsStringsFlag;
  json::Outcome pr = json::ParseSax<kFlags>(in, decoder);
  if (!decoder.status().ok()) return decoder.status();
  if (!pr.ok()) {
    return InvalidArgumentError("invalid JSON: " + pr.Message() +
                                " (at offset " + std::to_string(pr.offset) +
                                ")");
  }
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("invalid JSON: NUL byte in input");
  }
  return result;
}

StatusOr<DecodeResult> DecodeJsonValue(const rapidjson::Value& value,
                                       Message* msg) {
  if (auto* u = google::protobuf::DynamicCastToGenerated<Unstructured>(msg)) {
    return DecodeUnstructured(value, u);
  }
  msg->Clear();
  DecodeResult result;
  Decoder decoder(msg, &result, /*lenient_doubles=*/true);
  // Without recursion: the DOM may come from a hostile YAML body or patch.
  json::DepthLimitedHandler<Decoder> limited(&decoder, json::kMaxDepth);
  if (!json::Accept(value, limited)) {
    if (!decoder.status().ok()) return decoder.status();
    if (limited.exceeded()) {
      return InvalidArgumentError(json::MaxDepthMessage());
    }
    return InvalidArgumentError("invalid JSON value");
  }
  return result;
}

std::string EncodeJson(const Message& msg, const TypeMeta& type_meta) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  WriteJson(msg, &writer, type_meta);
  return std::string(buffer.GetString(), buffer.GetSize());
}

void WriteJson(const Message& msg,
               rapidjson::Writer<rapidjson::StringBuffer>* writer,
               const TypeMeta& type_meta) {
  Encoder<rapidjson::Writer<rapidjson::StringBuffer>>(writer).Root(msg,
                                                                   type_meta);
}

void WriteJson(const Message& msg,
               rapidjson::PrettyWriter<rapidjson::StringBuffer>* writer,
               const TypeMeta& type_meta) {
  Encoder<rapidjson::PrettyWriter<rapidjson::StringBuffer>>(writer).Root(
      msg, type_meta);
}

rapidjson::Value ToJsonValue(const Message& msg,
                             rapidjson::MemoryPoolAllocator<>& allocator,
                             const TypeMeta& type_meta) {
  rapidjson::Document doc(&allocator);
  auto generate = [&](rapidjson::Document& handler) {
    Encoder<rapidjson::Document>(&handler).Root(msg, type_meta);
    return true;
  };
  doc.Populate(generate);
  rapidjson::Value out;
  out.Swap(doc);
  return out;
}

}  // namespace kplane::objects
