#include "base/flags.h"

#include <gtest/gtest.h>

namespace kplane {
namespace {

TEST(FlagsTest, ParsesAllForms) {
  FlagSet f("test", "A test.");
  std::string name = "default";
  bool verbose = false;
  int64_t count = 5;
  Duration hb = milliseconds(100);
  std::vector<std::string> urls = {"http://a"};
  std::string ns;
  f.String("name", &name, "Name.");
  f.Bool("verbose", &verbose, "Verbose.");
  f.Int64("count", &count, "Count.");
  f.Duration("heartbeat-interval", &hb, "HB.", milliseconds(1));
  f.StringList("urls", &urls, "URLs.");
  f.String("namespace", &ns, "Namespace.", 'n');
  ASSERT_TRUE(f.Parse({"pos1", "--name=n1", "--verbose", "--count", "7",
                       "--heartbeat-interval=250", "--urls=x,y", "--urls", "z",
                       "-n", "kube-system", "pos2", "--", "--not-a-flag"})
                  .ok());
  EXPECT_EQ(name, "n1");
  EXPECT_TRUE(verbose);
  EXPECT_EQ(count, 7);
  EXPECT_EQ(hb, milliseconds(250));
  EXPECT_EQ(urls, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(ns, "kube-system");
  EXPECT_EQ(f.args(),
            (std::vector<std::string>{"pos1", "pos2", "--not-a-flag"}));
  EXPECT_TRUE(f.IsSet("name"));
  EXPECT_FALSE(f.help_requested());
}

// Go's flag package: a repeated flag keeps its last value, lists too
// (etcd's URLsValue); StringList (pflag's StringSlice) appends instead.
TEST(FlagsTest, RepeatedFlagsKeepTheLastValue) {
  FlagSet f("t", "");
  std::string name;
  int64_t n = 0;
  std::vector<std::string> urls = {"http://default"};
  std::vector<std::string> appended;
  f.String("name", &name, "");
  f.Int64("n", &n, "");
  f.StringListLastWins("urls", &urls, "");
  f.StringList("appended", &appended, "");
  ASSERT_TRUE(f.Parse({"--name", "a", "--urls", "http://a,http://b", "--n=1",
                       "--appended=a", "--urls=http://c", "--name=b", "--n",
                       "2", "--appended", "b"})
                  .ok());
  EXPECT_EQ(name, "b");
  EXPECT_EQ(n, 2);
  EXPECT_EQ(urls, std::vector<std::string>{"http://c"});
  EXPECT_EQ(appended, (std::vector<std::string>{"a", "b"}));
}

TEST(FlagsTest, DurationsAcceptGoSyntax) {
  FlagSet f("t", "");
  Duration d = seconds(1);
  f.Duration("d", &d, "");
  ASSERT_TRUE(f.Parse({"--d=1m30s"}).ok());
  EXPECT_EQ(d, seconds(90));
}

// A negative duration would read as "no limit" to the code using it, and a
// bare number times its unit must not overflow.
TEST(FlagsTest, DurationsRefuseNegativeAndOverflowingValues) {
  FlagSet f("t", "");
  Duration d = seconds(1);
  Duration hb = milliseconds(100);
  f.Duration("d", &d, "");
  f.Duration("heartbeat-interval", &hb, "", milliseconds(1));
  EXPECT_EQ(f.Parse({"--d=-1s"}).message(),
            "--d must not be negative (got \"-1s\")");
  EXPECT_EQ(f.Parse({"--heartbeat-interval=-5"}).message(),
            "--heartbeat-interval must not be negative (got \"-5\")");
  // 2^63 / 10^6 ms is the first bare value whose nanoseconds overflow.
  EXPECT_EQ(f.Parse({"--heartbeat-interval=9223372036855"}).message(),
            "invalid duration \"9223372036855\" for --heartbeat-interval "
            "(out of range)");
  EXPECT_EQ(f.Parse({"--d=9223372036854775807"}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(f.Parse({"--d=99999999999h"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d, seconds(1));
  EXPECT_EQ(hb, milliseconds(100));
  // The largest bare value that fits, and zero, are fine.
  ASSERT_TRUE(f.Parse({"--heartbeat-interval=9223372036854"}).ok());
  EXPECT_EQ(hb, milliseconds(9223372036854));
  ASSERT_TRUE(f.Parse({"--d=0", "--heartbeat-interval=-0"}).ok());
  EXPECT_EQ(d, Duration(0));
  EXPECT_EQ(hb, Duration(0));
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  FlagSet f("kplane store", "");
  int64_t n = 0;
  bool b = false;
  f.Int64("snapshot-count", &n, "");
  f.Bool("b", &b, "");
  EXPECT_EQ(f.Parse({"--nope"}).message(),
            "unknown flag: --nope (see kplane store --help)");
  EXPECT_EQ(f.Parse({"--snapshot-count=abc"}).message(),
            "invalid integer \"abc\" for --snapshot-count");
  EXPECT_EQ(f.Parse({"--snapshot-count"}).message(),
            "flag needs an argument: --snapshot-count");
  EXPECT_EQ(f.Parse({"--b=maybe"}).message(),
            "invalid boolean value \"maybe\" for --b");
}

TEST(FlagsTest, HelpAndUsage) {
  FlagSet f("kplane up", "Starts everything.");
  int nodes = 3;
  f.Int("nodes", &nodes, "Simulated nodes.");
  ASSERT_TRUE(f.Parse({"--help"}).ok());
  EXPECT_TRUE(f.help_requested());
  std::string u = f.Usage();
  EXPECT_NE(u.find("Usage: kplane up [flags]"), std::string::npos);
  EXPECT_NE(u.find("--nodes value"), std::string::npos);
  EXPECT_NE(u.find("(default 3)"), std::string::npos);
}

TEST(FlagsTest, OneDashLongNamesAsGo) {
  FlagSet f("etcd", "");
  std::string name, out;
  bool debug = false;
  f.String("name", &name, "");
  f.String("output", &out, "", 'o');
  f.Bool("debug", &debug, "");
  ASSERT_TRUE(f.Parse({"-name", "m1", "-debug", "-ojson"}).ok());
  EXPECT_EQ(name, "m1");
  EXPECT_TRUE(debug);
  EXPECT_EQ(out, "json");  // a short flag with its value stays one
  ASSERT_TRUE(f.Parse({"-name=m2"}).ok());
  EXPECT_EQ(name, "m2");
}

TEST(FlagsTest, SetByNameAsTheCommandLineWould) {
  FlagSet f("etcd", "");
  int64_t n = 0;
  bool b = false;
  f.Int64("snapshot-count", &n, "");
  f.Bool("pre-vote", &b, "");
  EXPECT_EQ(f.Names(),
            (std::vector<std::string>{"snapshot-count", "pre-vote"}));
  EXPECT_TRUE(f.Has("pre-vote"));
  EXPECT_TRUE(f.IsBool("pre-vote"));
  EXPECT_FALSE(f.IsSet("snapshot-count"));
  ASSERT_TRUE(f.Set("snapshot-count", "42").ok());
  EXPECT_EQ(n, 42);
  EXPECT_TRUE(f.IsSet("snapshot-count"));
  EXPECT_EQ(f.Set("nope", "1").message(), "unknown flag: --nope");
  EXPECT_EQ(f.Set("pre-vote", "sure").message(),
            "invalid boolean value \"sure\" for --pre-vote");
}

}  // namespace
}  // namespace kplane
