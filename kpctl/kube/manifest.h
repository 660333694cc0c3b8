// Manifests for apply, create, delete -f: files, directories and stdin,
// each holding YAML (one or more "---"-separated documents) or JSON.
// `kind: List` documents are expanded into their items.
//
//   -f deploy.yaml   that file, whatever its extension
//   -f manifests/    its *.yaml, *.yml and *.json files in name order
//                    (subdirectories too with recursive)
//   -f -             stdin (named "STDIN" in messages)
//
// Every file is parsed before anything is sent, so a syntax error anywhere
// applies nothing; the error names the file and line:
//   error parsing bad.yaml: error converting YAML to JSON: yaml: line 4:
//   mapping values are not allowed in this context
//
// Thread-safety: pure functions. Errors: InvalidArgument (parse errors,
// documents without apiVersion/kind), NotFound (missing paths).
#ifndef KPLANE_KPCTL_KUBE_MANIFEST_H_
#define KPLANE_KPCTL_KUBE_MANIFEST_H_

#include <rapidjson/document.h>

#include <istream>
#include <string>
#include <vector>

#include "base/statusor.h"

namespace kplane::kpctl::kube {

struct Manifest {
  std::string source;  // the file name as given, or "STDIN"
  int index = 0;       // 1-based document number within the source
  rapidjson::Document object;
};

StatusOr<std::vector<Manifest>> LoadManifests(
    const std::vector<std::string>& paths, bool recursive, std::istream* in);

// Parses the text of one source (exposed for tests).
StatusOr<std::vector<Manifest>> ParseManifests(const std::string& source,
                                               std::string_view text);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_MANIFEST_H_
