// file_text.hpp - a whole file as a string (dumped stages, PTX, cubins, logs), for tests that
// read what tessel wrote. Header only, no tessel dependency.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tessel_test {

/// The bytes of `path` ("" when it cannot be read).
inline std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tessel_test
