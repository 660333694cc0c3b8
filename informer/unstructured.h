// Unstructured: an API object of any kind — a custom resource, or a
// built-in one read without its compiled-in type — as a JSON document
// (client-go's unstructured.Unstructured). The dynamic client
// (dynamic_client.h) reads and writes these.
//
//   StatusOr<Unstructured> w = Unstructured::Parse(
//       R"({"apiVersion":"example.com/v1","kind":"Widget",
//           "metadata":{"name":"w1","namespace":"default"},
//           "spec":{"size":3}})");
//   w->SetNestedString({"spec", "color"}, "blue");
//   std::optional<int64_t> size = w->NestedInt64({"spec", "size"});  // 3
//   std::string text = w->ToJson();
//
// Informers cache objects as immutable protobuf messages (ObjectPtr), and
// the whole informer stack (reflector, indexer, listers, selectors) reads
// their metadata through objects/meta.h. A dynamic informer therefore
// caches an UnstructuredObject message (informer/unstructured.proto): the
// object's ObjectMeta, decoded once when it arrives, next to the object's
// JSON text. The typed path is untouched: keys, the namespace index and
// label selectors work on these as on any kind. Handlers read an object's
// other fields by parsing it:
//
//   StatusOr<Unstructured> u = Unstructured::FromObject(*obj);  // one parse
//
// An UnstructuredKind (a KindInfo whose messages are UnstructuredObjects)
// is how the REST client tells such a resource from a compiled-in one: it
// then asks for JSON, keeps each object's text and skips the kind check
// (the dynamic client knows a resource, not its kind).
//
// Thread-safety: an Unstructured is a value (one thread at a time); the
// free functions are reentrant. Errors: InvalidArgument for text that is
// not a JSON object, a metadata member that does not decode as ObjectMeta,
// or a message that is not an UnstructuredObject.
#ifndef KPLANE_INFORMER_UNSTRUCTURED_H_
#define KPLANE_INFORMER_UNSTRUCTURED_H_

#include <google/protobuf/message.h>
#include <rapidjson/document.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"
#include "informer/unstructured.pb.h"
#include "objects/scheme.h"

namespace kplane::informer {

// A path of member names into a JSON object: {"spec", "template", "x"}.
using FieldPath = std::initializer_list<std::string_view>;

class Unstructured {
 public:
  // An empty object: {}.
  Unstructured();
  Unstructured(Unstructured&&) = default;
  Unstructured& operator=(Unstructured&&) = default;
  Unstructured(const Unstructured& other);
  Unstructured& operator=(const Unstructured& other);

  // `json` must be one JSON object (base/json.h's depth limit applies).
  static StatusOr<Unstructured> Parse(std::string_view json);
  // A copy of `value`, which must be a JSON object.
  static StatusOr<Unstructured> FromValue(const rapidjson::Value& value);
  // The object an informer cached (an UnstructuredObject message).
  static StatusOr<Unstructured> FromObject(
      const google::protobuf::Message& obj);

  // The document (always an object). Values added must use allocator().
  rapidjson::Value& value() { return doc_; }
  const rapidjson::Value& value() const { return doc_; }
  rapidjson::Document::AllocatorType& allocator() {
    return doc_.GetAllocator();
  }

  // Top-level and metadata strings; "" when absent or not a string.
  std::string ApiVersion() const;
  std::string Kind() const;
  std::string Name() const;
  std::string Namespace() const;
  std::string ResourceVersion() const;
  std::string Uid() const;
  void SetApiVersion(std::string_view v);
  void SetKind(std::string_view v);
  void SetName(std::string_view v);
  void SetNamespace(std::string_view v);
  void SetResourceVersion(std::string_view v);
  // metadata.labels / metadata.annotations (string values only).
  std::map<std::string, std::string> Labels() const;
  std::map<std::string, std::string> Annotations() const;

  // The value at `path`, or nullptr when a member is missing or an
  // intermediate value is not an object.
  const rapidjson::Value* Nested(FieldPath path) const;
  std::optional<std::string> NestedString(FieldPath path) const;
  std::optional<int64_t> NestedInt64(FieldPath path) const;
  std::optional<bool> NestedBool(FieldPath path) const;
  // A map of strings (e.g. a ConfigMap's data); nullopt if absent, not an
  // object, or holding a value that is not a string.
  std::optional<std::map<std::string, std::string>> NestedStringMap(
      FieldPath path) const;
  // Sets the value at `path`, creating (or replacing non-object values
  // with) objects on the way; `value` is moved from and must have been
  // allocated with allocator() (or hold no allocations).
  void SetNested(FieldPath path, rapidjson::Value& value);
  void SetNestedString(FieldPath path, std::string_view v);
  void SetNestedInt64(FieldPath path, int64_t v);
  void SetNestedStringMap(FieldPath path,
                          const std::map<std::string, std::string>& m);
  // Removes the member at `path`; false if it was not there.
  bool RemoveNested(FieldPath path);

  // Compact JSON, members in document order.
  std::string ToJson() const;

 private:
  explicit Unstructured(rapidjson::Document doc) : doc_(std::move(doc)) {}
  std::string MetadataString(std::string_view field) const;

  rapidjson::Document doc_;
};

// A LIST answer of the dynamic client (client-go's UnstructuredList).
struct UnstructuredList {
  std::string api_version;  // of the list ("example.com/v1")
  std::string kind;         // "WidgetList"
  std::string resource_version;
  std::string continue_token;  // "" on the last page
  std::optional<int64_t> remaining_item_count;
  std::vector<Unstructured> items;
};

// A LIST response body: {"apiVersion","kind","metadata":{resourceVersion,
// continue, remainingItemCount},"items":[...]}; every item must be an
// object ("items": null is an empty list).
StatusOr<UnstructuredList> ParseUnstructuredList(std::string_view json);

// ---- The informer's representation ----------------------------------------

// The UnstructuredObject for one object (a JSON object): its metadata is
// decoded with the codec's ObjectMeta rules; `json` is kept as the text.
StatusOr<std::shared_ptr<const UnstructuredObject>> NewUnstructuredObject(
    std::string json);
// The same from an already-parsed object (serialised compactly).
StatusOr<std::shared_ptr<const UnstructuredObject>> NewUnstructuredObject(
    const rapidjson::Value& object);

// A kind whose objects are UnstructuredObjects, for a group-version.
// `kind` may be "" (a resource named by group/version/resource only).
objects::KindInfo MakeUnstructuredKind(objects::GroupVersion gv,
                                       std::string kind = {});
bool IsUnstructuredKind(const objects::KindInfo& kind);

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_UNSTRUCTURED_H_
