// Building etcd requests from etcdctl's command lines: `get`, `put`, `del`
// arguments and flags, and the `txn` input language, with etcdctl 3.4's
// exact rules and error texts (they are part of its interface).
//
// The txn language, read line by line:
//
//   mod("key1") > "0"            <- compares, one per line
//   value("key2") = "x"             targets: ver|version c|create m|mod
//                                   val|value lease; ops: = != < >
//                                <- a blank line ends the compares
//   put key1 "some value"        <- success ops: get/put/del command lines
//   get key2 --prefix               with their usual flags
//                                <- a blank line
//   del key1                     <- failure ops
//                                <- a blank line (required, as in etcdctl)
//
// Quoting (etcdctl's `argify`): "double quotes" take Go escapes ("\n"),
// 'single quotes' are literal; anything else splits on whitespace.
// A lease compare takes the lease ID in hex, like every lease argument of
// etcdctl (etcdctl 3.4 itself crashes on it).
//
// Thread-safety: pure functions.
#ifndef KPLANE_KPCTL_STORE_KV_REQUESTS_H_
#define KPLANE_KPCTL_STORE_KV_REQUESTS_H_

#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/flags.h"
#include "schemas/rpc.pb.h"

namespace kplane::kpctl {

// etcdctl's exit codes.
enum ExitCode : int {
  kExitSuccess = 0,
  kExitError = 1,
  kExitBadConnection = 2,
  kExitInvalidInput = 3,
  kExitBadFeature = 4,
  kExitInterrupted = 5,
  kExitIO = 6,
  kExitBadArgs = 128,
};

// A failed command: what to print after "Error: " and the exit code.
struct CommandError {
  int exit_code = kExitError;
  std::string message;
};

struct GetFlags {
  std::string consistency = "l";
  std::string order;
  std::string sort_by;
  int64_t limit = 0;
  int64_t rev = 0;
  bool prefix = false;
  bool from_key = false;
  bool keys_only = false;
  bool print_value_only = false;
};
void AddGetFlags(FlagSet* fs, GetFlags* f);
// args: <key> [range_end].
std::optional<CommandError> BuildRange(const std::vector<std::string>& args,
                                       const GetFlags& f,
                                       etcdserverpb::RangeRequest* req);

struct PutFlags {
  std::string lease = "0";
  bool prev_kv = false;
  bool ignore_value = false;
  bool ignore_lease = false;
};
void AddPutFlags(FlagSet* fs, PutFlags* f);
// args: <key> [value]; without a value it is read from `in` (nullptr: an
// error, as inside a txn).
std::optional<CommandError> BuildPut(const std::vector<std::string>& args,
                                     const PutFlags& f, std::istream* in,
                                     etcdserverpb::PutRequest* req);

struct DelFlags {
  bool prefix = false;
  bool prev_kv = false;
  bool from_key = false;
};
void AddDelFlags(FlagSet* fs, DelFlags* f);
std::optional<CommandError> BuildDel(const std::vector<std::string>& args,
                                     const DelFlags& f,
                                     etcdserverpb::DeleteRangeRequest* req);

// Splits a txn line into arguments (see the header comment).
std::vector<std::string> Argify(std::string_view line);
// One compare line.
std::optional<CommandError> ParseCompare(std::string_view line,
                                         etcdserverpb::Compare* cmp);
// One get/put/del line.
std::optional<CommandError> ParseTxnOp(std::string_view line,
                                       etcdserverpb::RequestOp* op);
// The whole txn input. With `prompts`, the interactive prompts are
// written there ("compares:", ...).
std::optional<CommandError> ReadTxn(std::istream& in, std::ostream* prompts,
                                    etcdserverpb::TxnRequest* req);

// Go's strconv.ParseInt / ParseUint with their error texts
// (`strconv.ParseInt: parsing "zz": invalid syntax`).
std::optional<int64_t> GoParseInt(std::string_view s, int base,
                                  std::string* error);
std::optional<uint64_t> GoParseUint(std::string_view s, int base,
                                    std::string* error);

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_STORE_KV_REQUESTS_H_
