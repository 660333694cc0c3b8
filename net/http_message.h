// HTTP/1.1 message types shared by the server and the client: a header list
// with case-insensitive lookup, a request and a response.
//
// These are plain values: no I/O, no ownership of sockets. HttpHeaders keeps
// the order and the spelling of the names as they were added (what goes on
// the wire), while every lookup ignores case ("content-type" finds
// "Content-Type"), as RFC 9110 §5.1 requires.
//
// Thread-safety: values; const methods may be called concurrently.
// Errors: none (lookups of absent names return nullptr / "" / empty vectors).
#ifndef KPLANE_NET_HTTP_MESSAGE_H_
#define KPLANE_NET_HTTP_MESSAGE_H_

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kplane::net {

struct TlsConnectionInfo;  // net/tls.h

// ASCII case-insensitive equality (header names, tokens).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

class HttpHeaders {
 public:
  using Entry = std::pair<std::string, std::string>;

  HttpHeaders() = default;
  HttpHeaders(std::initializer_list<Entry> entries) : entries_(entries) {}

  // Appends a field; an existing field of the same name is kept (a list).
  void Add(std::string name, std::string value);
  // Replaces every field named `name` by one field.
  void Set(std::string name, std::string value);
  void Remove(std::string_view name);

  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // The first value of `name`, or nullptr.
  const std::string* Find(std::string_view name) const;
  // The first value of `name`, or "".
  std::string_view Get(std::string_view name) const;
  std::vector<std::string_view> GetAll(std::string_view name) const;
  // True if a comma-separated list in any `name` field contains `token`
  // (case-insensitive), e.g. HasToken("Connection", "close").
  bool HasToken(std::string_view name, std::string_view token) const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  void clear() { entries_.clear(); }

 private:
  std::vector<Entry> entries_;
};

struct HttpRequest {
  std::string method;     // "GET", "POST", ... (case-sensitive, RFC 9110)
  std::string target;     // request-target as sent: "/a%20b?x=1"
  std::string raw_path;   // "/a%20b"
  std::string path;       // percent-decoded: "/a b"
  std::string raw_query;  // "x=1" (without '?')
  // Decoded query parameters ('+' means space, as in HTML forms and Go's
  // url.ParseQuery). A key may repeat: ?a=1&a=2.
  std::multimap<std::string, std::string> query;
  int version_minor = 1;  // 1 for HTTP/1.1, 0 for HTTP/1.0
  HttpHeaders headers;
  // The whole body, unless the route streams the body (see
  // Responder::OnBodyData), in which case it is empty.
  std::string body;
  std::string remote_address;  // "127.0.0.1:53412"
  // The connection's TLS state (net/tls.h: version, ALPN, and the client
  // certificate's verified identity, CN = user, O = groups), shared by
  // every request of the connection; nullptr on a plaintext connection.
  // Include net/tls.h to read it.
  std::shared_ptr<const TlsConnectionInfo> tls;

  // The first value of query parameter `key`, or "".
  std::string_view QueryParam(std::string_view key) const;
  bool HasQueryParam(std::string_view key) const {
    return query.find(std::string(key)) != query.end();
  }
};

struct HttpResponse {
  int status = 0;
  std::string reason;  // "OK"
  int version_minor = 1;
  HttpHeaders headers;
  std::string body;  // empty for streamed responses
};

// The standard reason phrase for `status` ("Not Found"), or "Unknown".
std::string_view StatusReason(int status);

}  // namespace kplane::net

#endif  // KPLANE_NET_HTTP_MESSAGE_H_
