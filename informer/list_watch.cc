#include "informer/list_watch.h"

#include "base/logging.h"

namespace kplane::informer {

RestListerWatcher::RestListerWatcher(RestClient* client,
                                     const objects::ResourceInfo* resource,
                                     ListWatchScope scope)
    : client_(client), resource_(resource), scope_(std::move(scope)) {}

namespace {

ListOptions Scoped(const ListWatchScope& scope, const ListOptions& options) {
  ListOptions o = options;
  if (!scope.label_selector.empty()) o.label_selector = scope.label_selector;
  if (!scope.field_selector.empty()) o.field_selector = scope.field_selector;
  return o;
}

}  // namespace

ListOptions RestListerWatcher::Scoped(const ListOptions& options) const {
  return informer::Scoped(scope_, options);
}

StatusOr<ListResult> RestListerWatcher::List(const ListOptions& options) {
  return client_->ListObjects(*resource_, scope_.ns, Scoped(options));
}

StatusOr<std::unique_ptr<WatchStream>> RestListerWatcher::Watch(
    const ListOptions& options) {
  return client_->Watch(*resource_, scope_.ns, Scoped(options));
}

MetadataListerWatcher::MetadataListerWatcher(
    RestClient* client, const objects::ResourceInfo* resource,
    ListWatchScope scope)
    : client_(client), resource_(resource), scope_(std::move(scope)) {}

StatusOr<ListResult> MetadataListerWatcher::List(const ListOptions& options) {
  return client_->ListMetadata(*resource_, scope_.ns,
                               informer::Scoped(scope_, options));
}

StatusOr<std::unique_ptr<WatchStream>> MetadataListerWatcher::Watch(
    const ListOptions& options) {
  return client_->WatchMetadata(*resource_, scope_.ns,
                                informer::Scoped(scope_, options));
}

const objects::KindInfo& MetadataListerWatcher::Kind() const {
  static const objects::KindInfo* const kind = [] {
    const objects::KindInfo* k = objects::Scheme::Default().FindKind(
        "meta.k8s.io/v1", "PartialObjectMetadata");
    CHECK(k != nullptr) << "PartialObjectMetadata is not in the scheme";
    return k;
  }();
  return *kind;
}

}  // namespace kplane::informer
