#include "base/command.h"

#include <pthread.h>

#include <iostream>

#include "base/logging.h"

namespace kplane {

std::optional<int> ParseCommandFlags(FlagSet& flags,
                                     const std::vector<std::string>& args,
                                     std::string_view command) {
  Status s = flags.Parse(args);
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!s.ok()) return CommandFailed(command, s);
  if (!flags.args().empty()) {
    return CommandFailed(command,
                         InvalidArgumentError("unexpected argument \"" +
                                              flags.args().front() + "\""));
  }
  return std::nullopt;
}

Status CheckStartSubcommand(const std::vector<std::string>& positional,
                            std::string_view command) {
  if (positional.empty()) {
    return InvalidArgumentError("a subcommand is needed: `" +
                                std::string(command) + " start [flags]`");
  }
  if (positional.front() != "start") {
    const size_t space = command.rfind(' ');
    std::string_view noun =
        space == std::string_view::npos ? command : command.substr(space + 1);
    return InvalidArgumentError("unknown subcommand \"" + positional.front() +
                                "\" (the " + std::string(noun) +
                                " has one: start)");
  }
  if (positional.size() > 1) {
    return InvalidArgumentError("unexpected argument \"" + positional[1] +
                                "\"");
  }
  return Status::Ok();
}

int CommandFailed(std::string_view command, const Status& status) {
  std::cerr << command << ": " << status.message() << "\n";
  return 2;
}

void SetMinLogLevelByName(std::string_view name) {
  if (name == "debug") SetMinLogLevel(LogLevel::kDebug);
  if (name == "warning") SetMinLogLevel(LogLevel::kWarning);
  if (name == "error") SetMinLogLevel(LogLevel::kError);
}

sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace kplane
