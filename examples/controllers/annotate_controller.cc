#include "examples/controllers/annotate_controller.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "informer/api_errors.h"
#include "informer/indexer.h"
#include "informer/unstructured.h"

namespace kplane::examples {

using informer::ObjectPtr;
using informer::Unstructured;

AnnotateController::AnnotateController(
    informer::DynamicClient* client,
    informer::DynamicSharedInformerFactory* factory,
    AnnotateControllerOptions options)
    : client_(client),
      options_(std::move(options)),
      lister_(factory->ListerFor(options_.resource)),
      queue_(informer::WorkQueueOptions{}) {
  auto enqueue = [this](const ObjectPtr& obj) {
    queue_.Add(informer::ObjectKey(*obj));
  };
  factory->ForResource(options_.resource)
      ->AddEventHandler(informer::EventHandlerFuncs{
          .on_add = [enqueue](const ObjectPtr& o, bool) { enqueue(o); },
          .on_update = [enqueue](const ObjectPtr&,
                                 const ObjectPtr& o) { enqueue(o); },
      });
  runner_ = std::make_unique<informer::Runner>(
      &queue_, [this](const std::string& key) { return Reconcile(key); },
      informer::RunnerOptions{.name = "annotate", .workers = options_.workers});
}

AnnotateController::~AnnotateController() { Stop(); }

void AnnotateController::Start() { runner_->Start(); }

void AnnotateController::Stop() { runner_->Stop(); }

std::string AnnotateController::Summary(
    const std::map<std::string, std::string>& data) {
  std::string keys;
  size_t bytes = 0;
  for (const auto& [k, v] : data) {
    keys += (keys.empty() ? "" : ",") + k;
    bytes += v.size();
  }
  return keys + " (" + std::to_string(bytes) + " bytes)";
}

Status AnnotateController::Reconcile(const std::string& key) {
  StatusOr<ObjectPtr> cached = lister_.Get(key);
  if (informer::IsNotFound(cached.status())) return Status::Ok();  // deleted
  RETURN_IF_ERROR(cached.status());
  ASSIGN_OR_RETURN(Unstructured obj, Unstructured::FromObject(**cached));
  const std::string want = Summary(obj.NestedStringMap({"data"}).value_or(
      std::map<std::string, std::string>{}));
  const std::map<std::string, std::string> annotations = obj.Annotations();
  auto it = annotations.find(options_.annotation);
  bool wrote = false;
  if (it == annotations.end() || it->second != want) {
    // {"metadata":{"resourceVersion":RV,"annotations":{A:want}}}: the RV
    // makes the patch a compare-and-swap against what we read.
    Unstructured patch;
    patch.SetResourceVersion(obj.ResourceVersion());
    rapidjson::Value annotation(rapidjson::kObjectType);
    annotation.AddMember(
        rapidjson::Value(options_.annotation.c_str(), patch.allocator()),
        rapidjson::Value(want.c_str(), patch.allocator()), patch.allocator());
    patch.SetNested({"metadata", "annotations"}, annotation);
    RETURN_IF_ERROR(
        client_->Resource(options_.resource)
            .Namespace(obj.Namespace())
            .Patch(obj.Name(), informer::PatchType::kMergePatch, patch.ToJson())
            .status());
    wrote = true;
  }
  if (options_.on_reconciled) options_.on_reconciled(key, wrote);
  return Status::Ok();
}

}  // namespace kplane::examples
