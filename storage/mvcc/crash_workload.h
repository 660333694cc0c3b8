// The deterministic workload of the crash tests, shared by the child
// process that is killed and the test that checks what survived. Operation
// i (1, 2, 3, ...) always writes, so on a new store (at revision
// Store::kInitialRevision) it produces revision r = i + kInitialRevision and
// is applied with consistent index i. Both functions take that revision r:
// Apply(store, r) runs operation i, Expected(r) replays operations 1..i in
// memory.
#ifndef KPLANE_STORAGE_MVCC_CRASH_WORKLOAD_H_
#define KPLANE_STORAGE_MVCC_CRASH_WORKLOAD_H_

#include <map>
#include <string>

#include "storage/mvcc/store.h"

namespace kplane::mvcc::crash {

inline std::string J(int64_t i) { return std::to_string(i % 13); }

// The operation that produces revision `rev`.
inline int64_t OpOf(int64_t rev) { return rev - Store::kInitialRevision; }

// Applies the operation that produces revision `rev` to the store.
inline Status Apply(Store* store, int64_t rev) {
  const int64_t i = OpOf(rev);
  const uint64_t ci = static_cast<uint64_t>(i);
  etcdserverpb::PutRequest put;
  switch (i % 5) {
    case 0: {  // three keys and a delete at one revision
      etcdserverpb::TxnRequest t;
      for (int k = 1; k <= 3; ++k) {
        auto* p = t.add_success()->mutable_request_put();
        p->set_key("t" + J(i) + "/" + std::to_string(k));
        p->set_value(std::to_string(i));
      }
      t.add_success()->mutable_request_delete_range()->set_key("d" + J(i));
      return store->Txn(t, ci).status();
    }
    case 1:
      put.set_key("p" + J(i));
      put.set_value(std::to_string(i));
      return store->Put(put, ci).status();
    case 2:
      put.set_key("d" + J(i));
      put.set_value(std::to_string(i));
      return store->Put(put, ci).status();
    case 3: {  // a compare decides which value is written
      etcdserverpb::TxnRequest t;
      auto* c = t.add_compare();
      c->set_key("p" + J(i));
      c->set_target(etcdserverpb::Compare::VERSION);
      c->set_result(etcdserverpb::Compare::GREATER);
      c->set_version(0);
      auto* s = t.add_success()->mutable_request_put();
      s->set_key("c" + J(i));
      s->set_value(std::to_string(i));
      auto* f = t.add_failure()->mutable_request_put();
      f->set_key("c" + J(i));
      f->set_value("-" + std::to_string(i));
      return store->Txn(t, ci).status();
    }
    default:
      put.set_key("b" + J(i));
      put.set_value(std::string(200, static_cast<char>('a' + i % 26)));
      return store->Put(put, ci).status();
  }
}

// The live key-values at revision `rev`: after operations 1..OpOf(rev).
inline std::map<std::string, std::string> Expected(int64_t rev) {
  const int64_t n = OpOf(rev);
  std::map<std::string, std::string> m;
  for (int64_t i = 1; i <= n; ++i) {
    switch (i % 5) {
      case 0:
        for (int k = 1; k <= 3; ++k) {
          m["t" + J(i) + "/" + std::to_string(k)] = std::to_string(i);
        }
        m.erase("d" + J(i));
        break;
      case 1:
        m["p" + J(i)] = std::to_string(i);
        break;
      case 2:
        m["d" + J(i)] = std::to_string(i);
        break;
      case 3:
        m["c" + J(i)] = (m.count("p" + J(i)) ? "" : "-") + std::to_string(i);
        break;
      default:
        m["b" + J(i)] = std::string(200, static_cast<char>('a' + i % 26));
        break;
    }
  }
  return m;
}

}  // namespace kplane::mvcc::crash

#endif  // KPLANE_STORAGE_MVCC_CRASH_WORKLOAD_H_
