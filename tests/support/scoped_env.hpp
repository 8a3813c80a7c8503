// scoped_env.hpp - sets (or unsets) an environment variable for one scope and restores the old
// value afterwards. Shared by the unit, JIT and GPU tests (header only, no tessel dependency).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace tessel_test {

class scoped_env {
public:
  /// `value` nullptr (or std::nullopt) unsets the variable.
  scoped_env(const char* name, const char* value)
      : scoped_env(name, value ? std::optional<std::string>(value) : std::nullopt) {}
  scoped_env(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~scoped_env() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace tessel_test
