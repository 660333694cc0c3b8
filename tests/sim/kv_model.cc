#include "tests/sim/kv_model.h"

#include <sstream>

namespace kplane::sim {

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kPut:
      return "put";
    case OpKind::kGet:
      return "get";
    case OpKind::kCas:
      return "cas";
  }
  return "?";
}

std::string EncodeCommand(const KvCommand& c) {
  std::ostringstream os;
  os << c.client << ' ' << c.seq << ' ' << OpKindName(c.kind) << ' ' << c.key
     << ' ' << c.a << ' ' << c.b;
  return os.str();
}

bool DecodeCommand(std::string_view s, KvCommand* c) {
  std::istringstream is{std::string(s)};
  std::string kind;
  if (!(is >> c->client >> c->seq >> kind >> c->key >> c->a >> c->b)) {
    return false;
  }
  if (kind == "put") {
    c->kind = OpKind::kPut;
  } else if (kind == "get") {
    c->kind = OpKind::kGet;
  } else if (kind == "cas") {
    c->kind = OpKind::kCas;
  } else {
    return false;
  }
  return true;
}

bool KvStateMachine::Apply(const KvCommand& c, KvResult* result) {
  Session& s = sessions_[c.client];
  if (c.seq <= s.seq) {
    *result = c.seq == s.seq ? s.result : KvResult{};
    return false;
  }
  KvResult r;
  int64_t& v = data_[c.key];
  switch (c.kind) {
    case OpKind::kPut:
      v = c.a;
      break;
    case OpKind::kGet:
      r.value = v;
      break;
    case OpKind::kCas:
      r.value = v;
      r.ok = v == c.a;
      if (r.ok) v = c.b;
      break;
  }
  if (v == 0) data_.erase(c.key);
  s.seq = c.seq;
  s.result = r;
  *result = r;
  return true;
}

int64_t KvStateMachine::Get(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? 0 : it->second;
}

std::string KvStateMachine::Serialize() const {
  std::ostringstream os;
  os << data_.size() << '\n';
  for (const auto& [k, v] : data_) os << k << ' ' << v << '\n';
  os << sessions_.size() << '\n';
  for (const auto& [c, s] : sessions_) {
    os << c << ' ' << s.seq << ' ' << s.result.value << ' ' << s.result.ok
       << '\n';
  }
  return os.str();
}

bool KvStateMachine::Restore(std::string_view data) {
  data_.clear();
  sessions_.clear();
  if (data.empty()) return true;
  std::istringstream is{std::string(data)};
  size_t n = 0;
  if (!(is >> n)) return false;
  for (size_t i = 0; i < n; ++i) {
    std::string k;
    int64_t v;
    if (!(is >> k >> v)) return false;
    data_[k] = v;
  }
  if (!(is >> n)) return false;
  for (size_t i = 0; i < n; ++i) {
    uint64_t c;
    Session s;
    if (!(is >> c >> s.seq >> s.result.value >> s.result.ok)) return false;
    sessions_[c] = s;
  }
  return true;
}

uint64_t KvStateMachine::Digest() const {
  // FNV-1a over the serialized form: small state, simple and stable.
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : Serialize()) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace kplane::sim
