// Helpers shared by the objects/ tests: reading golden files and comparing JSON
// as values (member order ignored, array order kept).
#ifndef KPLANE_OBJECTS_TEST_UTIL_H_
#define KPLANE_OBJECTS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <fstream>
#include <sstream>
#include <string>

namespace kplane::objects::testing {

inline std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(KPLANE_OBJECTS_TESTDATA) + "/" + name);
  EXPECT_TRUE(in.good()) << "cannot open testdata/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A whole file, bytes as they are ("" and a test failure when missing).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline rapidjson::Document ParseJsonOrDie(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << "bad JSON: " << text;
  return doc;
}

inline std::string Pretty(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return buf.GetString();
}

// Compares two JSON texts as values; prints both on mismatch.
inline ::testing::AssertionResult JsonEqual(const std::string& expected,
                                            const std::string& actual) {
  rapidjson::Document e = ParseJsonOrDie(expected);
  rapidjson::Document a = ParseJsonOrDie(actual);
  if (e == a) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "JSON differs.\nexpected: " << Pretty(e)
         << "\nactual:   " << Pretty(a);
}

}  // namespace kplane::objects::testing

#endif  // KPLANE_OBJECTS_TEST_UTIL_H_
