#include "objects/yaml.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/base64.h"
#include "base/json.h"
#include "base/strings.h"
#include "objects/time.h"

namespace kplane::objects {
namespace {

using rapidjson::Document;
using rapidjson::Value;
using Allocator = rapidjson::MemoryPoolAllocator<>;

// What aliases may add to a stream, in bytes: as much as the input holds,
// at least kMinAliasBytes, at most kMaxAliasBytes. Beyond go-yaml's node
// ratio (below), this bounds memory when few aliases name large values (Go
// shares such strings; a JSON DOM cannot).
constexpr uint64_t kMinAliasBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxAliasBytes = uint64_t{8} << 20;

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// A plain scalar typed by go-yaml v2's rules.
struct Resolved {
  enum Kind { kNull, kBool, kInt, kUint, kFloat, kString } kind = kString;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;  // kString: the (possibly rewritten) text
};

bool OneOf(std::string_view s, std::initializer_list<std::string_view> set) {
  for (std::string_view x : set) {
    if (s == x) return true;
  }
  return false;
}

bool AllDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return false;
    }
    if (v >= base) return false;
  }
  return true;
}

// Go's strconv.ParseInt/ParseUint with base 0 (prefixes 0x, 0o, 0b, and a
// leading 0 for octal). Returns false when the text is not such an integer;
// sets *overflow when it is one but does not fit.
bool ParseGoInteger(std::string_view s, bool* negative, uint64_t* magnitude) {
  *negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    *negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (!AllDigits(s, base)) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *magnitude, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool IsYamlFloat(std::string_view s) {
  // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// "2024-1-2" style dates (go-yaml's timestamp form without a time).
std::optional<std::string> DateOnly(std::string_view s) {
  int y = 0, m = 0, d = 0;
  size_t i = 0;
  auto num = [&](int min_len, int max_len, int* out) {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' &&
           static_cast<int>(i - start) < max_len) {
      *out = *out * 10 + (s[i] - '0');
      ++i;
    }
    return static_cast<int>(i - start) >= min_len;
  };
  if (!num(4, 4, &y) || i >= s.size() || s[i++] != '-' || !num(1, 2, &m) ||
      i >= s.size() || s[i++] != '-' || !num(1, 2, &d) || i != s.size()) {
    return std::nullopt;
  }
  if (m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT00:00:00Z", y, m, d);
  return std::string(buf);
}

Resolved ResolvePlain(std::string_view s) {
  Resolved r;
  if (OneOf(s, {"", "~", "null", "Null", "NULL"})) {
    r.kind = Resolved::kNull;
    return r;
  }
  if (OneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on",
                "On", "ON"})) {
    r.kind = Resolved::kBool;
    r.b = true;
    return r;
  }
  if (OneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off",
                "Off", "OFF"})) {
    r.kind = Resolved::kBool;
    return r;
  }
  if (OneOf(s, {".nan", ".NaN", ".NAN"})) {
    r.kind = Resolved::kFloat;
    r.d = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  if (OneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    r.kind = Resolved::kFloat;
    r.d = std::numeric_limits<double>::infinity();
    return r;
  }
  if (OneOf(s, {"-.inf", "-.Inf", "-.INF"})) {
    r.kind = Resolved::kFloat;
    r.d = -std::numeric_limits<double>::infinity();
    return r;
  }
  const char c = s[0];
  if (c == '.' || c == '+' || c == '-' || (c >= '0' && c <= '9')) {
    if (c >= '0' && c <= '9') {
      if (auto date = DateOnly(s)) {
        r.kind = Resolved::kString;
        r.s = *date;
        return r;
      }
    }
    std::string plain;
    plain.reserve(s.size());
    for (char ch : s) {
      if (ch != '_') plain += ch;
    }
    bool negative;
    uint64_t mag;
    if (c != '.' && ParseGoInteger(plain, &negative, &mag)) {
      if (!negative &&
          mag <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        r.kind = Resolved::kInt;
        r.i = static_cast<int64_t>(mag);
        return r;
      }
      if (negative && mag <= uint64_t{1} << 63) {
        r.kind = Resolved::kInt;
        r.i = static_cast<int64_t>(0 - mag);
        return r;
      }
      if (!negative) {
        r.kind = Resolved::kUint;
        r.u = mag;
        return r;
      }
    }
    if (IsYamlFloat(plain)) {
      double d = 0;
      auto res = std::from_chars(plain.data() + (plain[0] == '+' ? 1 : 0),
                                 plain.data() + plain.size(), d);
      if (res.ec == std::errc() || res.ec == std::errc::result_out_of_range) {
        r.kind = Resolved::kFloat;
        r.d = d;
        return r;
      }
    }
  }
  r.kind = Resolved::kString;
  r.s = std::string(s);
  return r;
}

// ---------------------------------------------------------------------------
// Input
//
// yaml-cpp's event parser feeds TreeBuilder, which keeps each document as a
// compact tree: an alias stays a reference to its anchor's node, and every
// node's expansion (node count, bytes, depth) is summed as the events arrive.
// So a document is measured — and refused — before anything is expanded: an
// alias to an anchor still open is a cycle, and the running totals of what
// aliases add are checked at each alias. Materialize then builds the JSON DOM
// without recursion.

// go-yaml v3's "excessive aliasing" rule (decode.go, allowedAliasRatio):
// aliases may produce 99% of a small document's nodes, scaling down to 10%
// from 400,000 to 4,000,000 decoded nodes.
double AllowedAliasRatio(uint64_t decoded) {
  constexpr double kLow = 400000, kHigh = 4000000;
  const double d = static_cast<double>(decoded);
  if (d <= kLow) return 0.99;
  if (d >= kHigh) return 0.10;
  return 0.99 - 0.89 * ((d - kLow) / (kHigh - kLow));
}

uint64_t SatAdd(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a
             ? std::numeric_limits<uint64_t>::max()
             : a + b;
}

// What a node expands to.
struct Extent {
  uint64_t nodes = 0;
  uint64_t bytes = 0;  // 2 per node plus scalar text: JSON's size, roughly
  int depth = 0;       // containers: "x" 0, [x] 1

  void Add(const Extent& child) {
    nodes = SatAdd(nodes, child.nodes);
    bytes = SatAdd(bytes, child.bytes);
    depth = std::max(depth, child.depth);
  }
};

struct TreeNode {
  enum Kind : uint8_t { kNull, kScalar, kSequence, kMap, kAlias };
  enum Tag : uint8_t { kPlain, kNonSpecific, kOther };  // "?", "!", other
  Kind kind = kNull;
  Tag tag = kPlain;
  // kScalar: the text in Document::text. kSequence: items, kMap: key/value
  // pairs (after merges), in Document::children. kAlias: first = the node.
  uint32_t first = 0;
  uint32_t count = 0;
};

// One document of the stream.
struct YamlTree {
  std::vector<TreeNode> nodes;
  std::vector<uint32_t> children;
  std::string text;
  std::unordered_map<uint32_t, std::string> tags;  // kOther scalars' tags
  uint32_t root = 0;

  std::string_view Text(const TreeNode& n) const {
    return std::string_view(text).substr(n.first, n.count);
  }
  // Follows aliases (never cyclic: the builder refuses cycles).
  uint32_t Resolve(uint32_t i) const {
    while (nodes[i].kind == TreeNode::kAlias) i = nodes[i].first;
    return i;
  }
};

// A plain "<<" key.
bool IsMergeKey(const YamlTree& t, uint32_t key) {
  const TreeNode& n = t.nodes[key];
  return n.kind == TreeNode::kScalar && n.tag == TreeNode::kPlain &&
         t.Text(n) == "<<";
}

Status KeyString(const YamlTree& t, uint32_t key, std::string* out) {
  const TreeNode& n = t.nodes[t.Resolve(key)];
  if (n.kind == TreeNode::kNull) {
    return InvalidArgumentError("yaml: a null map key has no JSON form");
  }
  if (n.kind != TreeNode::kScalar) {
    return InvalidArgumentError("yaml: only scalar map keys have a JSON form");
  }
  std::string_view text = t.Text(n);
  if (n.tag != TreeNode::kPlain) {
    *out = std::string(text);
    return Status::Ok();
  }
  Resolved r = ResolvePlain(text);
  switch (r.kind) {
    case Resolved::kNull:
      return InvalidArgumentError("yaml: a null map key has no JSON form");
    case Resolved::kBool:
      *out = r.b ? "true" : "false";
      return Status::Ok();
    case Resolved::kInt:
      *out = std::to_string(r.i);
      return Status::Ok();
    case Resolved::kUint:
      *out = std::to_string(r.u);
      return Status::Ok();
    case Resolved::kFloat:
    case Resolved::kString:
      *out = std::string(text);
      return Status::Ok();
  }
  return Status::Ok();
}

// Builds YamlTrees from yaml-cpp's events, checking the limits as it goes.
// After the first error it ignores the rest of the document.
class TreeBuilder : public YAML::EventHandler {
 public:
  // `alias_byte_budget`: what aliases may add over the whole stream.
  explicit TreeBuilder(uint64_t alias_byte_budget)
      : alias_byte_budget_(alias_byte_budget) {}

  const Status& status() const { return status_; }
  YamlTree& tree() { return tree_; }

  void OnDocumentStart(const YAML::Mark&) override {
    tree_ = YamlTree();
    stack_.clear();
    anchors_.clear();
    pending_anchor_.clear();
    source_nodes_ = 0;
    alias_nodes_ = 0;
  }
  void OnDocumentEnd() override {}

  void OnAnchor(const YAML::Mark&, const std::string& name) override {
    pending_anchor_ = name;
  }

  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override {
    if (!status_.ok()) return;
    TreeNode n;
    n.kind = TreeNode::kNull;
    Leaf(n, anchor, Extent{1, 2, 0});
  }

  void OnScalar(const YAML::Mark&, const std::string& tag,
                YAML::anchor_t anchor, const std::string& value) override {
    if (!status_.ok()) return;
    if (tree_.text.size() + value.size() >
        std::numeric_limits<uint32_t>::max()) {
      status_ = InvalidArgumentError("yaml: document too large");
      return;
    }
    TreeNode n;
    n.kind = TreeNode::kScalar;
    n.first = static_cast<uint32_t>(tree_.text.size());
    n.count = static_cast<uint32_t>(value.size());
    tree_.text += value;
    if (tag == "?") {
      n.tag = TreeNode::kPlain;
    } else if (tag == "!") {
      n.tag = TreeNode::kNonSpecific;
    } else {
      n.tag = TreeNode::kOther;
      tree_.tags[static_cast<uint32_t>(tree_.nodes.size())] = tag;
    }
    Leaf(n, anchor, Extent{1, SatAdd(2, value.size()), 0});
  }

  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    if (!status_.ok()) return;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {  // yaml-cpp refuses these itself
      status_ = InvalidArgumentError("yaml: unknown anchor");
      return;
    }
    const Anchor& a = it->second;
    if (!a.closed) {
      status_ = InvalidArgumentError("yaml: anchor '" + a.name +
                                     "' value contains itself");
      return;
    }
    if (static_cast<int64_t>(stack_.size()) + a.extent.depth >
        json::kMaxDepth) {
      status_ = InvalidArgumentError("yaml: " + json::MaxDepthMessage());
      return;
    }
    // As go-yaml counts: the alias node itself is decoded, then each node
    // of its expansion is decoded and counted as aliased.
    ++source_nodes_;
    alias_nodes_ = SatAdd(alias_nodes_, a.extent.nodes);
    alias_bytes_ = SatAdd(alias_bytes_, a.extent.bytes);
    if (alias_bytes_ > alias_byte_budget_) {
      status_ = InvalidArgumentError(
          "yaml: document contains excessive aliasing (aliases expand to "
          "more than " +
          std::to_string(alias_byte_budget_) + " bytes)");
      return;
    }
    const uint64_t decoded = SatAdd(source_nodes_, alias_nodes_);
    if (alias_nodes_ > 100 && decoded > 1000 &&
        static_cast<double>(alias_nodes_) / static_cast<double>(decoded) >
            AllowedAliasRatio(decoded)) {
      status_ =
          InvalidArgumentError("yaml: document contains excessive aliasing");
      return;
    }
    TreeNode n;
    n.kind = TreeNode::kAlias;
    n.first = a.node;
    Attach(Add(n), a.extent);
  }

  void OnSequenceStart(const YAML::Mark&, const std::string&,
                       YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(TreeNode::kSequence, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(TreeNode::kMap, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchor {
    uint32_t node = 0;
    std::string name;
    bool closed = false;
    Extent extent;
  };
  struct Frame {
    uint32_t node;
    YAML::anchor_t anchor;
    Extent extent;  // of the children so far
    std::vector<uint32_t> children;
  };

  uint32_t Add(const TreeNode& n) {
    tree_.nodes.push_back(n);
    return static_cast<uint32_t>(tree_.nodes.size() - 1);
  }

  void Define(YAML::anchor_t anchor, uint32_t node, bool closed,
              const Extent& e) {
    if (anchor == 0) return;
    Anchor& a = anchors_[anchor];
    a.node = node;
    a.name = std::move(pending_anchor_);
    pending_anchor_.clear();
    a.closed = closed;
    a.extent = e;
  }

  // A finished node joins its parent (or becomes the root).
  void Attach(uint32_t node, const Extent& e) {
    if (stack_.empty()) {
      tree_.root = node;
      return;
    }
    stack_.back().children.push_back(node);
    stack_.back().extent.Add(e);
  }

  void Leaf(const TreeNode& n, YAML::anchor_t anchor, const Extent& e) {
    ++source_nodes_;
    const uint32_t i = Add(n);
    Define(anchor, i, true, e);
    Attach(i, e);
  }

  void Open(TreeNode::Kind kind, YAML::anchor_t anchor) {
    if (!status_.ok()) return;
    if (static_cast<int64_t>(stack_.size()) + 1 > json::kMaxDepth) {
      status_ = InvalidArgumentError("yaml: " + json::MaxDepthMessage());
      return;
    }
    ++source_nodes_;
    TreeNode n;
    n.kind = kind;
    const uint32_t i = Add(n);
    Define(anchor, i, false, {});
    stack_.push_back(Frame{i, anchor, {}, {}});
  }

  void Close() {
    if (!status_.ok()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Extent e = f.extent;
    e.nodes = SatAdd(e.nodes, 1);
    e.bytes = SatAdd(e.bytes, 2);
    e.depth += 1;
    TreeNode& n = tree_.nodes[f.node];
    if (n.kind == TreeNode::kMap) {
      Status s = MergeEntries(&f.children);
      if (!s.ok()) {
        status_ = s;
        return;
      }
    }
    if (tree_.children.size() + f.children.size() >
        std::numeric_limits<uint32_t>::max()) {
      status_ = InvalidArgumentError("yaml: document too large");
      return;
    }
    n.first = static_cast<uint32_t>(tree_.children.size());
    n.count = static_cast<uint32_t>(f.children.size());
    tree_.children.insert(tree_.children.end(), f.children.begin(),
                          f.children.end());
    if (f.anchor != 0) {
      auto it = anchors_.find(f.anchor);
      if (it != anchors_.end() && it->second.node == f.node) {
        it->second.closed = true;
        it->second.extent = e;
      }
    }
    Attach(f.node, e);
  }

  // Turns a map's key/value pairs in source order into its JSON members:
  // explicit keys first (all of them, in order), then those of the "<<"
  // sources that are not set yet; among merged maps the first wins. A
  // merged map's own pairs are already merged (it closed earlier), and what
  // a merge adds was counted with its alias.
  Status MergeEntries(std::vector<uint32_t>* pairs) {
    bool has_merge = false;
    for (size_t i = 0; i + 1 < pairs->size(); i += 2) {
      if (IsMergeKey(tree_, (*pairs)[i])) has_merge = true;
    }
    if (!has_merge) return Status::Ok();
    std::vector<uint32_t> out;
    std::set<std::string> keys;
    std::vector<uint32_t> sources;
    for (size_t i = 0; i + 1 < pairs->size(); i += 2) {
      const uint32_t k = (*pairs)[i], v = (*pairs)[i + 1];
      if (IsMergeKey(tree_, k)) {
        sources.push_back(v);
        continue;
      }
      std::string key;
      RETURN_IF_ERROR(KeyString(tree_, k, &key));
      keys.insert(std::move(key));
      out.push_back(k);
      out.push_back(v);
    }
    auto merge_map = [&](uint32_t map) -> Status {
      const TreeNode& m = tree_.nodes[map];
      for (uint32_t j = 0; j + 1 < m.count; j += 2) {
        const uint32_t k = tree_.children[m.first + j];
        std::string key;
        RETURN_IF_ERROR(KeyString(tree_, k, &key));
        if (!keys.insert(std::move(key)).second) continue;
        out.push_back(k);
        out.push_back(tree_.children[m.first + j + 1]);
      }
      return Status::Ok();
    };
    const Status not_a_map = InvalidArgumentError(
        "yaml: map merge requires map or sequence of maps as the value");
    for (uint32_t src : sources) {
      const uint32_t s = tree_.Resolve(src);
      const TreeNode& n = tree_.nodes[s];
      if (n.kind == TreeNode::kMap) {
        RETURN_IF_ERROR(merge_map(s));
      } else if (n.kind == TreeNode::kSequence) {
        for (uint32_t j = 0; j < n.count; ++j) {
          const uint32_t item = tree_.Resolve(tree_.children[n.first + j]);
          if (tree_.nodes[item].kind != TreeNode::kMap) return not_a_map;
          RETURN_IF_ERROR(merge_map(item));
        }
      } else {
        return not_a_map;
      }
    }
    *pairs = std::move(out);
    return Status::Ok();
  }

  const uint64_t alias_byte_budget_;
  Status status_;
  YamlTree tree_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchor> anchors_;
  std::string pending_anchor_;
  uint64_t source_nodes_ = 0;  // this document's nodes, aliases not expanded
  uint64_t alias_nodes_ = 0;   // what its aliases expand to
  uint64_t alias_bytes_ = 0;   // ... in bytes, over the whole stream
};

// Turns a YamlTree into a JSON DOM, expanding aliases, without recursion.
class Materializer {
 public:
  Materializer(const YamlTree& tree, Allocator* alloc)
      : t_(tree), alloc_(*alloc) {}

  Status Build(Value* out) {
    struct Frame {
      Value* dst;     // the container being filled
      uint32_t node;  // its (resolved) tree node
      uint32_t next;  // next child position
    };
    std::vector<Frame> stack;
    uint32_t node = t_.Resolve(t_.root);
    Value* dst = out;
    for (;;) {
      const TreeNode& n = t_.nodes[node];
      switch (n.kind) {
        case TreeNode::kNull:
        case TreeNode::kAlias:  // resolved away
          dst->SetNull();
          break;
        case TreeNode::kScalar:
          RETURN_IF_ERROR(Scalar(n, node, dst));
          break;
        case TreeNode::kSequence:
          dst->SetArray();
          dst->Reserve(n.count, alloc_);
          stack.push_back({dst, node, 0});
          break;
        case TreeNode::kMap:
          dst->SetObject();
          stack.push_back({dst, node, 0});
          break;
      }
      // Next child slot, closing finished containers. A slot's address stays
      // valid while its subtree is built: only the innermost container grows.
      dst = nullptr;
      while (!stack.empty() && dst == nullptr) {
        Frame& f = stack.back();
        const TreeNode& c = t_.nodes[f.node];
        if (f.next >= c.count) {
          stack.pop_back();
          continue;
        }
        if (c.kind == TreeNode::kSequence) {
          node = t_.Resolve(t_.children[c.first + f.next]);
          f.next += 1;
          f.dst->PushBack(Value(), alloc_);
          dst = &(*f.dst)[f.dst->Size() - 1];
        } else {
          std::string key;
          RETURN_IF_ERROR(KeyString(t_, t_.children[c.first + f.next], &key));
          node = t_.Resolve(t_.children[c.first + f.next + 1]);
          f.next += 2;
          f.dst->AddMember(
              Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()),
                    alloc_),
              Value(), alloc_);
          dst = &(f.dst->MemberEnd() - 1)->value;
        }
      }
      if (dst == nullptr) return Status::Ok();
    }
  }

 private:
  void SetString(std::string_view s, Value* out) {
    out->SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()),
                   alloc_);
  }

  Status Float(double d, Value* out) {
    if (!std::isfinite(d)) {
      return InvalidArgumentError("yaml: NaN and infinity have no JSON form");
    }
    // Go's json.Marshal writes integral floats below 1e21 without a
    // fraction, so they reach the decoder as integers.
    if (std::trunc(d) == d && std::fabs(d) < 1e21) {
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
        out->SetInt64(static_cast<int64_t>(d));
        return Status::Ok();
      }
      if (d >= 0 && d < 18446744073709551616.0) {
        out->SetUint64(static_cast<uint64_t>(d));
        return Status::Ok();
      }
    }
    out->SetDouble(d);
    return Status::Ok();
  }

  Status Resolve(const Resolved& r, Value* out) {
    switch (r.kind) {
      case Resolved::kNull:
        out->SetNull();
        return Status::Ok();
      case Resolved::kBool:
        out->SetBool(r.b);
        return Status::Ok();
      case Resolved::kInt:
        out->SetInt64(r.i);
        return Status::Ok();
      case Resolved::kUint:
        out->SetUint64(r.u);
        return Status::Ok();
      case Resolved::kFloat:
        return Float(r.d, out);
      case Resolved::kString:
        SetString(r.s, out);
        return Status::Ok();
    }
    return Status::Ok();
  }

  Status Scalar(const TreeNode& n, uint32_t index, Value* out) {
    const std::string_view text = t_.Text(n);
    if (n.tag == TreeNode::kPlain) return Resolve(ResolvePlain(text), out);
    if (n.tag == TreeNode::kNonSpecific) {  // quoted
      SetString(text, out);
      return Status::Ok();
    }
    const std::string& tag = t_.tags.at(index);
    if (tag.rfind(kTagPrefix, 0) == 0) {
      std::string_view kind = std::string_view(tag).substr(kTagPrefix.size());
      if (kind == "binary") {
        std::string compact;
        for (char c : text) {
          if (c != '\n' && c != '\r' && c != ' ') compact += c;
        }
        StatusOr<std::string> bytes = Base64Decode(compact);
        if (!bytes.ok()) {
          return InvalidArgumentError("yaml: !!binary value is not base64");
        }
        SetString(*bytes, out);
        return Status::Ok();
      }
      if (kind == "int" || kind == "float" || kind == "bool" ||
          kind == "null") {
        Resolved r = ResolvePlain(text);
        const bool ok = (kind == "int" && (r.kind == Resolved::kInt ||
                                           r.kind == Resolved::kUint)) ||
                        (kind == "float" && (r.kind == Resolved::kFloat ||
                                             r.kind == Resolved::kInt ||
                                             r.kind == Resolved::kUint)) ||
                        (kind == "bool" && r.kind == Resolved::kBool) ||
                        (kind == "null" && r.kind == Resolved::kNull);
        if (!ok) {
          return InvalidArgumentError("yaml: cannot decode \"" +
                                      std::string(text) + "\" as !!" +
                                      std::string(kind));
        }
        return Resolve(r, out);
      }
    }
    // !!str and unknown tags are strings.
    SetString(text, out);
    return Status::Ok();
  }

  const YamlTree& t_;
  Allocator& alloc_;
};

Status YamlError(const YAML::Exception& e) {
  return InvalidArgumentError("yaml: line " + std::to_string(e.mark.line + 1) +
                              ", column " + std::to_string(e.mark.column + 1) +
                              ": " + e.msg);
}

// ---------------------------------------------------------------------------
// Output

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  if (ResolvePlain(s).kind != Resolved::kString || s == "<<") return true;
  // Timestamps: go-yaml would read them back as times (and a date-only one
  // as a different string); kubectl prints them quoted.
  if (DateOnly(s) || ParseRfc3339(s).ok()) return true;
  const char first = s.front();
  if (first == ' ' || s.back() == ' ' || s.back() == ':') return true;
  if (std::string_view("?:,[]{}#&*!|>'\"%@`").find(first) !=
      std::string_view::npos) {
    return true;
  }
  if (first == '-' && (s.size() == 1 || s[1] == ' ')) return true;  // "- x"
  if (s.rfind("---", 0) == 0 || s.rfind("...", 0) == 0) return true;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == ':' && i + 1 < s.size() && s[i + 1] == ' ') return true;
    if (c == '#' && i > 0 && s[i - 1] == ' ') return true;
  }
  return false;
}

void AppendQuoted(std::string_view s, std::string* out) {
  *out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02X", c);
          *out += buf;
        } else {
          *out += ch;
        }
    }
  }
  *out += '"';
}

void AppendString(std::string_view s, std::string* out) {
  if (NeedsQuotes(s)) {
    AppendQuoted(s, out);
  } else {
    *out += s;
  }
}

void AppendScalar(const Value& v, std::string* out) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      *out += "null";
      return;
    case rapidjson::kFalseType:
      *out += "false";
      return;
    case rapidjson::kTrueType:
      *out += "true";
      return;
    case rapidjson::kObjectType:
      *out += "{}";
      return;
    case rapidjson::kArrayType:
      *out += "[]";
      return;
    case rapidjson::kStringType:
      AppendString(std::string_view(v.GetString(), v.GetStringLength()), out);
      return;
    case rapidjson::kNumberType:
      if (v.IsInt64()) {
        *out += std::to_string(v.GetInt64());
      } else if (v.IsUint64()) {
        *out += std::to_string(v.GetUint64());
      } else {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof(buf), v.GetDouble());
        out->append(buf, r.ptr);
      }
      return;
  }
}

void Indent(int n, std::string* out) {
  out->append(static_cast<size_t>(n), ' ');
}

bool IsNonEmptyContainer(const Value& v) {
  return (v.IsObject() && v.MemberCount() > 0) || (v.IsArray() && !v.Empty());
}

// Block-style output of a non-empty object or array, with an explicit stack
// rather than recursion (the DOM may be 10,000 levels deep). Mappings list
// their keys sorted; a sequence under a key is not indented (go-yaml's
// layout); the first entry of a container inside a sequence shares the
// "- " line.
void AppendBlock(const Value& root, std::string* out) {
  struct Frame {
    const Value* v;
    int indent;
    bool first_inline;
    size_t next = 0;
    std::vector<const Value::Member*> members;  // objects: sorted
  };
  std::vector<Frame> stack;
  auto push = [&](const Value& v, int indent, bool first_inline) {
    Frame f{&v, indent, first_inline};
    if (v.IsObject()) {
      f.members.reserve(v.MemberCount());
      for (const auto& m : v.GetObject()) f.members.push_back(&m);
      std::stable_sort(f.members.begin(), f.members.end(),
                       [](auto* a, auto* b) {
                         return std::string_view(a->name.GetString(),
                                                 a->name.GetStringLength()) <
                                std::string_view(b->name.GetString(),
                                                 b->name.GetStringLength());
                       });
    }
    stack.push_back(std::move(f));
  };
  push(root, 0, false);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const size_t count = f.v->IsObject() ? f.members.size() : f.v->Size();
    if (f.next >= count) {
      stack.pop_back();
      continue;
    }
    const bool first = f.next++ == 0;
    const int indent = f.indent;
    if (!(first && f.first_inline)) Indent(indent, out);
    if (f.v->IsObject()) {
      const Value::Member* m = f.members[f.next - 1];
      AppendString(
          std::string_view(m->name.GetString(), m->name.GetStringLength()),
          out);
      *out += ':';
      const Value& v = m->value;
      if (v.IsObject() && v.MemberCount() > 0) {
        *out += '\n';
        push(v, indent + 2, false);
      } else if (v.IsArray() && !v.Empty()) {
        *out += '\n';
        push(v, indent, false);  // go-yaml: not indented
      } else {
        *out += ' ';
        AppendScalar(v, out);
        *out += '\n';
      }
    } else {
      const Value& item = (*f.v)[static_cast<rapidjson::SizeType>(f.next - 1)];
      *out += "- ";
      if (IsNonEmptyContainer(item)) {
        push(item, indent + 2, true);
      } else {
        AppendScalar(item, out);
        *out += '\n';
      }
    }
  }
}

}  // namespace

StatusOr<std::vector<rapidjson::Document>> ParseYamlStream(
    std::string_view yaml) {
  std::istringstream in{std::string(yaml)};
  TreeBuilder builder(
      std::clamp<uint64_t>(yaml.size(), kMinAliasBytes, kMaxAliasBytes));
  std::vector<Document> docs;
  // yaml-cpp reports malformed input by throwing; this is the boundary.
  // yaml-cpp 0.7 can stop advancing and hand out empty documents forever
  // (a body of just "," does: a 1-byte request pinned a worker at 100% CPU;
  // found by fuzz/yaml_fuzz.cc). Every document but the first takes at least
  // one byte of input ("---", "...", or its content), so more documents than
  // bytes means the parser is stuck.
  size_t documents = 0;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (++documents > yaml.size() + 1) {
        return InvalidArgumentError("yaml: did not find expected node content");
      }
      RETURN_IF_ERROR(builder.status());
      const YamlTree& tree = builder.tree();
      if (tree.nodes.empty() ||
          tree.nodes[tree.Resolve(tree.root)].kind == TreeNode::kNull) {
        continue;  // an empty document
      }
      Document doc;
      RETURN_IF_ERROR(Materializer(tree, &doc.GetAllocator()).Build(&doc));
      docs.push_back(std::move(doc));
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own parser recurses; it stops at this depth.
    return InvalidArgumentError(
        "yaml: line " + std::to_string(e.mark.line + 1) + ", column " +
        std::to_string(e.mark.column + 1) + ": exceeded max depth of " +
        std::to_string(e.depth()));
  } catch (const YAML::Exception& e) {
    return YamlError(e);
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("yaml: ") + e.what());
  }
  return docs;
}

StatusOr<rapidjson::Document> ParseYamlDocument(std::string_view yaml) {
  ASSIGN_OR_RETURN(std::vector<Document> docs, ParseYamlStream(yaml));
  if (docs.size() != 1) {
    return InvalidArgumentError(docs.empty()
                                    ? "yaml: empty document"
                                    : "yaml: expected one document, got " +
                                          std::to_string(docs.size()));
  }
  return std::move(docs.front());
}

StatusOr<rapidjson::Document> ParseJsonOrYaml(std::string_view text) {
  std::string_view trimmed = StripWhitespace(text);
  if (!trimmed.empty() && (trimmed[0] == '{' || trimmed[0] == '[')) {
    Document doc;
    const json::Outcome r = json::ParseDom(text, &doc);
    if (r.ok()) return doc;
    if (r.too_deep) return InvalidArgumentError(r.Message());
    // Not JSON: YAML's flow style ({a: 1}) looks the same.
  }
  return ParseYamlDocument(text);
}

std::string JsonToYaml(const rapidjson::Value& value) {
  std::string out;
  if (IsNonEmptyContainer(value)) {
    AppendBlock(value, &out);
  } else {
    AppendScalar(value, &out);
    out += '\n';
  }
  return out;
}

StatusOr<DecodeResult> DecodeYaml(std::string_view yaml,
                                  google::protobuf::Message* msg) {
  ASSIGN_OR_RETURN(Document doc, ParseYamlDocument(yaml));
  return DecodeJsonValue(doc, msg);
}

std::string EncodeYaml(const google::protobuf::Message& msg,
                       const TypeMeta& type_meta) {
  Document doc;
  Value v = ToJsonValue(msg, doc.GetAllocator(), type_meta);
  return JsonToYaml(v);
}

}  // namespace kplane::objects
