#include "base/status.h"

#include <gtest/gtest.h>

#include "base/statusor.h"

namespace kplane {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, CompactedCarriesRevision) {
  Status s = CompactedError(5000);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.Is(StatusCode::kCompacted));
  EXPECT_EQ(s.detail(), 5000);
  EXPECT_EQ(s.ToString(),
            "Compacted: mvcc: required revision has been compacted");
}

TEST(StatusTest, AnnotateKeepsCodeAndDetail) {
  Status s = FutureRevisionError(7).Annotate("range");
  EXPECT_EQ(s.code(), StatusCode::kFutureRevision);
  EXPECT_EQ(s.detail(), 7);
  EXPECT_EQ(s.message(), "range: mvcc: required revision is a future revision");
}

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  ASSIGN_OR_RETURN(int h, Half(x));
  *out = h;
  return Status::Ok();
}

TEST(StatusOrTest, ValueAndError) {
  StatusOr<int> a = Half(4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 2);
  StatusOr<int> b = Half(3);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "odd");
  EXPECT_EQ(b.value_or(-1), -1);
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseHalf(5, &out).code(), StatusCode::kInvalidArgument);
}

TEST(StatusOrTest, BuiltFromOkStatusIsInternalError) {
  StatusOr<int> v{Status::Ok()};
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> v = NotFoundError("gone");
  EXPECT_DEATH((void)v.value(), "NotFound: gone");
}

}  // namespace
}  // namespace kplane
