// A test's scratch directory: made fresh under /tmp and removed, with all
// it holds, when the object goes. Tests that mkdtemp by hand and forget the
// removal leave a directory behind on every run; this is the one place
// that does both.
#ifndef KPLANE_BASE_TESTING_TEMP_DIR_H_
#define KPLANE_BASE_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace kplane::testing {

class TempDir {
 public:
  // /tmp/<prefix>XXXXXX. A failed mkdtemp aborts the test binary: an empty
  // path would make every Sub() name a directory under /.
  explicit TempDir(const std::string& prefix = "kplane_test_") {
    std::string tmpl = "/tmp/" + prefix + "XXXXXX";
    char* p = mkdtemp(tmpl.data());
    if (p == nullptr) {
      std::perror(("mkdtemp " + tmpl).c_str());
      std::abort();
    }
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace kplane::testing

#endif  // KPLANE_BASE_TESTING_TEMP_DIR_H_
