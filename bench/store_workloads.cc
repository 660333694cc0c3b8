#include "bench/store_workloads.h"

#include <cstdio>
#include <random>

#include "base/base64.h"
#include "base/strings.h"

namespace kplane::bench {
namespace {

std::string RandomValue(std::mt19937_64& rng, int size) {
  static const char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string v(static_cast<size_t>(size), 'x');
  for (char& c : v) c = kChars[rng() % (sizeof(kChars) - 1)];
  return v;
}

// Pulls "mod_revision":"N" of the first kv out of a range answer without a
// full JSON parse (the benchmark client must stay cheap).
int64_t FirstModRevision(const std::string& body) {
  size_t p = body.find("\"mod_revision\":\"");
  if (p == std::string::npos) return 0;
  return std::strtoll(body.c_str() + p + 16, nullptr, 10);
}

class PutScript : public ClientScript {
 public:
  PutScript(const StoreWorkload& w, int client)
      : w_(w), rng_(w.seed * 1000003 + client) {
    value_b64_ = Base64Encode(RandomValue(rng_, w.value_size));
  }
  Request Next() override {
    int64_t k =
        static_cast<int64_t>(rng_() % static_cast<uint64_t>(w_.key_space));
    Request r;
    r.path = "/v3/kv/put";
    r.body = "{\"key\":\"" + Base64Encode(StoreKey(w_.prefix, k)) +
             "\",\"value\":\"" + value_b64_ + "\"}";
    return r;
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 200 ? Step::kDone : Step::kFailed;
  }

 private:
  StoreWorkload w_;
  std::mt19937_64 rng_;
  std::string value_b64_;
};

class RangeScript : public ClientScript {
 public:
  RangeScript(const StoreWorkload& w) {
    std::string key = w.range_prefix ? w.prefix : StoreKey(w.prefix, 1);
    body_ = "{\"key\":\"" + Base64Encode(key) + "\"";
    if (w.range_prefix) {
      body_ +=
          ",\"range_end\":\"" + Base64Encode(PrefixRangeEnd(w.prefix)) + "\"";
    }
    if (w.serializable) body_ += ",\"serializable\":true";
    body_ += "}";
  }
  Request Next() override { return {"POST", "/v3/kv/range", body_}; }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 200 ? Step::kDone : Step::kFailed;
  }

 private:
  std::string body_;
};

// Read, then compare-and-swap on mod_revision; retry on a lost race.
class CasScript : public ClientScript {
 public:
  CasScript(const StoreWorkload& w, int client)
      : w_(w), rng_(w.seed * 7919 + client) {}
  Request Next() override {
    if (!have_rev_) {
      key_ = Base64Encode(StoreKey(
          w_.prefix,
          static_cast<int64_t>(rng_() % static_cast<uint64_t>(w_.key_space))));
      return {"POST", "/v3/kv/range", "{\"key\":\"" + key_ + "\"}"};
    }
    std::string value = Base64Encode(RandomValue(rng_, w_.value_size));
    Request r;
    r.path = "/v3/kv/txn";
    r.body = "{\"compare\":[{\"target\":\"MOD\",\"key\":\"" + key_ +
             "\",\"mod_revision\":\"" + std::to_string(rev_) +
             "\"}],\"success\":[{\"request_put\":{\"key\":\"" + key_ +
             "\",\"value\":\"" + value +
             "\"}}],\"failure\":[{\"request_range\":{\"key\":\"" + key_ +
             "\"}}]}";
    return r;
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    if (resp.status != 200) {
      have_rev_ = false;
      return Step::kFailed;
    }
    if (!have_rev_) {
      rev_ = FirstModRevision(resp.body);  // 0 for a missing key: create
      have_rev_ = true;
      return Step::kContinue;
    }
    if (resp.body.find("\"succeeded\":true") != std::string::npos) {
      have_rev_ = false;
      return Step::kDone;
    }
    // Lost the race: the failure branch read the current revision.
    rev_ = FirstModRevision(resp.body);
    return Step::kContinue;
  }

 private:
  StoreWorkload w_;
  std::mt19937_64 rng_;
  std::string key_;
  bool have_rev_ = false;
  int64_t rev_ = 0;
};

// Writes a fixed list of keys once each.
class FillScript : public ClientScript {
 public:
  FillScript(std::string prefix, int64_t first, int64_t step, int64_t count,
             int value_size)
      : prefix_(std::move(prefix)), next_(first), step_(step), count_(count) {
    std::mt19937_64 rng(first + 1);
    value_ = Base64Encode(RandomValue(rng, value_size));
  }
  Request Next() override {
    int64_t k = next_;
    next_ += step_;
    return {"POST", "/v3/kv/put",
            "{\"key\":\"" + Base64Encode(StoreKey(prefix_, k)) +
                "\",\"value\":\"" + value_ + "\"}"};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 200 ? Step::kDone : Step::kFailed;
  }
  int64_t remaining() const { return count_ - next_; }

 private:
  std::string prefix_;
  int64_t next_, step_, count_;
  std::string value_;
};

}  // namespace

std::string StoreKey(const std::string& prefix, int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key-%08lld", static_cast<long long>(i));
  return prefix + buf;
}

std::unique_ptr<ClientScript> NewStoreScript(const StoreWorkload& w,
                                             int client) {
  if (w.kind == "range") return std::make_unique<RangeScript>(w);
  if (w.kind == "cas") return std::make_unique<CasScript>(w, client);
  return std::make_unique<PutScript>(w, client);
}

Status FillStore(const std::vector<Endpoint>& endpoints,
                 const std::string& prefix, int64_t count, int value_size,
                 int clients) {
  LoadOptions o;
  o.endpoints = endpoints;
  o.clients = clients;
  o.threads = 1;
  o.max_operations = count;
  o.make_script = [&](int i) {
    return std::make_unique<FillScript>(prefix, i, clients, count, value_size);
  };
  ASSIGN_OR_RETURN(LoadResult r, RunLoad(o));
  if (r.errors > 0) {
    return UnavailableError(
        "fill: " + std::to_string(r.errors) + " errors, e.g. " +
        (r.sample_errors.empty() ? std::string("?") : r.sample_errors[0]));
  }
  return Status::Ok();
}

}  // namespace kplane::bench
