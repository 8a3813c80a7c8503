// jit_error.hpp - what ts::jit throws for a kernel and options, for tests that assert compile
// errors verbatim. Header only.
#pragma once

#include <string>

#include <tessel/tessel.hpp>

namespace tessel_test {

/// ts::jit(kernel, o)'s tessel::error message, "" when it compiles.
template <class Kernel>
std::string jit_error(const Kernel& kernel, const tessel::options& o) {
  try {
    tessel::jit(kernel, o);
  } catch (const tessel::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace tessel_test
