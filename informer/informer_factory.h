// SharedInformerFactory: at most one informer per (resource, scope), so
// every controller in a process shares one watch and one cache per
// collection (client-go's informers.SharedInformerFactory).
//
//   SharedInformerFactory factory(client, {.resync_period = minutes(10)});
//   SharedIndexInformer* pods = factory.InformerFor<corev1::Pod>();
//   SharedIndexInformer* nodes = factory.InformerFor<corev1::Node>();
//   pods->AddEventHandler(...);
//   factory.Start();                       // starts every informer made so far
//   if (!factory.WaitForCacheSync(seconds(30))) ...
//   TypedLister<corev1::Pod> pod_lister = factory.ListerFor<corev1::Pod>();
//
// A scope narrows what an informer follows: a namespace and/or label and
// field selectors (ListWatchScope). InformerFor(resource, scope) with the
// same arguments returns the same informer; the factory's default scope
// (options.scope) applies to InformerFor without one.
//
// Ownership: the factory owns its informers; pointers stay valid until it
// is destroyed (which stops them). It borrows the RestClient.
// Thread-safety: all methods may be called concurrently.
#ifndef KPLANE_INFORMER_INFORMER_FACTORY_H_
#define KPLANE_INFORMER_INFORMER_FACTORY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/logging.h"
#include "base/mutex.h"
#include "informer/lister.h"
#include "informer/rest_client.h"
#include "informer/shared_informer.h"

namespace kplane::informer {

struct InformerFactoryOptions {
  Duration resync_period{0};
  ListWatchScope scope;  // default scope
  ReflectorOptions reflector;
  Clock* clock = nullptr;
};

class SharedInformerFactory {
 public:
  SharedInformerFactory(RestClient* client,
                        InformerFactoryOptions options = {});
  ~SharedInformerFactory();  // Shutdown()

  SharedIndexInformer* InformerFor(const objects::ResourceInfo& resource);
  SharedIndexInformer* InformerFor(const objects::ResourceInfo& resource,
                                   const ListWatchScope& scope);
  template <typename T>
  SharedIndexInformer* InformerFor() {
    const objects::ResourceInfo* r = RestClient::ResourceFor<T>();
    CHECK(r != nullptr) << "no resource serves "
                        << T::descriptor()->full_name();
    return InformerFor(*r);
  }
  template <typename T>
  TypedLister<T> ListerFor() {
    return TypedLister<T>(&InformerFor<T>()->GetIndexer());
  }

  // Starts every informer not yet started (call again after adding more).
  void Start();
  // Waits for every started informer, sharing one deadline (negative: no
  // limit). Returns whether all synced.
  bool WaitForCacheSync(Duration timeout = Duration(-1));
  // Stops every informer.
  void Shutdown();

 private:
  using Key = std::pair<const objects::ResourceInfo*, ListWatchScope>;

  RestClient* const client_;
  const InformerFactoryOptions options_;
  Clock* const clock_;
  Mutex mu_;
  std::map<Key, std::unique_ptr<SharedIndexInformer>> informers_
      GUARDED_BY(mu_);
  std::map<Key, bool> started_ GUARDED_BY(mu_);
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_INFORMER_FACTORY_H_
