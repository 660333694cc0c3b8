#include "controllers/controller.h"

#include "base/logging.h"

namespace kplane::controllers {

namespace {
metrics::Registry* Or(metrics::Registry* r) {
  return r != nullptr ? r : metrics::Registry::Default();
}
}  // namespace

informer::HandlerRegistration* OnObjectEvents(
    informer::SharedIndexInformer* informer,
    std::function<void(const ObjectEvent&)> fn) {
  auto f =
      std::make_shared<std::function<void(const ObjectEvent&)>>(std::move(fn));
  return informer->AddEventHandler(informer::EventHandlerFuncs{
      .on_add =
          [f](const informer::ObjectPtr& o, bool) {
            (*f)(ObjectEvent{ObjectEvent::Type::kAdded, *o});
          },
      .on_update =
          [f](const informer::ObjectPtr& old_obj,
              const informer::ObjectPtr& new_obj) {
            (*f)(ObjectEvent{ObjectEvent::Type::kUpdated, *new_obj,
                             old_obj.get()});
          },
      .on_delete =
          [f](const informer::DeletedObject& d) {
            (*f)(ObjectEvent{ObjectEvent::Type::kDeleted, *d.object});
          }});
}

Controller::Controller(std::string name, Clock* clock,
                       metrics::Registry* registry)
    : clock_(clock != nullptr ? clock : Clock::Real()),
      name_(std::move(name)),
      queue_({.name = name_, .clock = clock_, .metrics = Or(registry)}) {
  metrics::Registry* m = Or(registry);
  sync_duration_ = m->NewHistogram("controller_sync_duration_seconds",
                                   "Latency of one Sync(key) of a controller.",
                                   {"controller"},
                                   metrics::ExponentialBuckets(0.0001, 4, 10))
                       ->With({name_});
  auto* total =
      m->NewCounter("controller_sync_total", "Syncs of a controller by result.",
                    {"controller", "result"});
  sync_ok_ = total->With({name_, "ok"});
  sync_error_ = total->With({name_, "error"});
}

Controller::~Controller() { Stop(); }

Status Controller::TimedSync(const std::string& key) {
  // The runner drains its queue on shutdown; skip what is left instead of
  // making API calls (each may wait out retries if the server is gone).
  if (stopping_.load()) return Status::Ok();
  TimePoint start = clock_->Now();
  Status s = Sync(key);
  sync_duration_->Observe(
      std::chrono::duration<double>(clock_->Now() - start).count());
  if (s.ok()) {
    sync_ok_->Inc();
  } else {
    sync_error_->Inc();
    LOG(INFO) << name_ << ": sync " << key << ": " << s;
  }
  return s;
}

void Controller::Run(int workers) {
  CHECK(runner_ == nullptr) << name_ << " already running";
  runner_ = std::make_unique<informer::Runner>(
      &queue_, [this](const std::string& key) { return TimedSync(key); },
      informer::RunnerOptions{.name = name_, .workers = workers});
  runner_->Start();
}

void Controller::Stop() {
  stopping_ = true;
  if (runner_ != nullptr) {
    runner_->Stop();
  } else {
    queue_.ShutDown();
  }
}

}  // namespace kplane::controllers
