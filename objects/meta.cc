#include "objects/meta.h"

#include <algorithm>

#include "objects/time.h"
#include "base/logging.h"

namespace kplane::objects {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

namespace {

const FieldDescriptor* MetadataField(const Descriptor* d,
                                     const Descriptor* type) {
  const FieldDescriptor* f = d->FindFieldByNumber(1);
  if (f == nullptr || f->is_repeated() || f->message_type() != type) {
    return nullptr;
  }
  return f;
}

const FieldDescriptor* ItemsField(const Descriptor* d) {
  if (MetadataField(d, metav1::ListMeta::descriptor()) == nullptr) {
    return nullptr;
  }
  const FieldDescriptor* f = d->FindFieldByNumber(2);
  if (f == nullptr || !f->is_repeated() || f->is_map() ||
      f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
    return nullptr;
  }
  return f;
}

const metav1::ObjectMeta& MustMeta(const Message& obj) {
  const metav1::ObjectMeta* m = GetObjectMeta(obj);
  CHECK(m != nullptr) << obj.GetDescriptor()->full_name()
                      << " has no ObjectMeta";
  return *m;
}

}  // namespace

bool HasObjectMeta(const Descriptor* d) {
  return MetadataField(d, metav1::ObjectMeta::descriptor()) != nullptr;
}

const metav1::ObjectMeta* GetObjectMeta(const Message& obj) {
  const FieldDescriptor* f =
      MetadataField(obj.GetDescriptor(), metav1::ObjectMeta::descriptor());
  if (f == nullptr) return nullptr;
  return google::protobuf::DynamicCastToGenerated<metav1::ObjectMeta>(
      &obj.GetReflection()->GetMessage(obj, f));
}

metav1::ObjectMeta* MutableObjectMeta(Message* obj) {
  const FieldDescriptor* f =
      MetadataField(obj->GetDescriptor(), metav1::ObjectMeta::descriptor());
  if (f == nullptr) return nullptr;
  return google::protobuf::DynamicCastToGenerated<metav1::ObjectMeta>(
      obj->GetReflection()->MutableMessage(obj, f));
}

const metav1::ListMeta* GetListMeta(const Message& list) {
  const FieldDescriptor* f =
      MetadataField(list.GetDescriptor(), metav1::ListMeta::descriptor());
  if (f == nullptr) return nullptr;
  return google::protobuf::DynamicCastToGenerated<metav1::ListMeta>(
      &list.GetReflection()->GetMessage(list, f));
}

metav1::ListMeta* MutableListMeta(Message* list) {
  const FieldDescriptor* f =
      MetadataField(list->GetDescriptor(), metav1::ListMeta::descriptor());
  if (f == nullptr) return nullptr;
  return google::protobuf::DynamicCastToGenerated<metav1::ListMeta>(
      list->GetReflection()->MutableMessage(list, f));
}

bool IsList(const Descriptor* d) { return ItemsField(d) != nullptr; }

int ListSize(const Message& list) {
  const FieldDescriptor* f = ItemsField(list.GetDescriptor());
  return f == nullptr ? 0 : list.GetReflection()->FieldSize(list, f);
}

const Message& ListItem(const Message& list, int index) {
  const FieldDescriptor* f = ItemsField(list.GetDescriptor());
  CHECK(f != nullptr) << list.GetDescriptor()->full_name() << " is no list";
  return list.GetReflection()->GetRepeatedMessage(list, f, index);
}

Message* MutableListItem(Message* list, int index) {
  const FieldDescriptor* f = ItemsField(list->GetDescriptor());
  CHECK(f != nullptr) << list->GetDescriptor()->full_name() << " is no list";
  return list->GetReflection()->MutableRepeatedMessage(list, f, index);
}

Message* AddListItem(Message* list) {
  const FieldDescriptor* f = ItemsField(list->GetDescriptor());
  CHECK(f != nullptr) << list->GetDescriptor()->full_name() << " is no list";
  return list->GetReflection()->AddMessage(list, f);
}

const Descriptor* ListItemType(const Descriptor* list) {
  const FieldDescriptor* f = ItemsField(list);
  return f == nullptr ? nullptr : f->message_type();
}

const std::string& Name(const Message& obj) { return MustMeta(obj).name(); }
const std::string& Namespace(const Message& obj) {
  return MustMeta(obj).namespace_();
}
const std::string& Uid(const Message& obj) { return MustMeta(obj).uid(); }
const std::string& ResourceVersion(const Message& obj) {
  return MustMeta(obj).resourceversion();
}
int64_t Generation(const Message& obj) { return MustMeta(obj).generation(); }

void SetResourceVersion(Message* obj, std::string_view rv) {
  metav1::ObjectMeta* m = MutableObjectMeta(obj);
  CHECK(m != nullptr) << obj->GetDescriptor()->full_name()
                      << " has no ObjectMeta";
  m->set_resourceversion(std::string(rv));
}

std::string NamespacedName(const metav1::ObjectMeta& meta) {
  if (meta.namespace_().empty()) return meta.name();
  return meta.namespace_() + "/" + meta.name();
}

bool IsBeingDeleted(const metav1::ObjectMeta& meta) {
  return meta.has_deletiontimestamp() && !IsZero(meta.deletiontimestamp());
}

const metav1::OwnerReference* ControllerRef(const metav1::ObjectMeta& meta) {
  for (const metav1::OwnerReference& ref : meta.ownerreferences()) {
    if (ref.controller()) return &ref;
  }
  return nullptr;
}

bool HasFinalizer(const metav1::ObjectMeta& meta, std::string_view finalizer) {
  return std::find(meta.finalizers().begin(), meta.finalizers().end(),
                   finalizer) != meta.finalizers().end();
}

bool AddFinalizer(metav1::ObjectMeta* meta, std::string_view finalizer) {
  if (HasFinalizer(*meta, finalizer)) return false;
  meta->add_finalizers(std::string(finalizer));
  return true;
}

bool RemoveFinalizer(metav1::ObjectMeta* meta, std::string_view finalizer) {
  auto* list = meta->mutable_finalizers();
  const int before = list->size();
  list->erase(std::remove(list->begin(), list->end(), finalizer), list->end());
  return list->size() != before;
}

std::string_view Label(const metav1::ObjectMeta& meta, const std::string& key) {
  auto it = meta.labels().find(key);
  return it == meta.labels().end() ? std::string_view() : it->second;
}

std::string_view Annotation(const metav1::ObjectMeta& meta,
                            const std::string& key) {
  auto it = meta.annotations().find(key);
  return it == meta.annotations().end() ? std::string_view() : it->second;
}

}  // namespace kplane::objects
