// Small string helpers that the standard library lacks.
#ifndef KPLANE_BASE_STRINGS_H_
#define KPLANE_BASE_STRINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kplane {

// Splits on every occurrence of `sep`; "a,,b" -> {"a", "", "b"}; "" -> {""}.
std::vector<std::string> StrSplit(std::string_view s, char sep);
std::string StrJoin(const std::vector<std::string>& parts,
                    std::string_view sep);
std::string_view StripWhitespace(std::string_view s);
std::string ToLower(std::string_view s);

// Strict decimal parsing: the whole string must be a number in range.
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<uint64_t> ParseUint64(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);
// Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False.
std::optional<bool> ParseBool(std::string_view s);

// Go's %q (strconv.Quote) of a string, for messages that must read as
// Kubernetes' and etcd's do: double quotes; \" and \\; \a \b \f \n \r \t \v;
// other ASCII controls and DEL as \xHH; bytes that are not valid UTF-8 as
// \xHH; C1 controls (U+0080-U+009F) as \u00HH; every other character as it
// is. GoQuote("a\"b\n\xff") == R"("a\"b\n\xff")". Unlike Go, the rarer
// non-printable runes (U+00A0, U+200B, ...) are not escaped.
std::string GoQuote(std::string_view s);

// etcd's clientv3.GetPrefixRangeEnd: the range_end that, with `prefix` as
// the key, selects every key starting with `prefix` (the smallest key
// greater than all of them): the last byte below 0xff incremented, the 0xff
// bytes after it dropped. "/registry/pods/" -> "/registry/pods0"; "a\xff"
// -> "b"; all 0xff (or empty) -> "\0", which etcd reads as "to the end".
std::string PrefixRangeEnd(std::string_view prefix);

// Hex dump of bytes for logs and errors: "6b 38 73 00".
std::string HexDump(std::string_view bytes);

// A duration like Go's time.ParseDuration: "100ms", "1.5s", "1m30s", "2h".
// Returns nanoseconds.
std::optional<int64_t> ParseGoDuration(std::string_view s);

}  // namespace kplane

#endif  // KPLANE_BASE_STRINGS_H_
