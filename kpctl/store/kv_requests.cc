#include "kpctl/store/kv_requests.h"

#include <climits>
#include <sstream>

#include "base/strings.h"

namespace kplane::kpctl {

namespace {

CommandError Err(int code, std::string msg) {
  return CommandError{code, std::move(msg)};
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

std::string ToUpper(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Go's strconv.Unquote of a double-quoted literal (quotes included).
std::optional<std::string> GoUnquote(std::string_view q) {
  if (q.size() < 2 || q.front() != '"' || q.back() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < q.size();) {
    char c = q[i];
    if (c == '"' || c == '\n') return std::nullopt;
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    if (i + 2 >= q.size()) return std::nullopt;
    char e = q[i + 1];
    i += 2;
    switch (e) {
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case 'x': {
        if (i + 2 > q.size() - 1) return std::nullopt;
        int h = HexVal(q[i]), l = HexVal(q[i + 1]);
        if (h < 0 || l < 0) return std::nullopt;
        out += static_cast<char>(h * 16 + l);
        i += 2;
        break;
      }
      case 'u':
      case 'U': {
        size_t n = e == 'u' ? 4 : 8;
        if (i + n > q.size() - 1) return std::nullopt;
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          int v = HexVal(q[i + k]);
          if (v < 0) return std::nullopt;
          cp = cp * 16 + static_cast<uint32_t>(v);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          return std::nullopt;
        AppendUtf8(cp, &out);
        i += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          if (i + 2 > q.size() - 1) return std::nullopt;
          int v = e - '0';
          for (int k = 0; k < 2; ++k) {
            char d = q[i + k];
            if (d < '0' || d > '7') return std::nullopt;
            v = v * 8 + (d - '0');
          }
          if (v > 255) return std::nullopt;
          out += static_cast<char>(v);
          i += 2;
          break;
        }
        return std::nullopt;
    }
  }
  return out;
}

// fmt's %q scan verb: skips spaces, then a "quoted" or `raw` string.
// Advances *pos past it.
std::optional<std::string> ScanQuoted(std::string_view s, size_t* pos) {
  size_t i = *pos;
  while (i < s.size() && IsSpace(s[i]) && s[i] != '\n') ++i;
  if (i >= s.size()) return std::nullopt;
  if (s[i] == '`') {
    size_t end = s.find('`', i + 1);
    if (end == std::string_view::npos) return std::nullopt;
    *pos = end + 1;
    return std::string(s.substr(i + 1, end - i - 1));
  }
  if (s[i] != '"') return std::nullopt;
  size_t j = i + 1;
  while (j < s.size() && s[j] != '"') {
    if (s[j] == '\\') ++j;
    ++j;
  }
  if (j >= s.size()) return std::nullopt;
  auto v = GoUnquote(s.substr(i, j - i + 1));
  if (v) *pos = j + 1;
  return v;
}

}  // namespace

std::optional<uint64_t> GoParseUint(std::string_view s, int base,
                                    std::string* error) {
  auto fail = [&](const char* what) {
    *error = "strconv.ParseUint: parsing " + GoQuote(s) + ": " + what;
    return std::nullopt;
  };
  if (s.empty()) return fail("invalid syntax");
  uint64_t v = 0;
  bool overflow = false;
  for (char c : s) {
    int d = HexVal(c);
    if (d < 0 || d >= base) return fail("invalid syntax");
    if (v >
        (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
      overflow = true;
    }
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (overflow) return fail("value out of range");
  return v;
}

std::optional<int64_t> GoParseInt(std::string_view s, int base,
                                  std::string* error) {
  auto fail = [&](const char* what) {
    *error = "strconv.ParseInt: parsing " + GoQuote(s) + ": " + what;
    return std::nullopt;
  };
  if (s.empty()) return fail("invalid syntax");
  std::string_view body = s;
  bool neg = false;
  if (body[0] == '+' || body[0] == '-') {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  std::string uerr;
  auto u = GoParseUint(body, base, &uerr);
  if (!u) {
    return fail(uerr.find("out of range") != std::string::npos
                    ? "value out of range"
                    : "invalid syntax");
  }
  const uint64_t cutoff = static_cast<uint64_t>(INT64_MAX) + 1;
  if (!neg && *u >= cutoff) return fail("value out of range");
  if (neg && *u > cutoff) return fail("value out of range");
  if (neg) return *u == cutoff ? INT64_MIN : -static_cast<int64_t>(*u);
  return static_cast<int64_t>(*u);
}

// --- get / put / del --------------------------------------------------------

void AddGetFlags(FlagSet* fs, GetFlags* f) {
  fs->String("consistency", &f->consistency,
             "Linearizable(l) or Serializable(s)");
  fs->String("order", &f->order,
             "Order of results; ASCEND or DESCEND (ASCEND by default)");
  fs->String("sort-by", &f->sort_by,
             "Sort target; CREATE, KEY, MODIFY, VALUE, or VERSION");
  fs->Int64("limit", &f->limit, "Maximum number of results");
  fs->Bool("prefix", &f->prefix, "Get keys with matching prefix");
  fs->Bool("from-key", &f->from_key,
           "Get keys that are greater than or equal to the given key using "
           "byte compare");
  fs->Int64("rev", &f->rev, "Specify the kv revision");
  fs->Bool("keys-only", &f->keys_only, "Get only the keys");
  fs->Bool("print-value-only", &f->print_value_only,
           "Only write values when using the \"simple\" output format");
}

std::optional<CommandError> BuildRange(const std::vector<std::string>& args,
                                       const GetFlags& f,
                                       etcdserverpb::RangeRequest* req) {
  if (args.empty()) {
    return Err(kExitBadArgs,
               "get command needs one argument as key and an optional "
               "argument as range_end");
  }
  if (f.prefix && f.from_key) {
    return Err(kExitBadArgs,
               "`--prefix` and `--from-key` cannot be set at the same time, "
               "choose one");
  }
  req->Clear();
  if (f.consistency == "s") {
    req->set_serializable(true);
  } else if (f.consistency != "l") {
    return Err(kExitBadFeature,
               "unknown consistency flag " + GoQuote(f.consistency));
  }
  std::string key = args[0];
  if (args.size() > 1) {
    if (f.prefix || f.from_key) {
      return Err(kExitBadArgs,
                 "too many arguments, only accept one argument when "
                 "`--prefix` or `--from-key` is set");
    }
    req->set_range_end(args[1]);
  }
  req->set_limit(f.limit);
  if (f.rev > 0) req->set_revision(f.rev);

  using RR = etcdserverpb::RangeRequest;
  RR::SortOrder order = RR::NONE;
  std::string o = ToUpper(f.order);
  if (o == "ASCEND") {
    order = RR::ASCEND;
  } else if (o == "DESCEND") {
    order = RR::DESCEND;
  } else if (!o.empty()) {
    return Err(kExitBadFeature, "bad sort order " + f.order);
  }
  RR::SortTarget target = RR::KEY;
  std::string t = ToUpper(f.sort_by);
  if (t == "CREATE") {
    target = RR::CREATE;
  } else if (t == "KEY") {
    target = RR::KEY;
  } else if (t == "MODIFY") {
    target = RR::MOD;
  } else if (t == "VALUE") {
    target = RR::VALUE;
  } else if (t == "VERSION") {
    target = RR::VERSION;
  } else if (!t.empty()) {
    return Err(kExitBadFeature, "bad sort target " + f.sort_by);
  }
  // clientv3.WithSort: the server returns keys in ascending order anyway,
  // so KEY/ASCEND is sent as no sort.
  if (target == RR::KEY && order == RR::ASCEND) order = RR::NONE;
  req->set_sort_order(order);
  req->set_sort_target(target);

  if (f.prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req->set_range_end(std::string(1, '\0'));
    } else {
      req->set_range_end(PrefixRangeEnd(key));
    }
  }
  if (f.from_key) {
    if (key.empty()) key = std::string(1, '\0');
    req->set_range_end(std::string(1, '\0'));
  }
  req->set_key(key);
  if (f.keys_only) req->set_keys_only(true);
  return std::nullopt;
}

void AddPutFlags(FlagSet* fs, PutFlags* f) {
  fs->String("lease", &f->lease,
             "lease ID (in hexadecimal) to attach to the key");
  fs->Bool("prev-kv", &f->prev_kv,
           "return the previous key-value pair before modification");
  fs->Bool("ignore-value", &f->ignore_value,
           "updates the key using its current value");
  fs->Bool("ignore-lease", &f->ignore_lease,
           "updates the key using its current lease");
}

std::optional<CommandError> BuildPut(const std::vector<std::string>& args,
                                     const PutFlags& f, std::istream* in,
                                     etcdserverpb::PutRequest* req) {
  const char* kNeedArgs =
      "put command needs 1 argument and input from stdin or 2 arguments";
  if (args.empty()) return Err(kExitBadArgs, kNeedArgs);
  if (f.ignore_value && args.size() > 1) {
    return Err(kExitBadArgs,
               "put command needs only 1 argument when 'ignore-value' is set");
  }
  req->Clear();
  req->set_key(args[0]);
  if (!f.ignore_value) {
    if (args.size() > 1) {
      req->set_value(args[1]);
    } else {
      std::string value;
      if (in != nullptr) {
        std::ostringstream buf;
        buf << in->rdbuf();
        value = buf.str();
      }
      if (value.empty()) return Err(kExitBadArgs, kNeedArgs);
      req->set_value(value);
    }
  }
  std::string perr;
  auto id = GoParseInt(f.lease, 16, &perr);
  if (!id) {
    return Err(kExitBadArgs,
               "bad lease ID (" + perr + "), expecting ID in Hex");
  }
  if (*id != 0) req->set_lease(*id);
  if (f.prev_kv) req->set_prev_kv(true);
  if (f.ignore_value) req->set_ignore_value(true);
  if (f.ignore_lease) req->set_ignore_lease(true);
  return std::nullopt;
}

void AddDelFlags(FlagSet* fs, DelFlags* f) {
  fs->Bool("prefix", &f->prefix, "delete keys with matching prefix");
  fs->Bool("prev-kv", &f->prev_kv, "return deleted key-value pairs");
  fs->Bool("from-key", &f->from_key,
           "delete keys that are greater than or equal to the given key "
           "using byte compare");
}

std::optional<CommandError> BuildDel(const std::vector<std::string>& args,
                                     const DelFlags& f,
                                     etcdserverpb::DeleteRangeRequest* req) {
  if (args.empty() || args.size() > 2) {
    return Err(kExitBadArgs,
               "del command needs one argument as key and an optional "
               "argument as range_end");
  }
  if (f.prefix && f.from_key) {
    return Err(kExitBadArgs,
               "`--prefix` and `--from-key` cannot be set at the same time, "
               "choose one");
  }
  req->Clear();
  std::string key = args[0];
  if (args.size() > 1) {
    if (f.prefix || f.from_key) {
      return Err(kExitBadArgs,
                 "too many arguments, only accept one argument when "
                 "`--prefix` or `--from-key` is set");
    }
    req->set_range_end(args[1]);
  }
  if (f.prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req->set_range_end(std::string(1, '\0'));
    } else {
      req->set_range_end(PrefixRangeEnd(key));
    }
  }
  if (f.prev_kv) req->set_prev_kv(true);
  if (f.from_key) {
    if (key.empty()) key = std::string(1, '\0');
    req->set_range_end(std::string(1, '\0'));
  }
  req->set_key(key);
  return std::nullopt;
}

// --- txn ---------------------------------------------------------------------

std::vector<std::string> Argify(std::string_view s) {
  // The regexp "(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s]\S*[^'"\s]?, leftmost
  // first, applied repeatedly.
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"') {
        if (s[j] == '\\') {
          if (j + 1 >= s.size()) break;
          ++j;
        }
        ++j;
      }
      if (j < s.size() && s[j] == '"') {
        auto v = GoUnquote(s.substr(i, j - i + 1));
        out.push_back(v ? *v : std::string(s.substr(i, j - i + 1)));
        i = j + 1;
        continue;
      }
      ++i;  // no match here: the regexp moves on one byte
      continue;
    }
    if (c == '\'') {
      size_t j = s.find('\'', i + 1);
      if (j != std::string_view::npos) {
        out.emplace_back(s.substr(i + 1, j - i - 1));
        i = j + 1;
        continue;
      }
      ++i;
      continue;
    }
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && !IsSpace(s[j])) ++j;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<CommandError> ParseCompare(std::string_view line,
                                         etcdserverpb::Compare* cmp) {
  const std::string l(line);
  size_t paren = line.find('(');
  if (paren == std::string_view::npos) {
    return Err(kExitInvalidInput, "malformed comparison: " + l);
  }
  const std::string target(line.substr(0, paren));
  std::string_view rest = line.substr(paren + 1);
  // fmt.Sscanf(rest, "%q) %s %q", &key, &op, &val)
  std::string key, op, val;
  int n = 0;
  size_t pos = 0;
  if (auto k = ScanQuoted(rest, &pos)) {
    key = *k;
    n = 1;
    if (pos < rest.size() && rest[pos] == ')') {
      ++pos;
      while (pos < rest.size() && IsSpace(rest[pos])) ++pos;
      size_t start = pos;
      while (pos < rest.size() && !IsSpace(rest[pos])) ++pos;
      if (pos > start) {
        op = std::string(rest.substr(start, pos - start));
        n = 2;
        if (auto v = ScanQuoted(rest, &pos)) {
          val = *v;
          n = 3;
        }
      }
    }
  }
  if (n != 3) {
    return Err(kExitInvalidInput, "malformed comparison: " + l + "; got " +
                                      target + "(" + GoQuote(key) + ") " + op +
                                      " " + GoQuote(val));
  }
  cmp->Clear();
  cmp->set_key(key);
  using C = etcdserverpb::Compare;
  if (op == "=") {
    cmp->set_result(C::EQUAL);
  } else if (op == "!=") {
    cmp->set_result(C::NOT_EQUAL);
  } else if (op == "<") {
    cmp->set_result(C::LESS);
  } else if (op == ">") {
    cmp->set_result(C::GREATER);
  } else {
    return Err(kExitInvalidInput,
               "malformed comparison: " + l + " (unknown operator " + op + ")");
  }
  std::string perr;
  auto int_value = [&](int base) { return GoParseInt(val, base, &perr); };
  if (target == "ver" || target == "version") {
    cmp->set_target(C::VERSION);
    auto v = int_value(10);
    if (!v) return Err(kExitInvalidInput, "invalid txn compare request: " + l);
    cmp->set_version(*v);
  } else if (target == "c" || target == "create") {
    cmp->set_target(C::CREATE);
    auto v = int_value(10);
    if (!v) return Err(kExitInvalidInput, "invalid txn compare request: " + l);
    cmp->set_create_revision(*v);
  } else if (target == "m" || target == "mod") {
    cmp->set_target(C::MOD);
    auto v = int_value(10);
    if (!v) return Err(kExitInvalidInput, "invalid txn compare request: " + l);
    cmp->set_mod_revision(*v);
  } else if (target == "val" || target == "value") {
    cmp->set_target(C::VALUE);
    cmp->set_value(val);
  } else if (target == "lease") {
    cmp->set_target(C::LEASE);
    auto v = int_value(16);
    if (!v) return Err(kExitInvalidInput, "invalid txn compare request: " + l);
    cmp->set_lease(*v);
  } else {
    return Err(kExitInvalidInput, "malformed comparison: " + l +
                                      " (unknown target " + target + ")");
  }
  return std::nullopt;
}

std::optional<CommandError> ParseTxnOp(std::string_view line,
                                       etcdserverpb::RequestOp* op) {
  const std::string l(line);
  std::vector<std::string> args = Argify(line);
  if (args.size() < 2) {
    return Err(kExitInvalidInput, "invalid txn compare request: " + l);
  }
  const CommandError invalid{kExitInvalidInput, "invalid txn request: " + l};
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  FlagSet fs("txn " + cmd, "");
  if (cmd == "get") {
    GetFlags f;
    AddGetFlags(&fs, &f);
    if (!fs.Parse(rest).ok() || fs.help_requested()) return invalid;
    if (BuildRange(fs.args(), f, op->mutable_request_range())) return invalid;
  } else if (cmd == "put") {
    PutFlags f;
    AddPutFlags(&fs, &f);
    if (!fs.Parse(rest).ok() || fs.help_requested()) return invalid;
    if (BuildPut(fs.args(), f, nullptr, op->mutable_request_put())) {
      return invalid;
    }
  } else if (cmd == "del") {
    DelFlags f;
    AddDelFlags(&fs, &f);
    if (!fs.Parse(rest).ok() || fs.help_requested()) return invalid;
    if (BuildDel(fs.args(), f, op->mutable_request_delete_range())) {
      return invalid;
    }
  } else {
    return invalid;
  }
  return std::nullopt;
}

namespace {

// bufio.Reader.ReadString('\n'): false (EOF) if the line has no newline.
bool ReadLine(std::istream& in, std::string* line) {
  line->clear();
  if (!std::getline(in, *line)) return false;
  return !in.eof();
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::optional<CommandError> ReadTxn(std::istream& in, std::ostream* prompts,
                                    etcdserverpb::TxnRequest* req) {
  req->Clear();
  std::string line;
  if (prompts) *prompts << "compares:\n" << std::flush;
  for (;;) {
    if (!ReadLine(in, &line)) return Err(kExitInvalidInput, "EOF");
    line = Trim(line);
    if (line.empty()) break;
    if (auto e = ParseCompare(line, req->add_compare())) return e;
  }
  for (auto* ops : {req->mutable_success(), req->mutable_failure()}) {
    if (prompts) {
      *prompts << (ops == req->mutable_success()
                       ? "success requests (get, put, del):\n"
                       : "failure requests (get, put, del):\n")
               << std::flush;
    }
    for (;;) {
      if (!ReadLine(in, &line)) return Err(kExitInvalidInput, "EOF");
      line = Trim(line);
      if (line.empty()) break;
      if (auto e = ParseTxnOp(line, ops->Add())) return e;
    }
  }
  return std::nullopt;
}

}  // namespace kplane::kpctl
