#include "objects/machinery/labels.h"

#include <algorithm>
#include <set>

#include "base/strings.h"
#include "objects/machinery/validation.h"

namespace kplane::machinery {

namespace {

// Go's %#v of a []string.
std::string GoStringSlice(const std::vector<std::string>& v) {
  std::string s = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ", ";
    s += GoQuote(v[i]);
  }
  return s + "}";
}

// validateLabelKey: a field.Invalid at `path` with the messages joined by
// "; ". Empty when valid.
std::string ValidateLabelKey(std::string_view key, std::string_view path) {
  std::vector<std::string> errs = IsQualifiedName(key);
  if (errs.empty()) return "";
  return InvalidError(path, key, StrJoin(errs, "; "));
}

std::string Aggregate(const std::vector<std::string>& errs) {
  if (errs.size() == 1) return errs[0];
  return "[" + StrJoin(errs, ", ") + "]";
}

void SortByKey(std::vector<LabelRequirement>& reqs) {
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const LabelRequirement& a, const LabelRequirement& b) {
                     return a.key < b.key;
                   });
}

// ---- lexer and parser (labels.Lexer / labels.Parser) ----

enum class Tok {
  kError,
  kEnd,
  kClosedPar,
  kComma,
  kDoesNotExist,
  kDoubleEquals,
  kEquals,
  kGreaterThan,
  kIdentifier,
  kIn,
  kLessThan,
  kNotEquals,
  kNotIn,
  kOpenPar,
};

struct Item {
  Tok tok;
  std::string lit;
};

std::optional<Tok> KeywordToken(std::string_view s) {
  if (s == ")") return Tok::kClosedPar;
  if (s == ",") return Tok::kComma;
  if (s == "!") return Tok::kDoesNotExist;
  if (s == "==") return Tok::kDoubleEquals;
  if (s == "=") return Tok::kEquals;
  if (s == ">") return Tok::kGreaterThan;
  if (s == "in") return Tok::kIn;
  if (s == "<") return Tok::kLessThan;
  if (s == "!=") return Tok::kNotEquals;
  if (s == "notin") return Tok::kNotIn;
  if (s == "(") return Tok::kOpenPar;
  return std::nullopt;
}

bool IsWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool IsSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' ||
         c == '<';
}

std::vector<Item> Lex(std::string_view s) {
  std::vector<Item> items;
  size_t pos = 0;
  while (true) {
    while (pos < s.size() && IsWhitespace(s[pos])) ++pos;
    if (pos >= s.size()) {
      items.push_back({Tok::kEnd, ""});
      return items;
    }
    if (IsSpecial(s[pos])) {
      // Longest run of special symbols that still forms a token.
      std::string buf;
      std::optional<Item> last;
      while (pos < s.size() && IsSpecial(s[pos])) {
        buf.push_back(s[pos]);
        if (auto t = KeywordToken(buf)) {
          last = Item{*t, buf};
          ++pos;
        } else if (last) {
          break;
        } else {
          ++pos;
        }
      }
      if (!last) {
        items.push_back(
            {Tok::kError, "error expected: keyword found '" + buf + "'"});
      } else {
        items.push_back(*last);
      }
      continue;
    }
    size_t start = pos;
    while (pos < s.size() && !IsSpecial(s[pos]) && !IsWhitespace(s[pos])) {
      ++pos;
    }
    std::string word(s.substr(start, pos - start));
    if (auto t = KeywordToken(word)) {
      items.push_back({*t, word});
    } else {
      items.push_back({Tok::kIdentifier, word});
    }
  }
}

class Parser {
 public:
  explicit Parser(std::string_view s) : items_(Lex(s)) {}

  Status Parse(std::vector<LabelRequirement>* out) {
    while (true) {
      auto [tok, lit] = Lookahead(true);
      if (tok == Tok::kIdentifier || tok == Tok::kDoesNotExist) {
        LabelRequirement r;
        Status st = ParseRequirement(&r);
        if (!st.ok()) {
          return InvalidArgumentError("unable to parse requirement: " +
                                      st.message());
        }
        out->push_back(std::move(r));
        auto [t, l] = Consume(true);
        if (t == Tok::kEnd) return Status::Ok();
        if (t == Tok::kComma) {
          auto [t2, l2] = Lookahead(true);
          if (t2 != Tok::kIdentifier && t2 != Tok::kDoesNotExist) {
            return InvalidArgumentError("found '" + l2 +
                                        "', expected: identifier after ','");
          }
          continue;
        }
        return InvalidArgumentError("found '" + l +
                                    "', expected: ',' or 'end of string'");
      }
      if (tok == Tok::kEnd) return Status::Ok();
      return InvalidArgumentError(
          "found '" + lit + "', expected: !, identifier, or 'end of string'");
    }
  }

 private:
  // In value context "in"/"notin" are plain identifiers.
  std::pair<Tok, std::string> Lookahead(bool values) const {
    Item it = items_[pos_];
    if (values && (it.tok == Tok::kIn || it.tok == Tok::kNotIn)) {
      it.tok = Tok::kIdentifier;
    }
    return {it.tok, it.lit};
  }
  std::pair<Tok, std::string> Consume(bool values) {
    auto r = Lookahead(values);
    if (pos_ + 1 < items_.size()) ++pos_;
    return r;
  }

  Status ParseRequirement(LabelRequirement* r) {
    std::string key;
    std::optional<LabelOperator> op;
    RETURN_IF_ERROR(ParseKeyAndInferOperator(&key, &op));
    if (op) {
      ASSIGN_OR_RETURN(*r, NewLabelRequirement(key, *op, {}));
      return Status::Ok();
    }
    LabelOperator bop = LabelOperator::kEquals;
    RETURN_IF_ERROR(ParseOperator(&bop));
    std::set<std::string> values;
    if (bop == LabelOperator::kIn || bop == LabelOperator::kNotIn) {
      RETURN_IF_ERROR(ParseValues(&values));
    } else {
      RETURN_IF_ERROR(ParseExactValue(&values));
    }
    ASSIGN_OR_RETURN(
        *r, NewLabelRequirement(key, bop, {values.begin(), values.end()}));
    return Status::Ok();
  }

  Status ParseKeyAndInferOperator(std::string* key,
                                  std::optional<LabelOperator>* op) {
    auto [tok, lit] = Consume(true);
    if (tok == Tok::kDoesNotExist) {
      *op = LabelOperator::kDoesNotExist;
      std::tie(tok, lit) = Consume(true);
    }
    if (tok != Tok::kIdentifier) {
      return InvalidArgumentError("found '" + lit + "', expected: identifier");
    }
    std::string err = ValidateLabelKey(lit, "<nil>");
    if (!err.empty()) return InvalidArgumentError(err);
    auto [next, unused] = Lookahead(true);
    // "!k" stays DoesNotExist whatever follows; "!k=v" then fails in the
    // caller on the unexpected '=' token, as upstream does.
    if ((next == Tok::kEnd || next == Tok::kComma) && !*op) {
      *op = LabelOperator::kExists;
    }
    *key = lit;
    return Status::Ok();
  }

  Status ParseOperator(LabelOperator* op) {
    auto [tok, lit] = Consume(false);
    switch (tok) {
      case Tok::kIn:
        *op = LabelOperator::kIn;
        break;
      case Tok::kEquals:
        *op = LabelOperator::kEquals;
        break;
      case Tok::kDoubleEquals:
        *op = LabelOperator::kDoubleEquals;
        break;
      case Tok::kGreaterThan:
        *op = LabelOperator::kGreaterThan;
        break;
      case Tok::kLessThan:
        *op = LabelOperator::kLessThan;
        break;
      case Tok::kNotIn:
        *op = LabelOperator::kNotIn;
        break;
      case Tok::kNotEquals:
        *op = LabelOperator::kNotEquals;
        break;
      default:
        return InvalidArgumentError("found '" + lit +
                                    "', expected: in, notin, =, ==, !=, gt, "
                                    "lt");
    }
    return Status::Ok();
  }

  Status ParseValues(std::set<std::string>* out) {
    auto [tok, lit] = Consume(true);
    if (tok != Tok::kOpenPar) {
      return InvalidArgumentError("found '" + lit + "' expected: '('");
    }
    std::tie(tok, lit) = Lookahead(true);
    if (tok == Tok::kIdentifier || tok == Tok::kComma) {
      RETURN_IF_ERROR(ParseIdentifiersList(out));
      auto [t, unused] = Consume(true);
      if (t != Tok::kClosedPar) {
        return InvalidArgumentError("found '" + lit + "', expected: ')'");
      }
      return Status::Ok();
    }
    if (tok == Tok::kClosedPar) {
      Consume(true);
      out->insert("");
      return Status::Ok();
    }
    return InvalidArgumentError("found '" + lit +
                                "', expected: ',', ')' or identifier");
  }

  Status ParseIdentifiersList(std::set<std::string>* out) {
    while (true) {
      auto [tok, lit] = Consume(true);
      if (tok == Tok::kIdentifier) {
        out->insert(lit);
        auto [t2, l2] = Lookahead(true);
        if (t2 == Tok::kComma) continue;
        if (t2 == Tok::kClosedPar) return Status::Ok();
        return InvalidArgumentError("found '" + l2 + "', expected: ',' or ')'");
      }
      if (tok == Tok::kComma) {
        if (out->empty()) out->insert("");  // "(,"
        auto [t2, unused] = Lookahead(true);
        if (t2 == Tok::kClosedPar) {
          out->insert("");  // ",)"
          return Status::Ok();
        }
        if (t2 == Tok::kComma) out->insert("");  // ",,"
        continue;
      }
      return InvalidArgumentError("found '" + lit +
                                  "', expected: ',', or identifier");
    }
  }

  Status ParseExactValue(std::set<std::string>* out) {
    auto [tok, unused] = Lookahead(true);
    if (tok == Tok::kEnd || tok == Tok::kComma) {
      out->insert("");
      return Status::Ok();
    }
    auto [t, lit] = Consume(true);
    if (t == Tok::kIdentifier) {
      out->insert(lit);
      return Status::Ok();
    }
    return InvalidArgumentError("found '" + lit + "', expected: identifier");
  }

  std::vector<Item> items_;
  size_t pos_ = 0;
};

}  // namespace

std::string LabelsString(const Labels& labels) {
  std::string s;
  for (const auto& [k, v] : labels) {
    if (!s.empty()) s += ",";
    s += k + "=" + v;
  }
  return s;
}

StatusOr<LabelRequirement> NewLabelRequirement(
    std::string key, LabelOperator op, std::vector<std::string> values) {
  std::vector<std::string> errs;
  std::string kerr = ValidateLabelKey(key, "key");
  if (!kerr.empty()) errs.push_back(kerr);
  switch (op) {
    case LabelOperator::kIn:
    case LabelOperator::kNotIn:
      if (values.empty()) {
        errs.push_back(InvalidErrorRaw("values", GoStringSlice(values),
                                       "for 'in', 'notin' operators, values "
                                       "set can't be empty"));
      }
      break;
    case LabelOperator::kEquals:
    case LabelOperator::kDoubleEquals:
    case LabelOperator::kNotEquals:
      if (values.size() != 1) {
        errs.push_back(InvalidErrorRaw(
            "values", GoStringSlice(values),
            "exact-match compatibility requires one single value"));
      }
      break;
    case LabelOperator::kExists:
    case LabelOperator::kDoesNotExist:
      if (!values.empty()) {
        errs.push_back(InvalidErrorRaw(
            "values", GoStringSlice(values),
            "values set must be empty for exists and does not exist"));
      }
      break;
    case LabelOperator::kGreaterThan:
    case LabelOperator::kLessThan:
      if (values.size() != 1) {
        errs.push_back(InvalidErrorRaw(
            "values", GoStringSlice(values),
            "for 'Gt', 'Lt' operators, exactly one value is required"));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        if (!ParseInt64(values[i])) {
          errs.push_back(InvalidError(
              "values[" + std::to_string(i) + "]", values[i],
              "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      }
      break;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<std::string> v = IsValidLabelValue(values[i]);
    if (!v.empty()) {
      errs.push_back(
          InvalidError("values[" + std::to_string(i) + "][" + key + "]",
                       values[i], StrJoin(v, "; ")));
    }
  }
  if (!errs.empty()) return InvalidArgumentError(Aggregate(errs));
  return LabelRequirement{std::move(key), op, std::move(values)};
}

bool LabelRequirement::Matches(const Labels& labels) const {
  auto it = labels.find(key);
  bool exists = it != labels.end();
  auto has_value = [&](const std::string& v) {
    return std::find(values.begin(), values.end(), v) != values.end();
  };
  switch (op) {
    case LabelOperator::kIn:
    case LabelOperator::kEquals:
    case LabelOperator::kDoubleEquals:
      return exists && has_value(it->second);
    case LabelOperator::kNotIn:
    case LabelOperator::kNotEquals:
      return !exists || !has_value(it->second);
    case LabelOperator::kExists:
      return exists;
    case LabelOperator::kDoesNotExist:
      return !exists;
    case LabelOperator::kGreaterThan:
    case LabelOperator::kLessThan: {
      if (!exists || values.size() != 1) return false;
      auto have = ParseInt64(it->second);
      auto want = ParseInt64(values[0]);
      if (!have || !want) return false;
      return op == LabelOperator::kGreaterThan ? *have > *want : *have < *want;
    }
  }
  return false;
}

std::string LabelRequirement::String() const {
  std::string s;
  if (op == LabelOperator::kDoesNotExist) s += "!";
  s += key;
  switch (op) {
    case LabelOperator::kEquals:
      s += "=";
      break;
    case LabelOperator::kDoubleEquals:
      s += "==";
      break;
    case LabelOperator::kNotEquals:
      s += "!=";
      break;
    case LabelOperator::kIn:
      s += " in ";
      break;
    case LabelOperator::kNotIn:
      s += " notin ";
      break;
    case LabelOperator::kGreaterThan:
      s += ">";
      break;
    case LabelOperator::kLessThan:
      s += "<";
      break;
    case LabelOperator::kExists:
    case LabelOperator::kDoesNotExist:
      return s;
  }
  bool set = op == LabelOperator::kIn || op == LabelOperator::kNotIn;
  if (set) s += "(";
  if (values.size() == 1) {
    s += values[0];
  } else {
    std::vector<std::string> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    s += StrJoin(sorted, ",");
  }
  if (set) s += ")";
  return s;
}

LabelSelector LabelSelector::Nothing() {
  LabelSelector s;
  s.nothing_ = true;
  return s;
}

LabelSelector LabelSelector::FromSet(const Labels& labels) {
  LabelSelector s;
  for (const auto& [k, v] : labels) {
    s.requirements_.push_back({k, LabelOperator::kEquals, {v}});
  }
  return s;
}

StatusOr<LabelSelector> LabelSelector::Parse(std::string_view selector) {
  LabelSelector s;
  Parser p(selector);
  RETURN_IF_ERROR(p.Parse(&s.requirements_));
  SortByKey(s.requirements_);
  return s;
}

StatusOr<LabelSelector> LabelSelector::FromMatch(
    const std::vector<std::pair<std::string_view, std::string_view>>&
        match_labels,
    const std::vector<LabelSelectorExpression>& match_expressions) {
  std::vector<LabelRequirement> reqs;
  for (const auto& [k, v] : match_labels) {
    ASSIGN_OR_RETURN(LabelRequirement r,
                     NewLabelRequirement(std::string(k), LabelOperator::kEquals,
                                         {std::string(v)}));
    reqs.push_back(std::move(r));
  }
  for (const LabelSelectorExpression& e : match_expressions) {
    LabelOperator op;
    if (e.op == "In") {
      op = LabelOperator::kIn;
    } else if (e.op == "NotIn") {
      op = LabelOperator::kNotIn;
    } else if (e.op == "Exists") {
      op = LabelOperator::kExists;
    } else if (e.op == "DoesNotExist") {
      op = LabelOperator::kDoesNotExist;
    } else {
      return InvalidArgumentError(GoQuote(e.op) +
                                  " is not a valid label selector operator");
    }
    ASSIGN_OR_RETURN(LabelRequirement r,
                     NewLabelRequirement(std::string(e.key), op, e.values));
    reqs.push_back(std::move(r));
  }
  LabelSelector s;
  if (reqs.empty()) return s;
  return s.Add(std::move(reqs));
}

StatusOr<LabelSelector> LabelSelector::FromLabelSelectorJson(
    const rapidjson::Value& json) {
  if (json.IsNull()) return Nothing();
  if (!json.IsObject()) {
    return InvalidArgumentError("label selector must be a JSON object");
  }
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  auto ml = json.FindMember("matchLabels");
  if (ml != json.MemberEnd() && ml->value.IsObject()) {
    for (const auto& m : ml->value.GetObject()) {
      if (!m.value.IsString()) {
        return InvalidArgumentError("matchLabels values must be strings");
      }
      labels.emplace_back(
          std::string_view(m.name.GetString(), m.name.GetStringLength()),
          std::string_view(m.value.GetString(), m.value.GetStringLength()));
    }
  }
  std::vector<LabelSelectorExpression> exprs;
  auto me = json.FindMember("matchExpressions");
  if (me != json.MemberEnd() && me->value.IsArray()) {
    for (const auto& e : me->value.GetArray()) {
      if (!e.IsObject()) {
        return InvalidArgumentError("matchExpressions items must be objects");
      }
      auto str = [&](const char* k) -> std::string_view {
        auto it = e.FindMember(k);
        return it != e.MemberEnd() && it->value.IsString()
                   ? std::string_view(it->value.GetString(),
                                      it->value.GetStringLength())
                   : std::string_view();
      };
      LabelSelectorExpression expr{.key = str("key"), .op = str("operator")};
      auto vs = e.FindMember("values");
      if (vs != e.MemberEnd() && vs->value.IsArray()) {
        for (const auto& v : vs->value.GetArray()) {
          if (v.IsString()) expr.values.push_back(v.GetString());
        }
      }
      exprs.push_back(std::move(expr));
    }
  }
  return FromMatch(labels, exprs);
}

bool LabelSelector::Matches(const Labels& labels) const {
  if (nothing_) return false;
  for (const auto& r : requirements_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::string LabelSelector::String() const {
  std::vector<std::string> parts;
  for (const auto& r : requirements_) parts.push_back(r.String());
  return StrJoin(parts, ",");
}

std::optional<std::string> LabelSelector::RequiresExactMatch(
    std::string_view key) const {
  for (const auto& r : requirements_) {
    if (r.key != key) continue;
    if ((r.op == LabelOperator::kEquals ||
         r.op == LabelOperator::kDoubleEquals || r.op == LabelOperator::kIn) &&
        r.values.size() == 1) {
      return r.values[0];
    }
    return std::nullopt;
  }
  return std::nullopt;
}

LabelSelector LabelSelector::Add(std::vector<LabelRequirement> reqs) const {
  LabelSelector s = *this;
  for (auto& r : reqs) s.requirements_.push_back(std::move(r));
  SortByKey(s.requirements_);
  return s;
}

std::string FormatLabelSelector(const rapidjson::Value& json) {
  auto s = LabelSelector::FromLabelSelectorJson(json);
  if (!s.ok()) return "<error>";
  std::string out = s->String();
  return out.empty() ? "<none>" : out;
}

}  // namespace kplane::machinery
