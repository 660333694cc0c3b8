#include "objects/machinery/validation.h"

#include <cstdio>

#include "base/strings.h"

namespace kplane::machinery {

namespace {

constexpr std::string_view kDNS1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDNS1123LabelErrMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
    "characters or '-', and must start and end with an alphanumeric character";
constexpr std::string_view kDNS1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDNS1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric "
    "character";
constexpr std::string_view kDNS1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDNS1035LabelErrMsg =
    "a DNS-1035 label must consist of lower case alphanumeric characters or "
    "'-', start with an alphabetic character, and end with an alphanumeric "
    "character";
constexpr std::string_view kQualifiedNameFmt =
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character";
constexpr std::string_view kLabelValueFmt =
    "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric "
    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesDNS1123Label(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

bool MatchesDNS1123Subdomain(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos
                                                      : dot - start);
    if (!MatchesDNS1123Label(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesQualifiedName(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

std::string MaxLenError(int length) {
  return "must be no more than " + std::to_string(length) + " characters";
}

std::string RegexError(std::string_view msg, std::string_view re,
                       const std::vector<std::string>& examples) {
  std::string out(msg);
  if (examples.empty()) {
    return out + " (regex used for validation is '" + std::string(re) + "')";
  }
  out += " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + examples[i] + "', ";
  }
  return out + "regex used for validation is '" + std::string(re) + "')";
}

std::vector<std::string> IsDNS1123Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1123LabelMaxLength) {
    errs.push_back(MaxLenError(kDNS1123LabelMaxLength));
  }
  if (!MatchesDNS1123Label(value)) {
    if (MatchesDNS1123Subdomain(value)) {
      errs.push_back("must not contain dots");
    } else {
      errs.push_back(RegexError(kDNS1123LabelErrMsg, kDNS1123LabelFmt,
                                {"my-name", "123-abc"}));
    }
  }
  return errs;
}

std::vector<std::string> IsDNS1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDNS1123SubdomainMaxLength));
  }
  if (!MatchesDNS1123Subdomain(value)) {
    errs.push_back(RegexError(kDNS1123SubdomainErrMsg, kDNS1123SubdomainFmt,
                              {"example.com"}));
  }
  return errs;
}

std::vector<std::string> IsDNS1035Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1035LabelMaxLength) {
    errs.push_back(MaxLenError(kDNS1035LabelMaxLength));
  }
  bool ok = !value.empty() && value.front() >= 'a' && value.front() <= 'z' &&
            MatchesDNS1123Label(value);
  if (!ok) {
    errs.push_back(RegexError(kDNS1035LabelErrMsg, kDNS1035LabelFmt,
                              {"my-name", "abc-123"}));
  }
  return errs;
}

std::vector<std::string> IsQualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  std::vector<std::string> parts = StrSplit(value, '/');
  std::string name;
  if (parts.size() == 1) {
    name = parts[0];
  } else if (parts.size() == 2) {
    const std::string& prefix = parts[0];
    name = parts[1];
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const auto& m : IsDNS1123Subdomain(prefix)) {
        errs.push_back("prefix part " + m);
      }
    }
  } else {
    errs.push_back("a qualified name " +
                   RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt,
                              {"MyName", "my.name", "123-abc"}) +
                   " with an optional DNS subdomain prefix and '/' (e.g. "
                   "'example.com/MyName')");
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part " + MaxLenError(kQualifiedNameMaxLength));
  }
  if (!MatchesQualifiedName(name)) {
    errs.push_back("name part " + RegexError(kQualifiedNameErrMsg,
                                             kQualifiedNameFmt,
                                             {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> IsValidLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) {
    errs.push_back(MaxLenError(kLabelValueMaxLength));
  }
  if (!value.empty() && !MatchesQualifiedName(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt,
                              {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::string InvalidError(std::string_view path, std::string_view value,
                         std::string_view detail) {
  std::string out = std::string(path) + ": Invalid value: " + GoQuote(value);
  if (!detail.empty()) out += ": " + std::string(detail);
  return out;
}

std::string InvalidErrorRaw(std::string_view path, std::string_view raw_value,
                            std::string_view detail) {
  std::string out =
      std::string(path) + ": Invalid value: " + std::string(raw_value);
  if (!detail.empty()) out += ": " + std::string(detail);
  return out;
}

std::string RequiredError(std::string_view path, std::string_view detail) {
  std::string out = std::string(path) + ": Required value";
  if (!detail.empty()) out += ": " + std::string(detail);
  return out;
}

std::string ForbiddenError(std::string_view path, std::string_view detail) {
  std::string out = std::string(path) + ": Forbidden";
  if (!detail.empty()) out += ": " + std::string(detail);
  return out;
}

std::vector<std::string> ValidateObjectName(std::string_view name,
                                            std::string_view generate_name,
                                            NameRule rule) {
  auto check = [rule](std::string_view v) {
    switch (rule) {
      case NameRule::kDNS1123Label:
        return IsDNS1123Label(v);
      case NameRule::kDNS1035Label:
        return IsDNS1035Label(v);
      case NameRule::kDNS1123Subdomain:
        break;
    }
    return IsDNS1123Subdomain(v);
  };
  std::vector<std::string> errs;
  if (!generate_name.empty()) {
    // A prefix may end in '-'; upstream masks it before validating.
    std::string masked(generate_name);
    if (masked.back() == '-') masked.back() = 'a';
    for (const auto& m : check(masked)) {
      errs.push_back(InvalidError("metadata.generateName", generate_name, m));
    }
  }
  if (name.empty()) {
    errs.push_back(
        RequiredError("metadata.name", "name or generateName is required"));
  } else {
    for (const auto& m : check(name)) {
      errs.push_back(InvalidError("metadata.name", name, m));
    }
  }
  return errs;
}

std::string InvalidObjectMessage(std::string_view kind, std::string_view name,
                                 const std::vector<std::string>& errors) {
  std::string out = std::string(kind) + " " + GoQuote(name) + " is invalid: ";
  if (errors.size() == 1) return out + errors[0];
  return out + "[" + StrJoin(errors, ", ") + "]";
}

std::string GenerateNameSuffix(const std::function<int(int)>& next_index) {
  std::string s;
  for (int i = 0; i < kGenerateNameSuffixLength; ++i) {
    s.push_back(kGenerateNameAlphabet[next_index(
        static_cast<int>(kGenerateNameAlphabet.size()))]);
  }
  return s;
}

std::string GenerateName(std::string_view base,
                         const std::function<int(int)>& next_index) {
  if (base.size() > static_cast<size_t>(kMaxGeneratedNameLength)) {
    base = base.substr(0, kMaxGeneratedNameLength);
  }
  return std::string(base) + GenerateNameSuffix(next_index);
}

}  // namespace kplane::machinery
