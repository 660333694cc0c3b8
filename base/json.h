// Reading untrusted JSON with bounds: the one facility every JSON reader in
// kplane goes through (objects, patches, the etcd JSON API, continue tokens,
// Secret checks, clients).
//
// Two properties, whatever the input:
//   - no recursion: RapidJSON's iterative parser keeps its state on the heap,
//     so a body nested 100,000 deep cannot overflow the caller's stack;
//   - bounded nesting: objects and arrays nest at most kMaxDepth (10,000)
//     levels, Kubernetes' limit (k8s.io/apimachinery/pkg/util/json maxDepth;
//     Go's encoding/json stops at the same depth). Deeper input fails with
//     "exceeded max depth of 10000", Kubernetes' words.
// A DOM that passed the parser can still be walked recursively by code
// outside this file; Accept and Measure below walk one without recursion, and
// base/deep_stack.h runs recursive algorithms over deep DOMs safely.
//
//   rapidjson::Document doc;
//   json::Outcome r = json::ParseDom(body, &doc);
//   if (!r.ok()) return InvalidArgumentError("invalid JSON: " + r.Message());
//
// Depth counts containers: "1" is 0 deep, "[1]" 1, "[[1]]" 2.
// Thread-safety: stateless functions. Errors: an Outcome (RapidJSON's error
// code and offset, or too_deep); callers word the protocol's error.
#ifndef KPLANE_BASE_JSON_H_
#define KPLANE_BASE_JSON_H_

#include <rapidjson/document.h>
#include <rapidjson/reader.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace kplane::json {

inline constexpr int kMaxDepth = 10000;

// "exceeded max depth of <max_depth>".
std::string MaxDepthMessage(int max_depth = kMaxDepth);

// A RapidJSON input stream over bytes that need not end in NUL. A NUL byte
// inside reads as the end of the text (RapidJSON then reports an error).
class ViewStream {
 public:
  using Ch = char;
  explicit ViewStream(std::string_view text)
      : begin_(text.data()),
        cur_(text.data()),
        end_(text.data() + text.size()) {}
  Ch Peek() const { return cur_ < end_ ? *cur_ : '\0'; }
  Ch Take() { return cur_ < end_ ? *cur_++ : '\0'; }
  size_t Tell() const { return static_cast<size_t>(cur_ - begin_); }
  // Write side of the stream concept; unused (no in-situ parsing).
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }

 private:
  const char* begin_;
  const char* cur_;
  const char* end_;
};

// Forwards SAX events to `handler`, refusing (returning false, which stops
// the parser) a container that would nest deeper than `max_depth`.
template <typename Handler>
class DepthLimitedHandler {
 public:
  using Ch = char;
  DepthLimitedHandler(Handler* handler, int max_depth)
      : h_(*handler), max_depth_(max_depth) {}

  bool exceeded() const { return exceeded_; }

  bool Null() { return h_.Null(); }
  bool Bool(bool b) { return h_.Bool(b); }
  bool Int(int i) { return h_.Int(i); }
  bool Uint(unsigned u) { return h_.Uint(u); }
  bool Int64(int64_t i) { return h_.Int64(i); }
  bool Uint64(uint64_t u) { return h_.Uint64(u); }
  bool Double(double d) { return h_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return h_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) {
    return h_.String(s, n, copy);
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) {
    return h_.Key(s, n, copy);
  }
  bool StartObject() { return Open() && h_.StartObject(); }
  bool EndObject(rapidjson::SizeType n) {
    --depth_;
    return h_.EndObject(n);
  }
  bool StartArray() { return Open() && h_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) {
    --depth_;
    return h_.EndArray(n);
  }

 private:
  bool Open() {
    if (++depth_ > max_depth_) {
      exceeded_ = true;
      return false;
    }
    return true;
  }

  Handler& h_;
  const int max_depth_;
  int depth_ = 0;
  bool exceeded_ = false;
};

// The result of a parse.
struct Outcome {
  rapidjson::ParseErrorCode code = rapidjson::kParseErrorNone;
  size_t offset = 0;      // where the error was found
  bool too_deep = false;  // nesting passed max_depth (code is Termination)
  int max_depth = kMaxDepth;

  bool ok() const { return code == rapidjson::kParseErrorNone; }
  // "exceeded max depth of 10000", or RapidJSON's English text of `code`.
  std::string Message() const;
};

// Parses `in` into the SAX `handler` without recursion, at most `max_depth`
// deep. kFlags are RapidJSON parse flags (kParseIterativeFlag is added).
// A handler that stops the parse itself gives kParseErrorTermination.
template <unsigned kFlags, typename Stream, typename Handler>
Outcome ParseSax(Stream& in, Handler& handler, int max_depth = kMaxDepth) {
  DepthLimitedHandler<Handler> limited(&handler, max_depth);
  rapidjson::Reader reader;
  rapidjson::ParseResult r =
      reader.Parse<kFlags | rapidjson::kParseIterativeFlag>(in, limited);
  Outcome out;
  out.code = r.Code();
  out.offset = r.Offset();
  out.too_deep = limited.exceeded();
  out.max_depth = max_depth;
  return out;
}

// Parses one JSON text into `doc` (left null on error). kFlags as above.
template <unsigned kFlags = rapidjson::kParseDefaultFlags>
Outcome ParseDom(std::string_view text, rapidjson::Document* doc,
                 int max_depth = kMaxDepth) {
  Outcome out;
  ViewStream in(text);
  auto generate = [&](rapidjson::Document& handler) {
    out = ParseSax<kFlags>(in, handler, max_depth);
    return out.ok();
  };
  doc->Populate(generate);
  if (!out.ok()) doc->SetNull();
  return out;
}

// Sends `v` to the SAX `handler` as Value::Accept does (numbers as Double,
// Int, Uint, Int64 or Uint64; strings and keys with copy=true), without
// recursion. Returns false as soon as the handler does.
template <typename Handler>
bool Accept(const rapidjson::Value& v, Handler& handler);

// Depth and approximate compact-JSON size of a DOM, without recursion.
// Strings count their bytes plus quotes (escapes are not counted), numbers
// their digits (a double 24 at most). Counting stops once `bytes` passes
// `max_bytes` (then bytes > max_bytes, and depth may be short).
struct Extent {
  int depth = 0;
  size_t bytes = 0;
};
Extent Measure(const rapidjson::Value& v,
               size_t max_bytes = std::numeric_limits<size_t>::max());

// ---------------------------------------------------------------------------
// Implementation

namespace internal {
template <typename Handler>
bool AcceptScalar(const rapidjson::Value& v, Handler& h) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      return h.Null();
    case rapidjson::kFalseType:
      return h.Bool(false);
    case rapidjson::kTrueType:
      return h.Bool(true);
    case rapidjson::kStringType:
      return h.String(v.GetString(), v.GetStringLength(), true);
    case rapidjson::kNumberType:
      if (v.IsDouble()) return h.Double(v.GetDouble());
      if (v.IsInt()) return h.Int(v.GetInt());
      if (v.IsUint()) return h.Uint(v.GetUint());
      if (v.IsInt64()) return h.Int64(v.GetInt64());
      return h.Uint64(v.GetUint64());
    default:
      return false;  // containers are not scalars
  }
}
}  // namespace internal

template <typename Handler>
bool Accept(const rapidjson::Value& root, Handler& h) {
  struct Frame {
    const rapidjson::Value* container;
    rapidjson::SizeType next;  // index of the next element or member
  };
  std::vector<Frame> stack;
  const rapidjson::Value* v = &root;
  for (;;) {
    // Enter `v`.
    if (v->IsObject()) {
      if (!h.StartObject()) return false;
      stack.push_back({v, 0});
    } else if (v->IsArray()) {
      if (!h.StartArray()) return false;
      stack.push_back({v, 0});
    } else if (!internal::AcceptScalar(*v, h)) {
      return false;
    }
    // Find the next value to enter, closing finished containers.
    v = nullptr;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.container->IsObject()) {
        if (f.next < f.container->MemberCount()) {
          const auto& m = f.container->MemberBegin()[f.next++];
          if (!h.Key(m.name.GetString(), m.name.GetStringLength(), true)) {
            return false;
          }
          v = &m.value;
          break;
        }
        const rapidjson::SizeType n = f.container->MemberCount();
        stack.pop_back();
        if (!h.EndObject(n)) return false;
      } else {
        if (f.next < f.container->Size()) {
          v = &(*f.container)[f.next++];
          break;
        }
        const rapidjson::SizeType n = f.container->Size();
        stack.pop_back();
        if (!h.EndArray(n)) return false;
      }
    }
    if (v == nullptr) return true;
  }
}

}  // namespace kplane::json

#endif  // KPLANE_BASE_JSON_H_
