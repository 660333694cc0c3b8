#include "storage/etcdjson/json_stream.h"

#include <gtest/gtest.h>

#include "schemas/rpc.pb.h"

namespace kplane::etcdjson {
namespace {

std::vector<std::string> Drain(JsonObjectSplitter* s, Status* err) {
  std::vector<std::string> out;
  std::string obj;
  while (s->Next(&obj, err)) out.push_back(obj);
  return out;
}

TEST(JsonObjectSplitter, ObjectSpanningReadsAndBracesInStrings) {
  JsonObjectSplitter s;
  Status err;
  s.Feed(R"({"result":{"a":"}")");
  EXPECT_TRUE(Drain(&s, &err).empty());
  EXPECT_TRUE(err.ok());
  s.Feed("}}\n{\"resu");
  auto got = Drain(&s, &err);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], R"({"result":{"a":"}"}})");
  s.Feed("lt\":{}}\n{\"result\":{}}\n");
  got = Drain(&s, &err);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], R"({"result":{}})");
  EXPECT_EQ(got[1], R"({"result":{}})");
  EXPECT_EQ(s.buffered(), 0u);
}

TEST(JsonObjectSplitter, EscapedQuotesAndArraysAndNoSeparator) {
  JsonObjectSplitter s;
  Status err;
  s.Feed(R"({"a":"x\"}{","b":[{"c":"]"}]}{"d":1})");
  auto got = Drain(&s, &err);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], R"({"a":"x\"}{","b":[{"c":"]"}]})");
  EXPECT_EQ(got[1], R"({"d":1})");
}

TEST(JsonObjectSplitter, ByteAtATime) {
  const std::string stream =
      "{\"result\":{\"k\":\"a\\\\\"}}\n{\"result\":{\"n\":[1,2]}}\n";
  JsonObjectSplitter s;
  Status err;
  std::vector<std::string> got;
  for (char c : stream) {
    s.Feed(std::string_view(&c, 1));
    auto part = Drain(&s, &err);
    got.insert(got.end(), part.begin(), part.end());
    ASSERT_TRUE(err.ok());
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], "{\"result\":{\"k\":\"a\\\\\"}}");
  EXPECT_EQ(got[1], "{\"result\":{\"n\":[1,2]}}");
}

TEST(JsonObjectSplitter, RejectsNonObjectStream) {
  JsonObjectSplitter s;
  Status err;
  s.Feed("Not Found\n");
  EXPECT_TRUE(Drain(&s, &err).empty());
  EXPECT_EQ(err.code(), StatusCode::kInvalidArgument);
}

TEST(JsonObjectSplitter, ObjectsUpToTheBoundPassLargerOnesFailForGood) {
  JsonObjectSplitter s(/*max_object_bytes=*/18);
  Status err;
  s.Feed("{\"k\":\"0123456789\"}\n");  // exactly 18 bytes
  EXPECT_EQ(Drain(&s, &err),
            std::vector<std::string>{"{\"k\":\"0123456789\"}"});
  EXPECT_TRUE(err.ok());
  // An unterminated object: refused once it passes the bound, however the
  // bytes arrive, and nothing more is buffered.
  s.Feed("{\"k\":\"");
  EXPECT_TRUE(Drain(&s, &err).empty());
  EXPECT_TRUE(err.ok());
  s.Feed(std::string(1000, 'x'));
  EXPECT_TRUE(Drain(&s, &err).empty());
  EXPECT_EQ(err.code(), StatusCode::kResourceExhausted) << err;
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.buffered(), 0u);
  s.Feed("\"}{}");
  EXPECT_TRUE(Drain(&s, &err).empty());
  EXPECT_EQ(err.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.buffered(), 0u);
}

TEST(ParseStreamMessage, Result) {
  etcdserverpb::WatchResponse r;
  ASSERT_TRUE(ParseStreamMessage(
                  R"({"result":{"header":{"revision":"7"},"created":true,)"
                  R"("events":[{"type":"DELETE","kv":{"key":"YQ==",)"
                  R"("mod_revision":"7"}}]}})",
                  &r)
                  .ok());
  EXPECT_TRUE(r.created());
  EXPECT_EQ(r.header().revision(), 7);
  ASSERT_EQ(r.events_size(), 1);
  EXPECT_EQ(r.events(0).type(), mvccpb::Event::DELETE);
  EXPECT_EQ(r.events(0).kv().key(), "a");
}

TEST(ParseStreamMessage, GatewayStreamError) {
  etcdserverpb::WatchResponse r;
  Status s = ParseStreamMessage(
      R"({"error":{"grpc_code":14,"http_code":503,)"
      R"("message":"etcdserver: no leader","http_status":"Service Unavailable"}})",
      &r);
  EXPECT_EQ(s.code(), StatusCode::kNotLeader);
  EXPECT_EQ(s.message(), "etcdserver: no leader");
}

TEST(ParseStreamMessage, UnaryShapedErrorAndGarbage) {
  etcdserverpb::WatchResponse r;
  Status s = ParseStreamMessage(
      R"({"error":"etcdserver: mvcc: required revision has been compacted",)"
      R"("message":"etcdserver: mvcc: required revision has been compacted",)"
      R"("code":11})",
      &r);
  EXPECT_EQ(s.code(), StatusCode::kCompacted);
  EXPECT_EQ(ParseStreamMessage("{\"x\":1}", &r).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStreamMessage("{oops", &r).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kplane::etcdjson
