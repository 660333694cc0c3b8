#include "controllers/cidr_set.h"

#include <gtest/gtest.h>

#include <set>

namespace kplane::controllers {
namespace {

TEST(CidrSetTest, CutsTheClusterCidrIntoNodeSubnetsRoundRobin) {
  auto set = CidrSet::New("10.0.0.0/22", 24);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->size(), 4);
  EXPECT_EQ(*set->AllocateNext(), "10.0.0.0/24");
  EXPECT_EQ(*set->AllocateNext(), "10.0.1.0/24");
  ASSERT_TRUE(set->Release("10.0.0.0/24").ok());
  // Round robin: the released subnet comes back only after the rest.
  EXPECT_EQ(*set->AllocateNext(), "10.0.2.0/24");
  EXPECT_EQ(*set->AllocateNext(), "10.0.3.0/24");
  EXPECT_EQ(*set->AllocateNext(), "10.0.0.0/24");
  EXPECT_EQ(set->used(), 4);
}

TEST(CidrSetTest, ExhaustionIsResourceExhaustedUntilARelease) {
  auto set = CidrSet::New("192.168.0.0/16", 17);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(*set->AllocateNext(), "192.168.0.0/17");
  EXPECT_EQ(*set->AllocateNext(), "192.168.128.0/17");
  StatusOr<std::string> none = set->AllocateNext();
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(set->Release("192.168.128.0/17").ok());
  EXPECT_EQ(*set->AllocateNext(), "192.168.128.0/17");
}

TEST(CidrSetTest, OccupiedSubnetsAreSkipped) {
  auto set = CidrSet::New("10.0.0.0/16", 24);
  ASSERT_TRUE(set.ok());
  ASSERT_TRUE(set->Occupy("10.0.0.0/24").ok());
  ASSERT_TRUE(set->Occupy("10.0.2.0/23").ok());  // covers .2 and .3
  EXPECT_EQ(set->used(), 3);
  EXPECT_EQ(*set->AllocateNext(), "10.0.1.0/24");
  EXPECT_EQ(*set->AllocateNext(), "10.0.4.0/24");
  EXPECT_EQ(set->Occupy("10.1.0.0/24").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Occupy("10.0.0.0/8").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(set->Release("bogus").code(), StatusCode::kInvalidArgument);
}

TEST(CidrSetTest, SixtyFiveThousandSubnetsAtMostAndAllDistinct) {
  auto big = CidrSet::New("10.0.0.0/8", 24);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size(), 65536);
  std::set<std::string> seen;
  for (int i = 0; i < 65536; ++i) seen.insert(*big->AllocateNext());
  EXPECT_EQ(seen.size(), 65536u);
  EXPECT_EQ(*seen.rbegin(), "10.99.99.0/24");  // lexicographic, in range
  EXPECT_FALSE(big->AllocateNext().ok());
  EXPECT_EQ(CidrSet::New("10.0.0.0/8", 25).status().code(),
            StatusCode::kInvalidArgument);  // 2^17 subnets
  EXPECT_EQ(CidrSet::New("10.0.0.0/16", 15).status().code(),
            StatusCode::kInvalidArgument);  // node mask shorter
  EXPECT_EQ(CidrSet::New("10.0.0.0/16", 31).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CidrSet::New("fd00::/48", 64).status().code(),
            StatusCode::kInvalidArgument);  // IPv6
  EXPECT_EQ(CidrSet::New("10.0.0.0", 24).status().code(),
            StatusCode::kInvalidArgument);
  // Host bits are masked off, as Go's net.ParseCIDR.
  auto masked = CidrSet::New("10.0.0.7/30", 30);
  ASSERT_TRUE(masked.ok());
  EXPECT_EQ(*masked->AllocateNext(), "10.0.0.4/30");
}

}  // namespace
}  // namespace kplane::controllers
