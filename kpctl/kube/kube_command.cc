#include "kpctl/kube/kube_command.h"

#include <cstdlib>

#include "base/strings.h"
#include "informer/api_errors.h"
#include "kpctl/kube/commands.h"

namespace kplane::kpctl::kube {

std::string ErrorLine(const Status& s, std::string_view prefix) {
  const std::string_view reason = informer::ReasonOf(s);
  if (informer::HttpCodeOf(s) != 0 && !reason.empty()) {
    return "Error from server (" + std::string(reason) +
           "): " + std::string(prefix) + s.message();
  }
  // The server answered but TLS failed (a wrong CA, a name the
  // certificate does not carry): "is it running" would mislead.
  if (s.code() == StatusCode::kUnavailable &&
      s.message().find("TLS handshake") != std::string::npos) {
    return "Unable to connect to the server: " + std::string(prefix) +
           s.message();
  }
  if (s.code() == StatusCode::kUnavailable) {
    return "error: " + std::string(prefix) + s.message() +
           " - is the API server running, and is --server (or the "
           "kubeconfig) right?";
  }
  return "error: " + std::string(prefix) + s.message();
}

int Context::Fail(const Status& s) {
  err() << ErrorLine(s) << "\n";
  return 1;
}

int Context::Fail(std::string_view message) {
  err() << "error: " << message << "\n";
  return 1;
}

StatusOr<Duration> DurationFlag(const Flags& flags, std::string_view name) {
  const std::string v = flags.Get(name);
  auto invalid = [&](const std::string& why) {
    return InvalidArgumentError("invalid argument \"" + v + "\" for \"--" +
                                std::string(name) + "\" flag: " + why);
  };
  const std::string too_long = "out of range (at most " +
                               std::to_string(kMaxDurationFlag / hours(1)) +
                               "h)";
  if (v.empty() || v == "0") return Duration(0);
  Duration d;
  // kubectl also accepts a bare number of seconds for some flags.
  if (std::optional<int64_t> n = ParseInt64(v)) {
    // Checked in seconds: seconds(*n) in nanoseconds may overflow.
    if (*n > kMaxDurationFlag / seconds(1)) return invalid(too_long);
    d = seconds(*n);
  } else {
    std::optional<int64_t> ns = ParseGoDuration(v);
    if (!ns) return invalid("time: invalid duration \"" + v + "\"");
    d = Duration(*ns);
  }
  // Negative would read as "no limit" to the commands.
  if (d < Duration(0)) return invalid("must not be negative");
  if (d > kMaxDurationFlag) return invalid(too_long);
  return d;
}

StatusOr<Duration> RequestTimeoutFlag(const Flags& flags) {
  ASSIGN_OR_RETURN(Duration timeout, DurationFlag(flags, "request-timeout"));
  // kubectl reads 0 as "no timeout"; here it is the default.
  return timeout == Duration(0) ? seconds(30) : timeout;
}

namespace {

const std::vector<CommandSpec>& Specs() {
  static const std::vector<CommandSpec>* specs = new std::vector<CommandSpec>{
      GetCommand(),     DescribeCommand(), ApplyCommand(),
      CreateCommand(),  DeleteCommand(),   ScaleCommand(),
      RolloutCommand(), LabelCommand(),    AnnotateCommand(),
      EditCommand(),    PatchCommand(),    WaitCommand(),
      VersionCommand(), ConfigCommand(),   ApiResourcesCommand()};
  return *specs;
}

}  // namespace

const std::vector<KubeCommandInfo>& KubeCommands() {
  static const std::vector<KubeCommandInfo>* infos = [] {
    auto* v = new std::vector<KubeCommandInfo>;
    for (const CommandSpec& s : Specs()) v->push_back({s.name, s.help});
    return v;
  }();
  return *infos;
}

int RunKubeCommand(std::string_view command,
                   const std::vector<std::string>& args, KubeIo& io) {
  if (!io.getenv) io.getenv = [](const char* n) { return ::getenv(n); };
  if (io.clock == nullptr) io.clock = Clock::Real();
  const CommandSpec* spec = nullptr;
  for (const CommandSpec& s : Specs()) {
    if (command == s.name) spec = &s;
  }
  if (spec == nullptr) {
    *io.err << "error: unknown command \"" << command << "\" for \"kpctl\"\n";
    return 1;
  }
  Flags flags(spec->flags);
  Context ctx;
  ctx.io = &io;
  ctx.flags = &flags;
  if (Status s = flags.Parse(args); !s.ok()) {
    *io.err << "error: " << s.message() << "\nSee 'kpctl " << spec->name
            << " --help' for usage.\n";
    return 1;
  }
  if (flags.GetBool("help")) {
    *io.out << spec->help << "\n\nUsage:\n  " << spec->usage << "\n\nFlags:\n"
            << flags.Usage();
    return 0;
  }
  StatusOr<Kubeconfig> kc = LoadKubeconfig(flags.Get("kubeconfig"), io.getenv);
  if (!kc.ok()) return ctx.Fail(kc.status());
  ctx.kubeconfig = std::move(*kc);
  if (spec->needs_server) {
    ConfigOverrides o = OverridesFromFlags(flags);
    StatusOr<ClientConfig> cc = ResolveClientConfig(ctx.kubeconfig, o);
    if (!cc.ok()) return ctx.Fail(cc.status());
    ctx.config = *cc;
    StatusOr<Duration> timeout = RequestTimeoutFlag(flags);
    if (!timeout.ok()) return ctx.Fail(timeout.status());
    StatusOr<std::unique_ptr<KubeClient>> client =
        KubeClient::New(ctx.config, *timeout, io.clock);
    if (!client.ok()) return ctx.Fail(client.status());
    ctx.client = std::move(*client);
  }
  return spec->run(ctx);
}

}  // namespace kplane::kpctl::kube
