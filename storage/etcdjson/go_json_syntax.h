// Go's encoding/json syntax errors, in Go's words, for the bodies etcd's
// gateway refuses before it decodes them.
//
// etcd 3.4's grpc-gateway reads a unary request body with one Go
// json.Decoder Decode: the first JSON value of the body, whatever follows
// it. A body that is not well-formed up to that value's end is refused
// with 400, code 3, and the decoder's error text, which clients show and
// compare: `invalid character 'x' looking for beginning of value`,
// `invalid character '"' after object key`, `unexpected EOF`, ... kplane
// parses with RapidJSON, whose errors are other words at other offsets;
// GoJsonSyntaxError re-reads a refused body with a port of Go's scanner
// (encoding/json/scanner.go and Decoder.readValue) to name the error as Go
// does.
//
// Thread-safety: pure functions.
#ifndef KPLANE_STORAGE_ETCDJSON_GO_JSON_SYNTAX_H_
#define KPLANE_STORAGE_ETCDJSON_GO_JSON_SYNTAX_H_

#include <string>
#include <string_view>

namespace kplane::etcdjson {

// Whether `c` is white space to Go's encoding/json (its isSpace): ' ', '\t',
// '\r' or '\n', and nothing else.
bool IsGoJsonSpace(char c);

// How Go's encoding/json names a byte in a syntax error (its quoteChar):
// 'x', '\'', '\x01', '\u00a0', and a printable byte of 0x80 or more as the
// UTF-8 of the rune of that number (0xff: U+00FF, bytes c3 bf).
std::string GoQuoteChar(unsigned char c);

// The error Go's json.Decoder gives reading the first value of `text`, as
// Decode returns it: "invalid character <c> <context>" (with "exceeded max
// depth" past 10,000 levels, as RapidJSON's bound here), or "unexpected
// EOF" when the text ends inside the value. "" when the first value is
// well-formed as far as Go's scanner goes (what follows it is not read;
// an empty or blank text is io.EOF, which etcd's gateway takes as `{}`).
std::string GoJsonSyntaxError(std::string_view text);

// The syntax error json.Unmarshal gives for `text` (its checkValid): the
// whole text must be one value, so "invalid character '2' after top-level
// value" for `1 2`, and "unexpected end of JSON input" for `` or `[1`
// (`-`: "invalid character ' ' in numeric literal"). "" when well-formed.
// jsonpb decodes a quoted integer so: it drops the quotes and
// json.Unmarshals the text between them.
std::string GoJsonValueSyntaxError(std::string_view text);

}  // namespace kplane::etcdjson

#endif  // KPLANE_STORAGE_ETCDJSON_GO_JSON_SYNTAX_H_
