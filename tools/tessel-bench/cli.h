// cli.h - a tiny command-line parser shared by tessel-bench and the examples.
// Accepts "--name value", "--name=value" and flags "--name"; anything else is an error.
#pragma once

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tessel_bench {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class cli {
public:
  /// `valued` names the options that take a value, `flags` those that do not (without "--").
  cli(int argc, char** argv, std::set<std::string> valued, std::set<std::string> flags) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-h") a = "--help";
      if (a.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + a + "'");
      std::string name = a.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (flags.count(name)) {
        if (has_value) throw usage_error("option --" + name + " takes no value");
        flags_.insert(name);
      } else if (valued.count(name)) {
        if (!has_value) {
          if (i + 1 >= argc) throw usage_error("option --" + name + " needs a value");
          value = argv[++i];
        }
        values_[name] = value;
      } else {
        throw usage_error("unknown option --" + name);
      }
    }
  }

  bool flag(const std::string& name) const { return flags_.count(name) != 0; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, std::string def) const {
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second;
  }
  std::int64_t i64(const std::string& name, std::int64_t def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    return parse_i64(it->second, "--" + name);
  }
  /// For options stored in an int (stages, raster group, iterations...): int(i64(...)) would
  /// wrap 4294967298 to 2 and run something the user did not ask for.
  int i32(const std::string& name, int def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    return parse_i32(it->second, "--" + name);
  }
  double f64(const std::string& name, double def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end) throw usage_error("--" + name + ": not a number: '" + it->second + "'");
    return v;
  }

  /// A whole decimal integer, or a usage_error naming `what`: not " 5" nor "5x" (strtoll would skip
  /// or stop), and not a value beyond int64 (strtoll saturates to INT64_MAX with ERANGE).
  static std::int64_t parse_i64(const std::string& s, const std::string& what) {
    if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
      throw usage_error(what + ": not an integer: '" + s + "'");
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (*end) throw usage_error(what + ": not an integer: '" + s + "'");
    if (errno == ERANGE)
      throw usage_error(what + ": " + s + " is out of range (expected " + std::to_string(LLONG_MIN) + " .. " +
                        std::to_string(LLONG_MAX) + ")");
    return v;
  }
  /// parse_i64 for a value stored in an int: outside INT_MIN..INT_MAX is a usage_error.
  static int parse_i32(const std::string& s, const std::string& what) {
    const std::int64_t v = parse_i64(s, what);
    if (v < INT_MIN || v > INT_MAX)
      throw usage_error(what + ": " + s + " is out of range (expected " + std::to_string(INT_MIN) + " .. " +
                        std::to_string(INT_MAX) + ")");
    return int(v);
  }
  static std::vector<std::string> split(std::string_view s, char sep = ',') {
    std::vector<std::string> out;
    std::size_t b = 0;
    while (b <= s.size()) {
      std::size_t e = s.find(sep, b);
      if (e == std::string_view::npos) e = s.size();
      if (e > b) out.emplace_back(s.substr(b, e - b));
      b = e + 1;
    }
    return out;
  }

private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
};

}  // namespace tessel_bench
