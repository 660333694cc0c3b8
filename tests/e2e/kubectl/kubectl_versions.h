// The kubectl versions the e2e suites prove kplane with (issues #19, #20),
// in one place so every suite finds them the same way:
//
//   1.32        the PATH's `kubectl` (a dispatcher that picks 1.32 for our
//               /version, v1.32.4)
//   1.27, 1.33  `kubectl.1.27` and `kubectl.1.33` beside the real file of the
//               PATH's kubectl (`readlink -f`); run whenever present
//   1.20        Debian 12's own kubectl (package kubernetes-client), named by
//               $KPLANE_KUBECTL_1_20; not run when unset.
//               scripts/install-deps.sh unpacks it and scripts/test.sh sets
//               the variable. By hand, without replacing the PATH's kubectl:
//                 apt-get download kubernetes-client &&
//                 dpkg -x kubernetes-client_*.deb /tmp/k120
//                 export KPLANE_KUBECTL_1_20=/tmp/k120/usr/bin/kubectl
//
// A parameterised suite runs over kKubectlVersionNames and asks
// FindKubectlVersion for its binary (GTEST_SKIP with the Status's message
// when it is not there):
//
//   class Suite : public ::testing::TestWithParam<std::string> {};
//   TEST_P(Suite, Works) {
//     StatusOr<KubectlVersion> k = FindKubectlVersion(GetParam());
//     if (!k.ok()) GTEST_SKIP() << k.status().message();
//     ... k->binary ...
//   }
//   INSTANTIATE_TEST_SUITE_P(Versions, Suite,
//                            ::testing::ValuesIn(kKubectlVersionNames),
//                            KubectlVersionParamName);
//
// Tests that loop over the versions instead take KubectlVersions().
//
// Thread-safety: the functions read the environment and the file system
// only; call them from the test's thread.
#ifndef KPLANE_TESTS_E2E_KUBECTL_KUBECTL_VERSIONS_H_
#define KPLANE_TESTS_E2E_KUBECTL_KUBECTL_VERSIONS_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"
#include "base/strings.h"

namespace kplane::e2e {

struct KubectlVersion {
  std::string name;    // "1.27"
  std::string binary;  // a path, or "kubectl" (the PATH's)
  int minor = 0;       // 27
  // kubectl before 1.27 (here: 1.20) validates writes on the client
  // against /openapi/v2 and explains from it; newer ones hand validation to
  // the server (fieldValidation) and explain from /openapi/v3.
  bool client_side_validation = false;
};

// Every version a suite may run, oldest first.
inline const std::vector<std::string> kKubectlVersionNames = {"1.20", "1.27",
                                                              "1.32", "1.33"};

// The directory of the real file of the PATH's `kubectl` (symlinks
// resolved); "" when there is no kubectl on the PATH.
inline std::string KubectlRealDir() {
  const char* path = getenv("PATH");
  for (const std::string& dir : StrSplit(path != nullptr ? path : "", ':')) {
    if (dir.empty()) continue;
    std::error_code ec;
    const std::filesystem::path real =
        std::filesystem::canonical(std::filesystem::path(dir) / "kubectl", ec);
    if (!ec) return real.parent_path().string();
  }
  return "";
}

// `kubectl.<version>` beside the PATH's kubectl's real file; "" when absent.
inline std::string KubectlBeside(std::string_view version) {
  const std::string dir = KubectlRealDir();
  if (dir.empty()) return "";
  const std::string bin = dir + "/kubectl." + std::string(version);
  std::error_code ec;
  return std::filesystem::exists(bin, ec) ? bin : "";
}

// The binary of version `name` (one of kKubectlVersionNames). NotFound,
// with a message saying what to install or set, when it is not available.
inline StatusOr<KubectlVersion> FindKubectlVersion(std::string_view name) {
  KubectlVersion k;
  k.name = std::string(name);
  const size_t dot = k.name.find('.');
  k.minor = dot == std::string::npos ? 0 : atoi(k.name.c_str() + dot + 1);
  k.client_side_validation = k.minor < 27;
  if (name == "1.32") {
    if (KubectlRealDir().empty()) {
      return NotFoundError("no kubectl on the PATH");
    }
    k.binary = "kubectl";
    return k;
  }
  if (name == "1.20") {
    const char* bin = getenv("KPLANE_KUBECTL_1_20");
    if (bin == nullptr || *bin == '\0') {
      return NotFoundError(
          "KPLANE_KUBECTL_1_20 unset: kubectl 1.20 not run (apt-get download "
          "kubernetes-client && dpkg -x kubernetes-client_*.deb /tmp/k120, "
          "then KPLANE_KUBECTL_1_20=/tmp/k120/usr/bin/kubectl; "
          "docs/testing.md)");
    }
    std::error_code ec;
    if (!std::filesystem::exists(bin, ec)) {
      return NotFoundError(std::string("KPLANE_KUBECTL_1_20=") + bin +
                           ": no such file");
    }
    k.binary = bin;
    return k;
  }
  k.binary = KubectlBeside(name);
  if (k.binary.empty()) {
    return NotFoundError("kubectl." + k.name +
                         " is not beside the PATH's kubectl (in '" +
                         KubectlRealDir() + "')");
  }
  return k;
}

// The versions available here, oldest first (1.32 always when kubectl is
// on the PATH).
inline std::vector<KubectlVersion> KubectlVersions() {
  std::vector<KubectlVersion> out;
  for (const std::string& name : kKubectlVersionNames) {
    StatusOr<KubectlVersion> k = FindKubectlVersion(name);
    if (k.ok()) out.push_back(*std::move(k));
  }
  return out;
}

// Test names for a suite parameterised by version: "1.27" -> "kubectl_1_27".
inline std::string KubectlVersionParamName(
    const ::testing::TestParamInfo<std::string>& info) {
  std::string name = "kubectl_" + info.param;
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return name;
}

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_KUBECTL_KUBECTL_VERSIONS_H_
