#include "informer/api_errors.h"

#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/envelope.h"

namespace kplane::informer {
namespace {

objects::metav1::Status MakeStatus(const std::string& reason, int code,
                               const std::string& message) {
  objects::metav1::Status st;
  st.set_status("Failure");
  st.set_reason(reason);
  st.set_code(code);
  st.set_message(message);
  return st;
}

TEST(ApiErrorsTest, ReasonsMapToCodesAndBack) {
  struct Case {
    std::string reason;
    int http;
    StatusCode code;
    bool (*pred)(const Status&);
  };
  const Case cases[] = {
      {"NotFound", 404, StatusCode::kNotFound, IsNotFound},
      {"AlreadyExists", 409, StatusCode::kAlreadyExists, IsAlreadyExists},
      {"Conflict", 409, StatusCode::kConflict, IsConflict},
      {"Expired", 410, StatusCode::kExpired, IsExpired},
      {"Invalid", 422, StatusCode::kInvalidArgument, IsInvalid},
      {"BadRequest", 400, StatusCode::kInvalidArgument, IsBadRequest},
      {"Forbidden", 403, StatusCode::kPermissionDenied, IsForbidden},
      {"Unauthorized", 401, StatusCode::kUnauthenticated, IsUnauthorized},
      {"TooManyRequests", 429, StatusCode::kResourceExhausted,
       IsTooManyRequests},
      {"InternalError", 500, StatusCode::kInternal, IsInternalError},
      {"ServiceUnavailable", 503, StatusCode::kUnavailable,
       IsServiceUnavailable},
      {"Timeout", 504, StatusCode::kDeadlineExceeded, IsTimeout},
      {"ServerTimeout", 500, StatusCode::kDeadlineExceeded, IsTimeout},
  };
  for (const Case& c : cases) {
    Status s = StatusFromApiStatus(MakeStatus(c.reason, c.http, "msg"), c.http);
    EXPECT_EQ(s.code(), c.code) << c.reason;
    EXPECT_TRUE(c.pred(s)) << c.reason;
    EXPECT_EQ(HttpCodeOf(s), c.http) << c.reason;
    EXPECT_EQ(ReasonOf(s), c.reason) << c.reason;
    objects::metav1::Status back = ApiStatusOf(s);
    EXPECT_EQ(back.reason(), c.reason);
    EXPECT_EQ(back.code(), c.http);
    EXPECT_EQ(back.message(), "msg");
    EXPECT_EQ(back.status(), "Failure");
  }
  // Gone is an Expired for every caller.
  Status gone = StatusFromApiStatus(MakeStatus("Gone", 410, "gone"), 410);
  EXPECT_TRUE(IsExpired(gone));
  EXPECT_EQ(ReasonOf(gone), "Expired");
  // Predicates do not confuse neighbours.
  Status conflict =
      StatusFromApiStatus(MakeStatus("Conflict", 409, "stale"), 409);
  EXPECT_FALSE(IsAlreadyExists(conflict));
  EXPECT_FALSE(IsNotFound(conflict));
  Status bad = StatusFromApiStatus(MakeStatus("BadRequest", 400, "x"), 400);
  EXPECT_FALSE(IsInvalid(bad));
}

TEST(ApiErrorsTest, DecodesJsonAndProtobufStatusBodies) {
  objects::metav1::Status st =
      MakeStatus("NotFound", 404, "pods \"web\" not found");
  std::string json = objects::EncodeJson(st, {"v1", "Status"});
  Status s = StatusFromResponse(404, "application/json", json);
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_EQ(s.message(), "pods \"web\" not found");

  std::string pb = objects::EncodeEnvelope(st, {"v1", "Status"});
  s = StatusFromResponse(404, "application/vnd.kubernetes.protobuf", pb);
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_EQ(s.message(), "pods \"web\" not found");
}

TEST(ApiErrorsTest, NonStatusBodiesAreClassifiedByHttpCode) {
  Status s = StatusFromResponse(503, "text/html", "<html>down</html>");
  EXPECT_TRUE(IsServiceUnavailable(s));
  EXPECT_NE(s.message().find("<html>down</html>"), std::string::npos);
  s = StatusFromResponse(409, "application/json", "");
  EXPECT_TRUE(IsConflict(s));
  s = StatusFromResponse(418, "", "teapot");
  EXPECT_EQ(s.code(), StatusCode::kUnknown);
  EXPECT_EQ(HttpCodeOf(s), 418);
}

TEST(ApiErrorsTest, TransportErrorsHaveNoHttpCode) {
  Status refused = UnavailableError("connection refused");
  EXPECT_EQ(HttpCodeOf(refused), 0);
  EXPECT_FALSE(IsServiceUnavailable(refused));
  EXPECT_EQ(ApiStatusOf(refused).code(), 503);
  EXPECT_EQ(ApiStatusOf(Status::Ok()).status(), "Success");
  // A locally made NotFound (a lister miss) is still a NotFound.
  EXPECT_TRUE(IsNotFound(NotFoundError("x")));
}

}  // namespace
}  // namespace kplane::informer
