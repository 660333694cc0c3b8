#include "storage/server/auth_store.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "base/base64.h"
#include "base/logging.h"
#include "base/strings.h"

namespace kplane::storage {

namespace autherr {
Status UserEmpty() {
  return InvalidArgumentError("etcdserver: user name is empty");
}
Status UserNotFound() {
  return FailedPreconditionError("etcdserver: user name not found");
}
Status PermissionDenied() {
  return Status(StatusCode::kPermissionDenied, "etcdserver: permission denied");
}
Status AuthFailed() {
  return InvalidArgumentError(
      "etcdserver: authentication failed, invalid user ID or password");
}
Status InvalidAuthToken() {
  return Status(StatusCode::kUnauthenticated, "etcdserver: invalid auth token");
}
Status AuthNotEnabled() {
  return FailedPreconditionError("etcdserver: authentication is not enabled");
}
Status AuthOldRevision() {
  return InvalidArgumentError("etcdserver: revision of auth store is old");
}
}  // namespace autherr

Status AuthMaintenanceError(const Status& s) {
  if (s.ok()) return s;
  std::string msg = s.message();
  constexpr std::string_view kPrefix = "etcdserver: ";
  if (msg.starts_with(kPrefix)) msg = msg.substr(kPrefix.size());
  return Status(StatusCode::kUnknown, "auth: " + msg);
}

namespace {

constexpr std::string_view kRoot = kRootUser;
constexpr std::string_view kHashScheme = "pbkdf2-sha256";
constexpr size_t kSaltBytes = 16;
constexpr size_t kHashBytes = 32;
constexpr size_t kTokenLetters = 16;

Status UserAlreadyExist() {
  return FailedPreconditionError("etcdserver: user name already exists");
}
Status RoleEmpty() {
  return InvalidArgumentError("etcdserver: role name is empty");
}
Status RoleAlreadyExist() {
  return FailedPreconditionError("etcdserver: role name already exists");
}
Status RoleNotFound() {
  return FailedPreconditionError("etcdserver: role name not found");
}
Status RoleNotGranted() {
  return FailedPreconditionError("etcdserver: role is not granted to the user");
}
Status PermissionNotGranted() {
  return FailedPreconditionError(
      "etcdserver: permission is not granted to the role");
}
Status RootUserNotExist() {
  return FailedPreconditionError("etcdserver: root user does not exist");
}
Status RootRoleNotExist() {
  return FailedPreconditionError(
      "etcdserver: root user does not have root role");
}
Status InvalidAuthMgmt() {
  return InvalidArgumentError("etcdserver: invalid auth management");
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  // A failing CSPRNG is not something to serve passwords or tokens with.
  CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(out.data()),
                   static_cast<int>(n)) == 1)
      << "RAND_bytes failed";
  return out;
}

// etcd's token prefix: letters drawn uniformly (rejection sampling: 256 is
// not a multiple of 52).
std::string RandomLetters(size_t n) {
  static constexpr std::string_view kLetters =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  constexpr unsigned kLimit = 256 - 256 % kLetters.size();
  std::string out;
  while (out.size() < n) {
    for (char c : RandomBytes(n)) {
      unsigned v = static_cast<unsigned char>(c);
      if (v < kLimit && out.size() < n) out += kLetters[v % kLetters.size()];
    }
  }
  return out;
}

bool HasRootRole(const authpb::User& u) {
  return std::binary_search(u.roles().begin(), u.roles().end(),
                            std::string(kRoot));
}

// A half-open key interval; an empty `end` is +infinity.
struct Interval {
  std::string begin;
  std::string end;
  bool unbounded = false;
};

// The interval a permission or request names: an empty range_end is the
// one key ([key, key\0)), "\0" every key from `key` on.
Interval ToInterval(std::string_view key, std::string_view range_end) {
  if (range_end.empty()) {
    return {std::string(key), std::string(key) + '\0', false};
  }
  if (range_end == std::string_view("\0", 1)) {
    return {std::string(key), "", true};
  }
  return {std::string(key), std::string(range_end), false};
}

// Whether the union of `grants` covers `want` entirely.
bool Covers(std::vector<Interval> grants, const Interval& want) {
  if (!want.unbounded && want.end <= want.begin) {
    // An empty request range: etcd's interval tree finds it covered only
    // if some grant holds its start.
    for (const Interval& g : grants) {
      if (g.begin <= want.begin && (g.unbounded || want.begin < g.end)) {
        return true;
      }
    }
    return false;
  }
  std::sort(
      grants.begin(), grants.end(),
      [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::string covered = want.begin;  // [want.begin, covered) is covered
  for (const Interval& g : grants) {
    if (g.begin > covered) break;  // a gap at `covered`
    if (g.unbounded) return true;
    if (g.end > covered) covered = g.end;
    if (!want.unbounded && covered >= want.end) return true;
  }
  return false;
}

}  // namespace

AuthStore::AuthStore(AuthStoreOptions options)
    : options_(options),
      token_waiters_({.clock = options.clock,
                      .max_wait = options.token_index_wait,
                      .max_waiters = options.max_token_index_waiters}) {}

void AuthStore::Load(const storagepb::AuthRecord& record) {
  MutexLock l(&mu_);
  users_.clear();
  roles_.clear();
  for (const auto& u : record.users()) users_[u.name()] = u;
  for (const auto& r : record.roles()) roles_[r.name()] = r;
  revision_ = record.revision();
  tokens_.clear();
  enabled_.store(record.enabled(), std::memory_order_release);
}

storagepb::AuthRecord AuthStore::Record() const {
  MutexLock l(&mu_);
  storagepb::AuthRecord rec;
  rec.set_enabled(enabled_.load());
  rec.set_revision(revision_);
  for (const auto& [name, u] : users_) *rec.add_users() = u;
  for (const auto& [name, r] : roles_) *rec.add_roles() = r;
  return rec;
}

size_t AuthStore::TokenCount() const {
  MutexLock l(&mu_);
  return tokens_.size();
}

// ---- passwords
// ---------------------------------------------------------------

std::string AuthStore::HashPassword(std::string_view password,
                                    std::string_view salt, int iterations) {
  unsigned char out[kHashBytes];
  CHECK(PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                          reinterpret_cast<const unsigned char*>(salt.data()),
                          static_cast<int>(salt.size()), iterations,
                          EVP_sha256(), sizeof(out), out) == 1)
      << "PBKDF2 failed";
  return std::string(kHashScheme) + "$" + std::to_string(iterations) + "$" +
         Base64Encode(salt) + "$" +
         Base64Encode(
             std::string_view(reinterpret_cast<char*>(out), sizeof(out)));
}

bool AuthStore::PasswordMatches(std::string_view stored,
                                std::string_view password) {
  // pbkdf2-sha256$<iterations>$<salt>$<hash>
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t d = stored.find('$', start);
    parts.push_back(stored.substr(start, d - start));
    if (d == std::string_view::npos) break;
    start = d + 1;
  }
  if (parts.size() != 4 || parts[0] != kHashScheme) return false;
  int iterations = 0;
  for (char c : parts[1]) {
    if (c < '0' || c > '9' || iterations > 100000000) return false;
    iterations = iterations * 10 + (c - '0');
  }
  if (iterations <= 0) return false;
  StatusOr<std::string> salt = Base64Decode(parts[2]);
  if (!salt.ok()) return false;
  std::string want = HashPassword(password, *salt, iterations);
  return want.size() == stored.size() &&
         CRYPTO_memcmp(want.data(), stored.data(), want.size()) == 0;
}

// ---- tokens
// ------------------------------------------------------------------

StatusOr<std::string> AuthStore::UserForJwt(std::string_view token) {
  StatusOr<AuthTokenInfo> info =
      options_.tokens->Info(token, options_.clock->WallNow());
  // The client hears etcd's words, not which check failed (nor is a
  // forger's every attempt logged).
  if (!info.ok()) return autherr::InvalidAuthToken();
  // etcd's isOpPermitted: a token from before the last change of users,
  // roles or permissions may carry rights the user no longer has.
  if (info->revision < revision()) return autherr::AuthOldRevision();
  return std::move(info->user);
}

StatusOr<std::string> AuthStore::UserForToken(std::string_view token) {
  if (options_.tokens != nullptr) return UserForJwt(token);
  return LookUpToken(token);
}

bool AuthStore::DeferUntilTokenIndex(std::string_view token,
                                     std::function<void()> ready) {
  if (options_.tokens != nullptr) return false;
  size_t dot = token.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::optional<uint64_t> index = ParseUint64(token.substr(dot + 1));
  return index && token_waiters_.Await(*index, std::move(ready));
}

StatusOr<std::string> AuthStore::LookUpToken(std::string_view token) {
  MutexLock l(&mu_);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return autherr::InvalidAuthToken();
  TimePoint now = options_.clock->Now();
  if (now >= it->second.expires) {
    tokens_.erase(it);
    return autherr::InvalidAuthToken();
  }
  it->second.expires = now + options_.token_ttl;  // etcd: reset on use
  return it->second.user;
}

void AuthStore::DropTokensOf(const std::string& user) {
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    if (it->second.user == user) {
      it = tokens_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- checks
// --------------------------------------------------------------------

const authpb::User* AuthStore::FindUser(std::string_view name) const {
  auto it = users_.find(std::string(name));
  return it == users_.end() ? nullptr : &it->second;
}

authpb::User* AuthStore::FindUser(std::string_view name) {
  auto it = users_.find(std::string(name));
  return it == users_.end() ? nullptr : &it->second;
}

authpb::Role* AuthStore::FindRole(std::string_view name) {
  auto it = roles_.find(std::string(name));
  return it == roles_.end() ? nullptr : &it->second;
}

Status AuthStore::CheckOpLocked(const std::string& user, std::string_view key,
                                std::string_view range_end, Perm perm) const {
  if (!enabled_.load()) return Status::Ok();
  if (user.empty()) return autherr::UserEmpty();
  const authpb::User* u = FindUser(user);
  if (u == nullptr) return autherr::PermissionDenied();
  if (HasRootRole(*u)) return Status::Ok();
  std::vector<Interval> grants;
  for (const std::string& role_name : u->roles()) {
    auto it = roles_.find(role_name);
    if (it == roles_.end()) continue;
    for (const authpb::Permission& p : it->second.keypermission()) {
      bool match =
          p.permtype() == authpb::Permission::READWRITE ||
          (perm == Perm::kRead ? p.permtype() == authpb::Permission::READ
                               : p.permtype() == authpb::Permission::WRITE);
      if (match) grants.push_back(ToInterval(p.key(), p.range_end()));
    }
  }
  if (Covers(std::move(grants), ToInterval(key, range_end))) {
    return Status::Ok();
  }
  return autherr::PermissionDenied();
}

uint64_t AuthStore::revision() const {
  MutexLock l(&mu_);
  return revision_;
}

Status AuthStore::CheckAuthRevision(uint64_t revision) const {
  if (!enabled() || revision == 0) return Status::Ok();
  MutexLock l(&mu_);
  if (revision < revision_) {
    LOG(WARNING) << "request auth revision " << revision
                 << " is less than the current auth revision " << revision_;
    return autherr::AuthOldRevision();
  }
  return Status::Ok();
}

Status AuthStore::CheckRange(const std::string& user, std::string_view key,
                             std::string_view range_end) const {
  if (!enabled()) return Status::Ok();
  MutexLock l(&mu_);
  return CheckOpLocked(user, key, range_end, Perm::kRead);
}

Status AuthStore::CheckPut(const std::string& user,
                           std::string_view key) const {
  if (!enabled()) return Status::Ok();
  MutexLock l(&mu_);
  return CheckOpLocked(user, key, "", Perm::kWrite);
}

Status AuthStore::CheckDeleteRange(const std::string& user,
                                   std::string_view key,
                                   std::string_view range_end) const {
  if (!enabled()) return Status::Ok();
  MutexLock l(&mu_);
  return CheckOpLocked(user, key, range_end, Perm::kWrite);
}

Status AuthStore::CheckTxnLocked(const std::string& user,
                                 const etcdserverpb::TxnRequest& txn) const {
  for (const auto& c : txn.compare()) {
    RETURN_IF_ERROR(CheckOpLocked(user, c.key(), c.range_end(), Perm::kRead));
  }
  for (const auto* ops : {&txn.success(), &txn.failure()}) {
    for (const etcdserverpb::RequestOp& op : *ops) {
      if (op.has_request_range()) {
        const auto& r = op.request_range();
        RETURN_IF_ERROR(
            CheckOpLocked(user, r.key(), r.range_end(), Perm::kRead));
      } else if (op.has_request_put()) {
        const auto& p = op.request_put();
        RETURN_IF_ERROR(CheckOpLocked(user, p.key(), "", Perm::kWrite));
        if (p.prev_kv()) {
          RETURN_IF_ERROR(CheckOpLocked(user, p.key(), "", Perm::kRead));
        }
      } else if (op.has_request_delete_range()) {
        const auto& d = op.request_delete_range();
        if (d.prev_kv()) {
          RETURN_IF_ERROR(
              CheckOpLocked(user, d.key(), d.range_end(), Perm::kRead));
        }
        RETURN_IF_ERROR(
            CheckOpLocked(user, d.key(), d.range_end(), Perm::kWrite));
      } else if (op.has_request_txn()) {
        // etcd 3.4 does not look into nested txns; we do.
        RETURN_IF_ERROR(CheckTxnLocked(user, op.request_txn()));
      }
    }
  }
  return Status::Ok();
}

Status AuthStore::CheckTxn(const std::string& user,
                           const etcdserverpb::TxnRequest& txn) const {
  if (!enabled()) return Status::Ok();
  MutexLock l(&mu_);
  return CheckTxnLocked(user, txn);
}

Status AuthStore::CheckAdminLocked(const std::string& user) const {
  if (!enabled_.load()) return Status::Ok();
  if (user.empty()) return autherr::UserEmpty();
  const authpb::User* u = FindUser(user);
  if (u == nullptr) return autherr::UserNotFound();
  if (!HasRootRole(*u)) return autherr::PermissionDenied();
  return Status::Ok();
}

Status AuthStore::CheckAdmin(const std::string& user) const {
  if (!enabled()) return Status::Ok();
  MutexLock l(&mu_);
  return CheckAdminLocked(user);
}

// ---- requests
// ------------------------------------------------------------------

bool AuthStore::PrepareHashes(const storagepb::AuthRequest& req) {
  using R = storagepb::AuthRequest;
  switch (req.request_case()) {
    case R::kAuthenticate:
    case R::kUserChangePassword:
      return true;
    case R::kUserAdd:
      return !(req.user_add().has_options() &&
               req.user_add().options().no_password());
    default:
      return false;
  }
}

StatusOr<storagepb::AuthRequest> AuthStore::Prepare(
    storagepb::AuthRequest req) const {
  using R = storagepb::AuthRequest;
  auto hash = [&](std::string* password) {
    req.set_hashed_password(HashPassword(*password, RandomBytes(kSaltBytes),
                                         options_.pbkdf2_iterations));
    password->clear();
  };
  switch (req.request_case()) {
    case R::kUserAdd:
      if (PrepareHashes(req)) hash(req.mutable_user_add()->mutable_password());
      break;
    case R::kUserChangePassword:
      hash(req.mutable_user_change_password()->mutable_password());
      break;
    case R::kAuthenticate: {
      if (!enabled()) return autherr::AuthNotEnabled();
      std::string stored;
      {
        MutexLock l(&mu_);
        const authpb::User* u = FindUser(req.authenticate().name());
        if (u == nullptr) return autherr::AuthFailed();
        if (u->options().no_password()) return autherr::AuthFailed();
        stored = u->password();
      }
      // The slow hash runs without the lock.
      if (!PasswordMatches(stored, req.authenticate().password())) {
        return autherr::AuthFailed();
      }
      req.mutable_authenticate()->clear_password();
      if (options_.tokens != nullptr) {
        // The token is signed at apply; a member that cannot sign says so
        // before the request takes a log entry.
        if (!options_.tokens->can_assign()) {
          return options_.tokens->Assign("", 0, options_.clock->WallNow())
              .status();
        }
        break;
      }
      req.set_simple_token(RandomLetters(kTokenLetters));
      break;
    }
    default:
      break;
  }
  return req;
}

StatusOr<AuthStore::Applied> AuthStore::Apply(const storagepb::AuthRequest& req,
                                              const std::string& user,
                                              uint64_t index) {
  std::optional<PendingJwt> jwt;
  StatusOr<Applied> out = [&] {
    MutexLock l(&mu_);
    return ApplyLocked(req, user, index, &jwt);
  }();
  if (!out.ok() || !jwt.has_value()) return out;
  StatusOr<std::string> token = options_.tokens->Assign(
      jwt->user, jwt->revision, options_.clock->WallNow());
  if (!token.ok()) return token.status();
  auto resp = std::make_shared<etcdserverpb::AuthenticateResponse>();
  resp->set_token(std::move(*token));
  out->response = std::move(resp);
  return out;
}

StatusOr<AuthStore::Applied> AuthStore::ApplyLocked(
    const storagepb::AuthRequest& req, const std::string& user, uint64_t index,
    std::optional<PendingJwt>* jwt) {
  using R = storagepb::AuthRequest;
  namespace pb = etcdserverpb;
  const bool enabled = enabled_.load();
  // etcd's needAdminPermission: everything but authenticate, user get and
  // role get (those allow the user himself, or a holder of the role).
  switch (req.request_case()) {
    case R::kAuthenticate:
      break;
    case R::kUserGet:
      if (req.user_get().name() != user)
        RETURN_IF_ERROR(CheckAdminLocked(user));
      break;
    case R::kRoleGet: {
      Status admin = CheckAdminLocked(user);
      if (!admin.ok()) {
        const authpb::User* u = FindUser(user);
        if (u == nullptr ||
            !std::binary_search(u->roles().begin(), u->roles().end(),
                                req.role_get().role())) {
          return admin;
        }
      }
      break;
    }
    default:
      RETURN_IF_ERROR(CheckAdminLocked(user));
  }

  Applied out;
  auto bump = [&]() REQUIRES(mu_) {
    ++revision_;
    out.changed = true;
  };
  switch (req.request_case()) {
    case R::kEnable: {
      out.response = std::make_shared<pb::AuthEnableResponse>();
      if (enabled) break;
      const authpb::User* root = FindUser(kRoot);
      if (root == nullptr) return RootUserNotExist();
      if (!HasRootRole(*root)) return RootRoleNotExist();
      enabled_.store(true, std::memory_order_release);
      out.changed = true;  // etcd keeps the revision
      LOG(INFO) << "auth enabled";
      break;
    }
    case R::kDisable: {
      out.response = std::make_shared<pb::AuthDisableResponse>();
      if (!enabled) break;
      enabled_.store(false, std::memory_order_release);
      tokens_.clear();
      bump();
      LOG(INFO) << "auth disabled";
      break;
    }
    case R::kAuthenticate: {
      if (!enabled) return autherr::AuthNotEnabled();
      const authpb::User* u = FindUser(req.authenticate().name());
      if (u == nullptr || u->options().no_password()) {
        return autherr::AuthFailed();
      }
      if (options_.tokens != nullptr) {
        // etcd's assign(username, as.Revision()): the revision the token
        // is good for.
        *jwt = PendingJwt{u->name(), revision_};
        break;
      }
      if (req.simple_token().empty()) return autherr::AuthFailed();
      std::string token = req.simple_token() + "." + std::to_string(index);
      // Sweep the expired ones now and then, so unused tokens do not pile
      // up (UserForToken drops the expired ones it meets).
      TimePoint now = options_.clock->Now();
      for (auto it = tokens_.begin(); it != tokens_.end();) {
        it = now >= it->second.expires ? tokens_.erase(it) : std::next(it);
      }
      tokens_[token] = Token{u->name(), now + options_.token_ttl};
      auto resp = std::make_shared<pb::AuthenticateResponse>();
      resp->set_token(token);
      out.response = std::move(resp);
      break;
    }
    case R::kUserAdd: {
      const auto& r = req.user_add();
      if (r.name().empty()) return autherr::UserEmpty();
      if (FindUser(r.name()) != nullptr) return UserAlreadyExist();
      authpb::User u;
      u.set_name(r.name());
      bool no_password = r.has_options() && r.options().no_password();
      if (!no_password) u.set_password(req.hashed_password());
      u.mutable_options()->set_no_password(no_password);
      users_[r.name()] = std::move(u);
      bump();
      out.response = std::make_shared<pb::AuthUserAddResponse>();
      break;
    }
    case R::kUserDelete: {
      const std::string& name = req.user_delete().name();
      if (enabled && name == kRoot) return InvalidAuthMgmt();
      if (users_.erase(name) == 0) return autherr::UserNotFound();
      DropTokensOf(name);
      bump();
      out.response = std::make_shared<pb::AuthUserDeleteResponse>();
      break;
    }
    case R::kUserChangePassword: {
      const std::string& name = req.user_change_password().name();
      authpb::User* u = FindUser(name);
      if (u == nullptr) return autherr::UserNotFound();
      u->set_password(req.hashed_password());
      DropTokensOf(name);
      bump();
      out.response = std::make_shared<pb::AuthUserChangePasswordResponse>();
      break;
    }
    case R::kUserGrantRole: {
      const auto& r = req.user_grant_role();
      authpb::User* u = FindUser(r.user());
      if (u == nullptr) return autherr::UserNotFound();
      if (r.role() != kRoot && FindRole(r.role()) == nullptr) {
        return RoleNotFound();
      }
      out.response = std::make_shared<pb::AuthUserGrantRoleResponse>();
      auto* roles = u->mutable_roles();
      if (std::binary_search(roles->begin(), roles->end(), r.role())) break;
      roles->Add(std::string(r.role()));
      std::sort(roles->begin(), roles->end());
      bump();
      break;
    }
    case R::kUserRevokeRole: {
      const auto& r = req.user_revoke_role();
      if (enabled && r.name() == kRoot && r.role() == kRoot) {
        return InvalidAuthMgmt();
      }
      authpb::User* u = FindUser(r.name());
      if (u == nullptr) return autherr::UserNotFound();
      auto* roles = u->mutable_roles();
      auto it = std::find(roles->begin(), roles->end(), r.role());
      if (it == roles->end()) return RoleNotGranted();
      roles->erase(it);
      bump();
      out.response = std::make_shared<pb::AuthUserRevokeRoleResponse>();
      break;
    }
    case R::kUserGet: {
      const authpb::User* u = FindUser(req.user_get().name());
      if (u == nullptr) return autherr::UserNotFound();
      auto resp = std::make_shared<pb::AuthUserGetResponse>();
      *resp->mutable_roles() = u->roles();
      out.response = std::move(resp);
      break;
    }
    case R::kUserList: {
      auto resp = std::make_shared<pb::AuthUserListResponse>();
      for (const auto& [name, u] : users_) resp->add_users(name);
      out.response = std::move(resp);
      break;
    }
    case R::kRoleAdd: {
      const std::string& name = req.role_add().name();
      if (name.empty()) return RoleEmpty();
      if (FindRole(name) != nullptr) return RoleAlreadyExist();
      authpb::Role role;
      role.set_name(name);
      roles_[name] = std::move(role);
      bump();
      out.response = std::make_shared<pb::AuthRoleAddResponse>();
      break;
    }
    case R::kRoleGet: {
      authpb::Role* role = FindRole(req.role_get().role());
      if (role == nullptr) return RoleNotFound();
      auto resp = std::make_shared<pb::AuthRoleGetResponse>();
      *resp->mutable_perm() = role->keypermission();
      out.response = std::move(resp);
      break;
    }
    case R::kRoleList: {
      auto resp = std::make_shared<pb::AuthRoleListResponse>();
      for (const auto& [name, r] : roles_) resp->add_roles(name);
      out.response = std::move(resp);
      break;
    }
    case R::kRoleDelete: {
      const std::string& name = req.role_delete().role();
      if (enabled && name == kRoot) return InvalidAuthMgmt();
      if (roles_.erase(name) == 0) return RoleNotFound();
      for (auto& [uname, u] : users_) {
        auto* roles = u.mutable_roles();
        auto it = std::find(roles->begin(), roles->end(), name);
        if (it != roles->end()) roles->erase(it);
      }
      bump();
      out.response = std::make_shared<pb::AuthRoleDeleteResponse>();
      break;
    }
    case R::kRoleGrantPermission: {
      const auto& r = req.role_grant_permission();
      authpb::Role* role = FindRole(r.name());
      if (role == nullptr) return RoleNotFound();
      auto* perms = role->mutable_keypermission();
      bool updated = false;
      for (auto& p : *perms) {
        if (p.key() == r.perm().key() &&
            p.range_end() == r.perm().range_end()) {
          p.set_permtype(r.perm().permtype());
          updated = true;
        }
      }
      if (!updated) {
        *perms->Add() = r.perm();
        std::stable_sort(
            perms->begin(), perms->end(),
            [](const authpb::Permission& a, const authpb::Permission& b) {
              return a.key() < b.key();
            });
      }
      bump();
      out.response = std::make_shared<pb::AuthRoleGrantPermissionResponse>();
      break;
    }
    case R::kRoleRevokePermission: {
      const auto& r = req.role_revoke_permission();
      authpb::Role* role = FindRole(r.role());
      if (role == nullptr) return RoleNotFound();
      auto* perms = role->mutable_keypermission();
      int before = perms->size();
      for (int i = perms->size() - 1; i >= 0; --i) {
        if (perms->Get(i).key() == r.key() &&
            perms->Get(i).range_end() == r.range_end()) {
          perms->DeleteSubrange(i, 1);
        }
      }
      if (perms->size() == before) return PermissionNotGranted();
      bump();
      out.response = std::make_shared<pb::AuthRoleRevokePermissionResponse>();
      break;
    }
    case R::REQUEST_NOT_SET:
      return CorruptionError("an auth request of no known kind");
  }
  return out;
}

}  // namespace kplane::storage
