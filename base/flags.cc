#include "base/flags.h"

#include <sstream>

#include "base/strings.h"

namespace kplane {
namespace {

std::string DurationText(kplane::Duration d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  return std::to_string(ns) + "ns";
}

}  // namespace

FlagSet::FlagSet(std::string command, std::string description)
    : command_(std::move(command)), description_(std::move(description)) {}

void FlagSet::Add(Flag f) {
  by_name_[f.name] = flags_.size();
  if (f.short_name) by_short_[f.short_name] = flags_.size();
  flags_.push_back(std::move(f));
}

void FlagSet::String(const std::string& name, std::string* v, std::string help,
                     char short_name) {
  Add({name, short_name, std::move(help), *v, false, [v](const std::string& s) {
         *v = s;
         return Status::Ok();
       }});
}

void FlagSet::Bool(const std::string& name, bool* v, std::string help,
                   char short_name) {
  Add({name, short_name, std::move(help), *v ? "true" : "false", true,
       [v, name](const std::string& s) {
         auto b = ParseBool(s);
         if (!b) {
           return InvalidArgumentError("invalid boolean value \"" + s +
                                       "\" for --" + name);
         }
         *v = *b;
         return Status::Ok();
       }});
}

void FlagSet::Int64(const std::string& name, int64_t* v, std::string help,
                    char short_name) {
  Add({name, short_name, std::move(help), std::to_string(*v), false,
       [v, name](const std::string& s) {
         auto n = ParseInt64(s);
         if (!n) {
           return InvalidArgumentError("invalid integer \"" + s + "\" for --" +
                                       name);
         }
         *v = *n;
         return Status::Ok();
       }});
}

void FlagSet::Int(const std::string& name, int* v, std::string help,
                  char short_name) {
  Add({name, short_name, std::move(help), std::to_string(*v), false,
       [v, name](const std::string& s) {
         auto n = ParseInt64(s);
         if (!n || *n < INT32_MIN || *n > INT32_MAX) {
           return InvalidArgumentError("invalid integer \"" + s + "\" for --" +
                                       name);
         }
         *v = static_cast<int>(*n);
         return Status::Ok();
       }});
}

void FlagSet::Duration(const std::string& name, kplane::Duration* v,
                       std::string help, kplane::Duration bare_unit) {
  Add({name, 0, std::move(help), DurationText(*v), false,
       [v, name, bare_unit](const std::string& s) {
         kplane::Duration d;
         if (auto n = ParseInt64(s)) {
           // bare_unit * n must fit int64 nanoseconds.
           if (*n > kplane::Duration::max() / bare_unit ||
               *n < kplane::Duration::min() / bare_unit) {
             return InvalidArgumentError("invalid duration \"" + s +
                                         "\" for --" + name +
                                         " (out of range)");
           }
           d = bare_unit * *n;
         } else if (auto ns = ParseGoDuration(s)) {
           d = nanoseconds(*ns);
         } else {
           return InvalidArgumentError("invalid duration \"" + s + "\" for --" +
                                       name + " (examples: 100ms, 5s, 1m30s)");
         }
         // Every duration flag is a period or a limit, where negative
         // would read as "none".
         if (d < kplane::Duration(0)) {
           return InvalidArgumentError(
               "--" + name + " must not be negative (got \"" + s + "\")");
         }
         *v = d;
         return Status::Ok();
       }});
}

void FlagSet::StringList(const std::string& name, std::vector<std::string>* v,
                         std::string help, char short_name) {
  auto first = std::make_shared<bool>(true);
  Add({name, short_name, std::move(help), StrJoin(*v, ","), false,
       [v, first](const std::string& s) {
         if (*first) {
           v->clear();  // the first occurrence replaces the default
           *first = false;
         }
         for (const auto& part : StrSplit(s, ',')) {
           if (!part.empty()) v->push_back(part);
         }
         return Status::Ok();
       }});
}

void FlagSet::StringListLastWins(const std::string& name,
                                 std::vector<std::string>* v,
                                 std::string help) {
  Add({name, 0, std::move(help), StrJoin(*v, ","), false,
       [v](const std::string& s) {
         v->clear();
         for (const auto& part : StrSplit(s, ',')) {
           if (!part.empty()) v->push_back(part);
         }
         return Status::Ok();
       }});
}

Status FlagSet::Parse(int argc, const char* const* argv, int first) {
  std::vector<std::string> args;
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      args_.insert(args_.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      args_.push_back(a);
      continue;
    }
    const Flag* f = nullptr;
    std::string value;
    bool has_value = false;
    if (a[1] == '-') {
      std::string body = a.substr(2);
      size_t eq = body.find('=');
      std::string name = body.substr(0, eq);
      if (eq != std::string::npos) {
        value = body.substr(eq + 1);
        has_value = true;
      }
      auto it = by_name_.find(name);
      if (it == by_name_.end()) {
        return InvalidArgumentError("unknown flag: --" + name + " (see " +
                                    command_ + " --help)");
      }
      f = &flags_[it->second];
    } else if (std::string name = a.substr(1, a.find('=') - 1);
               name.size() > 1 && by_name_.count(name) > 0) {
      // Go's flag package: `-name value` is `--name value`.
      f = &flags_[by_name_.at(name)];
      if (size_t eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        has_value = true;
      }
    } else {
      auto it = by_short_.find(a[1]);
      if (it == by_short_.end()) {
        return InvalidArgumentError("unknown shorthand flag: '" +
                                    std::string(1, a[1]) + "' in " + a);
      }
      f = &flags_[it->second];
      if (a.size() > 2) {
        value = a.substr(a[2] == '=' ? 3 : 2);
        has_value = true;
      }
    }
    if (!has_value) {
      if (f->is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return InvalidArgumentError("flag needs an argument: --" + f->name);
      }
    }
    RETURN_IF_ERROR(f->set(value));
    set_[f->name] = true;
  }
  return Status::Ok();
}

bool FlagSet::IsSet(const std::string& name) const {
  return set_.count(name) > 0;
}

Status FlagSet::Set(const std::string& name, const std::string& value) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    return InvalidArgumentError("unknown flag: --" + name);
  }
  RETURN_IF_ERROR(flags_[it->second].set(value));
  set_[name] = true;
  return Status::Ok();
}

bool FlagSet::IsBool(const std::string& name) const {
  auto it = by_name_.find(name);
  return it != by_name_.end() && flags_[it->second].is_bool;
}

std::vector<std::string> FlagSet::Names() const {
  std::vector<std::string> names;
  names.reserve(flags_.size());
  for (const Flag& f : flags_) names.push_back(f.name);
  return names;
}

std::string FlagSet::Usage() const {
  std::ostringstream out;
  out << "Usage: " << command_ << " [flags]\n\n" << description_ << "\n\n";
  out << "Flags:\n";
  for (const Flag& f : flags_) {
    out << "  ";
    if (f.short_name) {
      out << "-" << f.short_name << ", ";
    } else {
      out << "    ";
    }
    out << "--" << f.name;
    if (!f.is_bool) out << " value";
    out << "\n        " << f.help;
    if (!f.default_text.empty() && f.default_text != "false") {
      out << " (default " << f.default_text << ")";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace kplane
