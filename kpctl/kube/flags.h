// Command-line flags for the kubectl-like commands of kpctl, parsed the way
// kubectl (spf13/pflag) reads them:
//
//   --namespace=x  --namespace x  -n x  -nx     a flag with a value
//   --watch  -w  --watch=false                  a boolean flag
//   -f a.yaml -f dir/                           repeated: every value kept
//   --                                          the rest is positional
//
// Flags and positional arguments may be interleaved
// (`get pods -n x web -o wide`). The flag table is declared by each command;
// the global ones (GlobalFlags()) are added to every command.
//
// Thread-safety: a Flags is used by one thread. Errors: InvalidArgument
// with pflag's texts ("unknown flag: --foo", "unknown shorthand flag: 'q' in
// -q", "flag needs an argument: --namespace").
#ifndef KPLANE_KPCTL_KUBE_FLAGS_H_
#define KPLANE_KPCTL_KUBE_FLAGS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"
#include "kpctl/kube/kubeconfig.h"

namespace kplane::kpctl::kube {

struct FlagSpec {
  std::string name;      // "namespace"
  char shorthand = 0;    // 'n', or 0
  bool boolean = false;  // takes no value unless written --name=value
  std::string default_value;
  std::string help;
};

// Flags every kube command accepts: --kubeconfig, --context, --server/-s,
// --token, --namespace/-n, --request-timeout, --help/-h.
std::vector<FlagSpec> GlobalFlags();

class Flags {
 public:
  // `specs` plus GlobalFlags().
  explicit Flags(std::vector<FlagSpec> specs);

  Status Parse(const std::vector<std::string>& args);

  // True when the user gave the flag.
  bool Has(std::string_view name) const;
  // The last value given, else the default.
  std::string Get(std::string_view name) const;
  // Every value given, in order (none: empty, even with a default).
  std::vector<std::string> GetAll(std::string_view name) const;
  // ParseBool of Get(); a malformed value was rejected by Parse().
  bool GetBool(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // "  -n, --namespace string   help" lines for --help.
  std::string Usage() const;

 private:
  const FlagSpec* FindLong(std::string_view name) const;
  const FlagSpec* FindShort(char c) const;
  Status Set(const FlagSpec& spec, std::string value);

  std::vector<FlagSpec> specs_;
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::vector<std::string> positional_;
};

// kubectl accepts its global flags before the command too
// (`kpctl --kubeconfig X -n demo get pods`): returns `words` (what follows
// "kpctl") with the GlobalFlags() in front of the command moved behind it,
//   {"-n", "demo", "get", "pods"} -> {"get", "-n", "demo", "pods"}.
// Words not starting with a flag are returned unchanged. Errors
// (InvalidArgument, pflag's texts): a flag before the command that is not
// global ("unknown flag: --watch"), one missing its value ("flag needs an
// argument: --namespace"), and no command after the flags.
StatusOr<std::vector<std::string>> HoistGlobalFlags(
    const std::vector<std::string>& words);

// The kubeconfig overrides the global flags give (--context, --server,
// --token, --namespace and kubectl's TLS flags).
ConfigOverrides OverridesFromFlags(const Flags& flags);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_FLAGS_H_
