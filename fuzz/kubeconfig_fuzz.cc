// Fuzzes kubeconfig files as kpctl loads them (kpctl/kube/kubeconfig.h):
// YAML through the one YAML reader, merged (the file twice, as
// KUBECONFIG=a:a does), then the client settings resolved from the current
// context and from a named one.
//
// Input: the file. Each run writes it under $TMPDIR (or /tmp). The
// resolution always has a token override, so a `tokenFile:` in the input
// is never read (a fuzzer could name /dev/zero).
//
// Checked: no crash or sanitizer report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "fuzz/fuzz_input.h"
#include "kpctl/kube/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
           "/kplane-kubeconfig-fuzz-" + std::to_string(::getpid());
  }();
  static const std::string twice = path + ":" + path;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data),
            static_cast<std::streamsize>(size));
  }
  auto getenv = [](const char* name) -> const char* {
    return std::strcmp(name, "KUBECONFIG") == 0 ? twice.c_str() : nullptr;
  };
  auto config = kplane::kpctl::kube::LoadKubeconfig("", getenv);
  if (config.ok()) {
    kplane::kpctl::kube::ConfigOverrides o;
    o.token = "t";
    (void)kplane::kpctl::kube::ResolveClientConfig(*config, o);
    o.context = "dev";
    (void)kplane::kpctl::kube::ResolveClientConfig(*config, o);
  }
  std::remove(path.c_str());
  return 0;
}
