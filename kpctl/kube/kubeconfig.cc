#include "kpctl/kube/kubeconfig.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "base/base64.h"
#include "base/strings.h"
#include "objects/yaml.h"

namespace kplane::kpctl::kube {
namespace {

using rapidjson::Value;

// The file at `path`, or kTooLarge ("<what> is larger than N bytes") once
// it holds more than `max_bytes`: reading stops there, so a FIFO or
// /dev/zero ends too. `what` defaults to the path.
StatusOr<std::string> ReadFile(
    const std::string& path,
    size_t max_bytes = std::numeric_limits<size_t>::max(),
    const std::string& what = "") {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::string data;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof(buf));
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > max_bytes) {
      return Status(StatusCode::kTooLarge,
                    (what.empty() ? path : what) + " is larger than " +
                        std::to_string(max_bytes) + " bytes");
    }
  }
  return data;
}

std::string StringAt(const Value& obj, const char* key) {
  if (!obj.IsObject()) return "";
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString()) return "";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

// The `field` (e.g. "context") object of the entry named `name` in the
// list `list` ("contexts"); nullptr when absent.
const Value* FindNamed(const Value& doc, const char* list,
                       const std::string& name, const char* field) {
  auto it = doc.FindMember(list);
  if (it == doc.MemberEnd() || !it->value.IsArray()) return nullptr;
  for (const Value& e : it->value.GetArray()) {
    if (StringAt(e, "name") == name) {
      auto f = e.FindMember(field);
      return f != e.MemberEnd() ? &f->value : nullptr;
    }
  }
  return nullptr;
}

bool BoolAt(const Value& obj, const char* key) {
  if (!obj.IsObject()) return false;
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

// clientcmd's ResolveLocalPaths: the file names a kubeconfig holds are
// relative to the directory of the file holding them.
void ResolveLocalPaths(const std::string& file, rapidjson::Document* doc) {
  if (!doc->IsObject()) return;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(file, ec);
  dir = ec ? std::filesystem::path(file).parent_path() : dir.parent_path();
  auto& alloc = doc->GetAllocator();
  auto resolve = [&](const char* list, const char* field,
                     std::initializer_list<const char*> keys) {
    auto it = doc->FindMember(list);
    if (it == doc->MemberEnd() || !it->value.IsArray()) return;
    for (Value& e : it->value.GetArray()) {
      if (!e.IsObject()) continue;
      auto f = e.FindMember(field);
      if (f == e.MemberEnd() || !f->value.IsObject()) continue;
      for (const char* key : keys) {
        const std::string path = StringAt(f->value, key);
        if (path.empty() || path.front() == '/') continue;
        f->value[key].SetString((dir / path).string().c_str(), alloc);
      }
    }
  };
  resolve("clusters", "cluster", {"certificate-authority"});
  resolve("users", "user", {"client-certificate", "client-key", "tokenFile"});
}

// A *-data field: base64 of PEM text.
StatusOr<std::string> DecodeData(const Value& obj, const char* key,
                                 const std::string& owner) {
  const std::string data = StringAt(obj, key);
  if (data.empty()) return std::string();
  StatusOr<std::string> pem = Base64Decode(data);
  if (!pem.ok()) {
    return InvalidArgumentError(std::string(key) + " of " + owner +
                                " is not valid base64");
  }
  return *pem;
}

}  // namespace

void MergeKubeconfig(const Value& file, Kubeconfig* into) {
  rapidjson::Document& doc = into->doc;
  auto& alloc = doc.GetAllocator();
  if (!doc.IsObject()) doc.SetObject();
  if (!file.IsObject()) return;
  if (StringAt(doc, "current-context").empty() &&
      !StringAt(file, "current-context").empty()) {
    doc.RemoveMember("current-context");
    doc.AddMember("current-context",
                  Value(StringAt(file, "current-context").c_str(), alloc),
                  alloc);
  }
  for (const char* list : {"clusters", "contexts", "users"}) {
    auto src = file.FindMember(list);
    if (src == file.MemberEnd() || !src->value.IsArray()) continue;
    if (!doc.HasMember(list)) {
      doc.AddMember(Value(list, alloc), Value(rapidjson::kArrayType), alloc);
    }
    Value& dst = doc[list];
    for (const Value& e : src->value.GetArray()) {
      const std::string name = StringAt(e, "name");
      bool seen = false;
      for (const Value& d : dst.GetArray()) seen |= StringAt(d, "name") == name;
      if (!seen) dst.PushBack(Value(e, alloc), alloc);
    }
  }
  for (auto& m : file.GetObject()) {
    if (!doc.HasMember(m.name)) {
      doc.AddMember(Value(m.name, alloc), Value(m.value, alloc), alloc);
    }
  }
}

StatusOr<Kubeconfig> LoadKubeconfig(const std::string& explicit_path,
                                    const GetEnvFn& getenv) {
  Kubeconfig config;
  config.doc.SetObject();
  std::vector<std::string> candidates;
  bool must_exist = false;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);
    must_exist = true;
  } else if (const char* env = getenv("KUBECONFIG");
             env != nullptr && *env != '\0') {
    for (const std::string& p : StrSplit(env, ':')) {
      if (!p.empty()) candidates.push_back(p);
    }
  } else if (const char* home = getenv("HOME"); home != nullptr) {
    // kubectl's default, else the one `kplane up` writes.
    const std::string kube = std::string(home) + "/.kube/config";
    std::error_code ec;
    candidates.push_back(std::filesystem::exists(kube, ec)
                             ? kube
                             : std::string(home) + "/.kplane/kubeconfig");
  }
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      if (must_exist) {
        return NotFoundError("stat " + path + ": no such file or directory");
      }
      continue;
    }
    ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    if (StripWhitespace(text).empty()) continue;
    StatusOr<rapidjson::Document> doc = objects::ParseYamlDocument(text);
    if (!doc.ok()) {
      return InvalidArgumentError("error loading config file \"" + path +
                                  "\": " + doc.status().message());
    }
    ResolveLocalPaths(path, &*doc);
    MergeKubeconfig(*doc, &config);
    config.files.push_back(path);
  }
  return config;
}

StatusOr<std::string> NormalizeServer(const std::string& server,
                                      bool default_https) {
  std::string s = server;
  if (s.rfind("http://", 0) != 0 && s.rfind("https://", 0) != 0) {
    if (s.find("://") != std::string::npos) {
      return InvalidArgumentError("server " + server +
                                  ": only http:// and https:// are supported");
    }
    s = (default_https ? "https://" : "http://") + s;
  }
  const size_t scheme_end = s.find("://") + 3;
  while (s.size() > scheme_end && s.back() == '/') s.pop_back();
  return s;
}

StatusOr<ClientConfig> ResolveClientConfig(const Kubeconfig& config,
                                           const ConfigOverrides& overrides) {
  const Value& doc = config.doc;
  ClientConfig out;
  out.context = overrides.context.empty() ? StringAt(doc, "current-context")
                                          : overrides.context;
  // clientcmd's ConfirmUsable: the context in effect, --context or else
  // current-context, must exist whatever the other flags give (--server,
  // --token); an empty current-context names none.
  const Value* context = nullptr;
  if (!out.context.empty()) {
    context = FindNamed(doc, "contexts", out.context, "context");
    if (context == nullptr) {
      return InvalidArgumentError(
          "context was not found for specified "
          "context: " +
          out.context);
    }
  }
  std::string server, token, token_file, user, ns;
  // What to trust and present; the *-data fields hold PEM, the others
  // file names.
  std::string ca_file, ca_pem, cert_file, cert_pem, key_file, key_pem;
  bool insecure = false;
  std::string server_name;
  std::string cluster;
  if (context != nullptr) {
    ns = StringAt(*context, "namespace");
    cluster = StringAt(*context, "cluster");
    if (const Value* c = FindNamed(doc, "clusters", cluster, "cluster")) {
      server = StringAt(*c, "server");
      ca_file = StringAt(*c, "certificate-authority");
      ASSIGN_OR_RETURN(ca_pem,
                       DecodeData(*c, "certificate-authority-data", cluster));
      insecure = BoolAt(*c, "insecure-skip-tls-verify");
      server_name = StringAt(*c, "tls-server-name");
    }
    user = StringAt(*context, "user");
    if (const Value* u = FindNamed(doc, "users", user, "user")) {
      token = StringAt(*u, "token");
      token_file = StringAt(*u, "tokenFile");
      cert_file = StringAt(*u, "client-certificate");
      key_file = StringAt(*u, "client-key");
      ASSIGN_OR_RETURN(cert_pem,
                       DecodeData(*u, "client-certificate-data", user));
      ASSIGN_OR_RETURN(key_pem, DecodeData(*u, "client-key-data", user));
      if (!cert_file.empty() && !cert_pem.empty()) {
        return InvalidArgumentError(
            "client-cert-data and client-cert are both specified for " + user +
            ". client-cert-data will override.");
      }
      if (!key_file.empty() && !key_pem.empty()) {
        return InvalidArgumentError(
            "client-key-data and client-key are both specified for " + user +
            "; client-key-data will override");
      }
      if ((cert_file.empty() && cert_pem.empty()) !=
          (key_file.empty() && key_pem.empty())) {
        return InvalidArgumentError(
            (cert_file.empty() && cert_pem.empty()
                 ? "client-cert-data or client-cert must be specified for "
                 : "client-key-data or client-key must be specified for ") +
            user + " to use the clientCert authentication method.");
      }
    }
  }
  if (!overrides.server.empty()) server = overrides.server;
  if (!overrides.token.empty()) token = overrides.token;
  // clientcmd's getClusterConfig: --insecure-skip-tls-verify or
  // --certificate-authority replaces all of the cluster's trust settings,
  // so --insecure-skip-tls-verify drops the kubeconfig's CA (data or
  // file) and --certificate-authority its CA data and its
  // insecure-skip-tls-verify. Both flags together are refused below.
  if (overrides.insecure_skip_tls_verify ||
      !overrides.certificate_authority.empty()) {
    insecure = overrides.insecure_skip_tls_verify;
    ca_file = overrides.certificate_authority;
    ca_pem.clear();
  }
  if (!overrides.client_certificate.empty()) {
    cert_file = overrides.client_certificate;
    cert_pem.clear();
  }
  if (!overrides.client_key.empty()) {
    key_file = overrides.client_key;
    key_pem.clear();
  }
  if (!overrides.tls_server_name.empty()) {
    server_name = overrides.tls_server_name;
  }
  if (!overrides.ns.empty()) {
    ns = overrides.ns;
    out.ns_explicit = true;
  }
  if (server.empty()) {
    return InvalidArgumentError(
        "no API server configured: pass --server, or point --kubeconfig / "
        "KUBECONFIG at a kubeconfig (`kplane up` writes one to "
        "~/.kplane/kubeconfig)");
  }
  // Validated as clientcmd validates: after the flags.
  if (!ca_file.empty() && !ca_pem.empty()) {
    return InvalidArgumentError(
        "certificate-authority-data and certificate-authority are both "
        "specified for " +
        cluster + ". certificate-authority-data will override.");
  }
  if (insecure && (!ca_file.empty() || !ca_pem.empty())) {
    return InvalidArgumentError(
        "specifying a root certificates file with the insecure flag is not "
        "allowed");
  }
  const bool any_tls = insecure || !ca_file.empty() || !ca_pem.empty() ||
                       !cert_file.empty() || !cert_pem.empty();
  ASSIGN_OR_RETURN(out.server, NormalizeServer(server, any_tls));
  if (token.empty() && !token_file.empty()) {
    ASSIGN_OR_RETURN(std::string t,
                     ReadFile(token_file, kMaxTokenFileBytes,
                              "tokenFile " + token_file + " of user " + user));
    // client-go's cached file token source: strings.TrimSpace.
    token = std::string(StripWhitespace(t));
  }
  out.token = token;
  out.ns = ns.empty() ? "default" : ns;
  out.tls.ca_file = ca_file;
  out.tls.ca_pem = ca_pem;
  out.tls.cert_file = cert_file;
  out.tls.cert_pem = cert_pem;
  out.tls.key_file = key_file;
  out.tls.key_pem = key_pem;
  out.tls.server_name = server_name;
  out.tls.insecure_skip_verify = insecure;
  // kubectl offers h2 first; our server speaks HTTP/1.1 only.
  out.tls.alpn = {"http/1.1"};
  return out;
}

StatusOr<std::shared_ptr<const net::TlsContext>> ClientTlsContext(
    const ClientConfig& config) {
  if (config.server.rfind("https://", 0) != 0) {
    return std::shared_ptr<const net::TlsContext>();
  }
  StatusOr<std::shared_ptr<const net::TlsContext>> ctx =
      net::TlsContext::NewClient(config.tls);
  if (!ctx.ok()) {
    return Status(ctx.status().code(),
                  "loading the kubeconfig's certificates for " + config.server +
                      ": " + ctx.status().message());
  }
  return ctx;
}

}  // namespace kplane::kpctl::kube
