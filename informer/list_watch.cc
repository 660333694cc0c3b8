#include "informer/list_watch.h"

namespace kplane::informer {

RestListerWatcher::RestListerWatcher(RestClient* client,
                                     const objects::ResourceInfo* resource,
                                     ListWatchScope scope)
    : client_(client), resource_(resource), scope_(std::move(scope)) {}

ListOptions RestListerWatcher::Scoped(const ListOptions& options) const {
  ListOptions o = options;
  if (!scope_.label_selector.empty()) o.label_selector = scope_.label_selector;
  if (!scope_.field_selector.empty()) o.field_selector = scope_.field_selector;
  return o;
}

StatusOr<ListResult> RestListerWatcher::List(const ListOptions& options) {
  return client_->ListObjects(*resource_, scope_.ns, Scoped(options));
}

StatusOr<std::unique_ptr<WatchStream>> RestListerWatcher::Watch(
    const ListOptions& options) {
  return client_->Watch(*resource_, scope_.ns, Scoped(options));
}

}  // namespace kplane::informer
