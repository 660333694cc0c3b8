#include "tests/e2e/store_faults/workload.h"

#include <algorithm>
#include <random>

namespace kplane::e2e {

namespace {

StatusOr<std::unique_ptr<storage::RemoteKV>> NewClient(
    std::vector<std::string> endpoints, int rotate, Duration request_timeout,
    Duration call_timeout, std::shared_ptr<const net::TlsContext> tls) {
  // RemoteKV prefers the first endpoint: rotate the list per client.
  if (!endpoints.empty()) {
    std::rotate(endpoints.begin(),
                endpoints.begin() + rotate % endpoints.size(), endpoints.end());
  }
  storage::RemoteKVOptions o;
  o.endpoints = std::move(endpoints);
  o.dial_timeout = milliseconds(500);
  o.request_timeout = request_timeout;
  o.call_timeout = call_timeout;
  o.max_retry_backoff = milliseconds(200);
  o.tls = std::move(tls);
  return storage::RemoteKV::Create(o);
}

std::string Pad(std::string s, size_t n) {
  while (s.size() < n) s += static_cast<char>('a' + s.size() % 26);
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// WriteLoad

WriteLoad::WriteLoad(WriteLoadOptions options) : options_(std::move(options)) {}

WriteLoad::~WriteLoad() { Stop(); }

Status WriteLoad::Start() {
  for (int c = 0; c < options_.clients; ++c) {
    ASSIGN_OR_RETURN(auto kv,
                     NewClient(options_.endpoints, c, options_.request_timeout,
                               options_.call_timeout, options_.tls));
    kvs_.push_back(std::move(kv));
  }
  for (int c = 0; c < options_.clients; ++c) {
    threads_.emplace_back([this, c] { Run(c); });
  }
  return Status::Ok();
}

void WriteLoad::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WriteLoad::Run(int client) {
  storage::RemoteKV* kv = kvs_[client].get();
  Clock* clock = Clock::Real();
  for (int64_t seq = 0; !stop_.load(); ++seq) {
    char key[96];
    std::snprintf(key, sizeof(key), "%s%02d/%08lld", options_.prefix.c_str(),
                  client, static_cast<long long>(seq));
    etcdserverpb::PutRequest put;
    put.set_key(key);
    put.set_value(Pad(std::string(key) + "=", options_.value_bytes));
    const TimePoint sent = clock->Now();
    StatusOr<etcdserverpb::PutResponse> r = kv->Put(put);
    const TimePoint done = clock->Now();
    MutexLock l(&mu_);
    if (r.ok()) {
      acked_[key] = AckedWrite{.value = put.value(),
                               .revision = r->header().revision(),
                               .sent = sent,
                               .acked = done};
      cv_.notify_all();
    } else {
      maybe_.push_back(key);
      ++errors_[r.status().ToString()];
    }
  }
}

int64_t WriteLoad::acked() const {
  MutexLock l(&mu_);
  return static_cast<int64_t>(acked_.size());
}

int64_t WriteLoad::failed() const {
  MutexLock l(&mu_);
  return static_cast<int64_t>(maybe_.size());
}

bool WriteLoad::WaitForAcks(int64_t count, Duration timeout) {
  MutexLock l(&mu_);
  return cv_.wait_for(l.native(), timeout, [&]() REQUIRES(mu_) {
    return static_cast<int64_t>(acked_.size()) >= count;
  });
}

std::optional<Duration> WriteLoad::FirstAckSentAfter(TimePoint t) const {
  MutexLock l(&mu_);
  std::optional<Duration> best;
  for (const auto& [key, w] : acked_) {
    if (w.sent < t) continue;
    Duration d = w.acked - t;
    if (!best || d < *best) best = d;
  }
  return best;
}

std::map<std::string, AckedWrite> WriteLoad::Acked() const {
  MutexLock l(&mu_);
  return acked_;
}

std::vector<std::string> WriteLoad::Maybe() const {
  MutexLock l(&mu_);
  return maybe_;
}

std::string WriteLoad::ErrorSummary() const {
  MutexLock l(&mu_);
  std::string out;
  for (const auto& [m, n] : errors_) {
    out += "  " + std::to_string(n) + " x " + m + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------
// RegisterLoad

RegisterLoad::RegisterLoad(RegisterLoadOptions options)
    : options_(std::move(options)) {}

RegisterLoad::~RegisterLoad() { Stop(); }

Status RegisterLoad::Start() {
  for (int c = 0; c < options_.clients; ++c) {
    ASSIGN_OR_RETURN(auto kv,
                     NewClient(options_.endpoints, c, options_.request_timeout,
                               options_.call_timeout, options_.tls));
    kvs_.push_back(std::move(kv));
  }
  for (int c = 0; c < options_.clients; ++c) {
    threads_.emplace_back([this, c] { Run(c); });
  }
  return Status::Ok();
}

void RegisterLoad::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void RegisterLoad::Run(int client) {
  storage::RemoteKV* kv = kvs_[client].get();
  Clock* clock = Clock::Real();
  std::mt19937 rng(1234 + client);
  for (int64_t seq = 0; !stop_.load(); ++seq) {
    RegisterOp op;
    op.client = client;
    op.invoked = clock->Now();
    if (rng() % 2 == 0) {
      op.kind = RegisterOp::kWrite;
      op.value = "c" + std::to_string(client) + "-" + std::to_string(seq);
      etcdserverpb::PutRequest put;
      put.set_key(options_.key);
      put.set_value(op.value);
      StatusOr<etcdserverpb::PutResponse> r = kv->Put(put);
      op.ok = r.ok();
      op.completed = r.ok() ? clock->Now() : TimePoint::max();
      if (r.ok()) op.revision = r->header().revision();
    } else {
      op.kind = RegisterOp::kRead;
      etcdserverpb::RangeRequest get;
      get.set_key(options_.key);
      StatusOr<etcdserverpb::RangeResponse> r = kv->Range(get);
      op.completed = clock->Now();
      if (!r.ok()) continue;  // a failed read has no effect
      op.ok = true;
      if (r->kvs_size() > 0) {
        op.value = r->kvs(0).value();
        op.revision = r->kvs(0).mod_revision();
      }
    }
    MutexLock l(&mu_);
    ops_.push_back(std::move(op));
  }
}

std::vector<RegisterOp> RegisterLoad::History() const {
  MutexLock l(&mu_);
  return ops_;
}

// ---------------------------------------------------------------------------
// The linearizability check (see the header for the rules).

Status CheckRegisterHistory(const std::vector<RegisterOp>& history,
                            const std::vector<StoredWrite>& stored) {
  std::map<std::string, const RegisterOp*> write_of;  // value -> write
  std::vector<const RegisterOp*> writes, reads;
  for (const RegisterOp& op : history) {
    if (op.kind == RegisterOp::kWrite) {
      if (!write_of.emplace(op.value, &op).second) {
        return InternalError("value " + op.value + " written twice");
      }
      writes.push_back(&op);
    } else if (op.ok) {
      reads.push_back(&op);
    }
  }
  // Rule 1: stored <-> written; the revision of every write the store holds.
  std::map<std::string, int64_t> rev_of;  // value -> stored revision
  std::map<int64_t, std::string> value_at;
  for (const StoredWrite& s : stored) {
    if (!write_of.count(s.value)) {
      return InternalError("the store holds value \"" + s.value + "\" at " +
                           std::to_string(s.revision) +
                           " that no client wrote");
    }
    if (!rev_of.emplace(s.value, s.revision).second) {
      return InternalError("value " + s.value + " stored twice");
    }
    value_at[s.revision] = s.value;
  }
  for (const RegisterOp* w : writes) {
    if (!w->ok) continue;
    auto it = rev_of.find(w->value);
    if (it == rev_of.end()) {
      return InternalError("acknowledged write " + w->value + " (revision " +
                           std::to_string(w->revision) + ") was lost");
    }
    if (it->second != w->revision) {
      return InternalError("write " + w->value + " acknowledged at revision " +
                           std::to_string(w->revision) + " but stored at " +
                           std::to_string(it->second));
    }
  }
  // Rule 2, for the writes the store holds (an unapplied failed write has
  // no place in the order and constrains nothing).
  std::vector<std::pair<const RegisterOp*, int64_t>> applied;
  for (const RegisterOp* w : writes) {
    auto it = rev_of.find(w->value);
    if (it != rev_of.end()) applied.push_back({w, it->second});
  }
  // Sorted by completion: the highest revision completed before any time.
  std::vector<std::pair<TimePoint, int64_t>> by_completion;
  // Sorted by invocation: the lowest revision invoked after any time.
  std::vector<std::pair<TimePoint, int64_t>> by_invocation;
  for (const auto& [w, rev] : applied) {
    by_completion.push_back({w->completed, rev});
    by_invocation.push_back({w->invoked, rev});
  }
  std::sort(by_completion.begin(), by_completion.end());
  std::sort(by_invocation.begin(), by_invocation.end());
  std::vector<int64_t> max_rev_completed(by_completion.size());
  for (size_t i = 0; i < by_completion.size(); ++i) {
    max_rev_completed[i] =
        std::max(i ? max_rev_completed[i - 1] : 0, by_completion[i].second);
  }
  std::vector<int64_t> min_rev_invoked(by_invocation.size());
  for (size_t i = by_invocation.size(); i-- > 0;) {
    min_rev_invoked[i] = std::min(
        i + 1 < by_invocation.size() ? min_rev_invoked[i + 1] : INT64_MAX,
        by_invocation[i].second);
  }
  // Highest revision among writes completed strictly before t.
  auto completed_before = [&](TimePoint t) -> int64_t {
    auto it = std::lower_bound(by_completion.begin(), by_completion.end(),
                               std::make_pair(t, int64_t{INT64_MIN}));
    size_t n = it - by_completion.begin();
    return n == 0 ? 0 : max_rev_completed[n - 1];
  };
  // Lowest revision among writes invoked strictly after t.
  auto invoked_after = [&](TimePoint t) -> int64_t {
    auto it = std::upper_bound(by_invocation.begin(), by_invocation.end(),
                               std::make_pair(t, int64_t{INT64_MAX}));
    size_t n = it - by_invocation.begin();
    return n == by_invocation.size() ? INT64_MAX : min_rev_invoked[n];
  };
  for (const auto& [w, rev] : applied) {
    if (completed_before(w->invoked) >= rev) {
      return InternalError("write " + w->value + " at revision " +
                           std::to_string(rev) +
                           " is ordered before a write that completed "
                           "before it was invoked");
    }
  }
  // Rules 3-5.
  for (const RegisterOp* r : reads) {
    const std::string who = "read by client " + std::to_string(r->client) +
                            " of \"" + r->value + "\"@" +
                            std::to_string(r->revision);
    if (r->revision == 0) {
      if (!r->value.empty()) return InternalError(who + ": no revision");
    } else {
      auto it = value_at.find(r->revision);
      if (it == value_at.end() || it->second != r->value) {
        return InternalError(who + ": the store has no such write");
      }
      const RegisterOp* w = write_of.at(r->value);
      if (w->invoked > r->completed) {
        return InternalError(who +
                             ": observed a write invoked after the "
                             "read completed");
      }
    }
    if (invoked_after(r->completed) <= r->revision) {
      return InternalError(who +
                           ": a write invoked after the read completed "
                           "is ordered before what it read");
    }
    const int64_t newest = completed_before(r->invoked);
    if (newest > r->revision) {
      return InternalError(who + ": stale, revision " + std::to_string(newest) +
                           " had completed before the read was invoked");
    }
  }
  // Rule 6: with reads sorted by completion, a read's revision must be >=
  // that of every read completed before it was invoked.
  std::vector<std::pair<TimePoint, int64_t>> reads_done;
  for (const RegisterOp* r : reads) {
    reads_done.push_back({r->completed, r->revision});
  }
  std::sort(reads_done.begin(), reads_done.end());
  std::vector<int64_t> max_read(reads_done.size());
  for (size_t i = 0; i < reads_done.size(); ++i) {
    max_read[i] = std::max(i ? max_read[i - 1] : 0, reads_done[i].second);
  }
  for (const RegisterOp* r : reads) {
    auto it = std::lower_bound(reads_done.begin(), reads_done.end(),
                               std::make_pair(r->invoked, int64_t{INT64_MIN}));
    size_t n = it - reads_done.begin();
    if (n > 0 && max_read[n - 1] > r->revision) {
      return InternalError("read by client " + std::to_string(r->client) +
                           " of revision " + std::to_string(r->revision) +
                           " after another read had observed " +
                           std::to_string(max_read[n - 1]));
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<StoredWrite>> ReadRegisterWrites(storage::RemoteKV* kv,
                                                      const std::string& key,
                                                      Duration timeout) {
  etcdserverpb::RangeRequest get;
  get.set_key(key);
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse now, kv->Range(get));
  if (now.kvs_size() == 0) return std::vector<StoredWrite>{};
  const int64_t last = now.kvs(0).mod_revision();

  struct Collected {
    Mutex mu;
    std::condition_variable cv;
    std::vector<StoredWrite> writes GUARDED_BY(mu);
    int64_t seen GUARDED_BY(mu) = 0;
    std::string canceled GUARDED_BY(mu);
  } c;
  etcdserverpb::WatchCreateRequest req;
  req.set_key(key);
  req.set_start_revision(1);
  ASSIGN_OR_RETURN(
      std::unique_ptr<storage::Watch> watch,
      kv->StartWatch(req, [&c](const etcdserverpb::WatchResponse& r) {
        MutexLock l(&c.mu);
        if (r.canceled())
          c.canceled = r.cancel_reason() + " (compacted at " +
                       std::to_string(r.compact_revision()) + ")";
        for (const auto& e : r.events()) {
          if (e.type() != mvccpb::Event::PUT) continue;
          c.writes.push_back({e.kv().value(), e.kv().mod_revision()});
          c.seen = e.kv().mod_revision();
        }
        c.cv.notify_all();
      }));
  MutexLock l(&c.mu);
  if (!c.cv.wait_for(l.native(), timeout, [&]() REQUIRES(c.mu) {
        return c.seen >= last || !c.canceled.empty();
      })) {
    return DeadlineExceededError("watch of " + key + " reached revision " +
                                 std::to_string(c.seen) + " of " +
                                 std::to_string(last));
  }
  if (!c.canceled.empty())
    return InternalError("watch canceled: " + c.canceled);
  std::vector<StoredWrite> out = c.writes;
  l.Unlock();
  watch.reset();
  return out;
}

}  // namespace kplane::e2e
