#include "objects/machinery/jsonpath.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/json.h"
#include "base/strings.h"

namespace kplane::machinery {

using rapidjson::Value;

// One step of a path: .name, ['name'], [n], [*], [?(@.a.b op literal)].
struct JsonPath::Step {
  enum Kind { kField, kIndex, kAll, kFilter } kind = kField;
  std::string field;
  int64_t index = 0;
  // Filter: @-relative path, operator, literal (JSON text).
  std::vector<Step> filter_path;
  bool filter_equal = true;
  rapidjson::Document filter_value;
};

// A template element.
struct JsonPath::Node {
  enum Kind { kText, kPath, kRange } kind = kText;
  std::string text;                               // kText
  std::vector<Step> path;                         // kPath, kRange
  std::vector<std::shared_ptr<const Node>> body;  // kRange
};

namespace {

using Step = JsonPath::Step;
using Node = JsonPath::Node;

// Parses ".a.b[0]['x'][*][?(@.t=="v")]" (leading "@" or "$" allowed).
StatusOr<std::vector<Step>> ParsePath(std::string_view s) {
  std::vector<Step> steps;
  size_t i = 0;
  if (i < s.size() && (s[i] == '$' || s[i] == '@')) ++i;
  while (i < s.size()) {
    if (s[i] == '.') {
      ++i;
      size_t j = i;
      while (j < s.size() && s[j] != '.' && s[j] != '[') ++j;
      if (j == i) {
        if (i >= s.size()) break;  // a trailing "." (e.g. "{.}") is the root
        continue;
      }
      Step st;
      st.field = std::string(s.substr(i, j - i));
      if (st.field == "*") st.kind = Step::kAll;
      steps.push_back(std::move(st));
      i = j;
    } else if (s[i] == '[') {
      // Find the matching ']' outside quotes.
      size_t j = i + 1;
      char quote = 0;
      int depth = 1;
      for (; j < s.size(); ++j) {
        if (quote) {
          if (s[j] == quote) quote = 0;
        } else if (s[j] == '\'' || s[j] == '"') {
          quote = s[j];
        } else if (s[j] == '[') {
          ++depth;
        } else if (s[j] == ']' && --depth == 0) {
          break;
        }
      }
      if (j >= s.size()) return InvalidArgumentError("unterminated [");
      std::string_view in = StripWhitespace(s.substr(i + 1, j - i - 1));
      Step st;
      if (in == "*") {
        st.kind = Step::kAll;
      } else if (in.size() >= 2 && (in[0] == '\'' || in[0] == '"') &&
                 in.back() == in[0]) {
        st.field = std::string(in.substr(1, in.size() - 2));
      } else if (in.starts_with("?(") && in.ends_with(")")) {
        std::string_view expr = in.substr(2, in.size() - 3);
        size_t op = expr.find("==");
        st.filter_equal = true;
        if (op == std::string_view::npos) {
          op = expr.find("!=");
          st.filter_equal = false;
        }
        if (op == std::string_view::npos) {
          return InvalidArgumentError("unsupported filter: " + std::string(in));
        }
        ASSIGN_OR_RETURN(st.filter_path,
                         ParsePath(StripWhitespace(expr.substr(0, op))));
        std::string lit(StripWhitespace(expr.substr(op + 2)));
        if (lit.size() >= 2 && lit[0] == '\'' && lit.back() == '\'') {
          lit = "\"" + lit.substr(1, lit.size() - 2) + "\"";
        }
        if (!json::ParseDom(lit, &st.filter_value).ok()) {
          return InvalidArgumentError("bad filter literal: " + lit);
        }
        st.kind = Step::kFilter;
      } else if (std::optional<int64_t> n = ParseInt64(in)) {
        st.kind = Step::kIndex;
        st.index = *n;
      } else {
        return InvalidArgumentError("unsupported subscript: [" +
                                    std::string(in) + "]");
      }
      steps.push_back(std::move(st));
      i = j + 1;
    } else {
      return InvalidArgumentError("unexpected \"" + std::string(s.substr(i)) +
                                  "\" in path");
    }
  }
  return steps;
}

std::vector<const Value*> Eval(const std::vector<Step>& path,
                               const Value& root);

bool Matches(const Step& filter, const Value& v) {
  std::vector<const Value*> got = Eval(filter.filter_path, v);
  const bool eq = !got.empty() && *got[0] == filter.filter_value;
  return filter.filter_equal ? eq : !eq;
}

std::vector<const Value*> Eval(const std::vector<Step>& path,
                               const Value& root) {
  std::vector<const Value*> cur = {&root};
  for (const Step& st : path) {
    std::vector<const Value*> next;
    for (const Value* v : cur) {
      switch (st.kind) {
        case Step::kField:
          if (v->IsObject()) {
            auto it = v->FindMember(st.field.c_str());
            if (it != v->MemberEnd()) next.push_back(&it->value);
          }
          break;
        case Step::kIndex:
          if (v->IsArray()) {
            int64_t n = st.index < 0 ? st.index + v->Size() : st.index;
            if (n >= 0 && n < static_cast<int64_t>(v->Size())) {
              next.push_back(&(*v)[static_cast<rapidjson::SizeType>(n)]);
            }
          }
          break;
        case Step::kAll:
          if (v->IsArray()) {
            for (const Value& e : v->GetArray()) next.push_back(&e);
          } else if (v->IsObject()) {
            for (auto& m : v->GetObject()) next.push_back(&m.value);
          }
          break;
        case Step::kFilter:
          if (v->IsArray()) {
            for (const Value& e : v->GetArray()) {
              if (Matches(st, e)) next.push_back(&e);
            }
          }
          break;
      }
    }
    cur = std::move(next);
  }
  return cur;
}

std::string Print(const Value& v) {
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  json::Accept(v, w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Parses nodes until `{end}` (when in_range) or the end of the template.
StatusOr<std::vector<std::shared_ptr<const Node>>> ParseNodes(
    std::string_view t, size_t* pos, bool in_range) {
  std::vector<std::shared_ptr<const Node>> nodes;
  while (*pos < t.size()) {
    const size_t open = t.find('{', *pos);
    if (open != *pos) {
      auto n = std::make_shared<Node>();
      n->text = std::string(t.substr(*pos, open == std::string_view::npos
                                               ? std::string_view::npos
                                               : open - *pos));
      nodes.push_back(n);
      if (open == std::string_view::npos) {
        *pos = t.size();
        break;
      }
    }
    // The matching '}' outside quotes.
    size_t close = open + 1;
    char quote = 0;
    for (; close < t.size(); ++close) {
      if (quote) {
        if (t[close] == '\\') {
          ++close;
        } else if (t[close] == quote) {
          quote = 0;
        }
      } else if (t[close] == '"' || t[close] == '\'') {
        quote = t[close];
      } else if (t[close] == '}') {
        break;
      }
    }
    if (close >= t.size()) return InvalidArgumentError("unclosed action");
    std::string_view action =
        StripWhitespace(t.substr(open + 1, close - open - 1));
    *pos = close + 1;
    if (action == "end") {
      if (!in_range) return InvalidArgumentError("unexpected {end}");
      return nodes;
    }
    auto n = std::make_shared<Node>();
    if (action.size() >= 2 && (action[0] == '"' || action[0] == '\'') &&
        action.back() == action[0]) {
      n->text = Unescape(action.substr(1, action.size() - 2));
    } else if (action.starts_with("range ")) {
      n->kind = Node::kRange;
      ASSIGN_OR_RETURN(n->path, ParsePath(StripWhitespace(action.substr(6))));
      ASSIGN_OR_RETURN(n->body, ParseNodes(t, pos, true));
    } else {
      n->kind = Node::kPath;
      ASSIGN_OR_RETURN(n->path, ParsePath(action));
    }
    nodes.push_back(n);
  }
  if (in_range) return InvalidArgumentError("range without {end}");
  return nodes;
}

void Run(const std::vector<std::shared_ptr<const Node>>& nodes,
         const Value& root, std::string* out) {
  for (const auto& n : nodes) {
    switch (n->kind) {
      case Node::kText:
        *out += n->text;
        break;
      case Node::kPath: {
        std::vector<const Value*> vs = Eval(n->path, root);
        for (size_t i = 0; i < vs.size(); ++i) {
          if (i > 0) *out += " ";
          *out += Print(*vs[i]);
        }
        break;
      }
      case Node::kRange:
        for (const Value* v : Eval(n->path, root)) Run(n->body, *v, out);
        break;
    }
  }
}

}  // namespace

StatusOr<JsonPath> JsonPath::Parse(std::string_view templ) {
  JsonPath p;
  size_t pos = 0;
  ASSIGN_OR_RETURN(p.nodes_, ParseNodes(templ, &pos, false));
  return p;
}

std::string JsonPath::Execute(const Value& root) const {
  std::string out;
  Run(nodes_, root, &out);
  return out;
}

std::vector<const Value*> JsonPath::FindResults(const Value& root) const {
  if (nodes_.empty() || nodes_[0]->kind != Node::kPath) return {};
  return Eval(nodes_[0]->path, root);
}

std::string JsonPath::PrintValue(const Value& v) { return Print(v); }

}  // namespace kplane::machinery
