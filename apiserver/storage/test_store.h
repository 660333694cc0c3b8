// Test support: a real single-member StoreServer (our etcd) in a temporary
// directory, started and elected, removed again on destruction; plus small
// object builders. For tests of apiserver/storage and apiserver/cacher only.
//
// Thread-safety: the store is a KV (thread-safe); the fixture itself is not.
#ifndef KPLANE_APISERVER_STORAGE_TEST_STORE_H_
#define KPLANE_APISERVER_STORAGE_TEST_STORE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/types.h"
#include "storage/server/store_server.h"

namespace kplane::apiserver::testing {

class EmbeddedStore {
 public:
  EmbeddedStore() {
    char tmpl[] = "/tmp/kplane-apistore-XXXXXX";
    char* dir = mkdtemp(tmpl);
    EXPECT_NE(dir, nullptr);
    dir_ = dir ? dir : "";
    storage::StoreConfig config;
    config.name = "default";
    config.data_dir = dir_ + "/data";
    config.peer_urls = {"http://127.0.0.1:2380"};
    config.heartbeat_interval = milliseconds(10);
    config.election_timeout = milliseconds(100);
    config.corrupt_check_interval = Duration(0);
    config.metrics = &metrics_;
    auto server = storage::StoreServer::Open(config);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return;
    server_ = std::move(*server);
    Status started = server_->Start(nullptr);
    EXPECT_TRUE(started.ok()) << started;
    EXPECT_TRUE(server_->WaitForLeader(seconds(10)));
  }
  ~EmbeddedStore() {
    if (server_) server_->Stop();
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  EmbeddedStore(const EmbeddedStore&) = delete;
  EmbeddedStore& operator=(const EmbeddedStore&) = delete;

  storage::StoreServer* server() { return server_.get(); }

  // Compacts the store at its current revision and returns that revision.
  int64_t CompactNow() {
    int64_t rev = server_->mvcc()->CurrentRevision();
    etcdserverpb::CompactionRequest req;
    req.set_revision(rev);
    req.set_physical(true);
    auto resp = server_->Compact(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return rev;
  }

 private:
  std::string dir_;
  metrics::Registry metrics_;
  std::unique_ptr<storage::StoreServer> server_;
};

inline const objects::ResourceInfo* Resource(std::string_view group,
                                         std::string_view resource) {
  const objects::ResourceInfo* r =
      objects::Scheme::Default().FindResource(group, "v1", resource);
  EXPECT_NE(r, nullptr) << resource;
  return r;
}

inline objects::corev1::ConfigMap MakeConfigMap(const std::string& ns,
                                            const std::string& name,
                                            const std::string& value = "v") {
  objects::corev1::ConfigMap cm;
  cm.mutable_metadata()->set_namespace_(ns);
  cm.mutable_metadata()->set_name(name);
  cm.mutable_metadata()->set_uid("uid-" + ns + "-" + name);
  (*cm.mutable_data())["key"] = value;
  return cm;
}

inline objects::corev1::Pod MakePod(const std::string& ns, const std::string& name,
                                const std::string& node = "") {
  objects::corev1::Pod pod;
  pod.mutable_metadata()->set_namespace_(ns);
  pod.mutable_metadata()->set_name(name);
  pod.mutable_metadata()->set_uid("uid-" + ns + "-" + name);
  (*pod.mutable_metadata()->mutable_labels())["app"] = "web";
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("main");
  c->set_image("nginx:1.27");
  if (!node.empty()) pod.mutable_spec()->set_nodename(node);
  return pod;
}

}  // namespace kplane::apiserver::testing

#endif  // KPLANE_APISERVER_STORAGE_TEST_STORE_H_
