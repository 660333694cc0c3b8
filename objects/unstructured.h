// Unstructured objects: custom resources and CustomResourceDefinitions as the
// apiserver holds them (schemas/k8s/unstructured.proto): the typed ObjectMeta
// plus every other member of the JSON object kept as JSON text in
// `content`. The JSON codec (objects/codec.h) writes one as the plain object
//   {"apiVersion":"example.com/v1","kind":"Widget","metadata":{...},
//    "spec":{...},"status":{...}}
// and splits such an object back the same way, so the generic machinery
// (ObjectStore, watch cache, selectors, finalizers, owner references, JSON
// and merge patches) works on them through their metadata.
//
//   objects::Unstructured u;
//   CHECK_OK(objects::DecodeJson(body, &u));
//   rapidjson::Document content = objects::ContentOf(u);   // spec, status ...
//   content["spec"]["replicas"].SetInt(3);
//   objects::SetContent(&u, content);
//
// Thread-safety: functions over caller-owned values. Errors: none (content
// that is not a JSON object reads as an empty object).
#ifndef KPLANE_OBJECTS_UNSTRUCTURED_H_
#define KPLANE_OBJECTS_UNSTRUCTURED_H_

#include <google/protobuf/message.h>
#include <rapidjson/document.h>

#include "schemas/k8s/unstructured.pb.h"

namespace kplane::objects {

using Unstructured = ::kplane::unstructured::Unstructured;
using UnstructuredList = ::kplane::unstructured::UnstructuredList;

// Whether `msg` is an Unstructured.
bool IsUnstructured(const google::protobuf::Message& msg);

// The members of `u` other than apiVersion, kind and metadata, as a JSON
// object (empty when there are none).
rapidjson::Document ContentOf(const Unstructured& u);
// Replaces them with the members of `content` (a JSON object; apiVersion,
// kind and metadata members in it are ignored).
void SetContent(Unstructured* u, const rapidjson::Value& content);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_UNSTRUCTURED_H_
