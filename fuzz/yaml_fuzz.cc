// Fuzzes the project's one YAML reader (objects/yaml.h): manifests (kpctl
// apply -f), application/yaml bodies, server-side apply bodies, kubeconfig.
// Its limits (alias cycles, excessive aliasing, expanded bytes, depth) are
// what keep billion-laughs inputs from taking a process down.
//
// Input: a YAML stream. Read as a stream, as one document, as an apply
// body (JSON or YAML); each document written back as YAML and decoded into
// a ConfigMap (the codec's YAML path).
//
// Checked: no crash or sanitizer report; YAML written by JsonToYaml reads
// back as the same JSON.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "objects/types.h"
#include "objects/yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view yaml(reinterpret_cast<const char*>(data), size);
  auto docs = kplane::objects::ParseYamlStream(yaml);
  (void)kplane::objects::ParseYamlDocument(yaml);
  (void)kplane::objects::ParseJsonOrYaml(yaml);
  {
    kplane::objects::corev1::ConfigMap cm;
    (void)kplane::objects::DecodeYaml(yaml, &cm);
  }
  if (!docs.ok()) return 0;
  for (const rapidjson::Document& doc : *docs) {
    std::string out = kplane::objects::JsonToYaml(doc);
    auto again = kplane::objects::ParseYamlDocument(out);
    if (!again.ok()) {
      std::fprintf(stderr, "%s\n---\n%s", again.status().ToString().c_str(),
                   out.c_str());
      kplane::fuzz::Fail("JsonToYaml's output does not read back");
    }
    if (*again != doc) {
      std::fprintf(stderr, "%s", out.c_str());
      kplane::fuzz::Fail("JsonToYaml's output reads back differently");
    }
  }
  return 0;
}
