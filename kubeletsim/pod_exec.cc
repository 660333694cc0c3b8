#include "kubeletsim/pod_exec.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>
#include <utility>

#include "base/strings.h"

namespace kplane::kubeletsim {

namespace {

constexpr char kRootListing[] =
    "bin\ndev\netc\nhome\nproc\nroot\nsys\ntmp\nusr\nvar\n";
constexpr char kRootListingLong[] =
    "drwxr-xr-x    2 root     root          4096 Jan  1 00:00 bin\n"
    "drwxr-xr-x    5 root     root           360 Jan  1 00:00 dev\n"
    "drwxr-xr-x    1 root     root          4096 Jan  1 00:00 etc\n"
    "drwxr-xr-x    2 root     root          4096 Jan  1 00:00 home\n"
    "dr-xr-xr-x  200 root     root             0 Jan  1 00:00 proc\n"
    "drwx------    2 root     root          4096 Jan  1 00:00 root\n"
    "dr-xr-xr-x   13 root     root             0 Jan  1 00:00 sys\n"
    "drwxrwxrwt    2 root     root          4096 Jan  1 00:00 tmp\n"
    "drwxr-xr-x    7 root     root          4096 Jan  1 00:00 usr\n"
    "drwxr-xr-x    9 root     root          4096 Jan  1 00:00 var\n";
constexpr char kOsRelease[] =
    "NAME=\"kplane simulated container\"\nID=kplane-sim\n"
    "PRETTY_NAME=\"kplane simulated container (no processes run)\"\n";

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

const std::string* Lookup(const ShellEnv& env, std::string_view name) {
  for (const auto& [k, v] : env.env) {
    if (k == name) return &v;
  }
  return nullptr;
}

bool IsShell(std::string_view name) {
  return name == "sh" || name == "bash" || name == "ash";
}

void Out(ShellResult* r, std::string text) {
  r->actions.push_back({ShellAction::kStdout, std::move(text), {}});
}
void Err(ShellResult* r, std::string text) {
  r->actions.push_back({ShellAction::kStderr, std::move(text), {}});
}

// Splits a script into commands (`;`) of words, expanding variables.
// Returns false (with a message) on an unterminated quote.
bool ParseScript(const ShellEnv& env, std::string_view s, int last_status,
                 std::vector<std::vector<std::string>>* commands,
                 std::string* error) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) words.push_back(std::move(word));
    word.clear();
    in_word = false;
  };
  auto end_command = [&] {
    end_word();
    if (!words.empty()) commands->push_back(std::move(words));
    words.clear();
  };
  size_t expansion_left = kMaxExpansion;
  bool too_long = false;
  auto expand = [&](size_t* i) {
    // s[*i] == '$'
    size_t j = *i + 1;
    if (j < s.size() && s[j] == '?') {
      word += std::to_string(last_status);
      *i = j;
      return;
    }
    bool braced = j < s.size() && s[j] == '{';
    if (braced) ++j;
    size_t start = j;
    while (j < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) {
      ++j;
    }
    if (j == start) {
      word += '$';
      return;
    }
    std::string_view name = s.substr(start, j - start);
    if (braced && j < s.size() && s[j] == '}') ++j;
    if (const std::string* v = Lookup(env, name)) {
      if (v->size() > expansion_left) {
        expansion_left = 0;
        too_long = true;
      } else {
        expansion_left -= v->size();
        word += *v;
      }
    }
    *i = j - 1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\'') {
      size_t close = s.find('\'', i + 1);
      if (close == std::string_view::npos) {
        *error = "syntax error: unterminated quoted string";
        return false;
      }
      word.append(s.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '"') {
      in_word = true;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            (s[j + 1] == '"' || s[j + 1] == '\\' || s[j + 1] == '$')) {
          word += s[++j];
        } else if (s[j] == '$') {
          expand(&j);
        } else {
          word += s[j];
        }
      }
      if (j >= s.size()) {
        *error = "syntax error: unterminated quoted string";
        return false;
      }
      i = j;
    } else if (c == '\\' && i + 1 < s.size()) {
      word += s[++i];
      in_word = true;
    } else if (c == '$') {
      in_word = true;
      expand(&i);
    } else if (c == ';' || c == '\n') {
      end_command();
    } else if (c == ' ' || c == '\t' || c == '\r') {
      end_word();
    } else if (c == '#' && !in_word) {
      // A comment to the end of the line.
      size_t nl = s.find('\n', i);
      if (nl == std::string_view::npos) break;
      i = nl - 1;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (too_long) {
    *error =
        "variables expand to over " + std::to_string(kMaxExpansion) + " bytes";
    return false;
  }
  end_command();
  return true;
}

// The script cut at unquoted `;` and newlines (quotes kept for
// ParseScript). An unterminated quote runs to the end (ParseScript reports
// it).
std::vector<std::string_view> SplitCommands(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\\') {
      ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' &&
               (i == start || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      size_t nl = s.find('\n', i);
      if (nl == std::string_view::npos) nl = s.size();
      out.push_back(s.substr(start, i - start));
      start = nl + 1;
      i = nl;
    } else if (c == ';' || c == '\n') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string FormatDate(WallTime t) {
  std::time_t secs =
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
          .count();
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S UTC %Y\n", &tm);
  return buf;
}

}  // namespace

ShellResult RunCommand(const ShellEnv& env,
                       const std::vector<std::string>& argv, int last_status,
                       int depth) {
  ShellResult r;
  if (argv.empty()) {
    r.status = last_status;
    return r;
  }
  const std::string_view name = BaseName(argv[0]);
  const size_t argc = argv.size();
  if (name == "echo") {
    size_t first = 1;
    bool newline = true;
    if (argc > 1 && argv[1] == "-n") {
      newline = false;
      first = 2;
    }
    std::string text;
    for (size_t i = first; i < argc; ++i) {
      if (i > first) text += ' ';
      text += argv[i];
    }
    if (newline) text += '\n';
    Out(&r, std::move(text));
  } else if (name == "env" || (name == "printenv" && argc == 1)) {
    std::string text;
    for (const auto& [k, v] : env.env) text += k + "=" + v + "\n";
    text += "HOSTNAME=" + env.hostname + "\n";
    Out(&r, std::move(text));
  } else if (name == "printenv") {
    const std::string* v = Lookup(env, argv[1]);
    if (v == nullptr && argv[1] == "HOSTNAME") v = &env.hostname;
    if (v != nullptr) {
      Out(&r, *v + "\n");
    } else {
      r.status = 1;
    }
  } else if (name == "hostname") {
    Out(&r, env.hostname + "\n");
  } else if (name == "ls") {
    bool long_form = false;
    std::vector<std::string> paths;
    for (size_t i = 1; i < argc; ++i) {
      if (argv[i].starts_with('-')) {
        long_form |= argv[i].find('l') != std::string::npos;
      } else {
        paths.push_back(argv[i]);
      }
    }
    if (paths.empty() || (paths.size() == 1 && paths[0] == "/")) {
      Out(&r, long_form ? kRootListingLong : kRootListing);
    } else if (paths.size() == 1 && paths[0] == "/etc") {
      Out(&r, "hostname\nos-release\n");
    } else {
      for (const std::string& p : paths) {
        Err(&r, "ls: " + p + ": No such file or directory\n");
      }
      r.status = 1;
    }
  } else if (name == "cat") {
    for (size_t i = 1; i < argc; ++i) {
      if (argv[i] == "/etc/hostname") {
        Out(&r, env.hostname + "\n");
      } else if (argv[i] == "/etc/os-release") {
        Out(&r, kOsRelease);
      } else {
        Err(&r,
            "cat: can't open '" + argv[i] + "': No such file or directory\n");
        r.status = 1;
      }
    }
  } else if (name == "date") {
    Out(&r, FormatDate(env.now ? env.now() : Clock::Real()->WallNow()));
  } else if (name == "pwd") {
    Out(&r, "/\n");
  } else if (name == "whoami") {
    Out(&r, "root\n");
  } else if (name == "id") {
    Out(&r, "uid=0(root) gid=0(root) groups=0(root)\n");
  } else if (name == "true") {
  } else if (name == "false") {
    r.status = 1;
  } else if (name == "sleep") {
    std::optional<int64_t> secs =
        argc == 2 ? ParseInt64(argv[1]) : std::nullopt;
    if (!secs.has_value() || *secs < 0) {
      Err(&r, "sleep: invalid number '" + (argc > 1 ? argv[1] : "") + "'\n");
      r.status = 1;
    } else {
      const Duration d = *secs >= kMaxSleep / std::chrono::seconds(1)
                             ? kMaxSleep
                             : Duration(std::chrono::seconds(*secs));
      r.actions.push_back({ShellAction::kSleep, "", d});
    }
  } else if (name == "exit") {
    r.exited = true;
    r.status = last_status;
    if (argc > 1) {
      std::optional<int64_t> code = ParseInt64(argv[1]);
      if (code.has_value()) {
        r.status = static_cast<int>(*code & 0xFF);
      } else {
        Err(&r, "sh: exit: Illegal number: " + argv[1] + "\n");
        r.status = 2;
      }
    }
  } else if (IsShell(name) && argc >= 3 && argv[1] == "-c") {
    if (depth >= kMaxShellDepth) {
      Err(&r, "sh: shells nested over " + std::to_string(kMaxShellDepth) +
                  " deep\n");
      r.status = 2;
      return r;
    }
    ShellResult inner = RunScript(env, argv[2], last_status, depth + 1);
    inner.exited = false;  // the inner shell's exit ends only it
    return inner;
  } else if (IsShell(name)) {
    // A shell without -c and without stdin: nothing to read.
  } else {
    Err(&r, std::string(name) + ": command not found\n");
    r.status = 127;
  }
  return r;
}

ShellResult RunScript(const ShellEnv& env, std::string_view script,
                      int last_status, int depth) {
  ShellResult r;
  r.status = last_status;
  size_t written = 0;
  if (script.size() > kMaxScript) {
    Err(&r, "sh: script over " + std::to_string(kMaxScript) + " bytes\n");
    r.status = 2;
    return r;
  }
  // Commands one at a time: $? in each sees the status before it.
  for (std::string_view segment : SplitCommands(script)) {
    std::vector<std::vector<std::string>> commands;
    std::string error;
    if (!ParseScript(env, segment, r.status, &commands, &error)) {
      Err(&r, "sh: " + error + "\n");
      r.status = 2;
      return r;
    }
    for (const auto& argv : commands) {
      ShellResult one = RunCommand(env, argv, r.status, depth);
      for (ShellAction& a : one.actions) {
        written += a.text.size();
        r.actions.push_back(std::move(a));
      }
      r.status = one.status;
      if (one.exited) {
        r.exited = true;
        return r;
      }
      if (written > kMaxScriptOutput) {
        Err(&r,
            "sh: output over " + std::to_string(kMaxScriptOutput) + " bytes\n");
        r.status = 2;
        return r;
      }
    }
  }
  return r;
}

std::string ExecStatusJson(const std::vector<std::string>& argv, int code) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("metadata");
  w.StartObject();
  w.EndObject();
  if (code == 0) {
    w.Key("status");
    w.String("Success");
    w.EndObject();
    return buf.GetString();
  }
  // kubelet's cri streaming server (remotecommand.handleErrorCode words).
  const std::string message =
      "command terminated with non-zero exit code: error executing command "
      "[" +
      StrJoin(argv, " ") + "], exit code " + std::to_string(code);
  w.Key("status");
  w.String("Failure");
  w.Key("message");
  w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  w.Key("reason");
  w.String("NonZeroExitCode");
  w.Key("details");
  w.StartObject();
  w.Key("causes");
  w.StartArray();
  w.StartObject();
  w.Key("reason");
  w.String("ExitCode");
  w.Key("message");
  const std::string c = std::to_string(code);
  w.String(c.data(), static_cast<rapidjson::SizeType>(c.size()));
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

// ---------------------------------------------------------------------------
// ExecSession

ExecSession::ExecSession(ShellEnv env, ExecCommand cmd, TimerQueue* timers,
                         std::function<void(uint8_t, std::string)> emit,
                         std::function<void(int)> done)
    : env_(std::move(env)),
      cmd_(std::move(cmd)),
      timers_(timers),
      emit_(std::move(emit)),
      done_(std::move(done)) {
  const std::string_view name =
      cmd_.argv.empty() ? std::string_view() : BaseName(cmd_.argv[0]);
  if (IsShell(name) && cmd_.stdin &&
      (cmd_.argv.size() == 1 ||
       (cmd_.argv.size() == 2 && cmd_.argv[1].starts_with('-') &&
        cmd_.argv[1] != "-c"))) {
    mode_ = Mode::kShell;
  } else if (name == "cat" && cmd_.argv.size() == 1 && cmd_.stdin) {
    mode_ = Mode::kCat;
  }
}

ExecSession::~ExecSession() = default;

std::string ExecSession::Tty(std::string s) const {
  if (!cmd_.tty) return s;
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

void ExecSession::Start() {
  MutexLock order(&deliver_mu_);
  std::vector<Out> out;
  std::optional<int> end;
  {
    MutexLock l(&mu_);
    if (mode_ == Mode::kOnce) {
      ShellResult r = RunCommand(env_, cmd_.argv, 0);
      for (ShellAction& a : r.actions) actions_.push_back(std::move(a));
      status_ = r.status;
      exit_after_actions_ = true;
      PlayLocked(&out, &end);
    } else if (mode_ == Mode::kShell && cmd_.tty) {
      out.push_back({1, "/ # "});
    }
  }
  Deliver(std::move(out), end);
}

void ExecSession::OnStdin(std::string_view data, bool eof) {
  MutexLock order(&deliver_mu_);
  std::vector<Out> out;
  std::optional<int> end;
  {
    MutexLock l(&mu_);
    if (finished_ || cancelled_) return;
    if (mode_ == Mode::kOnce) return;  // the command does not read stdin
    if (mode_ == Mode::kCat) {
      if (!data.empty()) out.push_back({1, Tty(std::string(data))});
      if (eof) {
        finished_ = true;
        end = 0;
      }
    } else {
      input_.append(data);
      input_eof_ |= eof;
      if (input_.size() > kMaxPendingInput) {
        out.push_back({2, "sh: too much input waiting\n"});
        finished_ = true;
        end = 1;
      } else if (!sleeping_) {
        PlayLocked(&out, &end);
      }
    }
  }
  Deliver(std::move(out), end);
}

// Runs queued actions, then (shell mode) further stdin lines, until a
// sleep, the end, or the need for more input.
void ExecSession::PlayLocked(std::vector<Out>* out, std::optional<int>* end) {
  for (;;) {
    if (finished_ || cancelled_) return;
    while (!actions_.empty()) {
      ShellAction a = std::move(actions_.front());
      actions_.pop_front();
      if (a.kind == ShellAction::kSleep) {
        sleeping_ = true;
        std::weak_ptr<ExecSession> weak = weak_from_this();
        timer_ = timers_->ScheduleAfter(a.sleep, [weak](TimePoint) {
          if (std::shared_ptr<ExecSession> s = weak.lock()) s->Wake();
        });
        if (timer_ == 0) {  // the timers stopped: the node is going away
          finished_ = true;
          *end = 1;
        }
        return;
      }
      uint8_t channel = a.kind == ShellAction::kStdout || cmd_.tty ? 1 : 2;
      if (!a.text.empty()) out->push_back({channel, Tty(std::move(a.text))});
    }
    if (exit_after_actions_) {
      finished_ = true;
      *end = status_;
      return;
    }
    if (mode_ != Mode::kShell) return;
    size_t nl = input_.find('\n');
    if (nl == std::string::npos && input_.size() >= kMaxLine) nl = kMaxLine;
    if (nl == std::string::npos) {
      if (!input_eof_) return;  // wait for the rest of the line
      if (input_.empty()) {
        finished_ = true;
        *end = status_;
        return;
      }
      nl = input_.size();
    }
    std::string line = input_.substr(0, std::min(nl, kMaxLine));
    input_.erase(0, std::min(nl + 1, input_.size()));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (cmd_.tty) out->push_back({1, Tty(line + "\n")});
    ShellResult r = RunScript(env_, line, status_);
    for (ShellAction& a : r.actions) actions_.push_back(std::move(a));
    status_ = r.status;
    if (r.exited) exit_after_actions_ = true;
    if (!r.exited && cmd_.tty) {
      actions_.push_back({ShellAction::kStdout, "/ # ", {}});
    }
  }
}

void ExecSession::Wake() {
  MutexLock order(&deliver_mu_);
  std::vector<Out> out;
  std::optional<int> end;
  {
    MutexLock l(&mu_);
    sleeping_ = false;
    timer_ = 0;
    PlayLocked(&out, &end);
  }
  Deliver(std::move(out), end);
}

void ExecSession::Deliver(std::vector<Out> out, std::optional<int> end) {
  {
    MutexLock s(&mu_);
    if (cancelled_) return;
  }
  for (Out& o : out) emit_(o.channel, std::move(o.text));
  if (end.has_value()) done_(*end);
}

void ExecSession::Cancel() {
  TimerId t;
  {
    MutexLock l(&mu_);
    cancelled_ = true;
    t = timer_;
    timer_ = 0;
  }
  if (t != 0) timers_->Cancel(t);
}

}  // namespace kplane::kubeletsim
