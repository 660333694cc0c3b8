#include "ui/assets.h"

#include <cstdint>
#include <cstdio>

namespace kplane::ui {
namespace {

std::string ContentType(std::string_view path) {
  auto ends = [&](std::string_view s) {
    return path.size() >= s.size() && path.substr(path.size() - s.size()) == s;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".png")) return "image/png";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// A content hash for the ETag: it changes when the embedded bytes change
// (a new binary), so browsers revalidate and get the new page.
std::string Etag(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof(buf), "\"%016llx\"",
                static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

const std::vector<Asset>& Assets() {
  static const std::vector<Asset> assets = [] {
    std::vector<Asset> out;
    for (const EmbeddedFile& f : EmbeddedFiles()) {
      out.push_back({.path = std::string(f.path),
                     .bytes = f.bytes,
                     .content_type = ContentType(f.path),
                     .etag = Etag(f.bytes)});
    }
    return out;
  }();
  return assets;
}

const Asset* FindAsset(std::string_view path) {
  if (path.empty()) path = "index.html";
  for (const Asset& a : Assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace kplane::ui
