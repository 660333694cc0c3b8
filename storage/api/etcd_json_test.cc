#include "storage/api/etcd_json.h"

#include <gtest/gtest.h>

#include "schemas/rpc.pb.h"

namespace kplane::etcdapi {
namespace {

TEST(EtcdJsonTest, EncodesLikeEtcdGateway) {
  etcdserverpb::RangeResponse r;
  r.mutable_header()->set_cluster_id(14841639068965178418ull);
  r.mutable_header()->set_revision(5);
  auto* kv = r.add_kvs();
  kv->set_key("foo");
  kv->set_create_revision(2);
  kv->set_mod_revision(2);
  kv->set_version(1);
  r.set_count(1);
  // int64/uint64 as strings, zero values omitted, empty value omitted.
  EXPECT_EQ(ToJson(r),
            "{\"header\":{\"cluster_id\":\"14841639068965178418\","
            "\"revision\":\"5\"},\"kvs\":[{\"key\":\"Zm9v\","
            "\"create_revision\":\"2\",\"mod_revision\":\"2\","
            "\"version\":\"1\"}],\"count\":\"1\"}");
  etcdserverpb::WatchResponse w;
  w.add_events()->set_type(mvccpb::Event::DELETE);
  EXPECT_EQ(ToJson(w), "{\"events\":[{\"type\":\"DELETE\"}]}");
}

TEST(EtcdJsonTest, ParsesStringsNumbersNamesAndIgnoresUnknown) {
  etcdserverpb::RangeRequest r;
  ASSERT_TRUE(ParseJson(R"({"key":"Zm9v","limit":"3","revision":7,
      "sort_order":"DESCEND","sort_target":3,"junk":{"x":1}})",
                        &r)
                  .ok());
  EXPECT_EQ(r.key(), "foo");
  EXPECT_EQ(r.limit(), 3);
  EXPECT_EQ(r.revision(), 7);
  EXPECT_EQ(r.sort_order(), etcdserverpb::RangeRequest::DESCEND);
  EXPECT_EQ(r.sort_target(), etcdserverpb::RangeRequest::MOD);
  ASSERT_TRUE(ParseJson("  ", &r).ok());
  EXPECT_EQ(r.key(), "");
  EXPECT_EQ(ParseJson("{\"key\":", &r).code(), StatusCode::kInvalidArgument);
}

TEST(EtcdJsonTest, ErrorsRoundTrip) {
  HttpError e = StatusToError(CompactedError(5));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.grpc_code, 11);
  EXPECT_EQ(e.Body(),
            "{\"error\":\"etcdserver: mvcc: required revision has been "
            "compacted\",\"message\":\"etcdserver: mvcc: required revision "
            "has been compacted\",\"code\":11}");
  Status back = ErrorToStatus(e.http_status, e.Body());
  EXPECT_EQ(back.code(), StatusCode::kCompacted);

  e = StatusToError(NotFoundError("etcdserver: requested lease not found"));
  EXPECT_EQ(e.http_status, 404);
  EXPECT_EQ(ErrorToStatus(404, e.Body()).code(), StatusCode::kNotFound);
  e = StatusToError(
      FailedPreconditionError("etcdserver: lease already exists"));
  EXPECT_EQ(e.http_status, 412);
  e = StatusToError(Status(StatusCode::kNoSpace,
                           "etcdserver: mvcc: database space exceeded"));
  EXPECT_EQ(e.http_status, 429);
  EXPECT_EQ(ErrorToStatus(429, e.Body()).code(), StatusCode::kNoSpace);
  // Not an etcd body (e.g. the gateway's plain 404).
  EXPECT_EQ(ErrorToStatus(404, "Not Found\n").code(), StatusCode::kNotFound);
}

TEST(EtcdJsonTest, PrefixRangeEnd) {
  EXPECT_EQ(PrefixRangeEnd("a"), "b");
  EXPECT_EQ(PrefixRangeEnd("/registry/pods/"), "/registry/pods0");
  EXPECT_EQ(PrefixRangeEnd("a\xff"), "b");
  EXPECT_EQ(PrefixRangeEnd("\xff"), std::string(1, '\0'));
}

}  // namespace
}  // namespace kplane::etcdapi
