// text_count.hpp - how often a string occurs in a text (PTX instructions, log lines), for tests
// that count rather than match. Header only, no tessel dependency.
#pragma once

#include <string>

namespace tessel_test {

/// Occurrences of `what` in `text`, overlapping ones included.
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace tessel_test
