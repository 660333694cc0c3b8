// A test's scratch directory: made fresh under /tmp and removed, with all
// it holds, when the object goes. Tests that mkdtemp by hand and forget the
// removal leave a directory behind on every run; this is the one place
// that does both.
#ifndef KPLANE_BASE_TESTING_TEMP_DIR_H_
#define KPLANE_BASE_TESTING_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace kplane::testing {

class TempDir {
 public:
  // /tmp/<prefix>XXXXXX; a failed mkdtemp fails the test (path() is then
  // empty and the removal does nothing).
  explicit TempDir(const std::string& prefix = "kplane_test_") {
    std::string tmpl = "/tmp/" + prefix + "XXXXXX";
    char* p = mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr) << "mkdtemp " << tmpl;
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    if (path_.empty()) return;
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
