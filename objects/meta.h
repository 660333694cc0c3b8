// Object and list metadata of any API object, through reflection: every kind
// in schemas/k8s has `metadata` at field 1 (ObjectMeta for objects, ListMeta
// for lists) and lists have `items` at field 2. Code that handles objects
// generically (storage, watch cache, controllers' shared plumbing) uses these
// instead of knowing the concrete type.
//
//   metav1::ObjectMeta* meta = MutableObjectMeta(&deployment);
//   meta->set_resourceversion("42");
//   (*meta->mutable_labels())["app"] = "web";
//
// Generated accessors are the lower-cased proto names: resourceversion(),
// deletiontimestamp(), ownerreferences(), namespace_() (a C++ keyword).
//
// Thread-safety: like the messages themselves (const access from many
// threads, mutation from one). Errors: the accessors return nullptr for a
// message that is not an object (or not a list); the helpers below CHECK.
#ifndef KPLANE_OBJECTS_META_H_
#define KPLANE_OBJECTS_META_H_

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "objects/types.h"

namespace kplane::objects {

// ObjectMeta of an object, or nullptr if `obj` has no ObjectMeta at field 1.
const metav1::ObjectMeta* GetObjectMeta(const google::protobuf::Message& obj);
metav1::ObjectMeta* MutableObjectMeta(google::protobuf::Message* obj);
bool HasObjectMeta(const google::protobuf::Descriptor* d);

// ListMeta and items of a list kind (PodList, ...), or nullptr / 0.
const metav1::ListMeta* GetListMeta(const google::protobuf::Message& list);
metav1::ListMeta* MutableListMeta(google::protobuf::Message* list);
bool IsList(const google::protobuf::Descriptor* d);
int ListSize(const google::protobuf::Message& list);
const google::protobuf::Message& ListItem(const google::protobuf::Message& list,
                                          int index);
google::protobuf::Message* MutableListItem(google::protobuf::Message* list,
                                           int index);
google::protobuf::Message* AddListItem(google::protobuf::Message* list);
// The item type of a list kind (Pod for PodList), or nullptr.
const google::protobuf::Descriptor* ListItemType(
    const google::protobuf::Descriptor* list);

// Shorthands for the metadata fields generic code touches most. They CHECK
// that `obj` is an object.
const std::string& Name(const google::protobuf::Message& obj);
const std::string& Namespace(const google::protobuf::Message& obj);
const std::string& Uid(const google::protobuf::Message& obj);
const std::string& ResourceVersion(const google::protobuf::Message& obj);
int64_t Generation(const google::protobuf::Message& obj);
void SetResourceVersion(google::protobuf::Message* obj, std::string_view rv);

// "namespace/name", or "name" for cluster-scoped objects (client-go's
// MetaNamespaceKeyFunc).
std::string NamespacedName(const metav1::ObjectMeta& meta);

// Metadata semantics.
// True once deletion has started (deletionTimestamp set and not zero).
bool IsBeingDeleted(const metav1::ObjectMeta& meta);
// The owner reference with controller=true, or nullptr.
const metav1::OwnerReference* ControllerRef(const metav1::ObjectMeta& meta);
bool HasFinalizer(const metav1::ObjectMeta& meta, std::string_view finalizer);
// Both return whether the list changed.
bool AddFinalizer(metav1::ObjectMeta* meta, std::string_view finalizer);
bool RemoveFinalizer(metav1::ObjectMeta* meta, std::string_view finalizer);
// The label / annotation value, or "" when absent.
std::string_view Label(const metav1::ObjectMeta& meta, const std::string& key);
std::string_view Annotation(const metav1::ObjectMeta& meta,
                            const std::string& key);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_META_H_
