// ListerWatcher: the two calls a reflector needs, LIST and WATCH of one
// collection (client-go's cache.ListerWatcher). RestListerWatcher does them
// over the REST client for a resource, optionally narrowed to a namespace
// and label/field selectors; FakeListerWatcher (fake_list_watcher.h) does
// them in memory for tests.
//
// Ownership: RestListerWatcher borrows the RestClient, which must outlive
// it. Thread-safety: implementations may be called from any thread.
// Errors: as RestClient (api_errors.h); a 410 is kExpired.
#ifndef KPLANE_INFORMER_LIST_WATCH_H_
#define KPLANE_INFORMER_LIST_WATCH_H_

#include <memory>
#include <string>

#include "objects/scheme.h"
#include "informer/rest_client.h"
#include "informer/watch.h"

namespace kplane::informer {

class ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;
  // One page of the collection (options.limit / continue_token).
  virtual StatusOr<ListResult> List(const ListOptions& options) = 0;
  // A watch from options.resource_version.
  virtual StatusOr<std::unique_ptr<WatchStream>> Watch(
      const ListOptions& options) = 0;
  // The kind of the objects listed and watched.
  virtual const objects::KindInfo& Kind() const = 0;
};

// Which part of a collection an informer follows.
struct ListWatchScope {
  std::string ns;  // "" = all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  friend auto operator<=>(const ListWatchScope&,
                          const ListWatchScope&) = default;
};

// What a RestListerWatcher's objects are.
enum class ObjectForm {
  kWhole,  // the resource's kind (RestClient::ListObjects / Watch)
  // metav1::PartialObjectMetadata (RestClient::ListMetadata /
  // WatchMetadata; client-go's metadatainformer): for a consumer that reads
  // only metadata (the garbage collector), the server sends, and the cache
  // keeps, a fraction of each object, decoded from protobuf.
  kMetadata,
};

class RestListerWatcher : public ListerWatcher {
 public:
  RestListerWatcher(RestClient* client, const objects::ResourceInfo* resource,
                    ListWatchScope scope = {},
                    ObjectForm form = ObjectForm::kWhole);

  StatusOr<ListResult> List(const ListOptions& options) override;
  StatusOr<std::unique_ptr<WatchStream>> Watch(
      const ListOptions& options) override;
  const objects::KindInfo& Kind() const override;

 private:
  ListOptions Scoped(const ListOptions& options) const;

  RestClient* const client_;
  const objects::ResourceInfo* const resource_;
  const ListWatchScope scope_;
  const ObjectForm form_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_LIST_WATCH_H_
