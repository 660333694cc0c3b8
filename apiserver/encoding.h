// Response bodies: objects, lists, server-side-printed Tables,
// PartialObjectMetadata, metav1.Status errors and watch event frames, in
// the representation content negotiation chose (negotiation.h).
//
// RenderList writes a whole list body: straight from the shared objects of
// a ListResult into one buffer (no copy into a PodList message) for JSON;
// YAML and protobuf build the list message. The LIST handler streams JSON
// and protobuf lists instead (list_stream.h, the same bytes piece by
// piece); RenderList serves Tables, YAML and deletecollection, and is the
// reference the streamed bytes are tested against. A JSON list looks like
// kube-apiserver's:
//   {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"114",
//    "continue":"…","remainingItemCount":3},"items":[{…},…]}
// (items carry no kind/apiVersion; "items" is [] when empty, never null).
//
// Tables (meta.k8s.io/v1 or v1beta1) take columns and cells from the
// resource's Strategy; each row's "object" is a PartialObjectMetadata
// (includeObject=Metadata, the default), the full object (Object) or absent
// (None).
//
// Watch frames: JSON is one event per line,
//   {"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",…}}\n
// where an event that carries its object's JSON from the watch cache
// (WatchEvent::object_json) has it copied after kind and apiVersion, the
// same bytes as encoding the object again.
// Table watches wrap each object in a one-row Table whose columnDefinitions
// appear only in the watcher's first event (null afterwards), as
// kube-apiserver's watchEmbeddedEncoder does; BOOKMARK and ERROR objects are
// never wrapped. Protobuf watches (Content-Type
// application/vnd.kubernetes.protobuf;stream=watch) frame each event as a
// 4-byte big-endian length followed by a WatchEvent message (no envelope)
// whose object.raw is the enveloped object, or its enveloped
// PartialObjectMetadata for a metadata watch (BOOKMARKs too; the form kube's
// metadata informers ask for). PartialObjectMetadata and its list exist as
// JSON and protobuf; Tables as JSON only.
//
// Thread-safety: pure functions over immutable inputs.
#ifndef KPLANE_APISERVER_ENCODING_H_
#define KPLANE_APISERVER_ENCODING_H_

#include <google/protobuf/message.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

#include "apiserver/cacher/cacher.h"
#include "apiserver/errors.h"
#include "apiserver/negotiation.h"
#include "apiserver/registry/strategy.h"
#include "apiserver/storage/object_store.h"
#include "base/clock.h"
#include "objects/scheme.h"

namespace kplane::apiserver {

// How to render one response.
struct RenderOptions {
  Negotiated negotiated;
  const objects::ResourceInfo* resource = nullptr;  // for lists, tables
  const Strategy* strategy = nullptr;               // for tables
  std::string include_object;  // "", "Metadata", "Object", "None"
  WallTime now;                // for AGE cells
};

// The apiVersion/kind written for an object of this message type (Scheme's
// canonical kind: Pod -> v1 Pod, Scale -> autoscaling/v1 Scale).
objects::TypeMeta TypeMetaOf(const google::protobuf::Message& obj);

// One object (GET, writes). Tables get one row.
std::string RenderObject(const RenderOptions& opts,
                         const google::protobuf::Message& obj);
// A list of the resource's objects.
std::string RenderList(const RenderOptions& opts, const ListResult& list);
// The ListMeta of a list response: resourceVersion, continue, and
// remainingItemCount (only with a continue token).
objects::metav1::ListMeta ListMetaOf(const ListResult& list);
// One item of a JSON list as RenderList writes it: the object without
// kind/apiVersion (a custom resource's with them), or its
// PartialObjectMetadata (ResponseShape::kMetadata). Not for Tables.
std::string ListItemJson(const RenderOptions& opts,
                         const google::protobuf::Message& item);
// The same into a caller's writer (one value; Reset() it between items).
void WriteListItemJson(const RenderOptions& opts,
                       const google::protobuf::Message& item,
                       rapidjson::Writer<rapidjson::StringBuffer>* writer);
// A list of objects of the resource as its list kind, or as a
// PartialObjectMetadataList when that was negotiated (deletecollection
// answers the deleted objects); never a Table (the caller negotiates
// plain JSON instead).
std::string RenderItems(const RenderOptions& opts,
                        const std::vector<ObjectPtr>& items, int64_t revision);

// A metav1.Status error body in `media` (Table/metadata requests get JSON).
std::string RenderError(objects::MediaType media, const ApiError& error);
// A success Status (delete of most kinds):
//   {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
//    "details":{"name":"x","group":"apps","kind":"deployments","uid":"…"}}
std::string RenderSuccessStatus(objects::MediaType media, std::string_view name,
                                std::string_view group, std::string_view kind,
                                std::string_view uid);

// Watch stream Content-Type for the negotiated form.
std::string WatchContentType(const Negotiated& n);
// One framed watch event. `first` marks the watcher's first event (Table
// column definitions). The cache key distinguishes forms so that events
// shared by many watchers are encoded once per form (WatchEvent::Encoded).
std::string WatchFormatKey(const RenderOptions& opts, bool first);
std::string RenderWatchEvent(const RenderOptions& opts, const WatchEvent& event,
                             bool first);
// The ERROR event carrying a Status.
std::string RenderWatchError(const RenderOptions& opts, const ApiError& error);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_ENCODING_H_
