// The simulation's replicated state machine: a key/value register map with
// put, get and compare-and-swap, client sessions for exactly-once apply, and
// the records of a client history that the linearizability checker reads.
//
// Values are int64; 0 means "absent" (the initial value of every key). The
// simulation gives every write a unique non-zero value, which the checker
// relies on to prune writes nobody observed.
//
// Thread-safety: plain values; no synchronization. No errors: decoding
// returns false on malformed input.
#ifndef KPLANE_TESTS_SIM_KV_MODEL_H_
#define KPLANE_TESTS_SIM_KV_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kplane::sim {

enum class OpKind { kPut, kGet, kCas };
const char* OpKindName(OpKind k);

// One client request as it travels through the log.
struct KvCommand {
  uint64_t client = 0;
  uint64_t seq = 0;  // per client, increasing; (client, seq) identifies it
  OpKind kind = OpKind::kGet;
  std::string key;
  int64_t a = 0;  // put: value; cas: expected
  int64_t b = 0;  // cas: new value
};

// "client seq kind key a b", e.g. "3 17 cas k2 41 52".
std::string EncodeCommand(const KvCommand& c);
bool DecodeCommand(std::string_view s, KvCommand* c);

struct KvResult {
  int64_t value = 0;  // get: the value; cas: the value observed
  bool ok = true;     // cas: whether it swapped
};

// Deterministic state machine. A command whose (client, seq) is not newer
// than the client's last applied one is a duplicate (the network may
// duplicate a forwarded proposal, a client may retry) and has no effect.
class KvStateMachine {
 public:
  // Returns false for a duplicate (result then holds the cached answer if
  // the duplicate is of the latest command, else a default).
  bool Apply(const KvCommand& c, KvResult* result);
  int64_t Get(const std::string& key) const;

  std::string Serialize() const;
  bool Restore(std::string_view data);
  // A hash of the whole state (data and sessions), for cross-replica checks.
  uint64_t Digest() const;

 private:
  struct Session {
    uint64_t seq = 0;
    KvResult result;
  };
  std::map<std::string, int64_t> data_;
  std::map<uint64_t, Session> sessions_;
};

}  // namespace kplane::sim

#endif  // KPLANE_TESTS_SIM_KV_MODEL_H_
