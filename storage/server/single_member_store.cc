#include "storage/server/single_member_store.h"

#include <stdlib.h>

#include <filesystem>

namespace kplane::storage {

StatusOr<std::unique_ptr<SingleMemberStore>> SingleMemberStore::Start(
    net::HttpServerOptions http, std::function<void(StoreConfig*)> tweak) {
  std::unique_ptr<SingleMemberStore> s(new SingleMemberStore());
  char tmpl[] = "/tmp/kplane-store-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return InternalError("mkdtemp failed");
  s->dir_ = tmpl;
  http.port = 0;
  http.metrics = &s->metrics_;
  s->http_options_ = std::move(http);
  s->tweak_ = std::move(tweak);
  RETURN_IF_ERROR(s->Open());
  return s;
}

Status SingleMemberStore::Open() {
  StoreConfig c;
  c.name = "m1";
  c.data_dir = dir_ + "/m1";
  c.peer_urls = {"http://m1:2380"};
  // Fast elections: a lone member elects itself within a few ticks.
  c.heartbeat_interval = milliseconds(10);
  c.election_timeout = milliseconds(100);
  c.corrupt_check_interval = Duration(0);
  if (tweak_) tweak_(&c);
  ASSIGN_OR_RETURN(server_, StoreServer::Open(c));
  RETURN_IF_ERROR(server_->Start(nullptr));
  if (!server_->WaitReady(seconds(10))) {
    return UnavailableError("single-member store did not become ready");
  }
  http_ = std::make_unique<net::HttpServer>(http_options_);
  api_ = std::make_unique<ClientApi>(server_.get(), &metrics_);
  api_->RegisterHandlers(http_.get());
  return http_->Start();
}

Status SingleMemberStore::Restart() {
  http_->Stop();
  api_.reset();
  http_.reset();
  server_->Stop();
  server_.reset();
  return Open();
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
