#include "storage/etcdjson/etcd_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/base64.h"
#include "base/json.h"
#include "base/json_escape.h"
#include "base/statusor.h"
#include "base/strings.h"
#include "storage/etcdjson/etcd_json_value.h"
#include "storage/etcdjson/go_codes.h"
#include "storage/etcdjson/go_json_syntax.h"

namespace kplane::etcdjson {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// --- encoding ---------------------------------------------------------------
//
// Protobuf's JSON printer goes message -> binary -> type resolver -> JSON and
// was the largest cost of a store client (22 % of the apiserver's CPU while
// creating pods). This walks the message by reflection and writes what that
// printer writes, byte for byte, for every message etcd's API has: fields in
// number order under their proto names, a singular field when HasField (so
// proto3 zero values are omitted but a set oneof member is not), 64-bit
// integers quoted, bytes in padded base64, enums by name (by number when the
// value has no name). Anything it does not do identically (a string needing
// escapes, floats, maps, well-known types) sends the whole message to
// protobuf's printer instead; etcd_json_test compares the two.

// Fields in number order, the order of the binary form the printer reads.
const std::vector<const FieldDescriptor*>& FieldsByNumber(const Descriptor* d) {
  thread_local std::unordered_map<const Descriptor*,
                                  std::vector<const FieldDescriptor*>>
      cache;
  auto it = cache.find(d);
  if (it != cache.end()) return it->second;
  std::vector<const FieldDescriptor*> fields;
  for (int i = 0; i < d->field_count(); ++i) fields.push_back(d->field(i));
  std::sort(fields.begin(), fields.end(),
            [](const FieldDescriptor* a, const FieldDescriptor* b) {
              return a->number() < b->number();
            });
  return cache.emplace(d, std::move(fields)).first->second;
}

// Printable ASCII the printer copies as is ('<' and '>' it escapes).
bool PlainString(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>')
      return false;
  }
  return true;
}

bool AppendFast(const Message& m, std::string* out);

// One value of field `f` (element `i` of a repeated field, -1 otherwise).
bool AppendFieldValue(const Message& m, const Reflection* r,
                      const FieldDescriptor* f, int i, std::string* out) {
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      out->append(std::to_string(rep ? r->GetRepeatedInt32(m, f, i)
                                     : r->GetInt32(m, f)));
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      out->append(std::to_string(rep ? r->GetRepeatedUInt32(m, f, i)
                                     : r->GetUInt32(m, f)));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      out->push_back('"');
      out->append(std::to_string(rep ? r->GetRepeatedInt64(m, f, i)
                                     : r->GetInt64(m, f)));
      out->push_back('"');
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      out->push_back('"');
      out->append(std::to_string(rep ? r->GetRepeatedUInt64(m, f, i)
                                     : r->GetUInt64(m, f)));
      out->push_back('"');
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f))
                      ? "true"
                      : "false");
      return true;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int v =
          rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
      const auto* ev = f->enum_type()->FindValueByNumber(v);
      if (ev == nullptr) {
        out->append(std::to_string(v));
      } else {
        out->push_back('"');
        out->append(ev->name());
        out->push_back('"');
      }
      return true;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& v =
          rep ? r->GetRepeatedStringReference(m, f, i, &scratch)
              : r->GetStringReference(m, f, &scratch);
      out->push_back('"');
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        out->append(Base64Encode(v));
      } else {
        if (!PlainString(v)) return false;
        out->append(v);
      }
      out->push_back('"');
      return true;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return AppendFast(
          rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), out);
    default:  // float, double: protobuf's number formatting
      return false;
  }
}

bool AppendFast(const Message& m, std::string* out) {
  const Descriptor* d = m.GetDescriptor();
  if (d->full_name().starts_with("google.protobuf.")) return false;
  const Reflection* r = m.GetReflection();
  out->push_back('{');
  bool first = true;
  for (const FieldDescriptor* f : FieldsByNumber(d)) {
    if (f->is_map()) return false;
    int n = 0;
    if (f->is_repeated()) {
      n = r->FieldSize(m, f);
      if (n == 0) continue;
    } else if (!r->HasField(m, f)) {
      continue;
    }
    if (!first) out->push_back(',');
    first = false;
    out->push_back('"');
    out->append(f->name());
    out->append("\":");
    if (f->is_repeated()) {
      out->push_back('[');
      for (int i = 0; i < n; ++i) {
        if (i > 0) out->push_back(',');
        if (!AppendFieldValue(m, r, f, i, out)) return false;
      }
      out->push_back(']');
    } else if (!AppendFieldValue(m, r, f, -1, out)) {
      return false;
    }
  }
  out->push_back('}');
  return true;
}

// --- decoding ---------------------------------------------------------------
//
// The inverse, over a rapidjson DOM, accepting what etcd 3.4's gateway
// (grpc-gateway's jsonpb from golang/protobuf 1.3, unknown fields allowed)
// accepts: a field by its proto name or its JSON (lowerCamel) name,
// integers as numbers or decimal strings, enums by name or number, bytes in
// Go's base64.StdEncoding (padded, standard alphabet, CR and LF skipped),
// null as "not set". It refuses what jsonpb refuses, in jsonpb's words
// (clients match them; checked against etcd 3.4.23): an unknown enum name
// is `unknown value "X" for enum etcdserverpb.RangeRequest_SortOrder`, a
// value of the wrong JSON kind (a string for a bool, a number for bytes, an
// array for a message) is Go's `json: cannot unmarshal string into Go value
// of type bool`, an integer in float form (1.0, 1e3) Go's `json: cannot
// unmarshal number 1.0 into Go value of type int64`, bad base64 Go's
// `illegal base64 data at input byte 3`.
//
// An object is read as jsonpb reads it: first into a Go map (so of a key
// given twice only the last occurrence counts, and it replaces the earlier
// one whole), then field by field in declaration order (so the first error
// in that order is the one reported), a field's lowerCamel name winning
// over its proto name, the members of oneofs after all other fields. For a
// oneof given more than once jsonpb's order is a Go map's, random: see
// ParseMessage.

Status FieldError(const FieldDescriptor* f, std::string_view what) {
  return InvalidArgumentError("invalid value for " + f->full_name() + ": " +
                              std::string(what));
}

// The kind of a JSON value as Go's encoding/json names it in errors.
const char* JsonKind(const rapidjson::Value& v) {
  if (v.IsString()) return "string";
  if (v.IsNumber()) return "number";
  if (v.IsBool()) return "bool";
  if (v.IsObject()) return "object";
  if (v.IsArray()) return "array";
  return "null";
}

// The Go name of a type protoc-gen-gogo generates for the proto type
// `full_name` of package `pkg`, with `prefix` before the type's own name:
// etcdserverpb.RangeRequest.SortOrder -> "etcdserverpb.RangeRequest_SortOrder".
std::string GoName(const std::string& pkg, const std::string& full_name,
                   std::string_view prefix = "") {
  std::string nested = full_name.substr(pkg.empty() ? 0 : pkg.size() + 1);
  std::replace(nested.begin(), nested.end(), '.', '_');
  nested.insert(0, prefix);
  return pkg.empty() ? nested : pkg + "." + nested;
}

// The Go type of an enum, e.g. "etcdserverpb.RangeRequest_SortOrder".
std::string GoEnumName(const google::protobuf::EnumDescriptor* e) {
  return GoName(e->file()->package(), e->full_name());
}

// protoc-gen-go's CamelCase: "target_union" -> "TargetUnion".
std::string GoCamelCase(std::string_view s) {
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  std::string t;
  size_t i = 0;
  if (!s.empty() && s[0] == '_') {
    t += 'X';
    i = 1;
  }
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_' && i + 1 < s.size() && lower(s[i + 1])) continue;
    if (lower(c)) c = static_cast<char>(c - 'a' + 'A');
    t += c;
    while (i + 1 < s.size() && lower(s[i + 1])) t += s[++i];
  }
  return t;
}

// The Go interface type of a oneof's struct field, as errors name it:
// etcdserverpb.RequestOp's "request" -> "etcdserverpb.isRequestOp_Request".
std::string GoOneofName(const google::protobuf::OneofDescriptor* o) {
  const Descriptor* d = o->containing_type();
  return GoName(d->file()->package(), d->full_name(), "is") + "_" +
         GoCamelCase(o->name());
}

// The Go type jsonpb decodes field `f` (one element of it, if repeated)
// into, as its errors name it.
std::string GoTypeName(const FieldDescriptor* f) {
  switch (f->type()) {
    case FieldDescriptor::TYPE_BOOL:
      return "bool";
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SFIXED32:
      return "int32";
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_SINT64:
    case FieldDescriptor::TYPE_SFIXED64:
      return "int64";
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_FIXED32:
      return "uint32";
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED64:
      return "uint64";
    case FieldDescriptor::TYPE_DOUBLE:
      return "float64";
    case FieldDescriptor::TYPE_FLOAT:
      return "float32";
    case FieldDescriptor::TYPE_STRING:
      return "string";
    case FieldDescriptor::TYPE_BYTES:
      return "[]uint8";
    case FieldDescriptor::TYPE_ENUM:
      return GoEnumName(f->enum_type());
    case FieldDescriptor::TYPE_MESSAGE:
    case FieldDescriptor::TYPE_GROUP:
      return "map[string]json.RawMessage";
  }
  return "interface {}";
}

// Go's error for a JSON value of the wrong kind for `go_type`.
Status KindError(const rapidjson::Value& v, std::string_view go_type) {
  return InvalidArgumentError(std::string("json: cannot unmarshal ") +
                              JsonKind(v) + " into Go value of type " +
                              std::string(go_type));
}

// Go's error for a number that does not fit `f` (`literal` as written).
Status NumberError(std::string_view literal, const FieldDescriptor* f) {
  return InvalidArgumentError("json: cannot unmarshal number " +
                              std::string(literal) + " into Go value of type " +
                              GoTypeName(f));
}

// The number a SAX parse has just read, as written in `text`: it ends
// where the stream `in` is (a ViewStream is read in place, not through a
// copy), after a character that cannot be part of it.
std::string_view NumberJustRead(const json::ViewStream& in,
                                std::string_view text) {
  const size_t end = std::min(in.Tell(), text.size());
  size_t begin = end;
  while (begin > 0 &&
         std::string_view("0123456789+-.eE").find(text[begin - 1]) !=
             std::string_view::npos) {
    --begin;
  }
  return text.substr(begin, end - begin);
}

// A SAX handler that fills a Document as RapidJSON's own parse does, but
// for "-0" (RapidJSON's Int(0): it reads "0" as Uint): that becomes the
// double -0.0, as Go reads it for a float, so that an integer field meets
// it as it meets 1.0 or 1e3, as a double whose text decides (Go's ParseInt
// takes "-0", ParseUint refuses it).
class DocumentFiller {
 public:
  using Ch = char;
  explicit DocumentFiller(rapidjson::Document* doc) : doc_(*doc) {}
  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return i == 0 ? doc_.Double(-0.0) : doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return doc_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) {
    return doc_.String(s, n, copy);
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) {
    return doc_.Key(s, n, copy);
  }
  bool StartObject() { return doc_.StartObject(); }
  bool EndObject(rapidjson::SizeType n) { return doc_.EndObject(n); }
  bool StartArray() { return doc_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) { return doc_.EndArray(n); }

 private:
  rapidjson::Document& doc_;
};

// The text of a body's numbers that its DOM holds as doubles (1.0, 1e3,
// -0, integers past 64 bits), for ParseInteger: Go decodes an integer from
// the text and quotes the text in its error. Found only when first asked
// for (a body with such a number in an integer field: an error but for
// -0), by parsing the text once more; until then this costs nothing.
class NumberLiterals {
 public:
  // No text (a DOM from ParseJsonValue): Of is always "".
  NumberLiterals() = default;
  // `root` was parsed from `text` (with DocumentFiller); both outlive this.
  NumberLiterals(std::string_view text, const rapidjson::Value* root)
      : text_(text), root_(root) {}

  // The text of number `v` (a double) of the body, or "".
  std::string_view Of(const rapidjson::Value& v) const {
    if (root_ == nullptr) return {};
    if (!indexed_) Index();
    auto it = std::lower_bound(
        by_value_.begin(), by_value_.end(), &v,
        [](const auto& e, const rapidjson::Value* p) { return e.first < p; });
    return it != by_value_.end() && it->first == &v ? it->second
                                                    : std::string_view();
  }

 private:
  // Counts the numbers of a parse and keeps the text of those the DOM
  // holds as doubles.
  class Recorder : public rapidjson::BaseReaderHandler<> {
   public:
    Recorder(const json::ViewStream* in, std::string_view text)
        : in_(*in), text_(text) {}
    bool Int(int i) { return Number(i == 0); }
    bool Uint(unsigned) { return Number(false); }
    bool Int64(int64_t) { return Number(false); }
    bool Uint64(uint64_t) { return Number(false); }
    bool Double(double) { return Number(true); }

    std::vector<std::pair<size_t, std::string_view>> kept;  // number, text

   private:
    bool Number(bool keep) {
      if (keep) kept.emplace_back(numbers_, NumberJustRead(in_, text_));
      ++numbers_;
      return true;
    }
    const json::ViewStream& in_;
    const std::string_view text_;
    size_t numbers_ = 0;
  };

  void Index() const {
    indexed_ = true;
    json::ViewStream in(text_);
    Recorder recorder(&in, text_);
    if (!json::ParseSax<rapidjson::kParseDefaultFlags>(in, recorder).ok()) {
      return;  // parsed before, so not reached
    }
    const auto& kept = recorder.kept;
    // The DOM's numbers in the body's order, without recursion.
    struct Frame {
      const rapidjson::Value* container;
      rapidjson::SizeType next;
    };
    std::vector<Frame> stack;
    size_t numbers = 0, found = 0;
    auto visit = [&](const rapidjson::Value& v) {
      if (v.IsNumber()) {
        if (found < kept.size() && kept[found].first == numbers) {
          by_value_.emplace_back(&v, kept[found++].second);
        }
        ++numbers;
      } else if (v.IsObject() || v.IsArray()) {
        stack.push_back({&v, 0});
      }
    };
    visit(*root_);
    while (!stack.empty() && found < kept.size()) {
      const rapidjson::Value& c = *stack.back().container;
      const rapidjson::SizeType i = stack.back().next++;
      if (i == (c.IsObject() ? c.MemberCount() : c.Size())) {
        stack.pop_back();
      } else {
        visit(c.IsObject() ? (c.MemberBegin() + i)->value : c[i]);
      }
    }
    std::sort(by_value_.begin(), by_value_.end());
  }

  std::string_view text_;
  const rapidjson::Value* root_ = nullptr;
  mutable bool indexed_ = false;
  // By address, for Of's binary search.
  mutable std::vector<std::pair<const rapidjson::Value*, std::string_view>>
      by_value_;
};

// A JSON number's text as Go's encoding/json decodes it into an integer
// (strconv.ParseInt or ParseUint, then a range check): only an integer in
// the type's range, written without fraction or exponent.
template <typename Int>
StatusOr<Int> IntegerFromText(std::string_view text, const FieldDescriptor* f) {
  Int out{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc() && p == text.data() + text.size() && !text.empty()) {
    return out;
  }
  return NumberError(text, f);
}

template <typename Int>
StatusOr<Int> ParseInteger(const rapidjson::Value& v, const FieldDescriptor* f,
                           const NumberLiterals& literals) {
  if (v.IsString()) {
    // jsonpb drops the quotes of an integer and json.Unmarshals the text
    // between them: Go's syntax errors ("1x": "invalid character 'x' after
    // top-level value"), white space around the number allowed, `null`
    // leaving the zero, any other kind refused. (The text is the string's
    // value, where Go's is as written: they differ only for a string
    // written with escapes.)
    std::string_view text(v.GetString(), v.GetStringLength());
    if (std::string e = GoJsonValueSyntaxError(text); !e.empty()) {
      return InvalidArgumentError(std::move(e));
    }
    while (IsGoJsonSpace(text.front())) text.remove_prefix(1);
    while (IsGoJsonSpace(text.back())) text.remove_suffix(1);
    const char* kind = nullptr;
    switch (text.front()) {
      case 'n':
        return Int{0};
      case '[':
        kind = "array";
        break;
      case '{':
        kind = "object";
        break;
      case 't':
      case 'f':
        kind = "bool";
        break;
      case '"':
        kind = "string";
        break;
    }
    if (kind != nullptr) {
      return InvalidArgumentError(std::string("json: cannot unmarshal ") +
                                  kind + " into Go value of type " +
                                  GoTypeName(f));
    }
    return IntegerFromText<Int>(text, f);
  }
  if (v.IsInt64()) {
    const int64_t x = v.GetInt64();
    if (x < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
        (x > 0 && static_cast<uint64_t>(x) > std::numeric_limits<Int>::max())) {
      return NumberError(std::to_string(x), f);
    }
    return static_cast<Int>(x);
  }
  if (v.IsUint64()) {
    const uint64_t x = v.GetUint64();
    if (x > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
      return NumberError(std::to_string(x), f);
    }
    return static_cast<Int>(x);
  }
  if (v.IsDouble()) {
    // A fraction, an exponent, more than 64 bits or "-0": Go decodes the
    // text, and only "-0" is an integer (not an unsigned one). Without the
    // text (a DOM from ParseJsonValue) a double is refused, its shortest
    // form standing in for the text ("1.5" in the usual cases).
    const std::string_view text = literals.Of(v);
    if (!text.empty()) return IntegerFromText<Int>(text, f);
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v.GetDouble());
    return NumberError(std::string_view(buf, ec == std::errc() ? p : buf), f);
  }
  return KindError(v, GoTypeName(f));
}

// Messages nest at most this deep in a request (a txn inside a txn inside
// ...). The store wraps a request in InternalRaftRequest and parses it back
// from the raft log with protobuf's default recursion limit (100); a deeper
// request would be accepted here and then fail to apply on every member.
constexpr int kMaxMessageNesting = 64;

Status ParseMessage(const rapidjson::Value& v, Message* m, int depth,
                    const NumberLiterals& literals);

// Sets field `f` (appends, if repeated) from one JSON value; `depth` is the
// nesting of the message that holds it.
Status ParseFieldValue(const rapidjson::Value& v, const FieldDescriptor* f,
                       Message* m, int depth, const NumberLiterals& literals) {
  const Reflection* r = m->GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      ASSIGN_OR_RETURN(int32_t x, ParseInteger<int32_t>(v, f, literals));
      rep ? r->AddInt32(m, f, x) : r->SetInt32(m, f, x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      ASSIGN_OR_RETURN(uint32_t x, ParseInteger<uint32_t>(v, f, literals));
      rep ? r->AddUInt32(m, f, x) : r->SetUInt32(m, f, x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      ASSIGN_OR_RETURN(int64_t x, ParseInteger<int64_t>(v, f, literals));
      rep ? r->AddInt64(m, f, x) : r->SetInt64(m, f, x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      ASSIGN_OR_RETURN(uint64_t x, ParseInteger<uint64_t>(v, f, literals));
      rep ? r->AddUInt64(m, f, x) : r->SetUInt64(m, f, x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      if (!v.IsNumber()) return KindError(v, GoTypeName(f));
      const double x = v.GetDouble();
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        rep ? r->AddDouble(m, f, x) : r->SetDouble(m, f, x);
      } else {
        const float y = static_cast<float>(x);
        rep ? r->AddFloat(m, f, y) : r->SetFloat(m, f, y);
      }
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      // Only true and false: jsonpb refuses "true" (a string) and 1.
      if (!v.IsBool()) return KindError(v, "bool");
      const bool x = v.GetBool();
      rep ? r->AddBool(m, f, x) : r->SetBool(m, f, x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      int x;
      if (v.IsString()) {
        // A name only: "1" is an unknown name, as in jsonpb.
        const std::string name(v.GetString(), v.GetStringLength());
        const auto* ev = f->enum_type()->FindValueByName(name);
        if (ev == nullptr) {
          return InvalidArgumentError("unknown value " + GoQuote(name) +
                                      " for enum " +
                                      GoEnumName(f->enum_type()));
        }
        x = ev->number();
      } else if (v.IsNumber()) {
        // Any int32, named or not, as jsonpb.
        ASSIGN_OR_RETURN(x, ParseInteger<int32_t>(v, f, literals));
      } else {
        return KindError(v, GoTypeName(f));
      }
      rep ? r->AddEnumValue(m, f, x) : r->SetEnumValue(m, f, x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      if (!v.IsString()) return KindError(v, GoTypeName(f));
      std::string x(v.GetString(), v.GetStringLength());
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        // Go's encoding/json decodes []byte with base64.StdEncoding.
        ASSIGN_OR_RETURN(x, Base64DecodeGoStd(x));
      }
      rep ? r->AddString(m, f, std::move(x)) : r->SetString(m, f, std::move(x));
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (!v.IsObject()) return KindError(v, GoTypeName(f));
      return ParseMessage(v,
                          rep ? r->AddMessage(m, f) : r->MutableMessage(m, f),
                          depth + 1, literals);
  }
  return FieldError(f, "unsupported field type");
}

// Sets field `f` from its JSON value (not null): every element, if repeated.
Status ParseField(const rapidjson::Value& v, const FieldDescriptor* f,
                  Message* m, int depth, const NumberLiterals& literals) {
  if (f->is_map()) {
    return InvalidArgumentError("map fields are not supported: " +
                                f->full_name());
  }
  if (!f->is_repeated()) return ParseFieldValue(v, f, m, depth, literals);
  if (!v.IsArray()) return KindError(v, "[]json.RawMessage");
  for (const rapidjson::Value& e : v.GetArray()) {
    RETURN_IF_ERROR(ParseFieldValue(e, f, m, depth, literals));
  }
  return Status::Ok();
}

// The value of the last member of `obj` named `name`, or nullptr: Go's
// json.Unmarshal into a map keeps the last.
const rapidjson::Value* LastMember(const rapidjson::Value& obj,
                                   std::string_view name) {
  for (auto it = obj.MemberEnd(); it != obj.MemberBegin();) {
    --it;
    if (std::string_view(it->name.GetString(), it->name.GetStringLength()) ==
        name) {
      return &it->value;
    }
  }
  return nullptr;
}

// The value of each field of message type `d` in object `obj`, as
// jsonpb's consumeField takes it from its Go map: the last member under
// the field's lowerCamel name if there is one ("favour the camelName"),
// else the last under its proto name; nullptr when neither is there.
class FieldValues {
 public:
  FieldValues(const Descriptor* d, const rapidjson::Value& obj)
      : n_(d->field_count()) {
    if (n_ > kInline) heap_.resize(2 * n_);
    const rapidjson::Value** slots = Slots();
    std::fill(slots, slots + 2 * n_, nullptr);
    for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
      const std::string_view name(it->name.GetString(),
                                  it->name.GetStringLength());
      for (int i = 0; i < n_; ++i) {
        // No name is one field's lowerCamel name and another's proto name
        // (protoc refuses the conflict).
        const FieldDescriptor* f = d->field(i);
        if (f->json_name() == name) {
          slots[2 * i + 1] = &it->value;
          break;
        }
        if (f->name() == name) {
          slots[2 * i] = &it->value;
          break;
        }
      }
    }
  }
  FieldValues(const FieldValues&) = delete;
  FieldValues& operator=(const FieldValues&) = delete;

  // Field `f`'s value (`f` of the type given).
  const rapidjson::Value* Of(const FieldDescriptor* f) const {
    const rapidjson::Value* const* slot = Slots() + 2 * f->index();
    return slot[1] != nullptr ? slot[1] : slot[0];
  }

 private:
  static constexpr int kInline = 24;  // RangeRequest, the largest, has 13
  const rapidjson::Value** Slots() {
    return n_ > kInline ? heap_.data() : inline_;
  }
  const rapidjson::Value* const* Slots() const {
    return n_ > kInline ? heap_.data() : inline_;
  }

  const int n_;
  const rapidjson::Value* inline_[2 * kInline];  // proto name, lowerCamel
  std::vector<const rapidjson::Value*> heap_;
};

// What jsonpb leaves for a oneof member given as null: the member's wrapper
// holding a zero value (0, empty bytes) or, for a message, a nil one, which
// etcd treats as no member at all.
void SetOneofMemberToZero(Message* m, const FieldDescriptor* f) {
  const Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->SetInt32(m, f, 0);
    case FieldDescriptor::CPPTYPE_UINT32:
      return r->SetUInt32(m, f, 0);
    case FieldDescriptor::CPPTYPE_INT64:
      return r->SetInt64(m, f, 0);
    case FieldDescriptor::CPPTYPE_UINT64:
      return r->SetUInt64(m, f, 0);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r->SetDouble(m, f, 0);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r->SetFloat(m, f, 0);
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->SetBool(m, f, false);
    case FieldDescriptor::CPPTYPE_ENUM:
      return r->SetEnumValue(m, f, 0);
    case FieldDescriptor::CPPTYPE_STRING:
      return r->SetString(m, f, "");
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return r->ClearOneof(m, f->containing_oneof());
  }
}

// One object into `m`, in jsonpb's order (see "decoding" above).
Status ParseMessage(const rapidjson::Value& v, Message* m, int depth,
                    const NumberLiterals& literals) {
  if (depth > kMaxMessageNesting) {
    return InvalidArgumentError("messages nested more than " +
                                std::to_string(kMaxMessageNesting) +
                                " deep: " + m->GetDescriptor()->full_name());
  }
  if (!v.IsObject()) return KindError(v, "map[string]json.RawMessage");
  const Descriptor* d = m->GetDescriptor();
  const FieldValues values(d, v);
  // The Go struct's fields in order: the fields outside oneofs and, where a
  // oneof's first member is declared, the oneof itself (an interface, so
  // a member named as the oneof is refused unless null).
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (const auto* o = f->real_containing_oneof()) {
      if (o->field(0) == f) {
        const rapidjson::Value* x = LastMember(v, o->name());
        if (x != nullptr && !x->IsNull()) return KindError(*x, GoOneofName(o));
      }
      continue;
    }
    const rapidjson::Value* x = values.Of(f);
    if (x == nullptr || x->IsNull()) continue;
    RETURN_IF_ERROR(ParseField(*x, f, m, depth, literals));
  }
  // Then the oneofs' members. jsonpb sets each member given, null included,
  // in the order it iterates a Go map of them (golang/protobuf 1.3
  // OneofTypes), so of several the last set wins and etcd's choice varies
  // from request to request: Go starts the walk of the map's one bucket at
  // a random one of its 8 slots, filled in declaration order, so the
  // later-declared of two members wins 1 - (their distance)/8 of the time
  // (measured: {request_delete_range, request_put} ran the delete 34 times
  // in 40). Here they apply in declaration order, always that most
  // frequent outcome.
  for (int k = 0; k < d->real_oneof_decl_count(); ++k) {
    const google::protobuf::OneofDescriptor* o = d->oneof_decl(k);
    for (int j = 0; j < o->field_count(); ++j) {
      const FieldDescriptor* f = o->field(j);
      const rapidjson::Value* x = values.Of(f);
      if (x == nullptr) continue;
      if (x->IsNull()) {
        SetOneofMemberToZero(m, f);
      } else {
        RETURN_IF_ERROR(ParseFieldValue(*x, f, m, depth, literals));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseJson(std::string_view text, google::protobuf::Message* msg) {
  msg->Clear();
  size_t i = 0;
  while (i < text.size() && IsGoJsonSpace(text[i])) ++i;
  if (i == text.size()) return Status::Ok();
  rapidjson::Document d;
  // Iterative and depth-bounded, as json::ParseDom: a hostile body cannot
  // take the store down. Only the first value is read, as etcd's gateway
  // (one json.Decoder Decode) reads a body: `{...} xyz` is `{...}`.
  json::Outcome r;
  size_t end = 0;
  auto generate = [&](rapidjson::Document& doc) {
    json::ViewStream in(text);
    DocumentFiller filler(&doc);
    r = json::ParseSax<rapidjson::kParseDefaultFlags |
                       rapidjson::kParseStopWhenDoneFlag>(in, filler);
    end = in.Tell();
    return r.ok();
  };
  d.Populate(generate);
  if (!r.ok()) {
    // Go's decoder's words (clients compare them): "invalid character 'x'
    // looking for beginning of value", "unexpected EOF", ... RapidJSON also
    // refuses a few values Go reads (a lone surrogate escape, 1e400):
    // those keep RapidJSON's words. So does a body nested past 10,000
    // levels, the bound Go has too ("invalid character '[' exceeded max
    // depth"): "exceeded max depth of 10000" is the store's documented
    // answer (docs/limits.md), the same as the apiserver's.
    if (!r.too_deep) {
      std::string go = GoJsonSyntaxError(text);
      if (!go.empty()) return InvalidArgumentError(std::move(go));
    }
    return InvalidArgumentError(std::string("invalid JSON at offset ") +
                                std::to_string(r.offset) + ": " + r.Message());
  }
  // jsonpb unmarshals `null` into a message as no fields at all.
  if (d.IsNull()) return Status::Ok();
  Status s = ParseMessage(d, msg, 1, NumberLiterals(text.substr(0, end), &d));
  if (!s.ok()) msg->Clear();
  return s;
}

Status ParseJsonValue(const rapidjson::Value& json,
                      google::protobuf::Message* msg) {
  msg->Clear();
  Status s = ParseMessage(json, msg, 1, NumberLiterals());
  if (!s.ok()) msg->Clear();
  return s;
}

std::string ToJson(const google::protobuf::Message& msg) {
  std::string out;
  if (!AppendFast(msg, &out)) return ToJsonWithProtobuf(msg);
  return out;
}

std::string ToJsonWithProtobuf(const google::protobuf::Message& msg) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, opts);
  return out;
}

void AppendStreamResult(const google::protobuf::Message& msg,
                        std::string* out) {
  constexpr std::string_view kOpen = "{\"result\":";
  out->append(kOpen);
  const size_t body = out->size();
  if (!AppendFast(msg, out)) {
    out->resize(body);  // drop what the walk wrote before it gave up
    out->append(ToJsonWithProtobuf(msg));
  }
  out->append("}\n");
}

namespace {

// `text` as the inside of a JSON string, as the gateway's marshaler writes
// an error message: '\n' and '\t' short, other controls \u00XX, bytes
// >= 0x80 as they are.
std::string EscapeJsonText(std::string_view text) {
  std::string esc;
  AppendJsonEscaped(text, {.short_escapes = "\n\t"}, &esc);
  return esc;
}

// The reason phrase grpc-gateway puts in "http_status", for the statuses
// HttpStatusForGrpcCode answers.
std::string_view HttpReason(int http_status) {
  switch (http_status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 429:
      return "Too Many Requests";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Internal Server Error";
  }
}

}  // namespace

std::string HttpError::Body() const {
  const std::string esc = EscapeJsonText(message);
  return "{\"error\":\"" + esc + "\",\"message\":\"" + esc +
         "\",\"code\":" + std::to_string(grpc_code) + "}";
}

std::string HttpError::StreamBody() const {
  return "{\"error\":{\"grpc_code\":" + std::to_string(grpc_code) +
         ",\"http_code\":" + std::to_string(http_status) + ",\"message\":\"" +
         EscapeJsonText(message) + "\",\"http_status\":\"" +
         std::string(HttpReason(http_status)) + "\"}}\n";
}

int HttpStatusForGrpcCode(int code) {
  switch (code) {
    case kGrpcOk:
      return 200;
    case kGrpcCanceled:
      return 408;
    case kGrpcUnknown:
      return 500;
    case kGrpcInvalidArgument:
      return 400;
    case kGrpcDeadlineExceeded:
      return 504;
    case kGrpcNotFound:
      return 404;
    case kGrpcAlreadyExists:
      return 409;
    case kGrpcPermissionDenied:
      return 403;
    case kGrpcResourceExhausted:
      return 429;
    case kGrpcFailedPrecondition:
      return 412;
    case kGrpcAborted:
      return 409;
    case kGrpcOutOfRange:
      return 400;
    case kGrpcUnimplemented:
      return 501;
    case kGrpcInternal:
      return 500;
    case kGrpcUnavailable:
      return 503;
    case kGrpcDataLoss:
      return 500;
    case kGrpcUnauthenticated:
      return 401;
  }
  return 500;
}

HttpError StatusToError(const Status& s) {
  int code;
  switch (s.code()) {
    case StatusCode::kOk:
      code = kGrpcOk;
      break;
    case StatusCode::kCancelled:
      code = kGrpcCanceled;
      break;
    case StatusCode::kInvalidArgument:
      code = kGrpcInvalidArgument;
      break;
    case StatusCode::kDeadlineExceeded:
      // etcd's own timeouts ("etcdserver: request timed out", ...) are
      // Unavailable (rpctypes.ErrGRPCTimeout*); only a deadline the client
      // set is DeadlineExceeded.
      code = s.message().find("request timed out") != std::string::npos
                 ? kGrpcUnavailable
                 : kGrpcDeadlineExceeded;
      break;
    case StatusCode::kNotFound:
      code = kGrpcNotFound;
      break;
    case StatusCode::kAlreadyExists:
      code = kGrpcAlreadyExists;
      break;
    case StatusCode::kPermissionDenied:
      code = kGrpcPermissionDenied;
      break;
    case StatusCode::kResourceExhausted:
      code = kGrpcResourceExhausted;
      break;
    case StatusCode::kFailedPrecondition:
      code = kGrpcFailedPrecondition;
      break;
    case StatusCode::kAborted:
      code = kGrpcAborted;
      break;
    case StatusCode::kOutOfRange:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kUnimplemented:
      code = kGrpcUnimplemented;
      break;
    case StatusCode::kInternal:
      code = kGrpcInternal;
      break;
    case StatusCode::kUnavailable:
      code = kGrpcUnavailable;
      break;
    case StatusCode::kUnauthenticated:
      code = kGrpcUnauthenticated;
      break;
    case StatusCode::kConflict:
      code = kGrpcFailedPrecondition;
      break;
    case StatusCode::kCompacted:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kFutureRevision:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kNotLeader:
      code = kGrpcUnavailable;
      break;
    case StatusCode::kNoSpace:
      code = kGrpcResourceExhausted;
      break;
    case StatusCode::kTooLarge:
      code = kGrpcInvalidArgument;
      break;
    case StatusCode::kExpired:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kCorruption:
      code = kGrpcDataLoss;
      break;
    case StatusCode::kIOError:
      code = kGrpcInternal;
      break;
    default:
      code = kGrpcUnknown;
      break;
  }
  std::string msg = s.message();
  // "auth: ": etcd's auth package's own errors, which some of etcd's
  // calls return unconverted (AuthMaintenanceError).
  if (!msg.starts_with("etcdserver: ") && !msg.starts_with("grpc: ") &&
      !msg.starts_with("auth: ")) {
    msg = "etcdserver: " + msg;
  }
  return HttpError{HttpStatusForGrpcCode(code), code, msg};
}

std::string GoRpcErrorText(const Status& s) {
  HttpError e = StatusToError(s);
  return GoRpcErrorText(e.grpc_code, e.message);
}

Status CheckWatcherLimit(size_t open, size_t limit) {
  if (limit == 0 || open < limit) return Status::Ok();
  return ResourceExhaustedError(
      "etcdserver: too many watchers on this stream (limit " +
      std::to_string(limit) + ")");
}

Status GrpcErrorToStatus(int code, std::string msg) {
  // Domain codes come back from etcd's texts.
  if (msg.find("required revision has been compacted") != std::string::npos) {
    return Status(StatusCode::kCompacted, msg);
  }
  if (msg.find("required revision is a future revision") != std::string::npos) {
    return Status(StatusCode::kFutureRevision, msg);
  }
  if (msg.find("database space exceeded") != std::string::npos) {
    return Status(StatusCode::kNoSpace, msg);
  }
  if (msg.find("request is too large") != std::string::npos) {
    return Status(StatusCode::kTooLarge, msg);
  }
  if (msg.find("no leader") != std::string::npos ||
      msg.find("not leader") != std::string::npos ||
      msg.find("leader changed") != std::string::npos) {
    return Status(StatusCode::kNotLeader, msg);
  }
  if (msg.find("request timed out") != std::string::npos) {
    return Status(StatusCode::kDeadlineExceeded, msg);
  }
  switch (code) {
    case kGrpcCanceled:
      return Status(StatusCode::kCancelled, msg);
    case kGrpcInvalidArgument:
      return Status(StatusCode::kInvalidArgument, msg);
    case kGrpcDeadlineExceeded:
      return Status(StatusCode::kDeadlineExceeded, msg);
    case kGrpcNotFound:
      return Status(StatusCode::kNotFound, msg);
    case kGrpcAlreadyExists:
      return Status(StatusCode::kAlreadyExists, msg);
    case kGrpcPermissionDenied:
      return Status(StatusCode::kPermissionDenied, msg);
    case kGrpcResourceExhausted:
      return Status(StatusCode::kResourceExhausted, msg);
    case kGrpcFailedPrecondition:
      return Status(StatusCode::kFailedPrecondition, msg);
    case kGrpcAborted:
      return Status(StatusCode::kAborted, msg);
    case kGrpcOutOfRange:
      return Status(StatusCode::kOutOfRange, msg);
    case kGrpcUnimplemented:
      return Status(StatusCode::kUnimplemented, msg);
    case kGrpcUnavailable:
      return Status(StatusCode::kUnavailable, msg);
    case kGrpcDataLoss:
      return Status(StatusCode::kCorruption, msg);
    case kGrpcUnauthenticated:
      return Status(StatusCode::kUnauthenticated, msg);
    default:
      return Status(StatusCode::kUnknown, msg);
  }
}

Status ErrorToStatus(int http_status, std::string_view body) {
  rapidjson::Document d;
  const bool parsed = json::ParseDom(body, &d).ok();
  std::string msg;
  int code = -1;
  if (parsed && d.IsObject()) {
    if (d.HasMember("message") && d["message"].IsString()) {
      msg = d["message"].GetString();
    } else if (d.HasMember("error") && d["error"].IsString()) {
      msg = d["error"].GetString();
    }
    if (d.HasMember("code") && d["code"].IsInt()) code = d["code"].GetInt();
  }
  if (code < 0) {
    std::string b(body.substr(0, 200));
    while (!b.empty() && (b.back() == '\n' || b.back() == ' ')) b.pop_back();
    return Status(
        http_status == 404   ? StatusCode::kNotFound
        : http_status >= 500 ? StatusCode::kUnavailable
                             : StatusCode::kInvalidArgument,
        "HTTP " + std::to_string(http_status) + (b.empty() ? "" : ": " + b));
  }
  return GrpcErrorToStatus(code, std::move(msg));
}

}  // namespace kplane::etcdjson
