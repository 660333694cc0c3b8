#include "apiserver/auth/service_account_token.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/base64.h"
#include "base/json.h"
#include "net/jws.h"

namespace kplane::apiserver::auth {

namespace {

constexpr std::chrono::seconds kLeeway(60);

// An RS256 key and the kid Kubernetes gives it (net::JwsKey::PublicKeyId).
StatusOr<std::shared_ptr<const net::JwsKey>> Rs256Key(
    std::string_view private_pem, std::string_view public_pem,
    std::string* kid) {
  StatusOr<std::shared_ptr<const net::JwsKey>> key =
      net::JwsKey::FromPem(net::JwsAlg::kRS256, private_pem, public_pem);
  if (!key.ok()) return key.status();
  StatusOr<std::string> id = (*key)->PublicKeyId();
  if (!id.ok()) return id.status();
  *kid = std::move(*id);
  return key;
}

// Every key in a PEM text, each block on its own: public keys, private
// keys' public halves, certificates' keys. Other blocks are an error.
Status ReadKeys(std::string_view pem, net::JwsKeySet* keys) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  const size_t before = keys->size();
  Status st;
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long len = 0;
    if (PEM_read_bio(bio, &name, &header, &data, &len) != 1) break;
    const std::string block = name;
    // The block alone, as PEM text again, for net::JwsKey.
    BIO* one = BIO_new(BIO_s_mem());
    PEM_write_bio(one, name, header, data, len);
    char* text = nullptr;
    const long text_len = BIO_get_mem_data(one, &text);
    const std::string block_pem(text, static_cast<size_t>(text_len));
    BIO_free(one);
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
    const bool is_private =
        block == "PRIVATE KEY" || block == "RSA PRIVATE KEY";
    if (!is_private && block != "PUBLIC KEY" && block != "RSA PUBLIC KEY" &&
        block != "CERTIFICATE") {
      st = InvalidArgumentError("unreadable PEM block \"" + block + "\"");
      break;
    }
    std::string kid;
    StatusOr<std::shared_ptr<const net::JwsKey>> key =
        is_private ? Rs256Key(block_pem, "", &kid)
                   : Rs256Key("", block_pem, &kid);
    if (!key.ok()) {
      st = InvalidArgumentError("PEM block \"" + block +
                                "\": " + key.status().message());
      break;
    }
    keys->Add(std::move(*key), std::move(kid));
  }
  BIO_free(bio);
  if (!st.ok()) return st;
  if (keys->size() == before) return InvalidArgumentError("no PEM key found");
  return Status::Ok();
}

int64_t Seconds(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
      .count();
}

std::string Json(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

Status Invalid(std::string_view why) {
  return Status(StatusCode::kUnauthenticated, why);
}

const rapidjson::Value* Member(const rapidjson::Value& o, const char* key) {
  if (!o.IsObject()) return nullptr;
  auto it = o.FindMember(key);
  return it == o.MemberEnd() ? nullptr : &it->value;
}

std::string StringMember(const rapidjson::Value& o, const char* key) {
  const rapidjson::Value* v = Member(o, key);
  return v != nullptr && v->IsString()
             ? std::string(v->GetString(), v->GetStringLength())
             : std::string();
}

// The claim under "kubernetes.io" that names a bound object of `kind`.
const char* BoundClaimName(std::string_view kind) {
  if (kind == "Pod") return "pod";
  if (kind == "Secret") return "secret";
  return nullptr;
}

}  // namespace

StatusOr<std::string> GenerateServiceAccountKeyPem() {
  EVP_PKEY* k = EVP_RSA_gen(2048);
  if (k == nullptr) return InternalError("cannot generate an RSA key");
  BIO* bio = BIO_new(BIO_s_mem());
  bool ok = PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr,
                                     nullptr) == 1;
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string pem = ok ? std::string(data, static_cast<size_t>(n)) : "";
  BIO_free(bio);
  EVP_PKEY_free(k);
  if (!ok) return InternalError("cannot write the RSA key");
  return pem;
}

ServiceAccountTokenIssuer::~ServiceAccountTokenIssuer() = default;

StatusOr<std::unique_ptr<ServiceAccountTokenIssuer>>
ServiceAccountTokenIssuer::Create(std::string_view private_key_pem,
                                  std::string issuer) {
  std::string kid;
  StatusOr<std::shared_ptr<const net::JwsKey>> key =
      Rs256Key(private_key_pem, "", &kid);
  if (!key.ok()) {
    return InvalidArgumentError("the service account signing key: " +
                                key.status().message());
  }
  auto out =
      std::unique_ptr<ServiceAccountTokenIssuer>(new ServiceAccountTokenIssuer);
  out->key_ = std::move(*key);
  out->kid_ = std::move(kid);
  out->issuer_ = std::move(issuer);
  return out;
}

StatusOr<std::string> ServiceAccountTokenIssuer::Issue(
    const ServiceAccountRef& sa, const std::vector<std::string>& audiences,
    WallTime now, Duration ttl,
    const std::optional<BoundObjectRef>& bound) const {
  const char* bound_claim = nullptr;
  if (bound.has_value()) {
    bound_claim = BoundClaimName(bound->kind);
    if (bound_claim == nullptr) {
      return InvalidArgumentError("cannot bind a token to a " + bound->kind);
    }
  }
  rapidjson::Document c(rapidjson::kObjectType);
  auto& ca = c.GetAllocator();
  rapidjson::Value aud(rapidjson::kArrayType);
  for (const std::string& s : audiences) {
    aud.PushBack(rapidjson::Value(s.c_str(), ca), ca);
  }
  int64_t iat = Seconds(now);
  int64_t exp =
      iat + std::chrono::duration_cast<std::chrono::seconds>(ttl).count();
  c.AddMember("aud", aud, ca);
  c.AddMember("exp", exp, ca);
  c.AddMember("iat", iat, ca);
  c.AddMember("iss", rapidjson::Value(issuer_.c_str(), ca), ca);
  rapidjson::Value sa_v(rapidjson::kObjectType);
  sa_v.AddMember("name", rapidjson::Value(sa.name.c_str(), ca), ca);
  sa_v.AddMember("uid", rapidjson::Value(sa.uid.c_str(), ca), ca);
  rapidjson::Value k8s(rapidjson::kObjectType);
  k8s.AddMember("namespace", rapidjson::Value(sa.ns.c_str(), ca), ca);
  k8s.AddMember("serviceaccount", sa_v, ca);
  if (bound_claim != nullptr) {
    rapidjson::Value obj(rapidjson::kObjectType);
    obj.AddMember("name", rapidjson::Value(bound->name.c_str(), ca), ca);
    obj.AddMember("uid", rapidjson::Value(bound->uid.c_str(), ca), ca);
    k8s.AddMember(rapidjson::StringRef(bound_claim), obj, ca);
  }
  c.AddMember("kubernetes.io", k8s, ca);
  c.AddMember("nbf", iat, ca);
  std::string sub = kServiceAccountUserPrefix + sa.ns + ":" + sa.name;
  c.AddMember("sub", rapidjson::Value(sub.c_str(), ca), ca);

  // Kubernetes' header: {"alg":"RS256","kid":"..."}, no "typ".
  return key_->Sign(Json(c), net::JwsHeader{.kid = kid_, .typ_jwt = false});
}

ServiceAccountTokenAuthenticator::~ServiceAccountTokenAuthenticator() = default;

StatusOr<std::unique_ptr<ServiceAccountTokenAuthenticator>>
ServiceAccountTokenAuthenticator::Create(
    ServiceAccountTokenAuthenticatorOptions options) {
  if (options.lookup == nullptr || options.clock == nullptr) {
    return InvalidArgumentError("service account authenticator: no lookup");
  }
  if (options.issuers.empty()) {
    return InvalidArgumentError(
        "service account authenticator: no issuer (--service-account-issuer)");
  }
  auto out = std::unique_ptr<ServiceAccountTokenAuthenticator>(
      new ServiceAccountTokenAuthenticator);
  for (const std::string& pem : options.key_pems) {
    if (Status st = ReadKeys(pem, &out->keys_); !st.ok()) {
      return InvalidArgumentError("service account key: " + st.message());
    }
  }
  if (out->keys_.empty()) {
    return InvalidArgumentError(
        "service account authenticator: no key (--service-account-key-file)");
  }
  if (options.audiences.empty()) options.audiences = options.issuers;
  out->options_ = std::move(options);
  return out;
}

StatusOr<std::optional<UserInfo>>
ServiceAccountTokenAuthenticator::AuthenticateToken(
    std::string_view token) const {
  return Verify(token, options_.audiences, nullptr);
}

StatusOr<std::optional<UserInfo>>
ServiceAccountTokenAuthenticator::AuthenticateTokenFor(
    std::string_view token, const std::vector<std::string>& audiences,
    const std::vector<std::string>& api_audiences,
    std::vector<std::string>* matched) const {
  (void)api_audiences;  // a service account token names its own
  return Verify(token, audiences, matched);
}

StatusOr<std::optional<UserInfo>> ServiceAccountTokenAuthenticator::Verify(
    std::string_view token, const std::vector<std::string>& audiences,
    std::vector<std::string>* matched) const {
  const std::optional<UserInfo> not_mine;
  // Bounded before anything is decoded (a TokenReview's token can be as
  // long as a request body).
  if (token.size() > net::kMaxJwsBytes) return not_mine;
  size_t d1 = token.find('.');
  size_t d2 = d1 == std::string_view::npos ? d1 : token.find('.', d1 + 1);
  if (d2 == std::string_view::npos ||
      token.find('.', d2 + 1) != std::string_view::npos) {
    return not_mine;  // not a JWT
  }
  StatusOr<std::string> header = Base64UrlDecode(token.substr(0, d1));
  StatusOr<std::string> payload =
      Base64UrlDecode(token.substr(d1 + 1, d2 - d1 - 1));
  StatusOr<std::string> sig = Base64UrlDecode(token.substr(d2 + 1));
  if (!header.ok() || !payload.ok() || !sig.ok()) return not_mine;
  rapidjson::Document h, c;
  if (!json::ParseDom(*header, &h).ok() || !h.IsObject() ||
      !json::ParseDom(*payload, &c).ok() || !c.IsObject()) {
    return not_mine;
  }
  // Another issuer's token is not ours to judge (kube's hasCorrectIssuer).
  const std::string iss = StringMember(c, "iss");
  if (std::find(options_.issuers.begin(), options_.issuers.end(), iss) ==
      options_.issuers.end()) {
    return not_mine;
  }
  if (StringMember(h, "alg") != "RS256") {
    return Invalid("service account token: unsupported algorithm \"" +
                   StringMember(h, "alg") + "\"");
  }
  // Only the keys named by the token's kid, if it has one (as kube).
  if (!keys_.Verify(token).ok()) {
    return Invalid("service account token: invalid signature");
  }

  int64_t now = Seconds(options_.clock->WallNow());
  int64_t leeway = kLeeway.count();
  auto number = [&](const char* key) -> std::optional<int64_t> {
    const rapidjson::Value* v = Member(c, key);
    if (v == nullptr || !v->IsInt64()) return std::nullopt;
    return v->GetInt64();
  };
  std::optional<int64_t> exp = number("exp");
  if (!exp.has_value()) return Invalid("service account token: no expiry");
  if (now > *exp + leeway) {
    return Invalid("service account token has expired");
  }
  if (std::optional<int64_t> nbf = number("nbf");
      nbf.has_value() && now < *nbf - leeway) {
    return Invalid("service account token is not valid yet");
  }
  if (std::optional<int64_t> iat = number("iat");
      iat.has_value() && now < *iat - leeway) {
    return Invalid("service account token was issued in the future");
  }
  std::vector<std::string> aud;
  if (const rapidjson::Value* v = Member(c, "aud"); v != nullptr) {
    if (v->IsString()) aud.emplace_back(v->GetString(), v->GetStringLength());
    if (v->IsArray()) {
      for (const auto& e : v->GetArray()) {
        if (e.IsString()) aud.emplace_back(e.GetString(), e.GetStringLength());
      }
    }
  }
  std::vector<std::string> for_us;
  for (const std::string& a : aud) {
    if (std::find(audiences.begin(), audiences.end(), a) != audiences.end()) {
      for_us.push_back(a);
    }
  }
  if (for_us.empty()) {
    return Invalid(&audiences == &options_.audiences
                       ? "service account token: audiences do not include "
                         "this API server's"
                       : "service account token: audiences do not include "
                         "the requested ones");
  }

  const rapidjson::Value* k8s = Member(c, "kubernetes.io");
  const rapidjson::Value* sa_v =
      k8s == nullptr ? nullptr : Member(*k8s, "serviceaccount");
  std::string ns = k8s == nullptr ? "" : StringMember(*k8s, "namespace");
  std::string name = sa_v == nullptr ? "" : StringMember(*sa_v, "name");
  std::string uid = sa_v == nullptr ? "" : StringMember(*sa_v, "uid");
  if (ns.empty() || name.empty() || uid.empty()) {
    return Invalid("service account token: no service account claims");
  }
  if (StringMember(c, "sub") != kServiceAccountUserPrefix + ns + ":" + name) {
    return Invalid("service account token: subject does not match claims");
  }
  std::optional<std::string> live = options_.lookup->Uid(ns, name);
  if (!live.has_value()) {
    return Invalid("service account " + ns + "/" + name + " has been deleted");
  }
  // Being deleted for over a minute (kube's 60 s leeway) is deleted.
  auto deleted_long_ago = [&](const char* kind, const std::string& n) {
    std::optional<int64_t> since =
        options_.lookup->DeletionStarted(ns, kind, n);
    return since.has_value() && *since < now - 60;
  };
  if (deleted_long_ago("ServiceAccount", name)) {
    return Invalid(
        "service account token has been invalidated "
        "(ServiceAccount " +
        ns + "/" + name + " is being deleted)");
  }
  if (*live != uid) {
    return Invalid("service account UID (" + *live +
                   ") does not match claim (" + uid + ")");
  }
  // A bound token lives only as long as its object (kube's validator).
  for (const char* kind : {"Pod", "Secret"}) {
    const rapidjson::Value* ref = Member(*k8s, BoundClaimName(kind));
    if (ref == nullptr) continue;
    const std::string ref_name = StringMember(*ref, "name");
    const std::string ref_uid = StringMember(*ref, "uid");
    std::optional<std::string> bound_uid =
        ref_name.empty() ? std::nullopt
                         : options_.lookup->BoundObjectUid(ns, kind, ref_name);
    if (!bound_uid.has_value()) {
      return Invalid("service account token has been invalidated (" +
                     std::string(kind) + " " + ns + "/" + ref_name +
                     " is gone)");
    }
    if (*bound_uid != ref_uid) {
      return Invalid(std::string(kind) + " UID (" + *bound_uid +
                     ") does not match claim (" + ref_uid + ")");
    }
    if (deleted_long_ago(kind, ref_name)) {
      return Invalid("service account token has been invalidated (" +
                     std::string(kind) + " " + ns + "/" + ref_name +
                     " is being deleted)");
    }
  }
  if (matched != nullptr) *matched = std::move(for_us);
  return std::optional<UserInfo>(UserInfo{
      .name = kServiceAccountUserPrefix + ns + ":" + name,
      .uid = uid,
      .groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns}});
}

}  // namespace kplane::apiserver::auth
