#include "base/json_escape.h"

#include <gtest/gtest.h>

#include <string>

#include "base/utf8.h"

namespace kplane {
namespace {

using namespace std::string_literals;

std::string Escaped(std::string_view text, const JsonEscapeOptions& options) {
  std::string out = "prefix:";
  AppendJsonEscaped(text, options, &out);
  return out;
}

TEST(JsonEscapeTest, QuotesAndBackslashesAlways) {
  EXPECT_EQ(JsonQuote(R"(a"b\c)", {.short_escapes = ""}), R"("a\"b\\c")");
  EXPECT_EQ(JsonQuote(R"(a"b\c)", kGoJsonEscape), R"("a\"b\\c")");
  EXPECT_EQ(Escaped("", {}), "prefix:");
}

TEST(JsonEscapeTest, ControlCharactersShortOnlyWhenAsked) {
  const std::string controls = "\n\r\t\b\f\x01\x1f"s + '\0' + "\x7f";
  EXPECT_EQ(JsonQuote(controls, kGoJsonEscape),
            R"("\n\r\t\b\f\u0001\u001f\u0000)"
            "\x7f\"");
  // etcd's gateway errors: \n and \t only.
  EXPECT_EQ(JsonQuote(controls, {.short_escapes = "\n\t"}),
            R"("\n\u000d\t\u0008\u000c\u0001\u001f\u0000)"
            "\x7f\"");
  // The store's health body: none.
  EXPECT_EQ(JsonQuote(controls, {.short_escapes = ""}),
            R"("\u000a\u000d\u0009\u0008\u000c\u0001\u001f\u0000)"
            "\x7f\"");
  // Go before 1.22: \b and \f as \u00XX.
  EXPECT_EQ(JsonQuote(controls, {}), R"("\n\r\t\u0008\u000c\u0001\u001f\u0000)"
                                     "\x7f\"");
}

TEST(JsonEscapeTest, HtmlSafe) {
  EXPECT_EQ(JsonQuote("<a>&", {}), R"("<a>&")");
  EXPECT_EQ(JsonQuote("<a>&", {.html_safe = true}), R"("\u003ca\u003e\u0026")");
}

TEST(JsonEscapeTest, LineSeparators) {
  const std::string text =
      "a\xe2\x80\xa8"
      "b\xe2\x80\xa9"
      "c\xe2\x80\xaa";
  EXPECT_EQ(JsonQuote(text, {}), "\"" + text + "\"");
  EXPECT_EQ(JsonQuote(text, {.escape_line_separators = true}),
            "\"a\\u2028b\\u2029c\xe2\x80\xaa\"");
  // A separator cut short is just bytes.
  EXPECT_EQ(JsonQuote("\xe2\x80", {.escape_line_separators = true}),
            "\"\xe2\x80\"");
}

TEST(JsonEscapeTest, InvalidUtf8PassesOrIsReplaced) {
  // A lone continuation byte, an overlong '/', a surrogate, a truncated
  // sequence, then valid é and U+10FFFF.
  const std::string text =
      "\x80|\xc0\xaf|\xed\xa0\x80|\xe2\x82|\xc3\xa9|\xf4\x8f\xbf\xbf";
  EXPECT_EQ(JsonQuote(text, {.html_safe = true}), "\"" + text + "\"");
  EXPECT_EQ(JsonQuote(text, kGoJsonEscape),
            "\"\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd|"
            "\xc3\xa9|\xf4\x8f\xbf\xbf\"");
}

TEST(Utf8Test, SequenceLength) {
  EXPECT_EQ(Utf8SequenceLength(""), 0u);
  EXPECT_EQ(Utf8SequenceLength("a"), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xc3\xa9x"), 2u);
  EXPECT_EQ(Utf8SequenceLength("\xe2\x82\xac"), 3u);
  EXPECT_EQ(Utf8SequenceLength("\xf4\x8f\xbf\xbf"), 4u);
  EXPECT_EQ(Utf8SequenceLength("\xc0\xaf"), 0u);          // overlong
  EXPECT_EQ(Utf8SequenceLength("\xe0\x80\xaf"), 0u);      // overlong
  EXPECT_EQ(Utf8SequenceLength("\xed\xa0\x80"), 0u);      // surrogate
  EXPECT_EQ(Utf8SequenceLength("\xf4\x90\x80\x80"), 0u);  // > U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xe2\x82"), 0u);          // truncated
  EXPECT_EQ(Utf8SequenceLength("\x80"), 0u);
}

}  // namespace
}  // namespace kplane
