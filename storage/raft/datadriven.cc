#include "storage/raft/datadriven.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "gtest/gtest.h"

namespace kplane::datadriven {

bool TestData::HasArg(const std::string& key) const {
  for (const auto& a : args) {
    if (a.key == key) return true;
  }
  return false;
}

std::string TestData::ArgValue(const std::string& key,
                               const std::string& fallback) const {
  for (const auto& a : args) {
    if (a.key == key && !a.vals.empty()) return a.vals[0];
  }
  return fallback;
}

uint64_t TestData::ArgUint(const std::string& key, uint64_t fallback) const {
  std::string v = ArgValue(key);
  if (v.empty()) return fallback;
  auto n = ParseUint64(v);
  EXPECT_TRUE(n.has_value()) << pos << ": bad number for " << key << ": " << v;
  return n.value_or(fallback);
}

namespace {

std::vector<Arg> ParseArgs(const std::string& line, std::string* cmd) {
  std::vector<Arg> args;
  std::vector<std::string> words;
  // Split on spaces outside parentheses.
  std::string cur;
  int depth = 0;
  for (char c : line) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ' ' && depth == 0) {
      if (!cur.empty()) words.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) words.push_back(cur);
  if (words.empty()) return args;
  *cmd = words[0];
  for (size_t i = 1; i < words.size(); ++i) {
    Arg a;
    const std::string& w = words[i];
    size_t eq = w.find('=');
    if (eq == std::string::npos) {
      a.key = w;
    } else {
      a.key = w.substr(0, eq);
      std::string v = w.substr(eq + 1);
      if (v.size() >= 2 && v.front() == '(' && v.back() == ')') {
        for (auto& part : StrSplit(v.substr(1, v.size() - 2), ',')) {
          std::string p(StripWhitespace(part));
          if (!p.empty()) a.vals.push_back(p);
        }
      } else {
        a.vals.push_back(v);
      }
    }
    args.push_back(a);
  }
  return args;
}

std::string FormatOutput(const std::string& out) {
  std::string o = out;
  if (!o.empty() && o.back() != '\n') o += '\n';
  if (o.find("\n\n") != std::string::npos || o.rfind("\n", 0) == 0) {
    return "----\n----\n" + o + "----\n----\n";
  }
  return "----\n" + o;
}

}  // namespace

void RunTest(const std::string& path,
             const std::function<std::string(const TestData&)>& fn) {
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot open " << path;
    return;
  }
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  bool rewrite = std::getenv("KPLANE_REWRITE") != nullptr;
  std::ostringstream rewritten;
  size_t i = 0;
  while (i < lines.size()) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] == '#') {
      rewritten << line << "\n";
      ++i;
      continue;
    }
    TestData d;
    d.pos = path + ":" + std::to_string(i + 1);
    d.args = ParseArgs(line, &d.cmd);
    rewritten << line << "\n";
    ++i;
    while (i < lines.size() && lines[i] != "----") {
      d.input += lines[i] + "\n";
      rewritten << lines[i] << "\n";
      ++i;
    }
    if (i >= lines.size()) {
      ADD_FAILURE() << d.pos << ": missing ---- separator";
      return;
    }
    ++i;  // "----"
    if (i < lines.size() && lines[i] == "----") {
      // Fenced output, up to "----\n----".
      ++i;
      while (i + 1 < lines.size() &&
             !(lines[i] == "----" && lines[i + 1] == "----")) {
        d.expected += lines[i] + "\n";
        ++i;
      }
      i += 2;
    } else {
      while (i < lines.size() && !lines[i].empty()) {
        d.expected += lines[i] + "\n";
        ++i;
      }
    }
    std::string actual = fn(d);
    if (!actual.empty() && actual.back() != '\n') actual += '\n';
    rewritten << FormatOutput(actual);
    if (!rewrite) {
      EXPECT_EQ(d.expected, actual) << d.pos << ": " << line;
    }
    // Keep the blank line that ends a block.
    if (i < lines.size() && lines[i].empty()) {
      rewritten << "\n";
      ++i;
    }
  }
  if (rewrite) {
    std::ofstream out(path);
    std::string s = rewritten.str();
    out << s;
  }
}

}  // namespace kplane::datadriven
