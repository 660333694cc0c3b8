// AuthStore: etcd 3.4's auth (auth/store.go, simple_token.go,
// range_perm_cache.go) for one member: users, roles, key-range
// permissions, the enabled flag, and the simple tokens handed out by
// Authenticate.
//
// The state (storagepb::AuthRecord) changes only through the raft log:
// a front Prepare()s a request (hashes a new password, checks the password
// of an Authenticate and draws the token's random prefix), proposes it,
// and every member Apply()s the committed entry, so all members hold the
// same users, roles and tokens. The applier persists Record() with the
// membership (cluster.pb; snapshots carry it) when Apply reports a change.
//
// Checks (OK whenever auth is disabled; `user` is the authenticated name,
// empty for none):
//   CheckRange / CheckPut / CheckDeleteRange / CheckTxn  key permissions,
//       as etcd's authApplierV3 (a txn needs READ on every compare and the
//       permissions of every op of both branches, nested txns included)
//   CheckAdmin  the root role (user and role management, auth disable,
//       defragment, hash, snapshot, move-leader)
// Permissions cover a range only as a whole: [a, c) is allowed by grants
// of [a, b) and [b, c) together, as etcd's interval tree Contains().
//
// Passwords: PBKDF2-HMAC-SHA256 with a 16-byte random salt per user (etcd
// uses bcrypt, which Debian's OpenSSL 3 lacks); compared in constant time.
// Tokens (etcd's --auth-token; auth_token.h):
//   simple (the default): "<16 letters>.<raft index>", valid for
//     `token_ttl` after their last use on the injected Clock; dropped on
//     auth disable and when their user is deleted or changes password.
//     They live in memory only: after a restart, only those whose
//     Authenticate entries the log replays (past the store's durable index)
//     exist again, as with etcd.
//   JWT (options.tokens set): each member signs the token when it applies
//     the Authenticate entry (only the asking member's copy is answered),
//     nothing is remembered, and any member with the key checks a token
//     alone: signature, algorithm, expiry (the clock's WallNow()). A token
//     issued before a later change of users, roles or permissions (its
//     revision claim below revision()) is refused with AuthOldRevision,
//     as etcd refuses it; clients then authenticate again.
//
// Hot path: enabled() is one atomic load; with auth disabled no check
// takes a lock.
//
// Thread-safety: all methods are safe from any thread (mu_ is a leaf).
// Errors: etcd's rpctypes texts and codes ("etcdserver: permission denied",
// kPermissionDenied; "etcdserver: invalid auth token", kUnauthenticated;
// ...).
#ifndef KPLANE_STORAGE_SERVER_AUTH_STORE_H_
#define KPLANE_STORAGE_SERVER_AUTH_STORE_H_

#include <google/protobuf/message.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "schemas/rpc.pb.h"
#include "schemas/storage.pb.h"
#include "storage/server/auth_token.h"
#include "storage/server/index_waiters.h"

namespace kplane::storage {

// The superuser's name (etcd's "root"): with auth on it must exist and hold
// the root role. The store's own requests (expired lease revokes) run as it,
// as etcd's AuthStore.WithRoot.
inline constexpr std::string_view kRootUser = "root";

// etcd's auth errors (rpctypes).
namespace autherr {
Status UserEmpty();
Status UserNotFound();
Status PermissionDenied();
Status AuthFailed();
Status InvalidAuthToken();
Status AuthNotEnabled();
// "etcdserver: revision of auth store is old" (InvalidArgument).
Status AuthOldRevision();
}  // namespace autherr

// `s` (an auth error) as etcd's maintenance calls answer it: the auth
// package's error unconverted, so gRPC UNKNOWN with "auth: permission
// denied" (etcd 3.4's authMaintenanceServer returns it raw).
Status AuthMaintenanceError(const Status& s);

struct AuthStoreOptions {
  Clock* clock = Clock::Real();
  // etcd's --auth-token-ttl.
  Duration token_ttl = seconds(300);
  // JWT tokens (etcd's --auth-token=jwt,...); null: simple tokens.
  std::shared_ptr<const TokenProvider> tokens;
  // PBKDF2 rounds for new passwords (a stored hash names its own).
  int pbkdf2_iterations = 100000;
  // How long a request whose token names a raft index this member has not
  // applied yet waits for it (etcd waits for the index too: a client that
  // authenticated through the leader may ask a follower that lags), and how
  // many such requests may wait at once (beyond: invalid at once, so forged
  // tokens cannot queue without bound). They wait without a thread each
  // (DeferUntilTokenIndex).
  Duration token_index_wait = seconds(2);
  int max_token_index_waiters = 64;
};

class AuthStore {
 public:
  explicit AuthStore(AuthStoreOptions options = {});

  // Replaces the state (startup, an installed snapshot). Tokens are
  // dropped.
  void Load(const storagepb::AuthRecord& record) EXCLUDES(mu_);
  storagepb::AuthRecord Record() const EXCLUDES(mu_);
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }

  // ---- serving path ------------------------------------------------------
  // The user `token` names, and its TTL restarts; InvalidAuthToken if it is
  // unknown or expired. A JWT: InvalidAuthToken unless genuine and
  // unexpired, AuthOldRevision if issued before the current revision().
  // Never waits: a simple token of an index not applied yet is unknown
  // here, so the fronts first DeferUntilTokenIndex.
  StatusOr<std::string> UserForToken(std::string_view token) EXCLUDES(mu_);
  // A simple token "<prefix>.<index>" is issued at the raft index of its
  // Authenticate; a member that has not applied that index yet (a follower
  // behind the leader that answered the login) waits for it, as etcd does,
  // up to token_index_wait. If `token` is such a token, arranges for
  // `ready` to be called (once, on another thread: hand the request to a
  // worker there) when the index is applied or the wait is over, and
  // returns true; the request then resolves its token. False otherwise (a
  // JWT, no index, an applied index, or max_token_index_waiters waiting:
  // so forged tokens cannot queue without bound): go on at once.
  bool DeferUntilTokenIndex(std::string_view token,
                            std::function<void()> ready);
  // Calls every `ready` still waiting, now; nothing is deferred any more.
  // For a front that stops (a gRPC server's shutdown waits for the calls
  // held).
  void ReleaseTokenWaiters() { token_waiters_.Release(); }
  // The member's applied raft index; called as it advances (cheap when no
  // request waits: two atomic operations).
  void NoteApplied(uint64_t index) { token_waiters_.Reached(index); }
  // The user of a request that carried `token` (empty: none): "" when auth
  // is disabled or no token was sent.
  StatusOr<std::string> ResolveToken(std::string_view token) {
    if (!enabled() || token.empty()) return std::string();
    return UserForToken(token);
  }
  Status CheckRange(const std::string& user, std::string_view key,
                    std::string_view range_end) const EXCLUDES(mu_);
  Status CheckPut(const std::string& user, std::string_view key) const
      EXCLUDES(mu_);
  Status CheckDeleteRange(const std::string& user, std::string_view key,
                          std::string_view range_end) const EXCLUDES(mu_);
  Status CheckTxn(const std::string& user,
                  const etcdserverpb::TxnRequest& txn) const EXCLUDES(mu_);
  Status CheckAdmin(const std::string& user) const EXCLUDES(mu_);
  // The revision of the users, roles and permissions: it grows with every
  // change of them. A request records it when admitted
  // (InternalRaftRequest.auth_revision) ...
  uint64_t revision() const EXCLUDES(mu_);
  // ... and is refused at apply if auth changed since (etcd's isOpPermitted:
  // AuthOldRevision when `revision` is below the current one). OK while
  // auth is disabled and for revision 0 (not carried).
  Status CheckAuthRevision(uint64_t revision) const EXCLUDES(mu_);
  // CheckAdmin for the user of a request's `token` (ResolveToken's errors
  // included); OK while auth is disabled.
  Status CheckAdminToken(std::string_view token) {
    StatusOr<std::string> user = ResolveToken(token);
    return user.ok() ? CheckAdmin(*user) : user.status();
  }

  // Makes `req` ready for the log: hashes the password of a user add or
  // change (and clears it), checks an Authenticate's password (AuthFailed,
  // AuthNotEnabled) and draws its simple token's prefix (a verify-only JWT
  // member refuses it here: etcd's ErrVerifyOnly, kUnknown). Slow
  // (PBKDF2): call off the I/O threads.
  StatusOr<storagepb::AuthRequest> Prepare(storagepb::AuthRequest req) const
      EXCLUDES(mu_);
  // True if Prepare(req) hashes a password (Authenticate, UserAdd with a
  // password, UserChangePassword): the slow ones.
  static bool PrepareHashes(const storagepb::AuthRequest& req);

  // ---- apply path ----------------------------------------------------------
  struct Applied {
    // The etcd response (header not filled), e.g. AuthUserGetResponse.
    std::shared_ptr<google::protobuf::Message> response;
    // The record changed: persist Record().
    bool changed = false;
  };
  // Applies a committed request asked by `user` at raft index `index`.
  StatusOr<Applied> Apply(const storagepb::AuthRequest& req,
                          const std::string& user, uint64_t index)
      EXCLUDES(mu_);

  // Number of live tokens (tests).
  size_t TokenCount() const EXCLUDES(mu_);
  // Blocks until `n` requests wait for their token's index, at most
  // `timeout` (false then). For tests.
  bool WaitForTokenWaiters(size_t n, Duration timeout) {
    return token_waiters_.WaitForWaiters(n, timeout);
  }

  // The stored form of `password` with `salt` (exposed for tests).
  static std::string HashPassword(std::string_view password,
                                  std::string_view salt, int iterations);
  // Whether `stored` (HashPassword's form) matches `password`, compared in
  // constant time.
  static bool PasswordMatches(std::string_view stored,
                              std::string_view password);

 private:
  enum class Perm { kRead, kWrite };
  struct Token {
    std::string user;
    TimePoint expires;
  };

  Status CheckOpLocked(const std::string& user, std::string_view key,
                       std::string_view range_end, Perm perm) const
      REQUIRES(mu_);
  Status CheckTxnLocked(const std::string& user,
                        const etcdserverpb::TxnRequest& txn) const
      REQUIRES(mu_);
  Status CheckAdminLocked(const std::string& user) const REQUIRES(mu_);
  authpb::User* FindUser(std::string_view name) REQUIRES(mu_);
  const authpb::User* FindUser(std::string_view name) const REQUIRES(mu_);
  authpb::Role* FindRole(std::string_view name) REQUIRES(mu_);
  void DropTokensOf(const std::string& user) REQUIRES(mu_);
  // What a JWT Authenticate leaves for Apply to sign once mu_ is
  // released (signing takes a millisecond or more with RSA).
  struct PendingJwt {
    std::string user;
    uint64_t revision = 0;
  };
  StatusOr<Applied> ApplyLocked(const storagepb::AuthRequest& req,
                                const std::string& user, uint64_t index,
                                std::optional<PendingJwt>* jwt) REQUIRES(mu_);
  StatusOr<std::string> UserForJwt(std::string_view token) EXCLUDES(mu_);

  StatusOr<std::string> LookUpToken(std::string_view token) EXCLUDES(mu_);

  const AuthStoreOptions options_;
  std::atomic<bool> enabled_{false};
  // NoteApplied's index and the requests waiting for it.
  IndexWaiters token_waiters_;
  mutable Mutex mu_;
  std::map<std::string, authpb::User> users_ GUARDED_BY(mu_);
  std::map<std::string, authpb::Role> roles_ GUARDED_BY(mu_);
  uint64_t revision_ GUARDED_BY(mu_) = 0;
  std::map<std::string, Token, std::less<>> tokens_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_AUTH_STORE_H_
