// AuthStore: permission checks (range ends, prefixes, from-key, unions of
// grants, txn compares and branches), admin rules, passwords, and simple
// token expiry on a fake clock.
#include "storage/server/auth_store.h"

#include <gtest/gtest.h>

#include <future>
#include <string>

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;
using Perm = authpb::Permission;

const std::string kFromKey("\0", 1);

class AuthStoreTest : public ::testing::Test {
 protected:
  AuthStoreTest()
      : auth_({.clock = &clock_,
               .token_ttl = seconds(300),
               .pbkdf2_iterations = 1000}) {}

  // Prepares and applies `req` as user `user`, as the log would.
  StatusOr<AuthStore::Applied> Do(storagepb::AuthRequest req,
                                  const std::string& user = "") {
    ASSIGN_OR_RETURN(storagepb::AuthRequest prepared,
                     auth_.Prepare(std::move(req)));
    auto applied = auth_.Apply(prepared, user, ++index_);
    auth_.NoteApplied(index_);  // as the applier does after each entry
    return applied;
  }
  void AddUser(const std::string& name, const std::string& pw) {
    storagepb::AuthRequest r;
    r.mutable_user_add()->set_name(name);
    r.mutable_user_add()->set_password(pw);
    ASSERT_TRUE(Do(r, "root").ok());
  }
  void AddRole(const std::string& name) {
    storagepb::AuthRequest r;
    r.mutable_role_add()->set_name(name);
    ASSERT_TRUE(Do(r, "root").ok());
  }
  void Grant(const std::string& user, const std::string& role) {
    storagepb::AuthRequest r;
    r.mutable_user_grant_role()->set_user(user);
    r.mutable_user_grant_role()->set_role(role);
    ASSERT_TRUE(Do(r, "root").ok());
  }
  void GrantPerm(const std::string& role, Perm::Type type,
                 const std::string& key, const std::string& end) {
    storagepb::AuthRequest r;
    auto* g = r.mutable_role_grant_permission();
    g->set_name(role);
    g->mutable_perm()->set_permtype(type);
    g->mutable_perm()->set_key(key);
    g->mutable_perm()->set_range_end(end);
    ASSERT_TRUE(Do(r, "root").ok()) << role;
  }
  void Enable() {
    storagepb::AuthRequest r;
    r.mutable_enable();
    ASSERT_TRUE(Do(r, "root").ok());
  }
  StatusOr<std::string> Login(const std::string& user, const std::string& pw) {
    storagepb::AuthRequest r;
    r.mutable_authenticate()->set_name(user);
    r.mutable_authenticate()->set_password(pw);
    ASSIGN_OR_RETURN(AuthStore::Applied a, Do(r));
    return static_cast<pb::AuthenticateResponse*>(a.response.get())->token();
  }

  // root (root role) and alice with role "app".
  void SetupUsers() {
    AddUser("root", "rootpw");
    Grant("root", "root");
    AddUser("alice", "alicepw");
    AddRole("app");
    Grant("alice", "app");
  }

  FakeClock clock_;
  AuthStore auth_;
  uint64_t index_ = 0;
};

TEST_F(AuthStoreTest, DisabledChecksNothing) {
  EXPECT_TRUE(auth_.CheckPut("", "k").ok());
  EXPECT_TRUE(auth_.CheckRange("nobody", "a", kFromKey).ok());
  EXPECT_TRUE(auth_.CheckAdmin("").ok());
  EXPECT_FALSE(auth_.enabled());
}

TEST_F(AuthStoreTest, EnableNeedsRootUserWithRootRole) {
  storagepb::AuthRequest r;
  r.mutable_enable();
  EXPECT_EQ(Do(r).status().message(), "etcdserver: root user does not exist");
  AddUser("root", "pw");
  EXPECT_EQ(Do(r).status().message(),
            "etcdserver: root user does not have root role");
  Grant("root", "root");  // the root role need not exist as a role
  EXPECT_TRUE(Do(r).ok());
  EXPECT_TRUE(auth_.enabled());
}

TEST_F(AuthStoreTest, PointPrefixRangeAndFromKey) {
  SetupUsers();
  GrantPerm("app", Perm::READWRITE, "one", "");  // a single key
  GrantPerm("app", Perm::READ, "/p/", "/p0");    // the prefix /p/
  GrantPerm("app", Perm::WRITE, "m", "n");       // [m, n)
  GrantPerm("app", Perm::READ, "x", kFromKey);   // every key >= x
  Enable();
  const std::string u = "alice";
  EXPECT_TRUE(auth_.CheckPut(u, "one").ok());
  EXPECT_TRUE(auth_.CheckRange(u, "one", "").ok());
  EXPECT_FALSE(auth_.CheckPut(u, "one1").ok());
  EXPECT_FALSE(auth_.CheckRange(u, "one", "onf").ok());  // more than one key
  EXPECT_TRUE(auth_.CheckRange(u, "one", std::string("one\0", 4)).ok());

  EXPECT_TRUE(auth_.CheckRange(u, "/p/a", "").ok());
  EXPECT_TRUE(auth_.CheckRange(u, "/p/", "/p0").ok());
  EXPECT_TRUE(auth_.CheckRange(u, "/p/a", "/p/b").ok());
  EXPECT_FALSE(auth_.CheckRange(u, "/p", "/p0").ok());   // starts before
  EXPECT_FALSE(auth_.CheckRange(u, "/p/", "/p1").ok());  // ends after
  EXPECT_FALSE(auth_.CheckPut(u, "/p/a").ok());          // READ only

  EXPECT_TRUE(auth_.CheckPut(u, "m").ok());
  EXPECT_TRUE(auth_.CheckPut(u, "mzzz").ok());
  EXPECT_FALSE(auth_.CheckPut(u, "n").ok());  // the end is exclusive
  EXPECT_TRUE(auth_.CheckDeleteRange(u, "m", "n").ok());
  EXPECT_FALSE(auth_.CheckDeleteRange(u, "m", kFromKey).ok());
  EXPECT_FALSE(auth_.CheckRange(u, "m", "").ok());  // WRITE only

  EXPECT_TRUE(auth_.CheckRange(u, "x", kFromKey).ok());
  EXPECT_TRUE(auth_.CheckRange(u, "y", kFromKey).ok());
  EXPECT_TRUE(auth_.CheckRange(u, "zzzz", "").ok());
  EXPECT_FALSE(auth_.CheckRange(u, "w", kFromKey).ok());
  EXPECT_EQ(auth_.CheckRange(u, "w", "").message(),
            "etcdserver: permission denied");
  EXPECT_EQ(auth_.CheckRange(u, "w", "").code(), StatusCode::kPermissionDenied);
}

TEST_F(AuthStoreTest, AdjacentGrantsCoverTheirUnion) {
  SetupUsers();
  AddRole("more");
  Grant("alice", "more");
  GrantPerm("app", Perm::READ, "a", "c");
  GrantPerm("more", Perm::READWRITE, "c", "e");  // another role
  Enable();
  EXPECT_TRUE(auth_.CheckRange("alice", "a", "e").ok());
  EXPECT_TRUE(auth_.CheckRange("alice", "b", "d").ok());
  EXPECT_FALSE(auth_.CheckRange("alice", "a", "f").ok());
  GrantPerm("more", Perm::READ, "e", kFromKey);
  EXPECT_TRUE(auth_.CheckRange("alice", "a", kFromKey).ok());
  // A gap breaks the cover.
  storagepb::AuthRequest r;
  r.mutable_role_revoke_permission()->set_role("more");
  r.mutable_role_revoke_permission()->set_key("c");
  r.mutable_role_revoke_permission()->set_range_end("e");
  ASSERT_TRUE(Do(r, "root").ok());
  EXPECT_FALSE(auth_.CheckRange("alice", "a", kFromKey).ok());
  EXPECT_TRUE(auth_.CheckRange("alice", "e", kFromKey).ok());
}

TEST_F(AuthStoreTest, WhoIsChecked) {
  SetupUsers();
  GrantPerm("app", Perm::READWRITE, "/app/", "/app0");
  Enable();
  EXPECT_EQ(auth_.CheckPut("", "/app/x").message(),
            "etcdserver: user name is empty");
  EXPECT_EQ(auth_.CheckPut("ghost", "/app/x").code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(auth_.CheckPut("root", "anything").ok());  // the root role
  EXPECT_TRUE(auth_.CheckAdmin("root").ok());
  EXPECT_EQ(auth_.CheckAdmin("alice").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(auth_.CheckAdmin("").message(), "etcdserver: user name is empty");
  EXPECT_EQ(auth_.CheckAdmin("ghost").message(),
            "etcdserver: user name not found");
}

TEST_F(AuthStoreTest, TxnComparesAndBothBranches) {
  SetupUsers();
  GrantPerm("app", Perm::READWRITE, "/app/", "/app0");
  GrantPerm("app", Perm::READ, "/ro", "");
  Enable();
  auto txn = [] {
    pb::TxnRequest t;
    auto* c = t.add_compare();
    c->set_key("/app/a");
    t.add_success()->mutable_request_put()->set_key("/app/b");
    t.add_failure()->mutable_request_range()->set_key("/ro");
    return t;
  };
  EXPECT_TRUE(auth_.CheckTxn("alice", txn()).ok());

  pb::TxnRequest compare = txn();
  compare.mutable_compare(0)->set_key("/other");
  EXPECT_FALSE(auth_.CheckTxn("alice", compare).ok());
  pb::TxnRequest compare_range = txn();
  compare_range.mutable_compare(0)->set_range_end("/app1");  // past /app0
  EXPECT_FALSE(auth_.CheckTxn("alice", compare_range).ok());

  pb::TxnRequest success = txn();
  success.add_success()->mutable_request_put()->set_key("/ro");  // READ only
  EXPECT_FALSE(auth_.CheckTxn("alice", success).ok());

  // The failure branch is checked although it may not run.
  pb::TxnRequest failure = txn();
  auto* d = failure.add_failure()->mutable_request_delete_range();
  d->set_key("/app/");
  d->set_range_end("/app0");
  EXPECT_TRUE(auth_.CheckTxn("alice", failure).ok());
  d->set_range_end(kFromKey);
  EXPECT_FALSE(auth_.CheckTxn("alice", failure).ok());

  // A delete with prev_kv needs READ too; a put with prev_kv as well.
  pb::TxnRequest prev = txn();
  auto* pd = prev.add_success()->mutable_request_delete_range();
  pd->set_key("/app/x");
  pd->set_prev_kv(true);
  EXPECT_TRUE(auth_.CheckTxn("alice", prev).ok());

  // A nested txn is looked into (etcd 3.4 does not).
  pb::TxnRequest nested = txn();
  *nested.add_success()->mutable_request_txn() = compare;
  EXPECT_FALSE(auth_.CheckTxn("alice", nested).ok());
  EXPECT_TRUE(auth_.CheckTxn("root", nested).ok());
}

TEST_F(AuthStoreTest, ManagementNeedsRootOnceEnabled) {
  SetupUsers();
  Enable();
  storagepb::AuthRequest add;
  add.mutable_user_add()->set_name("eve");
  add.mutable_user_add()->set_password("pw");
  EXPECT_EQ(Do(add, "alice").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Do(add, "").status().message(), "etcdserver: user name is empty");
  EXPECT_TRUE(Do(add, "root").ok());
  // A user reads himself, and a role he holds; nothing else.
  storagepb::AuthRequest get;
  get.mutable_user_get()->set_name("alice");
  EXPECT_TRUE(Do(get, "alice").ok());
  get.mutable_user_get()->set_name("root");
  EXPECT_FALSE(Do(get, "alice").ok());
  storagepb::AuthRequest role;
  role.mutable_role_get()->set_role("app");
  EXPECT_TRUE(Do(role, "alice").ok());
  role.mutable_role_get()->set_role("root");
  EXPECT_FALSE(Do(role, "alice").ok());
  // root stays root while enabled.
  storagepb::AuthRequest del;
  del.mutable_user_delete()->set_name("root");
  EXPECT_EQ(Do(del, "root").status().message(),
            "etcdserver: invalid auth management");
  storagepb::AuthRequest revoke;
  revoke.mutable_user_revoke_role()->set_name("root");
  revoke.mutable_user_revoke_role()->set_role("root");
  EXPECT_EQ(Do(revoke, "root").status().message(),
            "etcdserver: invalid auth management");
}

TEST_F(AuthStoreTest, PasswordsAreSaltedHashesCheckedByAuthenticate) {
  SetupUsers();
  storagepb::AuthRequest add;
  add.mutable_user_add()->set_name("bob");
  add.mutable_user_add()->set_password("secret");
  StatusOr<storagepb::AuthRequest> p1 = auth_.Prepare(add);
  StatusOr<storagepb::AuthRequest> p2 = auth_.Prepare(add);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(p1->user_add().password(), "");                 // never in the log
  EXPECT_NE(p1->hashed_password(), p2->hashed_password());  // salted
  EXPECT_EQ(p1->hashed_password().find("secret"), std::string::npos);
  EXPECT_TRUE(AuthStore::PasswordMatches(p1->hashed_password(), "secret"));
  EXPECT_FALSE(AuthStore::PasswordMatches(p1->hashed_password(), "secreT"));
  EXPECT_FALSE(AuthStore::PasswordMatches("garbage", "secret"));

  storagepb::AuthRequest login;
  login.mutable_authenticate()->set_name("alice");
  login.mutable_authenticate()->set_password("alicepw");
  EXPECT_EQ(auth_.Prepare(login).status().message(),
            "etcdserver: authentication is not enabled");
  Enable();
  EXPECT_TRUE(Login("alice", "alicepw").ok());
  EXPECT_EQ(Login("alice", "bad").status().message(),
            "etcdserver: authentication failed, invalid user ID or password");
  EXPECT_EQ(Login("nobody", "x").status().message(),
            "etcdserver: authentication failed, invalid user ID or password");
  StatusOr<storagepb::AuthRequest> prepared = auth_.Prepare(login);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->authenticate().password(), "");
  EXPECT_EQ(prepared->simple_token().size(), 16u);
}

TEST_F(AuthStoreTest, TokensExpireAfterTheTtlSinceLastUse) {
  SetupUsers();
  Enable();
  StatusOr<std::string> token = Login("alice", "alicepw");
  ASSERT_TRUE(token.ok());
  EXPECT_NE(token->find('.'), std::string::npos);  // <prefix>.<index>
  EXPECT_EQ(*auth_.UserForToken(*token), "alice");
  EXPECT_EQ(auth_.UserForToken("nope.1").status().code(),
            StatusCode::kUnauthenticated);
  clock_.Advance(seconds(299));
  EXPECT_TRUE(auth_.UserForToken(*token).ok());  // renews it
  clock_.Advance(seconds(299));
  EXPECT_TRUE(auth_.UserForToken(*token).ok());
  clock_.Advance(seconds(300));
  EXPECT_EQ(auth_.UserForToken(*token).status().message(),
            "etcdserver: invalid auth token");
  EXPECT_EQ(auth_.TokenCount(), 0u);
}

TEST_F(AuthStoreTest, TokensEndWithPasswordChangeDeleteAndDisable) {
  SetupUsers();
  Enable();
  StatusOr<std::string> a = Login("alice", "alicepw");
  StatusOr<std::string> r = Login("root", "rootpw");
  ASSERT_TRUE(a.ok() && r.ok());
  storagepb::AuthRequest pw;
  pw.mutable_user_change_password()->set_name("alice");
  pw.mutable_user_change_password()->set_password("new");
  ASSERT_TRUE(Do(pw, "root").ok());
  EXPECT_FALSE(auth_.UserForToken(*a).ok());
  EXPECT_TRUE(auth_.UserForToken(*r).ok());
  EXPECT_TRUE(Login("alice", "new").ok());
  storagepb::AuthRequest off;
  off.mutable_disable();
  ASSERT_TRUE(Do(off, "root").ok());
  EXPECT_EQ(auth_.TokenCount(), 0u);
  EXPECT_EQ(auth_.ResolveToken(*r).value(), "");  // ignored while disabled
}

TEST_F(AuthStoreTest, RecordRoundTripsAndLoadDropsTokens) {
  SetupUsers();
  GrantPerm("app", Perm::READ, "/app/", "/app0");
  Enable();
  ASSERT_TRUE(Login("alice", "alicepw").ok());
  storagepb::AuthRecord rec = auth_.Record();
  EXPECT_TRUE(rec.enabled());
  EXPECT_EQ(rec.users_size(), 2);
  EXPECT_EQ(rec.roles_size(), 1);
  AuthStore other({.clock = &clock_});
  other.Load(rec);
  EXPECT_TRUE(other.enabled());
  EXPECT_TRUE(other.CheckRange("alice", "/app/x", "").ok());
  EXPECT_FALSE(other.CheckRange("alice", "/x", "").ok());
  EXPECT_EQ(other.Record().SerializeAsString(), rec.SerializeAsString());
  auth_.Load(rec);
  EXPECT_EQ(auth_.TokenCount(), 0u);
}

// A token names the raft index of its Authenticate entry; a member that
// has not applied that index yet (a follower behind the leader that
// answered the login) defers the request until it has, as etcd's simple
// tokens wait, instead of calling the token invalid. The wait holds no
// thread, and is bounded in time and in waiters.
TEST_F(AuthStoreTest, TokenOfAnIndexNotAppliedYetIsWaitedFor) {
  SetupUsers();
  Enable();
  storagepb::AuthRequest login;
  login.mutable_authenticate()->set_name("alice");
  login.mutable_authenticate()->set_password("alicepw");
  StatusOr<storagepb::AuthRequest> prepared = auth_.Prepare(login);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const std::string token =
      prepared->simple_token() + "." + std::to_string(index_ + 1);
  std::promise<StatusOr<std::string>> user;
  ASSERT_TRUE(auth_.DeferUntilTokenIndex(
      token, [&] { user.set_value(auth_.UserForToken(token)); }));
  ASSERT_TRUE(auth_.Apply(*prepared, "", ++index_).ok());
  auth_.NoteApplied(index_);
  StatusOr<std::string> got = user.get_future().get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "alice");
  // Applied now: nothing to wait for.
  EXPECT_FALSE(auth_.DeferUntilTokenIndex(token, [] {}));
  EXPECT_FALSE(auth_.DeferUntilTokenIndex("no-index", [] {}));

  // A token of an applied index that is unknown is invalid at once; one of
  // an index never reached, after the wait (the lookup does not wait).
  EXPECT_EQ(
      auth_.UserForToken("unknown." + std::to_string(index_)).status().code(),
      StatusCode::kUnauthenticated);
  std::promise<StatusOr<std::string>> forged;
  ASSERT_TRUE(auth_.DeferUntilTokenIndex("forged.999999", [&] {
    forged.set_value(auth_.UserForToken("forged.999999"));
  }));
  clock_.WaitForWaiters(1);
  clock_.Advance(seconds(2));
  EXPECT_EQ(forged.get_future().get().status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(AuthStoreTest, TokenIndexWaitersAreCapped) {
  AuthStore capped({.clock = &clock_, .max_token_index_waiters = 1});
  std::promise<void> first;
  ASSERT_TRUE(capped.DeferUntilTokenIndex("a.5", [&] { first.set_value(); }));
  // The cap is taken: the second goes on at once (its lookup then fails).
  EXPECT_FALSE(capped.DeferUntilTokenIndex("b.5", [] { ADD_FAILURE(); }));
  EXPECT_EQ(capped.UserForToken("b.5").status().code(),
            StatusCode::kUnauthenticated);
  capped.NoteApplied(5);
  first.get_future().get();
}

}  // namespace
}  // namespace kplane::storage
