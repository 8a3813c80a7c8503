// temp_dir.hpp - a fresh directory under $TMPDIR (or /tmp) for one scope, removed with everything
// in it afterwards, so that tests leave nothing behind. Header only, no tessel dependency.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <stdlib.h>

namespace tessel_test {

struct temp_dir {
  std::string path;
  /// `prefix` names the test in the directory's name: <tmp>/<prefix>-XXXXXX.
  explicit temp_dir(const std::string& prefix = "tessel-test") {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw std::runtime_error("temp_dir: mkdtemp failed for " + tmpl);
    path = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

}  // namespace tessel_test
