#include "objects/machinery/fields.h"

#include <algorithm>

namespace kplane::machinery {

namespace {

// Splits on commas that are not escaped.
std::vector<std::string> SplitTerms(std::string_view s) {
  std::vector<std::string> terms;
  if (s.empty()) return terms;
  size_t start = 0;
  bool in_slash = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (in_slash) {
      in_slash = false;
    } else if (s[i] == '\\') {
      in_slash = true;
    } else if (s[i] == ',') {
      terms.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.emplace_back(s.substr(start));
  return terms;
}

// The first operator position, trying "!=", "==", "=" at each offset.
bool SplitTerm(std::string_view term, std::string* lhs, std::string* op,
               std::string* rhs) {
  static const char* kOps[] = {"!=", "==", "="};
  for (size_t i = 0; i < term.size(); ++i) {
    for (const char* o : kOps) {
      std::string_view ov(o);
      if (term.substr(i, ov.size()) == ov) {
        *lhs = std::string(term.substr(0, i));
        *op = std::string(ov);
        *rhs = std::string(term.substr(i + ov.size()));
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::string EscapeFieldValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == ',' || c == '=') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

StatusOr<std::string> UnescapeFieldValue(std::string_view value) {
  if (value.find_first_of("\\,=") == std::string_view::npos) {
    return std::string(value);
  }
  std::string out;
  bool in_slash = false;
  for (char c : value) {
    if (in_slash) {
      if (c != '\\' && c != ',' && c != '=') {
        return InvalidArgumentError(
            "invalid field selector: invalid escape sequence: \\" +
            std::string(1, c));
      }
      out.push_back(c);
      in_slash = false;
      continue;
    }
    if (c == '\\') {
      in_slash = true;
    } else if (c == ',' || c == '=') {
      // Go prints the rune with %v: its code point.
      return InvalidArgumentError(
          "invalid field selector: unescaped character in value: " +
          std::to_string(static_cast<int>(c)));
    } else {
      out.push_back(c);
    }
  }
  if (in_slash) {
    return InvalidArgumentError(
        "invalid field selector: invalid escape sequence: \\");
  }
  return out;
}

StatusOr<FieldSelector> FieldSelector::Parse(std::string_view selector) {
  std::vector<std::string> parts = SplitTerms(selector);
  std::sort(parts.begin(), parts.end());
  FieldSelector s;
  for (const auto& part : parts) {
    if (part.empty()) continue;
    std::string lhs, op, rhs;
    if (!SplitTerm(part, &lhs, &op, &rhs)) {
      return InvalidArgumentError("invalid selector: '" +
                                  std::string(selector) +
                                  "'; can't understand '" + part + "'");
    }
    ASSIGN_OR_RETURN(std::string value, UnescapeFieldValue(rhs));
    s.requirements_.push_back({lhs, op == "!=", value});
  }
  return s;
}

FieldSelector FieldSelector::OneTermEqual(std::string field,
                                          std::string value) {
  FieldSelector s;
  s.requirements_.push_back({std::move(field), false, std::move(value)});
  return s;
}

bool FieldSelector::Matches(const FieldGetter& get) const {
  for (const auto& r : requirements_) {
    bool eq = get(r.field) == r.value;
    if (eq == r.not_equals) return false;
  }
  return true;
}

std::string FieldSelector::String() const {
  std::string s;
  for (const auto& r : requirements_) {
    if (!s.empty()) s += ",";
    s += r.field + (r.not_equals ? "!=" : "=") + EscapeFieldValue(r.value);
  }
  return s;
}

std::optional<std::string> FieldSelector::RequiresExactMatch(
    std::string_view field) const {
  for (const auto& r : requirements_) {
    if (r.field == field && !r.not_equals) return r.value;
  }
  return std::nullopt;
}

Status FieldSelector::Validate(
    const std::vector<std::string>& supported) const {
  for (const auto& r : requirements_) {
    if (std::find(supported.begin(), supported.end(), r.field) ==
        supported.end()) {
      return InvalidArgumentError("field label not supported: " + r.field);
    }
  }
  return Status::Ok();
}

}  // namespace kplane::machinery
