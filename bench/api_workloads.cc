#include "bench/api_workloads.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <unordered_map>

#include "net/http_client.h"
#include "net/url.h"

namespace kplane::bench {
namespace {

std::string PodsPath(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/pods";
}

// The value of the first "key":"..." in `body` at or after `from`, before
// `limit` (a cheap scan: the client must not spend the CPU it measures).
std::string FirstString(const std::string& body, const std::string& key,
                        size_t limit = std::string::npos) {
  const std::string needle = "\"" + key + "\":\"";
  size_t p = body.find(needle);
  if (p == std::string::npos || p >= limit) return "";
  p += needle.size();
  size_t e = body.find('"', p);
  if (e == std::string::npos) return "";
  return body.substr(p, e - p);
}

int64_t CountOf(const std::string& body, const std::string& needle) {
  int64_t n = 0;
  for (size_t p = body.find(needle); p != std::string::npos;
       p = body.find(needle, p + needle.size())) {
    ++n;
  }
  return n;
}

class CreateScript : public ClientScript {
 public:
  CreateScript(const ApiWorkload& w, int client)
      : path_(PodsPath(w.ns)), prefix_(w.run + "-c" + std::to_string(client)) {}
  Request Next() override {
    return {"POST", path_,
            PodJson(prefix_ + "-" + std::to_string(seq_++), "0")};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 201 ? Step::kDone : Step::kFailed;
  }

 private:
  std::string path_, prefix_;
  int64_t seq_ = 0;
};

class GetScript : public ClientScript {
 public:
  GetScript(const ApiWorkload& w, int client)
      : w_(w), rng_(w.seed * 1000003 + client) {}
  Request Next() override {
    int64_t i = static_cast<int64_t>(rng_() % static_cast<uint64_t>(w_.pods));
    return {"GET", PodsPath(w_.ns) + "/" + FixturePodName(w_.fixture, i), ""};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 200 ? Step::kDone : Step::kFailed;
  }

 private:
  ApiWorkload w_;
  std::mt19937_64 rng_;
};

// Cycles over the client's own fixture pods, read-modify-write as a
// controller does: each PUT sends back the object its pod's last answer
// returned (so it carries that resourceVersion and every field the server
// defaulted or admitted) with the annotation's value changed.
class UpdateScript : public ClientScript {
 public:
  UpdateScript(const ApiWorkload& w, int client) : w_(w) {
    for (int64_t j = client; j < w.pods; j += std::max(1, w.clients)) {
      mine_.push_back(j);
    }
  }
  Request Next() override {
    if (mine_.empty()) return {"GET", PodsPath(w_.ns) + "/no-pods-left", ""};
    const int64_t j = mine_[at_ % mine_.size()];
    const std::string path =
        PodsPath(w_.ns) + "/" + FixturePodName(w_.fixture, j);
    auto it = last_.find(j);
    reading_ = it == last_.end();
    if (reading_) return {"GET", path, ""};
    std::string body = it->second;
    static const std::string kKey = "\"kplane.io/bench\":\"";
    const size_t p = body.find(kKey);
    if (p != std::string::npos) {
      const size_t v = p + kKey.size();
      body.replace(v, body.find('"', v) - v, std::to_string(++gen_));
    }
    return {"PUT", path, std::move(body)};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    const int64_t j = mine_.empty() ? 0 : mine_[at_ % mine_.size()];
    if (resp.status != 200) {
      last_.erase(j);  // read it again next time
      ++at_;
      return Step::kFailed;
    }
    last_[j] = resp.body;
    if (reading_) return Step::kContinue;
    ++at_;
    return Step::kDone;
  }

 private:
  ApiWorkload w_;
  std::vector<int64_t> mine_;
  std::unordered_map<int64_t, std::string> last_;  // pod -> last answer
  size_t at_ = 0;
  int64_t gen_ = 0;
  bool reading_ = false;
};

class ListScript : public ClientScript {
 public:
  explicit ListScript(const ApiWorkload& w)
      : base_(PodsPath(w.ns) +
              (w.list_query.empty() ? "" : "?" + w.list_query)),
        has_query_(!w.list_query.empty()),
        stats_(w.list_stats) {}
  Request Next() override {
    if (token_.empty()) return {"GET", base_, ""};
    return {"GET",
            base_ + (has_query_ ? "&" : "?") +
                "continue=" + net::QueryEscape(token_),
            ""};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    if (resp.status != 200) {
      Reset();
      return Step::kFailed;
    }
    bytes_ += static_cast<int64_t>(resp.body.size());
    items_ += CountOf(resp.body, "\"uid\":\"");
    ++pages_;
    const size_t items_at = resp.body.find("\"items\":");
    token_ = FirstString(resp.body, "continue", items_at);
    if (!token_.empty()) return Step::kContinue;
    if (stats_) {
      stats_->bytes = bytes_;
      stats_->items = items_;
      stats_->pages = pages_;
    }
    Reset();
    return Step::kDone;
  }

 private:
  void Reset() {
    token_.clear();
    bytes_ = items_ = pages_ = 0;
  }
  std::string base_;
  bool has_query_;
  std::shared_ptr<ApiListStats> stats_;
  std::string token_;
  int64_t bytes_ = 0, items_ = 0, pages_ = 0;
};

class DeleteScript : public ClientScript {
 public:
  explicit DeleteScript(const ApiWorkload& w) : w_(w) {}
  Request Next() override {
    const int64_t i = w_.delete_next ? w_.delete_next->fetch_add(1) : 0;
    if (!w_.delete_names ||
        i >= static_cast<int64_t>(w_.delete_names->size())) {
      return {"", "", ""};  // nothing left for this client
    }
    return {"DELETE", PodsPath(w_.ns) + "/" + (*w_.delete_names)[i], ""};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 200 || resp.status == 202 ? Step::kDone
                                                    : Step::kFailed;
  }

 private:
  ApiWorkload w_;
};

// Creates fixture pods, each index once (taken from a shared counter);
// an existing pod (409) counts as created.
class FillScript : public ClientScript {
 public:
  FillScript(std::string ns, std::string fixture, int64_t count,
             std::shared_ptr<std::atomic<int64_t>> next)
      : path_(PodsPath(ns)),
        fixture_(std::move(fixture)),
        count_(count),
        next_(std::move(next)) {}
  Request Next() override {
    const int64_t i = next_->fetch_add(1);
    if (i >= count_) return {"", "", ""};  // all taken
    return {"POST", path_, PodJson(FixturePodName(fixture_, i), "0")};
  }
  Step OnResponse(const net::HttpResponse& resp) override {
    return resp.status == 201 || resp.status == 409 ? Step::kDone
                                                    : Step::kFailed;
  }

 private:
  std::string path_, fixture_;
  int64_t count_;
  std::shared_ptr<std::atomic<int64_t>> next_;
};

}  // namespace

std::string PodJson(const std::string& name, const std::string& annotation) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","labels":{"app":"bench"},"annotations":{"kplane.io/bench":")" +
         annotation +
         R"("}},"spec":{"containers":[{"name":"app","image":"nginx:1.27","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}})";
}

std::string FixturePodName(const std::string& fixture, int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%08lld", static_cast<long long>(i));
  return fixture + buf;
}

std::unique_ptr<ClientScript> NewApiScript(const ApiWorkload& w, int client) {
  if (w.kind == "get") return std::make_unique<GetScript>(w, client);
  if (w.kind == "update") return std::make_unique<UpdateScript>(w, client);
  if (w.kind == "list") return std::make_unique<ListScript>(w);
  if (w.kind == "delete") return std::make_unique<DeleteScript>(w);
  return std::make_unique<CreateScript>(w, client);
}

Status EnsureNamespace(const Endpoint& server, const std::string& ns) {
  net::HttpClientOptions co;
  if (server.tls) co.tls = server.tls->context;
  net::HttpClient c(server.host, server.port, co);
  auto r = c.Request(
      "POST", "/api/v1/namespaces", {{"Content-Type", "application/json"}},
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns +
          "\"}}");
  if (!r.ok()) return r.status();
  if (r->status != 201 && r->status != 409) {
    return UnavailableError("create namespace " + ns + ": HTTP " +
                            std::to_string(r->status) + " " +
                            r->body.substr(0, 200));
  }
  return Status::Ok();
}

StatusOr<double> FillPods(const Endpoint& server, const std::string& ns,
                          const std::string& fixture, int64_t count,
                          int clients) {
  RETURN_IF_ERROR(EnsureNamespace(server, ns));
  if (count <= 0) return 0.0;
  clients = static_cast<int>(std::min<int64_t>(clients, count));
  LoadOptions o;
  o.endpoints = {server};
  o.clients = clients;
  o.threads = 2;
  o.max_operations = count;
  o.time_limit = minutes(30);
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  o.make_script = [&](int) {
    return std::make_unique<FillScript>(ns, fixture, count, next);
  };
  const int64_t t0 = NowNs();
  ASSIGN_OR_RETURN(LoadResult r, RunLoad(o));
  const double secs = (NowNs() - t0) / 1e9;
  if (r.errors > 0 || r.operations < count) {
    return UnavailableError(
        "fill: " + std::to_string(r.operations) + " of " +
        std::to_string(count) + " pods, " + std::to_string(r.errors) +
        " errors, e.g. " +
        (r.sample_errors.empty() ? std::string("?") : r.sample_errors[0]));
  }
  return secs;
}

StatusOr<std::vector<std::string>> ListPodNames(const Endpoint& server,
                                                const std::string& ns) {
  net::HttpClientOptions co;
  co.read_timeout = seconds(300);
  if (server.tls) co.tls = server.tls->context;
  net::HttpClient c(server.host, server.port, co);
  ASSIGN_OR_RETURN(net::HttpResponse r, c.Request("GET", PodsPath(ns)));
  if (r.status != 200) {
    return UnavailableError("list " + ns + ": HTTP " +
                            std::to_string(r.status));
  }
  rapidjson::Document d;
  d.Parse(r.body.data(), r.body.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("items") ||
      !d["items"].IsArray()) {
    return InvalidArgumentError("list " + ns + ": not a list");
  }
  std::vector<std::string> names;
  for (const auto& item : d["items"].GetArray()) {
    if (item.HasMember("metadata") && item["metadata"].HasMember("name")) {
      names.emplace_back(item["metadata"]["name"].GetString());
    }
  }
  return names;
}

}  // namespace kplane::bench
