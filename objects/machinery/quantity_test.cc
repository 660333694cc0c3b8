// resource.Quantity parsing and canonical printing; inputs and expectations
// follow the behaviour of k8s.io/apimachinery/pkg/api/resource.
#include "objects/machinery/quantity.h"

#include <gtest/gtest.h>

namespace kplane::machinery {
namespace {

using F = Quantity::Format;

TEST(QuantityTest, ParsesAndPrintsCanonically) {
  struct Case {
    const char* in;
    const char* canonical;
    F format;
  } cases[] = {
      {"0", "0", F::kDecimalSI},
      {"0Ki", "0", F::kBinarySI},
      {"0m", "0", F::kDecimalSI},
      {"1", "1", F::kDecimalSI},
      {"100m", "100m", F::kDecimalSI},
      {"0.5", "500m", F::kDecimalSI},
      {"0.1", "100m", F::kDecimalSI},
      {"1.5", "1500m", F::kDecimalSI},
      {"250m", "250m", F::kDecimalSI},
      {"1000m", "1", F::kDecimalSI},
      {"2k", "2k", F::kDecimalSI},
      {"50k", "50k", F::kDecimalSI},
      {"1000M", "1G", F::kDecimalSI},
      {"0.001T", "1G", F::kDecimalSI},
      {"1000u", "1m", F::kDecimalSI},
      {"1.08", "1080m", F::kDecimalSI},
      {"1080000000n", "1080m", F::kDecimalSI},
      {"100.035k", "100.035k", F::kDecimalSI},  // verbatim, as upstream
      {"10.035M", "10.035M", F::kDecimalSI},
      {"7.123456M", "7.123456M", F::kDecimalSI},
      {"0.00100k", "1", F::kDecimalSI},
      {"1500.5m", "1500500u", F::kDecimalSI},
      {"2.5P", "2500T", F::kDecimalSI},
      {"1.01E", "1010P", F::kDecimalSI},
      {"12E", "12E", F::kDecimalSI},
      {"3.001n", "4n", F::kDecimalSI},  // rounds up to the nano
      {"0.0000000001", "1n", F::kDecimalSI},
      {"0.00000012345", "124n", F::kDecimalSI},
      {".001", "1m", F::kDecimalSI},
      {".0001k", "100m", F::kDecimalSI},
      {"1.", "1.", F::kDecimalSI},
      {"1.G", "1.G", F::kDecimalSI},
      {"+5", "+5", F::kDecimalSI},  // kept verbatim, as upstream
      {"1Ki", "1Ki", F::kBinarySI},
      {"8Ki", "8Ki", F::kBinarySI},
      {"128Mi", "128Mi", F::kBinarySI},
      {"1024Mi", "1Gi", F::kBinarySI},
      {"307200Ki", "300Mi", F::kBinarySI},
      {"1.5Gi", "1536Mi", F::kBinarySI},
      {"0.5Mi", "512Ki", F::kBinarySI},
      {"100.035Ki", "102435840m", F::kBinarySI},
      {"1025Ki", "1025Ki", F::kBinarySI},
      {"3Ei", "3Ei", F::kBinarySI},
      {"9Ei", "9223372036854775807", F::kBinarySI},  // capped at 2^63-1
      {".001Ki", "1024m", F::kBinarySI},
      {".000000001Ki", "1024n", F::kDecimalSI},  // < 1: decimal
      {".000000000001Ki", "2n", F::kDecimalSI},
      {"1e3", "1e3", F::kDecimalExponent},
      {"1E6", "1E6", F::kDecimalExponent},
      {"1000e3", "1e6", F::kDecimalExponent},
      {"1E-3", "1E-3", F::kDecimalExponent},
      {"1.2e3", "1200", F::kDecimalExponent},
      {"1.3E+6", "1300e3", F::kDecimalExponent},
      {".001e12", "1e9", F::kDecimalExponent},
      {"0.001e0", "1e-3", F::kDecimalExponent},
      {"1000e-12", "1e-9", F::kDecimalExponent},
      {"0.5e-9", "1e-9", F::kDecimalExponent},
      {"-100m", "-100m", F::kDecimalSI},
      {"-1.5Gi", "-1536Mi", F::kBinarySI},
      {"-0.5", "-500m", F::kDecimalSI},
  };
  for (const auto& c : cases) {
    auto q = Quantity::Parse(c.in);
    ASSERT_TRUE(q.ok()) << c.in << ": " << q.status();
    EXPECT_EQ(q->String(), c.canonical) << c.in;
    EXPECT_EQ(q->format(), c.format) << c.in;
    // The canonical form parses back to the same amount.
    auto again = Quantity::Parse(q->String());
    ASSERT_TRUE(again.ok()) << q->String();
    EXPECT_EQ(again->Cmp(*q), 0) << c.in;
  }
}

TEST(QuantityTest, RejectsMalformed) {
  struct Case {
    const char* in;
    const char* error;
  } cases[] = {
      {"", "quantities must match the regular expression"},
      {"1.1.M", "quantities must match the regular expression"},
      {"1+1.0M", "quantities must match the regular expression"},
      {"aoeu", "quantities must match the regular expression"},
      {" 1", "quantities must match the regular expression"},
      {"1 ", "quantities must match the regular expression"},
      {"0.1mi", "unable to parse quantity's suffix"},
      {"0.1am", "quantities must match the regular expression"},
      {".5i", "unable to parse quantity's suffix"},
      {"1i", "unable to parse quantity's suffix"},
      {"-3.01i", "unable to parse quantity's suffix"},
      {"-3.01e-", "unable to parse quantity's suffix"},
      {"1KiB", "quantities must match the regular expression"},
  };
  for (const auto& c : cases) {
    auto q = Quantity::Parse(c.in);
    ASSERT_FALSE(q.ok()) << c.in << " parsed as " << q->String();
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find(c.error), std::string::npos)
        << c.in << ": " << q.status();
  }
}

TEST(QuantityTest, ValueAndMilliValueRoundUp) {
  struct Case {
    const char* in;
    int64_t value;
    int64_t milli;
  } cases[] = {
      {"100m", 1, 100},
      {"1", 1, 1000},
      {"1.5", 2, 1500},
      {"2k", 2000, 2000000},
      {"1Gi", 1073741824, 1073741824000},
      {"128Mi", 134217728, 134217728000},
      {"1n", 1, 1},
      {"1500u", 1, 2},
      {"0", 0, 0},
      {"-100m", -1, -100},
      {"1e3", 1000, 1000000},
  };
  for (const auto& c : cases) {
    Quantity q = Quantity::MustParse(c.in);
    EXPECT_EQ(q.Value(), c.value) << c.in;
    EXPECT_EQ(q.MilliValue(), c.milli) << c.in;
  }
}

TEST(QuantityTest, CompareAcrossFormats) {
  EXPECT_EQ(Quantity::MustParse("1Ki").Cmp(Quantity::MustParse("1024")), 0);
  EXPECT_EQ(Quantity::MustParse("1k").Cmp(Quantity::MustParse("1Ki")), -1);
  EXPECT_EQ(Quantity::MustParse("500m").Cmp(Quantity::MustParse("0.5")), 0);
  EXPECT_EQ(Quantity::MustParse("2").Cmp(Quantity::MustParse("1999m")), 1);
  EXPECT_EQ(Quantity::MustParse("-1").Cmp(Quantity()), -1);
  EXPECT_TRUE(Quantity::MustParse("1e3") == Quantity::MustParse("1k"));
  EXPECT_TRUE(Quantity().IsZero());
}

TEST(QuantityTest, AddAndSubKeepFormat) {
  Quantity q = Quantity::MustParse("100m");
  q.Add(Quantity::MustParse("400m"));
  EXPECT_EQ(q.String(), "500m");
  q.Add(Quantity::MustParse("1"));
  EXPECT_EQ(q.String(), "1500m");
  q.Sub(Quantity::MustParse("1500m"));
  EXPECT_TRUE(q.IsZero());
  EXPECT_EQ(q.String(), "0");

  Quantity mem = Quantity::MustParse("1Gi");
  mem.Add(Quantity::MustParse("512Mi"));
  EXPECT_EQ(mem.String(), "1536Mi");
  EXPECT_EQ(mem.format(), F::kBinarySI);

  // Adding to zero takes the other's format (upstream keeps the suffix).
  Quantity zero;
  zero.Add(Quantity::MustParse("1Ki"));
  EXPECT_EQ(zero.format(), F::kBinarySI);
  EXPECT_EQ(zero.String(), "1Ki");
  Quantity z2;
  z2.Sub(Quantity::MustParse("1Mi"));
  EXPECT_EQ(z2.String(), "-1Mi");

  Quantity n = Quantity::MustParse("5");
  n.Neg();
  EXPECT_EQ(n.String(), "-5");
}

// Sums past the 128-bit nano range clamp instead of overflowing (found by
// the quantity fuzz target: signed overflow, undefined behaviour).
TEST(QuantityTest, AddAndSubClampAtTheRange) {
  const Quantity big = Quantity::MustParse("92232337203685477580368547758");
  Quantity sum = big;
  sum.Add(big);
  EXPECT_GT(sum.Cmp(big), 0);
  Quantity twice = sum;
  twice.Add(big);
  EXPECT_EQ(twice.Cmp(sum), 0);  // already at the top
  // The top of the range still prints as text that parses back (39 digits
  // of nanos), so a clamped sum can be stored and read again.
  auto again = Quantity::Parse(sum.String());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again == sum);

  Quantity low = big;
  low.Neg();
  low.Sub(big);
  EXPECT_LT(low.Cmp(big), 0);
  low.Sub(big);
  Quantity neg_sum = sum;
  neg_sum.Neg();
  EXPECT_TRUE(low == neg_sum);  // the range is symmetric
  low.Neg();
  EXPECT_TRUE(low == sum);
  EXPECT_EQ(low.Value(), INT64_MAX);
}

TEST(QuantityTest, Constructors) {
  EXPECT_EQ(Quantity::FromInt64(5, F::kDecimalSI).String(), "5");
  EXPECT_EQ(Quantity::FromInt64(2048, F::kBinarySI).String(), "2Ki");
  EXPECT_EQ(Quantity::FromInt64(1000, F::kDecimalSI).String(), "1k");
  EXPECT_EQ(Quantity::FromMilli(250, F::kDecimalSI).String(), "250m");
  EXPECT_EQ(Quantity::FromMilli(5000, F::kBinarySI).String(), "5");
  EXPECT_EQ(Quantity::FromInt64(1000000000, F::kDecimalExponent).String(),
            "1e9");
  EXPECT_DOUBLE_EQ(Quantity::MustParse("1.5").AsApproximateDouble(), 1.5);
}

}  // namespace
}  // namespace kplane::machinery
