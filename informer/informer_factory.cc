#include "informer/informer_factory.h"

#include <vector>

namespace kplane::informer {

SharedInformerFactory::SharedInformerFactory(RestClient* client,
                                             InformerFactoryOptions options)
    : client_(client),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()) {}

SharedInformerFactory::~SharedInformerFactory() { Shutdown(); }

SharedIndexInformer* SharedInformerFactory::InformerFor(
    const objects::ResourceInfo& resource) {
  return InformerFor(resource, options_.scope);
}

SharedIndexInformer* SharedInformerFactory::InformerFor(
    const objects::ResourceInfo& resource, const ListWatchScope& scope) {
  MutexLock l(&mu_);
  Key key{&resource, scope};
  auto it = informers_.find(key);
  if (it != informers_.end()) return it->second.get();
  SharedInformerOptions o;
  o.name = resource.GroupResource();
  if (!scope.ns.empty()) o.name += "@" + scope.ns;
  o.resync_period = options_.resync_period;
  o.reflector = options_.reflector;
  o.clock = clock_;
  auto informer = std::make_unique<SharedIndexInformer>(
      std::make_shared<RestListerWatcher>(client_, &resource, scope), o);
  SharedIndexInformer* raw = informer.get();
  informers_.emplace(key, std::move(informer));
  return raw;
}

void SharedInformerFactory::Start() {
  MutexLock l(&mu_);
  for (auto& [key, informer] : informers_) {
    if (started_[key]) continue;
    informer->Start();
    started_[key] = true;
  }
}

bool SharedInformerFactory::WaitForCacheSync(Duration timeout) {
  std::vector<SharedIndexInformer*> started;
  {
    MutexLock l(&mu_);
    for (auto& [key, informer] : informers_) {
      if (started_[key]) started.push_back(informer.get());
    }
  }
  const TimePoint deadline = clock_->Now() + timeout;
  bool all = true;
  for (SharedIndexInformer* informer : started) {
    Duration left = Duration(-1);
    if (timeout.count() >= 0) {
      left = std::max(Duration(0), deadline - clock_->Now());
    }
    all = informer->WaitForCacheSync(left) && all;
  }
  return all;
}

void SharedInformerFactory::Shutdown() {
  std::vector<SharedIndexInformer*> all;
  {
    MutexLock l(&mu_);
    for (auto& [key, informer] : informers_) all.push_back(informer.get());
  }
  for (SharedIndexInformer* informer : all) informer->Stop();
}

}  // namespace kplane::informer
