#include "kpctl/kube/flags.h"

#include "base/strings.h"

namespace kplane::kpctl::kube {

std::vector<FlagSpec> GlobalFlags() {
  return {
      {"kubeconfig", 0, false, "",
       "path to the kubeconfig file (else $KUBECONFIG, else ~/.kube/config)"},
      {"context", 0, false, "", "the kubeconfig context to use"},
      {"server", 's', false, "",
       "the API server's address (https://host:port)"},
      {"token", 0, false, "", "bearer token for the API server"},
      {"certificate-authority", 0, false, "",
       "path to a CA file to trust for the server's certificate"},
      {"client-certificate", 0, false, "",
       "path to a client certificate file for TLS"},
      {"client-key", 0, false, "", "path to a client key file for TLS"},
      {"insecure-skip-tls-verify", 0, true, "",
       "do not check the server's certificate (insecure)"},
      {"tls-server-name", 0, false, "",
       "the name the server's certificate must carry (default: the host)"},
      {"namespace", 'n', false, "", "the namespace of this request"},
      {"request-timeout", 0, false, "30s",
       "how long to wait for one server answer (Go duration)"},
      {"help", 'h', true, "", "help for this command"},
  };
}

StatusOr<std::vector<std::string>> HoistGlobalFlags(
    const std::vector<std::string>& words) {
  const std::vector<FlagSpec> globals = GlobalFlags();
  std::vector<std::string> hoisted;
  size_t i = 0;
  while (i < words.size() && words[i].size() > 1 && words[i][0] == '-' &&
         words[i] != "--") {
    const std::string& w = words[i];
    const FlagSpec* spec = nullptr;
    bool attached = false;  // the value is part of the word
    std::string shown;
    if (w[1] == '-') {
      const size_t eq = w.find('=');
      const std::string name =
          w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      for (const FlagSpec& g : globals) {
        if (g.name == name) spec = &g;
      }
      if (spec == nullptr) {
        return InvalidArgumentError("unknown flag: --" + name);
      }
      attached = eq != std::string::npos;
      shown = "--" + name;
    } else {
      for (const FlagSpec& g : globals) {
        if (g.shorthand != 0 && g.shorthand == w[1]) spec = &g;
      }
      if (spec == nullptr) {
        return InvalidArgumentError(std::string("unknown shorthand flag: '") +
                                    w[1] + "' in " + w);
      }
      attached = w.size() > 2;  // -ndemo, -n=demo
      shown = std::string("'") + w[1] + "' in " + w;
    }
    hoisted.push_back(w);
    ++i;
    if (attached || spec->boolean) continue;
    if (i == words.size()) {
      return InvalidArgumentError("flag needs an argument: " + shown);
    }
    hoisted.push_back(words[i++]);
  }
  if (hoisted.empty()) return words;
  if (i == words.size() || words[i] == "--") {
    return InvalidArgumentError("a command is required after the flags " +
                                StrJoin(hoisted, " "));
  }
  std::vector<std::string> out = {words[i]};
  out.insert(out.end(), hoisted.begin(), hoisted.end());
  out.insert(out.end(), words.begin() + i + 1, words.end());
  return out;
}

Flags::Flags(std::vector<FlagSpec> specs) : specs_(std::move(specs)) {
  for (FlagSpec& g : GlobalFlags()) specs_.push_back(std::move(g));
}

const FlagSpec* Flags::FindLong(std::string_view name) const {
  for (const FlagSpec& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const FlagSpec* Flags::FindShort(char c) const {
  for (const FlagSpec& s : specs_) {
    if (s.shorthand != 0 && s.shorthand == c) return &s;
  }
  return nullptr;
}

Status Flags::Set(const FlagSpec& spec, std::string value) {
  if (spec.boolean && !ParseBool(value).has_value()) {
    return InvalidArgumentError("invalid argument \"" + value + "\" for \"--" +
                                spec.name +
                                "\" flag: strconv.ParseBool: parsing \"" +
                                value + "\": invalid syntax");
  }
  values_[spec.name].push_back(std::move(value));
  return Status();
}

Status Flags::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      positional_.insert(positional_.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      std::string_view body = std::string_view(a).substr(2);
      size_t eq = body.find('=');
      std::string_view name = body.substr(0, eq);
      const FlagSpec* spec = FindLong(name);
      if (spec == nullptr) {
        return InvalidArgumentError("unknown flag: --" + std::string(name));
      }
      if (eq != std::string_view::npos) {
        RETURN_IF_ERROR(Set(*spec, std::string(body.substr(eq + 1))));
      } else if (spec->boolean) {
        RETURN_IF_ERROR(Set(*spec, "true"));
      } else if (i + 1 < args.size()) {
        RETURN_IF_ERROR(Set(*spec, args[++i]));
      } else {
        return InvalidArgumentError("flag needs an argument: --" + spec->name);
      }
      continue;
    }
    if (a.size() > 1 && a[0] == '-' && a != "-") {
      // A group of shorthands: booleans may be combined (-Aw); the first
      // one taking a value consumes the rest of the word or the next one.
      for (size_t j = 1; j < a.size(); ++j) {
        const FlagSpec* spec = FindShort(a[j]);
        if (spec == nullptr) {
          return InvalidArgumentError(std::string("unknown shorthand flag: '") +
                                      a[j] + "' in " + a);
        }
        if (spec->boolean) {
          if (j + 1 < a.size() && a[j + 1] == '=') {
            RETURN_IF_ERROR(Set(*spec, a.substr(j + 2)));
            break;
          }
          RETURN_IF_ERROR(Set(*spec, "true"));
          continue;
        }
        if (j + 1 < a.size()) {
          std::string rest = a.substr(j + 1);
          if (!rest.empty() && rest[0] == '=') rest.erase(0, 1);
          RETURN_IF_ERROR(Set(*spec, rest));
        } else if (i + 1 < args.size()) {
          RETURN_IF_ERROR(Set(*spec, args[++i]));
        } else {
          return InvalidArgumentError(std::string("flag needs an argument: '") +
                                      a[j] + "' in -" + a[j]);
        }
        break;
      }
      continue;
    }
    positional_.push_back(a);
  }
  return Status();
}

bool Flags::Has(std::string_view name) const {
  auto it = values_.find(name);
  return it != values_.end() && !it->second.empty();
}

std::string Flags::Get(std::string_view name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  const FlagSpec* spec = FindLong(name);
  return spec != nullptr ? spec->default_value : "";
}

std::vector<std::string> Flags::GetAll(std::string_view name) const {
  auto it = values_.find(name);
  return it != values_.end() ? it->second : std::vector<std::string>{};
}

bool Flags::GetBool(std::string_view name) const {
  std::optional<bool> b = ParseBool(Get(name));
  return b.value_or(false);
}

std::string Flags::Usage() const {
  std::string out;
  for (const FlagSpec& s : specs_) {
    std::string left = "  ";
    left += s.shorthand != 0 ? std::string("-") + s.shorthand + ", " : "    ";
    left += "--" + s.name;
    if (!s.boolean) left += " string";
    if (left.size() < 34) left.resize(34, ' ');
    out += left + " " + s.help;
    if (!s.default_value.empty() && !s.boolean) {
      out += " (default \"" + s.default_value + "\")";
    }
    out += "\n";
  }
  return out;
}

ConfigOverrides OverridesFromFlags(const Flags& flags) {
  return ConfigOverrides{
      .context = flags.Get("context"),
      .server = flags.Get("server"),
      .token = flags.Get("token"),
      .ns = flags.Get("namespace"),
      .certificate_authority = flags.Get("certificate-authority"),
      .client_certificate = flags.Get("client-certificate"),
      .client_key = flags.Get("client-key"),
      .insecure_skip_tls_verify = flags.GetBool("insecure-skip-tls-verify"),
      .tls_server_name = flags.Get("tls-server-name")};
}

}  // namespace kplane::kpctl::kube
