#include "storage/server/single_member_store.h"

#include <stdlib.h>

#include <filesystem>

namespace kplane::storage {

StatusOr<std::unique_ptr<SingleMemberStore>> SingleMemberStore::Start(
    net::HttpServerOptions http) {
  std::unique_ptr<SingleMemberStore> s(new SingleMemberStore());
  char tmpl[] = "/tmp/kplane-store-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return InternalError("mkdtemp failed");
  s->dir_ = tmpl;
  StoreConfig c;
  c.name = "m1";
  c.data_dir = s->dir_ + "/m1";
  c.peer_urls = {"http://m1:2380"};
  // Fast elections: a lone member elects itself within a few ticks.
  c.heartbeat_interval = milliseconds(10);
  c.election_timeout = milliseconds(100);
  c.corrupt_check_interval = Duration(0);
  ASSIGN_OR_RETURN(s->server_, StoreServer::Open(c));
  RETURN_IF_ERROR(s->server_->Start(nullptr));
  if (!s->server_->WaitReady(seconds(10))) {
    return UnavailableError("single-member store did not become ready");
  }
  http.port = 0;
  http.metrics = &s->metrics_;
  s->http_ = std::make_unique<net::HttpServer>(http);
  s->api_ = std::make_unique<ClientApi>(s->server_.get(), &s->metrics_);
  s->api_->RegisterHandlers(s->http_.get());
  RETURN_IF_ERROR(s->http_->Start());
  return s;
}

SingleMemberStore::~SingleMemberStore() {
  if (http_) http_->Stop();
  if (server_) server_->Stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

}  // namespace kplane::storage
