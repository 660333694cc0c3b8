// What every `kplane <command>` main function does the same way: flag
// parsing with --help and error reporting, the --log-level names, and the
// stop signals a long-running command waits for.
//
//   FlagSet flags("kplane store", "...");
//   ... flags.String(...) ...
//   if (auto code = ParseCommandFlags(flags, args, "kplane store")) return
//   *code; sigset_t stop = BlockStopSignals();   // before any thread starts
//   ...
//   int sig; sigwait(&stop, &sig);
//
// Thread-safety: call from the main thread, before other threads start.
#ifndef KPLANE_BASE_COMMAND_H_
#define KPLANE_BASE_COMMAND_H_

#include <signal.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/flags.h"
#include "base/status.h"

namespace kplane {

// Parses `args` (no positional arguments allowed). Returns the exit code
// when the command must end now: 0 after printing the usage for --help; 2
// after printing "<command>: <error>" to stderr for a bad flag or a
// positional argument. std::nullopt: go on.
std::optional<int> ParseCommandFlags(FlagSet& flags,
                                     const std::vector<std::string>& args,
                                     std::string_view command);

// For a command whose one subcommand is `start` (etcd's `gateway start`,
// `grpc-proxy start`): checks the positional arguments left after flag
// parsing. `command` is the command without its subcommand, e.g.
// "kplane store gateway"; its last word names it in the messages.
// Returns OK when `positional` is exactly {"start"}; else InvalidArgument:
//   none:               a subcommand is needed: `<command> start [flags]`
//   first is not start: unknown subcommand "<first>" (the <last word> has
//                       one: start)
//   more than one:      unexpected argument "<second>"
Status CheckStartSubcommand(const std::vector<std::string>& positional,
                            std::string_view command);

// Prints "<command>: <message>" to stderr and returns 2, the exit code of a
// command that could not start.
int CommandFailed(std::string_view command, const Status& status);

// Sets the minimum log level from a --log-level value: "debug", "warning"
// or "error". "info" (the built-in default) and any other value leave the
// level as it is, i.e. as KPLANE_LOG_LEVEL or the default set it.
void SetMinLogLevelByName(std::string_view name);

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts
// afterwards, so that only sigwait() on the returned set receives them.
sigset_t BlockStopSignals();

}  // namespace kplane

#endif  // KPLANE_BASE_COMMAND_H_
