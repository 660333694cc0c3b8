#include "apiserver/storage_versions.h"

#include "objects/events_types.h"

namespace kplane::apiserver {

namespace {

bool IsEventsV1(const objects::ResourceInfo& r) {
  return r.gv.group == "events.k8s.io" && r.resource == "events";
}

}  // namespace

std::shared_ptr<const StorageConversion> StorageConversionFor(
    const objects::ResourceInfo& served) {
  if (!IsEventsV1(served)) return nullptr;
  static const std::shared_ptr<const StorageConversion> events = [] {
    auto c = std::make_shared<StorageConversion>();
    c->stored_kind = objects::Scheme::Default().FindKind("v1", "Event");
    c->to_stored = [](const google::protobuf::Message& m) -> MutableObject {
      return std::make_unique<objects::corev1::Event>(objects::ToCoreEvent(
          static_cast<const objects::eventsv1::Event&>(m)));
    };
    c->from_stored = [](const google::protobuf::Message& m) -> MutableObject {
      return std::make_unique<objects::eventsv1::Event>(
          objects::ToEventsV1Event(
              static_cast<const objects::corev1::Event&>(m)));
    };
    return c;
  }();
  return events;
}

const objects::ResourceInfo& StoredResource(
    const objects::ResourceInfo& served) {
  std::shared_ptr<const StorageConversion> c = StorageConversionFor(served);
  if (c == nullptr) return served;
  return *objects::Scheme::Default().ResourceForKind(*c->stored_kind);
}

}  // namespace kplane::apiserver
