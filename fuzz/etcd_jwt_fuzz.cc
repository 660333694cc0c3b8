// Fuzzes the store's JWT auth tokens (storage/server/auth_token.h over
// net/jws.h), which read every token a client of `kplane store
// --auth-token=jwt,...` sends: JWS splitting, base64url, the header's alg,
// the signature check, the claims; and the --auth-token option parser.
//
// Input: a selector byte, then by its value mod 3
//   0: a raw token (what an attacker sends), checked by an ES256 and an
//      HS256 provider whose keys are made at start-up and never leave the
//      process: no such token may be accepted;
//   1: "<header JSON>\n<claims JSON>": the harness signs them with the
//      HS256 provider's secret, so mutations reach the header and claim
//      checks behind the signature, as a token from a holder of the key;
//   2: an --auth-token value; files "ec" (an ES256 key pair, as private and
//      public PEM), "pub" (its public half), "secret" (bytes) exist.
// Now is 2026-01-01T00:00:00Z (1767225600).
//
// Checked: no crash or sanitizer report; a raw token is never accepted; an
// accepted signed token's header says HS256 and its exp is not past; a
// provider the parser accepts issues tokens it then accepts, naming the
// same user and revision.
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "base/base64.h"
#include "base/json.h"
#include "fuzz/fuzz_input.h"
#include "storage/server/auth_token.h"

namespace {

using kplane::StatusOr;
using kplane::WallTime;
using kplane::storage::ParseAuthTokenOption;
using kplane::storage::TokenProvider;

constexpr int64_t kNow = 1767225600;

std::string MemText(BIO* b) {
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

struct Harness {
  std::map<std::string, std::string> files;
  std::shared_ptr<const TokenProvider> es, hs;
  const WallTime now = WallTime(std::chrono::seconds(kNow));

  Harness() {
    EVP_PKEY* k = EVP_EC_gen("P-256");
    BIO* a = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(a, k, nullptr, nullptr, 0, nullptr, nullptr);
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(b, k);
    EVP_PKEY_free(k);
    files["ec"] = MemText(a);
    files["pub"] = MemText(b);
    files["secret"] = "fuzz secret\n";
    auto es_or =
        ParseAuthTokenOption("jwt,priv-key=ec,sign-method=ES256", Reader());
    auto hs_or =
        ParseAuthTokenOption("jwt,priv-key=secret,sign-method=HS256", Reader());
    if (!es_or.ok() || !hs_or.ok()) kplane::fuzz::Fail("harness set-up");
    es = *es_or;
    hs = *hs_or;
  }

  kplane::storage::ReadFileFn Reader() const {
    return [this](const std::string& path) -> StatusOr<std::string> {
      auto it = files.find(path);
      if (it == files.end()) return kplane::NotFoundError("no such file");
      return it->second;
    };
  }

  std::string Hmac(std::string_view input) const {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    const std::string& key = files.at("secret");
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(),
         mac, &len);
    return std::string(reinterpret_cast<char*>(mac), len);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness();
  kplane::fuzz::FuzzInput in(data, size);
  switch (in.TakeByte() % 3) {
    case 0: {
      const std::string_view token = in.rest();
      if (h->es->Info(token, h->now).ok() || h->hs->Info(token, h->now).ok()) {
        kplane::fuzz::Fail("a forged token was accepted");
      }
      break;
    }
    case 1: {
      std::string_view header = in.TakeUntil("\n");
      std::string_view claims = in.rest();
      std::string input = kplane::Base64UrlEncode(header) + "." +
                          kplane::Base64UrlEncode(claims);
      std::string token = input + "." + kplane::Base64UrlEncode(h->Hmac(input));
      if (!h->hs->Info(token, h->now).ok()) break;
      rapidjson::Document hd, cd;
      if (!kplane::json::ParseDom(header, &hd).ok() || !hd.IsObject() ||
          !hd.HasMember("alg") || !hd["alg"].IsString() ||
          std::string_view(hd["alg"].GetString(),
                           hd["alg"].GetStringLength()) != "HS256") {
        kplane::fuzz::Fail("a token whose header is not HS256 was accepted");
      }
      if (!kplane::json::ParseDom(claims, &cd).ok() || !cd.IsObject() ||
          !cd.HasMember("exp") || !cd["exp"].IsNumber() ||
          cd["exp"].GetDouble() < static_cast<double>(kNow)) {
        kplane::fuzz::Fail("an expired or exp-less token was accepted");
      }
      break;
    }
    default: {
      auto p = ParseAuthTokenOption(in.rest(), h->Reader());
      if (!p.ok() || *p == nullptr || !(*p)->can_assign()) break;
      StatusOr<std::string> t = (*p)->Assign("fuzz\"user", 7, h->now);
      if (!t.ok()) kplane::fuzz::Fail("an accepted provider cannot sign");
      auto info = (*p)->Info(*t, h->now);
      if (!info.ok() || info->user != "fuzz\"user" || info->revision != 7) {
        kplane::fuzz::Fail("a provider refused its own token");
      }
      break;
    }
  }
  return 0;
}
