// DynamicSharedInformerFactory: shared informers for resources of any kind
// by group/version/resource, caching unstructured objects (client-go's
// dynamicinformer.DynamicSharedInformerFactory).
//
//   DynamicClient dyn(rest_client);
//   DynamicSharedInformerFactory factory(&dyn, {.resync_period = minutes(10)});
//   GroupVersionResource widgets{"example.com", "v1", "widgets"};
//   SharedIndexInformer* inf = factory.ForResource(widgets);
//   inf->AddEventHandler(EventHandlerFuncs{
//       .on_add = [&](const ObjectPtr& o, bool) {
//         queue.Add(ObjectKey(*o));      // metadata works as for any kind
//       }});
//   factory.Start();
//   factory.WaitForCacheSync(seconds(30));
//   Lister widgets_lister = factory.ListerFor(widgets);
//   StatusOr<ObjectPtr> o = widgets_lister.ByNamespace("default").Get("w1");
//   StatusOr<Unstructured> w = Unstructured::FromObject(**o);
//
// It is the typed machinery itself: the DynamicClient's ResourceInfo for a
// GVR has an unstructured kind, so RestListerWatcher lists and watches it
// as JSON into UnstructuredObject messages (unstructured.h) and the
// Reflector (relist after 410, bookmarks, backoff), SharedIndexInformer
// (handlers, resync, tombstones), Indexer (namespace index, custom
// indexers over the metadata) and Lister run unchanged. Handlers and
// listers get ObjectPtrs to UnstructuredObjects: objects/meta.h reads their
// metadata, Unstructured::FromObject the rest. Scopes (namespace, label
// and field selectors) as SharedInformerFactory's.
//
// Ownership: borrows the DynamicClient (which must outlive it); owns its
// informers (stopped on destruction). Thread-safety: all methods may be
// called concurrently. Errors: none here; list/watch failures are the
// reflector's (retried with backoff, reported to its on_error).
#ifndef KPLANE_INFORMER_DYNAMIC_INFORMER_H_
#define KPLANE_INFORMER_DYNAMIC_INFORMER_H_

#include "informer/dynamic_client.h"
#include "informer/informer_factory.h"
#include "informer/lister.h"
#include "informer/shared_informer.h"

namespace kplane::informer {

class DynamicSharedInformerFactory {
 public:
  DynamicSharedInformerFactory(DynamicClient* client,
                               InformerFactoryOptions options = {})
      : client_(client), factory_(client->rest_client(), std::move(options)) {}

  // The informer for `gvr` in the factory's default scope, or in `scope`;
  // the same arguments give the same informer.
  SharedIndexInformer* ForResource(const GroupVersionResource& gvr) {
    return factory_.InformerFor(client_->ResourceInfoFor(gvr));
  }
  SharedIndexInformer* ForResource(const GroupVersionResource& gvr,
                                   const ListWatchScope& scope) {
    return factory_.InformerFor(client_->ResourceInfoFor(gvr), scope);
  }
  // A lister over ForResource(gvr)'s cache whose NotFound errors name the
  // resource (`widgets.example.com "w1" not found`).
  Lister ListerFor(const GroupVersionResource& gvr) {
    return Lister(&ForResource(gvr)->GetIndexer(),
                  &client_->ResourceInfoFor(gvr));
  }

  void Start() { factory_.Start(); }
  bool WaitForCacheSync(Duration timeout = Duration(-1)) {
    return factory_.WaitForCacheSync(timeout);
  }
  void Shutdown() { factory_.Shutdown(); }

 private:
  DynamicClient* const client_;
  SharedInformerFactory factory_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_DYNAMIC_INFORMER_H_
