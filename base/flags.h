// FlagSet: command-line flags in the style of Go's flag package, which etcd,
// kube-apiserver and kubectl users know: `--name=value`, `--name value`,
// `-n value` for a declared short name, bare `--bool-flag`, `--` ends flags.
// As in Go, a long name also works with one dash (`-name value`) when it is
// longer than one letter.
//
//   FlagSet flags("kplane store", "Runs one member of the replicated store.");
//   std::string name = "default";
//   int64_t snapshot_count = 100000;
//   flags.String("name", &name, "Human-readable name for this member.");
//   flags.Int64("snapshot-count", &snapshot_count, "...");
//   Status s = flags.Parse(argc, argv);   // fills the variables
//   flags.args();                         // positional arguments
//
// Unknown flags, missing values and malformed numbers are InvalidArgument
// errors whose message names the flag. `--help`/`-h` sets help_requested().
// Usage() renders a help text with defaults.
//
// Thread-safety: single-threaded use.
#ifndef KPLANE_BASE_FLAGS_H_
#define KPLANE_BASE_FLAGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace kplane {

class FlagSet {
 public:
  FlagSet(std::string command, std::string description);

  void String(const std::string& name, std::string* v, std::string help,
              char short_name = 0);
  void Bool(const std::string& name, bool* v, std::string help,
            char short_name = 0);
  void Int64(const std::string& name, int64_t* v, std::string help,
             char short_name = 0);
  void Int(const std::string& name, int* v, std::string help,
           char short_name = 0);
  // Accepts Go durations ("100ms", "1m30s"); a bare integer is read in
  // `bare_unit` (etcd's --heartbeat-interval takes milliseconds). Negative
  // values and values past int64 nanoseconds are InvalidArgument.
  void Duration(const std::string& name, kplane::Duration* v, std::string help,
                kplane::Duration bare_unit = seconds(1));
  // Repeatable and comma-separated: --x=a,b --x=c gives {a, b, c} (pflag's
  // StringSlice: kube-apiserver's --etcd-servers, etcdctl's --endpoints).
  void StringList(const std::string& name, std::vector<std::string>* v,
                  std::string help, char short_name = 0);
  // Comma-separated, and each occurrence replaces the list: --x=a,b --x=c
  // gives {c}, as every flag of Go's flag package (etcd's URLsValue and
  // UniqueStringsValue: --listen-client-urls, --log-outputs).
  void StringListLastWins(const std::string& name, std::vector<std::string>* v,
                          std::string help);

  // Parses argv[first..]; flags and positional arguments may interleave.
  Status Parse(int argc, const char* const* argv, int first = 1);
  Status Parse(const std::vector<std::string>& args);

  const std::vector<std::string>& args() const { return args_; }
  bool help_requested() const { return help_; }
  // True if the flag was given on the command line (or through Set).
  bool IsSet(const std::string& name) const;
  // Whether a flag of that name is declared.
  bool Has(const std::string& name) const { return by_name_.count(name) > 0; }
  // Sets a declared flag from text as the command line would (environment
  // variables and config files use it); marks it set. InvalidArgument for an
  // unknown name or a bad value.
  Status Set(const std::string& name, const std::string& value);
  // Whether the declared flag `name` takes no value (a bool).
  bool IsBool(const std::string& name) const;
  // The declared long names, in declaration order.
  std::vector<std::string> Names() const;
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    char short_name;
    std::string help;
    std::string default_text;
    bool is_bool;
    std::function<Status(const std::string&)> set;
  };
  void Add(Flag f);

  std::string command_, description_;
  std::vector<Flag> flags_;
  std::map<std::string, size_t> by_name_;
  std::map<char, size_t> by_short_;
  std::vector<std::string> args_;
  std::map<std::string, bool> set_;
  bool help_ = false;
};

}  // namespace kplane

#endif  // KPLANE_BASE_FLAGS_H_
