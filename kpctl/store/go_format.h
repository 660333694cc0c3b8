// Formatting helpers that reproduce, byte for byte, what etcdctl 3.4 (a Go
// program) prints: Go's encoding/json of etcd's generated structs, Go's
// time.Duration and %x formatting, go-humanize's byte sizes, and
// tablewriter's ASCII tables.
//
//   GoJsonString("a<b")               -> "\"a\\u003cb\""
//   GoDuration(nanoseconds(4735173))  -> "4.735173ms"
//   HumanizeBytes(20480)              -> "20 kB"
//   GoHex(-1234, 16, '0')             -> "-0000000000004d2"
//
//   MessageToGoJson(range_response) ->
//     {"header":{"cluster_id":1,...},"kvs":[{"key":"Zm9v",...}],"count":1}
//
// MessageToGoJson walks a protobuf message the way encoding/json walks the
// gogoproto struct etcdctl holds: fields in declaration order under their
// proto names (the generated json tags), zero values omitted (omitempty),
// integers of every width as JSON numbers, bytes as standard base64, enums
// as numbers, a present sub-message even when empty ({}), and a oneof as
// Go's wrapper: {"Response":{"ResponsePut":{...}}}.
//
// Thread-safety: pure functions.
#ifndef KPLANE_KPCTL_STORE_GO_FORMAT_H_
#define KPLANE_KPCTL_STORE_GO_FORMAT_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"

namespace kplane::kpctl {

// A JSON string literal as Go's encoding/json writes it (HTML-safe: <, >,
// & escaped; U+2028/U+2029 escaped; invalid UTF-8 replaced by U+FFFD).
std::string GoJsonString(std::string_view s);

// The message as encoding/json prints etcd's gogoproto struct.
std::string MessageToGoJson(const google::protobuf::Message& msg);
// The fields of `msg` only, without braces (for structs that embed a
// message, e.g. `{"cluster_id":1,...` of an embedded *ResponseHeader).
// Returns "" when every field is zero.
std::string MessageFieldsToGoJson(const google::protobuf::Message& msg);

// Go's time.Duration.String().
std::string GoDuration(Duration d);
// go-humanize's Bytes(): SI units, "20 kB", "1.5 MB", "7 B".
std::string HumanizeBytes(uint64_t bytes);
// Go's %x / %<width>x of a signed integer (sign, then padding).
std::string GoHex(int64_t v, int width = 0, char pad = ' ');
std::string GoHexU(uint64_t v, int width = 0, char pad = ' ');

// tablewriter (2017, as vendored by etcd 3.4) with etcdctl's settings:
// headers upper-cased and centred, cells right-aligned, auto-wrapped at 30
// columns on spaces.
std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_STORE_GO_FORMAT_H_
