// Stored objects the patch and apply fuzz targets modify: a Pod and a
// Deployment as the apiserver holds them (labels, annotations, containers
// with ports and env, managedFields of two managers), so strategic merge
// keys, list orders and field ownership all have something to act on.
//
// Thread-safety: Live() builds each object once (static); read-only after.
#ifndef KPLANE_FUZZ_LIVE_OBJECTS_H_
#define KPLANE_FUZZ_LIVE_OBJECTS_H_

#include <google/protobuf/message.h>

#include <memory>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "objects/codec.h"
#include "objects/scheme.h"

namespace kplane::fuzz {

inline constexpr std::string_view kLivePod = R"({
 "apiVersion":"v1","kind":"Pod",
 "metadata":{"name":"web-0","namespace":"default","uid":"u1",
  "resourceVersion":"7","labels":{"app":"web","tier":"fe"},
  "annotations":{"a":"1"},"finalizers":["f/1"],
  "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",
   "name":"web-1","uid":"u0","controller":true}],
  "managedFields":[{"manager":"kubectl","operation":"Apply",
   "apiVersion":"v1","time":"2026-11-29T08:37:41Z","fieldsType":"FieldsV1",
   "fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{
    "f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},
     "f:name":{}}}}}},
   {"manager":"kubelet","operation":"Update","apiVersion":"v1",
   "time":"2026-11-29T08:37:42Z","fieldsType":"FieldsV1",
   "fieldsV1":{"f:status":{"f:phase":{}}},"subresource":"status"}]},
 "spec":{"containers":[{"name":"nginx","image":"nginx:1.27",
   "ports":[{"containerPort":80,"protocol":"TCP"}],
   "env":[{"name":"A","value":"1"}],
   "resources":{"limits":{"cpu":"500m","memory":"1Gi"}}},
  {"name":"side","image":"busybox","args":["sleep","1"]}],
  "tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}],
  "volumes":[{"name":"v","emptyDir":{}}],"nodeName":"n1"},
 "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],
  "podIP":"10.0.0.1"}})";

inline constexpr std::string_view kLiveDeployment = R"({
 "apiVersion":"apps/v1","kind":"Deployment",
 "metadata":{"name":"web","namespace":"default","uid":"u2",
  "resourceVersion":"9","generation":2,"labels":{"app":"web"},
  "managedFields":[{"manager":"kubectl","operation":"Apply",
   "apiVersion":"apps/v1","time":"2026-11-29T08:37:41Z",
   "fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{},
    "f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{
     ".":{},"f:image":{}}}}}}}}]},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
  "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%",
   "maxUnavailable":1}},
  "template":{"metadata":{"labels":{"app":"web"}},
   "spec":{"containers":[{"name":"nginx","image":"nginx:1.27",
    "ports":[{"containerPort":80}]}]}}},
 "status":{"replicas":3,"readyReplicas":3}})";

struct Live {
  const objects::KindInfo* kind;
  std::unique_ptr<google::protobuf::Message> obj;
};

inline Live MakeLive(std::string_view api_version, std::string_view kind,
                     std::string_view json) {
  Live l;
  l.kind = objects::Scheme::Default().FindKind(api_version, kind);
  if (l.kind == nullptr) Fail("kind missing from the scheme");
  l.obj = l.kind->New();
  if (!objects::DecodeJson(json, l.obj.get()).ok()) {
    Fail("a live object does not decode");
  }
  return l;
}

// The Pod, then the Deployment.
inline const Live* LiveObjects() {
  static const Live* const live = new Live[2]{
      MakeLive("v1", "Pod", kLivePod),
      MakeLive("apps/v1", "Deployment", kLiveDeployment),
  };
  return live;
}

}  // namespace kplane::fuzz

#endif  // KPLANE_FUZZ_LIVE_OBJECTS_H_
