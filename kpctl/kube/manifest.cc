#include "kpctl/kube/manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "objects/yaml.h"
#include "kpctl/kube/printer.h"

namespace kplane::kpctl::kube {
namespace {

namespace fs = std::filesystem;

bool IsManifestFile(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

Status AddDocument(const std::string& source, int index, rapidjson::Value& doc,
                   rapidjson::Document::AllocatorType&,
                   std::vector<Manifest>* out) {
  std::vector<std::string> missing;
  if (StrAt(doc, {"apiVersion"}).empty())
    missing.push_back("apiVersion not set");
  if (StrAt(doc, {"kind"}).empty()) missing.push_back("kind not set");
  if (!doc.IsObject() || !missing.empty()) {
    std::string m;
    for (const auto& s : missing) m += (m.empty() ? "" : ", ") + s;
    if (!doc.IsObject()) m = "the document is not an object";
    return InvalidArgumentError("error validating \"" + source +
                                "\": error validating data: [" + m + "]");
  }
  if (StrAt(doc, {"kind"}) == "List" ||
      (StrAt(doc, {"kind"}).size() > 4 &&
       StrAt(doc, {"kind"}).ends_with("List") && doc.HasMember("items"))) {
    auto it = doc.FindMember("items");
    if (it != doc.MemberEnd() && it->value.IsArray()) {
      for (rapidjson::Value& item : it->value.GetArray()) {
        rapidjson::Document d;
        RETURN_IF_ERROR(
            AddDocument(source, index, item, d.GetAllocator(), out));
      }
    }
    return Status();
  }
  Manifest m;
  m.source = source;
  m.index = index;
  m.object.CopyFrom(doc, m.object.GetAllocator());
  out->push_back(std::move(m));
  return Status();
}

}  // namespace

StatusOr<std::vector<Manifest>> ParseManifests(const std::string& source,
                                               std::string_view text) {
  StatusOr<std::vector<rapidjson::Document>> docs = objects::ParseYamlStream(text);
  if (!docs.ok()) {
    return InvalidArgumentError(
        "error parsing " + source +
        ": error converting YAML to JSON: " + docs.status().message());
  }
  std::vector<Manifest> out;
  int index = 0;
  for (rapidjson::Document& d : *docs) {
    ++index;
    RETURN_IF_ERROR(AddDocument(source, index, d, d.GetAllocator(), &out));
  }
  return out;
}

StatusOr<std::vector<Manifest>> LoadManifests(
    const std::vector<std::string>& paths, bool recursive, std::istream* in) {
  std::vector<Manifest> out;
  if (paths.empty()) {
    return InvalidArgumentError("must specify one of -f and -k");
  }
  for (const std::string& path : paths) {
    std::vector<std::pair<std::string, std::string>> sources;  // name, text
    if (path == "-") {
      std::stringstream ss;
      if (in != nullptr) ss << in->rdbuf();
      sources.emplace_back("STDIN", ss.str());
    } else {
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        return NotFoundError("the path \"" + path + "\" does not exist");
      }
      std::vector<std::string> files;
      if (fs::is_directory(path, ec)) {
        if (recursive) {
          for (const auto& e : fs::recursive_directory_iterator(path, ec)) {
            if (e.is_regular_file() && IsManifestFile(e.path())) {
              files.push_back(e.path().string());
            }
          }
        } else {
          for (const auto& e : fs::directory_iterator(path, ec)) {
            if (e.is_regular_file() && IsManifestFile(e.path())) {
              files.push_back(e.path().string());
            }
          }
        }
        std::sort(files.begin(), files.end());
      } else {
        files.push_back(path);
      }
      for (const std::string& file : files) {
        std::ifstream f(file, std::ios::binary);
        if (!f) return NotFoundError("cannot read " + file);
        std::stringstream ss;
        ss << f.rdbuf();
        sources.emplace_back(file, ss.str());
      }
    }
    for (auto& [name, text] : sources) {
      ASSIGN_OR_RETURN(std::vector<Manifest> docs, ParseManifests(name, text));
      for (Manifest& m : docs) out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace kplane::kpctl::kube
