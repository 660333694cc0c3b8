#include "informer/list_watch.h"

namespace kplane::informer {

RestListerWatcher::RestListerWatcher(RestClient* client,
                                     const objects::ResourceInfo* resource,
                                     ListWatchScope scope, ObjectForm form)
    : client_(client),
      resource_(resource),
      scope_(std::move(scope)),
      form_(form) {}

ListOptions RestListerWatcher::Scoped(const ListOptions& options) const {
  ListOptions o = options;
  if (!scope_.label_selector.empty()) o.label_selector = scope_.label_selector;
  if (!scope_.field_selector.empty()) o.field_selector = scope_.field_selector;
  return o;
}

StatusOr<ListResult> RestListerWatcher::List(const ListOptions& options) {
  if (form_ == ObjectForm::kMetadata) {
    return client_->ListMetadata(*resource_, scope_.ns, Scoped(options));
  }
  return client_->ListObjects(*resource_, scope_.ns, Scoped(options));
}

StatusOr<std::unique_ptr<WatchStream>> RestListerWatcher::Watch(
    const ListOptions& options) {
  if (form_ == ObjectForm::kMetadata) {
    return client_->WatchMetadata(*resource_, scope_.ns, Scoped(options));
  }
  return client_->Watch(*resource_, scope_.ns, Scoped(options));
}

const objects::KindInfo& RestListerWatcher::Kind() const {
  return form_ == ObjectForm::kMetadata ? RestClient::MetadataKind()
                                        : *resource_->kind;
}

}  // namespace kplane::informer
