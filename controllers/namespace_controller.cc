#include "controllers/namespace_controller.h"

#include <algorithm>

#include "base/logging.h"
#include "base/strings.h"
#include "controllers/gc_resource_monitor.h"
#include "informer/api_errors.h"
#include "objects/meta.h"

namespace kplane::controllers {

namespace {

bool HasVerb(const objects::ResourceInfo& r, std::string_view verb) {
  return std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end();
}

bool HasSpecFinalizer(const corev1::Namespace& ns) {
  const auto& f = ns.spec().finalizers();
  return std::find(f.begin(), f.end(), kNamespaceFinalizer) != f.end();
}

bool Terminating(const google::protobuf::Message& ns) {
  return objects::IsBeingDeleted(*objects::GetObjectMeta(ns));
}

}  // namespace

NamespaceController::NamespaceController(NamespaceControllerOptions options)
    : Controller("namespace", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.namespaces != nullptr);
  if (options_.resources.empty()) {
    for (const auto& r : objects::Scheme::Default().resources()) {
      if (r->namespaced && r->list_kind != nullptr && HasVerb(*r, "list") &&
          HasVerb(*r, "delete")) {
        options_.resources.push_back(r.get());
      }
    }
  }
  if (options_.client != nullptr) {
    dynamic_ = std::make_unique<informer::DynamicClient>(options_.client);
  }
}

void NamespaceController::RegisterHandlers(
    informer::SharedIndexInformer* namespaces) {
  OnObjectEvents(namespaces, [this](const ObjectEvent& e) {
    if (!e.deleted() && Terminating(e.object)) Enqueue(e.Key());
  });
}

Status NamespaceController::Sync(const std::string& key) {
  ObjectPtr cached = options_.namespaces->Get(key);
  if (cached == nullptr || !Terminating(*cached)) return Status::Ok();
  StatusOr<ObjectPtr> live = options_.api->Get(NamespacesResource(), "", key);
  if (informer::IsNotFound(live.status())) return Status::Ok();
  RETURN_IF_ERROR(live.status());
  const auto& ns = static_cast<const corev1::Namespace&>(**live);
  if (!Terminating(ns) || !HasSpecFinalizer(ns)) return Status::Ok();

  ASSIGN_OR_RETURN(int64_t remaining, DeleteContent(key));
  if (dynamic_ != nullptr) {
    ASSIGN_OR_RETURN(int64_t custom, DeleteCustomContent(key));
    remaining += custom;
  }
  if (remaining > 0) {
    EnqueueAfter(key, options_.retry_interval);
    return Status::Ok();
  }
  LOG(INFO) << "namespace: " << key << " is empty; removing its \""
            << kNamespaceFinalizer << "\" finalizer";
  corev1::Namespace finalized = ns;
  auto* fin = finalized.mutable_spec()->mutable_finalizers();
  fin->erase(std::remove(fin->begin(), fin->end(), kNamespaceFinalizer),
             fin->end());
  Status s = options_.api->Finalize(finalized).status();
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

StatusOr<int64_t> NamespaceController::DeleteContent(const std::string& ns) {
  // Background: the dependents of what is deleted here are in the
  // namespace too, and are deleted by this same pass (no orphan finalizer).
  metav1::DeleteOptions opts;
  opts.set_propagationpolicy("Background");
  int64_t remaining = 0;
  for (const objects::ResourceInfo* r : options_.resources) {
    if (HasVerb(*r, "deletecollection")) {
      RETURN_IF_ERROR(options_.api->DeleteCollection(*r, ns, opts));
    } else {
      ASSIGN_OR_RETURN(std::vector<ObjectPtr> items,
                       options_.api->List(*r, ns));
      for (const ObjectPtr& item : items) {
        if (objects::IsBeingDeleted(*objects::GetObjectMeta(*item))) continue;
        Status s = options_.api->Delete(*r, ns, objects::Name(*item), opts);
        if (!s.ok() && !informer::IsNotFound(s)) return s;
      }
    }
    ASSIGN_OR_RETURN(std::vector<ObjectPtr> left, options_.api->List(*r, ns));
    remaining += static_cast<int64_t>(left.size());
  }
  return remaining;
}

StatusOr<int64_t> NamespaceController::DeleteCustomContent(
    const std::string& ns) {
  std::vector<std::string> failed_groups;
  ASSIGN_OR_RETURN(std::vector<DiscoveredResource> discovered,
                   DiscoverGcResources(options_.client, &failed_groups));
  metav1::DeleteOptions opts;
  opts.set_propagationpolicy("Background");
  int64_t remaining = 0;
  for (const DiscoveredResource& d : discovered) {
    // Built-in resources are emptied by DeleteContent through their types.
    if (!d.namespaced ||
        objects::Scheme::Default().FindResource(d.gvr.group, d.gvr.version,
                                                d.gvr.resource) != nullptr) {
      continue;
    }
    informer::DynamicResourceClient objects =
        dynamic_->Resource(d.gvr).Namespace(ns);
    if (d.deletecollection) {
      Status s = objects.DeleteCollection(opts);
      // The CRD may have gone since discovery answered.
      if (!s.ok() && !informer::IsNotFound(s)) return s;
    } else {
      StatusOr<informer::UnstructuredList> items = objects.List();
      if (informer::IsNotFound(items.status())) continue;
      RETURN_IF_ERROR(items.status());
      for (const informer::Unstructured& item : items->items) {
        if (item.Nested({"metadata", "deletionTimestamp"}) != nullptr) continue;
        Status s = objects.Delete(item.Name(), opts);
        if (!s.ok() && !informer::IsNotFound(s)) return s;
      }
    }
    StatusOr<informer::UnstructuredList> left = objects.List();
    if (informer::IsNotFound(left.status())) continue;
    RETURN_IF_ERROR(left.status());
    remaining += static_cast<int64_t>(left->items.size());
  }
  if (!failed_groups.empty()) {
    return UnavailableError("namespace " + ns + ": discovery failed for " +
                            StrJoin(failed_groups, ", ") +
                            "; their objects may remain");
  }
  return remaining;
}

}  // namespace kplane::controllers
