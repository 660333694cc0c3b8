// JWT auth tokens (--auth-token jwt,...) over gRPC on in-process members:
// a token in the "token" metadata names its user; forged, unsigned and
// other-key tokens are UNAUTHENTICATED "etcdserver: invalid auth token";
// one issued before an auth change is INVALID_ARGUMENT "etcdserver:
// revision of auth store is old"; a member that never issued it accepts
// it (stateless), and a verify-only member refuses Authenticate with etcd's
// ErrVerifyOnly (UNKNOWN).
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "base/base64.h"
#include "net/jws_test_keys.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/server/auth_token.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

// An ES256 provider from a fresh key: signing, or verify-only.
struct Keys {
  std::map<std::string, std::string> files;
  Keys() {
    net::PemKeyPair k = net::NewEcKeyPem("P-256");
    files = {{"priv", k.priv}, {"pub", k.pub}};
  }
  std::shared_ptr<const TokenProvider> Provider(const std::string& opts) {
    auto p = ParseAuthTokenOption(
        "jwt,sign-method=ES256," + opts,
        [this](const std::string& path) -> StatusOr<std::string> {
          return files.at(path);
        });
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : nullptr;
  }
};

// One member and its stubs.
struct Member {
  TestMember m;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Auth::Stub> auth;

  void Start(std::shared_ptr<const TokenProvider> tokens) {
    ASSERT_TRUE(m.Start({.auth_tokens = std::move(tokens)}).ok());
    kv = pb::KV::NewStub(m.Channel());
    auth = pb::Auth::NewStub(m.Channel());
  }
  // root (root role), alice (READWRITE on /app/), auth enabled: the same
  // sequence on every member, so their auth revisions agree.
  void Setup() {
    grpc::Status st = AddRootUser(auth.get(), "rootpw");
    ASSERT_TRUE(st.ok()) << st.error_message();
    {
      grpc::ClientContext ctx;
      pb::AuthUserAddRequest r;
      r.set_name("alice");
      r.set_password("alicepw");
      pb::AuthUserAddResponse resp;
      st = auth->UserAdd(&ctx, r, &resp);
      ASSERT_TRUE(st.ok()) << st.error_message();
    }
    {
      grpc::ClientContext ctx;
      pb::AuthRoleAddRequest r;
      r.set_name("app");
      pb::AuthRoleAddResponse resp;
      ASSERT_TRUE(auth->RoleAdd(&ctx, r, &resp).ok());
    }
    {
      grpc::ClientContext ctx;
      pb::AuthRoleGrantPermissionRequest r;
      r.set_name("app");
      r.mutable_perm()->set_permtype(authpb::Permission::READWRITE);
      r.mutable_perm()->set_key("/app/");
      r.mutable_perm()->set_range_end("/app0");
      pb::AuthRoleGrantPermissionResponse resp;
      ASSERT_TRUE(auth->RoleGrantPermission(&ctx, r, &resp).ok());
    }
    {
      grpc::ClientContext ctx;
      pb::AuthUserGrantRoleRequest r;
      r.set_user("alice");
      r.set_role("app");
      pb::AuthUserGrantRoleResponse resp;
      ASSERT_TRUE(auth->UserGrantRole(&ctx, r, &resp).ok());
    }
    grpc::ClientContext ctx;
    pb::AuthEnableResponse resp;
    st = auth->AuthEnable(&ctx, pb::AuthEnableRequest(), &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  grpc::Status Login(const std::string& user, const std::string& pw,
                     std::string* token) {
    grpc::ClientContext ctx;
    pb::AuthenticateRequest r;
    r.set_name(user);
    r.set_password(pw);
    pb::AuthenticateResponse resp;
    grpc::Status st = auth->Authenticate(&ctx, r, &resp);
    *token = resp.token();
    return st;
  }
  grpc::Status Range(const std::string& token) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("token", token);
    pb::RangeRequest r;
    r.set_key("/app/x");
    pb::RangeResponse resp;
    return kv->Range(&ctx, r, &resp);
  }
  grpc::Status RoleAdd(const std::string& token, const std::string& name) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("token", token);
    pb::AuthRoleAddRequest r;
    r.set_name(name);
    pb::AuthRoleAddResponse resp;
    return auth->RoleAdd(&ctx, r, &resp);
  }
};

TEST(AuthJwtGrpcTest, SignedTokensStatelessRefusalsWithEtcdsCodes) {
  Keys keys;
  Member a, b, verify_only;
  a.Start(keys.Provider("priv-key=priv,pub-key=pub"));
  b.Start(keys.Provider("priv-key=priv"));
  verify_only.Start(keys.Provider("pub-key=pub"));
  for (Member* m : {&a, &b, &verify_only}) m->Setup();

  std::string token;
  grpc::Status st = a.Login("alice", "alicepw", &token);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // Its own member, and members that never saw it issued.
  for (Member* m : {&a, &b, &verify_only}) {
    st = m->Range(token);
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  st = verify_only.Login("alice", "alicepw", &token);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(st.error_message(),
            "auth: token signing attempted with verify-only key");
  ASSERT_TRUE(a.Login("alice", "alicepw", &token).ok());

  // Forged, unsigned, another key's.
  const std::string root_claims =
      Base64UrlEncode(R"({"exp":9999999999,"revision":99,"username":"root"})");
  Keys other;
  for (const std::string& bad :
       {token.substr(0, token.find('.')) + "." + root_claims +
            token.substr(token.rfind('.')),
        Base64UrlEncode(R"({"alg":"none"})") + "." + root_claims + ".",
        *other.Provider("priv-key=priv")
             ->Assign("root", 99, Clock::Real()->WallNow()),
        std::string("alice.1")}) {
    st = a.Range(bad);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << bad;
    EXPECT_EQ(st.error_message(), "etcdserver: invalid auth token") << bad;
  }

  // An auth change makes the token old, on every member that sees it.
  std::string root;
  ASSERT_TRUE(a.Login("root", "rootpw", &root).ok());
  ASSERT_TRUE(a.RoleAdd(root, "other").ok());
  st = a.Range(token);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "etcdserver: revision of auth store is old");
  ASSERT_TRUE(a.Login("alice", "alicepw", &token).ok());
  EXPECT_TRUE(a.Range(token).ok());
}

}  // namespace
}  // namespace kplane::storage
