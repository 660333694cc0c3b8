#include "ui/assets.h"

#include <gtest/gtest.h>

namespace kplane::ui {
namespace {

TEST(UiAssets, EmbedsThePageWithTypesAndEtags) {
  const Asset* index = FindAsset("");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index, FindAsset("index.html"));
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  EXPECT_NE(index->bytes.find("<script src=\"app.js\""), std::string::npos);
  const Asset* js = FindAsset("app.js");
  ASSERT_NE(js, nullptr);
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  const Asset* css = FindAsset("app.css");
  ASSERT_NE(css, nullptr);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
  EXPECT_NE(js->etag, css->etag);
  EXPECT_EQ(js->etag.size(), 18u);
  EXPECT_EQ(FindAsset("../CMakeLists.txt"), nullptr);
  EXPECT_EQ(FindAsset("nope.js"), nullptr);
}

// Issue 21: the page's JS stays under 200 KB uncompressed.
TEST(UiAssets, JavaScriptUnder200KB) {
  size_t js = 0;
  for (const Asset& a : Assets()) {
    if (a.content_type.starts_with("text/javascript")) js += a.bytes.size();
  }
  EXPECT_GT(js, 0u);
  EXPECT_LT(js, 200u * 1024);
}

}  // namespace
}  // namespace kplane::ui
