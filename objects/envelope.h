// The protobuf envelope Kubernetes uses for stored values and for
// `application/vnd.kubernetes.protobuf` bodies:
//
//   "k8s\x00" | runtime.Unknown{ typeMeta{apiVersion, kind}, raw,
//                                contentEncoding, contentType }
//
// `raw` holds the object message (e.g. a serialized k8s.io.api.core.v1.Pod);
// contentEncoding and contentType are empty for plain protobuf. Example, a
// ConfigMap as kubectl 1.32 POSTs it:
//
//   6b 38 73 00                      "k8s\0"
//   0a 0f  0a 02 "v1"  12 09 "ConfigMap"       typeMeta (field 1)
//   12 NN  <ConfigMap bytes>                   raw (field 2)
//   1a 00  22 00                               contentEncoding, contentType
//
// We write the two empty strings too, so our envelope bytes equal
// kube-apiserver's. Object bytes are serialized deterministically (map
// entries sorted by key, as Go's generated marshallers do), so equal objects
// store as equal bytes.
//
// Thread-safety: pure functions. Errors: DataLoss for bytes that are not an
// envelope or do not parse; InvalidArgument for an envelope whose content is
// not plain protobuf.
#ifndef KPLANE_OBJECTS_ENVELOPE_H_
#define KPLANE_OBJECTS_ENVELOPE_H_

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "objects/codec.h"
#include "base/statusor.h"

namespace kplane::objects {

inline constexpr std::string_view kEnvelopeMagic{"k8s\0", 4};

bool HasEnvelopeMagic(std::string_view data);

// Deterministic protobuf bytes of `msg`.
std::string SerializeDeterministic(const google::protobuf::Message& msg);

// "k8s\0" + Unknown{type_meta, raw = bytes of obj}.
std::string EncodeEnvelope(const google::protobuf::Message& obj,
                           const TypeMeta& type_meta);

struct Envelope {
  TypeMeta type_meta;
  std::string raw;  // the object's protobuf bytes
  std::string content_encoding;
  std::string content_type;
};
StatusOr<Envelope> DecodeEnvelope(std::string_view data);

// Decodes the envelope and parses its object into `obj` (cleared first).
// Returns the envelope's apiVersion and kind; checking them against `obj`'s
// type is the caller's business (objects/scheme.h).
//
// With `discard_unknown`, fields `obj`'s schema does not declare are
// dropped, as Kubernetes' Go decoder drops them: use it for bodies from
// clients. Values we stored ourselves hold no such fields, and skipping the
// walk makes a read about 3x cheaper (objects/README.md has the figures).
StatusOr<TypeMeta> DecodeEnvelopeInto(std::string_view data,
                                      google::protobuf::Message* obj,
                                      bool discard_unknown = true);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_ENVELOPE_H_
