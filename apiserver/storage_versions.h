// Storage versions: which served resources are stored as another resource's
// objects, and the conversion between the two forms (the model is
// kube-apiserver's storage version: events.k8s.io/v1 events are stored as
// core/v1 Events, under the same keys /registry/events/<ns>/<name>).
//
// The apiserver gives each such resource its own ObjectStore and watch
// cache over the shared keys, with ObjectStoreOptions::conversion set from
// here; an object written through one form is read, listed and watched
// through the other with the fields mapped (objects/events_types.h).
//
// Example:
//   if (auto c = StorageConversionFor(resource)) so.conversion = c;
//
// Thread-safety: the returned conversions are immutable and shareable.
// Errors: none; null for resources stored as themselves.
#ifndef KPLANE_APISERVER_STORAGE_VERSIONS_H_
#define KPLANE_APISERVER_STORAGE_VERSIONS_H_

#include <memory>

#include "apiserver/storage/object_store.h"
#include "objects/scheme.h"

namespace kplane::apiserver {

// Null when `served` is stored in its own kind.
std::shared_ptr<const StorageConversion> StorageConversionFor(
    const objects::ResourceInfo& served);

// The resource whose objects `served` is stored as (itself when it has no
// StorageConversion): encryption at rest is configured for that one.
const objects::ResourceInfo& StoredResource(
    const objects::ResourceInfo& served);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_STORAGE_VERSIONS_H_
