#include "net/http_message.h"

#include <algorithm>

#include "base/strings.h"

namespace kplane::net {

namespace {
char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }
}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

void HttpHeaders::Add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

void HttpHeaders::Set(std::string name, std::string value) {
  Remove(name);
  entries_.emplace_back(std::move(name), std::move(value));
}

void HttpHeaders::Remove(std::string_view name) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) {
                                  return EqualsIgnoreCase(e.first, name);
                                }),
                 entries_.end());
}

const std::string* HttpHeaders::Find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (EqualsIgnoreCase(e.first, name)) return &e.second;
  }
  return nullptr;
}

std::string_view HttpHeaders::Get(std::string_view name) const {
  const std::string* v = Find(name);
  return v ? std::string_view(*v) : std::string_view();
}

std::vector<std::string_view> HttpHeaders::GetAll(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const Entry& e : entries_) {
    if (EqualsIgnoreCase(e.first, name)) out.push_back(e.second);
  }
  return out;
}

bool HttpHeaders::HasToken(std::string_view name,
                           std::string_view token) const {
  for (const Entry& e : entries_) {
    if (!EqualsIgnoreCase(e.first, name)) continue;
    std::string_view rest = e.second;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view item = StripWhitespace(rest.substr(0, comma));
      if (EqualsIgnoreCase(item, token)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

std::string_view HttpRequest::QueryParam(std::string_view key) const {
  auto it = query.find(std::string(key));
  return it == query.end() ? std::string_view() : std::string_view(it->second);
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace kplane::net
