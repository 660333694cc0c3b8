// The web view's static files (ui/*.html, *.css, *.js), embedded in the
// binary at build time by cmake/embed_files.cmake, and what an HTTP server
// needs to serve them: content type and a strong ETag.
//
//   const ui::Asset* a = ui::FindAsset("app.js");   // path under /ui/
//   if (a) Respond(200, {{"Content-Type", a->content_type},
//                        {"ETag", a->etag}}, a->bytes);
//
// "" and "index.html" both name the page. Unknown paths give null.
// Thread-safety: immutable after the first call (a function-local static).
// Errors: none.
#ifndef KPLANE_UI_ASSETS_H_
#define KPLANE_UI_ASSETS_H_

#include <string>
#include <string_view>
#include <vector>

namespace kplane::ui {

// One embedded file as the generated source lists it.
struct EmbeddedFile {
  std::string_view path;  // relative to ui/, e.g. "app.js"
  std::string_view bytes;
};
// Defined in the generated ui_files.cc.
const std::vector<EmbeddedFile>& EmbeddedFiles();

struct Asset {
  std::string path;
  std::string_view bytes;
  std::string content_type;  // "text/javascript; charset=utf-8", ...
  std::string etag;          // "\"<16 hex digits of FNV-1a 64>\""
};

const Asset* FindAsset(std::string_view path);
// Every embedded asset (for tests and the page-weight check).
const std::vector<Asset>& Assets();

}  // namespace kplane::ui

#endif  // KPLANE_UI_ASSETS_H_
