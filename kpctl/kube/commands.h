// Internal to kpctl/kube: the context a command runs in and the command
// table. Each command lives in its own .cc file (get.cc, apply.cc, ...).
#ifndef KPLANE_KPCTL_KUBE_COMMANDS_H_
#define KPLANE_KPCTL_KUBE_COMMANDS_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "kpctl/kube/client.h"
#include "kpctl/kube/flags.h"
#include "kpctl/kube/kube_command.h"

namespace kplane::kpctl::kube {

struct Context {
  KubeIo* io = nullptr;
  Flags* flags = nullptr;
  Kubeconfig kubeconfig;
  ClientConfig config;  // set when the command needs a server
  std::unique_ptr<KubeClient> client;

  std::ostream& out() { return *io->out; }
  std::ostream& err() { return *io->err; }
  Clock* clock() { return io->clock; }
  const std::string& ns() const { return config.ns; }
  // Prints `s` as kubectl does and returns 1.
  int Fail(const Status& s);
  // Prints "error: <message>" and returns 1.
  int Fail(std::string_view message);
};

// "Error from server (NotFound): pods \"x\" not found" for an API error
// (with `prefix`, e.g. "error when creating \"f.yaml\": ", before the
// message), "error: ..." otherwise.
std::string ErrorLine(const Status& s, std::string_view prefix = {});

// A Go duration flag ("30s", "5m", "0", or bare seconds "10").
// InvalidArgument, in pflag's words, when malformed, negative or longer
// than kMaxDurationFlag.
StatusOr<Duration> DurationFlag(const Flags& flags, std::string_view name);
// 100 years: longer means "forever" anyway, and now + it stays a valid
// time point.
inline constexpr Duration kMaxDurationFlag = hours(24 * 365 * 100);
// --request-timeout: 0 (and unset) is the default 30 s.
StatusOr<Duration> RequestTimeoutFlag(const Flags& flags);

struct CommandSpec {
  const char* name;
  const char* help;
  const char* usage;  // "kpctl get TYPE[.GROUP] [NAME...] [flags]"
  std::vector<FlagSpec> flags;
  bool needs_server;
  int (*run)(Context& ctx);
};

CommandSpec GetCommand();
CommandSpec DescribeCommand();
CommandSpec ApplyCommand();
CommandSpec CreateCommand();
CommandSpec DeleteCommand();
CommandSpec ScaleCommand();
CommandSpec RolloutCommand();
CommandSpec LabelCommand();
CommandSpec AnnotateCommand();
CommandSpec EditCommand();
CommandSpec PatchCommand();
CommandSpec WaitCommand();
CommandSpec VersionCommand();
CommandSpec ConfigCommand();
CommandSpec ApiResourcesCommand();

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_COMMANDS_H_
