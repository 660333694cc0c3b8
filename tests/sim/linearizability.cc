#include "tests/sim/linearizability.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_set>

namespace kplane::sim {

std::string DescribeOp(const KvOp& op) {
  std::ostringstream os;
  os << "c" << op.client << " " << OpKindName(op.kind) << "(" << op.key;
  if (op.kind == OpKind::kPut) os << ", " << op.a;
  if (op.kind == OpKind::kCas) os << ", " << op.a << " -> " << op.b;
  os << ") ";
  if (op.unknown) {
    os << "= ? [" << op.call << ", inf)";
  } else {
    if (op.kind == OpKind::kGet) os << "= " << op.value << " ";
    if (op.kind == OpKind::kCas) {
      os << "= " << (op.ok ? "ok" : "fail") << " saw " << op.value << " ";
    }
    os << "[" << op.call << ", " << op.ret << "]";
  }
  return os.str();
}

namespace {

// The register's transition: whether op may happen in state s, and the
// state after it.
bool StepModel(int64_t s, const KvOp& op, int64_t* next) {
  switch (op.kind) {
    case OpKind::kPut:
      *next = op.a;
      return true;
    case OpKind::kGet:
      *next = s;
      return op.unknown || op.value == s;
    case OpKind::kCas:
      if (op.unknown) {
        *next = s == op.a ? op.b : s;
        return true;
      }
      if (op.ok) {
        *next = op.b;
        return s == op.a;
      }
      *next = s;
      return s != op.a && s == op.value;
  }
  return false;
}

struct Entry {
  int op;  // index into the key's ops
  bool is_call;
  uint64_t time;
  Entry* match = nullptr;  // call -> its return
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

class Bitset {
 public:
  explicit Bitset(size_t n) : words_((n + 63) / 64, 0) {}
  void Set(size_t i) { words_[i / 64] |= uint64_t{1} << (i % 64); }
  void Clear(size_t i) { words_[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  uint64_t Hash() const {
    uint64_t h = 1469598103934665603ULL;
    for (uint64_t w : words_) {
      h ^= w;
      h *= 1099511628211ULL;
      h ^= h >> 29;
    }
    return h;
  }
  bool operator==(const Bitset& o) const { return words_ == o.words_; }

 private:
  std::vector<uint64_t> words_;
};

struct CacheKey {
  Bitset linearized;
  int64_t state;
  bool operator==(const CacheKey& o) const {
    return state == o.state && linearized == o.linearized;
  }
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return k.linearized.Hash() ^
           (static_cast<uint64_t>(k.state) * 0x9e3779b97f4a7c15ULL);
  }
};

void Lift(Entry* e) {
  e->prev->next = e->next;
  if (e->next) e->next->prev = e->prev;
  Entry* m = e->match;
  m->prev->next = m->next;
  if (m->next) m->next->prev = m->prev;
}

void Unlift(Entry* e) {
  Entry* m = e->match;
  m->prev->next = m;
  if (m->next) m->next->prev = m;
  e->prev->next = e;
  if (e->next) e->next->prev = e;
}

// 1 = linearizable, 0 = not, -1 = budget exhausted.
int CheckKey(const std::vector<KvOp>& ops, uint64_t max_steps) {
  const uint64_t kInf = UINT64_MAX / 2;
  std::vector<Entry> entries;
  entries.reserve(ops.size() * 2);
  for (size_t i = 0; i < ops.size(); ++i) {
    entries.push_back(Entry{static_cast<int>(i), true, ops[i].call});
    // Unknown ops return "at infinity", after everything, in call order.
    entries.push_back(Entry{static_cast<int>(i), false,
                            ops[i].unknown ? kInf + ops[i].call : ops[i].ret});
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    entries[2 * i].match = &entries[2 * i + 1];
  }
  std::vector<Entry*> order;
  for (auto& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    if (a->time != b->time) return a->time < b->time;
    // A call and a return at the same time: the call first is the more
    // permissive reading (both happen "at once").
    return a->is_call && !b->is_call;
  });
  Entry head{-1, false, 0};
  Entry* prev = &head;
  for (Entry* e : order) {
    prev->next = e;
    e->prev = prev;
    prev = e;
  }

  Bitset linearized(ops.size());
  int64_t state = 0;
  std::unordered_set<CacheKey, CacheKeyHash> cache;
  struct Frame {
    Entry* entry;
    int64_t state;
  };
  std::vector<Frame> calls;
  Entry* entry = head.next;
  uint64_t steps = 0;
  while (head.next != nullptr) {
    if (++steps > max_steps) return -1;
    if (entry == nullptr) return 0;  // cannot happen with well-formed lists
    if (entry->is_call) {
      const KvOp& op = ops[entry->op];
      int64_t next_state;
      if (StepModel(state, op, &next_state)) {
        Bitset candidate = linearized;
        candidate.Set(entry->op);
        if (cache.insert(CacheKey{candidate, next_state}).second) {
          calls.push_back(Frame{entry, state});
          state = next_state;
          linearized.Set(entry->op);
          Lift(entry);
          entry = head.next;
          continue;
        }
      }
      entry = entry->next;
    } else {
      // A return whose op is not linearized yet: undo the last choice.
      if (calls.empty()) return 0;
      Frame f = calls.back();
      calls.pop_back();
      state = f.state;
      linearized.Clear(f.entry->op);
      Unlift(f.entry);
      entry = f.entry->next;
    }
  }
  return 1;
}

}  // namespace

LinearizabilityResult CheckLinearizable(const std::vector<KvOp>& history,
                                        uint64_t max_steps) {
  std::map<std::string, std::vector<KvOp>> by_key;
  for (const auto& op : history) {
    // An unanswered read constrains nothing.
    if (op.unknown && op.kind == OpKind::kGet) continue;
    by_key[op.key].push_back(op);
  }
  LinearizabilityResult result;
  for (auto& [key, ops] : by_key) {
    // Values some operation may have observed.
    std::set<int64_t> observed;
    for (const auto& op : ops) {
      if (op.kind == OpKind::kCas) observed.insert(op.a);
      if (op.unknown) continue;
      if (op.kind == OpKind::kGet || op.kind == OpKind::kCas) {
        observed.insert(op.value);
      }
    }
    std::vector<KvOp> pruned;
    for (const auto& op : ops) {
      int64_t written = op.kind == OpKind::kPut   ? op.a
                        : op.kind == OpKind::kCas ? op.b
                                                  : 0;
      if (op.unknown && op.kind != OpKind::kGet && !observed.count(written)) {
        continue;  // invisible: linearize it last
      }
      pruned.push_back(op);
    }
    int r = CheckKey(pruned, max_steps);
    if (r == 1) continue;
    result.ok = false;
    result.inconclusive = r < 0;
    result.key = key;
    std::ostringstream os;
    std::sort(pruned.begin(), pruned.end(),
              [](const KvOp& a, const KvOp& b) { return a.call < b.call; });
    size_t shown = 0;
    for (const auto& op : pruned) {
      if (++shown > 400) {
        os << "  ... " << pruned.size() - 400 << " more\n";
        break;
      }
      os << "  " << DescribeOp(op) << "\n";
    }
    result.detail = os.str();
    return result;
  }
  return result;
}

size_t HistoryRecorder::Invoke(uint64_t client, OpKind kind,
                               const std::string& key, int64_t a, int64_t b) {
  KvOp op;
  op.client = client;
  op.kind = kind;
  op.key = key;
  op.a = a;
  op.b = b;
  op.call = ++now_;
  ops_.push_back(op);
  state_.push_back(0);
  return ops_.size() - 1;
}

void HistoryRecorder::Complete(size_t i, int64_t value, bool ok) {
  if (state_[i] != 0) return;
  ops_[i].ret = ++now_;
  ops_[i].value = value;
  ops_[i].ok = ok;
  state_[i] = 1;
  ++completed_;
}

void HistoryRecorder::MarkUnknown(size_t i) {
  if (state_[i] != 0) return;
  ops_[i].unknown = true;
  state_[i] = 2;
  ++unknown_;
}

void HistoryRecorder::Discard(size_t i) {
  if (state_[i] != 0) return;
  state_[i] = 3;
}

std::vector<KvOp> HistoryRecorder::Ops() const {
  std::vector<KvOp> out;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (state_[i] == 3) continue;
    KvOp op = ops_[i];
    if (state_[i] == 0 || state_[i] == 2) op.unknown = true;
    out.push_back(op);
  }
  return out;
}

}  // namespace kplane::sim
