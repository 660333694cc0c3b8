// Internal to the codec: per-message tables that say how each field maps to
// JSON, built once per descriptor from the descriptor and the
// kplane.schema options (schemas/k8s/options.proto), then cached forever.
//
// Worked example. For k8s.io.api.core.v1.Probe the table is
//
//   fields (encode order)                 keys (decode lookup)
//   0 handler   message, inline ────────► "exec"      → handler.exec
//   1 initialDelaySeconds int32 NONZERO   "httpGet"   → handler.httpGet
//   2 timeoutSeconds ...                  "tcpSocket" → handler.tcpSocket
//   ...                                   "grpc"      → handler.grpc
//                                         "initialDelaySeconds" → field 1 ...
//
// so `{"httpGet":{...},"periodSeconds":5}` decodes into
// probe.handler.httpGet and probe.periodSeconds, and encoding walks `fields`
// and splices the inlined handler's members into the probe's object.
//
// Thread-safety: TableFor() may be called from any thread; tables are
// immutable once returned.
#ifndef KPLANE_OBJECTS_FIELD_TABLE_H_
#define KPLANE_OBJECTS_FIELD_TABLE_H_

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kplane::objects::internal {

// Messages with a JSON form of their own.
enum class Special : uint8_t {
  kNone,
  kTime,         // meta.v1.Time
  kMicroTime,    // meta.v1.MicroTime
  kDuration,     // meta.v1.Duration
  kIntOrString,  // util.intstr.IntOrString
  kQuantity,     // api.resource.Quantity
  kRawJson,      // runtime.RawExtension, meta.v1.FieldsV1 (bytes field 1)
};

enum class Emit : uint8_t { kNonZero, kIfSet, kAlways };

struct MessageTable;

struct FieldEntry {
  const google::protobuf::FieldDescriptor* field = nullptr;
  std::string_view name;  // JSON member name (== proto field name)
  Emit emit = Emit::kNonZero;
  bool repeated = false;  // true for maps too
  bool is_map = false;
  bool is_inline = false;
  // The element type for repeated fields, the value type for maps.
  const google::protobuf::FieldDescriptor* value = nullptr;
  const google::protobuf::FieldDescriptor* map_key = nullptr;
  Special special = Special::kNone;     // of the value's message type
  const MessageTable* table = nullptr;  // value's message table, if any
};

// One JSON member name a message accepts.
struct KeyEntry {
  std::string_view name;
  // The field to set, and the inline field it lives under (or nullptr).
  const FieldEntry* field = nullptr;
  const FieldEntry* via_inline = nullptr;
  // "kind" / "apiVersion" on a TypeMeta-embedding message (field null).
  uint8_t type_meta_member = 0;  // 0 none, 1 kind, 2 apiVersion
};

struct MessageTable {
  const google::protobuf::Descriptor* descriptor = nullptr;
  Special special = Special::kNone;
  bool type_meta = false;
  // Special::kRawJson: the bytes field holding the raw JSON.
  const google::protobuf::FieldDescriptor* raw_field = nullptr;
  // Special messages: their fields by number (index 0 unused), e.g. Time
  // seconds = [1], nanos = [2]; IntOrString type/intVal/strVal = [1..3].
  const google::protobuf::FieldDescriptor* special_fields[4] = {};
  std::vector<FieldEntry> fields;  // declaration order = Go struct order
  std::vector<KeyEntry> keys;      // index = duplicate-detection slot
  std::unordered_map<std::string_view, int> key_index;

  const KeyEntry* FindKey(std::string_view name, int* slot) const {
    auto it = key_index.find(name);
    if (it == key_index.end()) return nullptr;
    *slot = it->second;
    return &keys[static_cast<size_t>(it->second)];
  }
};

// The table for `descriptor`, built on first use.
const MessageTable* TableFor(const google::protobuf::Descriptor* descriptor);

Special SpecialOf(const google::protobuf::Descriptor* descriptor);

}  // namespace kplane::objects::internal

#endif  // KPLANE_OBJECTS_FIELD_TABLE_H_
