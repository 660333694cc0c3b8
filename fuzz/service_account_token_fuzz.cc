// Fuzzes the ServiceAccount token authenticator
// (apiserver/auth/service_account_token.h), which reads every bearer token a
// client sends: JWT splitting, base64url, the header and claims JSON, the
// signature check and the claim checks.
//
// Input: a selector byte, then
//   even: a raw token (what an attacker sends). The key is made at start-up
//         and never leaves the process, so no such token may authenticate.
//   odd:  "<header JSON>\n<claims JSON>": the harness signs them (RS256)
//         with the authenticator's key, so mutations reach the claim checks
//         behind the signature, as a token from a holder of the key would.
// The authenticator trusts issuer "https://kplane.test", audience
// "https://kplane.test", now = FakeClock's 2026-01-01T00:00:00Z (exp near
// 1767225600); ServiceAccount default/<name> exists with uid "u-<name>",
// bound objects <kind>/<name> with uid "b-<name>".
//
// Checked: no crash or sanitizer report; a raw token never authenticates; a
// user, when there is one, is a ServiceAccount user with its two groups.
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "apiserver/auth/service_account_token.h"
#include "base/base64.h"
#include "base/clock.h"
#include "fuzz/fuzz_input.h"

namespace {

using kplane::apiserver::auth::ServiceAccountLookup;
using kplane::apiserver::auth::ServiceAccountTokenAuthenticator;

constexpr char kIssuer[] = "https://kplane.test";

class Lookup : public ServiceAccountLookup {
 public:
  std::optional<std::string> Uid(const std::string& ns,
                                 const std::string& name) const override {
    if (ns != "default" || name.empty()) return std::nullopt;
    return "u-" + name;
  }
  std::optional<std::string> BoundObjectUid(
      const std::string& ns, const std::string&,
      const std::string& name) const override {
    if (ns != "default" || name.empty()) return std::nullopt;
    return "b-" + name;
  }
};

struct Harness {
  std::string key_pem;
  EVP_PKEY* key = nullptr;
  kplane::FakeClock clock;
  Lookup lookup;
  std::unique_ptr<ServiceAccountTokenAuthenticator> authn;

  Harness() {
    key_pem = *kplane::apiserver::auth::GenerateServiceAccountKeyPem();
    BIO* bio =
        BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    auto a = ServiceAccountTokenAuthenticator::Create({.key_pems = {key_pem},
                                                       .issuers = {kIssuer},
                                                       .audiences = {kIssuer},
                                                       .lookup = &lookup,
                                                       .clock = &clock});
    if (!a.ok() || key == nullptr) kplane::fuzz::Fail("harness set-up");
    authn = std::move(*a);
  }

  std::string Sign(std::string_view input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    size_t len = 0;
    std::string sig;
    if (EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
        EVP_DigestSign(ctx, nullptr, &len,
                       reinterpret_cast<const unsigned char*>(input.data()),
                       input.size()) == 1) {
      sig.resize(len);
      EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(input.data()),
                     input.size());
      sig.resize(len);
    }
    EVP_MD_CTX_free(ctx);
    return sig;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness();
  kplane::fuzz::FuzzInput in(data, size);
  const bool signed_claims = (in.TakeByte() & 1) != 0;
  std::string token;
  if (signed_claims) {
    std::string_view header = in.TakeUntil("\n");
    std::string_view claims = in.rest();
    std::string input =
        kplane::Base64UrlEncode(header) + "." + kplane::Base64UrlEncode(claims);
    token = input + "." + kplane::Base64UrlEncode(h->Sign(input));
  } else {
    token = std::string(in.rest());
  }
  auto r = h->authn->AuthenticateToken(token);
  if (!r.ok() || !r->has_value()) return 0;
  if (!signed_claims) kplane::fuzz::Fail("a forged token authenticated");
  const auto& user = **r;
  if (user.name.rfind("system:serviceaccount:default:", 0) != 0 ||
      user.groups.size() != 2 || user.uid.rfind("u-", 0) != 0) {
    kplane::fuzz::Fail("an authenticated token is not a ServiceAccount user");
  }
  return 0;
}
